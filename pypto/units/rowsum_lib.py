"""TROWSUM's numba loop (units/rowsum.py has the rules and the order each SoC sums in): kept
apart so tracing TROWSUM needs no numba."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..backends.sim.lib.checks import same_rows
from ..backends.sim.lib.layout import offset, row, row_dense
from ..backends.sim.lib.ops import f16_to_f32, f32_to_f16
from ..backends.sim.lib.jit import XCALLED

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py
# _tree, _fold and _widen are called (one loop each, per row or per lane block), not inlined at
# their seven uses: inlining them was a third of TROWSUM's 6 s compile.


@njit(**_J)
def _tree(buf, m):
    """Pairwise sum of buf[:m] in f32: adjacent pairs, an odd last element carried up."""
    while m > 1:
        half = m // 2
        for i in range(half):
            buf[i] = buf[2 * i] + buf[2 * i + 1]
        if m % 2 == 1:
            buf[half] = buf[m - 1]
        m = half + m % 2
    return buf[0]


@njit(**_J)
def _fold(lanes, x, f16):
    """lanes[k] += x[k] lane by lane in f32, each sum rounded to the element type."""
    if f16:
        for k in range(x.size):
            lanes[k] = f16_to_f32(f32_to_f16(lanes[k] + f16_to_f32(x[k])))
    else:
        for k in range(x.size):
            lanes[k] = lanes[k] + x[k]


@njit(**_J)
def _widen(buf, x, f16):
    """buf[:x.size] = x as f32."""
    if f16:
        for k in range(x.size):
            buf[k] = f16_to_f32(x[k])
    else:
        for k in range(x.size):
            buf[k] = x[k]


@njit(inline="always", **_J)
def _lanes_a2a3(x, svc, n, buf, lanes, f16):
    """a2a3: fold a row (a 1-D slice of svc elements) into n lanes (element-type adds), then
    tree the lanes."""
    if svc <= n:
        _widen(buf, x[:svc], f16)
        return _tree(buf, svc)
    full = svc // n
    _widen(lanes, x[:n], f16)
    if full >= 2:
        _fold(lanes, x[n:2 * n], f16)
    _fold(lanes, x[full * n:svc], f16)
    for i in range(2, full):
        _fold(lanes, x[i * n:(i + 1) * n], f16)
    for k in range(n):
        buf[k] = lanes[k]
    return _tree(buf, n)


@njit(inline="always", **_J)
def _repeats_a5(x, svc, n, buf, f16):
    """a5: tree each repeat, add the repeat sums onto +0 in the element type."""
    acc = np.float32(0)
    for j0 in range(0, svc, n):
        m = min(n, svc - j0)
        _widen(buf, x[j0:j0 + m], f16)
        part = _tree(buf, m)
        if f16:
            part = f16_to_f32(f32_to_f16(part))
            acc = f16_to_f32(f32_to_f16(acc + part))
        else:
            acc = np.float32(acc + part)
    return acc


@njit(**_J)
def rowsum(dst, dvr, dvc, dl, src, svr, svc, sl, a5, f16, err):
    """TROWSUM over f32 (f16=False) or f16 bit patterns (f16=True) on a2a3 or a5."""
    if not same_rows(1, svr, dvr, err):
        return
    if svc == 0:
        return
    n = 128 if f16 else 64
    buf = np.empty(128, np.float32)
    lanes = np.empty(128, np.float32)
    line = np.empty(svc, src.dtype)              # a row of a layout whose rows are not dense
    for r in range(svr):
        if row_dense(sl):
            x = row(src, sl, r, svc)
        else:
            for k in range(svc):
                line[k] = src[offset(sl, r, k)]
            x = line
        s = _repeats_a5(x, svc, n, buf, f16) if a5 else _lanes_a2a3(x, svc, n, buf, lanes, f16)
        if f16:
            dst[offset(dl, r, 0)] = f32_to_f16(s)
        else:
            dst[offset(dl, r, 0)] = s
