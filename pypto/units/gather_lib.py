"""The numba loops of gather.py (which has the rules), kept apart so tracing its
instructions needs no numba."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..backends import errcodes as EC
from ..backends.sim.lib.checks import strict, undefined
from ..backends.sim.lib.layout import offset
from .complex_faults import rule_fault
from ..backends.sim.lib.jit import XCALLED
from .gather import B_BLOCKS, B_OFF_COVER, G_DST_CAP, G_DST_CONT, G_IDX_CONT, G_IDX_COVER, S_SRC_COVER

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py


@njit(**_J)
def tgather_idx(d, dvr, dvc, dl, s, svr, svc, sl, ix, ivr, ivc, il, dcols, icols, snumel, err):
    if dvc != dcols:
        rule_fault(G_DST_CONT, dvc, dcols, 0, 0, err)
        return
    if ivc != icols:
        rule_fault(G_IDX_CONT, ivc, icols, 0, 0, err)
        return
    if ivr < dvr or ivc < dvc:
        rule_fault(G_IDX_COVER, ivr, ivc, dvr, dvc, err)
        return
    chk = strict(err)
    for r in range(dvr):
        for c in range(dvc):
            k = np.int64(ix[offset(il, r, c)])
            if k < 0 or k >= snumel:
                if chk:
                    undefined(EC.UB_INDEX, 2, r, c, k, err)
                    return
                d[offset(dl, r, c)] = 0
            else:
                d[offset(dl, r, c)] = s[k]


@njit(inline="always", **_J)
def keeps(pat, c):
    """Whether MaskPattern ``pat`` (1..7) keeps column c."""
    if pat == 1:
        return c % 2 == 0
    if pat == 2:
        return c % 2 == 1
    if pat == 7:
        return True
    return c % 4 == pat - 3


@njit(**_J)
def tgather_mask(d, dvr, dvc, dl, s, svr, svc, sl, pat, dcols, dnumel, err):
    if dvc != dcols:
        rule_fault(G_DST_CONT, dvc, dcols, 0, 0, err)
        return
    per_row = 0
    for c in range(svc):
        if keeps(pat, c):
            per_row += 1
    if per_row * svr > dnumel:
        rule_fault(G_DST_CAP, per_row * svr, dnumel, 0, 0, err)
        return
    k = 0
    for r in range(svr):
        for c in range(svc):
            if keeps(pat, c):
                d[k] = s[offset(sl, r, c)]
                k += 1


@njit(**_J)
def tgatherb(d, dvr, dvc, dl, s, svr, svc, sl, off, ovr, ovc, ol, esize, snbytes, err):
    if (dvc * esize) % 32 != 0:
        rule_fault(B_BLOCKS, dvc, esize, 0, 0, err)
        return
    nb = dvc * esize // 32
    if ovr < dvr or ovc < nb:
        rule_fault(B_OFF_COVER, ovr, ovc, dvr, nb, err)
        return
    db = d.view(np.uint8)
    sb = s.view(np.uint8)
    c0 = 32 // esize
    chk = strict(err)
    for r in range(dvr):
        for k in range(nb):
            o = np.int64(off[offset(ol, r, k)])
            if o + 32 > snbytes:
                if chk:
                    undefined(EC.UB_INDEX, 2, r, k, o, err)
                    return
                continue
            at = offset(dl, r, k * c0) * esize
            for q in range(32):
                db[at + q] = sb[o + q]


@njit(**_J)
def tscatter(d, dvr, dvc, dl, s, svr, svc, sl, ix, ivr, ivc, il, dnumel, err):
    if svr < ivr or svc < ivc:
        rule_fault(S_SRC_COVER, svr, svc, ivr, ivc, err)
        return
    chk = strict(err)
    seen = np.zeros(dnumel if chk else 1, np.bool_)
    for r in range(ivr):
        for c in range(ivc):
            k = np.int64(ix[offset(il, r, c)])
            if k < 0 or k >= dnumel:
                if chk:
                    undefined(EC.UB_INDEX, 2, r, c, k, err)
                    return
                continue
            if chk:
                if seen[k]:
                    undefined(EC.UB_DUP_INDEX, 2, r, c, k, err)
                    return
                seen[k] = True
            d[k] = s[offset(sl, r, c)]
