"""TROWPROD, TROWMAX, TROWMIN (5.4, Addendum): dst[i, 0] = reduce over j of src[i, j] over src's
valid region, f16 and f32 (TROWSUM is pypto/units/rowsum.py).

Valid-row rule: dst's valid rows equal src's (the NPU asserts it); dst is an R x 1 column (DN
with Cols == 1, or ND with one valid column); src is ND. An empty source region writes nothing.
tmp is scratch (the simulator leaves it alone). Every multiply or max/min is one f32 op rounded
to the element type, except where a2a3 computes on its scalar unit (below).
* TROWPROD a2a3: 32-byte lanes (8 f32 / 16 f16) start at 1; lane k *= src[i, 8b + k] block by
  block (the partial last block masked); then the lanes are multiplied left to right in f32 and
  the product is rounded once to the element type.
* TROWPROD a5: 256-byte lanes (64 f32 / 128 f16) start at 1; lane k *= src[i, n*j + k] repeat by
  repeat; then halves fold: lane i *= lane i + L/2 for L = n, n/2, ..., 2.
* TROWMAX / TROWMIN a2a3: over the elements only (a row of -inf gives -inf). a5: the start value
  is -max finite (+max finite for TROWMIN), so a row of -inf gives -FLT_MAX (-65504 for f16).
  NaN propagates (ops.fmax / fmin; the first NaN in the row wins); max/min(+0, -0) keeps the
  earlier element.
Reference: conformance/ref_reduce.py ``rowprod`` / ``rowmax`` / ``rowmin``.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..ir import guards as G
from ..ir.registry import Unit, register
from . import reduce_rules as R
from .reduce_rules import check_row_reduce

KINDS = {"TROWPROD": R.PROD, "TROWMAX": R.MAX, "TROWMIN": R.MIN}


def lower_rowreduce(node, soc) -> list[L.Call]:
    dst, src = node.operands[0], node.operands[1]
    codec = 1 if dst.type.dtype.short == "f16" else 0
    return [L.Call(L.Fn(R.LOOPS, "rowreduce"),
                   (L.tile(dst), L.tile(src), L.lit(KINDS[node.name]), L.lit(soc.name == "a5"),
                    L.lit(codec), L.err()))]


for _name in KINDS:
    register(Unit(_name, check=check_row_reduce, sim=lower_rowreduce, seed="rowreduce",
                  emit=E.call(_name), guards=G.same_rows))
