"""TADDC TSUBC (5.2) and TADDSC TSUBSC (5.3): in the ISA, but the NPU implements them on neither
SoC (pto-isa marks them TODO; only its CPU simulator has them). pypto follows the NPU: a use is a
trace-time error for every element type, naming the two-instruction equivalent; the registry
lists them as not simulated, with that reason."""
from __future__ import annotations

from ..errors import DTypeError
from ..ir import registry
from ..ir.registry import Unit, register

# instruction -> (what it computes, the two instructions that do it)
TWO_STEPS = {
    "TADDC": ("src0 + src1 + src2", "pto.TADD(dst, src0, src1); pto.TADD(dst, dst, src2)"),
    "TSUBC": ("src0 - src1 + src2", "pto.TSUB(dst, src0, src1); pto.TADD(dst, dst, src2)"),
    "TADDSC": ("src0 + scalar + src1", "pto.TADDS(dst, src0, scalar); pto.TADD(dst, dst, src1)"),
    "TSUBSC": ("src0 - scalar + src1", "pto.TSUBS(dst, src0, scalar); pto.TADD(dst, dst, src1)"),
}
WHY = ("the NPU implements it on neither a2a3 nor a5 (pto-isa: TODO upstream; only pto-isa's CPU "
       "simulator has it), so pypto rejects it at trace time")


def reject(node, soc) -> None:
    what, steps = TWO_STEPS[node.name]
    raise DTypeError(f"{node.name} (dst = {what}) has no NPU implementation on {soc.name}: it accepts "
                     "no element type",
                     rule=f"{node.name}: {WHY}",
                     fix=f"write it as two instructions: {steps} (on a2a3 put "
                         "pto.pipe_barrier(pto.PIPE_V) between them)")


for _name in TWO_STEPS:
    registry.PENDING[_name] = WHY
    register(Unit(_name, check=reject))
