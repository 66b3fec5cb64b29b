"""TCOLSUM, TCOLPROD, TCOLMAX, TCOLMIN (5.4, 5.9 n9, Addendum): dst[0, j] = reduce over i of
src[i, j] over src's valid region.

Valid-column rule: dst's valid columns equal src's (the NPU asserts it); src and dst are ND;
dst row 0 gets the results (only its valid columns are written: the NPU's first-row copy also
fills the rest of the last 32-byte block, which pypto does not model). An empty source region
writes nothing. Floats: every op is one f32 op rounded to the element type (f16, bf16); integers
wrap modulo 2^w. Orders (r_i: row i):
* a2a3: r0 op r1 op r2 ... left to right (TCOLSUM isBinary=False and the other three).
* a5: r0 op (r1 op r2) op (r3 op r4) ... op r_last (when the row count is even).
* TCOLSUM isBinary=True, a2a3: t[i] = r[2i] + r[2i+1], an odd last row added to t[0]; then the
  same on t (cnt = rows / 2, the odd one into t[0]) while more than one is left.
* TCOLSUM isBinary=True, a5: t[i] = r[2i] + r[2i+1], an odd last row added to the last t; then
  floor(log2(rows / 2)) rounds of t[j] = t[2j] + t[2j+1], an odd t added to the new last one.
  With one row the NPU addresses the tmp row before tmp (undefined): pypto gives row 0 and
  reports it with checks="strict".
So an f16 column [2048, 1, 1, 1] sums to 2048, 2050 (a2a3 sequential, pairwise), 2052, 2050 (a5).
tmp: only shapes are checked (src.validCol <= tmp.Cols, tmp rows >= src.validRow / 2 with
isBinary); the simulator leaves it alone. Reference: conformance/ref_reduce.py ``colsum`` etc.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..errors import OperandError
from ..ir.registry import Unit, register
from . import reduce_rules as R
from .reduce_rules import check_col_reduce, check_tmp_rows_cols, guard_col_reduce

KINDS = {"TCOLSUM": R.SUM, "TCOLPROD": R.PROD, "TCOLMAX": R.MAX, "TCOLMIN": R.MIN}
CODECS = {"f32": 0, "f16": 1, "bf16": 2}


def _binary(node) -> bool:
    return bool(node.params.get("isBinary", False))


def check_colsum(node, soc) -> None:
    check_col_reduce(node, soc)
    if len(node.operands) < 3:
        if _binary(node):
            raise OperandError("TCOLSUM: isBinary=True needs the tmp operand",
                               rule="TCOLSUM(dst, src, tmp, isBinary=True) adds row pairs into tmp; "
                                    "only the sequential form (isBinary=False) may leave tmp out",
                               fix="pass a tmp tile shaped like src: pto.TCOLSUM(dst, src, tmp, "
                                   "isBinary=True)")
        return
    check_tmp_rows_cols(node, _binary(node))


def lower_colreduce(node, soc) -> list[L.Call]:
    dst, src = node.operands[0], node.operands[1]
    dt = dst.type.dtype
    a5 = soc.name == "a5"
    if node.name == "TCOLSUM" and _binary(node):
        order = R.PAIR_A5 if a5 else R.PAIR_A2A3
    else:
        order = R.SEQ_A5 if a5 else R.SEQ_A2A3
    kind = KINDS[node.name]
    if dt.is_float:
        return [L.Call(L.Fn(R.LOOPS, "colreduce_f"),
                       (L.tile(dst), L.tile(src), L.lit(kind), L.lit(order), L.lit(CODECS[dt.short]),
                        L.err()))]
    return [L.Call(L.Fn(R.LOOPS, "colreduce_i"),
                   (L.tile(dst), L.tile(src), L.lit(kind), L.lit(order), L.err()))]


def emit_tcolsum(node, soc, cx) -> list[str]:
    """TCOLSUM(dst, src, tmp, isBinary); pto-isa's CPU backend has only the two-operand form
    (sequential adds onto 0), so the CPU build uses that. Without tmp (sequential only, which
    does not touch tmp) src is passed as the NPU's tmp argument."""
    ops = [cx.operand(x) for x in node.operands if x is not None]
    dst, src = ops[0], ops[1]
    tmp = ops[2] if len(ops) > 2 else src
    b = "true" if _binary(node) else "false"
    return ["#if defined(__CPU_SIM)  // pto-isa's CPU backend has only TCOLSUM(dst, src)",
            f"TCOLSUM({dst}, {src});", "#else", f"TCOLSUM({dst}, {src}, {tmp}, {b});", "#endif"]


register(Unit("TCOLSUM", check=check_colsum, sim=lower_colreduce, seed="colreduce",
              seed_params=("isBinary",), emit=emit_tcolsum, guards=guard_col_reduce))
for _name in ("TCOLPROD", "TCOLMAX", "TCOLMIN"):
    register(Unit(_name, check=check_col_reduce, sim=lower_colreduce, seed="colreduce",
                  emit=E.call(_name), guards=guard_col_reduce))
