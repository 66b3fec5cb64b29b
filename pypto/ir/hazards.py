"""The manual-mode checker: what the chip punishes and a CPU simulator hides.

Pipes run concurrently on the chip; only flags (set_flag/wait_flag), pipe_barrier and event
tokens order them. The checker follows one block's instruction stream in program order with a
vector clock per pipe (Pallas's interpret mode works the same way): an instruction on pipe p
knows what it has been ordered after, and each byte range of on-chip memory (and each GM view)
remembers its last writer and its readers since. It reports

* pipe hazards: a read (RAW) or overwrite (WAR, WAW) of bytes another pipe touched with no flag
  chain between them; on a2a3, a vector instruction depending on an earlier one with no
  pipe_barrier(PIPE_V) between them (only with checks="strict": pto-isa's own kernels do not
  always write it; auto mode inserts it);
* flag misuse: wait_flag with no set_flag pending (the chip hangs: a deadlock), set_flag twice
  without a wait, flags left set when the kernel ends;
* memory: a tile read after another tile overwrote bytes it had written (overlapping TASSIGN
  addresses, a tile in a2a3's hidden UB scratch that TSEL/TROWEXPAND<op>/... write), and reads
  of bytes never written (an error only with SimOptions(checks="strict"); otherwise a warning,
  and the simulator's poison shows them), and reads of more rows or columns of a tile than were
  written into it (static sizes);
* many devices: a TNOTIFY after a TPUT, TGET or collective with no pipe_barrier(PIPE_ALL) (or
  MTE3 -> S flag) between them; the NPU's TPUT does not hold the scalar unit, so the signal can
  reach the peer before the data (comm-semantics R2).

A traced kernel is checked once, statically: each loop's body is followed twice (the second
time sees what iteration i left for iteration i + 1). Eager mode feeds the statements it runs.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from .nodes import Assign, For, GmView, InstrNode, Kernel, SetValid, Stmt, Sync, TileVar

PIPES = ("S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX")
BINDS = frozenset({"TRESHAPE"})      # re-bind a tile to another's bytes: no data moves
# communication instructions whose data may still be in flight when the scalar unit goes on
COMM_MOVERS = frozenset({"TPUT", "TGET", "TGATHER_COMM", "TSCATTER_COMM", "TREDUCE", "TBROADCAST"})
EVENT_IDS = 8


@dataclass
class Access:
    """One instruction's touch of a byte range: its pipe, its place in that pipe's order."""
    pipe: str
    seq: int
    node: Stmt
    owner: str                 # the tile (or "GM x", or the a2a3 scratch) it went through
    write: bool
    at: int = 0                # place in program order


@dataclass
class Finding:
    """One mistake: its kind, the two statements involved, the pipes and bytes, and the fix."""
    kind: str                  # raw | war | waw | barrier | deadlock | double-set | left-set | overlap
                               # | uninit | stale
    severity: str              # "error" | "warning"
    message: str
    rule: str
    fix: str
    first: Stmt | None = None
    second: Stmt | None = None
    pipes: tuple[str, ...] = ()
    where: str = ""            # the tile / view and byte range
    at: tuple[int, int] = (0, 0)   # the two accesses' places in the checked stream

    @property
    def lines(self) -> tuple[int | None, int | None]:
        """Kernel source lines of the two statements (None where unknown)."""
        return (_line(self.first), _line(self.second))

    def error(self):
        from .. import errors as E
        cls = {"raw": E.PipeHazardError, "war": E.PipeHazardError, "waw": E.PipeHazardError,
               "barrier": E.PipeHazardError, "deadlock": E.DeadlockError,
               "double-set": E.FlagError, "left-set": E.FlagError, "overlap": E.TileOverlapError,
               "uninit": E.UninitializedReadError, "stale": E.StaleReadError,
               "comm-order": E.CommOrderError}[self.kind]
        e = cls(self.message, rule=self.rule, fix=self.fix)
        e.finding = self
        return e

    def __str__(self) -> str:
        return f"[{self.severity}] {self.kind}: {self.message}"


def _line(s: Stmt | None) -> int | None:
    return s.site.lineno if s is not None and s.site is not None else None


def _at(s: Stmt | None) -> str:
    if s is None or s.site is None:
        return "?"
    return f"{s.site.filename}:{s.site.lineno}"


def _what(s: Stmt) -> str:
    if isinstance(s, InstrNode):
        return f"{s.name} on PIPE_{s.pipe}"
    if isinstance(s, Sync):
        return s.kind
    return type(s).__name__


@dataclass
class _Range:
    space: str
    start: int | str           # bytes; a GM view's key when symbolic
    end: int | str

    def overlaps(self, o: "_Range") -> bool:
        if self.space != o.space:
            return False
        if isinstance(self.start, str) or isinstance(o.start, str):
            return self.start == o.start
        return self.start < o.end and o.start < self.end

    def covers(self, o: "_Range") -> bool:
        if self.space != o.space:
            return False
        if isinstance(self.start, str) or isinstance(o.start, str):
            return self.start == o.start
        return self.start <= o.start and o.end <= self.end

    def __str__(self) -> str:
        if isinstance(self.start, str):
            return self.start
        return f"{self.space} bytes [{self.start:#x}, {self.end:#x})"


class _Index:
    """(range, access) records, found through the 4 KiB pages (or the symbolic key) a range
    touches, so a kernel with many tiles is checked in time linear in its length."""
    PAGE = 4096

    def __init__(self):
        self.buckets: dict[tuple, list] = {}

    def _keys(self, r: _Range):
        if isinstance(r.start, str):
            return [(r.space, r.start)]
        return [(r.space, p) for p in range(r.start // self.PAGE, (r.end - 1) // self.PAGE + 1)]

    def overlapping(self, r: _Range):
        seen: set[int] = set()
        for k in self._keys(r):
            for item in self.buckets.get(k, ()):
                if id(item) not in seen and item[0].overlaps(r):
                    seen.add(id(item))
                    yield item

    def add(self, r: _Range, a: Access) -> None:
        item = (r, a)
        for k in self._keys(r):
            self.buckets.setdefault(k, []).append(item)

    def drop_covered(self, r: _Range) -> None:
        for k in self._keys(r):
            if k in self.buckets:
                self.buckets[k] = [it for it in self.buckets[k] if not r.covers(it[0])]


class _Spans:
    """The union of written byte ranges of one space, as sorted disjoint intervals."""

    def __init__(self):
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, a: int, b: int) -> None:
        i = bisect.bisect_left(self.ends, a)           # first interval ending at or after a
        j = bisect.bisect_right(self.starts, b)        # intervals starting at or before b
        if i < j:
            a, b = min(a, self.starts[i]), max(b, self.ends[j - 1])
        self.starts[i:j] = [a]
        self.ends[i:j] = [b]

    def covers(self, a: int, b: int) -> bool:
        i = bisect.bisect_right(self.starts, a) - 1
        return i >= 0 and self.ends[i] >= b


@dataclass
class Checker:
    """The state of one block's stream: feed statements in program order, then ``end()``.
    ``stop_at_error``: keep only the first error and stop following the stream there (a run that
    raises it, or never raises because the kernel turns out to be in auto mode, needs no more)."""
    soc: object
    strict: bool = False
    stop_at_error: bool = False
    findings: list[Finding] = field(default_factory=list)
    first_error: Finding | None = None

    def __post_init__(self):
        self.clock = {p: dict.fromkeys(PIPES, 0) for p in PIPES}
        self.barrier = dict.fromkeys(PIPES, 0)        # pipe's own count at its last pipe_barrier
        self.flags: dict[tuple, tuple[dict, Stmt]] = {}
        self.writes = _Index()           # the last writes of each byte range
        self.reads = _Index()            # the reads since
        self.written: dict[str, _Spans] = {}
        self.addr: dict[int, int] = {}
        self.clobbered: dict[str, list[tuple[_Range, Access]]] = {}   # owner -> its bytes others wrote
        self.valid: dict[int, tuple | None] = {}      # tile id -> its valid region now (None: runtime)
        self.filled: dict[int, tuple | None] = {}     # tile id -> (rows, cols, writer) written, None: unknown
        self.at = 0
        self._seen: set = set()
        self.in_flight: Stmt | None = None            # a comm data mover not yet fenced (R2)

    # -- the stream ----------------------------------------------------------------------------
    def feed(self, s: Stmt, iters: tuple = ()) -> None:
        if self.stop_at_error and self.first_error is not None:
            return
        if isinstance(s, InstrNode):
            self._comm_order(s)
            self._instr(s, iters)
        elif isinstance(s, Sync):
            if (s.kind == "pipe_barrier" and s.src == "ALL") or \
                    (s.kind == "wait_flag" and (s.src, s.dst) == ("MTE3", "S")):
                self.in_flight = None
            self._sync(s)
        elif isinstance(s, Assign):
            self.addr[s.tile.id] = s.addr if isinstance(s.addr, int) else None
        elif isinstance(s, SetValid):
            self.valid[s.tile.id] = _static((s.rows, s.cols))

    def end(self) -> None:
        """The kernel ends: every flag still set is a finding."""
        if self.stop_at_error and self.first_error is not None:
            return
        for (src, dst, ev), (_, site) in sorted(self.flags.items(), key=lambda kv: str(kv[0])):
            self._report(Finding(
                "left-set", "error",
                f"set_flag(PIPE_{src}, PIPE_{dst}, EVENT_ID{ev}) at {_at(site)} is never waited for",
                rule="every set_flag is consumed by one wait_flag before the kernel ends (the next "
                     "kernel on this core would see the flag already set)",
                fix=f"add pto.wait_flag(PIPE_{src}, PIPE_{dst}, EVENT_ID{ev}) after the last use, or "
                    "drop the set_flag", first=site, pipes=(src, dst)))
        self.flags.clear()

    # -- synchronisation -----------------------------------------------------------------------
    def _sync(self, s: Sync) -> None:
        if s.kind == "pipe_barrier":
            pipes = PIPES if s.src == "ALL" else (s.src,)
            if s.src == "ALL":
                joined = {q: max(self.clock[p][q] for p in PIPES) for q in PIPES}
                for p in PIPES:
                    self.clock[p] = dict(joined)
            for p in pipes:
                if p in self.barrier:
                    self.barrier[p] = self.clock[p][p]
            return
        key = (s.src, s.dst, s.event)
        if s.kind == "set_flag":
            if key in self.flags:
                prev = self.flags[key][1]
                self._report(Finding(
                    "double-set", "error",
                    f"set_flag(PIPE_{s.src}, PIPE_{s.dst}, EVENT_ID{s.event}) at {_at(s)}: the flag is "
                    f"still set from {_at(prev)}",
                    rule="a flag is set once and consumed by one wait_flag before it is set again "
                         "(the chip has one bit per (src, dst, event id))",
                    fix=f"wait for it first (pto.wait_flag(PIPE_{s.src}, PIPE_{s.dst}, EVENT_ID{s.event})), "
                        "or use another event id", first=prev, second=s, pipes=(s.src, s.dst)))
            self.flags[key] = (dict(self.clock[s.src]), s)
            return
        pending = self.flags.pop(key, None)
        if pending is None:
            self._report(Finding(
                "deadlock", "error",
                f"wait_flag(PIPE_{s.src}, PIPE_{s.dst}, EVENT_ID{s.event}) at {_at(s)} waits for a "
                "set_flag that was never issued: the chip would hang here",
                rule="wait_flag(src, dst, id) blocks pipe dst until set_flag(src, dst, id) is issued "
                     "on pipe src",
                fix=f"issue pto.set_flag(PIPE_{s.src}, PIPE_{s.dst}, EVENT_ID{s.event}) before it (in a "
                    "loop: once before the loop to prime it, and wait for the last one after the loop)",
                second=s, pipes=(s.src, s.dst)))
            return
        token = pending[0]
        mine = self.clock[s.dst]
        for p in PIPES:
            mine[p] = max(mine[p], token[p])

    # -- instructions ---------------------------------------------------------------------------
    def _instr(self, s: InstrNode, iters: tuple) -> None:
        if s.name in BINDS:
            return
        if s.pipe == "ALL":                    # waits for every pipe (TPRINT, ...)
            self._sync(Sync("pipe_barrier", "ALL", None, None))
        pipe = s.pipe if s.pipe in self.clock else "S"
        self.clock[pipe][pipe] += 1
        self.at += 1
        reads, writes = self._ranges(s, iters)
        acc = lambda owner, w: Access(pipe, self.clock[pipe][pipe], s, owner, w, self.at)  # noqa: E731
        need = []                      # (kind, earlier access, this access, range) to be ordered
        for r, owner, role in reads:
            for _, w in self.writes.overlapping(r):
                need.append(("raw", w, acc(owner, False), r))
            for cr, w in self.clobbered.get(owner, []):
                if cr.overlaps(r):
                    self._overlap(w, acc(owner, False), r)
            self._uninit(r, s, owner, role)
        for r, owner, _ in writes:
            for _, w in self.writes.overlapping(r):
                need.append(("waw", w, acc(owner, True), r))
            for _, rd in self.reads.overlapping(r):
                if rd.node is not s:
                    need.append(("war", rd, acc(owner, True), r))
        self._ordered(need)
        self._stale(s)
        for r, owner, _ in writes:
            if not isinstance(r.start, str):     # what other tiles wrote here is clobbered
                for wr, w in self.writes.overlapping(r):
                    if w.owner != owner and not isinstance(wr.start, str):
                        cut = _Range(r.space, max(r.start, wr.start), min(r.end, wr.end))
                        self.clobbered.setdefault(w.owner, []).append((cut, acc(owner, True)))
            if owner in self.clobbered:
                self.clobbered[owner] = [(cr, w) for cr, w in self.clobbered[owner] if not r.covers(cr)]
            self.writes.drop_covered(r)
            self.reads.drop_covered(r)
            self.writes.add(r, acc(owner, True))
            if not isinstance(r.start, str):
                self.written.setdefault(r.space, _Spans()).add(r.start, r.end)
        for r, owner, _ in reads:
            self.reads.add(r, acc(owner, False))

    def _comm_order(self, s: InstrNode) -> None:
        """R2: a TNOTIFY must not overtake the data of an unfenced TPUT/TGET/collective."""
        if s.name in COMM_MOVERS:
            self.in_flight = s
        elif s.name == "TNOTIFY" and self.in_flight is not None:
            before = self.in_flight
            self._report(Finding(
                "comm-order", "error",
                f"TNOTIFY at {_at(s)} follows {before.name} at {_at(before)} with no "
                "pipe_barrier(PIPE_ALL) between them: the peer can see the signal before the data",
                rule=f"{before.name} ends on MTE2/MTE3 without holding the scalar unit; TNOTIFY is a "
                     "scalar store, so it can overtake the transfer (every pto-isa comm test puts "
                     "pipe_barrier(PIPE_ALL) there)",
                fix="add pto.pipe_barrier(pto.PIPE_ALL) between them", first=before, second=s,
                pipes=("ALL",)))

    def _ranges(self, s: InstrNode, iters: tuple):
        reads, writes = [], []
        for e in s.effects:
            if e.region == "scratch" and e.span is not None:
                item = (_Range(e.space, e.span[0], e.span[1]), f"{self.soc.name} UB scratch", "scratch")
            elif e.operand is None:
                continue
            else:
                x = s.operands[e.operand]
                if isinstance(x, TileVar):
                    a = self.addr[x.id] if x.id in self.addr else x.addr
                    if isinstance(a, int):
                        rng = _Range(x.type.loc, int(a), int(a) + x.type.nbytes)
                    else:                      # a runtime address: the tile itself, nothing else
                        rng = _Range(x.type.loc, f"tile {x.name}#{x.id}", f"tile {x.name}#{x.id}")
                    item = (rng, f"tile {x.name}", e.region)
                elif isinstance(x, GmView):
                    key = _gm_key(x, iters)
                    item = (_Range("GM", key, key), f"GM {x.tensor.name}", "view")
                else:
                    continue
            (writes if e.access == "write" else reads).append(item)
        return reads, writes

    def _ordered(self, need: list) -> None:
        """Each access must come after the earlier one: a flag chain across pipes, a barrier within
        V on a2a3. Of the unordered ones, the latest in program order is reported (the flag that
        fixes it usually orders the earlier ones too)."""
        cross = [n for n in need if n[1].pipe != n[2].pipe and self.clock[n[2].pipe][n[1].pipe] < n[1].seq]
        if cross:
            self._cross(*max(cross, key=lambda n: n[1].at))
        same = [n for n in need if n[1].pipe == n[2].pipe == "V" and self.soc.name == "a2a3"
                and n[1].node is not n[2].node and self.barrier["V"] < n[1].seq
                and "scratch" not in n[1].owner]
        if same:
            self._barrier(*max(same, key=lambda n: n[1].at))

    def _cross(self, kind: str, before: Access, now: Access, r: _Range) -> None:
        a, b = before.node, now.node
        what = {"raw": "reads", "war": "overwrites", "waw": "overwrites"}[kind]
        prior = {"raw": "wrote", "war": "still reads", "waw": "also writes"}[kind]
        self._report(Finding(
            kind, "error",
            f"{kind.upper()} hazard: {_what(b)} at {_at(b)} {what} {r} ({now.owner}) that "
            f"{_what(a)} at {_at(a)} {prior}, with no flag between the two pipes",
            rule="pipes run concurrently on the chip: only set_flag/wait_flag (or an event "
                 "token) orders an instruction on one pipe after one on another",
            fix=f"insert pto.set_flag(PIPE_{before.pipe}, PIPE_{now.pipe}, EVENT_ID0) after line "
                f"{_line(a)} and pto.wait_flag(PIPE_{before.pipe}, PIPE_{now.pipe}, EVENT_ID0) before "
                f"line {_line(b)} (another free event id works too)",
            first=a, second=b, pipes=(before.pipe, now.pipe), where=f"{now.owner}, {r}",
            at=(before.at, now.at)))

    def _barrier(self, kind: str, before: Access, now: Access, r: _Range) -> None:
        a, b = before.node, now.node
        inplace = before.owner == now.owner and _in_place(a) and _in_place(b)
        self._report(Finding(
            "barrier", "error" if self.strict else "warning",
            f"{_what(b)} at {_at(b)} depends on {_what(a)} at {_at(a)} ({now.owner}) with no "
            "pipe_barrier(PIPE_V) between them",
            rule="on a2a3 a vector instruction that reads or overwrites what an earlier vector "
                 "instruction wrote needs pto.pipe_barrier(PIPE_V) between them (CANN's PipeBarrier "
                 "rule); pto-isa's own kernels do not always write it" +
                 (", in place on one tile as here" if inplace else "") +
                 ", so it is reported only with checks='strict' (auto mode inserts the barrier)",
            fix=f"insert pto.pipe_barrier(pto.PIPE_V) between line {_line(a)} and line {_line(b)}",
            first=a, second=b, pipes=("V", "V"), where=f"{now.owner}, {r}"))

    def _stale(self, s: InstrNode) -> None:
        """Reads beyond the rows or columns written into a tile (static sizes only): the chip
        leaves stale data there. Then record what this instruction writes."""
        for e in s.effects:
            x = s.operands[e.operand] if e.operand is not None else None
            if not isinstance(x, TileVar) or e.access != "read" or e.region != "valid":
                continue
            have, want = self.filled.get(x.id), self._valid_of(x)
            if have is None or want is None or (want[0] <= have[0] and want[1] <= have[1]):
                continue
            w = have[2]
            self._report(Finding(
                "stale", "error",
                f"{_what(s)} at {_at(s)} reads {want[0]} x {want[1]} of tile {x.name}, but only "
                f"{have[0]} x {have[1]} of it were written (last by {_what(w)} at {_at(w)})",
                rule="an instruction reads its operand's valid region; on the chip the rest of the "
                     "tile holds stale data (pypto shows poison there)",
                fix=f"write the whole region first, or set_valid({x.name}, ...) to what was written "
                    "before reading it", first=w, second=s, pipes=(s.pipe,),
                where=f"tile {x.name}"))
        for e in s.effects:
            x = s.operands[e.operand] if e.operand is not None else None
            if not isinstance(x, TileVar) or e.access != "write":
                continue
            region = self._valid_of(x) if e.region == "valid" else (x.type.rows, x.type.cols)
            if region is None or (x.id in self.filled and self.filled[x.id] is None):
                self.filled[x.id] = None          # a runtime-sized write: unknown from here on
                continue
            if s.name == "TLOAD" and x.type.pad != "Null":       # pads to its 32-byte block
                c0 = max(1, 32 // max(1, x.type.dtype.itemsize))
                region = tuple(min(n, -(-v // c0) * c0) for v, n in zip(region, (x.type.rows, x.type.cols)))
            old = self.filled.get(x.id)
            if old is not None:
                region = (max(old[0], region[0]), max(old[1], region[1]))
            self.filled[x.id] = (region[0], region[1], s)

    def _valid_of(self, t: TileVar) -> tuple | None:
        if t.id in self.valid:
            return self.valid[t.id]
        return None if t.dynamic else _static(t.valid)

    def _overlap(self, w: Access, now: Access, r: _Range) -> None:
        """``now`` reads through its tile bytes that tile wrote and ``w`` overwrote through another
        (a view of bytes another tile wrote is fine: that is how a buffer is reinterpreted)."""
        a, b = w.node, now.node
        self._report(Finding(
            "overlap", "error",
            f"{_what(b)} at {_at(b)} reads {r} through {now.owner}, but {_what(a)} at {_at(a)} "
            f"overwrote those bytes through {w.owner} after {now.owner} was written",
            rule="tiles whose byte ranges overlap share storage on the chip: writing one clobbers "
                 "the other (a2a3's TSEL/TSELS/TROWEXPAND<op>/TCVT also write a hidden scratch area "
                 "at the top of UB)",
            fix="give the tiles disjoint TASSIGN addresses (keep tiles below the a2a3 UB scratch), or "
                "reload the tile after the other one is done",
            first=a, second=b, pipes=(w.pipe, now.pipe), where=str(r)))

    def _uninit(self, r: _Range, s: InstrNode, owner: str, role: str) -> None:
        if isinstance(r.start, str) or r.space == "GM" or role in ("scratch", "tmp"):
            return
        if r.space in self.written and self.written[r.space].covers(r.start, r.end):
            return
        self._report(Finding(
            "uninit", "error" if self.strict else "warning",
            f"{_what(s)} at {_at(s)} reads {r} through {owner}, which nothing has written since the "
            "kernel started",
            rule="on-chip memory holds stale data from earlier kernels; pypto fills it with poison "
                 "(NaN in float tiles, -1 in integer tiles)",
            fix="load or compute the tile before reading it (TLOAD, TEXPANDS, ...)",
            second=s, pipes=(s.pipe,), where=f"{owner}, {r}"))

    def _report(self, f: Finding) -> None:
        key = (f.kind, id(f.first), id(f.second))
        if key not in self._seen:
            self._seen.add(key)
            self.findings.append(f)
            if f.severity == "error" and self.first_error is None:
                self.first_error = f


def _static(region) -> tuple | None:
    """(rows, cols) as ints, or None when either is a runtime value."""
    r, c = region
    return (int(r), int(c)) if isinstance(r, int) and isinstance(c, int) else None


def _in_place(s: Stmt) -> bool:
    return isinstance(s, InstrNode) and len(s.operands) > 1 and any(
        x is s.operands[0] for x in s.operands[1:])


def _vars(x) -> set[str]:
    from .nodes import Var
    if isinstance(x, Var):
        return {x.name}
    out: set[str] = set()
    for k in ("lhs", "rhs", "args", "a", "b"):
        v = getattr(x, k, None)
        if isinstance(v, (list, tuple)):
            for y in v:
                out |= _vars(y)
        elif v is not None:
            out |= _vars(v)
    return out


def _gm_key(v: GmView, iters: tuple) -> str:
    """A GM view as a key: the tensor, offset and shape, tagged with the iteration of each loop
    whose variable the offset uses (iteration i's x[i] is not iteration i + 1's)."""
    used = _vars(v.offset)
    tag = [f"{n}#{k}" for n, k in iters if n in used]
    peer = f" on rank {v.rank}" if v.rank is not None else ""
    return f"GM {v.tensor.name}{peer}[off {v.offset}, shape {v.shape}]{'@' + ','.join(tag) if tag else ''}"


# -- a traced kernel ------------------------------------------------------------------------------

def stream(body: list[Stmt], iters: tuple = ()) -> Iterator[tuple[Stmt, tuple]]:
    """The statements in program order, each loop body twice (once if it runs once, never if it
    never runs; a pto.when branch's once), with the loop iterations they belong to."""
    for s in body:
        if isinstance(s, For):
            n = 1 if s.branch else _trip_count(s)
            for k in range(2 if n is None else min(n, 2)):
                yield from stream(s.body, iters + ((s.var.name, k),))
        else:
            yield s, iters


def _trip_count(f: For) -> int | None:
    if all(isinstance(x, int) for x in (f.start, f.stop, f.step)) and f.step:
        return max(0, -(-(f.stop - f.start) // f.step)) if f.step > 0 else \
            max(0, -(-(f.start - f.stop) // -f.step))
    return None


def check(k: Kernel, soc, strict: bool = False) -> list[Finding]:
    """Every finding of a traced kernel (one block's stream). Without strict, uninitialised
    reads are warnings and missing a2a3 PIPE_V barriers are not reported; with it both are
    errors."""
    c = Checker(soc, strict)
    for s, iters in stream(k.body):
        c.feed(s, iters)
    c.end()
    return c.findings if strict else [f for f in c.findings if f.kind != "barrier"]


def errors(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that stop a launch."""
    return [f for f in findings if f.severity == "error"]


def enforce(k: Kernel, soc, checks: str) -> None:
    """Before a launch: raise the first error of the kernel's findings (computed once per trace
    and checking level); warn once about the rest. checks is SimOptions.checks ("off" skips)."""
    if checks == "off":
        return
    if k.findings is None:
        k.findings = {}
    found = k.findings.get(checks)
    if found is None:
        import warnings

        from ..calls import user_stacklevel
        from ..errors import HazardWarning
        found = k.findings[checks] = check(k, soc, strict=checks == "strict")
        for f in found:
            if f.severity != "error":
                warnings.warn(HazardWarning(f"{k.name}: {f.message} ({f.fix})"), stacklevel=user_stacklevel())
    bad = errors(found)
    if bad:
        raise bad[0].error()


__all__ = ["Checker", "Finding", "check", "stream", "errors", "enforce", "PIPES"]
