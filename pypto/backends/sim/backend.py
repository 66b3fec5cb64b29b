"""SimBackend: the reference backend. GM heap, on-chip spaces as byte arrays of the SoC's real
capacities, kernels compiled into one numba function each (or run eagerly, an option of the
simulator). Its semantics are the golden reference NPU results are compared with.

Thread-safe: launches may come from several threads at once; each block runs on a worker with
its own on-chip memory, poisoned at the block's start.
"""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from ...errors import PtoError, UseAfterFreeError
from ...ir import effects, passes
from ...ir.nodes import Kernel, TensorParam
from ..base import Backend, BufferArg, DeviceBuffer, Program, ProgramCache
from .blas import share_cores
from .context import LaunchContext, OnChipPool, WorkerRecord
from ..faults import PARTIAL, fault
from .. import errcodes as E
from .memory import GM_BASE, SimAllocator, host_array
from . import native, world
from .options import SimOptions

# codegen, compile and eager import numba; a kernel launched from its native form never needs them


class _NativeGen:
    """What a launch needs of a Generated module, as native.py saved it; the rest (the sites for
    a fault's message, the source for a reader) is generated again only when asked for."""

    def __init__(self, meta: dict, make: Callable[[], Any]):
        self.params, self.spaces = meta["params"], meta["spaces"]
        self.shape_vars = [tuple(v) for v in meta["shape_vars"]]
        self.space_params = [tuple(v) for v in meta["space_params"]]
        self._make, self._gen = make, None

    def _generated(self):
        if self._gen is None:
            self._gen = self._make()
        return self._gen

    @property
    def sites(self) -> list:
        return self._generated().sites

    @property
    def source(self) -> str:
        return self._generated().source


class _BlockQueue:
    """Block indices handed out in increasing order to whichever thread asks, until a fault stops
    it: the lowest faulting block still runs (every lower block was handed out before it), as a
    serial run would report it."""

    def __init__(self, blocks: list[int]):
        self._blocks, self._taken, self._stopped = blocks, itertools.count(), False

    def stop(self) -> None:
        self._stopped = True

    def __iter__(self) -> Iterator[int]:
        n = len(self._blocks)
        while not self._stopped:
            i = next(self._taken)        # atomic: one C call under the GIL, no lock to contend for
            if i >= n:
                return
            yield self._blocks[i]


class _Compiled:
    """A compiled kernel: generated code, its launcher (direct.Launcher, or native.NativeKernel
    when linked from its saved native form), where each
    launch value goes (``plan``: one (kind, index, dim) per parameter), the specialisations counted
    so far, and the key its native form is saved under after its first launch (native.py)."""

    def __init__(self, kernel: Kernel, gen, fn, events: bool = False, comm: bool = False,
                 save_as: str | None = None):
        self.gen, self.fn, self.plan, self.seen, self.events = gen, fn, _plan(kernel, gen), {}, events
        self.comm = comm                       # talks to other devices: blocks are counted
        self.save_as = save_as
        if isinstance(fn, native.NativeKernel):
            self.seen = {"n": 1, "hits": 1}
        names = gen.params
        self.block_slot = names.index("block_idx")
        self.err_slot, self.ev_slot = names.index("err"), names.index("ev")
        self.space_slots = [(names.index(n), loc, st) for n, loc, st in gen.space_params]


def _plan(k: Kernel, gen) -> list[tuple[str, int, int]]:
    """Where each generated parameter's value comes from at launch."""
    tensors = {f"g{p.index}": i for i, p in enumerate(k.tensor_params)}
    scalars = {f"s_{p.var.name}": i for i, p in enumerate(k.scalar_params)}
    pos = {p.index: i for i, p in enumerate(k.tensor_params)}
    dims = {name: (pos[idx], d) for idx, d, name in gen.shape_vars}
    plan = []
    for n in gen.params:
        if n in tensors:
            plan.append(("g", tensors[n], 0))
        elif n in scalars:
            plan.append(("s", scalars[n], 0))
        elif n in dims:
            plan.append(("n",) + dims[n])
        else:
            plan.append((n, 0, 0))          # block_num, or a per-worker slot
    return plan


def _compile_failure(k: Kernel, e: Exception) -> PtoError:
    return PtoError(f"internal error: the simulator could not compile kernel {k.name}: "
                    f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                    rule="this is a pypto bug, not an error in your kernel",
                    fix="please report it with the kernel; meanwhile try @pypto.kernel(mode='eager')")


def _raise_fault(program: Program, buffers: Sequence[BufferArg], err: np.ndarray) -> None:
    k, c = program.kernel, program.artifact
    shapes = {p.index: tuple(b.shape) for p, b in zip(k.tensor_params, buffers)}
    raise fault(err, c.gen.sites[int(err[E.SITE])], int(err[E.BLOCK]), k.name, shapes) from None


class SimBackend(Backend):
    name = "sim"

    def __init__(self, soc, device: int, options: SimOptions | None = None):
        super().__init__(soc, device)
        self.options = options or SimOptions()
        self.gm_capacity = self.options.gm_bytes or soc.gm_bytes
        # one device per MPI rank; this rank's GM is its window (world.py), else host arrays
        self.world = world.start(self.options.devices, self.gm_capacity, self.options.gm_bytes is not None)
        self.window = getattr(self.world, "mem", None)
        if self.window is not None:
            self.gm_capacity = self.world.capacity
            base = GM_BASE + self.world.rank * world.RANK_STRIDE
            self.heap = SimAllocator(self.gm_capacity - world.RESERVED, soc.gm_align, base + world.RESERVED)
            self.device = self.world.rank
        else:
            base = GM_BASE
            self.heap = SimAllocator(self.gm_capacity, soc.gm_align)
        self._gm_base = base
        self.onchip = OnChipPool(soc, self.options.uninit_byte)
        self._programs = ProgramCache()
        self._lock = threading.RLock()
        self._pool: ThreadPoolExecutor | None = None
        self._views: dict[int, dict] = {}      # addr -> {(shape, dtype): typed view}, until freed
        # with SimOptions(events=N): the last launch's events, rows of (site, block, pipe code,
        # sequence number, dynamic tile sizes: context.EVENT_COLUMNS), and each site's IR node
        self.last_events: np.ndarray | None = None
        self.last_event_sites: list = []
        self.last_events_dropped = 0           # events past the capacity (not recorded)

    # -- memory hooks ------------------------------------------------------------------------
    def _alloc(self, nbytes: int, label: str) -> DeviceBuffer:
        addr = self.heap.alloc(nbytes)
        if self.window is not None:
            at = addr - self._gm_base
            return DeviceBuffer(addr, nbytes, self, self.window[at:at + nbytes], label)
        return DeviceBuffer(addr, nbytes, self, host_array(nbytes), label)

    def _free(self, buf: DeviceBuffer) -> None:
        self._views.pop(buf.addr, None)
        self.heap.free(buf.addr, buf.nbytes)
        buf.handle = None

    def _copy_in(self, buf: DeviceBuffer, data: np.ndarray) -> None:
        buf.handle[:data.nbytes] = data

    def _copy_out(self, buf: DeviceBuffer, out: np.ndarray) -> None:
        out[:] = buf.handle[:out.nbytes]

    def _copy_device(self, dst: DeviceBuffer, src: DeviceBuffer, nbytes: int) -> None:
        dst.handle[:nbytes] = src.handle[:nbytes]

    def fill_uninit(self, buf: DeviceBuffer) -> None:
        buf.handle.fill(self.options.uninit_byte)

    # -- kernels -------------------------------------------------------------------------------
    def default_mode(self) -> str:
        return self.options.mode

    def device_count(self) -> int:
        return self.world.size

    def compile(self, kernel: Kernel, target: str | None = None) -> Program:
        """Generate and load the kernel's numba module (NotSimulatedError names any instruction
        the simulator cannot run). One program per kernel object."""
        events = self.options.events > 0          # recording events is a different module
        prog = self._programs.get(kernel, events)
        if prog is not None:
            return prog
        with self._lock:
            prog = self._programs.get(kernel, events)
            if prog is not None:
                return prog
            passes.run(kernel, self.soc)
            comm = effects.uses_world(kernel)
            key = None if events or comm or not self.options.native else \
                native.kernel_key(kernel, self.soc, events)
            meta = native.read(self.options.cache_dir, key) if key else None
            c = self._native(kernel, key, meta) if meta else None
            if c is None:             # saved after its first launch, unless a process tried before
                gen, fn = self._generate(kernel, events)
                c = _Compiled(kernel, gen, fn, events, comm, key if meta is None else None)
            if "Acc" in c.gen.spaces:              # the cube: its tile multiply is BLAS
                share_cores(self.options.threads)
            prog = Program(kernel, self.name, c)
            self._programs.put(kernel, events, prog)
            return prog

    def _generate(self, kernel: Kernel, events: bool):
        """The kernel's generated module and its launcher: the kernel compiled without numba's
        Python entry and called through one of pypto's (direct.py); the module with the Python
        entry is loaded only when that cannot serve."""
        from . import codegen
        from . import compile as C
        from .direct import Launcher
        gen, cache = codegen.generate(kernel, self.soc, self.options.cache_dir, events), self.options.cache_dir
        return gen, Launcher(C.load_module(gen.source, cache, "k").kernel,
                             lambda: C.load_module(codegen.with_python_entry(gen.source), cache, "k").kernel)

    def _native(self, kernel: Kernel, key: str, meta: dict) -> "_Compiled | None":
        """The kernel linked from its saved native form (native.py), or None. Its numba module is
        generated only if a fault's report or arguments of other types need it."""
        made: list = []

        def generated():
            if not made:
                made.extend(self._generate(kernel, False))
            return made

        fn = native.load(self.options.cache_dir, key, meta, lambda: generated()[1])
        if fn is None:
            return None
        with self._lock:
            self.stats.cache_loads += 1
        return _Compiled(kernel, _NativeGen(meta, lambda: generated()[0]), fn)

    def _gm(self, b: BufferArg) -> np.ndarray:
        """The allocation at b.addr as b's storage type (made once per allocation and view)."""
        view = self._views.get(b.addr, {}).get((b.shape, b.dtype))
        if view is not None:
            return view
        buf = self.live.get(b.addr)
        if buf is None:
            raise UseAfterFreeError(f"launch: no live device allocation at {b.addr:#x}",
                           rule="kernel arguments are live device tensors",
                           fix="pass tensors made in this session and not freed")
        view = buf.handle[:math.prod(b.shape) * b.dtype.itemsize].view(b.dtype.storage)
        self._views.setdefault(b.addr, {})[(b.shape, b.dtype)] = view
        return view

    def _args(self, c: "_Compiled", buffers: Sequence[BufferArg], grid: int,
              scalars: Sequence[int | float]) -> list:
        """The launch's values in the generated function's parameter order (per-worker slots None)."""
        gms = [self._gm(b) for b in buffers]
        w = self.world
        return [gms[x] if kind == "g" else scalars[x] if kind == "s" else int(buffers[x].shape[y])
                if kind == "n" else grid if kind == "block_num" else w.rank if kind == "rank_id"
                else w.size if kind == "rank_num" else None for kind, x, y in c.plan]

    def launch(self, program: Program, buffers: Sequence[BufferArg], grid: int,
               scalars: Sequence[int | float]) -> None:
        k: Kernel = program.kernel
        if program.artifact.events != (self.options.events > 0):   # recording switched on or off
            program = self.compile(k)
        c: _Compiled = program.artifact
        args = self._args(c, buffers, grid, scalars)
        ctx = LaunchContext(k.name, self.options.events, self.options.strict)
        self._count_launch()
        first = 0
        if not c.seen and not c.comm:   # block 0 runs on this thread first: its call compiles
            # (or loads) the kernel; a kernel's blocks that signal each other must start together
            first = 1
            try:
                self._run_blocks(c, args, [0], ctx)
            except Exception as e:   # numba typing/lowering failure: a pypto bug, never the user's
                raise _compile_failure(k, e) from e
        if grid > first and ctx.first_fault() is None:
            try:
                self._parallel(lambda part: self._run_blocks(c, args, part, ctx), list(range(first, grid)),
                               shared=not c.comm)
            except Exception as e:
                if c.seen or isinstance(e, PtoError):
                    raise
                raise _compile_failure(k, e) from e
        if len(c.fn.overloads) != c.seen.get("n"):
            from . import compile as C
            with self._lock:
                C.count_new_specialisations(c.fn, c.seen, self.stats)
        if c.save_as is not None and ctx.first_fault() is None:
            key, c.save_as = c.save_as, None
            native.save_later(self.options.cache_dir, key, c.fn, c.gen)
        if self.options.events:
            self.last_events, self.last_event_sites = ctx.events(), c.gen.sites
            self.last_events_dropped = ctx.dropped()
        bad = ctx.first_fault()
        if bad is not None:
            _raise_fault(program, buffers, bad.err)

    def prepare(self, program: Program, buffers: Sequence[BufferArg], grid: int,
                scalars: Sequence[int | float]) -> Callable[[], None]:
        """A one-block launch without events, repeated: the argument list is made once per
        thread, device memory is held by weak reference (a freed tensor's launch falls back to
        launch(), which refuses it), and the error record is reused."""
        c: _Compiled = program.artifact
        if grid != 1 or self.options.events or not c.seen or c.comm:
            return super().prepare(program, buffers, grid, scalars)
        template = self._args(c, buffers, grid, scalars)
        gm_refs = [(i, weakref.ref(template[i])) for i, (kind, _, _) in enumerate(c.plan) if kind == "g"]
        for i, _ in gm_refs:
            template[i] = None
        local, strict, spaces, fn = threading.local(), self.options.strict, c.gen.spaces, c.fn

        def run() -> None:
            mine = getattr(local, "mine", None)
            if mine is None:
                onchip, rec, args = self.onchip.mine(), WorkerRecord(), list(template)
                for i, loc, st in c.space_slots:
                    args[i] = onchip.typed(loc, st)
                args[c.err_slot], args[c.ev_slot], args[c.block_slot] = rec.err, rec.events, 0
                mine = local.mine = (onchip, rec, args, [None])
            onchip, rec, args, bound = mine
            if self.options.events:          # recording (pypto.timeline): a full launch
                return self.launch(program, buffers, grid, scalars)
            args = args.copy()
            for i, ref in gm_refs:
                args[i] = ref()
                if args[i] is None:
                    return self.launch(program, buffers, grid, scalars)
            rec.reset(strict)
            self._count_launch()
            onchip.poison(spaces)
            if bound[0] is None:              # the entry's words, packed once: the same arrays
                bound[0] = fn.bind(args) or False     # come back (checked above), no scalar changes
            if not bound[0] or bound[0]() != 0:
                fn(*args)                     # numba's entry, or what the kernel raised
            if rec.err[0] != 0:
                rec.err[E.BLOCK] = 0
                _raise_fault(program, buffers, rec.err)
        return run

    def _count_launch(self) -> None:
        with self._lock:
            self.stats.launches += 1

    def _parallel(self, run: Callable[[Iterable[int]], None], rest: list[int], shared: bool = True) -> None:
        """Run blocks on this thread and the backend's persistent worker threads (the kernels
        release the GIL); with threads=1 they run here, in order. ``shared``: every thread takes
        the next block from one queue in order, and a worker that has not started by the time this
        thread emptied it is cancelled, so a short launch does not wait for threads to wake
        (~50 us here, against ~2 us per small block). Otherwise (blocks that may signal each
        other) the shares are fixed round-robin and all start."""
        workers = max(1, min(self.options.threads, len(rest)))
        if workers == 1:
            run(rest)
            return
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.options.threads, thread_name_prefix="pypto-sim")
            pool = self._pool
        parts = [_BlockQueue(rest)] * workers if shared else [rest[w::workers] for w in range(workers)]
        futures = [pool.submit(run, part) for part in parts[1:]]
        try:
            run(parts[0])                         # the launching thread takes the first share
        finally:
            for f in futures:
                if not (shared and f.cancel()):
                    f.result()

    def _run_blocks(self, c: "_Compiled", shared: list, blocks: Iterable[int], ctx: LaunchContext) -> None:
        """Run some blocks on this thread's on-chip memory; stop at the first fault (a shared
        queue then hands out no more blocks to any thread)."""
        onchip = self.onchip.mine()
        rec = ctx.worker()
        args = list(shared)
        for i, loc, st in c.space_slots:
            args[i] = onchip.typed(loc, st)
        args[c.err_slot], args[c.ev_slot] = rec.err, rec.events
        bi, spaces, fn = c.block_slot, c.gen.spaces, c.fn
        for blk in blocks:
            onchip.poison(spaces)
            args[bi] = blk
            if c.comm:
                with self.world.block():
                    fn(*args)
            else:
                fn(*args)
            if rec.err[0] != 0:
                rec.err[E.BLOCK] = blk
                if isinstance(blocks, _BlockQueue):
                    blocks.stop()
                return

    def run_eager(self, name: str, params: list, body: Callable[[Any], None],
                  buffers: Sequence[BufferArg], grid: int, scalars: Sequence[int | float]) -> None:
        """Eager mode: run the kernel body once per block, each statement executed at once by
        the same numba functions compiled mode calls. ``body(executor)`` runs the user's code."""
        from .eager import EagerExecutor
        gm = {p.index: self._gm(b) for p, b in zip([p for p in params if isinstance(p, TensorParam)],
                                                   buffers)}
        with self._lock:
            self.stats.launches += 1
        ctx = LaunchContext(name, self.options.events, self.options.strict)
        sites: list = []
        try:
            for blk in range(grid):
                ex = EagerExecutor(self.soc, name, gm, self.onchip.mine(), blk, grid, self.options,
                                   self.stats, ctx.worker(), sites)
                try:
                    with self.world.block():
                        body(ex)
                except PtoError as e:
                    if (blk > 0 or ex.stored) and e.note is None:
                        e.noted(PARTIAL)
                    raise e.located(f"kernel {name}, block {blk}") from None
        finally:                      # a faulted launch keeps its events too, as in compiled mode
            if self.options.events:
                self.last_events, self.last_event_sites = ctx.events(), sites
                self.last_events_dropped = ctx.dropped()

    @contextlib.contextmanager
    def recording(self, capacity: int, mode: str | None = None):
        """Launches inside the block record up to ``capacity`` events per worker (the timeline's
        input), as SimOptions(events=capacity) would, in ``mode`` if given; the options are
        restored after."""
        before = self.options
        self.options = dataclasses.replace(before, events=max(1, int(capacity)),
                                           mode=mode or before.mode)
        try:
            yield self
        finally:
            self.options = before

    def close(self) -> None:
        super().close()
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
