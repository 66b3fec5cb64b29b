"""The numba loops of complex_quant.py (which has the rules), kept apart so tracing its
instructions needs no numba."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..backends import errcodes as EC
from ..backends.sim.lib.checks import strict, undefined
from ..backends.sim.lib.floatbits import f32_bits, f64_to_f16
from ..backends.sim.lib.layout import offset
from .complex_faults import rule_fault
from ..backends.sim.lib.jit import XCALLED
from .complex_quant import Q_DST, Q_SCALE

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py


@njit(inline="always", **_J)
def _sat_i32(x):
    r = np.rint(np.float64(x))
    if r != r:
        return np.int64(0)
    if r >= 2147483647.0:
        return np.int64(2147483647)
    if r <= -2147483648.0:
        return np.int64(-2147483648)
    return np.int64(r)


@njit(**_J)
def tquant(d, dvr, dvc, dl, s, svr, svc, sl, sc, scr, scc, scl, of, ofr, ofc, ofl, asym, overwrite,
           scols, err):
    if dvr != svr or dvc != svc:
        rule_fault(Q_DST, dvr, dvc, svr, svc, err)
        return
    if scr != svr or scc != 1 or (asym and (ofr != svr or ofc != 1)):
        rule_fault(Q_SCALE, scr, scc, ofr if asym else svr, ofc if asym else 1, err)
        return
    lo, hi = (0, 255) if asym else (-128, 127)
    chk = strict(err)
    q = np.empty(max(svr * svc, 1), np.int64)
    for r in range(svr):
        k = sc[offset(scl, r, 0)]
        o = of[offset(ofl, r, 0)] if asym else np.float32(0)
        for c in range(svc):
            x = np.float32(s[offset(sl, r, c)] * k)
            if asym:
                x = np.float32(x + o)
            if chk and (x != x or abs(x) == np.inf):
                undefined(EC.UB_CVT_NAN, 1, r, c, np.int64(f32_bits(x)), err)
                return
            v = _sat_i32(x)
            q[r * svc + c] = v
            d[offset(dl, r, c)] = min(max(v, lo), hi)
    if overwrite:
        si = s.view(np.int32)
        for r in range(svr):
            for c in range(svc):
                si[offset(sl, r, c)] = q[r * svc + c]
        sh = s.view(np.uint16)
        for r in range(svr):
            for c in range(svc):
                h = f64_to_f16(np.float64(q[r * svc + c]))
                if (h & 0x7FFF) == 0x7C00:           # clamp to +-65504
                    h = (h & 0x8000) | 0x7BFF
                sh[r * scols + c] = h
