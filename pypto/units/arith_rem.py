"""TREM TFMOD (5.2) and TREMS TFMODS (5.3): remainders, each SoC's float path as its code runs it.

TREM is floor-mod (the divisor's sign), TFMOD trunc-mod (the dividend's sign), both computed as
q = a / b, q = floor(q) or trunc(q), dst = a - q * b, every step rounded (not fused):
* f32 (both SoCs): every step in float32.
* f16 on a2a3: every step rounded to f16; the integral part goes through a saturating f16 -> s16
  conversion and back (so |a / b| >= 32768 clamps to -32768 / 32767, and 32767 becomes 32768;
  x rem 0 is x).
* f16 on a5: widened to f32, the f32 steps, then narrowed toward zero with saturation (RS_ENABLE;
  NaN -> +0, +-inf -> +-65504 as in pypto's TCVT model [infer]): 2^-10 rem -2048 is -2047 on a5,
  -2048 on a2a3.
* i32 / i16 on a2a3: the sources are converted in place to f32 / f16 (nearest even), the float
  path runs, dst is converted back (nearest even, saturating, NaN -> 0), and so are the sources:
  after the instruction src0 and src1 hold int(float(x)) over dst's valid region (exact unless
  |x| > 2^24 for i32 or > 2048 for i16). Division by zero: i32 gives NaN, so 0; i16 gives
  src0 (the saturating floor turns inf into 32767, times 0 is 0).
* integers on a5: exact integer floor-mod / trunc-mod; x rem 0 = x fmod 0 = x.
Integer division by zero is undefined on the NPU: pypto gives the values above and reports it
with checks="strict". a2a3 computes in dst (and rewrites the integer sources), so dst, src0 and
src1 must not share storage there (a trace-time error); a5 works in registers.
The scalar forms are the same with the divisor broadcast (a2a3 rewrites src only).
Reference: conformance/ref_arith.py ``rem``.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..ir import guards as G
from ..ir.nodes import Effect, TileVar
from ..ir.registry import Unit, register
from .arith_common import check_scalar_operand, require_unit_separate, scalar_guards

OPS = f"{__package__}.arith_ops"
FLOOR = {"TREM": True, "TFMOD": False, "TREMS": True, "TFMODS": False}


def _op(name: str, dt, soc) -> tuple[str, bool]:
    """(scalar op, rewrites the sources?) for this instruction, element type and SoC."""
    kind = "rem" if FLOOR[name] else "fmod"
    if dt.short == "f32":
        return f"{kind}_f32", False
    if dt.short == "f16":
        return f"{kind}_f16_{soc.name}", False
    if soc.name == "a2a3":
        return f"{kind}_{dt.short}_a2a3", True
    return f"{kind}_int", False


def lower_rem(node, soc) -> list[L.Call]:
    from . import arith_loops as AL      # numba: only when a kernel is generated
    dst, a, b = node.operands
    dt = dst.type.dtype
    op, rewrite = _op(node.name, dt, soc)
    codec = L.codec(dt)
    if isinstance(b, TileVar):
        checks = [AL.zero_divisor_call(2, b, dst)] if dt.is_int else []
        fn = AL.fn("binary_rw", OPS, op, codec) if rewrite else L.ew("binary", OPS, op, codec)
        return checks + [L.Call(fn, (L.tile(dst), L.tile(a), L.tile(b), L.err()))]
    pre, arg = L.scalar_operand(2, b, dt)
    checks = [AL.zero_divisor_call(2, arg, dst)] if dt.is_int else []
    fn = AL.fn("scalar_rw", OPS, op, codec) if rewrite else L.ew("scalar", OPS, op, codec)
    return pre + checks + [L.Call(fn, (L.tile(dst), L.tile(a), arg, L.err()))]


def _separate(name: str):
    def names(dt, soc) -> tuple[str, ...]:
        if soc.name != "a2a3":
            return ()
        return ("dst", "src0", "src1") if name in ("TREM", "TFMOD") else ("dst", "src")
    return names


def check_rem(node, soc) -> None:
    check_scalar_operand(node, soc)
    require_unit_separate(node, soc, "the a2a3 code computes the quotient in dst before it reads "
                          "the sources again, and converts integer sources in place")


def extra_effects(node, soc) -> tuple[Effect, ...]:
    """a2a3 integer remainders rewrite their tile sources (converted through float and back)."""
    if soc.name != "a2a3" or not node.operands[0].type.dtype.is_int:
        return ()
    return tuple(Effect("write", k, "valid") for k in (1, 2) if isinstance(node.operands[k], TileVar))


for _name in FLOOR:
    _scalar = _name.endswith("S")
    register(Unit(_name, check=check_rem, sim=lower_rem, seed="scalar_to" if _scalar else "binary_to",
                  effects=extra_effects, emit=E.call(_name),
                  guards=scalar_guards if _scalar else G.covers, separate=_separate(_name)))
