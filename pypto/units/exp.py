"""TEXP (5.2): dst = e ** src over dst's valid region, f16 and f32 (V pipe).

pypto computes e**x in double from the exactly widened element and rounds once to the element
type (overflow gives inf, NaN stays NaN). For f32 the loop first runs a vectorised polynomial
(``exp_fast``, a few double ulps from libm's exp) and redoes with libm only the elements whose
value lies within 2**8 double ulps of an f32 rounding midpoint or outside f32's normal range, so
the result is libm's, bit for bit, about 7x faster. The NPU's exp is an approximation good to a few ulp,
so comparisons with a real NPU need an ulp tolerance; the simulator is the correctly rounded
reference. Reference: conformance/reference.py ``exp``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..backends.npu import emit as E
from ..backends.sim.lib.floatbits import bits_f64, f64_bits
from ..backends.sim import lowering as L
from ..ir import guards as G
from ..ir.registry import Unit, register
from .elementwise import check_covers
from ..backends.sim.lib.jit import INLINE


@njit(**INLINE)
def exp(x):
    return math.exp(np.float64(x))


exp_exact = exp

_INV_LN2 = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01        # 32 significant bits: k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_SHIFT = 6755399441055744.0                  # 1.5 * 2**52: adding it rounds to an integer in the low bits
_SHIFT_BITS = 0x4338000000000000             # its bits: t's bits minus these are that integer
C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11 = (1.0 / math.factorial(i) for i in range(12))
_F32_DROPPED = 29                            # double mantissa bits below f32's


@njit(**INLINE)
def exp_fast(x):
    """e**x in double for x in f32's normal result range, within ~30 double ulps (degree-11
    Taylor on |r| <= ln2/2); no libm call and no float -> int conversion, so LLVM vectorises it."""
    d = min(max(np.float64(x), -100.0), 100.0)
    t = d * _INV_LN2 + _SHIFT
    k = t - _SHIFT
    r = (d - k * _LN2_HI) - k * _LN2_LO
    p = ((((((((((C11 * r + C10) * r + C9) * r + C8) * r + C7) * r + C6) * r + C5) * r + C4) * r
            + C3) * r + C2) * r + C1) * r + C0
    return p * bits_f64((f64_bits(t) - _SHIFT_BITS + 1023) << 52)


@njit(**INLINE)
def exp_near(x, v):
    """True when exp_fast's value v might round to another f32 than libm's exp(x)."""
    d = np.float64(x)
    low = f64_bits(v) & ((1 << _F32_DROPPED) - 1)
    return not (-87.0 < d < 88.0) or abs(low - (1 << (_F32_DROPPED - 1))) < (1 << 8)


def lower_exp(node, soc) -> list[L.Call]:
    dst, src = node.operands
    codec = L.codec(dst.type.dtype, wide=True)
    fn = L.ew("unary_fast" if codec == "f32w" else "unary", __name__, "exp", codec)
    return [L.Call(fn, (L.tile(dst), L.tile(src), L.err()))]


register(Unit("TEXP", check=check_covers, sim=lower_exp, seed="unary", emit=E.call("TEXP"),
              guards=G.covers))
