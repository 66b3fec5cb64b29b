"""Scalar reads of GM inside a kernel: ``x[i, j]`` of a kernel tensor as an instruction's scalar
operand (pto-isa's own tests write ``TADDS(dst, src, src2[0])``), read by the scalar unit.

The expected values come from numpy: the element converted to the tile's type (one rounding),
then the tile-scalar rule of conformance/reference.py. Runs on every backend (compiled and eager
simulator, npu-cpusim, npu)."""
from __future__ import annotations

import numpy as np
import pytest

import pypto
from pypto import errors, pto

from . import reference as ref


@pypto.kernel
def k_adds_gm(x, y, z, i):
    """z = x + y[i, 1] over a 2 x 16 tile (i a runtime index)."""
    a = pto.Tile(pto.Vec, x.dtype, (2, 16))
    pto.TLOAD(a, x[:, :])
    pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
    pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
    pto.TADDS(a, a, y[i, 1])
    pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)
    pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)
    pto.TSTORE(z[:, :], a)


@pytest.mark.parametrize("dtype, ydtype", [("float32", "float32"), ("float16", "float32"),
                                           ("float32", "float16"), ("int32", "int32"),
                                           ("int16", "int32")])
def test_scalar_read_of_gm(pto_session, dtype, ydtype):
    rng = np.random.default_rng(7)
    dt, ydt = ref.np_dtype(dtype), ref.np_dtype(ydtype)
    if ref.is_float(dt):
        x = rng.standard_normal((2, 16)).astype(dt)
        y = (rng.standard_normal((3, 2)) * 10).astype(ydt)
    else:
        x = rng.integers(-1000, 1000, (2, 16)).astype(dt)
        y = rng.integers(-1000, 1000, (3, 2)).astype(ydt)
    z = pypto.zeros((2, 16), getattr(pypto, dtype))
    for i in (0, 2):
        k_adds_gm(pypto.Tensor(x), pypto.Tensor(y), z, i)
        s = y[i, 1].item()
        want = ref.binary("add", x, np.full_like(x, ref.scalar_to(dt, s)), dt)
        assert np.array_equal(ref.to_bits(z.numpy()), ref.to_bits(want)), (i, s)


def test_scalar_read_out_of_bounds_is_the_gm_bounds_error(pto_session):
    x = pypto.Tensor(np.zeros((2, 16), np.float32))
    y = pypto.Tensor(np.zeros((3, 2), np.float32))
    z = pypto.zeros((2, 16), pypto.float32)
    with pytest.raises(errors.GMBoundsError) as e:
        k_adds_gm(x, y, z, 3)
    assert "y" in str(e.value) and "pto.TADDS(a, a, y[i, 1])" in str(e.value)


def test_float_element_into_int_tile_is_refused(pto_session):
    x = pypto.Tensor(np.zeros((2, 16), np.int32))
    y = pypto.Tensor(np.zeros((3, 2), np.float32))
    z = pypto.zeros((2, 16), pypto.int32)
    with pytest.raises(errors.DTypeError, match="TADDS"):
        k_adds_gm(x, y, z, 0)


def test_scalar_read_is_shown_in_ir_and_cpp(pto_session):
    x = pypto.Tensor(np.zeros((2, 16), np.float32))
    y = pypto.Tensor(np.zeros((3, 2), np.float16))
    z = pypto.zeros((2, 16), pypto.float32)
    assert "load_scalar %y[" in k_adds_gm.ir(x, y, z, 1)
    cpp = k_adds_gm.cpp(x, y, z, 1)
    assert "TADDS(a, a, static_cast<float>(((float)y[" in cpp
