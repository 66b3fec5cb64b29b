"""TCVT element conversions (pypto.backends.sim.lib.convert) against independent oracles.

The oracles are written here from the stated semantics only:

* float destinations: the two representable neighbours of the exact source value (a table of every
  finite value for the 8/16-bit formats, numpy ``nextafter`` for f32), chosen per rounding mode with
  Fractions; numpy / ml_dtypes casts where they are exact references (nearest-even narrowing,
  widenings);
* integer destinations: numpy floor/ceil/trunc/rint on float64 (exact for these sources) or Python
  ints / Fractions, then clamping or ``%`` for the low bits.

Everything is compared on raw bits.  numba compile time dominates the run time, so all checks go
through two njit wrappers (raw int64 bits in, int64 bits out; and a typed-storage loop).
"""
from __future__ import annotations

import math
from bisect import bisect_right
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from pypto.backends.sim.lib import convert as C
from pypto.backends.sim.lib.convert import cvt_bits, resolve

NONE, RINT, ROUND, FLOOR, CEIL, TRUNC, ODD = range(7)
MODES = (RINT, ROUND, FLOOR, CEIL, TRUNC, ODD)
DIRECTED = (RINT, ROUND, FLOOR, CEIL, TRUNC)
CODE = {"f32": C.F32, "f16": C.F16, "bf16": C.BF16, "e4m3": C.E4M3, "e5m2": C.E5M2, "i8": C.I8,
        "u8": C.U8, "i16": C.I16, "u16": C.U16, "i32": C.I32, "u32": C.U32, "i64": C.I64}

# float formats: numpy type, storage type, total bits, mantissa bits
FLOATS = {"f32": (np.float32, np.uint32, 32, 23), "f16": (np.float16, np.uint16, 16, 10),
          "bf16": (ml_dtypes.bfloat16, np.uint16, 16, 7),
          "e4m3": (ml_dtypes.float8_e4m3fn, np.uint8, 8, 3),
          "e5m2": (ml_dtypes.float8_e5m2, np.uint8, 8, 2)}
INTS = {"i8": (8, True), "u8": (8, False), "i16": (16, True), "u16": (16, False),
        "i32": (32, True), "u32": (32, False), "i64": (64, True)}


# ---------------------------------------------------------------------------
# njit wrappers (compiled once per argument type)
# ---------------------------------------------------------------------------

@njit
def _run(raw, s, d, m, sat):
    out = np.empty(raw.size, np.int64)
    for i in range(raw.size):
        out[i] = cvt_bits(raw[i], s, d, m, sat)
    return out


@njit
def _run_typed(src, dst, s, d, m, sat):
    for i in range(src.size):
        dst[i] = cvt_bits(src[i], s, d, m, sat)


def cvt(src, dst, raws, mode, sat):
    """Raw source bits (any integer sequence) -> the destination bits as an int64 array."""
    return _run(np.asarray(raws).astype(np.int64), CODE[src], CODE[dst], mode, sat)


def cvt1(src, dst, raw, mode, sat):
    return int(cvt(src, dst, [raw], mode, sat)[0])


def bits_of(t, value):
    npt, store, _, _ = FLOATS[t]
    return int(np.array([value], dtype=npt).view(store)[0])


def value_of(t, bits):
    """Bits (scalar or array) -> the float value(s) of format t."""
    npt, store, _, _ = FLOATS[t]
    return np.asarray(bits, dtype=np.int64).astype(store).view(npt)


# ---------------------------------------------------------------------------
# Oracles
# ---------------------------------------------------------------------------

def decode(t, raw):
    """('nan', neg, payload, mant_bits) | ('inf', neg) | ('num', neg, |x| as Fraction) | ('int', k)."""
    if t in INTS:
        bits, signed = INTS[t]
        k = raw % (1 << bits)
        if signed and k >= 1 << (bits - 1):
            k -= 1 << bits
        return ("int", k)
    npt, store, nbits, mbits = FLOATS[t]
    raw %= 1 << nbits
    neg = raw >> (nbits - 1)
    v = float(value_of(t, raw))
    if math.isnan(v):
        payload = 0 if t == "e4m3" else raw & ((1 << mbits) - 1)
        return ("nan", neg, payload, mbits)
    if math.isinf(v):
        return ("inf", neg)
    return ("num", neg, abs(Fraction(v)))


class Table:
    """Every finite non-negative value of an 8/16-bit float format, ascending, with its bits."""

    def __init__(self, t):
        npt, store, nbits, _ = FLOATS[t]
        pats = np.arange(1 << (nbits - 1), dtype=np.int64)
        with np.errstate(invalid="ignore"):
            vals = pats.astype(store).view(npt).astype(np.float64)
        ok = np.isfinite(vals)
        self.pats = [int(p) for p in pats[ok]]
        self.vals = [float(v) for v in vals[ok]]
        self.virtual = Fraction(self.vals[-1]) * 2 - Fraction(self.vals[-2])  # max + ulp(max)

    def neighbours(self, a):
        i = bisect_right(self.vals, a) - 1
        lo, lp = Fraction(self.vals[i]), self.pats[i]
        if i + 1 < len(self.vals):
            return lo, lp, Fraction(self.vals[i + 1]), self.pats[i + 1], False
        return lo, lp, self.virtual, lp + 1, True


class F32Table:
    def neighbours(self, a):
        c = np.float32(float(a))
        up, down = np.float32(np.inf), np.float32(0)
        while Fraction(float(c)) > a:
            c = np.nextafter(c, down)
        while Fraction(float(np.nextafter(c, up))) <= a:
            c = np.nextafter(c, up)
        h = np.nextafter(c, up)
        assert np.isfinite(h)
        return (Fraction(float(c)), bits_of("f32", c), Fraction(float(h)), bits_of("f32", h), False)


TABLES = {t: Table(t) for t in ("f16", "bf16", "e4m3", "e5m2")} | {"f32": F32Table()}


def fmax_bits(t):
    return TABLES[t].pats[-1] if t != "f32" else 0x7F7FFFFF


def finf_bits(t):
    return {"f32": 0x7F800000, "f16": 0x7C00, "bf16": 0x7F80, "e4m3": 0x7F, "e5m2": 0x7C}[t]


def sign_bit(t):
    return 1 << (FLOATS[t][2] - 1)


def away(mode, neg):
    """Does an overflowing result go to infinity (IEEE) under this mode and sign?"""
    return mode in (NONE, RINT, ROUND) or (mode == CEIL and not neg) or (mode == FLOOR and neg)


def round_float(t, neg, a, mode, sat):
    """Bits of (-1)**neg * a (a >= 0 a Fraction) rounded into float format t."""
    lo, lp, hi, hp, hi_virtual = TABLES[t].neighbours(a)
    if a == lo:
        pick_hi = False
    elif mode == TRUNC:
        pick_hi = False
    elif mode == FLOOR:
        pick_hi = bool(neg)
    elif mode == CEIL:
        pick_hi = not neg
    elif mode == ODD:
        pick_hi = lp % 2 == 0
    elif mode == ROUND:
        pick_hi = a - lo >= hi - a
    else:
        pick_hi = a - lo > hi - a or (a - lo == hi - a and hp % 2 == 0)
    s = sign_bit(t) if neg else 0
    if pick_hi and hi_virtual:
        if sat and t != "f32":
            return s | fmax_bits(t)
        return s | (finf_bits(t) if away(mode, neg) else fmax_bits(t))
    return s | (hp if pick_hi else lp)


def round_int(x, mode):
    """Fraction x rounded to a Python int."""
    t = math.trunc(x)
    if mode == TRUNC or t == x:
        return t
    if mode == FLOOR:
        return math.floor(x)
    if mode == CEIL:
        return math.ceil(x)
    if mode == ROUND:
        r = math.floor(abs(x) + Fraction(1, 2))
        return r if x > 0 else -r
    if mode == ODD:
        return t if t % 2 else t + (1 if x > 0 else -1)
    return round(x)  # Fraction.__round__: nearest, ties to even


def to_int(t, k, sat):
    bits, signed = INTS[t]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if sat:
        return min(max(k, lo), hi)
    k %= 1 << bits
    return k - (1 << bits) if signed and k > hi else k


def oracle(src, dst, raw, mode, sat):
    d = decode(src, raw)
    if dst in INTS:
        bits, signed = INTS[dst]
        if d[0] == "nan":
            return 0
        if d[0] == "inf":        # clamping: the limit; wrapping: 0 (the NPU's TCVT test data)
            return to_int(dst, (-1 if d[1] else 1) << 70, True) if sat else 0
        if d[0] == "int":
            return to_int(dst, d[1], sat)
        x = -d[2] if d[1] else d[2]
        return to_int(dst, round_int(x, mode), sat)
    clamp = sat and dst != "f32"
    _, _, nb, md = FLOATS[dst]
    if d[0] == "nan":
        if clamp:
            return 0
        s = d[1] << (nb - 1)
        if dst == "e4m3":
            return s | 0x7F
        _, neg, payload, ms = d
        payload = payload << (md - ms) if md >= ms else payload >> (ms - md)
        return s | finf_bits(dst) | (1 << (md - 1)) | payload
    if d[0] == "inf":
        s = d[1] << (nb - 1)
        return s | (fmax_bits(dst) if clamp else finf_bits(dst))
    if d[0] == "int":
        neg, a = d[1] < 0, Fraction(abs(d[1]))
    else:
        neg, a = d[1], d[2]
    if src == "f32" and dst == "f32":          # round to an integral value, sign of zero kept
        k = round_int(-a if neg else a, mode)
        v = np.float32(float(k))
        if k == 0 and neg:
            v = np.float32(-0.0)
        return bits_of("f32", v)
    return round_float(dst, neg, a, mode, sat)


def check(src, dst, raws, modes=MODES, sats=(0, 1)):
    raws = [int(r) for r in raws]
    for mode in modes:
        for sat in sats:
            got = cvt(src, dst, raws, mode, sat)
            for r, g in zip(raws, got):
                want = oracle(src, dst, r, mode, sat)
                assert int(g) == want, (src, dst, hex(r), mode, sat, hex(int(g)), hex(want))


rng = np.random.default_rng(20260307)


def f32_samples(n, lo_exp=-30, hi_exp=20):
    """Random f32 bit patterns: uniform bits, values spread over [2**lo_exp, 2**hi_exp), ties."""
    u = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    mag = np.exp2(rng.uniform(lo_exp, hi_exp, n)).astype(np.float32)
    mag = np.where(rng.random(n) < 0.5, -mag, mag).astype(np.float32)
    base = np.concatenate([u.astype(np.uint32), mag.view(np.uint32)]).astype(np.int64)
    # values close to ties and exact representable boundaries of the narrower formats
    low = (base & ~np.int64(0xFFFF)) | rng.choice([0, 0x1000, 0x8000, 0x7FFF, 0x8001, 0xFFFF,
                                                   0x2000, 0x6000], base.size)
    return np.concatenate([base, low])


SPECIAL_F32 = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
               0xFFA5A5A5, 0x00000001, 0x80000001, 0x7F7FFFFF, 0xFF7FFFFF, 0x477FE000, 0x477FF000,
               0x477FEFFF, 0x47800000, 0x33800000, 0x33000000, 0x33000001, 0xB3000000, 0x387FC000,
               0x38800000, 0x3F800001, 0x3F808000, 0x3F818000, 0x43E00000, 0x43E80000, 0x43F00000,
               0x47600000, 0x47700000, 0x47700001]


# ---------------------------------------------------------------------------
# Hand examples
# ---------------------------------------------------------------------------

def run_pto(soc, src, dst, raw, rmode, sat=None):
    m, s, noop = resolve(soc, src, dst, rmode, sat)
    assert not noop
    return cvt1(src, dst, raw, m, s)


@pytest.mark.parametrize("soc", ["a2a3", "a5"])
def test_f16_300_to_i8(soc):
    h = bits_of("f16", 300.0)
    assert run_pto(soc, "f16", "i8", h, "CAST_NONE") == 44
    assert run_pto(soc, "f16", "i8", h, "CAST_RINT") == 44
    assert run_pto(soc, "f16", "i8", h, "CAST_RINT", "OFF") == 44
    assert run_pto(soc, "f16", "i8", h, "CAST_RINT", "ON") == 127
    assert run_pto(soc, "f16", "i8", bits_of("f16", -300.0), "CAST_RINT", "ON") == -128
    assert run_pto(soc, "f16", "i8", bits_of("f16", -300.0), "CAST_RINT") == -44


def test_f32_to_f16_each_mode():
    x = bits_of("f32", 0.5 + 2.0 ** -12)
    want = {"CAST_RINT": 0.5, "CAST_FLOOR": 0.5, "CAST_CEIL": 0.5 + 2.0 ** -11,
            "CAST_ROUND": 0.5 + 2.0 ** -11, "CAST_TRUNC": 0.5, "CAST_ODD": 0.5 + 2.0 ** -11}
    for soc in ("a2a3", "a5"):
        for name, w in want.items():
            assert float(value_of("f16", run_pto(soc, "f32", "f16", x, name))) == w, (soc, name)
    # the same for a negative value
    nx = bits_of("f32", -(0.5 + 2.0 ** -12))
    assert float(value_of("f16", run_pto("a5", "f32", "f16", nx, "CAST_FLOOR"))) == -(0.5 + 2.0 ** -11)
    assert float(value_of("f16", run_pto("a5", "f32", "f16", nx, "CAST_CEIL"))) == -0.5


def test_minus_2_5_to_i32():
    x = bits_of("f32", -2.5)
    want = {"CAST_RINT": -2, "CAST_ROUND": -3, "CAST_FLOOR": -3, "CAST_CEIL": -2, "CAST_TRUNC": -2}
    for soc in ("a2a3", "a5"):
        for name, w in want.items():
            assert run_pto(soc, "f32", "i32", x, name) == w, (soc, name)
    assert run_pto("a2a3", "f32", "i32", x, "CAST_NONE") == -2       # truncates
    assert run_pto("a5", "f32", "i32", x, "CAST_NONE") == -2         # nearest even
    assert run_pto("a2a3", "f32", "i32", bits_of("f32", -3.5), "CAST_NONE") == -3
    assert run_pto("a5", "f32", "i32", bits_of("f32", -3.5), "CAST_NONE") == -4
    assert run_pto("a2a3", "f32", "i32", x, "CAST_ODD") == -2        # falls back to CAST_NONE
    assert resolve("a5", "f32", "i32", "CAST_ODD", None)[2] is True   # a5: no-op
    assert cvt1("f32", "i32", x, ODD, 1) == -3                       # the numba mode itself


def test_f32_1e6_to_f16():
    x = bits_of("f32", 1e6)
    for soc in ("a2a3", "a5"):
        assert run_pto(soc, "f32", "f16", x, "CAST_NONE") == 0x7BFF       # 65504
        assert run_pto(soc, "f32", "f16", x, "CAST_RINT", "ON") == 0x7BFF
    assert run_pto("a5", "f32", "f16", x, "CAST_RINT", "OFF") == 0x7C00   # inf
    assert run_pto("a5", "f32", "f16", bits_of("f32", -1e6), "CAST_RINT", "OFF") == 0xFC00
    assert run_pto("a2a3", "f32", "f16", x, "CAST_RINT", "OFF") == 0x7BFF  # not honoured on a2a3
    assert run_pto("a5", "f32", "f16", x, "CAST_TRUNC", "OFF") == 0x7BFF  # IEEE: toward zero
    assert run_pto("a5", "f32", "f16", bits_of("f32", np.inf), "CAST_RINT") == 0x7BFF
    assert run_pto("a5", "f32", "f16", bits_of("f32", np.nan), "CAST_RINT") == 0
    assert run_pto("a5", "f32", "f16", bits_of("f32", -np.inf), "CAST_RINT", "OFF") == 0xFC00


def test_a2a3_i32_to_f16():
    for mode in RINT, CEIL, FLOOR, TRUNC, ROUND, NONE, ODD:
        m, s, noop = resolve("a2a3", "i32", "f16", mode, "OFF")
        assert (m, s, noop) == (RINT, 1, False)
        got = cvt("i32", "f16", [70000, -70000, 65519, 65520, 2049, 2051, -2049, (1 << 31) - 1], m, s)
        want = [0x7BFF, 0xFBFF, 0x7BFF, 0x7BFF, bits_of("f16", 2048), bits_of("f16", 2052),
                bits_of("f16", -2048), 0x7BFF]
        assert [int(g) for g in got] == want


def test_i64_to_f32():
    m, s, _ = resolve("a2a3", "i64", "f32", "CAST_RINT")
    x = (1 << 40) + 1
    assert cvt1("i64", "f32", x, m, s) == bits_of("f32", 2.0 ** 40)
    assert cvt1("i64", "f32", x, CEIL, 1) == bits_of("f32", 2.0 ** 40 + 2.0 ** 17)
    assert cvt1("i64", "f32", -x, FLOOR, 1) == bits_of("f32", -(2.0 ** 40 + 2.0 ** 17))
    assert cvt1("i64", "f32", x, ODD, 1) == bits_of("f32", 2.0 ** 40 + 2.0 ** 17)
    # just above a tie: a double rounding through float64 would give 2**60
    y = (1 << 60) + (1 << 36) + 1
    assert cvt1("i64", "f32", y, RINT, 1) == bits_of("f32", 2.0 ** 60 + 2.0 ** 37)
    assert cvt1("i64", "f32", y - 1, RINT, 1) == bits_of("f32", 2.0 ** 60)            # tie -> even
    assert cvt1("i64", "f32", -(1 << 63), RINT, 1) == bits_of("f32", -(2.0 ** 63))
    assert cvt1("i64", "f32", (1 << 63) - 1, RINT, 1) == bits_of("f32", 2.0 ** 63)
    assert cvt1("i64", "f32", (1 << 63) - 1, TRUNC, 1) == bits_of("f32", 2.0 ** 63 - 2.0 ** 39)
    # i32 -> f32 from the exact integer
    assert cvt1("i32", "f32", (1 << 24) + 1, RINT, 1) == bits_of("f32", 2.0 ** 24)
    assert cvt1("i32", "f32", (1 << 24) + 3, RINT, 1) == bits_of("f32", 2.0 ** 24 + 4)
    assert cvt1("i32", "f32", (1 << 24) + 1, CEIL, 1) == bits_of("f32", 2.0 ** 24 + 2)


@pytest.mark.parametrize("soc", ["a2a3", "a5"])
def test_i32_to_i16(soc):
    assert run_pto(soc, "i32", "i16", 70000, "CAST_NONE") == 4464
    assert run_pto(soc, "i32", "i16", -70000, "CAST_NONE") == -4464
    assert run_pto(soc, "i32", "i16", 40000, "CAST_NONE") == 40000 - 65536
    assert run_pto(soc, "i32", "i16", 70000, "CAST_NONE", "ON") == 32767
    assert run_pto(soc, "i32", "i16", -70000, "CAST_NONE", "ON") == -32768
    assert run_pto(soc, "i64", "i32", 3000000000, "CAST_NONE") == 3000000000 - (1 << 32)
    assert run_pto(soc, "i64", "i32", 3000000000, "CAST_NONE", "ON") == (1 << 31) - 1


def test_huge_float_wraps_exactly():
    for v in (3e20, -3e20, 1.5e38, 2.0 ** 63, 2.0 ** 64 + 2.0 ** 41, 123456789.0 * 2 ** 40):
        x = bits_of("f32", v)
        k = int(np.float32(v))
        for dst in ("i16", "i32", "i64"):
            assert cvt1("f32", dst, x, RINT, 0) == to_int(dst, k, False), (v, dst)
            assert cvt1("f32", dst, x, RINT, 1) == to_int(dst, k, True), (v, dst)
    assert cvt1("f32", "i16", bits_of("f32", 3e20), RINT, 0) == to_int("i16", int(np.float32(3e20)), False)


@pytest.mark.parametrize("dst", ["i8", "i16", "i32", "i64", "u8"])
def test_nan_inf_to_int(dst):
    src = "f32" if dst in ("i32", "i64") else "f16"
    bits, signed = INTS[dst]
    hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    lo = -(1 << (bits - 1)) if signed else 0
    for sat in (0, 1):
        for mode in MODES:
            assert cvt1(src, dst, bits_of(src, np.nan), mode, sat) == 0
            assert cvt1(src, dst, bits_of(src, -np.nan), mode, sat) == 0
            # saturating: the limits; wrapping: 0 (the NPU's TCVT test data)
            assert cvt1(src, dst, bits_of(src, np.inf), mode, sat) == (hi if sat else 0)
            assert cvt1(src, dst, bits_of(src, -np.inf), mode, sat) == (lo if sat else 0)


def test_float_specials_float_dst():
    for dst in ("f16", "bf16", "e4m3", "e5m2"):
        nb = FLOATS[dst][2]
        neg = 1 << (nb - 1)
        mx = fmax_bits(dst)
        inf = finf_bits(dst)
        for mode in MODES:
            assert cvt1("f32", dst, 0x7F800000, mode, 1) == mx
            assert cvt1("f32", dst, 0xFF800000, mode, 1) == neg | mx
            assert cvt1("f32", dst, 0x7FC00000, mode, 1) == 0
            assert cvt1("f32", dst, 0xFFC00000, mode, 1) == 0
            assert cvt1("f32", dst, 0x7F800000, mode, 0) == inf
            assert cvt1("f32", dst, 0xFF800000, mode, 0) == neg | inf
            nan = cvt1("f32", dst, 0xFFC00000, mode, 0)
            assert nan & neg and np.isnan(float(value_of(dst, nan)))
            assert cvt1("f32", dst, 0x80000000, mode, 0) == neg            # -0 stays -0
    # e4m3 has no inf: overflow and inf become NaN without saturation
    assert cvt1("f32", "e4m3", bits_of("f32", 1000.0), RINT, 0) == 0x7F
    assert cvt1("f32", "e4m3", bits_of("f32", -1000.0), RINT, 0) == 0xFF
    assert cvt1("f32", "e4m3", bits_of("f32", 1000.0), RINT, 1) == 0x7E     # 448
    assert cvt1("f32", "e4m3", bits_of("f32", 464.0), RINT, 0) == 0x7E     # tie -> even (448)
    assert cvt1("f32", "e4m3", bits_of("f32", 465.0), RINT, 0) == 0x7F
    # f32 destination never saturates
    assert cvt1("f16", "f32", 0x7C00, RINT, 1) == 0x7F800000
    assert cvt1("f16", "f32", 0xFE00, RINT, 1) == 0xFFC00000
    assert cvt1("f32", "f32", 0x7F800000, RINT, 1) == 0x7F800000
    assert cvt1("f32", "f32", 0x7F800001, RINT, 1) == 0x7FC00001           # quieted, payload kept


def test_f32_to_f32_integral():
    cases = [(-0.3, TRUNC, -0.0), (-0.5, CEIL, -0.0), (-0.3, ROUND, -0.0), (-0.7, ROUND, -1.0),
             (2.5, RINT, 2.0), (3.5, RINT, 4.0), (2.5, ROUND, 3.0), (-2.5, FLOOR, -3.0),
             (0.25, ODD, 1.0), (2.25, ODD, 3.0), (3.0, ODD, 3.0), (1e30, FLOOR, 1e30),
             (8388607.5, RINT, 8388608.0), (-0.0, FLOOR, -0.0)]
    for v, mode, w in cases:
        assert cvt1("f32", "f32", bits_of("f32", v), mode, 1) == bits_of("f32", w), (v, mode)


# ---------------------------------------------------------------------------
# Mode resolution
# ---------------------------------------------------------------------------

def test_resolve():
    r = resolve
    assert r("a2a3", "f32", "f16", "CAST_ODD") == (ODD, 1, False)
    assert r("a5", "f32", "f16", "CAST_ODD") == (ODD, 1, False)
    assert r("a2a3", "f32", "bf16", "CAST_ODD") == (RINT, 1, False)
    assert r("a2a3", "f16", "i8", "CAST_ODD") == (TRUNC, 0, False)
    assert r("a5", "f32", "bf16", "CAST_ODD")[2] is True
    assert r("a5", "i32", "i16", "CAST_ODD")[2] is True
    assert r("a2a3", "f32", "f32", "CAST_NONE") == (RINT, 1, False)
    assert r("a2a3", "f32", "i32", "CAST_NONE") == (TRUNC, 1, False)
    assert r("a2a3", "bf16", "i32", "CAST_NONE") == (TRUNC, 1, False)
    assert r("a2a3", "i32", "f32", "CAST_NONE") == (RINT, 1, False)
    assert r("a2a3", "i64", "f32", "CAST_NONE") == (RINT, 1, False)
    assert r("a5", "f16", "i32", "CAST_NONE") == (RINT, 1, False)
    assert r("a2a3", "f32", "i32", "CAST_FLOOR", "OFF") == (FLOOR, 1, False)   # not honoured
    assert r("a5", "f32", "i32", "CAST_FLOOR", "OFF") == (FLOOR, 0, False)
    assert r("a5", "f32", "f16", "CAST_CEIL", "OFF") == (CEIL, 0, False)
    for soc in ("a2a3", "a5"):
        for pair in C.WRAP_BY_DEFAULT:
            assert r(soc, *pair, "CAST_RINT") == (RINT, 0, False)
            assert r(soc, *pair, "CAST_RINT", "ON") == (RINT, 1, False)
            assert r(soc, *pair, "CAST_RINT", "OFF") == (RINT, 0, False)
    assert r("a5", "f32", "e4m3", "CAST_CEIL", "OFF") == (RINT, 1, False)   # no sat bit for fp8
    assert r("a5", "f32", "e5m2", "CAST_TRUNC") == (RINT, 1, False)
    assert r("a5", "f32", "e5m2", "CAST_ODD")[2] is True
    assert r("a2a3", "i32", "f16", "CAST_FLOOR", "OFF") == (RINT, 1, False)
    # spellings
    assert r("a3", "f32", "i32", "RINT") == (RINT, 1, False)
    assert r("A5", "f32", "i32", "RoundMode::CAST_TRUNC", "SaturationMode::OFF") == (TRUNC, 0, False)
    assert r("a5", "f32", "i32", 4, "on") == (CEIL, 1, False)
    for bad in [("a9", "f32", "i32", "CAST_RINT"), ("a5", "f64", "i32", "CAST_RINT"),
                ("a5", "f32", "i32", "CAST_NEAREST"), ("a5", "f32", "i32", 7),
                ("a5", "f32", "i32", "CAST_RINT", 1), ("a5", "f32", "i32", "CAST_RINT", "MAYBE")]:
        with pytest.raises(ValueError):
            r(*bad)


# ---------------------------------------------------------------------------
# Bulk comparisons with the oracles
# ---------------------------------------------------------------------------

def test_f32_to_f16_all_modes():
    check("f32", "f16", list(f32_samples(600, -28, 17)) + SPECIAL_F32)


def test_f32_to_bf16_all_modes():
    check("f32", "bf16", list(f32_samples(600, -135, 128)) + SPECIAL_F32)


@pytest.mark.parametrize("dst", ["e4m3", "e5m2"])
def test_f32_to_fp8_all_modes(dst):
    check("f32", dst, list(f32_samples(400, -20, 17)) + SPECIAL_F32)


def test_f32_to_f32_all_modes():
    check("f32", "f32", list(f32_samples(600, -3, 26)) + SPECIAL_F32)


def test_bf16_to_f16():
    raws = np.arange(1 << 16, dtype=np.int64)
    v = raws.astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
    with np.errstate(over="ignore"):
        want = v.astype(np.float16)                     # exact f32, then one RNE rounding
    got = cvt("bf16", "f16", raws, RINT, 0)
    nan = np.isnan(v)
    assert np.array_equal(got[~nan], want[~nan].view(np.uint16).astype(np.int64))
    check("bf16", "f16", raws[nan][::5], modes=(RINT,))
    check("bf16", "f16", rng.choice(raws, 1500, replace=False))


def test_narrowing_rint_matches_numpy_and_ml_dtypes():
    xs = f32_samples(4000, -150, 128)
    f = xs.astype(np.uint32).view(np.float32)
    f = f[np.isfinite(f)]
    for dst, npt in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16),
                     ("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2)):
        store = FLOATS[dst][1]
        with np.errstate(over="ignore"):
            ref = f.astype(npt)
        want = ref.view(store).astype(np.int64)
        got = cvt("f32", dst, f.view(np.uint32), RINT, 0)
        ok = ~np.isnan(ref.astype(np.float32))            # e4m3 overflow: NaN (payload may differ)
        assert np.array_equal(got[ok], want[ok]), dst
        assert np.isnan(value_of(dst, got[~ok]).astype(np.float32)).all()
        assert dst == "e4m3" or ok.all()


def test_widening_is_exact():
    for src in ("f16", "bf16", "e4m3", "e5m2"):
        npt, store, nb, _ = FLOATS[src]
        raws = np.arange(1 << nb, dtype=np.int64)
        vals = raws.astype(store).view(npt).astype(np.float32)
        for mode in MODES:
            for sat in (0, 1):
                got = cvt(src, "f32", raws, mode, sat).astype(np.uint32).view(np.float32)
                nan = np.isnan(vals)
                assert np.array_equal(got[~nan].view(np.uint32), vals[~nan].view(np.uint32)), src
                assert np.isnan(got[nan]).all()
        check(src, "f32", raws[np.isnan(vals)], modes=(RINT,))            # NaN payloads, quieted
    for src, dst in (("i8", "f16"), ("u8", "f16"), ("i16", "f32"), ("i8", "i16"), ("i8", "i32"),
                     ("u8", "u16"), ("i16", "i32"), ("i32", "i64")):
        bits = INTS[src][0]
        raws = np.arange(1 << bits, dtype=np.int64) if bits <= 16 else \
            rng.integers(-(1 << 31), 1 << 31, 3000)
        want = [oracle(src, dst, int(r), RINT, 1) for r in raws]
        for mode in MODES:
            assert [int(g) for g in cvt(src, dst, raws, mode, 0)] == want


def test_int_to_float_all_modes():
    check("i16", "f16", range(-(1 << 15), 1 << 15, 29))
    i32 = np.concatenate([rng.integers(-(1 << 31), 1 << 31, 500),
                          (rng.integers(-(1 << 7), 1 << 7, 200) << rng.integers(0, 24, 200)),
                          [-(1 << 31), (1 << 31) - 1, 0, 1, -1, (1 << 24) + 1, (1 << 24) + 3]])
    check("i32", "f32", i32)
    check("i32", "f16", i32[:300], modes=(RINT,), sats=(1,))
    e = rng.integers(0, 63, 600)
    i64 = np.concatenate([(rng.integers(0, 1 << 62, 600, dtype=np.int64) >> (62 - e))
                          * rng.choice([-1, 1], 600),
                          [-(1 << 63), (1 << 63) - 1, 0, (1 << 60) + (1 << 36) + 1]])
    check("i64", "f32", i64)


def test_float_to_int_exhaustive_f16():
    raws = np.arange(1 << 16, dtype=np.int64)
    v = raws.astype(np.uint16).view(np.float16).astype(np.float64)
    for dst in ("i8", "u8", "i16", "i32"):
        bits, signed = INTS[dst]
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        for mode in MODES:
            r = np_round(v, mode)
            for sat in (0, 1):
                got = cvt("f16", dst, raws, mode, sat)
                want = np_to_int(r, v, lo, hi, bits, signed, sat)
                assert np.array_equal(got, want), (dst, mode, sat)


def np_round(v, mode):
    with np.errstate(invalid="ignore"):
        t = np.trunc(v)
        if mode == RINT:
            return np.rint(v)
        if mode == FLOOR:
            return np.floor(v)
        if mode == CEIL:
            return np.ceil(v)
        if mode == TRUNC:
            return t
        if mode == ROUND:
            return np.where(np.abs(v - t) >= 0.5, t + np.sign(v), t)
        return np.where((v != t) & (np.fmod(t, 2) == 0), t + np.sign(v), t)   # ODD


def np_to_int(r, v, lo, hi, bits, signed, sat):
    out = np.zeros(r.shape, np.int64)
    fin = np.isfinite(r)
    if sat:
        out[fin] = np.clip(r[fin], lo, hi).astype(np.int64)
    else:
        k = r[fin].astype(np.int64) % (1 << bits)          # exact: |r| <= 65504
        out[fin] = np.where(signed & (k > hi), k - (1 << bits), k)
    out[v == np.inf] = hi if sat else 0          # wrapping: inf -> 0 (the NPU's TCVT test data)
    out[v == -np.inf] = lo if sat else 0
    return out


def test_float_to_int_all_modes():
    check("bf16", "i32", range(0, 1 << 16, 5))
    for dst in ("i16", "i32", "i64"):
        check("f32", dst, list(f32_samples(500, -3, 70)) + SPECIAL_F32)


def test_int_to_int_all_pairs():
    pairs = [("i64", "i32"), ("i32", "i16"), ("i32", "u16"), ("i32", "u8"), ("i16", "u8"),
             ("u32", "u8"), ("u32", "u16"), ("u32", "i16"), ("i16", "u32"), ("i32", "i64")]
    for src, dst in pairs:
        bits = INTS[src][0]
        raws = [int(x) for x in rng.integers(0, 1 << min(bits, 63), 400)]
        raws += [0, 1, -1, (1 << (bits - 1)) - 1, -(1 << (bits - 1)), 70000, -70000, 255, 256]
        check(src, dst, raws, modes=(RINT, NONE))


def test_typed_storage_round_trip():
    """The caller's loop: raw storage elements in, dst[k] = bits into the destination's storage."""
    f32 = np.array([0.5 + 2 ** -12, -2.5, 3e20, np.nan, -np.inf, 1e6, 1e-8], np.float32)
    h = np.array([300, -300, 0.5, 65504, np.inf], np.float16)
    cases = [(f32, "f32", "f16", np.uint16), (f32, "f32", "i32", np.int32),
             (f32.view(np.uint32), "f32", "i16", np.int16), (f32, "f32", "f32", np.uint32),
             (h.view(np.uint16), "f16", "i8", np.int8), (h.view(np.uint16), "f16", "u8", np.uint8),
             (np.array([-1, 70000, -(1 << 31)], np.int32), "i32", "i16", np.int16),
             (np.array([-(1 << 63), (1 << 63) - 1], np.int64), "i64", "i32", np.int32),
             (np.array([255, 1 << 31, (1 << 32) - 1], np.uint32), "u32", "u16", np.uint16)]
    for src_arr, s, d, store in cases:
        raw = src_arr.view(FLOATS[s][1]) if s in FLOATS else src_arr
        for mode in (RINT, FLOOR):
            for sat in (0, 1):
                out = np.zeros(src_arr.size, store)
                _run_typed(src_arr, out, CODE[s], CODE[d], mode, sat)
                want = cvt(s, d, raw, mode, sat)
                assert np.array_equal(out, want.astype(store)), (s, d, mode, sat)
    out = np.zeros(2, np.float32)
    _run_typed(np.array([0x3C00, 0xC000], np.uint16), out.view(np.uint32), C.F16, C.F32, RINT, 1)
    assert out.tolist() == [1.0, -2.0]


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------

f32_finite = st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=1,
                      max_size=64)


@settings(max_examples=60, deadline=None)
@given(f32_finite)
def test_rint_f32_to_f16_equals_numpy(xs):
    f = np.array(xs, np.float32)
    with np.errstate(over="ignore"):
        h = f.astype(np.float16)
    got = cvt("f32", "f16", f.view(np.uint32), RINT, 0)
    assert np.array_equal(got, h.view(np.uint16).astype(np.int64))
    sat = cvt("f32", "f16", f.view(np.uint32), RINT, 1)
    ref = np.clip(h, -65504, 65504)
    assert np.array_equal(sat, ref.view(np.uint16).astype(np.int64))


@settings(max_examples=60, deadline=None)
@given(f32_finite, st.sampled_from(["f16", "bf16"]))
def test_directed_modes_bracket(xs, dst):
    f = np.array(xs, np.float32)
    raw = f.view(np.uint32)
    npt = FLOATS[dst][0]
    vals = {m: value_of(dst, cvt("f32", dst, raw, m, 1)).astype(np.float64) for m in MODES}
    x = f.astype(np.float64)
    mx = float(value_of(dst, fmax_bits(dst)))
    inr = np.abs(x) <= mx
    assert (vals[FLOOR][inr] <= x[inr]).all() and (x[inr] <= vals[CEIL][inr]).all()
    assert (np.abs(vals[TRUNC]) <= np.abs(x)).all()
    for m in (RINT, ROUND, ODD):
        assert ((vals[m] == vals[FLOOR]) | (vals[m] == vals[CEIL]))[inr].all()
    with np.errstate(over="ignore"):
        exact = (x.astype(npt).astype(np.float64) == x) & inr
    for m in MODES:
        assert (vals[m][exact] == x[exact]).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), min_size=1, max_size=32),
       st.sampled_from(MODES))
def test_i64_to_f32_correctly_rounded(ks, mode):
    got = cvt("i64", "f32", ks, mode, 1)
    assert [int(g) for g in got] == [oracle("i64", "f32", k, mode, 1) for k in ks]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=1,
                max_size=32), st.sampled_from(DIRECTED), st.sampled_from(["i16", "i32", "i64"]))
def test_f32_to_int_wrap_and_clamp(xs, mode, dst):
    raw = np.array(xs, np.float32).view(np.uint32)
    for sat in (0, 1):
        got = cvt("f32", dst, raw, mode, sat)
        assert [int(g) for g in got] == [oracle("f32", dst, int(r), mode, sat) for r in raw]


def test_cvt_f32_and_source_typing():
    assert C.cvt_f32(np.uint16(0x3C01), C.F16, RINT, 1) == np.float32(1 + 2 ** -10)
    assert C.cvt_f32(np.int32(-(1 << 24) - 1), C.I32, FLOOR, 1) == np.float32(-(1 << 24) - 2)
    from numba.core.errors import TypingError
    with pytest.raises(TypingError):
        cvt_bits(1.0, C.F32, C.F16, RINT, 1)     # float64 is not a storage type


def test_a5_fp8_targets_ignore_the_saturation_argument():
    # a5 sets no saturation control bit for f32 -> fp8: the default (clamp) applies either way
    for dst in ("e4m3", "e5m2"):
        assert C.resolve("a5", "f32", dst, "CAST_TRUNC", "OFF")[1] == C.SAT_CLAMP
        assert C.resolve("a5", "f32", dst, "CAST_TRUNC", None)[1] == C.SAT_CLAMP
