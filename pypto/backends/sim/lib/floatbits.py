"""Scalar float16 / bfloat16 <-> float32 / float64 bit conversions for numba.

numba has no half-precision arithmetic, so the simulator keeps f16 and bf16
tiles as raw ``uint16`` bit patterns, widens them to float32 to compute, and
narrows once at the end.  Everything here is an ``@njit`` scalar function meant
to be called per element from other ``@njit`` loops: branch-light (the special cases
compile to selects) and ``cache=True``-safe (no closures, no mutable globals). They are
plain calls: numba compiles each once per argument type and LLVM inlines it into the caller
when it links the caller's module, so the loops still vectorise. Inlined in numba's IR
(``inline="always"``) they were typed and lowered again at every call site: a cold
``conformance/test_arith.py -k "f16 and a2a3"`` took 64-67 s of CPU that way, 52-59 s now.

Bit casts are LLVM ``bitcast`` intrinsics (``f32_bits``, ``bits_f32``,
``f64_bits``, ``bits_f64``): free at run time and usable from any njit code.

Reference semantics (each function is bit-identical to it for every input):

* ``f16_to_f32``  -- ``np.float16 -> np.float32`` (NaN payload and sign kept,
  signalling NaNs stay signalling); ``f16_widen`` is the CPU's vectorised conversion (a
  signalling NaN comes out quiet), for the cube's inputs.
* ``f32_to_f16``  -- ``np.float32 -> np.float16``: round to nearest even,
  overflow to inf, correctly rounded subnormals; NaN keeps its sign and the top
  10 payload bits (``0x7c00 | sig >> 13``), and becomes ``0x7c01`` if those
  bits are all zero so it stays a NaN (numpy's software conversion; the quiet
  bit is not forced).
* ``f64_to_f16``  -- ``np.float64 -> np.float16``: correctly rounded straight
  from double (no double rounding through float32); NaN as above from the top
  10 payload bits of the double.
* ``bf16_to_f32`` -- ``ml_dtypes.bfloat16 -> np.float32`` (``bits << 16``).
* ``f32_to_bf16`` -- ``np.float32 -> ml_dtypes.bfloat16``: round to nearest
  even (subnormals are not flushed); every NaN becomes the quiet NaN
  ``0x7fc0`` / ``0xffc0`` keeping only the sign.
* ``f64_to_bf16`` -- ``np.float64 -> bfloat16`` correctly rounded, ONE rounding (round to odd
  into float32, then nearest even). ml_dtypes rounds twice (float64 -> float32 -> bfloat16:
  ``1 + 2**-8 + 2**-30`` gives ``1.0``); the NPU and pypto give ``1 + 2**-7``.
* ``f64_to_f32``  -- plain ``np.float32(x)``.
"""

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import errors
from numba.extending import intrinsic

__all__ = [
    "f32_bits", "bits_f32", "f64_bits", "bits_f64",
    "f16_to_f32", "f16_widen", "f32_to_f16", "f64_to_f16", "f16_to_f32_soft", "f32_to_f16_soft",
    "bf16_to_f32", "f32_to_bf16", "f64_to_bf16",
    "f64_to_f32",
]

# lib/jit.py's LIB, spelled out: this module imports nothing of pypto, so a user's own njit
# code can load it as a standalone file (tests/test_floatbits.py does)
_JIT = dict(cache=True, error_model="numpy", nogil=True, no_cfunc_wrapper=True)


# ---------------------------------------------------------------------------
# Bit casts (LLVM bitcast; no memory round trip)
# ---------------------------------------------------------------------------

def _bitcast_to_int(typingctx, x, fty, ity, nbits):
    if x != fty:
        raise errors.TypingError(f"expected {fty}, got {x}")

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(nbits))

    return ity(fty), codegen


def _bitcast_to_float(typingctx, i, fty, nbits, lltype):
    if not isinstance(i, types.Integer):
        raise errors.TypingError(f"expected an integer, got {i}")

    def codegen(context, builder, sig, args):
        (v,), (ty,) = args, sig.args
        if ty.bitwidth > nbits:
            v = builder.trunc(v, ir.IntType(nbits))
        elif ty.bitwidth < nbits:
            ext = builder.sext if ty.signed else builder.zext
            v = ext(v, ir.IntType(nbits))
        return builder.bitcast(v, lltype)

    return fty(i), codegen


@intrinsic
def f32_bits(typingctx, x):
    """float32 -> its IEEE bits as uint32."""
    return _bitcast_to_int(typingctx, x, types.float32, types.uint32, 32)


@intrinsic
def bits_f32(typingctx, i):
    """Integer (low 32 bits used) -> float32 with those IEEE bits."""
    return _bitcast_to_float(typingctx, i, types.float32, 32, ir.FloatType())


@intrinsic
def f64_bits(typingctx, x):
    """float64 -> its IEEE bits as uint64."""
    return _bitcast_to_int(typingctx, x, types.float64, types.uint64, 64)


@intrinsic
def bits_f64(typingctx, i):
    """Integer (low 64 bits used) -> float64 with those IEEE bits."""
    return _bitcast_to_float(typingctx, i, types.float64, 64, ir.DoubleType())


# ---------------------------------------------------------------------------
# Internal helpers.  Arithmetic is done in int64 to stay clear of numba's
# unsigned/signed promotion rules (uint64 op int64 -> float64).
# ---------------------------------------------------------------------------

# float32 (113 << 23) == 2**-14, the smallest normal float16.
_F16_MIN_NORMAL_BITS = 113 << 23
# float32 bits of 2**16: everything at or above overflows float16 (65520
# rounds up to inf through the normal path already).
_F16_OVERFLOW_BITS = 143 << 23
# float32 0.5: adding it to |x| < 2**-14 puts the float16 subnormal
# significand (units of 2**-24) in the low mantissa bits, rounded to nearest
# even by the FPU.
_DENORM_MAGIC_BITS = 126 << 23


@njit(**_JIT)
def _f32bits_to_f16(u):
    """Core float32-bits -> float16-bits conversion (int64 in, int64 out)."""
    sign = (u >> 16) & 0x8000
    a = u & 0x7FFFFFFF
    # normal float16: rebias the exponent, round to nearest even on bit 13
    odd = (a >> 13) & 1
    normal = (a + (((15 - 127) << 23) + 0xFFF) + odd) >> 13
    # subnormal float16 / zero: let the FPU round
    magic = bits_f32(_DENORM_MAGIC_BITS)
    sub = np.int64(f32_bits(bits_f32(a) + magic)) - _DENORM_MAGIC_BITS
    # NaN: numpy keeps the top payload bits and forces a non-zero payload
    nsig = (a & 0x007FFFFF) >> 13
    nan = 0x7C00 | nsig | (1 if nsig == 0 else 0)
    h = sub if a < _F16_MIN_NORMAL_BITS else normal
    h = 0x7C00 if a >= _F16_OVERFLOW_BITS else h
    h = nan if a > 0x7F800000 else h
    return h | sign


# ---------------------------------------------------------------------------
# float16
# ---------------------------------------------------------------------------

@njit(**_JIT)
def f16_to_f32_soft(h):
    """float16 bits (uint16) -> float32 in integer arithmetic, exact (NaN payloads kept)."""
    b = np.int64(h) & 0xFFFF
    o = (b & 0x7FFF) << 13
    e = o & (0x1F << 23)
    o = o + ((127 - 15) << 23)
    # zero / subnormal: renormalise exactly by subtracting 2**-14
    sub = np.int64(f32_bits(bits_f32(o + (1 << 23)) - bits_f32(_F16_MIN_NORMAL_BITS)))
    o = sub if e == 0 else o
    # inf / NaN: max exponent, payload untouched
    o = o + ((128 - 16) << 23) if e == (0x1F << 23) else o
    return bits_f32(o | ((b & 0x8000) << 16))


@njit(**_JIT)
def f32_to_f16_soft(x):
    """float32 -> float16 bits (uint16) in integer arithmetic, round to nearest even (== numpy)."""
    return np.uint16(_f32bits_to_f16(np.int64(f32_bits(np.float32(x)))))


_F16C = llvm.get_host_cpu_features().flatten().find("+f16c") >= 0


def _as_i16(builder, v, ty):
    if ty.bitwidth == 16:
        return v
    return builder.trunc(v, ir.IntType(16)) if ty.bitwidth > 16 else builder.zext(v, ir.IntType(16))


@intrinsic
def f16_widen(typingctx, h):
    """float16 bits -> float32 by the CPU's own conversion (F16C, vectorised): exact for every
    number, but a signalling NaN comes out quiet. For the cube's inputs, where only NaN-ness can
    matter; without F16C it is f16_to_f32_soft."""
    if not isinstance(h, types.Integer):
        raise errors.TypingError(f"expected float16 bits, got {h}")
    sig = types.float32(h)

    def codegen(context, builder, sig, args):
        if not _F16C:
            return context.compile_internal(builder, lambda b: f16_to_f32_soft(b), sig, args)
        v = _as_i16(builder, args[0], sig.args[0])
        return builder.fpext(builder.bitcast(v, ir.HalfType()), ir.FloatType())

    return sig, codegen


def _widen_run_soft(dst, d, src, s):
    for x in range(16):
        dst[d + x] = f16_widen(np.uint16(src[s + x]))


@intrinsic
def f16_widen_run(typingctx, dst, d, src, s):
    """dst[d:d + 16] = f16_widen of the 16 float16 bit patterns at src[s:s + 16], as one vector
    conversion: a box row of the cube's f16 operands. (A loop of 16 f16_widen calls stays a
    loop with per-run set-up, or unrolls into 16 scalar conversions.)"""
    if not (isinstance(dst, types.Array) and dst.dtype == types.float32 and
            isinstance(src, types.Array) and isinstance(src.dtype, (types.Integer, types.Float))):
        raise errors.TypingError(f"expected a float32 array and an array of bits, got {dst} and {src}")
    sig = types.none(dst, d, src, s)
    # else a CPU without F16C, or bits of another width (a caller typed for every dtype)
    vector = _F16C and src.dtype in (types.uint16, types.int16)

    def codegen(context, builder, sig, args):
        if not vector:
            context.compile_internal(builder, _widen_run_soft, sig, args)
            return context.get_dummy_value()
        from numba.np.arrayobj import make_array
        i64 = ir.IntType(64)
        at = [builder.sext(a, i64) if a.type.width < 64 else a for a in (args[1], args[3])]
        pd = make_array(sig.args[0])(context, builder, args[0]).data
        ps = make_array(sig.args[2])(context, builder, args[2]).data
        bits = builder.load(builder.bitcast(builder.gep(ps, [at[1]]),
                                            ir.VectorType(ir.IntType(16), 16).as_pointer()), align=2)
        wide = builder.fpext(builder.bitcast(bits, ir.VectorType(ir.HalfType(), 16)),
                             ir.VectorType(ir.FloatType(), 16))
        builder.store(wide, builder.bitcast(builder.gep(pd, [at[0]]),
                                            ir.VectorType(ir.FloatType(), 16).as_pointer()), align=4)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _f16_narrow(typingctx, x):
    """float32 -> float16 bits by the CPU's conversion (F16C: round to nearest even, like
    numpy, except that a NaN comes out quiet); without F16C it is f32_to_f16_soft."""
    if x != types.float32:
        raise errors.TypingError(f"expected float32, got {x}")
    sig = types.uint16(x)

    def codegen(context, builder, sig, args):
        if not _F16C:
            return context.compile_internal(builder, lambda v: f32_to_f16_soft(v), sig, args)
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))

    return sig, codegen


@njit(**_JIT)
def f16_to_f32(h):
    """float16 bits (uint16) -> float32, exact (NaN payloads kept, signalling NaNs too): the
    CPU's vectorised conversion, with NaNs rebuilt from their bits (== f16_to_f32_soft)."""
    b = np.int64(h) & 0xFFFF
    nan = bits_f32(((b & 0x8000) << 16) | 0x7F800000 | ((b & 0x3FF) << 13))
    return nan if (b & 0x7FFF) > 0x7C00 else f16_widen(b)


@njit(**_JIT)
def f32_to_f16(x):
    """float32 -> float16 bits (uint16), round to nearest even (== numpy): the CPU's vectorised
    conversion, with NaNs rebuilt as numpy does (== f32_to_f16_soft)."""
    f = np.float32(x)
    u = np.int64(f32_bits(f))
    m = (u & 0x7FFFFF) >> 13
    nan = ((u >> 16) & 0x8000) | 0x7C00 | m | (1 if m == 0 else 0)
    return np.uint16(nan) if f != f else _f16_narrow(f)


@njit(**_JIT)
def f64_to_f16(x):
    """float64 -> float16 bits (uint16), correctly rounded (== numpy)."""
    d = np.float64(x)
    # Round to odd into float32 (truncate, then OR the sticky bit into the
    # last place).  float32 keeps >= 2 more bits than float16 everywhere in
    # float16's range, so the final round-to-nearest-even is then exact.
    f = np.float32(d)
    fd = np.float64(f)
    u = np.int64(f32_bits(f))
    u = u - 1 if abs(fd) > abs(d) else u
    u = u | 1 if fd != d else u
    h = _f32bits_to_f16(u)
    # NaN straight from the double's payload, as numpy does
    db = np.int64(f64_bits(d))
    nsig = (db >> 42) & 0x3FF
    nan = ((db >> 48) & 0x8000) | 0x7C00 | nsig | (1 if nsig == 0 else 0)
    h = nan if d != d else h
    return np.uint16(h)


# ---------------------------------------------------------------------------
# bfloat16
# ---------------------------------------------------------------------------

@njit(**_JIT)
def bf16_to_f32(h):
    """bfloat16 bits (uint16) -> float32, exact."""
    return bits_f32((np.int64(h) & 0xFFFF) << 16)


@njit(**_JIT)
def _f32bits_to_bf16(u):
    """float32 bits -> bfloat16 bits, round to nearest even; a NaN keeps its sign and top
    payload bits and is quieted, as hardware bf16 converts do (ml_dtypes canonicalises it)."""
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    nan = ((u >> 16) & 0xFFFF) | 0x0040
    return nan if (u & 0x7FFFFFFF) > 0x7F800000 else r


@njit(**_JIT)
def f32_to_bf16(x):
    """float32 -> bfloat16 bits (uint16), round to nearest even (== ml_dtypes except NaN payloads)."""
    return np.uint16(_f32bits_to_bf16(np.int64(f32_bits(np.float32(x)))))


@njit(**_JIT)
def f64_to_bf16(x):
    """float64 -> bfloat16 bits (uint16), correctly rounded (one rounding; ml_dtypes rounds twice,
    through float32)."""
    d = np.float64(x)
    f = np.float32(d)
    fd = np.float64(f)
    u = np.int64(f32_bits(f))
    u = u - 1 if abs(fd) > abs(d) else u     # round to odd into float32 ...
    u = u | 1 if fd != d else u              # ... so the final rounding is the only one
    h = _f32bits_to_bf16(u)
    db = np.int64(f64_bits(d))
    nan = ((db >> 48) & 0x8000) | 0x7FC0 | ((db >> 45) & 0x7F)
    h = nan if d != d else h
    return np.uint16(h)


@njit(**_JIT)
def f64_to_f32(x):
    """float64 -> float32, round to nearest even."""
    return np.float32(x)
