"""TEXP (5.2): dst = e ** src over dst's valid region, f16 and f32 (V pipe).

pypto computes e**x in double from the exactly widened element and rounds once to the element
type (overflow gives inf, NaN stays NaN). The NPU's exp is an approximation good to a few ulp,
so comparisons with a real NPU need an ulp tolerance; the simulator is the correctly rounded
reference. Reference: conformance/reference.py ``exp``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..backends.npu import emit as E
from ..backends.sim import lowering as L
from ..ir import guards as G
from ..ir.registry import Unit, register
from .elementwise import check_covers


@njit(cache=True, inline="always", error_model="numpy", nogil=True)
def exp(x):
    return math.exp(np.float64(x))


def lower_exp(node, soc) -> list[L.Call]:
    dst, src = node.operands
    fn = L.ew("unary", __name__, "exp", L.codec(dst.type.dtype, wide=True))
    return [L.Call(fn, (L.tile(dst), L.tile(src), L.err()))]


register(Unit("TEXP", check=check_covers, sim=lower_exp, seed="unary", emit=E.call("TEXP"),
              guards=G.covers))
