"""Chrome trace JSON (Perfetto, chrome://tracing) and a matplotlib Gantt chart of a timeline.

One process per core ("AIC 3 (block 3)"), one thread per pipe named as in CANN's pipeline view,
instructions as complete ("X") slices, waits as slices of category "sync" (stalls, not busy),
flags as flow arrows from the set_flag to the instruction after the wait. Times are whole
multiples of 2**-12 us (a quarter nanosecond, under half a cycle): sums of such numbers are exact
in floating point, so a slice's ts + dur is exactly the next slice's ts and a one-cycle slice is
never empty (with decimal nanoseconds back-to-back slices overlapped by one ulp and set_flags
rounded to nothing, and a viewer then mis-nested them).
"""
from __future__ import annotations

import bisect
from typing import Any

from .schedule import LANE_NAMES, LANES, CoreRun


_TICKS_PER_US = 4096


def _ticks(cyc: float, mhz: float) -> int:
    """Cycles as whole ticks of 2**-12 us."""
    return int(round(cyc * _TICKS_PER_US / mhz))


def chrome_trace(runs: list[CoreRun], mhz: float, meta: dict[str, Any]) -> dict:
    """The timeline as a Chrome trace event object."""
    ev: list[dict] = []
    for run in runs:
        pid = run.core + 1
        blocks = ", ".join(str(b) for b in run.blocks)
        ev.append({"ph": "M", "name": "process_name", "pid": pid,
                   "args": {"name": f"{run.kind} {run.core} (block {blocks})"}})
        ev.append({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}})
        for tid, lane in enumerate(LANES, 1):
            ev.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                       "args": {"name": LANE_NAMES[lane]}})
            ev.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                       "args": {"sort_index": tid}})
        tids = {lane: i for i, lane in enumerate(LANES, 1)}
        for s in run.slices:
            a, b = _ticks(s.start, mhz), _ticks(s.end, mhz)
            if s.kind == "wait" and b <= a:
                continue                      # a wait that did not stall: no slice
            args = {"cyc": [round(s.start, 1), round(s.end, 1)]}
            if s.tail:
                args["in_flight_after"] = round(s.tail, 1)     # latency: busy, pipe free
            if s.bytes:
                args["bytes"] = s.bytes
            if s.line is not None:
                args["line"] = s.line
            cat = s.pipe if s.kind == "instr" else "setup" if s.kind == "start" else "sync"
            ev.append({"ph": "X", "name": s.name, "cat": cat,
                       "pid": pid, "tid": tids[s.pipe], "ts": a / _TICKS_PER_US,
                       "dur": (b - a) / _TICKS_PER_US,
                       "args": args})
            if s.flow is not None and s.kind == "set":
                ev.append({"ph": "s", "id": s.flow, "name": s.name.split(" ", 1)[1], "cat": "flag",
                           "pid": pid, "tid": tids[s.pipe], "ts": a / _TICKS_PER_US})
        # each flow ends inside the first slice its pipe starts at or after the wait's end (a
        # pipe's slices are in time order: its instructions run one after another)
        starts: dict[str, list] = {}
        for s in run.slices:
            if s.kind == "instr":
                starts.setdefault(s.pipe, []).append(_ticks(s.start, mhz))
        for s in run.slices:
            if s.kind == "wait" and s.flow is not None:
                t, after = _ticks(s.end, mhz), starts.get(s.pipe, [])
                i = bisect.bisect_left(after, t)
                nxt = after[i] if i < len(after) else t
                ev.append({"ph": "f", "bp": "e", "id": s.flow, "name": s.name.split(" ", 1)[1],
                           "cat": "flag", "pid": pid, "tid": tids[s.pipe], "ts": nxt / _TICKS_PER_US})
    return {"displayTimeUnit": "ns", "otherData": meta, "traceEvents": ev}


def plot(runs: list[CoreRun], mhz: float, title: str, path: str, core: int = 0) -> None:
    """A per-pipe Gantt chart of one core with its busy ratios (matplotlib: pip install
    matplotlib, or pypto[plot])."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from ..errors import TimelineError
        raise TimelineError("Timeline.plot needs matplotlib",
                            rule="plots are an optional extra",
                            fix="pip install matplotlib (or pip install 'pypto[plot]'), or save the "
                                "trace with .save('k.json') and open it in ui.perfetto.dev") from None
    run = runs[core]
    total = max(run.end, 1e-9)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 3.6), gridspec_kw={"width_ratios": [5, 1]})
    colours = {"instr": "tab:blue", "set": "tab:green", "wait": "tab:red", "barrier": "tab:gray"}
    for y, lane in enumerate(LANES):
        tails = [(s.end / mhz, s.tail / mhz) for s in run.slices if s.pipe == lane and s.tail > 0]
        if tails:                                  # transfers in flight: the pipe counts as busy
            ax.broken_barh(tails, (y - 0.25, 0.5), facecolors="lightsteelblue")
        for kind in colours:
            bars = [(s.start / mhz, (s.end - s.start) / mhz) for s in run.slices
                    if s.pipe == lane and s.kind == kind and s.end > s.start]
            if bars:
                ax.broken_barh(bars, (y - 0.4, 0.8), facecolors=colours[kind])
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=colours["instr"], label="busy"),
                       Patch(color="lightsteelblue", label="transfer in flight (latency)"),
                       Patch(color=colours["wait"], label="waiting on a flag")],
              loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3, fontsize="small")
    first = min((s.start for s in run.slices if s.kind != "start"), default=0.0)
    ax.set_xlim(first / mhz, total / mhz)         # from the core's first instruction
    ax.set_yticks(range(len(LANES)), [LANE_NAMES[p] for p in LANES])
    ax.invert_yaxis()
    ax.set_xlabel("time (us)")
    ax.set_title(title)
    ratios = [run.busy.get(p, 0.0) / total for p in LANES]
    bx.barh(range(len(LANES)), ratios, color="tab:blue")
    bx.set_xlim(0, 1)
    bx.set_yticks([])
    bx.invert_yaxis()
    bx.set_title("busy")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["chrome_trace", "plot"]
