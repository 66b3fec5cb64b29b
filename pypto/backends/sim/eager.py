"""Eager mode: the kernel's Python body runs as written, each instruction executed at once by the
same numba implementations compiled mode uses, so print() and breakpoint() work inside kernels."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from ...ir.nodes import ExprLike, RtInt, SetValid, Stmt, TileVar
from ...lang.builder import Builder
from ...lang.semantic import Placement
from . import codegen
from . import compile as compile_
from . import lowering as L
from .faults import fault

_TRAMPOLINES: dict[str, object] = {}


def trampoline(c: L.Call, cache_dir: str):
    """A numba wrapper around c.fn in a generated, disk-cached module: a Python-level call of a
    numba function then costs one type dispatch and compiles once per machine, not per process.
    Returns (wrapper, first use in this process)."""
    fn = _TRAMPOLINES.get(c.fn)
    if fn is not None:
        return fn, False
    params = [f"a{i}" for i in range(len(c.args))]
    mod, name = c.fn.split(".")
    src = codegen.module_source(f"eager call of {c.fn}", params,
                                [f"    _{mod}.{name}({', '.join(params)})"])
    fn = _TRAMPOLINES[c.fn] = compile_.load(src, cache_dir)[0]
    return fn, True


class EagerBuilder(Builder):
    eager = True

    def __init__(self, soc, kernel: str, gm: dict[int, np.ndarray], spaces: dict[str, np.ndarray],
                 block: int, nblocks: int, cache_dir: str, stats):
        self.cache_dir = cache_dir
        self.stats = stats
        self.soc = soc
        self.kernel = kernel
        self.gm = gm
        self.spaces = spaces
        self.block = block
        self.nblocks = nblocks
        self.tiles: list[TileVar] = []
        self.tile_names: set[str] = set()
        self.placement = Placement(soc)
        self.err = np.zeros(8, np.int64)
        self._epoch = 0                  # advances with every eager loop iteration
        self._count_epoch = -1
        self._site_counts: dict = {}
        self._site_tiles: dict = {}

    def supports(self, name: str, params: dict | None = None) -> bool:
        return L.simulated(name, params)

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

    def block_num(self) -> ExprLike:
        return RtInt(self.nblocks)

    def range(self, start, stop, step) -> Iterator[ExprLike]:
        for i in range(int(start), int(stop), int(step)):
            self._epoch += 1
            yield RtInt(i)

    # -- execution ----------------------------------------------------------------------------
    def view(self, t: TileVar) -> np.ndarray:
        ty = t.type
        a = t.addr or 0
        return self.spaces[ty.loc][a:a + ty.nbytes].view(ty.dtype.storage)

    def _arg(self, a):
        tag = a[0]
        if tag == "view":
            return self.view(a[1])
        if tag == "valid":
            return int(a[1].valid[a[2]])
        if tag == "int":
            return int(a[1])
        if tag == "gm":
            return self.gm[a[1].index]
        if tag == "const":
            return a[1]
        if tag == "scalar":
            return L.scalar_const(a[1], a[2])[1]
        if tag == "err":
            return self.err
        raise AssertionError(a)

    def _run(self, c: L.Call, node: Stmt) -> None:
        fn, first = trampoline(c, self.cache_dir)
        fn(*[self._arg(a) for a in c.args])
        if first:
            compile_.count_first_call(fn, self.stats)
        if self.err[0] != 0:
            e = fault(self.err, node, self.block, self.kernel)
            self.err[:] = 0
            raise e

    def emit(self, stmt: Stmt) -> None:
        """Run the statement now. (TASSIGN already moved the tile when it was placed; flags have
        no effect in the simulator yet.)"""
        for c in L.lower(stmt, self.soc):
            self._run(c, stmt)
        if isinstance(stmt, SetValid):
            stmt.tile.valid = (RtInt(stmt.rows), RtInt(stmt.cols))

    def tile_numpy(self, t: TileVar) -> np.ndarray:
        self.placement.ensure(t, None)
        ty = t.type
        flat = self.view(t).view(ty.dtype.np).copy()
        if ty.blayout == "RowMajor":
            return flat.reshape(ty.rows, ty.cols)
        return flat.reshape(ty.cols, ty.rows).T
