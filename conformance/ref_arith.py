"""Numpy reference of the arithmetic family: unary math, TPRELU, TREM/TFMOD(S), the tile-scalar
ops and integer division, following the NPU per SoC (pto-isa-semantics 5.2, 5.3, 5.9 n1-n4 and
the Addendum). numpy and ml_dtypes only, nothing of pypto; dtype helpers from ``reference``.

Rules and choices (each function returns ``(result, loose)``: ``loose`` marks elements whose NaN
bit pattern or zero sign the ISA leaves open; any NaN / either zero is accepted there):

* Floats: f32 in f32; f16 and bf16 computed in f32 and rounded once (nearest even). A NaN input
  comes out as that NaN, quieted (sign and payload kept); a NaN made from non-NaN operands, or
  from two NaN operands, is loose. Division by zero is IEEE.
* TABS clears the sign bit (a NaN's payload is kept, not quieted). TNEG is x * -1 (TMULS): floats
  negate; a NaN comes out a NaN whose sign IEEE leaves open for a multiplication (loose; pypto
  keeps the sign and quiets it); integers wrap.
* TLOG, TSQRT: computed in double, rounded once (ln(+-0) = -inf, sqrt(-0) = -0, negative inputs
  give a loose NaN). The NPU's ln is an approximation: comparing with a chip needs an ulp
  tolerance. TRSQRT: a2a3 rounds 1/sqrt(x) once from double (the chip's rsqrt is approximate);
  a5 rounds sqrt(x) to the element type, then 1/that (vsqrt, vdiv). rsqrt(+-0) = +-inf.
  TRECIP = 1/x, correctly rounded.
* TRELU: x > 0 ? x : +0 (a -0 input: either zero); NaN quieted. Integers: max(x, 0).
* TPRELU / TLRELU: x > 0 ? x : x * y (y the tile src1 / the scalar slope). a2a3 TPRELU also writes
  tmp: row i at byte i * tmp.Cols, bit k of byte b = (src0[i, 8b + k] > 0) for 8b + k < validCol,
  0 up to the end of the whole 256-byte source repeats; other tmp bytes keep their contents.
* TREM (floor) / TFMOD (trunc): q = a / b; q = floor(q) or trunc(q); r = a - q * b, every step
  rounded (no fused multiply-add):
  - f32 (both SoCs): each step in float32.
  - a2a3 f16: each step rounded to f16; the integral part converted to int16 with saturation
    (NaN -> 0, clamped to -32768 .. 32767), then back to f16 (nearest even).
  - a5 f16: the float32 steps on the widened values, then narrowed toward zero with saturation
    (NaN -> +0, +-inf -> +-65504).
  - a2a3 i32 (i16): a and b converted to f32 (f16), nearest even; the f32 (a2a3 f16) steps; the
    result converted back with nearest even, saturating, NaN -> 0; the sources are rewritten to
    int(float(x)) over dst's valid region (``rem`` returns them). Division by zero: i32 gets
    NaN, hence 0; i16 gets x back (the saturating integral part turns inf into 32767, times 0).
  - a5 integers: exact floor-mod / trunc-mod; x rem 0 = x fmod 0 = x (pypto's choice).
  A NaN result is loose. The scalar forms use the (converted) scalar as every divisor.
* Integer division (a5 TDIV, TDIVS on both SoCs): C division truncating toward zero; x / 0 = -1
  (all ones, pypto's choice: the NPU's result is undefined); INT_MIN / -1 wraps.
* TDIVS floats: src / s or s / src (correctly rounded). ``recip=True`` (a5, the ISA page's
  form): r = float32(1 / s) (s = +-0 -> +inf), converted to the element type, then src * r.
* TSUBS: a2a3 i32 adds int(-float32(s)) (the scalar passes through float32), wrapping; other
  integers wrap; floats src - s (a NaN scalar's sign is left open).
* TMINS/TMAXS: the TMIN/TMAX rule of ``reference.binary`` (NaN propagates; max/min of +0 and -0
  is loose). TEXPANDS: every element = the converted scalar.
* Scalars are converted to the element type with ``reference.scalar_to`` (floats round once
  from double; ints must fit).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import reference as ref
from .reference import BF16, F16, F32, FLOATS, bits_dtype, np_dtype

_QUIET = {F32: 0x0040_0000, F16: 0x0200, BF16: 0x0040}
_SIGN = {F32: 0x8000_0000, F16: 0x8000, BF16: 0x8000}

# legality per SoC, written from the semantics doc (5.2 / 5.3 tables and the Addendum)
_STD = ("i32", "i16", "f16", "f32")
_A5_INT_F = ("u8", "i8", "u16", "i16", "u32", "i32", "f16", "f32")
LEGAL: dict[str, dict[str, tuple[str, ...]]] = {
    "TADD": {"a2a3": _STD, "a5": ("i32", "u32", "f32", "i16", "u16", "f16", "bf16", "u8", "i8")},
    "TSUB": {"a2a3": _STD, "a5": ("u32", "i32", "u16", "i16", "u8", "i8", "f32", "f16")},
    "TMUL": {"a2a3": _STD, "a5": ("i32", "u32", "f32", "i16", "u16", "f16")},
    "TDIV": {"a2a3": ("f16", "f32"), "a5": ("i32", "u32", "f32", "i16", "u16", "f16")},
    "TMIN": {"a2a3": _STD, "a5": ("u32", "i32", "u16", "i16", "u8", "i8", "f32", "f16")},
    "TMAX": {"a2a3": _STD, "a5": ("u32", "i32", "u16", "i16", "u8", "i8", "f32", "f16")},
    "TABS": {"a2a3": ("f16", "f32"), "a5": ("f16", "f32")},
    "TNEG": {"a2a3": _STD, "a5": _A5_INT_F + ("bf16",)},
    "TLOG": {"a2a3": ("f16", "f32"), "a5": ("f16", "f32")},
    "TSQRT": {"a2a3": ("f16", "f32"), "a5": ("f16", "f32")},
    "TRSQRT": {"a2a3": ("f16", "f32"), "a5": ("f16", "f32")},
    "TRECIP": {"a2a3": ("f16", "f32"), "a5": ("f16", "f32")},
    "TRELU": {"a2a3": ("f16", "f32", "i32"), "a5": ("f16", "f32", "i32")},
    "TPRELU": {"a2a3": ("f16", "f32"), "a5": ("f16", "f32")},
    "TREM": {"a2a3": ("f16", "f32", "i32", "i16"), "a5": ("f16", "f32", "u16", "i16", "u32", "i32")},
    "TFMOD": {"a2a3": ("f16", "f32", "i32", "i16"), "a5": ("f16", "f32", "u16", "i16", "u32", "i32")},
    "TEXPANDS": {"a2a3": _STD, "a5": _A5_INT_F + ("bf16",)},
    "TADDS": {"a2a3": _STD, "a5": _A5_INT_F + ("bf16",)},
    "TSUBS": {"a2a3": _STD, "a5": _STD},
    "TMULS": {"a2a3": _STD, "a5": _A5_INT_F + ("bf16",)},
    "TDIVS": {"a2a3": _STD, "a5": _A5_INT_F},
    "TMINS": {"a2a3": _STD, "a5": _A5_INT_F + ("bf16",)},
    "TMAXS": {"a2a3": _STD, "a5": _A5_INT_F},
    "TREMS": {"a2a3": _STD, "a5": ("f16", "f32", "u16", "i16", "u32", "i32")},
    "TFMODS": {"a2a3": _STD, "a5": ("f16", "f32", "u16", "i16", "u32", "i32")},
    "TLRELU": {"a2a3": ("f16", "f32"), "a5": ("f16", "f32")},
}
UNSUPPORTED = ("TADDC", "TSUBC", "TADDSC", "TSUBSC")      # no NPU implementation on either SoC


# ---------------------------------------------------------------------------------------------
# float helpers
# ---------------------------------------------------------------------------------------------
def _round(r: np.ndarray, dt: np.dtype) -> np.ndarray:
    """float32 / float64 values rounded once to the element type (nearest even)."""
    r = np.asarray(r)
    with np.errstate(all="ignore"):
        if dt == F32:
            return r.astype(F32)
        if dt == F16:
            return r.astype(F16)
        if r.dtype == np.float64:
            r = np.array([ref._double_to_f32_round_odd(float(v)) for v in r.ravel()],
                         dtype=F32).reshape(r.shape)
        return ref.f32_to_bf16(r.astype(F32))


def _nan_fix(out: np.ndarray, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Apply the NaN rule: one NaN operand -> that NaN quieted; any other NaN result is loose."""
    dt = out.dtype
    bits = out.view(bits_dtype(dt)).copy()
    q = bits.dtype.type(_QUIET[dt])
    nans = [np.isnan(o.astype(F32)) for o in ops]
    count = sum(n.astype(int) for n in nans)
    for o, n in zip(ops, nans):
        one = n & (count == 1)
        bits[one] = o.view(bits_dtype(dt))[one] | q
    fixed = bits.view(dt)
    loose = np.isnan(fixed.astype(F32)) & (count != 1)
    return fixed, loose


def _check(a: np.ndarray, dtype: Any) -> tuple[np.ndarray, np.dtype]:
    a = np.asarray(a)
    dt = np_dtype(dtype) if dtype is not None else a.dtype
    if a.dtype != dt:
        raise TypeError(f"operand must be {dt}, got {a.dtype}")
    return a, dt


def _wrap_int(v: int, dt: np.dtype) -> int:
    w = dt.itemsize * 8
    v %= 1 << w
    return v - (1 << w) if dt.kind == "i" and v >= 1 << (w - 1) else v


# ---------------------------------------------------------------------------------------------
# unary
# ---------------------------------------------------------------------------------------------
def _libm(fn, x: float) -> float:
    try:
        return fn(x)
    except (ValueError, OverflowError):
        return math.nan


def unary(name: str, x: np.ndarray, dtype: Any = None, *, soc: str = "a2a3"):
    """TABS TNEG TLOG TSQRT TRSQRT TRECIP TRELU on ``soc``: (result, loose)."""
    x, dt = _check(x, dtype)
    loose = np.zeros(x.shape, dtype=bool)
    if dt not in FLOATS:
        v = x.astype(np.int64)
        if name == "TNEG":
            out = np.array([_wrap_int(-int(e), dt) for e in v.ravel()], dtype=np.int64)
            return out.astype(dt).reshape(x.shape), loose
        if name == "TRELU":
            return np.maximum(v, 0).astype(dt), loose
        raise TypeError(f"{name} has no integer form")
    bits = x.view(bits_dtype(dt))
    nan = np.isnan(x.astype(F32))
    quiet = (bits | bits.dtype.type(_QUIET[dt])).view(dt)
    if name == "TABS":
        return (bits & bits.dtype.type(~_SIGN[dt] & (_SIGN[dt] * 2 - 1))).view(dt), loose
    if name == "TNEG":                      # x * -1: the sign of a NaN result is open (IEEE)
        out = np.where(nan, quiet, (bits ^ bits.dtype.type(_SIGN[dt])).view(dt))
        return out.astype(dt), nan
    if name == "TRELU":
        f = x.astype(F32)
        out = np.where(f > 0, x, np.zeros_like(x))
        out = np.where(nan, quiet, out).astype(dt)
        return out, (f == 0) & np.signbit(f)
    f64 = x.astype(np.float64).ravel()
    if name == "TLOG":
        r = [(-math.inf if v == 0 else _libm(math.log, v)) for v in f64]
    elif name == "TSQRT":
        r = [_libm(math.sqrt, v) for v in f64]
    elif name == "TRSQRT" and soc == "a5":
        s = _round(np.array([_libm(math.sqrt, v) for v in f64], dtype=np.float64), dt).astype(F32)
        with np.errstate(all="ignore"):
            out = _round(np.float32(1.0) / s, dt).reshape(x.shape)
        made = ~nan & np.isnan(out.astype(F32))
        return np.where(nan, quiet, out).astype(dt), made
    elif name == "TRSQRT":
        r = [(math.copysign(math.inf, v) if v == 0 else 1.0 / _libm(math.sqrt, v)) if not math.isnan(v)
             else v for v in f64]
    elif name == "TRECIP":
        with np.errstate(all="ignore"):
            out = _round(np.float32(1.0) / x.astype(F32), dt)
        return np.where(nan, quiet, out).astype(dt), loose
    else:
        raise ValueError(name)
    out = _round(np.array(r, dtype=np.float64), dt).reshape(x.shape)
    made = ~nan & np.isnan(out.astype(F32))
    return np.where(nan, quiet, out).astype(dt), made


# ---------------------------------------------------------------------------------------------
# binary helpers: x > 0 ? x : x * y, integer division
# ---------------------------------------------------------------------------------------------
def prelu(a: np.ndarray, b: Any, dtype: Any = None):
    """TPRELU (b a tile) or TLRELU (b the slope scalar): (result, loose)."""
    a, dt = _check(a, dtype)
    bb = np.full(a.shape, ref.scalar_to(dt, b), dtype=dt) if np.ndim(b) == 0 else np.asarray(b, dtype=dt)
    af, bf = a.astype(F32), bb.astype(F32)
    with np.errstate(all="ignore"):
        prod = _round(af * bf, dt)
    prod, loose = _nan_fix(prod, [a, bb])
    out = np.where(af > 0, a, prod).astype(dt)
    nan = np.isnan(af)
    quiet = (a.view(bits_dtype(dt)) | bits_dtype(dt).type(_QUIET[dt])).view(dt)
    out = np.where(nan, quiet, out).astype(dt)
    return out, loose & ~(af > 0) & ~nan


def prelu_tmp(a: np.ndarray, valid: tuple[int, int], prev: np.ndarray, dtype: Any = None) -> np.ndarray:
    """The a2a3 TPRELU tmp tile after the instruction (``prev`` its contents before)."""
    a, dt = _check(a, dtype)
    vr, vc = valid
    per = 256 // dt.itemsize
    span = -(-vc // per) * per // 8
    out = np.array(prev, dtype=np.uint8, copy=True)
    for i in range(vr):
        row = np.zeros(span, dtype=np.uint8)
        for c in range(vc):
            if a[i, c].astype(F32) > 0:
                row[c // 8] |= np.uint8(1 << (c % 8))
        out[i, :span] = row
    return out


def int_div(a: np.ndarray, b: Any, dtype: Any = None, *, scalar_first: bool = False) -> np.ndarray:
    """C integer division (truncating), x / 0 = -1 (wrapped to the type), INT_MIN / -1 wraps."""
    a, dt = _check(a, dtype)
    bb = np.full(a.shape, ref.scalar_to(dt, b), dtype=dt) if np.ndim(b) == 0 else np.asarray(b, dtype=dt)
    if scalar_first:
        a, bb = bb, a
    out = []
    for x, y in zip(a.ravel().tolist(), bb.ravel().tolist()):
        if y == 0:
            q = -1
        else:
            q = abs(x) // abs(y)
            q = q if (x >= 0) == (y >= 0) else -q
        out.append(_wrap_int(q, dt))
    return np.array(out, dtype=np.int64).astype(dt).reshape(a.shape)


# ---------------------------------------------------------------------------------------------
# TREM / TFMOD
# ---------------------------------------------------------------------------------------------
def _integral(v: float, floor: bool) -> float:
    if math.isnan(v) or math.isinf(v):
        return v
    return float(math.floor(v) if floor else math.trunc(v)) if v != 0 else v


def _steps_f32(a: np.float32, b: np.float32, floor: bool) -> np.float32:
    with np.errstate(all="ignore"):
        q = np.float32(a) / np.float32(b)
        fq = np.float32(math.copysign(_integral(float(q), floor), float(q))) \
            if not math.isnan(float(q)) else q
        m = np.float32(fq * np.float32(b))
        return np.float32(np.float32(a) - m)


def _sat_int(v: float, lo: int, hi: int) -> int:
    if math.isnan(v):
        return 0
    if v >= hi:
        return hi
    if v <= lo:
        return lo
    return int(v)


def _h(v) -> np.float32:
    with np.errstate(all="ignore"):
        return np.float32(np.float16(np.float32(v)))


def _steps_f16_a2a3(a: np.float32, b: np.float32, floor: bool) -> np.float32:
    with np.errstate(all="ignore"):
        q = _h(np.float32(a) / np.float32(b))
        qv = float(q)
        iq = _sat_int(math.floor(qv) if floor and math.isfinite(qv) else
                      (math.trunc(qv) if math.isfinite(qv) else qv), -32768, 32767)
        qf = np.float32(np.float16(float(iq)))
        m = _h(qf * np.float32(b))
        return _h(np.float32(a) - m)


def _f16_rz_sat(v: np.float32) -> np.float32:
    """float32 -> f16 toward zero, saturating: NaN -> +0, +-inf -> +-65504."""
    if math.isnan(float(v)):
        return np.float32(0.0)
    if math.isinf(float(v)):
        return np.float32(math.copysign(65504.0, float(v)))
    with np.errstate(all="ignore"):
        h = np.float16(v)
        if abs(float(h)) > abs(float(v)):
            h = np.nextafter(h, np.float16(0.0))
    return np.float32(h)


def _rint_sat(v: float, lo: int, hi: int) -> int:
    if math.isnan(v):
        return 0
    if math.isinf(v):
        return hi if v > 0 else lo
    r = round(v)                                 # Python round: ties to even
    return max(lo, min(hi, int(r)))


def rem(a: np.ndarray, b: Any, dtype: Any = None, *, soc: str = "a2a3", floor: bool = True):
    """TREM (floor=True) / TFMOD (False), or TREMS / TFMODS for a scalar ``b``, on ``soc``.

    Returns ``(dst, loose, src0_after, src1_after)``: the sources after the instruction (a2a3
    integers rewrite them; ``src1_after`` is None for a scalar divisor)."""
    a, dt = _check(a, dtype)
    scalar = np.ndim(b) == 0
    bb = np.full(a.shape, ref.scalar_to(dt, b), dtype=dt) if scalar else np.asarray(b, dtype=dt)
    a_after, b_after = a.copy(), (None if scalar else bb.copy())
    out = np.empty(a.shape, dtype=dt)
    flat_a, flat_b, flat_o = a.ravel(), bb.ravel(), out.reshape(-1)
    fa, fb = a_after.reshape(-1), (b_after.reshape(-1) if b_after is not None else None)
    for i in range(flat_a.size):
        x, y = flat_a[i], flat_b[i]
        if dt in (F32, F16):
            xf, yf = np.float32(x), np.float32(y)
            if dt == F32:
                r = _steps_f32(xf, yf, floor)
            elif soc == "a2a3":
                r = _steps_f16_a2a3(xf, yf, floor)
            else:
                r = _f16_rz_sat(_steps_f32(xf, yf, floor))
            flat_o[i] = np.asarray(r).astype(dt)
        elif soc == "a2a3":
            if dt == np.dtype(np.int32):
                lo, hi = -(1 << 31), (1 << 31) - 1
                xf, yf = np.float32(int(x)), np.float32(int(y))
                r = _steps_f32(xf, yf, floor)
            else:
                lo, hi = -32768, 32767
                xf, yf = np.float32(np.float16(float(int(x)))), np.float32(np.float16(float(int(y))))
                r = _steps_f16_a2a3(xf, yf, floor)
            flat_o[i] = _rint_sat(float(r), lo, hi)
            fa[i] = _rint_sat(float(xf), lo, hi)
            if fb is not None:
                fb[i] = _rint_sat(float(yf), lo, hi)
        else:
            xi, yi = int(x), int(y)
            if yi == 0:
                r = xi
            else:
                r = xi % yi
                if not floor and r != 0 and (r < 0) != (xi < 0):
                    r -= yi
            flat_o[i] = _wrap_int(r, dt)
    loose = np.isnan(out.astype(F32)) if dt in FLOATS else np.zeros(a.shape, dtype=bool)
    return out, loose, a_after, b_after


# ---------------------------------------------------------------------------------------------
# tile-scalar
# ---------------------------------------------------------------------------------------------
def scalar_op(name: str, a: np.ndarray, s: Any, dtype: Any = None, *, soc: str = "a2a3",
              scalar_first: bool = False, recip: bool = False):
    """TADDS TSUBS TMULS TDIVS TMINS TMAXS TLRELU with a Python scalar: (result, loose)."""
    a, dt = _check(a, dtype)
    sv = ref.scalar_to(dt, s)
    if name in ("TADDS", "TMULS", "TMINS", "TMAXS"):
        op = {"TADDS": "add", "TMULS": "mul", "TMINS": "min", "TMAXS": "max"}[name]
        return ref.binary(op, a, np.full(a.shape, sv, dtype=dt), dt, with_loose=True)
    if name == "TLRELU":
        return prelu(a, s, dt)
    if name == "TSUBS":
        if dt not in FLOATS:
            k = int(sv)
            if soc == "a2a3" and dt == np.dtype(np.int32):
                k = -int(-float(np.float32(k)))      # a2a3 adds (int)(-(float)s)
            out = np.array([_wrap_int(int(x) - k, dt) for x in a.ravel().tolist()], dtype=np.int64)
            return out.astype(dt).reshape(a.shape), np.zeros(a.shape, dtype=bool)
        out, loose = ref.binary("sub", a, np.full(a.shape, sv, dtype=dt), dt, with_loose=True)
        if np.isnan(np.float32(sv)):
            loose = loose | np.isnan(out.astype(F32))
        return out, loose
    if name == "TDIVS":
        if dt not in FLOATS:
            return int_div(a, s, dt, scalar_first=scalar_first), np.zeros(a.shape, dtype=bool)
        sb = np.full(a.shape, sv, dtype=dt)
        af, sf = a.astype(F32), sb.astype(F32)
        with np.errstate(all="ignore"):
            if recip:
                r32 = np.float32(1.0) / np.float32(sv) if float(sv) != 0 else np.float32(np.inf)
                r = np.full(a.shape, np.asarray(r32).astype(F32), dtype=F32)
                rt = _round(r, dt)
                out = _round(af * rt.astype(F32), dt)
                return _nan_fix(out, [a, rt])
            out = _round(sf / af if scalar_first else af / sf, dt)
        return _nan_fix(out, [sb, a] if scalar_first else [a, sb])
    raise ValueError(name)


def expands(shape: tuple[int, ...], s: Any, dtype: Any):
    dt = np_dtype(dtype)
    return np.full(shape, ref.scalar_to(dt, s), dtype=dt), np.zeros(shape, dtype=bool)


def binary(name: str, a: np.ndarray, b: np.ndarray, dtype: Any = None):
    """TADD TSUB TMUL TDIV TMAX TMIN, integer TDIV included: (result, loose)."""
    a, dt = _check(a, dtype)
    if name == "TDIV" and dt not in FLOATS:
        return int_div(a, b, dt), np.zeros(a.shape, dtype=bool)
    op = {"TADD": "add", "TSUB": "sub", "TMUL": "mul", "TDIV": "div", "TMAX": "max", "TMIN": "min"}[name]
    return ref.binary(op, a, np.asarray(b, dtype=dt), dt, with_loose=True)


REFERENCE = {
    "TABS": unary, "TNEG": unary, "TLOG": unary, "TSQRT": unary, "TRSQRT": unary,
    "TRECIP": unary, "TRELU": unary, "TPRELU": prelu, "TREM": rem, "TFMOD": rem,
    "TEXPANDS": expands, "TSUBS": scalar_op, "TDIVS": scalar_op, "TMINS": scalar_op,
    "TMAXS": scalar_op, "TREMS": rem, "TFMODS": rem, "TLRELU": prelu,
}
