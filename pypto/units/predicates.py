"""5.2 TCMP / 5.3 TCMPS: dst = packed predicate bits of (src0 cmpMode src1 | src cmpMode scalar).

cmpMode (EQ NE LT LE GT GE) is required. Floats compare as IEEE values (a NaN is unequal to
everything, so only NE is true; -0 == +0), integers as their type. Bit k of a mask byte b is the
result for element 8b+k (LSB first). The domain is the source's valid region (src0's for TCMP, as
the NPU does; src1's must cover it); dst's valid region is not used. Packing per SoC
(pto-isa-semantics 5.9 n5 and the Addendum):
* a2a3 (dst u8): row i's bits start at dst byte i * dst.Cols; dst needs validRow rows of
  ceil(validCol / 8) bytes. The NPU computes whole 256-byte repeats (64 f32/i32, 128 f16/i16/u16
  elements), so each row's bytes up to the repeat boundary are written: pypto writes 0 for every
  bit past validCol (the padding bits of a partial byte and the whole bytes after it), rows in
  order (a row's tail may be overwritten by the next row), clipped at the tile's end. i32 always
  compares EQ; TCMPS on i16/u16 compares the raw bits of src and of the converted scalar as halves.
* a5 (dst u32 or u8): one bit stream over the first validRow * validCol storage elements of the
  sources (row strides ignored), from dst byte 0, in whole 16-byte chunks (32 bytes for 8-bit
  sources); bits past the stream are 0; dst must hold ceil(validRow * validCol / 8) bytes.
Reference: conformance/ref_bits.py ``cmp`` / ``cmps``.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..errors import DTypeError, OperandError, TileError
from ..ir import guards as G
from ..ir.nodes import Expr, RtFloat, is_static
from ..ir.registry import Unit, register
from ..isa.instructions.elementwise import CMP_MODE
from . import bits_rules as R

LOOPS = f"{__package__}.predicates_lib"     # the numba loops: imported when a kernel is generated

MODES = CMP_MODE.values                      # EQ NE LT LE GT GE: the codes 0 .. 5
NATIVE, HALF, HALF_BITS = 0, 1, 2            # how a stored element is compared


# -- static rules -------------------------------------------------------------------------------
def mode_of(node) -> str:
    m = node.params.get("cmpMode")
    if m is None:
        raise OperandError(f"{node.name}: cmpMode is not set",
                           rule=f"{node.name} needs a comparison: cmpMode is one of {', '.join(MODES)} "
                                "(pto-isa's CmpMode has no default)",
                           fix=f"call pto.{node.name}(..., cmpMode=\"EQ\")")
    return m


def effective_mode(node, soc) -> int:
    """a2a3 compares i32 with EQ whatever cmpMode says."""
    src = node.operands[1]
    if soc.name == "a2a3" and src.type.dtype.short == "i32":
        return 0
    return MODES.index(mode_of(node))


def kind_of(node, soc) -> int:
    dt = node.operands[1].type.dtype.short
    if dt == "f16":
        return HALF
    if soc.name == "a2a3" and node.name == "TCMPS" and dt in ("i16", "u16"):
        return HALF_BITS
    return NATIVE


def repeat(node) -> int:
    """Elements per 256-byte repeat (a2a3) of the source type."""
    return 256 // node.operands[1].type.dtype.itemsize


def chunk(node) -> int:
    """Elements per written chunk of the a5 stream: 16 bytes of bits, 32 for 8-bit sources."""
    return 256 if node.operands[1].type.dtype.itemsize == 1 else 128


def _same_tile_type(node, i: int, j: int) -> None:
    a, b = node.operands[i], node.operands[j]
    same = a.type == b.type and a.dynamic == b.dynamic and (a.dynamic or tuple(a.valid) == tuple(b.valid))
    if not same:
        raise TileError(f"{node.name}: src0 {a.name} ({a.type}) and src1 {b.name} ({b.type}) are tiles of "
                        "different types",
                        rule=f"pto-isa's {node.name} takes src0 and src1 as one C++ tile type (shape, "
                             "layout, dtype and static valid region)",
                        fix="declare both sources alike (valid=pto.DYNAMIC for regions set at run time)")


def check_room(node, soc) -> None:
    dst, src = node.operands[0], node.operands[1]
    vr, vc = src.valid
    if soc.name == "a2a3":
        R.check_mask_rows(node, 0, vr, vc)
    elif is_static(vr) and is_static(vc) and R.mask_bytes(vr * vc) > dst.type.nbytes:
        raise R.mask_stream_error(node, 0, vr * vc)


def check_cmp(node, soc) -> None:
    mode_of(node)
    _same_tile_type(node, 1, 2)
    R.check_covers_src(node, 2, 1)
    check_room(node, soc)


def check_cmps(node, soc) -> None:
    mode_of(node)
    src, s = node.operands[1], node.operands[2]
    dt = src.type.dtype
    if dt.is_int and isinstance(s, (Expr, RtFloat)) and (isinstance(s, RtFloat) or s.dtype == "f64"):
        raise DTypeError(f"{node.name}: runtime scalar {s} is a float but src is {dt.name}",
                         rule="the scalar is converted to src's element type",
                         fix="pass an int scalar for integer tiles")
    if not isinstance(s, Expr):
        L.check_scalar(node.name, "scalar", s, dt)
    check_room(node, soc)


# -- lowerings ------------------------------------------------------------------------------------
def _room_args(node) -> tuple:
    d = node.operands[0].type
    return (L.lit(d.rows), L.lit(d.cols * d.dtype.itemsize))


def lower_cmp(node, soc) -> list[L.Call]:
    dst, a, b = node.operands
    m, k = L.lit(effective_mode(node, soc)), L.lit(kind_of(node, soc))
    if soc.name == "a2a3":
        return [L.Call(L.Fn(LOOPS, "cmp_rows"), (L.tile(dst), L.tile(a), L.tile(b), m, k,
                                                 L.lit(repeat(node))) + _room_args(node) + (L.err(),))]
    return [L.Call(L.Fn(LOOPS, "cmp_stream"), (L.tile(dst), L.tile(a), L.tile(b), m, k,
                                               L.lit(chunk(node)), L.err()))]


def lower_cmps(node, soc) -> list[L.Call]:
    dst, a, s = node.operands
    dt = a.type.dtype
    kind = kind_of(node, soc)
    m, k = L.lit(effective_mode(node, soc)), L.lit(kind)
    checks, arg = L.scalar_operand(2, s, dt)
    if soc.name == "a2a3":
        return checks + [L.Call(L.Fn(LOOPS, "cmps_rows"), (L.tile(dst), L.tile(a), arg, m, k,
                                                           L.lit(repeat(node))) + _room_args(node) + (L.err(),))]
    return checks + [L.Call(L.Fn(LOOPS, "cmps_stream"), (L.tile(dst), L.tile(a), arg, m, k,
                                                         L.lit(chunk(node)), L.err()))]


# -- C++ ----------------------------------------------------------------------------------------------
def room_guards(node, soc, cx) -> list[str]:
    """The run-time dst room check (and TCMP's src1 coverage) before the instruction."""
    dst, src = node.operands[0], node.operands[1]
    vr, vc = (cx.expr(v) for v in src.valid)
    out: list[str] = []
    if node.name == "TCMP" and not all(is_static(v) for v in src.valid + node.operands[2].valid):
        s1 = node.operands[2]
        r1, c1 = (cx.expr(v) for v in s1.valid)
        out += R.guard(cx, node, f"{r1} < {vr} || {c1} < {vc}", R.COVERS, "2", r1, c1, "1")
    if all(is_static(v) for v in src.valid):
        return out
    if soc.name == "a2a3":
        rb = dst.type.cols * dst.type.dtype.itemsize
        out += R.guard(cx, node, f"{vr} > {dst.type.rows} || ({vc} + 7) / 8 > {rb}", R.MASK_ROWS, "0", vr, vc)
    else:
        out += R.guard(cx, node, f"({vr} * {vc} + 7) / 8 > {dst.type.nbytes}", R.MASK_STREAM, "0",
                       f"{vr} * {vc}")
    return out


def emit_cmp(node, soc, cx) -> list[str]:
    return room_guards(node, soc, cx) + [E.call(node.name, params=True)(node, soc, cx)]


def guards_cmps(node, soc) -> list:
    return G.scalar(2, node.operands[2], node.operands[1].type.dtype)


register(Unit("TCMP", check=check_cmp, sim=lower_cmp, seed="cmp", seed_params=("cmpMode",),
              emit=emit_cmp))
register(Unit("TCMPS", check=check_cmps, sim=lower_cmps, seed="cmps", seed_params=("cmpMode",),
              emit=emit_cmp, guards=guards_cmps))
R.decoder("TCMP")
R.decoder("TCMPS")
