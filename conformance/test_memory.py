"""Conformance of the memory and data-movement family for Vec tiles against conformance/ref_memory.py:
TLOAD/TSTORE (ND, DN, NZ; padding; atomic add), TPREFETCH, MGATHER/MSCATTER, TFILLPAD (+INPLACE,
EXPAND), TMOV, TEXTRACT/TINSERT, TRESHAPE (aliasing), TTRANS, their trace-time errors and the
seed-level gather / scatter / trans.

Kernels are built once per (SoC, dtype, shape) and take their valid regions, offsets and windows
as runtime arguments, so the quick tier compiles one kernel per dtype and family; the full tier
(slow) sweeps every pad value and layout.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto
from pypto import errors as E
from pypto import pto

from . import ref_memory as R
from . import reference as ref
from .conftest import keep_if, slow_if
from .helpers import assert_bits_equal, random_values, rng_for, sentinel

LEGAL = {"a2a3": ("f32", "f16", "bf16", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"),
         "a5": ("f32", "f16", "bf16", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "e4m3", "e5m2")}
VEC = {"a2a3": ("f32", "f16", "bf16", "i8", "u8", "i16", "u16", "i32", "u32"),
       "a5": ("f32", "f16", "bf16", "i8", "u8", "i16", "u16", "i32", "u32", "e4m3", "e5m2")}
PADS = ("null", "zero", "min", "max")
SOC_DTYPES = [(s, d) for s in ("a2a3", "a5") for d in LEGAL[s]]
VEC_DTYPES = [(s, d) for s in ("a2a3", "a5") for d in VEC[s]]
PROPERTY = settings(max_examples=10, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _sim_only(params) -> bool:
    """Cases only the simulator runs: run-time index / window errors (the NPU does no bounds check
    and pypto's NPU backends emit no guard for them, so natively the case would read or write out
    of bounds), cases that abort pto-isa's CPU backend (its TMOV asserts equal valid regions) or
    read through aliased tiles (TASSIGN does nothing there), and simulator limitations."""
    t = params.get("target")
    return t is None or t.backend == "sim"


def values(rng, dtype: str, shape) -> np.ndarray:
    """Random values with specials; fp8 as random bit patterns."""
    dt = ref.np_dtype(dtype)
    if dt in (ref.E4M3, ref.E5M2, ref.U64):
        n = int(np.prod(shape)) * dt.itemsize
        return rng.integers(0, 256, n, dtype=np.uint8).view(dt).reshape(shape)
    return random_values(rng, dtype, shape)


def pto_dt(dtype: str):
    return getattr(pto, ref.LONG[ref.np_dtype(dtype)])


def pad_for(dtype: str) -> str:
    """One pad value per dtype in the quick tier, rotating over the four."""
    return PADS[zlib.crc32(dtype.encode()) % 4]


def tensor(a) -> pypto.Tensor:
    return pypto.Tensor(np.ascontiguousarray(a))


# =============================================================================================
# TLOAD / TSTORE, ND and DN
# =============================================================================================
ND_SHAPE = (8, 64)              # 64 columns: whole 32-byte blocks for every element size
DN_SHAPE = (64, 8)
GM_SHAPES = {"ND": (16, 96), "DN": (96, 16)}
_ND_KERNELS: dict = {}


def _nd_kernel(pad: str, layout: str):
    """Prefill the whole tile, TLOAD a runtime window of x into a runtime valid region, store the
    whole tile, and TSTORE the valid region back into a runtime window of win."""
    key = (pad, layout)
    if key in _ND_KERNELS:
        return _ND_KERNELS[key]
    shape = ND_SHAPE if layout == "ND" else DN_SHAPE
    bl = pto.RowMajor if layout == "ND" else pto.ColMajor
    pv = getattr(pto, "Pad" + pad.capitalize())

    def k_tload(pre, x, out, win, vr, vc, r0, c0):
        t = pto.Tile(pto.Vec, x.dtype, shape, blayout=bl, valid=pto.DYNAMIC, pad=pv)
        pto.TLOAD(t, pre[:, :])
        t.set_valid(vr, vc)
        pto.TLOAD(t, x[r0:r0 + vr, c0:c0 + vc])
        pto.TSTORE(win[r0:r0 + vr, c0:c0 + vc], t)
        t.set_valid(shape[0], shape[1])
        pto.TSTORE(out[:, :], t)
    k_tload.__name__ = f"k_tload_{pad}_{layout}"
    _ND_KERNELS[key] = pypto.kernel(k_tload)
    return _ND_KERNELS[key]


def _regions(shape):
    r, c = shape
    if r < c:                                   # ND (8, 64)
        return [(r, c), (r - 3, c - 5), (1, c), (r, 1), (2, 3), (r - 1, 33)]
    return [(r, c), (r - 5, c - 3), (1, c), (r, 1), (3, 2), (33, c - 1)]     # DN (64, 8)


def _run_nd(dtype, pad, layout, regions, rng):
    shape = ND_SHAPE if layout == "ND" else DN_SHAPE
    GM_SHAPE = GM_SHAPES[layout]
    k = _nd_kernel(pad, layout)
    for vr, vc in regions:
        r0, c0 = int(rng.integers(0, GM_SHAPE[0] - vr + 1)), int(rng.integers(0, GM_SHAPE[1] - vc + 1))
        pre, x = values(rng, dtype, shape), values(rng, dtype, GM_SHAPE)
        win0 = sentinel(GM_SHAPE, dtype)
        out, win = tensor(sentinel(shape, dtype)), tensor(win0)
        k(tensor(pre), tensor(x), out, win, vr, vc, r0, c0)
        block = x[r0:r0 + vr, c0:c0 + vc]
        what = f"TLOAD {dtype} {layout} pad={pad} valid ({vr},{vc}) at ({r0},{c0})"
        assert_bits_equal(out.numpy(), R.tload(pre, block, pad, layout), what=what)
        assert_bits_equal(win.numpy(), R.tstore(win0, block, (vr, vc), (r0, c0)), what="TSTORE: " + what)


@pytest.mark.parametrize("soc,dtype", SOC_DTYPES, ids=[f"{s}-{d}" for s, d in SOC_DTYPES])
def test_tload_tstore_nd(target, pto_init, soc, dtype):
    """Every legal dtype per SoC: the valid region from a GM window, the NPU's partial-block pad
    (a rotating pad value), everything else untouched; TSTORE writes exactly the window."""
    pad = pad_for(dtype) if not (soc == "a5" and dtype in ("i64", "u64")) else "zero"
    pto_init(soc=soc)
    _run_nd(dtype, pad, "ND", _regions(ND_SHAPE), rng_for("nd", soc, dtype))


DN_CASES = [("a2a3", "f32", "max"), ("a2a3", "bf16", "max"), ("a2a3", "i8", "min"), ("a2a3", "f32", "null"),
            ("a5", "e4m3", "max"), ("a5", "f16", "min")]        # every other pair: the full tier


@pytest.mark.parametrize("soc,dtype,pad", DN_CASES, ids=[f"{s}-{d}-{p}" for s, d, p in DN_CASES])
def test_tload_tstore_dn(target, pto_init, soc, dtype, pad):
    """DN tiles (from ND slices, element by element): the pad covers rows [validRow, roundup) of
    each copied column."""
    pto_init(soc=soc)
    _run_nd(dtype, pad, "DN", _regions(DN_SHAPE), rng_for("dn", soc, dtype, pad))


SWEEP = [(s, d, p, lay) for s in ("a2a3", "a5") for d in LEGAL[s] for p in PADS for lay in ("ND", "DN")
         if not (s == "a5" and d in ("i64", "u64") and p in ("min", "max"))]


@pytest.mark.slow
@pytest.mark.parametrize("soc,dtype,pad,layout", SWEEP, ids=[f"{s}-{d}-{p}-{lay}" for s, d, p, lay in SWEEP])
def test_tload_pad_sweep(target, pto_init, soc, dtype, pad, layout):
    pto_init(soc=soc)
    shape = ND_SHAPE if layout == "ND" else DN_SHAPE
    _run_nd(dtype, pad, layout, _regions(shape), rng_for("sweep", soc, dtype, pad, layout))


def _dn_view_kernel():
    def k_dnview(x, out, vr, vc):
        t = pto.Tile(pto.Vec, x.dtype, DN_SHAPE, blayout=pto.ColMajor, valid=pto.DYNAMIC, pad=pto.PadMax)
        t.set_valid(vr, vc)
        pto.TLOAD(t, pto.GlobalTensor(x, (1, 1, 1, vr, vc), (512, 512, 512, 1, 64), layout=pto.DN))
        pto.TSTORE(pto.GlobalTensor(out, (1, 1, 1, vr, vc), (512, 512, 512, 1, 64), layout=pto.DN), t)
    return pypto.kernel(k_dnview)


K_DNVIEW = _dn_view_kernel()


@pytest.mark.parametrize("dtype", ["f16"])
def test_tload_tstore_dn_globaltensor(target, pto_init, dtype):
    """A DN GlobalTensor (column-major GM, stride 1 down a column) into a DN tile and back."""
    pto_init()
    rng = rng_for("dnview")
    g = values(rng, dtype, (8, 64))                     # column c of M is row c of g
    for vr, vc in [(64, 8), (37, 3), (1, 1)]:
        out0 = sentinel((8, 64), dtype)
        out = tensor(out0)
        K_DNVIEW(tensor(g), out, vr, vc)
        want = out0.copy()
        want[:vc, :vr] = g[:vc, :vr]
        assert_bits_equal(out.numpy(), want, what=f"DN view ({vr},{vc})")


@pytest.mark.parametrize("dtype", ["f32"])
@given(data=st.data())
@PROPERTY
def test_tload_tstore_property(target, pto_init, dtype, data):
    pto_init()
    vr = data.draw(st.integers(1, ND_SHAPE[0]))
    vc = data.draw(st.integers(1, ND_SHAPE[1]))
    pad = data.draw(st.sampled_from(PADS[1:3]))
    _run_nd(dtype, pad, "ND", [(vr, vc)], rng_for("prop", vr, vc))


def _view5_kernel(layout: str):
    """TLOAD a 5-D view of x (runtime shape and strides, contiguous along the tile's lines) into an
    unboxed tile, TSTORE it into another 5-D view of y: every outer dimension of the ROW / COL
    mappings (pto-isa-semantics 4.2) at once."""
    bl = pto.RowMajor if layout == "ND" else pto.ColMajor
    shape = (16, 32) if layout == "ND" else (32, 16)

    def k_view5(x, y, s0, s1, s2, s3, s4, a0, a1, a2, a3, b0, b1, b2, b3):
        t = pto.Tile(pto.Vec, pto.float32, shape, blayout=bl, valid=pto.DYNAMIC, pad=pto.PadNull)
        if layout == "ND":
            t.set_valid(s0 * s1 * s2 * s3, s4)
            src = pto.GlobalTensor(x, (s0, s1, s2, s3, s4), (a0, a1, a2, a3, 1))
            dst = pto.GlobalTensor(y, (s0, s1, s2, s3, s4), (b0, b1, b2, b3, 1))
        else:
            t.set_valid(s3, s0 * s1 * s2 * s4)
            src = pto.GlobalTensor(x, (s0, s1, s2, s3, s4), (a0, a1, a2, 1, a3), layout=pto.DN)
            dst = pto.GlobalTensor(y, (s0, s1, s2, s3, s4), (b0, b1, b2, 1, b3), layout=pto.DN)
        pto.TLOAD(t, src)
        pto.TSTORE(dst, t)
    k_view5.__name__ = f"k_view5_{layout}"
    return pypto.kernel(k_view5)


K_VIEW5 = {lay: _view5_kernel(lay) for lay in ("ND", "DN")}


def _strides5(data, shape, line_axis: int) -> tuple:
    """Element strides of a 5-D view: 1 along line_axis, the others each past the extent of the
    axes inside it plus a random gap (so views never overlap themselves)."""
    order = [line_axis] + [k for k in (4, 3, 2, 1, 0) if k != line_axis]
    strides, span = [0] * 5, 1
    for k in order:
        strides[k] = 1 if k == line_axis else span + data.draw(st.integers(0, 3))
        span = strides[k] * shape[k]
    return tuple(strides), span


@pytest.mark.parametrize("layout", ["ND", "DN"])
@given(data=st.data())
@PROPERTY
def test_tload_tstore_5d_views_property(target, pto_init, layout, data):
    """Every outer dimension of a 5-D ND / DN view moves into the right tile lines and back,
    against numpy's strided views of the same GM arrays."""
    pto_init()
    line = 4 if layout == "ND" else 3
    outer = data.draw(st.tuples(*(st.integers(1, 2) for _ in range(3))))
    inner = data.draw(st.integers(1, 16 // int(np.prod(outer))))
    n = data.draw(st.integers(1, 32))
    shape = outer + ((inner, n) if layout == "ND" else (n, inner))
    ta, na = _strides5(data, shape, line)
    tb, nb = _strides5(data, shape, line)
    rng = rng_for("view5", layout, shape, ta, tb)
    x = values(rng, "f32", (na,))
    y0 = sentinel((nb,), "f32")
    y = tensor(y0)
    free = [t for k, t in enumerate(ta) if k != line]
    out = [t for k, t in enumerate(tb) if k != line]
    K_VIEW5[layout](tensor(x), y, *shape, *free, *out)
    want = y0.copy()
    view = lambda a, t: np.lib.stride_tricks.as_strided(a, shape, tuple(s * 4 for s in t))  # noqa: E731
    view(want, tb)[...] = view(x, ta)
    assert_bits_equal(y.numpy(), want, what=f"{layout} view {shape} strides {ta} -> {tb}")


# =============================================================================================
# NZ views <-> Nz tiles
# =============================================================================================
NZ_TYPES = {"a2a3": ("f32", "f16", "bf16", "i8"), "a5": ("e4m3", "u32")}
NZ_CASES = [(s, d) for s in NZ_TYPES for d in NZ_TYPES[s]]
_NZ: dict = {}


def _nz_geometry(dtype):
    """B = 2 batches of C1 = 2 column groups, R1 = 1 row group (16 rows), with gaps between them."""
    c0 = R.c0_of(dtype)
    t1, t0 = 24 * c0, 56 * c0
    return c0, (2, 2, 1, 16, c0), (t0, t1, 16 * c0, c0, 1), t0 + t1 + 16 * c0


def _nz_kernel(dtype):
    if dtype in _NZ:
        return _NZ[dtype]
    c0, shape5, stride5, _ = _nz_geometry(dtype)
    rows, cols = 32, 4 * c0

    def k_nz(pre, x, raw, z):
        nz = pto.Tile(pto.Vec, x.dtype, (rows, cols), blayout=pto.ColMajor, slayout=pto.RowMajor,
                      valid=(16, cols), pad=pto.PadMax)
        nd = pto.Tile(pto.Vec, x.dtype, (1, rows * cols))
        pto.TASSIGN(nz, 0)
        pto.TASSIGN(nd, 0)                            # the same bytes as one flat row
        pto.TLOAD(nd, pre[:, :])
        pto.TLOAD(nz, pto.GlobalTensor(x, shape5, stride5, layout=pto.NZ))
        pto.TSTORE(raw[:, :], nd)
        pto.TSTORE(pto.GlobalTensor(z, shape5, stride5, layout=pto.NZ), nz)
    k_nz.__name__ = f"k_nz_{dtype}"
    _NZ[dtype] = pypto.kernel(k_nz, checks="off")   # aliases tiles and skips flags on purpose
    return _NZ[dtype]


@pytest.mark.parametrize("soc,dtype", NZ_CASES, ids=[f"{s}-{d}" for s, d in NZ_CASES])
def test_nz_view_roundtrip(target, pto_init, soc, dtype):
    """NZ [B, C1, R1, 16, c0] -> Nz tile: tile row i2*16 + i3, column (i0*C1 + i1)*c0 + i4, stored
    at the Nz offsets of section 3.3; nothing padded (whole blocks), the rest untouched; TSTORE
    back to the NZ view writes exactly the view's elements."""
    pto_init(soc=soc)
    c0, shape5, stride5, n = _nz_geometry(dtype)
    rows, cols = 32, 4 * c0
    rng = rng_for("nz", soc, dtype)
    x = values(rng, dtype, (n,))
    pre = values(rng, dtype, (1, rows * cols))
    z0 = sentinel((n,), dtype)
    raw, z = tensor(sentinel((1, rows * cols), dtype)), tensor(z0)
    _nz_kernel(dtype)(tensor(pre), tensor(x), raw, z)
    gm5 = np.lib.stride_tricks.as_strided(x, shape5, tuple(s * x.itemsize for s in stride5))
    block = R.nz_block(gm5)
    want = pre.copy().reshape(-1)
    for r in range(block.shape[0]):
        for c in range(block.shape[1]):
            want[R.nz_offset(r, c, rows, dtype)] = block[r, c]
    assert_bits_equal(raw.numpy().reshape(-1), want, what=f"Nz storage {dtype}")
    wz = z0.copy()
    np.lib.stride_tricks.as_strided(wz, shape5, tuple(s * x.itemsize for s in stride5))[...] = gm5
    assert_bits_equal(z.numpy(), wz, what=f"NZ store {dtype}")


def test_nz_block_helpers_agree():
    """The reference's NZ helpers invert each other (a check of the test's own tools)."""
    blk = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    assert np.array_equal(R.nz_block(R.nz_array(blk, 2)), blk)


# =============================================================================================
# TSTORE atomic add
# =============================================================================================
ATOMIC = {"a2a3": ("f16", "f32", "i16", "i32", "i8", "bf16"), "a5": ("f16", "f32", "i16", "i32", "i8")}
ATOMIC_CASES = [(s, d) for s in ATOMIC for d in ATOMIC[s]]
_ADD: dict = {}


def _add_kernel():
    if "k" not in _ADD:
        def k_add(x, z, vr, vc):
            t = pto.Tile(pto.Vec, x.dtype, ND_SHAPE, valid=pto.DYNAMIC)
            pto.TLOAD(t, x[:, :])
            t.set_valid(vr, vc)
            pto.TSTORE(z[0:vr, 0:vc], t, atomic="AtomicAdd")
        _ADD["k"] = pypto.kernel(k_add)
    return _ADD["k"]


def _atomic_specials(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (gm, tile) that exercise rounding, overflow, signed zeros and wrap-around."""
    dt = ref.np_dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        a = [info.max, info.min, -1, 0, 5, info.max, info.min + 1]
        b = [1, -1, 1, 0, -7, info.max, -2]
    elif dt == ref.F16:
        a = [2048, 2050, 65504, 65504, -0.0, -0.0, 6e-8, 1, np.inf, np.inf, np.nan, 0.1]
        b = [1, 1, 16, 8, -0.0, 0.0, 6e-8, 2 ** -11, -np.inf, 1, 1, 0.2]
    elif dt == ref.F32:
        a = [1, 2 ** 24, 3.4e38, -0.0, 1e-45, np.inf, 1]
        b = [2 ** -24, 1, 3.4e38, -0.0, 1e-45, -np.inf, 2 ** -23 + 2 ** -24]
    else:
        a = [1, 1, 3.38e38, -0.0, 256, np.inf]
        b = [2 ** -8, 2 ** -8 + 2 ** -15, 3.38e38, -0.0, 1, 1]
    a = np.array(a, np.float64).astype(dt) if dt.kind == "f" or dt == ref.BF16 else np.array(a).astype(dt)
    b = np.array(b, np.float64).astype(dt) if dt.kind == "f" or dt == ref.BF16 else np.array(b).astype(dt)
    return a, b


@pytest.mark.parametrize("soc,dtype", ATOMIC_CASES, ids=[f"{s}-{d}" for s, d in ATOMIC_CASES])
def test_tstore_atomic_add(target, pto_init, soc, dtype):
    """GM[i] += tile[i] over the valid region: integers wrap, floats round once (ties to even,
    overflow to inf), a NaN result's payload is open; GM outside the window is untouched."""
    pto_init(soc=soc)
    rng = rng_for("atomic", soc, dtype)
    sa, sb = _atomic_specials(dtype)
    gm = values(rng, dtype, ND_SHAPE)
    x = values(rng, dtype, ND_SHAPE)
    gm.reshape(-1)[:len(sa)], x.reshape(-1)[:len(sb)] = sa, sb
    for vr, vc in [(8, 64), (3, 17)]:
        z = tensor(gm)
        _add_kernel()(tensor(x), z, vr, vc)
        want = gm.copy()
        s, loose = R.tstore_add(gm[:vr, :vc], x[:vr, :vc], dtype)
        want[:vr, :vc] = s
        lm = np.zeros(ND_SHAPE, bool)
        lm[:vr, :vc] = loose
        assert_bits_equal(z.numpy(), want, loose=lm, inputs={"gm": gm, "tile": x},
                          what=f"atomic add {dtype} ({vr},{vc})")


def test_tstore_atomic_add_accumulates_over_blocks(target, pto_init):
    """Every block adds its tile into the same GM: no block's update is lost (exact values)."""
    if target.backend == "sim":
        pto_init(sim=pypto.SimOptions(mode=target.mode, threads=4))
    else:
        pto_init()
    x = np.arange(512, dtype=np.int32).reshape(ND_SHAPE)
    z = tensor(np.full(ND_SHAPE, 7, np.int32))
    _add_kernel()[16](tensor(x), z, 8, 64)
    assert np.array_equal(z.numpy(), 7 + 16 * x)


@pytest.mark.parametrize("soc,dtype", [("a2a3", "u8"), ("a5", "bf16"), ("a2a3", "u32")])
def test_tstore_atomic_add_illegal_types(pto_init, soc, dtype):
    pto_init(soc=soc)
    with pytest.raises(E.DTypeError) as ei:
        _add_kernel()(tensor(np.zeros(ND_SHAPE, ref.np_dtype(dtype))),
                      tensor(np.zeros(ND_SHAPE, ref.np_dtype(dtype))), 1, 1)
    assert "TSTORE" in str(ei.value) and "atomic" in str(ei.value)


# =============================================================================================
# TPREFETCH
# =============================================================================================
def _prefetch_kernel():
    def k_prefetch(pre, x, out, off):
        t = pto.Tile(pto.Vec, x.dtype, ND_SHAPE)
        pto.TLOAD(t, pre[:, :])
        pto.TPREFETCH(t, pto.GlobalTensor(x, (1, 1, 1, 8, 64), (512, 512, 512, 64, 1), offset=off))
        pto.TSTORE(out[:, :], t)
    return pypto.kernel(k_prefetch)


K_PREFETCH = _prefetch_kernel()


@pytest.mark.parametrize("soc,dtype", [("a2a3", "f32"), ("a2a3", "bf16"), ("a2a3", "i8"), ("a5", "e5m2"),
                                       ("a5", "u64")])
def test_tprefetch_leaves_the_tile(target, pto_init, soc, dtype):
    """pypto's choice: the tile keeps its contents (the NPU's are unspecified); the view's bounds
    are checked like TLOAD's."""
    pto_init(soc=soc)
    rng = rng_for("prefetch", dtype)
    pre, x = values(rng, dtype, ND_SHAPE), values(rng, dtype, (16, 64))
    out = tensor(sentinel(ND_SHAPE, dtype))
    K_PREFETCH(tensor(pre), tensor(x), out, 64)
    assert_bits_equal(out.numpy(), R.tprefetch(pre), what="TPREFETCH")
    with pytest.raises(E.GMBoundsError):
        K_PREFETCH(tensor(pre), tensor(x), out, 8 * 64 + 1)


# =============================================================================================
# layout and shape errors of TLOAD / TSTORE (trace time)
# =============================================================================================
def _err_kernel(body):
    return pypto.kernel(body)


def _nd_from_dn(x):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TLOAD(t, pto.GlobalTensor(x, (1, 1, 1, 8, 64), (512, 512, 512, 1, 8), layout=pto.DN))


def _nz_tile_from_nd(x):
    t = pto.Tile(pto.Vec, pto.float16, (16, 16), blayout=pto.ColMajor, slayout=pto.RowMajor)
    pto.TLOAD(t, x)


def _nd_tile_from_nz(x):
    t = pto.Tile(pto.Vec, pto.float16, (16, 16))
    pto.TLOAD(t, pto.GlobalTensor(x, (1, 1, 1, 16, 16), (256, 256, 256, 16, 1), layout=pto.NZ))


def _nz_bad_c0(x):
    t = pto.Tile(pto.Vec, pto.float16, (16, 16), blayout=pto.ColMajor, slayout=pto.RowMajor)
    pto.TLOAD(t, pto.GlobalTensor(x, (1, 2, 1, 16, 8), (256, 128, 128, 8, 1), layout=pto.NZ))


def _nz_bad_stride(x):
    t = pto.Tile(pto.Vec, pto.float16, (16, 16), blayout=pto.ColMajor, slayout=pto.RowMajor)
    pto.TLOAD(t, pto.GlobalTensor(x, (1, 1, 1, 16, 16), (256, 256, 256, 8, 1), layout=pto.NZ))


def _nz_wrong_valid(x):
    t = pto.Tile(pto.Vec, pto.float16, (32, 16), blayout=pto.ColMajor, slayout=pto.RowMajor)
    pto.TLOAD(t, pto.GlobalTensor(x, (1, 1, 1, 16, 16), (256, 256, 256, 16, 1), layout=pto.NZ))


def _nd_strided(x):
    t = pto.Tile(pto.Vec, pto.float32, (4, 8))
    pto.TLOAD(t, pto.GlobalTensor(x, (1, 1, 1, 4, 8), (64, 64, 64, 16, 2)))


def _a5_i64_pad_max(x):
    t = pto.Tile(pto.Vec, pto.int64, (4, 8), pad=pto.PadMax)
    pto.TLOAD(t, x[0:4, 0:8])


TLOAD_ERRORS = [
    ("nd_tile_dn_view", _nd_from_dn, "a2a3", E.LayoutError, "matching layouts", (8, 64), "f32"),
    ("nz_tile_nd_view", _nz_tile_from_nd, "a5", E.LayoutError, "matching layouts", (16, 16), "f16"),
    ("nd_tile_nz_view", _nd_tile_from_nz, "a2a3", E.LayoutError, "matching layouts", (16, 16), "f16"),
    ("nz_c0", _nz_bad_c0, "a2a3", E.ShapeError, "NZ view dimension 4", (16, 16), "f16"),
    ("nz_stride", _nz_bad_stride, "a2a3", E.LayoutError, "stride 3", (16, 16), "f16"),
    ("nz_valid", _nz_wrong_valid, "a2a3", E.ShapeError, "NZ view fills", (16, 16), "f16"),
    ("nd_stride4", _nd_strided, "a2a3", E.LayoutError, "stride 4", (8, 8), "f32"),
    ("a5_i64_padmax", _a5_i64_pad_max, "a5", E.TileError, "PadNull or PadZero", (4, 8), "i64"),
]


@pytest.mark.parametrize("case", TLOAD_ERRORS, ids=[c[0] for c in TLOAD_ERRORS])
def test_tload_trace_errors(pto_init, case):
    _, body, soc, err, text, shape, dtype = case
    pto_init(soc=soc)
    with pytest.raises(err) as ei:
        _err_kernel(body)(tensor(np.zeros(shape, ref.np_dtype(dtype))))
    msg = str(ei.value)
    assert "TLOAD" in msg and text in msg, msg


# =============================================================================================
# MGATHER / MSCATTER (a5)
# =============================================================================================
GATHER_TYPES = ("f32", "f16", "bf16", "i8", "u8", "i16", "u16", "i32", "u32", "e4m3", "e5m2")
G_SHAPE = (4, 32)               # 32 columns: 32 bytes even for 1-byte data
_G: dict = {}


def _gather_kernels():
    if "k" not in _G:
        def k_mgather(table, idx, pre, out, vr, vc, off):
            i = pto.Tile(pto.Vec, idx.dtype, G_SHAPE, valid=pto.DYNAMIC)
            d = pto.Tile(pto.Vec, table.dtype, G_SHAPE, valid=pto.DYNAMIC)
            pto.TLOAD(i, idx[:, :])
            pto.TLOAD(d, pre[:, :])
            i.set_valid(vr, vc)
            d.set_valid(vr, vc)
            pto.MGATHER(d, table[off:], i)
            d.set_valid(G_SHAPE[0], G_SHAPE[1])
            pto.TSTORE(out[:, :], d)

        def k_mscatter(gm, src, idx, vr, vc):
            i = pto.Tile(pto.Vec, idx.dtype, G_SHAPE, valid=pto.DYNAMIC)
            s = pto.Tile(pto.Vec, src.dtype, G_SHAPE, valid=pto.DYNAMIC)
            pto.TLOAD(i, idx[:, :])
            pto.TLOAD(s, src[:, :])
            i.set_valid(vr, vc)
            s.set_valid(vr, vc)
            pto.MSCATTER(gm, s, i)
        _G["k"] = (pypto.kernel(k_mgather), pypto.kernel(k_mscatter))
    return _G["k"]


@pytest.mark.parametrize("dtype", GATHER_TYPES)
def test_mgather(target, pto_init, dtype):
    """dst[i, j] = table[off + idx[i, j]] over dst's valid region (int32 indices; one dtype also
    with uint32), the rest of dst untouched; an index outside the tensor is an IndexRangeError."""
    pto_init(soc="a5")
    rng = rng_for("mgather", dtype)
    n = 300
    table = values(rng, dtype, (n,))
    idt = np.uint32 if dtype == "u16" else np.int32
    kg, _ = _gather_kernels()
    for (vr, vc), off in [((4, 32), 0), ((3, 5), 7), ((1, 1), 299)]:
        idx = rng.integers(0, n - off, G_SHAPE).astype(idt)
        pre = values(rng, dtype, G_SHAPE)
        out = tensor(sentinel(G_SHAPE, dtype))
        kg(tensor(table), tensor(idx), tensor(pre), out, vr, vc, off)
        assert_bits_equal(out.numpy(), R.mgather(table, idx, pre, (vr, vc), off), what=f"MGATHER {dtype}")


@keep_if(_sim_only)
def test_mgather_out_of_range(target, pto_init):
    pto_init(soc="a5")
    kg, _ = _gather_kernels()
    table = np.arange(300, dtype=np.float32)
    idx = np.zeros(G_SHAPE, np.int32)
    idx[2, 3] = 296                          # off = 5: element 301 is outside the 300
    out = tensor(sentinel(G_SHAPE, "f32"))
    with pytest.raises(E.IndexRangeError) as ei:
        kg(tensor(table), tensor(idx), tensor(np.zeros(G_SHAPE, np.float32)), out, 4, 32, 5)
    assert "MGATHER" in str(ei.value) and "index 296" in str(ei.value)


@keep_if(_sim_only)
def test_mgather_negative_index(target, pto_init):
    """A negative int32 index is out of range (the NPU reads it as a huge uint32)."""
    pto_init(soc="a5")
    rng = rng_for("mgather-neg")
    table = values(rng, "f32", (64,))
    kg, _ = _gather_kernels()
    idx = np.zeros(G_SHAPE, np.int32)
    idx[1, 0] = -1
    pre = values(rng, "f32", G_SHAPE)
    out = tensor(sentinel(G_SHAPE, "f32"))
    with pytest.raises(E.IndexRangeError):
        kg(tensor(table), tensor(idx), tensor(pre), out, 4, 20, 0)
    assert_bits_equal(out.numpy(), sentinel(G_SHAPE, "f32"), what="nothing stored")


def _gather_one_column(x):
    d = pto.Tile(pto.Vec, pto.float32, (4, 32))
    i = pto.Tile(pto.Vec, pto.int32, (4, 8))
    pto.MGATHER(d, x, i)


def _gather_dn_table(x):
    d = pto.Tile(pto.Vec, pto.float32, (4, 32))
    i = pto.Tile(pto.Vec, pto.int32, (4, 32))
    pto.MGATHER(d, pto.GlobalTensor(x, (1, 1, 1, 8, 8), (64, 64, 64, 1, 8), layout=pto.DN), i)


@pytest.mark.parametrize("body,err,text", [(_gather_one_column, E.TileError, "idx.Cols"),
                                           (_gather_dn_table, E.LayoutError, "ND view")])
def test_mgather_trace_errors(pto_init, body, err, text):
    pto_init(soc="a5")
    with pytest.raises(err) as ei:
        pypto.kernel(body)(tensor(np.zeros((8, 8), np.float32)))
    assert "MGATHER" in str(ei.value) and text in str(ei.value), str(ei.value)


@pytest.mark.parametrize("dtype", GATHER_TYPES)
def test_mscatter(target, pto_init, dtype):
    """gm[idx[i, j]] = src[i, j] over src's valid region in row-major order (the last duplicate
    wins); out-of-range indices: an IndexRangeError and nothing written."""
    pto_init(soc="a5")
    rng = rng_for("mscatter", dtype)
    n = 200
    _, ks = _gather_kernels()
    src = values(rng, dtype, G_SHAPE)
    for vr, vc in [(4, 32), (2, 7)]:
        idx = rng.integers(0, n, G_SHAPE).astype(np.int32)
        idx[0, 1] = idx[0, 0] = idx[min(vr, 2) - 1, vc - 1]     # duplicates
        gm0 = values(rng, dtype, (n,))
        gm = tensor(gm0)
        ks(gm, tensor(src), tensor(idx), vr, vc)
        assert_bits_equal(gm.numpy(), R.mscatter(gm0, src, idx, (vr, vc)), what=f"MSCATTER {dtype}")


@keep_if(_sim_only)
def test_mscatter_out_of_range_writes_nothing(target, pto_init):
    pto_init(soc="a5")
    _, ks = _gather_kernels()
    gm0 = np.arange(200, dtype=np.int32)
    idx = np.arange(128, dtype=np.int32).reshape(G_SHAPE)
    idx[1, 1] = 200
    gm = tensor(gm0)
    with pytest.raises(E.IndexRangeError):
        ks(gm, tensor(-gm0[:128].reshape(G_SHAPE)), tensor(idx), 4, 32)
    assert_bits_equal(gm.numpy(), gm0, what="nothing written")


@keep_if(_sim_only)          # checks="strict" is a simulator option
def test_mscatter_strict_reports_duplicates(target, pto_init):
    pto_init(soc="a5", sim=pypto.SimOptions(checks="strict", mode=target.mode))
    _, ks = _gather_kernels()
    src = np.arange(128, dtype=np.float32).reshape(G_SHAPE)
    idx = np.arange(128, dtype=np.int32).reshape(G_SHAPE)
    idx[2, 5] = idx[1, 9]
    assert R.first_duplicate(idx, (4, 32)) == (2, 5)
    gm = tensor(np.zeros(200, np.float32))
    with pytest.raises(E.UndefinedBehaviorError) as ei:
        ks(gm, tensor(src), tensor(idx), 4, 32)
    assert "(2, 5)" in str(ei.value) and "MSCATTER" in str(ei.value)
    assert not gm.numpy().any()
    ks(gm, tensor(src), tensor(idx), 2, 32)              # no duplicate in the first two rows
    assert np.array_equal(gm.numpy()[:64], np.arange(64, dtype=np.float32))


def test_mgather_is_a5_only(pto_init):
    pto_init(soc="a2a3")
    kg, _ = _gather_kernels()
    with pytest.raises(E.DTypeError) as ei:
        kg(tensor(np.zeros(10, np.float32)), tensor(np.zeros(G_SHAPE, np.int32)),
           tensor(np.zeros(G_SHAPE, np.float32)), tensor(np.zeros(G_SHAPE, np.float32)), 1, 1, 0)
    assert "MGATHER" in str(ei.value)


# =============================================================================================
# TFILLPAD, TFILLPAD_INPLACE, TFILLPAD_EXPAND
# =============================================================================================
F_SHAPE, X_SHAPE = (8, 64), (12, 96)
_FILL: dict = {}


def _fill_kernel(pad: str):
    if pad in _FILL:
        return _FILL[pad]
    pv = getattr(pto, "Pad" + pad.capitalize())

    def k_fill(x, p1, p2, p3, o1, o2, o3, svr, svc, dvr, dvc):
        s = pto.Tile(pto.Vec, x.dtype, F_SHAPE, valid=pto.DYNAMIC)
        d1 = pto.Tile(pto.Vec, x.dtype, F_SHAPE, valid=pto.DYNAMIC, pad=pv)
        d2 = pto.Tile(pto.Vec, x.dtype, F_SHAPE, valid=pto.DYNAMIC, pad=pv)
        d3 = pto.Tile(pto.Vec, x.dtype, X_SHAPE, valid=pto.DYNAMIC, pad=pv)
        pto.TLOAD(s, x[:, :])
        pto.TLOAD(d1, p1[:, :])
        pto.TLOAD(d2, p2[:, :])
        pto.TLOAD(d3, p3[:, :])
        s.set_valid(svr, svc)
        for d in (d1, d2):
            d.set_valid(dvr, dvc)
        d3.set_valid(pto.min(dvr + 4, X_SHAPE[0]), dvc)
        pto.TFILLPAD(d1, s)
        pto.TFILLPAD_INPLACE(d2, s)
        pto.TFILLPAD_EXPAND(d3, s)
        for d, o, shp in ((d1, o1, F_SHAPE), (d2, o2, F_SHAPE), (d3, o3, X_SHAPE)):
            d.set_valid(shp[0], shp[1])
            pto.TSTORE(o[:, :], d)
    k_fill.__name__ = f"k_fill_{pad}"
    _FILL[pad] = pypto.kernel(k_fill)
    return _FILL[pad]


FILL_REGIONS = [(8, 64, 8, 64), (5, 37, 7, 20), (3, 1, 3, 64), (6, 9, 2, 9), (0, 0, 4, 4), (4, 60, 0, 5)]


def _run_fill(soc, dtype, pad, regions, rng):
    k = _fill_kernel(pad)
    for svr, svc, dvr, dvc in regions:
        x, p1, p2 = values(rng, dtype, F_SHAPE), values(rng, dtype, F_SHAPE), values(rng, dtype, F_SHAPE)
        p3 = values(rng, dtype, X_SHAPE)
        outs = [tensor(sentinel(F_SHAPE, dtype)), tensor(sentinel(F_SHAPE, dtype)),
                tensor(sentinel(X_SHAPE, dtype))]
        k(tensor(x), tensor(p1), tensor(p2), tensor(p3), *outs, svr, svc, dvr, dvc)
        what = f"{soc} {dtype} pad={pad} src ({svr},{svc}) dst ({dvr},{dvc})"
        assert_bits_equal(outs[0].numpy(), R.tfillpad(p1, x, (svr, svc), (dvr, dvc), pad, True, soc),
                          what="TFILLPAD " + what)
        assert_bits_equal(outs[1].numpy(), R.tfillpad(p2, x, (svr, svc), (dvr, dvc), pad, False, soc),
                          what="TFILLPAD_INPLACE " + what)
        dvr3 = min(dvr + 4, X_SHAPE[0])
        assert_bits_equal(outs[2].numpy(), R.tfillpad(p3, x, (svr, svc), (dvr3, dvc), pad, True, soc),
                          what="TFILLPAD_EXPAND " + what)


@pytest.mark.parametrize("soc,dtype", VEC_DTYPES, ids=[f"{s}-{d}" for s, d in VEC_DTYPES])
def test_tfillpad_family(target, pto_init, soc, dtype):
    """Rows < src.validRow: src inside its valid columns, pad up to dst.Cols; rows src.validRow ..
    dst.validRow - 1 padded whole; the rest untouched (a2a3: nothing for an empty dst region)."""
    pad = pad_for(dtype) if pad_for(dtype) != "null" else "max"
    pto_init(soc=soc)
    _run_fill(soc, dtype, pad, FILL_REGIONS, rng_for("fill", soc, dtype))


@pytest.mark.slow
@pytest.mark.parametrize("soc,dtype,pad", [(s, d, p) for s, d in VEC_DTYPES for p in PADS[1:]])
def test_tfillpad_pad_sweep(target, pto_init, soc, dtype, pad):
    pto_init(soc=soc)
    _run_fill(soc, dtype, pad, FILL_REGIONS, rng_for("fill-sweep", soc, dtype, pad))


@given(data=st.data())
@PROPERTY
def test_tfillpad_property(target, pto_init, data):
    pto_init()
    svr, dvr = data.draw(st.integers(0, 8)), data.draw(st.integers(0, 8))
    svc, dvc = data.draw(st.integers(0, 64)), data.draw(st.integers(0, 64))
    _run_fill("a2a3", "f16", "min", [(svr, svc, dvr, dvc)], rng_for("fill-prop", svr, svc, dvr, dvc))


def _fill_null(x):
    a = pto.Tile(pto.Vec, pto.float32, (8, 64))
    b = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TFILLPAD(b, a)


def _fill_shape(x):
    a = pto.Tile(pto.Vec, pto.float32, (8, 64))
    b = pto.Tile(pto.Vec, pto.float32, (16, 64), pad=pto.PadZero)
    pto.TFILLPAD(b, a)


def _fill_expand_small(x):
    a = pto.Tile(pto.Vec, pto.float32, (8, 64))
    b = pto.Tile(pto.Vec, pto.float32, (8, 32), pad=pto.PadZero)
    pto.TFILLPAD_EXPAND(b, a)


def _fill_dn(x):
    a = pto.Tile(pto.Vec, pto.float32, (8, 64))
    b = pto.Tile(pto.Vec, pto.float32, (8, 64), blayout=pto.ColMajor, pad=pto.PadZero)
    pto.TFILLPAD(b, a)


def _fill_mat(x):
    a = pto.Tile(pto.Mat, pto.float16, (16, 16), blayout=pto.ColMajor, slayout=pto.RowMajor)
    b = pto.Tile(pto.Mat, pto.float16, (16, 16), blayout=pto.ColMajor, slayout=pto.RowMajor, pad=pto.PadZero)
    pto.TFILLPAD(b, a)


# =============================================================================================
# TMOV, TTRANS, TEXTRACT, TINSERT between Vec tiles
# =============================================================================================
M_SHAPE, T_SHAPE, W_SHAPE = (32, 64), (64, 32), (16, 32)
_MOVE: dict = {}


def _move_kernel():
    if "k" in _MOVE:
        return _MOVE["k"]

    def k_move(x, pm, pt, pe, om, ot, oe, svr, svc, mvr, mvc, evr, evc, r0, c0):
        a = pto.Tile(pto.Vec, x.dtype, M_SHAPE, valid=pto.DYNAMIC)
        m = pto.Tile(pto.Vec, x.dtype, M_SHAPE, valid=pto.DYNAMIC)
        t = pto.Tile(pto.Vec, x.dtype, T_SHAPE, valid=pto.DYNAMIC)
        tmp = pto.Tile(pto.Vec, x.dtype, M_SHAPE)
        e = pto.Tile(pto.Vec, x.dtype, W_SHAPE, valid=pto.DYNAMIC)
        for tl, g in ((a, x), (m, pm), (t, pt), (e, pe)):
            pto.TLOAD(tl, g[:, :])
        a.set_valid(svr, svc)
        m.set_valid(mvr, mvc)
        e.set_valid(evr, evc)
        pto.TMOV(m, a)
        pto.TTRANS(t, a, tmp)
        pto.TEXTRACT(e, a, r0, c0)
        for tl, o, shp in ((m, om, M_SHAPE), (t, ot, T_SHAPE), (e, oe, W_SHAPE)):
            tl.set_valid(shp[0], shp[1])
            pto.TSTORE(o[:, :], tl)
    _MOVE["k"] = pypto.kernel(k_move)
    return _MOVE["k"]


def _insert_kernel():
    if "i" in _MOVE:
        return _MOVE["i"]

    def k_insert(y, pi, oi, ivr, ivc, wvr, wvc, r1, c1):
        i = pto.Tile(pto.Vec, y.dtype, M_SHAPE, valid=pto.DYNAMIC)
        w = pto.Tile(pto.Vec, y.dtype, W_SHAPE, valid=pto.DYNAMIC)
        pto.TLOAD(i, pi[:, :])
        pto.TLOAD(w, y[:, :])
        i.set_valid(ivr, ivc)
        w.set_valid(wvr, wvc)
        pto.TINSERT(i, w, r1, c1)
        i.set_valid(M_SHAPE[0], M_SHAPE[1])
        pto.TSTORE(oi[:, :], i)
    _MOVE["i"] = pypto.kernel(k_insert)
    return _MOVE["i"]


# (src valid, TMOV dst valid, TEXTRACT dst valid, offsets); the windows end at src's valid end
MOVE_CASES = [((32, 64), (32, 64), (16, 32), (16, 32)),
              ((20, 37), (20, 37), (5, 9), (15, 28)),
              ((1, 1), (1, 1), (1, 1), (0, 0)),
              ((20, 37), (25, 30), (5, 9), (15, 28)),
              ((7, 64), (5, 13), (7, 1), (0, 63)),
              ((1, 1), (32, 64), (1, 1), (0, 0))]
# (TINSERT dst valid, src valid, offsets)
INSERT_CASES = [((32, 64), (16, 32), (16, 32)), ((30, 60), (3, 7), (27, 50)), ((32, 64), (1, 1), (0, 0)),
                ((20, 64), (16, 1), (4, 63))]


def _run_move(soc, dtype, cases, rng):
    k = _move_kernel()
    for (svr, svc), (mvr, mvc), (evr, evc), (r0, c0) in cases:
        x = values(rng, dtype, M_SHAPE)
        pm, pt, pe = (values(rng, dtype, s) for s in (M_SHAPE, T_SHAPE, W_SHAPE))
        outs = [tensor(sentinel(s, dtype)) for s in (M_SHAPE, T_SHAPE, W_SHAPE)]
        k(*(tensor(v) for v in (x, pm, pt, pe)), *outs, svr, svc, mvr, mvc, evr, evc, r0, c0)
        what = f"{soc} {dtype} src ({svr},{svc})"
        assert_bits_equal(outs[0].numpy(), R.tmov(pm, x, (svr, svc), (mvr, mvc), soc), what="TMOV " + what)
        assert_bits_equal(outs[1].numpy(), R.ttrans(pt, x, (svr, svc), soc), what="TTRANS " + what)
        assert_bits_equal(outs[2].numpy(), R.textract(pe, x, (evr, evc), (svr, svc), r0, c0),
                          what="TEXTRACT " + what)


def _run_insert(soc, dtype, cases, rng):
    k = _insert_kernel()
    for (ivr, ivc), (wvr, wvc), (r1, c1) in cases:
        y, pi = values(rng, dtype, W_SHAPE), values(rng, dtype, M_SHAPE)
        oi = tensor(sentinel(M_SHAPE, dtype))
        k(tensor(y), tensor(pi), oi, ivr, ivc, wvr, wvc, r1, c1)
        assert_bits_equal(oi.numpy(), R.tinsert(pi, y, (ivr, ivc), (wvr, wvc), r1, c1),
                          what=f"TINSERT {soc} {dtype} ({wvr},{wvc}) at ({r1},{c1})")


@pytest.mark.parametrize("soc,dtype", VEC_DTYPES, ids=[f"{s}-{d}" for s, d in VEC_DTYPES])
def test_vec_moves(target, pto_init, soc, dtype):
    """TMOV (min of the valid regions; a2a3 whole 32-byte blocks), TTRANS (a2a3 src valid, a5 the
    whole shape), TEXTRACT at runtime offsets. pto-isa's CPU TMOV asserts equal valid regions
    (the process aborts), so natively only the cases where they agree run."""
    pto_init(soc=soc)
    cases = MOVE_CASES if target.backend == "sim" else [c for c in MOVE_CASES if c[0] == c[1]]
    _run_move(soc, dtype, cases, rng_for("move", soc, dtype))


@pytest.mark.parametrize("soc,dtype", VEC_DTYPES, ids=[f"{s}-{d}" for s, d in VEC_DTYPES])
def test_tinsert(target, pto_init, soc, dtype):
    """TINSERT of src's valid region at runtime offsets inside dst's valid region."""
    pto_init(soc=soc)
    _run_insert(soc, dtype, INSERT_CASES, rng_for("insert", soc, dtype))


@keep_if(_sim_only)
@pytest.mark.parametrize("soc", ["a2a3", "a5"])
def test_window_runtime_offset_errors(target, pto_init, soc):
    """A window past the source's (TEXTRACT) or destination's (TINSERT) valid region: a run-time
    IndexRangeError naming the instruction."""
    pto_init(soc=soc)
    k, ki = _move_kernel(), _insert_kernel()
    ins = [tensor(np.zeros(s, np.float32)) for s in (M_SHAPE, M_SHAPE, T_SHAPE, W_SHAPE)]
    outs = [tensor(np.zeros(s, np.float32)) for s in (M_SHAPE, T_SHAPE, W_SHAPE)]
    for r0, c0 in ((17, 0), (0, -1), (0, 33)):
        with pytest.raises(E.IndexRangeError) as ei:
            k(*ins, *outs, 32, 64, 32, 64, 16, 32, r0, c0)
        assert "TEXTRACT" in str(ei.value) and "window offset" in str(ei.value)
    w, i = tensor(np.zeros(W_SHAPE, np.float32)), tensor(np.zeros(M_SHAPE, np.float32))
    with pytest.raises(E.IndexRangeError) as ei:
        ki(w, i, i, 32, 64, 16, 32, 0, 33)
    assert "TINSERT" in str(ei.value) and "window offset" in str(ei.value)


def _nd2nz_kernel(dtype):
    key = ("nz", dtype)
    if key in _MOVE:
        return _MOVE[key]
    rows, cols = 32, 64

    def k_nd2nz(x, pre, raw, vr, vc):
        a = pto.Tile(pto.Vec, x.dtype, (rows, cols), valid=pto.DYNAMIC)
        nz = pto.Tile(pto.Vec, x.dtype, (rows, cols), blayout=pto.ColMajor, slayout=pto.RowMajor)
        nd = pto.Tile(pto.Vec, x.dtype, (1, rows * cols))
        pto.TASSIGN(a, 0)
        pto.TASSIGN(nz, rows * cols * x.dtype.itemsize)
        pto.TASSIGN(nd, rows * cols * x.dtype.itemsize)
        pto.TLOAD(a, x[:, :])
        pto.TLOAD(nd, pre[:, :])
        a.set_valid(vr, vc)
        pto.TMOV(nz, a)
        pto.TSTORE(raw[:, :], nd)
    _MOVE[key] = pypto.kernel(k_nd2nz, checks="off")   # aliases tiles and skips flags on purpose
    return _MOVE[key]


@keep_if(_sim_only)          # reads the Nz storage through an aliased tile (TASSIGN)
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "i32", "i8", "e4m3", "e5m2"])
def test_tmov_nd_to_nz_a5(target, pto_init, dtype):
    """a5 ND -> Nz over src's valid region: (r, c) at ((c // c0) * V + r) * c0 + c % c0 with V =
    roundup(validRow, 16) (the Nz layout when V == Rows), the rest untouched."""
    pto_init(soc="a5")
    rng = rng_for("nd2nz", dtype)
    for vr, vc in [(32, 64), (20, 37), (3, 5)]:
        x, pre = values(rng, dtype, (32, 64)), values(rng, dtype, (1, 32 * 64))
        raw = tensor(sentinel((1, 32 * 64), dtype))
        _nd2nz_kernel(dtype)(tensor(x), tensor(pre), raw, vr, vc)
        assert_bits_equal(raw.numpy().reshape(-1), R.tmov_nd2nz_storage(pre, x, (vr, vc)),
                          what=f"ND -> Nz {dtype} ({vr},{vc})")
    want = np.empty(32 * 64, x.dtype)
    for r in range(32):
        for c in range(64):
            want[R.nz_offset(r, c, 32, dtype)] = x[r, c]
    assert_bits_equal(R.tmov_nd2nz_storage(pre, x, (32, 64)), want, what="full tile is Nz")


def _tmov_static_full():
    def k_tmov_static(x, pre, out):
        a = pto.Tile(pto.Vec, pto.float16, (8, 64), valid=(5, 20))
        m = pto.Tile(pto.Vec, pto.float16, (8, 64))
        a2 = pto.Tile(pto.Vec, pto.float16, (8, 64))
        pto.TASSIGN(a2, 0)
        pto.TASSIGN(a, 0)
        pto.TASSIGN(m, 8 * 64 * 2)
        pto.TLOAD(a2, x[:, :])
        pto.TLOAD(m, pre[:, :])
        pto.TMOV(m, a)
        pto.TSTORE(out[:, :], m)
    return pypto.kernel(k_tmov_static, checks="off")   # aliases tiles and skips flags on purpose


K_TMOV_STATIC = _tmov_static_full()


@keep_if(_sim_only)          # pto-isa's CPU TMOV aborts on unequal valid regions
@pytest.mark.parametrize("soc", ["a2a3", "a5"])
def test_tmov_static_full_dst_copies_whole_rows_on_a2a3(target, pto_init, soc):
    """a2a3's TCopy copies whole rows when dst's static valid width is Cols; a5 copies the region."""
    pto_init(soc=soc)
    rng = rng_for("tmov-static")
    x, pre = values(rng, "f16", (8, 64)), values(rng, "f16", (8, 64))
    out = tensor(sentinel((8, 64), "f16"))
    K_TMOV_STATIC(tensor(x), tensor(pre), out)
    assert_bits_equal(out.numpy(), R.tmov(pre, x, (5, 20), (8, 64), soc, dst_static_full=True),
                      what=f"TMOV static {soc}")


def _tmov_dn(x):
    a = pto.Tile(pto.Vec, pto.float32, (8, 64), blayout=pto.ColMajor)
    b = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TMOV(b, a)


def _tmov_nz_a2a3(x):
    a = pto.Tile(pto.Vec, pto.float16, (16, 64))
    b = pto.Tile(pto.Vec, pto.float16, (16, 64), blayout=pto.ColMajor, slayout=pto.RowMajor)
    pto.TMOV(b, a)


def _extract_static(x):
    a = pto.Tile(pto.Vec, pto.float32, (16, 64))
    b = pto.Tile(pto.Vec, pto.float32, (8, 32))
    pto.TEXTRACT(b, a, 9, 0)


def _insert_static(x):
    a = pto.Tile(pto.Vec, pto.float32, (16, 64))
    b = pto.Tile(pto.Vec, pto.float32, (8, 32))
    pto.TINSERT(a, b, 0, 40)


def _extract_float_offset(x):
    a = pto.Tile(pto.Vec, pto.float32, (16, 64))
    b = pto.Tile(pto.Vec, pto.float32, (8, 32))
    pto.TEXTRACT(b, a, 1.5, 0)


def _extract_dtype(x):
    a = pto.Tile(pto.Vec, pto.float32, (16, 64))
    b = pto.Tile(pto.Vec, pto.int32, (8, 32))
    pto.TEXTRACT(b, a, 0, 0)


def _trans_a5_small(x):
    a = pto.Tile(pto.Vec, pto.float32, (16, 64))
    b = pto.Tile(pto.Vec, pto.float32, (32, 16))
    t = pto.Tile(pto.Vec, pto.float32, (16, 64))
    pto.TTRANS(b, a, t)


def _trans_tmp_small(x):
    a = pto.Tile(pto.Vec, pto.float32, (16, 64))
    b = pto.Tile(pto.Vec, pto.float32, (64, 16))
    t = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TTRANS(b, a, t)


def _trans_dn(x):
    a = pto.Tile(pto.Vec, pto.float32, (16, 64), blayout=pto.ColMajor)
    b = pto.Tile(pto.Vec, pto.float32, (64, 16))
    t = pto.Tile(pto.Vec, pto.float32, (16, 64))
    pto.TTRANS(b, a, t)


MOVE_ERRORS = [
    ("fill_null", _fill_null, "a2a3", E.TileError, "TFILLPAD", "PadNull"),
    ("fill_shape", _fill_shape, "a2a3", E.TileShapeError, "TFILLPAD", "equal Rows and Cols"),
    ("fill_expand_small", _fill_expand_small, "a5", E.TileShapeError, "TFILLPAD_EXPAND", "dst.Rows >= src.Rows"),
    ("fill_dn", _fill_dn, "a2a3", E.LayoutError, "TFILLPAD", "ND tiles only"),
    ("tmov_dn", _tmov_dn, "a2a3", E.LayoutError, "TMOV", "ND -> ND"),
    ("tmov_nz_a2a3", _tmov_nz_a2a3, "a2a3", E.LayoutError, "TMOV", "ND -> ND"),
    ("extract_static", _extract_static, "a2a3", E.IndexRangeError, "TEXTRACT", "indexRow"),
    ("insert_static", _insert_static, "a5", E.IndexRangeError, "TINSERT", "indexCol"),
    ("extract_float", _extract_float_offset, "a2a3", E.OperandError, "TEXTRACT", "integer"),
    ("extract_dtype", _extract_dtype, "a2a3", E.DTypeError, "TEXTRACT", "element types"),
    ("trans_a5_small", _trans_a5_small, "a5", E.TileShapeError, "TTRANS", "dst.Rows >= src.Cols"),
    ("trans_tmp_small", _trans_tmp_small, "a2a3", E.TileShapeError, "TTRANS", "tmp"),
    ("trans_dn", _trans_dn, "a2a3", E.LayoutError, "TTRANS", "src"),
]


@pytest.mark.parametrize("case", MOVE_ERRORS, ids=[c[0] for c in MOVE_ERRORS])
def test_move_trace_errors(pto_init, case):
    _, body, soc, err, name, text = case
    pto_init(soc=soc)
    with pytest.raises(err) as ei:
        pypto.kernel(body)(tensor(np.zeros(4, np.float32)))
    msg = str(ei.value)
    assert name in msg and text in msg, msg


@keep_if(_sim_only)          # a simulator limitation: the NPU backends build this pair
@pytest.mark.parametrize("body,name", [(_fill_mat, "TFILLPAD")])
def test_mat_tfillpad_is_not_simulated_yet(pto_init, body, name):
    """Legal on the NPU, so kern.ir() shows it; the simulator refuses it by name."""
    pto_init()
    k = pypto.kernel(body)
    x = tensor(np.zeros(4, np.float32))
    assert name.lower() in k.ir(x).lower()
    with pytest.raises(E.NotSimulatedError) as ei:
        k(x)
    assert name in str(ei.value) and "Mat tiles" in str(ei.value)


# =============================================================================================
# TRESHAPE
# =============================================================================================
def _reshape_alias():
    def k_reshape(x, y, z1, z2):
        a = pto.Tile(pto.Vec, pto.float32, (4, 16))
        b = pto.Tile(pto.Vec, pto.int16, (4, 32))
        pto.TLOAD(a, x[:, :])
        pto.TRESHAPE(b, a)                  # b names a's bytes
        pto.TSTORE(z1[:, :], b)             # a's bits, read as int16
        pto.TLOAD(b, y[:, :])               # write through b ...
        pto.TSTORE(z2[:, :], a)             # ... read through a
    return pypto.kernel(k_reshape, checks="off")     # the aliasing is what this tests


K_RESHAPE = _reshape_alias()


@pytest.mark.parametrize("soc", ["a2a3", "a5"])
def test_treshape_aliases(target, pto_init, soc):
    """dst and src name the same bytes: dst reads src's bits with its own type and shape, and a
    write through dst is seen through src."""
    pto_init(soc=soc)
    rng = rng_for("reshape")
    x, y = values(rng, "f32", (4, 16)), values(rng, "i16", (4, 32))
    z1, z2 = tensor(sentinel((4, 32), "i16")), tensor(sentinel((4, 16), "f32"))
    K_RESHAPE(tensor(x), tensor(y), z1, z2)
    assert_bits_equal(z1.numpy(), R.treshape(x, "i16", (4, 32)), what="TRESHAPE bits")
    assert_bits_equal(z2.numpy(), R.treshape(y, "f32", (4, 16)), what="alias after a write")


def _reshape_chain():
    def k_chain(x, z):
        a = pto.Tile(pto.Vec, pto.uint8, (2, 64))
        b = pto.Tile(pto.Vec, pto.bfloat16, (4, 16))
        c = pto.Tile(pto.Vec, pto.int32, (1, 32))
        pto.TLOAD(a, x[:, :])
        pto.TRESHAPE(b, a)
        pto.TRESHAPE(c, b)
        pto.TSTORE(z[:, :], c)
    return pypto.kernel(k_chain)


def test_treshape_chain_mixed_sizes(target, pto_init):
    """u8 -> bf16 -> i32: element sizes may differ when the total bytes agree."""
    pto_init()
    x = values(rng_for("chain"), "u8", (2, 64))
    z = tensor(sentinel((1, 32), "i32"))
    _reshape_chain()(tensor(x), z)
    assert_bits_equal(z.numpy(), R.treshape(x, "i32", (1, 32)), what="chain")


def _rs_bytes(x):
    a = pto.Tile(pto.Vec, pto.float32, (4, 16))
    b = pto.Tile(pto.Vec, pto.float32, (8, 16))
    pto.TRESHAPE(b, a)


def _rs_boxed(x):
    a = pto.Tile(pto.Vec, pto.float16, (16, 16))
    b = pto.Tile(pto.Vec, pto.float16, (16, 16), blayout=pto.ColMajor, slayout=pto.RowMajor)
    pto.TRESHAPE(b, a)


def _rs_loc(x):
    a = pto.Tile(pto.Vec, pto.float16, (16, 16))
    b = pto.Tile(pto.Mat, pto.float16, (16, 16))
    pto.TRESHAPE(b, a)


def _rs_used(x):
    a = pto.Tile(pto.Vec, pto.float32, (4, 16))
    b = pto.Tile(pto.Vec, pto.float32, (4, 16))
    pto.TLOAD(a, x[0:4, 0:16])
    pto.TLOAD(b, x[0:4, 0:16])
    pto.TRESHAPE(b, a)


def _rs_assigned(x):
    a = pto.Tile(pto.Vec, pto.float32, (4, 16))
    b = pto.Tile(pto.Vec, pto.int32, (4, 16))
    pto.TASSIGN(a, 0)
    pto.TASSIGN(b, 256)
    pto.TRESHAPE(b, a)


RESHAPE_ERRORS = [("bytes", _rs_bytes, E.TileShapeError, "bytes"),
                  ("boxed", _rs_boxed, E.LayoutError, "boxed"),
                  ("location", _rs_loc, E.LocationError, "location"),
                  ("dst_used_before", _rs_used, E.TileError, "already lives at"),
                  ("dst_assigned_elsewhere", _rs_assigned, E.TileError, "TASSIGNed")]


@pytest.mark.parametrize("case", RESHAPE_ERRORS, ids=[c[0] for c in RESHAPE_ERRORS])
def test_treshape_trace_errors(pto_init, case):
    _, body, err, text = case
    pto_init()
    with pytest.raises(err) as ei:
        pypto.kernel(body)(tensor(np.zeros((4, 16), np.float32)))
    assert "TRESHAPE" in str(ei.value) and text in str(ei.value), str(ei.value)


# =============================================================================================
# seed level: gather, scatter, trans
# =============================================================================================
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_seed_gather(target, pto_init, dtype):
    pto_init(soc="a5")
    rng = rng_for("seed-gather", dtype)
    src = values(rng, dtype, (7, 50))
    idx = rng.integers(0, src.size, (3, 41)).astype(np.int32)
    g = pypto.load_insn("gather")
    dst = np.zeros(idx.shape, src.dtype)
    g.set_operand(0, src)
    g.set_operand(1, idx)
    g.set_operand(2, dst)
    g.execute()
    assert_bits_equal(dst, src.reshape(-1)[idx], what="gather (numpy operands)")
    out = pypto.zeros(idx.shape, getattr(pypto, dtype))
    g.set_operand(0, pypto.Tensor(src))
    g.set_operand(1, pypto.Tensor(idx))
    g.set_operand(2, out)
    g.execute()
    assert_bits_equal(out.numpy(), src.reshape(-1)[idx], what="gather (Tensor operands)")
    if target.backend == "sim":              # the NPU backends do not check gather indices
        g.set_operand(1, np.array([0, src.size], np.int32))
        g.set_operand(2, np.zeros(2, src.dtype))
        with pytest.raises(E.IndexRangeError):
            g.execute()


def test_seed_scatter(target, pto_init):
    """dst = base, then dst.flat[index[k]] = src[k] in index order (the last duplicate wins)."""
    pto_init(soc="a5")
    base = np.arange(20, dtype=np.int16)
    idx = np.array([3, 7, 3, 19, 0], np.int32)
    src = np.array([100, 200, 300, 400, 500], np.int16)
    dst = np.zeros(20, np.int16)
    s = pypto.load_insn("scatter")
    for i, v in enumerate((src, idx, base, dst)):
        s.set_operand(i, v)
    s.execute()
    want = base.copy()
    for k, v in zip(idx, src):
        want[k] = v
    assert np.array_equal(dst, want) and want[3] == 300


@pytest.mark.parametrize("soc,dtype", [("a2a3", "float16"), ("a2a3", "uint8"), ("a5", "float32")])
def test_seed_trans(target, pto_init, soc, dtype):
    pto_init(soc=soc)
    x = values(rng_for("seed-trans", dtype), ref.SHORT[ref.np_dtype(dtype)], (45, 70))
    y = np.zeros((70, 45), x.dtype)
    t = pypto.load_insn("trans")
    t.set_operand(0, x)
    t.set_operand(1, y)
    t.execute()
    assert_bits_equal(y, x.T.copy(), what="trans")
    yt = pypto.zeros((70, 45), getattr(pypto, dtype))
    t.set_operand(0, pypto.Tensor(x))
    t.set_operand(1, yt)
    t.execute()
    assert_bits_equal(yt.numpy(), x.T.copy(), what="trans (Tensor operands)")


SEED_ERRORS = [
    ("gather_a2a3", "a2a3", "gather", (np.zeros(8, np.float32), np.zeros(4, np.int32), np.zeros(4, np.float32)),
     E.DTypeError, "a5"),
    ("gather_index_f32", "a5", "gather", (np.zeros(8, np.float32), np.zeros(4, np.float32), np.zeros(4, np.float32)),
     E.DTypeError, "int32"),
    ("gather_shape", "a5", "gather", (np.zeros(8, np.float32), np.zeros(4, np.int32), np.zeros(5, np.float32)),
     E.ShapeError, "index's shape"),
    ("scatter_base_dtype", "a5", "scatter", (np.zeros(4, np.float32), np.zeros(4, np.int32), np.zeros(8, np.int32),
                                             np.zeros(8, np.int32)), E.DTypeMismatchError, "base"),
    ("trans_shape", "a2a3", "trans", (np.zeros((4, 6), np.float32), np.zeros((4, 6), np.float32)),
     E.ShapeError, "(6, 4)"),
    ("trans_1d", "a2a3", "trans", (np.zeros(6, np.float32), np.zeros(6, np.float32)), E.ShapeError, "2-D"),
]


@pytest.mark.parametrize("case", SEED_ERRORS, ids=[c[0] for c in SEED_ERRORS])
def test_seed_errors(pto_init, case):
    _, soc, name, ops, err, text = case
    pto_init(soc=soc)
    insn = pypto.load_insn(name)
    for i, v in enumerate(ops):
        insn.set_operand(i, v)
    with pytest.raises(err) as ei:
        insn.execute()
    assert text in str(ei.value), str(ei.value)
