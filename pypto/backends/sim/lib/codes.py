"""The integer codes the library's functions take: GM layouts and padding, atomic-add element
kinds, element types, rounding and saturation modes, the cube's quantisation and fp4 formats.
Plain data, importable without numba: the units name them while a kernel is traced, and a
kernel launched from its native code (backends/sim/native.py) never imports numba."""
from __future__ import annotations

# GM view layouts a tile moves from / to (lib/memory.py)
ROW, COL, NZ = 0, 1, 2
# TLOAD padding: none, the tail of each valid row's last 32-byte block, or of each valid column's
NO_PAD, PAD_ROWS, PAD_COLS = 0, 1, 2
# atomic-add element kinds
ADD_INT, ADD_F32, ADD_F16, ADD_BF16 = 0, 1, 2, 3

# element types (lib/convert.py)
F32, F16, BF16, E4M3, E5M2, HIF8, I8, U8, I16, U16, I32, U32, I64, E8M0 = range(14)
CODES = {"f32": F32, "f16": F16, "bf16": BF16, "e4m3": E4M3, "e5m2": E5M2, "hif8": HIF8, "i8": I8,
         "u8": U8, "i16": I16, "u16": U16, "i32": I32, "u32": U32, "i64": I64, "e8m0": E8M0}
CAST_NONE, CAST_RINT, CAST_ROUND, CAST_FLOOR, CAST_CEIL, CAST_TRUNC, CAST_ODD = range(7)
RMODES = ("CAST_NONE", "CAST_RINT", "CAST_ROUND", "CAST_FLOOR", "CAST_CEIL", "CAST_TRUNC", "CAST_ODD")
SAT_WRAP, SAT_CLAMP = 0, 1

# the cube (lib/cube.py): the largest M, K or N; the packed fp4 formats' codes (convert.py has no
# fp4: only the cube reads it); the fixpipe's quantisation kinds
MAX_MKN = 4095
FP4_E2M1, FP4_E1M2 = 20, 21
MX_CODES = {"fp4e2m1x2": FP4_E2M1, "fp4e1m2x2": FP4_E1M2}
Q_NONE, Q_SCALAR, Q_VECTOR = 0, 1, 2
