"""Runtime branches: ``for _ in pto.when(cond):`` on comparisons of runtime scalars, on integer
scalars and on TTEST's result, in compiled mode (one IR node: a loop of 0 or 1 trips) and in eager
mode (a Python test), compared with numpy written from the rule; and the errors a user can make."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto
from pypto import errors as E
from pypto import pto

MODES = ("compiled", "eager")
ROWS, COLS = 8, 64


def body(x, z, a, b):
    t = pto.Tile(pto.Vec, pto.float32, (ROWS, COLS))
    pto.TLOAD(t, x)
    for _ in pto.when(a < b):
        pto.TMULS(t, t, 2.0)
    for _ in pto.when(a == b):
        pto.TADDS(t, t, 1.0)
        for _ in pto.when(a >= 0):                  # nested
            pto.TADDS(t, t, 1000.0)
    for _ in pto.when(a):                           # any integer: non-zero is true
        pto.TADDS(t, t, 10.0)
    for _ in pto.when(a + 1 != b * 2):
        pto.TMULS(t, t, -1.0)
    for _ in pto.when(False):                       # known while tracing: no IR at all
        pto.TADDS(t, t, 1e6)
    pto.TSTORE(z, t)


KERNELS = {m: pypto.kernel(mode=m)(body) for m in MODES}


def expected(x: np.ndarray, a: int, b: int) -> np.ndarray:
    t = x.copy()
    if a < b:
        t = t * np.float32(2)
    if a == b:
        t = t + np.float32(1)
        if a >= 0:
            t = t + np.float32(1000)
    if a != 0:
        t = t + np.float32(10)
    if a + 1 != b * 2:
        t = t * np.float32(-1)
    return t


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=st.integers(-3, 3), b=st.integers(-3, 3))
def test_branches_on_runtime_scalars_match_numpy(session, mode, a, b):
    xh = np.random.default_rng((a + 3) * 7 + b + 3).standard_normal((ROWS, COLS)).astype(np.float32)
    z = pypto.zeros((ROWS, COLS), pypto.float32)
    KERNELS[mode](pypto.Tensor(xh), z, a, b)
    assert np.array_equal(z.numpy(), expected(xh, a, b))


def test_a_branch_is_one_ir_node_printed_as_if(session):
    x, z = pypto.zeros((ROWS, COLS), pypto.float32), pypto.zeros((ROWS, COLS), pypto.float32)
    text = str(KERNELS["compiled"].ir(x, z, 1, 2))
    assert "if (%a < %b) {" in text and "if (%a != 0) {" in text
    assert "1000000.0" not in text                  # pto.when(False) traced nothing
    assert text.count("pto.tadds") == 3


def test_ttest_results_cross_chunks_of_a_long_kernel(session):
    """A TTEST early in a kernel long enough to be cut into chunks steers a branch in a later
    chunk: its value travels between the chunk functions."""
    @pypto.kernel
    def long(sig, x, z):
        t = pto.Tile(pto.Vec, pto.float32, (1, COLS))
        pto.TLOAD(t, x)
        hit = pto.TTEST(sig, 5, cmp="EQ")
        miss = pto.TTEST(sig, 5, cmp="NE")
        for _ in range(70):
            pto.TADDS(t, t, 1.0)
        for _ in pto.when(hit):
            pto.TMULS(t, t, 3.0)
        for _ in pto.when(miss):
            pto.TMULS(t, t, 100.0)
        pto.TSTORE(z, t)

    for s in (5, 6):
        xh = np.arange(COLS, dtype=np.float32)
        z = pypto.zeros((1, COLS), pypto.float32)
        long(pypto.Tensor(np.array([s], np.int32)), pypto.Tensor(xh), z)
        want = (xh + np.float32(70)) * np.float32(3 if s == 5 else 100)
        assert np.array_equal(z.numpy()[0], want), s


@pytest.mark.parametrize("mode", MODES)
def test_a_float_condition_is_refused(session, mode):
    @pypto.kernel(mode=mode)
    def k(x, f):
        for _ in pto.when(f):
            pass

    with pytest.raises(E.KernelError, match="pto.when"):
        k(pypto.zeros((4,), pypto.float32), 1.5)


def test_python_if_on_a_runtime_value_points_to_pto_when(session):
    @pypto.kernel
    def k(x, n):
        if n > 3:
            pass

    with pytest.raises(E.TraceError, match="pto.when"):
        k(pypto.zeros((4,), pypto.float32), 5)


@pytest.mark.parametrize("mode", MODES)
def test_leaving_a_branch_early_is_refused_in_both_modes(session, mode):
    @pypto.kernel(mode=mode)
    def k(x, n):
        for _ in pto.when(n > 0):
            break

    with pytest.raises(E.TraceError, match="left early"):
        k(pypto.zeros((4,), pypto.float32), 5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("cond", [lambda v: v > 0.5, lambda v: v == 0, lambda v: v != 0, lambda v: v + 1])
def test_a_gm_element_in_a_condition_says_how_to_read_it(session, mode, cond):
    """x[i] is a one-element GM view, read as a number only as an instruction's scalar operand:
    comparing it was a raw TypeError (or, with ==, a silent False)."""
    @pypto.kernel(mode=mode)
    def k(x, z):
        for _ in pto.when(cond(x[0])):
            pass

    with pytest.raises(E.TraceError, match="scalar operand"):
        k(pypto.zeros((8,), pypto.float32), pypto.zeros((8,), pypto.float32))


def test_the_timeline_prices_the_path_each_launch_took(session):
    @pypto.kernel
    def k(x, z, n):
        t = pto.Tile(pto.Vec, pto.float32, (64, 64))
        pto.TLOAD(t, x)
        for _ in pto.when(n > 2):
            for _ in range(8):
                pto.TMULS(t, t, 2.0)
        pto.TSTORE(z, t)

    x, z = pypto.Tensor(np.ones((64, 64), np.float32)), pypto.zeros((64, 64), pypto.float32)
    skipped, taken = (pypto.timeline(k, x, z, n) for n in (1, 3))
    assert "TMULS" not in skipped.by_instruction() and taken.by_instruction()["TMULS"] > 0
    assert taken.cycles > skipped.cycles


@pytest.mark.parametrize("mode", MODES)
def test_and_or_not_written_with_arithmetic(session, mode):
    """The user guide's forms: * is "and", + is "or", == 0 is "not"."""
    @pypto.kernel(mode=mode)
    def k(x, z, a, b):
        t = pto.Tile(pto.Vec, pto.float32, (1, 8))
        pto.TLOAD(t, x)
        for _ in pto.when((a > 0) * (b > 0)):
            pto.TADDS(t, t, 1.0)
        for _ in pto.when((a > 0) + (b > 0)):
            pto.TADDS(t, t, 10.0)
        for _ in pto.when((a > 0) == 0):
            pto.TADDS(t, t, 100.0)
        pto.TSTORE(z, t)

    for a in (-1, 1):
        for b in (-1, 1):
            z = pypto.zeros((8,), pypto.float32)
            k(pypto.zeros((8,), pypto.float32), z, a, b)
            want = (a > 0 and b > 0) * 1.0 + (a > 0 or b > 0) * 10.0 + (not a > 0) * 100.0
            assert z.numpy()[0] == want, (a, b)
