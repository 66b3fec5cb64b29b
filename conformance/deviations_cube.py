"""Where pto-isa's CPU backend (npu-cpusim) differs from the NPU on the matrix-path cases of
conformance/test_cube.py and conformance/test_matmul_lib.py; each entry names its heading in
docs/fidelity.md. Cases the CPU backend aborts on (an assert kills the process, so they cannot
be xfails) are not collected there: ``cpusim_runs`` in test_cube.py says which."""
from __future__ import annotations

from .deviations import BF16, FP8, H_BF16, H_FP8, Deviation
from .deviations_memory import H_NZ, NZ

LEFT_ZZ = ("pto-isa's CPU TMATMUL static_asserts a Left tile in Nz; a2a3's TileLeft (the layout its "
           "L0A holds) is Zz, so no a2a3 cube kernel builds there")
BF16_MM = BF16 + "; its TMATMUL also static_asserts that bf16 inputs are not allowed"
STORE_CVT = ("pto-isa's CPU TSTORE from an Acc tile copies its own dtype only: the fixpipe's "
             "conversions (f32 -> f16/bf16/i8, ReLU, scalar and vector quantisation) do not compile")

NO_GEMV = "pto-isa's CPU backend has no TGEMV, TGEMV_ACC or TGEMV_BIAS (TGEMV_IMPL is not declared)"

H_LEFT_ZZ, H_STORE_CVT = "a2a3 TileLeft is Zz", "Conversions out of L0C on the CPU backend"
H_NO_GEMV = "No TGEMV on the CPU backend"

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation("test_tmatmul_every_pair", r"-a2a3-", LEFT_ZZ, H_LEFT_ZZ),
    Deviation("test_tmatmul_every_pair", r"-a5-bf16-", BF16_MM, H_BF16),
    Deviation("test_tmatmul_every_pair", r"-a5-(e4m3|e5m2|hif8)-", FP8, H_FP8),
    Deviation("test_tstore_from_acc", r"-a2a3\]", LEFT_ZZ, H_LEFT_ZZ),
    Deviation("test_family", r"-a2a3\]", LEFT_ZZ, H_LEFT_ZZ),
    Deviation("test_family", r"-TGEMV(_ACC|_BIAS)?-a5\]", NO_GEMV, H_NO_GEMV),
    Deviation("test_runtime_k_outside_4095_is_a_range_error", r"-a2a3\]", LEFT_ZZ, H_LEFT_ZZ),
    Deviation("test_tstore_from_acc", r"-(f16|bf16|i8|u8|i16|i32)-.*-a5\]|-f32-True-.*-a5\]",
              STORE_CVT, H_STORE_CVT),
    Deviation("test_bias_from_f16", r"-a2a3\]", LEFT_ZZ, H_LEFT_ZZ),
    Deviation("test_matmul_shapes", r"-a2a3\]", LEFT_ZZ, H_LEFT_ZZ),
    Deviation("test_matmul_shapes", r"-bf16-a5\]", BF16_MM, H_BF16),
    Deviation("test_tutorial_values", "", LEFT_ZZ, H_LEFT_ZZ),
    Deviation("test_batched", "", LEFT_ZZ, H_LEFT_ZZ),
    Deviation("test_bias_and_relu_epilogue", "", LEFT_ZZ, H_LEFT_ZZ),
    Deviation("test_f16_result_is_converted_by_the_fixpipe", "", LEFT_ZZ, H_LEFT_ZZ),
    Deviation("test_random_gemms", "", LEFT_ZZ, H_LEFT_ZZ, strict=False),
    Deviation("test_nz_tensor_into_mat_nz", "", NZ, H_NZ),
)
