"""PTO element types and their numpy equivalents (bf16/fp8 through ml_dtypes).

``DType.storage`` is the numpy type the simulator keeps the raw bits in: numba has no
float16/bfloat16/fp8 arithmetic, so those live as unsigned integers and are widened to f32.
ml_dtypes is imported when a bf16/fp8 host type is first needed: its import takes most of a
second, and a process that never touches those types should not pay it.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import DTypeError


@dataclass(frozen=True, eq=False)
class DType:
    """One PTO element type. Each exists once (the module-level constants), so equality is
    identity: cheap, which matters on every launch."""
    name: str          # pypto name: "float32"
    short: str         # PTO-AS mnemonic: "f32"
    itemsize: int      # bytes
    kind: str          # "float" | "int" | "uint"
    np_spec: Any       # numpy dtype of host arrays, or "ml:<name>" for an ml_dtypes type (see np)
    storage: Any       # numpy dtype of the raw bits inside the simulator
    cxx: str           # pto-isa C++ spelling
    lanes: int = 1     # values per element: 2 for the packed fp4 pairs (one byte, two values)
    coded: bool = False  # host arrays hold the bit codes (uint8), not values: hif8 and fp4

    @functools.cached_property
    def np(self) -> np.dtype:
        """The numpy (or ml_dtypes) dtype of host arrays of this type."""
        if isinstance(self.np_spec, str):
            import ml_dtypes
            return np.dtype(getattr(ml_dtypes, self.np_spec[3:]))
        return self.np_spec

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind in ("int", "float")

    @property
    def bits(self) -> int:
        return self.itemsize * 8

    def wrap(self, x: int) -> int:
        """An int converted to this integer type as a two's-complement cast does (keeps the low bits)."""
        m = 1 << self.bits
        x %= m
        return x - m if self.kind == "int" and x >= m // 2 else x

    def __repr__(self) -> str:
        return f"pypto.{self.name}"

    def __str__(self) -> str:
        return self.name


def _d(name, short, size, kind, npt, storage, cxx, lanes=1, coded=False):
    spec = npt if isinstance(npt, str) else np.dtype(npt)
    return DType(name, short, size, kind, spec, np.dtype(storage), cxx, lanes, coded or lanes > 1)


float16 = _d("float16", "f16", 2, "float", np.float16, np.uint16, "half")
bfloat16 = _d("bfloat16", "bf16", 2, "float", "ml:bfloat16", np.uint16, "bfloat16_t")
float32 = _d("float32", "f32", 4, "float", np.float32, np.float32, "float")
int8 = _d("int8", "i8", 1, "int", np.int8, np.int8, "int8_t")
uint8 = _d("uint8", "u8", 1, "uint", np.uint8, np.uint8, "uint8_t")
int16 = _d("int16", "i16", 2, "int", np.int16, np.int16, "int16_t")
uint16 = _d("uint16", "u16", 2, "uint", np.uint16, np.uint16, "uint16_t")
int32 = _d("int32", "i32", 4, "int", np.int32, np.int32, "int32_t")
uint32 = _d("uint32", "u32", 4, "uint", np.uint32, np.uint32, "uint32_t")
int64 = _d("int64", "i64", 8, "int", np.int64, np.int64, "int64_t")
uint64 = _d("uint64", "u64", 8, "uint", np.uint64, np.uint64, "uint64_t")
float8_e4m3 = _d("float8_e4m3", "e4m3", 1, "float", "ml:float8_e4m3fn", np.uint8, "float8_e4m3_t")
float8_e5m2 = _d("float8_e5m2", "e5m2", 1, "float", "ml:float8_e5m2", np.uint8, "float8_e5m2_t")
# a5's HiFloat8 (no numpy type exists): host arrays hold the codes as uint8; hif8_encode /
# hif8_decode convert values.
hifloat8 = _d("hifloat8", "hif8", 1, "float", np.uint8, np.uint8, "hifloat8_t", coded=True)
# a5's MX block scale: a byte s meaning 2**(s - 127) (0xFF is NaN; no sign, no zero).
float8_e8m0 = _d("float8_e8m0", "e8m0", 1, "float", "ml:float8_e8m0fnu", np.uint8, "float8_e8m0_t")

# a5's 4-bit floats, two per byte (low nibble first): an element is one byte holding a pair.
# Host arrays hold the packed bytes as uint8 (pack_fp4 / unpack_fp4 convert values).
float4_e2m1x2 = _d("float4_e2m1x2", "fp4e2m1x2", 1, "float", np.uint8, np.uint8, "float4_e2m1x2_t", 2)
float4_e1m2x2 = _d("float4_e1m2x2", "fp4e1m2x2", 1, "float", np.uint8, np.uint8, "float4_e1m2x2_t", 2)

ALL: tuple[DType, ...] = (float16, bfloat16, float32, int8, uint8, int16, uint16, int32, uint32,
                          int64, uint64, float8_e4m3, float8_e5m2, hifloat8, float8_e8m0, float4_e2m1x2,
                          float4_e1m2x2)
PACKED: tuple[DType, ...] = tuple(d for d in ALL if d.lanes > 1)
BY_NAME: dict[str, DType] = {d.name: d for d in ALL} | {d.short: d for d in ALL}
BY_NAME |= {"half": float16, "float": float32, "bf16": bfloat16, "fp16": float16, "fp32": float32}
_BY_NP: dict[np.dtype, DType] = {d.np_spec: d for d in ALL
                                  if not d.coded and not isinstance(d.np_spec, str)}


def from_numpy(npd: np.dtype) -> DType | None:
    """The DType of a host array's dtype, None if it has none. An ml_dtypes dtype (its module
    is loaded, since the caller holds one) fills in the ml_dtypes entries first."""
    d = _BY_NP.get(npd)
    if d is None and getattr(npd.type, "__module__", "").startswith("ml_dtypes"):
        _BY_NP.update({x.np: x for x in ALL if not x.coded and isinstance(x.np_spec, str)})
        d = _BY_NP.get(npd)
    return d

LEGAL_NAMES = ", ".join(d.name for d in ALL)


def _reject(what: str, context: str | None) -> DTypeError:
    ctx = f" for {context}" if context else ""
    fix = "use dtype=pypto.float32 (or another PTO type)"
    if what in ("float64", "double", "<class 'float'>"):
        fix = "convert with dtype=pypto.float32, e.g. pypto.Tensor(arr, dtype=pypto.float32) or arr.astype(np.float32)"
    elif what == "None":
        fix = "pass an element type, e.g. dtype=pypto.float32"
    return DTypeError(f"{what} is not a PTO element type{ctx}",
                      rule=f"PTO element types are: {LEGAL_NAMES}", fix=fix)


def as_dtype(x: Any, context: str | None = None) -> DType:
    """Normalise a pypto DType, numpy dtype/type, or name to a DType; float64 and friends are errors."""
    if isinstance(x, DType):
        return x
    if x is None:                  # np.dtype(None) would silently mean float64
        raise _reject("None", context)
    if isinstance(x, str):
        d = BY_NAME.get(x)
        if d is None:
            raise _reject(x, context)
        return d
    try:
        npd = np.dtype(x)
    except Exception:      # noqa: BLE001 - np.dtype raises TypeError, ValueError, SyntaxError, ...
        raise _reject(repr(x), context) from None
    d = from_numpy(npd)
    if d is None:
        raise _reject(str(npd), context)
    return d


def for_host_array(arr: np.ndarray, context: str | None = None) -> DType:
    """The DType a numpy array keeps when no dtype is given (float64 is an error)."""
    return as_dtype(arr.dtype, context)


# -- the packed fp4 formats -------------------------------------------------------------------
# The 16 values of each 4-bit code (sign, exponent, mantissa; no inf or NaN): e2m1 has bias 1
# (0, 0.5, 1, 1.5, 2, 3, 4, 6), e1m2 bias 1 with a 2-bit mantissa (0, 0.25, ..., 1.75).
def _fp4_table(ebits: int, mbits: int) -> np.ndarray:
    vals = []
    for code in range(16):
        sign = -1.0 if code & 8 else 1.0
        e = (code >> mbits) & ((1 << ebits) - 1)
        m = code & ((1 << mbits) - 1)
        v = (m / (1 << mbits)) if e == 0 else (1 + m / (1 << mbits)) * 2.0 ** (e - 1)
        vals.append(sign * v)
    return np.array(vals, np.float64)


FP4_VALUES = {"float4_e2m1x2": _fp4_table(2, 1), "float4_e1m2x2": _fp4_table(1, 2)}


def _fp4_codes(values: np.ndarray, fmt: str) -> np.ndarray:
    """Nearest fp4 code of each value (ties to the even code; saturating; NaN is an error)."""
    table = FP4_VALUES[fmt]
    v = np.asarray(values, np.float64)
    if np.isnan(v).any():
        raise DTypeError(f"pack_fp4: NaN has no {fmt} code", rule=f"{fmt} has no NaN or infinity",
                         fix="replace NaNs before packing")
    pos = table[:8]                                   # 0 .. max, ascending
    mag = np.minimum(np.abs(v), pos[-1])
    idx = np.searchsorted(pos, mag)                   # first >= mag
    lo = np.clip(idx - 1, 0, 7)
    hi = np.clip(idx, 0, 7)
    dlo, dhi = mag - pos[lo], pos[hi] - mag
    pick = np.where((dhi < dlo) | ((dhi == dlo) & (hi % 2 == 0)), hi, lo)
    return (pick | np.where(np.signbit(v), 8, 0)).astype(np.uint8)


def pack_fp4(values: Any, dtype: Any = "float4_e2m1x2") -> np.ndarray:
    """Values (an even number along the last axis) -> packed bytes (uint8, last axis halved),
    element 2k in the low nibble of byte k, for a pypto.float4_e2m1x2 / float4_e1m2x2 tensor."""
    dt = as_dtype(dtype, context="pack_fp4")
    if dt.lanes != 2:
        raise DTypeError(f"pack_fp4: {dt.name} is not a packed fp4 type",
                         rule="pack_fp4 packs float4_e2m1x2 or float4_e1m2x2", fix="pass one of them")
    v = np.asarray(values, np.float64)
    if v.ndim == 0 or v.shape[-1] % 2:
        raise DTypeError(f"pack_fp4: the last axis has {v.shape[-1] if v.ndim else 0} values",
                         rule="two fp4 values make one byte", fix="pass an even number of values")
    codes = _fp4_codes(v, dt.name)
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)


def unpack_fp4(packed: Any, dtype: Any = "float4_e2m1x2") -> np.ndarray:
    """Packed bytes -> their values as float32 (last axis doubled); the inverse of pack_fp4."""
    dt = as_dtype(dtype, context="unpack_fp4")
    b = np.asarray(packed, np.uint8)
    table = FP4_VALUES[dt.name].astype(np.float32)
    out = np.empty(b.shape[:-1] + (2 * b.shape[-1],) if b.ndim else (2,), np.float32)
    out[..., 0::2] = table[b & 15]
    out[..., 1::2] = table[b >> 4]
    return out


# -- HiFloat8 ---------------------------------------------------------------------------------
# Sign bit, then a prefix-coded "dot" field giving the exponent width D, the exponent (D bits,
# sign-magnitude with an implicit leading 1 in the magnitude), then the mantissa. Per class:
# (first payload code, D, mantissa bits). Payloads 1..7 are the denormals 2**(p - 23); 0x00 is
# the only zero, 0x80 the only NaN, 0x6F / 0xEF are +-inf, so the largest finite is 2**15.
HIF8_CLASSES = ((0x60, 4, 1), (0x40, 3, 2), (0x20, 2, 3), (0x10, 1, 3), (0x08, 0, 3))
HIF8_NAN, HIF8_INF, HIF8_MAX = 0x80, 0x6F, 0x6E


def _hif8_payload_value(p: int) -> float:
    if p == HIF8_INF:
        return float("inf")
    if p < 0x08:
        return 0.0 if p == 0 else 2.0 ** (p - 23)
    first, d, m = next(c for c in HIF8_CLASSES if p >= c[0])
    field = (p >> m) & ((1 << d) - 1)
    e = 0
    if d:
        mag = (1 << (d - 1)) | (field & ((1 << (d - 1)) - 1))
        e = -mag if field >> (d - 1) else mag
    return (1.0 + (p & ((1 << m) - 1)) / (1 << m)) * 2.0 ** e


HIF8_VALUES = np.array([_hif8_payload_value(c & 0x7F) * (-1.0 if c & 0x80 else 1.0) for c in range(256)])
HIF8_VALUES[HIF8_NAN] = np.nan
_HIF8_POS = np.argsort(HIF8_VALUES[:0x80])            # the 128 positive codes by value (inf last)
_HIF8_SLOTS = HIF8_VALUES[_HIF8_POS]
_HIF8_SLOTS[-1] = 1.5 * 2.0 ** 15                      # inf's code sits where 1.5 * 2**15 would


def hif8_decode(codes: Any) -> np.ndarray:
    """HiFloat8 codes (uint8) -> their values as float32 (exact; 0x80 is NaN)."""
    return HIF8_VALUES.astype(np.float32)[np.asarray(codes, np.uint8)]


def hif8_encode(values: Any, saturate: bool = False) -> np.ndarray:
    """Values -> the nearest HiFloat8 codes (uint8), ties away from zero as a5's TCVT rounds.

    Without ``saturate``: magnitudes from 1.25 * 2**15 up and inf give +-inf, NaN gives 0x80; with
    it they give +-2**15 and NaN gives 0 (what TCVT f32 -> hif8 stores on a5). -0 and magnitudes
    below 2**-23 give 0x00.
    """
    v = np.asarray(values, np.float64)
    mag = np.abs(v)
    hi = np.clip(np.searchsorted(_HIF8_SLOTS, mag), 1, len(_HIF8_SLOTS) - 1)
    with np.errstate(invalid="ignore"):
        up = _HIF8_SLOTS[hi] - mag <= mag - _HIF8_SLOTS[hi - 1]
    code = _HIF8_POS[np.where(up, hi, hi - 1)].astype(np.uint8)
    if saturate:
        code = np.where(code == HIF8_INF, HIF8_MAX, code).astype(np.uint8)
    code = np.where((code != 0) & np.signbit(v), code | 0x80, code).astype(np.uint8)
    nan = np.isnan(v)
    return np.where(nan, 0 if saturate else HIF8_NAN, code).astype(np.uint8)


def quant_scale(scale: float) -> int:
    """The u64 quantisation word for the fixpipe (TSTORE/TMOV/TEXTRACT/TINSERT preQuantScalar, and
    each element of a Scaling tile) that multiplies by ``scale``: the float32's bits in the low
    32 bits (pypto's reading of the hardware-defined format; docs/isa-reference.md, TSTORE)."""
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, (int, float, np.integer, np.floating)):
        raise DTypeError(f"quant_scale({scale!r}): the scale is a number, not {type(scale).__name__}",
                         rule="the quantisation word holds one float32 multiplier",
                         fix="pass a float, e.g. pypto.quant_scale(0.5)")
    try:
        wide = float(scale)
        huge = False
    except OverflowError:                        # an int beyond float64
        wide, huge = 0.0, True
    with np.errstate(over="ignore"):
        word = np.array([wide], np.float64).astype(np.float32)
    if huge or (np.isinf(word[0]) and np.isfinite(wide)):
        raise DTypeError(f"quant_scale({scale!r}): the scale overflows float32",
                         rule="the quantisation word holds one float32 multiplier",
                         fix="pass a scale within float32's range (|scale| < 3.4e38)")
    return int(word.view(np.uint32)[0])
