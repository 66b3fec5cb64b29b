"""TCVT (5.2, 5.9 n7, Addendum): dst = src converted to dst's element type, per SoC.

Over dst's valid region (the NPU's domain; src must cover it). Parameters: rmode (RoundMode,
default CAST_NONE) and satMode (SaturationMode ON/OFF, default: the three-argument TCVT).
* CAST_NONE: a2a3 truncates float -> int and rounds everything else to nearest even; a5 rounds
  to nearest even everywhere. CAST_ROUND is ties away from zero; CAST_ODD exists for f32 -> f16
  only (a2a3 treats it as CAST_NONE elsewhere; on a5 the instruction does nothing).
* Saturation: f16->u8, f16->i8, f32->i16, f16->i16, i64->i32 and i32->i16 wrap (keep the low
  bits) by default, every other pair clamps. An explicit satMode is honoured on a2a3 for those
  six pairs only, on a5 for every pair but f32 -> fp8 (no control bit there).
* Specials: NaN -> 0 for integer targets; +-inf -> the limits when clamping, 0 when wrapping (the
  NPU's test data). Clamping float targets: overflow and inf -> +-max finite, NaN -> 0.
* a2a3 i32 -> f16 is a dequantising convert: nearest even, clamped to +-65504; a5 f32 -> fp8
  always rounds to nearest even, a5 f32/f16 -> hif8 always rounds half away from zero (ROUND_A),
  saturating (no control bit): overflow and inf -> +-2**15, NaN -> 0.
The numba element conversion is backends/sim/lib/convert.py; reference: conformance/reference.py
``cast``.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..backends.sim.lib.codes import CODES, SAT_WRAP
from ..backends.sim.lib.convert_rules import resolve
from ..errors import NotSimulatedError
from ..ir.nodes import Effect
from ..ir import guards as G
from ..ir.registry import Unit, register
from .elementwise import check_covers

DEFAULT_RMODE = "CAST_NONE"
LOOPS = f"{__package__}.cvt_lib"     # the loops (numba): imported when a kernel is generated


def effective(node, soc) -> tuple[int, int, bool]:
    """(rmode, saturation, no-op) this use of TCVT runs with on ``soc``."""
    dst, src = node.operands
    return resolve(soc.name, src.type.dtype.short, dst.type.dtype.short,
                   node.params.get("rmode", DEFAULT_RMODE), node.params.get("satMode"))


def lower_tcvt(node, soc) -> list[L.Call]:
    dst, src = node.operands
    for t in (src, dst):
        if t.type.dtype.short not in CODES:
            raise NotSimulatedError(f"TCVT with {t.type.dtype.name} is not simulated yet",
                                    rule="the simulator converts f32, f16, bf16, fp8 (e4m3, e5m2), "
                                         "hif8 and the integer types",
                                    fix="convert through float32")
    rmode, sat, noop = effective(node, soc)
    if noop:
        return []                         # a5 CAST_ODD on any pair but f32 -> f16: dst unchanged
    s, d = src.type.dtype.short, dst.type.dtype.short
    if d == "f32":
        return [L.Call(L.Fn(LOOPS, "tcvt_to_f32"),
                       (L.tile(dst), L.tile(src), L.lit(CODES[s]), L.lit(rmode), L.lit(sat), L.err()))]
    return [L.Call(L.Fn(LOOPS, "tcvt"), (L.tile(dst), L.tile(src), L.lit(CODES[s]), L.lit(CODES[d]),
                                         L.lit(rmode), L.lit(sat), L.err()))]


def extra_effects(node, soc) -> tuple[Effect, ...]:
    """a2a3's non-saturating conversions go through the hidden UB scratch."""
    dst, src = node.operands
    if soc.name == "a2a3" and soc.ub_scratch and {src.type.dtype.short, dst.type.dtype.short} <= set(CODES) \
            and effective(node, soc)[1] == SAT_WRAP:
        return (Effect("write", None, "scratch", "Vec", soc.ub_scratch),)
    return ()


def emit_tcvt(node, soc, cx) -> list[str]:
    """TCVT(dst, src, RoundMode::X[, SaturationMode::Y]). pto-isa's CPU backend has no
    saturation-mode overload, so that form is guarded and the CPU build drops satMode."""
    dst, src = node.operands
    d, s = cx.operand(dst), cx.operand(src)
    base = f"TCVT({d}, {s}, RoundMode::{node.params.get('rmode') or DEFAULT_RMODE}"
    sat = node.params.get("satMode")
    if sat is None:
        return [base + ");"]
    return ["#if defined(__CPU_SIM)  // no SaturationMode overload in pto-isa's CPU backend",
            base + ");", "#else", base + f", SaturationMode::{sat});", "#endif"]


register(Unit("TCVT", check=check_covers, sim=lower_tcvt, seed="cast",
              seed_params=("rmode", "satMode"), effects=extra_effects, emit=emit_tcvt,
              guards=G.covers))
