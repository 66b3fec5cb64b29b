"""5.2 unary math: TABS TNEG TLOG TSQRT TRSQRT TRECIP TRELU (dst = op(src), dst's valid region).

* TABS clears the sign bit (a NaN keeps its payload). TNEG is TMULS(src, -1): floats flip the
  sign (a NaN keeps its sign and is quieted), integers wrap (-x modulo 2^bits).
* TLOG, TSQRT: computed in double from the exact input and rounded once to the element type
  (sqrt is correctly rounded, as IEEE sqrt on the NPU; the NPU's ln is an approximation, so NPU
  comparisons need an ulp tolerance). ln(x<0) and sqrt(x<0) give the positive quiet NaN.
* TRSQRT: a2a3 has a hardware rsqrt (an approximation): pypto rounds 1/sqrt(x) once from double;
  a5 runs vsqrt then vdiv, so pypto rounds sqrt to the element type, then 1/that once more.
  rsqrt(+-0) = +-inf.
* TRECIP = TDIVS(dst, 1, src): 1/x correctly rounded; on a2a3 src and dst must not share storage
  (the a2a3 code fills dst with 1 before dividing; a trace-time error).
* TRELU: x > 0 ? x : +0 (f16, f32, i32); a NaN propagates quieted.
f16 computes in f32 and rounds once. Reference: conformance/ref_arith.py.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..ir import guards as G
from ..ir.registry import Unit, register
from .arith_common import check_covers, require_unit_separate

OPS = f"{__package__}.arith_ops"


def _op(name: str, dt, soc) -> tuple[str, bool]:
    """(scalar op, wide codec?) of instruction ``name`` for element type dt on soc."""
    if name == "TABS":
        return "fabs", False
    if name == "TNEG":
        return ("fneg" if dt.is_float else "ineg"), False
    if name == "TLOG":
        return "log_w", True
    if name == "TSQRT":
        return "sqrt_w", True
    if name == "TRSQRT":
        if soc.name == "a5":
            return ("rsqrt_a5_f16" if dt.short == "f16" else "rsqrt_a5_f32"), False
        return "rsqrt_w", True
    if name == "TRECIP":
        return "recip", False
    if name == "TRELU":
        return ("frelu" if dt.is_float else "irelu"), False
    raise AssertionError(name)


def lower_unary(node, soc) -> list[L.Call]:
    dst, src = node.operands
    dt = dst.type.dtype
    op, wide = _op(node.name, dt, soc)
    fn = L.ew("unary", OPS, op, L.codec(dt, wide=wide))
    return [L.Call(fn, (L.tile(dst), L.tile(src), L.err()))]


def separate_recip(dt, soc) -> tuple[str, ...]:
    return ("dst", "src") if soc.name == "a2a3" else ()


def check_recip(node, soc) -> None:
    check_covers(node, soc)
    require_unit_separate(node, soc, "TRECIP runs TDIVS(dst, 1, src), which fills dst with 1 "
                          "before it divides")


for _name, _seed in (("TABS", "unary"), ("TNEG", "unary"), ("TLOG", "unary"), ("TSQRT", "unary"),
                     ("TRSQRT", "unary"), ("TRECIP", "unary_to"), ("TRELU", "unary")):
    register(Unit(_name, check=check_recip if _name == "TRECIP" else check_covers, sim=lower_unary,
                  seed=_seed, emit=E.call(_name), guards=G.covers,
                  separate=separate_recip if _name == "TRECIP" else None))
