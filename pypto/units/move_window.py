"""TEXTRACT / TINSERT between Vec tiles (5.7, 5.9 n12): a window copy at (indexRow, indexCol).

No NPU implements the Vec -> Vec pair (a2a3 refuses it, a5 compiles it to nothing); pypto defines
it as the ISA text says, for ND or DN tiles of one dtype:
* TEXTRACT: dst[i, j] = src[r0 + i, c0 + j] over dst's valid region; the window must lie inside
  src's valid region (r0 + dst.validRow <= src.validRow, c0 + dst.validCol <= src.validCol).
* TINSERT: dst[r0 + i, c0 + j] = src[i, j] over src's valid region, inside dst's valid region.
Offsets are scalar operands (runtime values allowed); a window outside is an IndexRangeError, at
trace time when everything is static, else at run time (RANGE fault, nothing written).
The other location pairs (Mat -> Left/Right, Acc -> Mat, ...) are the cube's (units/cube_move.py).
Reference: conformance/ref_memory.py ``textract`` / ``tinsert``.
"""
from __future__ import annotations

from ..backends.npu.emit import values_shape
from ..backends.sim import lowering as L
from ..errors import DTypeError, IndexRangeError, OperandError
from ..ir.nodes import Expr, TileVar, is_runtime
from ..ir.registry import Unit, register
from .move_common import MOVES
from . import cube_move


def _offsets(node) -> tuple:
    """(indexRow, indexCol) of the plain form (defaults 0); the quant overload has 5 operands."""
    ops = node.operands
    if node.name == "TINSERT":
        return ops[-2], ops[-1]
    rest = ops[2:]
    return (tuple(rest) + (0, 0))[:2]


def check_window(node, soc) -> None:
    dst, src = node.operands[:2]
    if not (isinstance(dst, TileVar) and isinstance(src, TileVar)):
        return
    if (dst.type.loc, src.type.loc) != ("Vec", "Vec"):
        cube_move.check(node, soc)
        return
    if node.name == "TINSERT" and len(node.operands) == 5:
        raise OperandError("TINSERT: a preQuantScalar between Vec tiles",
                           rule="the quant overload of TINSERT is Acc -> Mat only",
                           fix="call TINSERT(dst, src, indexRow, indexCol)")
    if dst.type.dtype is not src.type.dtype:
        raise DTypeError(f"{node.name}: dst {dst.name} is {dst.type.dtype.name} but src {src.name} is "
                         f"{src.type.dtype.name}", rule=f"a Vec -> Vec {node.name} copies one dtype",
                         fix="convert with TCVT first")
    r0, c0 = _offsets(node)
    outer, inner = (src, dst) if node.name == "TEXTRACT" else (dst, src)
    for what, off, k in (("indexRow", r0, 0), ("indexCol", c0, 1)):
        if isinstance(off, bool) or not isinstance(off, (int, Expr)) or \
                (isinstance(off, Expr) and off.dtype != "i64"):
            raise OperandError(f"{node.name}: {what} {off!r} is not an integer",
                               rule=f"{node.name}'s window offsets are integers", fix="pass an int")
        lim_o, lim_i = outer.valid[k], inner.valid[k]
        known = not is_runtime(lim_o) and not is_runtime(lim_i)   # eager values count as runtime
        if not is_runtime(off) and (off < 0 or (known and off + lim_i > lim_o)):
            hi = lim_o - lim_i if known else "?"
            side = "rows" if k == 0 else "columns"
            raise IndexRangeError(
                f"{node.name}: {what} = {off} puts the {lim_i}-{side[:-1]} window outside the "
                f"{lim_o} valid {side} of {outer.name}",
                rule=f"{node.name}'s window lies inside {outer.name}'s valid region: {what} in 0 .. {hi}",
                fix=f"keep {what} in 0 .. {hi}, or change the valid regions")


def lower_window(node, soc) -> list[L.Call]:
    dst, src = node.operands[:2]
    if (dst.type.loc, src.type.loc) != ("Vec", "Vec"):
        return cube_move.lower(node, soc)
    r0, c0 = _offsets(node)
    fn = "textract" if node.name == "TEXTRACT" else "tinsert"
    return [L.Call(L.Fn(MOVES, fn), (L.tile(dst), L.tile(src), ("int", r0), ("int", c0), L.err()))]


def emit_window(node, soc, cx) -> str:
    """TEXTRACT(dst, src, indexRow, indexCol) / TINSERT(...), offsets as uint16_t (fp4 offsets
    along the pair axis in values, as pto-isa counts them)."""
    dst, src, scalar, _, r0, c0 = cube_move.split(node)
    r0, c0 = values_shape(src, r0, c0)
    if scalar is not None:
        return (f"{node.name}({cx.operand(dst)}, {cx.operand(src)}, (uint64_t)({cx.expr(scalar)}), "
                f"(uint16_t)({cx.expr(r0)}), (uint16_t)({cx.expr(c0)}));")
    return (f"{node.name}({cx.operand(dst)}, {cx.operand(src)}, (uint16_t)({cx.expr(r0)}), "
            f"(uint16_t)({cx.expr(c0)}));")


for _name in ("TEXTRACT", "TINSERT"):
    register(Unit(_name, check=check_window, sim=lower_window, emit=emit_window))
