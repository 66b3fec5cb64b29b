"""5.5 GM <-> tile instructions (6).

GM operands have kind "gm" and no location. TSTORE_FP, MGATHER and MSCATTER list one dtype per
operand (the GM operand's element type included).
"""
from ..schema import Instr, Operand, Param, PipeRule, per_soc

_LOAD_TYPES = per_soc("i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32",
                      "i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 e4m3 e5m2")

_ATOMIC = Param("atomic", "AtomicType", ("None", "AtomicAdd"), "None")
_RELU = Param("reluMode", "ReluPreMode", ("NoRelu", "NormalRelu"), "NoRelu")

# Acc -> GM with per-channel (vector) quantisation: (gm, acc, fp) dtypes.
_STORE_FP = (("i8", "f32", "u64"), ("u8", "f32", "u64"), ("i8", "i32", "u64"),
             ("u8", "i32", "u64"), ("f16", "i32", "u64"), ("i16", "i32", "u64"))
_GATHER_T = ("u8", "i8", "i16", "u16", "i32", "u32", "f16", "bf16", "f32", "e4m3", "e5m2")

INSTRUCTIONS = (
    Instr("TLOAD", 0x1301, "memory", "dst[valid] = gm (DMA GM -> tile)",
          (Operand("dst", role="out", locs=("Vec", "Mat")), Operand("src", kind="gm", locs=())),
          _LOAD_TYPES, pipe="MTE2", domain="dst", spec_ref="4.2, 4.3",
          notes=("NPU pads only the tail of the last partial 32-byte block of each row "
                 "(nothing for PadNull); the rest of the tile keeps its contents",
                 "CPU sim fills the whole tile with the pad value first (0 for PadNull)",
                 "int8 PadValue::Min is -1 on the NPU (-128 in the CPU sim)")),
    Instr("TPREFETCH", 0x1302, "memory",
          "DMA gm into a Vec tile used as scratch; the tile's contents afterwards are unspecified",
          (Operand("dst", role="out"), Operand("src", kind="gm", locs=())),
          _LOAD_TYPES, pipe="MTE2", domain="dst", spec_ref="5.5",
          notes=("takes no events and does not synchronise",
                 "pipe inferred (GM -> UB DMA); pto::Op has no TPREFETCH entry",
                 "CPU sim copies gm[r * Cols + c], ignoring the GM strides")),
    Instr("TSTORE", 0x1303, "memory", "gm = src[valid] (DMA tile -> GM)",
          (Operand("dst", kind="gm", role="out", locs=()),
           Operand("src", locs={"a2a3": ("Vec", "Mat", "Acc"), "a5": ("Vec", "Acc")})),
          _LOAD_TYPES, domain="src", spec_ref="4.4",
          pipe=PipeRule(("src",), {("Vec",): "MTE3", ("Mat",): "MTE3", ("Acc",): "FIX"}),
          params=(Param("atomic", "AtomicType", ("None", "AtomicAdd"), "None"),),
          notes=("pipe: MTE3 from Vec (and Mat, a2a3 only); FIX from Acc",
                 "a Mat source is legal on a2a3 only (semantics 4.4)",
                 "atomic None is C++ AtomicType::AtomicNone; AtomicAdd makes GM[i] += src "
                 "(a2a3 GM types f16 f32 i16 i32 i8 bf16); the CPU sim ignores it and overwrites",
                 "Acc sources convert on the way out: f32->f32/f16/bf16, i32->i32, plus scalar "
                 "quant overloads (preQuantScalar) and ReLU; none of these build in the CPU sim",
                 "Acc source: 1 <= Cols <= 4095; ND Rows <= 8192, NZ Rows <= 65535 and Cols % 16 == 0")),
    Instr("TSTORE_FP", 0x1304, "memory",
          "gm = quantise(src[valid]) with per-channel parameters from the fp Scaling tile",
          (Operand("dst", kind="gm", role="out", locs=(), group=None),
           Operand("src", locs=("Acc",), group=None),
           Operand("fp", locs=("Scaling",), group=None)),
          {"a2a3": _STORE_FP, "a5": _STORE_FP}, pipe="FIX", domain="src", params=(_ATOMIC, _RELU),
          spec_ref="4.4",
          notes=("ReLU is applied before quantisation; the quant arithmetic is hardware-defined",
                 "no CPU sim implementation")),
    Instr("MGATHER", 0x1305, "memory", "dst[i, j] = gm[idx[i, j]] (linear element index into gm)",
          (Operand("dst", role="out", group=None), Operand("gm", kind="gm", locs=(), group=None),
           Operand("idx", group=None)),
          {"a2a3": (), "a5": tuple((t, t, i) for t in _GATHER_T for i in ("i32", "u32"))},
          pipe="V", domain="dst", spec_ref="5.5",
          notes=("no bounds check; gm must be ND",
                 "a5 only (no a2a3 implementation); runs as a SIMT vector kernel",
                 "dst and idx row-major with equal Rows; idx has one column or dst's Cols",
                 "a5 dtypes from the implementation (the doc gives none)")),
    Instr("MSCATTER", 0x1306, "memory", "gm[idx[i, j]] = src[i, j] (linear element index into gm)",
          (Operand("gm", kind="gm", role="out", locs=(), group=None), Operand("src", group=None),
           Operand("idx", group=None)),
          {"a2a3": (), "a5": tuple((t, t, i) for t in _GATHER_T for i in ("i32", "u32"))},
          pipe="V", domain="src", spec_ref="5.5",
          notes=("no bounds check; with duplicate indices the last write in row-major order wins "
                 "(CPU sim; the NPU order is unspecified)",
                 "a5 only (no a2a3 implementation); runs as a SIMT vector kernel",
                 "a5 dtypes from the implementation (the doc gives none)")),
)
