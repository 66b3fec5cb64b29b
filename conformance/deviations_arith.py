"""Where pto-isa's CPU backend (npu-cpusim) deviates from the NPU on the arithmetic family's
cases (conformance/test_arith.py); each entry names the heading of docs/fidelity.md that
explains it. Property tests draw their data, so they are non-strict."""
from __future__ import annotations

from .deviations import BF16, H_BF16, H_MINMAX, MINMAX, Deviation

REM = ("pto-isa's CPU TREM/TREMS use C % and fmod (the dividend's sign: -7 rem 3 = -1) and skip "
       "the element where the divisor is 0; the NPU is floor-mod through each SoC's float path")
FMOD = "pto-isa's CPU backend has no TFMOD/TFMODS: a kernel using them does not compile"
PRELU = ("pto-isa's CPU TPRELU takes tmp of the sources' tile type; the a2a3 NPU needs a u8 tmp, "
         "so pypto's a2a3 (and library) TPRELU does not compile there")
ABS = ("pto-isa's CPU TABS negates negative values by comparison: -0 and NaNs with the sign bit "
       "keep it; the NPU's |x| clears the sign bit")
RSQRT = ("pto-isa's CPU TRSQRT rounds 1/sqrt(x) once from double; a5 runs vsqrt then vdiv (two "
         "roundings)")
SUBS = ("pto-isa's CPU TSUBS subtracts the i32 scalar exactly; a2a3 adds (int)(-(float)scalar), "
        "so scalars above 2^24 lose their low bits")
H_REM, H_FMOD, H_PRELU, H_ABS, H_RSQRT, H_SUBS = (
    "TREM and TREMS on the CPU backend", "No TFMOD/TFMODS on the CPU backend",
    "TPRELU's tmp on the CPU backend", "TABS of -0 and negative NaNs", "a5 TRSQRT rounding",
    "a2a3 TSUBS with a large int32 scalar")

# a5 unsigned remainders agree: with no negative operands C's % is the floor-mod, and a5's
# integer path is exact (measured: a5 TREM/TREMS u16 and u32 pass on npu-cpusim)
_REM_IDS = r"^(?!.*a5-TREMS?-u(16|32)\]).*-T(REM|REMS)-"
_FMOD_IDS = r"-T(FMOD|FMODS)-"

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation("test_binary", _REM_IDS, REM, H_REM),
    Deviation("test_scalar", _REM_IDS, REM, H_REM),
    Deviation("test_binary", _FMOD_IDS, FMOD, H_FMOD),
    Deviation("test_scalar", _FMOD_IDS, FMOD, H_FMOD),
    Deviation("test_rem_hand_cases", "", FMOD, H_FMOD),        # runs TREM and TFMOD
    Deviation("test_rem_rewrites_integer_sources_on_a2a3", "", REM, H_REM),
    Deviation("test_dn_layout", "", REM, H_REM),                # includes TREM
    Deviation("test_property_floor_mod_signs", "", REM, H_REM, strict=False),
    Deviation("test_seed", r"-(rem|rems)\]", REM, H_REM),
    Deviation("test_seed", r"-(fmod|fmods)\]", FMOD, H_FMOD),
    Deviation("test_seed_integer_rem_and_divs", "", REM, H_REM),
    Deviation("test_binary", r"a2a3-TPRELU-", PRELU, H_PRELU),
    Deviation("test_seed", r"-prelu\]", PRELU, H_PRELU),
    Deviation("test_a5_in_place_is_legal", "", PRELU, H_PRELU),  # u8 tmp (and TREM)
    Deviation("test_unary", r"-TABS-", ABS, H_ABS),
    Deviation("test_seed", r"-abs\]", ABS, H_ABS),
    Deviation("test_unary", r"a5-TRSQRT-", RSQRT, H_RSQRT),
    Deviation("test_rsqrt_per_soc_rounding", r"a5", RSQRT, H_RSQRT),
    Deviation("test_seed", r"a5-rsqrt\]", RSQRT, H_RSQRT),
    Deviation("test_scalar", r"a2a3-TSUBS-i32", SUBS, H_SUBS),
    Deviation("test_binary", r"-T(MAX|MIN)-f(16|32)", MINMAX, H_MINMAX),
    Deviation("test_property_float_binary", "", MINMAX, H_MINMAX, strict=False),
    Deviation("test_binary", r"-bf16", BF16, H_BF16),
    Deviation("test_unary", r"-bf16", BF16, H_BF16),
    Deviation("test_scalar", r"-bf16", BF16, H_BF16),
    Deviation("test_property_scalar_conversion", r"a5", BF16, H_BF16, strict=False),
)
