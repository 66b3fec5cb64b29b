"""The simulated GM heap: device addresses handed out first-fit inside the SoC's HBM capacity,
each allocation backed by its own host byte array (so large capacities cost nothing)."""
from __future__ import annotations

import bisect

import numpy as np

from ...errors import OutOfDeviceMemoryError
from ..base import DeviceBuffer

GM_BASE = 0x12C0_0000_0000


class SimAllocator:
    def __init__(self, capacity: int, align: int):
        self.capacity = capacity
        self.align = align
        self.free_list: list[tuple[int, int]] = [(GM_BASE, capacity)]   # (addr, size), sorted

    def alloc(self, nbytes: int) -> int:
        size = -(-nbytes // self.align) * self.align
        for i, (addr, avail) in enumerate(self.free_list):
            if avail >= size:
                if avail == size:
                    self.free_list.pop(i)
                else:
                    self.free_list[i] = (addr + size, avail - size)
                return addr
        raise OutOfDeviceMemoryError(f"no free block of {size} bytes in simulated GM (fragmented)",
                                     fix="free tensors you no longer need")

    def free(self, addr: int, nbytes: int) -> None:
        size = -(-nbytes // self.align) * self.align
        i = bisect.bisect(self.free_list, (addr, 0))
        self.free_list.insert(i, (addr, size))
        # coalesce with neighbours
        if i + 1 < len(self.free_list) and addr + size == self.free_list[i + 1][0]:
            self.free_list[i] = (addr, size + self.free_list.pop(i + 1)[1])
        if i > 0 and self.free_list[i - 1][0] + self.free_list[i - 1][1] == addr:
            a, s = self.free_list.pop(i - 1)
            self.free_list[i - 1] = (a, s + self.free_list[i - 1][1])


def host_array(nbytes: int) -> np.ndarray:
    """64-byte aligned host bytes backing one device allocation."""
    raw = np.empty(nbytes + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off:off + nbytes]


__all__ = ["SimAllocator", "host_array", "DeviceBuffer"]
