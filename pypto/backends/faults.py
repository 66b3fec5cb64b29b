"""Turn a fault record (pypto/backends/errcodes.py) into the PtoError a user should see. The
simulator's numba code and the NPU backends' emitted guards write the same record."""
from __future__ import annotations

import itertools
import threading

from .. import diagnostics as Dx
from ..diagnostics import OVERFLOW
from ..errors import DTypeError, IndexRangeError, PtoError, UndefinedBehaviorError, ValidRegionError
from ..ir.nodes import GmView, Stmt, TileVar, gm_loads
from ..isa import TABLE
from ..isa.schema import PIPES
from ..isa.soc import BUFFER_OF
from . import errcodes as E

PARTIAL = ("GM outputs of this launch may be partly written (blocks that ran before the "
           "fault, and this block up to here; which ones depends on the mode and thread count)")


def _space(node) -> str:
    loc = node.tile.type.loc
    return f"{BUFFER_OF[loc]} ({loc})"


def _slot(node, k: int) -> str:
    """The table's name of operand k of an instruction node (the overload it uses)."""
    from ..ir.verify import slots_of
    slots = slots_of(node.name, node.operands)
    return slots[k].name if 0 <= k < len(slots) else f"operand {k}"


def _decode(code: int, d: list[int], node: Stmt, shapes: dict | None) -> PtoError:
    name = getattr(node, "name", type(node).__name__)
    if code == E.SRC_VALID:
        src = node.operands[d[0]]
        return Dx.src_valid_too_small(name, _slot(node, d[0]), src.name,
                                      d[1:3], node.operands[0].name, d[3:5])
    if code == E.SHAPE:
        t = next(o for o in node.operands if isinstance(o, TileVar))
        return Dx.view_shape_mismatch(name, d[0:2], t.name, d[2:4], t.type.layout_name)
    if code == E.GM_BOUNDS:
        k = d[0]
        if k >= 100:              # the bounds of a scalar read x[i, j] (lowering.bounds)
            v = [g.view for o in node.operands for g in gm_loads(o)][k // 100 - 1]
            k %= 100
        else:
            v = next(o for o in node.operands if isinstance(o, GmView))
        what = v.bounds[k][0] if 0 <= k < len(v.bounds) else "the view's last element"
        shape = (shapes or {}).get(v.tensor.index, v.tensor.shape)
        return Dx.gm_out_of_bounds(v.tensor.name, shape, what, d[1], d[2])
    if code == E.SET_VALID:
        return Dx.valid_out_of_range(node.tile.name, d[0], d[1], d[2], d[3])
    if code == E.ASSIGN_ALIGN:
        return Dx.assign_misaligned(node.tile.name, d[0], _space(node), d[1])
    if code == E.ASSIGN_CAP:
        return Dx.assign_past_end(node.tile.name, d[0], d[1], _space(node), d[2])
    if code == E.ASSIGN_NEG:
        return Dx.assign_negative(node.tile.name, d[0], _space(node))
    if code == E.SCALAR_RANGE:
        op = _slot(node, d[0])
        return Dx.scalar_out_of_range(name, op, d[1], node.operands[0].type.dtype.name, d[2], d[3])
    if code == E.SCALAR_INF:
        op = _slot(node, d[0])
        dt = node.operands[0].type.dtype
        return DTypeError(f"{name}: runtime scalar {op} overflows {dt.name} (it would become inf)",
                          rule="a scalar operand is converted to the tile's element type and must fit "
                               "it, as pypto.Tensor data must",
                          fix=f"pass a value whose magnitude is below {OVERFLOW[dt.short]:g}")
    if code == E.VALID_ROWS:
        src, dst = node.operands[d[0]], node.operands[0]
        return ValidRegionError(
            f"{name}: {_slot(node, d[0])} {src.name} has {d[1]} valid rows but dst {dst.name} has {d[2]}",
            rule=f"{name} handles one value per row: {_slot(node, d[0])}.validRow == dst.validRow "
                 "(the NPU asserts it)",
            fix=f"give {src.name} and {dst.name} the same number of valid rows (set_valid)")
    if code == E.UNDEFINED:
        return _undefined(name, d, node)
    if code == E.VALID_COLS:      # d[2]: dst's valid columns, or a width the operand must have
        src, slot = node.operands[d[0]], _slot(node, d[0])
        return ValidRegionError(
            f"{name}: {slot} {src.name} has {d[1]} valid columns where {d[2]} are needed",
            rule=f"{name}: {slot}.validCol equals dst.validCol (one value per column), or the fixed "
                 "width of a row-broadcast src1 (1 for a column vector, 32 bytes for a block); the "
                 "NPU asserts it",
            fix=f"give {src.name} {d[2]} valid columns (valid=... or set_valid)")
    if code == E.COMM:
        return take_error(d[0])
    if code == E.UNIT_RULE and name in UNIT_RULES:
        return UNIT_RULES[name](d[0], d[1:], node)
    if code == E.RANGE:
        what = RANGES.get(d[0], "value")
        return IndexRangeError(f"{name}: runtime {what} {d[1]} outside {d[2]} .. {d[3]}",
                               rule=f"{name}'s {what} must lie in {d[2]} .. {d[3]} (the instruction "
                                    "would touch memory outside its operands)",
                               fix=f"keep the {what} in range")
    return PtoError(f"fault code {code} in {name}", rule="this is a pypto bug",
                    fix="please report it with the kernel")


# UNDEFINED kinds: (what happened, what pypto gives by default)
UNDEFINED = {
    E.UB_DIV_ZERO: ("integer division by zero", "pypto gives the documented default value (see "
                    "the instruction's notes in docs/isa-reference.md)"),
    E.UB_SHIFT: ("a shift count outside 0 .. bits-1", "pypto gives the documented default value "
                 "(see the instruction's notes)"),
    E.UB_NAN_ORDER: ("a NaN in an ordering instruction", "pypto orders NaNs as documented in the "
                     "instruction's notes"),
    E.UB_INDEX: ("an index outside the source", "pypto gives the documented default"),
    E.UB_CVT_NAN: ("NaN or infinity converted to an integer", "pypto gives 0 for NaN and the type's "
                   "limit for infinity"),
    E.UB_DUP_INDEX: ("two scatter indices naming the same element", "the last write in row-major "
                     "order wins in pypto"),
    E.UB_OUT_OF_TILE: ("the NPU's code addresses memory outside an operand tile",
                       "pypto gives the result the instruction means (see its notes)"),
}
# instruction name -> decoder(rule id, values, node) -> PtoError of a UNIT_RULE fault (registered
# by the instruction's unit, which owns the rule and its message)
UNIT_RULES: dict = {}
RANGES = {E.RANGE_OFFSET: "window offset", E.RANGE_COUNT: "count", E.RANGE_INDEX: "index",
          E.RANGE_EXTENT: "extent",
          E.RANGE_MKN: "matrix size (m = a.validRow, k = a.validCol, n = b.validCol)"}


def _undefined(name: str, d: list[int], node) -> PtoError:
    what, default = UNDEFINED.get(d[0], ("an undefined operation", "see the instruction's notes"))
    spec = TABLE.get(name)
    op = _slot(node, d[1]) if spec is not None else f"operand {d[1]}"
    tile = node.operands[d[1]] if 0 <= d[1] < len(getattr(node, "operands", ())) else None
    label = f"{op} {tile.name}" if isinstance(tile, TileVar) else op
    notes = "; ".join(spec.notes) if spec is not None and spec.notes else default
    return UndefinedBehaviorError(
        f"{name}: {what} at element ({d[2]}, {d[3]}) of {label} (value {d[4]})",
        rule=f"the NPU's result is undefined here; without checks='strict' {notes}",
        fix="keep the operand in the defined range, or run without SimOptions(checks='strict') to "
            "accept pypto's default")


# errors raised in Python inside compiled code (the simulator's comm instructions), parked until
# the launch decodes the fault record that carries their ticket
_PARKED: dict[int, PtoError] = {}
_TICKETS = itertools.count(1)
_PARK_LOCK = threading.Lock()


def keep_error(e: Exception) -> int:
    """Park an error raised inside compiled code; the fault record carries the ticket returned."""
    if not isinstance(e, PtoError):
        e = PtoError(f"internal error in a communication instruction: {type(e).__name__}: {e}",
                     rule="this is a pypto (or MPI) failure, not a rule of your kernel",
                     fix="please report it with the kernel")
    with _PARK_LOCK:
        t = next(_TICKETS)
        _PARKED[t] = e
    return t


def take_error(ticket: int) -> PtoError:
    with _PARK_LOCK:
        e = _PARKED.pop(ticket, None)
    return e.with_traceback(None) if e is not None else PtoError("a communication instruction failed",
                                            rule="(its error was already reported)")


def fault(err, node: Stmt, block: int, kernel: str, shapes: dict | None = None,
          partial: bool = True) -> PtoError:
    """shapes: tensor parameter index -> the launch's real shape (for dynamic-shape kernels)."""
    e = _decode(int(err[0]), [int(x) for x in err[1:7]], node, shapes)
    name = getattr(node, "name", type(node).__name__)
    where = f"kernel {kernel}, block {block}, {name}"
    if getattr(node, "pipe", None) in PIPES:
        where += f" (PIPE_{node.pipe})"
    if node.site is not None:
        where += f", {node.site}"
    if partial:
        e.noted(PARTIAL)
    return e.located(where)
