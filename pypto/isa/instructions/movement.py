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
_CUBE_A5 = _CUBE_A2A3 + " e4m3 e5m2 hif8 e8m0 fp4e2m1x2 fp4e1m2x2"
_VEC = "i8 u8 i16 u16 i32 u32 f16 bf16 f32"                      # Vec -> Vec / Vec -> Mat
_VEC_A5 = _VEC + " e4m3 e5m2 hif8"                                # a5 adds the 8-bit floats
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
          (Operand("dst", role="out", locs=("Left", "Right", "Mat", "ScaleLeft", "ScaleRight", "Vec"),
                   group=None),
           Operand("src", locs=("Mat", "Acc", "Vec"), group=None), _ROW0, _COL0),
          {"a2a3": _dt(" ".join((_CUBE_A2A3, _VEC, _ACC_A2A3, _QUANT_A2A3)), (None, None)),
           "a5": _dt(" ".join((_CUBE_A5, _VEC_A5, _ACC_A5, _QUANT_A5)), (None, None))},
          pipe=PipeRule(("src", "dst"), {("Mat", "Left"): "MTE1", ("Mat", "Right"): "MTE1",
                                         ("Mat", "ScaleLeft"): "MTE1", ("Mat", "ScaleRight"): "MTE1",
                                         ("Acc", "Mat"): "FIX", ("Vec", "Mat"): "FIX",
                                         ("Vec", "Vec"): "V"}, "MTE1"),
          params=(_RELU,), domain="dst", spec_ref="5.7, 5.9 n12, 6.5",
          overloads=((Operand("dst", role="out", locs=("Mat",), group=None),
                      Operand("src", locs=("Acc",), group=None),
                      Operand("preQuantScalar", kind="scalar", locs=(), group=None), _ROW, _COL),),
          notes=("pipe: MTE1 for Mat -> Left/Right (and a5 Mat -> ScaleLeft/ScaleRight); FIX for "
                 "Acc -> Mat and a5 Vec -> Mat; V for Vec -> Vec (pypto's)",
                 "the quant overload TEXTRACT(dst, src, preQuantScalar, indexRow, indexCol) is Acc -> "
                 "Mat only; in the plain form indexRow and indexCol default to 0",
                 "NPU window = dst's static shape; a2a3 asserts indexRow + dst.Rows <= src.Rows and "
                 "indexCol + dst.Cols <= src.Cols; same dtype except from Acc",
                 "Vec -> Vec: no NPU implements it (a2a3 refuses the pair, a5 compiles it to nothing); "
                 "pypto defines it as the window copy dst[i, j] = src[indexRow + i, indexCol + j] over "
                 "dst's valid region, ND or DN tiles, same dtype; the window must lie inside src's "
                 "valid region (static offsets: a trace-time IndexRangeError; runtime offsets: a "
                 "run-time one in the simulator, nothing written; the NPU backends emit no guard)",
                 "the other location pairs come with the matrix issue (NotSimulatedError)",
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
          (Operand("dst", role="inout", locs=("Mat", "Vec"), group=None),
           Operand("src", locs=("Acc", "Vec"), group=None), _PREQUANT, _ROW, _COL),
          {"a2a3": _dt(" ".join((_ACC_A2A3, _QUANT_A2A3, _VEC)), (None, None, None)),
           "a5": _dt(" ".join((_ACC_A5, _QUANT_A5, _VEC_A5)), (None, None, None))},
          pipe=PipeRule(("src", "dst"), {("Acc", "Mat"): "FIX", ("Vec", "Vec"): "V"}, "FIX"),
          params=(_RELU,), domain="src", spec_ref="5.7, 6.5",
          notes=("NPU asserts indexRow + src.Rows <= dst.Rows and indexCol + src.Cols <= dst.Cols",
                 "preQuantScalar comes before indexRow in the C++ quant overload",
                 "a5 also has a non-ISA Vec(Nz) -> Mat insert used by TPUSH; not part of this entry",
                 "Vec -> Vec: no NPU implements it; pypto defines it as dst[indexRow + i, indexCol + "
                 "j] = src[i, j] over src's valid region, ND or DN tiles, same dtype, the window "
                 "inside dst's valid region (static offsets: a trace-time IndexRangeError; runtime "
                 "offsets: a run-time one, nothing written); pipe V (pypto's)",
                 "Acc -> Mat comes with the matrix issue (NotSimulatedError)",
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
           "a5": _dt(" ".join((_CUBE_A5, _VEC_A5, _BIAS_SCALING, _ACC_A5, _QUANT_A5)), (None,))},
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
                 "Vec -> Vec (same dtype, equal Rows and Cols): ND -> ND on both SoCs, copying dst[r, "
                 "c] = src[r, c] over min(src valid, dst valid); a2a3 moves whole 32-byte blocks, so "
                 "each copied row also takes src's columns up to the end of the last partial block "
                 "(whole rows when dst's static valid width or the copied width is Cols); a5 copies "
                 "exactly the region",
                 "a5 ND -> Nz over src's valid region: element (r, c) lands at ((c // c0) * V + r) * c0 "
                 "+ c % c0 with V = roundup(src.validRow, 16), plus one when dst holds (src.Rows + 1) * "
                 "src.Cols elements (the NPU's bank-conflict padding); this is dst's Nz layout when V "
                 "equals dst.Rows; a5 ND -> Nz dtypes f16 bf16 f32 i32 i8 e4m3 e5m2 hif8",
                 "DN and other boxed Vec tiles have no NPU TMOV path (the NPU copies rows at the row "
                 "stride): a LayoutError; moves between other locations come with the matrix issue",
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
          per_soc(_VEC, _VEC_A5), spec_ref="5.7, 5.9 n14",
          notes=("dst and src have equal Rows/Cols and one dtype; the pad value is dst's PadValue "
                 "(not Null; the TLOAD pad table: float Min/Max -inf/+inf, i8 Min -1, fp8 and hif8 0)",
                 "NPU (a2a3 and a5): rows r < src.validRow get dst[r, c] = src[r, c] for c < "
                 "src.validCol and the pad value for src.validCol <= c < dst.Cols; rows src.validRow "
                 "<= r < dst.validRow are padded across all dst.Cols; every other element keeps its "
                 "contents (a2a3 does nothing at all when dst's valid region is empty)",
                 "pypto's choice: the padded region is written beyond dst's valid columns, but dst's "
                 "valid region does not change (an instruction never changes a valid region: "
                 "set_valid after TFILLPAD to compute on the padded tile)",
                 "a2a3 skips the partial 32-byte block after src.validCol when dst and src have the "
                 "same PadValue (it assumes TLOAD padded it); pypto pads it always",
                 "Vec tiles ND only (the NPU addresses rows at Cols); a2a3 Mat tiles (Nz, PadZero) "
                 "come with the matrix issue",
                 "CPU sim pads the whole dst capacity, and builds this form only when dst and src are "
                 "different Tile types")),
    Instr("TFILLPAD_INPLACE", 0x1509, "movement",
          "pad a tile in place: elements outside src's valid region get dst's pad value",
          (Operand("dst", role="inout", layouts=("ND",)), Operand("src", layouts=("ND",))),
          per_soc(_VEC, _VEC_A5), spec_ref="5.7, 5.9 n14",
          notes=("dst and src share storage (usually one tile); nothing is copied: dst's elements "
                 "inside src's valid region keep their contents",
                 "the padded region is TFILLPAD's (rows < src.validRow from src.validCol to dst.Cols, "
                 "rows src.validRow .. dst.validRow - 1 whole); equal Rows/Cols; dst's valid region "
                 "does not change",
                 "CPU sim pads the whole capacity outside src's valid region")),
    Instr("TFILLPAD_EXPAND", 0x150A, "movement",
          "dst = src inside src's valid region, pad elsewhere; dst may be larger than src",
          (Operand("dst", role="out", layouts=("ND",)), Operand("src", layouts=("ND",))),
          per_soc(_VEC, _VEC_A5), spec_ref="5.7, 5.9 n14",
          notes=("dst.Rows >= src.Rows and dst.Cols >= src.Cols; otherwise TFILLPAD's rule (the "
                 "padded region reaches dst.Cols); dst's valid region does not change",
                 "CPU sim pads the whole dst capacity outside src's valid region")),
    Instr("TRESHAPE", 0x150B, "movement", "dst = src's bytes reinterpreted with dst's tile type",
          (Operand("dst", role="out", locs=_TILE_ANY, group=None),
           Operand("src", locs=_TILE_ANY, group=None)),
          {"a2a3": ((None, None),), "a5": ((None, None),)}, pipe="S", domain="src",
          spec_ref="5.7",
          notes=("same location and total bytes, no boxed <-> unboxed change; element types free",
                 "both SoCs alias: TRESHAPE binds dst to src's address (TASSIGN(dst, src.data())); no "
                 "data moves",
                 "pypto models the alias: dst gets src's address when the kernel is traced, so dst "
                 "and src name the same bytes for the whole kernel (a write through one is seen "
                 "through the other, before and after TRESHAPE); dst must not already live "
                 "elsewhere (used earlier, or TASSIGNed to another address: a TileError), and src "
                 "must have a trace-time address",
                 "dst keeps its own valid region",
                 "the CPU sim copies the bytes (no alias) and additionally needs the same type, both "
                 "floating or both integral")),
    Instr("TTRANS", 0x150C, "movement", "dst[j, i] = src[i, j]",
          (Operand("dst", role="out", layouts=("ND",)), Operand("src", layouts=("ND",)),
           Operand("tmp", role="tmp", layouts=("ND",), region="whole")),
          per_soc(_VEC, _VEC_A5), domain="src", spec_ref="5.7", seed="trans",
          notes=("a2a3 iterates src's valid region: dst[j, i] = src[i, j] for i < src.validRow, j < "
                 "src.validCol (run-time check: src.validCol <= dst.Rows, src.validRow <= dst.Cols); "
                 "dst's valid region is not read",
                 "a5 transposes the full static shape: i < src.Rows, j < src.Cols (needs dst.Rows >= "
                 "src.Cols and dst.Cols >= src.Rows)",
                 "src, dst and tmp are ND tiles of one dtype; a2a3 uses tmp as scratch (at least "
                 "src.Cols * roundup(src.Rows, 16) elements, 32 rows for 1-byte types); pypto leaves "
                 "tmp's contents unchanged",
                 "a2a3 also writes dst columns src.validRow .. roundup(src.validRow, 32 bytes) of each "
                 "written row with scratch contents; pypto writes only the transposed region",
                 "a5 takes another code path for tall sources (ceil(Rows * sizeof / 256) > Cols) whose "
                 "indexing pypto does not reproduce; pypto transposes as above",
                 "dtypes from the implementation (any 1-, 2- or 4-byte type, dst the same size)",
                 "CPU sim: any layouts, iterates src's valid region, tmp ignored")),
)
