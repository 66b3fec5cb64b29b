"""Where pto-isa's CPU backend (--backend npu-cpusim) differs from the NPU on the memory and
data-movement cases of conformance/test_memory.py (each explained in docs/fidelity.md, Part 5,
merged into docs/fidelity.md). Cases that would abort the process natively (pto-isa's CPU TMOV
and TEXTRACT assert, gather indices are not bounds-checked) are not collected there at all
(test_memory._sim_only)."""
from __future__ import annotations

from .deviations import FP8, H_FP8, H_PAD, PAD, Deviation

NZ = "pto-isa's CPU TLOAD/TSTORE take ND and DN global tensors only: a kernel with an NZ view does not compile"
ATOMIC = ("pto-isa's CPU TSTORE ignores AtomicType::AtomicAdd and overwrites GM; the NPU adds the tile "
          "into GM")
PREFETCH = ("pto-isa's CPU TPREFETCH copies gm[r * Cols + c] into the tile; pypto leaves the tile as it "
            "was (the NPU's contents are unspecified)")
FILLPAD = ("pto-isa's CPU TFILLPAD pads the whole dst capacity outside src's valid region (INPLACE copies "
           "src too, Min/Max are numeric_limits); the NPU pads right of src.validCol and rows up to "
           "dst.validRow only")
TINSERT = "pto-isa's CPU backend has no TINSERT: a kernel using it does not compile"
MOVES = ("pto-isa's CPU TMOV copies exactly the src valid region (a2a3 copies whole 32-byte blocks) and "
         "its TTRANS iterates src's valid region (a5 transposes the whole static shape)")
RESHAPE = ("pto-isa's CPU TRESHAPE copies the bytes into dst's own storage and refuses mixed "
           "integer/float types; the NPU aliases dst to src's address")

H_NZ, H_ATOMIC, H_PREFETCH, H_FILLPAD, H_TINSERT, H_MOVES, H_RESHAPE = (
    "NZ global tensors", "TSTORE atomic add", "TPREFETCH contents", "TFILLPAD regions",
    "TINSERT between Vec tiles", "TMOV and TTRANS regions", "TRESHAPE aliasing")

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation("test_tload_tstore_nd", "", PAD, H_PAD),
    Deviation("test_tload_tstore_dn", "", PAD, H_PAD),
    Deviation("test_tload_tstore_property", "", PAD, H_PAD, strict=False),
    Deviation("test_tload_pad_sweep", r"e4m3|e5m2", FP8, H_FP8),
    Deviation("test_tload_pad_sweep", "", PAD, H_PAD),
    Deviation("test_nz_view_roundtrip", "", NZ, H_NZ),
    Deviation("test_tstore_atomic_add", "", ATOMIC, H_ATOMIC),
    Deviation("test_tstore_atomic_add_accumulates_over_blocks", "", ATOMIC, H_ATOMIC),
    Deviation("test_tprefetch_leaves_the_tile", "", PREFETCH, H_PREFETCH),
    Deviation("test_mgather", r"e4m3|e5m2", FP8, H_FP8),
    Deviation("test_mscatter", r"e4m3|e5m2", FP8, H_FP8),
    Deviation("test_tfillpad_family", r"e4m3|e5m2", FP8, H_FP8),
    Deviation("test_tfillpad_family", "", FILLPAD, H_FILLPAD),
    Deviation("test_tfillpad_pad_sweep", r"e4m3|e5m2", FP8, H_FP8),
    Deviation("test_tfillpad_pad_sweep", "", FILLPAD, H_FILLPAD),
    Deviation("test_tfillpad_property", "", FILLPAD, H_FILLPAD, strict=False),
    Deviation("test_tinsert", "", TINSERT, H_TINSERT),
    Deviation("test_vec_moves", "", MOVES, H_MOVES),
    Deviation("test_treshape_aliases", "", RESHAPE, H_RESHAPE),
    Deviation("test_treshape_chain_mixed_sizes", "", RESHAPE, H_RESHAPE),
)

__all__ = ["DEVIATIONS"]
