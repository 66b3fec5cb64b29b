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
# The bit, shift, compare and select family (pypto/units/bits*.py, predicates*.py): row-major
# (ND) tiles only, as the NPU code assumes; a predicate dst or a mask is written / read beyond its
# valid region, so its effect covers the whole tile.
_BDST = Operand("dst", role="out", layouts=("ND",))
_BSRC = Operand("src", layouts=("ND",))
_BSRC0 = Operand("src0", layouts=("ND",))
_BSRC1 = Operand("src1", layouts=("ND",))
_BTMP = Operand("tmp", role="tmp", layouts=("ND",), region="whole")
_PDST = Operand("dst", role="out", group=None, layouts=("ND",), region="whole")
_PDST_T = Operand("dst", role="out", group=None, layouts=("ND",))
_PSRC0 = Operand("src0", group=None, layouts=("ND",))
_PSRC1 = Operand("src1", group=None, layouts=("ND",))
_PMASK = Operand("mask", group=None, layouts=("ND",), region="whole")
_MASK_T = ("u8", "u16", "u32")      # mask element types: the mask is read as bytes


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
          per_soc("f16 f32", "i32 u32 f32 i16 u16 f16"), seed="div", spec_ref="5.2, 5.9 n1",
          notes=("floats: correctly rounded (f16 in f32, rounded once); division by zero gives "
                 "IEEE inf/NaN",
                 "a5 integers: C division truncating toward zero; INT_MIN / -1 wraps to INT_MIN",
                 "integer division by zero is undefined on the NPU: pypto gives -1 (all ones: the "
                 "type's maximum for unsigned types) and reports it with checks='strict'")),
    Instr("TMIN", 0x1005, "elementwise", "dst = min(src0, src1)", (DST, SRC0, SRC1),
          per_soc("i32 i16 f16 f32", "u32 i32 u16 i16 u8 i8 f32 f16"), seed="min", spec_ref="5.2",
          notes=("NaN propagates (pypto's choice; the NPU's NaN rule is not documented)",)),
    Instr("TMAX", 0x1006, "elementwise", "dst = max(src0, src1)", (DST, SRC0, SRC1),
          per_soc("i32 i16 f16 f32", "u32 i32 u16 i16 u8 i8 f32 f16"), seed="max", spec_ref="5.2",
          notes=("NaN propagates (pypto's choice; the NPU's NaN rule is not documented)",)),
    Instr("TABS", 0x1007, "elementwise", "dst = |src|", (DST, SRC), both("f16", "f32"),
          seed="abs", spec_ref="5.2",
          notes=("clears the sign bit: a NaN keeps its payload (not quieted)",
                 "CPU sim also accepts i32 and i16")),
    Instr("TNEG", 0x1008, "elementwise", "dst = -src", (DST, SRC),
          per_soc("i32 i16 f16 f32", "u8 i8 u16 i16 u32 i32 f16 f32 bf16"), seed="neg",
          spec_ref="5.2",
          notes=("implemented as TMULS(dst, src, -1), so its dtypes follow TMULS (a5 list inferred)",
                 "integers wrap (-INT_MIN = INT_MIN; unsigned: -x modulo 2^bits); floats flip the "
                 "sign (-0 <-> +0), a NaN keeps its sign and is quieted (x * -1)")),
    Instr("TAND", 0x1009, "elementwise", "dst = src0 & src1", (_BDST, _BSRC0, _BSRC1),
          per_soc("u8 i8 u16 i16", "u8 i8 u16 i16 u32 i32"), seed="and", spec_ref="5.2",
          notes=("row-major (ND) tiles only, as on the NPU; over dst's valid region, each source's valid region must cover it",
                 "a2a3: 1- and 2-byte element types only; 1-byte tiles are processed as 16-bit pairs, "
                 "so with an odd validCol the NPU also rewrites the byte just past it in each row; "
                 "pypto leaves that byte alone")),
    Instr("TOR", 0x100A, "elementwise", "dst = src0 | src1", (_BDST, _BSRC0, _BSRC1),
          per_soc("u16 i16 u8 i8", "u8 i8 u16 i16 u32 i32"), seed="or", spec_ref="5.2",
          notes=("row-major (ND) tiles only, as on the NPU; over dst's valid region, each source's valid region must cover it",
                 "a2a3: 1-byte tiles are processed as 16-bit pairs (an odd validCol also rewrites the "
                 "next byte of each row on the NPU; pypto leaves it alone)")),
    Instr("TXOR", 0x100B, "elementwise", "dst = src0 ^ src1", (_BDST, _BSRC0, _BSRC1, _BTMP),
          per_soc("u8 i8 u16 i16", "u8 i8 u16 i16 u32 i32"), seed="xor", spec_ref="5.2, 9.6",
          notes=("row-major (ND) tiles only, as on the NPU; over dst's valid region, each source's valid region must cover it",
                 "a2a3 computes tmp = src0 | src1, then dst = ~(src0 & src1) & tmp: dst, src0, src1 and "
                 "tmp must not overlap (pairwise, src0 with src1 included, as the semantics doc says; "
                 "the NPU's own assert omits that pair): a static error where the tiles' addresses are "
                 "known, a run-time check otherwise; tmp's valid region must cover dst's, and pypto "
                 "leaves src0 | src1 in tmp over dst's valid region, as the NPU does",
                 "a5 and the CPU sim ignore tmp: no overlap rule, tmp untouched")),
    Instr("TNOT", 0x100C, "elementwise", "dst = ~src", (_BDST, _BSRC),
          per_soc("i16 u16", "u32 i32 u16 i16 u8 i8"), seed="not", spec_ref="5.2",
          notes=("row-major (ND) tiles only, as on the NPU; over dst's valid region, src's valid region must cover it",)),
    Instr("TSHL", 0x100D, "elementwise", "dst = src0 << src1 (per element shift count)",
          (_BDST, _BSRC0, _BSRC1), both("u8", "i8", "u16", "i16", "u32", "i32"), seed="shl",
          spec_ref="5.2, 5.9 n3",
          notes=("row-major (ND) tiles only, as on the NPU; the count is src1's element (same type as src0)",
                 "a count c in 0 .. bits-1 gives src0 * 2^c modulo 2^bits (the bits shifted out are lost, "
                 "signed values wrap)",
                 "a count >= the element width or negative is undefined on the NPU; pypto shifts every bit out (see below) and reports the use with SimOptions(checks='strict'): shl gives 0 (this is also C's result on a2a3's scalar loop for 8- and "
                 "16-bit counts below 32)")),
    Instr("TSHR", 0x100E, "elementwise", "dst = src0 >> src1 (arithmetic for signed types)",
          (_BDST, _BSRC0, _BSRC1), both("u8", "i8", "u16", "i16", "u32", "i32"), seed="shr",
          spec_ref="5.2, 5.9 n3",
          notes=("row-major (ND) tiles only, as on the NPU; the count is src1's element (same type as src0)",
                 "logical shift for unsigned types, arithmetic (sign-filling) for signed types",
                 "a count >= the element width or negative is undefined on the NPU; pypto shifts every bit out (see below) and reports the use with SimOptions(checks='strict'): shr gives 0, or -1 for a negative signed src0")),
    Instr("TLOG", 0x100F, "elementwise", "dst = ln(src)", (DST, SRC), both("f16", "f32"),
          seed="log", spec_ref="5.2, 5.9 n1",
          notes=("ln of a negative number is NaN (pypto: the positive quiet NaN), ln(+-0) is -inf",
                 "the NPU's ln is approximate; pypto rounds the exact value once (from double), so "
                 "NPU comparisons need an ulp tolerance")),
    Instr("TEXP", 0x1010, "elementwise", "dst = e ** src", (DST, SRC), both("f16", "f32"),
          seed="exp", spec_ref="5.2",
          notes=("the NPU's exp is approximate (a few ulp); pypto rounds the exact value once",)),
    Instr("TSQRT", 0x1011, "elementwise", "dst = sqrt(src)", (DST, SRC), both("f16", "f32"),
          seed="sqrt", spec_ref="5.2, 5.9 n1",
          notes=("correctly rounded (IEEE sqrt; pypto rounds the double result once)",
                 "sqrt of a negative number is NaN (pypto: the positive quiet NaN); sqrt(-0) = -0")),
    Instr("TRSQRT", 0x1012, "elementwise", "dst = 1 / sqrt(src)", (DST, SRC), both("f16", "f32"),
          seed="rsqrt", spec_ref="5.2, 5.9 n1",
          notes=("rsqrt(-0) is -inf, rsqrt(+0) is +inf, rsqrt(x < 0) is NaN",
                 "a2a3 uses the hardware rsqrt (an approximation): pypto rounds 1/sqrt(x) once from "
                 "double, so NPU comparisons need an ulp tolerance",
                 "a5 runs vsqrt then vdiv: sqrt rounded to the element type, then 1/that rounded "
                 "again (pypto does the same)")),
    Instr("TRECIP", 0x1013, "elementwise", "dst = 1 / src", (DST, SRC), both("f16", "f32"),
          spec_ref="5.2",
          seed="recip",
          notes=("implemented as TDIVS(dst, 1, src): 1/x correctly rounded, 1/+-0 = +-inf",
                 "a2a3: src and dst must not share storage (TDIVS fills dst with 1 first): a "
                 "trace-time error where the tiles' addresses are known")),
    Instr("TRELU", 0x1014, "elementwise", "dst = max(src, 0)", (DST, SRC),
          both("f16", "f32", "i32"), seed="relu", spec_ref="5.2",
          notes=("src > 0 ? src : +0; a NaN propagates quieted (pypto's choice, as for TMAX); the "
                 "sign of the zero for src = -0 is not documented (pypto gives +0)",)),
    Instr("TPRELU", 0x1015, "elementwise", "dst = src0 if src0 > 0 else src0 * src1",
          (_DST, _SRC0, _SRC1, _TMP),
          {"a2a3": tuple((t, t, t, "u8") for t in _F.split()),
           "a5": tuple((t, t, t, None) for t in _F.split())},
          seed="prelu", spec_ref="5.2, 9.6", scratch=("a2a3",),
          notes=("a NaN src0 propagates quieted; src0 = +-0 gives src0 * src1",
                 "a2a3 runs TMUL(dst, src0, src1), TCMPS(tmp, src0, 0, GT), TSEL(dst, tmp, src0, dst): "
                 "tmp is a u8 ND scratch tile that receives the packed predicate bits (row i at byte "
                 "i * tmp.Cols, whole 256-byte source repeats; pypto writes 0 past validCol), so it "
                 "needs dst's rows and ceil(dst.Cols / E) * E / 8 bytes per row (E = elements per "
                 "256-byte repeat); TSEL writes the hidden UB scratch",
                 "a2a3: dst, src0, src1 and tmp must not share storage (a trace-time error where the "
                 "tiles' addresses are known)",
                 "a5 runs vprelu and, like the CPU sim, does not use tmp (its type is free there)")),
    Instr("TADDC", 0x1016, "elementwise", "dst = src0 + src1 + src2",
          (DST, SRC0, SRC1, Operand("src2")), both(), spec_ref="5.2",
          notes=("NPU: not implemented on either SoC (TODO upstream); only the CPU sim has it",
                 "pypto follows the NPU: every use is a trace-time error; write TADD(dst, src0, src1) "
                 "then TADD(dst, dst, src2)")),
    Instr("TSUBC", 0x1017, "elementwise", "dst = src0 - src1 + src2",
          (DST, SRC0, SRC1, Operand("src2")), both(), spec_ref="5.2",
          notes=("NPU: not implemented on either SoC (TODO upstream); only the CPU sim has it",
                 "pypto follows the NPU: every use is a trace-time error; write TSUB(dst, src0, src1) "
                 "then TADD(dst, dst, src2)")),
    Instr("TREM", 0x1018, "elementwise",
          "dst = src0 - floor(src0 / src1) * src1 (floor-mod: the result has the divisor's sign)",
          (DST, SRC0, SRC1),
          per_soc("f16 f32 i32 i16", "f16 f32 u16 i16 u32 i32"), seed="rem",
          spec_ref="5.2, 5.9 n4, Addendum",
          notes=("TREM is floor-mod on the NPU (-7 rem 3 = 2); the pto-isa CPU sim uses C % / fmod "
                 "(-7 rem 3 = -1) and leaves dst unchanged where the divisor is 0",
                 "floats: q = src0 / src1, q = floor(q), dst = src0 - q * src1, each step rounded "
                 "(not fused): f32 on both SoCs; a2a3 f16 rounds every step to f16 and takes the floor "
                 "through a saturating f16 -> s16 conversion (|q| >= 32768 clamps, so x rem 0 is x); a5 "
                 "f16 computes in f32 and narrows toward zero with saturation (RS_ENABLE; pypto "
                 "takes NaN -> +0 and inf -> +-65504 from its TCVT saturation model [infer]): 2^-10 "
                 "rem -2048 is -2047 on a5, -2048 on a2a3; in f32, x rem +-inf and +-inf rem y "
                 "give NaN",
                 "a2a3 integers: src0 and src1 are converted in place to f32 (i32) or f16 (i16), the "
                 "float path runs, and dst and both sources are converted back (nearest even, "
                 "saturating, NaN -> 0): after TREM the sources hold int(float(x)) over dst's valid "
                 "region (exact unless |x| > 2^24 for i32, > 2048 for i16)",
                 "a5 integers: exact floor-mod (vmod; its sign rule is inferred from the ISA)",
                 "integer division by zero is undefined on the NPU: pypto gives what the float path "
                 "gives on a2a3 (i32: NaN, so 0; i16: the saturating floor makes inf finite, so "
                 "src0) and src0 on a5, and reports it with checks='strict'",
                 "a2a3: dst, src0 and src1 must not share storage (the quotient is computed in dst "
                 "before the sources are read again): a trace-time error where addresses are known",
                 "the semantics doc says a2a3 needs a tmp tile; the intrinsic at the pinned snapshot "
                 "takes none, so the entry has three operands")),
    Instr("TFMOD", 0x1019, "elementwise",
          "dst = src0 - trunc(src0 / src1) * src1 (trunc-mod: the result has the dividend's sign)",
          (DST, SRC0, SRC1),
          per_soc("f16 f32 i32 i16", "f16 f32 u16 i16 u32 i32"), seed="fmod",
          spec_ref="5.2, 5.9 n4, Addendum",
          notes=("the math of C fmod / %, computed as TREM is with trunc in place of floor (same "
                 "per-SoC float paths, the a2a3 f16 trunc through a saturating s16 conversion, a5 f16 "
                 "narrowed toward zero with saturation)",
                 "a2a3 integers go through f32 / f16 and rewrite the source tiles in place, as TREM's",
                 "a5 integers: exact trunc-mod (vdiv, vmul, vsub)",
                 "integer division by zero is undefined on the NPU: pypto gives 0 for a2a3 i32, src0 "
                 "for a2a3 i16 and on a5 (as for TREM), and reports it with checks='strict'",
                 "a2a3: dst, src0 and src1 must not share storage, as for TREM",
                 "no CPU sim implementation")),
    Instr("TCMP", 0x101A, "elementwise",
          "dst = packed predicate bits of (src0 cmpMode src1), LSB first",
          (_PDST, _PSRC0, _PSRC1),
          {"a2a3": tuple(("u8", t, t) for t in ("i32", "f16", "f32")),
           "a5": tuple((d, t, t) for d in ("u32", "u8") for t in _CMP_A5)},
          params=(CMP_MODE,), seed="cmp", spec_ref="5.2, 5.9 n5, Addendum",
          notes=("cmpMode is required (EQ NE LT LE GT GE); floats compare as IEEE values (a NaN is "
                 "unequal to everything: only NE is true), -0 == +0; integers as their type",
                 "row-major (ND) tiles only, as on the NPU; src0 and src1 are one tile type (pto-isa's TCMP takes one C++ type); the "
                 "domain is src0's valid region (as on the NPU), src1's must cover it; dst's valid "
                 "region is not used",
                 "bit k of a mask byte b is the result for element 8b+k (LSB first)",
                 "a2a3 (dst u8): row i's bits start at byte i * dst.Cols; dst needs validRow rows of "
                 "ceil(validCol / 8) bytes (a static error where known, a run-time check otherwise); the "
                 "NPU computes whole 256-byte repeats (64 f32/i32 or 128 f16 elements), so each row's "
                 "bytes up to the repeat boundary are written: pypto writes 0 for every bit past "
                 "validCol (padding bits of the last partial byte and whole bytes after it), clipped at "
                 "the tile's end; a2a3 i32 inputs always compare EQ whatever cmpMode says",
                 "a5 (dst u32 or u8): one contiguous LSB-first bit stream over the first "
                 "validRow * validCol storage elements of the sources (row strides ignored), from dst's "
                 "byte 0, written in whole 16-byte chunks (32 bytes for 8-bit sources); bits past the "
                 "stream are 0 (inactive lanes), clipped at the tile's end; dst must hold "
                 "ceil(validRow * validCol / 8) bytes",
                 "CPU sim does not pack: dst has the sources' type and gets 0/1 per element")),
    Instr("TSEL", 0x101B, "elementwise", "dst = src0 where the mask bit is 1, else src1",
          (_PDST_T, _PMASK, _PSRC0, _PSRC1),
          both(*((t, m, t, t) for m in _MASK_T for t in _SEL_T)), seed="sel",
          spec_ref="5.2, 5.9 n6, Addendum", scratch=("a2a3",),
          notes=("the mask is read per row on both SoCs: element (i, j) of dst's valid region takes "
                 "src0 where bit j % 8 of mask byte (i, j // 8) is 1, else src1; row i of the mask "
                 "starts at byte i * mask.Cols * sizeof(mask element) (u8, u16 or u32 masks, read as "
                 "bytes); mask bits past validCol are never read",
                 "row-major (ND) tiles only, as on the NPU; dst, src0 and src1 are one tile type (pto-isa's TSEL takes one C++ type), "
                 "src0's and src1's valid regions must cover dst's; the mask's valid region is not used, "
                 "its storage must hold validRow rows of ceil(validCol / 8) bytes (a static error where "
                 "known, a run-time check otherwise)",
                 "a2a3 writes hidden UB scratch at bytes [188416, 196608) (an effect; the simulator "
                 "does not model its contents)",
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
                 "a5 f32->hif8 and f16->hif8 always round half away from zero (ROUND_A) and set no "
                 "saturation bit: pypto saturates there (overflow and inf -> +-2**15, NaN -> 0); "
                 "below 2**-22 the step is 2**-22; -0 and underflow give the one zero 0x00; "
                 "hif8->f32 is exact, its NaN (0x80) gives 0x7FC00000 (pypto's choice)",
                 "a2a3 iterates the dst valid region; its non-saturating path uses hidden UB scratch",
                 "CPU sim never saturates, ignores rmode except for float->int, iterates the src "
                 "valid region and has no satMode overload",
                 "a5 pairs are those of the a5 conversion table in pto-isa (the semantics doc "
                 "lists them only as examples)")),
)
