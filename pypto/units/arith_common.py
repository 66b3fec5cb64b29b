"""Checks and guards the arithmetic units share: separate storage where the a2a3 code needs it,
scalar operands converted to the tile's element type, and their run-time guards."""
from __future__ import annotations

from .. import diagnostics as Dx
from ..errors import DTypeError, OperandError
from ..ir import guards as G
from ..ir.nodes import Expr, RtFloat, TileVar, is_static
from ..backends.sim import lowering as L


def check_covers(node, soc) -> None:
    """Each tile source's valid region contains dst's (static parts now, the rest at run time);
    the operand slots are those of the overload this use selects."""
    from ..ir.verify import slots_of
    dst = node.operands[0]
    for o, x in zip(slots_of(node.name, node.operands)[1:], node.operands[1:]):
        if isinstance(x, TileVar) and o.role == "in":
            for d, s in zip(dst.valid, x.valid):
                if is_static(d) and is_static(s) and s < d:
                    raise Dx.src_valid_too_small(node.name, o.name, x.name, x.valid, dst.name, dst.valid)


def shares_storage(x: TileVar, y: TileVar) -> bool:
    """Whether two tiles may touch the same bytes: the same tile, or two placed tiles (TASSIGN)
    whose byte ranges overlap. Auto-placed tiles never overlap another tile; a tile TASSIGN'd to a
    runtime address cannot be decided here (pypto then computes as if they did not overlap)."""
    if x is y:
        return True
    if x.type.loc != y.type.loc or not isinstance(x.addr, int) or not isinstance(y.addr, int):
        return False
    return x.addr < y.addr + y.type.nbytes and y.addr < x.addr + x.type.nbytes


def require_separate(node, names: tuple[str, ...], why: str, fix: str | None = None) -> None:
    """The operands named ``names`` (table names of this use's slots) must not share storage."""
    from ..ir.verify import slots_of
    slots = slots_of(node.name, node.operands)
    tiles = [(o.name, x) for o, x in zip(slots, node.operands) if o.name in names and isinstance(x, TileVar)]
    for i, (na, a) in enumerate(tiles):
        for nb, b in tiles[i + 1:]:
            if shares_storage(a, b):
                same = "is the same tile as" if a is b else "overlaps"
                raise OperandError(
                    f"{node.name}: {na} {a.name} {same} {nb} {b.name}",
                    rule=f"{node.name} on a2a3: {', '.join(names)} must not share storage ({why})",
                    fix=fix or f"write the result to a separate tile and copy it back if needed")


def require_unit_separate(node, soc, why: str) -> None:
    """The operands the instruction's unit names as needing separate storage on this SoC and
    element type (Unit.separate, which fusion also reads) do not share it."""
    from ..ir import registry
    names = registry.separate(node.name, node.operands[0].type.dtype, soc)
    if names:
        require_separate(node, names, why)


def scalar_slot(node) -> int | None:
    """Index of the scalar operand of this use (None if it has none)."""
    from ..ir.verify import slots_of
    for k, o in enumerate(slots_of(node.name, node.operands)):
        if o.kind == "scalar":
            return k
    return None


def check_scalar_operand(node, soc) -> None:
    """Sources cover dst; the scalar converts to the tile's element type (an int scalar for an
    integer tile; a static value must fit, as pypto.Tensor data must)."""
    from ..ir.verify import slots_of
    check_covers(node, soc)
    k = scalar_slot(node)
    if k is None:
        return
    s = node.operands[k]
    name = slots_of(node.name, node.operands)[k].name
    dt = node.operands[0].type.dtype
    if isinstance(s, (Expr, RtFloat)) and dt.is_int and (isinstance(s, RtFloat) or s.dtype == "f64"):
        raise DTypeError(f"{node.name}: runtime scalar {name} {s} is a float but the tile is {dt.name}",
                         rule="the scalar is converted to the tile's element type",
                         fix="pass an int scalar for integer tiles")
    if not isinstance(s, Expr):
        L.check_scalar(node.name, name, s, dt)


def scalar_guards(node, soc) -> list:
    """Tile sources cover dst, and a runtime scalar fits the element type."""
    out = G.covers(node, soc)
    k = scalar_slot(node)
    if k is not None:
        out += G.scalar(k, node.operands[k], node.operands[0].type.dtype)
    return out
