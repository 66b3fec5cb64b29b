"""Boxed (fractal) tiles work where the ISA allows them and are refused with a LayoutError
naming the instruction and the legal layouts elsewhere, never computed with the wrong strides."""
from __future__ import annotations

import numpy as np
import pytest

import pypto
from pypto import errors as E
from pypto import pto

MODES = ["compiled", "eager"]


def _nz_offset(r, c, rows, c0):
    """pto-isa-semantics 3.3, Nz with 16 x c0 inner boxes, written out independently."""
    return (c // c0) * (rows * c0) + (r // 16) * (16 * c0) + (r % 16) * c0 + (c % c0)


@pytest.mark.parametrize("mode", MODES)
def test_tload_tstore_through_an_nz_mat_tile(mode):
    rows, cols, c0 = 32, 48, 16                       # f16: inner box 16 x 16

    @pypto.kernel(mode=mode, checks="off")        # reads nz's bytes through nd on purpose
    def k(x, logical, raw):
        nz = pto.Tile(pto.Mat, pto.float16, (rows, cols), blayout=pto.ColMajor, slayout=pto.RowMajor)
        nd = pto.Tile(pto.Mat, pto.float16, (1, rows * cols))
        pto.TASSIGN(nz, 0)
        pto.TASSIGN(nd, 0)                            # the same bytes, read as one flat row
        pto.TLOAD(nz, x)
        pto.TSTORE(logical, nz)
        pto.TSTORE(raw, nd)

    pypto.init(soc="a2a3")
    try:
        xh = (np.arange(rows * cols) % 2039).astype(np.float16).reshape(rows, cols)
        x = pypto.Tensor(xh)
        logical, raw = pypto.zeros((rows, cols), pypto.float16), pypto.zeros((1, rows * cols), pypto.float16)
        k(x, logical, raw)
        assert np.array_equal(logical.numpy(), xh)
        want = np.empty(rows * cols, np.float16)
        for r in range(rows):
            for c in range(cols):
                want[_nz_offset(r, c, rows, c0)] = xh[r, c]
        assert np.array_equal(raw.numpy()[0], want)
    finally:
        pypto.finalize()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bl,sl,name", [("ColMajor", "RowMajor", "Nz"), ("RowMajor", "ColMajor", "Zn"),
                                        ("RowMajor", "RowMajor", "Zz")])
def test_boxed_vec_tile_is_refused_by_elementwise_ops(mode, bl, sl, name):
    @pypto.kernel(mode=mode)
    def k(z):
        a = pto.Tile(pto.Vec, pto.float32, (16, 64), blayout=bl, slayout=sl)
        b = pto.Tile(pto.Vec, pto.float32, (16, 64), blayout=bl, slayout=sl)
        pto.TADD(b, a, a)

    pypto.init()
    try:
        with pytest.raises(E.LayoutError) as ei:
            k(pypto.zeros((16, 64), pypto.float32))
        msg = str(ei.value)
        assert "TADD" in msg and name in msg and "ND or DN" in msg and "pto.TADD(b, a, a)" in msg
    finally:
        pypto.finalize()


def test_boxed_vec_load_is_refused_on_a2a3():
    @pypto.kernel
    def k(x):
        t = pto.Tile(pto.Vec, pto.float16, (16, 16), blayout=pto.ColMajor, slayout=pto.RowMajor)
        pto.TLOAD(t, x)

    pypto.init(soc="a2a3")
    try:
        with pytest.raises(E.LayoutError, match="matching layouts"):
            k(pypto.zeros((16, 16), pypto.float16))
    finally:
        pypto.finalize()


@pytest.mark.parametrize("mode", MODES)
def test_dn_tiles_compute_elementwise(mode):
    """ColMajor (DN) tiles go through the generic offset path; compare with numpy."""
    @pypto.kernel(mode=mode)
    def k(x, y, z):
        a = pto.Tile(pto.Vec, pto.float32, (16, 24), blayout=pto.ColMajor, valid=(13, 20))
        b = pto.Tile(pto.Vec, pto.float32, (16, 24), blayout=pto.ColMajor, valid=(13, 20))
        c = pto.Tile(pto.Vec, pto.float32, (16, 24), valid=(13, 20))       # ND destination
        pto.TLOAD(a, x)
        pto.TLOAD(b, y)
        pto.TMUL(c, a, b)
        pto.TADDS(c, c, 0.5)
        pto.TSTORE(z, c)

    pypto.init()
    try:
        rng = np.random.default_rng(5)
        xh, yh = rng.standard_normal((2, 13, 20)).astype(np.float32)
        z = pypto.zeros((13, 20), pypto.float32)
        k(pypto.Tensor(xh), pypto.Tensor(yh), z)
        assert np.array_equal(z.numpy(), (xh * yh) + np.float32(0.5))
    finally:
        pypto.finalize()
