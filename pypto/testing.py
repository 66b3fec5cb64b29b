"""Helpers for tests of pypto programs: bit-exact comparison and backend markers with reasons."""
from __future__ import annotations

import numpy as np
import pytest


def bits(a: np.ndarray) -> np.ndarray:
    """The raw bits of an array as unsigned ints (so -0.0 and NaN payloads compare exactly)."""
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_bits_equal(actual: np.ndarray, expected: np.ndarray, what: str = "result") -> None:
    """Bit-for-bit equality with a readable report of the first mismatches."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    diff = np.nonzero(bits(actual).ravel() != bits(expected).ravel())[0]
    if diff.size:
        idx = [np.unravel_index(i, actual.shape) for i in diff[:5]]
        rows = ", ".join(f"{i}: got {actual[i]!r} want {expected[i]!r}" for i in idx)
        raise AssertionError(f"{what}: {diff.size} of {actual.size} elements differ; first {rows}")


def requires_backend(name: str, reason: str):
    """Skip unless backend ``name`` is usable here; a reason is required and shown."""
    if not reason:
        raise ValueError("requires_backend needs a reason")
    from .backends import is_available
    ok, missing = is_available(name)
    return pytest.mark.skipif(not ok, reason=f"{reason} ({'; '.join(missing)})")
