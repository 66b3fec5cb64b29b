"""Arithmetic family conformance: 5.2 / 5.3 math (TADD .. TMIN over every dtype, unary math,
TPRELU, TREM/TFMOD(S), the tile-scalar ops) against ``ref_arith`` bit for bit, on both SoCs.

Kernels come from ``harness`` (whole tiles in and out, runtime valid regions), one tile capacity
per dtype, so each (instruction, dtype) compiles once and the regions, values and scalars vary at
run time. Where the ISA leaves a NaN pattern or a zero's sign open the reference says so (loose).
Also: the a2a3 source rewrite of integer TREM/TFMOD(S), the a2a3 TPRELU tmp bits, integer
division by zero (documented defaults, checks="strict"), trace-time errors, the seed level
(load_insn) and hypothesis properties (float ops, integer wrap, floor-mod signs, scalars).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto
from pypto import errors, pto

from . import ref_arith as R
from . import reference as ref
from .conftest import keep_if
from .harness import S, T, regions, run
from .helpers import assert_bits_equal, random_scalar, random_values, rng_for, seeds, sentinel

SOCS = ("a2a3", "a5")
SHAPE = (8, 64)                      # one capacity for every dtype (64 bytes per u8 row)
ALL_DT = ("f32", "f16", "bf16", "i32", "u32", "i16", "u16", "i8", "u8")
PROPERTY = settings(max_examples=5, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

BINARY = ("TADD", "TSUB", "TMUL", "TDIV", "TMAX", "TMIN")
UNARY = ("TABS", "TNEG", "TLOG", "TSQRT", "TRSQRT", "TRECIP", "TRELU")
REMS = ("TREM", "TFMOD")
SCALARS = ("TADDS", "TSUBS", "TMULS", "TDIVS", "TMINS", "TMAXS", "TLRELU", "TREMS", "TFMODS")


def sim_only(p: dict) -> bool:
    return p["target"].backend == "sim"


def init(pto_init, soc: str, **kw):
    pto_init(soc=soc, **kw)


def expected_tile(prefill: np.ndarray, res: np.ndarray, loose: np.ndarray, vr: int, vc: int):
    exp = prefill.copy()
    exp[:vr, :vc] = res[:vr, :vc]
    lo = np.zeros(prefill.shape, dtype=bool)
    lo[:vr, :vc] = loose[:vr, :vc]
    return exp, lo


def values(rng, dt: str, *, positive_half: bool = False) -> np.ndarray:
    v = random_values(rng, dt, SHAPE)
    if positive_half and dt in ("f32", "f16", "bf16"):
        bits = v.view(ref.bits_dtype(dt))
        sign = np.uint32(0x80000000) if dt == "f32" else np.uint16(0x8000)
        half = rng.random(SHAPE) < 0.5
        bits[half] &= ~sign
    return v


def nonzero_ints(rng, dt: str) -> np.ndarray:
    v = random_values(rng, dt, SHAPE)
    v[v == 0] = 3
    return v


# =============================================================================================
# one harness kernel per (instruction, dtype): the SoCs share it where their lowering agrees;
# valid regions, values and scalars change at run time
# =============================================================================================
FORM_OF = {**{n: "b" for n in BINARY + REMS}, **{n: "u" for n in UNARY},
           **{n: "s" for n in SCALARS}, "TDIVS-first": "f", "TDIVS-recip": "s", "TEXPANDS": "e",
           "TPRELU": "p"}
TMP = (SHAPE[0], 32)                  # TPRELU's u8 tmp: enough bits for 64 columns on a2a3


def tmp_spec(dtype: str, layout: str, soc: str) -> T:
    """TPRELU's tmp: a u8 tile on a2a3; a5 ignores tmp (its type is free), so there it has the
    sources' type, which pto-isa's CPU backend needs (its TPRELU takes one tile type)."""
    return T("u8", TMP) if soc == "a2a3" else T(dtype, SHAPE, layout)


def bundle_of(call: str, soc: str, dtype: str, backend: str) -> tuple[str, ...]:
    """The instructions compiled in one kernel with ``call`` (its form, no mode parameters) on
    the simulator; off it each case keeps its own kernel, so one instruction another backend
    cannot build never takes the others with it."""
    if backend != "sim" or "-" in call:
        return ()
    return group(tuple(n for n, f in FORM_OF.items() if f == FORM_OF[call] and "-" not in n), soc, dtype)


def run_call(call: str, dtype: str, soc: str, a, b, prefill, s, vr: int, vc: int, layout: str = "ND",
             bundle: tuple[str, ...] = ()):
    """Run one instruction use (``call`` = name or name-first / name-recip) on whole tiles."""
    name, form = call.split("-")[0], FORM_OF[call]
    t = T(dtype, SHAPE, layout)
    kind = S("int" if dtype[0] in "iu" else "float")
    ops, vals = {"u": ((t, t), [prefill, a]), "b": ((t, t, t), [prefill, a, b]),
                 "s": ((t, t, kind), [prefill, a, s]), "f": ((t, kind, t), [prefill, s, a]),
                 "e": ((t, kind), [prefill, s]),
                 "p": ((t, t, t, tmp_spec(dtype, layout, soc)), [prefill, a, b, None])}[form]
    if form == "p":
        vals[3] = np.zeros(ops[3].shape, ops[3].np)
    valid = [(vr, vc) if isinstance(o, T) and o.dtype == dtype else None for o in ops]
    params = {"recip": True} if call.endswith("-recip") else {}
    return run(name, ops, vals, valid, bundle=bundle, **params)[0]


def group(names, soc: str, dtype: str) -> tuple[str, ...]:
    return tuple(n for n in names if dtype in R.LEGAL[n.split("-")[0]][soc]
                 and (not n.endswith("-recip") or (soc == "a5" and dtype in ("f32", "f16"))))





def mixed(rng, dt: str) -> np.ndarray:
    """Special values, positive values (ln, sqrt) and small integers (remainder signs)."""
    v = values(rng, dt, positive_half=True)
    grid = rng.random(SHAPE) < 0.3
    if dt[0] in "iu":
        small = rng.integers(-100 if dt[0] == "i" else 0, 101, SHAPE)
    else:
        small = rng.integers(-50, 51, SHAPE).astype(np.float32)
    return np.where(grid, small, v).astype(v.dtype) if dt != "bf16" else \
        np.where(grid, ref.f32_to_bf16(small.astype(np.float32)), v)


def divisors(rng, dt: str) -> np.ndarray:
    v = mixed(rng, dt)
    grid = rng.random(SHAPE) < 0.3
    if dt[0] in "iu":
        v = np.where(grid, rng.integers(1, 10, SHAPE) * (-1 if dt[0] == "i" else 1) ** rng.integers(0, 2, SHAPE), v)
        v = v.astype(ref.np_dtype(dt))
        v.ravel()[:2] = 0                                  # x / 0: the documented defaults
    elif dt != "bf16":
        v = np.where(grid, rng.choice([-7, -3, -2, 2, 3, 7, 0.5, -0.5], SHAPE), v.astype(np.float32)).astype(v.dtype)
    return v


def reference_of(call: str, a, b, s, soc: str):
    name = call.split("-")[0]
    if name in BINARY:
        return R.binary(name, a, b)
    if name in REMS:
        return R.rem(a, b, soc=soc, floor=name == "TREM")[:2]
    if name in ("TREMS", "TFMODS"):
        return R.rem(a, s, soc=soc, floor=name == "TREMS")[:2]
    if name in UNARY:
        return R.unary(name, a, soc=soc)
    if name == "TEXPANDS":
        return R.expands(SHAPE, s, a.dtype)
    if name == "TPRELU":
        return R.prelu(a, b)
    return R.scalar_op(name, a, s, soc=soc, scalar_first=call.endswith("-first"),
                       recip=call.endswith("-recip"))


def defined_only(call: str, dtype: str, a, b, s):
    """Off the simulator, integer division must stay defined: a C++ division by zero or
    INT_MIN / -1 traps (SIGFPE) in pto-isa's CPU backend and is undefined on the chip."""
    if dtype[0] not in "iu" or call.split("-")[0] not in ("TDIV", "TDIVS", "TREM", "TFMOD", "TREMS", "TFMODS"):
        return a, b, s
    info = np.iinfo(ref.np_dtype(dtype))
    a, b = a.copy(), b.copy()
    b[b == 0] = 1
    b[(a == info.min) & (b == -1)] = 1
    if np.ndim(s) == 0 and call.split("-")[0] in ("TDIVS", "TREMS", "TFMODS"):
        s = s or 1
        if call.endswith("-first"):
            a[a == 0] = 1
            a[(a == -1) & (s == info.min)] = 1
        elif s == -1:
            a[a == info.min] += 1
    return a, b, s


def check_calls(soc: str, dtype: str, calls: tuple[str, ...], rounds: int, tag: str, layout="ND",
                backend: str = "sim"):
    for k in range(rounds):
        vr, vc = regions(SHAPE)[k % 4]
        rng = rng_for(tag, soc, dtype, k)
        a0, b0 = mixed(rng, dtype), divisors(rng, dtype)
        for c in calls:
            prefill = random_values(rng, dtype, SHAPE)
            s = pick(scalar_values(rng, dtype, c.split("-")[0]), k)
            a, b = a0, b0
            if backend != "sim":
                a, b, s = defined_only(c, dtype, a0, b0, s)
            out = run_call(c, dtype, soc, a, b, prefill, s, vr, vc, layout,
                           bundle_of(c, soc, dtype, backend))
            res, loose = reference_of(c, a, b, s, soc)
            exp, lo = expected_tile(prefill, res, loose, vr, vc)
            assert_bits_equal(out, exp, loose=lo, inputs={"a": a, "b": b},
                              what=f"{c} {dtype} {soc} {layout} s={s!r} valid ({vr}, {vc})")


def legal_call(p: dict) -> bool:
    return bool(group((p["instr"],), p["soc"], p["dtype"]))


@keep_if(legal_call)
@pytest.mark.parametrize("dtype", ALL_DT)
@pytest.mark.parametrize("instr", BINARY + REMS + ("TPRELU",))
@pytest.mark.parametrize("soc", SOCS)
def test_binary(pto_init, target, soc, instr, dtype):
    """TADD TSUB TMUL TDIV TMAX TMIN TREM TFMOD TPRELU: every dtype of each SoC's entries."""
    init(pto_init, soc)
    check_calls(soc, dtype, (instr,), 4, "binary", backend=target.backend)


@keep_if(legal_call)
@pytest.mark.parametrize("dtype", ALL_DT)
@pytest.mark.parametrize("instr", UNARY)
@pytest.mark.parametrize("soc", SOCS)
def test_unary(pto_init, target, soc, instr, dtype):
    """TABS TNEG TLOG TSQRT TRSQRT TRECIP TRELU."""
    init(pto_init, soc)
    check_calls(soc, dtype, (instr,), 4, "unary", backend=target.backend)


@keep_if(legal_call)
@pytest.mark.parametrize("dtype", ALL_DT)
@pytest.mark.parametrize("instr", SCALARS + ("TDIVS-first", "TDIVS-recip", "TEXPANDS"))
@pytest.mark.parametrize("soc", SOCS)
def test_scalar(pto_init, target, soc, instr, dtype):
    """TADDS TSUBS TMULS TDIVS (both overloads; on a5 floats also recip=True) TMINS TMAXS TLRELU
    TREMS TFMODS TEXPANDS, with runtime scalars (0 divisors, the a2a3 float32 path of TSUBS)."""
    init(pto_init, soc)
    check_calls(soc, dtype, (instr,), 6, "scalar", backend=target.backend)


@pytest.mark.parametrize("soc", SOCS)
def test_dn_layout(pto_init, target, soc):
    """Column-major (DN) tiles are addressed through their own layout."""
    init(pto_init, soc)
    check_calls(soc, "f32", ("TADD", "TREM", "TRSQRT", "TDIVS-first"), 2, "dn", layout="DN",
                backend=target.backend)


@pytest.mark.parametrize("soc", SOCS)
def test_rsqrt_per_soc_rounding(pto_init, target, soc):
    """a5 rounds sqrt before dividing, a2a3 rounds 1/sqrt once: inputs where the two differ."""
    init(pto_init, soc)
    rng = rng_for("rsqrt-diff")
    x = (rng.random(4096) * 100 + 0.01).astype(np.float16)
    a2, _ = R.unary("TRSQRT", x, soc="a2a3")
    a5, _ = R.unary("TRSQRT", x, soc="a5")
    differ = x[ref.to_bits(a2) != ref.to_bits(a5)]
    assert differ.size >= 8, "test bug: no input where the SoCs' rsqrt differ"
    a = np.resize(differ, SHAPE).astype(np.float16)
    out = run("TRSQRT", (T("f16", SHAPE), T("f16", SHAPE)), [sentinel(SHAPE, "f16"), a])[0]
    assert_bits_equal(out, R.unary("TRSQRT", a, soc=soc)[0], inputs={"a": a}, what=f"rsqrt f16 {soc}")


# =============================================================================================
# TREM / TFMOD
# =============================================================================================
# hand-made cases: (dtype, a, b, {soc: (TREM, TFMOD)})
REM_HAND = [
    ("i32", [-7, 7, -7, 7, 0, -1], [3, 3, -3, -3, 5, 5],
     {s: ([2, 1, -1, -2, 0, 4], [-1, 1, -1, 1, 0, -1]) for s in SOCS}),
    ("f32", [-7.0, 7.0, -7.0, 7.0, -0.5, 5.5], [3.0, 3.0, -3.0, -3.0, 2.0, -2.0],
     {s: ([2.0, 1.0, -1.0, -2.0, 1.5, -0.5], [-1.0, 1.0, -1.0, 1.0, -0.5, 1.5]) for s in SOCS}),
    ("f16", [2.0 ** -10], [-2048.0], {"a2a3": ([-2048.0], [2.0 ** -10]), "a5": ([-2047.0], [2.0 ** -10])}),
    ("f16", [60000.0], [1.0], {"a2a3": ([27232.0], [27232.0]), "a5": ([0.0], [0.0])}),
    # a2a3 i16 goes through f16: 2049 -> 2048, 32767 -> 32768, -32768 / 3 rounds to -10920
    ("i16", [2049, -32768, 32767], [2, 3, 3], {"a2a3": ([0, 0, 0], [0, 0, 0]), "a5": ([1, 1, 1], [1, -2, 1])}),
    ("i32", [16777217], [2], {"a2a3": ([0], [0]), "a5": ([1], [1])}),
]


@pytest.mark.parametrize("case", range(len(REM_HAND)))
@pytest.mark.parametrize("soc", SOCS)
def test_rem_hand_cases(pto_init, target, soc, case):
    """Floor-mod takes the divisor's sign, trunc-mod the dividend's; the per-SoC precision
    paths of the Addendum (f16 through s16 on a2a3, narrowed toward zero on a5; integers through
    f32 / f16 on a2a3), written out by hand and checked against the simulator and the reference."""
    init(pto_init, soc)
    dt, a, b, want = REM_HAND[case]
    npdt = ref.np_dtype(dt)
    A = np.resize(np.array(a, dtype=np.float64).astype(npdt), SHAPE)
    B = np.resize(np.array(b, dtype=np.float64).astype(npdt), SHAPE)
    n = len(a)
    for instr, expect in zip(REMS, want[soc]):
        out = run(instr, (T(dt, SHAPE), T(dt, SHAPE), T(dt, SHAPE)), [sentinel(SHAPE, dt), A, B])[0]
        np.testing.assert_array_equal(out.ravel()[:n], np.array(expect, dtype=np.float64).astype(npdt),
                                      err_msg=f"{instr} {dt} {soc}")
        assert_bits_equal(out, R.rem(A, B, soc=soc, floor=instr == "TREM")[0], what=f"{instr} {dt} {soc}")


@pypto.kernel
def k_rem_sources(x, y, z, ox, oy, vr, vc):
    """TREM on a (vr, vc) region; stores dst and both sources whole (the a2a3 rewrite)."""
    dt = x.dtype
    a = pto.Tile(pto.Vec, dt, SHAPE, valid=pto.DYNAMIC)
    b = pto.Tile(pto.Vec, dt, SHAPE, valid=pto.DYNAMIC)
    d = pto.Tile(pto.Vec, dt, SHAPE, valid=pto.DYNAMIC)
    for t, g in ((a, x), (b, y), (d, z)):
        pto.TLOAD(t, g[:, :])
    pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
    pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
    for t in (a, b, d):
        t.set_valid(vr, vc)
    pto.TREM(d, a, b)
    pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)
    pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)
    for t, g in ((a, ox), (b, oy), (d, z)):
        t.set_valid(SHAPE[0], SHAPE[1])
        pto.TSTORE(g[:, :], t)


@pytest.mark.parametrize("dtype", ("i32", "i16"))
@pytest.mark.parametrize("soc", SOCS)
def test_rem_rewrites_integer_sources_on_a2a3(pto_init, target, soc, dtype):
    """a2a3 converts integer sources in place to float and back: afterwards they hold
    int(float(x)) over dst's valid region (values beyond float precision change); a5 leaves them."""
    init(pto_init, soc)
    npdt = ref.np_dtype(dtype)
    rng = rng_for("rewrite", soc, dtype)
    big = [16777217, 16777219, 2147483647, -2147483647, 33554435] if dtype == "i32" else \
        [2049, 2051, 32767, -32767, 4097]
    a = random_values(rng, dtype, SHAPE)
    b = nonzero_ints(rng, dtype)
    b[b == -1] = 3                        # INT_MIN % -1 traps in pto-isa's CPU backend
    a.ravel()[:5] = big
    b.ravel()[5:10] = big
    vr, vc = 5, 37
    z = pypto.Tensor(random_values(rng, dtype, SHAPE))
    z0 = z.numpy()
    ox, oy = pypto.zeros(SHAPE, getattr(pypto, ref.LONG[npdt])), pypto.zeros(SHAPE, getattr(pypto, ref.LONG[npdt]))
    k_rem_sources(pypto.Tensor(a), pypto.Tensor(b), z, ox, oy, vr, vc)
    res, _, a_after, b_after = R.rem(a, b, soc=soc)
    exp_a, exp_b = a.copy(), b.copy()
    exp_a[:vr, :vc], exp_b[:vr, :vc] = a_after[:vr, :vc], b_after[:vr, :vc]
    exp_z = z0.copy()
    exp_z[:vr, :vc] = res[:vr, :vc]
    assert_bits_equal(z.numpy(), exp_z, what=f"dst {soc} {dtype}")
    assert_bits_equal(ox.numpy(), exp_a, what=f"src0 after TREM {soc} {dtype}")
    assert_bits_equal(oy.numpy(), exp_b, what=f"src1 after TREM {soc} {dtype}")
    changed = (ox.numpy() != a).any()
    assert changed == (soc == "a2a3"), "a2a3 rewrites values beyond float precision, a5 does not"


# =============================================================================================
# tile-scalar
# =============================================================================================
def scalar_values(rng, dt: str, instr: str) -> list:
    """Scalars for ``instr`` on dt: the special ones first (0 divisors: the documented defaults;
    i32 TSUBS: values that change through float32 on a2a3), then ordinary and random ones."""
    if dt[0] in "iu":
        info = np.iinfo(ref.np_dtype(dt))
        vals = [0] if instr in ("TDIVS", "TREMS", "TFMODS") else []
        if instr == "TSUBS" and dt == "i32":
            vals += [16777217, -2147483648]
        vals += [3, -5 if dt[0] == "i" else 5] + \
            [int(rng.integers(int(info.min), int(info.max) + 1)) for _ in range(2)]
        return vals
    vals = [0.0, -0.0] if instr in ("TDIVS", "TREMS", "TFMODS") else []
    return vals + [0.1, -3.0, 2.0] + [random_scalar(rng, dt) for _ in range(2)]


def pick(vals: list, k: int):
    return vals[k % len(vals)]


@pytest.mark.parametrize("dtype", ("f32", "f16"))
def test_divs_a5_recip_mode(pto_init, target, dtype):
    """a5's ISA-page form (recip=True): src * T(1/scalar), 1/0 = +inf; differs from division."""
    init(pto_init, "a5")
    ops = (T(dtype, SHAPE), T(dtype, SHAPE), S("float"))
    rng = rng_for("recip", dtype)
    a = values(rng, dtype)
    differs = False
    for s in (3.0, 0.1, 7.0, 0.0, -0.0):
        got = run("TDIVS", ops, [sentinel(SHAPE, dtype), a, s], recip=True)[0]
        res, loose = R.scalar_op("TDIVS", a, s, soc="a5", recip=True)
        assert_bits_equal(got, res, loose=loose, inputs={"a": a}, what=f"recip {dtype} s={s}")
        div = R.scalar_op("TDIVS", a, s, soc="a5")[0]
        differs |= bool((ref.to_bits(div) != ref.to_bits(res)).any())
    assert differs, "the two a5 TDIVS forms should differ somewhere"


# =============================================================================================
# TPRELU (a2a3: with its u8 tmp tile)
# =============================================================================================
@pypto.kernel
def k_prelu_tmp(x, y, t, z, ot, vr, vc):
    dt = x.dtype
    a = pto.Tile(pto.Vec, dt, SHAPE, valid=pto.DYNAMIC)
    b = pto.Tile(pto.Vec, dt, SHAPE, valid=pto.DYNAMIC)
    d = pto.Tile(pto.Vec, dt, SHAPE, valid=pto.DYNAMIC)
    tmp = pto.Tile(pto.Vec, pto.uint8, (SHAPE[0], 32))
    for tl, g in ((a, x), (b, y)):
        pto.TLOAD(tl, g[:, :])
    pto.TLOAD(tmp, t[:, :])
    pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
    pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
    for tl in (a, b, d):
        tl.set_valid(vr, vc)
    pto.TPRELU(d, a, b, tmp)
    pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)
    pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)
    d.set_valid(vr, vc)
    pto.TSTORE(z[0:vr, 0:vc], d)
    pto.TSTORE(ot[:, :], tmp)


@keep_if(sim_only)
def test_prelu_tmp_bits_a2a3(pto_init, target):
    """pypto's a2a3 tmp: the predicate bits src0 > 0, row i at byte i * 32 (the tmp row), 0 past
    validCol up to the repeat boundary. pto-isa's CPU backend does not write tmp (sim only)."""
    init(pto_init, "a2a3")
    rng = rng_for("prelu-tmp")
    a, b = values(rng, "f32"), values(rng, "f32")
    t0 = random_values(rng, "u8", (SHAPE[0], 32))
    z, ot = pypto.zeros(SHAPE, pypto.float32), pypto.zeros((SHAPE[0], 32), pypto.uint8)
    vr, vc = 6, 45
    k_prelu_tmp(pypto.Tensor(a), pypto.Tensor(b), pypto.Tensor(t0), z, ot, vr, vc)
    assert_bits_equal(ot.numpy(), R.prelu_tmp(a, (vr, vc), t0), what="tmp bits")


# =============================================================================================
# integer division by zero: documented defaults, checks="strict"
# =============================================================================================
ZERO_CASES = [("TDIV", "a5", "i32"), ("TDIVS", "a2a3", "i16"), ("TDIVS", "a5", "u8"),
              ("TREM", "a2a3", "i32"), ("TREM", "a5", "u16"), ("TFMOD", "a5", "i16"),
              ("TREMS", "a2a3", "i16"), ("TFMODS", "a5", "u32")]


@keep_if(sim_only)
@pytest.mark.parametrize("case", ZERO_CASES, ids=["-".join(c) for c in ZERO_CASES])
def test_integer_division_by_zero(target, case):
    instr, soc, dt = case
    scalar = instr.endswith("S")
    ops = (T(dt, SHAPE), T(dt, SHAPE), S("int") if scalar else T(dt, SHAPE))
    rng = rng_for("zero", case)
    a = nonzero_ints(rng, dt)
    b = 0 if scalar else nonzero_ints(rng, dt)
    if not scalar:
        b[2, 5] = 0
    for checks in ("default", "strict"):
        pypto.init(backend="sim", soc=soc, sim=pypto.SimOptions(mode=target.mode, checks=checks))
        try:
            if checks == "default":
                out = run(instr, ops, [sentinel(SHAPE, dt), a, b])[0]
                if instr.startswith("TDIV"):
                    res = R.scalar_op(instr, a, b, soc=soc)[0] if scalar else R.binary(instr, a, b)[0]
                else:
                    res = R.rem(a, b, soc=soc, floor="REM" in instr)[0]
                assert_bits_equal(out, res, what=f"{instr} {dt} {soc} default")
            else:
                with pytest.raises(errors.UndefinedBehaviorError) as ei:
                    run(instr, ops, [sentinel(SHAPE, dt), a, b])
                msg = str(ei.value)
                assert instr in msg and "division by zero" in msg, msg
                assert ("scalar" in msg) if scalar else ("(2, 5)" in msg and "src1" in msg), msg
        finally:
            pypto.finalize()


# =============================================================================================
# trace-time errors
# =============================================================================================
def trace(soc: str, body, *args):
    """Trace a kernel whose body is ``body`` (called with tiles) on soc; return the PtoError."""
    @pypto.kernel
    def k(x):
        body()
    pypto.init(soc=soc)
    try:
        with pytest.raises(errors.PtoError) as ei:
            k.ir(pypto.zeros((8, 64), pypto.float32))
        return ei.value
    finally:
        pypto.finalize()


def _tiles(dt=None, n=3, shape=SHAPE):
    return [pto.Tile(pto.Vec, dt or pto.float32, shape) for _ in range(n)]


@pytest.mark.parametrize("name", R.UNSUPPORTED)
@pytest.mark.parametrize("soc", SOCS)
def test_unsupported_instructions_are_trace_errors(name, soc):
    def body():
        d, a, b = _tiles()
        if name in ("TADDSC", "TSUBSC"):
            getattr(pto, name)(d, a, 1.0, b)
        else:
            getattr(pto, name)(d, a, b, a)
    e = trace(soc, body)
    assert isinstance(e, errors.DTypeError), type(e)
    msg = str(e)
    assert name in msg and "no NPU implementation" in msg and "two instructions" in msg, msg
    from pypto.ir import registry
    simulated, why = registry.status(name)
    assert not simulated and "neither a2a3 nor a5" in why


def _inplace(name):
    def body():
        d, a, b = _tiles()
        if name == "TRECIP":
            pto.TRECIP(a, a)
        elif name == "TDIVS":
            pto.TDIVS(a, a, 2.0)
        elif name == "TDIVS-first":
            pto.TDIVS(a, 2.0, a)
        elif name == "TREM":
            pto.TREM(a, a, b)
        elif name == "TFMOD":
            pto.TFMOD(b, a, b)
        elif name == "TREMS":
            pto.TREMS(a, a, 3.0)
        elif name == "TPRELU":
            t = pto.Tile(pto.Vec, pto.uint8, (8, 32))
            pto.TPRELU(a, a, b, t)
    return body


@pytest.mark.parametrize("name", ["TRECIP", "TDIVS", "TDIVS-first", "TREM", "TFMOD", "TREMS", "TPRELU"])
def test_a2a3_shared_storage_is_a_trace_error(name):
    e = trace("a2a3", _inplace(name))
    assert isinstance(e, errors.OperandError), type(e)
    msg = str(e)
    assert name.split("-")[0] in msg and "must not share storage" in msg and "a2a3" in msg, msg


@pypto.kernel
def k_in_place(x, y, z0, z1, z2, z3):
    """TRECIP, TDIVS, TREM and TPRELU, each in place on its own copy of x (a5 only)."""
    u = pto.Tile(pto.Vec, pto.float32, SHAPE)
    t = pto.Tile(pto.Vec, pto.uint8, TMP)
    s = [pto.Tile(pto.Vec, pto.float32, SHAPE) for _ in range(4)]
    pto.TLOAD(u, y[:, :])
    for tl in s:
        pto.TLOAD(tl, x[:, :])
    pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
    pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
    pto.TRECIP(s[0], s[0])
    pto.TDIVS(s[1], s[1], 3.0)
    pto.TREM(s[2], s[2], u)
    pto.TPRELU(s[3], s[3], u, t)
    pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)
    pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)
    for tl, g in zip(s, (z0, z1, z2, z3)):
        pto.TSTORE(g[:, :], tl)


def test_a5_in_place_is_legal(pto_init, target):
    """a5 computes in registers: in-place use is legal and gives the out-of-place result."""
    init(pto_init, "a5")
    rng = rng_for("inplace-a5")
    a, b = values(rng, "f32"), values(rng, "f32")
    zs = [pypto.zeros(SHAPE, pypto.float32) for _ in range(4)]
    k_in_place(pypto.Tensor(a), pypto.Tensor(b), *zs)
    refs = [R.unary("TRECIP", a, soc="a5"), R.scalar_op("TDIVS", a, 3.0, soc="a5"),
            R.rem(a, b, soc="a5")[:2], R.prelu(a, b)]
    for name, z, (res, loose) in zip(("TRECIP", "TDIVS", "TREM", "TPRELU"), zs, refs):
        assert_bits_equal(z.numpy(), res, loose=loose, what=f"in-place {name} a5")


def test_prelu_tmp_rules_a2a3():
    def small():
        d, a, b = _tiles()
        pto.TPRELU(d, a, b, pto.Tile(pto.Vec, pto.uint8, (4, 32)))
    e = trace("a2a3", small)
    assert isinstance(e, errors.TileShapeError) and "TPRELU" in str(e) and "tmp" in str(e), str(e)

    def dn():
        d, a, b = _tiles()
        pto.TPRELU(d, a, b, pto.Tile(pto.Vec, pto.uint8, (32, 32), blayout=pto.ColMajor))
    e = trace("a2a3", dn)
    assert isinstance(e, errors.LayoutError) and "tmp" in str(e), str(e)

    def wrong_type():
        d, a, b = _tiles()
        pto.TPRELU(d, a, b, pto.Tile(pto.Vec, pto.int16, (8, 16)))
    e = trace("a2a3", wrong_type)
    assert isinstance(e, errors.DTypeError) and "TPRELU" in str(e), str(e)


def test_divs_recip_rules():
    e = trace("a2a3", lambda: (lambda d, a, b: pto.TDIVS(d, a, 2.0, recip=True))(*_tiles()))
    assert isinstance(e, errors.OperandError) and "recip" in str(e), str(e)

    def ints():
        d, a, b = _tiles(pto.int32)
        pto.TDIVS(d, a, 2, recip=True)
    e = trace("a5", ints)
    assert isinstance(e, errors.OperandError) and "recip" in str(e), str(e)


@pytest.mark.parametrize("instr,dt,soc", [("TABS", pto.int32, "a2a3"), ("TREM", pto.uint16, "a2a3"),
                                          ("TSQRT", pto.int16, "a5"), ("TDIV", pto.int32, "a2a3"),
                                          ("TLRELU", pto.int32, "a5"), ("TSUBS", pto.uint8, "a5")])
def test_illegal_dtype_is_a_trace_error(instr, dt, soc):
    def body():
        d, a, b = _tiles(dt)
        if instr in ("TABS", "TSQRT"):
            getattr(pto, instr)(d, a)
        elif instr in ("TLRELU", "TSUBS"):
            getattr(pto, instr)(d, a, 1)
        else:
            getattr(pto, instr)(d, a, b)
    e = trace(soc, body)
    assert isinstance(e, errors.DTypeError) and instr in str(e) and soc in str(e), str(e)


def test_float_scalar_into_integer_tile_is_a_trace_error():
    def body():
        d, a, _ = _tiles(pto.int32)
        pto.TDIVS(d, 2.5, a)
    e = trace("a5", body)
    assert isinstance(e, errors.DTypeError) and "TDIVS" in str(e) and "scalar" in str(e), str(e)


def test_tdivs_overload_operand_errors():
    def body():
        d, a, b = _tiles()
        pto.TDIVS(d, a, b)                  # two tiles: no overload takes them
    e = trace("a2a3", body)
    assert isinstance(e, errors.OperandError) and "TDIVS" in str(e) and "scalar" in str(e), str(e)


# =============================================================================================
# seed level (load_insn)
# =============================================================================================
SEEDS_UNARY = {"abs": "TABS", "neg": "TNEG", "log": "TLOG", "sqrt": "TSQRT", "rsqrt": "TRSQRT",
               "recip": "TRECIP", "relu": "TRELU"}
SEEDS_SCALAR = {"subs": "TSUBS", "divs": "TDIVS", "mins": "TMINS", "maxs": "TMAXS",
                "rems": "TREMS", "fmods": "TFMODS", "lrelu": "TLRELU"}
SEEDS_BINARY = {"rem": "TREM", "fmod": "TFMOD", "prelu": "TPRELU"}
SEED_NAMES = list(SEEDS_UNARY) + list(SEEDS_SCALAR) + list(SEEDS_BINARY) + ["expands"]


def _operand(x: np.ndarray, kind: str):
    return pypto.Tensor(x) if kind == "tensor" else x


def _seed(name: str, *operands):
    insn = pypto.load_insn(name)
    for i, x in enumerate(operands):
        insn.set_operand(i, x)
    insn.execute()


@pytest.mark.parametrize("name", SEED_NAMES)
@pytest.mark.parametrize("soc", SOCS)
def test_seed(pto_init, target, soc, name):
    """Each seed name on whole tensors (a tail chunk, several blocks), numpy operands for half of
    the names and pypto.Tensor operands for the other half (swapped between the SoCs)."""
    init(pto_init, soc)
    kind = ("numpy", "tensor")[(SEED_NAMES.index(name) + SOCS.index(soc)) % 2]
    rng = rng_for("seed", soc, name)
    dt = "f32"
    shape = (3, 1000)                                   # a tail chunk and several blocks
    a = random_values(rng, dt, shape)
    out_host = sentinel(shape, dt)
    out = _operand(out_host, kind)
    if name in SEEDS_UNARY:
        _seed(name, _operand(a, kind), out)
        res, loose = R.unary(SEEDS_UNARY[name], a, soc=soc)
    elif name in SEEDS_SCALAR:
        s = 2.5
        _seed(name, _operand(a, kind), s, out)
        instr = SEEDS_SCALAR[name]
        res, loose = (R.rem(a, s, soc=soc, floor=instr == "TREMS")[:2] if instr in ("TREMS", "TFMODS")
                      else R.scalar_op(instr, a, s, soc=soc))
    elif name == "expands":
        _seed(name, -1.25, out)
        res, loose = R.expands(shape, -1.25, dt)
    else:
        b = random_values(rng, dt, shape)
        _seed(name, _operand(a, kind), _operand(b, kind), out)
        res, loose = R.prelu(a, b) if name == "prelu" else \
            R.rem(a, b, soc=soc, floor=name == "rem")[:2]
    got = out.numpy() if kind == "tensor" else out_host
    assert_bits_equal(got, res, loose=loose, inputs={"a": a}, what=f"load_insn({name!r}) {soc}")


@pytest.mark.parametrize("soc", SOCS)
def test_seed_integer_rem_and_divs(pto_init, target, soc):
    """Integer seeds: floor-mod signs (the a2a3 int16 path through f16) and C division."""
    init(pto_init, soc)
    a = np.array([-7, 7, -7, 7, 5, 100, -32768], np.int16)
    b = np.array([3, 3, -3, -3, 2, 7, 3], np.int16)
    z = np.zeros_like(a)
    _seed("rem", a, b, z)
    assert_bits_equal(z, R.rem(a, b, soc=soc)[0], what="rem i16")
    _seed("divs", a, -2, z)
    assert_bits_equal(z, R.int_div(a, -2), what="divs i16")


def test_seed_errors(pto_init, target):
    init(pto_init, "a2a3")
    a = np.ones((4, 8), np.int32)
    with pytest.raises(errors.DTypeError) as ei:
        _seed("prelu", a, a, np.zeros_like(a))
    assert "prelu" in str(ei.value) and "float" in str(ei.value)
    with pytest.raises(errors.DTypeError):
        _seed("sqrt", a, np.zeros_like(a))
    with pytest.raises(errors.ShapeError):
        _seed("rem", np.ones(8, np.float32), np.ones(9, np.float32), np.zeros(8, np.float32))
    with pytest.raises(errors.DTypeError):
        _seed("expands", 1.5, np.zeros(8, np.int32))            # a fraction into an int tensor
    with pytest.raises(errors.InsnNotFoundError) as ei:
        pypto.load_insn("TADDC")
    assert "not simulated" in str(ei.value) and "neither a2a3 nor a5" in str(ei.value)


# =============================================================================================
# hypothesis properties (runtime values only: the kernels are the ones compiled above)
# =============================================================================================
@pytest.mark.parametrize("soc", SOCS)
def test_property_float_binary(pto_init, target, soc):
    init(pto_init, soc)

    @PROPERTY
    @given(instr=st.sampled_from(BINARY), dtype=st.sampled_from(("f32", "f16")),
           vr=st.integers(1, SHAPE[0]), vc=st.integers(1, SHAPE[1]), seed=seeds)
    def check(instr, dtype, vr, vc, seed):
        rng = np.random.default_rng(seed)
        a, b, prefill = values(rng, dtype), values(rng, dtype), random_values(rng, dtype, SHAPE)
        out = run(instr, (T(dtype, SHAPE),) * 3, [prefill, a, b], [(vr, vc)] * 3)[0]
        res, loose = R.binary(instr, a, b)
        exp, lo = expected_tile(prefill, res, loose, vr, vc)
        assert_bits_equal(out, exp, loose=lo, inputs={"a": a, "b": b}, what=f"{instr} {dtype}")
    check()


@pytest.mark.parametrize("soc", SOCS)
def test_property_integer_wrap(pto_init, target, soc):
    """Integer add/sub/mul/neg wrap modulo 2^bits: near the limits of i32 and i16."""
    init(pto_init, soc)

    @PROPERTY
    @given(instr=st.sampled_from(("TADD", "TSUB", "TMUL", "TNEG")), dtype=st.sampled_from(("i32", "i16")),
           seed=seeds)
    def check(instr, dtype, seed):
        rng = np.random.default_rng(seed)
        info = np.iinfo(ref.np_dtype(dtype))
        near = lambda: rng.choice([int(info.min), int(info.max)], SHAPE) + rng.integers(-3, 4, SHAPE)
        a = np.clip(near(), info.min, info.max).astype(ref.np_dtype(dtype))
        b = np.clip(near(), info.min, info.max).astype(ref.np_dtype(dtype))
        if instr == "TNEG":
            out = run(instr, (T(dtype, SHAPE),) * 2, [sentinel(SHAPE, dtype), a])[0]
            want = ((-a.astype(np.int64)) % (1 << info.bits)).astype(np.uint64).astype(a.dtype)
        else:
            out = run(instr, (T(dtype, SHAPE),) * 3, [sentinel(SHAPE, dtype), a, b])[0]
            op = {"TADD": np.add, "TSUB": np.subtract, "TMUL": np.multiply}[instr]
            want = (op(a.astype(object), b.astype(object)) % (1 << info.bits)).astype(np.uint64).astype(a.dtype)
        assert_bits_equal(out, want, inputs={"a": a, "b": b}, what=f"{instr} {dtype} wraps")
    check()


@pytest.mark.parametrize("soc", SOCS)
def test_property_floor_mod_signs(pto_init, target, soc):
    """TREM's result has the divisor's sign (or is 0) and |r| < |b|; TFMOD's the dividend's;
    both equal Python's % / math.fmod for small integers (exact in every path)."""
    init(pto_init, soc)

    @PROPERTY
    @given(dtype=st.sampled_from(("i32", "f32", "i16", "f16")), seed=seeds)
    def check(dtype, seed):
        rng = np.random.default_rng(seed)
        npdt = ref.np_dtype(dtype)
        a = rng.integers(-1000, 1001, SHAPE).astype(npdt)
        b = rng.choice([v for v in range(-17, 18) if v], SHAPE).astype(npdt)
        ops = (T(dtype, SHAPE),) * 3
        r = run("TREM", ops, [sentinel(SHAPE, dtype), a, b])[0].astype(np.float64)
        f = run("TFMOD", ops, [sentinel(SHAPE, dtype), a, b])[0].astype(np.float64)
        ai, bi = a.astype(np.int64), b.astype(np.int64)
        np.testing.assert_array_equal(r, ai % bi)
        np.testing.assert_array_equal(f, np.fmod(ai, bi))
        assert ((r == 0) | (np.sign(r) == np.sign(bi))).all() and (np.abs(r) < np.abs(bi)).all()
        assert ((f == 0) | (np.sign(f) == np.sign(ai))).all()
    check()


@pytest.mark.parametrize("soc", SOCS)
def test_property_scalar_conversion(pto_init, target, soc):
    """A runtime float scalar is rounded once from double to the element type (TEXPANDS shows
    the converted value; TADDS adds it)."""
    init(pto_init, soc)
    dts = ("f32", "f16") + (("bf16",) if soc == "a5" else ())

    @PROPERTY
    @given(dtype=st.sampled_from(dts), x=st.floats(-6e4, 6e4, allow_nan=False, width=64), seed=seeds)
    def check(dtype, x, seed):
        rng = np.random.default_rng(seed)
        got = run("TEXPANDS", (T(dtype, SHAPE), S("float")), [sentinel(SHAPE, dtype), x])[0]
        assert_bits_equal(got, R.expands(SHAPE, x, dtype)[0], what=f"TEXPANDS {dtype} {x!r}")
        a = values(rng, dtype)
        got = run("TADDS", (T(dtype, SHAPE), T(dtype, SHAPE), S("float")), [sentinel(SHAPE, dtype), a, x])[0]
        res, loose = R.scalar_op("TADDS", a, x)
        assert_bits_equal(got, res, loose=loose, inputs={"a": a}, what=f"TADDS {dtype} {x!r}")
    check()
