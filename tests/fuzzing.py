"""Shared pieces of the fuzz tests (tests/test_fuzz_*.py): value strategies and the outcome rule.

The rule every public entry point keeps: a call either succeeds or raises a ``PtoError``
subclass; any other exception (or warning) is a defect, reported with the call that caused it.

``examples(n)`` is the quick tier's budget for one test (``make test``); under the long profile
(``make fuzz``, i.e. ``--hypothesis-profile=fuzz``) every test takes the profile's count.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pypto

LONG_RUN = settings.default.max_examples >= 1000      # the fuzz profile is loaded


def fuzz_settings(quick_examples: int) -> settings:
    """Settings of one fuzz test: quick_examples in the quick tier, the profile's count otherwise."""
    n = settings.default.max_examples if LONG_RUN else quick_examples
    return settings(max_examples=n, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


DTYPES = [d for d in pypto.dtypes.ALL]
DTYPE_NAMES = [d.name for d in DTYPES]

# numpy element types users hand in, PTO or not
HOST_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32,
               np.uint32, np.int64, np.uint64, np.bool_, np.complex64, np.complex128, ml_dtypes.bfloat16,
               ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3b11fnuz,
               np.dtype("U3"), np.dtype("S2"), np.dtype("M8[s]"), np.dtype("m8[s]"),
               np.dtype([("a", "i4")])]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(-2 ** 70, 2 ** 70), st.floats(),
    st.complex_numbers(), st.text(max_size=4), st.binary(max_size=4), st.sampled_from(DTYPES),
    st.sampled_from([np.float32(1.5), np.int64(-3), np.float16(np.inf), np.uint64(2 ** 64 - 1),
                     np.complex64(1j), np.bool_(True), object(), Ellipsis, slice(1, 2), {1: 2}]))


_ML = (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3b11fnuz)


def _host_array(dt) -> st.SearchStrategy:
    shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
    if dt in _ML:                        # hypothesis cannot draw these: floats, then converted
        return hnp.arrays(np.float32, shapes, elements=st.floats(-500, 500, width=32)).map(
            lambda a: a.astype(dt))
    if np.dtype(dt).kind in "VMm":
        return shapes.map(lambda s: np.zeros(s, dt))
    return hnp.arrays(dt, shapes)


host_arrays = st.sampled_from(HOST_DTYPES).flatmap(_host_array)
strided_arrays = hnp.arrays(np.float32, (4, 6)).flatmap(
    lambda a: st.sampled_from([a[::2], a[:, ::3], a.T, a[::-1], a[1:3, 2:]]))

# anything a user might pass where data, a shape or a dtype is expected
values = st.recursive(st.one_of(scalars, host_arrays, strided_arrays),
                      lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner)),
                      max_leaves=8)
# mostly well-formed data: numeric nested lists and arrays
numeric_lists = st.recursive(st.one_of(st.integers(-300, 300), st.floats(width=32)),
                             lambda inner: st.lists(inner, min_size=1, max_size=3), max_leaves=8)


class Outcome:
    """What one call did: ``ok`` with its value, or ``error`` with the PtoError it raised."""

    def __init__(self, ok: bool, value: Any = None, error: BaseException | None = None):
        self.ok, self.value, self.error = ok, value, error


def attempt(fn: Callable, *args: Any, **kwargs: Any) -> Outcome:
    """Call fn; a PtoError is a legal outcome, anything else (warnings too) fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=pypto.errors.HazardWarning)
        try:
            return Outcome(True, fn(*args, **kwargs))
        except pypto.PtoError as e:
            assert str(e).strip(), f"{type(e).__name__} with an empty message"
            return Outcome(False, error=e)
        except BaseException as e:     # noqa: BLE001 - the defect this suite exists to find
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            raise AssertionError(f"{getattr(fn, '__qualname__', fn)}(*{_short(args)}, **{_short(kwargs)}) "
                                 f"raised {type(e).__name__}: {e}") from e


def _short(x: Any) -> str:
    s = repr(x)
    return s if len(s) < 300 else s[:300] + "..."


def snapshot(tensors: list) -> list[bytes | None]:
    """The bytes of every live tensor (None for freed ones), to prove a failed call left them."""
    return [None if t.is_freed else t.numpy().tobytes() for t in tensors]
