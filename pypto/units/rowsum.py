"""TROWSUM (5.4): dst[i, 0] = sum over j of src[i, j] over src's valid region, f16 and f32.

Valid-row rule: dst's valid rows equal src's (the NPU asserts it); dst is an R x 1 column, DN
with Cols == 1 or ND with one valid column (the shared row-reduction rules, reduce_rules.py); src
is ND. An empty source region writes nothing. tmp is
scratch (its contents afterwards are unspecified; the simulator leaves it alone).
Order and precision (pypto's model of each SoC's code; the hardware's in-repeat reduction
order is not documented, so a repeat reduction "tree" is a pairwise sum in f32 over adjacent
elements, an odd element out moving up a level unchanged, rounded once to the element type).
A repeat is 256 bytes: n = 64 f32 or 128 f16 elements.
* a2a3 (vector lanes first): if the row has at most n valid elements, tree them. Otherwise
  lanes = repeat 0 (+ repeat 1, lane by lane, when there are two full repeats), then the partial
  tail is added into the first lanes, then repeats 2, 3, ... are added lane by lane (each addition
  in f32, rounded to the element type), and the n lanes are treed.
* a5 (repeats first): each repeat (the last one partial) is treed, and the repeat sums are added
  left to right onto an accumulator that starts at +0 (each addition rounded to the element
  type), so a row of -0.0 sums to +0.0.
Reference: conformance/reference.py ``rowsum``.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..ir import guards as G
from ..ir.registry import Unit, register
from .reduce_rules import check_row_reduce

LOOPS = f"{__package__}.rowsum_lib"     # the loop (numba): imported when a kernel is generated


def lower_rowsum(node, soc) -> list[L.Call]:
    dst, src = node.operands[0], node.operands[1]
    return [L.Call(L.Fn(LOOPS, "rowsum"), (L.tile(dst), L.tile(src), L.lit(soc.name == "a5"),
                                            L.lit(dst.type.dtype.short == "f16"), L.err()))]


register(Unit("TROWSUM", check=check_row_reduce, sim=lower_rowsum, seed="rowreduce",
              emit=E.call("TROWSUM"), guards=G.same_rows))
