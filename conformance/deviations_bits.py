"""Where pto-isa's CPU backend (npu-cpusim) differs from the NPU on the bit, shift, compare and
select cases of test_bits.py (docs/fidelity.md, Part 3)."""
from __future__ import annotations

from .deviations import Deviation

SHIFTS = "pto-isa's CPU backend has no TSHLS / TSHRS (no CPU implementation; its README claims one): the kernel does not compile"
TCMP = "pto-isa's CPU TCMP does not pack: dst must be the sources' tile type and gets 0/1 per element, so the NPU's u8 / u32 mask dst does not compile"
TCMPS = ("pto-isa's CPU TCMPS packs one stream per source capacity row, writes only dst's valid bytes (not the "
         "NPU's whole repeats), uses |a - b| < 1e-9 for EQ / NE, honours cmpMode for a2a3 i32 and compares "
         "a2a3 i16 / u16 as integers instead of as half-float bits")
TSELS = "pto-isa's CPU TSELS implements an older API (dst, src0, src1, selectMode): the NPU form TSELS(dst, mask, src, scalar) does not compile"
TSEL = "pto-isa's CPU TSEL reads the mask as one bit stream over the valid region, not per row: it differs when validCol % 8 != 0"
SHIFT_UB = ("pto-isa's CPU shifts use C++ << / >> on the element type: a count >= 32 (or negative) is undefined "
            "behaviour there (x86 masks the count), where pypto shifts every bit out")
ALIAS = "pto-isa's CPU tiles own their storage and TASSIGN does nothing there, so tiles never overlap and the run-time no-overlap guard cannot fire"

H_SHIFTS, H_TCMP, H_TCMPS, H_TSELS, H_TSEL, H_SHIFT_UB, H_ALIAS = (
    "TSHLS / TSHRS", "TCMP packing", "TCMPS packing", "TSELS", "TSEL mask order", "Shift counts past the width",
    "Overlapping tiles")

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation("test_scalar_shifts", "", SHIFTS, H_SHIFTS),
    Deviation("test_seed", r"-(shls|shrs)-", SHIFTS, H_SHIFTS),
    Deviation("test_compare_group", r"-(i32|f16|f32)-a2a3\]|-a5\]", TCMP, H_TCMP),
    Deviation("test_compare_group", r"-(u16|i16)-a2a3\]", TCMPS, H_TCMPS),
    Deviation("test_compare_hand_cases", "", TCMP, H_TCMP),
    Deviation("test_a2a3_i32_always_eq_and_half_bits", "", TCMP, H_TCMP),
    Deviation("test_cmp_src1_smaller_runtime", "", TCMP, H_TCMP),
    Deviation("test_compare_property", "", TCMP, H_TCMP, strict=False),
    Deviation("test_seed", r"-cmp-", TCMP, H_TCMP),
    Deviation("test_select_group", r"-bf16-", TSEL, H_TSEL),
    Deviation("test_select_group", "", TSELS, H_TSELS),
    Deviation("test_select_wider_mask_types", "", TSELS, H_TSELS),
    Deviation("test_sels_source_smaller_runtime", "", TSELS, H_TSELS),
    Deviation("test_seed", r"-sels-", TSELS, H_TSELS),
    Deviation("test_shift_counts_past_the_width", "", SHIFT_UB, H_SHIFT_UB),
    Deviation("test_tands_overlap_runtime_address", "", ALIAS, H_ALIAS),
    Deviation("test_group_property_every_dtype", r"-compare\]", TCMP, H_TCMP, strict=False),
    Deviation("test_group_property_every_dtype", r"-select\]", TSELS, H_TSELS, strict=False),
)
