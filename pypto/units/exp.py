"""TEXP (5.2): dst = e ** src over dst's valid region, f16 and f32 (V pipe).

pypto computes e**x in double from the exactly widened element and rounds once to the element
type (overflow gives inf, NaN stays NaN). For f32 the loop first runs a vectorised polynomial
(``exp_fast`` in exp_ops.py, a few double ulps from libm's exp) and redoes with libm only the elements whose
value lies within 2**8 double ulps of an f32 rounding midpoint or outside f32's normal range, so
the result is libm's, bit for bit, about 7x faster. The NPU's exp is an approximation good to a few ulp,
so comparisons with a real NPU need an ulp tolerance; the simulator is the correctly rounded
reference. Reference: conformance/reference.py ``exp``.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..ir import guards as G
from ..ir.registry import Unit, register
from .elementwise import check_covers

OPS = f"{__package__}.exp_ops"     # the scalar functions (numba): imported when a kernel is generated


def lower_exp(node, soc) -> list[L.Call]:
    dst, src = node.operands
    codec = L.codec(dst.type.dtype, wide=True)
    fn = L.ew("unary_fast" if codec == "f32w" else "unary", OPS, "exp", codec)
    return [L.Call(fn, (L.tile(dst), L.tile(src), L.err()))]


register(Unit("TEXP", check=check_covers, sim=lower_exp, seed="unary", emit=E.call("TEXP"),
              guards=G.covers))
