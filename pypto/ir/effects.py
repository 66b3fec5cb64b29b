"""Resolve each instruction's pipe, core kind and effects from the ISA table and the SoC.

The hazard checker, flag insertion, the cost model and the C++ emitter all read these three
facts from the IR node rather than working them out again.
"""
from __future__ import annotations

from ..isa import TABLE
from ..isa.schema import CORE_OF_LOC
from . import registry
from .nodes import Effect, For, GmView, InstrNode, Kernel, SetValid, TileVar, free_vars, gm_loads, walk
from .verify import slots_of


def effects_of(node: InstrNode, soc) -> tuple[Effect, ...]:
    """What ``node`` reads and writes: operands by role and region, plus hidden scratch."""
    spec = TABLE[node.name]
    out: list[Effect] = []
    for i, (o, x) in enumerate(zip(slots_of(node.name, node.operands), node.operands)):
        if isinstance(x, TileVar):
            region = o.region
        elif isinstance(x, GmView):
            region = "view"
        elif gm_loads(x):
            out.append(Effect("read", i, "gm_scalar"))   # x[i, j] read by the scalar unit (PIPE_S)
            continue
        else:
            continue
        if o.reads:
            out.append(Effect("read", i, region))
        if o.writes:
            out.append(Effect("write", i, region))
    if soc.name in spec.scratch and soc.ub_scratch is not None:
        out.append(Effect("write", None, "scratch", "Vec", soc.ub_scratch))
    unit = registry.get(node.name)
    if unit is not None and unit.effects is not None:
        out.extend(unit.effects(node, soc))
    return tuple(out)


def annotate_node(node: InstrNode, soc) -> None:
    spec = TABLE[node.name]
    locs = {o.name: x.type.loc for o, x in zip(slots_of(node.name, node.operands), node.operands)
            if isinstance(x, TileVar)}
    node.pipe = spec.pipe_on(soc.name, locs)
    cores = {CORE_OF_LOC[loc] for loc in locs.values()}
    node.core = cores.pop() if len(cores) == 1 else ("AIC" if "AIC" in cores else None)
    node.effects = effects_of(node, soc)


def annotate(k: Kernel, soc) -> None:
    """The pass: pipe, core kind and effects on every instruction node."""
    for s in walk(k.body):
        if isinstance(s, InstrNode):
            annotate_node(s, soc)


def uses_world(k: Kernel) -> bool:
    """Whether the kernel names other devices: a communication instruction, a peer's view, or
    pto.rank_id() / pto.rank_num() anywhere."""
    def ranked(x) -> bool:
        if isinstance(x, GmView):
            return x.rank is not None or any(ranked(e) for e in (x.offset, *x.shape, *x.strides))
        return any(v.kind in ("rank_id", "rank_num") for v in free_vars(x))

    for s in walk(k.body):
        if isinstance(s, InstrNode):
            if TABLE[s.name].category == "comm" or any(ranked(o) for o in s.operands):
                return True
        elif isinstance(s, For) and any(ranked(e) for e in (s.start, s.stop, s.step)):
            return True
        elif isinstance(s, SetValid) and any(ranked(e) for e in (s.rows, s.cols)):
            return True
    return False
