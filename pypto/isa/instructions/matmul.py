"""5.6 / 6 Matrix multiply on the cube (8).

A is a Left tile, B a Right tile, C an Acc tile; MX scales live in ScaleLeft / ScaleRight tiles
(e8m0 bytes, 2^(s-127), one per 32 K elements). Every entry lists (C, A, B, ...) dtype
combinations; the cube accumulates in f32 or i32 only. Sizes: m = a.validRow, k = a.validCol,
n = b.validCol (TGEMV*: m = 1, k = b.validRow), each in [1, 4095]; b.validRow and C's valid region
are not consulted. Static shapes: A.Rows == C.Rows, A.Cols == B.Rows, B.Cols == C.Cols.
"""
from ..schema import Instr, Operand, Param

_C = Operand("c", role="out", locs=("Acc",), group=None)
_COUT = Operand("cOut", role="inout", locs=("Acc",), group=None)
_CIN = Operand("cIn", locs=("Acc",), group=None, optional=True)
_A = Operand("a", locs=("Left",), group=None)
_B = Operand("b", locs=("Right",), group=None)
_BIAS = Operand("bias", locs=("Bias",), group=None)
_ASCALE = Operand("aScale", locs=("ScaleLeft",), group=None)
_BSCALE = Operand("bScale", locs=("ScaleRight",), group=None)
_MX_BIAS = Operand("bias", locs=("Bias",), group=None, optional=True)
# the MX accumulate overload (cOut, cIn, a, aScale, b, bScale): c keeps the main list's name, so
# the dtype rows match by name; cIn must be c itself (as TMATMUL_ACC's)
_MX_ACC = (Operand("c", role="inout", locs=("Acc",), group=None), Operand("cIn", locs=("Acc",), group=None),
           _A, _ASCALE, _B, _BSCALE)

_PHASE = Param("accPhase", "AccPhase", ("Unspecified", "Partial", "Final"), "Unspecified")

# (C, A, B) combinations.
_MM_A2A3 = (("i32", "i8", "i8"), ("f32", "f16", "f16"), ("f32", "bf16", "bf16"),
            ("f32", "f32", "f32"))
_MM_A5 = _MM_A2A3 + (("f32", "e4m3", "e4m3"), ("f32", "e4m3", "e5m2"), ("f32", "e5m2", "e4m3"),
                     ("f32", "e5m2", "e5m2"), ("f32", "hif8", "hif8"))
_MM = {"a2a3": _MM_A2A3, "a5": _MM_A5}
_MM_ACC = {soc: tuple((c, c, a, b) for c, a, b in v) for soc, v in _MM.items()}     # cOut, cIn, a, b
_MM_BIAS = {soc: tuple((c, a, b, c) for c, a, b in v) for soc, v in _MM.items()}    # c, a, b, bias

# MX (a5 only): (C, A, aScale, B, bScale, bias); fp8 pairs or fp4x2 pairs, any pairing.
_MX_AB = (("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3"), ("e5m2", "e5m2"),
          ("fp4e2m1x2", "fp4e2m1x2"), ("fp4e2m1x2", "fp4e1m2x2"), ("fp4e1m2x2", "fp4e2m1x2"),
          ("fp4e1m2x2", "fp4e1m2x2"))
_MX = {"a2a3": (), "a5": tuple(("f32", a, "e8m0", b, "e8m0", "f32") for a, b in _MX_AB)}

_COMMON = ("accPhase (C++ values Unspecified=0, Partial=2, Final=3) lets the cube and the fixpipe "
           "overlap on one accumulator; a serialising simulator can ignore it, the CPU sim rejects it",)
_MATMUL_NOTES = _COMMON + (
    "a2a3 runs m == 1 as m = 16 and writes 16 accumulator rows",
    "a5 and the CPU sim require A Nz, B Zn, C Nz with 16x16 boxes; a2a3 does not check fractals "
    "(its TileLeft is Zz)",
    "CPU sim: no bf16 inputs; sums sequentially over k in C's type (i32 wraps)",
    "optional reduced-precision TF32 mode for f32 inputs via the tile's MAD mode (default off)",
)
_ACC_NOTES = (
    "NPU accumulates into cOut's current contents and ignores cIn (cOut += A.B); the CPU sim "
    "computes cOut = cIn + A.B, so the two agree only when cIn is cOut; the three-operand form "
    "(c, a, b) accumulates into c and does not build in the CPU sim",
)
_MX_NOTES = _COMMON + (
    "a5 only: C[i, j] = sum over k of (A[i, k] * 2^(aScale[i, k/32] - 127)) * "
    "(B[k, j] * 2^(bScale[k/32, j] - 127)), plus bias[0, j] (f32) when given",
    "A.Cols % 64 == 0; aScale validCol and bScale validRow are even",
    "accumulate overload (cOut, cIn, a, aScale, b, bScale): cOut += the scaled product, with "
    "the TMATMUL_ACC rule (cIn must be cOut); no bias then",
    "no CPU sim implementation (pto-isa's README claims one, and one for a2a3)",
)

INSTRUCTIONS = (
    Instr("TMATMUL", 0x1401, "matmul", "c = a @ b (accumulator starts at 0)", (_C, _A, _B), _MM,
          pipe="M", params=(_PHASE,), domain="src", spec_ref="5.6, 6.4", notes=_MATMUL_NOTES,
          seed="matmul"),
    Instr("TMATMUL_ACC", 0x1402, "matmul", "cOut += a @ b", (_COUT, _CIN, _A, _B), _MM_ACC,
          pipe="M", params=(_PHASE,), domain="src", spec_ref="5.6, 5.9 n11, 6.4",
          notes=_ACC_NOTES + _MATMUL_NOTES),
    Instr("TMATMUL_BIAS", 0x1403, "matmul", "c = a @ b + bias[0, j]", (_C, _A, _B, _BIAS),
          _MM_BIAS, pipe="M", params=(_PHASE,), domain="src", spec_ref="5.6, 6.4", seed="matmulbias",
          notes=("bias: a Bias tile with Rows == 1 and C's dtype; the NPU seeds the accumulator "
                 "with it, the CPU sim adds it afterwards",) + _MATMUL_NOTES),
    Instr("TMATMUL_MX", 0x1404, "matmul", "c = (a scaled by aScale) @ (b scaled by bScale) [+ bias]",
          (_C, _A, _ASCALE, _B, _BSCALE, _MX_BIAS), _MX, pipe="M", params=(_PHASE,),
          domain="src", spec_ref="5.6, 6.3, 6.4", notes=_MX_NOTES, overloads=(_MX_ACC,)),
    Instr("TGEMV", 0x1405, "matmul", "c[0, :] = a[0, :] @ b (m = 1)", (_C, _A, _B), _MM,
          pipe="M", params=(_PHASE,), domain="src", spec_ref="5.6, 6.4",
          notes=_COMMON + ("runs the cube in GEMV mode; k = b.validRow, n = b.validCol",
                           "no CPU sim implementation")),
    Instr("TGEMV_ACC", 0x1406, "matmul", "cOut[0, :] += a[0, :] @ b (m = 1)",
          (_COUT, _CIN, _A, _B), _MM_ACC, pipe="M", params=(_PHASE,), domain="src",
          spec_ref="5.6, 6.4",
          notes=_ACC_NOTES[:1] + _COMMON + ("no CPU sim implementation",)),
    Instr("TGEMV_BIAS", 0x1407, "matmul", "c[0, :] = a[0, :] @ b + bias[0, :] (m = 1)",
          (_C, _A, _B, _BIAS), _MM_BIAS, pipe="M", params=(_PHASE,), domain="src",
          spec_ref="5.6, 6.4", notes=_COMMON + ("no CPU sim implementation",)),
    Instr("TGEMV_MX", 0x1408, "matmul", "GEMV (m = 1) with MX block scales [+ bias]",
          (_C, _A, _ASCALE, _B, _BSCALE, _MX_BIAS), _MX, pipe="M", params=(_PHASE,),
          domain="src", spec_ref="5.6, 6.4", notes=_MX_NOTES, overloads=(_MX_ACC,)),
)
