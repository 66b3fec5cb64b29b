"""load_insn("matmul") / load_insn("matmulbias"): the library GEMM over whole GM tensors of any
M, K, N (tails in each of m, k, n: 1, 15, 16, 17, 255, 257), f16 / bf16 / f32 -> f32 and i8 ->
i32, batched, with bias and ReLU, on both SoCs; compared with exact sums (ref_cube.matmul)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pypto

from . import ref_cube as R
from .conftest import slow_if
from .helpers import rng_for
from .test_units import PROPERTY

NP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "i8": np.int8}


def _run(name: str, *ops, **params):
    insn = pypto.load_insn(name, **params)
    for i, x in enumerate(ops):
        insn.set_operand(i, x)
    insn.execute()


def _inputs(rng, dt: str, shape):
    if dt == "i8":
        return rng.integers(-128, 128, shape).astype(np.int8)
    return rng.standard_normal(shape).astype(np.float32).astype(NP[dt])


def _check(got, a, b, integer: bool, bias=None, relu=False):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = np.matmul(a64, b64) if not integer else None
    if integer:
        flat = np.matmul(a.astype(np.int64), b.astype(np.int64))
        want = (((flat + (bias if bias is not None else 0)) + 2 ** 31) % 2 ** 32 - 2 ** 31)
        if relu:
            want = np.maximum(want, 0)
        np.testing.assert_array_equal(got, want.astype(np.int32))
        return
    if bias is not None:
        want = want + bias.astype(np.float64)
    if relu:
        want = np.maximum(want, 0)
    mag = np.matmul(np.abs(a64), np.abs(b64))
    tol = 2 * (a.shape[-1] + 2) * float(np.finfo(np.float32).eps) * mag + 1e-30
    if bias is not None:
        tol = tol + 1e-6 * np.abs(bias.astype(np.float64))
    err = np.abs(got.astype(np.float64) - want)
    assert (err <= tol).all(), f"max error {err.max()}"


def test_tutorial_values(pto_session):
    """The tutorial's 3x2 @ 2x3 float32 matmul."""
    a = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    b = np.array([[7, 8, 9], [10, 11, 12]], np.float32)
    c = np.zeros((3, 3), np.float32)
    _run("matmul", a, b, c)
    np.testing.assert_array_equal(c, [[27, 30, 33], [61, 68, 75], [95, 106, 117]])


SHAPES = [(1, 1, 1), (15, 16, 17), (17, 15, 16), (16, 17, 15), (255, 16, 17), (17, 255, 16),
          (16, 17, 255), (257, 15, 16), (15, 257, 17), (16, 15, 257), (130, 300, 140)]


@pytest.mark.parametrize("soc_", ["a2a3", "a5"])
@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "i8"])
@pytest.mark.parametrize("mkn", SHAPES)
def test_matmul_shapes(pto_init, target, soc_, dt, mkn):
    pto_init(soc=soc_)
    m, k, n = mkn
    rng = rng_for("lib", soc_, dt, mkn)
    a, b = _inputs(rng, dt, (m, k)), _inputs(rng, dt, (k, n))
    c = np.zeros((m, n), np.int32 if dt == "i8" else np.float32)
    _run("matmul", a, b, c)
    _check(c, a, b, dt == "i8")


@given(m=st.integers(1, 300), k=st.integers(1, 600), n=st.integers(1, 300),
       dt=st.sampled_from(["f16", "f32", "i8"]))
@PROPERTY
def test_random_gemms(pto_session, m, k, n, dt):
    rng = rng_for("rand", m, k, n, dt)
    a, b = _inputs(rng, dt, (m, k)), _inputs(rng, dt, (k, n))
    c = np.zeros((m, n), np.int32 if dt == "i8" else np.float32)
    _run("matmul", a, b, c)
    _check(c, a, b, dt == "i8")


@pytest.mark.parametrize("shared_b", [False, True])
def test_batched(pto_session, shared_b):
    rng = rng_for("batched", shared_b)
    a = _inputs(rng, "f16", (3, 40, 70))
    b = _inputs(rng, "f16", (70, 33) if shared_b else (3, 70, 33))
    c = np.zeros((3, 40, 33), np.float32)
    _run("matmul", a, b, c)
    _check(c, a, b, False)


@slow_if(lambda p: p["dt"] != "f16")
@pytest.mark.parametrize("dt", ["f16", "f32", "i8"])
@pytest.mark.parametrize("relu", [False, True])
def test_bias_and_relu_epilogue(pto_session, dt, relu):
    rng = rng_for("bias", dt, relu)
    a, b = _inputs(rng, dt, (70, 90)), _inputs(rng, dt, (90, 150))
    integer = dt == "i8"
    bias = (rng.integers(-5000, 5000, 150).astype(np.int32) if integer else
            rng.standard_normal(150).astype(np.float32))
    c = np.zeros((70, 150), np.int32 if integer else np.float32)
    _run("matmulbias", a, b, bias, c, relu=relu)
    _check(c, a, b, integer, bias=bias, relu=relu)
    d = np.zeros((70, 150), np.int32 if integer else np.float32)
    _run("matmul", a, b, d, relu=relu)
    _check(d, a, b, integer, relu=relu)


def test_f16_result_is_converted_by_the_fixpipe(pto_session):
    rng = rng_for("f16out")
    a, b = _inputs(rng, "f16", (50, 60)), _inputs(rng, "f16", (60, 70))
    c = np.zeros((50, 70), np.float16)
    _run("matmul", a, b, c)
    want = R.fixpipe(R.matmul(a, b, 50, 60, 70).astype(np.float32), "f16")
    assert np.allclose(c.astype(np.float64), want.astype(np.float64), rtol=2 ** -9, atol=1e-3)


@pytest.mark.parametrize("case", ["mixed", "f16acc", "shape", "batch", "bias"])
def test_bad_operands_are_refused_and_leave_c_untouched(pto_session, case):
    a = np.ones((4, 8), np.float16)
    b = np.ones((8, 5), np.float16)
    c = np.full((4, 5), 7.0, np.float32)
    ops = {"mixed": (a, b.astype(np.float32), c), "f16acc": (a, b, c.astype(np.int32)),
           "shape": (a, np.ones((7, 5), np.float16), c),
           "batch": (np.ones((2, 4, 8), np.float16), np.ones((3, 8, 5), np.float16),
                     np.zeros((2, 4, 5), np.float32)),
           "bias": (a, b, np.ones(4, np.float32), c)}[case]
    with pytest.raises(pypto.PtoError) as e:
        _run("matmulbias" if case == "bias" else "matmul", *ops)
    assert e.value.rule and e.value.fix
    before = {"f16acc": 7, "batch": 0}.get(case, 7.0)
    assert (ops[-1] == before).all()
