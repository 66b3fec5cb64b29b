"""The scalar conversions of generated kernels: a scalar operand rounded to f16 / bf16, an f16 /
bf16 element of GM read as a scalar.

A kernel converts each such scalar once per use, not per element, so these are compiled once and
called through ``xcall`` (the intrinsics at the end, which codegen.HEADER imports). Inlining ops.scalar_f16 and its codec at every use
instead cost numba's IR inliner up to 3 s of one kernel's compile.
"""
from numba import njit

from .ops import bf16_to_f32, f16_to_f32, scalar_bf16, scalar_f16
from .jit import XCALLED
from .xcall import xcall


@njit(**XCALLED)
def to_f16(x):
    """A runtime scalar (double) rounded once to f16, widened to f32."""
    return scalar_f16(x)


@njit(**XCALLED)
def to_bf16(x):
    """A runtime scalar (double) rounded once to bf16, widened to f32."""
    return scalar_bf16(x)


@njit(**XCALLED)
def from_f16(h):
    """f16 bits -> f32, exact."""
    return f16_to_f32(h)


@njit(**XCALLED)
def from_bf16(h):
    """bf16 bits -> f32, exact."""
    return bf16_to_f32(h)


# What generated kernels call: one intrinsic each, made once per process rather than in every
# generated module.
f16_scalar, bf16_scalar, f16_read, bf16_read = (xcall(f) for f in (to_f16, to_bf16, from_f16, from_bf16))
