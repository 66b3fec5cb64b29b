"""One cost function per instruction family: pipe occupancy and latency from the operands.

Occupancy is how long an instruction keeps its pipe busy (it counts toward utilisation);
latency is how much later its results (and a set_flag after it) become visible, without
blocking the pipe. Parameters come from the SoC's table (pypto/isa/costs.py); a family is
chosen from the instruction's pipe and category in the ISA table, so a new instruction gets a
cost without a list to update. Sizes are the operands' valid regions (a dynamic one as the
recorded event had it) and GM view shapes (a runtime-shaped view at its tile's valid region).
"""
from __future__ import annotations

import math
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Callable

from ..ir.nodes import GmView, InstrNode, TileVar
from ..isa import TABLE
from ..isa.costs import SLOW_VECTOR_OPS, VECTOR_LATENCY


@dataclass(frozen=True)
class Cost:
    """What one instruction costs on its pipe: cycles busy, cycles until visible, bytes moved
    (0 for compute) and the GM tensor a transfer reads or writes (for the bandwidth model)."""
    occupancy: float
    latency: float = 0.0
    bytes: int = 0
    tensor: int | None = None
    family: str = ""
    rate: float = 0.0             # bytes per cycle the occupancy assumed (GM transfers)


def _int(x, default: int) -> int:
    return x if isinstance(x, int) else default


# runtime (rows, cols) of dynamic tiles, by object id, while one recorded event is priced
_SIZES: ContextVar[dict] = ContextVar("pypto_timing_sizes", default={})


def valid(t: TileVar) -> tuple[int, int]:
    """A tile's valid (rows, cols): the static values, the runtime ones the event recorded for a
    dynamic tile, else the tile's shape."""
    got = _SIZES.get().get(id(t))
    if got is not None:
        return got
    return _int(t.valid[0], t.type.rows), _int(t.valid[1], t.type.cols)


def _tiles(n: InstrNode) -> list[TileVar]:
    return [o for o in n.operands if isinstance(o, TileVar)]


def _view(n: InstrNode) -> GmView | None:
    return next((o for o in n.operands if isinstance(o, GmView)), None)


def _bursts(v: GmView | None, tile: TileVar | None) -> tuple[int, int]:
    """(bursts, bytes per burst) of a GM transfer: one burst per row of an ND view (per column
    of a DN one), the view's static shape or else the tile's valid region."""
    item = (v.tensor.dtype if v is not None else tile.type.dtype).itemsize
    shape = v.shape if v is not None else None
    if shape is not None and all(isinstance(s, int) for s in shape):
        s0, s1, s2, s3, s4 = shape
        if v.layout == "DN":
            return s0 * s1 * s2 * s4, s3 * item
        return s0 * s1 * s2 * s3, s4 * item
    r, c = valid(tile)
    return (c, r * item) if tile.type.blayout == "ColMajor" and tile.type.slayout == "NoneBox" \
        else (r, c * item)


def _dma(n: InstrNode, p: dict, rate_of, latency: float, family: str) -> Cost:
    """A GM transfer: set-up, bursts, and whole 32-byte blocks of every burst at
    ``rate_of(tile)`` bytes per cycle."""
    tiles = _tiles(n)
    tile = tiles[0] if tiles else None
    v = _view(n)
    bursts, row = _bursts(v, tile)
    g = p["dma_gran"]
    eff = bursts * math.ceil(row / g) * g
    rate = rate_of(tile)
    occ = p["dma_fixed"] + bursts * p["dma_burst"] + eff / rate
    return Cost(occ, latency, int(eff), v.tensor.index if v is not None else None, family, rate)


def _gm_in(n: InstrNode, p: dict) -> Cost:
    """TLOAD / TPREFETCH (MTE2): at the L2 rate (times the ND->Nz efficiency into a boxed L1
    tile); the bandwidth model rescales GM-bound bytes."""
    return _dma(n, p, lambda t: p["l2_bpc"] * (p["nd2nz_eff"] if t is not None and
                                               t.type.slayout != "NoneBox" else 1.0),
                p["load_latency"], "gm_in")


def _gm_out(n: InstrNode, p: dict) -> Cost:
    """TSTORE from Vec/Mat (MTE3): at the UB -> GM rate."""
    return _dma(n, p, lambda t: p["mte3_bpc"], p["store_latency"], "gm_out")


def _fixpipe(n: InstrNode, p: dict) -> Cost:
    """TSTORE / TMOV / TEXTRACT out of L0C (FIX): the converted bytes at the fixpipe's rate, to
    GM or to UB/L1."""
    tiles = _tiles(n)
    src = next((t for t in tiles if t.type.loc == "Acc"), tiles[-1])
    r, c = valid(src)
    v = _view(n)
    item = v.tensor.dtype.itemsize if v is not None else tiles[0].type.dtype.itemsize
    out = r * c * item
    rate = p["fix_gm_bpc"] if v is not None else p["fix_ub_bpc"]
    return Cost(p["fix_fixed"] + out / rate, p["fix_latency"] if v is not None else 0, out,
                v.tensor.index if v is not None else None, "fixpipe")


def _l1_to_l0(n: InstrNode, p: dict) -> Cost:
    """TMOV / TEXTRACT L1 -> L0A / L0B (MTE1): bytes at the destination's rate (L0B read
    transposed when its box order differs from the source's)."""
    dst, src = _tiles(n)[:2]
    r, c = valid(dst)
    nbytes = r * c * dst.type.dtype.itemsize
    if dst.type.loc == "Left":
        rate = p["mte1_l0a_bpc"]
    elif dst.type.loc == "Right":
        rate = p["mte1_l0b_t_bpc"] if src.type.slayout != dst.type.slayout else p["mte1_l0b_bpc"]
    else:
        rate = p["l1_ub_bpc"]
    return Cost(p["mte1_fixed"] + nbytes / rate, 0, nbytes, None, "mte1")


def _cube(n: InstrNode, p: dict) -> Cost:
    """TMATMUL family (M): one 16 x k0 x 16 fractal product per cycle, k0 = 32 bytes of input;
    a GEMV (m = 1) still costs 16 rows."""
    tiles = _tiles(n)
    a = next(t for t in tiles if t.type.loc == "Left")
    b = next(t for t in tiles if t.type.loc == "Right")
    gemv = n.name.startswith("TGEMV")
    m = 1 if gemv else valid(a)[0]
    k = valid(b)[0]
    nn = valid(b)[1]
    k0 = max(1, int(p["cube_k_bytes"] // a.type.dtype.itemsize))
    mm = p["cube_m"]
    cycles = math.ceil(m / mm) * math.ceil(k / k0) * math.ceil(nn / mm)
    return Cost(p["cube_fixed"] + cycles, 0, 0, None, "cube")


def _span(n: InstrNode) -> tuple[int, int, int, bool]:
    """(elements, widest item size, rows, contiguous) of a vector instruction's destination."""
    tiles = _tiles(n)
    if not tiles:
        return 0, 4, 0, True
    dst = tiles[0]
    r, c = valid(dst)
    item = max(t.type.dtype.itemsize for t in tiles)
    return r * c, item, r, c == dst.type.cols


def _repeats(p: dict, elems: int, item: int, rows: int, contiguous: bool) -> tuple[int, int]:
    """(256-byte repeats, emitted instructions) of a vector instruction's destination."""
    rep = p["vec_repeat_bytes"]
    per_row = math.ceil((elems // max(1, rows)) * item / rep) if rows else 0
    if contiguous or rows <= 1:
        r = math.ceil(elems * item / rep)
        instrs = max(1, math.ceil(r / 255))
    else:
        r = rows * per_row
        instrs = rows * max(1, math.ceil(per_row / 255))
    return r, instrs


def _cpr(n: InstrNode, p: dict, item: int) -> float:
    if n.name in SLOW_VECTOR_OPS:
        return (p["vec_repeat_bytes"] / item) / p["vec_slow_elems"]
    return p["vec_cpr"]


def _vector(n: InstrNode, p: dict) -> Cost:
    """Elementwise, tile-scalar, expand and conversion (V): repeats of 256 bytes of the widest
    operand, one emitted instruction per contiguous region (else per row) and 255 repeats."""
    elems, item, rows, contiguous = _span(n)
    r, instrs = _repeats(p, elems, item, rows, contiguous)
    return Cost(instrs * p["vec_issue"] + r * _cpr(n, p, item),
                VECTOR_LATENCY.get(n.name, p["vec_latency"]), 0, None, "vector")


def _reduce(n: InstrNode, p: dict) -> Cost:
    """Row / column reductions (V): the source's repeats plus a per-row combine."""
    tiles = _tiles(n)
    src = tiles[1] if len(tiles) > 1 else tiles[0]
    r, c = valid(src)
    item = src.type.dtype.itemsize
    reps = r * math.ceil(c * item / p["vec_repeat_bytes"])
    return Cost(p["vec_issue"] + reps * p["vec_cpr"] + r * p["reduce_row"],
                VECTOR_LATENCY.get(n.name, p["vec_latency"]), 0, None, "reduce")


def _sort(n: InstrNode, p: dict) -> Cost:
    """TSORT32: a fixed cost per 32-element block of every row of the source; TMRGSORT: a cost
    per 8-byte record the merge emits."""
    tiles = _tiles(n)
    if n.name == "TSORT32":
        r, c = valid(tiles[1])
        work = r * math.ceil(c / 32) * p["sort32_block"]
    else:
        r, c = valid(tiles[0])
        work = r * c * tiles[0].type.dtype.itemsize / 8 * p["mrgsort_record"]
    return Cost(p["vec_issue"] + work, p["vec_latency"], 0, None, "sort")


def _gather(n: InstrNode, p: dict) -> Cost:
    elems, _, _, _ = _span(n)
    return Cost(p["vec_issue"] + elems / p["gather_elems"], p["vec_latency"], 0, None, "gather")


def _scalar(n: InstrNode, p: dict) -> Cost:
    return Cost(p["scalar_issue"], 0, 0, None, "scalar")


_SORTS = {"TSORT32", "TMRGSORT"}
_GATHERS = {"TGATHER", "TGATHERB", "TSCATTER", "MGATHER", "MSCATTER"}
_BY_PIPE: dict[str, Callable[[InstrNode, dict], Cost]] = {
    "MTE2": _gm_in, "MTE3": _gm_out, "FIX": _fixpipe, "MTE1": _l1_to_l0, "M": _cube,
    "S": _scalar, "ALL": _scalar,
}


def family(n: InstrNode) -> Callable[[InstrNode, dict], Cost]:
    """The cost function of an instruction, from its pipe and its ISA table category."""
    if n.pipe != "V":
        return _BY_PIPE.get(n.pipe or "S", _scalar)
    if n.name in _SORTS:
        return _sort
    if n.name in _GATHERS:
        return _gather
    spec = TABLE.get(n.name)
    if spec is not None and spec.category == "reduce_expand" and "EXPAND" not in n.name:
        return _reduce
    return _vector


def cost(n: InstrNode, params: dict, sizes: dict | None = None) -> Cost:
    """Occupancy and latency of instruction ``n`` with the SoC's parameter values; ``sizes``
    maps its dynamic tiles (by id) to the (rows, cols) one execution had."""
    if not sizes:
        return family(n)(n, params)
    token = _SIZES.set(sizes)
    try:
        return family(n)(n, params)
    finally:
        _SIZES.reset(token)


__all__ = ["Cost", "cost", "family", "valid"]
