"""Scalar operations of the arithmetic family (units arith_*.py), inlined into loop templates.

Floats arrive in the codec's compute type (f16/bf16 widened exactly to f32); "wide" ops return a
double that the codec rounds once. NaN handling is explicit (an input NaN comes out quieted with
its payload; a NaN made from non-NaN inputs is the positive quiet NaN), so no compiler rewrite can
change a bit pattern. The TREM/TFMOD ops spell out each SoC's step sequence (see arith_rem.py).
"""
import math

import numpy as np
from numba import njit

from ..backends.sim.lib.floatbits import (bits_f32, bits_f64, f16_to_f32, f32_bits, f32_to_f16,
                                          f64_bits, f64_to_f16)
from ..backends.sim.lib.jit import INLINE, LIB

_J = INLINE
# the remainder steps and their conversions are large: compiled once per signature and called,
# not inlined into every loop instance (which made each TREM/TFMOD kernel compile for ~20 s)
_N = LIB


# -- NaN and rounding helpers ------------------------------------------------------------------
@njit(**_J)
def quiet32(x):
    """A float32 NaN with the quiet bit set (sign and payload kept)."""
    return bits_f32(np.int64(f32_bits(np.float32(x))) | 0x400000)


@njit(**_J)
def quiet64(x):
    """A NaN widened to double with the quiet bit set (the payload's top bits kept)."""
    return bits_f64(np.int64(f64_bits(np.float64(x))) | (1 << 51))


@njit(**_N)
def h16(x):
    """float32 -> the nearest float16 value (ties to even), as float32."""
    return f16_to_f32(f32_to_f16(np.float32(x)))


@njit(**_N)
def h16_rz_sat(x):
    """float32 -> float16 toward zero with saturation (NaN -> +0, +-inf -> +-65504), as float32."""
    if x != x:
        return np.float32(0.0)
    h = np.int64(f32_to_f16(np.float32(x)))
    if abs(f16_to_f32(h)) > abs(np.float32(x)):
        h -= 1                          # one step toward zero (sign-magnitude bits)
    return f16_to_f32(h)


@njit(**_N)
def s32_rint_sat(x):
    """float -> int32: nearest even, clamped; NaN -> 0 (vconv_f322s32r, saturation on)."""
    if x != x:
        return np.int64(0)
    v = np.rint(np.float64(x))
    if v >= 2147483647.0:
        return np.int64(2147483647)
    if v <= -2147483648.0:
        return np.int64(-2147483648)
    return np.int64(v)


@njit(**_N)
def s16_sat(v):
    """An integral double (or +-inf) -> int16, clamped; NaN -> 0."""
    if v != v:
        return np.int64(0)
    if v >= 32767.0:
        return np.int64(32767)
    if v <= -32768.0:
        return np.int64(-32768)
    return np.int64(v)


@njit(**_N)
def s16_rint_sat(x):
    return s16_sat(np.rint(np.float64(x)))


@njit(**_N)
def f16_of_int(i):
    """An integer -> the nearest float16 value (ties to even), as float32."""
    return f16_to_f32(f64_to_f16(np.float64(i)))


# -- unary ---------------------------------------------------------------------------------------
@njit(**_J)
def fneg(x):
    """-x as x * -1 (TMULS by -1): a NaN keeps its sign and is quieted."""
    if x != x:
        return quiet32(x)
    return -np.float32(x)


@njit(**_J)
def ineg(x):
    return np.int64(0) - np.int64(x)       # wraps on store


@njit(**_J)
def fabs(x):
    return abs(np.float32(x))              # clears the sign bit; a NaN's payload is kept


@njit(**_J)
def frelu(x):
    if x != x:
        return quiet32(x)
    return np.float32(x) if x > 0 else np.float32(0.0)


@njit(**_J)
def irelu(x):
    return x if x > 0 else x - x


@njit(**_N)
def log_w(x):
    if x != x:
        return quiet64(x)
    if x < 0:
        return np.float64(np.nan)
    if x == 0:
        return -np.inf
    return math.log(np.float64(x))


@njit(**_N)
def sqrt_w(x):
    if x != x:
        return quiet64(x)
    if x < 0:
        return np.float64(np.nan)
    return math.sqrt(np.float64(x))       # sqrt(-0) = -0


@njit(**_N)
def rsqrt_w(x):
    """1 / sqrt(x) in double (a2a3: rounded once to the element type)."""
    if x != x:
        return quiet64(x)
    if x < 0:
        return np.float64(np.nan)
    if x == 0:
        return math.copysign(np.inf, np.float64(x))
    return 1.0 / math.sqrt(np.float64(x))


@njit(**_N)
def rsqrt_a5_f32(x):
    """a5: sqrt rounded to float32, then 1 / that rounded again (vsqrt then vdiv)."""
    if x != x:
        return quiet32(x)
    if x < 0:
        return np.float32(np.nan)
    s = np.float32(math.sqrt(np.float64(x)))
    return np.float32(1.0) / s


@njit(**_N)
def rsqrt_a5_f16(x):
    """a5 f16: sqrt rounded to f16, then 1 / that in f32 (the codec rounds it once to f16)."""
    if x != x:
        return quiet32(x)
    if x < 0:
        return np.float32(np.nan)
    s = f16_to_f32(f64_to_f16(math.sqrt(np.float64(x))))
    return np.float32(1.0) / s


@njit(**_J)
def recip(x):
    if x != x:
        return quiet32(x)
    return np.float32(1.0) / np.float32(x)


# -- tile-scalar -----------------------------------------------------------------------------------
@njit(**_J)
def fsubs(x, s):
    return np.float32(x) - np.float32(s)


@njit(**_J)
def isubs(x, s):
    return np.int64(x) - np.int64(s)


@njit(**_J)
def isubs_a2a3_i32(x, s):
    """a2a3 i32 TSUBS adds (int)(-(float)s): the scalar passes through float32."""
    return np.int64(x) + np.int64(-np.float64(np.float32(s)))


@njit(**_J)
def fdivs(x, s):
    return np.float32(x) / np.float32(s)


@njit(**_J)
def fsdiv(x, s):
    """TDIVS(dst, scalar, src): scalar / src."""
    return np.float32(s) / np.float32(x)


@njit(**_J)
def idiv(x, y):
    """C division truncating toward zero in int64 (wraps on store); x / 0 gives -1 (all ones)."""
    a = np.int64(x)
    b = np.int64(y)
    if b == 0:
        return np.int64(-1)
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


@njit(**_J)
def isdiv(x, s):
    return idiv(s, x)


@njit(**_J)
def divs_recip_f32(x, s):
    """a5 ISA page form: src * (1 / scalar), the reciprocal in float32, scalar 0 -> +inf."""
    r = np.float32(1.0) / np.float32(s) if s != 0 else np.float32(np.inf)
    return np.float32(x) * r


@njit(**_N)
def divs_recip_f16(x, s):
    r = h16(np.float32(1.0) / np.float32(s)) if s != 0 else np.float32(np.inf)
    return np.float32(x) * r


@njit(**_J)
def lrelu(x, s):
    if x != x:
        return quiet32(x)
    return np.float32(x) if x > 0 else np.float32(x) * np.float32(s)


@njit(**_J)
def prelu(x, y):
    if x != x:
        return quiet32(x)
    return np.float32(x) if x > 0 else np.float32(x) * np.float32(y)


# -- TREM / TFMOD --------------------------------------------------------------------------------
@njit(**_N)
def _mod_f32(x, y, floor):
    """The float32 sequence: q = x / y, integral part (floor or trunc), x - q * y, each rounded."""
    q = np.float32(x) / np.float32(y)
    q = np.float32(np.floor(q)) if floor else np.float32(np.trunc(q))
    m = q * np.float32(y)
    return np.float32(x) - m


@njit(**_N)
def _mod_f16_a2a3(x, y, floor):
    """a2a3 f16: every step rounded to f16; the integral part through a saturating s16 convert."""
    q = h16(np.float32(x) / np.float32(y))
    v = np.floor(np.float64(q)) if floor else np.trunc(np.float64(q))
    qi = f16_of_int(s16_sat(v))
    m = h16(qi * np.float32(y))
    return h16(np.float32(x) - m)


@njit(**_N)
def rem_f32(x, y):
    return _mod_f32(x, y, True)


@njit(**_N)
def fmod_f32(x, y):
    return _mod_f32(x, y, False)


@njit(**_N)
def rem_f16_a2a3(x, y):
    return _mod_f16_a2a3(x, y, True)


@njit(**_N)
def fmod_f16_a2a3(x, y):
    return _mod_f16_a2a3(x, y, False)


@njit(**_N)
def rem_f16_a5(x, y):
    return h16_rz_sat(_mod_f32(x, y, True))


@njit(**_N)
def fmod_f16_a5(x, y):
    return h16_rz_sat(_mod_f32(x, y, False))


@njit(**_N)
def rem_int(x, y):
    """a5 integers: floor-mod, exact; x rem 0 gives x (pypto's choice)."""
    a = np.int64(x)
    b = np.int64(y)
    if b == 0:
        return a
    return a % b                           # Python semantics: the divisor's sign


@njit(**_N)
def fmod_int(x, y):
    """a5 integers: trunc-mod (a - trunc(a / b) * b), exact; x fmod 0 gives x."""
    a = np.int64(x)
    b = np.int64(y)
    if b == 0:
        return a
    r = a % b
    return r - b if r != 0 and (r < 0) != (a < 0) else r


# a2a3 integers: through f32 (i32) or f16 (i16); return (dst, rewritten src0, rewritten src1)
@njit(**_N)
def _i32_a2a3(x, y, floor):
    xf = np.float32(x)
    yf = np.float32(y)
    return s32_rint_sat(_mod_f32(xf, yf, floor)), s32_rint_sat(xf), s32_rint_sat(yf)


@njit(**_N)
def _i16_a2a3(x, y, floor):
    xf = f16_of_int(x)
    yf = f16_of_int(y)
    return s16_rint_sat(_mod_f16_a2a3(xf, yf, floor)), s16_rint_sat(xf), s16_rint_sat(yf)


@njit(**_N)
def rem_i32_a2a3(x, y):
    return _i32_a2a3(x, y, True)


@njit(**_N)
def fmod_i32_a2a3(x, y):
    return _i32_a2a3(x, y, False)


@njit(**_N)
def rem_i16_a2a3(x, y):
    return _i16_a2a3(x, y, True)


@njit(**_N)
def fmod_i16_a2a3(x, y):
    return _i16_a2a3(x, y, False)
