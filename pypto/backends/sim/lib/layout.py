"""The one way every simulator implementation addresses a tile element.

A tile operand arrives as (storage array, valid rows, valid cols, layout descriptor); the
descriptor is ``TileType.desc``: (IR, IC, BRS, BCS, irs, ics). ``offset`` turns a logical
(row, col) into a storage index for ND, DN and the boxed Nz/Zn/Zz layouts alike.
"""
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
