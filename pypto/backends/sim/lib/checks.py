"""Run-time checks for facts the tracer could not decide (dynamic shapes, valid regions,
addresses, runtime scalars); each writes the error record and leaves everything else alone."""
from numba import njit

from ... import errcodes as E
from .jit import INLINE, LIB, XCALLED
from .plain import plain_calls

_J = LIB
# The checks only kernels call, through guarded (bounds, set_valid, assign, the scalar checks), are
# XCALLED: no CPython entry point (lib/jit.py).
# The checks kernels and loops call at many sites are plain calls (plain_calls: one compile per
# argument types, whatever constant the caller passes), not numba IR inlines: inlined, with
# layout.offset, they were retyped at every site, 151 s against 124 s of CPU for a cold
# conformance/test_complex.py -k a2a3. LLVM still inlines them when it links the caller.


@njit(**XCALLED)
def bounds(k, v0, l0, v1, l1, v2, l2, err):
    """0 <= value <= limit for three (value, limit) pairs of a GM view's bounds, numbered k, k + 1,
    k + 2, else GM_BOUNDS for the first that fails; a pair (0, 0) fills an unused place. Three
    to a call (a 1-D window's bounds, or one dim's): the tutorial's add kernel makes 3 calls
    instead of 9 and its own compile takes 0.15-0.17 s instead of 0.18-0.21 s."""
    if v0 < 0 or v0 > l0:
        j, v, lim = k, v0, l0
    elif v1 < 0 or v1 > l1:
        j, v, lim = k + 1, v1, l1
    elif v2 < 0 or v2 > l2:
        j, v, lim = k + 2, v2, l2
    else:
        return
    err[0] = E.GM_BOUNDS
    err[1] = j
    err[2] = v
    err[3] = lim


@njit(**XCALLED)
def set_valid(rows, cols, cap_rows, cap_cols, err):
    if rows < 0 or cols < 0 or rows > cap_rows or cols > cap_cols:
        err[0] = E.SET_VALID
        err[1] = rows
        err[2] = cols
        err[3] = cap_rows
        err[4] = cap_cols


@njit(**XCALLED)
def assign(addr, nbytes, capacity, align, err):
    if addr < 0:
        err[0] = E.ASSIGN_NEG
        err[1] = addr
    elif addr % align != 0:
        err[0] = E.ASSIGN_ALIGN
        err[1] = addr
        err[2] = align
    elif addr + nbytes > capacity:
        err[0] = E.ASSIGN_CAP
        err[1] = addr
        err[2] = nbytes
        err[3] = capacity


@njit(**XCALLED)
def int_scalar(k, value, lo, hi, err):
    """A runtime integer scalar must fit the element type it is converted to."""
    if value < lo or value > hi:
        err[0] = E.SCALAR_RANGE
        err[1] = k
        err[2] = value
        err[3] = lo
        err[4] = hi


@njit(**XCALLED)
def float_scalar(k, value, limit, err):
    """A finite runtime float scalar must not overflow the element type (|value| <= limit,
    the first magnitude that rounds to infinity)."""
    if abs(value) >= limit and abs(value) != float("inf"):
        err[0] = E.SCALAR_INF
        err[1] = k


@plain_calls
@njit(**_J)
def covers(k, svr, svc, dvr, dvc, err):
    """Source k's valid region must contain dst's, else SRC_VALID."""
    if svr < dvr or svc < dvc:
        err[0] = E.SRC_VALID
        err[1] = k
        err[2] = svr
        err[3] = svc
        err[4] = dvr
        err[5] = dvc
        return False
    return True


# the elementwise templates' copy: a tiny function's own compile is mostly numba's fixed cost
covers_inlined = njit(**INLINE)(covers.py_func)


@plain_calls
@njit(**_J)
def same_rows(k, svr, dvr, err):
    """Row reductions: the source's valid rows equal dst's, else VALID_ROWS."""
    if svr != dvr:
        err[0] = E.VALID_ROWS
        err[1] = k
        err[2] = svr
        err[3] = dvr
        return False
    return True


@plain_calls
@njit(**_J)
def same_cols(k, svc, dvc, err):
    """Column reductions: the source's valid columns equal dst's, else VALID_COLS."""
    if svc != dvc:
        err[0] = E.VALID_COLS
        err[1] = k
        err[2] = svc
        err[3] = dvc
        return False
    return True


@plain_calls
@njit(**_J)
def strict(err):
    """SimOptions(checks="strict"): report uses whose NPU result is undefined."""
    return err[E.STRICT] != 0


@plain_calls
@njit(**_J)
def undefined(kind, k, r, c, value, err):
    """Record an UNDEFINED fault (kind UB_*, operand k, element (r, c), the offending value)."""
    err[0] = E.UNDEFINED
    err[1] = kind
    err[2] = k
    err[3] = r
    err[4] = c
    err[5] = value


@plain_calls
@njit(**_J)
def in_range(what, value, lo, hi, err):
    """lo <= value <= hi, else a RANGE fault."""
    if value < lo or value > hi:
        err[0] = E.RANGE
        err[1] = what
        err[2] = value
        err[3] = lo
        err[4] = hi
        return False
    return True
