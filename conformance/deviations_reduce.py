"""Where pto-isa's CPU backend (``--backend npu-cpusim``) differs from the NPU on the axis
reductions and broadcasts (conformance/test_reduce.py); each entry names a heading of
docs/fidelity.md, Part 4. The shared kernels of test_reduce.py leave
out what the CPU backend does not implement (TROWPROD, TCOLPROD, TCOLSUM's isBinary form), so the
other instructions of a family still run there.
"""
from __future__ import annotations

from .deviations import BF16, H_BF16, H_ROWSUM, ROWSUM, Deviation

MINMAX = ("pto-isa's CPU TROWMAX/TROWMIN/TCOLMAX/TCOLMIN and the broadcast max/min use std::max / "
          "std::min or a '>' comparison: a NaN is dropped unless it comes first; the NPU propagates "
          "it. a5 TROWMAX/TROWMIN start from -/+max finite (a row of -inf gives -FLT_MAX), the CPU "
          "from the first element")
EMPTY = ("pto-isa's CPU row / column reductions write for an empty source region (TROWMAX/TROWMIN: "
         "element 0 of each row; TCOLSUM: 0; TCOLMAX: row 0); the NPU asserts a non-empty region "
         "and pypto writes nothing")
COLSUM = ("pto-isa's CPU TCOLSUM has only the two-operand form: one sequential sum onto +0 in the "
          "element type; the NPU's add order depends on the SoC and isBinary (a5 r0 + (r1 + r2) + "
          "..., pairwise trees) and a -0.0 column stays -0.0")
COLTYPES = ("pto-isa's CPU TCOLSUM and TCOLMAX take f16 / f32 only: kernels with integer tiles do "
            "not compile")
NOCPU = "pto-isa's CPU backend has no TROWPROD / TCOLPROD: kernels using them do not compile"
DIV = ("pto-isa's CPU TROWEXPANDDIV / TCOLEXPANDDIV skip elements whose divisor is 0 (dst keeps its "
       "old value); the NPU divides (IEEE +-inf / NaN)")
BLOCK = ("pto-isa's CPU TROWEXPAND<op> takes storage element i of src1 for row i unless src1 has one "
         "valid row or column, so the NPU's src1 of one 32-byte block per row is read wrongly")

H_MINMAX, H_EMPTY, H_COLSUM, H_COLTYPES, H_NOCPU, H_DIV, H_BLOCK = (
    "NaN and start values in row/column max/min", "Empty reduction regions", "TCOLSUM order",
    "Column reductions of integers", "TROWPROD and TCOLPROD", "Division by zero in the broadcasts",
    "The 32-byte-block src1 of TROWEXPAND<op>")

DEVIATIONS: tuple[Deviation, ...] = (
    # row reductions
    Deviation("test_rowred_specials", "", MINMAX, H_MINMAX),
    Deviation("test_rowred_hand_rows", "", MINMAX, H_MINMAX),
    Deviation("test_rowred_empty_region", "", EMPTY, H_EMPTY),
    Deviation("test_rowred_property", "", MINMAX, H_MINMAX, strict=False),
    # column reductions: integers do not build; bf16 is IEEE half; a5 adds in another order
    Deviation("test_colred_regions", r"-(i|u)\d+\]", COLTYPES, H_COLTYPES),
    Deviation("test_colred_regions", r"-a5-bf16\]", BF16, H_BF16),
    Deviation("test_colred_regions", r"-a5-f(16|32)\]", COLSUM, H_COLSUM),
    Deviation("test_colred_specials", "", MINMAX, H_MINMAX),
    Deviation("test_colsum_f16_add_order", "", COLSUM, H_COLSUM),
    Deviation("test_colred_empty_region", "", EMPTY, H_EMPTY),
    Deviation("test_colred_property", "", COLSUM, H_COLSUM, strict=False),
    Deviation("test_colsum_int_binary", "", COLTYPES, H_COLTYPES),
    # broadcasts
    Deviation("test_rowexpand_ops", r"-block\]", BLOCK, H_BLOCK),
    Deviation("test_rowexpand_ops_specials", "", DIV, H_DIV),
    Deviation("test_colexpand_ops_specials", "", DIV, H_DIV),
    Deviation("test_expand_ops_property", "", MINMAX, H_MINMAX, strict=False),
    # seed level
    Deviation("test_seed_softmax_chain", "", ROWSUM, H_ROWSUM),
    Deviation("test_seed_colsum", r"a5-|a2a3-npu-cpusim-True", COLSUM, H_COLSUM),
    Deviation("test_seed_forms", r"-(rowprod|colprod)-", NOCPU, H_NOCPU),
    Deviation("test_seed_forms", r"-colmax-", COLTYPES, H_COLTYPES),
)
