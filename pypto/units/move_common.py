"""What the 5.7 movement units share: the error for a location pair the simulator does not run
(TFILLPAD of Mat tiles; the cube's moves are units/cube_move.py)."""
from __future__ import annotations

from ..errors import NotSimulatedError
from ..ir.nodes import TileVar

MATRIX_ISSUE = "its Mat tiles form (a2a3's Nz PadZero TFILLPAD) is not built yet"


def require_vec_pair(node, dst: TileVar, src: TileVar) -> None:
    """The simulator runs this instruction between Vec tiles only."""
    if (dst.type.loc, src.type.loc) != ("Vec", "Vec"):
        raise NotSimulatedError(f"{node.name} from {src.type.loc} to {dst.type.loc} is not simulated yet",
                                rule=f"the simulator runs {node.name} between Vec tiles; {MATRIX_ISSUE}",
                                fix="use Vec tiles, or kern.ir() / kern.cpp() to see the kernel")


__all__ = ["MATRIX_ISSUE", "require_vec_pair"]
