"""The simulator's vectorised paths give the element-by-element results, bit for bit.

The elementwise loops run over row slices and read an in-place operand through dst's own slice
(lib/elementwise.py); f16 widens and narrows through the CPU's F16C with NaNs rebuilt
(lib/floatbits.py); TEXP on f32 runs a polynomial and redoes near-midpoint elements with libm
(units/exp_ops.py). Each is compared here with numpy or Python's math module, which share no code
with them, over random bit patterns (NaN, inf and subnormals included) and every aliasing form.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto
from pypto import pto
from pypto.dtypes import for_host_array

R, C = 4, 64
VALID = (3, 50)            # a partial valid region: the loops' row length is not the tile's


def _after(src, dst) -> None:
    """Order pipe dst after pipe src (traced inside the kernels below)."""
    pto.set_flag(src, dst, pto.EVENT_ID0)
    pto.wait_flag(src, dst, pto.EVENT_ID0)


def _kernel(form: str, dt):
    @pypto.kernel
    def k(x, y, z):
        a = pto.Tile(pto.Vec, dt, (R, C), valid=VALID)
        b = pto.Tile(pto.Vec, dt, (R, C), valid=VALID)
        pto.TLOAD(a, x[0:VALID[0], 0:VALID[1]])
        pto.TLOAD(b, y[0:VALID[0], 0:VALID[1]])
        _after(pto.PIPE_MTE2, pto.PIPE_V)
        out = a
        if form == "a=a+b":
            pto.TADD(a, a, b)
        elif form == "b=a+b":
            pto.TADD(b, a, b)
            out = b
        elif form == "a=a+a":
            pto.TADD(a, a, a)
        elif form == "a=a*3":
            pto.TMULS(a, a, 3.0 if dt.is_float else 3)
        elif form == "a=|a|":
            pto.TABS(a, a)
        elif form == "b=exp(a)":
            pto.TEXP(b, a)
            out = b
        elif form == "a=exp(a)":
            pto.TEXP(a, a)
        elif form == "c=a+b":
            c = pto.Tile(pto.Vec, dt, (R, C), valid=VALID)
            pto.TADD(c, a, b)
            out = c
        _after(pto.PIPE_V, pto.PIPE_MTE3)
        pto.TSTORE(z[0:VALID[0], 0:VALID[1]], out)
    k.__name__ = f"fast_{form}"
    return k


_KERNELS: dict = {}


def run(form: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    dt = for_host_array(x)
    key = (form, dt.name)
    if key not in _KERNELS:
        _KERNELS[key] = _kernel(form, dt)
    z = pypto.Tensor(np.zeros_like(x))
    _KERNELS[key](pypto.Tensor(x), pypto.Tensor(y), z)
    return z.numpy()


def _reference(form: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """numpy's (f16: computed in f32, one rounding, as numpy's own f16 add) over the valid region."""
    wide = np.float32 if x.dtype == np.float16 else x.dtype.type
    a, b = x.astype(wide), y.astype(wide)
    with np.errstate(all="ignore"):
        v = {"a=a+b": lambda: a + b, "b=a+b": lambda: a + b, "a=a+a": lambda: a + a,
             "c=a+b": lambda: a + b,
             "a=a*3": lambda: a * wide(3), "a=|a|": lambda: np.abs(a)}[form]()
    return v.astype(x.dtype)


def _bits(dtype, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = np.dtype(dtype).itemsize * 8
    raw = rng.integers(0, 1 << n, (R, C), dtype=np.uint64).astype(f"u{n // 8}")
    return raw.view(dtype) if np.dtype(dtype).kind == "f" else raw.view(f"i{n // 8}")


@pytest.fixture(scope="module", autouse=True)
def _session():
    pypto.finalize()
    pypto.init(backend="sim")
    yield
    pypto.finalize()


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1),
       form=st.sampled_from(["a=a+b", "b=a+b", "a=a+a", "c=a+b", "a=a*3", "a=|a|"]),
       dtype=st.sampled_from([np.float16, np.float32, np.int32, np.int16]))
def test_elementwise_aliasing_forms(seed, form, dtype):
    x, y = _bits(dtype, seed), _bits(dtype, seed + 1)
    if np.dtype(dtype).kind == "i" and form == "a=|a|":
        form = "a=a+a"                                 # TABS takes float tiles only
    got = run(form, x, y)
    want = _reference(form, x, y)
    vr, vc = VALID
    g, w = got[:vr, :vc], want[:vr, :vc]
    if np.dtype(dtype).kind == "f":
        # bits equal, or both NaN (the NaN a float op produces is the FPU's choice of payload)
        same = (g.view(f"u{g.itemsize}") == w.view(f"u{w.itemsize}")) | (np.isnan(g) & np.isnan(w))
        assert same.all(), (form, dtype, np.argwhere(~same)[:3])
    else:
        assert np.array_equal(g, w)
    assert not got[vr:, :].any() and not got[:, vc:].any()     # outside valid: untouched zeros


# dst's own tile as a source is known when the kernel is traced: the call takes the template's
# in-place instance, one loop (lib/elementwise.py "alias"); other tiles keep the run-time tests
INSTANCE = {"a=a+b": "binary_add_native_nd_ina", "b=a+b": "binary_add_native_nd_inb",
            "a=a+a": "binary_add_native_nd_ina", "c=a+b": "binary_add_native_nd_",
            "a=a*3": "scalar_mul_native_nd_ina", "a=|a|": "unary_fabs_native_nd_ina"}


@pytest.mark.parametrize("form", sorted(INSTANCE))
def test_elementwise_calls_the_instance_for_its_aliasing(form):
    dtype = np.float32
    run(form, _bits(dtype, 1), _bits(dtype, 2))
    k = _KERNELS[(form, "float32")]
    src = next(p for ir in k._traces.values() for p in ir.programs.values()).artifact.gen.source
    assert f"pypto_ew_{INSTANCE[form]}" in src, src


def _libm_exp_f32(x: np.ndarray) -> np.ndarray:
    def one(v: float) -> float:
        if math.isnan(v):
            return v
        try:
            return math.exp(v)
        except OverflowError:
            return math.inf
    return np.array([one(float(v)) for v in x.ravel()], np.float64).astype(np.float32).reshape(x.shape)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), form=st.sampled_from(["b=exp(a)", "a=exp(a)"]),
       spread=st.sampled_from([1.0, 30.0, 100.0]))
def test_exp_f32_equals_libm(seed, form, spread):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((R, C)) * spread).astype(np.float32)
    x.ravel()[:8] = _bits(np.float32, seed).ravel()[:8]           # NaN, inf, huge, tiny
    got = run(form, x, np.zeros_like(x))[:VALID[0], :VALID[1]]
    want = _libm_exp_f32(x)[:VALID[0], :VALID[1]]
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)) or \
        np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(got[~np.isnan(got)], want[~np.isnan(want)])


@pytest.mark.parametrize("step", [pytest.param(1, marks=pytest.mark.slow), 61])
def test_exp_fast_path_over_the_f32_range(step):
    """TEXP's f32 loop keeps exp_fast's value unless exp_near says it may round otherwise; the
    kept value rounds to libm's exp rounded to f32 on every f32 bit pattern (full tier; without
    the near-midpoint redo some differ) and on every 61st (quick tier)."""
    from numba import njit

    from pypto.backends.sim.lib.floatbits import bits_f32, f32_bits
    from pypto.units.exp_ops import exp_fast, exp_near

    @njit
    def differing(lo, hi, step):
        bad = 0
        for u in range(lo, hi, step):
            x = bits_f32(np.int32(np.uint32(u)))
            v = exp_fast(x)
            keep = math.exp(np.float64(x)) if exp_near(x, v) else v
            if f32_bits(np.float32(keep)) != f32_bits(np.float32(math.exp(np.float64(x)))):
                bad += 1
        return bad
    assert differing(0, 1 << 32, step) == 0


RR = 8                     # a column tile of f32 needs 8 rows (32 bytes)


def _rowred_kernel(name: str):
    @pypto.kernel
    def k(x, y):
        t = pto.Tile(pto.Vec, pto.float32, (RR, C))
        tmp = pto.Tile(pto.Vec, pto.float32, (RR, C))
        m = pto.Tile(pto.Vec, pto.float32, (RR, 1), blayout=pto.ColMajor)
        pto.TLOAD(t, x)
        _after(pto.PIPE_MTE2, pto.PIPE_V)
        getattr(pto, name)(m, t, tmp)
        _after(pto.PIPE_V, pto.PIPE_MTE3)
        pto.TSTORE(y, m)
    return k


@pytest.mark.parametrize("soc", ["a2a3", "a5"])
@pytest.mark.parametrize("name", ["TROWMAX", "TROWMIN"])
def test_row_max_min_keep_the_earlier_zero(soc, name):
    """The vectorised max/min redoes rows whose result is a zero in order: max/min(+0, -0) keeps
    the earlier element (and a5 starts from -/+ max finite)."""
    pypto.finalize()
    pypto.init(backend="sim", soc=soc)
    rng = np.random.default_rng(7)
    sign = -1.0 if name == "TROWMAX" else 1.0
    x = (sign * (np.abs(rng.standard_normal((RR, C))) + 1.0)).astype(np.float32)   # all < 0 (max) / > 0 (min)
    for r in range(RR):                      # then zeros of random signs, the first one's sign varying
        cols = rng.choice(C, 5, replace=False)
        x[r, cols] = np.where(rng.random(5) < 0.5, 0.0, -0.0)
        x[r, cols[np.argmin(cols)]] = -0.0 if r % 2 else 0.0
    y = pypto.zeros((RR, 1), pypto.float32)
    _rowred_kernel(name)(pypto.Tensor(x), y)
    keep = (lambda acc, v: acc if acc >= v else v) if name == "TROWMAX" else (lambda acc, v: acc if acc <= v else v)
    want = []
    for row in x:
        acc = np.float32(-3.4028235e38 if name == "TROWMAX" else 3.4028235e38) if soc == "a5" else row[0]
        for v in (row if soc == "a5" else row[1:]):
            acc = keep(acc, v)
        want.append(acc)
    got = y.numpy().ravel()
    assert np.array_equal(np.signbit(got), np.signbit(np.array(want, np.float32))) and not got.any()
    pypto.finalize()
    pypto.init(backend="sim")


# -- TROWEXPAND<op> on f32 rows: one vectorised loop per op, in place or not -------------------
ER, EC, EVALID = 8, 64, (6, 50)


def _rowexpand_kernel(op: str, in_place: bool):
    @pypto.kernel
    def k(x, v, z):
        a = pto.Tile(pto.Vec, pto.float32, (ER, EC), valid=EVALID)
        d = pto.Tile(pto.Vec, pto.float32, (ER, EC), valid=EVALID)
        col = pto.Tile(pto.Vec, pto.float32, (ER, 1), blayout=pto.ColMajor, valid=(EVALID[0], 1))
        pto.TLOAD(a, x[0:EVALID[0], 0:EVALID[1]])
        pto.TLOAD(col, v[0:EVALID[0], 0:1])
        _after(pto.PIPE_MTE2, pto.PIPE_V)
        out = a if in_place else d
        getattr(pto, f"TROWEXPAND{op}")(out, a, col)
        _after(pto.PIPE_V, pto.PIPE_MTE3)
        pto.TSTORE(z[0:EVALID[0], 0:EVALID[1]], out)
    k.__name__ = f"rowexpand_{op}_{'inplace' if in_place else 'apart'}"
    return k


_EXPAND: dict = {}


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), op=st.sampled_from(["ADD", "SUB", "MUL", "DIV", "MAX", "MIN"]),
       in_place=st.booleans())
def test_rowexpand_f32_rows_equal_the_reference(seed, op, in_place):
    from conformance import ref_reduce
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 1 << 32, (EVALID[0], EVALID[1] + 1), dtype=np.uint64).astype(np.uint32)
    x, v = raw[:, :EVALID[1]].view(np.float32).copy(), raw[:, EVALID[1]:].view(np.float32).copy()
    key = (op, in_place)
    if key not in _EXPAND:
        _EXPAND[key] = _rowexpand_kernel(op, in_place)
    z = pypto.Tensor(np.zeros_like(x))
    _EXPAND[key](pypto.Tensor(x), pypto.Tensor(v), z)
    want, loose = ref_reduce.rowexpand_op(op.lower(), x, v, *EVALID, with_loose=True)
    got = z.numpy()
    assert np.array_equal(np.isnan(got[loose]), np.isnan(want[loose]))
    np.testing.assert_array_equal(got[~loose].view(np.uint32), want[~loose].view(np.uint32))
