"""Loop templates and run-time checks the arithmetic family needs beyond lib/elementwise.py.

Templates (instantiated per scalar op and element codec, like lib/elementwise.py, so numba caches
them on disk): ``fill`` (TEXPANDS), ``binary_rw`` / ``scalar_rw`` (a2a3 integer TREM/TFMOD(S):
the op returns the result and the rewritten sources), ``prelu_bits`` (a2a3 TPRELU: the result and
the predicate bits in tmp). Plain functions: the checks="strict" scans for integer division by
zero. Every tile is addressed through ``offset``; each source must cover dst's valid region.
"""
from __future__ import annotations

import functools
import hashlib

from numba import njit

from ..backends import errcodes as E
from ..backends.sim import lowering as L
from ..backends.sim.lib.checks import strict, undefined
from ..backends.sim.lib.elementwise import CODECS
from ..backends.sim.lib.layout import offset
from ..backends.sim.lib.jit import XCALLED

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py

_HEADER = """\
from numba import njit
from pypto.backends.sim.lib.checks import covers
from pypto.backends.sim.lib.layout import offset
from pypto.backends.sim.lib.ops import {ld} as ld, {st} as st
{opline}
from pypto.backends.sim.lib.jit import XCALLED as _J
"""

FORMS = {
    "fill": """
@njit(**_J)
def fill(dst, dvr, dvc, dl, s, err):
    v = st(s)
    for r in range(dvr):
        for c in range(dvc):
            dst[offset(dl, r, c)] = v
""",
    "binary_rw": """
@njit(**_J)
def binary_rw(dst, dvr, dvc, dl, a, avr, avc, al, b, bvr, bvc, bl, err):
    if not covers(1, avr, avc, dvr, dvc, err) or not covers(2, bvr, bvc, dvr, dvc, err):
        return
    for r in range(dvr):
        for c in range(dvc):
            oa = offset(al, r, c)
            ob = offset(bl, r, c)
            z, xa, yb = op(ld(a[oa]), ld(b[ob]))
            dst[offset(dl, r, c)] = st(z)
            a[oa] = st(xa)
            b[ob] = st(yb)
""",
    "scalar_rw": """
@njit(**_J)
def scalar_rw(dst, dvr, dvc, dl, a, avr, avc, al, s, err):
    if not covers(1, avr, avc, dvr, dvc, err):
        return
    for r in range(dvr):
        for c in range(dvc):
            oa = offset(al, r, c)
            z, xa, _ = op(ld(a[oa]), s)
            dst[offset(dl, r, c)] = st(z)
            a[oa] = st(xa)
""",
    "prelu_bits": """
@njit(**_J)
def prelu_bits(dst, dvr, dvc, dl, a, avr, avc, al, b, bvr, bvc, bl, tmp, tvr, tvc, tl, epr, err):
    if not covers(1, avr, avc, dvr, dvc, err) or not covers(2, bvr, bvc, dvr, dvc, err):
        return
    span = (dvc + epr - 1) // epr * epr // 8      # bytes of whole 256-byte source repeats
    for r in range(dvr):
        for c in range(dvc):
            dst[offset(dl, r, c)] = st(op(ld(a[offset(al, r, c)]), ld(b[offset(bl, r, c)])))
        for k in range(span):
            v = 0
            for j in range(8):
                c = 8 * k + j
                if c < dvc and ld(a[offset(al, r, c)]) > 0:
                    v |= 1 << j
            tmp[offset(tl, r, k)] = v
""",
}


def source(form: str, opmod: str, op: str, codec: str) -> str:
    ld, st = CODECS[codec]
    opline = f"from {opmod} import {op} as op\n" if op else ""
    return _HEADER.format(ld=ld, st=st, opline=opline) + FORMS[form]


@functools.lru_cache(maxsize=None)
def fn(form: str, opmod: str, op: str, codec: str) -> L.Fn:
    """The L.Fn of one instantiation (written and imported by the sim's compile step); ``op``
    may be "" for a form without a scalar op (fill)."""
    tag = hashlib.sha256(opmod.encode()).hexdigest()[:6]
    return L.Fn(f"ar_{form}_{op}_{codec}_{tag}", form, source(form, opmod, op, codec))


# -- checks="strict": integer division by zero (the NPU's result is undefined) ---------------------
@njit(**_J)
def zero_divisor(k, b, bvr, bvc, bl, dst, dvr, dvc, dl, err):
    """Report the first zero divisor of tile operand k over dst's valid region."""
    if not strict(err):
        return
    for r in range(min(dvr, bvr)):
        for c in range(min(dvc, bvc)):
            if b[offset(bl, r, c)] == 0:
                undefined(E.UB_DIV_ZERO, k, r, c, 0, err)
                return


@njit(**_J)
def zero_scalar(k, s, dst, dvr, dvc, dl, err):
    """Report a zero scalar divisor k (at dst element (0, 0)) when dst's valid region is not empty."""
    if strict(err) and dvr > 0 and dvc > 0 and s == 0:
        undefined(E.UB_DIV_ZERO, k, 0, 0, 0, err)


def zero_divisor_call(k: int, divisor, dst) -> L.Call:
    """The strict-mode check of divisor operand k (a TileVar, or a lowered scalar argument) over
    dst's valid region."""
    if isinstance(divisor, tuple):
        return L.Call(L.Fn(__name__, "zero_scalar"), (L.lit(k), divisor, L.tile(dst), L.err()))
    return L.Call(L.Fn(__name__, "zero_divisor"), (L.lit(k), L.tile(divisor), L.tile(dst), L.err()))
