"""numba loops of the axis reductions beyond TROWSUM (5.4, 5.9 n9, Addendum "Reductions").

Floats load into f32 (codec 0 f32, 1 f16, 2 bf16 bit patterns), every op computes in f32 and is
rounded to the element type (``_rnd``), as the NPU's vector ops do; max/min are ops.fmax /
ops.fmin (NaN propagates). Integers compute in int64 and wrap to the element type on store
(sums and products modulo 2^w do not depend on the order). Kinds and orders are documented in
reduce_row.py / reduce_col.py, which lower to these functions.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..backends import errcodes as EC
from ..backends.sim.lib.checks import same_cols, same_rows, strict, undefined
from ..backends.sim.lib.layout import offset, row_dense
from ..backends.sim.lib.layout import row as _row
from ..backends.sim.lib.ops import fmax, fmin
from ..backends.sim.lib.floatbits import bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16
from ..backends.sim.lib.jit import XCALLED
from .reduce_rules import MAX, PAIR_A2A3, PAIR_A5, PROD, SEQ_A5, SUM

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py
F16_MAX, F32_MAX = 65504.0, 3.4028234663852886e38


@njit(**_J)
def _ld(x, codec):
    if codec == 1:
        return f16_to_f32(x)
    if codec == 2:
        return bf16_to_f32(x)
    return np.float32(x)


@njit(**_J)
def _rnd(v, codec):
    """An f32 result rounded to the element type (and widened back)."""
    if codec == 1:
        return f16_to_f32(f32_to_f16(v))
    if codec == 2:
        return bf16_to_f32(f32_to_bf16(v))
    return np.float32(v)


@njit(**_J)
def _op(kind, a, b, codec):
    if kind == SUM:
        r = np.float32(a + b)
    elif kind == PROD:
        r = np.float32(a * b)
    elif kind == MAX:
        r = np.float32(fmax(a, b))
    else:
        r = np.float32(fmin(a, b))
    return _rnd(r, codec)


@njit(**_J)
def _store(dst, i, v, codec):
    if codec == 1:
        dst[i] = f32_to_f16(v)
    elif codec == 2:
        dst[i] = f32_to_bf16(v)
    else:
        dst[i] = v


# -- row reductions (f16 / f32) -------------------------------------------------------------------

@njit(**_J)
def _prod_a2a3(src, sl, r, svc, codec, lanes):
    """32-byte lanes start at 1, multiply block by block (element type), then the lanes are
    multiplied left to right in f32 on the scalar unit."""
    n = 16 if codec == 1 else 8
    for k in range(n):
        lanes[k] = 1.0
    for j0 in range(0, svc, n):
        for k in range(min(n, svc - j0)):
            lanes[k] = _rnd(np.float32(lanes[k] * _ld(src[offset(sl, r, j0 + k)], codec)), codec)
    p = np.float32(lanes[0])
    for k in range(1, n):
        p = np.float32(p * lanes[k])
    return _rnd(p, codec)


@njit(**_J)
def _prod_a5(src, sl, r, svc, codec, lanes):
    """256-byte lanes start at 1, multiply repeat by repeat, then fold in halves: lane i times
    lane i + L/2 (element type) until one lane is left."""
    n = 128 if codec == 1 else 64
    for k in range(n):
        lanes[k] = 1.0
    for j0 in range(0, svc, n):
        for k in range(min(n, svc - j0)):
            lanes[k] = _rnd(np.float32(lanes[k] * _ld(src[offset(sl, r, j0 + k)], codec)), codec)
    m = n
    while m > 1:
        m //= 2
        for i in range(m):
            lanes[i] = _rnd(np.float32(lanes[i] * lanes[i + m]), codec)
    return np.float32(lanes[0])


@njit(**_J)
def _nans(row, n, codec):
    """How many NaNs the row holds (a vectorised count)."""
    k = 0
    for j in range(n):
        x = _ld(row[j], codec)
        k += x != x
    return k


@njit(fastmath={"nnan", "nsz"}, **_J)
def _plain_maxmin(row, n, kind, codec):
    """max / min of a NaN-free row (the flags let LLVM vectorise the reduction; only which zero
    it returns can differ from the in-order scan, so callers redo a zero result)."""
    m = _ld(row[0], codec)
    if kind == MAX:
        for j in range(1, n):
            m = max(m, _ld(row[j], codec))
    else:
        for j in range(1, n):
            m = min(m, _ld(row[j], codec))
    return m


@njit(**_J)
def _maxmin(src, sl, r, svc, kind, a5, codec):
    """a5 starts from -/+ max finite; a2a3 from the first element."""
    big = np.float32(F16_MAX if codec == 1 else F32_MAX)
    if row_dense(sl) and svc > 1:
        row = _row(src, sl, r, svc)
        if _nans(row, svc, codec) == 0:
            m = np.float32(_plain_maxmin(row, svc, kind, codec))
            if m != 0:
                if not a5:
                    return m
                return np.float32(fmax(-big, m)) if kind == MAX else np.float32(fmin(big, m))
    if a5:
        acc = -big if kind == MAX else big
        j0 = 0
    else:
        acc = _ld(src[offset(sl, r, 0)], codec)
        j0 = 1
    for j in range(j0, svc):
        x = _ld(src[offset(sl, r, j)], codec)
        acc = np.float32(fmax(acc, x)) if kind == MAX else np.float32(fmin(acc, x))
    return acc


@njit(**_J)
def rowreduce(dst, dvr, dvc, dl, src, svr, svc, sl, kind, a5, codec, err):
    """TROWPROD / TROWMAX / TROWMIN over src's valid region into dst column 0."""
    if not same_rows(1, svr, dvr, err):
        return
    if svc == 0:
        return
    lanes = np.empty(128, np.float32)
    for r in range(svr):
        if kind == PROD:
            v = _prod_a5(src, sl, r, svc, codec, lanes) if a5 else _prod_a2a3(src, sl, r, svc, codec, lanes)
        else:
            v = _maxmin(src, sl, r, svc, kind, a5, codec)
        _store(dst, offset(dl, r, 0), v, codec)


# -- column reductions ----------------------------------------------------------------------------

@njit(**_J)
def _col_pairs_a2a3(v, n, t, codec):
    """t[i] = v[2i] + v[2i+1], an odd last row into t[0]; again on t until one row is left."""
    cnt = n // 2
    for i in range(cnt):
        t[i] = _op(SUM, v[2 * i], v[2 * i + 1], codec)
    if n % 2 == 1:
        t[0] = _op(SUM, t[0], v[n - 1], codec)
    while cnt > 1:
        half = cnt // 2
        for i in range(half):
            t[i] = _op(SUM, t[2 * i], t[2 * i + 1], codec)
        if cnt % 2 == 1:
            t[0] = _op(SUM, t[0], t[cnt - 1], codec)
        cnt = half
    return t[0]


@njit(**_J)
def _col_pairs_a5(v, n, t, codec):
    """t[i] = v[2i] + v[2i+1], an odd last row into the last t; then floor(log2(n / 2)) rounds
    of t[j] = t[2j] + t[2j+1], an odd t into the new last one."""
    cnt = n // 2
    for i in range(cnt):
        t[i] = _op(SUM, v[2 * i], v[2 * i + 1], codec)
    if n % 2 == 1:
        t[cnt - 1] = _op(SUM, v[n - 1], t[cnt - 1], codec)
    rounds = 0
    m = cnt
    while m > 1:
        m //= 2
        rounds += 1
    for _ in range(rounds):
        odd = cnt % 2
        cnt //= 2
        for j in range(cnt):
            t[j] = _op(SUM, t[2 * j], t[2 * j + 1], codec)
        if odd:
            t[cnt - 1] = _op(SUM, t[cnt - 1], t[2 * cnt], codec)
    return t[0]


@njit(**_J)
def _col_seq_a5(v, n, kind, codec):
    """r0 op (r1 op r2) op (r3 op r4) ... op r_last."""
    acc = v[0]
    for j in range((n - 1) // 2):
        acc = _op(kind, acc, _op(kind, v[2 * j + 1], v[2 * j + 2], codec), codec)
    if (n - 1) % 2 == 1:
        acc = _op(kind, acc, v[n - 1], codec)
    return acc


@njit(**_J)
def _undefined_tmp_row(order, svr, err):
    """a5 TCOLSUM isBinary with one row addresses the tmp row before tmp (strict mode)."""
    if order == PAIR_A5 and svr == 1 and strict(err):
        undefined(EC.UB_OUT_OF_TILE, 2, -1, 0, 0, err)
        return True
    return False


@njit(**_J)
def colreduce_f(dst, dvr, dvc, dl, src, svr, svc, sl, kind, order, codec, err):
    """A float column reduction of src's valid region into dst row 0, in the given order."""
    if not same_cols(1, svc, dvc, err):
        return
    if svr == 0 or svc == 0 or _undefined_tmp_row(order, svr, err):
        return
    v = np.empty(svr, np.float32)
    t = np.empty(svr // 2 + 1, np.float32)
    for c in range(svc):
        for r in range(svr):
            v[r] = _ld(src[offset(sl, r, c)], codec)
        if svr == 1:
            acc = v[0]
        elif order == PAIR_A2A3:
            acc = _col_pairs_a2a3(v, svr, t, codec)
        elif order == PAIR_A5:
            acc = _col_pairs_a5(v, svr, t, codec)
        elif order == SEQ_A5:
            acc = _col_seq_a5(v, svr, kind, codec)
        else:
            acc = v[0]
            for r in range(1, svr):
                acc = _op(kind, acc, v[r], codec)
        _store(dst, offset(dl, 0, c), acc, codec)


@njit(**_J)
def colreduce_i(dst, dvr, dvc, dl, src, svr, svc, sl, kind, order, err):
    """An integer column reduction (int64 arithmetic, wrapped to the element type on store)."""
    if not same_cols(1, svc, dvc, err):
        return
    if svr == 0 or svc == 0 or _undefined_tmp_row(order, svr, err):
        return
    for c in range(svc):
        acc = np.int64(src[offset(sl, 0, c)])
        for r in range(1, svr):
            x = np.int64(src[offset(sl, r, c)])
            if kind == SUM:
                acc = acc + x
            elif kind == PROD:
                acc = acc * x
            elif kind == MAX:
                acc = acc if acc >= x else x
            else:
                acc = acc if acc <= x else x
        dst[offset(dl, 0, c)] = acc
