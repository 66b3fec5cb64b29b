"""TSORT32 and TMRGSORT (5.8, 5.9 n15, n16): 32-element block sorts and merges of (value, index)
records, descending by value.

A record is 8 bytes: f32 (value, u32 index bits), f16 (value, 0, index low 16 bits, index high
16 bits). Values compare as floats (f16 widened exactly; -0 == +0). pypto's choices where the NPU
is undefined: ties keep the lower column (TSORT32) or the lower list (TMRGSORT, the documented
rule); NaNs order below every number, all NaNs equal (the NPU pads its sort with NaN to push
padding last) and ``checks="strict"`` reports any NaN value. Records are copied as raw bits.
Details of each form: the table notes (pypto/isa/instructions/complex.py). Reference:
conformance/ref_complex.py ``tsort32`` / ``tmrgsort``.
"""
from __future__ import annotations

from ..backends.sim import lowering as L
from ..errors import DTypeError, OperandError, TileShapeError, ValidRegionError
from ..ir.nodes import TileVar, is_static
from ..ir.registry import Unit, register
from .complex_common import cxx_type, decoder, guard

LOOPS = f"{__package__}.sort_lib"     # the numba loops: imported when a kernel is generated


# UNIT_RULE ids
SORT_SRC_ROWS, SORT_IDX, SORT_DST_CAP, SORT_PARTIAL = 1, 2, 3, 4
MRG_TMP, MRG_DST, MRG_BLOCKLEN, MRG_MULTIPLE, MRG_GROUPS, MRG_DST_CAP = 1, 2, 3, 4, 5, 6


# -- TSORT32 --------------------------------------------------------------------------------------


def check_tsort32(node, soc) -> None:
    """The run-time rules, raised now where the sizes are static (the same messages)."""
    dst, src, idx = node.operands[:3]
    n = src.valid[1]
    if len(node.operands) == 3 and is_static(n) and n % 32:
        raise _decode_tsort32(SORT_PARTIAL, [n], node)
    if is_static(n) and n * _per(dst) > dst.type.cols:
        raise _decode_tsort32(SORT_DST_CAP, [n * _per(dst), dst.type.cols], node)
    if is_static(src.valid[0]) and is_static(dst.valid[0]) and src.valid[0] < dst.valid[0]:
        raise _decode_tsort32(SORT_SRC_ROWS, [src.valid[0], dst.valid[0]], node)
    ivr, ivc, dvr = idx.valid[0], idx.valid[1], dst.valid[0]
    if all(is_static(x) for x in (ivr, ivc, dvr, n)) and ((ivr != 1 and ivr < dvr) or ivc < n):
        raise _decode_tsort32(SORT_IDX, [ivr, ivc, dvr, n], node)


def _per(t: TileVar) -> int:
    return 8 // t.type.dtype.itemsize


def lower_tsort32(node, soc) -> list[L.Call]:
    dst, src, idx = node.operands[:3]
    fn = "tsort32_f16" if dst.type.dtype.short == "f16" else "tsort32_f32"
    return [L.Call(L.Fn(LOOPS, fn), (L.tile(dst), L.tile(src), L.tile(idx), L.lit(dst.type.cols),
                                     L.lit(len(node.operands) == 4), L.err()))]


def emit_tsort32(node, soc, cx) -> list[str]:
    dst, src, idx = node.operands[:3]
    per = _per(dst)
    n = cx.expr(src.valid[1])
    svr, dvr = cx.expr(src.valid[0]), cx.expr(dst.valid[0])
    ivr, ivc = cx.expr(idx.valid[0]), cx.expr(idx.valid[1])
    partial = guard(cx, node, f"{n} % 32 != 0", SORT_PARTIAL, n) if len(node.operands) == 3 else []
    return (guard(cx, node, f"{svr} < {dvr}", SORT_SRC_ROWS, svr, dvr) + partial
            + guard(cx, node, f"({ivr} != 1 && {ivr} < {dvr}) || {ivc} < {n}", SORT_IDX, ivr, ivc, dvr, n)
            + guard(cx, node, f"{n} * {per} > {dst.type.cols}", SORT_DST_CAP, f"{n} * {per}",
                    str(dst.type.cols))
            + [f"TSORT32({', '.join(cx.operand(o) for o in node.operands)});"])


def _decode_tsort32(rule, v, node):
    dst, src, idx = node.operands[:3]
    if rule == SORT_SRC_ROWS:
        return ValidRegionError(f"TSORT32: src {src.name} has {v[0]} valid rows but dst {dst.name} has {v[1]}",
                                rule="TSORT32 sorts dst.validRow rows of src",
                                fix=f"give {src.name} at least as many valid rows as {dst.name}")
    if rule == SORT_IDX:
        return ValidRegionError(
            f"TSORT32: idx {idx.name} has valid region ({v[0]}, {v[1]}) but the sort needs {v[3]} "
            f"indices in each of {v[2]} rows",
            rule="idx holds one u32 index per sorted element: 1 valid row (used for every row) or "
                 "as many as dst, and at least as many valid columns as elements sorted",
            fix=f"set {idx.name}'s valid region (set_valid)")
    if rule == SORT_PARTIAL:
        return ValidRegionError(
            f"TSORT32: src {src.name} has {v[0]} valid columns and no tmp tile",
            rule="TSORT32(dst, src, idx) sorts whole 32-element blocks; a partial last block needs "
                 "the 4-operand form with a tmp tile (the NPU would leave the tail unsorted)",
            fix=f"pass a tmp tile: pto.TSORT32({dst.name}, {src.name}, {idx.name}, tmp) with tmp a "
                f"(1, {src.type.cols}) {src.type.dtype.name} tile")
    return TileShapeError(
        f"TSORT32: dst {dst.name} has {v[1]} columns but sorting writes {v[0]}",
        rule="TSORT32 writes one 8-byte record per sorted element from column 0 of each dst row",
        fix="use a wider dst or fewer valid source columns")


decoder("TSORT32", _decode_tsort32)
register(Unit("TSORT32", check=check_tsort32, sim=lower_tsort32, emit=emit_tsort32, seed="sort"))


# -- TMRGSORT -------------------------------------------------------------------------------------


def _single(node) -> bool:
    return len(node.operands) == 3


def check_tmrgsort(node, soc) -> None:
    """Static facts (single rows, the count tile's type), then the run-time rules where the sizes
    are static (the same messages)."""
    for t in (x for x in node.operands if isinstance(x, TileVar)):
        if t.type.rows != 1:
            raise TileShapeError(f"TMRGSORT: tile {t.name} has {t.type.rows} rows",
                                 rule="TMRGSORT's tiles are single rows (Rows == 1, the NPU's "
                                      "static_assert)",
                                 fix=f"declare {t.name} with shape (1, cols)")
    if _single(node):
        dst, src, blen = node.operands
        if node.params.get("exhausted"):
            raise OperandError("TMRGSORT(dst, src, blockLen) takes no exhausted parameter",
                               rule="exhausted belongs to the multi-list form (dst, executedNumList, "
                                    "tmp, src0, src1, ...)", fix="leave exhausted out")
        if not is_static(blen):
            return
        if not isinstance(blen, int) or blen <= 0 or blen % 64:
            raise _decode_tmrgsort(MRG_BLOCKLEN, [blen], node)
        svc = src.valid[1]
        if is_static(svc):
            if svc % (4 * blen):
                raise _decode_tmrgsort(MRG_MULTIPLE, [svc, blen], node)
            if not 1 <= svc // (4 * blen) <= 255:
                raise _decode_tmrgsort(MRG_GROUPS, [svc // (4 * blen), svc, blen], node)
            if svc > dst.type.cols:
                raise _decode_tmrgsort(MRG_DST_CAP, [svc, dst.type.cols], node)
        return
    dst, exe, tmp = node.operands[:3]
    if exe.type.dtype.short != "u16":
        raise DTypeError(f"TMRGSORT: executedNumList {exe.name} is {exe.type.dtype.name}",
                         rule="executedNumList receives the four u16 counts of "
                              "MrgSortExecutedNumList", fix=f"declare {exe.name} as a (1, 16) "
                                                            "uint16 tile")
    vcs = [s.valid[1] for s in node.operands[3:]]
    per = _per(dst)
    if all(is_static(v) for v in vcs) and sum(v // per for v in vcs) * per > tmp.type.cols:
        raise _decode_tmrgsort(MRG_TMP, [sum(v // per for v in vcs) * per, tmp.type.cols], node)
    if is_static(dst.valid[1]) and dst.valid[1] > tmp.type.cols:
        raise _decode_tmrgsort(MRG_DST, [dst.valid[1], tmp.type.cols], node)


def lower_tmrgsort(node, soc) -> list[L.Call]:
    f16 = node.operands[0].type.dtype.short == "f16"
    sfx = "f16" if f16 else "f32"
    if _single(node):
        dst, src, blen = node.operands
        return [L.Call(L.Fn(LOOPS, f"tmrgsort1_{sfx}"), (L.tile(dst), L.tile(src), ("int", blen),
                                                          L.lit(dst.type.cols), L.err()))]
    dst, exe, tmp = node.operands[:3]
    srcs = list(node.operands[3:])
    nl = len(srcs)
    srcs += [srcs[-1]] * (4 - nl)
    return [L.Call(L.Fn(LOOPS, f"tmrgsort_{sfx}"),
                   (L.tile(dst), L.tile(exe), L.tile(tmp)) + tuple(L.tile(s) for s in srcs)
                   + (L.lit(nl), L.lit(tmp.type.cols), L.lit(bool(node.params.get("exhausted"))), L.err()))]


def emit_tmrgsort(node, soc, cx) -> list[str]:
    if _single(node):
        dst, src, blen = node.operands
        b, svc = cx.expr(blen), cx.expr(src.valid[1])
        g = f"(4 * {b})"
        return (guard(cx, node, f"{b} <= 0 || {b} % 64 != 0", MRG_BLOCKLEN, b)
                + guard(cx, node, f"{svc} % {g} != 0", MRG_MULTIPLE, svc, b)
                + guard(cx, node, f"{svc} / {g} < 1 || {svc} / {g} > 255", MRG_GROUPS, f"{svc} / {g}", svc, b)
                + guard(cx, node, f"{svc} > {dst.type.cols}", MRG_DST_CAP, svc, str(dst.type.cols))
                + [f"TMRGSORT({cx.operand(dst)}, {cx.operand(src)}, (uint32_t)({b}));"])
    dst, exe, tmp = node.operands[:3]
    srcs = node.operands[3:]
    per = _per(dst)
    total = " + ".join(f"{cx.expr(s.valid[1])} / {per}" for s in srcs)
    dvc = cx.expr(dst.valid[1])
    exh = bool(node.params.get("exhausted"))
    v = "pypto_mrg"                 # scoped by the braces below
    types = ", ".join(cxx_type(cx, t) for t in (dst, tmp) + tuple(srcs))
    lines = (guard(cx, node, f"({total}) * {per} > {tmp.type.cols}", MRG_TMP, f"({total}) * {per}",
                   str(tmp.type.cols))
             + guard(cx, node, f"{dvc} > {tmp.type.cols}", MRG_DST, dvc, str(tmp.type.cols))
             + ["{", f"    MrgSortExecutedNumList {v}{{}};",
                f"    TMRGSORT<{types}, {'true' if exh else 'false'}>({cx.operand(dst)}, {v}, "
                f"{', '.join(cx.operand(t) for t in (tmp,) + tuple(srcs))});"])
    if exh:
        e = cx.operand(exe)
        lines += [f"    {e}.SetValue({k}, (uint16_t){v}.mrgSortList{k});" for k in range(4)]
        lines.append("    pipe_barrier(PIPE_ALL);   // scalar stores into UB before later pipes read them")
    return lines + ["}"]


def _decode_tmrgsort(rule, v, node):
    ops = node.operands
    if rule == MRG_TMP:
        return TileShapeError(f"TMRGSORT: tmp {ops[2].name} has {v[1]} columns but the sources hold "
                              f"{v[0]} elements",
                              rule="TMRGSORT merges every source record into tmp first: tmp.Cols >= "
                                   "the records of all sources",
                              fix=f"declare {ops[2].name} with {v[0]} columns or more")
    if rule == MRG_DST:
        return TileShapeError(f"TMRGSORT: dst {ops[0].name} has {v[0]} valid columns but tmp "
                              f"{ops[2].name} only {v[1]}", rule="dst's valid columns are copied from tmp",
                              fix="use a larger tmp or fewer valid dst columns")
    if rule == MRG_BLOCKLEN:
        return OperandError(f"TMRGSORT: blockLen {v[0]} is not a positive multiple of 64",
                            rule="the single-list TMRGSORT needs blockLen % 64 == 0 (the NPU's rule)",
                            fix="pass blockLen = 64, 128, ...")
    if rule in (MRG_MULTIPLE, MRG_GROUPS):
        svc, blen = (v[0], v[1]) if rule == MRG_MULTIPLE else (v[1], v[2])
        return ValidRegionError(
            f"TMRGSORT: src {ops[1].name} has {svc} valid columns, not 1 .. 255 groups of "
            f"4 * blockLen = {4 * blen}",
            rule="the single-list TMRGSORT merges groups of 4 blocks: src.validCol is a multiple of "
                 "4 * blockLen, 1 to 255 groups", fix="adjust blockLen or the valid columns")
    return TileShapeError(f"TMRGSORT: dst {ops[0].name} has {v[1]} columns but the merge writes {v[0]}",
                          rule="the single-list TMRGSORT writes src.validCol elements",
                          fix="use a wider dst")


decoder("TMRGSORT", _decode_tmrgsort)
register(Unit("TMRGSORT", check=check_tmrgsort, sim=lower_tmrgsort, emit=emit_tmrgsort))
