"""Where a backend under test is known to differ from the NPU, case by case.

pypto's simulator follows the NPU. pto-isa's CPU backend (``--backend npu-cpusim``) deviates from
the NPU in documented places (pto-isa-semantics section 0, 5.9, 7, the addendum); each entry
below names the cases that meet such a place (by test and parameter id), why, and the heading of
docs/fidelity.md that explains it. Such cases are strict xfails on that backend: a deviation
that disappears shows up as XPASS. Property tests draw their own data, so whether a draw meets
the deviation (a NaN in a max, say) varies: they are non-strict. tests/test_npu_cpusim.py checks
that the differences are exactly the documented behaviour (e.g. std::max), not just different.
A difference that is not listed here is a pypto bug until shown otherwise.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

CPUSIM = "npu-cpusim"


@dataclass(frozen=True)
class Deviation:
    test: str            # test function name
    ids: str             # regex searched in the parameter id ("" = every case)
    reason: str
    doc: str             # heading in docs/fidelity.md
    backend: str = CPUSIM
    strict: bool = True


MINMAX = "pto-isa's CPU TMAX/TMIN use std::max/std::min: max(x, NaN) = x and NaN payloads pass unquieted; the NPU propagates a quiet NaN"
PAD = "pto-isa's CPU TLOAD pads the whole tile (PadNull as 0, int8 PadMin as -128); the NPU pads only to the end of each row's last 32-byte block and PadNull pads nothing"
ROWSUM = "pto-isa's CPU TROWSUM adds the row left to right in one accumulator starting at +0.0; the NPU reduces by repeats and lanes (a different rounding order; -0.0 sums stay -0.0)"
CVT = "pto-isa's CPU TCVT never saturates (C++ casts), ignores the rounding mode except for float->int, has no SaturationMode overload and applies a5's CAST_ODD to every pair"
BF16 = "pto-isa's CPU backend compiled with g++ < 14 makes bfloat16_t an IEEE half (_Float16): bf16 data is read and written as f16 bits"
FP8 = "pto-isa's CPU backend has no float8 element types: a kernel with e4m3/e5m2 tiles does not compile"

H_MINMAX, H_PAD, H_ROWSUM, H_CVT, H_BF16, H_FP8 = (
    "NaN in TMAX/TMIN", "TLOAD padding", "TROWSUM order", "TCVT", "bfloat16 with g++ < 14",
    "float8, hifloat8 and float4 types")

DEVIATIONS: tuple[Deviation, ...] = (
    # max/min with NaN inputs (pto-isa-semantics 5.9 n2)
    Deviation("test_seed_op", r"-(max|min)-float(32|16)-(1000|37x129|4x300x65)-", MINMAX, H_MINMAX),
    Deviation("test_seed_mixed_operand_kinds", r"-max-", MINMAX, H_MINMAX),
    Deviation("test_seed_pto_names", r"-T(MAX|MIN)\]", MINMAX, H_MINMAX),
    Deviation("test_signalling_nan_is_quieted", r"-(max|min)-", MINMAX, H_MINMAX),
    Deviation("test_family_static_valid_region", r"-float", MINMAX, H_MINMAX),
    Deviation("test_family_runtime_valid_region", r"ro0co0-16x64-float|ro3co10-5x37-float32", MINMAX, H_MINMAX),
    Deviation("test_family_computes_only_the_valid_region", r"-(5x37|16x64|16x9)-float", MINMAX, H_MINMAX),
    Deviation("test_runtime_scalar_converted_to_element_type", r"-float16-0\.1\]|-float32-0\.1\]|-float16-65519",
              MINMAX, H_MINMAX),
    Deviation("test_runtime_scalars_do_not_recompile", "", MINMAX, H_MINMAX),
    Deviation("test_family_runtime_valid_property", "", MINMAX, H_MINMAX, strict=False),
    Deviation("test_seed_property", "", MINMAX, H_MINMAX, strict=False),
    # TLOAD padding (4.3, 3.6)
    Deviation("test_tload_padding_npu_rule", "", PAD, H_PAD),
    Deviation("test_tload_padding_i8_min_is_minus_one", "", PAD, H_PAD),
    # TROWSUM (5.9 n9): the order and the sign of zero sums
    Deviation("test_rowsum_static_region", r"float32", ROWSUM, H_ROWSUM),
    Deviation("test_rowsum_three_repeats_and_a_tail", "", ROWSUM, H_ROWSUM),
    Deviation("test_rowsum_hand_rows", "", ROWSUM, H_ROWSUM),
    Deviation("test_rowsum_runtime_regions", "", ROWSUM, H_ROWSUM),
    Deviation("test_seed_rowsum", "", ROWSUM, H_ROWSUM),
    Deviation("test_rowsum_property", "", ROWSUM, H_ROWSUM, strict=False),
    # float8 and bfloat16 element types (7)
    Deviation("test_cvt_every_pair", r"e4m3|e5m2", FP8, H_FP8),
    Deviation("test_cvt_all_modes_every_pair", r"e4m3|e5m2", FP8, H_FP8),
    Deviation("test_seed_cast", r"e4m3|e5m2", FP8, H_FP8),
    Deviation("test_seed_a5_dtypes", r"-(add|adds|muls)-bfloat16", BF16, H_BF16),
    Deviation("test_scalar_operand_conversion", r"bfloat16", BF16, H_BF16),
    # TCVT (5.9 n7, addendum): every pair whose NPU result needs saturation, a rounding mode or
    # a5's CAST_ODD no-op; only exact a2a3 conversions agree
    Deviation("test_cvt_every_pair", r"^(?!.*a2a3-(u8>f16|i8>f16|f16>f32|i16>f32|i32>i64)\]).*$", CVT, H_CVT),
    Deviation("test_cvt_all_modes_every_pair", r"^(?!.*a2a3-(u8>f16|i8>f16|f16>f32|i16>f32|i32>i64)\]).*$",
              CVT, H_CVT),
    Deviation("test_cvt_all_modes_key_pairs", "", CVT, H_CVT),
    Deviation("test_cvt_odd_on_other_pairs", r"^(?!.*a2a3-npu-cpusim-i16>f32\]).*$", CVT, H_CVT),
    Deviation("test_cvt_runtime_region_writes_only_valid", "", CVT, H_CVT),
    Deviation("test_cvt_property", "", CVT, H_CVT, strict=False),
    Deviation("test_seed_cast", r"^(?!.*(f16>i8-CAST_ROUND|a5-npu-cpusim-i16>u8-CAST_RINT-OFF)).*$", CVT, H_CVT),
    Deviation("test_seed_cast_bad_parameters", r"-set_param\]", CVT, H_CVT),
    Deviation("test_seed_cast_every_pair_default", "", CVT, H_CVT),
    Deviation("test_seed_cast_odd_on_other_pair", r"a2a3", CVT, H_CVT),
)


def _families() -> tuple[Deviation, ...]:
    """The entries of each family's own list (conformance/deviations_<family>.py, a tuple
    named DEVIATIONS), so families add theirs without editing this file."""
    import importlib
    import pkgutil
    from pathlib import Path
    out: list[Deviation] = []
    for m in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if m.name.startswith("deviations_"):
            out += importlib.import_module(f"{__package__}.{m.name}").DEVIATIONS
    return tuple(out)


DEVIATIONS = DEVIATIONS + _families()


def lookup(backend: str, nodeid: str) -> Deviation | None:
    """The documented deviation a case meets on ``backend``, or None."""
    fn, _, rest = nodeid.rpartition("::")[2].partition("[")
    pid = "[" + rest if rest else ""
    for d in DEVIATIONS:
        if d.backend == backend and d.test == fn and re.search(d.ids, pid):
            return d
    return None


def deviation_for(backend: str, nodeid: str, params=None) -> str | None:
    d = lookup(backend, nodeid)
    return None if d is None else f"{d.reason} (docs/fidelity.md: {d.doc})"
