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

INSTRUCTIONS = (
    Instr("TEXPANDS", 0x1101, "tile_scalar", "dst = scalar (broadcast)", (DST, SCALAR),
          per_soc(_STD, _A5_INT_F + " bf16"), spec_ref="5.3",
          notes=("a5 bf16 comes from the implementation, not the ISA page",)),
    Instr("TADDS", 0x1102, "tile_scalar", "dst = src + scalar", (DST, SRC, SCALAR),
          per_soc("i32 i16 f16 f32", "u8 i8 u16 i16 u32 i32 f16 f32 bf16"), seed="adds",
          spec_ref="5.3"),
    Instr("TSUBS", 0x1103, "tile_scalar", "dst = src - scalar", (DST, SRC, SCALAR),
          both("i32", "i16", "f16", "f32"), spec_ref="5.3"),
    Instr("TMULS", 0x1104, "tile_scalar", "dst = src * scalar", (DST, SRC, SCALAR),
          per_soc("i32 i16 f16 f32", "u8 i8 u16 i16 u32 i32 f16 f32 bf16"), seed="muls",
          spec_ref="5.3"),
    Instr("TDIVS", 0x1105, "tile_scalar", "dst = src / scalar, or scalar / src with scalarFirst",
          (DST, SRC, SCALAR), per_soc(_STD, _A5_INT_F),
          params=(Param("scalarFirst", "bool", (False, True), False),),
          spec_ref="5.3, 5.9 n1, Addendum",
          notes=("scalarFirst=True is the TDIVS(dst, scalar, src) overload (dst = scalar / src); "
                 "it is a pypto switch, not a PTO template argument",
                 "a5 tile/scalar: the ISA page multiplies by 1/scalar (scalar 0 gives inf/NaN) while "
                 "the implementation at the pinned snapshot divides like a2a3 [CONFLICT]",
                 "integer division by zero is undefined (SIGFPE in the CPU sim)")),
    Instr("TMINS", 0x1106, "tile_scalar", "dst = min(src, scalar)", (DST, SRC, SCALAR),
          per_soc(_STD, _A5_INT_F + " bf16"), spec_ref="5.3, 5.9 n2",
          notes=("CPU sim uses std::min, so NaN handling depends on operand order",)),
    Instr("TMAXS", 0x1107, "tile_scalar", "dst = max(src, scalar)", (DST, SRC, SCALAR),
          per_soc(_STD, _A5_INT_F), spec_ref="5.3, 5.9 n2",
          notes=("the doc's a5 list (with bf16) is written for TMINS; TMAXS takes it without bf16",
                 "CPU sim uses std::max, so NaN handling depends on operand order")),
    Instr("TREMS", 0x1108, "tile_scalar",
          "dst = src - floor(src / scalar) * scalar (floor-mod: the result has the divisor's sign)",
          (DST, SRC, SCALAR), per_soc(_STD, "f16 f32 u16 i16 u32 i32"), spec_ref="5.3, 5.9 n4",
          notes=("TREMS is floor-mod on the NPU; the CPU sim uses C % / fmod and skips the element "
                 "(dst unchanged) when scalar is 0",
                 "a5 dtypes taken from TREM (the doc only says the a5 implementation exists)")),
    Instr("TFMODS", 0x1109, "tile_scalar",
          "dst = src - trunc(src / scalar) * scalar (trunc-mod, like C fmod)",
          (DST, SRC, SCALAR), per_soc(_STD, "f16 f32 u16 i16 u32 i32"), spec_ref="5.3, 5.9 n4",
          notes=("a5 dtypes taken from TFMOD (the doc only says the a5 implementation exists)",
                 "no CPU sim implementation")),
    Instr("TANDS", 0x110A, "tile_scalar", "dst = src & scalar", (DST, SRC, SCALAR),
          per_soc("i16", "u8 i8 u16 i16 u32 i32"), spec_ref="5.3",
          notes=("src and dst must not share storage",
                 "a2a3 runs TEXPANDS(dst, scalar) then TAND(dst, src, dst), so only types legal for "
                 "both (i16) work [infer]; a5 dtypes taken from TAND")),
    Instr("TORS", 0x110B, "tile_scalar", "dst = src | scalar", (DST, SRC, SCALAR),
          per_soc("i16", "u8 i8 u16 i16 u32 i32"), spec_ref="5.3",
          notes=("src and dst must not share storage",
                 "a2a3 runs TEXPANDS(dst, scalar) then TOR(dst, src, dst), so only types legal for "
                 "both (i16) work [infer]; a5 dtypes taken from TOR")),
    Instr("TXORS", 0x110C, "tile_scalar", "dst = src ^ scalar", (DST, SRC, SCALAR, TMP),
          per_soc("i16", "u8 i8 u16 i16 u32 i32"), spec_ref="5.3",
          notes=("dst, src and tmp must be pairwise distinct",
                 "a2a3 computes (src | s) & ~(src & s) through tmp, so its types are those of "
                 "TORS/TANDS/TNOT (i16) [infer]; a5 dtypes taken from TXOR",
                 "CPU sim ignores tmp")),
    Instr("TSHLS", 0x110D, "tile_scalar", "dst = src << scalar (scalar >= 0)", (DST, SRC, SCALAR),
          per_soc("i32 i16 u32 u16", "i32 i16 i8 u32 u16 u8"), spec_ref="5.3",
          notes=("shift counts >= the element width are undefined",
                 "no CPU sim implementation (pto-isa's README claims one)")),
    Instr("TSHRS", 0x110E, "tile_scalar", "dst = src >> scalar (scalar >= 0; arithmetic if signed)",
          (DST, SRC, SCALAR),
          per_soc("i32 i16 u32 u16", "i32 i16 i8 u32 u16 u8"), spec_ref="5.3",
          notes=("shift counts >= the element width are undefined",
                 "no CPU sim implementation (pto-isa's README claims one)")),
    Instr("TLRELU", 0x110F, "tile_scalar", "dst = src if src > 0 else src * slope",
          (DST, SRC, Operand("slope", kind="scalar", locs=(), group=None)),
          both("f16", "f32"), spec_ref="5.3"),
    Instr("TADDSC", 0x1110, "tile_scalar", "dst = src0 + scalar + src1",
          (DST, _SRC0, SCALAR, _SRC1), both(), spec_ref="5.3",
          notes=("NPU: not implemented on either SoC (TODO upstream); only the CPU sim has it",)),
    Instr("TSUBSC", 0x1111, "tile_scalar", "dst = src0 - scalar + src1",
          (DST, _SRC0, SCALAR, _SRC1), both(), spec_ref="5.3",
          notes=("NPU: not implemented on either SoC (TODO upstream); only the CPU sim has it",)),
    Instr("TCMPS", 0x1112, "tile_scalar",
          "dst = packed predicate bits of (src cmpMode scalar), LSB first",
          (_DST, _SRC, SCALAR),
          {"a2a3": tuple(("u8", t, None) for t in ("i32", "f32", "f16", "u16", "i16")),
           "a5": tuple(("u8", t, None) for t in ("i32", "u32", "f32", "i16", "u16", "f16", "u8",
                                                  "i8"))},
          params=(CMP_MODE,), spec_ref="5.3, 5.9 n5, Addendum",
          notes=("dst must be row-major",
                 "a2a3 writes row i's bits at byte i * dst.Cols (whole 256-byte repeats, so bits past "
                 "validCol are garbage) and compares i16/u16 raw bits as half floats",
                 "a5 writes one contiguous bit stream over validRow * validCol elements",
                 "CPU sim packs per src capacity row into one stream and uses |a-b| < 1e-9 for EQ/NE")),
    Instr("TSELS", 0x1113, "tile_scalar", "dst = src where the mask bit is 1, else scalar",
          (_DST, _MASK, _SRC, SCALAR),
          {"a2a3": tuple((t, "u8", t, None) for t in ("i16", "u16", "i32", "u32", "f16", "f32")),
           "a5": tuple((t, "u8", t, None) for t in ("i16", "u16", "i32", "u32", "f16", "f32",
                                                     "i8", "u8"))},
          spec_ref="5.3, 5.9 n8", scratch=("a2a3",),
          notes=("mask bits are read per row as in TSEL",
                 "a2a3 writes hidden UB scratch at bytes [188416, 196608)",
                 "the CPU sim implements an older whole-tile select (dst, src0, src1, selectMode) "
                 "instead; the doc form does not build there [CONFLICT]")),
)
