"""What the movement units share: the error for a location pair the simulator does not run
(TFILLPAD of Mat tiles; the cube's moves are units/cube_move.py), and the packed fp4 rule."""
from __future__ import annotations

from ..errors import LayoutError, NotSimulatedError
from ..ir.nodes import TileVar

MOVES = f"{__package__}.move_lib"     # the moves' numba loops: imported when a kernel is generated

MATRIX_ISSUE = "its Mat tiles form (a2a3's Nz PadZero TFILLPAD) is not built yet"


def require_vec_pair(node, dst: TileVar, src: TileVar) -> None:
    """The simulator runs this instruction between Vec tiles only."""
    if (dst.type.loc, src.type.loc) != ("Vec", "Vec"):
        raise NotSimulatedError(f"{node.name} from {src.type.loc} to {dst.type.loc} is not simulated yet",
                                rule=f"the simulator runs {node.name} between Vec tiles; {MATRIX_ISSUE}",
                                fix="use Vec tiles, or kern.ir() / kern.cpp() to see the kernel")


# A pypto fp4 element is one byte: two values along the storage's contiguous axis (a box's inner
# axis, else the layout's; a GM view's innermost). Moves copy bytes, so they must keep that axis.
VIEW_FP4_AXIS = {"ND": "columns", "NZ": "columns", "DN": "rows"}


def require_fp4_axis(node, dst: str, dst_axis: str, src: str, src_axis: str) -> None:
    """A move of packed fp4 pairs keeps the axis the pairs run along."""
    if dst_axis != src_axis:
        raise LayoutError(f"{node.name}: the fp4 pairs of {src} run along its {src_axis}, those of "
                          f"{dst} along its {dst_axis}",
                          rule="a packed fp4 element holds two values along its storage's contiguous "
                               "axis, and moves copy bytes: pairs cannot turn from columns into rows",
                          fix="load the MX a matrix from an ND view into pto.TileMatNz and b from a DN "
                              "view (K contiguous) into pto.TileMatZn, as the NPU's MXFP4 GEMM does")


__all__ = ["MATRIX_ISSUE", "VIEW_FP4_AXIS", "require_fp4_axis", "require_vec_pair"]
