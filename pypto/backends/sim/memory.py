"""The simulated GM heap: device addresses handed out first-fit inside the SoC's HBM capacity,
each allocation backed by its own host byte array (so large capacities cost nothing)."""
from __future__ import annotations

import bisect
import threading
from contextlib import contextmanager
from typing import Iterator

import numpy as np

from ...errors import HostBackingError, OutOfDeviceMemoryError
from ..base import DeviceBuffer

GM_BASE = 0x12C0_0000_0000


class SimAllocator:
    """First-fit address allocator over [base, base + capacity); thread-safe. Deterministic: the
    same allocations in the same order get the same addresses (symmetric GM windows).

    A free() re-entered on the same thread (a Tensor finalizer run by the garbage collector in
    the middle of an alloc/free) is deferred until the outer call finishes, so the free list is
    never edited half-way."""

    def __init__(self, capacity: int, align: int, base: int = GM_BASE):
        self.capacity = capacity
        self.align = align
        self.base = base
        self.free_list: list[tuple[int, int]] = [(base, capacity)]   # (addr, size), sorted
        self._lock = threading.RLock()
        self._owner: int | None = None             # thread inside alloc/free/transaction
        self._deferred: list[tuple[int, int]] = []

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the heap lock; the outermost holder applies frees deferred meanwhile."""
        with self._lock:
            outer = self._owner is None
            self._owner = threading.get_ident()
            try:
                yield
            finally:
                if outer:
                    try:
                        while self._deferred:
                            self._release(*self._deferred.pop())
                    finally:
                        self._owner = None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Undo every alloc/free made inside the block if it raises (a failed call changes nothing)."""
        with self._locked():
            saved = list(self.free_list)
            try:
                yield
            except BaseException:
                self.free_list[:] = saved
                raise

    def alloc(self, nbytes: int) -> int:
        """Reserve nbytes (rounded up to the alignment) at the lowest free address that fits."""
        size = -(-nbytes // self.align) * self.align
        with self._locked():
            for i, (addr, avail) in enumerate(self.free_list):
                if avail >= size:
                    if avail == size:
                        self.free_list.pop(i)
                    else:
                        self.free_list[i] = (addr + size, avail - size)
                    return addr
        raise OutOfDeviceMemoryError(
            f"no free block of {size} bytes in simulated GM (fragmented)",
            rule="a device allocation needs one contiguous free range of simulated GM",
            fix="free tensors you no longer need")

    def free(self, addr: int, nbytes: int) -> None:
        """Return a block to the free list, merging it with free neighbours."""
        if self._owner == threading.get_ident():     # re-entered mid-update: apply it later
            self._deferred.append((addr, nbytes))
            return
        with self._locked():
            self._release(addr, nbytes)

    def _release(self, addr: int, nbytes: int) -> None:
        size = -(-nbytes // self.align) * self.align
        i = bisect.bisect(self.free_list, (addr, 0))
        self.free_list.insert(i, (addr, size))
        # coalesce with neighbours
        if i + 1 < len(self.free_list) and addr + size == self.free_list[i + 1][0]:
            self.free_list[i] = (addr, size + self.free_list.pop(i + 1)[1])
        if i > 0 and self.free_list[i - 1][0] + self.free_list[i - 1][1] == addr:
            a, s = self.free_list.pop(i - 1)
            self.free_list[i - 1] = (a, s + self.free_list[i - 1][1])


_CHECKED_FROM = 64 << 20          # allocations this large are checked against the host's free RAM


def _available_host_bytes() -> float:
    """RAM the host can still give (Linux's MemAvailable); unknown elsewhere: no limit."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return float("inf")


def host_array(nbytes: int) -> np.ndarray:
    """64-byte aligned host bytes backing one device allocation; HostBackingError if the host
    cannot provide them."""
    if nbytes >= _CHECKED_FROM and nbytes > _available_host_bytes():
        raise host_backing_error(nbytes)  # numpy would succeed, and the first touch kill the process
    try:
        raw = np.empty(nbytes + 64, np.uint8)
    except MemoryError:
        raise host_backing_error(nbytes) from None
    off = (-raw.ctypes.data) % 64
    return raw[off:off + nbytes]


def host_backing_error(nbytes: int, label: str = "") -> HostBackingError:
    """The error for a simulated GM allocation the host's RAM cannot back."""
    what = f" ({label})" if label else ""
    return HostBackingError(
        f"the host could not back {nbytes} bytes ({nbytes / 2**30:.1f} GiB) of simulated device "
        f"memory{what}: host memory allocation failed",
        rule="the simulator keeps every device allocation in host RAM, so simulated GM is also "
             "limited by the host's free memory",
        fix="use smaller tensors, free tensors you no longer need, or run on a host with more RAM")


__all__ = ["SimAllocator", "host_array", "host_backing_error", "DeviceBuffer"]
