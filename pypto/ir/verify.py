"""Verifier pass: re-checks every instruction node of a Kernel against the ISA table and SoC.

The DSL checks each call as it is made; this pass guards IR built any other way (IDL lowering,
hand-built IR) and catches a tracer bug before a backend sees it.
"""
from __future__ import annotations

from ..errors import VerifyError
from ..isa import TABLE
from .nodes import Assign, For, GmView, InstrNode, Kernel, SetValid, Sync, TileVar, walk


def _fail(node, msg: str, rule: str = "") -> None:
    raise VerifyError(msg, rule=rule or None, where=str(node.site) if node.site else None)


def verify(k: Kernel, soc) -> None:
    declared = set(id(t) for t in k.tiles)
    for s in walk(k.body):
        if isinstance(s, InstrNode):
            spec = TABLE.get(s.name)
            if spec is None:
                _fail(s, f"unknown instruction {s.name}")
            if len(s.operands) != len(spec.operands):
                _fail(s, f"{s.name}: {len(s.operands)} operands, table says {len(spec.operands)}")
            dts = {}
            for o, x in zip(spec.operands, s.operands):
                if o.kind == "tile":
                    if not isinstance(x, TileVar):
                        _fail(s, f"{s.name}.{o.name}: expected a tile")
                    if id(x) not in declared:
                        _fail(s, f"{s.name}.{o.name}: tile {x.name} is not declared in the kernel")
                    if x.type.loc not in o.locs:
                        _fail(s, f"{s.name}.{o.name}: tile in {x.type.loc}", f"allowed: {o.locs}")
                    if x.addr is None and not x.manual:
                        _fail(s, f"{s.name}.{o.name}: tile {x.name} was never placed")
                    dt = x.type.dtype
                elif o.kind == "gm":
                    if not isinstance(x, GmView):
                        _fail(s, f"{s.name}.{o.name}: expected a GM view")
                    dt = x.tensor.dtype
                else:
                    dt = None
                if dt is not None and o.group:
                    if dts.setdefault(o.group, dt) != dt:
                        _fail(s, f"{s.name}: operands of group {o.group} differ in dtype")
            legal = spec.dtypes_on(soc.name)
            if "T" in dts and legal and isinstance(legal[0], str) and dts["T"].short not in legal:
                _fail(s, f"{s.name}: {dts['T'].name} not legal on {soc.name}")
        elif isinstance(s, (SetValid, Assign)):
            if id(s.tile) not in declared:
                _fail(s, f"tile {s.tile.name} is not declared in the kernel")
        elif isinstance(s, (Sync, For)):
            pass
        else:
            _fail(s, f"unknown IR statement {type(s).__name__}")
