"""5.2 binary elementwise: TADD TSUB TMUL TDIV TMAX TMIN (dst = op(src0, src1)).

Over dst's valid region; both sources' valid regions must cover it. Floats: f32 natively, f16
and bf16 computed in f32 and rounded once; max/min propagate NaN. Integers wrap modulo 2^w;
integer TDIV (a5) truncates toward zero (INT_MIN / -1 wraps to INT_MIN) and gives -1, all ones,
for x / 0 (undefined on the NPU: pypto's choice, reported with checks="strict").
Reference: conformance/reference.py ``binary``.
"""
from __future__ import annotations

from .. import diagnostics as Dx
from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..ir.nodes import TileVar, is_static
from ..ir import guards as G
from ..ir.registry import Unit, register

# instruction -> (scalar op for floats, for integers) in backends/sim/lib/ops.py
OPS = {"TADD": ("add", "add"), "TSUB": ("sub", "sub"), "TMUL": ("mul", "mul"),
       "TDIV": ("div", "idiv"), "TMAX": ("fmax", "imax"), "TMIN": ("fmin", "imin")}
OPS_MODULE = f"{L.LIB}.ops"


def check_covers(node, soc) -> None:
    """Each source tile's valid region contains dst's (static parts now, the rest at run time)."""
    from ..isa import TABLE
    dst = node.operands[0]
    for o, x in zip(TABLE[node.name].operands[1:], node.operands[1:]):
        if isinstance(x, TileVar) and o.role == "in":
            for d, s in zip(dst.valid, x.valid):
                if is_static(d) and is_static(s) and s < d:
                    raise Dx.src_valid_too_small(node.name, o.name, x.name, x.valid, dst.name, dst.valid)


def lower_binary(node, soc) -> list[L.Call]:
    dst, a, b = node.operands
    dt = dst.type.dtype
    op = OPS[node.name][0 if dt.is_float else 1]
    if node.name == "TDIV" and dt.is_int:       # C division in int64; x / 0 reported when strict
        from . import arith_loops as AL
        fn = L.ew("binary", f"{__package__}.arith_ops", "idiv", L.codec(dt))
        return [AL.zero_divisor_call(2, b, dst), L.Call(fn, (L.tile(dst), L.tile(a), L.tile(b), L.err()))]
    fn = L.ew("binary", OPS_MODULE, op, L.codec(dt))
    return [L.Call(fn, (L.tile(dst), L.tile(a), L.tile(b), L.err()))]


for _name in OPS:
    register(Unit(_name, check=check_covers, sim=lower_binary, seed="binary", emit=E.call(_name),
                  guards=G.covers))
