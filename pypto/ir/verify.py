"""Operand checks of one instruction node against the ISA table and SoC profile, and the verifier
pass that applies them (plus declaration checks) to every node of a Kernel.

The DSL runs ``check_operands`` on each call as it is made (lang/semantic.py); ``verify`` guards IR
built any other way (IDL lowering, hand-built IR) and catches a tracer bug before a backend sees it.
"""
from __future__ import annotations

from typing import Any

from .. import dtypes as D
from ..errors import (DTypeError, DTypeMismatchError, LocationError, OperandError, PtoError,
                      VerifyError)
from ..isa import TABLE
from .nodes import Assign, Expr, For, GmView, InstrNode, Kernel, SetValid, Sync, TileVar, walk

_KIND = {"tile": TileVar, "gm": GmView}


def _kind(x: Any) -> str:
    for kind, cls in _KIND.items():
        if isinstance(x, cls):
            return kind
    if isinstance(x, (int, float, Expr)) and not isinstance(x, bool):
        return "scalar"
    return type(x).__name__


def _describe(x: Any) -> str:
    return f"tile {x.name} ({x.type})" if isinstance(x, TileVar) else repr(x)


def check_operands(name: str, operands: tuple, soc) -> None:
    """Arity, operand kinds, tile locations, shared dtypes and the SoC's legal dtypes of one use
    of instruction ``name`` (IR operands: TileVar, GmView, scalars)."""
    spec = TABLE[name]
    sig = f"{name}({', '.join(o.name for o in spec.operands)})"
    if len(operands) != len(spec.operands):
        raise OperandError(f"{name} takes {len(spec.operands)} operands ({sig[len(name) + 1:-1]}), "
                           f"got {len(operands)}", rule="PTO operand order: destination first")
    group: dict[str, tuple[D.DType, str]] = {}
    for o, x in zip(spec.operands, operands):
        if _kind(x) != o.kind:
            raise OperandError(f"{name} operand {o.name}: expected a {o.kind}, got {_describe(x)}", rule=sig)
        if isinstance(x, TileVar) and x.type.loc not in o.locs:
            raise LocationError(f"{name} operand {o.name}: tile {x.name} lives in {x.type.loc}",
                                rule=f"{name}.{o.name} must be a tile in {' or '.join(o.locs)}",
                                fix=f"declare {x.name} with pto.{o.locs[0]}")
        dt = x.type.dtype if isinstance(x, TileVar) else x.tensor.dtype if isinstance(x, GmView) else None
        if dt is None or not o.group:
            continue
        first_dt, first = group.setdefault(o.group, (dt, o.name))
        if first_dt != dt:
            members = ", ".join(p.name for p in spec.operands if p.group == o.group)
            raise DTypeMismatchError(f"{name}: {o.name} is {dt.name} but {first} is {first_dt.name}",
                                     rule=f"{name} operands {members} share one element type",
                                     fix="convert one of them (TCVT) or declare matching tiles")
    legal = spec.dtypes_on(soc.name)
    if "T" in group and legal and isinstance(legal[0], str) and group["T"][0].short not in legal:
        dt = group["T"][0]
        raise DTypeError(
            f"{name} does not accept {dt.name} on {soc.name}",
            rule=f"{name} on {soc.name} takes {', '.join(D.BY_NAME[s].name for s in legal if s in D.BY_NAME)}",
            fix="convert with TCVT first" + (" or use soc='a5'" if soc.name != "a5" and
                                             dt.short in spec.dtypes_on("a5") else ""))


def _fail(node, msg: str) -> None:
    raise VerifyError(msg, where=str(node.site) if node.site else None)


def verify(k: Kernel, soc) -> None:
    declared = set(id(t) for t in k.tiles)
    for s in walk(k.body):
        if isinstance(s, InstrNode):
            if s.name not in TABLE:
                _fail(s, f"unknown instruction {s.name}")
            try:
                check_operands(s.name, s.operands, soc)
            except PtoError as e:
                raise (e.located(str(s.site)) if s.site else e) from None
            for x in s.operands:
                if isinstance(x, TileVar) and id(x) not in declared:
                    _fail(s, f"{s.name}: tile {x.name} is not declared in the kernel")
                if isinstance(x, TileVar) and x.addr is None and not x.manual:
                    _fail(s, f"{s.name}: tile {x.name} was never placed")
        elif isinstance(s, (SetValid, Assign)):
            if id(s.tile) not in declared:
                _fail(s, f"tile {s.tile.name} is not declared in the kernel")
        elif not isinstance(s, (Sync, For)):
            _fail(s, f"unknown IR statement {type(s).__name__}")
