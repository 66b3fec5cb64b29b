"""5.3 tile-scalar: TEXPANDS TSUBS TDIVS TMINS TMAXS TLRELU (TADDS TMULS: tile_scalar.py).

The scalar is converted to the tile's element type first (TileData::DType; it must fit it).
* TEXPANDS(dst, scalar): every element of dst's valid region = scalar.
* TSUBS: src - scalar. a2a3 adds (T)(-(float)scalar), so an i32 scalar passes through float32
  (|scalar| > 2^24 is rounded to 24 bits first); integers wrap.
* TDIVS(dst, src, scalar) = src / scalar and TDIVS(dst, scalar, src) = scalar / src (two C++
  overloads). Floats divide (correctly rounded; x / 0 is IEEE). a5 tile / scalar [CONFLICT]: the
  ISA page multiplies by the reciprocal, the code at the pinned snapshot divides; pypto divides,
  and ``recip=True`` runs the ISA page's form, TMULS(dst, src, T(1.0f / scalar)) with 1/0 = +inf.
  Integers (a scalar loop on both SoCs) divide like C, truncating toward zero; x / 0 is undefined
  on the NPU: pypto gives -1 (all ones) and reports it with checks="strict". On a2a3 float
  TDIVS fills dst with the scalar before dividing, so dst and src must not share storage.
* TMINS / TMAXS: min / max with the scalar; a NaN operand propagates quieted.
* TLRELU(dst, src, slope): src > 0 ? src : src * slope.
f16/bf16 compute in f32 and round once. Reference: conformance/ref_arith.py.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..errors import OperandError
from ..ir.registry import Unit, register
from .arith_common import check_scalar_operand, require_unit_separate, scalar_guards, scalar_slot

OPS = f"{__package__}.arith_ops"
LIB_OPS = f"{L.LIB}.ops"

# instruction -> (module, float op, integer op)
SCALAR = {"TSUBS": (OPS, "fsubs", "isubs"), "TMINS": (LIB_OPS, "fmin", "imin"),
          "TMAXS": (LIB_OPS, "fmax", "imax"), "TLRELU": (OPS, "lrelu", None)}


def lower_scalar(node, soc) -> list[L.Call]:
    dst, a, s = node.operands
    dt = dst.type.dtype
    mod, fop, iop = SCALAR[node.name]
    op = fop if dt.is_float else iop
    if node.name == "TSUBS" and soc.name == "a2a3" and dt.short == "i32":
        op = "isubs_a2a3_i32"
    pre, arg = L.scalar_operand(2, s, dt)
    return pre + [L.Call(L.ew("scalar", mod, op, L.codec(dt)), (L.tile(dst), L.tile(a), arg, L.err()))]


def lower_expands(node, soc) -> list[L.Call]:
    from . import arith_loops as AL      # numba: only when a kernel is generated
    dst, s = node.operands
    dt = dst.type.dtype
    pre, arg = L.scalar_operand(1, s, dt)
    return pre + [L.Call(AL.fn("fill", OPS, "", L.codec(dt)), (L.tile(dst), arg, L.err()))]


# -- TDIVS -----------------------------------------------------------------------------------------
def _divs_parts(node):
    """(dst, src tile, scalar, scalar operand index, scalar first?)"""
    k = scalar_slot(node)
    dst = node.operands[0]
    src = node.operands[2 if k == 1 else 1]
    return dst, src, node.operands[k], k, k == 1


def check_divs(node, soc) -> None:
    check_scalar_operand(node, soc)
    dst, src, _, _, first = _divs_parts(node)
    dt = dst.type.dtype
    if node.params.get("recip"):
        if soc.name != "a5" or not dt.is_float or first:
            raise OperandError(
                f"{node.name}: recip=True on {soc.name} with {dt.name} "
                f"{'scalar / src' if first else 'src / scalar'}",
                rule="recip=True selects the a5 ISA page's float tile / scalar form "
                     "(src * (1 / scalar)); it exists for TDIVS(dst, src, scalar) on a5 with "
                     "f16 or f32 only",
                fix="leave recip at its default (division)")
    require_unit_separate(node, soc, "its float path fills dst with the scalar before it divides")


def separate_divs(dt, soc) -> tuple[str, ...]:
    return ("dst", "src") if soc.name == "a2a3" and dt.is_float else ()


def lower_divs(node, soc) -> list[L.Call]:
    from . import arith_loops as AL      # numba: only when a kernel is generated
    dst, src, s, k, first = _divs_parts(node)
    dt = dst.type.dtype
    pre, arg = L.scalar_operand(k, s, dt)
    if dt.is_int:
        op = "isdiv" if first else "idiv"
        checks = [AL.zero_divisor_call(2, src, dst)] if first else [AL.zero_divisor_call(k, arg, dst)]
    else:
        checks = []
        op = "fsdiv" if first else "fdivs"
        if node.params.get("recip"):
            op = "divs_recip_f16" if dt.short == "f16" else "divs_recip_f32"
    fn = L.ew("scalar", OPS, op, L.codec(dt))
    return pre + checks + [L.Call(fn, (L.tile(dst), L.tile(src), arg, L.err()))]


def emit_divs(node, soc, cx) -> str:
    """TDIVS in either operand order; recip=True emits the ISA page's a5 form as a TMULS."""
    if not node.params.get("recip"):
        return E.call("TDIVS")(node, soc, cx)
    dst, src, s, _, _ = _divs_parts(node)
    t = dst.type.dtype.cxx
    sc = cx.scalar(s, dst.type.dtype)
    return (f"TMULS({cx.operand(dst)}, {cx.operand(src)}, static_cast<{t}>(static_cast<float>({sc}) != "
            f"0.0f ? 1.0f / static_cast<float>({sc}) : __builtin_inff()));")


for _name in SCALAR:
    register(Unit(_name, check=check_scalar_operand, sim=lower_scalar, seed="scalar",
                  emit=E.call(_name), guards=scalar_guards))
register(Unit("TDIVS", check=check_divs, sim=lower_divs, seed="scalar_to", seed_params=("recip",),
              emit=emit_divs, guards=scalar_guards, separate=separate_divs))
register(Unit("TEXPANDS", check=check_scalar_operand, sim=lower_expands, seed="fill",
              emit=E.call("TEXPANDS"), guards=scalar_guards))
