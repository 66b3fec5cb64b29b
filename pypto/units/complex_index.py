"""TCI and TTRI (5.8): index sequences and triangular 0/1 masks.

TCI: dst storage element k (row 0 of an ND tile) = start + k, or start - k when descending, for
k < dst.validCol, in the element type (wrapping modulo 2^bits); start is converted to the tile's
type first (it must fit). TTRI: over dst's valid region, lower (isUpper=0) gives 1 where
j <= i + diagonal and 0 elsewhere, upper (isUpper=1) 0 where j < i + diagonal and 1 elsewhere;
1 and 0 in the element type (1.0 / 0.0 for floats). Reference: conformance/ref_complex.py.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..backends.sim import lowering as L
from ..errors import OperandError, TileShapeError
from ..ir.nodes import Expr, RtFloat
from ..ir import guards as G
from ..ir.registry import Unit, register

LOOPS = f"{__package__}.complex_index_lib"     # the numba loops: imported when a kernel is generated


def _int_scalar(node, k: int, x, dt) -> None:
    if isinstance(x, (RtFloat, float)) or (isinstance(x, Expr) and x.dtype == "f64"):
        raise OperandError(f"{node.name}: operand {k} ({x!r}) is a float",
                           rule=f"{node.name} takes an integer scalar here",
                           fix="pass an int")
    if not isinstance(x, Expr):
        L.check_scalar(node.name, "start" if node.name == "TCI" else "diagonal", x, dt)


def check_tci(node, soc) -> None:
    dst, start = node.operands
    if dst.type.cols == 1:
        raise TileShapeError(f"TCI: dst {dst.name} has one column",
                             rule="TCI writes a row of indices: Cols != 1 (the NPU's static_assert)",
                             fix=f"declare {dst.name} with shape (1, n)")
    _int_scalar(node, 1, start, dst.type.dtype)


def lower_tci(node, soc) -> list[L.Call]:
    dst, start = node.operands
    checks, arg = L.scalar_operand(1, start, dst.type.dtype)
    return checks + [L.Call(L.Fn(LOOPS, "tci"), (L.tile(dst), arg,
                                                 L.lit(int(node.params.get("descending") or 0)),
                                                 L.err()))]


def emit_tci(node, soc, cx) -> str:
    dst, start = node.operands
    t = dst.type.dtype.cxx
    return (f"TCI<decltype({cx.operand(dst)}), {t}, {int(node.params.get('descending') or 0)}>"
            f"({cx.operand(dst)}, {cx.scalar(start, dst.type.dtype)});")


def guards_tci(node, soc) -> list:
    return G.scalar(1, node.operands[1], node.operands[0].type.dtype)


register(Unit("TCI", check=check_tci, sim=lower_tci, emit=emit_tci, guards=guards_tci, seed="ci",
              seed_params=("descending",)))


_ONE = {"f32": (1.0, np.float32), "f16": (0x3C00, np.uint16), "bf16": (0x3F80, np.uint16)}


def check_ttri(node, soc) -> None:
    dst, diag = node.operands
    _int_scalar(node, 1, diag, D.int32)


def lower_ttri(node, soc) -> list[L.Call]:
    dst, diag = node.operands
    dt = dst.type.dtype
    one, st = _ONE.get(dt.short, (1, dt.storage))
    return [L.Call(L.Fn(LOOPS, "ttri"), (L.tile(dst), ("int", diag),
                                         L.lit(int(node.params.get("isUpper") or 0)),
                                         L.const(one, st), L.const(0, st), L.err()))]


def emit_ttri(node, soc, cx) -> str:
    dst, diag = node.operands
    return (f"TTRI<decltype({cx.operand(dst)}), {int(node.params.get('isUpper') or 0)}>"
            f"({cx.operand(dst)}, (int)({cx.expr(diag)}));")


register(Unit("TTRI", check=check_ttri, sim=lower_ttri, emit=emit_ttri, seed="tri",
              seed_params=("isUpper",)))
