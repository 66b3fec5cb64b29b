"""5.3 Tile-scalar instructions (19). The scalar is converted to the tile's element type first.

All tiles are Vec; the iteration domain is the destination's valid region. TCMPS and TSELS list one
dtype per operand (None for the scalar). A param default of None means PTO has no single
default for it (see the notes).
"""
from ..schema import DST, SCALAR, SRC, TMP, Instr, Operand, Param, both, per_soc
from .elementwise import CMP_MODE

_STD = "i32 i16 f16 f32"            # the common a2a3 list
_A5_INT_F = "u8 i8 u16 i16 u32 i32 f16 f32"
_SRC0 = Operand("src0")
_SRC1 = Operand("src1")

# Operands whose dtype comes from the per-operand tuples (group None).
_DST = Operand("dst", role="out", group=None)
_SRC = Operand("src", group=None)
_MASK = Operand("mask", group=None)
# The bit, shift, compare and select family: row-major (ND) tiles only, as the NPU code assumes.
_BDST = Operand("dst", role="out", layouts=("ND",))
_BSRC = Operand("src", layouts=("ND",))
_BTMP = Operand("tmp", role="tmp", layouts=("ND",), region="whole")
_PDST = Operand("dst", role="out", group=None, layouts=("ND",), region="whole")
_PDST_T = Operand("dst", role="out", group=None, layouts=("ND",))
_PSRC = Operand("src", group=None, layouts=("ND",))
_PMASK = Operand("mask", group=None, layouts=("ND",), region="whole")
_MASK_T = ("u8", "u16", "u32")

INSTRUCTIONS = (
    Instr("TEXPANDS", 0x1101, "tile_scalar", "dst = scalar (broadcast)", (DST, SCALAR),
          per_soc(_STD, _A5_INT_F + " bf16"), seed="expands", spec_ref="5.3",
          notes=("every element of dst's valid region gets the scalar, converted to the element "
                 "type (it must fit it; floats round once to nearest even)",
                 "a5 bf16 comes from the implementation, not the ISA page")),
    Instr("TADDS", 0x1102, "tile_scalar", "dst = src + scalar", (DST, SRC, SCALAR),
          per_soc("i32 i16 f16 f32", "u8 i8 u16 i16 u32 i32 f16 f32 bf16"), seed="adds",
          spec_ref="5.3"),
    Instr("TSUBS", 0x1103, "tile_scalar", "dst = src - scalar", (DST, SRC, SCALAR),
          both("i32", "i16", "f16", "f32"), seed="subs", spec_ref="5.3",
          notes=("integers wrap; a2a3 adds (T)(-(float)scalar), so an i32 scalar is first rounded "
                 "to float32 (|scalar| > 2^24 loses its low bits; -INT32_MIN wraps to INT32_MIN)",
                 "floats: src + (-scalar) = src - scalar exactly (the NaN sign of a NaN scalar is "
                 "not documented)")),
    Instr("TMULS", 0x1104, "tile_scalar", "dst = src * scalar", (DST, SRC, SCALAR),
          per_soc("i32 i16 f16 f32", "u8 i8 u16 i16 u32 i32 f16 f32 bf16"), seed="muls",
          spec_ref="5.3"),
    Instr("TDIVS", 0x1105, "tile_scalar", "dst = src / scalar; the overload (dst, scalar, src): "
          "dst = scalar / src", (DST, SRC, SCALAR), per_soc(_STD, _A5_INT_F),
          params=(Param("recip", "bool", (False, True), False),), seed="divs",
          spec_ref="5.3, 5.9 n1, Addendum", overloads=((DST, SCALAR, SRC),),
          notes=("two C++ overloads, chosen by operand order: TDIVS(dst, src, scalar) = src / scalar, "
                 "TDIVS(dst, scalar, src) = scalar / src",
                 "floats divide, correctly rounded (f16 in f32, rounded once); x / 0 is IEEE",
                 "a5 tile / scalar [CONFLICT]: the ISA page multiplies by the reciprocal (scalar 0 "
                 "gives inf), the code at the pinned snapshot divides like a2a3; pypto divides (the "
                 "code is what runs); recip=True (a pypto switch, not a PTO template argument; a5 "
                 "float tile / scalar only) runs the ISA page's form, emitted as TMULS(dst, src, "
                 "T(1.0f / scalar)) with 1/+-0 = +inf",
                 "integers (a scalar loop on both SoCs): C division truncating toward zero; "
                 "INT_MIN / -1 wraps to INT_MIN; division by zero is undefined (SIGFPE in the CPU "
                 "sim): pypto gives -1 (all ones) and reports it with checks='strict'",
                 "a2a3 float: dst and src must not share storage (dst is filled with the scalar "
                 "before the division): a trace-time error where the tiles' addresses are known")),
    Instr("TMINS", 0x1106, "tile_scalar", "dst = min(src, scalar)", (DST, SRC, SCALAR),
          per_soc(_STD, _A5_INT_F + " bf16"), seed="mins", spec_ref="5.3, 5.9 n2",
          notes=("a NaN operand propagates quieted (pypto's choice, as for TMIN)",
                 "CPU sim uses std::min, so NaN handling depends on operand order")),
    Instr("TMAXS", 0x1107, "tile_scalar", "dst = max(src, scalar)", (DST, SRC, SCALAR),
          per_soc(_STD, _A5_INT_F), seed="maxs", spec_ref="5.3, 5.9 n2",
          notes=("a NaN operand propagates quieted (pypto's choice, as for TMAX)",
                 "the doc's a5 list (with bf16) is written for TMINS; TMAXS takes it without bf16",
                 "CPU sim uses std::max, so NaN handling depends on operand order")),
    Instr("TREMS", 0x1108, "tile_scalar",
          "dst = src - floor(src / scalar) * scalar (floor-mod: the result has the divisor's sign)",
          (DST, SRC, SCALAR), per_soc(_STD, "f16 f32 u16 i16 u32 i32"), seed="rems",
          spec_ref="5.3, 5.9 n4, Addendum",
          notes=("TREMS is floor-mod on the NPU; the CPU sim uses C % / fmod and skips the element "
                 "(dst unchanged) when scalar is 0",
                 "computed as TREM with the scalar as every divisor (the same per-SoC float paths); "
                 "a2a3 integers rewrite src in place (int(float(x))) as TREM does",
                 "integer scalar 0 is undefined on the NPU: pypto gives 0 for a2a3 i32, src for a2a3 "
                 "i16 and on a5 (as TREM), and reports it with checks='strict'; a2a3: dst and src "
                 "must not share storage",
                 "a5 dtypes taken from TREM (the doc only says the a5 implementation exists)")),
    Instr("TFMODS", 0x1109, "tile_scalar",
          "dst = src - trunc(src / scalar) * scalar (trunc-mod, like C fmod)",
          (DST, SRC, SCALAR), per_soc(_STD, "f16 f32 u16 i16 u32 i32"), seed="fmods",
          spec_ref="5.3, 5.9 n4, Addendum",
          notes=("computed as TFMOD with the scalar as every divisor (the same per-SoC float paths); "
                 "a2a3 integers rewrite src in place (int(float(x))) as TFMOD does",
                 "integer scalar 0 is undefined on the NPU: pypto gives 0 for a2a3 i32, src for a2a3 "
                 "i16 and on a5 (as TREM), and reports it with checks='strict'; a2a3: dst and src "
                 "must not share storage",
                 "a5 dtypes taken from TFMOD (the doc only says the a5 implementation exists)",
                 "no CPU sim implementation")),
    Instr("TANDS", 0x110A, "tile_scalar", "dst = src & scalar", (_BDST, _BSRC, SCALAR),
          per_soc("i16", "u8 i8 u16 i16 u32 i32"), seed="ands", spec_ref="5.3, 9.6",
          notes=("row-major (ND) tiles only, as on the NPU; the scalar is converted to the element type (it must fit it)",
                 "src and dst must not share storage on either SoC (the NPU first fills dst with the scalar): a static error where the tiles' addresses are known, a run-time check otherwise",
                 "a2a3 runs TEXPANDS(dst, scalar) then TAND(dst, src, dst), so only types legal for "
                 "both (i16) work [infer]; a5 dtypes taken from TAND")),
    Instr("TORS", 0x110B, "tile_scalar", "dst = src | scalar", (_BDST, _BSRC, SCALAR),
          per_soc("i16", "u8 i8 u16 i16 u32 i32"), seed="ors", spec_ref="5.3, 9.6",
          notes=("row-major (ND) tiles only, as on the NPU; the scalar is converted to the element type (it must fit it)",
                 "src and dst must not share storage on either SoC (the NPU first fills dst with the scalar): a static error where the tiles' addresses are known, a run-time check otherwise",
                 "a2a3 runs TEXPANDS(dst, scalar) then TOR(dst, src, dst), so only types legal for "
                 "both (i16) work [infer]; a5 dtypes taken from TOR")),
    Instr("TXORS", 0x110C, "tile_scalar", "dst = src ^ scalar", (_BDST, _BSRC, SCALAR, _BTMP),
          per_soc("i16", "u8 i8 u16 i16 u32 i32"), seed="xors", spec_ref="5.3, 9.6",
          notes=("row-major (ND) tiles only, as on the NPU; the scalar is converted to the element type (it must fit it)",
                 "dst, src and tmp must be pairwise distinct on both SoCs (a static error where the "
                 "tiles' addresses are known, a run-time check otherwise)",
                 "a2a3 computes tmp = src | s, dst = ~(src & s) & tmp (types of TORS/TANDS/TNOT: i16 "
                 "[infer]); tmp's valid region must cover dst's and pypto leaves src | s in tmp there, "
                 "as the NPU does; a5 (dtypes taken from TXOR) and the CPU sim ignore tmp")),
    Instr("TSHLS", 0x110D, "tile_scalar", "dst = src << scalar (scalar >= 0)", (_BDST, _BSRC, SCALAR),
          per_soc("i32 i16 u32 u16", "i32 i16 i8 u32 u16 u8"), seed="shls", spec_ref="5.3, 5.9 n3",
          notes=("row-major (ND) tiles only, as on the NPU; the scalar is converted to the element type (it must fit it)",
                 "a count c in 0 .. bits-1 gives src * 2^c modulo 2^bits",
                 "a count >= the element width or negative is undefined on the NPU; pypto shifts every bit out (see below) and reports the use with SimOptions(checks='strict'): shls gives 0",
                 "no CPU sim implementation (pto-isa's README claims one)")),
    Instr("TSHRS", 0x110E, "tile_scalar", "dst = src >> scalar (scalar >= 0; arithmetic if signed)",
          (_BDST, _BSRC, SCALAR),
          per_soc("i32 i16 u32 u16", "i32 i16 i8 u32 u16 u8"), seed="shrs", spec_ref="5.3, 5.9 n3",
          notes=("row-major (ND) tiles only, as on the NPU; the scalar is converted to the element type (it must fit it)",
                 "logical shift for unsigned types, arithmetic (sign-filling) for signed types",
                 "a count >= the element width or negative is undefined on the NPU; pypto shifts every bit out (see below) and reports the use with SimOptions(checks='strict'): shrs gives 0, or -1 for a negative signed src",
                 "no CPU sim implementation (pto-isa's README claims one)")),
    Instr("TLRELU", 0x110F, "tile_scalar", "dst = src if src > 0 else src * slope",
          (DST, SRC, Operand("slope", kind="scalar", locs=(), group=None)),
          both("f16", "f32"), seed="lrelu", spec_ref="5.3",
          notes=("src > 0 ? src : src * slope (the product rounded once); a NaN src propagates "
                 "quieted; the slope is converted to the element type",)),
    Instr("TADDSC", 0x1110, "tile_scalar", "dst = src0 + scalar + src1",
          (DST, _SRC0, SCALAR, _SRC1), both(), spec_ref="5.3",
          notes=("NPU: not implemented on either SoC (TODO upstream); only the CPU sim has it",
                 "pypto follows the NPU: every use is a trace-time error; write TADDS(dst, src0, "
                 "scalar) then TADD(dst, dst, src1)")),
    Instr("TSUBSC", 0x1111, "tile_scalar", "dst = src0 - scalar + src1",
          (DST, _SRC0, SCALAR, _SRC1), both(), spec_ref="5.3",
          notes=("NPU: not implemented on either SoC (TODO upstream); only the CPU sim has it",
                 "pypto follows the NPU: every use is a trace-time error; write TSUBS(dst, src0, "
                 "scalar) then TADD(dst, dst, src1)")),
    Instr("TCMPS", 0x1112, "tile_scalar",
          "dst = packed predicate bits of (src cmpMode scalar), LSB first",
          (_PDST, _PSRC, SCALAR),
          {"a2a3": tuple(("u8", t, None) for t in ("i32", "f32", "f16", "u16", "i16")),
           "a5": tuple((d, t, None) for d in ("u8", "u32") for t in ("i32", "u32", "f32", "i16",
                                                                   "u16", "f16", "u8", "i8"))},
          params=(CMP_MODE,), seed="cmps", spec_ref="5.3, 5.9 n5, Addendum",
          notes=("cmpMode is required; the scalar is converted to src's element type (it must fit "
                 "it); the domain is src's valid region; the bit packing per SoC is TCMP's (a2a3: row "
                 "i at byte i * dst.Cols, 0 for every bit past validCol up to the 256-byte repeat "
                 "boundary; a5: one stream over validRow * validCol storage elements, 0 past it)",
                 "row-major (ND) tiles only, as on the NPU",
                 "a2a3: i32 always compares EQ; i16/u16 compare the raw bits of src and of the "
                 "converted scalar as half floats (a NaN pattern is unequal to everything)",
                 "a5 counts dst's valid elements (its test data gives dst src's valid region); pypto "
                 "packs src's valid region",
                 "CPU sim packs per src capacity row into one stream and uses |a-b| < 1e-9 for EQ/NE")),
    Instr("TSELS", 0x1113, "tile_scalar", "dst = src where the mask bit is 1, else scalar",
          (_PDST_T, _PMASK, _PSRC, SCALAR),
          {"a2a3": tuple((t, m, t, None) for m in _MASK_T
                         for t in ("i16", "u16", "i32", "u32", "f16", "f32")),
           "a5": tuple((t, m, t, None) for m in _MASK_T
                       for t in ("i16", "u16", "i32", "u32", "f16", "f32", "i8", "u8"))},
          seed="sels", spec_ref="5.3, 5.9 n8", scratch=("a2a3",),
          notes=("the NPU/doc meaning: mask ? src : scalar, the mask read per row as in TSEL "
                 "(element (i, j) uses bit j % 8 of mask byte (i, j // 8); bits past validCol never "
                 "read); the scalar is converted to the element type",
                 "row-major (ND) tiles only, as on the NPU; src's valid region must cover dst's; the mask's storage must hold validRow "
                 "rows of ceil(validCol / 8) bytes",
                 "a2a3 writes hidden UB scratch at bytes [188416, 196608)",
                 "the CPU sim implements an older whole-tile select (dst, src0, src1, selectMode) "
                 "instead; the doc form does not build there [CONFLICT]")),
)
