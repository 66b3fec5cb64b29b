"""TMOV between Vec tiles (5.7, 5.9 n13, 6.5): dst = src, same dtype.

* ND -> ND, both SoCs: dst[r, c] = src[r, c] over min(src valid, dst valid). a2a3 copies whole
  32-byte blocks (its TCopy): each copied row also takes src's columns up to the end of the last
  partial block, and whole rows when dst's static valid width, or the copied width, is Cols. a5
  copies exactly the region. a2a3 needs equal Rows/Cols.
* ND -> Nz, a5 only (equal shapes, Rows % 16 == 0): over src's valid region, element (r, c) lands
  at storage ((c // c0) * V + r) * c0 + c % c0 with V = roundup(src.validRow, 16), plus one when
  dst holds (src.Rows + 1) * src.Cols elements (never, with equal shapes): dst's Nz layout when V
  equals dst.Rows, the NPU's own placement otherwise.
* DN and other boxed tiles: no NPU path (the NPU copies rows at the row stride): a LayoutError.
Other location pairs are the cube's (units/cube_move.py). Reference: conformance/ref_memory.py ``tmov``.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..errors import DTypeError, LayoutError, TileShapeError
from ..ir.nodes import is_static
from ..ir.registry import Unit, register
from .move_common import MOVES
from . import cube_move

ND2NZ_TYPES = ("f16", "bf16", "f32", "i32", "i8", "e4m3", "e5m2", "hif8")   # a5 TMovToVecNd2Nz


def _kind(node, soc) -> str:
    """"nd" or "nd2nz" for a legal Vec -> Vec pair (raises otherwise)."""
    dst, src = node.operands[:2]
    d, s = dst.type, src.type
    if s.layout_name != "ND" or d.layout_name not in ("ND", "Nz") or (d.layout_name == "Nz" and soc.name != "a5"):
        legal = "ND -> ND, or ND -> Nz on a5" if soc.name == "a5" else "ND -> ND"
        raise LayoutError(f"TMOV: {s.layout_name} src {src.name} -> {d.layout_name} dst {dst.name} "
                          f"between Vec tiles on {soc.name}",
                          rule=f"a Vec -> Vec TMOV on {soc.name} moves {legal} (the NPU copies rows at "
                               "the row stride; use TTRANS to transpose)",
                          fix="declare both tiles ND (blayout=pto.RowMajor, no slayout)")
    if d.dtype is not s.dtype:
        raise DTypeError(f"TMOV: dst {dst.name} is {d.dtype.name} but src {src.name} is {s.dtype.name}",
                         rule="a Vec -> Vec TMOV copies elements of one dtype",
                         fix="convert with TCVT")
    if d.layout_name == "Nz":
        if d.dtype.short not in ND2NZ_TYPES:
            raise DTypeError(f"TMOV: ND -> Nz of {d.dtype.name}",
                             rule=f"a5's ND -> Nz TMOV takes {', '.join(ND2NZ_TYPES)}",
                             fix="convert first, or keep the tile ND")
        if (d.rows, d.cols) != (s.rows, s.cols) or d.rows % 16:
            raise TileShapeError(f"TMOV: ND -> Nz from {s.rows} x {s.cols} to {d.rows} x {d.cols}",
                                 rule="pypto runs a5's ND -> Nz TMOV between tiles of one shape with Rows "
                                      "a multiple of 16 (elsewhere the NPU's placement leaves the tile)",
                                 fix="declare both tiles with one shape, Rows a multiple of 16")
        return "nd2nz"
    if soc.name == "a2a3" and (d.rows, d.cols) != (s.rows, s.cols):
        raise TileShapeError(f"TMOV: dst {dst.name} is {d.rows} x {d.cols} but src {src.name} is "
                             f"{s.rows} x {s.cols}", rule="a2a3 TMOV needs equal Rows and Cols",
                             fix="declare both tiles with one shape")
    return "nd"


def check_tmov(node, soc) -> None:
    dst, src = node.operands[:2]
    if (dst.type.loc, src.type.loc) == ("Vec", "Vec"):
        _kind(node, soc)
    else:
        cube_move.check(node, soc)


def lower_tmov(node, soc) -> list[L.Call]:
    dst, src = node.operands[:2]
    if (dst.type.loc, src.type.loc) != ("Vec", "Vec"):
        return cube_move.lower(node, soc)
    c0 = 32 // dst.type.dtype.itemsize
    if _kind(node, soc) == "nd2nz":
        extra = int(dst.type.numel >= (src.type.rows + 1) * src.type.cols)
        return [L.Call(L.Fn(MOVES, "tmov_nd2nz"), (L.tile(dst), L.tile(src), L.lit(c0), L.lit(extra), L.err()))]
    full = not dst.dynamic and is_static(dst.valid[1]) and dst.valid[1] == dst.type.cols
    return [L.Call(L.Fn(MOVES, "tmov"), (L.tile(dst), L.tile(src), L.lit(soc.name == "a2a3"), L.lit(c0),
                                         L.lit(dst.type.cols), L.lit(full), L.err()))]


register(Unit("TMOV", check=check_tmov, sim=lower_tmov, emit=E.call("TMOV", params=True)))
