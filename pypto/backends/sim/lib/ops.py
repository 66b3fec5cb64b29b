"""Scalar operations and element codecs, inlined into the elementwise loops (see elementwise.py).

A codec is (load, store): load widens stored bits to the compute type (f16/bf16 -> f32), store
narrows with one round-to-nearest-even. Integer results wrap on store, as the NPU's do.
"""
from numba import njit

from .floatbits import (bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16, f64_to_bf16,  # noqa: F401
                        f64_to_f16, f64_to_f32)
from .jit import INLINE

_J = INLINE


@njit(**_J)
def ident(x):
    return x


@njit(**_J)
def add(x, y):
    return x + y


@njit(**_J)
def sub(x, y):
    return x - y


@njit(**_J)
def mul(x, y):
    return x * y


@njit(**_J)
def div(x, y):
    return x / y


@njit(**_J)
def idiv(x, y):
    # C-style division truncating toward zero; x / 0 gives -1 (all ones), pypto's choice
    if y == 0:
        return -1
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


@njit(**_J)
def fmax(x, y):
    # a NaN operand propagates, quieted (x's first, as the FPU does for x + y); ties keep x
    if x != x or y != y:
        return x + y if x != x else y + x
    return x if x >= y else y


@njit(**_J)
def fmin(x, y):
    if x != x or y != y:
        return x + y if x != x else y + x
    return x if x <= y else y


@njit(**_J)
def imax(x, y):
    return x if x >= y else y


@njit(**_J)
def imin(x, y):
    return x if x <= y else y


@njit(**_J)
def scalar_f16(x):
    """A runtime scalar converted to f16 (one rounding from double), widened to the f32 compute type."""
    return f16_to_f32(f64_to_f16(x))


@njit(**_J)
def scalar_bf16(x):
    return bf16_to_f32(f64_to_bf16(x))
