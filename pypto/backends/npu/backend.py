"""NpuBackend: kernels emitted as PTO C++, built for a target, launched through a Runtime.

One class serves both targets (tinygrad's allocator/compiler/program split): ``npu`` builds with
bisheng and runs on the chip through pyACL; ``npu-cpusim`` builds the very same source with g++
against pto-isa's CPU backend and runs it on host memory through the same launcher, with
``HostAcl`` standing in for the runtime.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ... import config
from ...dtypes import ALL as ALL_DTYPES
from ...errors import AclError, NotSimulatedError, NpuLaunchError
from ...ir.nodes import Kernel
from .. import errcodes as EC
from ..base import Backend, BufferArg, DeviceBuffer, Program, ProgramCache
from ..faults import fault
from . import abi, build
from .emit import core_kind, emit_with_sites


# Element types a target's C++ library lacks: pto-isa's CPU backend has no float narrower than
# 16 bits (fp8, hif8, the packed fp4 pairs).
MISSING_TYPES = {"cpusim": tuple(d.short for d in ALL_DTYPES if d.is_float and d.itemsize == 1)}


def _check_types(kernel: Kernel, target_kind: str) -> None:
    missing = MISSING_TYPES.get(target_kind, ())
    used = {t.type.dtype for t in kernel.tiles} | {p.dtype for p in kernel.tensor_params}
    bad = sorted(d.name for d in used if d.short in missing)
    if bad:
        raise NotSimulatedError(
            f"kernel {kernel.name} uses {', '.join(bad)}, which pto-isa's CPU backend does not have",
            rule="npu-cpusim builds with pto-isa's CPU headers, which define no float8, hifloat8 or "
                 "float4 element types",
            fix="run such kernels on the simulator (backend='sim') or on the NPU")


@dataclass
class Launchable:
    """A loaded kernel: the ctypes entry point, its argument description and where it came from."""
    fn: Any
    args: list
    library: Path
    core: str
    sites: list              # guard site id -> IR statement


class NpuBackend(Backend):
    """Device memory through ``runtime``; kernels compiled by ``build`` for ``target_kind``."""

    def __init__(self, soc, device: int, *, name: str, runtime, target_kind: str, toolchain,
                 cache_dir: Path | None = None, max_blocks: dict[str, int] | None = None):
        super().__init__(soc, device)
        self.name = name
        self.rt = runtime
        self.target_kind = target_kind
        self.toolchain = toolchain
        self.cache_dir = Path(cache_dir) if cache_dir else build.default_cache_dir()
        self.max_blocks = max_blocks          # core kind -> cores; None: any block count (CPU)
        self._programs = ProgramCache()
        self._lock = threading.RLock()
        self.rt.init()
        self.rt.set_device(device)
        self.stream = self.rt.create_stream()
        self._closed = False

    # -- memory --------------------------------------------------------------------------------
    def device_count(self) -> int:
        return self.rt.device_count()

    def _alloc(self, nbytes: int, label: str) -> DeviceBuffer:
        self.rt.set_device(self.device)
        return DeviceBuffer(self.rt.malloc(nbytes), nbytes, self, None, label)

    def _free(self, buf: DeviceBuffer) -> None:
        self.rt.free(buf.addr)

    def _copy_in(self, buf: DeviceBuffer, data) -> None:
        self.rt.copy_h2d(buf.addr, data)

    def _copy_out(self, buf: DeviceBuffer, out) -> None:
        self.rt.copy_d2h(out, buf.addr)

    # -- kernels -------------------------------------------------------------------------------
    def source(self, kernel: Kernel) -> tuple[str, list]:
        """(the C++ this backend builds for ``kernel``, its guard sites)."""
        from ... import __version__
        return emit_with_sites(kernel, self.soc, header=f" {__version__}")

    def compile(self, kernel: Kernel, target: str | None = None) -> Program:
        prog = self._programs.get(kernel)
        if prog is not None:
            return prog
        with self._lock:
            prog = self._programs.get(kernel)
            if prog is not None:
                return prog
            _check_types(kernel, self.target_kind)
            core = core_kind(kernel)
            extra = build.cpusim_flags(config.env().get("PYPTO_CPUSIM_CXXFLAGS")) \
                if self.target_kind == "cpusim" else {}
            tgt = build.BuildTarget(self.target_kind, self.soc.name, core, **extra)
            before = build.compiles_done()
            src, sites = self.source(kernel)
            so = build.build(src, tgt, self.toolchain, self.cache_dir, name=kernel.name)
            if build.compiles_done() > before:
                self.stats.compiles += 1
            else:
                self.stats.cache_loads += 1
            lib = ctypes.CDLL(str(so))
            args = abi.arguments(kernel)
            fn = lib.call_kernel
            fn.argtypes = abi.argtypes(args)
            fn.restype = None
            prog = Program(kernel, self.name, artifact=Launchable(fn, args, Path(so), core, sites))
            self._programs.put(kernel, None, prog)
            return prog

    def launch(self, program: Program, buffers: Sequence[BufferArg], grid: int,
               scalars: Sequence[int | float]) -> None:
        k: Kernel = program.kernel
        art: Launchable = program.artifact
        limit = None if self.max_blocks is None else self.max_blocks.get(art.core)
        if limit is not None and grid > limit:
            raise NpuLaunchError(
                f"{k.name}[{grid}]: {grid} blocks, but {self.soc.name} has {limit} "
                f"{'vector' if art.core == 'vec' else 'cube'} cores",
                rule="an NPU launch runs at most one block per AI core of the kernel's kind",
                fix=f"launch with at most {limit} blocks and loop over the work inside the kernel "
                    "(pto.range(pto.block_idx(), n, pto.block_num()))")
        with self._lock:                      # one fault-record buffer per backend
            errs = self._fault_records(grid)
            vals = abi.values(art.args, k, buffers, scalars, errs.addr)
            self.rt.set_device(self.device)
            art.fn(grid, ctypes.c_void_p(self.stream or None), *vals)
            try:
                self.rt.synchronize(self.stream)
            except AclError as e:
                raise e.located(f"kernel {k.name}[{grid}] ({art.library.parent})") from None
            rec = np.zeros(grid * EC.SIZE, np.int64)
            self.rt.copy_d2h(rec.view(np.uint8), errs.addr)
        self.stats.launches += 1
        rows = rec.reshape(grid, EC.SIZE)
        bad = np.flatnonzero(rows[:, 0])
        if bad.size:
            r = rows[bad[0]]
            shapes = {p.index: tuple(b.shape) for p, b in zip(k.tensor_params, buffers)}
            raise fault(r, art.sites[int(r[EC.SITE])], int(r[EC.BLOCK]), k.name, shapes)

    def _fault_records(self, grid: int) -> DeviceBuffer:
        """A zeroed device buffer of one fault record per block (grown as launches need)."""
        nbytes = grid * EC.SIZE * 8
        buf = getattr(self, "_errs", None)
        if buf is None or buf.nbytes < nbytes:
            if buf is not None:
                self.rt.free(buf.addr)
            buf = self._errs = DeviceBuffer(self.rt.malloc(max(nbytes, 4096)), max(nbytes, 4096), self, None,
                                            "fault records")
        self.rt.copy_h2d(buf.addr, np.zeros(nbytes, np.uint8))
        return buf

    def close(self) -> None:
        if self._closed:
            return
        super().close()
        self._closed = True
        if getattr(self, "_errs", None) is not None:
            self.rt.free(self._errs.addr)
            self._errs = None
        self.rt.destroy_stream(self.stream)
        self.rt.reset_device(self.device)
        self.rt.finalize()


__all__ = ["NpuBackend", "Launchable"]
