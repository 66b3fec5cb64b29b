"""Numpy reference semantics for the PTO instructions pypto implements so far.

Written from ``pto-isa-semantics.md`` (sections 3.6, 4.2, 4.3, 5.2, 5.3, 5.4, 5.9 and the
Addendum), following the **NPU** wherever the NPU and pto-isa's C++ CPU simulator differ. It
deliberately shares no code with pypto: besides the standard library it imports only numpy and
ml_dtypes, and accepts pypto's ``DType`` objects by duck typing (anything with an ``.np``
attribute), numpy dtypes, or names ("float32", "f32", "bf16", ...).

Rules implemented here (the conformance suite compares pypto bit for bit against them):

* Floating point add/sub/mul/div/max/min: f32 in f32; f16 and bf16 are computed in f32 and
  rounded **once** to the element type (round to nearest even). For + - * / this is exactly the
  correctly rounded narrow operation, because f32 carries more than 2p+2 bits of f16/bf16.
  Overflow gives +-inf, division by zero gives IEEE +-inf / NaN, subnormals are kept (no flush).
* NaN: max/min propagate NaN (numpy ``maximum``/``minimum``, not C++ ``std::max``). When exactly
  one operand is NaN the result is that NaN, quieted (quiet bit set, sign and payload kept), the
  IEEE 754 recommendation. When both operands are NaN, or when the operation creates a NaN from
  non-NaN operands (inf - inf, 0 * inf, 0 / 0), the ISA does not say which NaN bit pattern comes
  out (x86 gives a negative default NaN, other hardware a positive one): ``binary(...,
  with_loose=True)`` returns a mask of those elements, where any NaN is accepted.
* Signed zeros count everywhere except max/min of a +0 and a -0, where the ISA does not say
  which zero wins (numpy returns the second operand, IEEE 754-2019 ``maximum`` returns +0): those
  elements are in the same "loose" mask and either zero is accepted.
* Integer add/sub/mul/max/min wrap modulo 2^w (as the NPU integer units do; section 5.9 n3).
  Integer TDIV (legal on a5 only) has no documented semantics and is not modelled.
* Tile-scalar TADDS/TMULS: the scalar is first converted to the tile's element type (section 5.3:
  scalars are passed as ``TileData::DType``): a Python float rounds to nearest even directly from
  its double value (no double rounding through f32); for integer tiles a Python int wraps modulo
  2^w. Then the binary rule above applies.
* TLOAD padding (section 4.3 + Addendum, NPU): the GM block is copied into the tile's valid
  region; with PadZero/PadMin/PadMax only the tail of the last partial 32-byte block of each
  copied row, i.e. columns ``[validCol, roundup(validCol, 32/sizeof(T)))``, gets the pad value
  of section 3.6 (NPU column: float Min/Max = -inf/+inf, i8 Min = -1, unsigned Min = 0, 8-byte
  and fp8 types 0). Everything else (rows >= validRow, whole blocks beyond) keeps its previous
  contents. PadNull writes nothing outside the copied elements.
* TEXP (f16, f32): e**x is computed in float64 from the exactly widened input (C ``exp``, i.e.
  Python's ``math.exp``) and rounded **once** to the element type (nearest even; overflow gives
  +inf, underflow keeps subnormals, exp(-inf) = +0). A NaN input gives that NaN, quieted. This is
  pypto's choice: the real NPU exp is an approximation good to a few ulp, so comparisons against
  an NPU need an ulp tolerance; the simulator is compared with this rule bit for bit.
* TROWSUM (f16, f32): ``dst[i, 0] = sum_j src[i, j]`` over the **src** valid region. The order
  is per SoC (pypto's model of each SoC's code; section 5.4 n9 and the Addendum; the hardware's
  in-repeat order is not documented). Building blocks: a *repeat* is 256 bytes, n = 64 f32 or
  128 f16 elements. ``tree(v)``: pairwise sum in float32 (f16 elements widened exactly) over
  adjacent elements, a level v[0..m) becoming ``[v[0]+v[1], v[2]+v[3], ...]``; when m is odd the
  last element moves up a level unchanged (appended at the end of the next level); repeated until
  one value is left (each ``+`` one float32 addition, nearest even), then rounded **once** to the
  element type. Equivalently tree(v) = v[0] for m = 1, else tree(v[:h]) + tree(v[h:]) with h the
  largest power of two below m. ``round_elem(a + b)``: one f32 addition rounded to the element
  type. For a row with V valid columns, F = V // n full repeats and rem = V % n:

  - a2a3 (vector lanes first): if V <= n, the result is tree(row[0:V]). Otherwise
    ``lanes[0:n] = row[0:n]``; if V >= 2n, ``lanes[k] = round_elem(lanes[k] + row[n + k])`` for
    k < n; then the partial tail: ``lanes[k] = round_elem(lanes[k] + row[F*n + k])`` for k < rem;
    then for i = 2 .. F-1: ``lanes[k] = round_elem(lanes[k] + row[i*n + k])``; the result is
    tree(lanes[0:n]). Note the tail is added **before** repeats 2 .. F-1.
  - a5 (repeats first): ``acc = +0.0``; for each repeat j (the last may be partial):
    ``part = tree(row[j*n : min((j+1)*n, V)])`` (rounded to the element type), then
    ``acc = round_elem(acc + part)``. So a row of -0.0 sums to +0.0 on a5 (and to -0.0 on a2a3).

  So an f16 row [2048, 1, 1, 1] gives (2048 + 1) + (1 + 1) = 2051 in f32, rounded to 2052 on both
  SoCs. An empty valid region (validRow or validCol 0) writes nothing. The NaN bit pattern of a
  NaN sum is left open (``with_loose``). ``rowsum(..., soc="a2a3")`` is the default.
* TCVT (``cast``): legal (src, dst) pairs per SoC in ``CVT_LEGAL``; anything else is an error.
  Round modes: CAST_RINT nearest even, CAST_ROUND nearest with ties away from zero, CAST_FLOOR,
  CAST_CEIL, CAST_TRUNC (toward zero), CAST_ODD (truncate toward zero, then set the last
  mantissa bit if the result was inexact). CAST_NONE: on a2a3 float->int truncates and every
  other pair rounds to nearest even; on a5 nearest even everywhere. CAST_ODD exists only for
  f32->f16; for any other pair a2a3 treats it as CAST_NONE and a5 executes nothing (dst keeps its
  contents: ``cast`` reports every element as untouched). a5 f32->e4m3/e5m2 always round to
  nearest even; a2a3 i32->f16 (a dequantisation with scale 1.0) ignores mode and saturation
  argument: nearest even, then clamp to +-65504. f32->f32 rounds to an integral value (zero keeps
  the input's sign). Everything is rounded once from the exact input value, to the destination's
  precision with subnormals kept; exact widenings (f16/bf16/fp8->f32, small ints to wider types)
  stay exact.
  Saturation: f16->u8, f16->i8, f32->i16, f16->i16, i64->i32 and i32->i16 default to OFF, every
  other pair to ON. An explicit ``sat`` is honoured on a2a3 only for those six pairs (the others
  stay ON), on a5 for every pair except f32->e4m3 and f32->e5m2 (no control bit there: the
  default, ON, always applies). Integer destination: ON clamps to [min, max] and +-inf -> max /
  min; OFF keeps the low bits (two's complement) of the exactly rounded integer, however large
  (f16 300 -> i8 = 44; this covers int -> int too, e.g. a5 i16 -1 -> u32 is 0 by default,
  0xFFFFFFFF with OFF), and +-inf -> 0 (the NPU's test data); NaN -> 0 in both modes (pypto's
  choice: the NPU leaves NaN unspecified). f16, bf16 and fp8 destinations: ON turns a finite
  value whose rounded result overflows, and +-inf, into +-max finite, and NaN into +0 (Ascend
  saturation mode); OFF (reachable for f16 and bf16 only, since fp8 is always ON) is IEEE
  (overflow per the rounding direction: to +-inf for nearest / away from zero, to +-max finite
  toward zero; inf stays inf). f32 destinations never saturate. NaN -> NaN keeps the sign and
  the top payload bits and sets the quiet bit (e4m3's single NaN widens to the default quiet NaN
  with its sign). ``cast_rule`` gives the effective (rounding, saturation) of a call.
"""
from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

# ---------------------------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------------------------
F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
I8, U8 = np.dtype(np.int8), np.dtype(np.uint8)
I16, U16 = np.dtype(np.int16), np.dtype(np.uint16)
I32, U32 = np.dtype(np.int32), np.dtype(np.uint32)
I64, U64 = np.dtype(np.int64), np.dtype(np.uint64)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)

_BY_NAME: dict[str, np.dtype] = {
    "float32": F32, "f32": F32, "float16": F16, "f16": F16, "bfloat16": BF16, "bf16": BF16,
    "int8": I8, "i8": I8, "uint8": U8, "u8": U8, "int16": I16, "i16": I16,
    "uint16": U16, "u16": U16, "int32": I32, "i32": I32, "uint32": U32, "u32": U32,
    "int64": I64, "i64": I64, "uint64": U64, "u64": U64,
    "float8_e4m3": E4M3, "e4m3": E4M3, "float8_e5m2": E5M2, "e5m2": E5M2,
}
SHORT: dict[np.dtype, str] = {
    F32: "f32", F16: "f16", BF16: "bf16", I8: "i8", U8: "u8", I16: "i16", U16: "u16",
    I32: "i32", U32: "u32", I64: "i64", U64: "u64", E4M3: "e4m3", E5M2: "e5m2",
}
LONG: dict[np.dtype, str] = {
    F32: "float32", F16: "float16", BF16: "bfloat16", I8: "int8", U8: "uint8", I16: "int16",
    U16: "uint16", I32: "int32", U32: "uint32", I64: "int64", U64: "uint64",
    E4M3: "float8_e4m3", E5M2: "float8_e5m2",
}
FLOATS = (F32, F16, BF16)          # floating types with arithmetic here (fp8 only moves)


def np_dtype(d: Any) -> np.dtype:
    """numpy dtype of a pypto DType (duck-typed ``.np``), numpy dtype/type, or a name."""
    if hasattr(d, "np"):
        return np.dtype(d.np)
    if isinstance(d, str):
        return _BY_NAME[d]
    return np.dtype(d)


def is_float(d: Any) -> bool:
    return np_dtype(d) in (F32, F16, BF16, E4M3, E5M2)


def bits_dtype(d: Any) -> np.dtype:
    """The unsigned integer type of the same width (for bit-level comparison)."""
    return np.dtype(f"u{np_dtype(d).itemsize}")


def to_bits(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return x.view(bits_dtype(x.dtype))


# quiet bit and exponent mask of each float format, as bit patterns of the storage width
_QUIET = {F32: 0x0040_0000, F16: 0x0200, BF16: 0x0040}


# ---------------------------------------------------------------------------------------------
# legality per SoC (section 5.2 / 5.3 tables), written here independently of pypto's ISA table
# ---------------------------------------------------------------------------------------------
LEGAL: dict[str, dict[str, tuple[str, ...]]] = {
    "add": {"a2a3": ("i32", "i16", "f16", "f32"),
            "a5": ("i32", "u32", "f32", "i16", "u16", "f16", "bf16", "u8", "i8")},
    "sub": {"a2a3": ("i32", "i16", "f16", "f32"),
            "a5": ("u32", "i32", "u16", "i16", "u8", "i8", "f32", "f16")},
    "mul": {"a2a3": ("i32", "i16", "f16", "f32"),
            "a5": ("i32", "u32", "f32", "i16", "u16", "f16")},
    "div": {"a2a3": ("f16", "f32"),
            "a5": ("i32", "u32", "f32", "i16", "u16", "f16")},
    "min": {"a2a3": ("i32", "i16", "f16", "f32"),
            "a5": ("u32", "i32", "u16", "i16", "u8", "i8", "f32", "f16")},
    "max": {"a2a3": ("i32", "i16", "f16", "f32"),
            "a5": ("u32", "i32", "u16", "i16", "u8", "i8", "f32", "f16")},
    "adds": {"a2a3": ("i32", "i16", "f16", "f32"),
             "a5": ("u8", "i8", "u16", "i16", "u32", "i32", "f16", "f32", "bf16")},
    "muls": {"a2a3": ("i32", "i16", "f16", "f32"),
             "a5": ("u8", "i8", "u16", "i16", "u32", "i32", "f16", "f32", "bf16")},
    "exp": {"a2a3": ("f16", "f32"), "a5": ("f16", "f32")},
    "rowsum": {"a2a3": ("f16", "f32"), "a5": ("f16", "f32")},
}
# TCVT: legal (src, dst) pairs, written "src>dst" (section 5.9 n7, Addendum; hif8 has no host type)
def _pairs(text: str) -> tuple[tuple[str, str], ...]:
    return tuple((a, b) for a, b in (p.split(">") for p in text.split()))


CVT_LEGAL: dict[str, tuple[tuple[str, str], ...]] = {
    "a2a3": _pairs("f32>f16 f32>f32 f32>bf16 f32>i16 f32>i32 f32>i64 "
                   "f16>f32 f16>i32 f16>i16 f16>i8 f16>u8 bf16>f32 bf16>i32 "
                   "i16>f16 i16>f32 i32>f32 i32>i16 i32>i64 i32>f16 i64>f32 i64>i32 u8>f16 i8>f16"),
    "a5": _pairs("f32>f16 f32>f32 f32>bf16 f32>i16 f32>i32 f32>i64 f32>e4m3 f32>e5m2 "
                 "f16>f32 f16>i32 f16>i16 f16>i8 f16>u8 bf16>f32 bf16>i32 bf16>f16 "
                 "u8>f16 u8>u16 i8>f16 i8>i16 i8>i32 i16>u8 i16>f16 i16>f32 i16>u32 i16>i32 "
                 "i32>f32 i32>i16 i32>u16 i32>i64 i32>u8 u32>u8 u32>u16 u32>i16 i64>f32 i64>i32 "
                 "e4m3>f32 e5m2>f32"),
}
BINARY_OPS = ("add", "sub", "mul", "div", "max", "min")
SCALAR_OPS = ("adds", "muls")
UNARY_OPS = ("exp",)
PTO_NAME = {"add": "TADD", "sub": "TSUB", "mul": "TMUL", "div": "TDIV", "max": "TMAX",
            "min": "TMIN", "adds": "TADDS", "muls": "TMULS", "exp": "TEXP", "rowsum": "TROWSUM",
            "cvt": "TCVT"}


def is_legal(op: str, dtype: Any, soc: str = "a2a3") -> bool:
    return SHORT[np_dtype(dtype)] in LEGAL[op][soc]


def is_cvt_legal(src_dtype: Any, dst_dtype: Any, soc: str = "a2a3") -> bool:
    """Whether TCVT from ``src_dtype`` to ``dst_dtype`` exists on ``soc``."""
    return (SHORT[np_dtype(src_dtype)], SHORT[np_dtype(dst_dtype)]) in CVT_LEGAL[soc]


def is_modelled(op: str, dtype: Any) -> bool:
    """Whether this reference defines the result (integer division is not documented)."""
    return not (op == "div" and not is_float(dtype))


# ---------------------------------------------------------------------------------------------
# rounding helpers
# ---------------------------------------------------------------------------------------------
def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16, nearest even (NaN: quieted, payload top bits kept)."""
    x = np.asarray(x, dtype=F32)
    u = x.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    nanbits = ((u >> 16).astype(np.uint16) | np.uint16(_QUIET[BF16]))
    out = np.where(nan, nanbits, rounded).astype(np.uint16)
    return out.view(BF16)


def _from_f32(r: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Round once from float32 to the element type."""
    if dt == F32:
        return r.astype(F32)
    if dt == F16:
        with np.errstate(all="ignore"):
            return r.astype(F16)      # numpy's float->half conversion is round-to-nearest-even
    if dt == BF16:
        return f32_to_bf16(r)
    raise TypeError(f"no float rounding to {dt}")


def _double_to_f32_round_odd(x: float) -> np.float32:
    """float64 -> float32 with round-to-odd (lets a second rounding to bf16 be exact)."""
    with np.errstate(all="ignore"):
        f = np.float32(x)
    if np.isnan(f) or float(f) == x:
        return f
    if np.isinf(f) or abs(float(f)) > abs(x):   # RNE went away from zero: step back toward 0
        f = np.nextafter(f, np.float32(0.0), dtype=np.float32) if not np.isinf(f) else \
            np.float32(np.copysign(np.finfo(np.float32).max, x))
    b = np.array(f, dtype=F32).view(np.uint32) | np.uint32(1)
    return b.view(F32)[()]


def scalar_to(dtype: Any, s: Any) -> np.generic:
    """Convert a Python scalar operand to the tile element type (section 5.3).

    float types: one round-to-nearest-even from the scalar's exact value (a Python float is a
    double; no double rounding through f32). integer types: a Python int wraps modulo 2^w.
    """
    dt = np_dtype(dtype)
    if dt in FLOATS:
        if isinstance(s, (int, np.integer)) and not isinstance(s, bool):
            s = float(int(s))          # exact below 2^53, which is all the suite uses
        s = float(s)
        if dt == F32:
            return np.float32(s)
        if dt == F16:
            with np.errstate(all="ignore"):
                return np.float16(s)   # numpy converts double -> half directly, nearest even
        # bf16: round to odd into f32 first, then nearest even: equals one rounding from double
        return f32_to_bf16(np.array([_double_to_f32_round_odd(s)], dtype=F32))[0]
    if isinstance(s, (float, np.floating)) and float(s).is_integer():
        s = int(s)                     # an integral float is that integer
    if isinstance(s, (float, np.floating)):
        raise NotImplementedError("float scalar with an integer tile is not modelled")
    w = dt.itemsize * 8
    v = int(s) % (1 << w)
    if dt.kind == "i" and v >= 1 << (w - 1):
        v -= 1 << w
    return np.array(v, dtype=dt)[()]


# ---------------------------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------------------------
def _float_compute(op: str, af: np.ndarray, bf: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        if op in ("add", "adds"):
            return af + bf
        if op == "sub":
            return af - bf
        if op in ("mul", "muls"):
            return af * bf
        if op == "div":
            return af / bf
        if op == "max":
            return np.maximum(af, bf)
        if op == "min":
            return np.minimum(af, bf)
    raise ValueError(op)


def _int_compute(op: str, a: np.ndarray, b: np.ndarray, dt: np.dtype) -> np.ndarray:
    # int64 (or uint64) arithmetic wraps modulo 2^64, which keeps the low w bits exact
    wide = np.uint64 if dt.kind == "u" else np.int64
    a64 = a.astype(wide)
    b64 = b.astype(wide)
    with np.errstate(all="ignore"):
        if op in ("add", "adds"):
            r = a64 + b64
        elif op == "sub":
            r = a64 - b64
        elif op in ("mul", "muls"):
            r = a64 * b64
        elif op == "max":
            r = np.maximum(a64, b64)
        elif op == "min":
            r = np.minimum(a64, b64)
        elif op == "div":
            raise NotImplementedError("integer TDIV has no documented semantics")
        else:
            raise ValueError(op)
    return r.astype(dt)                  # C-style narrowing: keeps the low bits (wrap)


def binary(op: str, a: np.ndarray, b: Any, dtype: Any = None, *, with_loose: bool = False):
    """Reference result of ``op`` (add sub mul div max min, or adds muls with a scalar ``b``).

    ``a`` and array ``b`` must already have the element type. Returns the result array (same
    shape, element type); with ``with_loose=True`` also a boolean mask of elements whose exact
    NaN bit pattern is unspecified (any NaN is correct there).
    """
    a = np.asarray(a)
    dt = np_dtype(dtype) if dtype is not None else a.dtype
    if op in SCALAR_OPS:
        b = np.full(a.shape, scalar_to(dt, b), dtype=dt)
    else:
        b = np.asarray(b)
        if b.dtype != dt or a.dtype != dt:
            raise TypeError(f"operands must be {dt}, got {a.dtype} and {b.dtype}")
    a = a.astype(dt, copy=False)
    loose = np.zeros(a.shape, dtype=bool)
    if dt not in FLOATS:
        out = _int_compute(op, a, b, dt)
        return (out, loose) if with_loose else out

    af = a.astype(F32)
    bf = b.astype(F32)
    out = _from_f32(_float_compute(op, af, bf), dt)
    # NaN bit patterns: one NaN operand -> that NaN, quieted; otherwise unspecified
    an, bn = np.isnan(af), np.isnan(bf)
    bits = out.view(bits_dtype(dt)).copy()
    q = bits.dtype.type(_QUIET[dt])
    abits = a.view(bits_dtype(dt))
    bbits = b.view(bits_dtype(dt))
    only_a = an & ~bn
    only_b = bn & ~an
    bits[only_a] = abits[only_a] | q
    bits[only_b] = bbits[only_b] | q
    out = bits.view(dt)
    loose = np.isnan(out.astype(F32)) & ~(only_a | only_b)
    if op in ("max", "min"):
        # max/min of +0 and -0: the ISA does not say which zero comes out (numpy returns the
        # second operand, C's `a > b ? a : b` too, IEEE 754-2019 maximum returns +0)
        loose |= (af == 0) & (bf == 0) & (np.signbit(af) != np.signbit(bf))
    return (out, loose) if with_loose else out


# ---------------------------------------------------------------------------------------------
# TLOAD / TSTORE (row-major ND tiles)
# ---------------------------------------------------------------------------------------------
PADS = ("null", "zero", "min", "max")


def pad_value(dtype: Any, pad: str) -> np.generic:
    """NPU pad value of section 3.6 / Addendum for PadZero, PadMin, PadMax."""
    dt = np_dtype(dtype)
    pad = pad.lower().removeprefix("pad")
    if pad not in ("zero", "min", "max"):
        raise ValueError(f"no pad value for {pad!r}")
    if pad == "zero" or dt in (I64, U64, E4M3, E5M2):
        return np.zeros((), dtype=dt)[()]
    if dt in FLOATS:
        return np.array(-np.inf if pad == "min" else np.inf, dtype=np.float32).astype(dt)[()] \
            if dt != BF16 else f32_to_bf16(np.array([-np.inf if pad == "min" else np.inf],
                                                    dtype=F32))[0]
    if dt.kind == "u":
        return np.array(0 if pad == "min" else np.iinfo(dt).max, dtype=dt)[()]
    if dt == I8 and pad == "min":
        return np.int8(-1)             # NPU PadValueMap: 0xff (the CPU simulator uses -128)
    info = np.iinfo(dt)
    return np.array(info.min if pad == "min" else info.max, dtype=dt)[()]


def tload(tile: np.ndarray, gm_block: np.ndarray, pad: str = "null") -> np.ndarray:
    """Tile contents after TLOAD of a 2-D GM block into a row-major ND tile.

    ``tile`` is the tile's full ``Rows x Cols`` contents before the load; ``gm_block`` is the
    ``validRow x validCol`` GM view. Returns the new full contents.
    """
    out = np.array(tile, copy=True)
    block = np.asarray(gm_block, dtype=out.dtype)
    vr, vc = block.shape
    rows, cols = out.shape
    if vr > rows or vc > cols:
        raise ValueError("GM block larger than the tile")
    out[:vr, :vc] = block
    pad = pad.lower().removeprefix("pad")
    if pad != "null":
        c0 = 32 // out.dtype.itemsize
        end = min(cols, -(-vc // c0) * c0)
        out[:vr, vc:end] = pad_value(out.dtype, pad)
    return out


def pad_columns(dtype: Any, valid_cols: int, tile_cols: int) -> range:
    """Columns TLOAD pads (for pad != null) in each copied row."""
    c0 = 32 // np_dtype(dtype).itemsize
    return range(valid_cols, min(tile_cols, -(-valid_cols // c0) * c0))


def tstore(gm: np.ndarray, tile: np.ndarray, valid: tuple[int, int], at: tuple[int, int] = (0, 0)
           ) -> np.ndarray:
    """GM contents after TSTORE of the tile's valid region at GM offset ``at`` (2-D)."""
    out = np.array(gm, copy=True)
    vr, vc = valid
    r0, c0 = at
    out[r0:r0 + vr, c0:c0 + vc] = np.asarray(tile)[:vr, :vc]
    return out


# ---------------------------------------------------------------------------------------------
# TEXP
# ---------------------------------------------------------------------------------------------
def _quieted_nans(out: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``out`` with every element whose input is NaN replaced by that NaN, quieted."""
    dt = out.dtype
    nan = np.isnan(x.astype(F32))
    if not nan.any():
        return out
    bits = out.view(bits_dtype(dt)).copy()
    bits[nan] = x.view(bits_dtype(dt))[nan] | bits.dtype.type(_QUIET[dt])
    return bits.view(dt)


def exp(x: np.ndarray, dtype: Any = None) -> np.ndarray:
    """TEXP reference: e**x from the exactly widened input in float64, rounded once (see header)."""
    x = np.asarray(x)
    dt = np_dtype(dtype) if dtype is not None else x.dtype
    if dt not in (F16, F32) or x.dtype != dt:
        raise TypeError(f"TEXP takes f16 or f32 operands of the element type, got {x.dtype}")
    with np.errstate(all="ignore"):
        wide = x.astype(np.float64).ravel()
    r = np.empty(wide.shape, dtype=np.float64)
    for i, v in enumerate(wide.tolist()):
        try:
            r[i] = math.exp(v)
        except OverflowError:
            r[i] = math.inf
    with np.errstate(all="ignore"):
        out = r.astype(dt).reshape(x.shape)   # float64 -> f32/f16: one round to nearest even
    return _quieted_nans(out, x)


# ---------------------------------------------------------------------------------------------
# TROWSUM
# ---------------------------------------------------------------------------------------------
REPEAT_BYTES = 256


def tree_sum_f32(v: np.ndarray) -> np.float32:
    """Pairwise float32 sum of one repeat: adjacent pairs per level, an odd last element carried
    up unchanged (appended at the end of the next level), until one value is left."""
    v = np.asarray(v, dtype=F32)
    if v.size == 0:
        raise ValueError("empty repeat")
    with np.errstate(all="ignore"):
        while v.size > 1:
            m = v.size // 2
            nxt = v[0:2 * m:2] + v[1:2 * m:2]          # float32 + float32: one RNE rounding
            v = np.concatenate([nxt, v[2 * m:]]) if v.size % 2 else nxt
    return v[0]


SOCS = ("a2a3", "a5")


def _rowsum_a2a3(row: np.ndarray, n: int, dt: np.dtype) -> np.ndarray:
    """a2a3 order for one row (float32 values of the element type): lanes first, then a tree."""
    v = row.size
    if v <= n:
        return _from_f32(np.array([tree_sum_f32(row)], dtype=F32), dt)
    full, rem = divmod(v, n)
    lanes = row[:n].copy()

    def fold(k: int, start: int) -> None:       # lanes[:k] = round_elem(lanes[:k] + row[start:])
        lanes[:k] = _from_f32(lanes[:k] + row[start:start + k], dt).astype(F32)

    if full >= 2:
        fold(n, n)
    if rem:
        fold(rem, full * n)                     # the tail goes in before repeats 2 .. F-1
    for i in range(2, full):
        fold(n, i * n)
    return _from_f32(np.array([tree_sum_f32(lanes)], dtype=F32), dt)


def _rowsum_a5(row: np.ndarray, n: int, dt: np.dtype) -> np.ndarray:
    """a5 order for one row: tree each repeat, add the repeat sums onto +0 in the element type."""
    acc = _from_f32(np.zeros(1, dtype=F32), dt)
    for j in range(0, row.size, n):
        part = _from_f32(np.array([tree_sum_f32(row[j:j + n])], dtype=F32), dt)
        acc = _from_f32(acc.astype(F32) + part.astype(F32), dt)
    return acc


def rowsum(src: np.ndarray, valid_rows: int | None = None, valid_cols: int | None = None,
           dtype: Any = None, *, soc: str = "a2a3", with_loose: bool = False):
    """TROWSUM reference on ``soc`` over the src valid region ``[:valid_rows, :valid_cols]`` (see
    the header for each SoC's order).

    Returns the ``valid_rows x 1`` column written to ``dst[:valid_rows, 0:1]``; when the valid
    region is empty nothing is written and the result has shape ``(0, 1)``. With
    ``with_loose=True`` also a mask of rows whose sum is a NaN of unspecified bit pattern.
    """
    src = np.asarray(src)
    dt = np_dtype(dtype) if dtype is not None else src.dtype
    if dt not in (F16, F32) or src.dtype != dt:
        raise TypeError(f"TROWSUM takes f16 or f32 tiles, got {src.dtype}")
    if soc not in SOCS:
        raise ValueError(f"unknown SoC {soc!r}")
    if src.ndim != 2:
        raise ValueError("TROWSUM takes a 2-D tile")
    vr = src.shape[0] if valid_rows is None else int(valid_rows)
    vc = src.shape[1] if valid_cols is None else int(valid_cols)
    if vr > src.shape[0] or vc > src.shape[1] or vr < 0 or vc < 0:
        raise ValueError("valid region larger than the tile")
    if vr == 0 or vc == 0:
        out = np.zeros((0, 1), dtype=dt)
        return (out, np.zeros((0, 1), dtype=bool)) if with_loose else out
    per = REPEAT_BYTES // dt.itemsize
    one_row = _rowsum_a5 if soc == "a5" else _rowsum_a2a3
    out = np.empty((vr, 1), dtype=dt)
    with np.errstate(all="ignore"):
        for i in range(vr):
            out[i, 0] = one_row(src[i, :vc].astype(F32), per, dt)[0]
    loose = np.isnan(out.astype(F32))
    return (out, loose) if with_loose else out


# ---------------------------------------------------------------------------------------------
# TCVT
# ---------------------------------------------------------------------------------------------
ROUND_MODES = ("CAST_NONE", "CAST_RINT", "CAST_ROUND", "CAST_FLOOR", "CAST_CEIL", "CAST_TRUNC",
               "CAST_ODD")                          # index = RoundMode enum value
SAT_MODES = ("ON", "OFF")                           # index = SaturationMode enum value
# the six pairs whose three-argument TCVT does not saturate (and whose sat a2a3 honours)
CVT_SAT_OFF_PAIRS = (("f16", "u8"), ("f16", "i8"), ("f32", "i16"), ("f16", "i16"),
                     ("i64", "i32"), ("i32", "i16"))


class _Fmt:
    """A binary floating-point format: precision p (significand bits with the implicit one),
    smallest normal exponent emin, largest finite value, mantissa field width, inf or not."""

    def __init__(self, p: int, emin: int, max_finite: float, has_inf: bool):
        self.p, self.emin, self.max, self.has_inf = p, emin, max_finite, has_inf
        self.mant = p - 1


_FMT = {
    F32: _Fmt(24, -126, float(np.finfo(np.float32).max), True),
    F16: _Fmt(11, -14, 65504.0, True),
    BF16: _Fmt(8, -126, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max), True),
    E4M3: _Fmt(4, -6, 448.0, False),
    E5M2: _Fmt(3, -14, 57344.0, True),
}
_SATURATING_FLOATS = (F16, BF16, E4M3, E5M2)      # float destinations that saturate (not f32)


def _mode_name(rmode: Any) -> str:
    if hasattr(rmode, "name") and not isinstance(rmode, str):
        rmode = rmode.name
    if isinstance(rmode, (int, np.integer)) and not isinstance(rmode, bool):
        return ROUND_MODES[int(rmode)]
    name = str(rmode).upper()
    name = name if name.startswith("CAST_") else "CAST_" + name
    if name not in ROUND_MODES:
        raise ValueError(f"unknown round mode {rmode!r}")
    return name


def _sat_name(sat: Any) -> str | None:
    if sat is None:
        return None
    if isinstance(sat, bool):
        return "ON" if sat else "OFF"
    if hasattr(sat, "name") and not isinstance(sat, str):
        sat = sat.name
    name = str(sat).upper()
    if name not in SAT_MODES:
        raise ValueError(f"unknown saturation mode {sat!r}")
    return name


def cast_rule(src_dtype: Any, dst_dtype: Any, soc: str = "a2a3", rmode: Any = "CAST_NONE",
              sat: Any = None) -> tuple[str | None, bool]:
    """What TCVT actually does for these arguments: ``(rounding, saturate)``.

    ``rounding`` is one of RINT ROUND FLOOR CEIL TRUNC ODD, or None when the instruction
    executes nothing (a5, CAST_ODD for a pair other than f32->f16). Raises ValueError for a pair
    that does not exist on ``soc``.
    """
    s, d = np_dtype(src_dtype), np_dtype(dst_dtype)
    pair = (SHORT[s], SHORT[d])
    if soc not in CVT_LEGAL:
        raise ValueError(f"unknown SoC {soc!r}")
    if pair not in CVT_LEGAL[soc]:
        raise ValueError(f"TCVT {pair[0]} -> {pair[1]} does not exist on {soc}")
    mode = _mode_name(rmode).removeprefix("CAST_")
    sat_name = _sat_name(sat)
    if mode == "ODD" and pair != ("f32", "f16"):
        if soc == "a5":
            return None, sat_name != "OFF"
        mode = "NONE"
    if mode == "NONE":
        mode = "TRUNC" if soc == "a2a3" and is_float(s) and not is_float(d) else "RINT"
    if soc == "a5" and d in (E4M3, E5M2):
        mode = "RINT"
    default_off = pair in CVT_SAT_OFF_PAIRS
    if soc == "a5" and d in (E4M3, E5M2):
        sat_name = None                   # no saturation control bit: the default (ON) applies
    if sat_name is None or (soc == "a2a3" and not default_off):
        saturate = not default_off
    else:
        saturate = sat_name == "ON"
    if soc == "a2a3" and pair == ("i32", "f16"):
        mode, saturate = "RINT", True
    return mode, saturate


def _round_shift(n: int, shift: int, mode: str, neg: bool) -> int:
    """Round the non-negative n / 2**shift to an integer (of the magnitude) per ``mode``;
    ``neg`` says the value being rounded is negative (matters for FLOOR / CEIL)."""
    if shift <= 0:
        return n << -shift
    q = n >> shift
    r = n - (q << shift)
    if r == 0:
        return q
    half = 1 << (shift - 1)
    if mode == "RINT":
        return q + (1 if r > half or (r == half and q & 1) else 0)
    if mode == "ROUND":
        return q + (1 if r >= half else 0)
    if mode == "TRUNC":
        return q
    if mode == "FLOOR":
        return q + (1 if neg else 0)
    if mode == "CEIL":
        return q + (0 if neg else 1)
    if mode == "ODD":
        return q | 1
    raise ValueError(mode)


def _round_to_format(n: int, k: int, neg: bool, fmt: _Fmt, mode: str) -> float:
    """Round the magnitude n / 2**k (n > 0) to ``fmt`` with unbounded exponent range; returns
    the magnitude as an exact Python float (it may exceed ``fmt.max``: the caller handles
    overflow)."""
    e = n.bit_length() - 1 - k                 # 2**e <= value < 2**(e+1)
    qe = max(e, fmt.emin) - fmt.mant           # exponent of one unit in the last place
    s = _round_shift(n, k + qe, mode, neg)
    return math.ldexp(s, qe)


def _overflow_to_inf(mode: str, neg: bool) -> bool:
    """IEEE: whether an overflowing result rounds to inf (else to the largest finite value)."""
    if mode in ("RINT", "ROUND"):
        return True
    if mode == "FLOOR":
        return neg
    if mode == "CEIL":
        return not neg
    return False                                # TRUNC, ODD


def _nan_bits(dst: np.dtype, neg: bool, src: np.dtype | None = None, src_bits: int = 0) -> int:
    """dst NaN bits: for a src NaN, its sign and top payload bits with the quiet bit set (e4m3
    has one NaN per sign and no quiet bit); without a src, the default quiet NaN of that sign."""
    dw = dst.itemsize * 8
    if dst == E4M3:
        return (int(neg) << 7) | 0x7F
    mant = _FMT[dst].mant
    payload = 0
    if src is not None and src != E4M3:
        smant = _FMT[src].mant
        payload = src_bits & ((1 << smant) - 1)
        payload = payload >> (smant - mant) if smant >= mant else payload << (mant - smant)
    exp_all = ((1 << (dw - 1 - mant)) - 1) << mant
    return (int(neg) << (dw - 1)) | exp_all | (1 << (mant - 1)) | payload


def _encode_float(v: float, dst: np.dtype) -> int:
    """Bits of an exactly representable value (or +-inf) in ``dst``."""
    arr = np.array([v], dtype=np.float64)
    with np.errstate(all="ignore"):
        out = arr.astype(dst)
    return int(out.view(bits_dtype(dst))[0])


def _wrap(q: int, dst: np.dtype) -> int:
    w = dst.itemsize * 8
    q %= 1 << w
    if dst.kind == "i" and q >= 1 << (w - 1):
        q -= 1 << w
    return q


def _cast_one(v: Any, sbits: int, src: np.dtype, dst: np.dtype, mode: str, saturate: bool,
              dequant_f16: bool) -> int:
    """One element ``v`` (bit pattern ``sbits``), exactly: the destination value for an integer
    dst, the destination's bit pattern for a float dst."""
    # --- decompose the exact source value: sign, magnitude n / 2**k, or a special
    special = None
    if is_float(src):
        with np.errstate(all="ignore"):
            f = float(np.array([v], dtype=src).astype(np.float64)[0])
        if math.isnan(f):
            special = "nan"
        elif math.isinf(f):
            special = "inf"
        neg = math.copysign(1.0, f) < 0
        if special is None:
            num, den = abs(f).as_integer_ratio()
            n, k = num, den.bit_length() - 1
    else:
        iv = int(v)
        neg, n, k = iv < 0, abs(iv), 0
    # --- integer destination
    if dst.kind in "iu":
        info = np.iinfo(dst)
        if special == "nan":
            return 0
        if special == "inf":
            if not saturate:
                return 0                  # wrap mode: +-inf -> 0
            return int(info.min) if neg else int(info.max)
        q = _round_shift(n, k, mode, neg)
        q = -q if neg else q
        if saturate:
            return max(int(info.min), min(int(info.max), q))
        return _wrap(q, dst)
    # --- float destination: return bit pattern
    fmt = _FMT[dst]
    sat_float = saturate and dst in _SATURATING_FLOATS
    sign = -1.0 if neg else 1.0
    if special == "nan":
        if sat_float:
            return _encode_float(0.0, dst)
        return _nan_bits(dst, bool(sbits >> (src.itemsize * 8 - 1)), src, sbits)
    if special == "inf":
        if sat_float:
            return _encode_float(sign * fmt.max, dst)
        return _encode_float(sign * math.inf, dst) if fmt.has_inf else _nan_bits(dst, neg)
    if n == 0:
        return _encode_float(sign * 0.0, dst)
    if src == F32 and dst == F32:                # round to an integral value
        q = _round_shift(n, k, mode, neg)
        return _encode_float(sign * float(q), dst)   # q == 0 keeps the sign: -0.0
    mag = _round_to_format(n, k, neg, fmt, mode)
    if mag > fmt.max:
        if sat_float or dequant_f16:
            mag = fmt.max
        elif _overflow_to_inf(mode, neg):
            if not fmt.has_inf:
                return _nan_bits(dst, neg)
            mag = math.inf
        else:
            mag = fmt.max
    return _encode_float(sign * mag, dst)


def cast(x: np.ndarray, src_dtype: Any, dst_dtype: Any, soc: str = "a2a3",
         rmode: Any = "CAST_NONE", sat: Any = None, *, prev: np.ndarray | None = None
         ) -> tuple[np.ndarray, np.ndarray]:
    """TCVT reference (see the header and ``cast_rule``): returns ``(result, untouched)``.

    ``x`` must have ``src_dtype``. ``rmode`` is a RoundMode name ("CAST_RINT" or "rint"), its
    enum value, or an enum object; ``sat`` None (the three-argument form), "ON"/"OFF", a bool or
    an enum object. ``untouched`` marks elements the instruction does not write (all of them for
    a5's CAST_ODD on a pair other than f32->f16); there the result holds ``prev`` (the dst's
    previous contents) when given, else zeros.
    """
    s, d = np_dtype(src_dtype), np_dtype(dst_dtype)
    x = np.asarray(x)
    if x.dtype != s:
        raise TypeError(f"operand must be {s}, got {x.dtype}")
    mode, saturate = cast_rule(s, d, soc, rmode, sat)
    if mode is None:
        out = np.zeros(x.shape, dtype=d) if prev is None else np.array(prev, dtype=d, copy=True)
        return out, np.ones(x.shape, dtype=bool)
    dequant = soc == "a2a3" and (s, d) == (I32, F16)
    flat = x.ravel()
    res = [_cast_one(v, int(b), s, d, mode, saturate, dequant)
           for v, b in zip(flat, flat.view(bits_dtype(s)).tolist())]
    if d.kind in "iu":
        out = np.array(res, dtype=np.int64 if d != U64 else np.uint64).astype(d)
    else:
        out = np.array(res, dtype=np.uint64).astype(bits_dtype(d)).view(d)
    return out.reshape(x.shape), np.zeros(x.shape, dtype=bool)


# The entry point of each instruction modelled here, by PTO name (conformance/references.py
# merges this with the families' ref_*.py maps). TASSIGN is a placement statement, not a
# computation: its conformance is the aliasing and address checks of the kernel suite.
REFERENCE = {"TADD": binary, "TSUB": binary, "TMUL": binary, "TDIV": binary, "TMAX": binary,
             "TMIN": binary, "TADDS": binary, "TMULS": binary, "TEXP": exp, "TROWSUM": rowsum,
             "TCVT": cast, "TASSIGN": None}     # TLOAD / TSTORE: conformance/ref_memory.py
