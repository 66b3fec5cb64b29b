"""Where does the time go: a kernel's launch laid out on each core's pipes by a per-SoC cost model.

``pypto.timeline(kern, *args, grid=N)`` runs the kernel on the simulator with its event buffer on
(both modes record the same stream), prices every instruction (timing/model.py, parameters in
isa/costs.py), lays the stream out per core (timing/schedule.py) and returns a ``Timeline``:
cycles and time per core, per-pipe busy ratios, the slices, ``.save("k.json")`` (Chrome trace
JSON for Perfetto / chrome://tracing) and ``.plot("k.png")``. With timing off nothing is
recorded and nothing is priced.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import runtime
from ..errors import TimelineError
from ..isa.costs import cost_table
from ..isa.soc import MAX_BLOCK_DIM
from ..backends.sim.options import MAX_EVENTS
from ..tensor import Tensor
from .schedule import LANE_NAMES, LANES, CoreRun, Slice, busy_cycles, schedule
from .trace import chrome_trace, plot

MODEL = "pypto-cost 0.1"
BW_MODEL = "l2+hbm"
DEFAULT_EVENTS = 2_000_000
MAX_TRACE_SLICES = 500_000


@dataclass
class Timeline:
    """A launch on the simulated chip: per-core runs of per-pipe slices, in cycles."""
    kernel: str
    soc: str
    clock_mhz: float
    runs: list[CoreRun]
    inputs: tuple                 # (events, sites, soc profile, tensor sizes): to re-price

    @property
    def events(self) -> int:
        """How many events the launch recorded."""
        return len(self.inputs[0])

    @property
    def cycles(self) -> float:
        """Cycles from the launch to the last core's end."""
        return max((r.end for r in self.runs), default=0.0)

    @property
    def seconds(self) -> float:
        return self.cycles / (self.clock_mhz * 1e6)

    def busy(self, core: int | None = None) -> dict[str, float]:
        """Busy ratio per pipe: occupancy cycles over the kernel's cycles (waits excluded, as
        msprof's aic_*_ratio), of one core or averaged over the cores used."""
        total = self.cycles or 1.0
        runs = self.runs if core is None else [self.runs[core]]
        return {p: sum(r.busy.get(p, 0.0) for r in runs) / (total * max(1, len(runs))) for p in LANES}

    def by_instruction(self) -> dict[str, float]:
        """Busy ratio per instruction name (TLOAD, TMATMUL, ...), averaged over the cores."""
        total = (self.cycles or 1.0) * max(1, len(self.runs))
        out: dict[str, float] = {}
        for r in self.runs:
            by_name: dict[str, list] = {}
            for s in r.slices:
                if s.kind == "instr":
                    by_name.setdefault(s.name, []).append(s)
            for name, ss in by_name.items():
                out[name] = out.get(name, 0.0) + busy_cycles(ss) / total
        return out

    def reprice(self, params: dict[str, float]) -> "Timeline":
        """The same recorded launch laid out with some cost parameters changed (no re-run)."""
        ev, sites, soc, sizes = self.inputs
        table = _table(soc.name, params)
        return Timeline(self.kernel, self.soc, table["clock_mhz"], schedule(ev, sites, soc, table, sizes),
                        self.inputs)

    def slices(self, core: int = 0) -> list[Slice]:
        return self.runs[core].slices

    def meta(self) -> dict[str, Any]:
        return {"soc": self.soc, "clock_mhz": self.clock_mhz, "model": MODEL, "bw_model": BW_MODEL,
                "kernel": self.kernel, "cycles": round(self.cycles, 1)}

    def _cores(self, cores) -> list[CoreRun]:
        if cores is None:                 # ~150 bytes per event: big launches keep core 0
            total = sum(len(r.slices) for r in self.runs)
            cores = range(len(self.runs)) if total <= MAX_TRACE_SLICES else [0]
        if _whole(cores):
            cores = [cores]
        try:
            picked = list(cores)
        except TypeError:
            picked = [cores]
        for c in picked:
            self._check_core(c, "cores")
        return [self.runs[c] for c in picked]

    def _check_core(self, c: Any, what: str) -> None:
        if not _whole(c) or not 0 <= c < len(self.runs):
            raise TimelineError(f"Timeline: {what}={c!r} is not a core of this launch",
                                rule=f"cores are numbered 0..{len(self.runs) - 1} (one per block)",
                                fix="pass a core index, or leave the argument out")

    @staticmethod
    def _check_path(path: Any, what: str) -> None:
        if not isinstance(path, (str, os.PathLike)) or not str(path) or "\0" in str(path):
            raise TimelineError(f"Timeline.{what}({path!r}): not a file path",
                                rule=f"Timeline.{what} writes a file", fix=f"pass a path, e.g. "
                                f"t.{what}('k.{'json' if what == 'save' else 'png'}')")

    def trace(self, cores=None) -> dict:
        """The Chrome trace event object (what ``save`` writes)."""
        runs = self._cores(cores)
        meta = dict(self.meta(), cores=[r.core for r in runs])
        return chrome_trace(runs, self.clock_mhz, meta)

    def save(self, path: str, cores=None) -> str:
        """Write Chrome trace JSON: open it in https://ui.perfetto.dev or chrome://tracing.
        ``cores`` picks the cores written (default: all, or core 0 alone past 500,000 slices)."""
        self._check_path(path, "save")
        trace = self.trace(cores)
        try:
            with open(path, "w", encoding="utf-8") as f:
                json.dump(trace, f)
        except OSError as e:
            raise TimelineError(f"Timeline.save: cannot write {path}: {e.strerror or e}",
                                rule="the trace is written to the path given",
                                fix="pass a path in a writable directory") from None
        return path

    def plot(self, path: str, core: int = 0) -> str:
        """Draw one core's pipes as a Gantt chart with busy bars (needs matplotlib)."""
        self._check_path(path, "plot")
        self._check_core(core, "core")
        try:
            plot(self.runs, self.clock_mhz, f"{self.kernel} on {self.soc}, core {core}", path, core)
        except (OSError, ValueError) as e:          # an unwritable path, an unknown extension
            raise TimelineError(f"Timeline.plot: cannot write {path}: {e}",
                                rule="the chart is written to the path given, in the format its "
                                     "extension names", fix="pass e.g. 'k.png' in a writable directory") from None
        return path

    def __str__(self) -> str:
        lines = [f"timeline of {self.kernel} on {self.soc} ({self.clock_mhz:g} MHz): "
                 f"{self.cycles:,.0f} cycles = {self.seconds * 1e6:,.2f} us on {len(self.runs)} "
                 f"{self.runs[0].kind if self.runs else ''} core(s), {self.events:,} events"]
        b = self.busy()
        lines.append("  busy: " + ", ".join(f"{LANE_NAMES[p]} {b[p]:.1%}" for p in LANES if b[p] > 0))
        ins = sorted(self.by_instruction().items(), key=lambda kv: -kv[1])
        lines.append("  by instruction: " + ", ".join(f"{k} {v:.1%}" for k, v in ins[:8]))
        return "\n".join(lines)

    __repr__ = __str__


def timeline(kern, *args: Any, grid: int = 1, events: int = DEFAULT_EVENTS,
             params: dict[str, float] | None = None) -> Timeline:
    """Run ``kern[grid](*args)`` on the simulator recording its instruction stream, and lay it
    out on the SoC's pipes. ``events`` caps the events recorded per worker thread; ``params``
    overrides cost-model parameters by name (see pypto.isa.costs)."""
    session = runtime.current()
    _check_options(grid, events, params)
    if not callable(getattr(kern, "trace_for", None)):
        raise TimelineError(f"pypto.timeline({kern!r:.60}, ...): not a kernel",
                            rule="pypto.timeline lays out one launch of a @pypto.kernel function",
                            fix="pass the decorated kernel and its arguments: pypto.timeline(k, x, y)")
    backend = session.backend
    recording = getattr(backend, "recording", None)
    if recording is None:
        raise TimelineError(f"pypto.timeline on the {backend.name} backend",
                            rule="the timeline prices the simulator's recorded instruction stream",
                            fix="pypto.init(backend='sim') (the same kernel runs there unchanged)")
    table = _table(session.soc.name, params)         # a bad name fails before anything runs
    # Auto mode's flags are inserted when a kernel is traced; eager mode runs the body without
    # them (they change no result). Its timeline comes from the compiled stream, which has them.
    mode, own = None, getattr(kern, "mode", None)
    if (own or backend.default_mode()) == "eager" and _auto_flags(kern, args):
        mode = "compiled"
    try:
        if mode:
            kern.mode = None
        with recording(events, mode):
            kern[grid](*args)
            ev, sites = backend.last_events, list(backend.last_event_sites)
    finally:
        if mode:
            kern.mode = own
    if backend.last_events_dropped:
        raise TimelineError(f"pypto.timeline: the event buffer filled ({len(ev):,} events kept, "
                            f"{backend.last_events_dropped:,} dropped)",
                            rule="every instruction of the launch must be recorded to lay it out",
                            fix=f"pass events= larger than {events:,} (events per worker thread)")
    sizes = {i: int(a.nbytes) for i, a in enumerate(args) if isinstance(a, Tensor)}
    runs = schedule(ev, sites, session.soc, table, sizes)
    return Timeline(getattr(kern, "name", "kernel"), session.soc.name, table["clock_mhz"], runs,
                    (ev, sites, session.soc, sizes))


def _auto_flags(kern, args) -> bool:
    """The kernel is in auto mode: its flags are inserted by tracing (marked ``auto``)."""
    from ..ir.nodes import Sync, walk
    traced = getattr(kern, "traced", None)
    return traced is not None and any(isinstance(s, Sync) and s.auto for s in walk(traced(*args).body))


def _whole(v: Any) -> bool:
    """A Python or numpy integer, not a bool."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _check_options(grid: Any, events: Any, params: Any) -> None:
    """timeline()'s keyword arguments, before anything runs."""
    if not _whole(grid) or not 1 <= grid <= MAX_BLOCK_DIM:
        raise TimelineError(f"pypto.timeline: grid={grid!r} is not a block count",
                            rule=f"grid is the launch's block count, 1..{MAX_BLOCK_DIM}", fix="pass grid=1 or more")
    if not _whole(events) or not 1 <= events <= MAX_EVENTS:
        raise TimelineError(f"pypto.timeline: events={events!r} is not a count from 1 to {MAX_EVENTS:,}",
                            rule="events caps the instructions recorded per worker thread",
                            fix=f"leave it out (default {DEFAULT_EVENTS}) or pass a positive int")
    if params is not None and (not isinstance(params, dict) or not all(
            isinstance(k, str) and isinstance(v, (int, float, np.integer, np.floating))
            and not isinstance(v, bool) and math.isfinite(v) for k, v in params.items())):
        raise TimelineError(f"pypto.timeline: params={params!r:.80} is not a dict of parameter names "
                            "to numbers", rule="params overrides cost-model parameters by name",
                            fix="pass e.g. params={'gm_bw_bytes_per_cycle': 64.0} (see pypto.isa.costs)")


def _table(soc: str, params: dict[str, float] | None) -> dict[str, float]:
    """The SoC's cost parameters as plain numbers, with ``params`` overriding some by name."""
    table = {k: f.value for k, f in cost_table(soc).items()}
    for k, v in (params or {}).items():
        if k not in table:
            raise TimelineError(f"cost parameter {k!r} does not exist",
                                rule="parameters are the SoC's cost table (pypto.isa.costs)",
                                fix=f"use one of {', '.join(sorted(table))}")
        table[k] = float(v)
    return table


__all__ = ["timeline", "Timeline", "MODEL"]
