"""Reference for a5's HiFloat8, written from the format's description, not from pypto's code.

A code is read as a bit string: sign, then the "dot" prefix (11, 10, 01, 001, 0001 give 4, 3,
2, 1, 0 exponent bits; 0000 is the denormal mode), the exponent in sign-magnitude with its top
magnitude bit implied, then the mantissa in what is left of the 8 bits. Denormals 0000mmm are
2**(m - 23); 00000000 is zero, 10000000 NaN, and S 11 0111 1 is +-inf.

TCVT f32/f16 -> hif8 on a5 (pto-isa's a5 TCvt.hpp: vcvt with ROUND_A whatever the round mode
asked for, no saturation control bit, so the default, saturating, state): the nearest hif8
value, ties away from zero, computed exactly with fractions over the list of all values;
overflow and inf give +-2**15, NaN gives 0; CAST_ODD leaves dst unchanged (a5 runs CAST_ODD for
f32 -> f16 only). hif8 -> f32 is exact; NaN gives the quiet NaN 0x7FC00000 (pypto's choice).
"""
from __future__ import annotations

import bisect
from fractions import Fraction
from functools import lru_cache

import numpy as np

_DOTS = (("11", 4), ("10", 3), ("01", 2), ("001", 1), ("0001", 0))
F32_QNAN = 0x7FC00000


def decode(code: int) -> float:
    """The value of one hif8 code (NaN, +-inf or an exact float)."""
    bits = format(code, "08b")
    sign, rest = (-1.0 if bits[0] == "1" else 1.0), bits[1:]
    if rest == "1101111":
        return sign * float("inf")
    for dot, width in _DOTS:
        if rest.startswith(dot):
            field = rest[len(dot):len(dot) + width]
            mant = rest[len(dot) + width:]
            exp = 0
            if width:
                magnitude = int("1" + field[1:], 2)
                exp = -magnitude if field[0] == "1" else magnitude
            frac = int(mant, 2) / 2 ** len(mant)
            return sign * (1.0 + frac) * 2.0 ** exp
    m = int(rest[4:], 2)                      # denormal mode: 0000 mmm
    if m == 0:
        return float("nan") if sign < 0 else 0.0
    return sign * 2.0 ** (m - 23)


@lru_cache(maxsize=None)
def _positive() -> tuple[tuple[float, ...], tuple[int, ...]]:
    """Every non-negative finite value, ascending, and its code."""
    pairs = sorted((decode(c), c) for c in range(128) if np.isfinite(decode(c)))
    return tuple(v for v, _ in pairs), tuple(c for _, c in pairs)


def encode_saturating(x: float) -> int:
    """The code TCVT to hif8 stores on a5 for the (f32 or f16) value x."""
    if x != x:
        return 0
    values, codes = _positive()
    sign = 0x80 if x < 0 else 0
    a = abs(x)
    if a >= values[-1]:
        return sign | codes[-1]                # saturate (inf included)
    i = bisect.bisect_right(values, a)         # values[i - 1] <= a < values[i]
    lo, hi = Fraction(values[i - 1]), Fraction(values[i])
    code = codes[i] if hi - Fraction(a) <= Fraction(a) - lo else codes[i - 1]
    return 0 if code == 0 else sign | code


def cvt_to_hif8(x: np.ndarray, rmode: str, prev: np.ndarray) -> np.ndarray:
    """What a5's TCVT(dst hif8, x, rmode) leaves in dst (which held ``prev``)."""
    if rmode == "CAST_ODD":
        return prev.copy()
    flat = [encode_saturating(float(v)) for v in np.asarray(x, np.float64).ravel()]
    return np.array(flat, np.uint8).reshape(np.shape(x))


def cvt_from_hif8(codes: np.ndarray) -> np.ndarray:
    """TCVT(dst f32, src hif8): the f32 bit patterns (uint32)."""
    vals = np.array([decode(int(c)) for c in np.asarray(codes).ravel()], np.float64)
    bits = vals.astype(np.float32).view(np.uint32)
    bits[np.isnan(vals)] = F32_QNAN
    return bits.reshape(np.shape(codes))


def value_list() -> np.ndarray:
    """Every finite hif8 value (positive and negative), as float64."""
    return np.array([decode(c) for c in range(256) if np.isfinite(decode(c))])


# no instruction of its own: these are TCVT's hif8 pairs (TCVT's entry is reference.cast)
REFERENCE: dict = {}
