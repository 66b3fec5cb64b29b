"""Bit, shift, compare and select conformance (TAND TOR TXOR TNOT TSHL TSHR, TANDS TORS TXORS
TSHLS TSHRS, TCMP TCMPS, TSEL TSELS) against conformance/ref_bits.py, bit for bit.

To keep compilations few, one kernel per (group, dtype, SoC) runs every instruction of a group on
the same whole-tile inputs, each writing a tile of its own (the harness's recipe: every tile is
loaded whole, valid regions are runtime arguments, written tiles are stored whole, so each case
also sees what an instruction left alone). Groups: "bitwise" (TAND TOR TXOR TNOT TANDS TORS TXORS
TSHL TSHR), "shifts" (TSHLS TSHRS), "compare" (TCMP and TCMPS in all six modes), "select" (TSEL,
TSELS). Valid regions (tails, one row, one column, widths that are not a multiple of 8) and
scalars vary at run time. Then: shift counts at and past the width (default and strict),
the no-overlap rules (static and run-time), trace-time and run-time errors, load_insn, and
hypothesis property tests.
"""
from __future__ import annotations

import functools
import itertools
import linecache
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto
from pypto import errors, pto

from . import ref_bits as RB
from . import reference as ref
from .conftest import keep_if, slow_if
from .harness import T
from .helpers import assert_bits_equal, random_values, rng_for, seeds

SOCS = ("a2a3", "a5")
MODES = RB.MODES
PROPERTY = settings(max_examples=5, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# Legal element types, written from pto-isa-semantics 5.2 / 5.3 (checked against pypto's table).
LEGAL = {
    "TAND": {"a2a3": "u8 i8 u16 i16", "a5": "u8 i8 u16 i16 u32 i32"},
    "TOR": {"a2a3": "u8 i8 u16 i16", "a5": "u8 i8 u16 i16 u32 i32"},
    "TXOR": {"a2a3": "u8 i8 u16 i16", "a5": "u8 i8 u16 i16 u32 i32"},
    "TNOT": {"a2a3": "i16 u16", "a5": "u8 i8 u16 i16 u32 i32"},
    "TSHL": {"a2a3": "u8 i8 u16 i16 u32 i32", "a5": "u8 i8 u16 i16 u32 i32"},
    "TSHR": {"a2a3": "u8 i8 u16 i16 u32 i32", "a5": "u8 i8 u16 i16 u32 i32"},
    "TANDS": {"a2a3": "i16", "a5": "u8 i8 u16 i16 u32 i32"},
    "TORS": {"a2a3": "i16", "a5": "u8 i8 u16 i16 u32 i32"},
    "TXORS": {"a2a3": "i16", "a5": "u8 i8 u16 i16 u32 i32"},
    "TSHLS": {"a2a3": "i32 i16 u32 u16", "a5": "i32 i16 i8 u32 u16 u8"},
    "TSHRS": {"a2a3": "i32 i16 u32 u16", "a5": "i32 i16 i8 u32 u16 u8"},
    "TCMP": {"a2a3": "i32 f16 f32", "a5": "i8 u8 i16 u16 i32 u32 f16 f32"},
    "TCMPS": {"a2a3": "i32 f32 f16 u16 i16", "a5": "i32 u32 f32 i16 u16 f16 u8 i8"},
    "TSEL": {"a2a3": "i16 u16 i32 u32 f16 bf16 f32", "a5": "i16 u16 i32 u32 f16 bf16 f32"},
    "TSELS": {"a2a3": "i16 u16 i32 u32 f16 f32", "a5": "i16 u16 i32 u32 f16 f32 i8 u8"},
}
GROUPS = {"bitwise": ("TAND", "TOR", "TXOR", "TNOT", "TANDS", "TORS", "TXORS", "TSHL", "TSHR"),
          "shifts": ("TSHLS", "TSHRS"), "compare": ("TCMP", "TCMPS"), "select": ("TSEL", "TSELS")}
ALL_DT = ("u8", "i8", "u16", "i16", "u32", "i32", "f16", "bf16", "f32")


def legal(instr: str, soc: str, dt: str) -> bool:
    return dt in LEGAL[instr][soc].split()


def group_cases(group: str) -> list[tuple[str, str]]:
    return [(s, d) for s in SOCS for d in ALL_DT if any(legal(i, s, d) for i in GROUPS[group])]


def npd(dt: str) -> np.dtype:
    return ref.np_dtype(dt)


def bits_of(dt: str) -> int:
    return npd(dt).itemsize * 8




def init_soc(pto_init, soc_: str, **kw) -> None:
    pto_init(soc=soc_, **kw)


# =============================================================================================
# a multi-instruction harness: tiles loaded whole, runtime valid regions, written tiles stored whole
# =============================================================================================
@dataclass(frozen=True)
class Step:
    instr: str
    ops: tuple            # ("t", tile index) | ("s", scalar index) | ("v", python value)
    params: tuple = ()


_ids = itertools.count()


@functools.lru_cache(maxsize=None)
def multi_kernel(tiles: tuple, nscalars: int, steps: tuple, outs: tuple):
    args, body = [], []
    for i, t in enumerate(tiles):
        args += [f"g{i}", f"r{i}", f"c{i}"]
        body.append(f"t{i} = pto.Tile(pto.Vec, pto.{ref.LONG[t.np]}, {t.shape}, valid=pto.DYNAMIC)")
        body.append(f"pto.TLOAD(t{i}, g{i}[:, :])")
    args += [f"s{k}" for k in range(nscalars)] + [f"o{i}" for i in outs]
    body.append("pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)")
    body.append("pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)")
    body += [f"t{i}.set_valid(r{i}, c{i})" for i in range(len(tiles))]
    for st_ in steps:
        names = [f"t{x}" if k == "t" else (f"s{x}" if k == "s" else repr(x)) for k, x in st_.ops]
        kw = "".join(f", {k}={v!r}" for k, v in st_.params)
        body.append(f"pto.{st_.instr}({', '.join(names)}{kw})")
    body.append("pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)")
    body.append("pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)")
    for i in outs:
        body.append(f"t{i}.set_valid({tiles[i].shape[0]}, {tiles[i].shape[1]})")
        body.append(f"pto.TSTORE(o{i}[:, :], t{i})")
    name = f"bits_case_{next(_ids)}"
    src = f"def {name}({', '.join(args)}):\n" + "".join(f"    {ln}\n" for ln in body)
    filename = f"<conformance {name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"pto": pto}
    exec(compile(src, filename, "exec"), ns)
    return pypto.kernel(ns[name])


def run_multi(tiles, steps, outs, values, valids, scalars=()):
    """Run ``steps``; ``values[i]`` is tile i's whole content, ``valids[i]`` its valid region.
    Returns {out tile index: whole tile after the run}."""
    k = multi_kernel(tuple(tiles), len(scalars), tuple(steps), tuple(outs))
    args: list[Any] = []
    for t, v, vd in zip(tiles, values, valids):
        args += [pypto.Tensor(np.ascontiguousarray(np.asarray(v, dtype=t.np).reshape(t.shape))), int(vd[0]), int(vd[1])]
    args += list(scalars)
    res = {i: pypto.zeros(tiles[i].shape, getattr(pypto, ref.LONG[tiles[i].np])) for i in outs}
    args += [res[i] for i in outs]
    k(*args)
    return {i: t.numpy() for i, t in res.items()}


def random_tile(rng, dt: str, shape) -> np.ndarray:
    return random_values(rng, dt, shape)


# =============================================================================================
# bitwise group
# =============================================================================================
R, C = 4, 64                      # one capacity per dtype
REGIONS = [(R, C), (R - 1, C - 3), (1, C), (R, 1), (2, 13), (3, 9)]


def bitwise_plan(soc_: str, dt: str):
    """Tiles: 0 src0, 1 src1, 2 counts; then each instruction's dst (and tmp) tiles."""
    tiles = [T(dt, (R, C))] * 3
    steps, outs, expect = [], [], []
    for instr in GROUPS["bitwise"]:
        if not legal(instr, soc_, dt):
            continue
        d = len(tiles)
        tiles.append(T(dt, (R, C)))
        outs.append(d)
        if instr in ("TAND", "TOR", "TXOR"):
            ops = [("t", d), ("t", 0), ("t", 1)]
        elif instr == "TNOT":
            ops = [("t", d), ("t", 0)]
        elif instr in ("TSHL", "TSHR"):
            ops = [("t", d), ("t", 0), ("t", 2)]
        else:
            ops = [("t", d), ("t", 0), ("s", 0)]
        if instr in ("TXOR", "TXORS"):
            tiles.append(T(dt, (R, C)))
            ops.append(("t", len(tiles) - 1))
        steps.append(Step(instr, tuple(ops)))
        expect.append((instr, d))
    return tiles, steps, outs, expect


def bitwise_expected(instr, x, y, n, s):
    if instr == "TAND":
        return RB.band(x, y)
    if instr == "TOR":
        return RB.bor(x, y)
    if instr == "TXOR":
        return RB.bxor(x, y)
    if instr == "TNOT":
        return RB.bnot(x)
    if instr == "TANDS":
        return RB.band(x, RB.scalar_to(s, x.dtype))
    if instr == "TORS":
        return RB.bor(x, RB.scalar_to(s, x.dtype))
    if instr == "TXORS":
        return RB.bxor(x, RB.scalar_to(s, x.dtype))
    return RB.shift(x, n, instr == "TSHL")[0]


def run_bitwise(soc_, dt, region, rng, counts=None, scalar=None):
    tiles, steps, outs, expect = bitwise_plan(soc_, dt)
    x, y = random_tile(rng, dt, (R, C)), random_tile(rng, dt, (R, C))
    n = counts if counts is not None else rng.integers(0, bits_of(dt), (R, C)).astype(npd(dt))
    s = scalar if scalar is not None else int(rng.integers(np.iinfo(npd(dt)).min, int(np.iinfo(npd(dt)).max) + 1))
    values = [x, y, n] + [random_tile(rng, dt, (R, C)) for _ in tiles[3:]]
    valids = [region] * len(tiles)
    got = run_multi(tiles, steps, outs, values, valids, (s,))
    for instr, d in expect:
        want = RB.region(values[d], region, bitwise_expected(instr, x, y, n, s))
        assert_bits_equal(got[d], want, inputs={"x": x, "y": y, "n": n},
                          what=f"{instr} {dt} on {soc_}, valid {region}, scalar {s}")


@keep_if(lambda p: any(legal(i, p["soc_"], p["dtype"]) for i in GROUPS["bitwise"]))
@pytest.mark.parametrize("soc_", SOCS)
@pytest.mark.parametrize("dtype", ALL_DT)
def test_bitwise_group(pto_init, target, soc_, dtype):
    """Every bitwise instruction legal for (SoC, dtype): random values incl. min/max, in-range
    shift counts, regions smaller than the tile (outside them dst keeps its contents)."""
    dt = dtype
    init_soc(pto_init, soc_)
    for k, region in enumerate(REGIONS):
        run_bitwise(soc_, dt, region, rng_for("bitwise", soc_, dt, k))


# =============================================================================================
# scalar shifts
# =============================================================================================
def shifts_plan(soc_, dt):
    tiles = [T(dt, (R, C)), T(dt, (R, C)), T(dt, (R, C))]
    steps = [Step("TSHLS", (("t", 1), ("t", 0), ("s", 0))), Step("TSHRS", (("t", 2), ("t", 0), ("s", 0)))]
    return tiles, steps, [1, 2]


def run_shifts(soc_, dt, region, count, rng):
    tiles, steps, outs = shifts_plan(soc_, dt)
    values = [random_tile(rng, dt, (R, C)) for _ in tiles]
    got = run_multi(tiles, steps, outs, values, [region] * 3, (count,))
    x = values[0]
    for instr, d in (("TSHLS", 1), ("TSHRS", 2)):
        want = RB.region(values[d], region, RB.shift(x, count, instr == "TSHLS")[0])
        assert_bits_equal(got[d], want, inputs={"x": x}, what=f"{instr} {dt} by {count} on {soc_}, {region}")


@keep_if(lambda p: any(legal(i, p["soc_"], p["dtype"]) for i in GROUPS["shifts"]))
@pytest.mark.parametrize("soc_", SOCS)
@pytest.mark.parametrize("dtype", ALL_DT)
def test_scalar_shifts(pto_init, target, soc_, dtype):
    dt = dtype
    init_soc(pto_init, soc_)
    b = bits_of(dt)
    for k, (region, count) in enumerate(zip(REGIONS, [0, 1, b - 1, b // 2, 3, b - 2])):
        run_shifts(soc_, dt, region, count, rng_for("shifts", soc_, dt, k))


# =============================================================================================
# shift counts at and past the width: pypto's documented default, and checks="strict"
# =============================================================================================
WIDE = [("a2a3", "i8"), ("a2a3", "u16"), ("a2a3", "i32"), ("a5", "u32"), ("a5", "i16"), ("a5", "u8")]


def wild_counts(rng, dt):
    b = bits_of(dt)
    cand = [b, b + 1, 2 * b, 31, 32, 33, 0, 1, b - 1]
    if npd(dt).kind == "i":
        cand += [-1, -b, int(np.iinfo(npd(dt)).min)]
    else:
        cand += [int(np.iinfo(npd(dt)).max)]
    cand = [c for c in cand if np.iinfo(npd(dt)).min <= c <= np.iinfo(npd(dt)).max]
    return np.array(cand, dtype=np.int64)[rng.integers(0, len(cand), (R, C))].astype(npd(dt))


@pytest.mark.parametrize("case", WIDE, ids="{0[0]}-{0[1]}".format)
def test_shift_counts_past_the_width(pto_init, target, case):
    """Counts >= bits or negative: shl 0, shr 0 or -1 (sign), tile counts and scalar counts."""
    soc_, dt = case
    init_soc(pto_init, soc_)
    rng = rng_for("wide", case)
    run_bitwise(soc_, dt, (R, C - 5), rng, counts=wild_counts(rng, dt))
    if legal("TSHLS", soc_, dt):
        b = bits_of(dt)
        for k, count in enumerate([b, b + 3, 40] + ([-1, -b] if npd(dt).kind == "i" else [])):
            if np.iinfo(npd(dt)).min <= count <= np.iinfo(npd(dt)).max:
                run_shifts(soc_, dt, (3, 17), count, rng_for("wide-s", case, k))


@keep_if(lambda p: p["target"].backend == "sim")       # checks="strict" is a simulator option
@pytest.mark.parametrize("case", [("a2a3", "i16"), ("a5", "u8")], ids="{0[0]}-{0[1]}".format)
def test_shift_strict_reports_out_of_range_counts(pto_init, target, case):
    soc_, dt = case
    pto_init(soc=soc_, sim=pypto.SimOptions(mode=target.mode, checks="strict"))
    rng = rng_for("strict", case)
    run_bitwise(soc_, dt, (R, C), rng)                       # in-range counts: no report
    counts = rng.integers(0, bits_of(dt), (R, C)).astype(npd(dt))
    counts[2, 5] = bits_of(dt)
    with pytest.raises(errors.UndefinedBehaviorError, match=r"TSHL.*shift count.*\(2, 5\).*src1"):
        run_bitwise(soc_, dt, (R, C), rng, counts=counts)
    if legal("TSHLS", soc_, dt):
        with pytest.raises(errors.UndefinedBehaviorError, match=r"TSHLS.*shift count"):
            run_shifts(soc_, dt, (R, C), bits_of(dt), rng)


# =============================================================================================
# compare group: TCMP and TCMPS in every mode, packing per SoC
# =============================================================================================
CR, CC = 4, 64
CMP_REGIONS = [(CR, CC), (CR - 1, CC - 3), (1, CC), (CR, 1), (2, 13), (3, 9), (4, 37), (2, 8)]


def cmp_dst(soc_, instr):
    """dst tiles: a2a3 u8 (CR, CC) (row stride CC bytes); a5 TCMP u32 (2, 8), TCMPS u8 (1, 32)."""
    if soc_ == "a2a3":
        return T("u8", (CR, CC))
    return T("u32", (2, 8)) if instr == "TCMP" else T("u8", (1, 32))


def compare_plan(soc_, dt):
    tiles = [T(dt, (CR, CC)), T(dt, (CR, CC))]
    steps, outs, expect = [], [], []
    for instr in ("TCMP", "TCMPS"):
        if not legal(instr, soc_, dt):
            continue
        for m in MODES:
            d = len(tiles)
            tiles.append(cmp_dst(soc_, instr))
            outs.append(d)
            src = (("t", 0), ("t", 1)) if instr == "TCMP" else (("t", 0), ("s", 0))
            steps.append(Step(instr, (("t", d),) + src, (("cmpMode", m),)))
            expect.append((instr, m, d))
    return tiles, steps, outs, expect


def cmp_inputs(rng, dt, shape):
    x = random_tile(rng, dt, shape)
    y = random_tile(rng, dt, shape)
    eq = rng.random(shape) < 0.3                     # equal pairs, so EQ / LE / GE see true
    y[eq] = x[eq]
    return x, y


def cmp_scalar(rng, dt, x):
    if ref.is_float(dt):
        return float(rng.choice([0.0, -0.0, 1.5, -2.25, float("inf"), float("nan"), float(x.reshape(-1)[3])]))
    return int(x.reshape(-1)[int(rng.integers(0, x.size))])


def run_compare(soc_, dt, region, rng, x=None, y=None, s=None):
    tiles, steps, outs, expect = compare_plan(soc_, dt)
    if x is None:
        x, y = cmp_inputs(rng, dt, (CR, CC))
    if s is None:
        s = cmp_scalar(rng, dt, x)
    values = [x, y] + [random_tile(rng, t.dtype, t.shape) for t in tiles[2:]]
    vr, vc = region
    valids = [region, region] + [(t.shape[0], t.shape[1]) for t in tiles[2:]]
    got = run_multi(tiles, steps, outs, values, valids, (s,))
    for instr, m, d in expect:
        if instr == "TCMP":
            want = RB.tcmp(values[d], x, y, region, m, soc_)
        else:
            want = RB.tcmps(values[d], x, s, region, m, soc_)
        assert_bits_equal(got[d], want, inputs={},
                          what=f"{instr} {m} {dt} on {soc_}, valid {region}, scalar {s!r}")


@keep_if(lambda p: any(legal(i, p["soc_"], p["dtype"]) for i in GROUPS["compare"]))
@pytest.mark.parametrize("soc_", SOCS)
@pytest.mark.parametrize("dtype", ALL_DT)
def test_compare_group(pto_init, target, soc_, dtype):
    """All six modes of TCMP and TCMPS: specials (NaN, +-inf, +-0, extremes), equal pairs, widths
    not a multiple of 8, several rows; the whole dst tile is compared (tail zeros, untouched bytes)."""
    dt = dtype
    init_soc(pto_init, soc_)
    for k, region in enumerate(CMP_REGIONS):
        run_compare(soc_, dt, region, rng_for("compare", soc_, dt, k))


@pytest.mark.parametrize("soc_", SOCS)
def test_compare_hand_cases(pto_init, target, soc_):
    """Hand-made f32 rows: NaN against everything, -0 vs +0, and a 13-wide region whose bits
    13..15 (the partial byte) and the rest of the repeat are written as 0."""
    init_soc(pto_init, soc_)
    x = np.zeros((CR, CC), np.float32)
    y = np.zeros((CR, CC), np.float32)
    x[0, :6] = [np.nan, 1.0, -0.0, np.inf, -np.inf, 2.0]
    y[0, :6] = [np.nan, np.nan, 0.0, np.inf, 1.0, 2.0]
    x[1, :13] = np.arange(13)
    y[1, :13] = 6
    tiles, steps, outs, expect = compare_plan(soc_, "f32")
    values = [x, y] + [np.full(t.shape, 0xFF, t.np) for t in tiles[2:]]
    got = run_multi(tiles, steps, outs, values, [(2, 13), (2, 13)] + [t.shape for t in tiles[2:]], (2.0,))
    by = {(i, m): got[d] for i, m, d in expect}
    if soc_ == "a2a3":
        eq = by[("TCMP", "EQ")]
        assert eq[0, 0] == 0b11101100 and eq[0, 1] == 0b00011111, eq[0, :2]    # -0 == 0, inf, 2, zeros
        assert by[("TCMP", "NE")][0, 0] == 0b00010011                        # NaN != NaN, 1 != NaN, -inf != 1
        assert by[("TCMP", "LT")][1, 0] == 0b00111111 and by[("TCMP", "LT")][1, 1] == 0
        assert (eq[0, 2:8] == 0).all() and (eq[0, 8:] == 0xFF).all()       # zeros to the repeat end
        assert (eq[2:] == 0xFF).all()                                       # rows past validRow untouched
    for i, m, d in expect:
        want = (RB.tcmp(values[d], x, y, (2, 13), m, soc_) if i == "TCMP"
                else RB.tcmps(values[d], x, 2.0, (2, 13), m, soc_))
        assert_bits_equal(got[d], want, what=f"{i} {m} hand case on {soc_}")


def test_a2a3_i32_always_eq_and_half_bits(pto_init, target):
    """a2a3: i32 TCMP / TCMPS compare EQ whatever cmpMode says; i16 TCMPS compares raw bits as
    half floats (0x7E00, a NaN pattern, and -1 = 0xFFFF are unequal to everything)."""
    init_soc(pto_init, "a2a3")
    x = (np.arange(CR * CC, dtype=np.int32).reshape(CR, CC) % 5).astype(np.int32)
    run_compare("a2a3", "i32", (3, 20), rng_for("i32-eq"), x=x, y=np.full((CR, CC), 2, np.int32), s=2)
    h = np.array([0x3C00, 0x7E00, -1, 0x4000, -16384, 1, 0, -32768] * (CR * CC // 8), np.int16).reshape(CR, CC)
    run_compare("a2a3", "i16", (4, 40), rng_for("half-bits"), x=h, y=h.copy(), s=0x3C00)
    tiles, steps, outs, expect = compare_plan("a2a3", "i16")
    got = run_multi(tiles, steps, outs, [h, h] + [np.zeros(t.shape, t.np) for t in tiles[2:]],
                    [(1, 8), (1, 8)] + [t.shape for t in tiles[2:]], (0x3C00,))
    by = {(i, m): got[d] for i, m, d in expect}
    # as halves against 1.0: 1.0, NaN, NaN (-1), 2.0, -2.0, tiny, 0, -0 -> only 2.0 is greater
    assert by[("TCMPS", "GT")][0, 0] == 0b00001000, bin(by[("TCMPS", "GT")][0, 0])
    assert by[("TCMPS", "NE")][0, 0] == 0b11111110, bin(by[("TCMPS", "NE")][0, 0])


# =============================================================================================
# select group
# =============================================================================================
SR, SC = 4, 64
SEL_REGIONS = [(SR, SC), (SR - 1, SC - 3), (1, SC), (SR, 1), (2, 13), (3, 9)]


def select_plan(soc_, dt, mask_dt="u8"):
    """0 mask (SR, 32 bytes of rows), 1 src0, 2 src1, then dst tiles."""
    mcols = 32 // npd(mask_dt).itemsize
    tiles = [T(mask_dt, (SR, mcols)), T(dt, (SR, SC)), T(dt, (SR, SC))]
    steps, outs, expect = [], [], []
    for instr in ("TSEL", "TSELS"):
        if not legal(instr, soc_, dt):
            continue
        d = len(tiles)
        tiles.append(T(dt, (SR, SC)))
        outs.append(d)
        last = ("t", 2) if instr == "TSEL" else ("s", 0)
        steps.append(Step(instr, (("t", d), ("t", 0), ("t", 1), last)))
        expect.append((instr, d))
    return tiles, steps, outs, expect


def run_select(soc_, dt, region, rng, mask_dt="u8"):
    tiles, steps, outs, expect = select_plan(soc_, dt, mask_dt)
    mask = rng.integers(0, 256, (SR, 32), dtype=np.uint8).view(npd(mask_dt))      # every bit random
    a, b = random_tile(rng, dt, (SR, SC)), random_tile(rng, dt, (SR, SC))
    s = float(rng.choice([0.5, -3.0, float("inf")])) if ref.is_float(dt) else \
        int(rng.integers(np.iinfo(npd(dt)).min, int(np.iinfo(npd(dt)).max) + 1))
    values = [mask, a, b] + [random_tile(rng, dt, (SR, SC)) for _ in tiles[3:]]
    vr, vc = region
    valids = [(vr, max(1, -(-(-(-vc // 8)) // npd(mask_dt).itemsize)))] + [region] * (len(tiles) - 1)
    got = run_multi(tiles, steps, outs, values, valids, (s,))
    for instr, d in expect:
        want = RB.tsel(values[d], mask, a, b, region) if instr == "TSEL" else \
            RB.tsels(values[d], mask, a, s, region)
        assert_bits_equal(got[d], want, inputs={"a": a, "b": b},
                          what=f"{instr} {dt} (mask {mask_dt}) on {soc_}, valid {region}")


@keep_if(lambda p: any(legal(i, p["soc_"], p["dtype"]) for i in GROUPS["select"]))
@pytest.mark.parametrize("soc_", SOCS)
@pytest.mark.parametrize("dtype", ALL_DT)
def test_select_group(pto_init, target, soc_, dtype):
    """TSEL and TSELS: masks with every bit random (the unused bits past validCol included),
    read per row; regions smaller than the tile."""
    dt = dtype
    init_soc(pto_init, soc_)
    for k, region in enumerate(SEL_REGIONS):
        run_select(soc_, dt, region, rng_for("select", soc_, dt, k))


@pytest.mark.parametrize("case", [("a2a3", "f16", "u16"), ("a5", "f32", "u32")], ids="-".join)
def test_select_wider_mask_types(pto_init, target, case):
    """u16 / u32 masks are read as bytes (row stride = mask.Cols * element size)."""
    soc_, dt, mdt = case
    init_soc(pto_init, soc_)
    for k, region in enumerate([(SR, SC), (3, 13)]):
        run_select(soc_, dt, region, rng_for("wide-mask", case, k), mdt)


@pytest.mark.parametrize("soc_", SOCS)
def test_select_whole_bytes(pto_init, target, soc_):
    """TSEL alone on widths that are a multiple of 8 with a mask valid region of ceil(vc / 8)
    bytes (the case pto-isa's CPU backend gets right too)."""
    init_soc(pto_init, soc_)
    tiles = [T("u8", (SR, 32)), T("f32", (SR, SC)), T("f32", (SR, SC)), T("f32", (SR, SC))]
    steps = [Step("TSEL", (("t", 3), ("t", 0), ("t", 1), ("t", 2)))]
    rng = rng_for("sel-bytes", soc_)
    for vr, vc in [(SR, SC), (2, 16)]:
        mask = rng.integers(0, 256, (SR, 32), dtype=np.uint8)
        a, b, d = (random_tile(rng, "f32", (SR, SC)) for _ in range(3))
        got = run_multi(tiles, steps, [3], [mask, a, b, d], [(vr, vc // 8), (vr, vc), (vr, vc), (vr, vc)])
        assert_bits_equal(got[3], RB.tsel(d, mask, a, b, (vr, vc)), what=f"TSEL f32 {vr}x{vc} on {soc_}")


# =============================================================================================
# no-overlap rules
# =============================================================================================
@pypto.kernel
def k_xor_same(x, y, z):
    a = pto.Tile(pto.Vec, pto.int16, (4, 64))
    b = pto.Tile(pto.Vec, pto.int16, (4, 64))
    t = pto.Tile(pto.Vec, pto.int16, (4, 64))
    pto.TLOAD(a, x[:, :])
    pto.TLOAD(b, y[:, :])
    pto.TXOR(a, a, b, t)
    pto.TSTORE(z[:, :], a)


@pypto.kernel
def k_xor_twice(x, z):
    a = pto.Tile(pto.Vec, pto.int16, (4, 64))
    d = pto.Tile(pto.Vec, pto.int16, (4, 64))
    t = pto.Tile(pto.Vec, pto.int16, (4, 64))
    pto.TLOAD(a, x[:, :])
    pto.TXOR(d, a, a, t)
    pto.TSTORE(z[:, :], d)


@pypto.kernel(checks="off")   # runtime TASSIGN addresses, no flags: a test of TANDS alone
def k_ands_assigned(x, z, da, sa):
    """TANDS with dst and src placed by TASSIGN at addresses given as arguments (run time)."""
    d = pto.Tile(pto.Vec, pto.int16, (4, 64))
    a = pto.Tile(pto.Vec, pto.int16, (4, 64))
    pto.TASSIGN(d, da)
    pto.TASSIGN(a, sa)
    pto.TLOAD(a, x[:, :])
    pto.TANDS(d, a, 0x0F0F)
    pto.TSTORE(z[:, :], d)


@pypto.kernel
def k_ands_static_overlap(x, z):
    d = pto.Tile(pto.Vec, pto.int16, (4, 64))
    a = pto.Tile(pto.Vec, pto.int16, (4, 64))
    pto.TASSIGN(d, 0x0)
    pto.TASSIGN(a, 0x100)
    pto.TLOAD(a, x[:, :])
    pto.TANDS(d, a, 3)
    pto.TSTORE(z[:, :], d)


@pypto.kernel
def k_xors_tmp_is_src(x, z):
    d = pto.Tile(pto.Vec, pto.int16, (4, 64))
    a = pto.Tile(pto.Vec, pto.int16, (4, 64))
    pto.TLOAD(a, x[:, :])
    pto.TXORS(d, a, 5, a)
    pto.TSTORE(z[:, :], d)


def _i16(rng):
    return rng.integers(-30000, 30000, (4, 64)).astype(np.int16)


def test_txor_overlap_is_an_a2a3_error(soc):
    rng = rng_for("xor-same", soc)
    x, y = _i16(rng), _i16(rng)
    z = pypto.zeros((4, 64), pypto.int16)
    if soc == "a2a3":
        with pytest.raises(errors.TileError, match=r"TXOR: dst \w+ and src0 \w+ share on-chip storage"):
            k_xor_same(pypto.Tensor(x), pypto.Tensor(y), z)
        with pytest.raises(errors.TileError, match=r"TXOR: src0 \w+ and src1 \w+ share"):
            k_xor_twice(pypto.Tensor(x), z)
    else:                                      # a5 ignores tmp and computes in place
        k_xor_same(pypto.Tensor(x), pypto.Tensor(y), z)
        assert_bits_equal(z.numpy(), x ^ y, what="a5 TXOR in place")
        k_xor_twice(pypto.Tensor(x), z)
        assert_bits_equal(z.numpy(), np.zeros_like(x), what="a5 TXOR(d, a, a, t)")


def test_tands_overlap_static_address(soc):
    z = pypto.zeros((4, 64), pypto.int16)
    with pytest.raises(errors.TileError, match=r"TANDS: dst \w+ and src \w+ share on-chip storage \(bytes"):
        k_ands_static_overlap(pypto.Tensor(_i16(rng_for("s"))), z)


def test_tands_overlap_runtime_address(soc):
    rng = rng_for("ands-rt", soc)
    x = _i16(rng)
    z = pypto.zeros((4, 64), pypto.int16)
    k_ands_assigned(pypto.Tensor(x), z, 0x0, 0x800)               # disjoint: fine
    assert_bits_equal(z.numpy(), x & np.int16(0x0F0F), what="TANDS at disjoint runtime addresses")
    with pytest.raises(errors.TileError, match=r"TANDS: dst \w+ and src \w+ share on-chip storage"):
        k_ands_assigned(pypto.Tensor(x), z, 0x0, 0x100)


def test_txors_tmp_must_be_distinct(soc):
    with pytest.raises(errors.TileError, match=r"TXORS: src \w+ and tmp \w+ share"):
        k_xors_tmp_is_src(pypto.Tensor(_i16(rng_for("x"))), pypto.zeros((4, 64), pypto.int16))


# =============================================================================================
# errors at trace time and at run time
# =============================================================================================
def trace(fn, *args):
    """Trace a small kernel (errors are raised while tracing: nothing compiles)."""
    k = pypto.kernel(fn)
    return k.ir(*args)


def _gm(dt, shape=(4, 64)):
    return pypto.zeros(shape, getattr(pypto, ref.LONG[npd(dt)]))


@pytest.mark.parametrize("case", [("TAND", "f32", "a2a3"), ("TAND", "i32", "a2a3"), ("TNOT", "i8", "a2a3"),
                                  ("TSHL", "f16", "a5"), ("TANDS", "u16", "a2a3"), ("TSHLS", "i8", "a2a3")],
                         ids="-".join)
def test_illegal_dtype(pto_init, case):
    instr, dt, soc_ = case
    pto_init(soc=soc_)

    def body(x):
        a = pto.Tile(pto.Vec, x.dtype, (4, 64))
        d = pto.Tile(pto.Vec, x.dtype, (4, 64))
        if instr in ("TANDS", "TSHLS"):
            getattr(pto, instr)(d, a, 1)
        elif instr == "TNOT":
            pto.TNOT(d, a)
        else:
            getattr(pto, instr)(d, a, a)
    with pytest.raises(errors.DTypeError, match=rf"{instr} does not accept"):
        trace(body, _gm(dt))


def test_dn_layout_is_refused(pto_init):
    pto_init(soc="a5")

    def body(x):
        a = pto.Tile(pto.Vec, pto.int16, (64, 16), blayout=pto.ColMajor)
        pto.TAND(a, a, a)
    with pytest.raises(errors.LayoutError, match=r"TAND operand dst: tile \w+ has layout DN"):
        trace(body, _gm("i16"))


def test_cmp_needs_a_mode_and_one_source_type(pto_init):
    pto_init(soc="a2a3")

    def no_mode(x):
        a = pto.Tile(pto.Vec, pto.float32, (4, 64))
        d = pto.Tile(pto.Vec, pto.uint8, (4, 64))
        pto.TCMP(d, a, a)
    with pytest.raises(errors.OperandError, match=r"TCMP: cmpMode is not set"):
        trace(no_mode, _gm("f32"))

    def two_types(x):
        a = pto.Tile(pto.Vec, pto.float32, (4, 64))
        b = pto.Tile(pto.Vec, pto.float32, (8, 64))
        d = pto.Tile(pto.Vec, pto.uint8, (4, 64))
        pto.TCMP(d, a, b, cmpMode="LT")
    with pytest.raises(errors.TileError, match=r"TCMP: src0 \w+ .* and src1 \w+ .* different types"):
        trace(two_types, _gm("f32"))

    def bad_mode(x):
        a = pto.Tile(pto.Vec, pto.float32, (4, 64))
        d = pto.Tile(pto.Vec, pto.uint8, (4, 64))
        pto.TCMPS(d, a, 1.0, cmpMode="LESS")
    with pytest.raises(errors.OperandError, match=r"cmpMode='LESS' is not a CmpMode"):
        trace(bad_mode, _gm("f32"))


def test_predicate_room_static(pto_init):
    """a2a3 dst rows too short; a5 dst too small for the stream; a mask too small for TSEL."""
    pto_init(soc="a2a3")

    def short_rows(x):
        a = pto.Tile(pto.Vec, pto.float16, (2, 512))
        d = pto.Tile(pto.Vec, pto.uint8, (2, 32))
        pto.TCMPS(d, a, 0.0, cmpMode="GT")
    with pytest.raises(errors.ValidRegionError, match=r"TCMPS: dst \w+ holds 2 rows of 32 bytes, but a 2 x 512"):
        trace(short_rows, _gm("f16", (2, 512)))

    def few_mask_rows(x):
        m = pto.Tile(pto.Vec, pto.uint8, (2, 32))
        a = pto.Tile(pto.Vec, pto.float32, (4, 64))
        pto.TSEL(a, m, a, a)
    with pytest.raises(errors.ValidRegionError, match=r"TSEL: mask \w+ holds 2 rows of 32 bytes, but a 4 x 64"):
        trace(few_mask_rows, _gm("f32"))
    pypto.finalize()
    pto_init(soc="a5")

    def small_stream(x):
        a = pto.Tile(pto.Vec, pto.float32, (8, 64))
        d = pto.Tile(pto.Vec, pto.uint32, (1, 8))
        pto.TCMP(d, a, a, cmpMode="EQ")
    with pytest.raises(errors.ValidRegionError, match=r"TCMP: dst \w+ holds 32 bytes, but 512 predicate bits need 64"):
        trace(small_stream, _gm("f32", (8, 64)))


def test_sel_mask_room_runtime(pto_init, target):
    """TSEL with a runtime valid region its mask rows cannot hold (38 bytes per row needed)."""
    init_soc(pto_init, "a2a3")
    with pytest.raises(errors.ValidRegionError, match=r"TSEL: mask \w+ holds 4 rows of 32 bytes, but a 4 x 300"):
        run_multi([T("u8", (4, 32)), T("f32", (4, 512)), T("f32", (4, 512)), T("f32", (4, 512))],
                  [Step("TSEL", (("t", 3), ("t", 0), ("t", 1), ("t", 2)))], [3],
                  [np.zeros((4, 32), np.uint8)] + [np.zeros((4, 512), np.float32)] * 3,
                  [(4, 32), (4, 300), (4, 300), (4, 300)])


def test_sels_source_smaller_runtime(pto_init, target):
    init_soc(pto_init, "a5")
    tiles, steps, outs, _ = select_plan("a5", "f32")
    vals = [np.zeros(t.shape, t.np) for t in tiles]
    with pytest.raises(errors.ValidRegionError, match=r"TSELS: src \w+ has a 2.?x.?64 valid region but dst"):
        run_multi(tiles, [steps[1]], [outs[1]], vals, [(4, 32), (2, 64), (4, 64), (4, 64), (4, 64)], (1.0,))


@pytest.mark.parametrize("soc_", SOCS)
def test_cmp_src1_smaller_runtime(pto_init, target, soc_):
    init_soc(pto_init, soc_)
    ctiles, csteps, couts, _ = compare_plan(soc_, "f32")
    with pytest.raises(errors.ValidRegionError, match=r"TCMP: src1 \w+ has a 2 x 10 valid region but src0 \w+'s"):
        run_multi(ctiles, csteps, couts, [np.zeros(t.shape, t.np) for t in ctiles],
                  [(3, 10), (2, 10)] + [t.shape for t in ctiles[2:]], (0.0,))


def test_scalar_must_fit(pto_init):
    pto_init(soc="a5")

    def big(x):
        a = pto.Tile(pto.Vec, pto.uint8, (4, 64))
        d = pto.Tile(pto.Vec, pto.uint8, (4, 64))
        pto.TORS(d, a, 300)
    with pytest.raises(errors.PtoError, match=r"TORS.*300"):
        trace(big, _gm("u8"))

    def frac(x):
        m = pto.Tile(pto.Vec, pto.uint8, (4, 32))
        a = pto.Tile(pto.Vec, pto.int16, (4, 64))
        pto.TSELS(a, m, a, 1.5)
    with pytest.raises(errors.PtoError, match=r"TSELS.*1\.5"):
        trace(frac, _gm("i16"))


# =============================================================================================
# load_insn
# =============================================================================================
SEEDS = [  # (name, soc, dtype, params, scalar)
    ("and", "a2a3", "i16", {}, None), ("or", "a2a3", "u8", {}, None), ("xor", "a2a3", "i8", {}, None),
    ("not", "a2a3", "u16", {}, None), ("shl", "a2a3", "i32", {}, None), ("shr", "a2a3", "i16", {}, None),
    ("ands", "a2a3", "i16", {}, 0x5A5A), ("ors", "a2a3", "i16", {}, -2), ("xors", "a2a3", "i16", {}, 77),
    ("shls", "a2a3", "u32", {}, 5), ("shrs", "a2a3", "i32", {}, 3),
    ("cmp", "a2a3", "f32", {"cmpMode": "LT"}, None), ("cmps", "a2a3", "f16", {"cmpMode": "GE"}, 0.25),
    ("sel", "a2a3", "f32", {}, None), ("sels", "a2a3", "i16", {}, -7),
    ("cmp", "a5", "u8", {"cmpMode": "NE"}, None), ("cmps", "a5", "i32", {"cmpMode": "LE"}, 1000),
    ("and", "a5", "u32", {}, None), ("xors", "a5", "i8", {}, -3),
]
SIZES = (1001, 37, 8)


def seed_expected(name, dt, params, s, ins):
    x = ins[0]
    n = x.size
    if name in ("and", "or", "xor"):
        return {"and": RB.band, "or": RB.bor, "xor": RB.bxor}[name](x, ins[1])
    if name == "not":
        return RB.bnot(x)
    if name in ("shl", "shr"):
        return RB.shift(x, ins[1], name == "shl")[0]
    if name in ("ands", "ors", "xors"):
        return {"ands": RB.band, "ors": RB.bor, "xors": RB.bxor}[name](x, RB.scalar_to(s, dt))
    if name in ("shls", "shrs"):
        return RB.shift(x, s, name == "shls")[0]
    if name in ("cmp", "cmps"):
        y = ins[1] if name == "cmp" else RB.scalar_to(s, dt)
        return np.packbits(RB.predicate(x, y, params["cmpMode"]), bitorder="little")
    mask = ins[-1]
    bits = np.unpackbits(mask, bitorder="little")[:n].astype(bool)
    other = ins[1] if name == "sel" else RB.scalar_to(s, dt)
    return np.where(bits, x, other)


def seed_inputs(rng, name, dt, n):
    x = random_values(rng, dt, (n,))
    if name in ("shl", "shr"):
        return [x, rng.integers(0, bits_of(dt), n).astype(npd(dt))]
    if name in ("and", "or", "xor", "cmp", "sel"):
        y = random_values(rng, dt, (n,))
        if name == "cmp":
            y[::3] = x[::3]
        ins = [x, y]
    else:
        ins = [x]
    if name in ("sel", "sels"):
        ins.append(rng.integers(0, 256, -(-n // 8), dtype=np.uint8))
    return ins


@pytest.mark.parametrize("case", SEEDS, ids=lambda c: f"{c[1]}-{c[0]}-{c[2]}")
@pytest.mark.parametrize("kind", ["numpy", "tensor"])
def test_seed(pto_init, target, case, kind):
    name, soc_, dt, params, s = case
    init_soc(pto_init, soc_)
    insn = pypto.load_insn(name, **params)
    for n in SIZES:
        rng = rng_for("seed", case, n)
        ins = seed_inputs(rng, name, dt, n)
        want = seed_expected(name, dt, params, s, ins)
        out = np.zeros(want.shape, want.dtype)
        if name in ("sel", "sels"):
            operands = [ins[-1]] + ins[:-1]
        else:
            operands = list(ins)
        if s is not None:
            operands.append(s)
        if kind == "tensor":
            operands = [pypto.Tensor(o) if isinstance(o, np.ndarray) else o for o in operands]
            dst = pypto.Tensor(out)
        else:
            dst = out
        for i, o in enumerate(operands + [dst]):
            insn.set_operand(i, o)
        insn.execute()
        got = dst.numpy() if kind == "tensor" else out
        assert_bits_equal(got, want, what=f"load_insn({name!r}) {dt} n={n} on {soc_}")


def test_seed_errors(pto_init):
    pto_init(soc="a2a3")
    x = np.ones(20, np.float32)
    with pytest.raises(errors.OperandError, match=r"cmp: cmpMode is not set"):
        i = pypto.load_insn("cmp")
        for k, o in enumerate([x, x, np.zeros(3, np.uint8)]):
            i.set_operand(k, o)
        i.execute()
    i = pypto.load_insn("cmp", cmpMode="EQ")
    for k, o in enumerate([x, x, np.zeros(2, np.uint8)]):
        i.set_operand(k, o)
    with pytest.raises(errors.ShapeError, match=r"ceil\(20 / 8\) = 3 bytes"):
        i.execute()
    i.set_operand(2, np.zeros(3, np.int8))
    with pytest.raises(errors.DTypeError, match=r"uint8 tensor of packed predicate bits"):
        i.execute()
    i = pypto.load_insn("sel")
    for k, o in enumerate([np.zeros(3, np.uint8), x, x.astype(np.float16), np.zeros(20, np.float32)]):
        i.set_operand(k, o)
    with pytest.raises(errors.DTypeMismatchError):
        i.execute()
    i = pypto.load_insn("and")
    for k, o in enumerate([x, x, x]):
        i.set_operand(k, o)
    with pytest.raises(errors.DTypeError, match=r"and does not accept float32"):
        i.execute()
    with pytest.raises(errors.OperandError, match=r"cmpMode"):
        pypto.load_insn("cmps", cmpMode="BIGGER")


def test_seed_names_listed(pto_init):
    pto_init()
    names = set(pypto.list_insns())
    assert {"and", "or", "xor", "not", "shl", "shr", "ands", "ors", "xors", "shls", "shrs", "cmp",
            "cmps", "sel", "sels"} <= names


def test_table_dtypes_match_the_semantics_doc():
    for instr, per in LEGAL.items():
        spec = pypto.isa.TABLE[instr]
        for soc_, want in per.items():
            got = set()
            for d in spec.dtypes_on(soc_):
                if isinstance(d, tuple):
                    got.add(d[0] if instr in ("TSEL", "TSELS") else d[1])
                else:
                    got.add(d)
            assert got == set(want.split()), (instr, soc_, got)


# =============================================================================================
# hypothesis: runtime regions, values and scalars on the already compiled group kernels
# =============================================================================================
def test_bitwise_property(soc):
    dt = "i16"

    @PROPERTY
    @given(vr=st.integers(1, R), vc=st.integers(1, C), seed=seeds)
    def check(vr, vc, seed):
        run_bitwise(soc, dt, (vr, vc), np.random.default_rng(seed))
    check()


def test_compare_property(soc):
    dt = "f16"

    @PROPERTY
    @given(vr=st.integers(1, CR), vc=st.integers(1, CC), seed=seeds)
    def check(vr, vc, seed):
        run_compare(soc, dt, (vr, vc), np.random.default_rng(seed))
    check()


@pytest.mark.slow
@pytest.mark.parametrize("group", ["bitwise", "compare", "select"])
def test_group_property_every_dtype(pto_init, target, group):
    for soc_, dt in group_cases(group):
        init_soc(pto_init, soc_)

        @settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
        @given(vr=st.integers(1, 4), vc=st.integers(1, 64), seed=seeds)
        def check(vr, vc, seed):
            rng = np.random.default_rng(seed)
            {"bitwise": run_bitwise, "compare": run_compare, "select": run_select}[group](soc_, dt, (vr, vc), rng)
        check()
        pypto.finalize()
