"""Numpy reference of the axis reductions and broadcasts (pto-isa-semantics 5.4, 5.9 n9 and n10,
the Addendum's "Reductions"), following the **NPU** per SoC. No pypto code: numpy, ml_dtypes and
the dtype / rounding helpers of ``conformance/reference.py`` only. TROWSUM is
``reference.rowsum``.

Arithmetic. Floats (f32, f16, bf16): every single op (+, *, max, min) is computed in float32 on the
exactly widened operands and rounded once to the element type (round to nearest even, overflow to
inf, subnormals kept), as the NPU's vector ops do. Integers wrap modulo 2^w (sums and products of
wrapping integers do not depend on the order). Results whose bit pattern the ISA leaves open are
marked "loose" (``with_loose=True`` returns the mask): a NaN result (any NaN is accepted), and
for max/min a zero result where both +0 and -0 took part (either zero is accepted).

Rules, per instruction (r_i: source row i, c_j: source column j; "op" rounds as above):

* Every reduction works on the **source** valid region; an empty one (no rows or no columns)
  writes nothing (pypto's choice; the NPU asserts a non-empty region in debug builds).
* TROWPROD. a2a3: 32-byte lanes (8 f32, 16 f16) start at 1; block b multiplies lane k by
  c_{b*8+k} (the partial last block only its first lanes); then the lanes are multiplied left to
  right in float32 (the scalar unit: each product rounded to f32) and the result rounded once to
  the element type. a5: 256-byte lanes (64 f32, 128 f16) start at 1; repeat j multiplies lane k by
  c_{j*n+k}; then the lanes fold in halves, lane i = lane i * lane i + L/2 for L = n, n/2, ..., 2
  (each product rounded to the element type); the result is lane 0.
* TROWMAX / TROWMIN. a2a3: the max / min of the row's elements (a row of -inf gives -inf). a5:
  the max / min of the start value -M / +M and the elements, M the largest finite value (FLT_MAX,
  65504 for f16): a row of -inf gives -M in TROWMAX (TROWMIN mirrors it). A NaN element makes the
  result NaN.
* TCOLSUM, TCOLPROD, TCOLMAX, TCOLMIN write dst[0, j]. a2a3 (and TCOLSUM with isBinary=False):
  r0 op r1 op r2 ... left to right. a5: r0 op (r1 op r2) op (r3 op r4) ..., and op r_last when
  the row count is even. TCOLSUM isBinary=True: a2a3: t[i] = r[2i] + r[2i+1] for i < n/2, an odd
  last row added to t[0] (t[0] = t[0] + r[n-1]); then, with cnt = n/2, while cnt > 1: t[i] =
  t[2i] + t[2i+1] for i < cnt/2, an odd cnt adding t[cnt-1] into t[0], cnt = cnt/2. a5: t[i] =
  r[2i] + r[2i+1], an odd last row added to the last one (t[n/2-1] = r[n-1] + t[n/2-1]); then
  floor(log2(n/2)) rounds of: odd = cnt % 2, cnt = cnt/2, t[j] = t[2j] + t[2j+1] for j < cnt,
  and if odd t[cnt-1] = t[cnt-1] + t[2*cnt]. The result is t[0]; one row gives r0 (on a5 the NPU
  reads outside tmp there: pypto's choice). An f16 column [2048, 1, 1, 1] gives 2048, 2050
  (a2a3), 2052, 2050 (a5). -0.0 columns stay -0.0 (no +0 start value).
* TROWEXPAND: dst[i, j] = src[i, 0] (bits copied) over dst's valid region. TCOLEXPAND:
  dst[i, j] = src[0, j].
* TROWEXPAND<op>: dst[i, j] = op(src0[i, j], v) with v = src1[i, 0] (column-vector src1) or
  src1[i, j % c0] (an ND src1 of one 32-byte block per row, c0 = 32 / itemsize). TCOLEXPAND<op>:
  v = src1[0, j]. ADD SUB MUL DIV MAX MIN follow ``reference.binary`` (IEEE division by zero,
  NaN propagation with the one-NaN payload rule, +-0 looseness of max/min); EXPDIF is
  ``reference.exp(reference.binary("sub", src0, v))``: the difference is rounded to the element
  type first, then e**x is rounded once from double.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import reference as ref

F32, F16, BF16 = ref.F32, ref.F16, ref.BF16
SOCS = ("a2a3", "a5")
MAX_FINITE = {F32: float(np.finfo(np.float32).max), F16: 65504.0}

# legal element types per SoC (section 5.4 and the implementations' checks), written here
# independently of pypto's table
_ROW = ("f16", "f32")
_COL_A2A3 = ("f16", "f32", "i16", "i32")
_COL_A5 = ("f16", "f32", "i16", "i32", "i8", "u8", "u16", "u32", "bf16")
_EXPAND = ("i8", "u8", "i16", "u16", "i32", "u32", "f16", "bf16", "f32")
LEGAL = {
    "rowprod": {"a2a3": _ROW, "a5": _ROW}, "rowmax": {"a2a3": _ROW, "a5": _ROW},
    "rowmin": {"a2a3": _ROW, "a5": _ROW},
    "colsum": {"a2a3": _COL_A2A3, "a5": _COL_A5},
    "colprod": {"a2a3": _COL_A2A3, "a5": ("f16", "f32", "bf16", "i16", "u16", "i32", "u32")},
    "colmax": {"a2a3": _COL_A2A3, "a5": _COL_A5}, "colmin": {"a2a3": _COL_A2A3, "a5": _COL_A5},
    "rowexpand": {"a2a3": _EXPAND, "a5": _EXPAND}, "colexpand": {"a2a3": _EXPAND, "a5": _EXPAND},
    "rowexpand_op": {"a2a3": _ROW, "a5": _ROW}, "colexpand_op": {"a2a3": _ROW, "a5": _ROW},
}
EXPAND_OPS = ("add", "sub", "mul", "div", "max", "min", "expdif")


def is_legal(what: str, dtype: Any, soc: str) -> bool:
    return ref.SHORT[ref.np_dtype(dtype)] in LEGAL[what][soc]


# ---------------------------------------------------------------------------------------------
# float arithmetic: f32 compute, one rounding to the element type
# ---------------------------------------------------------------------------------------------
def _round(v: np.ndarray, dt: np.dtype) -> np.ndarray:
    """float32 values rounded to dt and widened back to float32."""
    with np.errstate(all="ignore"):
        return ref._from_f32(np.asarray(v, dtype=F32), dt).astype(F32)


def _fop(kind: str, a: np.ndarray, b: np.ndarray, dt: np.dtype) -> np.ndarray:
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    with np.errstate(all="ignore"):
        r = {"sum": lambda: a + b, "prod": lambda: a * b,
             "max": lambda: np.maximum(a, b), "min": lambda: np.minimum(a, b)}[kind]()
    return _round(r, dt)


def _check(src: np.ndarray, vr: int | None, vc: int | None, kinds: tuple, what: str):
    src = np.asarray(src)
    if src.ndim != 2:
        raise ValueError(f"{what} takes a 2-D tile")
    if ref.SHORT.get(src.dtype) not in kinds:
        raise TypeError(f"{what}: element type {src.dtype} is not one of {kinds}")
    vr = src.shape[0] if vr is None else int(vr)
    vc = src.shape[1] if vc is None else int(vc)
    if not (0 <= vr <= src.shape[0] and 0 <= vc <= src.shape[1]):
        raise ValueError("valid region larger than the tile")
    return src, vr, vc


def _zero_mix(values: np.ndarray, axis: int) -> np.ndarray:
    """Whether +0 and -0 both occur along ``axis`` (max/min of them: either zero)."""
    v = values.astype(F32)
    z = v == 0
    return np.any(z & np.signbit(v), axis=axis) & np.any(z & ~np.signbit(v), axis=axis)


def _loose(out: np.ndarray, values: np.ndarray, axis: int, minmax: bool) -> np.ndarray:
    o = out.astype(F32)
    loose = np.isnan(o)
    if minmax:
        loose |= (o == 0) & _zero_mix(values, axis).reshape(o.shape)
    return loose


# ---------------------------------------------------------------------------------------------
# row reductions (f16, f32)
# ---------------------------------------------------------------------------------------------
def _rowprod_one(row: np.ndarray, dt: np.dtype, soc: str) -> np.float32:
    if soc == "a2a3":
        n = 32 // dt.itemsize
        lanes = np.ones(n, F32)
        for j0 in range(0, row.size, n):
            m = min(n, row.size - j0)
            lanes[:m] = _fop("prod", lanes[:m], row[j0:j0 + m], dt)
        p = np.float32(lanes[0])
        with np.errstate(all="ignore"):
            for k in range(1, n):
                p = np.float32(p * lanes[k])               # scalar unit: f32 products
        return _round(np.array([p]), dt)[0]
    n = 256 // dt.itemsize
    lanes = np.ones(n, F32)
    for j0 in range(0, row.size, n):
        m = min(n, row.size - j0)
        lanes[:m] = _fop("prod", lanes[:m], row[j0:j0 + m], dt)
    while lanes.size > 1:
        h = lanes.size // 2
        lanes = _fop("prod", lanes[:h], lanes[h:], dt)
    return lanes[0]


def _row_reduce(kind: str, src, vr, vc, soc: str, with_loose: bool):
    if soc not in SOCS:
        raise ValueError(f"unknown SoC {soc!r}")
    src, vr, vc = _check(src, vr, vc, _ROW, f"row{kind}")
    dt = src.dtype
    if vr == 0 or vc == 0:
        out = np.zeros((0, 1), dt)
        return (out, np.zeros((0, 1), bool)) if with_loose else out
    region = src[:vr, :vc].astype(F32)
    res = np.empty(vr, F32)
    for i in range(vr):
        row = region[i]
        if kind == "prod":
            res[i] = _rowprod_one(row, dt, soc)
            continue
        acc = row
        if soc == "a5":                                   # start value -M / +M
            m = MAX_FINITE[dt]
            acc = np.concatenate([[-m if kind == "max" else m], row]).astype(F32)
        res[i] = np.nan if np.isnan(acc).any() else (acc.max() if kind == "max" else acc.min())
    out = ref._from_f32(res, dt).reshape(vr, 1)
    loose = _loose(out, region, 1, kind != "prod")
    return (out, loose) if with_loose else out


def rowprod(src, valid_rows=None, valid_cols=None, *, soc="a2a3", with_loose=False):
    """TROWPROD over ``src[:valid_rows, :valid_cols]``: the (valid_rows, 1) column written."""
    return _row_reduce("prod", src, valid_rows, valid_cols, soc, with_loose)


def rowmax(src, valid_rows=None, valid_cols=None, *, soc="a2a3", with_loose=False):
    """TROWMAX (see the header: a5 starts from -max finite)."""
    return _row_reduce("max", src, valid_rows, valid_cols, soc, with_loose)


def rowmin(src, valid_rows=None, valid_cols=None, *, soc="a2a3", with_loose=False):
    """TROWMIN (a5 starts from +max finite)."""
    return _row_reduce("min", src, valid_rows, valid_cols, soc, with_loose)


# ---------------------------------------------------------------------------------------------
# column reductions
# ---------------------------------------------------------------------------------------------
def _pairs_a2a3(r: list, dt) -> np.ndarray:
    n = len(r)
    t = [_fop("sum", r[2 * i], r[2 * i + 1], dt) for i in range(n // 2)]
    if n % 2:
        t[0] = _fop("sum", t[0], r[n - 1], dt)
    cnt = n // 2
    while cnt > 1:
        for i in range(cnt // 2):
            t[i] = _fop("sum", t[2 * i], t[2 * i + 1], dt)
        if cnt % 2:
            t[0] = _fop("sum", t[0], t[cnt - 1], dt)
        cnt //= 2
    return t[0]


def _pairs_a5(r: list, dt) -> np.ndarray:
    n = len(r)
    cnt = n // 2
    t = [_fop("sum", r[2 * i], r[2 * i + 1], dt) for i in range(cnt)]
    if n % 2:
        t[cnt - 1] = _fop("sum", r[n - 1], t[cnt - 1], dt)
    for _ in range(int(cnt).bit_length() - 1):        # floor(log2(cnt)) rounds
        odd, cnt = cnt % 2, cnt // 2
        for j in range(cnt):
            t[j] = _fop("sum", t[2 * j], t[2 * j + 1], dt)
        if odd:
            t[cnt - 1] = _fop("sum", t[cnt - 1], t[2 * cnt], dt)
    return t[0]


def _col_float(kind: str, region: np.ndarray, dt, soc: str, binary: bool) -> np.ndarray:
    rows = [region[i] for i in range(region.shape[0])]          # float32 rows
    n = len(rows)
    if n == 1:
        return rows[0]
    if binary:
        return _pairs_a5(rows, dt) if soc == "a5" else _pairs_a2a3(rows, dt)
    acc = rows[0]
    if soc == "a5":
        for j in range((n - 1) // 2):
            acc = _fop(kind, acc, _fop(kind, rows[2 * j + 1], rows[2 * j + 2], dt), dt)
        if (n - 1) % 2:
            acc = _fop(kind, acc, rows[n - 1], dt)
        return acc
    for i in range(1, n):
        acc = _fop(kind, acc, rows[i], dt)
    return acc


def _col_int(kind: str, region: np.ndarray, dt: np.dtype) -> np.ndarray:
    w = dt.itemsize * 8
    out = []
    for col in region.T.tolist():                               # Python ints
        if kind == "sum":
            v = sum(col)
        elif kind == "prod":
            v = functools.reduce(lambda a, b: (a * b) % (1 << w), col, 1)
        else:
            v = max(col) if kind == "max" else min(col)
        out.append(ref._wrap(int(v), dt))
    return np.array(out, dtype=dt)


def _col_reduce(kind: str, src, vr, vc, soc: str, binary: bool, with_loose: bool):
    if soc not in SOCS:
        raise ValueError(f"unknown SoC {soc!r}")
    src, vr, vc = _check(src, vr, vc, LEGAL["col" + kind][soc], f"col{kind} on {soc}")
    dt = src.dtype
    if vr == 0 or vc == 0:
        out = np.zeros((1, 0), dt)
        return (out, np.zeros((1, 0), bool)) if with_loose else out
    region = src[:vr, :vc]
    if dt in ref.FLOATS:
        out = ref._from_f32(_col_float(kind, region.astype(F32), dt, soc, binary), dt).reshape(1, vc)
        loose = _loose(out, region, 0, kind in ("max", "min"))
    else:
        out = _col_int(kind, region, dt).reshape(1, vc)
        loose = np.zeros(out.shape, bool)
    return (out, loose) if with_loose else out


def colsum(src, valid_rows=None, valid_cols=None, *, soc="a2a3", is_binary=False, with_loose=False):
    """TCOLSUM over ``src[:valid_rows, :valid_cols]``: the (1, valid_cols) row written to dst."""
    return _col_reduce("sum", src, valid_rows, valid_cols, soc, bool(is_binary), with_loose)


def colprod(src, valid_rows=None, valid_cols=None, *, soc="a2a3", with_loose=False):
    return _col_reduce("prod", src, valid_rows, valid_cols, soc, False, with_loose)


def colmax(src, valid_rows=None, valid_cols=None, *, soc="a2a3", with_loose=False):
    return _col_reduce("max", src, valid_rows, valid_cols, soc, False, with_loose)


def colmin(src, valid_rows=None, valid_cols=None, *, soc="a2a3", with_loose=False):
    return _col_reduce("min", src, valid_rows, valid_cols, soc, False, with_loose)


# ---------------------------------------------------------------------------------------------
# broadcasts
# ---------------------------------------------------------------------------------------------
def rowexpand(src, valid_rows: int, valid_cols: int) -> np.ndarray:
    """TROWEXPAND: the (valid_rows, valid_cols) region of dst, src[i, 0] in every column."""
    src = np.asarray(src)
    return np.repeat(src[:valid_rows, 0:1], valid_cols, axis=1)


def colexpand(src, valid_rows: int, valid_cols: int) -> np.ndarray:
    """TCOLEXPAND: the (valid_rows, valid_cols) region of dst, src[0, j] in every row."""
    src = np.asarray(src)
    return np.repeat(src[0:1, :valid_cols], valid_rows, axis=0)


def _apply(op: str, a: np.ndarray, v: np.ndarray, with_loose: bool):
    if op == "expdif":
        d, loose = ref.binary("sub", a, v, with_loose=True)
        out = ref.exp(d)
    else:
        out, loose = ref.binary(op, a, v, with_loose=True)
    return (out, loose) if with_loose else out


def rowexpand_op(op: str, src0, src1, valid_rows: int, valid_cols: int, *, block: bool = False,
                 with_loose: bool = False):
    """TROWEXPAND<op>: the (valid_rows, valid_cols) region of dst. ``block``: src1 holds one
    32-byte block per row (element (i, j) uses src1[i, j % c0]); else src1[i, 0]."""
    src0, src1 = np.asarray(src0), np.asarray(src1)
    if op not in EXPAND_OPS:
        raise ValueError(op)
    a = src0[:valid_rows, :valid_cols]
    if block:
        c0 = 32 // src1.dtype.itemsize
        v = src1[:valid_rows, np.arange(valid_cols) % c0]
    else:
        v = np.repeat(src1[:valid_rows, 0:1], valid_cols, axis=1)
    return _apply(op, a, v.astype(a.dtype), with_loose)


def colexpand_op(op: str, src0, src1, valid_rows: int, valid_cols: int, *, with_loose: bool = False):
    """TCOLEXPAND<op>: the (valid_rows, valid_cols) region of dst, v = src1[0, j]."""
    src0, src1 = np.asarray(src0), np.asarray(src1)
    if op not in EXPAND_OPS:
        raise ValueError(op)
    a = src0[:valid_rows, :valid_cols]
    v = np.repeat(src1[0:1, :valid_cols], valid_rows, axis=0)
    return _apply(op, a, v.astype(a.dtype), with_loose)


REFERENCE = {"TROWPROD": rowprod, "TROWMAX": rowmax, "TROWMIN": rowmin,
             "TCOLSUM": colsum, "TCOLPROD": colprod, "TCOLMAX": colmax, "TCOLMIN": colmin,
             "TROWEXPAND": rowexpand, "TCOLEXPAND": colexpand}
REFERENCE.update({f"TROWEXPAND{op.upper()}": functools.partial(rowexpand_op, op) for op in EXPAND_OPS})
REFERENCE.update({f"TCOLEXPAND{op.upper()}": functools.partial(colexpand_op, op) for op in EXPAND_OPS})
