"""5.4 Axis reductions and row/column broadcasts (23 + TROWPROD).

All tiles are Vec. Reductions iterate the source valid region and return early when it is empty;
the NPU asserts src.validRow == dst.validRow (row ops) or src.validCol == dst.validCol (column
ops). Broadcasts iterate the destination valid region. ``v_i`` is src1's value for row i (one per
row), ``v_j`` src1's value for column j (src1[0, j]).
A param default of None means PTO has no single default for it (see the notes).
"""
from ..schema import DST, SRC, SRC0, SRC1, TMP, Instr, Param, both, per_soc

_F = ("f16", "f32")
_COL_A2A3 = "f16 f32 i16 i32"
_COL_A5 = "f16 f32 i16 i32 i8 u8 u16 u32 bf16"
_EXPAND = ("i8", "u8", "i16", "u16", "i32", "u32", "f16", "bf16", "f32")

_ROW_NOTE = ("dst is preferably a DN column (R x 1); a2a3 also accepts ND with validCol 1",)
_ROW_EXPAND_NOTES = (
    "src1 forms: a DN column vector (one value per row), or a row-major tile whose rows are "
    "pre-broadcast 32-byte blocks (a2a3); the CPU sim picks src1[0, i] if src1.validRow == 1, "
    "src1[i, 0] if src1.validCol == 1, else storage element i, so the block form is wrong there",
    "a2a3 writes hidden UB scratch at bytes [188416, 196608)",
)


def _row_expand(name: str, opcode: int, summary: str, *notes: str) -> Instr:
    return Instr(name, opcode, "reduce_expand", summary, (DST, SRC0, SRC1), both(*_F),
                 spec_ref="5.4, 5.9 n10", notes=_ROW_EXPAND_NOTES + notes, scratch=("a2a3",))


def _col_expand(name: str, opcode: int, summary: str, *notes: str) -> Instr:
    return Instr(name, opcode, "reduce_expand", summary, (DST, SRC0, SRC1), both(*_F),
                 spec_ref="5.4", notes=notes)


INSTRUCTIONS = (
    Instr("TROWSUM", 0x1201, "reduce_expand", "dst[i, 0] = sum over j of src[i, j]",
          (DST, SRC, TMP), both(*_F), domain="src", spec_ref="5.4, 5.9 n9, Addendum", seed="rowsum",
          notes=_ROW_NOTE + (
              "NPU reduces each 256-byte repeat in hardware and adds the repeats in the element "
              "type; the CPU sim accumulates f16 rows in f32 (model the NPU)",)),
    Instr("TROWPROD", 0x1202, "reduce_expand", "dst[i, 0] = product over j of src[i, j]",
          (DST, SRC, TMP), both(*_F), domain="src", spec_ref="5.4",
          notes=_ROW_NOTE + ("a2a3: tmp has the same shape as src",
                             "no CPU sim implementation")),
    Instr("TROWMAX", 0x1203, "reduce_expand", "dst[i, 0] = max over j of src[i, j]",
          (DST, SRC, TMP), both(*_F), domain="src", spec_ref="5.4, Addendum",
          notes=_ROW_NOTE + ("a5 starts from -max-finite, so a row of -inf gives -FLT_MAX",)),
    Instr("TROWMIN", 0x1204, "reduce_expand", "dst[i, 0] = min over j of src[i, j]",
          (DST, SRC, TMP), both(*_F), domain="src", spec_ref="5.4, Addendum",
          notes=_ROW_NOTE + ("a5 starts from +max-finite, so a row of +inf gives FLT_MAX",)),
    Instr("TCOLSUM", 0x1205, "reduce_expand", "dst[0, j] = sum over i of src[i, j]",
          (DST, SRC, TMP), per_soc(_COL_A2A3, _COL_A5), domain="src",
          params=(Param("isBinary", "bool", (False, True), None),),
          spec_ref="5.4, 5.9 n9, Addendum",
          notes=("accumulates in the element type; isBinary picks pairwise (tree) instead of "
                 "sequential adds, and the order differs per SoC: a2a3 sequential, or pairwise with "
                 "the odd row added to slot 0; a5 r0 + (r1 + r2) + ..., or pairwise with the odd row "
                 "in the last slot (f16 column [2048, 1, 1, 1] sums to 2048, 2050, 2052, 2050)",
                 "tmp has the element type; the two-operand form without tmp/isBinary exists only "
                 "in the CPU sim",
                 "a5 dtypes from the implementation's column-reduce check (the doc gives a2a3 only)")),
    Instr("TCOLPROD", 0x1206, "reduce_expand", "dst[0, j] = product over i of src[i, j]",
          (DST, SRC), per_soc(_COL_A2A3, "f16 f32 bf16 i16 u16 i32 u32"), domain="src",
          spec_ref="5.4", notes=("no CPU sim implementation",)),
    Instr("TCOLMAX", 0x1207, "reduce_expand", "dst[0, j] = max over i of src[i, j]",
          (DST, SRC), per_soc(_COL_A2A3, _COL_A5), domain="src", spec_ref="5.4",
          notes=("CPU sim: f16/f32 only, dst.Rows == 1 and the same Cols as src",)),
    Instr("TCOLMIN", 0x1208, "reduce_expand", "dst[0, j] = min over i of src[i, j]",
          (DST, SRC), per_soc(_COL_A2A3, _COL_A5), domain="src", spec_ref="5.4"),
    Instr("TROWEXPAND", 0x1209, "reduce_expand", "dst[i, j] = src[i, 0]", (DST, SRC),
          both(*_EXPAND), spec_ref="5.4"),
    _row_expand("TROWEXPANDADD", 0x120A, "dst[i, j] = src0[i, j] + v_i"),
    _row_expand("TROWEXPANDSUB", 0x120B, "dst[i, j] = src0[i, j] - v_i"),
    _row_expand("TROWEXPANDMUL", 0x120C, "dst[i, j] = src0[i, j] * v_i"),
    _row_expand("TROWEXPANDDIV", 0x120D, "dst[i, j] = src0[i, j] / v_i",
                "CPU sim skips the element (dst unchanged) where v_i is 0"),
    _row_expand("TROWEXPANDMAX", 0x120E, "dst[i, j] = max(src0[i, j], v_i)"),
    _row_expand("TROWEXPANDMIN", 0x120F, "dst[i, j] = min(src0[i, j], v_i)"),
    _row_expand("TROWEXPANDEXPDIF", 0x1210, "dst[i, j] = exp(src0[i, j] - v_i)"),
    Instr("TCOLEXPAND", 0x1211, "reduce_expand", "dst[i, j] = src[0, j]", (DST, SRC),
          both(*_EXPAND), spec_ref="5.4",
          notes=("the doc gives no dtype list; the NPU implementations accept any 1-, 2- or 4-byte "
                 "type with dst == src, so the TROWEXPAND list is used",)),
    _col_expand("TCOLEXPANDADD", 0x1212, "dst[i, j] = src0[i, j] + v_j"),
    _col_expand("TCOLEXPANDSUB", 0x1213, "dst[i, j] = src0[i, j] - v_j"),
    _col_expand("TCOLEXPANDMUL", 0x1214, "dst[i, j] = src0[i, j] * v_j"),
    _col_expand("TCOLEXPANDDIV", 0x1215, "dst[i, j] = src0[i, j] / v_j",
                "CPU sim skips the element (dst unchanged) where v_j is 0"),
    _col_expand("TCOLEXPANDMAX", 0x1216, "dst[i, j] = max(src0[i, j], v_j)"),
    _col_expand("TCOLEXPANDMIN", 0x1217, "dst[i, j] = min(src0[i, j], v_j)"),
    _col_expand("TCOLEXPANDEXPDIF", 0x1218, "dst[i, j] = exp(src0[i, j] - v_j)"),
)
