"""On-chip placement: which byte address of its space each tile gets.

``Placement`` is the allocator the DSL uses while a body runs (tracing or eager): auto tiles get
the next free bytes at their first use, TASSIGN'd tiles claim their own range. Both builders use
it the same way, so both modes place every tile at the same address. ``place`` is the IR pass for
kernels built without the DSL: it places every tile that has no address yet, and with
``share_tiles`` gives tiles whose live ranges do not overlap the same bytes.
"""
from __future__ import annotations

from .. import diagnostics as Dx
from ..errors import TileCapacityError, TileError
from .nodes import Assign, Expr, ExprLike, For, InstrNode, Kernel, SetValid, Site, TileVar


def _at(err, site: Site | None):
    return err.located(str(site)) if site is not None else err


def _up(x: int, align: int) -> int:
    return -(-x // align) * align


class Placement:
    """Per-kernel on-chip allocator: auto tiles bump-allocate; TASSIGN'd tiles claim their range."""

    def __init__(self, soc):
        self.soc = soc
        self.next: dict[str, int] = {}
        self.auto: dict[str, list[TileVar]] = {}
        self.manual_ranges: dict[str, list[tuple[int, int, TileVar]]] = {}

    def ensure(self, t: TileVar, site: Site | None) -> None:
        if t.addr is not None or t.manual:
            return
        sp = self.soc.space(t.type.loc)
        addr = self.next.get(sp.loc, 0)
        for lo, hi, _ in sorted(self.manual_ranges.get(sp.loc, []), key=lambda r: r[0]):
            if addr < hi and addr + t.type.nbytes > lo:
                addr = _up(hi, sp.align)
        if addr + t.type.nbytes > sp.capacity:
            live = ", ".join(f"{x.name} {x.type.nbytes} B @ {x.addr:#x}" for x in self.auto.get(sp.loc, []))
            raise _at(TileCapacityError(
                f"tile {t.name} ({t.type}, {t.type.nbytes} bytes) does not fit in {sp.buffer} "
                f"({sp.loc}): {sp.capacity} bytes on {self.soc.name}, {sp.capacity - addr} bytes free "
                f"after the tiles already placed ({live or 'none'})",
                rule="every live tile needs its own bytes in its on-chip space; pypto's auto mode "
                     "keeps every tile of a kernel live for the whole kernel",
                fix="use fewer or smaller tiles, reuse one tile for several steps, or place tiles "
                    "yourself with pto.TASSIGN"), site)
        t.addr = addr
        self.next[sp.loc] = _up(addr + t.type.nbytes, sp.align)
        self.auto.setdefault(sp.loc, []).append(t)

    def assign(self, t: TileVar, addr: ExprLike, site: Site | None) -> None:
        sp = self.soc.space(t.type.loc)
        if isinstance(addr, Expr):
            t.manual = True
            return           # checked at run time
        where = f"{sp.buffer} ({sp.loc}, {self.soc.name})"
        if addr < 0:
            raise _at(Dx.assign_negative(t.name, addr, where), site)
        if addr % sp.align:
            raise _at(Dx.assign_misaligned(t.name, addr, where, sp.align), site)
        if addr + t.type.nbytes > sp.capacity:
            raise _at(Dx.assign_past_end(t.name, addr, t.type.nbytes, where, sp.capacity), site)
        for other in self.auto.get(sp.loc, []):
            if other is not t and addr < other.addr + other.type.nbytes and other.addr < addr + t.type.nbytes:
                raise _at(TileError(
                    f"TASSIGN({t.name}, {addr:#x}) overlaps tile {other.name}, which pypto placed "
                    f"automatically at {other.addr:#x}..{other.addr + other.type.nbytes:#x}",
                    rule="in a kernel that uses TASSIGN, auto-placed tiles only avoid the ranges "
                         "assigned before them",
                    fix="TASSIGN every tile of the kernel (manual mode), or none (auto mode)"), site)
        if t in self.auto.get(sp.loc, []):
            self.auto[sp.loc].remove(t)
        t.addr = addr
        t.manual = True
        self.manual_ranges.setdefault(sp.loc, []).append((addr, addr + t.type.nbytes, t))


def _tiles_of(s) -> list[TileVar]:
    if isinstance(s, InstrNode):
        return [x for x in s.operands if isinstance(x, TileVar)]
    if isinstance(s, (SetValid, Assign)):
        return [s.tile]
    return []


def live_ranges(k: Kernel) -> dict[int, tuple[int, int]]:
    """Tile id -> (first, last) statement index in program order; a tile used in a loop is live
    for the whole loop, since later iterations read what earlier ones wrote."""
    ranges: dict[int, tuple[int, int]] = {}
    pos = 0

    def visit(stmts) -> set[int]:
        nonlocal pos
        touched: set[int] = set()
        for s in stmts:
            i = pos
            pos += 1
            inner = visit(s.body) if isinstance(s, For) else set()
            for tid in inner:
                a, b = ranges[tid]
                ranges[tid] = (min(a, i), max(b, pos))
            touched |= inner
            for t in _tiles_of(s):
                a, b = ranges.get(t.id, (i, i))
                ranges[t.id] = (min(a, i), max(b, i))
                touched.add(t.id)
        return touched

    visit(k.body)
    return ranges


def place(k: Kernel, soc, share: bool | None = None) -> None:
    """The pass: give every unplaced tile an address. Without sharing, tiles are packed in
    declaration order; with sharing (``k.share_tiles``), a tile reuses the bytes of tiles whose
    live ranges ended before its own began (first fit)."""
    share = k.share_tiles if share is None else share
    todo = [t for t in k.tiles if t.addr is None and not t.manual]
    if not todo:
        return
    alloc = Placement(soc)
    for t in k.tiles:
        if t.manual and t.addr is not None:
            alloc.manual_ranges.setdefault(t.type.loc, []).append((t.addr, t.addr + t.type.nbytes, t))
        elif t.addr is not None:
            sp = soc.space(t.type.loc)
            alloc.next[sp.loc] = max(alloc.next.get(sp.loc, 0), _up(t.addr + t.type.nbytes, sp.align))
    if not share:
        for t in todo:
            alloc.ensure(t, None)
        return
    ranges = live_ranges(k)
    used = [t for t in todo if t.id in ranges]
    for t in sorted(used, key=lambda t: ranges[t.id][0]):
        sp = soc.space(t.type.loc)
        lo, hi = ranges[t.id]
        busy = sorted((x.addr, x.addr + x.type.nbytes) for x in k.tiles
                      if x is not t and x.addr is not None and x.type.loc == sp.loc and
                      (x.id not in ranges or not (ranges[x.id][1] < lo or hi < ranges[x.id][0])))
        addr = alloc.next.get(sp.loc, 0) if any(x.manual for x in k.tiles if x.type.loc == sp.loc) else 0
        for a, b in busy:
            if addr < b and a < addr + t.type.nbytes:
                addr = _up(b, sp.align)
        if addr + t.type.nbytes > sp.capacity:
            raise TileCapacityError(
                f"tile {t.name} ({t.type}) does not fit in {sp.buffer} ({sp.loc}) even with shared "
                f"bytes: {sp.capacity} bytes on {soc.name}",
                rule="the tiles live at the same time must fit in their on-chip space together",
                fix="use smaller tiles or shorten their lifetimes")
        t.addr = addr
    for t in todo:
        if t.addr is None:           # declared but never used
            alloc.ensure(t, None)
