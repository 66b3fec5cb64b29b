"""TROWEXPAND and TROWEXPAND{ADD,SUB,MUL,DIV,MAX,MIN,EXPDIF} (5.4, 5.9 n10): one value per row,
broadcast along the row, over dst's valid region.

* TROWEXPAND(dst, src): dst[i, j] = src[i, 0] (bit copy, every 1/2/4-byte type). src.validRow ==
  dst.validRow; src is ND or a DN column (Cols == 1); a5 requires a static src.validCol of 1.
  a2a3's code moves 8-bit types as 16-bit pairs (dst[i, j] = src[i, j % 2]): pypto gives the ISA's
  src[i, 0] (see the table notes).
* TROWEXPAND<op>(dst, src0, src1): dst[i, j] = op(src0[i, j], v), f16 / f32; src0's valid region
  equals dst's (the NPU's swapped form, vector in src0, is not modelled) and src1.validRow ==
  dst.validRow. src1 forms (NPU, both SoCs): a DN column (Cols == validCol == 1): v = src1[i, 0];
  or an ND tile of one 32-byte block per row (Cols == validCol == c0 = 32 / sizeof(T)): v =
  src1[i, j % c0] (a pre-broadcast block gives src1[i, 0]). Floats compute in f32 and round once
  (IEEE division by zero, NaN-propagating max/min); EXPDIF rounds src0 - v to the element type,
  then computes e**x in double and rounds once.
a2a3 uses the hidden UB scratch for the column-vector form (declared in the table).
Reference: conformance/ref_reduce.py ``rowexpand`` / ``rowexpand_op``.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..errors import LayoutError
from ..ir import guards as G
from ..ir.registry import Unit, register
from .reduce_rules import (COLS, EXPAND_LOOPS, EXPAND_OPS, ROWS, c0, column_vector, equal_valid,
                           fixed_valid, same_cols, same_rows as g_rows)

def check_rowexpand(node, soc) -> None:
    dst, src = node.operands
    column_vector(node.name, "src", src, "src holds one value per row: ND, or a DN (R, 1) column")
    if soc.name == "a5":
        fixed_valid(node.name, "src", src, COLS, 1, "a5 reads src column 0 and requires a static "
                                                    "src.validCol of 1 (or a dynamic one)")
    equal_valid(node.name, "src", src, dst, ROWS, "one source value per dst row")


def lower_rowexpand(node, soc) -> list[L.Call]:
    dst, src = node.operands
    return [L.Call(L.Fn(EXPAND_LOOPS, "rowexpand"), (L.tile(dst), L.tile(src), L.err()))]


register(Unit("TROWEXPAND", check=check_rowexpand, sim=lower_rowexpand, seed="rowexpand",
              emit=E.call("TROWEXPAND"), guards=G.same_rows))


# -- the binops ------------------------------------------------------------------------------------

def src1_width(node) -> int:
    """1 for a DN column-vector src1, c0 for an ND src1 of one 32-byte block per row."""
    src1 = node.operands[2]
    return 1 if src1.type.layout_name == "DN" else c0(src1)


def check_rowexpand_op(node, soc) -> None:
    name = node.name
    dst, src0, src1 = node.operands
    for axis in (ROWS, COLS):
        equal_valid(name, "src0", src0, dst, axis, "src0 is the full tile: its valid region is dst's")
    column_vector(name, "src1", src1, "a DN src1 is a column vector: one value per row")
    w = c0(src1)
    if src1.type.layout_name == "ND" and src1.type.cols != w:
        raise LayoutError(f"{name}: src1 {src1.name} is an ND tile with {src1.type.cols} columns",
                          rule=f"{name}: an ND src1 holds one 32-byte block per row ({w} "
                               f"{src1.type.dtype.name} values, all the row's value); the NPU reads "
                               f"row i's block at element i * {w}",
                          fix=f"declare {src1.name} with shape ({src1.type.rows}, {w}), or use a DN "
                              f"({src1.type.rows}, 1) column vector")
    width = src1_width(node)
    fixed_valid(name, "src1", src1, COLS, width,
                "src1 is a column vector (validCol 1) or one 32-byte block per row (validCol "
                f"{w})")
    equal_valid(name, "src1", src1, dst, ROWS, "src1 holds one value per dst row")


def lower_rowexpand_op(node, soc) -> list[L.Call]:
    dst, src0, src1 = node.operands
    opc = EXPAND_OPS.index(node.name[len("TROWEXPAND"):])
    return [L.Call(L.Fn(EXPAND_LOOPS, "rowexpand_op"),
                   (L.tile(dst), L.tile(src0), L.tile(src1), L.lit(opc), L.lit(src1_width(node)),
                    L.lit(dst.type.dtype.short == "f16"), L.err()))]


def guards_rowexpand_op(node, soc) -> list:
    dst, src0, src1 = node.operands
    return [g_rows(1, src0, dst), same_cols(1, src0, dst), g_rows(2, src1, dst),
            G.Guard("same_cols", (2, src1.valid[1], src1_width(node)))]


for _op in EXPAND_OPS:
    _name = f"TROWEXPAND{_op}"
    register(Unit(_name, check=check_rowexpand_op, sim=lower_rowexpand_op, seed="rowexpand_op",
                  emit=E.call(_name), guards=guards_rowexpand_op))
