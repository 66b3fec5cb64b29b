"""Bit-exactness of pypto.backends.sim.lib.floatbits against numpy / ml_dtypes.

The references are numpy's float16 casts and ml_dtypes.bfloat16 casts, both
independent of the code under test.  All comparisons are on raw bit patterns
(NaN payloads and signed zeros included).
"""

import importlib
import importlib.util
import os
import pathlib
import subprocess
import sys
import textwrap

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = ml_dtypes.bfloat16

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODFILE = ROOT / "pypto" / "backends" / "sim" / "lib" / "floatbits.py"
MODNAME = "pypto.backends.sim.lib.floatbits"


def _load():
    # The package is written concurrently; fall back to loading the file
    # directly if the package import is not usable yet.
    try:
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        return importlib.import_module(MODNAME)
    except Exception:
        spec = importlib.util.spec_from_file_location("pypto_sim_floatbits", MODFILE)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        return mod


fb = _load()
f16_to_f32 = fb.f16_to_f32
f32_to_f16 = fb.f32_to_f16
f64_to_f16 = fb.f64_to_f16
bf16_to_f32 = fb.bf16_to_f32
f32_to_bf16 = fb.f32_to_bf16
f64_to_bf16 = fb.f64_to_bf16
f64_to_f32 = fb.f64_to_f32
bits_f32 = fb.bits_f32


# ---------------------------------------------------------------------------
# njit array-mapping wrappers (exercise the functions from inside njit loops)
# ---------------------------------------------------------------------------

def _mapper(fn, out_dtype):
    """An njit loop applying the scalar conversion fn to every element of a 1-D array."""
    @njit
    def apply(a):
        out = np.empty(a.size, out_dtype)
        for i in range(a.size):
            out[i] = fn(a[i])
        return out
    return apply


map_f16_to_f32 = _mapper(f16_to_f32, np.float32)
map_f32_to_f16 = _mapper(f32_to_f16, np.uint16)
map_f64_to_f16 = _mapper(f64_to_f16, np.uint16)
map_bf16_to_f32 = _mapper(bf16_to_f32, np.float32)
map_f32_to_bf16 = _mapper(f32_to_bf16, np.uint16)
map_f64_to_bf16 = _mapper(f64_to_bf16, np.uint16)
map_f64_to_f32 = _mapper(f64_to_f32, np.float32)


@njit
def range_f32_to_both(start, n, out16, outbf):
    for i in range(n):
        x = bits_f32(np.uint32(start + i))
        out16[i] = f32_to_f16(x)
        outbf[i] = f32_to_bf16(x)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

ALL16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def f32_from_bits(b):
    return np.asarray(b, dtype=np.uint64).astype(np.uint32).view(np.float32)


def f64_from_bits(b):
    return np.asarray(b, dtype=np.uint64).view(np.float64)


def ref_f32_to_f16(x):
    with np.errstate(all="ignore"):
        return np.asarray(x, np.float32).astype(np.float16).view(np.uint16)


def ref_f64_to_f16(x):
    with np.errstate(all="ignore"):
        return np.asarray(x, np.float64).astype(np.float16).view(np.uint16)


def ref_f32_to_bf16(x):
    """ml_dtypes' rounding; NaNs keep sign and top payload bits, quieted (hardware behaviour;
    ml_dtypes canonicalises NaNs to 0x7fc0)."""
    x = np.asarray(x, np.float32)
    with np.errstate(all="ignore"):
        r = x.astype(BF16).view(np.uint16).copy()
    nan = np.isnan(x)
    r[nan] = ((x.view(np.uint32)[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def _bf16_value(bits: int) -> Fraction:
    """Exact value of a finite bf16 bit pattern; inf counts as 2**128 (IEEE overflow rule)."""
    if bits & 0x7FFF == 0x7F80:
        v = Fraction(2) ** 128
    else:
        v = Fraction(float(np.array([bits & 0x7FFF], np.uint16).view(BF16)[0]))
    return -v if bits & 0x8000 else v


def ref_f64_to_bf16(x):
    """Correctly rounded float64 -> bfloat16 (one rounding, ties to even), in exact arithmetic."""
    x = np.asarray(x, np.float64)
    out = np.empty(x.shape, np.uint16)
    with np.errstate(all="ignore"):
        guess = x.astype(BF16).view(np.uint16)
    for i, v in enumerate(x):
        db = int(x[i:i + 1].view(np.uint64)[0])
        if v != v:
            out[i] = ((db >> 48) & 0x8000) | 0x7FC0 | ((db >> 45) & 0x7F)
            continue
        if np.isinf(v):
            out[i] = 0xFF80 if v < 0 else 0x7F80
            continue
        g = int(guess[i])
        cands = [c for c in (g - 1, g, g + 1) if 0 <= c <= 0xFFFF and (c & 0x7FFF) <= 0x7F80
                 and (c & 0x8000) == (g & 0x8000)]
        if v == 0:
            out[i] = g
            continue
        exact = Fraction(float(v))
        best = min(cands, key=lambda c: (abs(exact - _bf16_value(c)), c & 1))
        out[i] = best
    return out


def assert_bits_equal(got, ref, inputs):
    got = np.asarray(got)
    ref = np.asarray(ref)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    bad = np.nonzero(got != ref)[0]
    if bad.size:
        ib = np.asarray(inputs)
        ib = ib.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[ib.dtype.itemsize])
        lines = [f"in=0x{int(ib[i]):x} got=0x{int(got[i]):x} ref=0x{int(ref[i]):x}"
                 for i in bad[:10]]
        pytest.fail(f"{bad.size} mismatches of {got.size}:\n" + "\n".join(lines))


def check_f32_to_f16(x):
    x = np.ascontiguousarray(x, np.float32)
    assert_bits_equal(map_f32_to_f16(x), ref_f32_to_f16(x), x)


def check_f64_to_f16(x):
    x = np.ascontiguousarray(x, np.float64)
    assert_bits_equal(map_f64_to_f16(x), ref_f64_to_f16(x), x)


def check_f32_to_bf16(x):
    x = np.ascontiguousarray(x, np.float32)
    assert_bits_equal(map_f32_to_bf16(x), ref_f32_to_bf16(x), x)


def check_f64_to_bf16(x):
    x = np.ascontiguousarray(x, np.float64)
    assert_bits_equal(map_f64_to_bf16(x), ref_f64_to_bf16(x), x)


def ulp_neighbours32(x, k=4):
    """float32 values whose bit patterns are within +-k of x's (both signs)."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.int64)
    b = b[:, None] + np.arange(-k, k + 1)[None, :]
    b = (b & 0x7FFFFFFF).ravel()
    return np.concatenate([b, b | 0x80000000]).astype(np.uint32).view(np.float32)


def half_midpoints(view_dtype):
    """Exact float64 midpoints between adjacent finite 16-bit values (and
    between the largest finite one and the first power of two beyond it),
    both signs."""
    mags = ALL16[:0x7C00] if view_dtype is np.float16 else ALL16[:0x7F80]
    lo = mags.view(view_dtype).astype(np.float64)
    nxt = (mags.astype(np.uint32) + 1).astype(np.uint16)
    hi = nxt.view(view_dtype).astype(np.float64)
    top = 65536.0 if view_dtype is np.float16 else 2.0 ** 128
    hi[np.isinf(hi)] = top
    mid = (lo + hi) / 2
    return np.concatenate([mid, -mid])


# ---------------------------------------------------------------------------
# float16
# ---------------------------------------------------------------------------

def test_f16_to_f32_all_patterns():
    got = map_f16_to_f32(ALL16).view(np.uint32)
    ref = ALL16.view(np.float16).astype(np.float32).view(np.uint32)
    assert_bits_equal(got, ref, ALL16)


def test_f32_to_f16_f16_values_plus_minus_ulps():
    finite = ALL16.view(np.float16).astype(np.float32)
    check_f32_to_f16(ulp_neighbours32(finite, k=4))


def test_f32_to_f16_roundtrip_is_identity_for_non_nan():
    h = ALL16[~np.isnan(ALL16.view(np.float16))]
    assert_bits_equal(map_f32_to_f16(map_f16_to_f32(h)), h, h)


def test_f32_to_f16_midpoints():
    mid64 = half_midpoints(np.float16)
    mid = mid64.astype(np.float32)
    assert np.array_equal(mid.astype(np.float64), mid64)  # the cast is exact
    check_f32_to_f16(mid)
    check_f32_to_f16(ulp_neighbours32(mid, k=2))


def test_f32_to_f16_subnormal_range():
    rng = np.random.default_rng(1)
    # everything below the smallest normal float16 2**-14 (bits 0x38800000)
    b = rng.integers(0, 0x38800000, 1 << 20, dtype=np.int64)
    # dense around the flush-to-zero threshold 2**-25 and the 2**-24 boundary
    b = np.concatenate([b, np.arange(0x32FF0000, 0x33010000),
                        np.arange(0x337FF000, 0x33801000),
                        np.arange(0x387FF000, 0x38801000),
                        np.arange(0, 4096),                 # float32 subnormals
                        rng.integers(0, 0x00800000, 1 << 16)])
    b = np.concatenate([b, b | 0x80000000])
    check_f32_to_f16(f32_from_bits(b))
    # every float32 value that is an exact float16 subnormal, and their midpoints
    k = np.arange(0, 1 << 11, dtype=np.float64)
    check_f32_to_f16(np.concatenate([k, k + 0.5]) * 2.0 ** -24)


def test_f32_to_f16_overflow_boundary():
    v = np.array([65504.0, 65505.0, 65519.0, 65519.996, 65520.0, 65521.0,
                  65535.0, 65536.0, 1e5, 3.4028235e38, np.inf], np.float32)
    with np.errstate(all="ignore"):
        v = np.concatenate([v, np.nextafter(v, np.float32(0)), np.nextafter(v, np.float32(np.inf))])
    v = np.concatenate([v, -v])
    check_f32_to_f16(v)
    assert map_f32_to_f16(np.array([65519.996], np.float32))[0] == 0x7BFF
    assert map_f32_to_f16(np.array([65520.0], np.float32))[0] == 0x7C00
    assert map_f32_to_f16(np.array([-65520.0], np.float32))[0] == 0xFC00


def test_f32_to_f16_inf_and_nan_payloads():
    # every inf / NaN float32 bit pattern (2 * 2**23 of them)
    sig = np.arange(1 << 23, dtype=np.uint32)
    b = np.concatenate([0x7F800000 | sig, 0xFF800000 | sig])
    x = b.view(np.float32)
    check_f32_to_f16(x)
    got = map_f32_to_f16(x).view(np.float16)
    assert np.isnan(got[1:1 << 23]).all() and np.isnan(got[(1 << 23) + 1:]).all()
    assert np.signbit(got[1 << 23:]).all() and not np.signbit(got[:1 << 23]).any()


def test_f32_to_f16_random_bits():
    rng = np.random.default_rng(2)
    check_f32_to_f16(f32_from_bits(rng.integers(0, 1 << 32, 10 ** 6, dtype=np.uint64)))


def test_f32_to_f16_special_values():
    v = np.array([0.0, -0.0, 1.0, -1.0, 0.1, 1 / 3, np.pi, 2.0 ** -24, 2.0 ** -25,
                  2.0 ** -26, 2.0 ** -14, 1.5 * 2.0 ** -25], np.float32)
    check_f32_to_f16(v)


@settings(max_examples=500, deadline=None)
@given(st.integers(0, (1 << 32) - 1))
def test_f32_to_f16_hypothesis_bits(b):
    check_f32_to_f16(f32_from_bits([b]))


@settings(max_examples=500, deadline=None)
@given(st.floats(width=32, allow_nan=True, allow_infinity=True))
def test_f32_to_f16_hypothesis_floats(x):
    check_f32_to_f16(np.array([x], np.float32))


def test_f64_to_f16_random_doubles():
    rng = np.random.default_rng(3)
    check_f64_to_f16(f64_from_bits(rng.integers(0, 1 << 64, 10 ** 6, dtype=np.uint64)))
    check_f64_to_f16(rng.uniform(-70000.0, 70000.0, 10 ** 6))
    check_f64_to_f16(rng.standard_normal(10 ** 6) * 2.0 ** rng.integers(-30, 20, 10 ** 6))
    # every exponent that matters, random significands
    e = rng.integers(0x3C0, 0x420, 10 ** 6, dtype=np.uint64)
    s = rng.integers(0, 1 << 52, 10 ** 6, dtype=np.uint64)
    sgn = rng.integers(0, 2, 10 ** 6, dtype=np.uint64) << np.uint64(63)
    check_f64_to_f16(f64_from_bits(sgn | (e << np.uint64(52)) | s))


def test_f64_to_f16_midpoints_and_double_ulps():
    mid = half_midpoints(np.float16)
    up = np.nextafter(mid, np.inf)
    dn = np.nextafter(mid, -np.inf)
    check_f64_to_f16(np.concatenate([mid, up, dn]))
    # these are exactly where float64 -> float32 -> float16 would round twice
    bump = np.abs(mid) * 2.0 ** -30
    check_f64_to_f16(np.concatenate([mid + bump, mid - bump]))
    nz = mid != 0
    assert not np.array_equal(ref_f64_to_f16(up[nz]), ref_f32_to_f16(up[nz].astype(np.float32)))


def test_f64_to_f16_no_double_rounding_example():
    x = np.array([1 + 2.0 ** -11 + 2.0 ** -40], np.float64)
    assert map_f64_to_f16(x)[0] == 0x3C01  # float32 first would give 0x3C00
    check_f64_to_f16(x)


def test_f64_to_f16_specials_and_nans():
    v = np.array([0.0, -0.0, np.inf, -np.inf, 65504.0, 65519.999999, 65520.0,
                  1e300, -1e300, 5e-324, 2.0 ** -25, np.nextafter(2.0 ** -25, 1.0),
                  np.nextafter(2.0 ** -25, 0.0), 2.0 ** -24, 1e-8], np.float64)
    check_f64_to_f16(np.concatenate([v, -v]))
    rng = np.random.default_rng(4)
    sig = np.concatenate([np.arange(1, 1 << 12, dtype=np.uint64),           # low bits only
                          np.arange(1, 1 << 10, dtype=np.uint64) << np.uint64(42),
                          rng.integers(1, 1 << 52, 1 << 16, dtype=np.uint64)])
    b = np.concatenate([0x7FF0000000000000 | sig, 0xFFF0000000000000 | sig]).astype(np.uint64)
    x = f64_from_bits(b)
    check_f64_to_f16(x)
    assert np.isnan(map_f64_to_f16(x).view(np.float16)).all()


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_f64_to_f16_hypothesis(x):
    check_f64_to_f16(np.array([x], np.float64))


# ---------------------------------------------------------------------------
# bfloat16
# ---------------------------------------------------------------------------

def test_bf16_to_f32_all_patterns():
    got = map_bf16_to_f32(ALL16).view(np.uint32)
    ref = ALL16.view(BF16).astype(np.float32).view(np.uint32)
    assert_bits_equal(got, ref, ALL16)


def test_f32_to_bf16_bf16_values_plus_minus_ulps():
    finite = ALL16[:0x7F81].view(BF16).astype(np.float32)
    check_f32_to_bf16(ulp_neighbours32(finite, k=4))
    # a wider spread in the 16 bits that get rounded away
    b = finite.view(np.uint32).astype(np.int64)
    off = np.array([0x7FFF, 0x8000, 0x8001, 0x4000, 0xC000, 0xFFFF, -0x8000, -0x7FFF])
    b = ((b[:, None] + off[None, :]) & 0xFFFFFFFF).ravel()
    check_f32_to_bf16(f32_from_bits(b))


def test_f32_to_bf16_midpoints():
    mid64 = half_midpoints(BF16)
    mid = mid64.astype(np.float32)
    fin = np.isfinite(mid)
    assert np.array_equal(mid[fin].astype(np.float64), mid64[fin])
    check_f32_to_bf16(mid)
    check_f32_to_bf16(ulp_neighbours32(mid[fin], k=2))


def test_f32_to_bf16_subnormals_overflow_inf_nan():
    rng = np.random.default_rng(5)
    b = np.concatenate([np.arange(0, 1 << 20), rng.integers(0, 0x00800000, 1 << 18),
                        np.arange(0x7F7F0000, 0x7F800001)])
    b = np.concatenate([b, b | 0x80000000])
    check_f32_to_bf16(f32_from_bits(b))
    sig = np.arange(1 << 23, dtype=np.uint32)
    x = np.concatenate([0x7F800000 | sig, 0xFF800000 | sig]).view(np.float32)
    check_f32_to_bf16(x)


def test_f32_to_bf16_random_bits():
    rng = np.random.default_rng(6)
    check_f32_to_bf16(f32_from_bits(rng.integers(0, 1 << 32, 10 ** 6, dtype=np.uint64)))


@settings(max_examples=500, deadline=None)
@given(st.integers(0, (1 << 32) - 1))
def test_f32_to_bf16_hypothesis_bits(b):
    check_f32_to_bf16(f32_from_bits([b]))


@pytest.mark.parametrize("n", [3000, pytest.param(None, marks=pytest.mark.slow)],
                         ids=["sampled", "every-midpoint"])
def test_f64_to_bf16_random_and_midpoints(n):
    """Against the exact (Fraction) reference: random doubles, and each midpoint between adjacent
    bf16 values with its neighbours. The quick tier samples n midpoints (the reference takes
    27 s for all 65,280 of them and their neighbours); the full tier takes every one."""
    rng = np.random.default_rng(7)
    k = n or 20000
    check_f64_to_bf16(f64_from_bits(rng.integers(0, 1 << 64, k, dtype=np.uint64)))
    check_f64_to_bf16(rng.standard_normal(k) * 2.0 ** rng.integers(-140, 130, k))
    mid = half_midpoints(BF16)
    if n is not None:
        mid = rng.choice(mid, n, replace=False)
    bump = np.abs(mid) * 2.0 ** -30
    check_f64_to_bf16(np.concatenate([mid, np.nextafter(mid, np.inf),
                                      np.nextafter(mid, -np.inf), mid + bump, mid - bump]))
    v = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, 5e-324, 3.4e38, 3.3961e38])
    check_f64_to_bf16(np.concatenate([v, -v]))


def test_f64_to_bf16_rounds_once():
    # Rounding through float32 first would give 0x3F80 (a tie, to even); pypto rounds once.
    # (ml_dtypes before 0.7 converted that way; pypto does not depend on its behaviour.)
    x = np.array([1 + 2.0 ** -8 + 2.0 ** -30], np.float64)
    assert np.float32(x[0]) == np.float32(1 + 2.0 ** -8)          # the double rounding's tie
    assert ref_f64_to_bf16(x)[0] == 0x3F81
    assert map_f64_to_bf16(x)[0] == 0x3F81


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_f64_to_bf16_hypothesis(x):
    check_f64_to_bf16(np.array([x], np.float64))


# ---------------------------------------------------------------------------
# float64 -> float32, scalar use, cache, exhaustive
# ---------------------------------------------------------------------------

def test_f64_to_f32():
    rng = np.random.default_rng(8)
    x = np.concatenate([f64_from_bits(rng.integers(0, 1 << 64, 10 ** 5, dtype=np.uint64)),
                        rng.standard_normal(10 ** 5),
                        np.array([0.0, -0.0, np.inf, -np.inf, 1e300, 5e-324, 3.4028235677973366e38])])
    x = x[~np.isnan(x)]
    with np.errstate(all="ignore"):
        ref = x.astype(np.float32)
    assert_bits_equal(map_f64_to_f32(x).view(np.uint32), ref.view(np.uint32), x)
    assert np.isnan(map_f64_to_f32(np.array([np.nan])))[0]


def test_scalar_calls_from_python():
    assert f32_to_f16(np.float32(1.0)) == 0x3C00
    assert f16_to_f32(np.uint16(0x3C00)) == 1.0
    assert f64_to_f16(1.0) == 0x3C00
    assert f32_to_bf16(np.float32(-2.0)) == 0xC000
    assert bf16_to_f32(np.uint16(0xC000)) == -2.0
    assert f64_to_bf16(0.5) == 0x3F00
    assert f64_to_f32(0.1) == np.float32(0.1)


def test_usable_from_cached_njit(tmp_path):
    """A cache=True caller compiles and is reloaded from numba's cache."""
    src = textwrap.dedent(f"""
        import importlib.util, sys
        import numpy as np
        from numba import njit
        spec = importlib.util.spec_from_file_location("fbmod", {str(MODFILE)!r})
        fb = importlib.util.module_from_spec(spec); sys.modules["fbmod"] = fb
        spec.loader.exec_module(fb)

        @njit(cache=True)
        def roundtrip(a):
            out = np.empty(a.size, np.uint16)
            for i in range(a.size):
                x = fb.f16_to_f32(a[i]) * np.float32(2.0)
                out[i] = fb.f32_to_f16(x) ^ fb.f32_to_bf16(x) ^ fb.f64_to_f16(np.float64(x))
            return out

        r = roundtrip(np.arange(100, dtype=np.uint16))
        print(int(r.sum()), sum(roundtrip.stats.cache_hits.values()))
    """)
    (tmp_path / "user_mod.py").write_text(src)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "nbcache"))
    outs = [subprocess.run([sys.executable, str(tmp_path / "user_mod.py")], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
            for _ in range(2)]
    assert outs[0][0] == outs[1][0]
    assert outs[0][1] == "0" and int(outs[1][1]) >= 1


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("PYPTO_EXHAUSTIVE"),
                    reason="all 2**32 float32 inputs take ~7 min; set PYPTO_EXHAUSTIVE=1")
def test_f32_exhaustive():
    n = 1 << 24
    o16 = np.empty(n, np.uint16)
    obf = np.empty(n, np.uint16)
    for c in range(1 << 8):
        start = c * n
        range_f32_to_both(start, n, o16, obf)
        x = np.arange(start, start + n, dtype=np.uint32).view(np.float32)
        assert_bits_equal(o16, ref_f32_to_f16(x), x)
        assert_bits_equal(obf, ref_f32_to_bf16(x), x)


@pytest.mark.slow
def test_f32_to_f16_every_61st_pattern():
    """f32_to_f16 is the CPU's conversion with NaNs rebuilt; it must equal numpy across the whole
    f32 range: every 61st bit pattern meets every exponent and, 61 being odd, every value of the
    13 bits that rounding drops (the quick tier samples the patterns above)."""
    step = 61 << 22
    for lo in range(0, 1 << 32, step):
        check_f32_to_f16(np.arange(lo, min(lo + step, 1 << 32), 61, dtype=np.uint64).astype(np.uint32).view(np.float32))


def test_integer_fallbacks_agree_with_numpy():
    """The integer-arithmetic conversions serve CPUs without F16C; they are checked here on
    every f16 pattern and on random and special f32 patterns."""
    soft_widen = njit(lambda a: np.array([fb.f16_to_f32_soft(v) for v in a], np.float32))
    h = np.arange(1 << 16, dtype=np.uint16)
    assert np.array_equal(soft_widen(h).view(np.uint32), h.view(np.float16).astype(np.float32).view(np.uint32))
    soft_narrow = njit(lambda a: np.array([fb.f32_to_f16_soft(v) for v in a], np.uint16))
    rng = np.random.default_rng(5)
    x = np.concatenate([f32_from_bits(rng.integers(0, 1 << 32, 10 ** 6, dtype=np.uint64)),
                        h.view(np.float16).astype(np.float32)])
    assert_bits_equal(soft_narrow(x), ref_f32_to_f16(x), x)


def test_standalone_options_match_the_librarys():
    """floatbits spells out lib/jit.py's LIB (it imports nothing of pypto); they must agree."""
    from pypto.backends.sim.lib import floatbits, jit
    assert floatbits._JIT == jit.LIB


def test_f16_widen_run_is_numpys_widening_on_every_bit_pattern():
    """The cube's vector widening of 16 f16 values (any offsets) against numpy's float16 ->
    float32, bit for bit; a NaN comes out quiet (the CPU's conversion), numpy keeps it as is."""
    run = fb.f16_widen_run

    @njit
    def widen(src, skip, shift):
        n = src.size - skip
        out = np.zeros(n + 16, np.float32)
        for k in range(n // 16):
            run(out, shift + 16 * k, src, skip + 16 * k)
        return out[shift:shift + n]

    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    want = bits.view(np.float16).astype(np.float32).view(np.uint32).copy()
    nan = np.isnan(bits.view(np.float16))
    want[nan] |= 0x400000
    for skip, shift in ((0, 0), (5, 3)):       # unaligned loads and stores too
        got = widen(np.concatenate([bits[:skip], bits]), skip, shift).view(np.uint32)
        assert np.array_equal(got, want), np.flatnonzero(got != want)[:5]
