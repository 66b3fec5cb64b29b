"""5.5 GM <-> tile: TLOAD (MTE2), TSTORE (MTE3 from Vec/Mat, FIX from Acc; plain or atomic add),
TSTORE_FP, TPREFETCH, and the a5 SIMT gather/scatter MGATHER / MSCATTER. Acc tiles leave through
the fixpipe (units/fixpipe.py: conversion, ReLU, quantisation) to ND or NZ views.

Layouts (pto-isa-semantics 4.2, the NPU's TLOAD/TSTORE code): a Vec tile moves between matching
layouts only, on both SoCs: ND view <-> ND tile (rows of s4), DN view <-> DN tile (columns of s3),
NZ view [B, C1, R1, 16, c0] <-> Nz tile (validRow = R1*16, validCol = B*C1*c0). pypto also moves a
DN tile from an ND-tagged view element by element (what slicing a tensor gives; pto-isa's CPU sim
does the same), and a boxed Mat tile from a 2-D ND/DN window where the SoC's DMA converts
(MAT_LOADS: a2a3 ND -> Nz, DN -> Zn; a5 also DN -> Nz and the MX scales). TLOAD pads like the NPU (4.3): only
the tail of the last partial 32-byte block of each copied row (DN: column), with the NPU's
PadValue bit patterns (3.6); NZ rows are whole blocks, so nothing is padded; everything else keeps
its contents. Boxed Mat tiles filled by the nd2nz DMA (ND -> Nz, DN -> Zn) get that tail zeroed
whatever their PadValue (the DMA takes none; ND2NZ_PAD).

Choices where the NPU leaves the result open (docs/isa-reference.md notes):
* TSTORE atomic add: integers wrap, f32 is one IEEE addition, f16/bf16 round the exact sum once.
* TPREFETCH: the simulator checks the view's bounds and leaves the tile's bytes unchanged.
* MGATHER / MSCATTER: an index outside the tensor is always a run-time IndexRangeError (nothing is
  read or written); MSCATTER duplicates: the last write in row-major order wins, reported under
  checks="strict".
Reference: conformance/ref_memory.py.
"""
from __future__ import annotations

import numpy as np

from .. import diagnostics as Dx
from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..backends.sim.lib.codes import COL, NO_PAD, NZ, PAD_COLS, PAD_ROWS, ROW
from ..errors import DTypeError, LayoutError, NotSimulatedError, OperandError, ShapeError, TileError
from ..ir.nodes import GmView, TileVar, binop, is_runtime, is_static
from ..ir import guards as G
from ..ir.registry import Unit, register
from . import fixpipe as FX
from .move_common import VIEW_FP4_AXIS, require_fp4_axis

# The NPU's PadValue::Min / Max per element type, as values of the simulator's storage type
# (3.6 and the addendum: i8 Min is -1, unsigned Min is 0, floats pad -inf/+inf). Zero pads 0;
# Null pads nothing; 8-byte and fp8 types pad 0 for every PadValue.
PAD_MIN_MAX = {
    "f32": (-np.inf, np.inf), "f16": (0xFC00, 0x7C00), "bf16": (0xFF80, 0x7F80),
    "i32": (-2 ** 31, 2 ** 31 - 1), "u32": (0, 2 ** 32 - 1), "i16": (-2 ** 15, 2 ** 15 - 1),
    "u16": (0, 2 ** 16 - 1), "i8": (-1, 127), "u8": (0, 255),
}
# GM element types TSTORE<AtomicAdd> accepts (a2a3 / a5 SetAtomicAdd)
ATOMIC_TYPES = {"a2a3": ("f16", "f32", "i16", "i32", "i8", "bf16"), "a5": ("f16", "f32", "i16", "i32", "i8")}
A2A3_BURST_LIMIT = 4096            # a2a3 DMA: nBurst < 4096, and TLOAD to UB needs Rows < 4096


def pad_value(t: TileVar) -> tuple:
    dt, pad = t.type.dtype, t.type.pad
    v = PAD_MIN_MAX[dt.short][pad == "Max"] if pad in ("Min", "Max") and dt.short in PAD_MIN_MAX else 0
    return L.const(v, dt.storage)


def _operands(node) -> tuple[TileVar, GmView]:
    t = next(x for x in node.operands if isinstance(x, TileVar))
    v = next(x for x in node.operands if isinstance(x, GmView))
    return t, v


def _acc_mode(node, t: TileVar, v: GmView) -> int:
    """An Acc tile leaves through the fixpipe to an ND view (rows x cols as the tile) or an NZ one."""
    if v.layout in ("ND", "NZ"):
        return ROW if v.layout == "ND" else NZ
    raise LayoutError(f"{node.name}: Acc tile {t.name} to a {v.layout} GM view",
                      rule="the fixpipe writes ND or NZ GM layouts (pto-isa-semantics 4.4)",
                      fix="store to an ND view (a slice of the tensor) or an NZ one")


def _check_acc(node, soc, t: TileVar, v: GmView) -> None:
    """TSTORE / TSTORE_FP from L0C: conversion pair, view layout, the fixpipe's size limits (the
    view's extent is check_view's, shared with the other tiles)."""
    scalar = node.operands[2] if node.name == "TSTORE" and len(node.operands) == 3 else None
    fp = node.operands[2] if node.name == "TSTORE_FP" else None
    quant = "vector" if fp is not None else ("scalar" if scalar is not None else "none")
    if scalar is not None:
        FX.check_scalar(node, scalar)
    if node.params.get("atomic", "None") == "AtomicAdd":
        raise NotSimulatedError(f"{node.name}(atomic='AtomicAdd') from Acc tile {t.name} is not "
                                "simulated", rule="the simulator adds Vec tiles into GM",
                                fix="store the Acc tile plainly, or add on a Vec tile")
    FX.check_pair(node, soc, "gm", quant, t, v.tensor.dtype, f"tensor {v.tensor.name}")
    mode = _acc_mode(node, t, v)
    ty = t.type
    if not 1 <= ty.cols <= 4095 or (mode == ROW and ty.rows > 8192) or \
            (mode == NZ and (ty.rows > 65535 or ty.cols % 16)):
        raise TileError(f"{node.name}: Acc tile {t.name} is {ty.rows} x {ty.cols}",
                        rule="the fixpipe stores 1 <= Cols <= 4095, ND Rows <= 8192, NZ Rows <= 65535 "
                             "with Cols % 16 == 0 (pto-isa-semantics 4.4)",
                        fix="store a smaller accumulator")


def _matching(node, t: TileVar, v: GmView, fix: str) -> LayoutError:
    return LayoutError(f"{node.name}: tile {t.name} is {t.type.layout_name} but the GM view is "
                       f"{v.layout}: {t.type.loc} tiles move between matching layouts only",
                       rule=f"{node.name} of a {t.type.loc} tile needs matching layouts: ND view <-> ND "
                            "tile, DN view <-> DN tile, NZ view <-> Nz tile (pto-isa-semantics 4.2; "
                            "the NPU refuses other pairs)",
                       fix=fix)


# TLOAD GM -> boxed Mat tile: the conversions each SoC's DMA makes, (view, tile layout, fractal):
# a2a3 ND -> Nz and DN -> Zn; a5 also DN -> Nz, and the MX scales (e8m0): aScale ND -> Zz, bScale
# DN -> Nn (the NPU's MX_B_DN: bScale kept as N x K/32 rows, as pto-isa's MXFP8 GEMM keeps it).
# A plain ND K/32 x N bScale has no NPU load (its MX_B_ND GM layout interleaves pairs of K rows).
MAT_LOADS = {"a2a3": (("ND", "Nz", 512), ("DN", "Zn", 512)),
             "a5": (("ND", "Nz", 512), ("DN", "Nz", 512), ("DN", "Zn", 512), ("ND", "Zz", 32),
                    ("DN", "Nn", 32))}


def _check_mat_load(node, soc, t: TileVar, v: GmView) -> None:
    ty = t.type
    if (v.layout, ty.layout_name, ty.fractal) in MAT_LOADS[soc.name]:
        return
    if soc.name == "a5" and (v.layout, ty.layout_name, ty.fractal) == ("ND", "Nn", 32):
        raise LayoutError(f"TLOAD: an ND view into {t.name}, an Nn MX bScale tile",
                          rule="the NPU's TLOAD fills a bScale tile from MX_B_DN (the N x K/32 "
                               "transpose, row by row), MX_B_ND (K/32 rows interleaved in pairs) "
                               "or MX_B_NN GM layouts, never from a plain K/32 x N matrix",
                          fix="keep bScale as an N x K/32 tensor sbt and load "
                              "pto.GlobalTensor(sbt, (1, 1, 1, K/32, N), (1, 1, 1, 1, K/32 of "
                              "sbt's rows), offset, layout=pto.DN)")
    legal = ", ".join(f"{a} -> {b}" + (" (MX scales, fractal 32)" if f == 32 else "")
                      for a, b, f in MAT_LOADS[soc.name])
    fix = (f"load {t.name} as Nz from an ND view (pto.TileMatNz)" if v.layout == "ND" else
           f"declare {t.name} Zn (pto.TileMatZn) for a DN view")
    raise LayoutError(f"TLOAD: a {v.layout} view into {t.name}, a {ty.layout_name} Mat tile with "
                      f"{ty.fractal}-byte fractals, on {soc.name}",
                      rule=f"{soc.name}'s DMA converts into boxed L1 tiles {legal} only (its TLOAD "
                           "refuses other pairs at compile time)",
                      fix=fix)


def _line_stride(v: GmView, mode: int) -> tuple[int, object]:
    """(axis, stride) of a view along an unboxed tile's lines: ROW its last axis, COL its fourth."""
    k = 4 if mode == ROW else 3
    return k, v.strides[k]


def transfer_mode(node, soc) -> int:
    """How the view maps onto the tile (lib/memory.py ROW / COL / NZ); refuses illegal pairs."""
    t, v = _operands(node)
    ty = t.type
    if v.layout == "NZ":
        if ty.layout_name != "Nz" or ty.fractal != 512:
            raise _matching(node, t, v, f"declare {t.name} Nz (blayout=pto.ColMajor, slayout=pto.RowMajor)")
        return NZ
    if v.layout not in ("ND", "DN"):
        raise NotSimulatedError(f"{node.name} with a {v.layout} GM view is not simulated",
                                rule="the simulator moves ND, DN and NZ views",
                                fix="describe the data as an ND, DN or NZ view")
    if ty.slayout == "NoneBox":
        if ty.blayout == "RowMajor":
            if v.layout != "ND":
                raise _matching(node, t, v, f"use an ND view, or declare {t.name} DN (blayout=pto.ColMajor)")
            return ROW
        return COL                    # a DN view, or (pypto, CPU-sim-like) an ND-tagged one
    if ty.loc == "Vec":
        raise _matching(node, t, v, f"load {t.name} from pto.GlobalTensor(..., layout=pto.NZ) with "
                                    "shape (B, C1, R1, 16, c0) (an Nz tile), or declare it ND "
                                    "(blayout=pto.RowMajor, no slayout)")
    if any(is_static(d) and d != 1 for d in v.shape[:3]):
        raise LayoutError(f"{node.name}: a boxed ({ty.layout_name}) tile moves a 2-D window, "
                          f"but the view has shape {tuple(v.shape)}",
                          rule="ND/DN GM <-> boxed tile needs s0 = s1 = s2 = 1 (pto-isa-semantics 4.2)",
                          fix="slice a 2-D window (rows, cols) of the tensor")
    if node.name == "TLOAD":
        _check_mat_load(node, soc, t, v)
    return ROW if ty.blayout == "RowMajor" else COL


def view_extent(mode: int, s) -> tuple:
    """(rows, cols) of the tile region a view fills (expressions)."""
    if mode == ROW:
        return binop("*", binop("*", binop("*", s[0], s[1]), s[2]), s[3]), s[4]
    if mode == COL:
        return s[3], binop("*", binop("*", binop("*", s[0], s[1]), s[2]), s[4])
    return binop("*", s[2], s[3]), binop("*", binop("*", s[0], s[1]), s[4])


def _static_stride(node, v: GmView, k: int, want: int, why: str) -> None:
    st = v.strides[k]
    if is_runtime(st) or st != want:
        raise LayoutError(f"{node.name}: the GM view's stride {k} is {st}, not {want}",
                          rule=why, fix=f"give the view stride {want} in dimension {k}")


def _check_extent(node, t: TileVar, v: GmView, mode: int) -> None:
    """The view's rows x cols, as the tile sees them, equal the tile's valid region (when static)."""
    rows, cols = view_extent(mode, v.shape)
    for want, have in zip((rows, cols), t.valid):
        if is_static(want) and is_static(have) and want != have:
            if mode == NZ:
                raise ShapeError(f"{node.name}: the NZ view fills {rows} x {cols} (tile rows x cols) "
                                 f"but tile {t.name} has a {t.valid[0]} x {t.valid[1]} valid region",
                                 rule="an NZ view [B, C1, R1, 16, c0] fills validRow = R1*16 and "
                                      "validCol = B*C1*c0 (pto-isa-semantics 4.2)",
                                 fix=f"set {t.name}'s valid region to ({rows}, {cols}) or reshape the view")
            raise Dx.view_shape_mismatch(node.name, (rows, cols), t.name, t.valid,
                                         "ND" if t.type.loc == "Acc" else t.type.layout_name)


def check_view(node, soc) -> None:
    """Layout pair, the view's rows x cols (as the tile sees them) against the tile's valid
    region, stride and size rules of the NPU's DMA, atomic-add and pad-value rules."""
    t, v = _operands(node)
    ty, s = t.type, v.shape
    if ty.loc == "Acc":
        _check_acc(node, soc, t, v)
        _check_extent(node, t, v, _acc_mode(node, t, v))
        return
    if ty.dtype is not v.tensor.dtype:
        raise DTypeError(f"{node.name}: tile {t.name} is {ty.dtype.name} but tensor {v.tensor.name} "
                         f"is {v.tensor.dtype.name}",
                         rule=f"{node.name} of a {ty.loc} tile moves its own element type (only Acc "
                              "tiles convert, in the fixpipe)", fix="convert with TCVT first")
    if node.name == "TSTORE" and (len(node.operands) == 3 or FX.relu_of(node)):
        raise OperandError(f"TSTORE: preQuantScalar / reluMode with a {ty.loc} tile {t.name}",
                           rule="quantisation and ReLU on the way out are the fixpipe's (Acc tiles)",
                           fix="apply them with TMULS / TRELU on the Vec tile first")
    mode = transfer_mode(node, soc)
    _check_extent(node, t, v, mode)
    if ty.dtype.lanes > 1:
        require_fp4_axis(node, f"tile {t.name}", t.type.contiguous_axis,
                         f"the {v.layout} view of {v.tensor.name}", VIEW_FP4_AXIS[v.layout])
    c0 = 32 // ty.dtype.itemsize
    if mode == NZ:
        if ty.dtype.itemsize == 8:
            raise LayoutError(f"{node.name}: 8-byte elements ({ty.dtype.name}) move only between ND "
                              "and DN layouts", rule="TLOAD/TSTORE of b64 types: ND<->ND or DN<->DN",
                              fix="use ND tiles and views")
        for k, want in ((3, 16), (4, c0)):
            if is_runtime(s[k]) or s[k] != want:
                raise ShapeError(f"{node.name}: NZ view dimension {k} is {s[k]}, not {want}",
                                 rule=f"an NZ view of {ty.dtype.name} has static shape (B, C1, R1, 16, "
                                      f"{c0}): 16 x c0 boxes of 32-byte rows",
                                 fix=f"pto.GlobalTensor(t, (B, C1, R1, 16, {c0}), ..., layout=pto.NZ)")
        why = ("the NPU's DMA copies each 16 x c0 box as 16 dense 32-byte rows, so an NZ view's "
               f"strides 2..4 are (16*c0, c0, 1) = ({16 * c0}, {c0}, 1)")
        for k, want in ((2, 16 * c0), (3, c0), (4, 1)):
            _static_stride(node, v, k, want, why)
    elif ty.slayout == "NoneBox" and v.layout == ("ND" if mode == ROW else "DN"):
        k, st = _line_stride(v, mode)
        if is_static(st) and st != 1:
            what = "row" if mode == ROW else "column"
            raise LayoutError(f"{node.name}: the {v.layout} view's stride {k} is {st}: its {what}s "
                              "are not contiguous",
                              rule=f"the NPU's DMA copies each {what} of an {v.layout} view as one "
                                   f"contiguous burst: stride {k} must be 1",
                              fix="copy the data into a contiguous tensor first, or load it in pieces")
    if soc.name == "a2a3" and ty.loc == "Vec":
        if mode == ROW and ty.rows >= A2A3_BURST_LIMIT:
            raise TileError(f"{node.name}: tile {t.name} has {ty.rows} rows",
                            rule="on a2a3 a Vec ND tile moved by TLOAD/TSTORE has Rows < 4096",
                            fix="use a tile of fewer rows")
        k = {ROW: 3, COL: 4, NZ: 1}[mode]
        if is_static(s[k]) and s[k] >= A2A3_BURST_LIMIT:
            raise ShapeError(f"{node.name}: GM view dimension {k} is {s[k]}",
                             rule=f"on a2a3 dimension {k} of the view is the DMA's burst count: < 4096",
                             fix="move the data in pieces of fewer rows")
    if node.name == "TLOAD" and soc.name == "a5" and ty.dtype.itemsize == 8 and ty.pad in ("Min", "Max"):
        raise TileError(f"TLOAD: tile {t.name} of {ty.dtype.name} has pad={ty.pad}",
                        rule="on a5 TLOAD of 8-byte elements takes PadNull or PadZero only",
                        fix="declare the tile with pad=pto.PadZero or pto.PadNull")
    if node.name == "TSTORE" and node.params.get("atomic", "None") == "AtomicAdd":
        legal = ATOMIC_TYPES[soc.name]
        dt = v.tensor.dtype
        if dt.short not in legal:
            raise DTypeError(f"TSTORE(atomic='AtomicAdd'): GM tensor {v.tensor.name} is {dt.name}",
                             rule=f"an atomic-add store on {soc.name} takes GM element types "
                                  f"{', '.join(legal)}",
                             fix="accumulate in float32 (or int32) and convert afterwards")


def view_guards(node, soc) -> list[G.Guard]:
    """The view's rows x cols as the tile sees them equal its valid region, and the view's last
    element lies inside its tensor (ROW / COL / NZ mapping; Acc tiles ROW or NZ)."""
    t, v = _operands(node)
    mode = _acc_mode(node, t, v) if t.type.loc == "Acc" else transfer_mode(node, soc)
    rows, cols = view_extent(mode, v.shape)
    last = v.offset
    for d, st in zip(v.shape, v.strides):
        last = binop("+", last, binop("*", binop("-", d, 1), st))
    return [G.Guard("view_shape", (rows, cols, t.valid[0], t.valid[1])),
            G.Guard("bound", (-1, last, binop("-", v.tensor.numel, 1)))]


def lower_store_acc(node, soc) -> list[L.Call]:
    """TSTORE / TSTORE_FP from an Acc tile: the fixpipe's conversion into the view."""
    v, t = node.operands[:2]
    extra = node.operands[2] if len(node.operands) == 3 else None
    scalar, fp = (extra, None) if node.name == "TSTORE" else (None, extra)
    head = L.view(v) + (L.tile(t), L.lit(_acc_mode(node, t, v)))
    if extra is None and t.type.dtype.short == v.tensor.dtype.short:      # nothing to convert
        args = head + (L.lit(FX.relu_of(node)), L.err())
        return L.bounds(v) + [L.Call(L.lib("cube.store_acc_move"), args)]
    conv = FX.args(t, v.tensor.dtype, FX.relu_of(node), scalar, fp)
    return L.bounds(v) + [L.Call(L.lib("cube.store_acc"), head + conv + (L.err(),))]


# The boxed layouts whose box rows run along a view's contiguous axis: the nd2nz DMA that fills
# them zero-fills the tail of each line's last 32-byte block, whatever PadValue the tile declares
# (it takes no pad value). a5's DN -> Nz crosses the boxes; what it writes there is not documented,
# so the simulator leaves those bytes as they were.
ND2NZ_PAD = {("ND", "Nz"): PAD_ROWS, ("DN", "Zn"): PAD_COLS}


def _pad_dir(t: TileVar, v: GmView, mode: int) -> int:
    """Which tail TLOAD pads (lib/memory.py NO_PAD / PAD_ROWS / PAD_COLS), see the docstring."""
    ty = t.type
    if mode == NZ:
        return NO_PAD
    if ty.slayout != "NoneBox":
        return ND2NZ_PAD.get((v.layout, ty.layout_name), NO_PAD) if ty.fractal == 512 else NO_PAD
    if ty.pad == "Null":
        return NO_PAD
    return PAD_ROWS if mode == ROW else PAD_COLS


def _consecutive(t: TileVar, v: GmView, mode: int) -> bool:
    """Whether the tile is unboxed and its lines are consecutive in GM (their stride is the
    constant 1), as in most kernels: then move_rows moves it."""
    if t.type.slayout != "NoneBox":
        return False
    stride = _line_stride(v, mode)[1]
    return is_static(stride) and stride == 1


def _mover(name: str, t: TileVar) -> L.Fn:
    """lib/memory.py's ``name`` for a boxed tile (through copy_runs), its ``_lines`` form for an
    unboxed one (ND row-major, DN column-major: line by line, a fraction of the compile)."""
    return L.lib(f"memory.{name}" if t.type.slayout != "NoneBox" else f"memory.{name}_lines")


def _one_run(t: TileVar, v: GmView, mode: int) -> bool:
    """Whether a view whose lines are consecutive (_consecutive) is one run of GM, and the tile
    rows it fills are one run of storage too: one row, or whole rows of both (the view's row
    stride and the tile's row both the view's width)."""
    if mode != ROW or not all(is_static(s) and s == 1 for s in v.shape[:3]):
        return False
    rows, cols, step = v.shape[3], v.shape[4], v.strides[3]
    if is_static(rows) and rows == 1:
        return True
    return is_static(cols) and is_static(step) and cols == step == t.type.cols


def _move_rows(store: bool, t: TileVar, v: GmView, mode: int) -> L.Call:
    """An unboxed tile's lines consecutive in GM, nothing padded: lib/memory.py's move_rows, one
    small compile serving TLOAD and TSTORE alike; its move_run when both sides are one run."""
    if _one_run(t, v, mode):
        return L.Call(L.lib("memory.move_run"), (L.lit(store), L.tile(t), ("gm", v.tensor),
                                                  ("int", v.offset), ("int", v.shape[3]),
                                                  ("int", v.shape[4]), L.err()))
    return L.Call(L.lib("memory.move_rows"), (L.lit(store), L.tile(t), L.lit(mode)) + L.view(v) + (L.err(),))


def lower_tload(node, soc) -> list[L.Call]:
    t, v = node.operands
    ty = t.type
    mode = transfer_mode(node, soc)
    boxed = ty.slayout != "NoneBox"
    pad = _pad_dir(t, v, mode)
    if pad == NO_PAD and _consecutive(t, v, mode):
        return L.bounds(v) + [_move_rows(False, t, v, mode)]
    args = (L.tile(t), L.lit(ty.rows), L.lit(ty.cols), L.lit(mode), L.lit(pad),
            L.const(0, ty.dtype.storage) if boxed else pad_value(t), L.lit(32 // ty.dtype.itemsize)) \
        + L.view(v) + (L.err(),)
    return L.bounds(v) + [L.Call(_mover("tload", t), args)]


_ADD_FN = {"f16": "memory.tstore_add_f16", "bf16": "memory.tstore_add_bf16"}


def lower_tstore(node, soc) -> list[L.Call]:
    v, t = node.operands[:2]
    if t.type.loc == "Acc":
        return lower_store_acc(node, soc)
    mode = transfer_mode(node, soc)
    args = L.view(v) + (L.tile(t), L.lit(mode), L.err())
    if node.params.get("atomic", "None") == "AtomicAdd":
        if t.type.loc != "Vec":
            raise NotSimulatedError(f"TSTORE(atomic='AtomicAdd') from a {t.type.loc} tile is not "
                                    "simulated yet", rule="the simulator adds Vec tiles into GM",
                                    fix="store a Vec tile")
        fn = _ADD_FN.get(v.tensor.dtype.short, "memory.tstore_add")
        return L.bounds(v) + [L.Call(L.lib(fn), args)]
    if _consecutive(t, v, mode):
        return L.bounds(v) + [_move_rows(True, t, v, mode)]
    return L.bounds(v) + [L.Call(_mover("tstore", t), args)]


def emit_tstore(node, soc, cx) -> str:
    """TSTORE(gm, tile), or TSTORE<Tile, GlobalTensor, AtomicType::AtomicAdd>(gm, tile)."""
    v, t = node.operands[:2]
    gm, tile = cx.operand(v), cx.operand(t)
    if FX.relu_of(node):
        return (f"TSTORE<decltype({tile}), decltype({gm}), AtomicType::AtomicNone, "
                f"ReluPreMode::NormalRelu>({gm}, {tile}"
                + (f", (uint64_t)({cx.expr(node.operands[2])})" if len(node.operands) == 3 else "") + ");")
    if len(node.operands) == 3:
        return f"TSTORE({gm}, {tile}, (uint64_t)({cx.expr(node.operands[2])}));"
    if node.params.get("atomic", "None") == "None":
        return f"TSTORE({gm}, {tile});"
    return (f"TSTORE<decltype({tile}), decltype({gm}), AtomicType::{node.params['atomic']}>"
            f"({gm}, {tile});")


# -- TPREFETCH -------------------------------------------------------------------------------------

def lower_tprefetch(node, soc) -> list[L.Call]:
    """Only the view's bounds: the tile's bytes stay as they were (see the module docstring)."""
    _, v = node.operands
    return L.bounds(v)


# -- MGATHER / MSCATTER ------------------------------------------------------------------------------

def _gather_parts(node) -> tuple[TileVar, GmView, TileVar]:
    """(data tile, GM view, index tile) of MGATHER(dst, gm, idx) / MSCATTER(gm, src, idx)."""
    a, b, idx = node.operands
    return (a, b, idx) if node.name == "MGATHER" else (b, a, idx)


def check_gather(node, soc) -> None:
    from ..isa import TABLE
    data, v, idx = _gather_parts(node)
    if not TABLE[node.name].dtypes_on(soc.name):
        raise DTypeError(f"{node.name} does not exist on {soc.name}: no element type is legal there",
                         rule=f"{node.name} is an a5 SIMT instruction (a2a3 has no implementation)",
                         fix="use pypto.init(soc='a5'), or TGATHER/TSCATTER between tiles")
    what = "dst" if node.name == "MGATHER" else "src"
    if idx.type.rows != data.type.rows:
        raise TileError(f"{node.name}: idx {idx.name} has {idx.type.rows} rows but {what} {data.name} "
                        f"has {data.type.rows}",
                        rule=f"{node.name} needs idx.Rows == {what}.Rows (one index row per data row)",
                        fix=f"declare {idx.name} with {data.type.rows} rows")
    if idx.type.cols != data.type.cols:
        raise TileError(f"{node.name}: idx {idx.name} has {idx.type.cols} columns but {what} "
                        f"{data.name} has {data.type.cols}",
                        rule=f"{node.name} takes one index per element: idx.Cols == {what}.Cols (the "
                             "NPU's row-indexed form needs an (N, 1) index tile, which no legal ND "
                             "tile of 4-byte indices is)",
                        fix=f"declare {idx.name} with {data.type.cols} columns")
    if v.layout != "ND" or any(is_runtime(d) or d != 1 for d in v.shape[:3]):
        raise LayoutError(f"{node.name}: the GM table {v.tensor.name} is a {v.layout} view of shape "
                          f"{tuple(v.shape)}",
                          rule=f"{node.name}'s GM operand is an ND view of shape (1, 1, 1, rows, cols) "
                               "(a 1-D or 2-D tensor or window)",
                          fix="pass the tensor itself, or a 2-D slice of it")


def _gather_args(node) -> tuple:
    data, v, idx = _gather_parts(node)
    return L.tile(data), L.view(v)[:2], L.tile(idx)


def lower_mgather(node, soc) -> list[L.Call]:
    data, gm, idx = _gather_args(node)
    return [L.Call(L.lib("memory.mgather"), (data,) + gm + (idx, L.err()))]


def lower_mscatter(node, soc) -> list[L.Call]:
    data, gm, idx = _gather_args(node)
    return [L.Call(L.lib("memory.mscatter"), gm + (data, idx, L.err()))]


def emit_tload(node, soc, cx) -> str:
    """TLOAD(tile, gm); a DN view into an MX scale tile (Nn, fractal 32) is the NPU's MX_B_DN
    GlobalTensor: shape (1, 1, N, K/64, 2), strides (.., .., row, 2, 1)."""
    t, v = node.operands[:2]
    if v.layout == "DN" and t.type.fractal == 32 and t.type.layout_name == "Nn":
        return f"TLOAD({cx.operand(t)}, {cx.mx_view(v, 'MX_B_DN')});"
    return f"TLOAD({cx.operand(t)}, {cx.operand(v)});"


register(Unit("TLOAD", check=check_view, sim=lower_tload, emit=emit_tload, guards=view_guards))
register(Unit("TSTORE", check=check_view, sim=lower_tstore, emit=emit_tstore, guards=view_guards))
register(Unit("TSTORE_FP", check=check_view, sim=lower_store_acc, emit=E.call("TSTORE_FP"),
              guards=view_guards))
register(Unit("TPREFETCH", sim=lower_tprefetch, emit=E.call("TPREFETCH")))
register(Unit("MGATHER", check=check_gather, sim=lower_mgather, seed="gather", emit=E.call("MGATHER")))
register(Unit("MSCATTER", check=check_gather, sim=lower_mscatter, seed="scatter", emit=E.call("MSCATTER")))
