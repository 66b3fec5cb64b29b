"""Eager mode: the kernel's Python body runs as written, each statement executed at once by the
same numba functions compiled mode calls, so print() and breakpoint() work inside kernels.

``EagerExecutor`` implements the DSL's builder contract (pypto.ir.executor.Builder) without
importing the DSL: the backend hands it to a body callable the DSL gave it.
"""
from __future__ import annotations

import threading
from typing import Iterator

import numpy as np

from ...errors import PtoError, TraceError
from ...ir.executor import LOOP_EXIT, Builder
from ...ir.nodes import (Assign, ExprLike, InstrNode, RtFloat, RtInt, SetValid, Stmt, Sync, TileVar,
                         dynamic_tiles)
from ...ir.placement import Placement
from ...ir.effects import annotate_node
from ...ir.hazards import Checker
from ...isa.schema import PIPES
from . import codegen
from . import compile as C
from . import direct
from . import lowering as L
from .context import OnChip, WorkerRecord
from . import world
from ..faults import fault
from .lib.context import record
from .. import errcodes as E

_TRAMPOLINES: dict[tuple, object] = {}
_SEEN: dict[int, dict] = {}          # per trampoline: the specialisations already counted
_LOCK = threading.Lock()



def trampoline(c: L.Call, nargs: int, cache_dir: str):
    """A numba wrapper around c.fn in a generated, disk-cached module, for the calls direct.py
    cannot make (arguments it cannot pack, an implementation that raised: numba raises the
    same exception from here). Returns (wrapper, first use in this process)."""
    key = (c.fn.module, c.fn.name, c.fn.source is not None, nargs)
    fn = _TRAMPOLINES.get(key)
    if fn is not None:
        return fn, False
    with _LOCK:
        fn = _TRAMPOLINES.get(key)
        if fn is not None:
            return fn, False
        module, _ = C.resolve(c.fn, cache_dir)
        params = [f"a{i}" for i in range(nargs)]
        src = codegen.module_source(f"eager call of {module}.{c.fn.name}",
                                    [f"from {module} import {c.fn.name} as _f_impl\n_f = xcall(_f_impl)"],
                                    params,
                                    [f"    _f({', '.join(params)})"])
        fn = _TRAMPOLINES[key] = C.load_module(src, cache_dir, "t").kernel
        return fn, True


class _ScalarRead(Stmt):
    """The statement a fault in a scalar GM read (x[i, j] as a scalar operand) is reported at."""

    def __init__(self, view, site):
        super().__init__(site=site)
        self.name, self.operands, self.pipe = "scalar read", (view,), "S"


class _Loop:
    """An eager pto.range: a real loop, checked to run to its end like a traced one."""

    def __init__(self, ex: "EagerExecutor", start: int, stop: int, step: int):
        self.ex, self.it = ex, iter(range(start, stop, step))

    def __iter__(self):
        return self

    def __next__(self):
        if self.ex._loops[-1] is not self:
            raise TraceError(*LOOP_EXIT[:1], rule=LOOP_EXIT[1], fix=LOOP_EXIT[2])
        try:
            i = next(self.it)
        except StopIteration:
            self.ex._loops.pop()
            raise
        self.ex._epoch += 1
        return RtInt(i)


class EagerExecutor(Builder):
    eager = True

    def __init__(self, soc, kernel: str, gm: dict[int, np.ndarray], onchip: OnChip, block: int,
                 nblocks: int, options, stats, rec: WorkerRecord | None = None,
                 sites: list | None = None):
        self.soc, self.kernel, self.gm, self.onchip = soc, kernel, gm, onchip
        self.block, self.nblocks = block, nblocks
        self.cache_dir, self.stats = options.cache_dir, stats
        self.tiles: list[TileVar] = []
        self.tile_names: set[str] = set()
        self.placement = Placement(soc)
        self.rec = rec if rec is not None else WorkerRecord()
        self.sites = sites if sites is not None else []      # event site id -> IR node
        self.stored = False                      # has this block written GM yet?
        self.result = np.zeros(1, np.int64)      # what the last value-returning instruction gave
        self._hw: dict[str, int] = {}          # bytes of each space poisoned in this block
        self._loops: list[_Loop] = []
        self._epoch = 0                          # advances with every eager loop iteration
        self._count_epoch = -1
        self._site_counts: dict = {}
        self._site_tiles: dict = {}
        self.manual = False                      # a flag or TASSIGN seen: not auto mode
        self.set_checks(getattr(options, "checks", "default"))

    def new_tile(self, tile: TileVar, site=None) -> None:
        """A tile declared again at the same place in a later loop iteration is the same tile
        (as the tracer sees it: one declaration), so it keeps its name and address."""
        if self._count_epoch != self._epoch:
            self._count_epoch, self._site_counts = self._epoch, {}
        where = (site.filename, site.lineno) if site is not None else None
        n = self._site_counts.get(where, 0)
        self._site_counts[where] = n + 1
        key = (where, n, tile.type)
        prev = self._site_tiles.get(key) if where is not None else None
        if prev is not None:
            self.tile_names.discard(tile.name)
            tile.name = prev.name
            tile.id = prev.id
            if prev.addr is not None and not prev.manual:
                tile.addr = prev.addr
                auto = self.placement.auto.get(tile.type.loc, [])
                auto[:] = [tile if t is prev else t for t in auto]
        else:
            self.tiles.append(tile)
        self._site_tiles[key] = tile

    def dynamic_valid(self, tile: TileVar) -> tuple[ExprLike, ExprLike]:
        return (RtInt(tile.type.rows), RtInt(tile.type.cols))

    def block_idx(self) -> ExprLike:
        return RtInt(self.block)

    def gm_scalar(self, view, site=None) -> ExprLike:
        """Read one GM element now (its bounds checked like the traced read's)."""
        read = _ScalarRead(view, site)
        for c in L.bounds(view):
            self._run(c, read)
        x = L.gm_element(self.gm[view.tensor.index], int(view.offset), view.tensor.dtype)
        return RtFloat(x) if view.tensor.dtype.is_float else RtInt(x)

    def block_num(self) -> ExprLike:
        return RtInt(self.nblocks)

    def rank_id(self) -> ExprLike:
        return RtInt(world.current().rank)

    def rank_num(self) -> ExprLike:
        return RtInt(world.current().size)

    def scalar_result(self, node: Stmt) -> ExprLike:
        """The value the instruction just run returned (TTEST: 1 or 0)."""
        return RtInt(int(self.result[0]))

    def when(self, cond) -> Iterator[ExprLike]:
        return self.range(0, 1 if cond else 0, 1)

    def range(self, start, stop, step) -> Iterator[ExprLike]:
        if int(step) == 0:
            raise TraceError("pto.range step is 0", rule="a loop step must be non-zero",
                             fix="pass a positive or negative step")
        loop = _Loop(self, int(start), int(stop), int(step))
        self._loops.append(loop)
        return loop

    def set_checks(self, checks: str) -> None:
        self.checker = None if checks == "off" else \
            Checker(self.soc, strict=checks == "strict", stop_at_error=True)

    def finish(self) -> None:
        if self._loops:
            raise TraceError(*LOOP_EXIT[:1], rule=LOOP_EXIT[1], fix=LOOP_EXIT[2])
        if self.checker is not None and self.manual:
            self.checker.end()
            self._hazard()

    def _hazard(self) -> None:
        """Raise the checker's first error, in manual mode (a kernel that never sets a flag or
        places a tile is in auto mode: compiled, pypto inserts its flags)."""
        first = self.checker.first_error
        if first is not None and (self.manual or first.kind == "comm-order"):
            raise first.error()

    # -- execution ----------------------------------------------------------------------------
    def _cover(self, t: TileVar) -> None:
        """Poison the bytes a tile reaches the first time this block reaches them (compiled mode
        poisons the same bytes at the block's start)."""
        if t.addr is None:
            return
        loc, end = t.type.loc, int(t.addr) + t.type.nbytes
        hw = self._hw.get(loc, 0)
        if end > hw:
            self.onchip.poison_range(loc, hw, end)
            self._hw[loc] = end

    def view(self, t: TileVar) -> np.ndarray:
        self._cover(t)
        ty = t.type
        a = int(t.addr or 0)
        return self.onchip.spaces[ty.loc][a:a + ty.nbytes].view(ty.dtype.storage)

    def _args(self, a) -> list:
        tag = a[0]
        if tag == "tile":
            t = a[1]
            return [self.view(t), int(t.valid[0]), int(t.valid[1]), t.type.desc]
        if tag == "int":
            return [int(a[1])]
        if tag == "gm":
            return [self.gm[a[1].index]]
        if tag == "const":
            return [a[1]]
        if tag == "scalar":
            x, dt = a[1], a[2]
            if dt is None:
                return [float(x)]
            return [L.scalar_const(x, dt)[1]]
        if tag == "err":
            return [self.rec.err]
        if tag == "result":
            return [self.result]
        raise AssertionError(a)

    def _run(self, c: L.Call, node: Stmt) -> None:
        args = [v for a in c.args for v in self._args(a)]
        call = direct.entry(c, args, self.cache_dir, self.stats)
        if call is None or not call(args):     # not packable, or it raised: numba says what
            fn, _ = trampoline(c, len(args), self.cache_dir)
            fn(*args)
            seen = _SEEN.setdefault(id(fn), {})
            if len(fn.overloads) != seen.get("n", 0):
                with _LOCK:
                    C.count_new_specialisations(fn, seen, self.stats)
        if self.rec.err[0] != 0:
            err = self.rec.err.copy()
            self.rec.err[:E.STRICT] = 0
            raise fault(err, node, self.block, self.kernel, partial=self.block > 0 or self.stored)

    def emit(self, stmt: Stmt) -> None:
        """Run the statement now (flags have no effect: every pipe runs in program order)."""
        if isinstance(stmt, InstrNode):
            annotate_node(stmt, self.soc)
        if self.checker is not None:
            self.manual = self.manual or isinstance(stmt, (Sync, Assign))
            self.checker.feed(stmt)
            self._hazard()
        try:
            calls = L.lower(stmt, self.soc)
        except PtoError as e:
            raise (e.located(str(stmt.site)) if stmt.site else e) from None
        for c in calls:
            self._run(c, stmt)
        if isinstance(stmt, InstrNode):
            self.stored = self.stored or stmt.name == "TSTORE"
        if isinstance(stmt, (InstrNode, Sync)):
            ev = self.rec.events
            if len(ev) > 1:                   # SimOptions(events=N): the same rows compiled code writes
                self.sites.append(stmt)
                pipe = PIPES.index(stmt.pipe) if stmt.pipe in PIPES else -1
                dyn = dynamic_tiles(stmt) if isinstance(stmt, InstrNode) else []
                sizes = [int(v) for t in dyn for v in t.valid]
                sizes += [0] * (4 - len(sizes))
                record(ev, len(self.sites) - 1, self.block, pipe, *sizes, self.rec.err)
        if isinstance(stmt, SetValid):
            stmt.tile.valid = (RtInt(stmt.rows), RtInt(stmt.cols))
        elif isinstance(stmt, Assign):
            self._cover(stmt.tile)

    def tile_numpy(self, t: TileVar, storage: bool = False) -> np.ndarray:
        self.placement.ensure(t, None)
        ty = t.type
        flat = self.view(t).view(ty.dtype.np)
        if storage:
            return flat.copy()
        r, c = np.meshgrid(np.arange(ty.rows), np.arange(ty.cols), indexing="ij")
        ir_, ic, brs, bcs, irs, ics = ty.desc
        idx = (r // ir_) * brs + (c // ic) * bcs + (r % ir_) * irs + (c % ic) * ics
        return flat[idx].copy()
