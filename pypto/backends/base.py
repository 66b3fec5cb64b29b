"""The Backend protocol: device memory (alloc/free/copy) plus kernel compile and launch.

Public methods validate and account, so a failed call changes nothing; backends fill in the
underscored hooks (tinygrad's Allocator pattern).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ..errors import OutOfDeviceMemoryError, UseAfterFreeError


@dataclass
class Stats:
    """Host<->device traffic and device memory, as pypto.stats() reports them."""
    h2d_copies: int = 0
    h2d_bytes: int = 0
    d2h_copies: int = 0
    d2h_bytes: int = 0
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
        if nbytes > self.gm_capacity - self.stats.live_bytes:
            raise OutOfDeviceMemoryError(
                f"cannot allocate {nbytes} bytes of device memory: {self.stats.live_bytes} of "
                f"{self.gm_capacity} bytes ({self.soc.name} GM) are in use",
                rule="device allocations must fit in the SoC's GM (HBM)",
                fix="free tensors you no longer need (t.free()) or use smaller ones")
        buf = self._alloc(max(nbytes, 1), label)
        self.live[buf.addr] = buf
        s = self.stats
        s.live_tensors += 1
        s.live_bytes += buf.nbytes
        s.peak_bytes = max(s.peak_bytes, s.live_bytes)
        return buf

    def free(self, buf: DeviceBuffer) -> None:
        buf.check_live("free()")
        self._free(buf)
        buf.freed = True
        self.live.pop(buf.addr, None)
        self.stats.live_tensors -= 1
        self.stats.live_bytes -= buf.nbytes

    def copy_in(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        buf.check_live("host->device copy")
        data = np.ascontiguousarray(host).reshape(-1).view(np.uint8)
        assert data.nbytes <= buf.nbytes
        self._copy_in(buf, data)
        self.stats.h2d_copies += 1
        self.stats.h2d_bytes += data.nbytes

    def copy_out(self, buf: DeviceBuffer, out: np.ndarray) -> None:
        buf.check_live("device->host copy")
        assert out.flags.c_contiguous
        dst = out.reshape(-1).view(np.uint8)
        self._copy_out(buf, dst)
        self.stats.d2h_copies += 1
        self.stats.d2h_bytes += dst.nbytes

    def close(self) -> None:
        """Free everything this backend still holds (pypto.finalize())."""
        for buf in list(self.live.values()):
            self.free(buf)

    # -- kernels -------------------------------------------------------------------------------
    def supports(self, name: str, params: dict | None = None) -> bool:
        """Can this backend run instruction ``name`` with these mode parameters?"""
        raise NotImplementedError

    def default_mode(self) -> str:
        return "compiled"

    def device_count(self) -> int:
        return 1

    def run_compiled(self, kernel, args: tuple, block_dim: int) -> None:
        raise NotImplementedError

    def run_eager(self, kfn, specs: tuple, args: tuple, block_dim: int) -> None:
        raise NotImplementedError

    # -- hooks ----------------------------------------------------------------------------------
    def _alloc(self, nbytes: int, label: str) -> DeviceBuffer:
        raise NotImplementedError

    def _free(self, buf: DeviceBuffer) -> None:
        raise NotImplementedError

    def _copy_in(self, buf: DeviceBuffer, data: np.ndarray) -> None:
        raise NotImplementedError

    def _copy_out(self, buf: DeviceBuffer, out: np.ndarray) -> None:
        raise NotImplementedError
