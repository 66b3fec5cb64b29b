"""The numba loops of the Vec -> Vec moves: TMOV, TTRANS, TEXTRACT / TINSERT and TFILLPAD (the
rules are in move_tmov.py, move_trans.py, move_window.py and move_fillpad.py). Kept apart so
tracing them needs no numba."""
from __future__ import annotations

from numba import njit

from ..backends import errcodes as EC
from ..backends.sim.lib.checks import in_range
from ..backends.sim.lib.layout import offset
from ..backends.sim.lib.jit import XCALLED

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py


@njit(**_J)
def tmov(dst, dvr, dvc, dl, src, svr, svc, sl, blocks, c0, cols, dst_static_full, err):
    vr = min(svr, dvr)
    vc = min(svc, dvc)
    if vr == 0 or vc == 0:
        return
    w = vc
    if blocks:                             # a2a3: whole 32-byte blocks, or whole rows
        w = cols if dst_static_full or vc == cols else min(((vc + c0 - 1) // c0) * c0, cols)
    for r in range(vr):
        for c in range(w):
            dst[offset(dl, r, c)] = src[offset(sl, r, c)]


@njit(**_J)
def tmov_nd2nz(dst, dvr, dvc, dl, src, svr, svc, sl, c0, extra, err):
    v = ((svr + 15) // 16) * 16 + extra
    for r in range(svr):
        for c in range(svc):
            dst[((c // c0) * v + r) * c0 + c % c0] = src[offset(sl, r, c)]


@njit(**_J)
def ttrans(dst, dvr, dvc, dl, src, svr, svc, sl, full, rows, cols, drows, dcols, err):
    vr = rows if full else svr
    vc = cols if full else svc
    if not in_range(EC.RANGE_EXTENT, vc, 0, drows, err) or not in_range(EC.RANGE_EXTENT, vr, 0, dcols, err):
        return
    for i in range(vr):
        for j in range(vc):
            dst[offset(dl, j, i)] = src[offset(sl, i, j)]


@njit(**_J)
def textract(dst, dvr, dvc, dl, src, svr, svc, sl, r0, c0, err):
    if not in_range(EC.RANGE_OFFSET, r0, 0, svr - dvr, err) or \
            not in_range(EC.RANGE_OFFSET, c0, 0, svc - dvc, err):
        return
    for i in range(dvr):
        for j in range(dvc):
            dst[offset(dl, i, j)] = src[offset(sl, r0 + i, c0 + j)]


@njit(**_J)
def tinsert(dst, dvr, dvc, dl, src, svr, svc, sl, r0, c0, err):
    if not in_range(EC.RANGE_OFFSET, r0, 0, dvr - svr, err) or \
            not in_range(EC.RANGE_OFFSET, c0, 0, dvc - svc, err):
        return
    for i in range(svr):
        for j in range(svc):
            dst[offset(dl, r0 + i, c0 + j)] = src[offset(sl, i, j)]


@njit(**_J)
def fillpad(dst, dvr, dvc, dl, src, svr, svc, sl, cols_cap, copy, pad, skip_empty, err):
    if skip_empty and (dvr == 0 or dvc == 0):
        return
    for r in range(svr):
        if copy:
            for c in range(svc):
                dst[offset(dl, r, c)] = src[offset(sl, r, c)]
        for c in range(svc, cols_cap):
            dst[offset(dl, r, c)] = pad
    for r in range(svr, dvr):
        for c in range(cols_cap):
            dst[offset(dl, r, c)] = pad
