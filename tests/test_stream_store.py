"""TSTORE writes GM runs of at least 2 KiB with non-temporal stores (backends/sim/lib/layout.py
``_stream``): the elements before the first 64-byte boundary, the whole lines, the tail, and the
short runs stored the ordinary way must land exactly where numpy puts them, and nothing else in GM
may change. Offsets and widths are drawn so every split occurs, in every element size."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pypto
from pypto import pto

WIDTH = 4096                     # elements per tile row: 4 KiB (int8) to 32 KiB (int64) a line
ROWS = 3
DTYPES = [pypto.int8, pypto.float16, pypto.int32, pypto.float32, pypto.int64]
MODES = ["compiled", "eager"]


def _store_row(x, z, off, w):
    t = pto.Tile(pto.Vec, x.dtype, (1, WIDTH), valid=pto.DYNAMIC)
    t.set_valid(1, w)
    pto.TLOAD(t, x[0:w])
    pto.TSTORE(z[off:off + w], t)


def _store_rows(x, z, r0, c0, w):
    """Each of the tile's rows is its own run, GM's row pitch apart."""
    t = pto.Tile(pto.Vec, x.dtype, (ROWS, WIDTH), valid=pto.DYNAMIC)
    t.set_valid(ROWS, w)
    pto.TLOAD(t, x[0:ROWS, 0:w])
    pto.TSTORE(z[r0:r0 + ROWS, c0:c0 + w], t)


KERNELS = {(fn.__name__, m): pypto.kernel(fn, mode=m, dynamic_shapes=True)
           for fn in (_store_row, _store_rows) for m in MODES}


def _values(shape, dt, rng) -> np.ndarray:
    return rng.integers(-100, 100, shape).astype(dt.np)


@pytest.fixture(scope="module", autouse=True)
def session():
    pypto.init()
    yield
    pypto.finalize()


WIDTHS = st.one_of(st.integers(1, 600), st.integers(600, WIDTH))


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=25, deadline=None)
@given(dt=st.sampled_from(DTYPES), off=st.integers(0, 70), w=WIDTHS, seed=st.integers(0, 2 ** 16))
def test_one_long_run_lands_exactly(mode, dt, off, w, seed):
    rng = np.random.default_rng(seed)
    xh, before = _values(WIDTH, dt, rng), _values(WIDTH + 80, dt, rng)
    z = pypto.Tensor(before)
    KERNELS["_store_row", mode](pypto.Tensor(xh), z, off, w)
    want = before.copy()
    want[off:off + w] = xh[:w]
    np.testing.assert_array_equal(z.numpy(), want)


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=15, deadline=None)
@given(dt=st.sampled_from(DTYPES), r0=st.integers(0, 2), c0=st.integers(0, 70), w=WIDTHS,
       pitch=st.integers(0, 40), seed=st.integers(0, 2 ** 16))
def test_rows_a_pitch_apart_land_exactly(mode, dt, r0, c0, w, pitch, seed):
    rng = np.random.default_rng(seed)
    xh = _values((ROWS, WIDTH), dt, rng)
    before = _values((ROWS + 2, WIDTH + 70 + pitch), dt, rng)
    z = pypto.Tensor(before)
    KERNELS["_store_rows", mode](pypto.Tensor(xh), z, r0, c0, w)
    want = before.copy()
    want[r0:r0 + ROWS, c0:c0 + w] = xh[:, :w]
    np.testing.assert_array_equal(z.numpy(), want)
