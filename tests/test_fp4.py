"""a5's packed 4-bit floats: float4_e2m1x2 and float4_e1m2x2, two values per byte (low nibble
first). Host data are the packed bytes (uint8); pypto.dtypes.pack_fp4 / unpack_fp4 convert.

The expected codes are written out from the formats' definitions (sign bit, then exponent and
mantissa fields; bias 1; no inf or NaN), not taken from pypto."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto
from pypto import dtypes as D
from pypto import errors as E

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]        # codes 0..7; 8..15 are their negatives
E1M2 = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]


@pytest.mark.parametrize("dt, values", [(pypto.float4_e2m1x2, E2M1), (pypto.float4_e1m2x2, E1M2)])
def test_every_code_round_trips(dt, values):
    vals = values + [-v for v in values]
    codes = list(range(16))
    packed = D.pack_fp4(np.array(vals), dt)
    assert packed.dtype == np.uint8 and packed.shape == (8,)
    assert [int(b) & 15 for b in packed] == codes[0::2]
    assert [int(b) >> 4 for b in packed] == codes[1::2]
    assert D.unpack_fp4(packed, dt).tolist() == vals


def test_rounding_is_to_nearest_even_code_and_saturates():
    got = D.unpack_fp4(D.pack_fp4(np.array([2.5, 5.0, 0.25, 0.75, 7.0, -100.0]), pypto.float4_e2m1x2),
                       pypto.float4_e2m1x2).tolist()
    # 2.5: between 2 (code 4) and 3 (code 5) -> even code 4; 5: 4 (6) and 6 (7) -> 6 -> 4.0
    assert got == [2.0, 4.0, 0.0, 1.0, 6.0, -6.0]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-8, 8, allow_nan=False), min_size=2, max_size=20).filter(lambda v: len(v) % 2 == 0))
def test_packing_picks_a_nearest_value(vals):
    got = D.unpack_fp4(D.pack_fp4(np.array(vals), pypto.float4_e2m1x2), pypto.float4_e2m1x2)
    for v, g in zip(vals, got):
        best = min(abs(abs(v) - c) for c in E2M1) if abs(v) <= 6 else abs(abs(v) - 6.0)
        assert abs(abs(v) - abs(float(g))) <= best + 1e-12


def test_a_tensor_holds_the_packed_bytes_on_the_device():
    with pypto.init(soc="a5"):
        b = D.pack_fp4(np.array([[1.0, -2.0, 3.0, 0.5]]), pypto.float4_e2m1x2)
        t = pypto.Tensor(b, dtype=pypto.float4_e2m1x2)
        assert t.dtype is pypto.float4_e2m1x2 and t.shape == (1, 2) and t.nbytes == 2
        assert np.array_equal(t.numpy(), b)


def test_values_instead_of_bytes_is_a_dtype_error_pointing_at_pack_fp4():
    with pypto.init(soc="a5"):
        with pytest.raises(E.DTypeError, match="pack_fp4"):
            pypto.Tensor([1.5, 2.0], dtype=pypto.float4_e2m1x2)
        with pytest.raises(E.DTypeError, match="packed bytes"):
            pypto.Tensor(np.array([300], np.int32), dtype=pypto.float4_e1m2x2)


def test_pack_errors():
    with pytest.raises(E.DTypeError, match="even"):
        D.pack_fp4(np.array([1.0, 2.0, 3.0]), pypto.float4_e2m1x2)
    with pytest.raises(E.DTypeError, match="NaN"):
        D.pack_fp4(np.array([np.nan, 1.0]), pypto.float4_e2m1x2)
    with pytest.raises(E.DTypeError, match="not a packed"):
        D.pack_fp4(np.array([1.0, 2.0]), pypto.float16)


def test_uint8_arrays_stay_uint8():
    assert D.as_dtype(np.uint8) is pypto.uint8           # the packed types never claim uint8 data


def test_strict_checks_option_is_validated():
    assert pypto.SimOptions(checks="strict").checks == "strict"
    with pytest.raises(E.ConfigError, match="checks"):
        pypto.SimOptions(checks="paranoid")
