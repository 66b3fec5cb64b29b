"""numba loops of the row / column broadcasts (5.4, 5.9 n10): the binops, f16 and f32, and
the plain TROWEXPAND / TCOLEXPAND copies. The rules are in expand_row.py / expand_col.py.

One loop per form serves all seven ops (``opc``, a constant of the call) and both element types
(``f16``: the storage holds f16 bit patterns): operands widen exactly to f32, + - * / max min
compute in f32 (IEEE division by zero; max/min are ops.fmax / ops.fmin, NaN propagates) and the
result rounds once to the element type, as the elementwise TADD... do. EXPDIF rounds src0 - v to
the element type first (TSUB), then computes e**x in double and rounds once (TEXP).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..backends.sim.lib.checks import covers, same_cols, same_rows
from ..backends.sim.lib.floatbits import f16_to_f32, f32_to_f16, f64_to_f16, f64_to_f32
from ..backends.sim.lib.layout import offset, row, row_base, row_dense, same
from ..backends.sim.lib.ops import fmax, fmin
from ..backends.sim.lib.jit import XCALLED
from .reduce_rules import EXPAND_OPS

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py
# The per-element helpers are called, not inline="always": numba's IR inliner redid _apply's tree
# at every one of its call sites, 60 s of a cold conformance/test_reduce.py. Only the f32 row loops
# (plain arithmetic, cheap to inline) are inlined: called, they made softmax 20 % slower.
OPS = EXPAND_OPS                                 # instruction suffix -> opc (index)
ADD, SUB, MUL, DIV, MAX, MIN, EXPDIF = range(7)


@njit(**_J)
def _ld(x, f16):
    if f16:
        return f16_to_f32(x)
    return np.float32(x)


@njit(**_J)
def _apply(opc, x, y, f16):
    """op(x, y) of two f32 values, as a double holding the f32 result (or, for EXPDIF, the
    double e**x)."""
    if opc == ADD:
        r = np.float32(x + y)
    elif opc == SUB:
        r = np.float32(x - y)
    elif opc == MUL:
        r = np.float32(x * y)
    elif opc == DIV:
        r = np.float32(x / y)
    elif opc == MAX:
        r = np.float32(fmax(x, y))
    elif opc == MIN:
        r = np.float32(fmin(x, y))
    else:
        d = np.float32(x - y)
        if f16:
            d = f16_to_f32(f32_to_f16(d))
        return math.exp(np.float64(d))
    return np.float64(r)


@njit(**_J)
def _put(dst, i, r, f16):
    if f16:
        dst[i] = f64_to_f16(r)
    else:
        dst[i] = f64_to_f32(r)


@njit(inline="always", **_J)
def _f32_row(dr, ar, y, opc, n):
    """dr[c] = op(ar[c], y) over f32 slices: the op is chosen once per row and each loop is
    plain f32 arithmetic, so LLVM vectorises it (a per-element choice stops it). The results
    equal _apply's."""
    if opc == ADD:
        for c in range(n):
            dr[c] = ar[c] + y
    elif opc == SUB:
        for c in range(n):
            dr[c] = ar[c] - y
    elif opc == MUL:
        for c in range(n):
            dr[c] = ar[c] * y
    elif opc == DIV:
        for c in range(n):
            dr[c] = ar[c] / y
    elif opc == MAX:
        for c in range(n):
            dr[c] = fmax(ar[c], y)
    else:
        for c in range(n):
            dr[c] = fmin(ar[c], y)


@njit(**_J)
def rowexpand_op(dst, dvr, dvc, dl, a, avr, avc, al, b, bvr, bvc, bl, opc, width, f16, err):
    """dst[i, j] = op(a[i, j], b[i, 0]) (width 1: b is a column vector) or op(a[i, j],
    b[i, j % width]) (width c0: b holds one 32-byte block per row)."""
    if not same_rows(1, avr, dvr, err) or not same_cols(1, avc, dvc, err):
        return
    if not same_rows(2, bvr, dvr, err) or not same_cols(2, bvc, width, err):
        return
    if width == 1 and row_dense(dl) and row_dense(al) and not f16 and opc != EXPDIF:
        for r in range(dvr):                       # f32 rows: one vectorised loop per row
            y = np.float32(b[offset(bl, r, 0)])
            dr = row(dst, dl, r, dvc)
            ar = row(a, al, r, dvc)
            if same(dr, ar):                       # in place: read through dst (see layout.same)
                _f32_row(dr, dr, y, opc, dvc)
            else:
                _f32_row(dr, ar, y, opc, dvc)
        return
    if width == 1 and row_dense(dl) and row_dense(al):          # ND rows: consecutive elements
        for r in range(dvr):
            y = _ld(b[offset(bl, r, 0)], f16)
            d0, a0 = row_base(dl, r), row_base(al, r)
            for c in range(dvc):
                _put(dst, d0 + c, _apply(opc, _ld(a[a0 + c], f16), y, f16), f16)
        return
    for r in range(dvr):
        for c in range(dvc):
            y = _ld(b[offset(bl, r, c % width)], f16)
            _put(dst, offset(dl, r, c), _apply(opc, _ld(a[offset(al, r, c)], f16), y, f16), f16)


@njit(**_J)
def colexpand_op(dst, dvr, dvc, dl, a, avr, avc, al, b, bvr, bvc, bl, opc, f16, err):
    """dst[i, j] = op(a[i, j], b[0, j])."""
    if not covers(1, avr, avc, dvr, dvc, err) or not covers(2, bvr, bvc, min(dvr, 1), dvc, err):
        return
    if row_dense(dl) and row_dense(al) and row_dense(bl):
        b0 = row_base(bl, 0)
        for r in range(dvr):
            d0, a0 = row_base(dl, r), row_base(al, r)
            for c in range(dvc):
                _put(dst, d0 + c, _apply(opc, _ld(a[a0 + c], f16), _ld(b[b0 + c], f16), f16), f16)
        return
    for r in range(dvr):
        for c in range(dvc):
            y = _ld(b[offset(bl, 0, c)], f16)
            _put(dst, offset(dl, r, c), _apply(opc, _ld(a[offset(al, r, c)], f16), y, f16), f16)


# the plain broadcasts (TROWEXPAND, TCOLEXPAND): stored bits copied


@njit(**_J)
def rowexpand(dst, dvr, dvc, dl, src, svr, svc, sl, err):
    """dst[i, j] = src[i, 0] (stored bits copied)."""
    if not same_rows(1, svr, dvr, err):
        return
    for r in range(dvr):
        v = src[offset(sl, r, 0)]
        for c in range(dvc):
            dst[offset(dl, r, c)] = v


@njit(**_J)
def colexpand(dst, dvr, dvc, dl, src, svr, svc, sl, err):
    """dst[i, j] = src[0, j] (stored bits copied)."""
    if not same_cols(1, svc, dvc, err) or not covers(1, svr, svc, min(dvr, 1), dvc, err):
        return
    for r in range(dvr):
        for c in range(dvc):
            dst[offset(dl, r, c)] = src[offset(sl, 0, c)]
