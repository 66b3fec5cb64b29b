"""TCVT's numba loops (units/cvt.py has the rules): kept apart so tracing TCVT needs no numba."""
from __future__ import annotations

from numba import njit

from ..backends.sim.lib.checks import covers
from ..backends.sim.lib.convert import cvt_bits, cvt_f32
from ..backends.sim.lib.layout import offset
from ..backends.sim.lib.xcall import xcall
from ..backends.sim.lib.jit import XCALLED

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py
# The element conversion is large: called through xcall it is compiled once per source storage
# type, not again inside every (dst, src) specialisation of the loops below.
_cvt_bits, _cvt_f32 = xcall(cvt_bits), xcall(cvt_f32)


@njit(**_J)
def tcvt(dst, dvr, dvc, dl, src, svr, svc, sl, scode, dcode, rmode, sat, err):
    if not covers(1, svr, svc, dvr, dvc, err):
        return
    for r in range(dvr):
        for c in range(dvc):
            dst[offset(dl, r, c)] = _cvt_bits(src[offset(sl, r, c)], scode, dcode, rmode, sat)


@njit(**_J)
def tcvt_to_f32(dst, dvr, dvc, dl, src, svr, svc, sl, scode, rmode, sat, err):
    if not covers(1, svr, svc, dvr, dvc, err):
        return
    for r in range(dvr):
        for c in range(dvc):
            dst[offset(dl, r, c)] = _cvt_f32(src[offset(sl, r, c)], scode, rmode, sat)
