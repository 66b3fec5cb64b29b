"""Run-time guards: facts about runtime values a statement needs, which the tracer could not decide.

The simulator checks them inside its numba code; the NPU backends emit them into the C++ before
the statement, writing the same fault record (pypto/backends/errcodes.py), so a kernel that
breaks a rule fails with the same PtoError on every backend instead of corrupting memory on the
chip. A guard is (check, args): ``check`` names an error code's check, args are IR expressions.
Static guards (all arguments known) were already checked when the kernel was traced.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .nodes import (Assign, ExprLike, GmView, InstrNode, SetValid, Stmt, TileVar, gm_loads,
                    is_static)

# check -> the meaning of its arguments (the fault record's details follow the same order)
CHECKS = {
    "bound": ("index", "value", "limit"),                     # 0 <= value <= limit
    "set_valid": ("rows", "cols", "cap_rows", "cap_cols"),    # 0 <= rows <= cap_rows, same for cols
    "assign": ("addr", "nbytes", "capacity", "align"),        # a TASSIGN to a runtime address
    "int_scalar": ("index", "value", "lo", "hi"),             # a runtime int scalar fits the element type
    "covers": ("index", "src_rows", "src_cols", "dst_rows", "dst_cols"),   # src valid region >= dst's
    "same_rows": ("index", "src_rows", "dst_rows"),           # row reductions
    "same_cols": ("index", "src_cols", "dst_cols"),           # column reductions and broadcasts
    "float_scalar": ("index", "value", "limit"),             # a finite float scalar stays finite
    "view_shape": ("rows", "cols", "tile_rows", "tile_cols"),  # the view as the tile sees it == valid
    "range": ("what", "value", "lo", "hi"),                   # lo <= value <= hi (what: errcodes RANGE_*)
}


@dataclass(frozen=True)
class Guard:
    check: str
    args: tuple[Any, ...]

    @property
    def static(self) -> bool:
        return all(is_static(a) for a in self.args)


def of(stmt: Stmt, soc) -> list[Guard]:
    """The run-time guards of one statement (its unit's, plus those of every statement kind)."""
    from . import registry
    out: list[Guard] = []
    if isinstance(stmt, SetValid):
        t = stmt.tile.type
        out.append(Guard("set_valid", (stmt.rows, stmt.cols, t.rows, t.cols)))
    elif isinstance(stmt, Assign) and not is_static(stmt.addr):
        sp = soc.space(stmt.tile.type.loc)
        out.append(Guard("assign", (stmt.addr, stmt.tile.type.nbytes, sp.capacity, sp.align)))
    elif isinstance(stmt, InstrNode):
        for o in stmt.operands:
            if isinstance(o, GmView):
                out += [Guard("bound", (k, val, lim)) for k, (_, val, lim) in enumerate(o.bounds)]
        loads = [g for o in stmt.operands for g in gm_loads(o)]
        for j, g in enumerate(loads):          # scalar reads: bound ids 100 * (j + 1) + k
            out += [Guard("bound", (100 * (j + 1) + k, val, lim))
                    for k, (_, val, lim) in enumerate(g.view.bounds)]
        unit = registry.get(stmt.name)
        if unit is not None and unit.guards is not None:
            out += unit.guards(stmt, soc)
    return [g for g in out if not g.static]


# -- guards units share ------------------------------------------------------------------------

def covers(node: InstrNode, soc) -> list[Guard]:
    """Every tile source's valid region contains dst's (elementwise instructions)."""
    from .verify import slots_of
    dst = node.operands[0]
    ops = slots_of(node.name, node.operands)
    return [Guard("covers", (k, x.valid[0], x.valid[1], dst.valid[0], dst.valid[1]))
            for k, (o, x) in enumerate(zip(ops, node.operands)) if k and isinstance(x, TileVar) and o.role == "in"]


def same_rows(node: InstrNode, soc) -> list[Guard]:
    """Row reductions: src (operand 1) has as many valid rows as dst."""
    return [Guard("same_rows", (1, node.operands[1].valid[0], node.operands[0].valid[0]))]


def scalar(k: int, x: ExprLike, dtype) -> list[Guard]:
    """Operand k, a runtime scalar, fits the element type it is converted to."""
    import numpy as np

    from ..diagnostics import OVERFLOW
    if is_static(x):
        return []
    if dtype.is_int:
        info = np.iinfo(dtype.np)
        return [Guard("int_scalar", (k, x, int(info.min), int(info.max)))]
    return [Guard("float_scalar", (k, x, float(OVERFLOW[dtype.short])))]


__all__ = ["Guard", "CHECKS", "of", "covers", "same_rows", "scalar"]
