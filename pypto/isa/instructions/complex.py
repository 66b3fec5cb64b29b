"""5.8 Complex vector instructions (13): sorting, gathers/scatters, index generation, partial ops,
quantisation, debug print.

All tiles are Vec and row-major on the NPU (ND; TPRINT prints any layout). Entries whose operands
differ in type list one dtype per operand (None for scalars and absent optional operands). A
param default of None means PTO has no single default for it (see the notes). Where the NPU's
result is undefined the notes say what pypto gives (and ``SimOptions(checks="strict")`` reports
the use); units: pypto/units/sort.py, gather.py, complex_index.py, complex_part.py,
complex_quant.py, complex_print.py.
"""
from ..schema import LAYOUTS, Instr, Operand, Param, both, per_soc

_ND = ("ND",)
_B32 = ("i32", "u32", "f32")
_B16 = ("i16", "u16", "f16", "bf16")
_B8 = ("i8", "u8")
_FP8 = ("e4m3", "e5m2")
_PART = per_soc("i32 i16 f16 f32", "i8 u8 i16 u16 i32 u32 f16 bf16 f32")
_PART_RULE = ("valid regions (a2a3, and a5 TPARTADD/TPARTMUL): one source's valid region equals "
              "dst's and the other's fits inside it; elsewhere the instruction is an error (the "
              "NPU's PTO_ASSERT is compiled out and it would silently do nothing)")
_PART_ORDER = ("where only the larger source is valid dst gets its bits unchanged; where both are "
               "valid the op runs as op(larger, smaller), except when the smaller source has fewer "
               "valid columns than dst: op(smaller, larger) (the NPU's operand order; it matters "
               "only for which NaN payload survives)")


def _t(name: str, role: str = "in", group=None, layouts=_ND, region: str = "valid",
       optional: bool = False) -> Operand:
    return Operand(name, role=role, group=group, layouts=layouts, region=region, optional=optional)


def _s(name: str, role: str = "in", optional: bool = False) -> Operand:
    return Operand(name, kind="scalar", role=role, locs=(), group=None, optional=optional)


_MASK_PATTERN = Param("maskPattern", "MaskPattern",
                      ("P0101", "P1010", "P0001", "P0010", "P0100", "P1000", "P1111"), None)

# TMRGSORT: records of 8 bytes; operands of one group T (f16 or f32) but the count tile (u16).
_MRG_DST = _t("dst", "out", group="T")
_MRG_SRC0 = _t("src0", group="T")

# TGATHER index form: data (dst == src0 type) x index types per SoC.
_GATHER_A2A3 = tuple((t, t, i) for t in _B16 + _B32 for i in ("i32", "u32"))
_GATHER_A5 = (tuple((t, t, i) for t in _B32 for i in ("i32", "u32"))
              + tuple((t, t, i) for t in _B16 for i in ("i16", "u16", "i32", "u32"))
              + tuple((t, t, i) for t in _B8 + _FP8 for i in ("i16", "u16")))

INSTRUCTIONS = (
    Instr("TPRINT", 0x1601, "complex", "print a tile (its valid region marked) or a GM tensor",
          (Operand("src", layouts=LAYOUTS),),
          both("i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "f32"),
          pipe="ALL", domain="src", spec_ref="5.8",
          overloads=((Operand("src", kind="gm", locs=()),),),
          notes=("format of the NPU's TPRINT: a header (data type, layout, shape, valid shape), "
                 "then every element of the tile, row by row, floats as %6.2f and integers as %6d "
                 "(64-bit integers truncated to int, as the NPU's cast to int), a '|' after "
                 "the last valid column and a dashed line after the last valid row; a GM tensor "
                 "(ND, DN or NZ view) prints its view",
                 "the simulator writes it to Python's sys.stdout when the instruction runs, in "
                 "both modes and in program order within a block (blocks running in parallel "
                 "threads may interleave whole prints)",
                 "device builds need -D_DEBUG and --cce-enable-print; it inserts a PIPE_ALL "
                 "barrier (hence pipe ALL); bf16 does not print on the NPU",
                 "no CPU sim implementation (the CPU has printTile helpers instead)")),
    Instr("TMRGSORT", 0x1602, "complex",
          "merge sorted lists of 8-byte (value, index) records into one list, descending by value",
          (_MRG_DST, _t("executedNumList", "out"), _t("tmp", "tmp", group="T", region="whole"),
           _MRG_SRC0, _t("src1", group="T"), _t("src2", group="T", optional=True),
           _t("src3", group="T", optional=True)),
          both("f16", "f32"), spec_ref="5.8, 5.9 n15",
          params=(Param("exhausted", "bool", (False, True), False),),
          overloads=((_MRG_DST, _MRG_SRC0, _s("blockLen")),),
          notes=("records: f32 value + u32 index bits (2 elements); f16 value, 2 pad bytes, u32 "
                 "index (4 elements); a list of validCol elements holds validCol // 2 (f32) or "
                 "// 4 (f16) records; every tile has 1 row",
                 "multi-list form (dst, executedNumList, tmp, src0, src1[, src2[, src3]]): merges "
                 "into tmp by repeatedly taking the largest head record (ties: the lower list "
                 "index) until every list is used up or, with exhausted=True, as soon as any list "
                 "is (a list empty from the start stops it at once); then dst's valid columns are "
                 "copied from tmp (past the merged records that is tmp's earlier contents, as on "
                 "the NPU). tmp must hold all source records (tmp.Cols >= the sum of the sources' "
                 "valid columns) and dst.validCol <= tmp.Cols",
                 "executedNumList: a u16 tile whose elements 0..3 receive the records taken from "
                 "lists 0..3 (0 for absent lists) when exhausted=True; with exhausted=False the "
                 "NPU reports nothing and the tile is left unchanged",
                 "single-list form (dst, src0, blockLen): src0 holds groups of 4 sorted blocks of "
                 "blockLen elements (blockLen * size / 8 records each), each group merged into "
                 "dst at the group's offset; src0.validCol elements are written regardless of "
                 "dst's valid columns (dst.Cols must hold them); blockLen % 64 == 0 and > 0, "
                 "src0.validCol a multiple of 4 * blockLen, 1..255 groups",
                 "NaN values: ordered below every number (all NaNs equal) by pypto; undefined on "
                 "the NPU (checks='strict' reports them); -0 and +0 are equal",
                 "the NPU copies dst from tmp in whole 32-byte blocks (the tail of the last block "
                 "past dst.validCol gets tmp's bytes too); pypto writes dst's valid columns only",
                 "the CPU sim merges straight into dst (tmp untouched, dst past the merged records "
                 "untouched), writes the counts also without exhausted and takes the single-list "
                 "group count from dst.validCol")),
    Instr("TSORT32", 0x1603, "complex",
          "sort each 32-element block of every row by value, descending, emitting (value, index) records",
          (_t("dst", "out"), _t("src"), _t("idx"), _t("tmp", "tmp", region="whole", optional=True)),
          both(*((t, t, "u32", t) for t in ("f16", "f32"))), spec_ref="5.8, 5.9 n16", seed="sort",
          notes=("rows: dst.validRow (src and idx must have them; idx with one valid row is "
                 "used for every row); block b of row i holds src[i, 32b .. 32b+31] with their "
                 "indices idx[i, same columns]; its records go to dst[i, 2*32b ..] (f32: value, "
                 "idx bits) or dst[i, 4*32b ..] (f16: value, 0, idx low 16 bits, idx high 16 "
                 "bits); the index is stored as raw u32 bits",
                 "without tmp src.validCol must be a multiple of 32 (the NPU would leave a partial "
                 "tail unsorted and unwritten: pypto refuses it); with tmp the last partial block "
                 "is sorted too and pypto writes its "
                 "valid records only (the NPU also writes the block's 32 - tail padding records, "
                 "value NaN, past them); tmp is scratch and left unchanged by pypto",
                 "ties: pypto keeps the lower column first (stable); the NPU's tie order is "
                 "unspecified. NaNs sort after every number (all NaNs equal, stable); undefined "
                 "on the NPU (checks='strict' reports them); -0 and +0 are equal",
                 "dst.Cols must hold 2 (f32) or 4 (f16) elements per sorted element; dst's valid "
                 "columns are not consulted (as on the NPU)",
                 "a5's tail padding uses the tile's capacity instead of the valid width: with "
                 "src.Cols past the tail block the a5 NPU may sort stale elements into it; pypto "
                 "models the a2a3 (documented) behaviour on both",
                 "the CPU sim stores the index converted to the value type (and overlaps blocks "
                 "for 2-byte types with > 32 columns) [CONFLICT]; it takes no events")),
    Instr("TGATHER", 0x1604, "complex",
          "dst[i, j] = src0 storage[idx[i, j]], or with maskPattern keep the matching columns, packed",
          (_t("dst", "out"), _t("src0", region="whole"), _t("idx")),
          {"a2a3": _GATHER_A2A3, "a5": _GATHER_A5},
          params=(_MASK_PATTERN,), spec_ref="5.8, 5.9 n17",
          overloads=((_t("dst", "out", region="whole"), _t("src0")),),
          notes=("index form (dst, src0, idx): over dst's valid region, idx[i, j] is a linear "
                 "element offset into src0's storage (0 .. src0.Rows * src0.Cols - 1); idx must "
                 "cover dst's valid region, idx.validCol == idx.Cols and dst.validCol == dst.Cols "
                 "(the NPU's contiguity rules); a2a3 takes 4-byte indices, a5 4-byte for 4-byte "
                 "data, 2- or 4-byte for 2-byte data, 2-byte for 1-byte data",
                 "an index outside src0's storage reads other UB bytes on the NPU: pypto gives 0 "
                 "(as the CPU sim) and checks='strict' reports it",
                 "mask form (dst, src0, maskPattern=...): over src0's valid region, keeps columns "
                 "P0101: even, P1010: odd, P0001: c % 4 == 0, P0010: == 1, P0100: == 2, P1000: "
                 "== 3, P1111: all; the survivors of all rows are written densely from dst "
                 "storage offset 0 (dst.validCol == dst.Cols; dst must hold them); same data "
                 "types as the index form (dst and src0 of one type)")),
    Instr("TCI", 0x1605, "complex",
          "dst[0, k] = start + k (or start - k when descending) for k < validCol",
          (_t("dst", "out", group="T"), _s("start")),
          both("i32", "u32", "i16", "u16"), pipe="S", seed="ci",
          params=(Param("descending", "int", (0, 1), 0),), spec_ref="5.8",
          notes=("writes storage elements 0 .. validCol - 1 (row 0), whatever dst.validRow is; "
                 "the sums wrap modulo 2^bits; Cols must not be 1",
                 "start is converted to the tile's element type (it must fit it: T == DType)",
                 "the CPU sim requires Rows == 1")),
    Instr("TTRI", 0x1606, "complex",
          "triangular 0/1 mask: lower keeps 1 where j <= i + diagonal, upper where j >= i + diagonal",
          (_t("dst", "out", group="T"), _s("diagonal")),
          per_soc("i32 i16 u32 u16 f16 f32", "i32 i16 u32 u16 f16 f32 i8 u8 bf16"),
          params=(Param("isUpper", "int", (0, 1), 0),), spec_ref="5.8", seed="tri",
          notes=("over dst's valid region; row-major only; diagonal is a C++ int",
                 "a5's column index is 8 bits wide for i8/u8 tiles, so columns >= 128 there get "
                 "the NPU's wrapped comparison; pypto gives the documented mask",
                 "CPU sim types i32 i16 u32 u16 f16 f32")),
    Instr("TPARTADD", 0x1607, "complex",
          "dst = src0 + src1 where both are valid, else whichever source is valid there",
          (_t("dst", "out", "T"), _t("src0", group="T"), _t("src1", group="T")), _PART,
          spec_ref="5.8", seed="partadd",
          notes=(_PART_RULE, _PART_ORDER,
                 "floats: f16/bf16 computed in f32, rounded once; integers wrap",
                 "CPU sim writes 0 where neither source is valid; types i32 i16 f16 f32")),
    Instr("TPARTMAX", 0x1608, "complex",
          "dst = max(src0, src1) where both are valid, else whichever source is valid there",
          (_t("dst", "out", "T"), _t("src0", group="T"), _t("src1", group="T")), _PART,
          spec_ref="5.8", seed="partmax",
          notes=("a2a3: " + _PART_RULE, _PART_ORDER,
                 "a5: both sources' valid regions fit inside dst's; dst's valid region is filled "
                 "with the pad -inf (integers: the type's minimum), src0 copied over its region, "
                 "then dst = max(dst, src1) over src1's; so where neither is valid dst gets the pad; "
                 "a zero-sized valid region anywhere writes nothing",
                 "NaN propagates (quieted), as TMAX",
                 "CPU sim writes 0 where neither source is valid (std::max); types i32 i16 f16 f32")),
    Instr("TPARTMIN", 0x1609, "complex",
          "dst = min(src0, src1) where both are valid, else whichever source is valid there",
          (_t("dst", "out", "T"), _t("src0", group="T"), _t("src1", group="T")), _PART,
          spec_ref="5.8", seed="partmin",
          notes=("a2a3: " + _PART_RULE, _PART_ORDER,
                 "a5: as TPARTMAX with the pad +inf (integers: the type's maximum) and min",
                 "NaN propagates (quieted), as TMIN",
                 "CPU sim writes 0 where neither source is valid (std::min); types i32 i16 f16 f32")),
    Instr("TPARTMUL", 0x160A, "complex",
          "dst = src0 * src1 where both are valid, else whichever source is valid there",
          (_t("dst", "out", "T"), _t("src0", group="T"), _t("src1", group="T")), _PART,
          spec_ref="5.8", seed="partmul",
          notes=(_PART_RULE, _PART_ORDER,
                 "floats: f16/bf16 computed in f32, rounded once; integers wrap",
                 "no CPU sim implementation")),
    Instr("TGATHERB", 0x160B, "complex",
          "for each 32-byte block k of dst row i, copy 32 bytes from src's bytes + offset[i, k]",
          (_t("dst", "out"), _t("src", layouts=("ND", "DN"), region="whole"), _t("offset")),
          both(*((t, t, "u32") for t in _B8 + _B16 + _B32)), spec_ref="5.8",
          notes=("offsets are u32 byte offsets into src's storage (any alignment in pypto); "
                 "offset must cover dst.validRow rows and one column per block; dst.validCol * "
                 "sizeof(T) must be a multiple of 32 bytes",
                 "a block whose 32 bytes are not all inside src's storage is not copied (dst keeps "
                 "its bytes), as the CPU sim; the NPU reads other UB bytes; checks='strict' reports it",
                 "the NPU gathers whole 256-byte repeats (writing past dst.validCol within the "
                 "repeat); pypto writes dst's valid region only")),
    Instr("TSCATTER", 0x160C, "complex", "dst storage[idx[i, j]] = src[i, j]",
          (_t("dst", "inout", region="whole"), _t("src"), _t("idx")),
          both(*(tuple((t, t, i) for t in _B32 for i in ("i32", "u32"))
                 + tuple((t, t, i) for t in _B16 + _B8 for i in ("i16", "u16")))),
          domain="idx", spec_ref="5.8, 5.9 n18",
          notes=("over idx's valid region (src must cover it); idx[i, j] is a flat element offset "
                 "into dst's storage (the NPU); the doc and the CPU sim treat it as a row number "
                 "(dst[idx[i, j], j] = src[i, j]) [CONFLICT]",
                 "index width: 4-byte data with 4-byte idx, 2-byte with 2-byte, 1-byte with 2-byte",
                 "an index outside dst's storage writes other UB bytes on the NPU: pypto skips "
                 "the element and checks='strict' reports it",
                 "duplicates: the last writer in row-major order wins (checks='strict' reports them)")),
    Instr("TQUANT", 0x160D, "complex",
          "dst = saturate(rint(src * scale[i] (+ offset[i]))) into int8 (sym) or uint8 (asym)",
          (_t("dst", "out"), _t("src", "inout"), _t("scale", layouts=("DN",)),
           _t("offset", layouts=("DN",), optional=True)),
          both(("i8", "f32", "f32", None), ("u8", "f32", "f32", "f32")),
          params=(Param("quantType", "QuantType", ("INT8_SYM", "INT8_ASYM", "MXFP8"), None),),
          spec_ref="5.8",
          notes=("INT8_SYM: f32 -> i8 without offset; INT8_ASYM: f32 -> u8 with offset; quantType "
                 "is required",
                 "over src's valid region (dst's must equal it); scale and offset are DN (R, 1) "
                 "columns with src's valid rows: x = f32(src * scale[i]) (+ offset[i], a second "
                 "f32 rounding), rounded to nearest even, saturated (NaN gives 0, checks='strict' "
                 "reports NaN and inf inputs)",
                 "a2a3 overwrites src: afterwards src's valid region holds the i32 results "
                 "(saturated to the i32 range), then, viewed as f16 with src's row stride in "
                 "halves, element (i, j) is overwritten with that value as f16 (clamped to "
                 "+-65504); a5 leaves src unchanged",
                 "QuantType enumerators differ per SoC (a2a3 INT8_SYM=0, INT8_ASYM=1; a5 MXFP8=0, "
                 "INT8_SYM=1, INT8_ASYM=2); emitted by name",
                 "a5 MXFP8 overloads (exp, max, scaling tiles) are not described by this entry and "
                 "not simulated",
                 "no CPU sim implementation")),
)
