"""TPRINT (5.8): print a tile or a GM tensor view in the NPU's debug-print format.

Tile: a header ("=== [TPRINT Tile] Data Type: float32, Layout: ND, TileType: Vec ===", shape and
valid shape), then every element row by row (the NPU prints the whole tile), floats as ``%6.2f``
and integers as ``%6d`` of the value cast to int (64-bit values truncate, as the NPU's
static_cast<int>), one space apart, a '|' after the last valid column and a dashed row after the
last valid row. GM view: a header with the 5-D shape, then each (d0, d1, d2) batch of d3 rows of
d4 values (ND, DN); NZ prints the logical (d2*d3, d1*d4) matrix. NaN prints as C's printf does
("nan" / "-nan").

Both simulator modes print when the instruction runs: the numba code calls back into Python
(numba's objmode) and writes one string per TPRINT to ``sys.stdout``, so the output is in program
order within a block and a print is never torn; blocks on parallel threads may interleave whole
prints. Reference: conformance/ref_complex.py ``tprint`` (the expected text).
"""
from __future__ import annotations

import math
import sys

import numpy as np

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..ir.nodes import GmView, TileVar
from ..ir.registry import Unit, register

LOOPS = f"{__package__}.complex_print_lib"     # the numba loops: imported when a kernel is generated


# dtype code -> (name the NPU prints, numpy view of the stored bits)
DTYPES = (("float32", np.float32), ("float16", np.float16), ("int8", np.int8), ("uint8", np.uint8),
          ("int16", np.int16), ("uint16", np.uint16), ("int32", np.int32), ("uint32", np.uint32),
          ("unknown", np.int64), ("unknown", np.uint64))
CODES = {"f32": 0, "f16": 1, "i8": 2, "u8": 3, "i16": 4, "u16": 5, "i32": 6, "u32": 7, "i64": 8, "u64": 9}
LAYOUT_NAMES = ("ND", "DN", "Zz", "Nz", "Zn")
GM_LAYOUTS = ("ND", "DN", "NZ")


def fmt(v, code: int) -> str:
    """One value as the NPU's PrintValue formats it."""
    if code <= 1:
        x = float(v)
        if math.isnan(x):
            s = "-nan" if math.copysign(1.0, x) < 0 else "nan"
            return f"{s:>6}"
        return "%6.2f" % x
    i = int(v) & 0xFFFFFFFF
    return "%6d" % (i - (1 << 32) if i >= 1 << 31 else i)


def tile_text(values: np.ndarray, vr: int, vc: int, code: int, layout: str) -> str:
    """The NPU's TPRINT text of a tile whose logical contents are ``values`` (rows, cols)."""
    rows, cols = values.shape
    out = [f"=== [TPRINT Tile] Data Type: {DTYPES[code][0]}, Layout: {layout}, TileType: Vec ===\n",
           f"  Shape: [{rows}, {cols}], Valid Shape: [{vr}, {vc}]\n"]
    mark = 0 < vc < cols
    for i in range(rows):
        parts = []
        for j in range(cols):
            parts.append((" " if j else "") + fmt(values[i, j], code) + ("|" if mark and j == vc - 1 else ""))
        out.append("".join(parts) + "\n")
        if 0 < vr < rows and i == vr - 1:
            out.append("".join((" " if j else "") + "------" + ("|" if mark and j == vc - 1 else "")
                               for j in range(cols)) + "\n")
    return "".join(out)


def gm_text(flat: np.ndarray, shape, strides, code: int, layout: str) -> str:
    """The NPU's TPRINT text of a GM view (``flat``: the tensor's elements from the view's offset)."""
    n0, n1, n2, n3, n4 = shape
    s0, s1, s2, s3, s4 = strides
    out = [f"=== [TPRINT GlobalTensor] Data Type: {DTYPES[code][0]}, Layout: {layout} ===\n"]
    if layout == "NZ":
        rows, cols = n2 * n3, n1 * n4
        out.append(f"  Logical Shape: [{rows}, {cols}]\n")
        for r in range(rows):
            out.append(" ".join(fmt(flat[(r // n3) * s2 + (c // n4) * s1 + (r % n3) * s3 + (c % n4) * s4], code)
                                for c in range(cols)) + "\n")
        return "".join(out)
    out.append(f"  Shape: [{n0}, {n1}, {n2}, {n3}, {n4}]\n")
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                out.append(f"  Batch [{i0}, {i1}, {i2}]:\n")
                for r in range(n3):
                    base = i0 * s0 + i1 * s1 + i2 * s2 + r * s3
                    out.append(" ".join(fmt(flat[base + c * s4], code) for c in range(n4)) + "\n")
    return "".join(out)


def _print_tile(storage, vr, vc, lay, rows, cols, code, lcode):
    flat = np.asarray(storage).view(DTYPES[code][1])
    ir_, ic, brs, bcs, irs, ics = (int(x) for x in lay)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    idx = (r // ir_) * brs + (c // ic) * bcs + (r % ir_) * irs + (c % ic) * ics
    sys.stdout.write(tile_text(flat[idx], int(vr), int(vc), int(code), LAYOUT_NAMES[int(lcode)]))


def _print_gm(g, off, shape, strides, code, lcode):
    flat = np.asarray(g).view(DTYPES[code][1])[int(off):]
    sys.stdout.write(gm_text(flat, tuple(int(x) for x in shape), tuple(int(x) for x in strides),
                             int(code), GM_LAYOUTS[int(lcode)]))


def lower_tprint(node, soc) -> list[L.Call]:
    (x,) = node.operands
    if isinstance(x, TileVar):
        ty = x.type
        return [L.Call(L.Fn(LOOPS, "tprint_tile"),
                       (L.tile(x), L.lit(ty.rows), L.lit(ty.cols), L.lit(CODES[ty.dtype.short]),
                        L.lit(LAYOUT_NAMES.index(ty.layout_name)), L.err()))]
    assert isinstance(x, GmView)
    return L.bounds(x) + [L.Call(L.Fn(LOOPS, "tprint_gm"),
                                 L.view(x) + (L.lit(CODES[x.tensor.dtype.short]),
                                              L.lit(GM_LAYOUTS.index(x.layout)), L.err()))]


register(Unit("TPRINT", sim=lower_tprint, emit=E.call("TPRINT")))
