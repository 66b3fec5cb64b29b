"""What the 5.8 (complex) units share: their own run-time rules (the UNIT_RULE fault, decoded by
the unit that owns the rule, and mirrored as guards in the emitted C++), static valid-region
helpers and the C++ spelling of a tile's type. Registers no instruction."""
from __future__ import annotations

from typing import Callable


from ..backends import errcodes as EC
from ..backends import faults
from ..ir.nodes import TileVar, is_static


def decoder(name: str, fn: Callable) -> None:
    """Register ``fn(rule, values, node) -> PtoError`` for instruction ``name``'s UNIT_RULE faults."""
    faults.UNIT_RULES[name] = fn


def static_all(*xs) -> bool:
    return all(is_static(x) for x in xs)


def valid(t: TileVar) -> tuple:
    return t.valid[0], t.valid[1]


def cxx_type(cx, t: TileVar) -> str:
    """The C++ type of a tile operand, for explicit template arguments."""
    return f"decltype({cx.operand(t)})"


def guard(cx, node, violated: str, rule: int, *values: str) -> list[str]:
    """C++ lines that end the block with the UNIT_RULE fault ``rule`` when ``violated`` (a C++
    condition) holds: the simulator's run-time check, emitted before the instruction."""
    if not cx.with_guards:
        return []
    if not cx.sites or cx.sites[-1] is not node:
        cx.sites.append(node)
    site = len(cx.sites) - 1
    vals = ", ".join(f"(int64_t)({v})" for v in (values + ("0",) * 4)[:4])
    fifth = f" && ((pypto_err[6] = (int64_t)({values[4]})), true)" if len(values) > 4 else ""
    return [f"PYPTO_GUARD({site}, ({violated}) && pypto_fault(pypto_err, {EC.UNIT_RULE}, {rule}, "
            f"{vals}){fifth});"]


def vexpr(cx, x) -> str:
    """C++ of a valid size or other index expression."""
    return cx.expr(x)
