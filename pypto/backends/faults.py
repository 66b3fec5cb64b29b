"""Turn a fault record (pypto/backends/errcodes.py) into the PtoError a user should see. The
simulator's numba code and the NPU backends' emitted guards write the same record."""
from __future__ import annotations

from .. import diagnostics as Dx
from ..diagnostics import OVERFLOW
from ..errors import DTypeError, PtoError, ValidRegionError
from ..ir.nodes import GmView, Stmt, TileVar
from ..isa import TABLE
from ..isa.schema import PIPES
from ..isa.soc import BUFFER_OF
from . import errcodes as E

PARTIAL = ("GM outputs of this launch may be partly written (blocks that ran before the "
           "fault, and this block up to here; which ones depends on the mode and thread count)")


def _space(node) -> str:
    loc = node.tile.type.loc
    return f"{BUFFER_OF[loc]} ({loc})"


def _decode(code: int, d: list[int], node: Stmt, shapes: dict | None) -> PtoError:
    name = getattr(node, "name", type(node).__name__)
    if code == E.SRC_VALID:
        src = node.operands[d[0]]
        return Dx.src_valid_too_small(name, TABLE[name].operands[d[0]].name, src.name,
                                      d[1:3], node.operands[0].name, d[3:5])
    if code == E.SHAPE:
        t = next(o for o in node.operands if isinstance(o, TileVar))
        return Dx.view_shape_mismatch(name, d[0:2], t.name, d[2:4], t.type.layout_name)
    if code == E.GM_BOUNDS:
        v = next(o for o in node.operands if isinstance(o, GmView))
        what = v.bounds[d[0]][0] if 0 <= d[0] < len(v.bounds) else "the view's last element"
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
        op = TABLE[name].operands[d[0]].name
        return Dx.scalar_out_of_range(name, op, d[1], node.operands[0].type.dtype.name, d[2], d[3])
    if code == E.SCALAR_INF:
        op = TABLE[name].operands[d[0]].name
        dt = node.operands[0].type.dtype
        return DTypeError(f"{name}: runtime scalar {op} overflows {dt.name} (it would become inf)",
                          rule="a scalar operand is converted to the tile's element type and must fit "
                               "it, as pypto.Tensor data must",
                          fix=f"pass a value whose magnitude is below {OVERFLOW[dt.short]:g}")
    if code == E.VALID_ROWS:
        src, dst = node.operands[d[0]], node.operands[0]
        return ValidRegionError(
            f"{name}: src {src.name} has {d[1]} valid rows but dst {dst.name} has {d[2]}",
            rule="a row reduction writes one value per source row: dst.validRow == src.validRow "
                 "(the NPU asserts it)",
            fix=f"set {dst.name}'s valid rows to {src.name}'s (set_valid)")
    return PtoError(f"fault code {code} in {name}", rule="this is a pypto bug",
                    fix="please report it with the kernel")


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
