"""Moves into and out of the cube (6.5): TMOV, TEXTRACT, TINSERT between Mat, Left, Right, Bias,
Scaling, ScaleLeft/ScaleRight, Acc and (a5) Vec tiles, and TMOV_FP / TEXTRACT_FP / TINSERT_FP.

* Mat -> Left/Right/ScaleLeft/ScaleRight (MTE1): same dtype, copied element by element into dst's
  own layout (Left Zz on a2a3, Nz on a5; Right Zn). TMOV copies the whole tile (equal Rows/Cols);
  TEXTRACT the dst-shaped window at (indexRow, indexCol) of src, which must lie inside src's
  Rows x Cols (the NPU moves whole fractals; valid regions are not consulted).
* Mat -> Bias (TMOV): one row, i32 -> i32, f32 -> f32 or f16 -> f32, Cols * sizeof(dst) % 64 == 0.
  Mat -> Scaling (TMOV): one row of u64, Cols * 8 % 128 == 0. a5 Vec -> Mat: same dtype.
* Acc -> Mat, and Acc -> Vec on a5 (FIX): the fixpipe's conversion (units/fixpipe.py) with ReLU
  and scalar (preQuantScalar) or vector (fp Scaling tile) quantisation. TMOV moves src's valid
  region to (0, 0); TEXTRACT dst's valid region from (indexRow, indexCol) of src; TINSERT src's
  valid region to (indexRow, indexCol) of dst. dst is Nz (512-byte fractals) on a2a3; ND, DN or
  Nz on a5. accToVecMode (which vector core receives the data) is accepted and has no effect in a
  one-core-at-a-time simulator.
"""
from __future__ import annotations

from ..backends.sim import lowering as L
from ..errors import DTypeError, IndexRangeError, LayoutError, LocationError, TileShapeError
from ..ir.nodes import TileVar, is_runtime
from ..ir.registry import Unit, register
from . import fixpipe as FX
from .cube_matmul import require_layout
from .move_common import require_fp4_axis

_ROLE = {"Left": "a", "Right": "b", "ScaleLeft": "aScale", "ScaleRight": "bScale"}
_BIAS = FX.pairs("i32>i32 f32>f32 f16>f32")


def split(node) -> tuple[TileVar, TileVar, object, TileVar | None, object, object]:
    """(dst, src, preQuantScalar or None, fp tile or None, indexRow, indexCol) of any form."""
    ops = node.operands
    dst, src, rest = ops[0], ops[1], list(ops[2:])
    fp = rest.pop(0) if node.name.endswith("_FP") else None
    scalar = None
    if node.name.startswith("TMOV"):
        scalar = rest[0] if rest else None
        rest = []
    elif node.name.startswith("TINSERT") and len(rest) == 3 or \
            node.name.startswith("TEXTRACT") and not node.name.endswith("_FP") and len(rest) == 3:
        scalar = rest.pop(0)
    r0, c0 = (list(rest) + [0, 0])[:2]
    return dst, src, scalar, fp, r0, c0


def pair(node) -> tuple[str, str]:
    dst, src = node.operands[:2]
    return src.type.loc, dst.type.loc


def _same_dtype(node, dst, src) -> None:
    if dst.type.dtype is not src.type.dtype:
        raise DTypeError(f"{node.name}: dst {dst.name} is {dst.type.dtype.name} but src {src.name} is "
                         f"{src.type.dtype.name}",
                         rule=f"{node.name} from {src.type.loc} to {dst.type.loc} copies one dtype",
                         fix="load the data in the dtype the cube needs")


def _window(node, what: str, off, inner: int, outer: int, outer_name: str) -> None:
    if not is_runtime(off) and (off < 0 or off + inner > outer):
        raise IndexRangeError(f"{node.name}: {what} = {off} puts the {inner}-wide window outside "
                              f"the {outer} of {outer_name}",
                              rule=f"{node.name}'s window lies inside {outer_name}: {what} in 0 .. "
                                   f"{outer - inner}", fix=f"keep {what} in 0 .. {outer - inner}")


def _row_tile(node, t: TileVar, unit_bytes: int, what: str) -> None:
    ty = t.type
    if ty.rows != 1 or ty.layout_name != "ND" or (ty.cols * ty.dtype.itemsize) % unit_bytes:
        raise TileShapeError(f"{node.name}: {what} {t.name} is a {ty.layout_name} {ty.rows} x {ty.cols} "
                             f"{ty.dtype.name} tile",
                             rule=f"a {ty.loc} tile is one ND row of a multiple of {unit_bytes} bytes "
                                  "(pto-isa-semantics 6.5)",
                             fix=f"declare it with shape (1, n), n * {ty.dtype.itemsize} a multiple of "
                                 f"{unit_bytes}")


def check(node, soc) -> None:
    """Static rules of a cube-side move (everything but Vec -> Vec)."""
    dst, src, scalar, fp, r0, c0 = split(node)
    s, d = pair(node)
    if s == "Mat" and d in _ROLE:
        _same_dtype(node, dst, src)
        require_layout(node, soc, _ROLE[d], dst)
        if dst.type.dtype.lanes > 1:
            require_fp4_axis(node, f"dst {dst.name}", dst.type.contiguous_axis, f"src {src.name}",
                             src.type.contiguous_axis)
        if node.name == "TMOV" and (dst.type.rows, dst.type.cols) != (src.type.rows, src.type.cols):
            raise TileShapeError(f"TMOV: dst {dst.name} is {dst.type.rows} x {dst.type.cols} but src "
                                 f"{src.name} is {src.type.rows} x {src.type.cols}",
                                 rule="TMOV Mat -> Left/Right copies equal Rows and Cols",
                                 fix="use TEXTRACT for a window")
        if node.name == "TEXTRACT":
            _window(node, "indexRow", r0, dst.type.rows, src.type.rows, f"src {src.name}'s rows")
            _window(node, "indexCol", c0, dst.type.cols, src.type.cols, f"src {src.name}'s columns")
        return
    if s == "Mat" and d == "Bias":
        _row_tile(node, dst, 64, "dst")
        if (src.type.dtype.short, dst.type.dtype.short) not in _BIAS:
            raise DTypeError(f"TMOV: Mat {src.type.dtype.name} -> Bias {dst.type.dtype.name}",
                             rule="TMOV Mat -> Bias moves i32 -> i32, f32 -> f32 or f16 -> f32",
                             fix="load the bias as float32 (or float16)")
        if src.type.rows != 1 or src.type.layout_name != "ND" or src.type.cols < dst.type.cols:
            raise TileShapeError(f"TMOV: src {src.name} is not one ND row of {dst.type.cols} elements",
                                 rule="the bias comes from a 1-row ND Mat tile",
                                 fix=f"declare src as pto.Tile(pto.Mat, dtype, (1, {dst.type.cols}))")
        return
    if s == "Mat" and d == "Scaling":
        _row_tile(node, dst, 128, "dst")
        _same_dtype(node, dst, src)
        return
    if s == "Vec" and d == "Mat":
        if soc.name != "a5":
            raise LocationError(f"{node.name}: Vec -> Mat on {soc.name}",
                                rule="only a5 moves Vec tiles to L1", fix="use soc='a5'")
        _same_dtype(node, dst, src)
        if dst.type.dtype.lanes > 1:
            require_fp4_axis(node, f"dst {dst.name}", dst.type.contiguous_axis, f"src {src.name}",
                             src.type.contiguous_axis)
        return
    if s == "Acc" and d in ("Mat", "Vec"):
        if d == "Vec" and soc.name != "a5":
            raise LocationError(f"{node.name}: Acc -> Vec on {soc.name}",
                                rule="only a5's fixpipe writes L0C data to UB; a2a3 goes through GM "
                                     "(TSTORE, then TLOAD)", fix="TSTORE the Acc tile and TLOAD it")
        quant = "vector" if fp is not None else ("scalar" if scalar is not None else "none")
        if scalar is not None:
            FX.check_scalar(node, scalar)
        FX.check_pair(node, soc, "tile", quant, src, dst.type.dtype, f"{d} {dst.name}")
        lay = dst.type.layout_name
        ok = (lay == "Nz" and dst.type.fractal == 512) if soc.name == "a2a3" else \
            (lay in ("ND", "DN") or (lay == "Nz" and dst.type.fractal == 512))
        if not ok:
            legal = "Nz" if soc.name == "a2a3" else "ND, DN or Nz"
            raise LayoutError(f"{node.name}: dst {dst.name} is {lay}",
                              rule=f"on {soc.name} the fixpipe writes {d} tiles {legal} (512-byte "
                                   "fractals)",
                              fix="declare dst pto.Tile(pto.Mat, dtype, shape, blayout=pto.ColMajor, "
                                  "slayout=pto.RowMajor)")
        if (dst.type.cols * dst.type.dtype.itemsize) % 32:
            raise TileShapeError(f"{node.name}: dst {dst.name} rows are {dst.type.cols * dst.type.dtype.itemsize} "
                                 "bytes", rule="Cols * sizeof(dst) % 32 == 0 for fixpipe moves",
                                 fix="widen dst")
        if node.name.startswith("TINSERT"):
            _window(node, "indexRow", r0, src.type.rows, dst.type.rows, f"dst {dst.name}'s rows")
            _window(node, "indexCol", c0, src.type.cols, dst.type.cols, f"dst {dst.name}'s columns")
        return
    raise LocationError(f"{node.name}: no path from {s} to {d}",
                        rule="the cube's moves: Mat -> Left/Right/Bias/Scaling/ScaleLeft/ScaleRight, "
                             "Acc -> Mat (a5 also Acc -> Vec and Vec -> Mat) (pto-isa-semantics 6.5)",
                        fix="move through Mat (L1), or through GM")


def lower(node, soc) -> list[L.Call]:
    dst, src, scalar, fp, r0, c0 = split(node)
    s, d = pair(node)
    limits = (L.lit(src.type.rows), L.lit(src.type.cols), L.lit(dst.type.rows), L.lit(dst.type.cols))
    if s == "Acc" or (s, d) == ("Mat", "Bias") and src.type.dtype is not dst.type.dtype:
        if (s, d) == ("Mat", "Bias"):
            (rows, cols), so, do = (1, dst.type.cols), (0, 0), (0, 0)
        elif node.name.startswith("TEXTRACT"):             # dst's valid region, from (r0, c0)
            (rows, cols), so, do = dst.valid, (r0, c0), (0, 0)
        else:                                              # src's valid region, to (0, 0) / (r0, c0)
            (rows, cols), so, do = src.valid, (0, 0), (r0, c0)
        conv = FX.args(src, dst.type.dtype, FX.relu_of(node), scalar, fp)
        return [L.Call(L.lib("cube.convert_window"),
                       (L.tile(dst), L.tile(src), ("int", rows), ("int", cols), ("int", so[0]),
                        ("int", so[1]), ("int", do[0]), ("int", do[1])) + limits + conv + (L.err(),))]
    if node.name == "TEXTRACT" and d != "Mat":
        rows, cols, so, do = dst.type.rows, dst.type.cols, (r0, c0), (0, 0)
    elif node.name == "TMOV" and d != "Mat":
        rows, cols, so, do = dst.type.rows, dst.type.cols, (0, 0), (0, 0)
    elif node.name == "TEXTRACT":                           # a5 Vec -> Mat
        rows, cols, so, do = dst.valid[0], dst.valid[1], (r0, c0), (0, 0)
    else:
        rows, cols, so, do = src.valid[0], src.valid[1], (0, 0), (0, 0)
    return [L.Call(L.lib("cube.copy_window"),
                   (L.tile(dst), L.tile(src), ("int", rows), ("int", cols), ("int", so[0]), ("int", so[1]),
                    ("int", do[0]), ("int", do[1])) + limits + (L.err(),))]


def emit_fp(node, soc, cx) -> str:
    ops = ", ".join(cx.operand(o) if isinstance(o, TileVar) else f"(uint16_t)({cx.expr(o)})"
                    for o in node.operands)
    return f"{node.name}({ops});"


for _name in ("TMOV_FP", "TEXTRACT_FP", "TINSERT_FP"):
    register(Unit(_name, check=check, sim=lower, emit=emit_fp))
