"""Run-time checks for facts the tracer could not decide (dynamic shapes, valid regions, addresses)."""
from numba import njit

from . import errcodes as E

_J = dict(cache=True, error_model="numpy", nogil=True)


@njit(**_J)
def bound(k, value, limit, err):
    """0 <= value <= limit (a GM view bound), else GM_BOUNDS."""
    if value < 0 or value > limit:
        err[0] = E.GM_BOUNDS
        err[1] = k
        err[2] = value
        err[3] = limit


@njit(**_J)
def set_valid(rows, cols, cap_rows, cap_cols, err):
    if rows < 0 or cols < 0 or rows > cap_rows or cols > cap_cols:
        err[0] = E.SET_VALID
        err[1] = rows
        err[2] = cols
        err[3] = cap_rows
        err[4] = cap_cols


@njit(**_J)
def assign(addr, nbytes, capacity, align, err):
    if addr % align != 0:
        err[0] = E.ASSIGN_ALIGN
        err[1] = addr
        err[2] = align
    elif addr < 0 or addr + nbytes > capacity:
        err[0] = E.ASSIGN_CAP
        err[1] = addr
        err[2] = nbytes
        err[3] = capacity
