"""The numba loops of predicates_sel.py (which has the rules), kept apart so tracing its
instructions needs no numba."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..backends.sim.lib.checks import covers
from ..backends.sim.lib.floatbits import f32_to_f16
from ..backends.sim.lib.layout import offset
from . import bits_checks as R
from ..backends.sim.lib.jit import XCALLED

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py


@njit(inline="always", **_J)
def bit(m, mrowbytes, r, c):
    return (m[r * mrowbytes + c // 8] >> (c % 8)) & 1


@njit(**_J)
def tsel(dst, dvr, dvc, dl, m, mvr, mvc, ml, a, avr, avc, al, b, bvr, bvc, bl, mrows, mrowbytes, err):
    if not covers(2, avr, avc, dvr, dvc, err) or not covers(3, bvr, bvc, dvr, dvc, err) or \
            not R.mask_rows_fit(1, dvr, dvc, mrows, mrowbytes, err):
        return
    mb = m.view(np.uint8)
    for r in range(dvr):
        for c in range(dvc):
            if bit(mb, mrowbytes, r, c):
                dst[offset(dl, r, c)] = a[offset(al, r, c)]
            else:
                dst[offset(dl, r, c)] = b[offset(bl, r, c)]


@njit(**_J)
def tsels(dst, dvr, dvc, dl, m, mvr, mvc, ml, a, avr, avc, al, s, half, mrows, mrowbytes, err):
    if not covers(2, avr, avc, dvr, dvc, err) or not R.mask_rows_fit(1, dvr, dvc, mrows, mrowbytes, err):
        return
    mb = m.view(np.uint8)
    v = f32_to_f16(s) if half else s           # the scalar's stored bits
    for r in range(dvr):
        for c in range(dvc):
            if bit(mb, mrowbytes, r, c):
                dst[offset(dl, r, c)] = a[offset(al, r, c)]
            else:
                dst[offset(dl, r, c)] = v
