"""TFILLPAD, TFILLPAD_INPLACE, TFILLPAD_EXPAND (5.7, 5.9 n14): pad a Vec tile around src's valid
region with dst's PadValue.

The NPU's rule (a2a3 and a5 code): rows r < src.validRow get dst[r, c] = src[r, c] for c <
src.validCol (TFILLPAD_INPLACE copies nothing) and the pad value for src.validCol <= c < dst.Cols;
rows src.validRow <= r < dst.validRow are padded across all dst.Cols; every other element keeps
its contents. a2a3 does nothing when dst's valid region is empty. dst's valid region does not
change (pypto's statement of what the NPU does: an instruction never changes a valid region).
Pad values are TLOAD's (units/memory.py PAD_MIN_MAX). Reference: conformance/ref_memory.py.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..errors import LayoutError, TileError, TileShapeError
from ..ir.registry import Unit, register
from .memory import pad_value
from .move_common import MOVES, require_vec_pair


def check_fillpad(node, soc) -> None:
    dst, src = node.operands
    d, s = dst.type, src.type
    if d.loc == "Mat" or s.loc == "Mat":
        return                      # the matrix path: refused when the kernel is lowered
    for t in (dst, src):
        if t.type.layout_name != "ND":
            raise LayoutError(f"{node.name}: tile {t.name} is {t.type.layout_name}",
                              rule=f"{node.name} pads Vec tiles row by row: ND tiles only (the NPU "
                                   "addresses rows at Cols)",
                              fix=f"declare {t.name} ND (blayout=pto.RowMajor, no slayout)")
    if d.pad == "Null":
        raise TileError(f"{node.name}: dst {dst.name} has pad=PadNull",
                        rule=f"{node.name} writes dst's PadValue, which must not be Null",
                        fix=f"declare {dst.name} with pad=pto.PadZero, pto.PadMin or pto.PadMax")
    if node.name == "TFILLPAD_EXPAND":
        if d.rows < s.rows or d.cols < s.cols:
            raise TileShapeError(f"TFILLPAD_EXPAND: dst {dst.name} is {d.rows} x {d.cols}, smaller than "
                                 f"src {src.name} ({s.rows} x {s.cols})",
                                 rule="TFILLPAD_EXPAND needs dst.Rows >= src.Rows and dst.Cols >= src.Cols",
                                 fix="declare a larger dst")
    elif (d.rows, d.cols) != (s.rows, s.cols):
        raise TileShapeError(f"{node.name}: dst {dst.name} is {d.rows} x {d.cols} but src {src.name} is "
                             f"{s.rows} x {s.cols}",
                             rule=f"{node.name} needs equal Rows and Cols (TFILLPAD_EXPAND pads into a "
                                  "larger tile)", fix="declare both tiles with one shape")


def lower_fillpad(node, soc) -> list[L.Call]:
    dst, src = node.operands
    require_vec_pair(node, dst, src)
    copy = node.name != "TFILLPAD_INPLACE"
    return [L.Call(L.Fn(MOVES, "fillpad"),
                   (L.tile(dst), L.tile(src), L.lit(dst.type.cols), L.lit(copy), pad_value(dst),
                    L.lit(soc.name == "a2a3"), L.err()))]


for _name in ("TFILLPAD", "TFILLPAD_INPLACE", "TFILLPAD_EXPAND"):
    register(Unit(_name, check=check_fillpad, sim=lower_fillpad, emit=E.call(_name)))
