"""5.7 Data movement and layout (12).

Moves between locations follow the pair rules of semantics section 6.5; the dtype tuples below are
the union over the legal location pairs (dst first, then src, then the fp tile / scalar operands).
The pipe depends on the pair: Mat -> Left/Right/Bias is MTE1, Mat -> Scaling, Acc -> Mat/Vec and
Vec -> Mat are FIX, Vec -> Vec is V; each entry gives the pipe of its main use and says so in a note.
"""
from ..schema import PipeRule, DST, SRC, TMP, Instr, Operand, Param, both, per_soc


def _dt(spec: str, tail: tuple = ()) -> tuple[tuple, ...]:
    """'t' (same type) or 'src>dst' tokens -> unique (dst, src, *tail) tuples, in order."""
    pairs = ((t.split(">")[-1], t.split(">")[0]) for t in spec.split())
    return tuple(dict.fromkeys(p + tail for p in pairs))


_RELU = Param("reluMode", "ReluPreMode", ("NoRelu", "NormalRelu"), "NoRelu")
_ACC2VEC = Param("accToVecMode", "AccToVecMode",
                 ("SingleModeVec0", "SingleModeVec1", "DualModeSplitM", "DualModeSplitN"),
                 "SingleModeVec0")
_FMATRIX = Param("fmatrixMode", "SetFmatrixMode",
                 ("FMATRIX_A_AUTO", "FMATRIX_B_AUTO", "FMATRIX_A_MANUAL", "FMATRIX_B_MANUAL"),
                 "FMATRIX_A_MANUAL")

# Element-type vocabularies (section 6.5).
_CUBE_A2A3 = "i8 f16 bf16 f32"                                    # Mat -> Left/Right, same type
_CUBE_A5 = _CUBE_A2A3 + " e4m3 e5m2 hif8 e8m0 e2m1x2 e1m2x2"
_VEC = "i8 u8 i16 u16 i32 u32 f16 bf16 f32"                      # Vec -> Vec / Vec -> Mat
_ACC_A2A3 = "f32>f16 f32>bf16"                                    # Acc -> Mat, plain / relu
_ACC_A5 = "f32>f16 f32>bf16 f32>f32 i32>i32"                      # Acc -> Mat/Vec, plain / relu
_QUANT_A2A3 = "f32>i8 i32>i8 i32>u8 i32>f16 i32>i16"
_QUANT_A5 = "f32>i8 f32>u8 f32>hif8 f32>f16 f32>bf16 f32>e4m3 f32>f32 i32>i8 i32>u8 i32>f16 i32>bf16"
_BIAS_SCALING = "i32 f32 f16>f32 u64"                             # Mat -> Bias, Mat -> Scaling

_D = Operand("dst", role="out", group=None)
_S = Operand("src", group=None)
_FP = Operand("fp", locs=("Scaling",), group=None)
_PREQUANT = Operand("preQuantScalar", kind="scalar", locs=(), group=None, optional=True)
_ROW = Operand("indexRow", kind="scalar", locs=(), group=None)
_COL = Operand("indexCol", kind="scalar", locs=(), group=None)
_ROW0 = Operand("indexRow", kind="scalar", locs=(), group=None, optional=True)
_COL0 = Operand("indexCol", kind="scalar", locs=(), group=None, optional=True)
_TILE_ANY = ("Vec", "Mat", "Left", "Right", "Acc", "Bias", "Scaling", "ScaleLeft", "ScaleRight")

_ACC_NOTES = (
    "Acc -> Mat: src Nz f32/i32, dst Nz with 512-byte fractals and Cols * sizeof(dst) % 32 == 0 "
    "(a5 also ND/DN); ReLU is applied before the conversion; quant arithmetic is hardware-defined",
)

INSTRUCTIONS = (
    Instr("TEXTRACT", 0x1501, "movement",
          "dst[i, j] = src[indexRow + i, indexCol + j] over dst's shape",
          (Operand("dst", role="out", locs=("Left", "Right", "Mat", "ScaleLeft", "ScaleRight"),
                   group=None),
           Operand("src", locs=("Mat", "Acc", "Vec"), group=None), _PREQUANT, _ROW0, _COL0),
          {"a2a3": _dt(" ".join((_CUBE_A2A3, _ACC_A2A3, _QUANT_A2A3)), (None, None, None)),
           "a5": _dt(" ".join((_CUBE_A5, _VEC, _ACC_A5, _QUANT_A5)), (None, None, None))},
          pipe=PipeRule(("src", "dst"), {("Mat", "Left"): "MTE1", ("Mat", "Right"): "MTE1",
                                         ("Mat", "ScaleLeft"): "MTE1", ("Mat", "ScaleRight"): "MTE1",
                                         ("Acc", "Mat"): "FIX", ("Vec", "Mat"): "FIX"}, "MTE1"),
          params=(_RELU,), domain="dst", spec_ref="5.7, 5.9 n12, 6.5",
          notes=("pipe: MTE1 for Mat -> Left/Right (and a5 Mat -> ScaleLeft/ScaleRight); FIX for "
                 "Acc -> Mat and a5 Vec -> Mat",
                 "preQuantScalar (Acc source only) comes before indexRow in the C++ overload; the "
                 "plain overload omits it; indexRow and indexCol default to 0",
                 "NPU window = dst's static shape; a2a3 asserts indexRow + dst.Rows <= src.Rows and "
                 "indexCol + dst.Cols <= src.Cols; same dtype except from Acc",
                 "CPU sim copies from (indexRow, indexCol) to the end of src's valid region, asserts "
                 "that this equals dst's valid region, and does not build the relu/quant forms",
                 "a5 Vec -> Mat dtypes are an assumption (any Vec type, same type)") + _ACC_NOTES),
    Instr("TEXTRACT_FP", 0x1502, "movement",
          "Acc -> Mat window extract with per-channel quantisation parameters from fp",
          (Operand("dst", role="out", locs=("Mat",), group=None),
           Operand("src", locs=("Acc",), group=None), _FP, _ROW, _COL),
          {"a2a3": _dt(_QUANT_A2A3, ("u64", None, None)),
           "a5": _dt(_QUANT_A5, ("u64", None, None))},
          pipe="FIX", params=(_RELU,), domain="dst", spec_ref="5.7, 6.5",
          notes=_ACC_NOTES + ("no CPU sim implementation",)),
    Instr("TINSERT", 0x1503, "movement", "dst[indexRow + i, indexCol + j] = src[i, j] over src valid",
          (Operand("dst", role="inout", locs=("Mat",), group=None),
           Operand("src", locs=("Acc",), group=None), _PREQUANT, _ROW, _COL),
          {"a2a3": _dt(" ".join((_ACC_A2A3, _QUANT_A2A3)), (None, None, None)),
           "a5": _dt(" ".join((_ACC_A5, _QUANT_A5)), (None, None, None))},
          pipe="FIX", params=(_RELU,), domain="src", spec_ref="5.7, 6.5",
          notes=("NPU asserts indexRow + src.Rows <= dst.Rows and indexCol + src.Cols <= dst.Cols",
                 "preQuantScalar comes before indexRow in the C++ quant overload",
                 "a5 also has a non-ISA Vec(Nz) -> Mat insert used by TPUSH; not part of this entry",
                 "no CPU sim implementation") + _ACC_NOTES),
    Instr("TINSERT_FP", 0x1504, "movement",
          "Acc -> Mat insert at (indexRow, indexCol) with per-channel quantisation from fp",
          (Operand("dst", role="inout", locs=("Mat",), group=None),
           Operand("src", locs=("Acc",), group=None), _FP, _ROW, _COL),
          {"a2a3": _dt(_QUANT_A2A3, ("u64", None, None)),
           "a5": _dt(_QUANT_A5, ("u64", None, None))},
          pipe="FIX", params=(_RELU,), domain="src", spec_ref="5.7, 6.5",
          notes=_ACC_NOTES + ("no CPU sim implementation",)),
    Instr("TIMG2COL", 0x1505, "movement",
          "im2col of an NC1HWC0 feature map (ConvTile in L1) into a Left tile, using FMATRIX state",
          (Operand("dst", role="out", locs=("Left",)), Operand("src", locs=("Mat",)),
           Operand("posM", kind="scalar", locs=(), group=None, optional=True),
           Operand("posK", kind="scalar", locs=(), group=None, optional=True)),
          per_soc("i8 f16 bf16 f32", "i8 u8 i16 u16 i32 u32 f16 bf16 f32"),
          pipe="MTE1", params=(_FMATRIX,), spec_ref="5.7, 3.7",
          notes=("needs TSETFMATRIX (and the img2col repeat/padding state) set up first",
                 "posM and posK default to 0; src layout NC1HWC0 (or NDC1HWC0), dst of src's dtype",
                 "dtypes from the implementation (the doc gives none)",
                 "no CPU sim implementation")),
    Instr("TMOV", 0x1506, "movement", "dst = src, copied (and converted) between locations",
          (Operand("dst", role="out", locs=("Left", "Right", "Bias", "Scaling", "ScaleLeft",
                                            "ScaleRight", "Vec", "Mat"), group=None),
           Operand("src", locs=("Mat", "Vec", "Acc"), group=None), _PREQUANT),
          {"a2a3": _dt(" ".join((_CUBE_A2A3, _VEC, _BIAS_SCALING, _ACC_A2A3, _QUANT_A2A3)),
                       (None,)),
           "a5": _dt(" ".join((_CUBE_A5, _VEC, _BIAS_SCALING, _ACC_A5, _QUANT_A5)), (None,))},
          pipe=PipeRule(("src", "dst"), {("Mat", "Left"): "MTE1", ("Mat", "Right"): "MTE1",
                                         ("Mat", "Bias"): "MTE1", ("Mat", "ScaleLeft"): "MTE1",
                                         ("Mat", "ScaleRight"): "MTE1", ("Mat", "Scaling"): "FIX",
                                         ("Acc", "Mat"): "FIX", ("Acc", "Vec"): "FIX",
                                         ("Vec", "Mat"): "FIX", ("Vec", "Vec"): "V"}, "MTE1"),
          params=(_RELU, _ACC2VEC), domain="src", spec_ref="5.7, 5.9 n13, 6.5",
          notes=("pipe: MTE1 for Mat -> Left/Right/Bias; FIX for Mat -> Scaling, Acc -> Mat/Vec and "
                 "Vec -> Mat; V for Vec -> Vec",
                 "pairs: Mat -> Left/Right same type, equal Rows/Cols; Mat -> Bias Rows == 1, "
                 "Cols * sizeof % 64 == 0, i32->i32, f32->f32, f16->f32; Mat -> Scaling u64 only, "
                 "Rows == 1, Cols * 8 % 128 == 0; Vec -> Vec equal Rows/Cols; Vec -> Mat and "
                 "Acc -> Vec a5 only; Mat -> ScaleLeft/ScaleRight a5 only (MX scales)",
                 "accToVecMode (Acc -> Vec, a5) picks which vector core(s) receive the data",
                 "CPU sim copies the src valid region element by element with C++ conversion and "
                 "layout change, applies ReLU, and ignores accToVecMode, preQuantScalar and pair rules",
                 "Vec -> Vec dtypes are an assumption (any Vec type, same type)") + _ACC_NOTES),
    Instr("TMOV_FP", 0x1507, "movement",
          "Acc -> Mat (a5 also Vec) move with per-channel quantisation parameters from fp",
          (Operand("dst", role="out", locs=("Mat", "Vec"), group=None),
           Operand("src", locs=("Acc",), group=None), _FP),
          {"a2a3": _dt(_QUANT_A2A3, ("u64",)), "a5": _dt(_QUANT_A5, ("u64",))},
          pipe="FIX", params=(_RELU,), domain="src", spec_ref="5.7, 6.5",
          notes=("a2a3 has no Acc -> Vec path",
                 "CPU sim copies and ignores fp") + _ACC_NOTES),
    Instr("TFILLPAD", 0x1508, "movement",
          "dst = src inside src's valid region, dst's pad value elsewhere",
          (Operand("dst", role="out", locs=("Vec", "Mat")), Operand("src", locs=("Vec", "Mat"))),
          both(*_VEC.split()), spec_ref="5.7, 5.9 n14",
          notes=("dst and src have equal Rows/Cols; the pad value is dst's PadValue (not Null)",
                 "a2a3 pads right of src.validCol up to dst.Cols in every row, and rows "
                 "src.validRow .. dst.validRow - 1 only; the CPU sim pads the whole dst capacity",
                 "a2a3 Mat tiles: Nz layout and PadValue::Zero only",
                 "CPU sim builds this form only when dst and src are different Tile types")),
    Instr("TFILLPAD_INPLACE", 0x1509, "movement",
          "pad a tile in place: elements outside src's valid region get dst's pad value",
          (DST, SRC), both(*_VEC.split()), spec_ref="5.7",
          notes=("dst and src share storage",)),
    Instr("TFILLPAD_EXPAND", 0x150A, "movement",
          "dst = src inside src's valid region, pad elsewhere; dst may be larger than src",
          (DST, SRC), both(*_VEC.split()), spec_ref="5.7",
          notes=("dst.Rows >= src.Rows and dst.Cols >= src.Cols",)),
    Instr("TRESHAPE", 0x150B, "movement", "dst = src's bytes reinterpreted with dst's tile type",
          (Operand("dst", role="out", locs=_TILE_ANY, group=None),
           Operand("src", locs=_TILE_ANY, group=None)),
          {"a2a3": ((None, None),), "a5": ((None, None),)}, pipe="S", domain="src",
          spec_ref="5.7",
          notes=("same location and total bytes, no boxed <-> unboxed change; element types free",
                 "a2a3 aliases the storage (no data moves); the CPU sim copies the bytes and "
                 "additionally needs the same type, both floating or both integral")),
    Instr("TTRANS", 0x150C, "movement", "dst[j, i] = src[i, j]", (DST, SRC, TMP),
          both(*_VEC.split()), domain="src", spec_ref="5.7",
          notes=("a2a3 iterates src's valid region; a5 transposes the full static shape",
                 "dtypes from the implementation (any 1-, 2- or 4-byte type, dst the same size)",
                 "CPU sim: ND/DN only and tmp ignored")),
)
