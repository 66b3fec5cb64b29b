"""Turn a fault written by the numba implementations into the PtoError a user should see."""
from __future__ import annotations

from ... import diagnostics as Dx
from ...errors import PtoError
from ...ir.nodes import GmView, Stmt, TileVar
from ...isa import TABLE
from ...isa.soc import BUFFER_OF
from .insns import errcodes as E


def _space(node) -> str:
    loc = node.tile.type.loc
    return f"{BUFFER_OF[loc]} ({loc})"


def fault(err, node: Stmt, block: int, kernel: str, shapes: dict | None = None) -> PtoError:
    """shapes: tensor parameter index -> the launch's real shape (for dynamic-shape kernels)."""
    code = int(err[0])
    d = [int(x) for x in err[1:7]]
    name = getattr(node, "name", type(node).__name__)
    if code == E.SRC_VALID:
        src = node.operands[d[0]]
        e: PtoError = Dx.src_valid_too_small(name, TABLE[name].operands[d[0]].name, src.name,
                                             d[1:3], node.operands[0].name, d[3:5])
    elif code == E.SHAPE:
        t = next(o for o in node.operands if isinstance(o, TileVar))
        e = Dx.view_shape_mismatch(name, d[0:2], t.name, d[2:4], t.type.layout_name)
    elif code == E.GM_BOUNDS:
        v = next(o for o in node.operands if isinstance(o, GmView))
        what = v.bounds[d[0]][0] if 0 <= d[0] < len(v.bounds) else "the view's last element"
        shape = (shapes or {}).get(v.tensor.index, v.tensor.shape)
        e = Dx.gm_out_of_bounds(v.tensor.name, shape, what, d[1], d[2])
    elif code == E.SET_VALID:
        e = Dx.valid_out_of_range(node.tile.name, d[0], d[1], d[2], d[3])
    elif code == E.ASSIGN_ALIGN:
        e = Dx.assign_misaligned(node.tile.name, d[0], _space(node), d[1])
    elif code == E.ASSIGN_CAP:
        e = Dx.assign_past_end(node.tile.name, d[0], d[1], _space(node), d[2])
    else:
        e = PtoError(f"simulator fault {code} in {name}")
    where = f"kernel {kernel}, block {block}, {name}"
    if node.site is not None:
        where += f", {node.site}"
    return e.located(where)
