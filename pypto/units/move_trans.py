"""TTRANS (5.7): dst[j, i] = src[i, j] between ND Vec tiles of one dtype, with a tmp scratch.

a2a3 iterates src's valid region (run-time check: it fits dst's capacity transposed); a5
transposes the full static shape (static check: dst.Rows >= src.Cols, dst.Cols >= src.Rows).
dst's valid region is not read; tmp keeps its contents in the simulator (the NPU's scratch use is
not modelled). Reference: conformance/ref_memory.py ``ttrans``.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..errors import TileShapeError
from ..ir.registry import Unit, register
from .move_common import MOVES


def tmp_elements(src_type) -> int:
    """Scratch a2a3's TTRANS needs: src.Cols columns of roundup(src.Rows, 16) (32 for 1 byte)."""
    y = 32 if src_type.dtype.itemsize == 1 else 16
    return src_type.cols * (-(-src_type.rows // y) * y)


def check_trans(node, soc) -> None:
    dst, src, tmp = node.operands
    d, s = dst.type, src.type
    if soc.name == "a5" and (d.rows < s.cols or d.cols < s.rows):
        raise TileShapeError(f"TTRANS: dst {dst.name} is {d.rows} x {d.cols}, smaller than src "
                             f"{src.name} ({s.rows} x {s.cols}) transposed",
                             rule="a5 TTRANS transposes src's whole static shape: dst.Rows >= src.Cols "
                                  "and dst.Cols >= src.Rows",
                             fix=f"declare dst with at least {s.cols} rows and {s.rows} columns")
    if soc.name == "a2a3" and tmp.type.numel < tmp_elements(s):
        raise TileShapeError(f"TTRANS: tmp {tmp.name} holds {tmp.type.numel} elements",
                             rule="a2a3 TTRANS transposes through tmp: src.Cols x roundup(src.Rows, 16) "
                                  f"elements (32 rows for 1-byte types) = {tmp_elements(s)}",
                             fix=f"declare tmp with at least {tmp_elements(s)} elements")


def lower_trans(node, soc) -> list[L.Call]:
    dst, src, _ = node.operands
    s = src.type
    return [L.Call(L.Fn(MOVES, "ttrans"),
                   (L.tile(dst), L.tile(src), L.lit(soc.name == "a5"), L.lit(s.rows), L.lit(s.cols),
                    L.lit(dst.type.rows), L.lit(dst.type.cols), L.err()))]


register(Unit("TTRANS", check=check_trans, sim=lower_trans, seed="trans", emit=E.call("TTRANS")))
