"""The scheduler: a launch's recorded instruction stream laid out on each core's pipes.

The launch hands blocks to cores one by one (``block_dispatch`` cycles apart; more blocks than
cores go to the earliest-free core), and a core spends ``block_start`` cycles of scalar set-up on
each. Per block the scalar unit issues statements in program order (``scalar_issue`` cycles each)
into one in-order queue per pipe. A pipe starts its next instruction when it is issued and the
pipe is free; pipes run concurrently and are ordered only by flags and barriers:

* ``set_flag(src, dst, id)`` runs on src once src's earlier instructions are done (latency
  included) and leaves a token; ``wait_flag(src, dst, id)`` holds dst until a token is there (a
  visible stall). The set may come later in program order than the wait it releases ("reverse
  sync" pre-sets), so pipes advance as discrete events: always the pipe whose head can start
  first. All heads blocked is a deadlock, reported with the waits that can never be met.
* ``pipe_barrier(p)``: p's later instructions start after its earlier ones are done;
  ``pipe_barrier(ALL)`` holds issue until every pipe is done.

Busy ratios count a GM transfer until its data is back (its latency: the pipe may start the next
transfer meanwhile, but a profiler counts it busy), overlapping spans once.

GM bandwidth ("l2+hbm"): each byte of a GM tensor comes from HBM once and its re-reads hit L2,
except for the share by which the launch's tensors together overflow L2 (``l2_bytes``), which
comes from HBM again. Each load is charged at the L2 rate (times the ND->Nz efficiency), and its
latency grows by its tensor's HBM fraction (the bytes from HBM / the bytes loaded from it over
all cores) of ``hbm_latency``. HBM's bandwidth binds only where the launch would otherwise beat
it: if the launch takes less time than its HBM bytes need at HBM's bandwidth (``hbm_bpc`` x the
SoC's cube cores), the loads are also charged that fraction of their bytes at the core's fair
share of HBM (``hbm_bpc``), scaled so the launch lasts as long as HBM needs (linear between no
charge and the full one). The first GM load of each core's first block pays ``first_load``
cycles more (a cold core's first transfer).
"""
from __future__ import annotations

import itertools
from collections import defaultdict, deque
from dataclasses import dataclass, field

import numpy as np

from ..errors import DeadlockError
from ..ir.nodes import InstrNode, Sync, dynamic_tiles
from .model import Cost, cost

# pipe lanes in CANN's pipeline view order, with their display names
LANES = ("S", "MTE2", "MTE1", "M", "FIX", "V", "MTE3")
LANE_NAMES = {"S": "SCALAR", "MTE2": "MTE2", "MTE1": "MTE1", "M": "CUBE", "FIX": "FIXP",
              "V": "VECTOR", "MTE3": "MTE3"}
CUBE_PIPES = {"M", "MTE1", "FIX"}
# GM transfers priced at a peak rate stay busy for their latency; the fixpipe's GM rate is a
# measured effective rate that already includes it
_DMA_TAILS = {"gm_in", "gm_out"}


@dataclass
class Slice:
    """One instruction (or a flag, or a stall) on one pipe of one core, in cycles."""
    pipe: str
    start: float
    end: float
    name: str
    kind: str                      # "instr" | "set" | "wait" | "barrier" | "start"
    site: int
    line: int | None = None
    bytes: int = 0
    flow: int | None = None        # set -> wait pairs share an id
    tail: float = 0.0              # a GM transfer in flight after its pipe is free (latency)


@dataclass
class CoreRun:
    """One core's part of a launch: its blocks' slices, end and per-pipe busy cycles."""
    core: int
    kind: str                      # "AIC" | "AIV"
    blocks: list[int]
    slices: list[Slice] = field(default_factory=list)
    end: float = 0.0
    busy: dict[str, float] = field(default_factory=dict)


def busy_cycles(slices) -> float:
    """Cycles covered by the slices' occupancy plus their in-flight tails (a DMA pipe counts as
    busy until its last response is back, as the profiler's pipe ratios do), overlaps once."""
    total, lo, hi = 0.0, None, None
    for a, b in sorted((s.start, s.end + s.tail) for s in slices):
        if hi is None or a > hi:
            total += 0.0 if hi is None else hi - lo
            lo, hi = a, b
        else:
            hi = max(hi, b)
    return total + (0.0 if hi is None else hi - lo)


def _label(n) -> str:
    if isinstance(n, Sync):
        if n.kind == "pipe_barrier":
            return f"pipe_barrier {n.src}"
        return f"{n.kind} {n.src}->{n.dst} #{n.event}"
    return n.name


class _Prices:
    """Each event's cost: per site, or per (site, runtime sizes) for sites with dynamic tiles."""

    def __init__(self, sites: list, params: dict):
        self.sites, self.params = sites, params
        self.base = [cost(n, params) if isinstance(n, InstrNode) else None for n in sites]
        self.dyn = {i: ts for i, n in enumerate(sites) if isinstance(n, InstrNode)
                    for ts in [dynamic_tiles(n)] if ts}
        self.seen: dict[tuple, Cost] = {}

    def __call__(self, row: list) -> Cost | None:
        site = row[0]
        tiles = self.dyn.get(site)
        if tiles is None:
            return self.base[site]
        key = (site, row[4], row[5], row[6], row[7])
        c = self.seen.get(key)
        if c is None:
            sizes = {id(t): (key[1 + 2 * k], key[2 + 2 * k]) for k, t in enumerate(tiles)}
            c = self.seen[key] = cost(self.sites[site], self.params, sizes)
        return c


def _loaded_bytes(events, price) -> dict[int, int]:
    """Per GM tensor: the bytes loaded from it over the whole launch (every core)."""
    loaded: dict[int, int] = defaultdict(int)

    def add(c: Cost | None, times: int) -> None:
        if c is not None and c.family == "gm_in" and c.tensor is not None:
            loaded[c.tensor] += c.bytes * times
    counts = np.bincount(events[:, 0], minlength=len(price.base)) if len(events) else ()
    for site, n in enumerate(counts):       # sites of one size: their count; the rest row by row
        if n and site not in price.dyn:
            add(price.base[site], int(n))
    if price.dyn:
        for row in events[np.isin(events[:, 0], list(price.dyn))].tolist():
            add(price(row), 1)
    return loaded


def _hbm_fraction(loaded: dict[int, int], tensor_bytes: dict[int, int], l2: float) -> dict[int, float]:
    """Per GM tensor: the share of its loaded bytes that comes from HBM, the rest from L2: its
    first touch, and of its re-reads the share by which the launch's tensors overflow L2."""
    held = {t: min(tensor_bytes.get(t, b), b) for t, b in loaded.items()}   # bytes touched
    footprint = sum(held.values())
    spill = max(0.0, 1.0 - l2 / footprint) if footprint else 0.0
    first = {t: held[t] / b if b else 1.0 for t, b in loaded.items()}
    return {t: f + (1.0 - f) * spill for t, f in first.items()}


def _block(rows, sites, price, params, hbm, share, flow_ids, cold) -> tuple[list[Slice], float]:
    """Lay out one block's stream (rows of (site, block, pipe, seq, sizes)) from cycle 0.
    ``share``: how much of the fair-share HBM charge applies; ``cold``: the block is its core's
    first, whose first GM load pays ``first_load``."""
    issue, fence = 0.0, 0                  # fence: how many pipe_barrier(ALL) came before
    queues: dict[str, deque] = {p: deque() for p in LANES}
    for r in rows.tolist():
        n = sites[r[0]]
        c = price(r)
        if isinstance(n, Sync):
            if n.kind == "pipe_barrier" and n.src == "ALL":
                queues["S"].append(("barrier_all", n, int(r[0]), issue, None, fence))
                fence += 1
            else:
                queues[n.pipe if n.pipe in queues else "S"].append((n.kind, n, int(r[0]), issue,
                                                                    None, fence))
            issue += params["scalar_issue"]
            continue
        lane = n.pipe if n.pipe in queues else "S"
        if c.family == "gm_in" and c.tensor is not None and c.rate:
            f = hbm.get(c.tensor, 1.0)            # bytes from HBM: their latency, maybe their rate
            extra = c.bytes * f * share * (1 / params["hbm_bpc"] - 1 / c.rate)
            if cold:
                extra, cold = extra + params["first_load"], False
            c = Cost(c.occupancy + extra, c.latency + f * params["hbm_latency"], c.bytes, c.tensor,
                     c.family, c.rate)
        queues[lane].append(("instr", n, int(r[0]), issue, c, fence))
        issue += params["scalar_issue"] + (c.occupancy if lane == "S" else 0)
    fenced = [0.0]                         # when each pipe_barrier(ALL) completed

    free = dict.fromkeys(LANES, 0.0)       # when each pipe can start its next item
    done = dict.fromkeys(LANES, 0.0)       # when each pipe's issued work is visible
    tokens: dict[tuple, deque] = defaultdict(deque)
    slices: list[Slice] = []

    def start_of(lane):
        kind, n, site, t, c, f = queues[lane][0]
        if f >= len(fenced):               # behind a pipe_barrier(ALL) that has not completed
            return None
        s = max(t, free[lane], fenced[f])
        if kind == "wait_flag":
            q = tokens.get((n.src, n.dst, n.event))
            if not q:
                return None
            return max(s, q[0][0])
        if kind in ("set_flag", "pipe_barrier"):
            return max(s, done[lane])
        if kind == "barrier_all":
            return max(s, max(done.values()), max(free.values()))
        return s

    while any(queues.values()):
        best, when = None, None
        for lane in LANES:
            if queues[lane]:
                s = start_of(lane)
                if s is not None and (when is None or s < when):
                    best, when = lane, s
        if best is None:
            waits = [_label(q[0][1]) + (f" (line {q[0][1].site.lineno})" if q[0][1].site else "")
                     for q in queues.values() if q]
            raise DeadlockError("the timeline deadlocks: every pipe waits for a flag no set_flag "
                                f"releases: {'; '.join(waits)}",
                                rule="a wait_flag(src, dst, id) needs a set_flag(src, dst, id) "
                                     "before or after it that its pipe can reach",
                                fix="pair every wait_flag with a set_flag of the same pipes and id "
                                    "(kern.check(...) lists unmatched flags)")
        kind, n, site, t, c, f = queues[best].popleft()
        line = n.site.lineno if n.site else None
        if kind == "instr":
            end = when + c.occupancy
            slices.append(Slice(best, when, end, n.name, "instr", site, line, c.bytes,
                                tail=c.latency if c.family in _DMA_TAILS else 0.0))
            free[best] = end
            done[best] = max(done[best], end + c.latency)
        elif kind == "set_flag":
            end = when + params["flag_cost"]
            fid = next(flow_ids)
            slices.append(Slice(best, when, end, _label(n), "set", site, line, flow=fid))
            tokens[(n.src, n.dst, n.event)].append((end, fid))
            free[best] = end
            done[best] = max(done[best], end)
        elif kind == "wait_flag":
            at = max(t, free[best])
            ready, fid = tokens[(n.src, n.dst, n.event)].popleft()
            slices.append(Slice(best, at, max(at, ready), _label(n), "wait", site, line, flow=fid))
            free[best] = max(at, ready)
        elif kind == "pipe_barrier":
            slices.append(Slice(best, max(t, free[best]), when, _label(n), "barrier", site, line))
            free[best] = when
        else:                                   # pipe_barrier(ALL): every pipe drains
            slices.append(Slice("S", max(t, free["S"]), when, _label(n), "barrier", site, line))
            fenced.append(when)
            free["S"] = when
    end = max([s.end for s in slices] + list(done.values()) + [0.0])
    return slices, end


def schedule(events: np.ndarray, sites: list, soc, params: dict, tensor_bytes: dict[int, int]
             ) -> list[CoreRun]:
    """Lay out a launch's events (rows of (site, block, pipe, seq, dynamic tile sizes), by block
    then order) on the SoC's cores; returns one CoreRun per core used."""
    price = _Prices(sites, params)
    uses_cube = any(isinstance(n, InstrNode) and n.pipe in CUBE_PIPES for n in sites)
    kind, ncores = ("AIC", soc.aic_cores) if uses_cube else ("AIV", soc.aiv_cores)
    loaded = _loaded_bytes(events, price)
    hbm = _hbm_fraction(loaded, tensor_bytes, params["l2_bytes"])
    blocks = sorted(set(int(b) for b in events[:, 1])) if len(events) else []

    def place(share: float) -> list[CoreRun]:
        return _place(events, blocks, sites, price, params, hbm, share, kind, ncores)
    runs = place(0.0)
    # HBM's bandwidth binds only when the launch would be faster than HBM can deliver its bytes:
    # then the fair-share charge applies, scaled (linearly between none and all of it) to that
    need = sum(hbm[t] * b for t, b in loaded.items()) / (params["hbm_bpc"] * soc.aic_cores)
    fast = max((r.end for r in runs), default=0.0)
    if fast < need:
        full = place(1.0)
        slow = max(r.end for r in full)
        share = (need - fast) / (slow - fast) if slow > fast else 1.0
        runs = full if share == 1.0 else place(share)
    for run in runs:
        by_pipe = defaultdict(list)
        for s in run.slices:
            if s.kind in ("instr", "start"):
                by_pipe[s.pipe].append(s)
        run.busy = {p: busy_cycles(v) for p, v in by_pipe.items()}
        # the scalar unit issued every statement (one slice each), besides its own instructions
        issued = sum(1 for s in run.slices if s.kind != "start")
        run.busy["S"] = run.busy.get("S", 0.0) + issued * params["scalar_issue"]
    return runs


def _place(events, blocks, sites, price, params, hbm, share, kind, ncores) -> list[CoreRun]:
    """Hand the blocks to cores in order and lay each out (blocks with the same stream once)."""
    runs: list[CoreRun] = []
    flow_ids = itertools.count(1)
    laid: dict[tuple, tuple[list[Slice], float]] = {}
    for b in blocks:
        rows = events[events[:, 1] == b]
        cold = len(runs) < ncores                   # the core's first block of the launch
        key = (cold, rows[:, [0, 4, 5, 6, 7]].tobytes())
        fresh = key not in laid
        if fresh:
            laid[key] = _block(rows, sites, price, params, hbm, share, flow_ids, cold)
        template, end = laid[key]
        if cold:                                # the launch hands out blocks one by one
            run = CoreRun(len(runs), kind, [])
            offset = params["block_start"] + len(runs) * params["block_dispatch"]
            runs.append(run)
        else:
            run = min(runs, key=lambda r: r.end)
            offset = run.end + params["block_start"]
        if fresh and offset == 0:
            slices = template
        else:                                   # a copy: shifted, with flow ids of its own
            ids: dict[int, int] = {}
            slices = [Slice(s.pipe, s.start + offset, s.end + offset, s.name, s.kind, s.site,
                            s.line, s.bytes,
                            None if s.flow is None else ids.setdefault(s.flow, next(flow_ids)),
                            s.tail)
                      for s in template]
        run.blocks.append(b)
        if params["block_start"]:               # the scalar unit sets the block up
            run.slices.append(Slice("S", offset - params["block_start"], offset, "block start",
                                    "start", -1))
        run.slices += slices
        run.end = offset + end
    return runs


__all__ = ["schedule", "busy_cycles", "CoreRun", "Slice", "LANES", "LANE_NAMES"]
