"""Numpy reference semantics for the PTO instructions pypto implements so far.

Written from ``pto-isa-semantics.md`` (sections 3.6, 4.2, 4.3, 5.2, 5.3, 5.9 and the Addendum),
following the **NPU** wherever the NPU and pto-isa's C++ CPU simulator differ. It deliberately
shares no code with pypto: it imports only numpy and ml_dtypes, and accepts pypto's ``DType``
objects by duck typing (anything with an ``.np`` attribute), numpy dtypes, or names
("float32", "f32", "bf16", ...).

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
"""
from __future__ import annotations

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
}
BINARY_OPS = ("add", "sub", "mul", "div", "max", "min")
SCALAR_OPS = ("adds", "muls")
PTO_NAME = {"add": "TADD", "sub": "TSUB", "mul": "TMUL", "div": "TDIV", "max": "TMAX",
            "min": "TMIN", "adds": "TADDS", "muls": "TMULS"}


def is_legal(op: str, dtype: Any, soc: str = "a2a3") -> bool:
    return SHORT[np_dtype(dtype)] in LEGAL[op][soc]


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
