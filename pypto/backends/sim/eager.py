"""Eager mode: the kernel's Python body runs as written, each instruction executed at once by the
same numba implementations compiled mode uses, so print() and breakpoint() work inside kernels."""
from __future__ import annotations

import importlib
from typing import Iterator

import numpy as np

from ...ir.nodes import Assign, ExprLike, InstrNode, RtInt, SetValid, Stmt, Sync, TileVar
from ...lang.builder import Builder
from ...lang.semantic import Placement
from . import codegen
from . import compile as compile_
from . import lowering as L
from .faults import fault

_MODS = {m: importlib.import_module(f"pypto.backends.sim.insns.{m}")
         for m in ("checks", "elementwise", "memory", "ops")}


def resolve(fn: str):
    mod, name = fn.split(".")
    return getattr(_MODS[mod], name)


_TRAMPOLINES: dict[tuple, object] = {}


def trampoline(c: L.Call, cache_dir: str):
    """A cached numba wrapper that calls c.fn with its function arguments fixed, so eager calls
    pass only arrays and numbers (numba cannot cache a Python-level call with function args)."""
    key = (c.fn,) + tuple(a[1] for a in c.args if a[0] == "fn")
    fn = _TRAMPOLINES.get(key)
    if fn is None:
        params, inner = [], []
        for i, a in enumerate(c.args):
            if a[0] == "fn":
                mod, name = a[1].split(".")
                inner.append(f"_{mod}.{name}")
            else:
                params.append(f"a{i}")
                inner.append(f"a{i}")
        mod, name = c.fn.split(".")
        src = codegen.module_source(f"eager call of {c.fn}", params,
                                    [f"    _{mod}.{name}({', '.join(inner)})"])
        fn, _ = compile_.load(src, cache_dir)
        _TRAMPOLINES[key] = fn
    return fn


class EagerBuilder(Builder):
    eager = True

    def __init__(self, soc, kernel: str, gm: dict[int, np.ndarray], spaces: dict[str, np.ndarray],
                 block: int, nblocks: int, cache_dir: str):
        self.cache_dir = cache_dir
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

    def supports(self, name: str) -> bool:
        return name in L.SIMULATED

    def new_tile(self, tile: TileVar) -> None:
        self.tiles.append(tile)

    def dynamic_valid(self, tile: TileVar) -> tuple[ExprLike, ExprLike]:
        return (RtInt(tile.type.rows), RtInt(tile.type.cols))

    def block_idx(self) -> ExprLike:
        return RtInt(self.block)

    def block_num(self) -> ExprLike:
        return RtInt(self.nblocks)

    def range(self, start, stop, step) -> Iterator[ExprLike]:
        return (RtInt(i) for i in range(int(start), int(stop), int(step)))

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
        if tag == "fn":
            return resolve(a[1])
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
        fn = trampoline(c, self.cache_dir)
        fn(*[self._arg(a) for a in c.args if a[0] != "fn"])
        if self.err[0] != 0:
            e = fault(self.err, node, self.block, self.kernel)
            self.err[:] = 0
            raise e

    def emit(self, stmt: Stmt) -> None:
        if isinstance(stmt, InstrNode):
            for c in L.lower(stmt):
                self._run(c, stmt)
        elif isinstance(stmt, SetValid):
            t = stmt.tile
            self._run(L.Call("checks.set_valid", (("int", stmt.rows), ("int", stmt.cols),
                                                  ("const", t.type.rows, ""), ("const", t.type.cols, ""),
                                                  ("err",))), stmt)
            t.valid = (RtInt(stmt.rows), RtInt(stmt.cols))
        elif isinstance(stmt, (Assign, Sync)):
            pass     # placement already updated the tile's address; flags are recorded later
        else:
            raise AssertionError(stmt)

    def tile_numpy(self, t: TileVar) -> np.ndarray:
        self.placement.ensure(t, None)
        ty = t.type
        flat = self.view(t).view(ty.dtype.np).copy()
        if ty.blayout == "RowMajor":
            return flat.reshape(ty.rows, ty.cols)
        return flat.reshape(ty.cols, ty.rows).T
