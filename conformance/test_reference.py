"""Self-checks of the numpy reference (no pypto involved): the reference is cross-checked against
a second, independent computation so that a bug in it cannot silently pass or fail pypto."""
from __future__ import annotations

import numpy as np
import pytest

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
