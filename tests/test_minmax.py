"""A generated kernel's min / max (lib/minmax.py) give Python's min / max: the same value and
type for int64 and float64 operands, mixed ones, and NaN in either place."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings, strategies as st
from numba import njit

from pypto.backends.sim.lib.minmax import kmax, kmin


@njit(cache=False)
def _both(a, b):
    return kmin(a, b), kmax(a, b)


def _same(got, want) -> bool:
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    return got == want and isinstance(got, float) == isinstance(want, float)


ints = st.integers(-2 ** 63, 2 ** 63 - 1)
floats = st.floats(allow_nan=True, allow_infinity=True, width=64)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.tuples(ints, ints), st.tuples(floats, floats), st.tuples(ints, floats),
                 st.tuples(floats, ints)))
def test_min_and_max_are_pythons(pair):
    a, b = pair
    got = _both(np.int64(a) if isinstance(a, int) else a, np.int64(b) if isinstance(b, int) else b)
    want = (min(float(a), float(b)), max(float(a), float(b))) if isinstance(a, float) or isinstance(b, float) \
        else (min(a, b), max(a, b))
    assert all(_same(float(g) if isinstance(g, float) else int(g), w) for g, w in zip(got, want)), (pair, got, want)


def test_a_nan_second_operand_gives_the_first():
    assert _both(1.0, float("nan")) == (1.0, 1.0)
    lo, hi = _both(float("nan"), 1.0)
    assert math.isnan(lo) and math.isnan(hi)
