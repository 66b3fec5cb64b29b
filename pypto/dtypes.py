"""PTO element types and their numpy equivalents (bf16/fp8 through ml_dtypes).

``DType.storage`` is the numpy type the simulator keeps the raw bits in: numba has no
float16/bfloat16/fp8 arithmetic, so those live as unsigned integers and are widened to f32.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
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
    np: Any            # numpy / ml_dtypes dtype of host arrays
    storage: Any       # numpy dtype of the raw bits inside the simulator
    cxx: str           # pto-isa C++ spelling

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


def _d(name, short, size, kind, npt, storage, cxx):
    return DType(name, short, size, kind, np.dtype(npt), np.dtype(storage), cxx)


float16 = _d("float16", "f16", 2, "float", np.float16, np.uint16, "half")
bfloat16 = _d("bfloat16", "bf16", 2, "float", ml_dtypes.bfloat16, np.uint16, "bfloat16_t")
float32 = _d("float32", "f32", 4, "float", np.float32, np.float32, "float")
int8 = _d("int8", "i8", 1, "int", np.int8, np.int8, "int8_t")
uint8 = _d("uint8", "u8", 1, "uint", np.uint8, np.uint8, "uint8_t")
int16 = _d("int16", "i16", 2, "int", np.int16, np.int16, "int16_t")
uint16 = _d("uint16", "u16", 2, "uint", np.uint16, np.uint16, "uint16_t")
int32 = _d("int32", "i32", 4, "int", np.int32, np.int32, "int32_t")
uint32 = _d("uint32", "u32", 4, "uint", np.uint32, np.uint32, "uint32_t")
int64 = _d("int64", "i64", 8, "int", np.int64, np.int64, "int64_t")
uint64 = _d("uint64", "u64", 8, "uint", np.uint64, np.uint64, "uint64_t")
float8_e4m3 = _d("float8_e4m3", "e4m3", 1, "float", ml_dtypes.float8_e4m3fn, np.uint8, "float8_e4m3_t")
float8_e5m2 = _d("float8_e5m2", "e5m2", 1, "float", ml_dtypes.float8_e5m2, np.uint8, "float8_e5m2_t")

ALL: tuple[DType, ...] = (float16, bfloat16, float32, int8, uint8, int16, uint16, int32, uint32,
                          int64, uint64, float8_e4m3, float8_e5m2)
BY_NAME: dict[str, DType] = {d.name: d for d in ALL} | {d.short: d for d in ALL}
BY_NAME |= {"half": float16, "float": float32, "bf16": bfloat16, "fp16": float16, "fp32": float32}
_BY_NP: dict[np.dtype, DType] = {d.np: d for d in ALL}

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
    except TypeError:
        raise _reject(repr(x), context) from None
    d = _BY_NP.get(npd)
    if d is None:
        raise _reject(str(npd), context)
    return d


def for_host_array(arr: np.ndarray, context: str | None = None) -> DType:
    """The DType a numpy array keeps when no dtype is given (float64 is an error)."""
    return as_dtype(arr.dtype, context)
