"""TEXP, TROWSUM and TCVT conformance: kernels and the seed API against the numpy reference.

Every case runs on both SoC profiles ("a2a3", "a5") and, through the ``target`` fixture, in both
simulator modes. Results are compared bit for bit with ``reference.exp`` / ``rowsum`` / ``cast``
(only the bit pattern of a NaN row sum is left open). pypto's ISA table is used to enumerate the
legal TCVT pairs; every expected value comes from the reference.

* kernels: static valid regions smaller than the tile, runtime (``set_valid``) regions that show
  nothing is written outside the valid region, hand-made rows for the per-SoC TROWSUM order, every
  legal TCVT pair with every rounding mode and saturation ON / OFF / default, special values.
* seed API: ``load_insn("exp" | "rowsum" | "cast", ...)`` with numpy and ``pypto.Tensor``
  operands, and its errors (illegal pair, unknown parameter, bad parameter value).
* errors: TROWSUM valid-row mismatch (trace time, at the instruction's line, and at run time),
  TEXP on int16, TCVT f32 -> i8.

Kernels are defined once (module level or a cached factory) and property tests vary runtime
scalars, so hypothesis examples share compilations. The sweep of every rounding mode x
saturation over every pair is ``@pytest.mark.slow``.
"""
from __future__ import annotations

import functools
import math
import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto
from pypto import errors, pto

from . import reference as ref
from .conftest import keep_if
from .helpers import assert_bits_equal, random_values, rng_for, seeds, sentinel

SOCS = ("a2a3", "a5")
KINDS = ("numpy", "tensor")
SATS = (None, "ON", "OFF")
ROUND_MODES = ref.ROUND_MODES          # CAST_NONE ... CAST_ODD

PROPERTY = settings(max_examples=6, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

with open(os.path.abspath(__file__), encoding="utf-8") as _f:
    _SOURCE = _f.read().splitlines()


def T(arr: np.ndarray) -> "pypto.Tensor":
    return pypto.Tensor(arr)


def pdt(d: Any):
    """pypto DType of a reference dtype / name."""
    return getattr(pypto, ref.LONG[ref.np_dtype(d)])




def assert_site(err: Exception, code: str) -> None:
    """The message names this file, the line of ``code`` and its source text."""
    hits = [i + 1 for i, line in enumerate(_SOURCE) if line.strip() == code]
    assert len(hits) == 1, f"test bug: {code!r} found {len(hits)} times"
    msg = str(err)
    assert f"test_units.py:{hits[0]}" in msg, msg
    assert code in msg, msg


def from_values(vals: list, dtype: Any) -> np.ndarray:
    """Python floats (or ints) -> an array of ``dtype`` (nearest, overflow to inf)."""
    dt = ref.np_dtype(dtype)
    with np.errstate(all="ignore"):
        if ref.is_float(dt):
            return np.array(vals, dtype=np.float64).astype(dt)
        return np.array(vals, dtype=object).astype(dt)


def from_bits(bits: list, dtype: Any) -> np.ndarray:
    dt = ref.np_dtype(dtype)
    return np.array(bits, dtype=np.uint64).astype(ref.bits_dtype(dt)).view(dt)


def place(base: np.ndarray, special: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``base`` with the values of ``special`` at random distinct positions (as many as fit)."""
    out = base.copy()
    flat = out.reshape(-1)
    k = min(flat.size, special.size)
    pos = rng.permutation(flat.size)[:k]
    flat[pos] = special[:k]
    return out


# =============================================================================================
# TEXP
# =============================================================================================
ER, EC = 16, 128                     # tile capacity (f16 and f32: 32-byte rows either way)
EVR, EVC, ER0, EC0 = 5, 100, 2, 10   # static valid region and its GM offset


def exp_specials(dtype: Any) -> np.ndarray:
    dt = ref.np_dtype(dtype)
    if dt == ref.F32:
        vals = [0.0, -0.0, 1.0, -1.0, 88.72283, 88.72284, 89.0, -87.33654, -87.33655, -103.27893,
                -103.97208, -104.0, np.inf, -np.inf, 1e-8, -1e-8, 0.6931472, 10.0, -10.0,
                2.0 ** -149, 1e30, -1e30, 0.5, -0.5]
        nans = [0x7FC00001, 0xFFC12345, 0x7F800001, 0xFF812345]
    else:
        vals = [0.0, -0.0, 1.0, -1.0, 11.0859375, 11.09375, 12.0, -9.703125, -16.625, -17.328125,
                -18.0, np.inf, -np.inf, 6.1e-5, 2.0 ** -24, 65504.0, -65504.0, 0.693, 0.5, -0.5]
        nans = [0x7E01, 0xFE10, 0x7C01, 0xFD00]
    return np.concatenate([from_values(vals, dt), from_bits(nans, dt)])


def exp_inputs(rng: np.random.Generator, dtype: Any, shape: tuple[int, int]) -> np.ndarray:
    return place(random_values(rng, dtype, shape), exp_specials(dtype), rng)


@pypto.kernel
def k_exp_static(x, z):
    dt = x.dtype
    a = pto.Tile(pto.Vec, dt, (ER, EC), valid=(EVR, EVC))
    d = pto.Tile(pto.Vec, dt, (ER, EC), valid=(EVR, EVC))
    pto.TLOAD(a, x[ER0:ER0 + EVR, EC0:EC0 + EVC])
    pto.TEXP(d, a)
    pto.TSTORE(z[ER0:ER0 + EVR, EC0:EC0 + EVC], d)


@pypto.kernel
def k_exp_observe(x, prefill, z, vr, vc):
    """dst is first filled from ``prefill``, then TEXP on a (vr, vc) region, then stored whole."""
    dt = x.dtype
    a = pto.Tile(pto.Vec, dt, (ER, EC), valid=pto.DYNAMIC)
    d = pto.Tile(pto.Vec, dt, (ER, EC), valid=pto.DYNAMIC)
    a.set_valid(vr, vc)
    pto.TLOAD(a, x[0:vr, 0:vc])
    d.set_valid(ER, EC)
    pto.TLOAD(d, prefill[0:ER, 0:EC])
    d.set_valid(vr, vc)
    pto.TEXP(d, a)
    d.set_valid(ER, EC)
    pto.TSTORE(z[0:ER, 0:EC], d)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_exp_static_region(soc, dtype):
    x = exp_inputs(rng_for("exp-static", dtype, soc), dtype, (ER, EC))
    z = T(sentinel((ER, EC), dtype))
    k_exp_static(T(x), z)
    win = (slice(ER0, ER0 + EVR), slice(EC0, EC0 + EVC))
    expected = sentinel((ER, EC), dtype)
    expected[win] = ref.exp(x[win])
    assert_bits_equal(z.numpy(), expected, inputs={"x": x}, what=f"TEXP {dtype} on {soc}")


def run_exp_observe(dtype, vr, vc, rng, x=None):
    x = exp_inputs(rng, dtype, (ER, EC)) if x is None else x
    prefill = random_values(rng, dtype, (ER, EC))
    z = T(sentinel((ER, EC), dtype))
    k_exp_observe(T(x), T(prefill), z, vr, vc)
    expected = prefill.copy()
    expected[:vr, :vc] = ref.exp(x[:vr, :vc])
    assert_bits_equal(z.numpy(), expected, inputs={"x": x, "prefill": prefill},
                      what=f"TEXP {dtype} on valid ({vr}, {vc}): whole tile")


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_exp_runtime_region_writes_only_valid(soc, dtype):
    run_exp_observe(dtype, 7, 77, rng_for("exp-observe", dtype, soc))
    # every f16 bit pattern once (the tile holds 2048 elements: 32 launches of a full tile)
    if dtype == "float16":
        allv = np.arange(0x10000, dtype=np.uint32).astype(np.uint16).view(np.float16)
        for k in range(0, 0x10000, ER * EC):
            run_exp_observe(dtype, ER, EC, rng_for("exp-all", k),
                            x=allv[k:k + ER * EC].reshape(ER, EC).copy())


def test_exp_property(soc):
    @PROPERTY
    @given(dtype=st.sampled_from(["float32", "float16"]), vr=st.integers(1, ER),
           vc=st.integers(1, EC), seed=seeds)
    def check(dtype, vr, vc, seed):
        run_exp_observe(dtype, vr, vc, np.random.default_rng(seed))
    check()


# =============================================================================================
# TROWSUM
# =============================================================================================
RR = 16                              # tile rows (a DN f16 column needs 16 rows of 2 bytes)
RVR, RVC = 5, 100                    # the small static region


def rs_width(dtype: Any) -> int:
    """Tile columns of the wide kernels: 2 KiB rows (512 f32, 1024 f16)."""
    return 2048 // ref.np_dtype(dtype).itemsize


def rs_repeat(dtype: Any) -> int:
    return 256 // ref.np_dtype(dtype).itemsize


@pypto.kernel
def k_rowsum_static(x, z):
    dt = x.dtype
    a = pto.Tile(pto.Vec, dt, (RR, 128), valid=(RVR, RVC))
    t = pto.Tile(pto.Vec, dt, (RR, 128), valid=(RVR, RVC))
    d = pto.Tile(pto.Vec, dt, (RR, 1), blayout=pto.ColMajor, valid=(RVR, 1))
    pto.TLOAD(a, x[0:RVR, 0:RVC])
    pto.TROWSUM(d, a, t)
    pto.TSTORE(z[0:RVR, 0:1], d)


@pypto.kernel
def k_rowsum_wide_static(x, z):
    """7 rows of 3 repeats plus a tail of 5 (f32: 197 columns, f16: 389)."""
    dt = x.dtype
    w = 2048 // dt.itemsize
    vc = 3 * (256 // dt.itemsize) + 5
    a = pto.Tile(pto.Vec, dt, (RR, w), valid=(7, vc))
    t = pto.Tile(pto.Vec, dt, (RR, w), valid=(7, vc))
    d = pto.Tile(pto.Vec, dt, (RR, 1), blayout=pto.ColMajor, valid=(7, 1))
    pto.TLOAD(a, x[0:7, 0:vc])
    pto.TROWSUM(d, a, t)
    pto.TSTORE(z[0:7, 0:1], d)


@pypto.kernel
def k_rowsum_observe(x, prefill, z, vr, vc):
    """Runtime region (vr, vc) of a (16, 2 KiB) tile; dst prefilled, stored whole."""
    dt = x.dtype
    w = 2048 // dt.itemsize
    a = pto.Tile(pto.Vec, dt, (RR, w), valid=pto.DYNAMIC)
    t = pto.Tile(pto.Vec, dt, (RR, w))
    d = pto.Tile(pto.Vec, dt, (RR, 1), blayout=pto.ColMajor, valid=pto.DYNAMIC)
    a.set_valid(vr, vc)
    pto.TLOAD(a, x[0:vr, 0:vc])
    d.set_valid(RR, 1)
    pto.TLOAD(d, prefill[0:RR, 0:1])
    d.set_valid(vr, 1)
    pto.TROWSUM(d, a, t)
    d.set_valid(RR, 1)
    pto.TSTORE(z[0:RR, 0:1], d)


ROW_KINDS = ("mixed", "normal", "ints", "cancel", "ones_big", "negzero", "specials")


def rs_rows(rng: np.random.Generator, kind: str, dtype: Any, shape: tuple[int, int]) -> np.ndarray:
    """Rows for TROWSUM: rounding-sensitive magnitudes, exact small ints, cancellation near the
    overflow threshold, ones with one big value, -0.0, or a few inf / NaN."""
    dt = ref.np_dtype(dtype)
    f16 = dt == ref.F16
    n = int(np.prod(shape))
    if kind == "mixed":
        return random_values(rng, dt, shape, specials=0.0, raw_bits=0.0)
    if kind == "normal":
        v = rng.standard_normal(n) * 10.0 ** rng.integers(-2, 3 if f16 else 6, n)
    elif kind == "ints":
        v = rng.integers(-3, 4, n).astype(np.float64)
    elif kind == "cancel":
        big = 30000.0 if f16 else 1e37
        v = np.where(rng.random(n) < 0.3, rng.choice([-big, big, 2 * big, -2 * big], n),
                     rng.standard_normal(n))
    elif kind == "ones_big":
        v = np.ones(n)
        v[rng.integers(0, n, max(1, n // 200))] = 2048.0 if f16 else 2.0 ** 24
    elif kind == "negzero":
        v = np.where(rng.random(n) < 0.9, -0.0, 0.0)
    else:
        v = rng.standard_normal(n)
        v[rng.integers(0, n, max(1, n // 300))] = rng.choice([np.inf, -np.inf, np.nan])
    return from_values(list(v), dt).reshape(shape)


def check_rowsum_tile(soc, dtype, vr, vc, x, prefill, got, what=""):
    expected = prefill.copy()
    loose = np.zeros(expected.shape, bool)
    e, lw = ref.rowsum(x[:vr, :vc], dtype=dtype, soc=soc, with_loose=True)
    expected[:vr] = e
    loose[:vr] = lw
    assert_bits_equal(got, expected, loose=loose,
                      what=f"TROWSUM {dtype} on {soc}, valid ({vr}, {vc}) {what}".rstrip())


def run_rowsum_observe(soc, dtype, vr, vc, x, rng, what=""):
    prefill = random_values(rng, dtype, (RR, 1), specials=0.0)
    z = T(sentinel((RR, 1), dtype))
    k_rowsum_observe(T(x), T(prefill), z, vr, vc)
    check_rowsum_tile(soc, dtype, vr, vc, x, prefill, z.numpy(), what)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_rowsum_static_region(soc, dtype):
    rng = rng_for("rowsum-static", dtype, soc)
    x = rs_rows(rng, "normal", dtype, (RR, 128))
    z = T(sentinel((RR, 1), dtype))
    k_rowsum_static(T(x), z)
    check_rowsum_tile(soc, dtype, RVR, RVC, x, sentinel((RR, 1), dtype), z.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_rowsum_three_repeats_and_a_tail(soc, dtype):
    rng = rng_for("rowsum-wide", dtype, soc)
    w = rs_width(dtype)
    x = rs_rows(rng, "normal", dtype, (RR, w))
    x[1] = rs_rows(rng, "ones_big", dtype, (1, w))[0]
    x[2] = rs_rows(rng, "cancel", dtype, (1, w))[0]
    x[3] = -0.0
    z = T(sentinel((RR, 1), dtype))
    k_rowsum_wide_static(T(x), z)
    vc = 3 * rs_repeat(dtype) + 5
    check_rowsum_tile(soc, dtype, 7, vc, x, sentinel((RR, 1), dtype), z.numpy())


def _hand_rows(dtype: str) -> list[tuple[int, np.ndarray, str]]:
    """(valid columns, rows, label): the hand-worked examples of test_reference.py."""
    dt = ref.np_dtype(dtype)
    w = rs_width(dtype)
    out = []
    if dt == ref.F32:
        t = 2.0 ** 24
        rows = np.ones((8, w), dt)
        for i, p in enumerate((0, 64, 130, 192, 199)):
            rows[i, p] = t
        rows[5] = -0.0
        rows[6, :4] = [t, 1, 1, 1]
        out.append((200, rows, "200 ones with 2^24 at 0/64/130/192/199, -0.0, ..."))
        rows = np.zeros((2, w), dt)
        rows[:, :4] = [t, 1, 1, 1]
        rows[:, 64:67] = 1
        out.append((67, rows, "[2^24, 1, 1, 1, 0...] + [1, 1, 1]"))
        out.append((64, np.where(np.arange(w) == 0, t, 1.0).astype(dt)[None, :], "64 ones, 2^24"))
    else:
        rows = np.ones((5, w), dt)
        rows[0, 0] = rows[1, 384] = rows[2, 256] = 2048
        rows[3] = -0.0
        out.append((389, rows, "389 ones with 2048 at 0/384/256, -0.0"))
        rows = np.zeros((3, w), dt)
        rows[0, :132] = [1.0] * 128 + [2048, 1, 1, 1]
        rows[1, 0] = rows[1, 1] = 60000
        rows[1, 128] = -60000
        rows[2, 0] = rows[2, 128] = 60000
        out.append((132, rows[:1], "128 ones + [2048, 1, 1, 1]"))
        out.append((256, rows[1:], "60000 x2 | -60000; 60000 | 60000"))
        out.append((4, np.array([[2048, 1, 1, 1] + [0] * (w - 4)], dt), "[2048, 1, 1, 1]"))
    return out


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_rowsum_hand_rows(soc, dtype):
    """The per-SoC order on the hand-worked rows of the reference's self-checks."""
    rng = rng_for("rowsum-hand", dtype, soc)
    w = rs_width(dtype)
    for vc, rows, label in _hand_rows(dtype):
        x = np.zeros((RR, w), ref.np_dtype(dtype))
        x[:rows.shape[0]] = rows
        run_rowsum_observe(soc, dtype, rows.shape[0], vc, x, rng, what=label)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_rowsum_runtime_regions(soc, dtype):
    """Row counts and widths around the repeat boundaries, one compilation per dtype."""
    rng = rng_for("rowsum-regions", dtype, soc)
    n, w = rs_repeat(dtype), rs_width(dtype)
    for i, (vr, vc) in enumerate([(1, 1), (16, n), (3, n + 1), (16, 2 * n), (9, 2 * n + 1),
                                  (2, 3 * n), (16, w - 1), (16, w)]):
        kind = ROW_KINDS[i % len(ROW_KINDS)]
        x = rs_rows(rng, kind, dtype, (RR, w))
        run_rowsum_observe(soc, dtype, vr, vc, x, rng, what=kind)


def test_rowsum_property(soc):
    @PROPERTY
    @given(dtype=st.sampled_from(["float32", "float16"]), vr=st.integers(1, RR),
           vc=st.integers(1, 1024), kind=st.sampled_from(ROW_KINDS), seed=seeds)
    def check(dtype, vr, vc, kind, seed):
        vc = min(vc, rs_width(dtype))
        rng = np.random.default_rng(seed)
        x = rs_rows(rng, kind, dtype, (RR, rs_width(dtype)))
        run_rowsum_observe(soc, dtype, vr, vc, x, rng, what=kind)
    check()


# =============================================================================================
# TCVT
# =============================================================================================
CR, CC = 8, 64                       # tile capacity (64 columns: 32-byte rows for 1..8 bytes)
CVR, CVC = 6, 50                     # static valid region


def legal_pairs(soc: str) -> list[tuple[str, str]]:
    """(src, dst) pairs of pypto's ISA table on ``soc`` that have a numpy host type (not hif8:
    conformance/test_hif8.py covers its pairs)."""
    return [(s, d) for d, s in pypto.isa.TABLE["TCVT"].dtypes_on(soc)
            if s in ref._BY_NAME and d in ref._BY_NAME]


PAIR_CASES = [(soc, s, d, i) for soc in SOCS for i, (s, d) in enumerate(legal_pairs(soc))]


def rotating_modes(i: int) -> tuple[tuple[str, str | None], ...]:
    """Every rounding mode once, with saturation None / ON / OFF rotating with ``i``."""
    return tuple((m, SATS[(i + j) % 3]) for j, m in enumerate(ROUND_MODES))


ALL_MODES = tuple((m, s) for m in ROUND_MODES for s in SATS)


def cvt_kwargs(rmode: str, sat: str | None) -> dict[str, str]:
    return {"rmode": rmode} if sat is None else {"rmode": rmode, "satMode": sat}


@functools.lru_cache(maxsize=None)
def cvt_modes_kernel(modes: tuple[tuple[str, str | None], ...]):
    """One TCVT per (rmode, satMode) of ``modes`` on a static (CVT_R, CVT_C) region of a
    (CR, CC) tile; dst i is first loaded from ``prefill`` and stored at rows [i*CVR, (i+1)*CVR)."""
    def k_cvt_modes(x, prefill, z):
        a = pto.Tile(pto.Vec, x.dtype, (CR, CC), valid=(CVR, CVC))
        pto.TLOAD(a, x[0:CVR, 0:CVC])
        for i, (m, s) in enumerate(modes):
            d = pto.Tile(pto.Vec, z.dtype, (CR, CC), valid=(CVR, CVC))
            pto.TLOAD(d, prefill[0:CVR, 0:CVC])
            pto.TCVT(d, a, **cvt_kwargs(m, s))
            pto.TSTORE(z[i * CVR:(i + 1) * CVR, 0:CVC], d)
    return pypto.kernel(k_cvt_modes)


@functools.lru_cache(maxsize=None)
def cvt_observe_kernel(rmode: str, sat: str | None):
    """TCVT on a runtime (vr, vc) region; dst prefilled and stored whole."""
    def k_cvt_observe(x, prefill, z, vr, vc):
        a = pto.Tile(pto.Vec, x.dtype, (CR, CC), valid=pto.DYNAMIC)
        d = pto.Tile(pto.Vec, z.dtype, (CR, CC), valid=pto.DYNAMIC)
        a.set_valid(vr, vc)
        pto.TLOAD(a, x[0:vr, 0:vc])
        d.set_valid(CR, CC)
        pto.TLOAD(d, prefill[0:CR, 0:CC])
        d.set_valid(vr, vc)
        pto.TCVT(d, a, **cvt_kwargs(rmode, sat))
        d.set_valid(CR, CC)
        pto.TSTORE(z[0:CR, 0:CC], d)
    return pypto.kernel(k_cvt_observe)


def cvt_specials(src: Any, dst: Any) -> np.ndarray:
    """Values of ``src`` aimed at ``dst``'s rounding ties, ranges and specials."""
    s, d = ref.np_dtype(src), ref.np_dtype(dst)
    vals: list[float] = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5, 1.0, -1.0, 7.0,
                         0.3, -0.7, 0.49999997, -0.50000006, 1e-3]
    if d.kind in "iu":
        info = np.iinfo(d)
        lo, hi = int(info.min), int(info.max)
        vals += [hi, hi + 0.5, hi + 1, hi + 1.5, lo, lo - 0.5, lo - 1, 2 * hi + 7, -2 * hi - 5,
                 hi * 256.0 + 3, 300.0, -300.0, 40000.7, 70000.5, -70000.5, 3e9, 1e20, -1e20]
    else:
        fmax = float(ref._FMT[d].max)
        p = ref._FMT[d].p
        ulp_max = 2.0 ** (np.floor(np.log2(fmax)) - p + 1)
        vals += [fmax, -fmax, fmax + ulp_max / 2, -(fmax + ulp_max / 2), fmax + ulp_max / 4,
                 2 * fmax, 1 + 2.0 ** -p, 1 + 3 * 2.0 ** -p, 1 + 2.0 ** -p + 2.0 ** -40,
                 2049.0, 2051.0, -2049.0, 2.0 ** 24 + 1, -(2.0 ** 24 + 3), 65519.0, 65520.0,
                 7e4, 1e10, 2.0 ** (ref._FMT[d].emin - p), 3 * 2.0 ** (ref._FMT[d].emin - p - 1),
                 -(2.0 ** (ref._FMT[d].emin - p - 2)), 2.0 ** 63 - 1, 8388607.5, 1e30]
    if ref.is_float(s):
        vals += [np.inf, -np.inf]
        smax = float(ref._FMT[s].max)
        vals += [smax, -smax, 2.0 ** (ref._FMT[s].emin - ref._FMT[s].p + 1)]
        x = from_values(vals, s)
        nan_bits = {ref.F32: [0x7FC00000, 0xFFC12345, 0x7F800001, 0xFFA00000],
                    ref.F16: [0x7E00, 0xFE10, 0x7C01, 0xFD00],
                    ref.BF16: [0x7FC1, 0xFF81, 0x7F81],
                    ref.E4M3: [0x7F, 0xFF], ref.E5M2: [0x7D, 0xFE, 0x7C, 0xFC]}[s]
        return np.concatenate([x, from_bits(nan_bits, s)])
    info = np.iinfo(s)
    ints = {int(v) for v in vals if isinstance(v, int) or (math.isfinite(v) and float(v).is_integer())}
    ints |= {int(info.min), int(info.max), int(info.min) + 1, int(info.max) - 1, -1, 0, 1,
             2049, 2051, 65519, 65520, 70000, 2 ** 24 + 1, 2 ** 24 + 3, 2 ** 31 - 1, 2 ** 53 + 1,
             2 ** 63 - 1, -(2 ** 24) - 1}
    ints = sorted(v for v in ints if info.min <= v <= info.max)
    return np.array(ints, dtype=object).astype(s)


def cvt_inputs(rng: np.random.Generator, src: Any, dst: Any, shape: tuple[int, int]) -> np.ndarray:
    s = ref.np_dtype(src)
    if s in (ref.E4M3, ref.E5M2):
        base = rng.integers(0, 256, shape, dtype=np.uint64).astype(np.uint8).view(s)
    else:
        base = random_values(rng, s, shape)
    return place(base, cvt_specials(src, dst), rng)


def check_cvt(soc, src, dst, rmode, sat, x, prefill, got, what=""):
    expected, _ = ref.cast(x, src, dst, soc, rmode, sat, prev=prefill)
    assert_bits_equal(got, expected, inputs={"x": x, "prefill": prefill},
                      what=f"TCVT {src}->{dst} on {soc} rmode={rmode} satMode={sat} {what}".rstrip())


def run_cvt_modes(soc: str, src: str, dst: str, modes, key) -> None:
    rng = rng_for("cvt", soc, src, dst, key)
    x = cvt_inputs(rng, src, dst, (CVR, CVC))
    prefill = sentinel((CVR, CVC), dst)
    z = T(sentinel((len(modes) * CVR, CVC), dst))
    cvt_modes_kernel(modes)(T(x), T(prefill), z)
    got = z.numpy()
    for i, (m, s) in enumerate(modes):
        check_cvt(soc, src, dst, m, s, x, prefill, got[i * CVR:(i + 1) * CVR])


def _pair_id(case) -> str:
    soc_, s, d, _ = case
    return f"{soc_}-{s}>{d}"


# Quick tier: every pair in eager mode, every fourth pair in compiled mode too (the two modes run
# the same numba code; a compiled pair costs a whole kernel compile, about 0.4 s more than the
# eager pair's trampolines). The rest is in the full tier.


KEY_PAIRS = [("f32", "f16"), ("f32", "i32"), ("f16", "i8"), ("f32", "bf16"), ("i32", "i16")]


def _init_soc(pto_init, target, soc_: str) -> None:
    try:
        pto_init(soc=soc_)
    except pypto.PtoError as e:
        if target.backend != "sim":
            pytest.skip(f"{soc_} profile not available on this {target.backend} device: {e}")
        raise


def run_cvt_observe(soc, src, dst, rmode, sat, vr, vc, rng):
    x = cvt_inputs(rng, src, dst, (CR, CC))
    if ref.is_float(dst):
        prefill = sentinel((CR, CC), dst)
    else:
        prefill = random_values(rng, dst, (CR, CC))
    z = T(sentinel((CR, CC), dst))
    cvt_observe_kernel(rmode, sat)(T(x), T(prefill), z, vr, vc)
    expected = prefill.copy()
    expected[:vr, :vc] = ref.cast(x[:vr, :vc], src, dst, soc, rmode, sat, prev=prefill[:vr, :vc])[0]
    assert_bits_equal(z.numpy(), expected, inputs={"x": x, "prefill": prefill},
                      what=f"TCVT {src}->{dst} on {soc} rmode={rmode} satMode={sat}, "
                           f"valid ({vr}, {vc}): whole tile")


# (src, dst, rmode, satMode) of the runtime-region cases; each is a compilation per SoC
OBSERVE_CASES = [("f32", "f16", "CAST_ODD", "OFF"), ("f16", "i8", "CAST_ROUND", None),
                 ("f32", "i32", "CAST_FLOOR", "OFF"), ("i32", "i16", "CAST_NONE", "ON"),
                 ("f32", "bf16", "CAST_ODD", None), ("f32", "e4m3", "CAST_TRUNC", "OFF")]


def observe_cases(soc_: str):
    return [c for c in OBSERVE_CASES if ref.is_cvt_legal(c[0], c[1], soc_)]


# =============================================================================================
# kernel errors
# =============================================================================================
@pypto.kernel
def k_rowsum_rows_mismatch(x, z):
    a = pto.Tile(pto.Vec, pto.float32, (RR, 128), valid=(5, 100))
    t = pto.Tile(pto.Vec, pto.float32, (RR, 128), valid=(5, 100))
    d = pto.Tile(pto.Vec, pto.float32, (RR, 1), blayout=pto.ColMajor, valid=(4, 1))
    pto.TLOAD(a, x[0:5, 0:100])
    pto.TROWSUM(d, a, t)  # static valid rows 4 != 5
    pto.TSTORE(z[0:4, 0:1], d)


@pypto.kernel
def k_rowsum_rows_runtime(x, z, vr_src, vr_dst):
    a = pto.Tile(pto.Vec, pto.float32, (RR, 128), valid=pto.DYNAMIC)
    t = pto.Tile(pto.Vec, pto.float32, (RR, 128))
    d = pto.Tile(pto.Vec, pto.float32, (RR, 1), blayout=pto.ColMajor, valid=pto.DYNAMIC)
    a.set_valid(vr_src, 100)
    d.set_valid(vr_dst, 1)
    pto.TLOAD(a, x[0:vr_src, 0:100])
    pto.TROWSUM(d, a, t)  # runtime valid rows
    pto.TSTORE(z[0:vr_dst, 0:1], d)


@pypto.kernel
def k_exp_int16(x, z):
    a = pto.Tile(pto.Vec, pto.int16, (16, 64))
    pto.TLOAD(a, x[0:16, 0:64])
    pto.TEXP(a, a)  # int16 has no TEXP
    pto.TSTORE(z[0:16, 0:64], a)


@pypto.kernel
def k_cvt_f32_i8(x, z):
    a = pto.Tile(pto.Vec, pto.float32, (16, 64))
    b = pto.Tile(pto.Vec, pto.int8, (16, 64))
    pto.TLOAD(a, x[0:16, 0:64])
    pto.TCVT(b, a, rmode="CAST_RINT")  # f32 -> i8 exists on no SoC
    pto.TSTORE(z[0:16, 0:64], b)


def test_rowsum_static_row_mismatch(soc):
    x = T(random_values(rng_for("rs-mismatch"), "float32", (RR, 128)))
    z = T(sentinel((RR, 1), "float32"))
    with pytest.raises(errors.ValidRegionError) as ei:
        k_rowsum_rows_mismatch(x, z)
    assert isinstance(ei.value, pypto.PtoError)
    assert_site(ei.value, "pto.TROWSUM(d, a, t)  # static valid rows 4 != 5")
    assert_bits_equal(z.numpy(), sentinel((RR, 1), "float32"), what="GM after the error")


@pytest.mark.parametrize("vr_src,vr_dst", [(5, 4), (3, 16)])
def test_rowsum_runtime_row_mismatch(soc, vr_src, vr_dst):
    x = random_values(rng_for("rs-rt-mismatch"), "float32", (RR, 128))
    z = T(sentinel((RR, 1), "float32"))
    with pytest.raises(errors.ValidRegionError) as ei:
        k_rowsum_rows_runtime(T(x), z, vr_src, vr_dst)
    assert isinstance(ei.value, pypto.PtoError)
    assert "TROWSUM" in str(ei.value)
    assert "pto.TROWSUM(d, a, t)  # runtime valid rows" in str(ei.value)
    assert_bits_equal(z.numpy(), sentinel((RR, 1), "float32"), what="GM after the error")
    # and the same kernel with matching rows runs
    z = T(sentinel((RR, 1), "float32"))
    k_rowsum_rows_runtime(T(x), z, 5, 5)
    check_rowsum_tile(soc, "float32", 5, 100, x, sentinel((RR, 1), "float32"), z.numpy())


def test_exp_int16_is_a_dtype_error(soc):
    z = T(sentinel((16, 64), "int16"))
    with pytest.raises(errors.DTypeError) as ei:
        k_exp_int16(T(random_values(rng_for("exp-i16"), "int16", (16, 64))), z)
    assert isinstance(ei.value, pypto.PtoError)
    assert_site(ei.value, "pto.TEXP(a, a)  # int16 has no TEXP")
    assert_bits_equal(z.numpy(), sentinel((16, 64), "int16"), what="GM after the error")


def test_cvt_f32_to_i8_is_a_dtype_error(soc):
    z = T(sentinel((16, 64), "int8"))
    with pytest.raises(errors.DTypeError) as ei:
        k_cvt_f32_i8(T(random_values(rng_for("cvt-i8"), "float32", (16, 64))), z)
    assert isinstance(ei.value, pypto.PtoError)
    assert_site(ei.value, 'pto.TCVT(b, a, rmode="CAST_RINT")  # f32 -> i8 exists on no SoC')
    assert_bits_equal(z.numpy(), sentinel((16, 64), "int8"), what="GM after the error")


# =============================================================================================
# seed API
# =============================================================================================
def as_operand(x: np.ndarray, kind: str):
    return pypto.Tensor(x, dtype=pdt(x.dtype)) if kind == "tensor" else x


def host(x: Any) -> np.ndarray:
    return x.numpy() if isinstance(x, pypto.Tensor) else x


def run_seed(insn, src, out) -> None:
    insn.set_operand(0, src)
    insn.set_operand(1, out)
    insn.execute()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(5,), (37, 129)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_seed_exp(soc, dtype, shape, kind):
    rng = rng_for("seed-exp", dtype, shape, kind, soc)
    x = place(random_values(rng, dtype, shape), exp_specials(dtype), rng)
    out = as_operand(sentinel(shape, dtype), kind)
    run_seed(pypto.load_insn("exp"), as_operand(x, kind), out)
    assert_bits_equal(host(out), ref.exp(x), inputs={"x": x}, what=f"exp {dtype} {shape} on {soc}")


def _seed_rowsum_shapes(dtype: str) -> list[tuple[int, int]]:
    n = rs_repeat(dtype)
    widest = 2 * 32 * 1024 // (16 * ref.np_dtype(dtype).itemsize)     # 1024 f32, 2048 f16
    return [(1, 1), (5, 3 * n + 5), (37, widest)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dst_rank", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_seed_rowsum(soc, dtype, dst_rank, kind):
    for j, shape in enumerate(_seed_rowsum_shapes(dtype)):
        rng = rng_for("seed-rowsum", dtype, shape, kind, soc)
        x = rs_rows(rng, ROW_KINDS[(j + dst_rank) % len(ROW_KINDS)], dtype, shape)
        if shape[0] > 3:
            x[1] = rs_rows(rng, "ones_big", dtype, (1, shape[1]))[0]
            x[2] = -0.0
        dshape = (shape[0],) if dst_rank == 1 else (shape[0], 1)
        out = as_operand(sentinel(dshape, dtype), kind)
        run_seed(pypto.load_insn("rowsum"), as_operand(x, kind), out)
        e, loose = ref.rowsum(x, soc=soc, with_loose=True)
        assert_bits_equal(host(out), e.reshape(dshape), loose=loose.reshape(dshape),
                          what=f"rowsum {dtype} {shape} on {soc}")


# (src, dst, load_insn parameters): includes the defaults, explicit ON/OFF and CAST_ODD
SEED_CAST_CASES = [
    ("f32", "i16", {"rmode": "CAST_TRUNC", "satMode": "ON"}),
    ("f32", "f16", {}),
    ("f32", "f16", {"rmode": "CAST_ODD", "satMode": "OFF"}),
    ("f16", "i8", {"rmode": "CAST_ROUND"}),
    ("f32", "i32", {"rmode": "CAST_FLOOR", "satMode": "OFF"}),
    ("i32", "f16", {"rmode": "CAST_CEIL"}),
    ("f32", "e5m2", {"satMode": "OFF"}),
    ("i16", "u8", {"rmode": "CAST_RINT", "satMode": "OFF"}),
]


@keep_if(lambda p: ref.is_cvt_legal(p["case"][0], p["case"][1], p["soc"]))   # pairs of that SoC
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", SEED_CAST_CASES,
                         ids=[f"{s}>{d}-" + "-".join(f"{v}" for v in p.values()) for s, d, p in
                              SEED_CAST_CASES])
def test_seed_cast(soc, case, kind):
    s, d, params = case
    rmode, sat = params.get("rmode", "CAST_NONE"), params.get("satMode")
    for shape in [(7,), (37, 129), (3, 5000)]:
        rng = rng_for("seed-cast", s, d, shape, kind, soc)
        x = cvt_inputs(rng, s, d, shape)
        out = as_operand(sentinel(shape, d), kind)
        run_seed(pypto.load_insn("cast", **params), as_operand(x, kind), out)
        expected, untouched = ref.cast(x, s, d, soc, rmode, sat)
        assert not untouched.any()
        assert_bits_equal(host(out), expected, inputs={"x": x},
                          what=f"cast {s}->{d} {params} {shape} on {soc}")


@pytest.mark.slow
def test_seed_cast_every_pair_default(soc):
    for s, d in legal_pairs(soc):
        for kind in KINDS:
            rng = rng_for("seed-cast-all", s, d, kind, soc)
            x = cvt_inputs(rng, s, d, (41, 9))
            out = as_operand(sentinel(x.shape, d), kind)
            run_seed(pypto.load_insn("cast"), as_operand(x, kind), out)
            assert_bits_equal(host(out), ref.cast(x, s, d, soc)[0], inputs={"x": x},
                              what=f"cast {s}->{d} on {soc}")


def _assert_rule_fix(err: Exception) -> None:
    assert isinstance(err, pypto.PtoError), type(err)
    msg = str(err)
    assert "Rule:" in msg and "Fix:" in msg, msg


@keep_if(lambda p: not ref.is_cvt_legal(p["pair"][0], p["pair"][1], p["soc"]))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("pair", [("f32", "i8"), ("i16", "i8"), ("f32", "u8"), ("i32", "f16"),
                                  ("bf16", "f16"), ("f32", "e4m3")], ids="{0[0]}>{0[1]}".format)
def test_seed_cast_illegal_pair(soc, pair, kind):
    s, d = pair
    x = cvt_inputs(rng_for("illegal", pair), s, d, (4, 8))
    out_host = sentinel((4, 8), d)
    out = as_operand(out_host.copy(), kind)
    with pytest.raises(errors.DTypeError) as ei:
        run_seed(pypto.load_insn("cast", rmode="CAST_RINT"), as_operand(x, kind), out)
    _assert_rule_fix(ei.value)
    assert_bits_equal(host(out), out_host, what="output after the error")


@pytest.mark.parametrize("how", ["load_insn", "set_param"])
@pytest.mark.parametrize("params", [{"roundMode": "CAST_RINT"}, {"sat": "ON"},
                                    {"rmode": "CAST_BANKERS"}, {"rmode": "rint"},
                                    {"satMode": "MAYBE"}, {"satMode": True}],
                         ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()))
def test_seed_cast_bad_parameters(soc, params, how):
    """An unknown parameter name or a value outside the enum is a PtoError with Rule and Fix;
    the output stays untouched and the instruction still works with good parameters."""
    x = cvt_inputs(rng_for("bad-param"), "f32", "f16", (4, 8))
    out = sentinel((4, 8), "f16")
    with pytest.raises(pypto.PtoError) as ei:
        if how == "load_insn":
            insn = pypto.load_insn("cast", **params)
            run_seed(insn, x, out)
        else:
            insn = pypto.load_insn("cast")
            insn.set_operand(0, x)
            insn.set_operand(1, out)
            for k, v in params.items():
                insn.set_param(k, v)
            insn.execute()
    _assert_rule_fix(ei.value)
    assert_bits_equal(out, sentinel((4, 8), "f16"), what="output after the error")
    if how == "set_param":
        insn.execute()                       # the failed set_param left the defaults in place
        assert_bits_equal(out, ref.cast(x, "f32", "f16", soc)[0], inputs={"x": x})


@pytest.mark.parametrize("kind", KINDS)
def test_seed_cast_odd_on_other_pair(soc, kind):
    """CAST_ODD exists for f32 -> f16 only: a2a3 falls back to CAST_NONE; on a5 TCVT would do
    nothing, which the seed API refuses (the output would keep what it held)."""
    x = cvt_inputs(rng_for("odd", kind), "f32", "i32", (4, 8))
    out_host = sentinel((4, 8), "i32")
    out = as_operand(out_host.copy(), kind)
    insn = pypto.load_insn("cast", rmode="CAST_ODD")
    if soc == "a5":
        with pytest.raises(pypto.PtoError) as ei:
            run_seed(insn, as_operand(x, kind), out)
        _assert_rule_fix(ei.value)
        assert_bits_equal(host(out), out_host, what="output after the error")
    else:
        run_seed(insn, as_operand(x, kind), out)
        assert_bits_equal(host(out), ref.cast(x, "f32", "i32", soc, "CAST_ODD")[0],
                          inputs={"x": x})


@pytest.mark.parametrize("name,dtype", [("exp", "int16"), ("exp", "int32"),
                                        ("rowsum", "int32"), ("rowsum", "bfloat16")])
def test_seed_illegal_dtype(soc, name, dtype):
    shape = (4, 16)
    x = random_values(rng_for("seed-illegal", name, dtype), dtype, shape)
    out_host = sentinel(shape if name == "exp" else (4,), dtype)
    out = out_host.copy()
    with pytest.raises(errors.DTypeError) as ei:
        run_seed(pypto.load_insn(name), x, out)
    _assert_rule_fix(ei.value)
    assert_bits_equal(out, out_host, what="output after the error")
