"""The fixpipe: what happens to data leaving L0C (an Acc tile) for GM (TSTORE, TSTORE_FP), L1 (TMOV,
TEXTRACT, TINSERT and their _FP forms to Mat) or, on a5, UB (TMOV to Vec). 4.4, 6.5.

Each element is converted once: ReLU (reluMode=NormalRelu) first, then the quantisation scale,
then dst's type. The pairs each path takes are the tables below (source > destination).
The NPU's quantisation arithmetic is hardware-defined; pypto's documented reading:
* the scale is an f32 whose bits are the low 32 bits of the u64 preQuantScalar (scalar forms) or
  of fp[0, j] (the Scaling tile of the _FP forms, one per column j); the upper bits (the int8
  offset and sign control of the real register) are ignored;
* value * scale is computed exactly, then rounded to nearest even; integer destinations saturate,
  float destinations round to the nearest value without saturating (overflow gives inf, NaN stays
  NaN), as IEEE conversion does.
Plain conversions (f32 -> f16/bf16) round to nearest even; i32 -> i32 and f32 -> f32 are exact.
"""
from __future__ import annotations

from ..backends.sim import lowering as L
from ..backends.sim.lib.codes import CAST_RINT, CODES, Q_NONE, Q_SCALAR, Q_VECTOR, SAT_CLAMP, SAT_WRAP
from ..errors import DTypeError, OperandError
from ..ir.nodes import TileVar, is_runtime


def pairs(spec: str) -> frozenset:
    """'f32>f16 i32>i32' -> {(src, dst), ...}."""
    return frozenset(tuple(p.split(">")) for p in spec.split())


# (path, quant) -> SoC -> legal (src, dst) pairs; quant is "none" (plain or ReLU), "scalar", "vector"
PAIRS = {
    ("gm", "none"): {s: pairs("f32>f32 f32>f16 f32>bf16 i32>i32") for s in ("a2a3", "a5")},
    ("gm", "scalar"): {s: pairs("f32>i8 f32>u8 f32>f16 f32>bf16 i32>i8 i32>u8 i32>f16 i32>i16")
                       for s in ("a2a3", "a5")},
    ("gm", "vector"): {s: pairs("f32>i8 f32>u8 i32>i8 i32>u8 i32>f16 i32>i16") for s in ("a2a3", "a5")},
    ("tile", "none"): {"a2a3": pairs("f32>f16 f32>bf16"),
                       "a5": pairs("f32>f16 f32>bf16 f32>f32 i32>i32")},
    ("tile", "scalar"): {"a2a3": pairs("f32>i8 i32>i8 i32>u8 i32>f16 i32>i16"),
                         "a5": pairs("f32>i8 f32>u8 f32>hif8 f32>f16 f32>bf16 f32>e4m3 f32>f32 "
                                      "i32>i8 i32>u8 i32>f16 i32>bf16")},
}
PAIRS[("tile", "vector")] = PAIRS[("tile", "scalar")]
_WHAT = {"none": "plain (or ReLU)", "scalar": "scalar-quantised (preQuantScalar)",
         "vector": "vector-quantised (an fp Scaling tile)"}


def check_pair(node, soc, path: str, quant: str, src: TileVar, dst_dtype, dst_name: str) -> None:
    """Refuse a conversion the fixpipe does not make on this SoC, listing the legal ones."""
    pair = (src.type.dtype.short, dst_dtype.short)
    legal = PAIRS[(path, quant)][soc.name]
    if pair not in legal:
        where = "GM" if path == "gm" else "a tile"
        listed = ", ".join(f"{s}->{d}" for s, d in sorted(legal))
        raise DTypeError(f"{node.name}: a {_WHAT[quant]} move from Acc {src.name} ({src.type.dtype.name}) "
                         f"to {where} {dst_name} ({dst_dtype.name}) on {soc.name}",
                         rule=f"the fixpipe's {_WHAT[quant]} conversions from L0C to {where} on "
                              f"{soc.name}: {listed} (pto-isa-semantics 4.4, 6.5)",
                         fix="pick a legal pair: convert further with TCVT on a Vec tile, or use "
                             "the quantising form")


def check_scalar(node, x) -> None:
    if isinstance(x, bool) or not (isinstance(x, int) or (is_runtime(x) and getattr(x, "dtype", "i64") == "i64")):
        raise OperandError(f"{node.name}: preQuantScalar {x!r} is not an integer",
                           rule="preQuantScalar is a u64 whose low 32 bits are the f32 scale",
                           fix="pass pypto.quant_scale(0.5) (or the u64 bit pattern)")


def args(src: TileVar, dst_dtype, relu: bool, scalar, fp: TileVar | None) -> tuple:
    """The conversion arguments of lib/cube.py's convert_window / store_acc:
    scode, dcode, relu, qmode, scalar, fp tile (src stands in when absent), rmode, sat."""
    qmode = Q_VECTOR if fp is not None else (Q_SCALAR if scalar is not None else Q_NONE)
    return (L.lit(CODES[src.type.dtype.short]), L.lit(CODES[dst_dtype.short]), L.lit(relu), L.lit(qmode),
            ("int", scalar if scalar is not None else 0), L.tile(fp if fp is not None else src),
            L.lit(CAST_RINT), L.lit(SAT_CLAMP if dst_dtype.is_int else SAT_WRAP))


def relu_of(node) -> bool:
    return node.params.get("reluMode", "NoRelu") == "NormalRelu"


__all__ = ["pairs", "PAIRS", "check_pair", "check_scalar", "args", "relu_of"]
