"""Boxed (fractal) tiles work where the ISA allows them and are refused with a LayoutError
naming the instruction and the legal layouts elsewhere, never computed with the wrong strides."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# -- the simulator's one copy routine, against the layout formula written out ---------------------
def _desc(kind: str, rows: int, cols: int, ir: int, ic: int) -> tuple:
    """(IR, IC, BRS, BCS, irs, ics) of a rows x cols tile (pto-isa-semantics 3.3), by hand."""
    if kind == "ND":
        return (1, 1, cols, 1, 0, 0)
    inner = (ic, 1) if kind in ("Nz", "Zz") else (1, ir)          # box rows / box columns first
    if kind in ("Nz", "Nn"):
        return (ir, ic, ir * ic, rows * ic) + inner
    return (ir, ic, cols * ir, ir * ic) + inner


def _at(d, r, c):
    ir, ic, brs, bcs, irs, ics = d
    return (r // ir) * brs + (c // ic) * bcs + (r % ir) * irs + (c % ic) * ics


@functools.lru_cache(maxsize=None)
def _copy_runs():
    """layout.copy_runs called from jitted code, as the cube and the moves call it (it has no
    Python entry point: lib/jit.py's XCALLED)."""
    from numba import njit
    from pypto.backends.sim.lib.layout import copy_runs

    @njit(cache=False)
    def call(dst, db, dl, dr0, dc0, src, sb, sl, sr0, sc0, rows, cols, add, stream=False):
        copy_runs(dst, db, dl, dr0, dc0, src, sb, sl, sr0, sc0, rows, cols, add, stream)
    return call


@settings(max_examples=80, deadline=None)
@given(kinds=st.tuples(st.sampled_from(["ND", "Nz", "Zz", "Zn", "Nn"]),
                       st.sampled_from(["ND", "Nz", "Zz", "Zn", "Nn"])),
       box=st.sampled_from([(16, 16), (16, 8), (16, 32)]), aligned=st.booleans(), add=st.booleans(),
       stream=st.booleans(), dst_type=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 2 ** 32 - 1))
def test_copy_runs_equals_the_element_by_element_copy(kinds, box, aligned, add, stream, dst_type,
                                                      seed):
    """Every layout pair, box-aligned windows (whole boxes move at once when both layouts box
    alike, and transpose box by box when their inner orders differ; a boxed side's 16-line groups
    move box row by box row, streamed or not) and unaligned ones, more lines than one 16-line
    block, plain and accumulating, same and converting element types."""
    copy_runs = _copy_runs()
    rng = np.random.default_rng(seed)
    ir, ic = box
    rows, cols = 3 * ir, 3 * ic
    dd, sd = (np.array(_desc(k, rows, cols, ir, ic), np.int64) for k in kinds)
    if aligned:
        r0, c0, n, m = ir, ic, 2 * ir, 2 * ic
    else:
        r0, c0 = int(rng.integers(0, ir)), int(rng.integers(0, ic))
        n, m = int(rng.integers(1, rows - r0 + 1)), int(rng.integers(1, cols - c0 + 1))
    src = rng.standard_normal(rows * cols).astype(np.float32)
    dst = rng.standard_normal(rows * cols).astype(dst_type)
    want = dst.copy()
    for i in range(n):
        for j in range(m):
            v = src[_at(sd, r0 + i, c0 + j)]
            at = _at(dd, r0 + i, c0 + j)
            want[at] = want[at] + v if add else v
    copy_runs(dst, 0, tuple(dd), r0, c0, src, 0, tuple(sd), r0, c0, n, m, add, stream)
    np.testing.assert_array_equal(dst, want)


@pytest.mark.parametrize("kinds", [("Nz", "ND"), ("ND", "Nz"), ("ND", "Zz"), ("Zn", "ND")])
@pytest.mark.parametrize("r0", [0, 8, 16])
@pytest.mark.parametrize("box,dtype", [((16, 16), np.uint16), ((16, 8), np.float32),
                                       ((16, 32), np.uint8)])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("tail", [False, True])
def test_copy_runs_moves_box_rows_a_group_at_a_time(kinds, r0, box, dtype, stream, tail):
    """A GM <-> boxed move takes 16 lines per call when each group's lines are evenly spaced: a
    window starting 8 rows into a box has groups that cross a box edge, and a window 8 lines and
    half a box wider (``tail``) ends in a short group and a short run; every element must still
    land where the layouts put it."""
    copy_runs = _copy_runs()
    ir, ic = box
    rows, cols = 4 * ir, 4 * ic
    n, m = 2 * ir + 8 * tail, 2 * ic + ic // 2 * tail
    dd, sd = (np.array(_desc(k, rows, cols, ir, ic), np.int64) for k in kinds)
    src = np.arange(rows * cols).astype(dtype)
    dst = np.zeros(rows * cols, dtype)
    want = dst.copy()
    for i in range(n):
        for j in range(m):
            want[_at(dd, r0 + i, ic + j)] = src[_at(sd, r0 + i, ic + j)]
    copy_runs(dst, 0, tuple(dd), r0, ic, src, 0, tuple(sd), r0, ic, n, m, False, stream)
    np.testing.assert_array_equal(dst, want)


@pytest.mark.parametrize("kinds", [("Zn", "Nz"), ("Nz", "Zn"), ("Zz", "Nn"), ("Nn", "Zz"),
                                   ("Zn", "Zz"), ("Nz", "Nn")])
@pytest.mark.parametrize("box", [(16, 16), (16, 8), (16, 32)])
@pytest.mark.parametrize("dtype", [np.uint16, np.float32, np.uint8])
def test_copy_runs_transposes_whole_boxes(kinds, box, dtype):
    """Layouts boxed alike with transposed inner orders (L1 Nz -> L0B Zn), over a box-aligned
    window: every element lands where the layout formula puts it (the 16 x 16 boxes take a
    vector transpose)."""
    copy_runs = _copy_runs()
    ir, ic = box
    rows, cols = 3 * ir, 4 * ic
    dd, sd = (np.array(_desc(k, rows, cols, ir, ic), np.int64) for k in kinds)
    src = np.arange(rows * cols).astype(dtype)
    dst = np.zeros(rows * cols, dtype)
    want = dst.copy()
    for i in range(2 * ir):
        for j in range(3 * ic):
            want[_at(dd, ir + i, j)] = src[_at(sd, ir + i, j)]
    copy_runs(dst, 0, tuple(dd), ir, 0, src, 0, tuple(sd), ir, 0, 2 * ir, 3 * ic, False)
    np.testing.assert_array_equal(dst, want)
