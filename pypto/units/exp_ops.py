"""TEXP's scalar functions for the elementwise loop templates (units/exp.py has the rules).

``exp_exact`` is libm's exp in double; ``exp_fast`` a vectorisable polynomial for f32's range;
``exp_near`` says when the fast value may round to another f32 than libm's, so the loop redoes
that element exactly. Kept apart from exp.py so tracing TEXP needs no numba.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..backends.sim.lib.floatbits import bits_f64, f64_bits
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
