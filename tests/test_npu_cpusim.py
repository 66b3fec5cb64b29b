"""pypto's emitted C++ built with g++ against pto-isa's CPU backend and run through the NPU
backend's launcher (``backend="npu-cpusim"``): the tutorial, library kernels, several blocks,
dynamic shapes, manual TASSIGN and flags, and a run-time fault, each compared with numpy or with
the simulator's error. Needs PTO_ISA_ROOT (a pto-isa checkout); skipped with the reason elsewhere.
The whole conformance suite runs here with ``pytest conformance --backend npu-cpusim``."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import pypto
from pypto import errors as E
from pypto import pto
from pypto.testing import unavailable_reason

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from kernel_add_rows import COLS, ROWS, add_rows  # noqa: E402

WHY = unavailable_reason("npu-cpusim")
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"needs pto-isa's CPU backend: {WHY}")


@pytest.fixture
def cpusim():
    pypto.finalize()
    s = pypto.init(backend="npu-cpusim")
    yield s
    pypto.finalize()


@pytest.mark.parametrize("blocks", [1, 3, 8])
def test_tutorial_kernel(cpusim, blocks):
    rng = np.random.default_rng(blocks)
    xh = rng.standard_normal((ROWS, COLS), dtype=np.float32)
    yh = rng.standard_normal((ROWS, COLS), dtype=np.float32)
    z = pypto.zeros((ROWS, COLS), pypto.float32)
    add_rows[blocks](pypto.Tensor(xh), pypto.Tensor(yh), z)
    assert np.array_equal(z.numpy(), xh + yh)


@pytest.mark.parametrize("name, dtype, n", [("add", np.float16, 70001), ("mul", np.int32, 9000),
                                            ("sub", np.float32, 5)])
def test_library_binary(cpusim, name, dtype, n):
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(n) * 100).astype(dtype)
    b = (rng.standard_normal(n) * 100).astype(dtype)
    c = np.zeros(n, dtype)
    ins = pypto.load_insn(name)
    for i, v in enumerate((a, b, c)):
        ins.set_operand(i, v)
    ins.execute()
    want = {"add": np.add, "mul": np.multiply, "sub": np.subtract}[name](a, b, dtype=dtype)
    assert np.array_equal(c, want)


def test_dynamic_shapes_compile_once(cpusim):
    ins = pypto.load_insn("adds")
    for n in (100, 33333):
        a = np.arange(n, dtype=np.float32)
        c = np.zeros(n, np.float32)
        ins.set_operand(0, a)
        ins.set_operand(1, 0.5)
        ins.set_operand(2, c)
        ins.execute()
        assert np.array_equal(c, a + np.float32(0.5))
    assert pypto.stats().compiles + pypto.stats().cache_loads == 1


@pypto.kernel
def k_double_buffer(x, z, n):
    """Two tiles at fixed UB addresses, alternating by iteration, with the flags a chip needs."""
    a = pto.Tile(pto.Vec, pto.float32, (1, 64))
    b = pto.Tile(pto.Vec, pto.float32, (1, 64))
    pto.TASSIGN(a, 0x0)
    pto.TASSIGN(b, 0x100)
    for i in pto.range(0, n):
        pto.TLOAD(a, x[i * 128:i * 128 + 64])
        pto.TLOAD(b, x[i * 128 + 64:i * 128 + 128])
        pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID1)
        pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID1)
        pto.TMUL(a, a, b)
        pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID2)
        pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID2)
        pto.TSTORE(z[i * 64:i * 64 + 64], a)
        pto.set_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, pto.EVENT_ID0)
        pto.wait_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, pto.EVENT_ID0)


def test_manual_tassign_and_flags(cpusim):
    xh = np.random.default_rng(1).standard_normal(4 * 128).astype(np.float32)
    z = pypto.zeros((4 * 64,), pypto.float32)
    k_double_buffer(pypto.Tensor(xh), z, 4)
    pairs = xh.reshape(4, 2, 64)
    assert np.array_equal(z.numpy(), (pairs[:, 0] * pairs[:, 1]).reshape(-1))


@pypto.kernel
def k_window(x, z, n):
    a = pto.Tile(pto.Vec, pto.float32, (1, 64), valid=pto.DYNAMIC)
    a.set_valid(1, 64)
    pto.TLOAD(a, x[n:n + 64])
    pto.set_flag(pto.PIPE_MTE2, pto.PIPE_MTE3, pto.EVENT_ID0)
    pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_MTE3, pto.EVENT_ID0)
    pto.TSTORE(z[0:64], a)


def test_runtime_fault_is_the_simulators_error(cpusim):
    """The guard stops the block before the out-of-bounds load, and pypto raises what the
    simulator raises for the same launch."""
    x = pypto.Tensor(np.arange(100, dtype=np.float32))
    z = pypto.zeros((64,), pypto.float32)
    k_window(x, z, 30)
    assert np.array_equal(z.numpy(), np.arange(30, 94, dtype=np.float32))
    with pytest.raises(E.GMBoundsError) as on_cpusim:
        k_window(x, z, 50)
    pypto.finalize()
    pypto.init(backend="sim")
    x = pypto.Tensor(np.arange(100, dtype=np.float32))
    z = pypto.zeros((64,), pypto.float32)
    with pytest.raises(E.GMBoundsError) as on_sim:
        k_window(x, z, 50)
    assert str(on_cpusim.value) == str(on_sim.value)


# -- the documented deviations are exactly what pto-isa's CPU code does ----------------------------
# conformance/deviations.py marks the conformance cases where npu-cpusim differs from the NPU;
# these tests show the difference is the documented behaviour of pto-isa's CPU backend, modelled
# here in numpy from its source (std::max, one left-to-right accumulator, C++ casts, _Float16).

def _run(name, *ops):
    ins = pypto.load_insn(name)
    for i, v in enumerate(ops):
        ins.set_operand(i, v)
    ins.execute()


def test_deviation_minmax_is_std_max(cpusim):
    qnan, snan = np.uint32(0x7FC00123).view(np.float32), np.uint32(0x7F800001).view(np.float32)
    a = np.array([1.0, qnan, 2.0, snan, -0.0, 0.0, qnan, 5.0], np.float32)
    b = np.array([qnan, 1.0, snan, 2.0, 0.0, -0.0, qnan, -5.0], np.float32)
    for name, pick_b in (("max", a < b), ("min", b < a)):      # std::max: (a < b) ? b : a
        c = np.zeros(8, np.float32)
        _run(name, a, b, c)
        assert np.array_equal(c.view(np.uint32), np.where(pick_b, b, a).view(np.uint32)), name


def test_deviation_rowsum_is_one_left_to_right_accumulator(cpusim):
    rng = np.random.default_rng(7)
    for dt, acc_t in ((np.float32, np.float32), (np.float16, np.float32)):
        x = (rng.standard_normal((5, 60)) * 1000).astype(dt)
        x[1, 0] = 2.0 ** 11 if dt == np.float16 else 2.0 ** 24
        x[2, :] = -0.0
        y = np.zeros((5,), dt)
        _run("rowsum", x, y)
        want = []
        for row in x:
            acc = acc_t(0.0)
            for v in row:
                acc = acc_t(acc + acc_t(v))
            want.append(dt(acc))
        assert np.array_equal(y.view(np.uint8), np.array(want, dt).view(np.uint8)), dt


def test_deviation_cvt_is_a_cpp_cast(cpusim):
    """f32 -> f16 saturates to +-65504 on the NPU; the CPU backend's cast overflows to inf and
    rounds to nearest even whatever the mode."""
    x = np.array([1e6, -1e6, 65520.0, 0.1, -2.5, 3.0e-8], np.float32)
    for rmode in ("CAST_NONE", "CAST_FLOOR", "CAST_CEIL"):
        z = np.zeros(6, np.float16)
        ins = pypto.load_insn("cast", rmode=rmode)
        ins.set_operand(0, x)
        ins.set_operand(1, z)
        ins.execute()
        with np.errstate(over="ignore"):
            want = x.astype(np.float16)
        assert np.array_equal(z.view(np.uint16), want.view(np.uint16)), rmode


def test_deviation_bfloat16_is_ieee_half_bits(cpusim):
    pypto.finalize()
    pypto.init(backend="npu-cpusim", soc="a5")
    import ml_dtypes
    a = np.array([1.5, -1168.0, 3.0, 100.25], ml_dtypes.bfloat16)
    b = np.array([2.0, 0.5, -1.0, 1.0], ml_dtypes.bfloat16)
    c = np.zeros(4, ml_dtypes.bfloat16)
    _run("add", a, b, c)
    as_half = (a.view(np.float16) + b.view(np.float16)).view(np.uint16)
    assert np.array_equal(c.view(np.uint16), as_half)


@pypto.kernel
def k_branches(x, z, a, b):
    t = pto.Tile(pto.Vec, pto.float32, (1, 64))
    pto.TLOAD(t, x)
    for _ in pto.when(a < b):
        pto.TMULS(t, t, 2.0)
    for _ in pto.when(a == b):
        pto.TADDS(t, t, 1.0)
    for _ in pto.when(a):
        pto.TADDS(t, t, 10.0)
    pto.TSTORE(z, t)


@pytest.mark.parametrize("a, b", [(1, 2), (2, 2), (0, 0), (3, -1)])
def test_runtime_branches(cpusim, a, b):
    """pto.when as emitted C++ (`if ((a < b) != 0)`), against numpy written from the rule."""
    xh = np.arange(64, dtype=np.float32)
    z = pypto.zeros((64,), pypto.float32)
    k_branches(pypto.Tensor(xh), z, a, b)
    want = xh * np.float32(2) if a < b else xh.copy()
    want = want + np.float32(1) if a == b else want
    want = want + np.float32(10) if a else want
    assert np.array_equal(z.numpy(), want)
