"""TCVT element conversions (dst = convert(src) with a rounding and a saturation mode), per NPU SoC.

Two layers:

* ``resolve(soc, src, dst, rmode, sat)`` -- plain Python (convert_rules.py, so tracing TCVT needs
  no numba), run once per instruction.  It applies the per-SoC rules below and returns the
  *effective* ``(rmode, sat, noop)``; the numba code never sees SoC names, ``CAST_NONE``
  defaults or the "which pairs honour satMode" table.
* ``cvt_bits(x, src_code, dst_code, rmode, sat)`` -- the one numba entry point, called per element
  from a tile loop (``@njit``, disk-cached; see the note at ``_J`` on inlining).

``cvt_bits`` interface
----------------------
``x``        the raw stored source element, in its storage type: ``float32`` for f32 tiles, the
             ``uint16`` bits of f16/bf16, the ``uint8`` bits of fp8, the integer itself for integer
             tiles.  Any integer type holding the source's bit pattern is also accepted (e.g. a
             ``uint32`` view of an f32 tile, or ``int64`` raw bits): only the low bits of the
             source's width are read.  ``float64`` is rejected at typing time.
``src_code`` / ``dst_code``  element type codes ``F32 F16 BF16 E4M3 E5M2 HIF8 I8 U8 I16 U16 I32 U32 I64``
             (``CODES`` maps PTO short names to them); ``E8M0``, an MX scale, is only decoded.
``rmode``    ``CAST_NONE=0 CAST_RINT=1 CAST_ROUND=2 CAST_FLOOR=3 CAST_CEIL=4 CAST_TRUNC=5 CAST_ODD=6``
             (PTO's enum order).  ``resolve`` never returns ``CAST_NONE``; if it reaches ``cvt_bits``
             it means nearest-even.
``sat``      ``SAT_CLAMP=1`` / ``SAT_WRAP=0``.  NOTE: PTO's own ``SaturationMode`` enum is
             ``ON=0, OFF=1``; this module uses 1 = clamp so that ``if sat:`` reads naturally.
returns      ``int64`` holding the destination's raw bits:

             * integer destinations: the result value itself (two's complement for signed types,
               ``0 .. 2**32-1`` for u32), so ``dst[k] = bits`` into the destination's storage array
               (int8/uint8/.../int64) stores exactly the right bits (numba truncates int64 to the
               array's width);
             * f16 / bf16 / e4m3 / e5m2 / hif8: the bit pattern (``0 .. 2**16-1`` / ``0 .. 255``), stored
               the same way into the uint16 / uint8 storage array;
             * f32: the IEEE bit pattern ``0 .. 2**32-1``; store it through a ``uint32`` view of the
               float32 storage array, or as ``bits_f32(bits)`` (re-exported here; ``cvt_f32`` does
               that for you).

Semantics (pypto's decisions; pto-isa-semantics.md 5.9 n7 and its Addendum)
------------------------------------------------------------------------------
Rounding: RINT nearest-even; ROUND nearest, ties away from zero; FLOOR; CEIL; TRUNC toward zero;
ODD round to odd (truncate toward zero, then set the last mantissa bit if inexact).

* float -> int: round the exact source value to an integer with the mode.  NaN -> 0, +-inf -> the
  destination's max/min whatever ``sat`` is.  Finite values: ``sat`` clamps to [min, max];
  ``wrap`` keeps the exact low bits of the rounded integer (computed with ``fmod`` on the exact
  float, so 3e20 wraps correctly).
* int -> int: clamp or wrap (low bits) the exact integer.  Widenings are exact; i16 -> u32 clamps
  negatives to 0 (clamp is the default for every pair outside the six).
* f32 -> f32: round to an integral value with the mode (-0.0 and the sign of zero results are kept,
  e.g. TRUNC(-0.3) = -0.0); inf stays inf, NaN stays NaN (quieted, payload kept).
* int -> float and float -> float: one correct rounding of the exact source value (i64/i32 -> f32
  round from the exact integer) to the destination precision with the mode; subnormals are kept
  (no flush to zero).  Exact widenings (f16/bf16/fp8 -> f32, i8/u8/i16 -> f32 ...) are exact.
* Float destination f16/bf16/e4m3/e5m2 with ``sat``: a finite value whose rounded result overflows
  -> +-max finite; +-inf -> +-max finite; NaN -> +0.  With ``wrap``: IEEE 754 -- overflow gives
  +-inf when the mode rounds away from zero in that direction (RINT, ROUND, CEIL for positive,
  FLOOR for negative values) and +-max finite otherwise (TRUNC, ODD, FLOOR of a positive value,
  CEIL of a negative one); inf stays inf; NaN stays NaN.  e4m3 (float8_e4m3fn: no inf, NaN is
  0x7f/0xff) turns what would be inf into NaN.
* f32 destination: never saturates (the NPU ignores the saturation control for dst = f32), so
  ``sat`` has no effect there; nothing can overflow f32 except inf/NaN inputs, which stay.
* NaN results keep the source's sign and its top payload bits and get the quiet bit set
  (e4m3: 0x7f | sign).  An f16/bf16/fp8 signalling NaN widened to f32 is quieted too.
* HiFloat8 (pypto.dtypes.HIF8_CLASSES): hif8 -> f32 is exact, its NaN (0x80) gives 0x7FC00000.
  To hif8: one rounding of the exact value to the nearest hif8 value with the mode (a5 always
  asks for ROUND: ties away from zero), where each binade has its own mantissa width and
  2**-22 .. 2**-16 are the denormals (below 2**-22 the step is 2**-22).  Overflow past 2**15 and
  inf: +-2**15 with ``sat``, else +-inf (0x6F/0xEF) when the mode rounds away from zero; NaN gives
  0 with ``sat``, else 0x80.  There is one zero: -0 and results rounding to 0 give 0x00.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.core import errors
from numba.extending import overload

from ....dtypes import HIF8_CLASSES, HIF8_INF, HIF8_MAX, HIF8_NAN, HIF8_VALUES
from .floatbits import bf16_to_f32, bits_f32, bits_f64, f16_to_f32, f32_bits, f64_bits
from .codes import (BF16, CAST_CEIL, CAST_FLOOR, CAST_NONE, CAST_ODD, CAST_RINT, CAST_ROUND, CAST_TRUNC,
                    CODES, E4M3, E5M2, E8M0, F16, F32, HIF8, I8, I16, I32, I64, RMODES, SAT_CLAMP,
                    SAT_WRAP, U8, U16, U32)
from .convert_rules import WRAP_BY_DEFAULT, resolve   # TCVT's rules (plain Python), re-exported
from .jit import LIB

__all__ = [
    "F32", "F16", "BF16", "E4M3", "E5M2", "HIF8", "I8", "U8", "I16", "U16", "I32", "U32", "I64", "E8M0",
    "CODES",
    "CAST_NONE", "CAST_RINT", "CAST_ROUND", "CAST_FLOOR", "CAST_CEIL", "CAST_TRUNC", "CAST_ODD",
    "RMODES", "SAT_WRAP", "SAT_CLAMP", "WRAP_BY_DEFAULT",
    "cvt_bits", "cvt_value", "cvt_f32", "bits_f32", "resolve",
]

# Deliberately NOT inline="always" (unlike ops): numba's IR inliner takes ~35 s to inline
# this tree into each caller, whereas separately compiled (and disk-cached) functions are still
# inlined by LLVM when the caller is linked; a tile loop runs at ~20 ns per element either way.
_J = LIB

# ---------------------------------------------------------------------------
# Codes (the numbers themselves are in codes.py)
# ---------------------------------------------------------------------------

# hif8's normal classes indexed by exponent width D (|e| < 2**D): (first payload, D, mantissa bits)
_HIF8_BY_D = tuple(sorted(HIF8_CLASSES, key=lambda c: c[1]))

_TWO63 = 9223372036854775808.0   # 2**63
_TWO64 = 18446744073709551616.0  # 2**64
_I64_MIN = -9223372036854775807 - 1


# ---------------------------------------------------------------------------
# Reading the source element
# ---------------------------------------------------------------------------

def _raw(x):  # pragma: no cover - replaced by the overload inside njit code
    raise NotImplementedError


@overload(_raw, inline="always")
def _raw_impl(x):
    """The source element's bit pattern as int64: float32 -> its IEEE bits, integers as they are."""
    if x == types.float32:
        return lambda x: np.int64(f32_bits(x))
    if isinstance(x, types.Integer):
        return lambda x: np.int64(x)
    raise errors.TypingError(f"cvt_bits: the source element must be float32 or an integer holding "
                             f"the raw bits, got {x}")


@njit(**_J)
def _is_float(code):
    return code <= HIF8 or code == E8M0


@njit(**_J)
def _int_info(code):
    """(bits, signed) of an integer code."""
    if code == I8:
        return 8, True
    if code == U8:
        return 8, False
    if code == I16:
        return 16, True
    if code == U16:
        return 16, False
    if code == I32:
        return 32, True
    if code == U32:
        return 32, False
    return 64, True


@njit(**_J)
def _wrap(k, bits, signed):
    """The low `bits` bits of the int64 k, read as a signed/unsigned `bits`-bit integer."""
    if bits >= 64:
        return k
    u = k & ((np.int64(1) << bits) - 1)
    if signed and u >= (np.int64(1) << (bits - 1)):
        u -= np.int64(1) << bits
    return u


@njit(**_J)
def _e4m3_to_f64(b):
    """float8_e4m3fn bits -> float64 (exact); 0x7f / 0xff are NaN."""
    neg = (b >> 7) & 1
    e = (b >> 3) & 15
    m = b & 7
    if e == 15 and m == 7:
        # from bits: `-nan` flips the sign only once LLVM optimises (not at NUMBA_OPT=0)
        return bits_f64((np.int64(neg) << 63) | np.int64(0x7FF8000000000000))
    if e == 0:
        v = np.float64(m) * 0.001953125        # m * 2**-9
    else:
        v = np.float64(bits_f32(((e + 120) << 23) | (m << 20)))
    return -v if neg else v


@njit(**_J)
def _load_float(raw, src):
    """Raw source bits -> the exact value as float64 (NaN payload and sign carried over)."""
    if src == F32:
        return np.float64(bits_f32(raw & 0xFFFFFFFF))
    if src == F16:
        return np.float64(f16_to_f32(raw & 0xFFFF))
    if src == BF16:
        return np.float64(bf16_to_f32(raw & 0xFFFF))
    if src == E5M2:                                   # e5m2 is the top byte of an f16
        return np.float64(f16_to_f32((raw & 0xFF) << 8))
    if src == HIF8:
        return HIF8_VALUES[raw & 0xFF]             # a global array: numba freezes it
    if src == E8M0:                                   # an MX scale: 2**(s - 127), 0xFF NaN
        return np.nan if raw & 0xFF == 0xFF else math.ldexp(1.0, np.int64(raw & 0xFF) - 127)
    return _e4m3_to_f64(raw & 0xFF)


# ---------------------------------------------------------------------------
# Float formats
# ---------------------------------------------------------------------------

@njit(**_J)
def _fmt(code):
    """(p, bias, nbits, qmin, qmax, rmax) of a float destination.

    A finite value is R * 2**q with R < 2**p (the significand including the hidden bit) and
    qmin <= q <= qmax; the largest finite value is rmax * 2**qmax.
    """
    if code == F32:
        p, bias, nbits = 24, 127, 32
    elif code == F16:
        p, bias, nbits = 11, 15, 16
    elif code == BF16:
        p, bias, nbits = 8, 127, 16
    elif code == E5M2:
        p, bias, nbits = 3, 15, 8
    else:                                             # E4M3 (fn): emax 8, max 448 = 14 * 2**5
        return 4, 7, 8, -9, 5, 14
    qmin = 1 - bias - (p - 1)
    qmax = bias - (p - 1)
    rmax = (1 << p) - 1
    return p, bias, nbits, qmin, qmax, rmax


@njit(**_J)
def _encode(neg, r, q, p, bias, nbits):
    """Bits of (-1)**neg * r * 2**q (r < 2**p; r < 2**(p-1) only at q == qmin, i.e. subnormal)."""
    if r >= (1 << (p - 1)):
        field = ((q + p - 1 + bias) << (p - 1)) | (r - (1 << (p - 1)))
    else:
        field = r
    return np.int64(field) | (np.int64(neg) << (nbits - 1))


@njit(**_J)
def _maxbits(neg, code):
    p, bias, nbits, qmin, qmax, rmax = _fmt(code)
    return _encode(neg, rmax, qmax, p, bias, nbits)


@njit(**_J)
def _infbits(neg, code):
    """+-inf of the destination (NaN for e4m3, which has no inf)."""
    p, bias, nbits, qmin, qmax, rmax = _fmt(code)
    sign = np.int64(neg) << (nbits - 1)
    if code == E4M3:
        return sign | 0x7F
    return sign | (np.int64(2 * bias + 1) << (p - 1))


@njit(**_J)
def _nanbits(v, code):
    """A quiet NaN of the destination with v's sign and top payload bits."""
    b = np.int64(f64_bits(v))
    neg = 1 if b < 0 else 0
    if code == E4M3:
        return (np.int64(neg) << 7) | 0x7F
    p, bias, nbits, qmin, qmax, rmax = _fmt(code)
    payload = (b & ((np.int64(1) << 52) - 1)) >> (53 - p)
    quiet = np.int64(1) << (p - 2)
    return _infbits(neg, code) | quiet | payload


@njit(**_J)
def _bitlen(m):
    """Bit length of 0 < m < 2**63."""
    n = 1
    if m >> 32:
        m >>= 32
        n += 32
    if m >> 16:
        m >>= 16
        n += 16
    if m >> 8:
        m >>= 8
        n += 8
    if m >> 4:
        m >>= 4
        n += 4
    if m >> 2:
        m >>= 2
        n += 2
    if m >> 1:
        n += 1
    return n


@njit(**_J)
def _overflows_to_inf(rmode, neg):
    """IEEE 754: an overflowing result is inf when the mode rounds away from zero there."""
    return (rmode == CAST_NONE or rmode == CAST_RINT or rmode == CAST_ROUND
            or (rmode == CAST_CEIL and not neg) or (rmode == CAST_FLOOR and neg))


@njit(**_J)
def _round_pack(neg, m, e, code, rmode, sat):
    """Bits of the destination float nearest (per rmode) to (-1)**neg * m * 2**e, 0 <= m < 2**63.

    One rounding from the exact value; subnormal results kept; overflow per `sat` (clamp to max
    finite) or IEEE (inf or max finite depending on the rounding direction).
    """
    p, bias, nbits, qmin, qmax, rmax = _fmt(code)
    if m == 0:
        return np.int64(neg) << (nbits - 1)
    top = e + _bitlen(m) - 1                       # value in [2**top, 2**(top+1))
    q = max(top - (p - 1), qmin)                   # exponent of the result's last place
    sh = q - e
    cls = 0                                        # 0 exact, 1 below half, 2 half, 3 above half
    if sh <= 0:
        r = m << (-sh)
    else:
        if sh > 62:                                # fold the bits far below into a sticky bit
            k = sh - 62
            if k >= 63:
                m = np.int64(1)
            else:
                m = (m >> k) | (1 if (m & ((np.int64(1) << k) - 1)) != 0 else 0)
            sh = 62
        r = m >> sh
        rem = m & ((np.int64(1) << sh) - 1)
        half = np.int64(1) << (sh - 1)
        if rem == 0:
            cls = 0
        elif rem < half:
            cls = 1
        elif rem == half:
            cls = 2
        else:
            cls = 3
    up = False
    if cls != 0:
        if rmode == CAST_ROUND:
            up = cls >= 2
        elif rmode == CAST_FLOOR:
            up = neg
        elif rmode == CAST_CEIL:
            up = not neg
        elif rmode == CAST_TRUNC:
            up = False
        elif rmode == CAST_ODD:
            r |= 1
        else:                                      # CAST_RINT (and CAST_NONE)
            up = cls == 3 or (cls == 2 and (r & 1) == 1)
    if up:
        r += 1
        if r == (np.int64(1) << p):
            r >>= 1
            q += 1
    if q > qmax or (q == qmax and r > rmax):
        if sat != 0 and code != F32:
            return _maxbits(neg, code)
        return _infbits(neg, code) if _overflows_to_inf(rmode, neg) else _maxbits(neg, code)
    return _encode(neg, r, q, p, bias, nbits)


@njit(**_J)
def _hif8_class(e):
    """(first payload code, exponent bits D, mantissa bits) of the normal binade 2**e, |e| <= 15."""
    return _HIF8_BY_D[0 if e == 0 else _bitlen(abs(e))]


@njit(**_J)
def _hif8_exact(val):
    """Payload code of a positive value that hif8 represents exactly (<= 2**15)."""
    m, ex = math.frexp(val)
    e = ex - 1
    if e < -15:
        return np.int64(e + 23)                    # denormal 2**(p - 23)
    first, d, mb = _hif8_class(e)
    mant = np.int64(math.ldexp(m * 2.0 - 1.0, mb))
    field = 0
    if d > 0:
        field = ((1 if e < 0 else 0) << (d - 1)) | (abs(e) - (1 << (d - 1)))
    return np.int64(first | (field << mb) | mant)


@njit(**_J)
def _to_hif8(v, rmode, sat):
    """Bits of the hif8 nearest (per rmode) to the float64 v; see the module docstring."""
    if v != v:
        return np.int64(0) if sat != 0 else np.int64(HIF8_NAN)
    neg = v < 0
    sign = np.int64(0x80) if neg else np.int64(0)
    a = abs(v)
    if a == np.inf:
        return sign | (HIF8_MAX if sat != 0 else HIF8_INF)
    if a == 0.0:
        return np.int64(0)
    m, ex = math.frexp(a)
    e = ex - 1
    if e > 15:
        q = 15
    elif e >= -15:
        q = e - _hif8_class(e)[2]
    else:
        q = max(e, -22)                            # denormal binades carry no mantissa bits
    r = _round_integral(-math.ldexp(a, -q) if neg else math.ldexp(a, -q), rmode)
    val = math.ldexp(abs(r), q)
    if val == 0.0:
        return np.int64(0)
    if val > 32768.0:
        if sat != 0:
            return sign | HIF8_MAX
        return sign | (HIF8_INF if _overflows_to_inf(rmode, neg) else HIF8_MAX)
    return sign | _hif8_exact(val)


# ---------------------------------------------------------------------------
# The conversions
# ---------------------------------------------------------------------------

@njit(**_J)
def _round_integral(v, rmode):
    """Finite float64 v rounded to an integral float64 with rmode (exact; sign of zero kept)."""
    t = np.trunc(v)
    if t == v or rmode == CAST_TRUNC:
        return t
    one = np.copysign(1.0, v)
    if rmode == CAST_FLOOR:
        return t - 1.0 if v < 0 else t
    if rmode == CAST_CEIL:
        return t + 1.0 if v > 0 else t
    a = abs(v - t)                                 # exact, in (0, 1)
    if rmode == CAST_ROUND:
        return t + one if a >= 0.5 else t
    odd = np.fmod(t, 2.0) != 0.0
    if rmode == CAST_ODD:
        return t if odd else t + one
    if a > 0.5 or (a == 0.5 and odd):              # CAST_RINT (and CAST_NONE)
        return t + one
    return t


@njit(**_J)
def _float_to_int(v, dst, rmode, sat):
    bits, signed = _int_info(dst)
    lo = -(np.int64(1) << (bits - 1)) if signed else np.int64(0)
    hi = (np.int64(1) << (bits - 1)) - 1 if signed else (np.int64(1) << bits) - 1
    if bits == 64:
        lo = np.int64(_I64_MIN)
        hi = np.int64(9223372036854775807)
    if v != v:
        return np.int64(0)
    if v == np.inf or v == -np.inf:
        # saturating: the limit; wrapping: 0, as the NPU's own TCVT test data expects
        if sat == 0:
            return np.int64(0)
        return hi if v > 0 else lo
    r = _round_integral(v, rmode)
    if sat != 0:
        # the limits as exact powers of two: r < hi_excl  <=>  r <= hi for integral r
        hi_excl = _TWO63 if signed and bits == 64 else np.float64(hi) + 1.0
        if r >= hi_excl:
            return hi
        if r < np.float64(lo):
            return lo
        return np.int64(r)
    m = np.fmod(r, _TWO64)                         # exact; same low 64 bits as r
    if m >= _TWO63:
        m -= _TWO64
    elif m < -_TWO63:
        m += _TWO64
    return _wrap(np.int64(m), bits, signed)


@njit(**_J)
def _float_to_float(v, dst, rmode, sat):
    if dst == HIF8:
        return _to_hif8(v, rmode, sat)
    clamp = sat != 0 and dst != F32
    if v != v:
        return np.int64(0) if clamp else _nanbits(v, dst)
    b = np.int64(f64_bits(v))
    neg = b < 0
    if v == np.inf or v == -np.inf:
        return _maxbits(neg, dst) if clamp else _infbits(neg, dst)
    be = (b >> 52) & 0x7FF
    m = b & ((np.int64(1) << 52) - 1)
    if be == 0:
        e = -1074
    else:
        m |= np.int64(1) << 52
        e = be - 1075
    return _round_pack(neg, m, e, dst, rmode, sat)


@njit(**_J)
def _f32_to_f32(v, rmode):
    if v != v:
        return np.int64(f32_bits(np.float32(v))) | 0x400000
    if v == np.inf or v == -np.inf:
        return np.int64(f32_bits(np.float32(v)))
    return np.int64(f32_bits(np.float32(_round_integral(v, rmode))))


@njit(**_J)
def _int_to_float(k, dst, rmode, sat):
    if dst == HIF8:                                # no TCVT pair takes an int to hif8
        return _to_hif8(np.float64(k), rmode, sat)
    neg = k < 0
    if k == _I64_MIN:
        return _round_pack(neg, np.int64(1) << 62, 1, dst, rmode, sat)
    return _round_pack(neg, -k if neg else k, 0, dst, rmode, sat)


@njit(**_J)
def _int_to_int(k, dst, sat):
    bits, signed = _int_info(dst)
    if bits == 64:
        return k
    if sat != 0:
        lo = -(np.int64(1) << (bits - 1)) if signed else np.int64(0)
        hi = (np.int64(1) << (bits - 1)) - 1 if signed else (np.int64(1) << bits) - 1
        return lo if k < lo else (hi if k > hi else k)
    return _wrap(k, bits, signed)


@njit(**_J)
def cvt_bits(x, src, dst, rmode, sat):
    """TCVT of one element: raw source element x -> the destination's raw bits as int64.

    src/dst are type codes (F32 ... I64), rmode a CAST_* value, sat SAT_CLAMP (1) or SAT_WRAP (0);
    pass the effective modes from ``resolve``.  See the module docstring for the conventions.
    """
    raw = _raw(x)
    if _is_float(src):
        v = _load_float(raw, src)
        if not _is_float(dst):
            return _float_to_int(v, dst, rmode, sat)
        if src == F32 and dst == F32:
            return _f32_to_f32(v, rmode)
        return _float_to_float(v, dst, rmode, sat)
    sbits, ssigned = _int_info(src)
    k = _wrap(raw, sbits, ssigned)
    if _is_float(dst):
        return _int_to_float(k, dst, rmode, sat)
    return _int_to_int(k, dst, sat)


cvt_value = cvt_bits  # the name used in the design brief


@njit(**_J)
def cvt_f32(x, src, rmode, sat):
    """cvt_bits with dst = F32, returned as the float32 itself."""
    return bits_f32(cvt_bits(x, src, F32, rmode, sat))


@njit(**_J)
def encode(v, dst, rmode, sat):
    """A float64 value -> dst's raw bits as int64 (the fixpipe's conversion when data leaves L0C:
    the value was already computed exactly, so there is no source format to decode)."""
    if _is_float(dst):
        if dst == F32:
            return np.int64(f32_bits(np.float32(v)))      # nearest even (inf beyond the range)
        return _float_to_float(v, dst, rmode, sat)
    return _float_to_int(v, dst, rmode, sat)


@njit(**_J)
def decode(x, src):
    """A raw stored element of type code src -> its exact value as float64."""
    raw = _raw(x)
    if _is_float(src):
        return _load_float(raw, src)
    sbits, ssigned = _int_info(src)
    return np.float64(_wrap(raw, sbits, ssigned))
