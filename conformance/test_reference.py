"""Self-checks of the numpy reference (no pypto involved): the reference is cross-checked against
a second, independent computation so that a bug in it cannot silently pass or fail pypto."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from . import reference as ref
from .helpers import random_values

OPS = ("add", "sub", "mul", "div", "max", "min")


def _double_op(op, x, y):
    if op == "add":
        return x + y
    if op == "sub":
        return x - y
    if op == "mul":
        return x * y
    if op == "div":
        if y == 0:
            if x == 0 or x != x:
                return float("nan")
            return float("inf") if (np.copysign(1, x) * np.copysign(1, y)) > 0 else float("-inf")
        return x / y
    if op == "max":
        return max(x, y)
    return min(x, y)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", OPS)
def test_narrow_float_ops_equal_one_rounding_from_double(op, dtype):
    """f32-then-round (the reference) == exact double result rounded once (for + - * / max min)."""
    rng = np.random.default_rng(7)
    a = random_values(rng, dtype, (3000,), specials=0.0, raw_bits=0.3)
    b = random_values(rng, dtype, (3000,), specials=0.0, raw_bits=0.3, nonzero=True)
    got = ref.binary(op, a, b, dtype)
    for x, y, g in zip(a.astype(np.float64), b.astype(np.float64), got):
        if np.isnan(x) or np.isnan(y) or np.isinf(x) or np.isinf(y):
            continue
        with np.errstate(all="ignore"):
            e = ref.scalar_to(dtype, _double_op(op, float(x), float(y)))
        assert ref.to_bits(np.array([g]))[0] == ref.to_bits(np.array([e]))[0], (op, x, y, g, e)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "max", "min"])
def test_integer_ops_wrap(op, dtype):
    rng = np.random.default_rng(11)
    a = random_values(rng, dtype, (500,))
    b = random_values(rng, dtype, (500,))
    got = ref.binary(op, a, b)
    w = a.dtype.itemsize * 8
    for x, y, g in zip(a.tolist(), b.tolist(), got.tolist()):
        e = _double_op(op, x, y) if op in ("max", "min") else {"add": x + y, "sub": x - y,
                                                              "mul": x * y}[op]
        e %= 1 << w
        if a.dtype.kind == "i" and e >= 1 << (w - 1):
            e -= 1 << w
        assert g == e, (op, x, y, g, e)


def test_nan_rules():
    q = np.array([0x7FC00123], np.uint32).view(np.float32)
    s = np.array([0xFF800001], np.uint32).view(np.float32)
    one = np.array([1.0], np.float32)
    for op in OPS:
        assert ref.to_bits(ref.binary(op, q, one))[0] == 0x7FC00123
        assert ref.to_bits(ref.binary(op, one, s))[0] == 0xFFC00001
    out, loose = ref.binary("sub", np.array([np.inf], np.float32), np.array([np.inf], np.float32),
                            with_loose=True)
    assert np.isnan(out[0]) and loose[0]


def test_pad_values_npu_column():
    assert ref.pad_value("int8", "min") == -1
    assert ref.pad_value("int8", "max") == 127
    assert ref.pad_value("uint8", "min") == 0 and ref.pad_value("uint16", "min") == 0
    assert ref.pad_value("uint32", "max") == 0xFFFFFFFF
    assert ref.pad_value("int32", "min") == -2 ** 31
    assert ref.to_bits(np.array([ref.pad_value("float32", "min")]))[0] == 0xFF800000
    assert ref.to_bits(np.array([ref.pad_value("float16", "max")]))[0] == 0x7C00
    assert ref.to_bits(np.array([ref.pad_value("bfloat16", "min")]))[0] == 0xFF80
    assert ref.pad_value("int64", "max") == 0
    assert list(ref.pad_columns("float32", 37, 64)) == [37, 38, 39]
    assert list(ref.pad_columns("float16", 37, 64)) == list(range(37, 48))
    assert list(ref.pad_columns("int8", 64, 64)) == []


def test_scalar_conversion():
    assert ref.scalar_to("int16", 40000) == -25536
    assert ref.scalar_to("uint8", -1) == 255
    assert ref.scalar_to("float16", 1 + 2.0 ** -11 + 2.0 ** -40) == np.float16(1 + 2.0 ** -10)
    assert float(ref.scalar_to("bfloat16", 1 + 2.0 ** -8 + 2.0 ** -40)) == 1 + 2.0 ** -7
    assert np.isposinf(ref.scalar_to("float16", 70000.0))


# ---------------------------------------------------------------------------------------------
# TEXP
# ---------------------------------------------------------------------------------------------
def _bits(a):
    return int(ref.to_bits(np.asarray(a).reshape(-1))[0])


def test_exp_hand_examples():
    f32 = np.float32
    x = np.array([0.0, -0.0, 1.0, -np.inf, np.inf, 88.0, 89.0, -100.0, -104.0], f32)
    got = ref.exp(x)
    assert got.dtype == np.float32
    assert got[0] == 1 and got[1] == 1
    assert got[2] == np.float32(2.718281828459045)
    assert _bits(got[3]) == 0 and np.isposinf(got[4])
    assert np.isfinite(got[5]) and np.isposinf(got[6])           # e^89 > FLT_MAX
    assert 0 < got[7] < np.finfo(np.float32).tiny                 # subnormal kept
    assert _bits(got[8]) == 0                                     # below half the least subnormal
    h = ref.exp(np.array([11.0, 12.0, -16.0], np.float16))
    assert h[0] == np.float16(59874.14171519782) and np.isposinf(h[1]) and 0 < h[2] < 6.2e-5
    nan = np.array([0x7F800001, 0xFFC00123], np.uint32).view(np.float32)
    assert list(ref.to_bits(ref.exp(nan))) == [0x7FC00001, 0xFFC00123]
    with pytest.raises(TypeError):
        ref.exp(np.zeros(3, np.int32))


def _correctly_rounded(xs, got, dt):
    """Assert every result is the value of ``dt`` nearest to e**x (checked with decimal)."""
    import decimal
    ctx = decimal.Context(prec=60, Emax=10 ** 6, Emin=-10 ** 6)
    ub = ref.bits_dtype(dt)
    for x, g in zip(xs.tolist(), got):
        if x != x:
            continue
        e = ctx.exp(decimal.Decimal(x)) if abs(x) != float("inf") else None
        if e is None:
            continue
        gb = int(np.array([g], dt).view(ub)[0])
        cands = [np.array([gb + d], ub).view(dt)[0] for d in (-1, 1) if 0 <= gb + d < 0x7FFF_FFFF]
        gv = float(g)
        if np.isinf(gv):
            below = float(np.nextafter(np.array(np.finfo(dt).max, dt), np.array(0, dt)))
            mx = float(np.finfo(dt).max)
            assert e >= decimal.Decimal(mx) + (decimal.Decimal(mx) - decimal.Decimal(below)) / 2
            continue
        err = abs(e - decimal.Decimal(gv))
        for c in cands:
            c = float(c)
            if np.isfinite(c) and c >= 0:
                assert err <= abs(e - decimal.Decimal(c)), (x, gv, c)


def test_exp_f16_exhaustive_correctly_rounded():
    xs = np.arange(0x10000, dtype=np.uint32).astype(np.uint16).view(np.float16)
    xs = xs[~np.isnan(xs)]
    _correctly_rounded(xs.astype(np.float64), ref.exp(xs), np.dtype(np.float16))


@settings(max_examples=300, deadline=None)
@given(st.floats(-110, 90, width=32))
def test_exp_f32_correctly_rounded(x):
    xs = np.array([x], np.float32)
    _correctly_rounded(xs.astype(np.float64), ref.exp(xs), np.dtype(np.float32))


# ---------------------------------------------------------------------------------------------
# TROWSUM
# ---------------------------------------------------------------------------------------------
def _tree_recursive(v):
    """Independent formulation of the repeat tree: split at the largest power of two below n."""
    v = list(v)
    if len(v) == 1:
        return np.float32(v[0])
    m = 1 << ((len(v) - 1).bit_length() - 1)
    return np.float32(_tree_recursive(v[:m]) + _tree_recursive(v[m:]))


def _row(n, fill, dtype, at=()):
    """A 1 x n row of ``fill`` with ``(index, value)`` pairs placed at ``at``."""
    r = np.full((1, n), fill, dtype)
    for i, v in at:
        r[0, i] = v
    return r


def _rs(row, soc, **kw):
    return float(ref.rowsum(row, soc=soc, **kw)[0, 0])


def test_rowsum_short_rows_same_on_both_socs():
    """At most one repeat: a tree on a2a3, +0 + tree on a5 (the same unless the sum is -0)."""
    t = 2.0 ** 24
    for soc in ref.SOCS:
        # f16 [2048, 1, 1, 1]: (2049 + 2) = 2051 in f32 -> f16 tie -> 2052 (exact sum 2051)
        assert _rs(np.array([[2048, 1, 1, 1]], np.float16), soc) == 2052
        # f32 [2^24, 1, 1, 1] -> (2^24 + 1 -> 2^24) + 2 = 2^24 + 2; sequential would give 2^24
        assert _rs(np.array([[t, 1, 1, 1]], np.float32), soc) == t + 2
        # odd count: the last element is carried up: (2^24 + 1) + 1 -> 2^24
        assert _rs(np.array([[t, 1, 1]], np.float32), soc) == t
        # [2^24, 1, 1, 1, 1]: [2^24, 2, 1] -> [2^24 + 2, 1] -> 2^24 + 3 -> tie -> 2^24 + 4
        assert _rs(np.array([[t, 1, 1, 1, 1]], np.float32), soc) == t + 4
        # a repeat is summed in f32 and then rounded to f16: 128 x 1024 = 131072 -> inf
        assert np.isposinf(_rs(np.full((1, 128), 1024, np.float16), soc))
        # ... but inside the repeat there is no f16 overflow: 60000 + 60000 - 60000 in f32
        assert _rs(np.array([[60000, 60000, -60000, 0]], np.float16), soc) == 60000
        # a full f32 repeat of 64 ones with 2^24 first: 2^24 + 62 (the first pair loses a 1)
        assert _rs(_row(64, 1, np.float32, [(0, t)]), soc) == t + 62


def test_rowsum_f32_200_ones_and_one_big():
    """f32, V = 200 = 3 full repeats + a tail of 8, all ones but one 2^24 at ``p``; exact 2^24+199.

    a2a3: lanes = r0 (+ r1), + tail (lanes 0..7), + r2, then a tree of the 64 lanes: lanes that
    meet 2^24 after an odd count lose a 1 at each addition (2^24 + 1 ties to 2^24), lanes that
    meet it at an even partial sum keep everything and round the final +3 up to +4.
    a5: each repeat is treed (the one holding 2^24 gives 2^24 + 62), then +0 + 64 + ... exactly.
    """
    t = 2.0 ** 24
    a2a3 = {
        0: t + 196,     # lane 0: t, +1 (r1) -> t, +1 (tail) -> t, +1 (r2) -> t; lanes 1..7: 4,
                        # lanes 8..63: 3 -> tree t + 4*7 + 3*56 = t + 196 (every level exact)
        64: t + 196,    # lane 0: 1 + t -> t (tie to even), then as above
        130: t + 200,   # lane 2: 1, 2, 3 (tail), + t = t + 3 -> t + 4; tree adds 196 exactly
        192: t + 200,   # lane 0: 2, + t (tail) = t + 2, +1 (r2) -> t + 4
        199: t + 200,   # lane 7: 2, + t (tail) = t + 2, +1 (r2) -> t + 4
    }
    for p, e in a2a3.items():
        row = _row(200, 1, np.float32, [(p, t)])
        assert _rs(row, "a2a3") == e, p
        assert _rs(row, "a5") == t + 198, p       # (t + 62) + 64 + 64 + 8 in some order
    # the tail repeat holding 2^24: [1 x 7, t] -> [2, 2, 2, t + 1 -> t] -> [4, t + 2] -> t + 6
    assert _rs(_row(200, 1, np.float32, [(199, t)]), "a5") == t + 198
    # only the first 64 columns valid: one repeat, a single tree on both SoCs
    for soc in ref.SOCS:
        assert _rs(_row(200, 1, np.float32, [(0, t)]), soc, valid_cols=64) == t + 62


def test_rowsum_f16_three_repeats_and_a_tail():
    """f16, V = 389 = 3 x 128 + 5, ones with one 2048 (f16 spacing 2 from 2048 on); exact 2436."""
    row = _row(389, 1, np.float16, [(0, 2048)])
    # a2a3: lane 0: 2048 + 1 -> 2049 -> tie -> 2048 at each of the three f16 additions; lanes
    # 1..4: 4, lanes 5..127: 3; tree 2048 + 16 + 369 = 2433 in f32 -> f16 tie -> 2432
    assert _rs(row, "a2a3") == 2432
    # a5: repeat 0 = 2048 + 127 = 2175 -> tie -> 2176; + 128 + 128 = 2432 exactly; + 5 = 2437
    # -> tie -> 2436
    assert _rs(row, "a5") == 2436
    # the 2048 in the tail instead: a2a3 lane 0 = 1 + 1 + 2048 -> 2050, + 1 -> 2051 -> 2052;
    # lanes 1..4: 4, 5..127: 3 -> 2052 + 385 = 2437 -> 2436. a5: 128 * 3 = 384, tail
    # [2048, 1, 1, 1, 1] -> 2052, 384 + 2052 = 2436
    row = _row(389, 1, np.float16, [(384, 2048)])
    assert _rs(row, "a2a3") == 2436 and _rs(row, "a5") == 2436
    # the 2048 in repeat 2: a2a3 lane 0: 2, 3 (tail), + 2048 = 2051 -> 2052, tree 2052 + 385
    # -> 2436; a5: 128 + 128 + (2048 + 127 -> 2176) = 2432, + 5 -> 2436
    row = _row(389, 1, np.float16, [(256, 2048)])
    assert _rs(row, "a2a3") == 2436 and _rs(row, "a5") == 2436


def test_rowsum_two_repeats_differ_by_soc():
    # f16 V = 132: a2a3 lanes = 128 ones, tail [2048, 1, 1, 1] into lanes 0..3 -> [2049 -> 2048,
    # 2, 2, 2], tree 2048 + 6 + 124 = 2178; a5: 128 + (2048 + 3 = 2051 -> 2052) = 2180
    row = np.array([[1.0] * 128 + [2048, 1, 1, 1]], np.float16)
    assert _rs(row, "a2a3") == 2178 and _rs(row, "a5") == 2180
    # f32 V = 67: [2^24, 1, 1, 1, 0 ...] then three ones: a2a3 lanes [2^24 (the +1 ties down), 2,
    # 2, 1, 0 ...] -> tree 2^24 + 5 -> tie -> 2^24 + 4; a5: (2^24 + 2) + 3 -> 2^24 + 4 as well
    t = 2.0 ** 24
    row = np.zeros((1, 67), np.float32)
    row[0, :4] = [t, 1, 1, 1]
    row[0, 64:] = 1
    assert _rs(row, "a2a3") == t + 4 and _rs(row, "a5") == t + 4
    # two repeats of 60000 each: a5 adds the two f16 repeat sums -> inf; a2a3 adds the lanes
    # 60000 + 60000 in f16 -> inf as well
    row = np.zeros((1, 256), np.float16)
    row[0, 0] = row[0, 128] = 60000
    assert np.isposinf(_rs(row, "a5")) and np.isposinf(_rs(row, "a2a3"))
    # f16 [60000, 60000, 0 ...] + [-60000, 0 ...]: a5 trees repeat 0 to 120000 -> inf (and
    # inf - 60000 = inf); a2a3 first adds lane-wise (60000 - 60000 = 0), tree [0, 60000] = 60000
    row = np.zeros((1, 256), np.float16)
    row[0, 0], row[0, 1], row[0, 128] = 60000, 60000, -60000
    assert _rs(row, "a2a3") == 60000 and np.isposinf(_rs(row, "a5"))


def test_rowsum_negative_zero():
    for n in (5, 64, 200):
        row = np.full((1, n), -0.0, np.float32)
        assert ref.to_bits(ref.rowsum(row, soc="a2a3"))[0, 0] == 0x80000000, n
        assert ref.to_bits(ref.rowsum(row, soc="a5"))[0, 0] == 0, n       # +0 + -0 = +0
    row = np.full((1, 300), -0.0, np.float16)
    assert ref.to_bits(ref.rowsum(row, soc="a2a3"))[0, 0] == 0x8000
    assert ref.to_bits(ref.rowsum(row, soc="a5"))[0, 0] == 0


@pytest.mark.parametrize("soc", ["a2a3", "a5"])
def test_rowsum_valid_region_and_empty(soc):
    src = np.full((4, 80), np.nan, np.float32)
    src[:2, :70] = 1.0
    out = ref.rowsum(src, 2, 70, soc=soc)
    assert out.shape == (2, 1) and (out == 70).all()
    assert ref.rowsum(src, 0, 70, soc=soc).shape == (0, 1)
    assert ref.rowsum(src, 3, 0, soc=soc).shape == (0, 1)
    out, loose = ref.rowsum(src, 3, 70, soc=soc, with_loose=True)
    assert np.isnan(out[2, 0]) and loose[2, 0] and not loose[:2].any()
    with pytest.raises(TypeError):
        ref.rowsum(np.zeros((2, 2), np.int32), soc=soc)
    with pytest.raises(ValueError):
        ref.rowsum(src, soc="a3")


def _lane_order(vc, per):
    """a2a3: for each lane, the column indices in the order they are added (independent
    formulation: a table of (lane, column) built per repeat index, not array slices)."""
    full, rem = divmod(vc, per)
    order = [[k] for k in range(per)]
    seq = ([1] if full >= 2 else []) + ["tail"] + list(range(2, full))
    for step in seq:
        for k in range(per):
            if step == "tail":
                if k < rem:
                    order[k].append(full * per + k)
            else:
                order[k].append(step * per + k)
    return order


def _independent_rowsum(row, soc, dt):
    per = 256 // dt.itemsize
    vc = len(row)
    with np.errstate(all="ignore"):
        if soc == "a5":
            acc = dt.type(0)
            for j in range(0, vc, per):
                s = np.float32(_tree_recursive(row[j:j + per].astype(np.float32))).astype(dt)
                acc = (np.float32(acc) + np.float32(s)).astype(dt)
            return acc
        if vc <= per:
            return np.float32(_tree_recursive(row.astype(np.float32))).astype(dt)
        lanes = []
        for cols in _lane_order(vc, per):
            v = dt.type(row[cols[0]])
            for c in cols[1:]:
                v = (np.float32(v) + np.float32(row[c])).astype(dt)
            lanes.append(np.float32(v))
        return np.float32(_tree_recursive(lanes)).astype(dt)


@pytest.mark.parametrize("soc", ["a2a3", "a5"])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_rowsum_matches_independent_formulation(dtype, soc):
    rng = np.random.default_rng(5)
    dt = np.dtype(dtype)
    per = 256 // dt.itemsize
    for vc in (1, 2, 3, 5, 7, per - 1, per, per + 1, 2 * per - 1, 2 * per, 2 * per + 3,
               3 * per + 1, 5 * per, 5 * per + 17):
        src = (rng.standard_normal((3, vc)) * 10.0 ** rng.integers(-2, 4, (3, vc))).astype(dt)
        got = ref.rowsum(src, soc=soc)
        for i in range(3):
            e = _independent_rowsum(src[i], soc, dt)
            assert ref.to_bits(np.array([got[i, 0]])) == ref.to_bits(np.array([e], dt)), (vc, i)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["float16", "float32"]), st.integers(1, 700), st.integers(0, 2 ** 32 - 1))
def test_rowsum_exact_when_no_rounding(dtype, vc, seed):
    """Small integers whose absolute sum stays below 2^11 (f16) / 2^24 (f32): every partial sum
    on either SoC is exact, so both orders give the exact sum."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    lim = 2 if dt == np.float16 else 1000
    row = rng.integers(-lim, lim + 1, (2, vc))
    cap = 2048 if dt == np.float16 else 2 ** 24
    row[:, np.cumsum(np.abs(row[0]) + np.abs(row[1])) > cap] = 0
    src = row.astype(dt)
    for soc in ref.SOCS:
        got = ref.rowsum(src, soc=soc)
        assert (got[:, 0].astype(np.float64) == row.sum(axis=1)).all(), soc


# ---------------------------------------------------------------------------------------------
# TCVT
# ---------------------------------------------------------------------------------------------
def cv(values, src, dst, soc="a2a3", rmode="CAST_NONE", sat=None):
    """Convert a list through the reference and return Python values (floats / ints)."""
    sdt = ref.np_dtype(src)
    x = np.array(values, dtype=np.float64).astype(sdt) if ref.is_float(sdt) else \
        np.array(values, dtype=object).astype(sdt)
    out, untouched = ref.cast(x, src, dst, soc, rmode, sat)
    assert not untouched.any()
    return [float(v) if ref.is_float(dst) else int(v) for v in out]


def cbits(values, src, dst, soc="a2a3", rmode="CAST_NONE", sat=None):
    sdt = ref.np_dtype(src)
    x = np.array(values, dtype=np.float64).astype(sdt)
    return [int(b) for b in ref.to_bits(ref.cast(x, src, dst, soc, rmode, sat)[0])]


def test_cvt_legal_tables():
    assert len(ref.CVT_LEGAL["a2a3"]) == 23 and len(ref.CVT_LEGAL["a5"]) == 38
    assert ref.is_cvt_legal("f32", "f16", "a5") and ref.is_cvt_legal("int32", "float16", "a2a3")
    for s, d, soc in [("f32", "i8", "a2a3"), ("f32", "i8", "a5"), ("i16", "i8", "a5"),
                      ("i32", "f16", "a5"), ("bf16", "f16", "a2a3"), ("f32", "e4m3", "a2a3")]:
        assert not ref.is_cvt_legal(s, d, soc)
        with pytest.raises(ValueError):
            ref.cast(np.zeros(1, ref.np_dtype(s)), s, d, soc)
    assert ref.LEGAL["exp"]["a5"] == ("f16", "f32") and ref.is_legal("rowsum", "f16", "a2a3")


def test_cvt_saturation_wrap_examples():
    # f16 300 -> i8: wraps to 44 by default (both SoCs), 127 with saturation ON
    for soc in ("a2a3", "a5"):
        assert cv([300, -300], "f16", "i8", soc) == [44, -44]
        assert cv([300, -300], "f16", "i8", soc, sat="ON") == [127, -128]
        assert cv([-1, 256.0, 300], "f16", "u8", soc) == [255, 0, 44]
        assert cv([-1, 256.0, 300], "f16", "u8", soc, sat="ON") == [0, 255, 255]
        assert cv([70000, -70000], "i32", "i16", soc) == [4464, -4464]
        assert cv([70000, -70000], "i32", "i16", soc, sat="ON") == [32767, -32768]
        assert cv([2 ** 40 + 5], "i64", "i32", soc) == [5]
        assert cv([2 ** 40 + 5], "i64", "i32", soc, sat="ON") == [2 ** 31 - 1]
    # f32 -> i16 (default OFF): a2a3 truncates then wraps, a5 rounds to nearest even then wraps
    assert cv([40000.7], "f32", "i16", "a2a3") == [-25536]
    assert cv([40000.7], "f32", "i16", "a5") == [-25535]
    # other pairs saturate; a2a3 ignores an explicit OFF there, a5 honours it (exact low bits)
    assert cv([3e9, -3e9], "f32", "i32", "a2a3", sat="OFF") == [2 ** 31 - 1, -2 ** 31]
    assert cv([3e9, 2.0 ** 40 + 2.0 ** 20], "f32", "i32", "a5", sat="OFF") == [3000000000 - 2 ** 32,
                                                                                 2 ** 20]
    # NaN -> 0 in both modes; +-inf -> max/min when saturating, 0 when wrapping
    specials = [np.nan, np.inf, -np.inf]
    for soc in ("a2a3", "a5"):
        for sat in (None, "OFF"):                       # these pairs wrap by default
            assert cv(specials, "f16", "i8", soc, sat=sat) == [0, 0, 0], (soc, sat)
            assert cv(specials, "f16", "u8", soc, sat=sat) == [0, 0, 0], (soc, sat)
            assert cv(specials, "f16", "i16", soc, sat=sat) == [0, 0, 0], (soc, sat)
            assert cv(specials, "f32", "i16", soc, "CAST_FLOOR", sat) == [0, 0, 0], (soc, sat)
        assert cv(specials, "f16", "i8", soc, sat="ON") == [0, 127, -128]
        assert cv(specials, "f16", "u8", soc, sat="ON") == [0, 255, 0]
        assert cv(specials, "f32", "i16", soc, sat="ON") == [0, 32767, -32768]
        for sat in (None, "ON"):                        # these pairs clamp by default
            assert cv(specials, "f32", "i64", soc, sat=sat) == [0, 2 ** 63 - 1, -2 ** 63]
            assert cv(specials, "bf16", "i32", soc, sat=sat) == [0, 2 ** 31 - 1, -2 ** 31]
    # an explicit OFF: honoured on a5 (inf -> 0), ignored on a2a3 for a default-ON pair
    assert cv(specials, "f32", "i64", "a5", sat="OFF") == [0, 0, 0]
    assert cv(specials, "f32", "i32", "a5", sat="OFF") == [0, 0, 0]
    assert cv(specials, "f32", "i32", "a2a3", sat="OFF") == [0, 2 ** 31 - 1, -2 ** 31]
    assert ref.cast_rule("f16", "i8", "a2a3") == ("TRUNC", False)
    assert ref.cast_rule("f32", "i32", "a2a3", sat="OFF") == ("TRUNC", True)
    # a5 integer narrowing
    assert cv([-1, 300], "i16", "u8", "a5") == [0, 255]
    assert cv([-1, 300], "i16", "u8", "a5", sat="OFF") == [255, 44]
    assert cv([40000], "u32", "i16", "a5") == [32767]
    assert cv([40000], "u32", "i16", "a5", sat="OFF") == [-25536]
    assert cv([-1, 5], "i16", "u32", "a5") == [0, 5]
    assert cv([-1], "i16", "u32", "a5", sat="OFF") == [2 ** 32 - 1]
    assert cv([-128, 127], "i8", "i32", "a5") == [-128, 127]


def test_cvt_round_modes_to_int():
    expect = {"CAST_RINT": [-2, 2, -4], "CAST_ROUND": [-3, 3, -4], "CAST_FLOOR": [-3, 2, -4],
              "CAST_CEIL": [-2, 3, -3], "CAST_TRUNC": [-2, 2, -3]}
    for soc in ("a2a3", "a5"):
        for mode, e in expect.items():
            assert cv([-2.5, 2.5, -3.5], "f32", "i32", soc, mode) == e, (soc, mode)
            assert cv([-2.5, 2.5, -3.5], "f16", "i16", soc, mode) == e, (soc, mode)
            assert cv([-2.5, 2.5, -3.5], "bf16", "i32", soc, mode) == e, (soc, mode)
    assert cv([-2.5, 2.5, -3.7], "f32", "i32", "a2a3") == [-2, 2, -3]          # NONE: truncate
    assert cv([-2.5, 2.5, -3.7], "f32", "i32", "a2a3", "CAST_ODD") == [-2, 2, -3]
    assert cv([-2.5, 2.5, -3.7], "f32", "i32", "a5") == [-2, 2, -4]            # NONE: rint
    # accepted spellings of the mode
    assert cv([2.5], "f32", "i32", "a5", "round") == [3] and cv([2.5], "f32", "i32", "a5", 2) == [3]


def test_cvt_odd_a5_untouched():
    x = np.array([1.5, -2.5], np.float32)
    prev = np.array([7, 8], np.int32)
    out, untouched = ref.cast(x, "f32", "i32", "a5", "CAST_ODD", prev=prev)
    assert untouched.all() and list(out) == [7, 8]
    for s, d in [("f32", "f32"), ("f32", "bf16"), ("f32", "e4m3"), ("i32", "f32")]:
        _, untouched = ref.cast(np.zeros(3, ref.np_dtype(s)), s, d, "a5", "CAST_ODD")
        assert untouched.all(), (s, d)
    assert ref.cast_rule("f32", "bf16", "a2a3", "CAST_ODD") == ("RINT", True)
    assert ref.cast_rule("f32", "f16", "a5", "CAST_ODD") == ("ODD", True)


def test_cvt_f32_to_f16_modes():
    x = 0.5 + 2.0 ** -12          # halfway between 0.5 and 0.5 + 2^-11
    up = 0.5 + 2.0 ** -11
    expect = {"CAST_RINT": 0.5, "CAST_FLOOR": 0.5, "CAST_CEIL": up, "CAST_ROUND": up,
              "CAST_TRUNC": 0.5, "CAST_ODD": up, "CAST_NONE": 0.5}
    expect_neg = {"CAST_RINT": -0.5, "CAST_FLOOR": -up, "CAST_CEIL": -0.5, "CAST_ROUND": -up,
                  "CAST_TRUNC": -0.5, "CAST_ODD": -up, "CAST_NONE": -0.5}
    for soc in ("a2a3", "a5"):
        for mode, e in expect.items():
            assert cv([x, -x], "f32", "f16", soc, mode) == [e, expect_neg[mode]], (soc, mode)
    # round to odd keeps an exact result, sets the last bit of an inexact one
    assert cv([0.5, 1 + 2.0 ** -11 + 2.0 ** -20], "f32", "f16", "a5", "CAST_ODD") == [
        0.5, 1 + 2.0 ** -10]
    # subnormals: 2^-25 is half the least f16 subnormal
    tiny = 2.0 ** -24
    assert cv([2.0 ** -25], "f32", "f16", "a5", "CAST_RINT") == [0.0]
    assert cv([2.0 ** -25], "f32", "f16", "a5", "CAST_ROUND") == [tiny]
    assert cv([2.0 ** -25], "f32", "f16", "a5", "CAST_ODD") == [tiny]
    assert cv([3 * 2.0 ** -26], "f32", "f16", "a5", "CAST_RINT") == [tiny]
    assert cbits([-2.0 ** -30], "f32", "f16", "a5", "CAST_RINT") == [0x8000]
    assert cbits([-2.0 ** -30], "f32", "f16", "a5", "CAST_FLOOR") == [0x8001]


def test_cvt_float_saturation():
    # f32 1e6 -> f16: 65504 by default on both SoCs; inf with saturation OFF on a5 only
    for soc in ("a2a3", "a5"):
        assert cv([1e6, -1e6, np.inf], "f32", "f16", soc) == [65504, -65504, 65504]
        assert cbits([np.nan], "f32", "f16", soc) == [0]
    assert cv([1e6, -1e6], "f32", "f16", "a2a3", sat="OFF") == [65504, -65504]
    assert cv([1e6, -1e6, np.inf], "f32", "f16", "a5", sat="OFF") == [np.inf, -np.inf, np.inf]
    # IEEE overflow per direction (a5, saturation OFF); 65520 is the rounding midpoint
    assert cv([65519, 65520], "f32", "f16", "a5", "CAST_RINT", "OFF") == [65504, np.inf]
    assert cv([7e4, -7e4], "f32", "f16", "a5", "CAST_FLOOR", "OFF") == [65504, -np.inf]
    assert cv([7e4, -7e4], "f32", "f16", "a5", "CAST_CEIL", "OFF") == [np.inf, -65504]
    assert cv([7e4, -7e4], "f32", "f16", "a5", "CAST_TRUNC", "OFF") == [65504, -65504]
    assert cv([7e4], "f32", "f16", "a5", "CAST_ODD", "OFF") == [65504]
    assert cv([7e4], "f32", "f16", "a5", "CAST_CEIL", "ON") == [65504]
    # bf16 -> f16 (a5)
    assert cv([1e10, -np.inf], "bf16", "f16", "a5") == [65504, -65504]
    assert cv([1e10], "bf16", "f16", "a5", sat="OFF") == [np.inf]
    assert cv([2.0 ** -30], "bf16", "f16", "a5", "CAST_CEIL") == [2.0 ** -24]
    assert cv([2.0 ** -30], "bf16", "f16", "a5", "CAST_FLOOR") == [0.0]
    # f32 -> bf16
    big = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    assert cv([np.inf, 1 + 2.0 ** -8], "f32", "bf16", "a2a3") == [big, 1.0]
    assert cv([1 + 2.0 ** -8], "f32", "bf16", "a5", "CAST_ROUND") == [1 + 2.0 ** -7]
    assert cv([np.inf], "f32", "bf16", "a5", sat="OFF") == [np.inf]


def test_cvt_nan_payloads():
    x = np.array([0x7FA00001, 0xFFC00000], np.uint32).view(np.float32)
    out, _ = ref.cast(x, "f32", "f16", "a5", sat="OFF")
    assert list(ref.to_bits(out)) == [0x7F00, 0xFE00]
    out, _ = ref.cast(np.array([0xFC01], np.uint16).view(np.float16), "f16", "f32", "a2a3")
    assert list(ref.to_bits(out)) == [0xFFC02000]
    e4 = np.array([0x7F, 0xFF], np.uint8).view(ml_dtypes.float8_e4m3fn)
    assert list(ref.to_bits(ref.cast(e4, "e4m3", "f32", "a5")[0])) == [0x7FC00000, 0xFFC00000]


def test_cvt_int_to_float():
    # a2a3 i32 -> f16: nearest even, clamp to +-65504, mode and saturation ignored
    for mode in ("CAST_NONE", "CAST_FLOOR", "CAST_CEIL", "CAST_TRUNC"):
        assert cv([70000, -70000, 2049, 2051, 65520], "i32", "f16", "a2a3", mode, "OFF") == [
            65504, -65504, 2048, 2052, 65504]
    assert cv([2049], "i16", "f16", "a2a3") == [2048]
    assert cv([2049], "i16", "f16", "a5", "CAST_CEIL") == [2050]
    assert cv([2049], "i16", "f16", "a5", "CAST_ROUND") == [2050]
    assert cv([-2049], "i16", "f16", "a5", "CAST_FLOOR") == [-2050]
    assert cv([2 ** 24 + 1], "i32", "f32", "a5", "CAST_RINT") == [2 ** 24]
    assert cv([2 ** 24 + 1], "i32", "f32", "a5", "CAST_CEIL") == [2 ** 24 + 2]
    assert cv([2 ** 63 - 1], "i64", "f32", "a2a3") == [2.0 ** 63]
    assert cv([2 ** 63 - 1], "i64", "f32", "a2a3", "CAST_FLOOR") == [2.0 ** 63 - 2.0 ** 39]
    assert cv([-128, 255], "i16", "f32", "a5") == [-128.0, 255.0]
    u8 = np.arange(256, dtype=np.uint8)
    assert (ref.cast(u8, "u8", "f16", "a5")[0] == u8.astype(np.float16)).all()
    i8 = u8.view(np.int8)
    assert (ref.cast(i8, "i8", "f16", "a2a3")[0] == i8.astype(np.float16)).all()


def test_cvt_f32_to_f32_integral():
    big = float(np.float32(1e30))
    x = [2.5, -2.5, big, -0.3, 0.7, 8388607.5]
    assert cv(x, "f32", "f32", "a2a3") == [2.0, -2.0, big, -0.0, 1.0, 8388608.0]
    assert cv(x, "f32", "f32", "a5", "CAST_ROUND") == [3.0, -3.0, big, -0.0, 1.0, 8388608.0]
    assert cv(x, "f32", "f32", "a5", "CAST_FLOOR") == [2.0, -3.0, big, -1.0, 0.0, 8388607.0]
    assert cv(x, "f32", "f32", "a5", "CAST_CEIL") == [3.0, -2.0, big, -0.0, 1.0, 8388608.0]
    assert cv(x, "f32", "f32", "a5", "CAST_TRUNC") == [2.0, -2.0, big, -0.0, 0.0, 8388607.0]
    assert cbits([-0.3], "f32", "f32", "a5") == [0x80000000]
    assert cv([np.inf], "f32", "f32", "a5") == [np.inf]       # f32 never saturates
    assert cbits([np.nan], "f32", "f32", "a5") == [0x7FC00000]


def test_cvt_fp8():
    # a5 f32 -> fp8 always saturates: an explicit satMode is ignored (no control bit)
    for sat in (None, "ON", "OFF"):
        assert cv([470, 1e6, -np.inf], "f32", "e4m3", "a5", sat=sat) == [448, 448, -448]
        assert cbits([470, -1e6, np.inf, np.nan], "f32", "e4m3", "a5", sat=sat) == [
            0x7E, 0xFE, 0x7E, 0x00]
        assert cv([1e6, -np.inf], "f32", "e5m2", "a5", sat=sat) == [57344, -57344]
        assert cbits([np.nan], "f32", "e5m2", "a5", sat=sat) == [0x00]
        for d in ("e4m3", "e5m2"):
            assert ref.cast_rule("f32", d, "a5", "CAST_TRUNC", sat) == ("RINT", True)
    # 61440 is the midpoint between e5m2's max 57344 and the next (absent) value 65536
    assert cv([61439, 61440], "f32", "e5m2", "a5", sat="OFF") == [57344, 57344]
    # fp8 always rounds to nearest even, whatever the mode (except CAST_ODD: untouched)
    for mode in ("CAST_FLOOR", "CAST_CEIL", "CAST_TRUNC", "CAST_ROUND"):
        assert cv([0.3, 17.0], "f32", "e4m3", "a5", mode) == [
            float(ml_dtypes.float8_e4m3fn(0.3)), 16.0]
    for dt in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
        allv = np.arange(256, dtype=np.uint8).view(dt)
        ok = ~np.isnan(allv.astype(np.float32))
        got = ref.cast(allv, dt, "f32", "a5")[0]
        assert (ref.to_bits(got[ok]) == ref.to_bits(allv[ok].astype(np.float32))).all()
        # and back: every finite fp8 value converts to itself (inf saturates to max finite)
        fin = np.isfinite(allv.astype(np.float32))
        back = ref.cast(got[fin], "f32", dt, "a5", sat="OFF")[0]
        assert (ref.to_bits(back) == ref.to_bits(allv[fin])).all()


def test_cvt_exact_widenings():
    h = np.arange(0x10000, dtype=np.uint32).astype(np.uint16).view(np.float16)
    ok = ~np.isnan(h)
    assert (ref.to_bits(ref.cast(h[ok], "f16", "f32", "a2a3")[0])
            == ref.to_bits(h[ok].astype(np.float32))).all()
    b = np.arange(0x10000, dtype=np.uint32).astype(np.uint16).view(ml_dtypes.bfloat16)
    ok = ~np.isnan(b.astype(np.float32))
    assert (ref.to_bits(ref.cast(b[ok], "bf16", "f32", "a5")[0])
            == ref.to_bits(b[ok].astype(np.float32))).all()


# --- property tests: independent rounding by enumerating the representable neighbours --------
def _finite_values(dt):
    """All finite values of a 16-bit float type, sorted, as float64 (for searchsorted)."""
    with np.errstate(all="ignore"):
        allv = np.arange(0x10000, dtype=np.uint32).astype(np.uint16).view(dt).astype(np.float64)
    allv = allv[np.isfinite(allv)]
    return np.unique(allv)


_GRIDS = {}


def _neighbours(x, dt):
    if dt not in _GRIDS:
        _GRIDS[dt] = _finite_values(dt)
    g = _GRIDS[dt]
    i = np.searchsorted(g, x)
    lo = g[i] if i < len(g) and g[i] == x else (g[i - 1] if i > 0 else -np.inf)
    hi = g[i] if i < len(g) else np.inf
    return lo, hi


def _is_odd(v, dt):
    return int(np.array([v]).astype(dt).view(np.uint16)[0]) & 1


@settings(max_examples=400, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=32),
       st.sampled_from(["float16", "bfloat16"]))
def test_cvt_f32_to_narrow_directed_rounding(x, dst):
    dt = ref.np_dtype(dst)
    fmax = float(np.finfo(np.float16).max) if dst == "float16" else \
        float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    x = float(np.float32(x))
    lo, hi = _neighbours(x, dt)
    modes = ["CAST_RINT", "CAST_ROUND", "CAST_FLOOR", "CAST_CEIL", "CAST_TRUNC"]
    if dst == "float16":
        modes.append("CAST_ODD")                 # CAST_ODD exists for f32 -> f16 only
    else:
        _, untouched = ref.cast(np.array([x], np.float32), "f32", dst, "a5", "CAST_ODD", "OFF")
        assert untouched.all()
        assert cv([x], "f32", dst, "a2a3", "CAST_ODD") == cv([x], "f32", dst, "a2a3", "CAST_RINT")
    got = {m: cv([x], "f32", dst, "a5", m, "OFF")[0] for m in modes}
    odd = ("CAST_ODD",) if "CAST_ODD" in got else ()
    if abs(x) <= fmax:
        # results are representable: one of the two neighbouring values of the format
        assert got["CAST_FLOOR"] == lo and got["CAST_CEIL"] == hi
        assert got["CAST_FLOOR"] <= x <= got["CAST_CEIL"]
        assert got["CAST_TRUNC"] == (lo if x >= 0 else hi)
        assert abs(got["CAST_TRUNC"]) <= abs(x)
        for m in ("CAST_RINT", "CAST_ROUND") + odd:
            assert got[m] in (lo, hi)
        if lo != hi:
            if odd:
                assert _is_odd(got["CAST_ODD"], dt)
            d_lo, d_hi = x - lo, hi - x
            if d_lo != d_hi:
                near = lo if d_lo < d_hi else hi
                assert got["CAST_RINT"] == near and got["CAST_ROUND"] == near
            else:
                assert got["CAST_ROUND"] == (hi if x > 0 else lo)
                assert not _is_odd(got["CAST_RINT"], dt)
        else:
            assert all(v == x for v in got.values())
    else:
        for m in ("CAST_TRUNC",) + odd:
            assert got[m] == np.copysign(fmax, x)
        assert got["CAST_FLOOR" if x > 0 else "CAST_CEIL"] == np.copysign(fmax, x)
        assert got["CAST_CEIL" if x > 0 else "CAST_FLOOR"] == np.copysign(np.inf, x)
    # RINT equals numpy's / ml_dtypes' nearest-even conversion (including overflow to inf)
    with np.errstate(all="ignore"):
        ref_rne = float(np.array([x], np.float32).astype(dt)[0])
    assert got["CAST_RINT"] == ref_rne
    # saturation ON (the default) clamps, on both SoCs
    for soc in ("a2a3", "a5"):
        assert cv([x], "f32", dst, soc, "CAST_RINT")[0] == np.clip(ref_rne, -fmax, fmax)


@settings(max_examples=400, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=32),
       st.sampled_from(["int32", "int16", "int64"]), st.sampled_from(["ON", "OFF"]))
def test_cvt_f32_to_int_against_numpy(x, dst, sat):
    x = float(np.float32(x))
    info = np.iinfo(dst)
    exact = {"CAST_RINT": np.rint(x), "CAST_FLOOR": np.floor(x), "CAST_CEIL": np.ceil(x),
             "CAST_TRUNC": np.trunc(x),
             "CAST_ROUND": np.floor(x + 0.5) if x >= 0 else np.ceil(x - 0.5)}
    for mode, e in exact.items():
        e = int(e)
        if sat == "ON":
            e = min(max(e, int(info.min)), int(info.max))
        else:
            w = np.dtype(dst).itemsize * 8
            e = (e + (1 << (w - 1))) % (1 << w) - (1 << (w - 1))
        assert cv([x], "f32", dst, "a5", mode, sat) == [e], (mode, x)


@settings(max_examples=300, deadline=None)
@given(st.integers(-2 ** 31, 2 ** 31 - 1))
def test_cvt_i32_to_f32_directed(n):
    f32 = np.float32
    rint = cv([n], "i32", "f32", "a5", "CAST_RINT")[0]
    assert rint == float(np.array([n], np.int32).astype(f32)[0])
    fl = cv([n], "i32", "f32", "a5", "CAST_FLOOR")[0]
    ce = cv([n], "i32", "f32", "a5", "CAST_CEIL")[0]
    assert fl <= n <= ce
    assert float(np.nextafter(f32(fl), f32(np.inf))) > n and float(np.nextafter(f32(ce),
                                                                              f32(-np.inf))) < n \
        if fl != ce else fl == n
    tr = cv([n], "i32", "f32", "a5", "CAST_TRUNC")[0]
    assert tr == (fl if n >= 0 else ce)
