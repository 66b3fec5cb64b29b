"""5.8 Complex vector instructions (13): sorting, gathers/scatters, index generation, partial ops,
quantisation, debug print.

All tiles are Vec and row-major on the NPU. Entries whose operands differ in type list one dtype per
operand (None for scalars and absent optional operands). A param default of None means PTO has
no single default for it (see the notes).
"""
from ..schema import DST, SRC0, SRC1, Instr, Operand, Param, both, per_soc

_B32 = ("i32", "u32", "f32")
_B16 = ("i16", "u16", "f16", "bf16")
_B8 = ("i8", "u8")
_PART = per_soc("i32 i16 f16 f32", "i8 u8 i16 u16 i32 u32 f16 bf16 f32")

_D = Operand("dst", role="out", group=None)
_SRC = Operand("src", group=None)
_SRC0 = Operand("src0", group=None)

_MASK_PATTERN = Param("maskPattern", "MaskPattern",
                      ("P0101", "P1010", "P0001", "P0010", "P0100", "P1000", "P1111"), None)

INSTRUCTIONS = (
    Instr("TPRINT", 0x1601, "complex", "print a tile's valid region (or a GM tensor) for debugging",
          (Operand("src"),), both("i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "f32"),
          pipe="ALL", domain="src", spec_ref="5.8",
          notes=("a GM tensor (ND, DN or NZ) is accepted in place of the tile",
                 "device builds need -D_DEBUG and --cce-enable-print; floats print as %6.2f, integers "
                 "as %6d; it inserts a PIPE_ALL barrier (hence pipe ALL)",
                 "no CPU sim intrinsic (the CPU has printTile helpers instead)")),
    Instr("TMRGSORT", 0x1602, "complex",
          "merge sorted lists of 8-byte (value, index) records into one list, descending by value",
          (DST,
           Operand("executedNumList", kind="scalar", role="out", locs=(), group=None, optional=True),
           Operand("tmp", role="tmp", optional=True),
           SRC0, Operand("src1", optional=True), Operand("src2", optional=True),
           Operand("src3", optional=True),
           Operand("blockLen", kind="scalar", locs=(), group=None, optional=True)),
          both("f16", "f32"), spec_ref="5.8, 5.9 n15",
          params=(Param("exhausted", "bool", (False, True), None),),
          notes=("multi-list form (dst, executedNumList, tmp, src0, src1[, src2[, src3]]): Rows == 1; "
                 "repeatedly takes the largest head (ties: lower list index) until dst is full or, "
                 "with exhausted, until any list runs out; executedNumList gets per-list counts",
                 "single-list form (dst, src0, blockLen): src0 holds groups of 4 sorted blocks of "
                 "blockLen elements, each group merged; NPU needs blockLen % 64 == 0, validCol a "
                 "multiple of 4 * blockLen and 1..255 repeats; the CPU sim drops a trailing partial group",
                 "records: f32 value + u32 index bits; f16 value + 2 pad bytes + u32 index")),
    Instr("TSORT32", 0x1603, "complex",
          "sort each 32-element block of every row by value, descending, emitting (value, index) records",
          (_D, _SRC, Operand("idx", group=None), Operand("tmp", role="tmp", group=None, optional=True)),
          both(*((t, t, "u32", t) for t in ("f16", "f32"))), spec_ref="5.8, 5.9 n16",
          notes=("dst gets 2 (f32) or 4 (f16) elements per input element; the last block may be "
                 "partial; the NPU tie order is unspecified",
                 "NPU stores the u32 index as raw bits; the CPU sim stores it converted to the value "
                 "type (and overlaps blocks for 2-byte types with > 32 columns) [CONFLICT]",
                 "takes no events and does not synchronise")),
    Instr("TGATHER", 0x1604, "complex",
          "dst[i, j] = src0 storage[idx[i, j]], or with maskPattern keep the matching columns, packed",
          (_D, _SRC0, Operand("idx", group=None, optional=True)),
          {"a2a3": tuple((t, t, i) for t in _B16 + _B32 for i in ("i32", "u32"))
           + tuple((t, t, None) for t in _B16 + _B32),
           "a5": tuple((t, t, i) for t in _B8 + _B16 + _B32 for i in ("i16", "u16", "i32", "u32"))
           + tuple((t, t, None) for t in _B8 + _B16 + _B32 + ("e4m3", "e5m2", "hif8"))},
          params=(_MASK_PATTERN,), spec_ref="5.8, 5.9 n17",
          notes=("index form: idx is a linear element offset into src0's storage; a2a3 needs 4-byte "
                 "idx, a5 2- or 4-byte; idx.validCol == idx.Cols and dst.validCol == dst.Cols",
                 "mask form (no idx): maskPattern P0101=1 even columns, P1010=2 odd, P0001=3 col%4==0, "
                 "P0010=4 ==1, P0100=5 ==2, P1000=6 ==3, P1111=7 all; survivors of all rows are "
                 "written densely from dst offset 0",
                 "CPU sim maps idx to (idx / Cols, idx % Cols) and gives 0 for out-of-range indices",
                 "data dtypes from the implementation (the doc gives sizes only)")),
    Instr("TCI", 0x1605, "complex",
          "dst[0, k] = start + k (or start - k when descending) for k < validCol",
          (DST, Operand("start", kind="scalar", locs=(), group=None)),
          both("i32", "u32", "i16", "u16"), pipe="S",
          params=(Param("descending", "int", (0, 1), None),), spec_ref="5.8",
          notes=("start must have the tile's element type",
                 "CPU sim requires Rows == 1")),
    Instr("TTRI", 0x1606, "complex",
          "triangular 0/1 mask: lower keeps 1 where j <= i + diagonal, upper where j >= i + diagonal",
          (DST, Operand("diagonal", kind="scalar", locs=(), group=None)),
          per_soc("i32 i16 u32 u16 f16 f32", "i32 i16 u32 u16 f16 f32 i8 u8 bf16"),
          params=(Param("isUpper", "int", (0, 1), None),), spec_ref="5.8",
          notes=("over dst's valid region; row-major only",
                 "CPU sim types i32 i16 u32 u16 f16 f32")),
    Instr("TPARTADD", 0x1607, "complex",
          "dst = src0 + src1 where both are valid, else whichever source is valid there",
          (DST, SRC0, SRC1), _PART, spec_ref="5.8",
          notes=("a2a3: one source's valid region equals dst's and the other is no larger",
                 "CPU sim writes 0 where neither source is valid; types i32 i16 f16 f32")),
    Instr("TPARTMAX", 0x1608, "complex",
          "dst = max(src0, src1) where both are valid, else whichever source is valid there",
          (DST, SRC0, SRC1), _PART, spec_ref="5.8",
          notes=("a2a3: one source's valid region equals dst's and the other is no larger; a5: both "
                 "no larger than dst",
                 "CPU sim writes 0 where neither source is valid; types i32 i16 f16 f32")),
    Instr("TPARTMIN", 0x1609, "complex",
          "dst = min(src0, src1) where both are valid, else whichever source is valid there",
          (DST, SRC0, SRC1), _PART, spec_ref="5.8",
          notes=("a2a3: one source's valid region equals dst's and the other is no larger; a5: both "
                 "no larger than dst",
                 "CPU sim writes 0 where neither source is valid; types i32 i16 f16 f32")),
    Instr("TPARTMUL", 0x160A, "complex",
          "dst = src0 * src1 where both are valid, else whichever source is valid there",
          (DST, SRC0, SRC1), _PART, spec_ref="5.8",
          notes=("dtypes assumed equal to TPARTADD's",
                 "no CPU sim implementation")),
    Instr("TGATHERB", 0x160B, "complex",
          "for each 32-byte block k of dst row i, copy 32 bytes from src's bytes + offset[i, k]",
          (_D, _SRC, Operand("offset", group=None)),
          both(*((t, t, "u32") for t in _B8 + _B16 + _B32)), spec_ref="5.8",
          notes=("offsets are u32 byte offsets",
                 "CPU sim skips blocks whose offset would run past src")),
    Instr("TSCATTER", 0x160C, "complex", "dst storage[idx[i, j]] = src[i, j]",
          (Operand("dst", role="inout", group=None), _SRC, Operand("idx", group=None)),
          both(*(tuple((t, t, i) for t in _B32 for i in ("i32", "u32"))
                 + tuple((t, t, i) for t in _B16 + _B8 for i in ("i16", "u16")))),
          domain="src", spec_ref="5.8, 5.9 n18",
          notes=("NPU: idx is a flat element offset into dst; the doc and the CPU sim treat it as a "
                 "row number (dst[idx[i, j], j] = src[i, j]) [CONFLICT]",
                 "index width: 4-byte data with 4-byte idx, 2-byte with 2-byte, 1-byte with 2-byte",
                 "no bounds check; with duplicates the last writer wins")),
    Instr("TQUANT", 0x160D, "complex",
          "dst = saturate(rint(src * scale[i] (+ offset[i]))) into int8 (sym) or uint8 (asym)",
          (_D, Operand("src", role="inout", group=None), Operand("scale", group=None),
           Operand("offset", group=None, optional=True)),
          both(("i8", "f32", "f32", None), ("u8", "f32", "f32", "f32")),
          params=(Param("quantType", "QuantType", ("INT8_SYM", "INT8_ASYM", "MXFP8"), None),),
          spec_ref="5.8",
          notes=("INT8_SYM: f32 -> i8 without offset; INT8_ASYM: f32 -> u8 with offset",
                 "a2a3 overwrites src",
                 "QuantType enumerators differ per SoC (a2a3 INT8_SYM=0, INT8_ASYM=1; a5 MXFP8=0, "
                 "INT8_SYM=1, INT8_ASYM=2); emit them by name",
                 "a5 adds MXFP8 overloads with different operands (exp, max, scaling tiles); not "
                 "described by this entry's operand list",
                 "no CPU sim implementation")),
)
