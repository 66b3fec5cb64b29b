"""The tracer: the builder that records a kernel body as IR (compiled mode and kern.ir())."""
from __future__ import annotations

from typing import Iterator

from ..errors import TraceError
from ..ir.nodes import COMPARE_OPS, BinOp, Expr, ExprLike, For, GmLoad, Returned, Stmt, TileVar, Var, binop, is_static
from ..isa.soc import SocProfile
from ..ir.executor import LOOP_EXIT, Builder
from ..ir.placement import Placement


class TraceBuilder(Builder):
    eager = False

    def __init__(self, soc: SocProfile):
        self.soc = soc
        self.blocks: list[list[Stmt]] = [[]]
        self.tiles: list[TileVar] = []
        self.tile_names: set[str] = set()
        self.placement = Placement(soc)
        self._loops = 0
        self._bidx = Var("block_idx", "block_idx")
        self._bnum = Var("block_num", "block_num")
        self._rank = Var("rank_id", "rank_id")
        self._ranks = Var("rank_num", "rank_num")
        self._results = 0          # values instructions returned (TTEST), numbered

    def emit(self, stmt: Stmt) -> None:
        self.blocks[-1].append(stmt)

    def new_tile(self, tile: TileVar, site=None) -> None:
        self.tiles.append(tile)

    def dynamic_valid(self, tile: TileVar) -> tuple[ExprLike, ExprLike]:
        return (Var(f"vr_{tile.id}", "valid"), Var(f"vc_{tile.id}", "valid"))

    def gm_scalar(self, view, site=None) -> ExprLike:
        return GmLoad(view, "f64" if view.tensor.dtype.is_float else "i64")

    def block_idx(self) -> ExprLike:
        return self._bidx

    def block_num(self) -> ExprLike:
        return self._bnum

    def rank_id(self) -> ExprLike:
        return self._rank

    def rank_num(self) -> ExprLike:
        return self._ranks

    def scalar_result(self, node: Stmt) -> ExprLike:
        node.result = Returned(f"tt{self._results}", "result", slot=self._results)
        self._results += 1
        return node.result

    def when(self, cond: ExprLike) -> Iterator[ExprLike]:
        if not isinstance(cond, Expr):                   # known while tracing: Python decides
            return iter((0,) if cond else ())
        if not (isinstance(cond, Returned) or isinstance(cond, BinOp) and cond.op in COMPARE_OPS):
            cond = binop("!=", cond, 0)
        var = Var(f"w{self._loops}", "loop")
        self._loops += 1
        return _Loop(self, For(var, 0, cond, 1, branch=True))

    def range(self, start: ExprLike, stop: ExprLike, step: ExprLike) -> Iterator[ExprLike]:
        if is_static(step) and step == 0:
            raise TraceError("pto.range step is 0", rule="a loop step must be non-zero",
                             fix="pass a positive or negative step")
        var = Var(f"i{self._loops}", "loop")
        self._loops += 1
        node = For(var, start, stop, step)
        return _Loop(self, node)

    def finish(self) -> None:
        if len(self.blocks) != 1:
            raise TraceError(*LOOP_EXIT[:1], rule=LOOP_EXIT[1], fix=LOOP_EXIT[2])

    @property
    def body(self) -> list[Stmt]:
        self.finish()
        return self.blocks[0]


class _Loop:
    """Iterates once, yielding the loop variable, so the body is traced into the For node."""

    def __init__(self, b: TraceBuilder, node: For):
        self.b, self.node, self.state = b, node, 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.state == 0:
            self.state = 1
            self.b.emit(self.node)
            self.b.blocks.append(self.node.body)
            return self.node.var
        if self.state == 1:
            self.state = 2
            self.b.blocks.pop()
        raise StopIteration
