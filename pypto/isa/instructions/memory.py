"""5.5 GM <-> tile instructions (6).

GM operands have kind "gm" and no location. TSTORE_FP, MGATHER and MSCATTER list one dtype per
operand (the GM operand's element type included).
"""
from ..schema import Instr, Operand, Param, PipeRule, per_soc

_LOAD_TYPES = per_soc("i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32",
                      "i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 e4m3 e5m2 hif8 e8m0 "
                      "fp4e2m1x2 fp4e1m2x2")

_ATOMIC = Param("atomic", "AtomicType", ("None", "AtomicAdd"), "None")
_RELU = Param("reluMode", "ReluPreMode", ("NoRelu", "NormalRelu"), "NoRelu")

# Acc -> GM with per-channel (vector) quantisation: (gm, acc, fp) dtypes.
_STORE_FP = (("i8", "f32", "u64"), ("u8", "f32", "u64"), ("i8", "i32", "u64"),
             ("u8", "i32", "u64"), ("f16", "i32", "u64"), ("i16", "i32", "u64"))
# Acc -> GM conversions of TSTORE, plain and scalar-quantised: (gm, acc, preQuantScalar) dtypes.
_STORE_ACC = tuple((g, a, None) for a, g in (
    ("f32", "f32"), ("f32", "f16"), ("f32", "bf16"), ("i32", "i32"), ("f32", "i8"), ("f32", "u8"),
    ("i32", "i8"), ("i32", "u8"), ("i32", "f16"), ("i32", "i16")))
_GATHER_T = ("u8", "i8", "i16", "u16", "i32", "u32", "f16", "bf16", "f32", "e4m3", "e5m2")

INSTRUCTIONS = (
    Instr("TLOAD", 0x1301, "memory", "dst[valid] = gm (DMA GM -> tile)",
          (Operand("dst", role="out", locs=("Vec", "Mat")), Operand("src", kind="gm", locs=())),
          _LOAD_TYPES, pipe="MTE2", domain="dst", spec_ref="4.2, 4.3",
          notes=("Vec tiles on both SoCs move between matching layouts only: ND view <-> ND tile, "
                 "DN view <-> DN tile, NZ view [B, C1, R1, 16, c0] <-> Nz tile (validRow = R1*16, "
                 "validCol = B*C1*c0; the NPU's DMA assumes the 16 x c0 boxes dense, so pypto requires "
                 "the view's inner strides to be (16*c0, c0, 1)); Zz/Zn Vec tiles have no NPU path",
                 "pypto also moves a DN tile from an ND-tagged view (what slicing a tensor gives) "
                 "element by element through the view's strides, as pto-isa's CPU sim does; the NPU "
                 "refuses that pair at compile time: use pto.GlobalTensor(..., layout=pto.DN) for code "
                 "that must build for the chip",
                 "an ND view into an ND tile needs innermost stride 1 (a DN view into a DN tile: "
                 "stride 1 down a column): the NPU's DMA copies rows (columns) contiguously",
                 "Mat tiles: as Vec, plus the DMA's conversions into boxed tiles from a 2-D ND/DN "
                 "window (s0 = s1 = s2 = 1): a2a3 ND -> Nz and DN -> Zn; a5 also DN -> Nz, and the "
                 "e8m0 MX scales ND -> Zz / Nn (32-byte fractals); other pairs are refused",
                 "ND -> Nz and DN -> Zn go through the nd2nz DMA, which zero-fills the tail of each "
                 "copied line's last partial 32-byte block whatever the tile's PadValue (it takes no "
                 "pad value); a5's DN -> Nz crosses the boxes and is undocumented there: pypto "
                 "leaves those bytes as they were",
                 "NPU pads only the tail of the last partial 32-byte block of each row (DN: of each "
                 "column; nothing for PadNull, nothing for NZ, whose rows are whole blocks); the rest "
                 "of the tile keeps its contents",
                 "pad values: float Min/Max -inf/+inf, int8 Min -1, unsigned Min 0, 8-byte and fp8 "
                 "types 0 for every PadValue; a5 8-byte types take PadNull or PadZero only",
                 "a2a3 limits checked when static: Rows < 4096, ND s3 < 4096, DN s4 < 4096, NZ s1 < 4096; "
                 "8-byte types only ND/DN",
                 "CPU sim fills the whole tile with the pad value first (0 for PadNull) and has no NZ "
                 "GM layout",
                 "int8 PadValue::Min is -1 on the NPU (-128 in the CPU sim)",
                 "a5 also moves hif8 (pads 0, as fp8), the e8m0 MX scales (aScale: ND -> Zz; "
                 "bScale: a DN view of its N x K/32 transpose -> Nn, emitted as the NPU's "
                 "MX_B_DN) and the packed fp4 pairs (pad 0) as bytes: a pypto "
                 "fp4 element is one byte, two values along the storage's contiguous axis, so tile "
                 "and view shapes count pairs where pto-isa's C++ counts values")),
    Instr("TPREFETCH", 0x1302, "memory",
          "DMA gm into a Vec tile used as scratch; the tile's contents afterwards are unspecified",
          (Operand("dst", role="out"), Operand("src", kind="gm", locs=())),
          _LOAD_TYPES, pipe="MTE2", domain="dst", spec_ref="5.5",
          notes=("takes no events and does not synchronise",
                 "pipe inferred (GM -> UB DMA); pto::Op has no TPREFETCH entry",
                 "NPU: each s3 x s4 slice of the view is copied to the start of the tile (rows packed, "
                 "later slices over earlier ones); any tile shape, no layout or valid-region rule",
                 "pypto's choice: the simulator checks the view's bounds and leaves the tile's bytes "
                 "as they were (never plausible data), so a kernel that reads a prefetch tile shows "
                 "stale or poisoned contents instead of working by luck",
                 "CPU sim copies gm[r * Cols + c] over the valid region, ignoring the GM strides")),
    Instr("TSTORE", 0x1303, "memory", "gm = src[valid] (DMA tile -> GM)",
          (Operand("dst", kind="gm", role="out", locs=(), group=None),
           Operand("src", locs={"a2a3": ("Vec", "Mat", "Acc"), "a5": ("Vec", "Acc")}, group=None),
           Operand("preQuantScalar", kind="scalar", locs=(), group=None, optional=True)),
          {soc: tuple(dict.fromkeys(tuple((t, t, None) for t in types) + _STORE_ACC))
           for soc, types in _LOAD_TYPES.items()},
          domain="src", spec_ref="4.4",
          pipe=PipeRule(("src",), {("Vec",): "MTE3", ("Mat",): "MTE3", ("Acc",): "FIX"}),
          params=(_ATOMIC, _RELU),
          notes=("pipe: MTE3 from Vec (and Mat, a2a3 only); FIX from Acc",
                 "a Mat source is legal on a2a3 only (semantics 4.4)",
                 "layouts and view shapes as TLOAD (the source's valid region is the transfer size)",
                 "atomic None is C++ AtomicType::AtomicNone; AtomicAdd makes GM[i] += src[i] with GM "
                 "types f16 f32 i16 i32 i8 bf16 on a2a3, f16 f32 i16 i32 i8 on a5 (others are a "
                 "DTypeError); the CPU sim ignores it and overwrites",
                 "atomic add, pypto's choice: integers wrap modulo 2^w; f32 is one IEEE f32 addition; "
                 "f16 and bf16 are the exact sum rounded once to nearest even (no f32 intermediate); "
                 "overflow gives +-inf, a NaN operand gives a NaN (payload open)",
                 "Vec and Mat sources store their own dtype; Acc sources convert on the way out "
                 "(the fixpipe): f32->f32/f16/bf16, i32->i32, and with preQuantScalar f32->i8/u8/f16/"
                 "bf16, i32->i8/u8/f16/i16; reluMode=NormalRelu applies ReLU first; none of these "
                 "build in the CPU sim",
                 "quantisation, pypto's reading of the hardware-defined arithmetic: the scale is the "
                 "f32 in the low 32 bits of preQuantScalar (pypto.quant_scale(x) builds it); value * "
                 "scale rounds to nearest even, integer destinations saturate",
                 "Acc source: an ND (rows x cols as the tile) or NZ GM view; 1 <= Cols <= 4095; ND "
                 "Rows <= 8192, NZ Rows <= 65535 and Cols % 16 == 0")),
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
          (Operand("dst", role="out", group=None, layouts=("ND",)),
           Operand("gm", kind="gm", locs=(), group=None), Operand("idx", group=None, layouts=("ND",))),
          {"a2a3": (), "a5": tuple((t, t, i) for t in _GATHER_T for i in ("i32", "u32"))},
          pipe="V", domain="dst", spec_ref="5.5", seed="gather",
          notes=("a5 only (no a2a3 implementation); runs as a SIMT vector kernel",
                 "dst[i, j] = gm[idx[i, j]] with idx of dst's Rows and Cols (the a5 code's row-indexed "
                 "form needs an (N, 1) index tile, which no legal ND tile of 4-byte indices is); gm "
                 "an ND view with s0 = s1 = s2 = 1; indices count from the view's first element",
                 "the a5 code gathers the whole static tile; pypto gathers dst's valid region (idx's "
                 "valid region must cover it), elements outside it keep their contents",
                 "the NPU does no bounds check; pypto's choice: an index whose element lies outside "
                 "the tensor is always a run-time IndexRangeError in the simulator (nothing outside "
                 "the tensor is read); the NPU backends emit no guard for it",
                 "a5 dtypes from the implementation (the doc gives none)")),
    Instr("MSCATTER", 0x1306, "memory", "gm[idx[i, j]] = src[i, j] (linear element index into gm)",
          (Operand("gm", kind="gm", role="out", locs=(), group=None),
           Operand("src", group=None, layouts=("ND",)), Operand("idx", group=None, layouts=("ND",))),
          {"a2a3": (), "a5": tuple((t, t, i) for t in _GATHER_T for i in ("i32", "u32"))},
          pipe="V", domain="src", spec_ref="5.5", seed="scatter",
          notes=("a5 only (no a2a3 implementation); runs as a SIMT vector kernel",
                 "one index per element (idx of src's Rows and Cols) as MGATHER; over src's valid "
                 "region (idx's valid region must cover it)",
                 "the NPU does no bounds check; pypto's choice: an index outside the tensor is always "
                 "a run-time IndexRangeError in the simulator and nothing is written by that "
                 "instruction; the NPU backends emit no guard for it",
                 "duplicate indices: the NPU's order is unspecified; pypto's choice: the last write in "
                 "row-major order of src wins; checks='strict' reports the first duplicate "
                 "(UndefinedBehaviorError)",
                 "a5 dtypes from the implementation (the doc gives none)")),
)
