"""HiFloat8 (a5): the host codec pypto.dtypes.hif8_encode / hif8_decode, the simulator's element
conversion, tensors of codes, C++ emission and the targets that lack the type."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto
import pypto.dtypes as D
from pypto import errors as E
from pypto import pto
from pypto.backends.sim.lib import convert as C

# Codes worked out by hand from the format: sign | dot prefix | exponent (sign-magnitude, top
# magnitude bit implied) | mantissa; 0000 mmm are the denormals 2**(m - 23).
HAND = {0x00: 0.0, 0x01: 2.0 ** -22, 0x07: 2.0 ** -16, 0x08: 1.0, 0x0F: 1.875, 0x10: 2.0,
        0x11: 2.25, 0x18: 0.5, 0x20: 4.0, 0x28: 8.0, 0x30: 0.25, 0x38: 0.125, 0x3F: 0.234375,
        0x40: 16.0, 0x41: 20.0, 0x5C: 2.0 ** -7, 0x60: 256.0, 0x6E: 32768.0, 0x6F: np.inf,
        0x70: 2.0 ** -8, 0x7E: 2.0 ** -15, 0x7F: 1.5 * 2.0 ** -15, 0x88: -1.0, 0xEE: -32768.0,
        0xEF: -np.inf}


def test_hand_decoded_codes():
    got = D.hif8_decode(list(HAND))
    assert got.tolist() == [np.float32(v) for v in HAND.values()]
    assert np.isnan(D.hif8_decode([0x80])[0])


def test_value_set():
    """253 finite values, symmetric, 2**-22 .. 2**15; binade e has 2**mantissa_bits values
    (3 bits for |e| <= 3, 2 to 7, 1 to 15, none for the denormals)."""
    v = D.hif8_decode(np.arange(256)).astype(np.float64)
    fin = v[np.isfinite(v)]
    assert len(fin) == 253 and len(np.unique(fin)) == 253
    pos = np.sort(fin[fin > 0])
    assert pos[0] == 2.0 ** -22 and pos[-1] == 2.0 ** 15
    assert np.array_equal(np.sort(-fin[fin < 0]), pos)
    e = np.floor(np.log2(pos)).astype(int)
    for b in range(-22, 16):
        width = 3 if abs(b) <= 3 else 2 if abs(b) <= 7 else 1 if abs(b) <= 15 else 0
        assert (e == b).sum() == 2 ** width - (b == 15), b    # 1.5 * 2**15 is inf's code


def _nearest(x: float, saturate: bool) -> int:
    """Brute force: the code whose value is nearest x, ties to the larger magnitude."""
    if x != x:
        return 0 if saturate else 0x80
    vals = D.hif8_decode(np.arange(128)).astype(np.float64)
    cand = [(Fraction(float(v)), c) for c, v in enumerate(vals) if np.isfinite(v)]
    cand.append((Fraction(49152), 0x6F))                 # inf's slot, 1.5 * 2**15
    a = abs(x)
    if a == np.inf:
        code = 0x6F
    else:
        code = min(cand, key=lambda vc: (abs(vc[0] - Fraction(a)), -vc[0]))[1]
    if saturate and code == 0x6F:
        code = 0x6E
    return code | (0x80 if x < 0 and code else 0)


finite = st.floats(allow_nan=False, allow_infinity=False, width=32)
tiny = st.floats(min_value=-(2.0 ** -14), max_value=2.0 ** -14, width=32)
spans = st.builds(lambda e, m, s: s * m * 2.0 ** e, st.integers(-25, 17), st.floats(1, 2),
                  st.sampled_from([-1.0, 1.0]))


@settings(max_examples=300, deadline=None)
@given(x=st.one_of(finite, tiny, spans, st.sampled_from([np.inf, -np.inf, np.nan])),
       saturate=st.booleans())
def test_encode_is_the_nearest_value_ties_away(x, saturate):
    assert int(D.hif8_encode([x], saturate=saturate)[0]) == _nearest(float(x), saturate)


def test_encode_round_trips_every_finite_code():
    c = np.arange(256, dtype=np.uint8)
    v = D.hif8_decode(c)
    ok = np.isfinite(v)
    assert np.array_equal(D.hif8_encode(v[ok]), c[ok])


def _step(a: Fraction) -> Fraction:
    """The spacing of hif8 values in a's binade: 2**(e - mantissa bits); 2**e for denormals."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    e -= Fraction(2) ** e > a                      # now 2**e <= a < 2**(e+1)
    if e < -15:
        return Fraction(2) ** max(e, -22)
    return Fraction(2) ** (e - (3 if abs(e) <= 3 else 2 if abs(e) <= 7 else 1))


@pytest.mark.parametrize("rmode", C.RMODES[1:])
@pytest.mark.parametrize("sat", [0, 1])
def test_sim_element_conversion_rounds_with_the_mode(rmode, sat):
    """cvt_bits f32 -> hif8 with each mode, within the finite range: k or k + 1 steps of the
    binade's spacing, as the mode picks (ROUND: the brute-force nearest value)."""
    mode = C.RMODES.index(rmode)
    rng = np.random.default_rng(mode * 2 + sat)
    x = (rng.standard_normal(400) * np.exp2(rng.uniform(-25, 15, 400))).astype(np.float32)
    x = np.clip(x, -32768, 32768)
    for xv in x:
        got = C.cvt_bits(np.float32(xv), C.F32, C.HIF8, mode, sat)
        neg, a = bool(xv < 0), Fraction(float(abs(xv)))
        if rmode == "CAST_ROUND" or a == 0:
            want = _nearest(float(xv), bool(sat))
        else:
            step = _step(a)
            k, rem = divmod(a, step)
            half = rem * 2 - step                  # < 0, == 0, > 0: below, at, above half
            up = {"CAST_TRUNC": False, "CAST_FLOOR": neg, "CAST_CEIL": not neg,
                  "CAST_RINT": half > 0 or (half == 0 and k % 2 == 1),
                  "CAST_ODD": k % 2 == 0}[rmode] and rem != 0
            v = (k + up) * step
            want = int(D.hif8_encode([float(-v if neg else v)])[0])
        assert got == want, (rmode, sat, float(xv), hex(got), hex(want))


@pytest.mark.parametrize("x, rmode, sat, want", [
    (40000.0, "CAST_RINT", 0, 0x6E), (41000.0, "CAST_RINT", 0, 0x6F), (40960.0, "CAST_RINT", 0, 0x6E),
    (40960.0, "CAST_ROUND", 0, 0x6F), (40960.0, "CAST_ROUND", 1, 0x6E), (1e6, "CAST_TRUNC", 0, 0x6E),
    (1e6, "CAST_CEIL", 0, 0x6F), (-1e6, "CAST_CEIL", 0, 0xEE), (-1e6, "CAST_FLOOR", 0, 0xEF),
    (np.inf, "CAST_TRUNC", 0, 0x6F), (-np.inf, "CAST_RINT", 1, 0xEE), (np.nan, "CAST_RINT", 0, 0x80),
    (np.nan, "CAST_RINT", 1, 0x00), (-0.0, "CAST_RINT", 0, 0x00), (-2.0 ** -24, "CAST_FLOOR", 0, 0x81)])
def test_sim_element_conversion_overflow_and_specials(x, rmode, sat, want):
    """Past 2**15: inf (0x6F) when the mode rounds away from zero there, else the largest
    finite; saturation clamps; one zero; NaN is 0x80 (0 when saturating)."""
    assert C.cvt_bits(np.float32(x), C.F32, C.HIF8, C.RMODES.index(rmode), sat) == want


def test_resolve_on_a5_forces_round_half_away_and_saturation():
    for mode in ("CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_TRUNC"):
        for sat in (None, "ON", "OFF"):
            for src in ("f32", "f16"):
                assert C.resolve("a5", src, "hif8", mode, sat) == (C.CAST_ROUND, C.SAT_CLAMP, False)
    assert C.resolve("a5", "f32", "hif8", "CAST_ODD")[2] is True       # a5 CAST_ODD: no-op
    assert C.resolve("a5", "hif8", "f32", "CAST_NONE") == (C.CAST_RINT, C.SAT_CLAMP, False)


def test_tensor_of_values_is_an_error_pointing_at_the_encoder():
    with pytest.raises(E.DTypeError, match="hif8_encode"):
        pypto.Tensor([1.5, 2.0], dtype=pypto.hifloat8)
    with pytest.raises(E.DTypeError, match="hif8_encode"):
        pypto.Tensor(np.array([300], np.int32), dtype=pypto.hifloat8)


def test_tensor_holds_the_codes_and_uint8_arrays_stay_uint8():
    with pypto.init(soc="a5"):
        codes = D.hif8_encode(np.array([[1.0, -2.0, 0.3, 5e4]]))
        t = pypto.Tensor(codes, dtype=pypto.hifloat8)
        assert t.dtype is pypto.hifloat8 and t.nbytes == 4
        assert np.array_equal(t.numpy(), codes)
        assert pypto.Tensor(codes).dtype is pypto.uint8
        assert pypto.dtypes.as_dtype("hif8") is pypto.hifloat8 is pto.hifloat8


@pypto.kernel
def k_cvt_hif8(x, z):
    a = pto.Tile(pto.Vec, pypto.float32, (4, 32))
    h = pto.Tile(pto.Vec, pypto.hifloat8, (4, 32))
    pto.TLOAD(a, x[0:4, 0:32])
    pto.TCVT(h, a, rmode="CAST_ROUND")
    pto.TSTORE(z[0:4, 0:32], h)


def test_emitted_cxx_uses_hifloat8_t():
    with pypto.init(soc="a5"):
        x, z = pypto.zeros((4, 32), pypto.float32), pypto.zeros((4, 32), pypto.hifloat8)
        src = k_cvt_hif8.cpp(x, z)
    assert "__gm__ hifloat8_t *z" in src
    assert "Tile<TileType::Vec, hifloat8_t, 4, 32" in src
    assert "TCVT(h, a, RoundMode::CAST_ROUND);" in src


def test_cpusim_target_names_the_missing_type():
    from pypto.backends.npu.backend import _check_types
    with pypto.init(soc="a5") as s:
        x, z = pypto.zeros((4, 32), pypto.float32), pypto.zeros((4, 32), pypto.hifloat8)
        kern = k_cvt_hif8.trace_for(k_cvt_hif8.signature((x, z)), s.soc)
    with pytest.raises(E.NotSimulatedError, match="hifloat8"):
        _check_types(kern, "cpusim")
