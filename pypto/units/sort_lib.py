"""The numba loops of sort.py (which has the rules), kept apart so tracing its
instructions needs no numba."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..backends import errcodes as EC
from ..backends.sim.lib.checks import strict, undefined
from ..backends.sim.lib.floatbits import bits_f32
from ..backends.sim.lib.layout import offset
from ..backends.sim.lib.ops import f16_to_f32
from .complex_faults import rule_fault
from ..backends.sim.lib.jit import XCALLED
from .sort import (MRG_BLOCKLEN, MRG_DST, MRG_DST_CAP, MRG_GROUPS, MRG_MULTIPLE, MRG_TMP,
                   SORT_DST_CAP, SORT_IDX, SORT_PARTIAL, SORT_SRC_ROWS)

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py


@njit(inline="always", **_J)
def _value(w, f16):
    """The float value of a record's first word (u32 bits of an f32, or f16 bits)."""
    return f16_to_f32(w) if f16 else bits_f32(np.uint32(w))


@njit(inline="always", **_J)
def before(a, b):
    """a comes before b in a descending order: NaNs last, NaNs equal to each other."""
    if a != a:
        return False
    if b != b:
        return True
    return a > b


@njit(inline="always", **_J)
def _sort32(d, dvr, dl, dcols, s, svr, svc, sl, ix, ivr, ivc, il, has_tmp, f16, err):
    per = 4 if f16 else 2
    if svr < dvr:
        rule_fault(SORT_SRC_ROWS, svr, dvr, 0, 0, err)
        return
    if not has_tmp and svc % 32 != 0:
        rule_fault(SORT_PARTIAL, svc, 0, 0, 0, err)
        return
    n = svc
    if (ivr != 1 and ivr < dvr) or ivc < n:
        rule_fault(SORT_IDX, ivr, ivc, dvr, n, err)
        return
    if n * per > dcols:
        rule_fault(SORT_DST_CAP, n * per, dcols, 0, 0, err)
        return
    if strict(err):
        for r in range(dvr):
            for c in range(n):
                w = s[offset(sl, r, c)]
                v = _value(w, f16)
                if v != v:
                    undefined(EC.UB_NAN_ORDER, 1, r, c, np.int64(w), err)
                    return
    keys = np.empty(32, np.float32)
    order = np.empty(32, np.int64)
    for r in range(dvr):
        ir_ = 0 if ivr == 1 else r
        for b0 in range(0, n, 32):
            m = min(32, n - b0)
            for k in range(m):
                keys[k] = _value(s[offset(sl, r, b0 + k)], f16)
                order[k] = k
            for j in range(1, m):            # stable insertion sort, descending
                k = order[j]
                x = keys[k]
                i = j - 1
                while i >= 0 and before(x, keys[order[i]]):
                    order[i + 1] = order[i]
                    i -= 1
                order[i + 1] = k
            for q in range(m):
                k = order[q]
                base = offset(dl, r, (b0 + q) * per)
                d[base] = s[offset(sl, r, b0 + k)]
                iv = np.int64(ix[offset(il, ir_, b0 + k)])
                if f16:
                    d[base + 1] = 0
                    d[base + 2] = iv & 0xFFFF
                    d[base + 3] = (iv >> 16) & 0xFFFF
                else:
                    d[base + 1] = iv


@njit(**_J)
def tsort32_f32(dst, dvr, dvc, dl, src, svr, svc, sl, idx, ivr, ivc, il, dcols, has_tmp, err):
    _sort32(dst.view(np.uint32), dvr, dl, dcols, src.view(np.uint32), svr, svc, sl, idx, ivr, ivc,
            il, has_tmp, False, err)


@njit(**_J)
def tsort32_f16(dst, dvr, dvc, dl, src, svr, svc, sl, idx, ivr, ivc, il, dcols, has_tmp, err):
    _sort32(dst, dvr, dl, dcols, src, svr, svc, sl, idx, ivr, ivc, il, has_tmp, True, err)


@njit(inline="always", **_J)
def _word(k, p, s0, s1, s2, s3):
    if k == 0:
        return s0[p]
    if k == 1:
        return s1[p]
    if k == 2:
        return s2[p]
    return s3[p]


@njit(inline="always", **_J)
def _merge_lists(d, dvc, t, tcap, e, exhausted, nl, s0, s1, s2, s3, cnt, f16, err):
    per = 4 if f16 else 2
    total = 0
    for k in range(nl):
        total += cnt[k]
    if total * per > tcap:
        rule_fault(MRG_TMP, total * per, tcap, 0, 0, err)
        return
    if dvc > tcap:
        rule_fault(MRG_DST, dvc, tcap, 0, 0, err)
        return
    if strict(err):
        for k in range(nl):
            for p in range(cnt[k]):
                w = _word(k, p * per, s0, s1, s2, s3)
                v = _value(w, f16)
                if v != v:
                    undefined(EC.UB_NAN_ORDER, 3 + k, 0, p * per, np.int64(w), err)
                    return
    pos = np.zeros(4, np.int64)
    out = 0
    while True:
        if exhausted:
            done = False
            for k in range(nl):
                if pos[k] == cnt[k]:
                    done = True
            if done:
                break
        best = -1
        bv = np.float32(0)
        for k in range(nl):
            if pos[k] < cnt[k]:
                v = _value(_word(k, pos[k] * per, s0, s1, s2, s3), f16)
                if best < 0 or before(v, bv):
                    best = k
                    bv = v
        if best < 0:
            break
        for q in range(per):
            t[out * per + q] = _word(best, pos[best] * per + q, s0, s1, s2, s3)
        pos[best] += 1
        out += 1
    for c in range(dvc):
        d[c] = t[c]
    if exhausted:
        for k in range(4):
            e[k] = pos[k]


@njit(**_J)
def _counts(nl, c0, c1, c2, c3, per):
    cnt = np.zeros(4, np.int64)
    cnt[0] = c0 // per
    cnt[1] = c1 // per
    if nl > 2:
        cnt[2] = c2 // per
    if nl > 3:
        cnt[3] = c3 // per
    return cnt


@njit(**_J)
def tmrgsort_f32(d, dvr, dvc, dl, e, evr, evc, el, t, tvr, tvc, tl, s0, r0, c0, l0, s1, r1, c1, l1,
                 s2, r2, c2, l2, s3, r3, c3, l3, nl, tcap, exhausted, err):
    _merge_lists(d.view(np.uint32), dvc, t.view(np.uint32), tcap, e, exhausted, nl, s0.view(np.uint32),
                 s1.view(np.uint32), s2.view(np.uint32), s3.view(np.uint32), _counts(nl, c0, c1, c2, c3, 2),
                 False, err)


@njit(**_J)
def tmrgsort_f16(d, dvr, dvc, dl, e, evr, evc, el, t, tvr, tvc, tl, s0, r0, c0, l0, s1, r1, c1, l1,
                 s2, r2, c2, l2, s3, r3, c3, l3, nl, tcap, exhausted, err):
    _merge_lists(d, dvc, t, tcap, e, exhausted, nl, s0, s1, s2, s3, _counts(nl, c0, c1, c2, c3, 4), True, err)


@njit(inline="always", **_J)
def _merge_blocks(d, dcap, s, svc, blen, f16, err):
    per = 4 if f16 else 2
    if blen <= 0 or blen % 64 != 0:
        rule_fault(MRG_BLOCKLEN, blen, 0, 0, 0, err)
        return
    group = 4 * blen
    if svc % group != 0:
        rule_fault(MRG_MULTIPLE, svc, blen, 0, 0, err)
        return
    reps = svc // group
    if reps < 1 or reps > 255:
        rule_fault(MRG_GROUPS, reps, svc, blen, 0, err)
        return
    if svc > dcap:
        rule_fault(MRG_DST_CAP, svc, dcap, 0, 0, err)
        return
    nrec = blen // per
    if strict(err):
        for c in range(0, svc, per):
            v = _value(s[c], f16)
            if v != v:
                undefined(EC.UB_NAN_ORDER, 1, 0, c, np.int64(s[c]), err)
                return
    buf = np.empty(group, s.dtype)
    pos = np.zeros(4, np.int64)
    for g in range(reps):
        base = g * group
        for k in range(4):
            pos[k] = 0
        for out in range(4 * nrec):
            best = -1
            bv = np.float32(0)
            for k in range(4):
                if pos[k] < nrec:
                    v = _value(s[base + k * blen + pos[k] * per], f16)
                    if best < 0 or before(v, bv):
                        best = k
                        bv = v
            src0 = base + best * blen + pos[best] * per
            for q in range(per):
                buf[out * per + q] = s[src0 + q]
            pos[best] += 1
        for c in range(group):
            d[base + c] = buf[c]


@njit(**_J)
def tmrgsort1_f32(d, dvr, dvc, dl, s, svr, svc, sl, blen, dcap, err):
    _merge_blocks(d.view(np.uint32), dcap, s.view(np.uint32), svc, blen, False, err)


@njit(**_J)
def tmrgsort1_f16(d, dvr, dvc, dl, s, svr, svc, sl, blen, dcap, err):
    _merge_blocks(d, dcap, s, svc, blen, True, err)
