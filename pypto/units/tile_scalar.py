"""5.3 tile-scalar: TADDS TMULS (dst = op(src, scalar)).

The scalar is converted to the tile's element type first (as TileData::DType): it must fit it,
the same rule as pypto.Tensor data (integers in range, no fraction into an int tile, no finite
float overflowing to inf); floats round once from double. Then the binary rule applies.
Reference: conformance/reference.py ``binary`` with a scalar operand.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..errors import DTypeError
from ..ir.nodes import Expr, RtFloat
from ..ir import guards as G
from ..ir.registry import Unit, register
from .elementwise import OPS, OPS_MODULE, check_covers

SCALAR_OPS = {"TADDS": OPS["TADD"], "TMULS": OPS["TMUL"]}


def check_scalar(node, soc) -> None:
    check_covers(node, soc)
    dst, _, s = node.operands
    dt = dst.type.dtype
    if isinstance(s, (Expr, RtFloat)) and dt.is_int and (isinstance(s, RtFloat) or s.dtype == "f64"):
        raise DTypeError(f"{node.name}: runtime scalar {s} is a float but the tile is {dt.name}",
                         rule="the scalar is converted to the tile's element type",
                         fix="pass an int scalar for integer tiles")
    if not isinstance(s, Expr):        # eager runtime values (RtInt, RtFloat) are known here
        L.check_scalar(node.name, "scalar", s, dt)


def lower_scalar(node, soc) -> list[L.Call]:
    dst, a, s = node.operands
    dt = dst.type.dtype
    op = SCALAR_OPS[node.name][0 if dt.is_float else 1]
    checks, arg = L.scalar_operand(2, s, dt)
    fn = L.ew("scalar", OPS_MODULE, op, L.codec(dt))
    return checks + [L.Call(fn, (L.tile(dst), L.tile(a), arg, L.err()))]


def guards(node, soc) -> list:
    return G.covers(node, soc) + G.scalar(2, node.operands[2], node.operands[0].type.dtype)


for _name in SCALAR_OPS:
    register(Unit(_name, check=check_scalar, sim=lower_scalar, seed="scalar", emit=E.call(_name),
                  guards=guards))
