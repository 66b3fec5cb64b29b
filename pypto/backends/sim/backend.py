"""SimBackend: the reference backend. GM heap, on-chip spaces as byte arrays of the SoC's real
capacities, kernels run compiled (one numba function per traced kernel) or eagerly.
Its semantics are the golden reference NPU results are compared with."""
from __future__ import annotations

import numpy as np

from ...errors import PtoError
from ...ir.nodes import RtFloat, RtInt, TensorParam
from ...lang.tile import GmTensor
from ..base import Backend, DeviceBuffer
from . import codegen, compile as C
from . import lowering as L
from .eager import EagerBuilder
from .faults import fault
from .memory import SimAllocator, host_array
from .options import SimOptions


class SimBackend(Backend):
    name = "sim"

    def __init__(self, soc, device: int, options: SimOptions | None = None):
        super().__init__(soc, device)
        self.options = options or SimOptions()
        self.gm_capacity = self.options.gm_bytes or soc.gm_bytes
        self.heap = SimAllocator(self.gm_capacity, soc.gm_align)
        self.spaces = {loc: np.full(sp.capacity, self.options.uninit_byte, np.uint8)
                       for loc, sp in soc.spaces.items()}
        self._compiled: dict[int, tuple] = {}
        self._extra_spaces: list[dict[str, np.ndarray]] = []    # on-chip memory of worker threads

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
    def supports(self, name: str, params: dict | None = None) -> bool:
        return L.simulated(name, params)

    def default_mode(self) -> str:
        return self.options.mode

    def device_count(self) -> int:
        return self.options.devices

    @staticmethod
    def _gm(t) -> np.ndarray:
        return t._buf.handle[:t.nbytes].view(t.dtype.storage)

    def run_compiled(self, k, args: tuple, block_dim: int) -> None:
        entry = self._compiled.get(id(k))
        fresh = entry is None
        if fresh:
            gen = codegen.generate(k, self.soc)
            entry = (k, gen, C.load(gen.source, self.options.cache_dir)[0])
        _, gen, fn = entry
        values: dict[str, object] = {"block_num": block_dim}
        for p, a in zip(k.params, args):
            if isinstance(p, TensorParam):
                values[f"g{p.index}"] = self._gm(a)
            else:
                values[f"s_{p.var.name}"] = a
        for idx, d, name in gen.shape_vars:
            values[name] = int(args[idx].shape[d])
        self.stats.launches += 1
        # block 0 on this thread first: its call compiles (or loads) the kernel
        try:
            failed = self._blocks(gen, fn, values, [0], self.spaces)
        except Exception as e:  # numba typing/lowering failure: a pypto bug, never the user's
            if fresh:
                raise PtoError(f"internal error: the simulator could not compile kernel {k.name}: "
                               f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                               rule="this is a pypto bug, not an error in your kernel",
                               fix="please report it with the kernel; meanwhile try "
                                   "@pypto.kernel(mode='eager')") from e
            raise
        if fresh:
            self._compiled[id(k)] = entry
            C.count_first_call(fn, self.stats)
        if failed is None and block_dim > 1:
            failed = self._parallel_blocks(gen, fn, values, block_dim)
        if failed is not None:
            blk, err = failed
            shapes = {p.index: tuple(a.shape) for p, a in zip(k.params, args) if isinstance(p, TensorParam)}
            raise fault(err, gen.sites[int(err[7])], blk, k.name, shapes) from None

    def _parallel_blocks(self, gen, fn, values, block_dim: int):
        """Blocks 1..block_dim-1, spread round-robin over worker threads (the kernels release the
        GIL), each worker with its own on-chip memory as each AI core has. Returns the fault of the
        lowest faulting block, as a serial run would report it."""
        rest = list(range(1, block_dim))
        workers = max(1, min(self.options.threads, len(rest)))
        spaces = self._worker_spaces(workers)
        if workers == 1:
            return self._blocks(gen, fn, values, rest, spaces[0])
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(lambda w: self._blocks(gen, fn, values, rest[w::workers], spaces[w]),
                                    range(workers)))
        faults = [r for r in results if r is not None]
        return min(faults, key=lambda r: r[0]) if faults else None

    def _worker_spaces(self, n: int) -> list[dict[str, np.ndarray]]:
        """On-chip memory for n workers: the backend's own for the first, then one set per worker."""
        while len(self._extra_spaces) < n - 1:
            self._extra_spaces.append({loc: np.full(a.size, self.options.uninit_byte, np.uint8)
                                       for loc, a in self.spaces.items()})
        return [self.spaces] + self._extra_spaces[:n - 1]

    @staticmethod
    def _blocks(gen, fn, shared: dict, blocks: list[int], spaces: dict[str, np.ndarray]):
        """Run some blocks on one worker; stop at the first fault and return (block, err)."""
        values = dict(shared)
        for loc in gen.spaces:
            values[f"sp_{loc}"] = spaces[loc]
        err = values["err"] = np.zeros(8, np.int64)
        for blk in blocks:
            values["block_idx"] = blk
            fn(*[values[n] for n in gen.params])
            if err[0] != 0:
                return blk, err
        return None

    def run_eager(self, kfn, specs: tuple, args: tuple, block_dim: int) -> None:
        params = kfn.make_params(specs, args)
        gm = {p.index: self._gm(a) for p, a in zip(params, args) if isinstance(p, TensorParam)}
        self.stats.launches += 1
        for blk in range(block_dim):
            b = EagerBuilder(self.soc, kfn.name, gm, self.spaces, blk, block_dim, self.options.cache_dir,
                             self.stats)
            call_args = []
            for p, a in zip(params, args):
                if isinstance(p, TensorParam):
                    call_args.append(GmTensor(p))
                else:
                    call_args.append(RtInt(a) if isinstance(a, int) else RtFloat(a))
            try:
                kfn.run_body(b, call_args)
            except PtoError as e:
                raise e.located(f"kernel {kfn.name}, block {blk}") from None
