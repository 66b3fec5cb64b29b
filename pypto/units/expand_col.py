"""TCOLEXPAND and TCOLEXPAND{ADD,SUB,MUL,DIV,MAX,MIN,EXPDIF} (5.4): one value per column (row 0
of the source), broadcast down the column, over dst's valid region. Every tile is ND.

* TCOLEXPAND(dst, src): dst[i, j] = src[0, j] (bit copy, every 1/2/4-byte type);
  src.validCol == dst.validCol (the NPU asserts it) and src has a valid row. a2a3 copies whole
  32-byte blocks, so the NPU also writes each dst row to the end of its last block; pypto writes
  only the valid region.
* TCOLEXPAND<op>(dst, src0, src1): dst[i, j] = op(src0[i, j], src1[0, j]), f16 / f32; src0 has
  dst's tile type (the C++ signature takes one type for both) and covers dst's valid region;
  src1's valid region covers (1, dst.validCol). Floats compute in f32 and round once (IEEE
  division by zero, NaN-propagating max/min); EXPDIF rounds src0 - v to the element type, then
  computes e**x in double and rounds once.
Reference: conformance/ref_reduce.py ``colexpand`` / ``colexpand_op``.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..errors import OperandError, ValidRegionError
from ..ir import guards as G
from ..ir.nodes import is_static
from ..ir.registry import Unit, register
from .reduce_rules import COLS, EXPAND_LOOPS, EXPAND_OPS, covers_row0, equal_valid, same_cols as g_cols

def _row0(name: str, slot: str, x, dst) -> None:
    """x (static parts) has a valid row covering dst's valid columns."""
    rows, cols = x.valid
    need_rows = is_static(dst.valid[0]) and dst.valid[0] > 0
    if (is_static(rows) and rows == 0 and need_rows) or \
            (is_static(cols) and is_static(dst.valid[1]) and cols < dst.valid[1]):
        raise ValidRegionError(f"{name}: {slot} {x.name} has a {rows} x {cols} valid region but dst "
                               f"{dst.name}'s columns need (1, {dst.valid[1]})",
                               rule=f"{name} reads {slot}'s row 0 for every dst column",
                               fix=f"give {x.name} a valid row of at least {dst.valid[1]} columns")


def check_colexpand(node, soc) -> None:
    dst, src = node.operands
    equal_valid(node.name, "src", src, dst, COLS, "one source value per dst column")
    _row0(node.name, "src", src, dst)


def lower_colexpand(node, soc) -> list[L.Call]:
    dst, src = node.operands
    return [L.Call(L.Fn(EXPAND_LOOPS, "colexpand"), (L.tile(dst), L.tile(src), L.err()))]


def guards_colexpand(node, soc) -> list:
    dst, src = node.operands
    return [g_cols(1, src, dst), covers_row0(1, src, dst)]


register(Unit("TCOLEXPAND", check=check_colexpand, sim=lower_colexpand, seed="colexpand",
              emit=E.call("TCOLEXPAND"), guards=guards_colexpand))


# -- the binops ------------------------------------------------------------------------------------

def check_colexpand_op(node, soc) -> None:
    name = node.name
    dst, src0, src1 = node.operands
    same = src0 is dst or (src0.type == dst.type and src0.dynamic == dst.dynamic and
                           (dst.dynamic or tuple(src0.valid) == tuple(dst.valid)))
    if not same:
        raise OperandError(f"{name}: src0 {src0.name} ({src0.type}, valid {src0.valid}) and dst "
                           f"{dst.name} ({dst.type}, valid {dst.valid}) are different tile types",
                           rule=f"{name}(dst, src0, src1) takes dst and src0 as one tile type (the "
                                "C++ signature): the same shape, element type, layout and valid "
                                "declaration (both pto.DYNAMIC, or the same static region)",
                           fix=f"declare {src0.name} like {dst.name}, or compute in place "
                               f"(pto.{name}({dst.name}, {dst.name}, {src1.name}))")
    _row0(name, "src1", src1, dst)


def lower_colexpand_op(node, soc) -> list[L.Call]:
    dst, src0, src1 = node.operands
    opc = EXPAND_OPS.index(node.name[len("TCOLEXPAND"):])
    return [L.Call(L.Fn(EXPAND_LOOPS, "colexpand_op"),
                   (L.tile(dst), L.tile(src0), L.tile(src1), L.lit(opc),
                    L.lit(dst.type.dtype.short == "f16"), L.err()))]


def guards_colexpand_op(node, soc) -> list:
    dst, src0, src1 = node.operands
    return [G.Guard("covers", (1, src0.valid[0], src0.valid[1], dst.valid[0], dst.valid[1])),
            covers_row0(2, src1, dst)]


for _op in EXPAND_OPS:
    _name = f"TCOLEXPAND{_op}"
    register(Unit(_name, check=check_colexpand_op, sim=lower_colexpand_op, seed="colexpand_op",
                  emit=E.call(_name), guards=guards_colexpand_op))
