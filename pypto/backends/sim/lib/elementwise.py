"""Loop templates of the elementwise families, instantiated per (scalar op, element codec).

Every tile operand is (storage, valid rows, valid cols, layout descriptor). Tile layouts are
static, so each template comes in two instances: ``dense`` when every operand's rows are dense
(ND), where the loops run over row slices and an in-place operand (dst is a source, as in TADD(a,
a, b)) is read through dst's own slice, since LLVM vectorises a loop only when its runtime overlap
check passes; and a general one addressing every element through ``layout.offset``. Compiling only
the branch a kernel takes halved a first launch's TMULS compile (0.31 -> 0.16 s). Where dst is a
source's very tile (TADD(t, t, u), known when the kernel is traced), the dense instance is that
one loop: the tutorial's add template compiles in 0.16-0.18 s instead of 0.26 s. The loops run
over dst's valid region; each source's valid region must cover it (``checks.covers``, inlined:
a first launch's TMULS then compiles one function fewer, 1.08 -> 1.00 s on this VM).
An instance is a real module, written once into the kernel cache directory, so numba caches it
on disk like any kernel: the scalar op and codec are module-level names that numba inlines (a
function-typed argument would stop both inlining and caching).
"""
from __future__ import annotations

import hashlib

# codec name -> (load: stored bits -> compute type, store: compute type -> stored bits)
CODECS = {
    "native": ("ident", "ident"),              # f32 and integers compute in their own type
    "f16": ("f16_to_f32", "f32_to_f16"),       # f16 / bf16 compute in f32, one rounding back
    "bf16": ("bf16_to_f32", "f32_to_bf16"),
    "f32w": ("ident", "f64_to_f32"),           # ops computed in f64, rounded once to the type
    "f16w": ("f16_to_f32", "f64_to_f16"),
    "bf16w": ("bf16_to_f32", "f64_to_bf16"),
}

_HEADER = """\
from numba import njit
from pypto.backends.sim.lib.checks import covers_inlined as covers
from pypto.backends.sim.lib.layout import offset, row_dense, row as _row, same as _same
from pypto.backends.sim.lib.ops import {ld} as ld, {st} as st
from {opmod} import {op} as op

from pypto.backends.sim.lib.jit import XCALLED as _J
"""

FORMS = {
    "binary": """
@njit(**_J)
def binary(dst, dvr, dvc, dl, a, avr, avc, al, b, bvr, bvc, bl, err):
    if not covers(1, avr, avc, dvr, dvc, err) or not covers(2, bvr, bvc, dvr, dvc, err):
        return
    if _DENSE_:
        for r in range(dvr):
            dr = _row(dst, dl, r, dvc)
            ar = _row(a, al, r, dvc)
            br = _row(b, bl, r, dvc)
            if _same(dr, ar):
                for c in range(dvc):
                    dr[c] = st(op(ld(dr[c]), ld(br[c])))
            elif _same(dr, br):
                for c in range(dvc):
                    dr[c] = st(op(ld(ar[c]), ld(dr[c])))
            else:
                for c in range(dvc):
                    dr[c] = st(op(ld(ar[c]), ld(br[c])))
    else:
        for r in range(dvr):
            for c in range(dvc):
                dst[offset(dl, r, c)] = st(op(ld(a[offset(al, r, c)]), ld(b[offset(bl, r, c)])))
""",
    "scalar": """
@njit(**_J)
def scalar(dst, dvr, dvc, dl, a, avr, avc, al, s, err):
    if not covers(1, avr, avc, dvr, dvc, err):
        return
    if _DENSE_:
        for r in range(dvr):
            dr = _row(dst, dl, r, dvc)
            ar = _row(a, al, r, dvc)
            if _same(dr, ar):
                for c in range(dvc):
                    dr[c] = st(op(ld(dr[c]), s))
            else:
                for c in range(dvc):
                    dr[c] = st(op(ld(ar[c]), s))
    else:
        for r in range(dvr):
            for c in range(dvc):
                dst[offset(dl, r, c)] = st(op(ld(a[offset(al, r, c)]), s))
""",
    "unary": """
@njit(**_J)
def unary(dst, dvr, dvc, dl, a, avr, avc, al, err):
    if not covers(1, avr, avc, dvr, dvc, err):
        return
    if _DENSE_:
        for r in range(dvr):
            dr = _row(dst, dl, r, dvc)
            ar = _row(a, al, r, dvc)
            if _same(dr, ar):
                for c in range(dvc):
                    dr[c] = st(op(ld(dr[c])))
            else:
                for c in range(dvc):
                    dr[c] = st(op(ld(ar[c])))
    else:
        for r in range(dvr):
            for c in range(dvc):
                dst[offset(dl, r, c)] = st(op(ld(a[offset(al, r, c)])))
""",
}


# "unary_fast": ``{op}_fast`` is a vectorisable approximation (double), ``{op}_near(x, v)`` says
# when its value v may round differently from ``{op}_exact``; such elements (rare) are computed again by ``exact``, so
# the results are exact's, bit for bit. The approximation may fuse multiply-adds (fastmath
# "contract"): that only makes it more accurate, and exact decides every element near a rounding.
FORMS["unary_fast"] = """
from {opmod} import {op}_fast as fast, {op}_exact as exact, {op}_near as near
import numpy as np


@njit(fastmath={"contract"}, **_J)
def unary_fast(dst, dvr, dvc, dl, a, avr, avc, al, err):
    if not covers(1, avr, avc, dvr, dvc, err):
        return
    if not _DENSE_:
        for r in range(dvr):
            for c in range(dvc):
                dst[offset(dl, r, c)] = st(exact(ld(a[offset(al, r, c)])))
        return
    buf = np.empty(dvc, np.float64)
    for r in range(dvr):
        dr = _row(dst, dl, r, dvc)
        ar = _row(a, al, r, dvc)
        redo = 0
        for c in range(dvc):
            x = ld(ar[c])
            v = fast(x)
            buf[c] = v
            redo += near(x, v)
        if redo != 0:
            for c in range(dvc):
                x = ld(ar[c])
                if near(x, buf[c]):
                    buf[c] = exact(x)
        for c in range(dvc):
            dr[c] = st(buf[c])
"""


def aliases(form: str) -> str:
    """The sources ("a", "b") a dense instance can take as dst itself: those its template tests
    for at run time (``_same``)."""
    return "".join(x for x in "ab" if f"_same(dr, {x}r)" in FORMS[form])


def source(form: str, opmod: str, op: str, codec: str, dense: bool, alias: str = "") -> str:
    """One instance's module text; ``dense``: every tile operand is ND (the template's _DENSE_
    branch is the only one, else the general one is: Python drops a constant branch). ``alias``
    "a" or "b": that source is dst's own tile (known when the kernel is traced, as in TADD(t, t,
    u)), so the dense branch is that one loop: a third of the binary template's compile."""
    ld, st = CODECS[codec]
    body = FORMS[form].replace("{opmod}", opmod).replace("{op}", op).replace("_DENSE_", str(dense))
    if alias:
        for x in "ab":
            body = body.replace(f"_same(dr, {x}r)", str(alias == x))
    return _HEADER.format(ld=ld, st=st, opmod=opmod, op=op) + body


def instance(form: str, opmod: str, op: str, codec: str, dense: bool,
             alias: str = "") -> tuple[str, str, str]:
    """(module source, module name prefix, function name) of one instantiation; the sim's
    compile step writes and imports it (see backends/sim/compile.py)."""
    src = source(form, opmod, op, codec, dense, alias)
    tag = hashlib.sha256(opmod.encode()).hexdigest()[:6]
    kind = ("_nd" if dense else "") + (f"_in{alias}" if alias else "")
    return src, f"ew_{form}_{op}_{codec}{kind}_{tag}", form
