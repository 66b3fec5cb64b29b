"""What the 5.7 movement units share: which location pairs the simulator runs (Vec -> Vec; the
other pairs come with the matrix issue) and the error for the rest."""
from __future__ import annotations

from ..errors import NotSimulatedError
from ..ir.nodes import TileVar

MATRIX_ISSUE = "moves between Mat, Left, Right, Acc, Bias and Scaling tiles come with the matrix issue (issue 8)"


def require_vec_pair(node, dst: TileVar, src: TileVar) -> None:
    """The simulator runs this instruction between Vec tiles only (for now)."""
    if (dst.type.loc, src.type.loc) != ("Vec", "Vec"):
        raise NotSimulatedError(f"{node.name} from {src.type.loc} to {dst.type.loc} is not simulated yet",
                                rule=f"the simulator runs {node.name} between Vec tiles; {MATRIX_ISSUE}",
                                fix="use Vec tiles, or kern.ir() / kern.cpp() to see the kernel")


__all__ = ["MATRIX_ISSUE", "require_vec_pair"]
