"""The TMATMUL family on the cube (5.6, 6.2-6.4): TMATMUL, TMATMUL_ACC, TMATMUL_BIAS, TGEMV,
TGEMV_ACC, TGEMV_BIAS, and on a5 TMATMUL_MX / TGEMV_MX.

* Sizes: m = a.validRow, k = a.validCol, n = b.validCol (TGEMV*: m = 1, k = b.validRow), each in
  1 .. 4095 (a run-time RANGE fault otherwise); b.validRow and c's valid region are not read.
* Static shapes: a.Rows == c.Rows, a.Cols == b.Rows, b.Cols == c.Cols. Layouts are the cube's
  own: Left Zz on a2a3 and Nz on a5 (pto.TileLeft), Right Zn, Acc Nz with 16 x 16 boxes, Bias a
  1-row ND tile of c's type, MX scales ScaleLeft Zz / ScaleRight Nn with 16 x 2 boxes.
* TMATMUL_ACC follows the NPU: cOut += a @ b from cOut's contents; the NPU ignores cIn, so pypto
  requires cIn to be cOut (or left out) rather than silently ignoring another tile.
* a2a3 runs TMATMUL* with m == 1 as m = 16: 16 accumulator rows are written (from whatever a's
  rows 1..15 hold); TGEMV* run with m = 1 on both SoCs.
* Integer accumulation wraps modulo 2^32; float accumulation is f32 (BLAS sgemm order).
* The MX forms (a5): each operand element times 2^(e - 127) of its e8m0 scale (one per 32 K
  elements: aScale[i, k // 32], bScale[k // 32, j]), products summed exactly and rounded to f32.
  fp8 operands, or packed fp4 pairs: a pypto fp4 element is one byte holding two consecutive K
  values (low nibble first), so a's columns and b's rows count pairs and K = 2 * a.validCol
  (pto-isa's C++ counts values: K = a.validCol there).
Reference: conformance/ref_cube.py.
"""
from __future__ import annotations

from ..backends import errcodes as EC
from ..backends.sim import lowering as L
from ..backends.sim.lib.codes import CODES, MAX_MKN, MX_CODES
from ..errors import LayoutError, OperandError, TileShapeError
from ..ir import guards as G
from ..ir.nodes import TileVar, binop
from ..ir.registry import Unit, register
from ..ir.verify import slots_of
from ..isa import TABLE

# the cube's multiply by (accumulator dtype, a 1-byte float operand): fp8 / hif8 widen through a
# table of decoded values, which an f16 / bf16 / f32 multiply then never compiles
_FN = {("f32", False): "cube.mma_float", ("f32", True): "cube.mma_float8", ("i32", False): "cube.mma_int"}
# the cube's operand layouts per SoC (pto-isa-semantics 3.4, 6.2): (layout name, fractal)
CUBE_LAYOUTS = {
    "a2a3": {"a": ("Zz", 512), "b": ("Zn", 512), "c": ("Nz", 1024)},
    "a5": {"a": ("Nz", 512), "b": ("Zn", 512), "c": ("Nz", 1024),
           "aScale": ("Zz", 32), "bScale": ("Nn", 32)},
}
_ALIAS = {"a": "pto.TileLeft", "b": "pto.TileRight", "c": "pto.TileAcc", "cOut": "pto.TileAcc",
          "aScale": "pto.TileLeftScale", "bScale": "pto.TileRightScale"}


def _named(node) -> dict:
    """The operands by the names of the table slots they fill (the overload their kinds and
    locations chose: ir/verify.slots_of)."""
    return {o.name: x for o, x in zip(slots_of(node.name, node.operands), node.operands)}


def parts(node) -> dict[str, TileVar]:
    """The operands by role: c (the accumulator), a, b, and bias / aScale / bScale when given;
    a cIn must be c itself."""
    named = _named(node)
    c = named.pop("cOut", None) or named.pop("c")
    c_in = named.pop("cIn", None)
    if c_in is not None:
        _same_acc(node, c, c_in)
    return {"c": c, **named}


def _mx_acc(node) -> bool:
    """The MX accumulate overload (cOut, cIn, a, aScale, b, bScale)."""
    return "cIn" in _named(node)


def _same_acc(node, c: TileVar, c_in: TileVar) -> None:
    if c_in is not c:
        short = f"{node.name}({c.name}, a, b)" if node.name.endswith("_ACC") else \
            f"{node.name}({c.name}, {c.name}, a, aScale, b, bScale)"
        raise OperandError(f"{node.name}: cIn {c_in.name} is not cOut {c.name}",
                           rule=f"the NPU's {node.name} accumulates into cOut's own contents "
                                "and ignores cIn (pto-isa's CPU sim computes cOut = cIn + a @ b "
                                "instead), so a cIn other than cOut means different things on "
                                "the two",
                           fix=f"pass {c.name} as both cOut and cIn: {short}")


def require_layout(node, soc, role: str, t: TileVar) -> None:
    """The tile in the cube's operand ``role`` has the layout the cube reads on this SoC."""
    if role not in CUBE_LAYOUTS[soc.name]:
        return
    want, fractal = CUBE_LAYOUTS[soc.name][role]
    ty = t.type
    if ty.layout_name != want or ty.fractal != fractal:
        raise LayoutError(f"{node.name}: {role} {t.name} is a {ty.layout_name} tile with "
                          f"{ty.fractal}-byte fractals",
                          rule=f"on {soc.name} the cube reads {role} as {want} with {fractal}-byte "
                               "fractals (pto-isa-semantics 3.4, 6.2)",
                          fix=f"declare {t.name} with {_ALIAS.get(role, 'the alias')}(...)")


def check_matmul(node, soc) -> None:
    p = parts(node)
    a, b, c = p["a"], p["b"], p["c"]
    for role in ("a", "b", "c", "aScale", "bScale"):
        if role in p:
            require_layout(node, soc, role, p[role])
    for what, x, y in (("a.Rows == c.Rows", a.type.rows, c.type.rows),
                       ("a.Cols == b.Rows", a.type.cols, b.type.rows),
                       ("b.Cols == c.Cols", b.type.cols, c.type.cols)):
        if x != y:
            raise TileShapeError(f"{node.name}: {what} fails ({x} != {y}) for a {a.name} "
                                 f"{a.type.rows} x {a.type.cols}, b {b.name} {b.type.rows} x "
                                 f"{b.type.cols}, c {c.name} {c.type.rows} x {c.type.cols}",
                                 rule="the cube's static shapes: a.Rows == c.Rows, a.Cols == b.Rows, "
                                      "b.Cols == c.Cols (pto-isa-semantics 6.2)",
                                 fix="declare the three tiles as (M, K), (K, N) and (M, N); use "
                                     "valid regions for smaller products")
    bias = p.get("bias")
    if bias is not None and (bias.type.rows != 1 or bias.type.layout_name != "ND"
                             or bias.type.cols < c.type.cols):
        raise TileShapeError(f"{node.name}: bias {bias.name} is a {bias.type.layout_name} "
                             f"{bias.type.rows} x {bias.type.cols} tile",
                             rule="a Bias tile is one ND row with at least c.Cols elements",
                             fix=f"declare it pto.TileBias({bias.type.dtype.name}, {c.type.cols})")
    if node.name.endswith("_MX"):
        _check_mx(node, a, b, p["aScale"], p["bScale"])


def _check_mx(node, a, b, sa, sb) -> None:
    """K is a multiple of 64 values; one e8m0 scale per 32 K values: aScale (M, K/32), bScale
    (K/32, N). fp4 tiles count pairs, so their K is twice a.Cols."""
    lanes = a.type.dtype.lanes
    k = a.type.cols * lanes
    if k % 64:
        unit = f" fp4 pairs ({k} values)" if lanes > 1 else ""
        raise TileShapeError(f"{node.name}: a {a.name} has {a.type.cols} columns{unit}",
                             rule="the MX forms need K % 64 == 0 (pto-isa-semantics 6.3: a.Cols % 64 "
                                  "in values; a pypto fp4 column is a pair of values)",
                             fix=f"declare a (and b's rows) as a multiple of {64 // lanes}")
    k32 = k // 32
    for what, t, want in (("aScale", sa, (a.type.rows, k32)), ("bScale", sb, (k32, b.type.cols))):
        if (t.type.rows, t.type.cols) != want:
            raise TileShapeError(f"{node.name}: {what} {t.name} is {t.type.rows} x {t.type.cols}",
                                 rule=f"{what} holds one scale per 32 K values: {want[0]} x "
                                      f"{want[1]} for a {a.type.rows} x {a.type.cols} a and a "
                                      f"{b.type.rows} x {b.type.cols} b"
                                      + (" (fp4 pairs: K = 2 * a.Cols)" if lanes > 1 else ""),
                                 fix=f"declare {t.name} with shape {want}")


def mkn_guards(node, soc) -> list[G.Guard]:
    """m, k and n as the cube reads them, each in 1 .. 4095: the simulator's RANGE fault, emitted
    before the instruction in the NPU's C++ too (the chip only asserts it in debug builds)."""
    p = parts(node)
    a, b = p["a"], p["b"]
    lanes = a.type.dtype.lanes                 # fp4 pairs: K counts values
    if node.name.startswith("TGEMV"):
        sizes = (1, binop("*", b.valid[0], lanes), b.valid[1])
    else:
        sizes = (a.valid[0], binop("*", a.valid[1], lanes), b.valid[1])
    return [G.Guard("range", (EC.RANGE_MKN, v, 1, MAX_MKN)) for v in sizes]


def lower_matmul(node, soc) -> list[L.Call]:
    p = parts(node)
    a, b, c = p["a"], p["b"], p["c"]
    bias = p.get("bias")
    gemv = node.name.startswith("TGEMV")
    acc = node.name.endswith("_ACC")
    codes = (L.lit(CODES[a.type.dtype.short]), L.lit(CODES[b.type.dtype.short]), L.lit(a.type.rows))
    flags = (L.lit(gemv), L.lit(acc), L.lit(bias is not None))
    seed = L.tile(bias if bias is not None else c)           # c stands in for a missing bias
    m16 = L.lit(soc.name == "a2a3")
    args = (L.tile(c), L.tile(a), L.tile(b), seed) + codes + flags + (m16, L.err())
    narrow = c.type.dtype.is_float and 1 in (a.type.dtype.itemsize, b.type.dtype.itemsize)
    return [L.Call(L.lib(_FN[c.type.dtype.short, narrow]), args)]


def emit_matmul(node, soc, cx) -> str:
    """TMATMUL(c, a, b), TMATMUL<AccPhase::Partial>(...) when a phase is set; the _ACC forms
    always in their four-operand form (cOut, cOut, a, b), the one every backend builds."""
    phase = node.params.get("accPhase", "Unspecified")
    tmpl = f"<AccPhase::{phase}>" if phase not in (None, "Unspecified") else ""
    ops = list(node.operands)
    if node.name.endswith("_ACC") and len(ops) == 3:
        ops.insert(1, ops[0])
    return f"{node.name}{tmpl}({', '.join(cx.operand(o) for o in ops)});"


def lower_mx(node, soc) -> list[L.Call]:
    """TMATMUL_MX / TGEMV_MX: fp8 operands, or packed fp4 pairs (K = 2 * the pairs)."""
    p = parts(node)
    a, b, c = p["a"], p["b"], p["c"]
    bias = p.get("bias")
    codes = tuple(L.lit(MX_CODES.get(t.type.dtype.short) or CODES[t.type.dtype.short])
                  for t in (a, b, p["aScale"]))
    args = ((L.tile(c), L.tile(a), L.tile(p["aScale"]), L.tile(b), L.tile(p["bScale"]),
             L.tile(bias if bias is not None else c)) + codes
            + (L.lit(a.type.dtype.lanes), L.lit(node.name.startswith("TGEMV")), L.lit(bias is not None),
               L.lit(_mx_acc(node)), L.err()))
    return [L.Call(L.lib("cube.mma_mx"), args)]


for _name in (n for n, spec in TABLE.items() if spec.category == "matmul"):
    register(Unit(_name, check=check_matmul, sim=lower_mx if _name.endswith("_MX") else lower_matmul,
                  emit=emit_matmul, seed=TABLE[_name].seed, guards=mkn_guards))
