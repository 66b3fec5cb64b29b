"""SimBackend: the reference backend. GM heap, on-chip spaces as byte arrays of the SoC's real
capacities, kernels compiled into one numba function each (or run eagerly, an option of the
simulator). Its semantics are the golden reference NPU results are compared with.

Thread-safe: launches may come from several threads at once; each block runs on a worker with
its own on-chip memory, poisoned at the block's start.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import numpy as np

from ...errors import PtoError
from ...ir import passes
from ...ir.nodes import Kernel, TensorParam
from ..base import Backend, BufferArg, DeviceBuffer, Program
from . import codegen
from . import compile as C
from .context import LaunchContext, OnChipPool
from .eager import EagerExecutor
from .faults import fault
from .lib import errcodes as E
from .memory import SimAllocator, host_array
from .options import SimOptions


class SimBackend(Backend):
    name = "sim"

    def __init__(self, soc, device: int, options: SimOptions | None = None):
        super().__init__(soc, device)
        self.options = options or SimOptions()
        self.gm_capacity = self.options.gm_bytes or soc.gm_bytes
        self.heap = SimAllocator(self.gm_capacity, soc.gm_align)
        self.onchip = OnChipPool(soc, self.options.uninit_byte)
        self._programs: dict[int, Program] = {}
        self._lock = threading.RLock()
        self._pool: ThreadPoolExecutor | None = None

    # -- memory hooks ------------------------------------------------------------------------
    def _alloc(self, nbytes: int, label: str) -> DeviceBuffer:
        addr = self.heap.alloc(nbytes)
        return DeviceBuffer(addr, nbytes, self, host_array(nbytes), label)

    def _free(self, buf: DeviceBuffer) -> None:
        self.heap.free(buf.addr, buf.nbytes)
        buf.handle = None

    def _copy_in(self, buf: DeviceBuffer, data: np.ndarray) -> None:
        buf.handle[:data.nbytes] = data

    def _copy_out(self, buf: DeviceBuffer, out: np.ndarray) -> None:
        out[:] = buf.handle[:out.nbytes]

    def fill_uninit(self, buf: DeviceBuffer) -> None:
        buf.handle.fill(self.options.uninit_byte)

    # -- kernels -------------------------------------------------------------------------------
    def default_mode(self) -> str:
        return self.options.mode

    def device_count(self) -> int:
        return self.options.devices

    def compile(self, kernel: Kernel, target: str | None = None) -> Program:
        """Generate and load the kernel's numba module (NotSimulatedError names any instruction
        the simulator cannot run). One program per kernel object."""
        prog = self._programs.get(id(kernel))
        if prog is not None and prog.kernel is kernel:
            return prog
        with self._lock:
            prog = self._programs.get(id(kernel))
            if prog is not None and prog.kernel is kernel:
                return prog
            passes.run(kernel, self.soc)
            gen = codegen.generate(kernel, self.soc, self.options.cache_dir, self.options.events > 0)
            mod = C.load_module(gen.source, self.options.cache_dir, "k")
            prog = Program(kernel, self.name, (gen, mod.kernel, {}))
            self._programs[id(kernel)] = prog
            return prog

    def _gm(self, b: BufferArg) -> np.ndarray:
        buf = self.live.get(b.addr)
        if buf is None:
            raise PtoError(f"launch: no live device allocation at {b.addr:#x}",
                           rule="kernel arguments are live device tensors",
                           fix="pass tensors made in this session and not freed")
        n = int(np.prod(b.shape, dtype=np.int64)) * b.dtype.itemsize
        return buf.handle[:n].view(b.dtype.storage)

    def launch(self, program: Program, buffers: Sequence[BufferArg], grid: int,
               scalars: Sequence[int | float]) -> None:
        k: Kernel = program.kernel
        gen, fn, seen = program.artifact
        values: dict[str, Any] = {"block_num": grid}
        tensors = k.tensor_params
        for p, b in zip(tensors, buffers):
            values[f"g{p.index}"] = self._gm(b)
        for p, v in zip(k.scalar_params, scalars):
            values[f"s_{p.var.name}"] = v
        shapes = {p.index: tuple(b.shape) for p, b in zip(tensors, buffers)}
        for idx, d, name in gen.shape_vars:
            values[name] = int(shapes[idx][d])
        ctx = LaunchContext(k.name, self.options.events)
        with self._lock:
            self.stats.launches += 1
        blocks = list(range(grid))
        # block 0 runs on this thread first: its call compiles (or loads) the kernel once
        try:
            self._run_blocks(gen, fn, values, blocks[:1], ctx)
        except Exception as e:   # numba typing/lowering failure: a pypto bug, never the user's
            if not seen:
                raise PtoError(f"internal error: the simulator could not compile kernel {k.name}: "
                               f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                               rule="this is a pypto bug, not an error in your kernel",
                               fix="please report it with the kernel; meanwhile try "
                                   "@pypto.kernel(mode='eager')") from e
            raise
        with self._lock:
            C.count_new_specialisations(fn, seen, self.stats)
        if ctx.first_fault() is None and grid > 1:
            self._parallel(lambda part: self._run_blocks(gen, fn, values, part, ctx), blocks[1:])
        self.last_events = ctx.events() if self.options.events else None
        bad = ctx.first_fault()
        if bad is not None:
            raise fault(bad.err, gen.sites[int(bad.err[E.SITE])], int(bad.err[E.BLOCK]), k.name,
                        shapes) from None

    def _parallel(self, run: Callable[[list[int]], None], rest: list[int]) -> None:
        """Spread blocks round-robin over the backend's persistent worker threads (the kernels
        release the GIL); with threads=1 they run here, in order."""
        workers = max(1, min(self.options.threads, len(rest)))
        if workers == 1:
            run(rest)
            return
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.options.threads, thread_name_prefix="pypto-sim")
            pool = self._pool
        for f in [pool.submit(run, rest[w::workers]) for w in range(workers)]:
            f.result()

    def _run_blocks(self, gen, fn, shared: dict, blocks: list[int], ctx: LaunchContext) -> None:
        """Run some blocks on this thread's on-chip memory; stop at the first fault."""
        onchip = self.onchip.mine()
        rec = ctx.worker()
        values = dict(shared)
        for loc in gen.spaces:
            values[f"sp_{loc}"] = onchip.spaces[loc]
        values["err"], values["ev"], values["block_idx"] = rec.err, rec.events, 0
        args = [values[n] for n in gen.params]
        bi = gen.params.index("block_idx")
        for blk in blocks:
            onchip.poison(gen.spaces)
            args[bi] = blk
            fn(*args)
            if rec.err[0] != 0:
                rec.err[E.BLOCK] = blk
                return

    def run_eager(self, name: str, params: list, body: Callable[[Any], None],
                  buffers: Sequence[BufferArg], grid: int, scalars: Sequence[int | float]) -> None:
        """Eager mode: run the kernel body once per block, each statement executed at once by
        the same numba functions compiled mode calls. ``body(executor)`` runs the user's code."""
        gm = {p.index: self._gm(b) for p, b in zip([p for p in params if isinstance(p, TensorParam)],
                                                   buffers)}
        with self._lock:
            self.stats.launches += 1
        for blk in range(grid):
            ex = EagerExecutor(self.soc, name, gm, self.onchip.mine(), blk, grid, self.options,
                               self.stats)
            try:
                body(ex)
            except PtoError as e:
                raise e.located(f"kernel {name}, block {blk}") from None

    def close(self) -> None:
        super().close()
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
