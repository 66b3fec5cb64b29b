"""5.2 / 5.3 bitwise: TAND TOR TXOR TNOT (tile-tile) and TANDS TORS TXORS (tile-scalar).

Over dst's valid region (each source's valid region covers it); integers only, ND tiles. The
scalar is converted to the element type first (it must fit it). No-overlap rules (pto-isa-
semantics 5.2, 5.3, 9.6), static where pypto knows the addresses, run-time checks otherwise:
* TXOR on a2a3 computes tmp = src0 | src1, dst = ~(src0 & src1) & tmp, so dst, src0, src1 and tmp
  must not overlap (pairwise; the doc's rule, src0 with src1 included) and tmp's valid region must
  cover dst's; pypto leaves src0 | src1 in tmp over dst's valid region. a5 ignores tmp.
* TANDS / TORS first fill dst with the scalar: src and dst must not overlap (both SoCs).
* TXORS: dst, src and tmp pairwise distinct (both SoCs, as the doc says); a2a3 leaves src | s
  in tmp over dst's valid region.
a2a3 processes 1-byte tiles as 16-bit pairs (an odd validCol rewrites one more byte per row on the
NPU); pypto writes the valid region only. Reference: conformance/ref_bits.py.
"""
from __future__ import annotations

from .. import diagnostics as Dx
from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..errors import DTypeError
from ..ir import guards as G
from ..ir.nodes import Expr, RtFloat, is_static
from ..ir.registry import Unit, register
from . import bits_rules as R
from .elementwise import check_covers

LOOPS = f"{__package__}.bits_lib"     # the numba loops: imported when a kernel is generated


XOR_PAIRS = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
XOR_RULE = ("on a2a3 TXOR computes through tmp in several passes (tmp = src0 | src1, dst = "
            "~(src0 & src1) & tmp): dst, src0, src1 and tmp must not overlap")
SCALAR_PAIRS = [(0, 1)]
SCALAR_RULE = "TANDS / TORS fill dst with the scalar first, then combine it with src: src and dst must not overlap"
XORS_PAIRS = [(0, 1), (0, 3), (1, 3)]
XORS_RULE = "TXORS computes through dst and tmp in several passes: dst, src and tmp must be pairwise distinct"


# the operation codes of bits_lib.py's loops (one loop per operand form, the operation a runtime
# code: fewer specialisations); its a2a3 TXOR / TXORS loops write tmp, as the NPU does
AND, OR, XOR, NOT, SHL, SHR = 0, 1, 2, 3, 4, 5
CODES = {"TAND": AND, "TOR": OR, "TXOR": XOR, "TNOT": NOT, "TANDS": AND, "TORS": OR, "TXORS": XOR,
         "TSHL": SHL, "TSHR": SHR, "TSHLS": SHL, "TSHRS": SHR}


# -- checks ---------------------------------------------------------------------------------------
def _check_tmp_covers(node, k: int = 3) -> None:
    dst, tmp = node.operands[0], node.operands[k]
    for d, s in zip(dst.valid, tmp.valid):
        if is_static(d) and is_static(s) and s < d:
            raise Dx.src_valid_too_small(node.name, "tmp", tmp.name, tmp.valid, dst.name, dst.valid)


def check_scalar(node, soc) -> None:
    """The tile-scalar rules: src covers dst, the scalar fits the element type."""
    check_covers(node, soc)
    dst, _, s = node.operands[:3]
    dt = dst.type.dtype
    if isinstance(s, (Expr, RtFloat)) and (isinstance(s, RtFloat) or s.dtype == "f64"):
        raise DTypeError(f"{node.name}: runtime scalar {s} is a float but the tile is {dt.name}",
                         rule="the scalar is converted to the tile's integer element type",
                         fix="pass an int scalar")
    if not isinstance(s, Expr):
        L.check_scalar(node.name, "scalar", s, dt)


def check_xor(node, soc) -> None:
    check_covers(node, soc)
    if soc.name == "a2a3":
        R.check_disjoint(node, XOR_PAIRS, XOR_RULE)
        _check_tmp_covers(node)


def check_ands(node, soc) -> None:
    check_scalar(node, soc)
    R.check_disjoint(node, SCALAR_PAIRS, SCALAR_RULE)


def check_xors(node, soc) -> None:
    check_scalar(node, soc)
    R.check_disjoint(node, XORS_PAIRS, XORS_RULE)
    if soc.name == "a2a3":
        _check_tmp_covers(node)


# -- lowerings --------------------------------------------------------------------------------------
def _code(node):
    """The operation code and the element width (the loops' two runtime parameters)."""
    return L.lit(CODES[node.name]), L.lit(node.operands[0].type.dtype.bits)


def lower_binary(node, soc) -> list[L.Call]:
    dst, a, b = node.operands[:3]
    return [L.Call(L.Fn(LOOPS, "bits2"), (L.tile(dst), L.tile(a), L.tile(b)) + _code(node) + (L.err(),))]


def lower_xor(node, soc) -> list[L.Call]:
    if soc.name != "a2a3":
        return lower_binary(node, soc)
    dst, a, b, t = node.operands
    return R.overlap_calls(L, node, XOR_PAIRS) + [
        L.Call(L.Fn(LOOPS, "xor_a2a3"), (L.tile(dst), L.tile(a), L.tile(b), L.tile(t), L.err()))]


def lower_not(node, soc) -> list[L.Call]:
    dst, a = node.operands
    return [L.Call(L.Fn(LOOPS, "bits1"), (L.tile(dst), L.tile(a), L.const(0, dst.type.dtype.storage))
                       + _code(node) + (L.err(),))]


def _scalar(pairs):
    def lower(node, soc) -> list[L.Call]:
        dst, a, s = node.operands[:3]
        checks, arg = L.scalar_operand(2, s, dst.type.dtype)
        return checks + R.overlap_calls(L, node, pairs) + [
            L.Call(L.Fn(LOOPS, "bits1"), (L.tile(dst), L.tile(a), arg) + _code(node) + (L.err(),))]
    return lower


def lower_xors(node, soc) -> list[L.Call]:
    if soc.name != "a2a3":
        return _scalar(XORS_PAIRS)(node, soc)
    dst, a, s, t = node.operands
    checks, arg = L.scalar_operand(2, s, dst.type.dtype)
    return checks + R.overlap_calls(L, node, XORS_PAIRS) + [
        L.Call(L.Fn(LOOPS, "xors_a2a3"), (L.tile(dst), L.tile(a), arg, L.tile(t), L.err()))]


# -- guards and C++ ---------------------------------------------------------------------------------
def _tmp_guard(node, soc) -> list:
    dst, t = node.operands[0], node.operands[3]
    return [G.Guard("covers", (3, t.valid[0], t.valid[1], dst.valid[0], dst.valid[1]))] \
        if soc.name == "a2a3" else []


def guards_xor(node, soc) -> list:
    return G.covers(node, soc) + _tmp_guard(node, soc)


def guards_scalar(node, soc) -> list:
    return G.covers(node, soc) + G.scalar(2, node.operands[2], node.operands[0].type.dtype)


def guards_xors(node, soc) -> list:
    return guards_scalar(node, soc) + _tmp_guard(node, soc)


def emit_with_overlap(cpp: str, pairs, socs=("a2a3", "a5")):
    base = E.call(cpp)

    def rule(node, soc, cx):
        pre = R.overlap_guards(cx, node, pairs) if soc.name in socs else []
        return pre + [base(node, soc, cx)]
    rule.cpp = cpp
    return rule


for _name in ("TAND", "TOR"):
    register(Unit(_name, check=check_covers, sim=lower_binary, seed="binary", emit=E.call(_name),
                  guards=G.covers))
register(Unit("TXOR", check=check_xor, sim=lower_xor, seed="xor", guards=guards_xor,
              emit=emit_with_overlap("TXOR", XOR_PAIRS, ("a2a3",))))
register(Unit("TNOT", check=check_covers, sim=lower_not, seed="unary", emit=E.call("TNOT"),
              guards=G.covers))
for _name in ("TANDS", "TORS"):
    register(Unit(_name, check=check_ands, sim=_scalar(SCALAR_PAIRS), seed="scalar_distinct",
                  emit=emit_with_overlap(_name, SCALAR_PAIRS), guards=guards_scalar))
register(Unit("TXORS", check=check_xors, sim=lower_xors, seed="xors", guards=guards_xors,
              emit=emit_with_overlap("TXORS", XORS_PAIRS)))
R.decoder("TXOR", XOR_RULE)
R.decoder("TANDS", SCALAR_RULE)
R.decoder("TORS", SCALAR_RULE)
R.decoder("TXORS", XORS_RULE)
