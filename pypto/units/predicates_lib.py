"""The numba loops of predicates.py (which has the rules), kept apart so tracing its
instructions needs no numba."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..backends.sim.lib.floatbits import f16_to_f32
from ..backends.sim.lib.layout import offset
from . import bits_checks as R
from ..backends.sim.lib.jit import XCALLED
from .predicates import HALF, HALF_BITS

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py


@njit(inline="always", **_J)
def load(x, kind):
    if kind == HALF or kind == HALF_BITS:
        return f16_to_f32(x)                 # f16 storage, or i16/u16 bits read as a half
    return x


@njit(inline="always", **_J)
def load_scalar(s, kind):
    """The scalar in the compare type: an f16 scalar arrives as its f32 value, an a2a3 i16/u16
    scalar as the element whose bits are read as a half."""
    if kind == HALF_BITS:
        return f16_to_f32(s)
    return s


@njit(inline="always", **_J)
def pred(x, y, mode):
    if mode == 0:
        return x == y
    if mode == 1:
        return x != y
    if mode == 2:
        return x < y
    if mode == 3:
        return x <= y
    if mode == 4:
        return x > y
    return x >= y


@njit(**_J)
def cmp_rows(dst, dvr, dvc, dl, a, avr, avc, al, b, bvr, bvc, bl, mode, kind, rep, drows, drowbytes, err):
    """a2a3 TCMP: per-row packing at dst's row stride, whole repeats, 0 past validCol."""
    if not R.covers_src(2, bvr, bvc, 1, avr, avc, err) or not R.mask_rows_fit(0, avr, avc, drows, drowbytes, err):
        return
    d = dst.view(np.uint8)
    wbytes = (avc + rep - 1) // rep * rep // 8
    for r in range(avr):
        base = r * drowbytes
        for j in range(min(wbytes, d.size - base)):
            v = 0
            for k in range(8):
                e = j * 8 + k
                if e < avc and pred(load(a[offset(al, r, e)], kind), load(b[offset(bl, r, e)], kind), mode):
                    v |= 1 << k
            d[base + j] = v


@njit(**_J)
def cmps_rows(dst, dvr, dvc, dl, a, avr, avc, al, s, mode, kind, rep, drows, drowbytes, err):
    """a2a3 TCMPS: as cmp_rows against one scalar."""
    if not R.mask_rows_fit(0, avr, avc, drows, drowbytes, err):
        return
    d = dst.view(np.uint8)
    y = load_scalar(s, kind)
    wbytes = (avc + rep - 1) // rep * rep // 8
    for r in range(avr):
        base = r * drowbytes
        for j in range(min(wbytes, d.size - base)):
            v = 0
            for k in range(8):
                e = j * 8 + k
                if e < avc and pred(load(a[offset(al, r, e)], kind), y, mode):
                    v |= 1 << k
            d[base + j] = v


@njit(**_J)
def cmp_stream(dst, dvr, dvc, dl, a, avr, avc, al, b, bvr, bvc, bl, mode, kind, chunk, err):
    """a5 TCMP: one stream over the first avr * avc storage elements, whole chunks, 0 past it."""
    if not R.covers_src(2, bvr, bvc, 1, avr, avc, err):
        return
    n = avr * avc
    d = dst.view(np.uint8)
    if not R.mask_stream_fits(0, n, d.size, err):
        return
    wbytes = (n + chunk - 1) // chunk * chunk // 8
    for j in range(min(wbytes, d.size)):
        v = 0
        for k in range(8):
            e = j * 8 + k
            if e < n and pred(load(a[e], kind), load(b[e], kind), mode):
                v |= 1 << k
        d[j] = v


@njit(**_J)
def cmps_stream(dst, dvr, dvc, dl, a, avr, avc, al, s, mode, kind, chunk, err):
    n = avr * avc
    d = dst.view(np.uint8)
    if not R.mask_stream_fits(0, n, d.size, err):
        return
    y = load_scalar(s, kind)
    wbytes = (n + chunk - 1) // chunk * chunk // 8
    for j in range(min(wbytes, d.size)):
        v = 0
        for k in range(8):
            e = j * 8 + k
            if e < n and pred(load(a[e], kind), y, mode):
                v |= 1 << k
        d[j] = v
