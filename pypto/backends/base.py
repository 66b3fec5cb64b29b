"""The Backend protocol: device memory (alloc/free/copy) plus kernel compile and launch.

Public methods validate and account, so a failed call changes nothing; backends fill in the
underscored hooks (tinygrad's Allocator pattern).
"""
from __future__ import annotations

import contextlib
import functools
import threading
from dataclasses import dataclass, fields
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ..errors import HostBackingError, OutOfDeviceMemoryError, ShapeError, UseAfterFreeError


@dataclass
class Stats:
    """Host<->device (and device->device) traffic and device memory, as pypto.stats() reports them."""
    h2d_copies: int = 0
    h2d_bytes: int = 0
    d2h_copies: int = 0
    d2h_bytes: int = 0
    d2d_copies: int = 0
    d2d_bytes: int = 0
    live_tensors: int = 0
    live_bytes: int = 0
    peak_bytes: int = 0
    launches: int = 0
    compiles: int = 0          # kernels numba compiled in this process
    cache_loads: int = 0       # kernels loaded from the on-disk cache instead

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __str__(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.as_dict().items())


class DeviceBuffer:
    """A device (GM) allocation: its address, size, and the backend that owns it."""

    __slots__ = ("addr", "nbytes", "freed", "backend", "handle", "label")

    def __init__(self, addr: int, nbytes: int, backend: "Backend", handle: Any, label: str = ""):
        self.addr, self.nbytes, self.freed, self.backend, self.handle = addr, nbytes, False, backend, handle
        self.label = label

    def check_live(self, what: str) -> None:
        if self.freed:
            raise UseAfterFreeError(
                f"{what}: device memory {self.label} at {self.addr:#x} ({self.nbytes} bytes) was "
                "already freed",
                rule="a device tensor cannot be used after free() (or after pypto.finalize())",
                fix="keep the tensor alive until its last use, or allocate a new one")

    def __repr__(self):
        return f"DeviceBuffer({self.addr:#x}, {self.nbytes} B{', freed' if self.freed else ''})"


class Backend:
    name = "base"

    def __init__(self, soc, device: int):
        self.soc = soc
        self.device = device
        self.gm_capacity = soc.gm_bytes
        self.stats = Stats()
        self.live: dict[int, DeviceBuffer] = {}

    # -- memory --------------------------------------------------------------------------------
    def alloc(self, nbytes: int, label: str = "") -> DeviceBuffer:
        """Reserve nbytes of device memory; thread-safe, and a failed call changes nothing."""
        # One re-entrant lock per backend (created race-free: dict.setdefault is atomic);
        # re-entrant because a Tensor finalizer may free() from inside an alloc on this thread.
        lock = self.__dict__.setdefault("_gm_lock", threading.RLock())
        with lock:
            if nbytes > self.gm_capacity - self.stats.live_bytes:
                raise OutOfDeviceMemoryError(
                    f"cannot allocate {nbytes} bytes of device memory: {self.stats.live_bytes} of "
                    f"{self.gm_capacity} bytes ({self.soc.name} GM) are in use",
                    rule="device allocations must fit in the SoC's GM (HBM)",
                    fix="free tensors you no longer need (t.free()) or use smaller ones")
            heap = getattr(self, "heap", None)      # an address heap that can roll back
            txn = heap.transaction() if hasattr(heap, "transaction") else contextlib.nullcontext()
            try:
                with txn:
                    buf = self._alloc(max(nbytes, 1), label)
            except MemoryError:
                raise HostBackingError(
                    f"the host could not back {nbytes} bytes of device memory"
                    f"{f' ({label})' if label else ''}: host memory allocation failed",
                    rule=f"the {self.name} backend keeps device allocations in host RAM, so they "
                         "are also limited by the host's free memory",
                    fix="use smaller tensors, free tensors you no longer need, or run on a host "
                        "with more RAM") from None
            self.live[buf.addr] = buf
            s = self.stats
            s.live_tensors += 1
            s.live_bytes += buf.nbytes
            s.peak_bytes = max(s.peak_bytes, s.live_bytes)
            return buf

    def free(self, buf: DeviceBuffer) -> None:
        """Release a device allocation (UseAfterFreeError if already freed); thread-safe."""
        lock = self.__dict__.setdefault("_gm_lock", threading.RLock())
        with lock:
            buf.check_live("free()")
            self._free(buf)
            buf.freed = True
            self.live.pop(buf.addr, None)
            self.stats.live_tensors -= 1
            self.stats.live_bytes -= buf.nbytes

    def copy_in(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        """Copy host bytes to the start of buf (one counted H2D copy)."""
        buf.check_live("host->device copy")
        data = np.ascontiguousarray(host).reshape(-1).view(np.uint8)
        if data.nbytes > buf.nbytes:
            raise ShapeError(
                f"host->device copy: {data.nbytes} host bytes do not fit device memory {buf.label} "
                f"of {buf.nbytes} bytes",
                rule="a copy into a device tensor must not be larger than the tensor",
                fix="copy an array of the tensor's shape and dtype")
        self._copy_in(buf, data)
        lock = self.__dict__.setdefault("_gm_lock", threading.RLock())
        with lock:
            self.stats.h2d_copies += 1
            self.stats.h2d_bytes += data.nbytes

    def copy_out(self, buf: DeviceBuffer, out: np.ndarray) -> None:
        """Copy the start of buf into a C-contiguous host array (one counted D2H copy)."""
        buf.check_live("device->host copy")
        if not out.flags.c_contiguous or out.nbytes > buf.nbytes:
            raise ShapeError(
                f"device->host copy: destination of {out.nbytes} bytes (C-contiguous: "
                f"{out.flags.c_contiguous}) for device memory {buf.label} of {buf.nbytes} bytes",
                rule="the host destination must be C-contiguous and no larger than the tensor",
                fix="use tensor.numpy(), which allocates a matching host array")
        dst = out.reshape(-1).view(np.uint8)
        self._copy_out(buf, dst)
        lock = self.__dict__.setdefault("_gm_lock", threading.RLock())
        with lock:
            self.stats.d2h_copies += 1
            self.stats.d2h_bytes += dst.nbytes

    def copy_device(self, dst: DeviceBuffer, src: DeviceBuffer, nbytes: int) -> None:
        """Copy the first nbytes of src to the start of dst on the device (one counted D2D copy)."""
        src.check_live("device->device copy")
        dst.check_live("device->device copy")
        if nbytes > src.nbytes or nbytes > dst.nbytes:
            raise ShapeError(
                f"device->device copy of {nbytes} bytes from {src.label} ({src.nbytes} bytes) to "
                f"{dst.label} ({dst.nbytes} bytes)",
                rule="a device copy must fit both tensors", fix="copy between tensors of one shape")
        self._copy_device(dst, src, nbytes)
        lock = self.__dict__.setdefault("_gm_lock", threading.RLock())
        with lock:
            self.stats.d2d_copies += 1
            self.stats.d2d_bytes += nbytes

    def _copy_device(self, dst: DeviceBuffer, src: DeviceBuffer, nbytes: int) -> None:
        """Through host memory, for a backend without a device copy of its own."""
        tmp = np.empty(nbytes, np.uint8)
        self._copy_out(src, tmp)
        self._copy_in(dst, tmp)

    def close(self) -> None:
        """Free everything this backend still holds (pypto.finalize())."""
        for buf in list(self.live.values()):
            self.free(buf)

    # -- kernels -------------------------------------------------------------------------------
    def default_mode(self) -> str:
        """How the DSL runs kernels here: "compiled" (trace, compile, launch) or "eager"."""
        return "compiled"

    def device_count(self) -> int:
        return 1

    def compile(self, kernel, target: str | None = None) -> "Program":
        """Kernel IR -> a program this backend can launch. Raises NotSimulatedError (or the
        backend's own error) naming any instruction it cannot run."""
        raise NotImplementedError

    def launch(self, program: "Program", buffers: "Sequence[BufferArg]", grid: int,
               scalars: "Sequence[int | float]") -> None:
        """Run ``grid`` blocks of a compiled program. buffers: the kernel's tensor parameters as
        device addresses with shape and dtype, in parameter order; scalars likewise."""
        raise NotImplementedError

    def prepare(self, program: "Program", buffers: "Sequence[BufferArg]", grid: int,
                scalars: "Sequence[int | float]") -> "Callable[[], None]":
        """The launch just made, ready to repeat with the same arguments (a kernel's fast path
        calls it); a backend with nothing to precompute launches again."""
        return functools.partial(self.launch, program, buffers, grid, scalars)

    # -- hooks ----------------------------------------------------------------------------------
    def _alloc(self, nbytes: int, label: str) -> DeviceBuffer:
        raise NotImplementedError

    def _free(self, buf: DeviceBuffer) -> None:
        raise NotImplementedError

    def _copy_in(self, buf: DeviceBuffer, data: np.ndarray) -> None:
        raise NotImplementedError

    def _copy_out(self, buf: DeviceBuffer, out: np.ndarray) -> None:
        raise NotImplementedError


class BufferArg(NamedTuple):
    """A tensor argument of a launch: a device address with the shape and dtype the kernel sees."""
    addr: int
    shape: tuple[int, ...]
    dtype: Any


@dataclass
class Program:
    """A compiled kernel: its IR and whatever the backend built from it."""
    kernel: Any
    backend: str
    artifact: Any = None


class ProgramCache:
    """One backend instance's compiled programs, kept on each kernel (Kernel.programs) so that a
    kernel no longer used takes its programs with it; `variant` tells compilations apart."""

    def __init__(self) -> None:
        self._token = object()          # unique to this backend instance, never reused

    def get(self, kernel: Any, variant: Any = None) -> "Program | None":
        return kernel.programs.get((self._token, variant))

    def put(self, kernel: Any, variant: Any, program: "Program") -> None:
        kernel.programs[(self._token, variant)] = program
