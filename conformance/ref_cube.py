"""Numpy reference of the matrix (cube) path (pto-isa-semantics 3.3, 3.4, 4.4, 6), following the
NPU. Imports nothing of pypto (numpy and ml_dtypes only).

* Storage order of the boxed layouts (``storage_offset``, the 3.3 table written out): inner boxes
  of 16 x c0 (SLayout RowMajor), c0 x 16 (ColMajor) or 16 x 16 (1024-byte Acc fractals).
* TMATMUL family (``matmul``): C[i, j] = sum_k A[i, k] B[k, j] for i < m, j < n, summed exactly
  (float64 for floats; Python ints for i8, the result wrapped to i32); TMATMUL_ACC adds the old
  C, TMATMUL_BIAS adds bias[j]; a2a3 with m == 1 (not TGEMV) writes 16 rows.
* The fixpipe (``fixpipe``): ReLU, then value * scale, then the destination type: integers round
  half to even and saturate; floats round to nearest even (IEEE; f16 via numpy, bf16 via
  ml_dtypes from the f32 accumulator).
* MX forms (``mx_scaled`` then ``matmul``): each operand value times 2^(e - 127) of its e8m0
  scale, one per 32 K elements (aScale[i, k // 32], bScale[k // 32, j]).
* Packed fp4 operands (``fp4_values``): one byte holds two values along K, low nibble first; e2m1
  decodes through ml_dtypes, e1m2 through its eight magnitudes (0, 0.25, ..., 1.75).
* Tolerance of a float accumulation (``tolerance``): |C - ref| <= 2 k eps32 sum_k |A B| + tiny.
"""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

_FRACTAL_ROWS = 16


def inner_box(layout: str, itemsize: int, fractal: int = 512) -> tuple[int, int]:
    """(InnerRows, InnerCols) of a layout (3.1)."""
    c0 = 32 // itemsize
    if layout in ("ND", "DN"):
        return 1, 1
    if fractal == 1024:
        return 16, 16
    if fractal == 32:                       # MX scales: GM's MX_A_ZZ / MX_B_NN boxes
        return (16, 2) if layout == "Zz" else (2, 16)
    return (16, c0) if layout in ("Zz", "Nz") else (c0, 16)


def storage_offset(layout: str, rows: int, cols: int, itemsize: int, r: int, c: int,
                   fractal: int = 512) -> int:
    """Storage index of logical (r, c) in a rows x cols tile of ``layout`` (3.3)."""
    if layout == "ND":
        return r * cols + c
    if layout == "DN":
        return c * rows + r
    ir_, ic = inner_box(layout, itemsize, fractal)
    br, irr, bc, icc = r // ir_, r % ir_, c // ic, c % ic
    n = ir_ * ic
    if layout == "Nz":
        return bc * (rows * ic) + br * n + irr * ic + icc
    if layout == "Zn":
        return br * (cols * ir_) + bc * n + icc * ir_ + irr
    if layout == "Zz":
        return br * (cols * ir_) + bc * n + irr * ic + icc
    if layout == "Nn":
        return bc * (rows * ic) + br * n + icc * ir_ + irr
    raise ValueError(layout)


def storage(logical: np.ndarray, layout: str, fractal: int = 512) -> np.ndarray:
    """The flat storage array of a tile whose logical contents are ``logical``."""
    rows, cols = logical.shape
    out = np.zeros(rows * cols, logical.dtype)
    for r in range(rows):
        for c in range(cols):
            out[storage_offset(layout, rows, cols, logical.dtype.itemsize, r, c, fractal)] = logical[r, c]
    return out


def matmul(a: np.ndarray, b: np.ndarray, m: int, k: int, n: int, *, acc: np.ndarray | None = None,
           bias: np.ndarray | None = None, rows_written: int | None = None, integer: bool = False) -> np.ndarray:
    """The accumulator's new rows (rows_written or m) x n contents: exact sums (float64, or
    Python ints wrapped to int32)."""
    rows = rows_written or m
    if integer:
        x = a[:rows, :k].astype(object)
        y = b[:k, :n].astype(object)
        s = x.dot(y)
        if acc is not None:
            s = s + acc[:rows, :n].astype(object)
        if bias is not None:
            s = s + bias[:n].astype(object)[None, :]
        wrapped = [[((int(v) + 2 ** 31) % 2 ** 32) - 2 ** 31 for v in row] for row in s]
        return np.array(wrapped, np.int64).reshape(rows, n).astype(np.int32)
    s = a[:rows, :k].astype(np.float64) @ b[:k, :n].astype(np.float64)
    if acc is not None:
        s = s + acc[:rows, :n].astype(np.float64)
    if bias is not None:
        s = s + bias[:n].astype(np.float64)[None, :]
    return s


def mx_scaled(x: np.ndarray, scales: np.ndarray, along_rows: bool) -> np.ndarray:
    """An MX operand's values times 2^(e - 127) of its e8m0 scale bytes (255 is NaN), one scale per
    32 K elements: A's (i, k) takes scales[i, k // 32] (along_rows False), B's (k, j)
    scales[k // 32, j] (along_rows True)."""
    e = scales.astype(np.int64)
    f = np.where(e == 255, np.nan, np.ldexp(1.0, e - 127))
    f = np.repeat(f, 32, axis=0 if along_rows else 1)
    return x.astype(np.float64) * (f[:x.shape[0]] if along_rows else f[:, :x.shape[1]])


_E1M2 = np.array([0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75])


def fp4_values(codes: np.ndarray, fmt: str) -> np.ndarray:
    """The values of 4-bit codes (0..15, sign in bit 3) of fp4 format "e2m1" or "e1m2"."""
    c = np.asarray(codes, np.uint8)
    if fmt == "e2m1":
        return c.view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    return np.where(c & 8, -1.0, 1.0) * _E1M2[c & 7]


def pack_pairs(codes: np.ndarray) -> np.ndarray:
    """4-bit codes (an even number along the last axis) -> bytes, code 2q in byte q's low nibble."""
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)


def tolerance(a: np.ndarray, b: np.ndarray, m: int, k: int, n: int, extra: np.ndarray | None = None) -> np.ndarray:
    """The bound a float32 accumulation of k products (any order) stays within."""
    mag = np.abs(a[:m, :k].astype(np.float64)) @ np.abs(b[:k, :n].astype(np.float64))
    if extra is not None:
        mag = mag + np.abs(extra)
    return 2 * (k + 2) * float(np.finfo(np.float32).eps) * mag + 1e-30


_INT = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "i32": np.int32}


def fixpipe(values: np.ndarray, dst: str, relu: bool = False, scale: Any = None) -> np.ndarray:
    """Accumulator values (f32 or i32) as they leave L0C for a ``dst`` tensor or tile."""
    v = values.astype(np.float64)
    if relu:
        v = np.where(v < 0, 0.0, v)
    if scale is not None:
        v = v * np.asarray(scale, np.float64)
    if dst in _INT:
        info = np.iinfo(_INT[dst])
        return np.clip(np.rint(v), info.min, info.max).astype(_INT[dst])
    if dst == "f16":
        return v.astype(np.float16)
    if dst == "bf16":
        return v.astype(np.float32).astype(ml_dtypes.bfloat16)
    return v.astype(np.float32)


def quant_word(scale: float) -> int:
    """The u64 whose low 32 bits are the f32 scale (pypto's reading of preQuantScalar)."""
    return int(np.array([scale], np.float32).view(np.uint32)[0])


REFERENCE = {name: matmul for name in ("TMATMUL", "TMATMUL_ACC", "TMATMUL_BIAS", "TGEMV", "TGEMV_ACC",
                                    "TGEMV_BIAS")}
REFERENCE.update({"TMATMUL_MX": mx_scaled, "TGEMV_MX": mx_scaled})   # then matmul
REFERENCE.update({name: fixpipe for name in ("TMOV_FP", "TEXTRACT_FP", "TINSERT_FP", "TSTORE_FP")})

__all__ = ["inner_box", "storage_offset", "storage", "matmul", "mx_scaled", "tolerance", "fixpipe", "quant_word",
           "REFERENCE"]
