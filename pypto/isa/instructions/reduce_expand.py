"""5.4 Axis reductions and row/column broadcasts (23 + TROWPROD).

All tiles are Vec. Reductions iterate the source valid region; the NPU asserts src.validRow ==
dst.validRow (row ops) or src.validCol == dst.validCol (column ops), which pypto checks at trace
time when both are static and at run time otherwise. Broadcasts iterate the destination valid
region. ``v_i`` is src1's value for row i (one per row), ``v_j`` src1's value for column j
(src1[0, j]). The order and rounding models are pypto's reading of pto-isa's a2a3 / a5 code
(pto-isa-semantics 5.4, 5.9 n9 / n10, Addendum "Reductions"); the units (pypto/units/reduce_*.py,
expand_*.py) and conformance/ref_reduce.py state them in full.
"""
from ..schema import DST, SRC, SRC0, SRC1, TMP, Instr, Operand, Param, both, per_soc

_F = ("f16", "f32")
_COL_A2A3 = "f16 f32 i16 i32"
_COL_A5 = "f16 f32 i16 i32 i8 u8 u16 u32 bf16"
_EXPAND = ("i8", "u8", "i16", "u16", "i32", "u32", "f16", "bf16", "f32")

# layouts the NPU implementations accept (their static_asserts): sources of a reduction and every
# broadcast destination are row-major ND; a row reduction's dst is ND or a DN column (Cols == 1)
_ND = ("ND",)
SRC_ND = Operand("src", layouts=_ND)
DST_ND = Operand("dst", role="out", layouts=_ND)
SRC0_ND = Operand("src0", layouts=_ND)
SRC1_ND = Operand("src1", layouts=_ND)
TMP_ND = Operand("tmp", role="tmp", layouts=_ND, region="whole", optional=True)

_EMPTY = ("an empty source valid region writes nothing (pypto's choice: the NPU asserts a "
          "non-empty region in debug builds; in release builds a5 row reductions then write their "
          "start value and a2a3 TROWPROD writes 1 per row when validCol is 0)")
_ROW_NOTES = (
    "dst is an R x 1 column: DN with Cols == 1, or ND with validCol 1 (both SoCs' static checks "
    "accept either); src is ND",
    _EMPTY,
)
_MINMAX = ("NaN propagates (a quiet NaN comes out, its payload unspecified; pypto keeps the first "
           "NaN in row-major order), as TMAX/TMIN; which zero max/min(+0, -0) gives is unspecified "
           "(pypto keeps the earlier one)")
_COL_ORDER = ("order: a2a3 r0 op r1 op r2 ... left to right; a5 r0 op (r1 op r2) op (r3 op r4) "
              "... (op r_last when the row count is even); floats compute in f32 and round to the "
              "element type after every op, integers wrap modulo 2^w")
_ROW_EXPAND_NOTES = (
    "src1 forms (5.9 n10): a DN column vector (Cols == 1, validCol 1): v_i = src1[i, 0]; or an ND "
    "tile of one 32-byte block per row (Cols == validCol == 32 / sizeof(T)): element (i, j) uses "
    "src1[i, j % (32 / sizeof(T))], so a block holding one value eight (f32) or sixteen (f16) times "
    "broadcasts it; src1.validRow == dst.validRow",
    "src0 is the full tile: its valid region equals dst's (the NPU takes the vector from src0 "
    "instead when it does not; pypto does not model that swapped form)",
    "the CPU sim picks src1[0, i] if src1.validRow == 1, src1[i, 0] if src1.validCol == 1, else "
    "storage element i, so the block form is wrong there",
    "a2a3 writes hidden UB scratch at bytes [188416, 196608) for the column-vector form (pypto "
    "declares it for both forms)",
)
_COL_EXPAND_NOTES = (
    "src0 has dst's tile type (the C++ takes them as one type): same shape, layout and valid "
    "declaration; src1 is ND and row 0 is read: src1's valid region covers (1, dst.validCol)",
)
_DIV = "division by zero follows IEEE (x/0 = +-inf, 0/0 = NaN); the CPU sim skips the element"
_EXPDIF = ("src0 - v is rounded to the element type, then e**x is computed in double and rounded "
           "once (a2a3 runs TSUB then TEXP; a5 f16 vsub then vexp; a5 f32 uses a fused vexpdif "
           "whose internal precision is undocumented); the NPU's exp is a few ulp off")


def _row_expand(name: str, opcode: int, op: str, summary: str, *notes: str) -> Instr:
    return Instr(name, opcode, "reduce_expand", summary, (DST_ND, SRC0_ND, SRC1), both(*_F),
                 spec_ref="5.4, 5.9 n10", seed=f"rowexpand{op}", notes=_ROW_EXPAND_NOTES + notes,
                 scratch=("a2a3",))


def _col_expand(name: str, opcode: int, op: str, summary: str, *notes: str) -> Instr:
    return Instr(name, opcode, "reduce_expand", summary, (DST_ND, SRC0_ND, SRC1_ND), both(*_F),
                 spec_ref="5.4", seed=f"colexpand{op}", notes=_COL_EXPAND_NOTES + notes)


INSTRUCTIONS = (
    Instr("TROWSUM", 0x1201, "reduce_expand", "dst[i, 0] = sum over j of src[i, j]",
          (DST, SRC_ND, TMP), both(*_F), domain="src", spec_ref="5.4, 5.9 n9, Addendum", seed="rowsum",
          notes=_ROW_NOTES + (
              "NPU reduces each 256-byte repeat in hardware and adds the repeats in the element "
              "type; the CPU sim accumulates f16 rows in f32 (model the NPU)",)),
    Instr("TROWPROD", 0x1202, "reduce_expand", "dst[i, 0] = product over j of src[i, j]",
          (DST, SRC_ND, TMP), both(*_F), domain="src", spec_ref="5.4", seed="rowprod",
          notes=_ROW_NOTES + (
              "a2a3: 32-byte lanes (8 f32 / 16 f16) start at 1 and multiply each block in the element "
              "type, then the lanes are multiplied left to right in f32 on the scalar unit and "
              "rounded once; a5: 256-byte lanes (64 / 128) start at 1 and multiply each repeat in the "
              "element type, then fold in halves (lane i times lane i + L/2) in the element type",
              "a2a3: tmp has the same shape as src", "no CPU sim implementation")),
    Instr("TROWMAX", 0x1203, "reduce_expand", "dst[i, 0] = max over j of src[i, j]",
          (DST, SRC_ND, TMP), both(*_F), domain="src", spec_ref="5.4, Addendum", seed="rowmax",
          notes=_ROW_NOTES + (
              "a5 starts from -max-finite, so a row of -inf gives -FLT_MAX (f16: -65504); a2a3 "
              "reduces the elements only, so it gives -inf", _MINMAX)),
    Instr("TROWMIN", 0x1204, "reduce_expand", "dst[i, 0] = min over j of src[i, j]",
          (DST, SRC_ND, TMP), both(*_F), domain="src", spec_ref="5.4, Addendum", seed="rowmin",
          notes=_ROW_NOTES + (
              "a5 starts from +max-finite, so a row of +inf gives FLT_MAX (f16: 65504); a2a3 "
              "reduces the elements only, so it gives +inf", _MINMAX)),
    Instr("TCOLSUM", 0x1205, "reduce_expand", "dst[0, j] = sum over i of src[i, j]",
          (DST_ND, SRC_ND, TMP_ND), per_soc(_COL_A2A3, _COL_A5), domain="src",
          params=(Param("isBinary", "bool", (False, True), False),),
          spec_ref="5.4, 5.9 n9, Addendum", seed="colsum",
          notes=("accumulates in the element type (floats: each add in f32, rounded to the element "
                 "type; integers wrap); isBinary picks pairwise adds instead of sequential ones. "
                 "a2a3: sequential r0 + r1 + ...; pairwise: t[i] = r[2i] + r[2i+1], an odd last row "
                 "added to t[0], then the same on t until one row is left (the odd one again into "
                 "t[0]). a5: r0 + (r1 + r2) + (r3 + r4) ... (+ r_last); pairwise: t[i] = r[2i] + "
                 "r[2i+1] with an odd last row added to the last t, then log2 rounds of t[j] = "
                 "t[2j] + t[2j+1] with an odd t added to the new last one. f16 column "
                 "[2048, 1, 1, 1]: 2048, 2050 (a2a3), 2052, 2050 (a5)",
                 "isBinary defaults to False in pypto; tmp may be left out when isBinary is False "
                 "(the sequential adds do not use it: pypto emits src as the NPU's tmp argument; "
                 "the two-operand TCOLSUM(dst, src) exists only in the CPU sim, which adds onto 0 "
                 "sequentially); tmp has the element type, src.validCol <= tmp.Cols and tmp holds "
                 "at least src.validRow / 2 rows",
                 "a5 isBinary with one valid row reads and writes the tmp row before tmp (an NPU "
                 "defect): pypto gives dst = src row 0 and reports it under checks='strict'",
                 "the NPU's copy of the first row also writes dst up to the end of its last 32-byte "
                 "block; pypto writes only dst's valid columns",
                 _EMPTY, "a5 dtypes from the implementation's column-reduce check (the doc gives "
                 "a2a3 only)")),
    Instr("TCOLPROD", 0x1206, "reduce_expand", "dst[0, j] = product over i of src[i, j]",
          (DST_ND, SRC_ND), per_soc(_COL_A2A3, "f16 f32 bf16 i16 u16 i32 u32"), domain="src",
          spec_ref="5.4", seed="colprod",
          notes=(_COL_ORDER, _EMPTY, "no CPU sim implementation")),
    Instr("TCOLMAX", 0x1207, "reduce_expand", "dst[0, j] = max over i of src[i, j]",
          (DST_ND, SRC_ND), per_soc(_COL_A2A3, _COL_A5), domain="src", spec_ref="5.4", seed="colmax",
          notes=(_COL_ORDER, _MINMAX, _EMPTY,
                 "CPU sim: f16/f32 only, dst.Rows == 1 and the same Cols as src")),
    Instr("TCOLMIN", 0x1208, "reduce_expand", "dst[0, j] = min over i of src[i, j]",
          (DST_ND, SRC_ND), per_soc(_COL_A2A3, _COL_A5), domain="src", spec_ref="5.4", seed="colmin",
          notes=(_COL_ORDER, _MINMAX, _EMPTY)),
    Instr("TROWEXPAND", 0x1209, "reduce_expand", "dst[i, j] = src[i, 0]", (DST_ND, SRC),
          both(*_EXPAND), spec_ref="5.4", seed="rowexpand",
          notes=("src is ND or a DN column (Cols == 1); src.validRow == dst.validRow; a5 requires a "
                 "static src.validCol of 1 (or a dynamic one)",
                 "a2a3 8-bit types: pto-isa's a2a3 code moves them as 16-bit pairs (dst[i, j] gets "
                 "src[i, j % 2], for a DN src src[j % 2, 0], and an odd valid width writes one byte "
                 "more), which looks like a defect; pypto gives the ISA's src[i, 0], which the NPU "
                 "matches when src's first two columns (DN: rows) hold the same value",
                 "a2a3 and a5 also have a static fast path (src (1, M) or (M, 1) to dst (M, 32 / "
                 "sizeof(T))) with the same result")),
    _row_expand("TROWEXPANDADD", 0x120A, "add", "dst[i, j] = src0[i, j] + v_i"),
    _row_expand("TROWEXPANDSUB", 0x120B, "sub", "dst[i, j] = src0[i, j] - v_i"),
    _row_expand("TROWEXPANDMUL", 0x120C, "mul", "dst[i, j] = src0[i, j] * v_i"),
    _row_expand("TROWEXPANDDIV", 0x120D, "div", "dst[i, j] = src0[i, j] / v_i", _DIV),
    _row_expand("TROWEXPANDMAX", 0x120E, "max", "dst[i, j] = max(src0[i, j], v_i)", _MINMAX),
    _row_expand("TROWEXPANDMIN", 0x120F, "min", "dst[i, j] = min(src0[i, j], v_i)", _MINMAX),
    _row_expand("TROWEXPANDEXPDIF", 0x1210, "expdif", "dst[i, j] = exp(src0[i, j] - v_i)", _EXPDIF),
    Instr("TCOLEXPAND", 0x1211, "reduce_expand", "dst[i, j] = src[0, j]", (DST_ND, SRC_ND),
          both(*_EXPAND), spec_ref="5.4", seed="colexpand",
          notes=("the doc gives no dtype list; the NPU implementations accept any 1-, 2- or 4-byte "
                 "type with dst == src, so the TROWEXPAND list is used",
                 "src.validCol == dst.validCol (the NPU asserts it) and src has a valid row",
                 "a2a3 copies whole 32-byte blocks of src row 0, so it also writes dst up to the end "
                 "of each row's last block; pypto writes only dst's valid region")),
    _col_expand("TCOLEXPANDADD", 0x1212, "add", "dst[i, j] = src0[i, j] + v_j"),
    _col_expand("TCOLEXPANDSUB", 0x1213, "sub", "dst[i, j] = src0[i, j] - v_j"),
    _col_expand("TCOLEXPANDMUL", 0x1214, "mul", "dst[i, j] = src0[i, j] * v_j"),
    _col_expand("TCOLEXPANDDIV", 0x1215, "div", "dst[i, j] = src0[i, j] / v_j", _DIV),
    _col_expand("TCOLEXPANDMAX", 0x1216, "max", "dst[i, j] = max(src0[i, j], v_j)", _MINMAX),
    _col_expand("TCOLEXPANDMIN", 0x1217, "min", "dst[i, j] = min(src0[i, j], v_j)", _MINMAX),
    _col_expand("TCOLEXPANDEXPDIF", 0x1218, "expdif", "dst[i, j] = exp(src0[i, j] - v_j)", _EXPDIF),
)
