"""The one way every simulator implementation addresses a tile element.

A tile operand arrives as (storage array, valid rows, valid cols, layout descriptor); the
descriptor is ``TileType.desc``: (IR, IC, BRS, BCS, irs, ics). ``offset`` turns a logical
(row, col) into a storage index for ND, DN and the boxed Nz/Zn/Zz layouts alike.
"""
import numpy as np
from numba import njit

_J = dict(cache=True, inline="always", error_model="numpy", nogil=True)


@njit(**_J)
def offset(lay, r, c):
    """Storage index of logical element (r, c) (pto-isa-semantics 3.3)."""
    ir_, ic, brs, bcs, irs, ics = lay
    if ir_ == 1 and ic == 1:
        return r * brs + c * bcs
    return (r // ir_) * brs + (c // ic) * bcs + (r % ir_) * irs + (c % ic) * ics


@njit(**_J)
def row_dense(lay):
    """True when a row's elements are consecutive in storage (ND): loops can run on slices."""
    return lay[0] == 1 and lay[1] == 1 and lay[3] == 1


@njit(**_J)
def row_base(lay, r):
    """Storage index of (r, 0) for a row_dense layout."""
    return r * lay[2]


@njit(**_J)
def row_part(lay, r):
    """The row's share of ``offset``: offset(r, c) == row_part(r) + col_part(c) in every layout."""
    ir_, ic, brs, bcs, irs, ics = lay
    if ir_ == 1 and ic == 1:
        return r * brs
    return (r // ir_) * brs + (r % ir_) * irs


@njit(**_J)
def col_part(lay, c):
    """The column's share of ``offset`` (see row_part)."""
    ir_, ic, brs, bcs, irs, ics = lay
    if ir_ == 1 and ic == 1:
        return c * bcs
    return (c // ic) * bcs + (c % ic) * ics


@njit(cache=True, error_model="numpy", nogil=True)
def parts(lay, r0, rows, c0, cols):
    """(row parts of rows r0 .. r0 + rows - 1, column parts of cols c0 ..): loops over a window
    add two table entries per element instead of dividing by the box sizes."""
    ro = np.empty(rows, np.int64)
    co = np.empty(cols, np.int64)
    for i in range(rows):
        ro[i] = row_part(lay, r0 + i)
    for j in range(cols):
        co[j] = col_part(lay, c0 + j)
    return ro, co
