"""TROWSUM (5.4): dst[i, 0] = sum over j of src[i, j] over src's valid region, f16 and f32.

Valid-row rule: dst's valid rows equal src's (the NPU asserts it); dst is an R x 1 column, DN
(a2a3 also takes ND with one valid column). An empty source region writes nothing. tmp is
scratch (its contents afterwards are unspecified; the simulator leaves it alone).
Order and precision (pypto's model of the NPU, which reduces each 256-byte repeat in hardware
and adds the repeats in the element type): the valid columns of a row are cut into repeats of
256 bytes (64 f32 / 128 f16 elements, the last one partial); a repeat is summed in f32 by a
pairwise tree over adjacent elements (an odd element out moves up a level unchanged) and
rounded once to the element type; the repeat sums are then added left to right, each addition
computed in f32 and rounded to the element type. Reference: conformance/reference.py ``rowsum``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..backends.sim import lowering as L
from ..backends.sim.lib.checks import same_rows
from ..backends.sim.lib.layout import offset
from ..backends.sim.lib.ops import f16_to_f32, f32_to_f16
from ..errors import LayoutError, ValidRegionError
from ..ir.nodes import is_static
from ..ir.registry import Unit, register

_J = dict(cache=True, error_model="numpy", nogil=True)


@njit(inline="always", **_J)
def _tree(buf, m):
    """Pairwise sum of buf[:m] in f32: adjacent pairs, an odd last element carried up."""
    while m > 1:
        half = m // 2
        for i in range(half):
            buf[i] = buf[2 * i] + buf[2 * i + 1]
        if m % 2 == 1:
            buf[half] = buf[m - 1]
        m = half + m % 2
    return buf[0]


@njit(**_J)
def rowsum_f32(dst, dvr, dvc, dl, src, svr, svc, sl, err):
    if not same_rows(1, svr, dvr, err):
        return
    buf = np.empty(64, np.float32)
    for r in range(svr):
        acc = np.float32(0)
        for j0 in range(0, svc, 64):
            m = min(64, svc - j0)
            for k in range(m):
                buf[k] = src[offset(sl, r, j0 + k)]
            part = _tree(buf, m)
            acc = part if j0 == 0 else np.float32(acc + part)
        if svc > 0:
            dst[offset(dl, r, 0)] = acc


@njit(**_J)
def rowsum_f16(dst, dvr, dvc, dl, src, svr, svc, sl, err):
    if not same_rows(1, svr, dvr, err):
        return
    buf = np.empty(128, np.float32)
    for r in range(svr):
        acc = np.uint16(0)
        for j0 in range(0, svc, 128):
            m = min(128, svc - j0)
            for k in range(m):
                buf[k] = f16_to_f32(src[offset(sl, r, j0 + k)])
            part = f32_to_f16(_tree(buf, m))
            acc = part if j0 == 0 else f32_to_f16(f16_to_f32(acc) + f16_to_f32(part))
        if svc > 0:
            dst[offset(dl, r, 0)] = acc


def check_rowsum(node, soc) -> None:
    dst, src = node.operands[0], node.operands[1]
    if dst.type.layout_name == "ND" and soc.name != "a2a3":
        raise LayoutError(f"TROWSUM: dst {dst.name} is ND; on {soc.name} it must be a DN column",
                          rule="TROWSUM writes one value per row into an R x 1 DN tile (a2a3 also "
                               "takes ND with one valid column)",
                          fix=f"declare {dst.name} with shape (R, 1) and blayout=pto.ColMajor")
    if is_static(dst.valid[1]) and dst.valid[1] != 1:
        raise ValidRegionError(f"TROWSUM: dst {dst.name} has {dst.valid[1]} valid columns",
                               rule="TROWSUM writes column 0 only: dst's valid region is R x 1",
                               fix=f"declare {dst.name} with shape (R, 1), or valid=(R, 1)")
    if is_static(dst.valid[0]) and is_static(src.valid[0]) and dst.valid[0] != src.valid[0]:
        raise ValidRegionError(
            f"TROWSUM: src {src.name} has {src.valid[0]} valid rows but dst {dst.name} has {dst.valid[0]}",
            rule="a row reduction writes one value per source row: dst.validRow == src.validRow "
                 "(the NPU asserts it)",
            fix=f"give {dst.name} {src.valid[0]} valid rows (valid=... or set_valid)")


def lower_rowsum(node, soc) -> list[L.Call]:
    dst, src = node.operands[0], node.operands[1]
    fn = L.Fn(__name__, f"rowsum_{dst.type.dtype.short}")
    return [L.Call(fn, (L.tile(dst), L.tile(src), L.err()))]


register(Unit("TROWSUM", check=check_rowsum, sim=lower_rowsum, seed="rowreduce"))
