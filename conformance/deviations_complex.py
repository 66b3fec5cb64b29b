"""Where pto-isa's CPU backend (npu-cpusim) differs from the NPU on the 5.8 cases of
conformance/test_complex.py; each entry names its heading in docs/fidelity.md, Part 6."""
from __future__ import annotations

from .deviations import BF16, FP8, H_BF16, H_FP8, MINMAX, H_MINMAX, Deviation

SORT = "pto-isa's CPU TSORT32 has only the (dst, src, idx) form: the NPU's form with a tmp tile for a partial last block does not compile"
SCATTER = "pto-isa's CPU TSCATTER takes one tile type for dst and src; the NPU's dst larger than src (the point of a scatter) does not compile"
TCI = "pto-isa's CPU TCI static_asserts a one-row tile; the NPU fills every row"
MISSING = "pto-isa's CPU backend has no TPARTMUL, TQUANT or TPRINT (not declared): kernels using them do not compile"
MRG_TMP = "pto-isa's CPU TMRGSORT merges straight into dst and ignores tmp; the NPU merges into tmp and copies dst's valid region from tmp, so with exhausted the records past the merge hold tmp's contents"
PART_EMPTY = "pto-isa's CPU TPARTMAX/TPARTMIN write 0 where neither source is valid; a5's return without writing when a source has no valid rows"

H_SORT, H_SCATTER, H_TCI, H_MISSING = ("TSORT32 with a tmp tile", "TSCATTER tile types",
                                       "TCI of several rows", "No TPARTMUL, TQUANT or TPRINT on the CPU backend")
H_MRG_TMP, H_PART_EMPTY = "TMRGSORT without tmp", "TPARTMAX/TPARTMIN with an empty source"
NARROW = ("pto-isa's CPU TGATHER takes only 4-byte indices and 2- or 4-byte data, its TTRI refuses "
          "1-byte types and its TPARTADD/TPARTMAX/TPARTMIN refuse 1-byte and unsigned 16/32-bit types: "
          "kernels with a5's wider dtype sets do not compile")
SORT_IDX = ("pto-isa's CPU TSORT32 stores each record's index converted to the value type; the NPU "
            "stores the uint32 index bits")
MRG_BLOCK = ("pto-isa's CPU TMRGSORT (one source, blockLen) merges over dst's valid columns; the NPU "
             "merges src's valid columns and leaves the rest of dst")
H_NARROW, H_SORT_IDX, H_MRG_BLOCK = ("Narrower dtype sets on the CPU backend", "TSORT32 index bits",
                                     "TMRGSORT block form region")

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation("test_family_tsort32", "", SORT, H_SORT),
    Deviation("test_tsort32_index_bits_and_ties", "", SORT, H_SORT),
    Deviation("test_tsort32_runtime_errors", "", SORT, H_SORT),
    Deviation("test_seed_sort", "", SORT, H_SORT),
    Deviation("test_family_gather", r"-(e4m3|e5m2)\]", FP8, H_FP8),
    Deviation("test_family_gather", r"^(?!.*-(e4m3|e5m2)\]).*$", SCATTER, H_SCATTER),
    Deviation("test_tgather_mask_pattern_counts", "", SCATTER, H_SCATTER),
    Deviation("test_tgather_errors", "", SCATTER, H_SCATTER),
    Deviation("test_tgatherb_errors", "", SCATTER, H_SCATTER),
    Deviation("test_tscatter_flat_offsets", "", SCATTER, H_SCATTER),
    Deviation("test_tscatter_src_must_cover_idx", "", SCATTER, H_SCATTER),
    Deviation("test_family_index", r"-bf16\]", BF16, H_BF16),
    Deviation("test_family_index", r"-(u32|u16|i32|i16|i8|u8)\]", TCI, H_TCI),
    Deviation("test_tci_errors", "", TCI, H_TCI),
    Deviation("test_family_part", "", MISSING, H_MISSING),
    Deviation("test_tpart_illegal_regions", "", MISSING, H_MISSING),
    Deviation("test_tpart_property", "", MISSING, H_MISSING, strict=False),
    Deviation("test_seed_part", r"-partmul-", MISSING, H_MISSING),
    Deviation("test_seed_part", r"-partmax-f16-", MINMAX, H_MINMAX),
    Deviation("test_seed_part", r"\[a5-(.*-)?partmin-", PART_EMPTY, H_PART_EMPTY),
    Deviation("test_family_tmrgsort", r"\[a5-", MRG_TMP, H_MRG_TMP),
    Deviation("test_tmrgsort_ties_take_the_lower_list", "", MRG_TMP, H_MRG_TMP),
    Deviation("test_family_quant", "", MISSING, H_MISSING),
    Deviation("test_tquant_errors", "", MISSING, H_MISSING),
    Deviation("test_family_print", "", MISSING, H_MISSING),
    # the full tier's sweeps of the same instructions
    Deviation("test_tsort32", r"-tmp\]", SORT, H_SORT),
    Deviation("test_tsort32", r"-notmp\]", SORT_IDX, H_SORT_IDX),
    Deviation("test_tmrgsort_lists", r"-(2lists-all|3lists-exh|4lists-all|4lists-exh)\]", MRG_TMP, H_MRG_TMP),
    Deviation("test_family_tmrgsort", r"\[a2a3-", MRG_TMP, H_MRG_TMP),
    Deviation("test_tmrgsort_blocks", "", MRG_BLOCK, H_MRG_BLOCK),
    Deviation("test_tgather_index", r"-(e4m3|e5m2)-", FP8, H_FP8),
    Deviation("test_tgather_index", r"\[a5-.*-(i16|u16)\]", NARROW, H_NARROW),
    Deviation("test_tgather_mask", r"-(e4m3|e5m2)-", FP8, H_FP8),
    Deviation("test_tgather_mask", r"\[a5-.*-(i8|u8)-", NARROW, H_NARROW),
    Deviation("test_ttri", r"\[a5-.*-(i8|u8)-", NARROW, H_NARROW),
    Deviation("test_ttri", r"-bf16-", BF16, H_BF16),
    Deviation("test_tpart", r"-TPARTMUL-", MISSING, H_MISSING),
    Deviation("test_tpart", r"\[a5-.*-(i8|u8|u16|u32)\]", NARROW, H_NARROW),
    Deviation("test_tpart", r"-bf16\]", BF16, H_BF16),
    Deviation("test_tpart", r"-TPART(MAX|MIN)-f(16|32)\]", MINMAX, H_MINMAX),
    Deviation("test_tpart", r"\[a5-.*-TPART(MAX|MIN)-i(16|32)\]", PART_EMPTY, H_PART_EMPTY),
    Deviation("test_tscatter", "", SCATTER, H_SCATTER),
    Deviation("test_tquant", "", MISSING, H_MISSING),
    Deviation("test_tprint_tile", "", MISSING, H_MISSING),
)
