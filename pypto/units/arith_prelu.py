"""TPRELU (5.2): dst = src0 > 0 ? src0 : src0 * src1 (f16, f32), over dst's valid region.

a2a3 runs TMUL(dst, src0, src1), TCMPS(tmp, src0, 0, GT), TSEL(dst, tmp, src0, dst): tmp is a u8
ND tile that receives the packed predicate bits, row i at byte i * tmp.Cols (whole 256-byte
source repeats, so bits past validCol are 0 in pypto, garbage on the chip); TSEL also writes the
hidden UB scratch. dst, src0, src1 and tmp must not share storage, tmp needs dst's rows and
ceil(dst.Cols / E) * E / 8 bytes per row (E = elements per 256-byte repeat): trace-time errors.
a5 runs vprelu and ignores tmp. A NaN src0 propagates quieted. Reference: ref_arith.py ``prelu``.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..errors import LayoutError, TileShapeError
from ..ir import guards as G
from ..ir.nodes import is_static
from ..ir.registry import Unit, register
from .arith_common import check_covers, require_unit_separate

OPS = f"{__package__}.arith_ops"


def tmp_bytes(dt, cols: int) -> int:
    """Bytes of predicate bits a2a3 writes per row for ``cols`` source columns."""
    per = 256 // dt.itemsize
    return -(-cols // per) * per // 8


def separate_prelu(dt, soc) -> tuple[str, ...]:
    return ("dst", "src0", "src1", "tmp") if soc.name == "a2a3" else ()


def check_prelu(node, soc) -> None:
    check_covers(node, soc)
    if soc.name != "a2a3":
        return
    dst, tmp = node.operands[0], node.operands[3]
    require_unit_separate(node, soc, "it computes src0 * src1 into dst, the predicate bits into "
                          "tmp and then selects between src0 and dst")
    if tmp.type.layout_name != "ND":
        raise LayoutError(f"TPRELU operand tmp: tile {tmp.name} has layout {tmp.type.layout_name}",
                          rule="TPRELU on a2a3 writes tmp row by row (row i at byte i * tmp.Cols): "
                               "tmp is an ND (row-major) u8 tile",
                          fix=f"declare {tmp.name} with blayout=pto.RowMajor")
    rows = dst.valid[0] if is_static(dst.valid[0]) else dst.type.rows
    need = tmp_bytes(dst.type.dtype, dst.type.cols)
    if tmp.type.rows < rows or tmp.type.cols < need:
        raise TileShapeError(
            f"TPRELU operand tmp: tile {tmp.name} is {tmp.type.rows} x {tmp.type.cols} bytes, but "
            f"dst {dst.name} needs {rows} x {need}",
            rule="on a2a3 tmp receives the predicate bits of each dst row (whole 256-byte repeats "
                 "of the source: ceil(Cols / E) * E / 8 bytes, E elements per repeat) at byte "
                 "i * tmp.Cols, so it needs dst's rows and that many bytes per row",
            fix=f"declare {tmp.name} as pto.Tile(pto.Vec, pto.uint8, ({rows}, {max(32, -(-need // 32) * 32)}))")


def lower_prelu(node, soc) -> list[L.Call]:
    from . import arith_loops as AL      # numba: only when a kernel is generated
    dst, a, b, tmp = node.operands
    dt = dst.type.dtype
    codec = L.codec(dt)
    if soc.name == "a2a3":
        fn = AL.fn("prelu_bits", OPS, "prelu", codec)
        return [L.Call(fn, (L.tile(dst), L.tile(a), L.tile(b), L.tile(tmp), L.lit(256 // dt.itemsize), L.err()))]
    return [L.Call(L.ew("binary", OPS, "prelu", codec), (L.tile(dst), L.tile(a), L.tile(b), L.err()))]


register(Unit("TPRELU", check=check_prelu, sim=lower_prelu, seed="prelu", emit=E.call("TPRELU"),
              guards=G.covers, separate=separate_prelu))
