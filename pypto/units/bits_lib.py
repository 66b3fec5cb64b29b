"""The numba loops of bits.py (which has the rules), kept apart so tracing its
instructions needs no numba."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..backends import errcodes as EC
from ..backends.sim.lib.checks import covers, strict, undefined
from ..backends.sim.lib.layout import offset
from ..backends.sim.lib.jit import XCALLED
from .bits import AND, NOT, OR, SHL, XOR

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py


@njit(inline="always", **_J)
def shifted(x, n, left, bits):
    """x shifted by n (any integer); a count outside 0 .. bits-1 shifts every bit out."""
    v = np.int64(x)
    k = np.int64(n)
    if k < 0 or k >= bits:
        if left or v >= 0:
            return np.int64(0)
        return np.int64(-1)
    if left:
        return v << k
    return v >> k


@njit(inline="always", **_J)
def bitop(x, y, op, bits):
    if op == AND:
        return np.int64(x & y)
    if op == OR:
        return np.int64(x | y)
    if op == XOR:
        return np.int64(x ^ y)
    if op == NOT:
        return np.int64(~x)
    return shifted(x, y, op == SHL, bits)


@njit(**_J)
def bits2(dst, dvr, dvc, dl, a, avr, avc, al, b, bvr, bvc, bl, op, bits, err):
    """dst = a op b over dst's valid region (shift counts from b; strict reports bad ones first)."""
    if not covers(1, avr, avc, dvr, dvc, err) or not covers(2, bvr, bvc, dvr, dvc, err):
        return
    if op >= SHL and strict(err):
        for r in range(dvr):
            for c in range(dvc):
                n = np.int64(b[offset(bl, r, c)])
                if n < 0 or n >= bits:
                    undefined(EC.UB_SHIFT, 2, r, c, n, err)
                    return
    for r in range(dvr):
        for c in range(dvc):
            dst[offset(dl, r, c)] = bitop(a[offset(al, r, c)], b[offset(bl, r, c)], op, bits)


@njit(**_J)
def bits1(dst, dvr, dvc, dl, a, avr, avc, al, s, op, bits, err):
    """dst = a op s (s a scalar of the element type; ignored by NOT)."""
    if not covers(1, avr, avc, dvr, dvc, err):
        return
    n = np.int64(s)
    if op >= SHL and strict(err) and (n < 0 or n >= bits) and dvr > 0 and dvc > 0:
        undefined(EC.UB_SHIFT, 2, 0, 0, n, err)
        return
    for r in range(dvr):
        for c in range(dvc):
            dst[offset(dl, r, c)] = bitop(a[offset(al, r, c)], s, op, bits)


@njit(**_J)
def xor_a2a3(dst, dvr, dvc, dl, a, avr, avc, al, b, bvr, bvc, bl, t, tvr, tvc, tl, err):
    if not covers(1, avr, avc, dvr, dvc, err) or not covers(2, bvr, bvc, dvr, dvc, err) \
            or not covers(3, tvr, tvc, dvr, dvc, err):
        return
    for r in range(dvr):
        for c in range(dvc):
            x = a[offset(al, r, c)]
            y = b[offset(bl, r, c)]
            t[offset(tl, r, c)] = x | y
            dst[offset(dl, r, c)] = ~(x & y) & t[offset(tl, r, c)]


@njit(**_J)
def xors_a2a3(dst, dvr, dvc, dl, a, avr, avc, al, s, t, tvr, tvc, tl, err):
    if not covers(1, avr, avc, dvr, dvc, err) or not covers(3, tvr, tvc, dvr, dvc, err):
        return
    for r in range(dvr):
        for c in range(dvc):
            x = a[offset(al, r, c)]
            t[offset(tl, r, c)] = x | s
            dst[offset(dl, r, c)] = ~(x & s) & t[offset(tl, r, c)]
