"""5.2 TSEL / 5.3 TSELS: dst = src0 (src) where the mask bit is 1, else src1 (the scalar).

Over dst's valid region; the sources' valid regions cover it. The mask is read per row on both
SoCs (pto-isa-semantics 5.9 n6 and the Addendum): element (i, j) uses bit j % 8 of the mask byte at
byte offset i * (mask.Cols * sizeof(mask element)) + j // 8 (u8, u16 and u32 masks are read as
bytes); mask bits past validCol are never read, and the mask's valid region is not used: its
storage must hold validRow rows of ceil(validCol / 8) bytes (static where known, else checked at
run time). TSELS follows the doc and the NPU (mask ? src : scalar), not the CPU sim's older API;
its scalar is converted to the element type. a2a3 also writes hidden UB scratch (a declared effect;
its contents are not modelled). Reference: conformance/ref_bits.py ``sel`` / ``sels``.
"""
from __future__ import annotations

from ..backends.sim import lowering as L
from ..errors import DTypeError
from ..ir import guards as G
from ..ir.nodes import Expr, RtFloat, TileVar, is_static
from ..ir.registry import Unit, register
from . import bits_rules as R

LOOPS = f"{__package__}.predicates_sel_lib"     # the numba loops: imported when a kernel is generated


def _srcs(node) -> list[int]:
    return [2, 3] if node.name == "TSEL" else [2]


def check_sel(node, soc) -> None:
    from .. import diagnostics as Dx
    dst = node.operands[0]
    for k in _srcs(node):
        x = node.operands[k]
        for d, s in zip(dst.valid, x.valid):
            if is_static(d) and is_static(s) and s < d:
                raise Dx.src_valid_too_small(node.name, "src0" if k == 2 and node.name == "TSEL" else
                                             ("src1" if k == 3 else "src"), x.name, x.valid, dst.name, dst.valid)
    R.check_mask_rows(node, 1, dst.valid[0], dst.valid[1])
    if node.name == "TSELS":
        s, dt = node.operands[3], dst.type.dtype
        if dt.is_int and isinstance(s, (Expr, RtFloat)) and (isinstance(s, RtFloat) or s.dtype == "f64"):
            raise DTypeError(f"TSELS: runtime scalar {s} is a float but the tile is {dt.name}",
                             rule="the scalar is converted to the tile's element type",
                             fix="pass an int scalar for integer tiles")
        if not isinstance(s, Expr):
            L.check_scalar(node.name, "scalar", s, dt)


def _room(node) -> tuple:
    m = node.operands[1].type
    return (L.lit(m.rows), L.lit(m.cols * m.dtype.itemsize))


def lower_sel(node, soc) -> list[L.Call]:
    dst, m, a, b = node.operands
    return [L.Call(L.Fn(LOOPS, "tsel"), (L.tile(dst), L.tile(m), L.tile(a), L.tile(b)) + _room(node) + (L.err(),))]


def lower_sels(node, soc) -> list[L.Call]:
    dst, m, a, s = node.operands
    dt = dst.type.dtype
    checks, arg = L.scalar_operand(3, s, dt)
    return checks + [L.Call(L.Fn(LOOPS, "tsels"), (L.tile(dst), L.tile(m), L.tile(a), arg,
                                                   L.lit(dt.short == "f16")) + _room(node) + (L.err(),))]


def guards(node, soc) -> list:
    dst = node.operands[0]
    out = [G.Guard("covers", (k, node.operands[k].valid[0], node.operands[k].valid[1], dst.valid[0], dst.valid[1]))
           for k in _srcs(node)]
    if node.name == "TSELS":
        out += G.scalar(3, node.operands[3], dst.type.dtype)
    return out


def _same_type(a: TileVar, b: TileVar) -> bool:
    return a.type == b.type and a.dynamic == b.dynamic and (a.dynamic or tuple(a.valid) == tuple(b.valid))


def emit_sel(node, soc, cx) -> list[str]:
    dst, m = node.operands[0], node.operands[1]
    out: list[str] = []
    if not all(is_static(v) for v in dst.valid):
        vr, vc = (cx.expr(v) for v in dst.valid)
        rb = m.type.cols * m.type.dtype.itemsize
        out += R.guard(cx, node, f"{vr} > {m.type.rows} || ({vc} + 7) / 8 > {rb}", R.MASK_ROWS, "1", vr, vc)
    ops = [cx.operand(o) for o in node.operands[:3]]
    if node.name == "TSEL":
        ops.append(cx.operand(node.operands[3]))
        # pto-isa's public TSEL takes dst, src0 and src1 as one tile type; the NPU implementation
        # takes four, so tiles of different types call it directly
        same = _same_type(dst, node.operands[2]) and _same_type(dst, node.operands[3])
        return out + [f"{'TSEL' if same else 'TSEL_IMPL'}({', '.join(ops)});"]
    ops.append(cx.scalar(node.operands[3], dst.type.dtype))
    return out + [f"TSELS({', '.join(ops)});"]


register(Unit("TSEL", check=check_sel, sim=lower_sel, seed="sel", emit=emit_sel, guards=guards))
register(Unit("TSELS", check=check_sel, sim=lower_sels, seed="sels", emit=emit_sel, guards=guards))
R.decoder("TSEL")
R.decoder("TSELS")
