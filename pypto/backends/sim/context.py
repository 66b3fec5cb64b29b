"""The per-launch runtime context, shared by compiled and eager code.

Each worker that runs blocks of a launch (the launching thread, or a pool thread) has its own
on-chip memory, as each AI core does, and its own error record and event buffer. On-chip memory
is poisoned at the start of every block in both modes, the same bytes the same way, so a result
never depends on the mode, the thread count, or what an earlier launch left behind.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from .. import errcodes as E

# an event row: site, block, pipe code, order, then (rows, cols) of up to two dynamic tiles
EVENT_COLUMNS = 8


class OnChip:
    """One worker's on-chip spaces (byte arrays of the SoC's real capacities), reused across
    launches by the thread that owns them; ``poison`` refills the bytes a block may read."""

    def __init__(self, soc, fill: int):
        self.fill = fill
        self.spaces = _Spaces(soc, fill)
        self._typed: dict[tuple[str, str], np.ndarray] = {}

    def typed(self, loc: str, storage: str) -> np.ndarray:
        """Space ``loc`` viewed as elements of ``storage`` (compiled kernels slice tiles from it)."""
        v = self._typed.get((loc, storage))
        if v is None:
            b = self.spaces[loc]
            dt = np.dtype(storage)
            v = self._typed[(loc, storage)] = b[:len(b) - len(b) % dt.itemsize].view(dt)
        return v

    def poison(self, extents: dict[str, int]) -> None:
        for loc, n in extents.items():
            self.spaces[loc][:n] = self.fill

    def poison_range(self, loc: str, lo: int, hi: int) -> None:
        self.spaces[loc][lo:hi] = self.fill


class _Spaces(dict):
    """location -> byte array of the SoC's capacity, made on first use (a session that only uses
    UB allocates no L1)."""

    def __init__(self, soc, fill: int):
        super().__init__()
        self.soc, self.fill = soc, fill

    def __missing__(self, loc: str) -> np.ndarray:
        arr = self[loc] = np.full(self.soc.space(loc).capacity, self.fill, np.uint8)
        return arr


class OnChipPool:
    """Thread-local OnChip sets: every thread that runs blocks gets its own."""

    def __init__(self, soc, fill: int):
        self.soc, self.fill = soc, fill
        self._local = threading.local()

    def mine(self) -> OnChip:
        oc = getattr(self._local, "onchip", None)
        if oc is None:
            oc = self._local.onchip = OnChip(self.soc, self.fill)
        return oc


@dataclass
class WorkerRecord:
    """What one worker reports back: its error record, events, and (for the checkers to come)
    which on-chip bytes were written by which pipe."""
    err: np.ndarray = field(default_factory=lambda: np.zeros(E.SIZE, np.int64))
    events: np.ndarray = field(default_factory=lambda: np.zeros((1, EVENT_COLUMNS), np.int64))
    written: dict | None = None

    @property
    def failed(self) -> bool:
        return int(self.err[0]) != 0

    def reset(self, strict: bool) -> None:
        """Ready for a launch: no error, no events, the strict-checks flag set."""
        self.err.fill(0)
        self.err[E.STRICT] = int(strict)
        self.events[0, 0] = 0


@dataclass
class LaunchContext:
    """One launch: its workers' records, merged when they finish."""
    kernel: str
    event_capacity: int = 0
    strict: bool = False
    records: list[WorkerRecord] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def worker(self) -> WorkerRecord:
        rec = WorkerRecord()
        if self.event_capacity:
            rec.events = np.zeros((self.event_capacity + 1, EVENT_COLUMNS), np.int64)
        rec.reset(self.strict)
        with self._lock:
            self.records.append(rec)
        return rec

    def first_fault(self) -> WorkerRecord | None:
        """The fault of the lowest faulting block, as a serial run would report it."""
        bad = [r for r in self.records if r.failed]
        return min(bad, key=lambda r: int(r.err[E.BLOCK])) if bad else None

    def dropped(self) -> int:
        """Events counted past a worker's capacity (not recorded)."""
        return sum(max(0, int(r.events[0, 0]) - (len(r.events) - 1)) for r in self.records)

    def events(self) -> np.ndarray:
        """All recorded events, rows of (site, block, pipe code, order in its worker's buffer,
        dynamic tile sizes: lib/context.py), sorted by block, then in the order they ran."""
        rows = [r.events[1:1 + min(int(r.events[0, 0]), len(r.events) - 1)] for r in self.records]
        rows = [x for x in rows if len(x)]
        if not rows:
            return np.zeros((0, EVENT_COLUMNS), np.int64)
        allr = np.concatenate(rows)
        return allr[np.lexsort((allr[:, 3], allr[:, 1]))]
