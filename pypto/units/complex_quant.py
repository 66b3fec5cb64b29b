"""TQUANT (5.8): the INT8 forms of both SoCs, dst = saturate(rint(src * scale[i] (+ offset[i]))).

INT8_SYM: f32 -> i8; INT8_ASYM: f32 -> u8 with a per-row offset. Over src's valid region (dst's
must equal it); scale and offset are DN (R, 1) columns holding one f32 per row (src's valid rows).
x = f32(src * scale) (+ offset: a second f32 rounding), then rounded to nearest even and saturated:
to the i32 range first (NaN gives 0, inf the limits), then to i8 [-128, 127] / u8 [0, 255].
``checks="strict"`` reports a NaN or infinite x (UB_CVT_NAN: the NPU's conversion of those is
not specified).

a2a3 runs it in place (TROWEXPANDMUL/ADD, then TCVT f32 -> s32 -> f16 -> i8 through aliases of
src's storage), so src is overwritten, and pypto models exactly what it leaves: src's valid
elements hold the i32 results, then the f16 alias (src's row stride, in halves) gets element
(i, j) as f16 (i32 -> f16 rounds to nearest even, clamped to +-65504) at half index
i * src.Cols + j, overlaying the i32 image. a5 (a register pipeline) leaves src unchanged.
a2a3's column-vector scale goes through the hidden UB scratch (an effect of the instruction).
The a5 MXFP8 forms are not simulated (NotSimulatedError). Reference: conformance/ref_complex.py.
"""
from __future__ import annotations

from ..backends.sim import lowering as L
from ..errors import NotSimulatedError, OperandError, ValidRegionError
from ..ir.nodes import Effect, is_static
from ..ir.registry import Unit, register
from .complex_common import decoder, guard

LOOPS = f"{__package__}.complex_quant_lib"     # the numba loops: imported when a kernel is generated

Q_DST, Q_SCALE = 1, 2              # UNIT_RULE ids


def _asym(node) -> bool:
    return node.params.get("quantType") == "INT8_ASYM"


def sim_params(params: dict) -> str | None:
    if params.get("quantType") == "MXFP8":
        return "the MXFP8 forms of TQUANT (a5) are not simulated: their semantics are not documented"
    return None


def check_tquant(node, soc) -> None:
    qt = node.params.get("quantType")
    if qt is None:
        raise OperandError("TQUANT needs quantType", rule="quantType is INT8_SYM (f32 -> i8) or "
                                                          "INT8_ASYM (f32 -> u8, with offset)",
                           fix="pass quantType='INT8_SYM' or quantType='INT8_ASYM'")
    if qt == "MXFP8" and soc.name != "a5":
        raise OperandError(f"TQUANT: quantType MXFP8 does not exist on {soc.name}",
                           rule="a2a3's QuantType is INT8_SYM or INT8_ASYM", fix="use INT8_SYM or INT8_ASYM")
    if qt == "MXFP8":
        return
    dst, src = node.operands[:2]
    want = "uint8" if qt == "INT8_ASYM" else "int8"
    if dst.type.dtype.name != want:
        raise OperandError(f"TQUANT: quantType {qt} writes {want} but dst {dst.name} is {dst.type.dtype.name}",
                           rule="INT8_SYM: f32 -> int8; INT8_ASYM: f32 -> uint8",
                           fix=f"declare {dst.name} as {want}")
    if (qt == "INT8_ASYM") != (len(node.operands) == 4):
        raise OperandError(f"TQUANT {qt} " + ("needs an offset tile" if qt == "INT8_ASYM" else
                                               "takes no offset tile"),
                           rule="INT8_ASYM: TQUANT(dst, src, scale, offset); INT8_SYM: "
                                "TQUANT(dst, src, scale)", fix="pass the operands of that form")
    v = [dst.valid[0], dst.valid[1], src.valid[0], src.valid[1]]
    if all(is_static(x) for x in v) and (v[0] != v[2] or v[1] != v[3]):
        raise _decode(Q_DST, v, node)
    if len(node.operands) == 4:
        scale, off = node.operands[2:]
        if off.type != scale.type or off.dynamic != scale.dynamic or \
                (not off.dynamic and tuple(off.valid) != tuple(scale.valid)):
            raise OperandError(f"TQUANT: offset {off.name} ({off.type}) and scale {scale.name} "
                               f"({scale.type}) are tiles of different types",
                               rule="TQUANT(dst, src, scale, offset*) takes scale and offset of one "
                                    "tile type (TileDataPara)",
                               fix=f"declare {off.name} like {scale.name}")
    scale = node.operands[2]
    off = node.operands[3] if len(node.operands) == 4 else None
    v = [scale.valid[0], scale.valid[1], off.valid[0] if off else src.valid[0], off.valid[1] if off else 1]
    if all(is_static(x) for x in v + [src.valid[0]]) and \
            (v[0] != src.valid[0] or v[1] != 1 or v[2] != src.valid[0] or v[3] != 1):
        raise _decode(Q_SCALE, v, node)


def lower_tquant(node, soc) -> list[L.Call]:
    dst, src, scale = node.operands[:3]
    off = node.operands[3] if len(node.operands) == 4 else scale
    return [L.Call(L.Fn(LOOPS, "tquant"),
                   (L.tile(dst), L.tile(src), L.tile(scale), L.tile(off), L.lit(_asym(node)),
                    L.lit(soc.name == "a2a3"), L.lit(src.type.cols), L.err()))]


def effects(node, soc) -> tuple:
    if soc.name == "a2a3" and soc.ub_scratch:
        return (Effect("write", None, "scratch", "Vec", soc.ub_scratch),)
    return ()


def emit_tquant(node, soc, cx) -> list[str]:
    dst, src, scale = node.operands[:3]
    qt = node.params["quantType"]
    if qt == "MXFP8":
        raise NotSimulatedError("TQUANT with quantType MXFP8 has no emission rule",
                                rule="pypto emits the INT8 forms of TQUANT",
                                fix="use INT8_SYM or INT8_ASYM")
    dr, dc, sr, sc = (cx.expr(dst.valid[0]), cx.expr(dst.valid[1]), cx.expr(src.valid[0]),
                      cx.expr(src.valid[1]))
    kr, kc = cx.expr(scale.valid[0]), cx.expr(scale.valid[1])
    lines = guard(cx, node, f"{dr} != {sr} || {dc} != {sc}", Q_DST, dr, dc, sr, sc)
    if len(node.operands) == 4:
        o = node.operands[3]
        orr, oc = cx.expr(o.valid[0]), cx.expr(o.valid[1])
        lines += guard(cx, node, f"{kr} != {sr} || {kc} != 1 || {orr} != {sr} || {oc} != 1", Q_SCALE,
                       kr, kc, orr, oc)
        args = f"{cx.operand(dst)}, {cx.operand(src)}, {cx.operand(scale)}, &{cx.operand(o)}"
    else:
        lines += guard(cx, node, f"{kr} != {sr} || {kc} != 1", Q_SCALE, kr, kc, sr, "1")
        args = f"{cx.operand(dst)}, {cx.operand(src)}, {cx.operand(scale)}"
    return lines + [f"TQUANT<QuantType::{qt}>({args});"]


def _decode(rule, v, node):
    dst, src = node.operands[:2]
    if rule == Q_DST:
        return ValidRegionError(f"TQUANT: dst {dst.name} has valid region ({v[0]}, {v[1]}) but src "
                                f"{src.name} has ({v[2]}, {v[3]})",
                                rule="TQUANT writes dst over src's valid region: their valid regions "
                                     "are equal", fix=f"set {dst.name}'s valid region to src's")
    return ValidRegionError(f"TQUANT: scale {node.operands[2].name} / offset valid regions ({v[0]}, "
                            f"{v[1]}) / ({v[2]}, {v[3]}) do not match src {src.name}'s valid rows",
                            rule="scale and offset hold one value per src row: an (R, 1) column with "
                                 "src's valid rows", fix="set their valid regions to (src rows, 1)")


decoder("TQUANT", _decode)
register(Unit("TQUANT", check=check_tquant, sim=lower_tquant, sim_params=sim_params, effects=effects,
              emit=emit_tquant, seed="quant", seed_params=("quantType",)))
