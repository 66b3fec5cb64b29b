"""Numba side of the per-launch runtime context (backends/sim/context.py): the event buffer.

``ev`` is an int64 array of shape (capacity + 1, 8); row 0 holds the count of events written,
rows 1.. one event each: (site id, block, pipe code, order in this buffer, then the runtime valid
rows and columns of the instruction's first two dynamic tiles, 0 where there are none: the cost
model prices those at their size, not their capacity). Events past the capacity are counted but
dropped.
"""
from numba import njit

from .plain import plain_calls
from .xcall import xcall
from .jit import LIB


@plain_calls
@njit(**LIB)
def record(ev, site, block, pipe, r0, c0, r1, c1, err):
    """Record one event; nothing after a fault (the faulted instruction and those skipped)."""
    if err[0] != 0:
        return
    n = ev[0, 0] + 1
    ev[0, 0] = n
    if n < ev.shape[0]:
        ev[n, 0] = site
        ev[n, 1] = block
        ev[n, 2] = pipe
        ev[n, 3] = n - 1
        ev[n, 4] = r0
        ev[n, 5] = c0
        ev[n, 6] = r1
        ev[n, 7] = c1


record_call = xcall(record)      # generated kernels call record through this (codegen.HEADER)
