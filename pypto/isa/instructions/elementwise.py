"""5.2 Elementwise tile-tile instructions (28).

Every operand is a Vec tile and, on the NPU, row-major; the iteration domain is the destination's
valid region. Instructions whose operands differ in type (TPRELU, TCMP, TSEL, TCVT) list one dtype
per operand. Enum params list their values in C++ enumerator order (value = position).
A param default of None means PTO has no single default for it (see the notes).
"""
from ..schema import DST, SRC, SRC0, SRC1, TMP, UNBOXED, Instr, Operand, Param, both, per_soc

_F = "f16 f32"
# Operands whose dtype comes from the per-operand tuples (group None).
_DST = Operand("dst", role="out", group=None, layouts=UNBOXED)
_SRC = Operand("src", group=None, layouts=UNBOXED)
_SRC0 = Operand("src0", group=None, layouts=UNBOXED)
_SRC1 = Operand("src1", group=None, layouts=UNBOXED)
_TMP = Operand("tmp", role="tmp", group=None, layouts=UNBOXED, region="whole")
_MASK = Operand("mask", group=None, layouts=UNBOXED)


def cast_pairs(spec: str) -> tuple[tuple[str, str], ...]:
    """'src>dst src>dst ...' -> ((dst, src), ...): operand order is destination first."""
    return tuple((p.split(">")[1], p.split(">")[0]) for p in spec.split())


CMP_MODE = Param("cmpMode", "CmpMode", ("EQ", "NE", "LT", "LE", "GT", "GE"), None)
ROUND_MODE = Param("rmode", "RoundMode", ("CAST_NONE", "CAST_RINT", "CAST_ROUND", "CAST_FLOOR",
                                          "CAST_CEIL", "CAST_TRUNC", "CAST_ODD"), None)
SAT_MODE = Param("satMode", "SaturationMode", ("ON", "OFF"), None)

_SEL_T = ("i16", "u16", "i32", "u32", "f16", "bf16", "f32")
_CMP_A5 = ("i8", "u8", "i16", "u16", "i32", "u32", "f16", "f32")

# TCVT pairs, written source>destination.
_CVT_A2A3 = cast_pairs("f32>f16 f32>f32 f32>bf16 f32>i16 f32>i32 f32>i64 "
                   "f16>f32 f16>i32 f16>i16 f16>i8 f16>u8 bf16>f32 bf16>i32 "
                   "i16>f16 i16>f32 i32>f32 i32>i16 i32>i64 i32>f16 i64>f32 i64>i32 u8>f16 i8>f16")
_CVT_A5 = cast_pairs("f32>f16 f32>f32 f32>bf16 f32>i16 f32>i32 f32>i64 f32>e4m3 f32>e5m2 f32>hif8 "
                 "f16>f32 f16>i32 f16>i16 f16>i8 f16>u8 f16>hif8 bf16>f32 bf16>i32 bf16>f16 "
                 "u8>f16 u8>u16 i8>f16 i8>i16 i8>i32 "
                 "i16>u8 i16>f16 i16>f32 i16>u32 i16>i32 "
                 "i32>f32 i32>i16 i32>u16 i32>i64 i32>u8 u32>u8 u32>u16 u32>i16 i64>f32 i64>i32 "
                 "e4m3>f32 e5m2>f32 hif8>f32")

INSTRUCTIONS = (
    Instr("TADD", 0x1001, "elementwise", "dst = src0 + src1", (DST, SRC0, SRC1),
          per_soc("i32 i16 f16 f32", "i32 u32 f32 i16 u16 f16 bf16 u8 i8"), seed="add",
          spec_ref="5.2"),
    Instr("TSUB", 0x1002, "elementwise", "dst = src0 - src1", (DST, SRC0, SRC1),
          per_soc("i32 i16 f16 f32", "u32 i32 u16 i16 u8 i8 f32 f16"), seed="sub", spec_ref="5.2"),
    Instr("TMUL", 0x1003, "elementwise", "dst = src0 * src1", (DST, SRC0, SRC1),
          per_soc("i32 i16 f16 f32", "i32 u32 f32 i16 u16 f16"), seed="mul", spec_ref="5.2"),
    Instr("TDIV", 0x1004, "elementwise", "dst = src0 / src1", (DST, SRC0, SRC1),
          per_soc("f16 f32", "i32 u32 f32 i16 u16 f16"), seed="div", spec_ref="5.2",
          notes=("float division by zero gives IEEE inf/NaN",)),
    Instr("TMIN", 0x1005, "elementwise", "dst = min(src0, src1)", (DST, SRC0, SRC1),
          per_soc("i32 i16 f16 f32", "u32 i32 u16 i16 u8 i8 f32 f16"), seed="min", spec_ref="5.2",
          notes=("NaN propagates (pypto's choice; the NPU's NaN rule is not documented)",)),
    Instr("TMAX", 0x1006, "elementwise", "dst = max(src0, src1)", (DST, SRC0, SRC1),
          per_soc("i32 i16 f16 f32", "u32 i32 u16 i16 u8 i8 f32 f16"), seed="max", spec_ref="5.2",
          notes=("NaN propagates (pypto's choice; the NPU's NaN rule is not documented)",)),
    Instr("TABS", 0x1007, "elementwise", "dst = |src|", (DST, SRC), both("f16", "f32"),
          spec_ref="5.2", notes=("CPU sim also accepts i32 and i16",)),
    Instr("TNEG", 0x1008, "elementwise", "dst = -src", (DST, SRC),
          per_soc("i32 i16 f16 f32", "u8 i8 u16 i16 u32 i32 f16 f32 bf16"), spec_ref="5.2",
          notes=("implemented as TMULS(dst, src, -1), so its dtypes follow TMULS (a5 list inferred)",
                 "unsigned types wrap: -x modulo 2^bits")),
    Instr("TAND", 0x1009, "elementwise", "dst = src0 & src1", (DST, SRC0, SRC1),
          per_soc("u8 i8 u16 i16", "u8 i8 u16 i16 u32 i32"), spec_ref="5.2",
          notes=("a2a3: 1- and 2-byte element types only",)),
    Instr("TOR", 0x100A, "elementwise", "dst = src0 | src1", (DST, SRC0, SRC1),
          per_soc("u16 i16 u8 i8", "u8 i8 u16 i16 u32 i32"), spec_ref="5.2"),
    Instr("TXOR", 0x100B, "elementwise", "dst = src0 ^ src1", (DST, SRC0, SRC1, TMP),
          per_soc("u8 i8 u16 i16", "u8 i8 u16 i16 u32 i32"), spec_ref="5.2",
          notes=("a2a3 uses tmp as scratch; src0, src1, dst and tmp must not overlap",
                 "a5 and the CPU sim ignore tmp")),
    Instr("TNOT", 0x100C, "elementwise", "dst = ~src", (DST, SRC),
          per_soc("i16 u16", "u32 i32 u16 i16 u8 i8"), spec_ref="5.2"),
    Instr("TSHL", 0x100D, "elementwise", "dst = src0 << src1 (per element shift count)",
          (DST, SRC0, SRC1), both("u8", "i8", "u16", "i16", "u32", "i32"), spec_ref="5.2",
          notes=("shift counts >= the element width are undefined",
                 "a2a3 runs a scalar loop with C semantics")),
    Instr("TSHR", 0x100E, "elementwise", "dst = src0 >> src1 (arithmetic for signed types)",
          (DST, SRC0, SRC1), both("u8", "i8", "u16", "i16", "u32", "i32"), spec_ref="5.2",
          notes=("shift counts >= the element width are undefined",
                 "a2a3 runs a scalar loop with C semantics")),
    Instr("TLOG", 0x100F, "elementwise", "dst = ln(src)", (DST, SRC), both("f16", "f32"),
          spec_ref="5.2", notes=("ln of a negative number is NaN, ln(0) is -inf",)),
    Instr("TEXP", 0x1010, "elementwise", "dst = e ** src", (DST, SRC), both("f16", "f32"),
          seed="exp", spec_ref="5.2",
          notes=("the NPU's exp is approximate (a few ulp); pypto rounds the exact value once",)),
    Instr("TSQRT", 0x1011, "elementwise", "dst = sqrt(src)", (DST, SRC), both("f16", "f32"),
          spec_ref="5.2", notes=("sqrt of a negative number is NaN",)),
    Instr("TRSQRT", 0x1012, "elementwise", "dst = 1 / sqrt(src)", (DST, SRC), both("f16", "f32"),
          spec_ref="5.2", notes=("rsqrt(-0) is -inf, rsqrt(+0) is +inf",)),
    Instr("TRECIP", 0x1013, "elementwise", "dst = 1 / src", (DST, SRC), both("f16", "f32"),
          spec_ref="5.2",
          notes=("implemented as TDIVS(dst, 1, src)",
                 "a2a3: src and dst must not share storage")),
    Instr("TRELU", 0x1014, "elementwise", "dst = max(src, 0)", (DST, SRC),
          both("f16", "f32", "i32"), spec_ref="5.2"),
    Instr("TPRELU", 0x1015, "elementwise", "dst = src0 if src0 > 0 else src0 * src1",
          (_DST, _SRC0, _SRC1, _TMP),
          {"a2a3": tuple((t, t, t, "u8") for t in _F.split()),
           "a5": tuple((t, t, t, None) for t in _F.split())},
          spec_ref="5.2",
          notes=("a2a3: tmp is a u8 scratch tile; dst, src0, src1 and tmp must not overlap",
                 "a5 and the CPU sim do not use tmp (its type is free there)")),
    Instr("TADDC", 0x1016, "elementwise", "dst = src0 + src1 + src2",
          (DST, SRC0, SRC1, Operand("src2")), both(), spec_ref="5.2",
          notes=("NPU: not implemented on either SoC (TODO upstream); only the CPU sim has it",)),
    Instr("TSUBC", 0x1017, "elementwise", "dst = src0 - src1 + src2",
          (DST, SRC0, SRC1, Operand("src2")), both(), spec_ref="5.2",
          notes=("NPU: not implemented on either SoC (TODO upstream); only the CPU sim has it",)),
    Instr("TREM", 0x1018, "elementwise",
          "dst = src0 - floor(src0 / src1) * src1 (floor-mod: the result has the divisor's sign)",
          (DST, SRC0, SRC1),
          per_soc("f16 f32 i32 i16", "f16 f32 u16 i16 u32 i32"), spec_ref="5.2, 5.9 n4",
          notes=("TREM is floor-mod on the NPU (-7 rem 3 = 2); the pto-isa CPU sim uses C % / fmod "
                 "(-7 rem 3 = -1) and leaves dst unchanged where the divisor is 0",
                 "NPU computes through float: a2a3 converts integers to f32/f16 and rewrites the "
                 "source tiles in place; the a2a3 f16 floor goes through a saturating s16 conversion",
                 "a5 narrows f16 results toward zero (2^-10 rem -2048 is -2047 on a5, -2048 on a2a3)",
                 "the semantics doc says a2a3 needs a tmp tile; the intrinsic at the pinned snapshot "
                 "takes none, so the entry has three operands")),
    Instr("TFMOD", 0x1019, "elementwise",
          "dst = src0 - trunc(src0 / src1) * src1 (trunc-mod: the result has the dividend's sign)",
          (DST, SRC0, SRC1),
          per_soc("f16 f32 i32 i16", "f16 f32 u16 i16 u32 i32"), spec_ref="5.2, 5.9 n4",
          notes=("same as C fmod / %",
                 "a2a3 integer inputs go through float and the source tiles are rewritten in place",
                 "no CPU sim implementation")),
    Instr("TCMP", 0x101A, "elementwise",
          "dst = packed predicate bits of (src0 cmpMode src1), LSB first",
          (_DST, _SRC0, _SRC1),
          {"a2a3": tuple(("u8", t, t) for t in ("i32", "f16", "f32")),
           "a5": tuple(("u32", t, t) for t in _CMP_A5)},
          params=(CMP_MODE,), spec_ref="5.2, 5.9 n5",
          notes=("bit k of byte b is the result for element 8b+k",
                 "a2a3 writes row i's bits at byte i * dst.Cols and computes whole 256-byte repeats, "
                 "so bits past validCol are written but meaningless; i32 inputs always compare EQ",
                 "a5 writes one contiguous bit stream over validRow * validCol elements into a u32 "
                 "tile, ignoring row strides",
                 "CPU sim does not pack: dst has the sources' type and gets 0/1 per element")),
    Instr("TSEL", 0x101B, "elementwise", "dst = src0 where the mask bit is 1, else src1",
          (_DST, _MASK, _SRC0, _SRC1),
          both(*((t, "u8", t, t) for t in _SEL_T)), spec_ref="5.2, 5.9 n6", scratch=("a2a3",),
          notes=("mask is read per row: element (i, j) uses bit j % 8 of mask[i, j // 8]",
                 "a2a3 writes hidden UB scratch at bytes [188416, 196608)",
                 "CPU sim reads the mask as one continuous bit stream over the dst valid region, "
                 "which differs when validCol % 8 != 0")),
    Instr("TCVT", 0x101C, "elementwise", "dst = src converted to dst's type with rounding mode rmode",
          (_DST, _SRC),
          {"a2a3": _CVT_A2A3, "a5": _CVT_A5}, seed="cast",
          params=(ROUND_MODE, SAT_MODE), spec_ref="5.2, 5.9 n7, Addendum",
          notes=("unsupported pairs are errors (f32->i8 and i16->i8 exist on neither SoC; i32->f16 "
                 "is a2a3 only, a dequantising convert with scale 1.0)",
                 "saturation: clamps by default, except f16->u8, f16->i8, f32->i16, f16->i16, "
                 "i64->i32 and i32->i16, which keep the low bits unless satMode=ON; a2a3 honours "
                 "satMode only for those six pairs, a5 for every pair",
                 "CAST_NONE truncates float->int on a2a3 but rounds to nearest even on a5; "
                 "CAST_ODD only works for f32->f16 (a2a3 falls back to the default, a5 leaves dst "
                 "unchanged); CAST_ROUND is ties away from zero; f32->f32 rounds to an integral value; "
                 "a5 f32->fp8 always rounds with RINT",
                 "a2a3 iterates the dst valid region; its non-saturating path uses hidden UB scratch",
                 "CPU sim never saturates, ignores rmode except for float->int, iterates the src "
                 "valid region and has no satMode overload",
                 "a5 pairs are those of the a5 conversion table in pto-isa (the semantics doc "
                 "lists them only as examples)")),
)
