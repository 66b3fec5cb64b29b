"""TPARTADD, TPARTMAX, TPARTMIN, TPARTMUL (5.8): op(src0, src1) where both sources are valid,
the valid one elsewhere, over dst's valid region; modelled on each SoC's NPU code.

* a2a3 (all four) and a5 TPARTADD/TPARTMUL: one source's valid region equals dst's (the
  "larger"; src0 when both do), the other's fits inside it. Inside the smaller one's region
  dst = op(larger, smaller), or op(smaller, larger) when the smaller has fewer valid columns than
  dst (the NPU copies the larger first and then combines in that order); elsewhere dst gets the
  larger's bits. Any other combination is an error (the NPU's PTO_ASSERT is compiled out and it
  would silently do nothing). A dst with an empty valid region writes nothing.
* a5 TPARTMAX/TPARTMIN: both sources fit inside dst; dst's valid region is filled with the pad
  (MAX: -inf or the integer minimum, MIN: +inf or the integer maximum), src0 copied over its
  region, then dst = op(dst, src1) over src1's: where neither source is valid dst holds the pad.
  Any empty valid region (a source's or dst's) writes nothing.
Arithmetic as the elementwise ops (f16/bf16 in f32 rounded once, integers wrap, max/min
propagate NaN). Reference: conformance/ref_complex.py ``tpart``.
"""
from __future__ import annotations

import functools
import hashlib

import numpy as np

from ..backends.sim import lowering as L
from ..backends.sim.lib import elementwise as EW
from ..errors import ValidRegionError
from ..ir.nodes import is_static
from ..ir.registry import Unit, register
from .complex_common import decoder, guard

OPS = {"TPARTADD": ("add", "add"), "TPARTMUL": ("mul", "mul"), "TPARTMAX": ("fmax", "imax"),
       "TPARTMIN": ("fmin", "imin")}
PART_EQ, PART_FIT = 1, 2          # UNIT_RULE ids: the a2a3 rule, the a5 MAX/MIN rule

_SOURCE = """\
from numba import njit
from pypto.backends.sim.lib.layout import offset
from pypto.backends.sim.lib.ops import {ld} as ld, {st} as st
from pypto.backends.sim.lib.ops import {op} as op
from pypto.units.complex_faults import rule_fault5
from pypto.backends.sim.lib.jit import XCALLED as _J


@njit(**_J)            # called twice below: compiled once, where inlining typed its loop twice
def _big_small(d, dvr, dvc, dl, g, gl, s, svr, svc, sl):
    col_lt = svc < dvc
    for r in range(dvr):
        for c in range(dvc):
            x = g[offset(gl, r, c)]
            if r < svr and c < svc:
                y = s[offset(sl, r, c)]
                d[offset(dl, r, c)] = st(op(ld(y), ld(x))) if col_lt else st(op(ld(x), ld(y)))
            else:
                d[offset(dl, r, c)] = x


@njit(**_J)
def part_eq(d, dvr, dvc, dl, a, avr, avc, al, b, bvr, bvc, bl, err):
    if dvr == 0 or dvc == 0:
        return
    if avr == dvr and avc == dvc and bvr <= dvr and bvc <= dvc:
        _big_small(d, dvr, dvc, dl, a, al, b, bvr, bvc, bl)
    elif bvr == dvr and bvc == dvc and avr <= dvr and avc <= dvc:
        _big_small(d, dvr, dvc, dl, b, bl, a, avr, avc, al)
    else:
        rule_fault5({eq}, avr, avc, bvr, bvc, dvr * 4294967296 + dvc, err)


@njit(**_J)
def part_pad(d, dvr, dvc, dl, a, avr, avc, al, b, bvr, bvc, bl, pad, err):
    if avr > dvr or avc > dvc or bvr > dvr or bvc > dvc:
        rule_fault5({fit}, avr, avc, bvr, bvc, dvr * 4294967296 + dvc, err)
        return
    if avr == 0 or avc == 0 or bvr == 0 or bvc == 0 or dvr == 0 or dvc == 0:
        return
    for r in range(dvr):
        for c in range(dvc):
            d[offset(dl, r, c)] = pad
    for r in range(avr):
        for c in range(avc):
            d[offset(dl, r, c)] = a[offset(al, r, c)]
    for r in range(bvr):
        for c in range(bvc):
            k = offset(dl, r, c)
            d[k] = st(op(ld(d[k]), ld(b[offset(bl, r, c)])))
"""


@functools.lru_cache(maxsize=None)
def _fn(form: str, op: str, codec: str) -> L.Fn:
    ld, st = EW.CODECS[codec]
    src = _SOURCE.format(ld=ld, st=st, op=op, eq=PART_EQ, fit=PART_FIT)
    tag = hashlib.sha256(src.encode()).hexdigest()[:6]
    return L.Fn(f"part_{op}_{codec}_{tag}", form, src)


# a5 TPARTMAX/TPARTMIN pads (storage bits): dtype -> (MAX's pad, MIN's pad)
_PADS = {"f32": (-np.inf, np.inf), "f16": (0xFC00, 0x7C00), "bf16": (0xFF80, 0x7F80)}


def _pad(name: str, dt):
    if dt.short in _PADS:
        return _PADS[dt.short][name == "TPARTMIN"]
    info = np.iinfo(dt.np)
    return int(info.min) if name == "TPARTMAX" else int(info.max)


def _padded(name: str, soc) -> bool:
    return soc.name == "a5" and name in ("TPARTMAX", "TPARTMIN")


def check_part(node, soc) -> None:
    dst, a, b = node.operands
    vals = [dst.valid[0], dst.valid[1], a.valid[0], a.valid[1], b.valid[0], b.valid[1]]
    if not all(is_static(v) for v in vals):
        return
    dr, dc, ar, ac, br, bc = vals
    if _padded(node.name, soc):
        ok = ar <= dr and ac <= dc and br <= dr and bc <= dc
    else:
        ok = (dr == 0 or dc == 0 or (ar == dr and ac == dc and br <= dr and bc <= dc)
              or (br == dr and bc == dc and ar <= dr and ac <= dc))
    if not ok:
        raise _error(node, _padded(node.name, soc), (ar, ac), (br, bc), (dr, dc))


def _error(node, padded: bool, av, bv, dv) -> ValidRegionError:
    dst, a, b = node.operands
    if padded:
        rule = f"on a5 {node.name}'s sources both fit inside dst's valid region"
    else:
        rule = (f"{node.name} (a2a3{', and a5' if node.name in ('TPARTADD', 'TPARTMUL') else ''}): "
                "one source's valid region equals dst's and the other's fits inside it")
    return ValidRegionError(
        f"{node.name}: src0 {a.name} valid {tuple(av)}, src1 {b.name} valid {tuple(bv)}, dst "
        f"{dst.name} valid {tuple(dv)}", rule=rule,
        fix="give dst the valid region of the larger source (set_valid), or trim the other source")


def lower_part(node, soc) -> list[L.Call]:
    dst, a, b = node.operands
    dt = dst.type.dtype
    op = OPS[node.name][0 if dt.is_float else 1]
    args = (L.tile(dst), L.tile(a), L.tile(b))
    if _padded(node.name, soc):
        return [L.Call(_fn("part_pad", op, L.codec(dt)), args + (L.const(_pad(node.name, dt), dt.storage),
                                                                 L.err()))]
    return [L.Call(_fn("part_eq", op, L.codec(dt)), args + (L.err(),))]


def emit_part(node, soc, cx) -> list[str]:
    dst, a, b = node.operands
    dr, dc = cx.expr(dst.valid[0]), cx.expr(dst.valid[1])
    ar, ac, br, bc = (cx.expr(a.valid[0]), cx.expr(a.valid[1]), cx.expr(b.valid[0]),
                      cx.expr(b.valid[1]))
    packed = f"({dr}) * 4294967296LL + ({dc})"
    if _padded(node.name, soc):
        bad = f"{ar} > {dr} || {ac} > {dc} || {br} > {dr} || {bc} > {dc}"
        rule = PART_FIT
    else:
        bad = (f"!({dr} == 0 || {dc} == 0 || ({ar} == {dr} && {ac} == {dc} && {br} <= {dr} && "
               f"{bc} <= {dc}) || ({br} == {dr} && {bc} == {dc} && {ar} <= {dr} && {ac} <= {dc}))")
        rule = PART_EQ
    return guard(cx, node, bad, rule, ar, ac, br, bc, packed) + [
        f"{node.name}({cx.operand(dst)}, {cx.operand(a)}, {cx.operand(b)});"]


def _decode(rule, v, node):
    return _error(node, rule == PART_FIT, v[0:2], v[2:4], (v[4] >> 32, v[4] & 0xFFFFFFFF))


for _name in OPS:
    decoder(_name, _decode)
    register(Unit(_name, check=check_part, sim=lower_part, emit=emit_part, seed="part"))
