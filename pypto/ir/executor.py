"""The contract between a kernel body and whoever receives its instructions.

Two builders implement it: the tracer (``lang/trace.py``, records IR for compiled mode and
``kern.ir()``) and the simulator's eager executor (runs each statement at once). The DSL talks
only to this contract, so a backend's eager executor never imports the DSL.
"""
from __future__ import annotations

from typing import Any, Iterator

from .nodes import ExprLike, Site, Stmt, TileVar
from .placement import Placement


# Both builders refuse a pto.range loop left early, with these words.
LOOP_EXIT = ("a pto.range loop body was left early (break or return inside it)",
             "a pto.range loop is one runtime loop: compiled mode traces its body once, as a whole, "
             "so both modes refuse an early exit",
             "avoid break/return inside pto.range; use valid regions (pto.min) for tails")


class Builder:
    """What the DSL needs from whoever receives its instructions."""

    soc: Any                 # SocProfile
    eager: bool = False
    placement: Placement
    tiles: list[TileVar]
    tile_names: set[str]

    def emit(self, stmt: Stmt) -> None:
        """Record (tracer) or run (eager) one statement."""
        raise NotImplementedError

    def set_checks(self, checks: str) -> None:
        """The kernel's own hazard-checking level (an executor that checks as it runs honours it)."""

    def range(self, start: ExprLike, stop: ExprLike, step: ExprLike) -> Iterator[ExprLike]:
        raise NotImplementedError

    def when(self, cond: ExprLike) -> Iterator[ExprLike]:
        """pto.when: iterate once if ``cond`` is non-zero when the kernel runs, else never."""
        raise NotImplementedError

    def block_idx(self) -> ExprLike:
        raise NotImplementedError

    def block_num(self) -> ExprLike:
        raise NotImplementedError

    def rank_id(self) -> ExprLike:
        """This device's rank in the world (HcclDeviceContext::rankId)."""
        raise NotImplementedError

    def rank_num(self) -> ExprLike:
        """The world's device count (HcclDeviceContext::rankNum)."""
        raise NotImplementedError

    def scalar_result(self, node: Stmt) -> ExprLike:
        """The scalar an instruction returns (TTEST's 1 or 0): its value (eager) or a Returned
        expression for the IR (tracer)."""
        raise NotImplementedError

    def new_tile(self, tile: TileVar, site: Site | None = None) -> None:
        raise NotImplementedError

    def dynamic_valid(self, tile: TileVar) -> tuple[ExprLike, ExprLike]:
        """The initial valid region of a tile declared with a dynamic valid region."""
        raise NotImplementedError

    def gm_scalar(self, view, site: Site | None = None) -> ExprLike:
        """``x[i, j]`` used as a scalar operand: a GmLoad (tracer) or the element's value (eager)."""
        raise NotImplementedError

    def tile_numpy(self, tile: TileVar, storage: bool = False):
        """Eager only: the tile's contents as a (rows, cols) numpy array (storage=True: its
        bytes in storage order, one flat array)."""
        raise NotImplementedError

    def finish(self) -> None:
        """The body returned: check that every pto.range loop ran to its end."""


__all__ = ["Builder"]
