"""5.1 TASSIGN: bind a tile to a byte address of its space (manual mode).

It is an ``Assign`` statement in the IR, not an instruction node: static addresses are checked
when traced (ir/placement.py), runtime ones by ``checks.assign`` when the kernel runs.
set_flag / wait_flag / pipe_barrier are ``Sync`` statements: recorded, checked by the hazard
checkers to come, and free in the simulator (it runs every pipe in program order).
"""
from __future__ import annotations

from ..ir.registry import Unit, register


def _lowered_as_assign(node, soc) -> list:
    return []        # never reached: TASSIGN is an Assign statement (backends/sim/lowering.py)


def _emitted_as_assign(node, soc, cx) -> str:
    return ""        # never reached: the emitter writes Assign statements as TASSIGN(tile, addr)


register(Unit("TASSIGN", sim=_lowered_as_assign, emit=_emitted_as_assign))
