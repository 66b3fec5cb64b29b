"""5.5 GM <-> tile: TLOAD (MTE2) and TSTORE (MTE3 from Vec/Mat, FIX from Acc).

Index mapping of pto-isa-semantics 4.2: a tile with a row-major outer layout (ND, Zz, Zn) takes
validRow = s0*s1*s2*s3 rows of s4 elements; a column-major one (DN, Nz) the transpose. TLOAD
pads like the NPU (4.3): only the tail of the last partial 32-byte block of each copied row,
with the NPU's PadValue bit patterns (3.6); everything else keeps its contents. A boxed tile
loads from an ND/DN view with s0 = s1 = s2 = 1 (a Mat tile on a2a3; any on a5).
Reference: conformance/reference.py ``tload`` / ``tstore``.
"""
from __future__ import annotations

import numpy as np

from .. import diagnostics as Dx
from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..errors import LayoutError, NotSimulatedError
from ..ir.nodes import GmView, TileVar, binop, is_static
from ..ir import guards as G
from ..ir.registry import Unit, register

# The NPU's PadValue::Min / Max per element type, as values of the simulator's storage type
# (3.6 and the addendum: i8 Min is -1, unsigned Min is 0, floats pad -inf/+inf). Zero pads 0;
# Null pads nothing; 8-byte and fp8 types pad 0 for every PadValue.
PAD_MIN_MAX = {
    "f32": (-np.inf, np.inf), "f16": (0xFC00, 0x7C00), "bf16": (0xFF80, 0x7F80),
    "i32": (-2 ** 31, 2 ** 31 - 1), "u32": (0, 2 ** 32 - 1), "i16": (-2 ** 15, 2 ** 15 - 1),
    "u16": (0, 2 ** 16 - 1), "i8": (-1, 127), "u8": (0, 255),
}


def pad_value(t: TileVar) -> tuple:
    dt, pad = t.type.dtype, t.type.pad
    v = PAD_MIN_MAX[dt.short][pad == "Max"] if pad in ("Min", "Max") and dt.short in PAD_MIN_MAX else 0
    return L.const(v, dt.storage)


def _rowmajor(t: TileVar) -> bool:
    return t.type.blayout == "RowMajor"


def check_view(node, soc) -> None:
    """The view's rows x cols (as the tile sees them) equal the tile's valid region, and a boxed
    tile is loaded from a plain 2-D window."""
    t = next(x for x in node.operands if isinstance(x, TileVar))
    v = next(x for x in node.operands if isinstance(x, GmView))
    s = v.shape
    if _rowmajor(t):
        rows, cols = binop("*", binop("*", binop("*", s[0], s[1]), s[2]), s[3]), s[4]
    else:
        rows, cols = s[3], binop("*", binop("*", binop("*", s[0], s[1]), s[2]), s[4])
    for want, have in zip((rows, cols), t.valid):
        if is_static(want) and is_static(have) and want != have:
            raise Dx.view_shape_mismatch(node.name, (rows, cols), t.name, t.valid, t.type.layout_name)
    if t.type.slayout != "NoneBox":
        if t.type.loc == "Vec" and soc.name == "a2a3":
            raise LayoutError(f"{node.name}: Vec tile {t.name} is {t.type.layout_name}, and a2a3 moves "
                              "Vec tiles only between matching layouts",
                              rule="on a2a3, TLOAD/TSTORE of a Vec tile need ND<->ND or DN<->DN "
                                   "(pto-isa-semantics 4.2)",
                              fix=f"declare {t.name} ND (blayout=pto.RowMajor, no slayout)")
        if any(is_static(d) and d != 1 for d in s[:3]):
            raise LayoutError(f"{node.name}: a boxed ({t.type.layout_name}) tile moves a 2-D window, "
                              f"but the view has shape {tuple(s)}",
                              rule="ND/DN GM <-> boxed tile needs s0 = s1 = s2 = 1 (pto-isa-semantics 4.2)",
                              fix="slice a 2-D window (rows, cols) of the tensor")


def lower_tload(node, soc) -> list[L.Call]:
    t, v = node.operands
    ty = t.type
    if v.layout not in ("ND", "DN"):
        raise NotSimulatedError(f"TLOAD from a {v.layout} GM view is not simulated yet",
                                rule="the simulator loads ND and DN views",
                                fix="describe the data as an ND view")
    if ty.slayout != "NoneBox" and ty.pad != "Null":
        raise NotSimulatedError(f"TLOAD padding of a boxed ({ty.layout_name}) tile is not simulated yet",
                                rule="the simulator pads ND and DN tiles", fix="use pad=pto.PadNull")
    c0 = 32 // ty.dtype.itemsize
    args = (L.tile(t), L.lit(ty.rows), L.lit(ty.cols), L.lit(_rowmajor(t)), L.lit(ty.pad != "Null"),
            pad_value(t), L.lit(c0)) + L.view(v) + (L.err(),)
    return L.bounds(v) + [L.Call(L.lib("memory.tload"), args)]


def _tstore_params(params: dict) -> str | None:
    if params.get("atomic", "None") != "None":
        return "atomic add into GM is not simulated yet"
    return None


def lower_tstore(node, soc) -> list[L.Call]:
    v, t = node.operands
    if t.type.loc == "Acc":
        raise NotSimulatedError("TSTORE from an Acc tile is not simulated yet",
                                rule="the matrix path (L0C -> GM through the fixpipe) comes with the "
                                     "matrix issue", fix="store Vec tiles")
    if v.layout not in ("ND", "DN"):
        raise NotSimulatedError(f"TSTORE to a {v.layout} GM view is not simulated yet",
                                rule="the simulator stores ND and DN views", fix="use an ND view")
    args = L.view(v) + (L.tile(t), L.lit(_rowmajor(t)), L.err())
    return L.bounds(v) + [L.Call(L.lib("memory.tstore"), args)]


def emit_tstore(node, soc, cx) -> str:
    """TSTORE(gm, tile), or TSTORE<AtomicType::AtomicAdd>(gm, tile) for an atomic add into GM."""
    v, t = node.operands
    atomic = node.params.get("atomic", "None")
    tmpl = "" if atomic == "None" else f"<AtomicType::{atomic}>"
    return f"TSTORE{tmpl}({cx.operand(v)}, {cx.operand(t)});"


register(Unit("TLOAD", check=check_view, sim=lower_tload, emit=E.call("TLOAD"), guards=G.view_tile))
register(Unit("TSTORE", check=check_view, sim=lower_tstore, sim_params=_tstore_params, emit=emit_tstore,
                  guards=G.view_tile))
