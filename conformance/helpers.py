"""Test-side helpers shared by the conformance files: value generators, sentinels, bit comparison.

Nothing here knows pypto's implementation; it only builds inputs and compares results.
"""
from __future__ import annotations

import math
import zlib
from typing import Any

import numpy as np
from hypothesis import strategies as st

from . import reference as ref


# ---------------------------------------------------------------------------------------------
# session helpers
# ---------------------------------------------------------------------------------------------
def soc_of(session: Any) -> str:
    """The SoC profile name of a session (a2a3 when pypto does not say)."""
    for attr in ("soc", "soc_name", "profile"):
        v = getattr(session, attr, None)
        if v is None:
            continue
        name = getattr(v, "name", v)
        if isinstance(name, str):
            return name
    return "a2a3"


def rng_for(*key: Any) -> np.random.Generator:
    """A generator seeded from the case's key: every run (and every backend) sees the same data."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


# ---------------------------------------------------------------------------------------------
# sentinels
# ---------------------------------------------------------------------------------------------
SENTINEL_BYTE = 0xA5


def sentinel(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An array whose every byte is 0xA5 (a finite, non-zero, recognisable value in every type)."""
    dt = ref.np_dtype(dtype)
    raw = np.full(int(np.prod(shape, dtype=np.int64)) * dt.itemsize, SENTINEL_BYTE, np.uint8)
    return raw.view(dt).reshape(shape).copy()


# ---------------------------------------------------------------------------------------------
# value generation
# ---------------------------------------------------------------------------------------------
def _float_specials(dt: np.dtype) -> np.ndarray:
    f32 = np.float32
    info_max = {ref.F32: 3.4028234663852886e38, ref.F16: 65504.0, ref.BF16: 3.3895313892515355e38}[dt]
    tiny = {ref.F32: 1.1754943508222875e-38, ref.F16: 6.103515625e-05,
            ref.BF16: 1.1754943508222875e-38}[dt]
    sub = {ref.F32: 1.401298464324817e-45, ref.F16: 5.960464477539063e-08,
           ref.BF16: 9.183549615799121e-41}[dt]
    vals = [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0, np.inf, -np.inf, info_max, -info_max, tiny,
            -tiny, sub, -sub, 3 * sub, tiny - sub, 1.0 + 2.0 ** -10, 2048.0, 60000.0, -60000.0]
    arr = np.array(vals, dtype=np.float64)
    if dt == ref.BF16:
        out = ref.f32_to_bf16(arr.astype(f32))
    else:
        with np.errstate(all="ignore"):
            out = arr.astype(dt)
    nans = _nan_bits(dt)
    return np.concatenate([out, nans.view(dt)])


def _nan_bits(dt: np.dtype) -> np.ndarray:
    """Quiet NaNs: canonical, negative, and with payloads."""
    if dt == ref.F32:
        return np.array([0x7FC00000, 0xFFC00000, 0x7FC00123, 0xFFE54321], dtype=np.uint32)
    if dt == ref.F16:
        return np.array([0x7E00, 0xFE00, 0x7E15, 0xFF01], dtype=np.uint16)
    return np.array([0x7FC0, 0xFFC0, 0x7FC5, 0xFFD1], dtype=np.uint16)   # bf16


def quiet_nans(x: np.ndarray) -> np.ndarray:
    """Set the quiet bit of every NaN (signalling NaNs become quiet ones with the same payload)."""
    dt = x.dtype
    bits = x.view(ref.bits_dtype(dt)).copy()
    nan = np.isnan(x.astype(np.float32))
    bits[nan] |= bits.dtype.type(ref._QUIET[dt])
    return bits.view(dt)


def random_values(rng: np.random.Generator, dtype: Any, shape: tuple[int, ...], *,
                  specials: float = 0.1, raw_bits: float = 0.1, nonzero: bool = False,
                  signalling: bool = False) -> np.ndarray:
    """Random values of ``dtype``: mostly ordinary numbers, plus rounding ties, special values
    (+-0, +-inf, NaNs with payloads, subnormals, extremes) and raw random bit patterns."""
    dt = ref.np_dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    pick = rng.random(n)
    if dt in ref.FLOATS:
        # ordinary values of varied magnitude; "grid" values k * 2^e that make exact ties
        mag = 10.0 ** rng.integers(-3, 4, n)
        normal = rng.standard_normal(n) * mag
        grid = rng.integers(-2048, 2049, n) * np.exp2(rng.integers(-14, 5, n).astype(np.float64))
        base = np.where(rng.random(n) < 0.5, normal, grid).astype(np.float32)
        vals = ref.f32_to_bf16(base) if dt == ref.BF16 else _narrow(base, dt)
        ub = ref.bits_dtype(dt)
        vbits = np.asarray(vals, dtype=dt).view(ub)
        rbits = rng.integers(0, 1 << (8 * dt.itemsize), n, dtype=np.uint64).astype(ub)
        sbits = _float_specials(dt).view(ub)
        vbits = np.where(pick < raw_bits, rbits, vbits)
        vbits = np.where(pick > 1 - specials, sbits[rng.integers(0, len(sbits), n)], vbits)
        vals = vbits.astype(ub).view(dt)
        if not signalling:
            vals = quiet_nans(vals)
        if nonzero:
            zero = vals.astype(np.float32) == 0
            vals[zero] = np.asarray([1.5], dtype=np.float32).astype(dt)[0] \
                if dt != ref.BF16 else ref.f32_to_bf16(np.array([1.5], np.float32))[0]
        return vals.reshape(shape)
    info = np.iinfo(dt)
    full = rng.integers(info.min, int(info.max) + 1, n, dtype=np.int64 if dt != ref.U64 else np.uint64)
    small = rng.integers(-100 if dt.kind == "i" else 0, 101, n)
    ext = np.array([info.min, info.max, info.min + 1, info.max - 1, 0, 1]
                   + ([-1] if dt.kind == "i" else []), dtype=np.int64)
    vals = np.where(pick < 0.5, full, small)
    vals = np.where(pick > 1 - max(specials, 0.1), ext[rng.integers(0, len(ext), n)], vals)
    vals = vals.astype(dt)
    if nonzero:
        vals[vals == 0] = 1
    return vals.reshape(shape)


def _narrow(x32: np.ndarray, dt: np.dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        return x32.astype(dt)


def random_scalar(rng: np.random.Generator, dtype: Any) -> Any:
    """A Python scalar operand suited to ``dtype``: floats may be inexact in the element type but
    never overflow it (a finite scalar that would become inf is an error, as it is for tensor
    data); ints lie in the element type's range (out of range is an error too)."""
    dt = ref.np_dtype(dtype)
    if dt in ref.FLOATS:
        choice = rng.integers(0, 4)
        if choice == 0:
            return float(rng.standard_normal() * 10.0 ** rng.integers(-3, 4))
        if choice == 1:
            return float(rng.integers(-100, 101))
        if choice == 2:
            return [0.1, -0.0, 1.0 / 3.0, 1 + 2.0 ** -11 + 2.0 ** -40, 1e-30, 60000.0, math.inf][
                rng.integers(0, 7)]
        return int(rng.integers(-1000, 1001))
    info = np.iinfo(dt)
    return int(rng.integers(int(info.min), int(info.max) + 1))


# ---------------------------------------------------------------------------------------------
# comparison
# ---------------------------------------------------------------------------------------------
def assert_bits_equal(actual: Any, expected: np.ndarray, *, loose: np.ndarray | None = None,
                      inputs: dict[str, Any] | None = None, what: str = "result") -> None:
    """Assert ``actual`` equals ``expected`` bit for bit (so -0.0 vs 0.0 and NaN payloads count).

    Where ``loose`` is True the ISA leaves the bit pattern open: any NaN is accepted for an
    expected NaN, either signed zero for an expected zero.
    """
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, expected {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    ab = ref.to_bits(actual)
    eb = ref.to_bits(expected)
    bad = ab != eb
    if loose is not None and expected.dtype in ref.FLOATS:
        a32, e32 = actual.astype(np.float32), expected.astype(np.float32)
        either = (np.isnan(a32) & np.isnan(e32)) | ((a32 == 0) & (e32 == 0))
        bad &= ~(np.asarray(loose) & either)
    if not bad.any():
        return
    idx = np.argwhere(bad)
    w = 2 * expected.dtype.itemsize
    lines = [f"{what}: {len(idx)} of {expected.size} elements differ (dtype {expected.dtype}, "
             f"shape {expected.shape}); first ones:"]
    for i in idx[:10]:
        i = tuple(int(v) for v in i)
        ins = ""
        if inputs:
            parts = []
            for k, v in inputs.items():
                v = np.asarray(v)
                if v.ndim == 0:
                    parts.append(f"{k}={v!r}")
                else:
                    parts.append(f"{k}={v[i]!r}(0x{int(ref.to_bits(v)[i]):0{w}x})")
            ins = " with " + ", ".join(parts)
        lines.append(f"  at {i}: got {actual[i]!r} (0x{int(ab[i]):0{w}x}), expected "
                     f"{expected[i]!r} (0x{int(eb[i]):0{w}x}){ins}")
    raise AssertionError("\n".join(lines))


# ---------------------------------------------------------------------------------------------
# hypothesis strategies
# ---------------------------------------------------------------------------------------------
@st.composite
def shapes(draw, max_rank: int = 4, max_size: int = 5000) -> tuple[int, ...]:
    """Shapes of rank 1..max_rank with at most max_size elements."""
    rank = draw(st.integers(1, max_rank))
    dims: list[int] = []
    budget = max_size
    for k in range(rank):
        left = rank - k
        cap = max(1, min(budget, int(round(budget ** (1.0 / left) * 3))))
        d = draw(st.integers(1, cap))
        dims.append(d)
        budget = max(1, budget // d)
    return tuple(dims)


seeds = st.integers(0, 2 ** 32 - 1)
