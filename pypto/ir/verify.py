"""Legality of one instruction use against the ISA table, the SoC profile and its unit's checks,
and the verifier pass that applies them (plus declaration checks) to every node of a Kernel.

The DSL runs ``check_instr`` on each call as it is made (lang/semantic.py); ``verify`` guards IR
built any other way (IDL lowering, hand-built IR) and catches a tracer bug before a backend sees it.
"""
from __future__ import annotations

from typing import Any

from .. import dtypes as D
from ..errors import (DTypeError, DTypeMismatchError, LayoutError, LocationError, OperandError,
                      PtoError, VerifyError)
from ..isa import TABLE
from . import registry
from .nodes import Assign, Expr, For, GmView, InstrNode, Kernel, SetValid, Sync, TileVar, walk

_KIND = {"tile": TileVar, "gm": GmView}


def _kind(x: Any) -> str:
    for kind, cls in _KIND.items():
        if isinstance(x, cls):
            return kind
    if isinstance(x, (int, float, Expr)) and not isinstance(x, bool):
        return "scalar"
    return type(x).__name__


def slots_of(name: str, operands: tuple) -> tuple:
    """The table's operand slots a use of ``name`` with these IR operands fills (the overload
    their kinds fit; x[i, j] of a tensor may fill a scalar slot)."""
    kinds = tuple("point" if isinstance(x, GmView) and x.point else _kind(x) for x in operands)
    locs = tuple(x.type.loc if isinstance(x, TileVar) else None for x in operands)
    return TABLE[name].slots_for(len(operands), kinds, locs)


def _describe(x: Any) -> str:
    return f"tile {x.name} ({x.type})" if isinstance(x, TileVar) else repr(x)


def _dtype(x: Any) -> D.DType | None:
    if isinstance(x, TileVar):
        return x.type.dtype
    if isinstance(x, GmView):
        return x.tensor.dtype
    return None


def _names(shorts) -> str:
    return ", ".join(D.BY_NAME[s].name for s in shorts if s in D.BY_NAME)


def check_params(name: str, params: dict, extra: tuple = ()) -> None:
    """Names and values of mode parameters: the table's, plus ``extra`` ones (a load_insn form's
    own, e.g. matmul's relu)."""
    spec = TABLE[name]
    known = spec.params + tuple(extra)
    unknown = set(params) - {p.name for p in known}
    if unknown:
        raise OperandError(f"{name}: unknown parameter(s) {sorted(unknown)}",
                           rule=f"{name} takes the mode parameters "
                                f"{', '.join(p.name for p in known) or '(none)'}",
                           fix=f"spell them as pto.{name}(..., "
                               f"{', '.join(f'{p.name}=...' for p in known)})")
    for p in known:
        if p.name in params and p.values and params[p.name] not in p.values:
            raise OperandError(f"{name}: {p.name}={params[p.name]!r} is not a {p.type}",
                               rule=f"{p.name} is one of {', '.join(map(str, p.values))}",
                               fix=f"pass e.g. {p.name}={p.values[0]!r}")


def check_operands(name: str, operands: tuple, soc) -> None:
    """Arity, operand kinds, tile locations and layouts, shared dtypes and the SoC's legal dtypes
    (one list for the shared group, or one tuple per operand) of one use of ``name``."""
    spec = TABLE[name]
    sig = f"{name}({', '.join(o.name for o in spec.operands)})"
    lists = (spec.operands,) + spec.overloads
    lo = min(sum(1 for o in ops if not o.optional) for ops in lists)
    hi = max(len(ops) for ops in lists)
    if not lo <= len(operands) <= hi:
        n = f"{lo} to {hi}" if lo != hi else str(hi)
        others = "".join(f" or ({', '.join(o.name for o in ops)})" for ops in spec.overloads)
        raise OperandError(f"{name} takes {n} operands ({sig[len(name) + 1:-1]}){others}, got "
                           f"{len(operands)}", rule="PTO operand order: destination first",
                           fix=f"call {sig}")
    group: dict[str, tuple[D.DType, str]] = {}
    slots = slots_of(name, operands)
    for o, x in zip(slots, operands):
        if _kind(x) != o.kind:
            raise OperandError(f"{name} operand {o.name}: expected a {o.kind}, got {_describe(x)}",
                               rule=sig, fix=f"pass a {o.kind} as {o.name}")
        if isinstance(x, TileVar):
            locs = o.locs_on(soc.name)
            if x.type.loc not in locs:
                other = [s for s in ("a2a3", "a5") if s != soc.name and x.type.loc in o.locs_on(s)]
                raise LocationError(
                    f"{name} operand {o.name}: tile {x.name} lives in {x.type.loc}",
                    rule=f"{name}.{o.name} must be a tile in {' or '.join(locs) or '(no location)'} "
                         f"on {soc.name}",
                    fix=f"declare {x.name} with pto.{locs[0] if locs else 'Vec'}"
                        + (f" (a {x.type.loc} {o.name} is legal on {other[0]})" if other else ""))
            if x.type.layout_name not in o.layouts:
                raise LayoutError(
                    f"{name} operand {o.name}: tile {x.name} has the boxed layout {x.type.layout_name}"
                    if x.type.slayout != "NoneBox" else
                    f"{name} operand {o.name}: tile {x.name} has layout {x.type.layout_name}",
                    rule=f"{name}.{o.name} takes {' or '.join(o.layouts)} tiles",
                    fix=f"declare {x.name} with " + ("blayout=pto.RowMajor and no slayout (ND)"
                                                     if "ND" in o.layouts else f"a {o.layouts[0]} layout"))
        dt = _dtype(x)
        if dt is None or not o.group:
            continue
        first_dt, first = group.setdefault(o.group, (dt, o.name))
        if first_dt != dt:
            members = ", ".join(p.name for p in slots if p.group == o.group)
            raise DTypeMismatchError(f"{name}: {o.name} is {dt.name} but {first} is {first_dt.name}",
                                     rule=f"{name} operands {members} share one element type",
                                     fix="convert one of them (TCVT) or declare matching tiles")
    legal = spec.dtypes_on(soc.name)
    other_soc = "a5" if soc.name != "a5" else "a2a3"
    if "T" in group and legal and isinstance(legal[0], str) and group["T"][0].short not in legal:
        dt = group["T"][0]
        raise DTypeError(
            f"{name} does not accept {dt.name} on {soc.name}",
            rule=f"{name} on {soc.name} takes {_names(legal)}",
            fix="convert with TCVT first" + (f" or use soc='{other_soc}'" if
                                            dt.short in spec.dtypes_on(other_soc) else ""))
    if legal and isinstance(legal[0], tuple):
        by_name = {o.name: x for o, x in zip(slots, operands)}
        got = tuple(_dtype(by_name[o.name]).short if o.name in by_name and _dtype(by_name[o.name])
                    is not None else None for o in spec.operands)
        ok = any(all(want is None or g is None or want == g for want, g in zip(combo, got))
                 for combo in legal)
        if not ok:
            shown = ", ".join(f"{o.name}={g}" for o, g in zip(spec.operands, got) if g is not None)
            combos = "; ".join("(" + ", ".join(c for c in combo if c) + ")" for combo in legal[:12])
            more = f" and {len(legal) - 12} more" if len(legal) > 12 else ""
            raise DTypeError(
                f"{name} does not accept the element types ({shown}) on {soc.name}",
                rule=f"{name} on {soc.name} takes ({', '.join(o.name for o in spec.operands)}) = "
                     f"{combos}{more}",
                fix="pick one of the legal combinations"
                    + (f" or use soc='{other_soc}'" if any(
                        all(w is None or g is None or w == g for w, g in zip(c, got))
                        for c in spec.dtypes_on(other_soc))
                       else ""))


def check_instr(node: InstrNode, soc) -> None:
    """Everything static about one instruction use: params, operands, then its unit's checks."""
    if node.name not in TABLE:
        raise VerifyError(f"unknown instruction {node.name}", rule="instructions come from pypto.isa.TABLE",
                          fix="check the name (PTO names are upper case, e.g. TADD)")
    check_params(node.name, node.params)
    check_operands(node.name, node.operands, soc)
    unit = registry.get(node.name)
    if unit is not None and unit.check is not None:
        unit.check(node, soc)


def _fail(node, msg: str, rule: str, fix: str) -> None:
    raise VerifyError(msg, rule=rule, fix=fix, where=str(node.site) if node.site else None)


def verify(k: Kernel, soc) -> None:
    """The pass: every instruction legal, every tile declared and placed."""
    declared = set(id(t) for t in k.tiles)
    undeclared = ("tiles used by a kernel are listed in Kernel.tiles", "declare the tile with pto.Tile "
                  "inside the kernel (or add it to Kernel.tiles when building IR by hand)")
    for s in walk(k.body):
        if isinstance(s, InstrNode):
            try:
                check_instr(s, soc)
            except PtoError as e:
                raise (e.located(str(s.site)) if s.site else e) from None
            for x in s.operands:
                if isinstance(x, TileVar) and id(x) not in declared:
                    _fail(s, f"{s.name}: tile {x.name} is not declared in the kernel", *undeclared)
                if isinstance(x, TileVar) and x.addr is None and not x.manual:
                    _fail(s, f"{s.name}: tile {x.name} was never placed",
                          "every tile has an on-chip address before the kernel runs",
                          "run the placement pass (pypto.ir.passes.run) or TASSIGN the tile")
        elif isinstance(s, (SetValid, Assign)):
            if id(s.tile) not in declared:
                _fail(s, f"tile {s.tile.name} is not declared in the kernel", *undeclared)
        elif not isinstance(s, (Sync, For)):
            _fail(s, f"unknown IR statement {type(s).__name__}",
                  "kernel bodies hold InstrNode, SetValid, Assign, Sync and For statements",
                  "build the body from pypto.ir.nodes statements")
