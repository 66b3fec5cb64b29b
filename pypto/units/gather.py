"""TGATHER (index and mask forms), TGATHERB and TSCATTER (5.8, 5.9 n17, n18): tile gathers and
scatters by storage offset. Elements move as raw bits.

pypto never reads or writes outside an operand's storage: where the NPU would touch other UB
bytes pypto gives a documented result (TGATHER: 0; TGATHERB: the block is not copied; TSCATTER:
the element is skipped) and ``checks="strict"`` reports the use (UB_INDEX); duplicate TSCATTER
indices let the last writer in row-major order win (strict: UB_DUP_INDEX). Rules and choices:
the table notes (pypto/isa/instructions/complex.py). Reference: conformance/ref_complex.py.
"""
from __future__ import annotations

from ..backends.sim import lowering as L
from ..errors import OperandError, TileShapeError, ValidRegionError
from ..ir.nodes import is_static
from ..ir.registry import Unit, register
from .complex_common import cxx_type, decoder, guard

LOOPS = f"{__package__}.gather_lib"     # the numba loops: imported when a kernel is generated


PATTERNS = {"P0101": 1, "P1010": 2, "P0001": 3, "P0010": 4, "P0100": 5, "P1000": 6, "P1111": 7}
# UNIT_RULE ids
G_DST_CONT, G_IDX_CONT, G_IDX_COVER, G_DST_CAP = 1, 2, 3, 4
B_BLOCKS, B_OFF_COVER = 1, 2
S_SRC_COVER = 1


# -- TGATHER --------------------------------------------------------------------------------------


def _mask_form(node) -> bool:
    return len(node.operands) == 2


def check_tgather(node, soc) -> None:
    """The form's parameter, then the run-time rules where the sizes are static (same messages)."""
    pat = node.params.get("maskPattern")
    dst = node.operands[0]
    if _mask_form(node):
        src = node.operands[1]
        if pat is None:
            raise OperandError("TGATHER(dst, src) needs maskPattern",
                               rule="the two-operand TGATHER keeps the columns a MaskPattern selects "
                                    f"({', '.join(PATTERNS)})",
                               fix="pass e.g. pto.TGATHER(dst, src, maskPattern='P0101'), or an "
                                   "index tile: pto.TGATHER(dst, src0, idx)")
    elif pat is not None:
        raise OperandError("TGATHER(dst, src0, idx) takes no maskPattern",
                           rule="maskPattern belongs to the two-operand form TGATHER(dst, src)",
                           fix="leave maskPattern out, or drop the index tile")
    if is_static(dst.valid[1]) and dst.valid[1] != dst.type.cols:
        raise _decode_tgather(G_DST_CONT, [dst.valid[1], dst.type.cols], node)
    if _mask_form(node):
        if is_static(src.valid[0]) and is_static(src.valid[1]):
            n = src.valid[0] * sum(1 for c in range(src.valid[1]) if _keeps(PATTERNS[pat], c))
            if n > dst.type.numel:
                raise _decode_tgather(G_DST_CAP, [n, dst.type.numel], node)
        return
    idx = node.operands[2]
    if is_static(idx.valid[1]) and idx.valid[1] != idx.type.cols:
        raise _decode_tgather(G_IDX_CONT, [idx.valid[1], idx.type.cols], node)
    v = [idx.valid[0], idx.valid[1], dst.valid[0], dst.valid[1]]
    if all(is_static(x) for x in v) and (v[0] < v[2] or v[1] < v[3]):
        raise _decode_tgather(G_IDX_COVER, v, node)


def _keeps(pat: int, c: int) -> bool:
    return {1: c % 2 == 0, 2: c % 2 == 1, 7: True}.get(pat, c % 4 == pat - 3)


def lower_tgather(node, soc) -> list[L.Call]:
    if _mask_form(node):
        dst, src = node.operands
        return [L.Call(L.Fn(LOOPS, "tgather_mask"),
                       (L.tile(dst), L.tile(src), L.lit(PATTERNS[node.params["maskPattern"]]),
                        L.lit(dst.type.cols), L.lit(dst.type.numel), L.err()))]
    dst, src0, idx = node.operands
    return [L.Call(L.Fn(LOOPS, "tgather_idx"),
                   (L.tile(dst), L.tile(src0), L.tile(idx), L.lit(dst.type.cols), L.lit(idx.type.cols),
                    L.lit(src0.type.numel), L.err()))]


def emit_tgather(node, soc, cx) -> list[str]:
    dst = node.operands[0]
    dvc = cx.expr(dst.valid[1])
    lines = guard(cx, node, f"{dvc} != {dst.type.cols}", G_DST_CONT, dvc, str(dst.type.cols))
    if _mask_form(node):
        src = node.operands[1]
        pat = node.params["maskPattern"]
        return lines + [f"TGATHER<{cxx_type(cx, dst)}, {cxx_type(cx, src)}, MaskPattern::{pat}>"
                        f"({cx.operand(dst)}, {cx.operand(src)});"]
    _, src0, idx = node.operands
    ivr, ivc, dvr = cx.expr(idx.valid[0]), cx.expr(idx.valid[1]), cx.expr(dst.valid[0])
    return (lines + guard(cx, node, f"{ivc} != {idx.type.cols}", G_IDX_CONT, ivc, str(idx.type.cols))
            + guard(cx, node, f"{ivr} < {dvr} || {ivc} < {dvc}", G_IDX_COVER, ivr, ivc, dvr, dvc)
            + [f"TGATHER({cx.operand(dst)}, {cx.operand(src0)}, {cx.operand(idx)});"])


def _decode_tgather(rule, v, node):
    ops = node.operands
    if rule == G_DST_CONT:
        return ValidRegionError(f"TGATHER: dst {ops[0].name} has {v[0]} valid columns of {v[1]}",
                                rule="TGATHER writes dst contiguously: dst.validCol == dst.Cols",
                                fix=f"make every column of {ops[0].name} valid")
    if rule == G_IDX_CONT:
        return ValidRegionError(f"TGATHER: idx {ops[2].name} has {v[0]} valid columns of {v[1]}",
                                rule="the index-form TGATHER needs idx.validCol == idx.Cols",
                                fix=f"make every column of {ops[2].name} valid")
    if rule == G_IDX_COVER:
        return ValidRegionError(f"TGATHER: idx {ops[2].name} has valid region ({v[0]}, {v[1]}) but "
                                f"dst {ops[0].name} has ({v[2]}, {v[3]})",
                                rule="idx holds one index per dst element: its valid region covers dst's",
                                fix=f"enlarge {ops[2].name}'s valid region")
    return TileShapeError(f"TGATHER: {v[0]} elements survive {node.params.get('maskPattern')} but dst "
                          f"{ops[0].name} holds {v[1]}",
                          rule="the mask-form TGATHER packs the survivors of every row densely from "
                               "dst storage offset 0",
                          fix=f"use a dst of at least {v[0]} elements or fewer valid source rows")


decoder("TGATHER", _decode_tgather)
register(Unit("TGATHER", check=check_tgather, sim=lower_tgather, emit=emit_tgather))


# -- TGATHERB -------------------------------------------------------------------------------------


def check_tgatherb(node, soc) -> None:
    """The run-time rules where the sizes are static (the same messages)."""
    dst, src, off = node.operands
    size = dst.type.dtype.itemsize
    if not is_static(dst.valid[1]):
        return
    if (dst.valid[1] * size) % 32:
        raise _decode_tgatherb(B_BLOCKS, [dst.valid[1], size], node)
    v = [off.valid[0], off.valid[1], dst.valid[0], dst.valid[1] * size // 32]
    if all(is_static(x) for x in v) and (v[0] < v[2] or v[1] < v[3]):
        raise _decode_tgatherb(B_OFF_COVER, v, node)


def lower_tgatherb(node, soc) -> list[L.Call]:
    dst, src, off = node.operands
    return [L.Call(L.Fn(LOOPS, "tgatherb"),
                   (L.tile(dst), L.tile(src), L.tile(off), L.lit(dst.type.dtype.itemsize),
                    L.lit(src.type.nbytes), L.err()))]


def emit_tgatherb(node, soc, cx) -> list[str]:
    dst, src, off = node.operands
    size = dst.type.dtype.itemsize
    dvr, dvc = cx.expr(dst.valid[0]), cx.expr(dst.valid[1])
    ovr, ovc = cx.expr(off.valid[0]), cx.expr(off.valid[1])
    nb = f"({dvc} * {size} / 32)"
    return (guard(cx, node, f"({dvc} * {size}) % 32 != 0", B_BLOCKS, dvc, str(size))
            + guard(cx, node, f"{ovr} < {dvr} || {ovc} < {nb}", B_OFF_COVER, ovr, ovc, dvr, nb)
            + [f"TGATHERB({cx.operand(dst)}, {cx.operand(src)}, {cx.operand(off)});"])


def _decode_tgatherb(rule, v, node):
    dst, _, off = node.operands
    if rule == B_BLOCKS:
        return ValidRegionError(f"TGATHERB: dst {dst.name} has {v[0]} valid columns ({v[0] * v[1]} "
                                "bytes per row)",
                                rule="TGATHERB copies whole 32-byte blocks: dst.validCol * sizeof(T) "
                                     "is a multiple of 32", fix="use a multiple of 32 bytes per row")
    return ValidRegionError(f"TGATHERB: offset {off.name} has valid region ({v[0]}, {v[1]}) but dst "
                            f"{dst.name} needs {v[2]} rows of {v[3]} blocks",
                            rule="offset holds one byte offset per 32-byte block of each dst row",
                            fix=f"enlarge {off.name}'s valid region")


decoder("TGATHERB", _decode_tgatherb)
register(Unit("TGATHERB", check=check_tgatherb, sim=lower_tgatherb, emit=emit_tgatherb))


# -- TSCATTER -------------------------------------------------------------------------------------


def check_tscatter(node, soc) -> None:
    """The run-time rule where the sizes are static (the same message)."""
    dst, src, idx = node.operands
    v = [src.valid[0], src.valid[1], idx.valid[0], idx.valid[1]]
    if all(is_static(x) for x in v) and (v[0] < v[2] or v[1] < v[3]):
        raise _decode_tscatter(S_SRC_COVER, v, node)


def lower_tscatter(node, soc) -> list[L.Call]:
    dst, src, idx = node.operands
    return [L.Call(L.Fn(LOOPS, "tscatter"), (L.tile(dst), L.tile(src), L.tile(idx),
                                             L.lit(dst.type.numel), L.err()))]


def emit_tscatter(node, soc, cx) -> list[str]:
    dst, src, idx = node.operands
    svr, svc = cx.expr(src.valid[0]), cx.expr(src.valid[1])
    ivr, ivc = cx.expr(idx.valid[0]), cx.expr(idx.valid[1])
    return (guard(cx, node, f"{svr} < {ivr} || {svc} < {ivc}", S_SRC_COVER, svr, svc, ivr, ivc)
            + [f"TSCATTER({cx.operand(dst)}, {cx.operand(src)}, {cx.operand(idx)});"])


def _decode_tscatter(rule, v, node):
    dst, src, idx = node.operands
    return ValidRegionError(f"TSCATTER: src {src.name} has valid region ({v[0]}, {v[1]}) but idx "
                            f"{idx.name} has ({v[2]}, {v[3]})",
                            rule="TSCATTER moves src[i, j] for every (i, j) of idx's valid region: "
                                 "src's valid region covers idx's",
                            fix=f"enlarge {src.name}'s valid region")


decoder("TSCATTER", _decode_tscatter)
register(Unit("TSCATTER", check=check_tscatter, sim=lower_tscatter, emit=emit_tscatter))
