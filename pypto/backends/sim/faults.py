"""Turn a fault written by the numba implementations into the PtoError a user should see."""
from __future__ import annotations

from ...errors import (GMBoundsError, PtoError, ShapeError, TileAlignmentError, TileCapacityError,
                       ValidRegionError)
from ...ir.nodes import GmView, InstrNode, SetValid, Stmt
from ...isa import TABLE
from .insns import errcodes as E


def _gm_view(node: Stmt) -> GmView | None:
    if isinstance(node, InstrNode):
        for o in node.operands:
            if isinstance(o, GmView):
                return o
    return None


def _space(node) -> str:
    from ...isa.soc import BUFFER_OF
    loc = node.tile.type.loc
    return f"{BUFFER_OF[loc]} ({loc})"


def fault(err, node: Stmt, block: int, kernel: str, shapes: dict | None = None) -> PtoError:
    """shapes: tensor parameter index -> the launch's real shape (for dynamic-shape kernels)."""
    code = int(err[0])
    d = [int(x) for x in err[1:7]]
    name = getattr(node, "name", type(node).__name__)
    if code == E.SRC_VALID:
        spec = TABLE[node.name]
        src = node.operands[d[0]]
        e: PtoError = ValidRegionError(
            f"{name}: {spec.operands[d[0]].name} {src.name} has a {d[1]}x{d[2]} valid region but "
            f"dst {node.operands[0].name}'s is {d[3]}x{d[4]}",
            rule="an elementwise op computes over dst's valid region and reads the same elements of "
                 "each source; elements outside a source's valid region are unspecified on the NPU",
            fix="make the sources' valid regions cover dst's (set_valid)")
    elif code == E.SHAPE:
        e = ShapeError(
            f"{name}: the GM view is {d[0]}x{d[1]} (as tile rows x cols) but the tile's valid region "
            f"is {d[2]}x{d[3]}",
            rule=f"{name} moves exactly the tile's valid region (pto-isa-semantics 4.2)",
            fix="make the GM view's extents follow the tile's valid region (or the other way round)")
    elif code == E.GM_BOUNDS:
        v = _gm_view(node)
        what = "the view's last element"
        if v is not None and 0 <= d[0] < len(v.bounds):
            what = v.bounds[d[0]][0]
        shape = (shapes or {}).get(v.tensor.index, tuple(v.tensor.shape)) if v is not None else None
        tname = f"{v.tensor.name} (shape {tuple(shape)})" if v is not None else "a tensor"
        e = GMBoundsError(
            f"{name}: GM view of {tname} out of bounds at run time: {what} = {d[1]}, allowed 0..{d[2]}",
            rule="a GM view must stay inside its tensor",
            fix="clamp the window with pto.min(...) and give the tile a matching valid region")
    elif code == E.SET_VALID:
        t = node.tile if isinstance(node, SetValid) else None
        e = ValidRegionError(
            f"set_valid({t.name if t else '?'}, {d[0]}, {d[1]}): outside the tile's {d[2]}x{d[3]}",
            rule="the valid region stays inside the tile", fix="clamp the sizes with pto.min(...)")
    elif code == E.ASSIGN_ALIGN:
        e = TileAlignmentError(f"TASSIGN({node.tile.name}, {d[0]:#x}): address in {_space(node)} is not "
                               f"{d[1]}-byte aligned",
                               rule=f"on-chip addresses are multiples of {d[1]} bytes (SA-0354)",
                               fix=f"round the address to a multiple of {d[1]}")
    elif code == E.ASSIGN_CAP:
        e = TileCapacityError(
            f"TASSIGN({node.tile.name}, {d[0]:#x}): tile {node.tile.name} needs {d[1]} bytes, so it would "
            f"end at {d[0] + d[1]:#x}, past the end of {_space(node)} ({d[2]} bytes)",
            rule="Addr + Rows*Cols*sizeof(T) <= capacity (SA-0353)",
            fix=f"use an address <= {d[2] - d[1]:#x}")
    else:
        e = PtoError(f"simulator fault {code} in {name}")
    where = f"kernel {kernel}, block {block}, {name}"
    if node.site is not None:
        where += f", {node.site}"
    return e.located(where)


__all__ = ["fault"]
