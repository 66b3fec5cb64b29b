"""TCVT conformance (every legal pair of each SoC, every rounding mode and saturation setting,
special values, runtime valid regions): the cases of test_units.py for TCVT, in their own file so
the test workers share the load. Compared bit for bit with ``reference.cast``."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pypto

from . import reference as ref
from .conftest import every_case_eager, slow_if
from .helpers import assert_bits_equal, random_values, rng_for, seeds, sentinel
from .test_units import (ALL_MODES, CC, CR, KEY_PAIRS, PAIR_CASES, PROPERTY, SOCS, T, _init_soc, _pair_id,
                         cvt_inputs, cvt_observe_kernel, legal_pairs, observe_cases,
                         rotating_modes, run_cvt_modes, run_cvt_observe)


@every_case_eager
@slow_if(lambda p: p["target"].mode == "compiled" and p["case"][3] % 4 != 0)
@pytest.mark.parametrize("case", PAIR_CASES, ids=[_pair_id(c) for c in PAIR_CASES])
def test_cvt_every_pair(pto_init, target, case):
    """Every legal pair of each SoC; all seven rounding modes, saturation rotating over
    default / ON / OFF from pair to pair (the full cross is test_cvt_all_modes_every_pair)."""
    soc_, s, d, i = case
    _init_soc(pto_init, target, soc_)
    run_cvt_modes(soc_, s, d, rotating_modes(i), "rotating")


@pytest.mark.parametrize("pair", KEY_PAIRS, ids=[f"{s}>{d}" for s, d in KEY_PAIRS])
def test_cvt_all_modes_key_pairs(soc, pair):
    """Every (rmode, satMode) combination for the pairs with the most distinct rules."""
    run_cvt_modes(soc, pair[0], pair[1], ALL_MODES, "all")


@pytest.mark.slow
@pytest.mark.parametrize("case", PAIR_CASES, ids=[_pair_id(c) for c in PAIR_CASES])
def test_cvt_all_modes_every_pair(pto_init, target, case):
    soc_, s, d, _ = case
    _init_soc(pto_init, target, soc_)
    run_cvt_modes(soc_, s, d, ALL_MODES, "all")


def test_cvt_runtime_region_writes_only_valid(soc):
    for k, (s, d, m, sat) in enumerate(observe_cases(soc)):
        rng = rng_for("cvt-observe", soc, k)
        for vr, vc in [(3, 17), (CR, CC), (1, 1)]:
            run_cvt_observe(soc, s, d, m, sat, vr, vc, rng)


@pytest.mark.parametrize("pair", [("f32", "bf16"), ("f32", "i32"), ("i16", "f32")],
                         ids="{0[0]}>{0[1]}".format)
def test_cvt_odd_on_other_pairs(soc, pair):
    """CAST_ODD exists for f32 -> f16 only: on a5 TCVT leaves dst exactly as it was (checked
    against the prefill itself, not only through the reference); a2a3 uses CAST_NONE."""
    s, d = pair
    if not ref.is_cvt_legal(s, d, soc):
        pytest.skip(f"{s} -> {d} does not exist on {soc}")
    rng = rng_for("odd-other", soc, pair)
    x = cvt_inputs(rng, s, d, (CR, CC))
    prefill = random_values(rng, d, (CR, CC))
    z = T(sentinel((CR, CC), d))
    cvt_observe_kernel("CAST_ODD", None)(T(x), T(prefill), z, 5, 37)
    got = z.numpy()
    if soc == "a5":
        assert_bits_equal(got, prefill, inputs={"x": x}, what=f"a5 CAST_ODD {s}->{d}: dst unchanged")
    else:
        expected = prefill.copy()
        expected[:5, :37] = ref.cast(x[:5, :37], s, d, soc, "CAST_NONE")[0]
        assert_bits_equal(got, expected, inputs={"x": x}, what=f"a2a3 CAST_ODD {s}->{d} = CAST_NONE")


def test_cvt_property(soc):
    @PROPERTY
    @given(case=st.sampled_from(observe_cases(soc)), vr=st.integers(1, CR), vc=st.integers(1, CC),
           seed=seeds)
    def check(case, vr, vc, seed):
        s, d, m, sat = case
        run_cvt_observe(soc, s, d, m, sat, vr, vc, np.random.default_rng(seed))
    check()


def test_cvt_table_matches_reference():
    """The reference's pairs are pypto's table without hif8 (no numpy type; test_hif8.py has its
    three a5 pairs)."""
    for soc_ in SOCS:
        assert sorted(legal_pairs(soc_)) == sorted(ref.CVT_LEGAL[soc_]), soc_
        hif8 = [p for p in pypto.isa.TABLE["TCVT"].dtypes_on(soc_) if "hif8" in p]
        assert len(hif8) == (3 if soc_ == "a5" else 0)
