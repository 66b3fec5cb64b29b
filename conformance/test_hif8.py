"""a5's HiFloat8 in kernels: TCVT f32 -> hif8, f16 -> hif8 (every rounding and saturation
setting: a5 rounds half away and saturates whatever is asked), hif8 -> f32 over all 256 codes,
runtime valid regions, TLOAD/TSTORE and padding of hif8 tiles; a2a3 has no hif8. Compared bit
for bit with ``ref_hif8`` (written from the format's description)."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pypto
from pypto import pto

from . import ref_hif8 as H
from .helpers import assert_bits_equal, rng_for, seeds
from .test_units import ALL_MODES, PROPERTY, cvt_kwargs

R, C = 8, 64                    # tile capacity (64 one-byte columns: two 32-byte blocks)
SENT = 0xA5                     # prefill code: a finite hif8 value


def _init_a5(pto_init, target) -> None:
    if target.backend == "npu-cpusim":
        pytest.skip("pto-isa's CPU backend defines no hifloat8_t: npu-cpusim cannot build hif8 kernels")
    try:
        pto_init(soc="a5")
    except pypto.PtoError as e:
        if target.backend != "sim":
            pytest.skip(f"a5 profile not available on this {target.backend} device: {e}")
        raise


def _specials(src: str) -> np.ndarray:
    """Ties between neighbouring hif8 values, the binade edges, overflow, denormals, specials."""
    vals = np.unique(np.abs(H.value_list()))              # sorted
    mids = (vals[:-1] + vals[1:]) / 2
    edge = [0.0, -0.0, 2.0 ** -23, 2.0 ** -24, 1.5 * 2.0 ** -23, 1.25 * 2.0 ** 15, 1.2499 * 2.0 ** 15,
            3e4, 5e4, 1e9, np.inf, -np.inf, np.nan, 3.4e38]
    x = np.concatenate([vals, mids, np.nextafter(mids, 0), np.nextafter(mids, np.inf), edge])
    x = np.concatenate([x, -x])
    if src == "f16":
        x = x[np.abs(x) <= 65504.0]
    return x.astype(np.float32 if src == "f32" else np.float16)


def _inputs(rng, src: str, n: int) -> np.ndarray:
    """n values: the specials, then log-uniform magnitudes over hif8's range and beyond."""
    sp = _specials(src)
    mag = np.exp2(rng.uniform(-26, 17 if src == "f32" else 15.9, n))
    rand = (np.where(rng.random(n) < 0.5, -mag, mag)).astype(sp.dtype)
    x = np.concatenate([sp, rand])[:n] if len(sp) < n else sp[:n]
    return x


def _ptype(src: str):
    return {"f32": pypto.float32, "f16": pypto.float16}[src]


@functools.lru_cache(maxsize=None)
def _to_hif8_kernel(rows: int, modes: tuple):
    """One TCVT to hif8 per (rmode, satMode) of ``modes``, result i stored at rows i*rows.."""
    def k_to_hif8(x, prefill, z):
        a = pto.Tile(pto.Vec, x.dtype, (rows, C))
        pto.TLOAD(a, x[0:rows, 0:C])
        for i, (m, s) in enumerate(modes):
            d = pto.Tile(pto.Vec, pypto.hifloat8, (rows, C))
            pto.TLOAD(d, prefill[0:rows, 0:C])
            pto.TCVT(d, a, **cvt_kwargs(m, s))
            pto.TSTORE(z[i * rows:(i + 1) * rows, 0:C], d)
    return pypto.kernel(k_to_hif8)


@pytest.mark.parametrize("src", ["f32", "f16"])
def test_to_hif8_every_mode(pto_init, target, src):
    """Each of 7 round modes x 3 saturation settings over the ties, edges and random values."""
    _init_a5(pto_init, target)
    rows = R * 2
    x = _inputs(rng_for("hif8", src), src, rows * C).reshape(rows, C)
    prefill = np.full((rows, C), SENT, np.uint8)
    z = pypto.zeros((len(ALL_MODES) * rows, C), pypto.hifloat8)
    _to_hif8_kernel(rows, ALL_MODES)(pypto.Tensor(x), pypto.Tensor(prefill, dtype=pypto.hifloat8), z)
    got = z.numpy()
    for i, (m, s) in enumerate(ALL_MODES):
        assert_bits_equal(got[i * rows:(i + 1) * rows], H.cvt_to_hif8(x, m, prefill), inputs={"x": x},
                          what=f"TCVT {src}->hif8 rmode={m} satMode={s}")


@pypto.kernel
def k_from_hif8(x, z):
    a = pto.Tile(pto.Vec, pypto.hifloat8, (R, C))
    b = pto.Tile(pto.Vec, pypto.float32, (R, C))
    pto.TLOAD(a, x[0:R, 0:C])
    pto.TCVT(b, a)
    pto.TSTORE(z[0:R, 0:C], b)


def test_from_hif8_every_code(pto_init, target):
    _init_a5(pto_init, target)
    codes = np.concatenate([np.arange(256), np.arange(256)[::-1]]).astype(np.uint8).reshape(R, C)
    z = pypto.zeros((R, C), pypto.float32)
    k_from_hif8(pypto.Tensor(codes, dtype=pypto.hifloat8), z)
    assert_bits_equal(z.numpy().view(np.uint32), H.cvt_from_hif8(codes), inputs={"code": codes},
                      what="TCVT hif8->f32")


@pypto.kernel
def k_to_hif8_region(x, prefill, z, vr, vc):
    a = pto.Tile(pto.Vec, pypto.float32, (R, C), valid=pto.DYNAMIC)
    d = pto.Tile(pto.Vec, pypto.hifloat8, (R, C), valid=pto.DYNAMIC)
    a.set_valid(vr, vc)
    pto.TLOAD(a, x[0:vr, 0:vc])
    d.set_valid(R, C)
    pto.TLOAD(d, prefill[0:R, 0:C])
    d.set_valid(vr, vc)
    pto.TCVT(d, a, rmode="CAST_TRUNC")
    d.set_valid(R, C)
    pto.TSTORE(z[0:R, 0:C], d)


def _check_region(x, vr, vc, rng) -> None:
    prefill = rng.integers(0, 256, (R, C)).astype(np.uint8)
    z = pypto.zeros((R, C), pypto.hifloat8)
    k_to_hif8_region(pypto.Tensor(x), pypto.Tensor(prefill, dtype=pypto.hifloat8), z, vr, vc)
    expected = prefill.copy()
    expected[:vr, :vc] = H.cvt_to_hif8(x[:vr, :vc], "CAST_TRUNC", prefill[:vr, :vc])
    assert_bits_equal(z.numpy(), expected, inputs={"x": x, "prefill": prefill},
                      what=f"TCVT f32->hif8 valid ({vr}, {vc}): whole tile")


def test_to_hif8_runtime_region_writes_only_valid(pto_init, target):
    _init_a5(pto_init, target)
    rng = rng_for("hif8-region")
    x = _inputs(rng, "f32", R * C).reshape(R, C)
    for vr, vc in [(3, 17), (R, C), (1, 1)]:
        _check_region(x, vr, vc, rng)


def test_to_hif8_property(pto_init, target):
    _init_a5(pto_init, target)

    @PROPERTY
    @given(vr=st.integers(1, R), vc=st.integers(1, C), seed=seeds)
    def check(vr, vc, seed):
        rng = np.random.default_rng(seed)
        _check_region(_inputs(rng, "f32", R * C)[rng.permutation(R * C)].reshape(R, C), vr, vc, rng)
    check()


@pypto.kernel
def k_hif8_move(x, z):
    """A partial-block hif8 load padded with PadValue::Max, then stored over whole rows."""
    a = pto.Tile(pto.Vec, pypto.hifloat8, (4, C), valid=pto.DYNAMIC, pad=pto.PadMax)
    a.set_valid(3, 37)
    pto.TLOAD(a, x[0:3, 0:37])
    a.set_valid(3, C)
    b = pto.Tile(pto.Vec, pypto.hifloat8, (4, C), valid=(3, C))
    pto.TMOV(b, a)
    pto.TSTORE(z[0:3, 0:C], b)


def test_hif8_tiles_move_bits_and_pad_zero(pto_init, target):
    """TLOAD pads hif8 (as fp8) with 0 for every PadValue, over the tail of each valid row's
    last 32-byte block; TMOV and TSTORE move the codes unchanged."""
    _init_a5(pto_init, target)
    rng = rng_for("hif8-move")
    x = rng.integers(0, 256, (3, 37)).astype(np.uint8)
    z = pypto.Tensor(np.full((4, C), SENT, np.uint8), dtype=pypto.hifloat8)
    k_hif8_move(pypto.Tensor(x, dtype=pypto.hifloat8), z)
    got = z.numpy()
    np.testing.assert_array_equal(got[:3, :37], x)
    np.testing.assert_array_equal(got[:3, 37:C], 0)      # 37 bytes: the second block's tail
    np.testing.assert_array_equal(got[3], SENT)          # not stored


@pypto.kernel
def k_a2a3_hif8(x, z):
    a = pto.Tile(pto.Vec, pypto.float32, (R, C))
    d = pto.Tile(pto.Vec, pypto.hifloat8, (R, C))
    pto.TLOAD(a, x[0:R, 0:C])
    pto.TCVT(d, a)
    pto.TSTORE(z[0:R, 0:C], d)


def test_a2a3_has_no_hif8(pto_init, target):
    """a2a3 has no hif8: the kernel is a DTypeError naming TCVT, and z stays as it was."""
    pto_init(soc="a2a3")
    x = np.ones((R, C), np.float32)
    z = pypto.Tensor(np.full((R, C), SENT, np.uint8), dtype=pypto.hifloat8)
    with pytest.raises(pypto.errors.DTypeError, match="hifloat8|hif8"):
        k_a2a3_hif8(pypto.Tensor(x), z)
    np.testing.assert_array_equal(z.numpy(), SENT)


def _codes(rng, shape) -> np.ndarray:
    return rng.integers(0, 256, shape).astype(np.uint8)


def _both(kern, arrays, outs_shapes, *scalars):
    """Run ``kern`` on hif8 tensors and on uint8 tensors of the same bytes: the outputs."""
    got = {}
    for dt in (pypto.hifloat8, pypto.uint8):
        outs = [pypto.Tensor(np.full(s, SENT, np.uint8), dtype=dt) for s in outs_shapes]
        kern(*(pypto.Tensor(a, dtype=dt) for a in arrays), *outs, *scalars)
        got[dt] = [o.numpy() for o in outs]
    return got[pypto.hifloat8], got[pypto.uint8]


def test_hif8_moves_exactly_as_u8(pto_init, target):
    """TMOV, TTRANS, TEXTRACT, TINSERT of hif8 tiles move the codes as u8 tiles move bytes
    (u8 is checked against the reference in test_memory.py), TFILLPAD pads 0 for every pad."""
    from . import test_memory as M
    _init_a5(pto_init, target)
    rng = rng_for("hif8-moves")
    for (svr, svc), (mvr, mvc), (evr, evc), (r0, c0) in M.MOVE_CASES:
        arrays = [_codes(rng, s) for s in (M.M_SHAPE, M.M_SHAPE, M.T_SHAPE, M.W_SHAPE)]
        h, u = _both(M._move_kernel(), arrays, (M.M_SHAPE, M.T_SHAPE, M.W_SHAPE),
                     svr, svc, mvr, mvc, evr, evc, r0, c0)
        for name, a, b in zip(("TMOV", "TTRANS", "TEXTRACT"), h, u):
            np.testing.assert_array_equal(a, b, err_msg=f"{name} src ({svr},{svc})")
    for (ivr, ivc), (wvr, wvc), (r1, c1) in M.INSERT_CASES:
        arrays = [_codes(rng, M.W_SHAPE), _codes(rng, M.M_SHAPE)]
        h, u = _both(M._insert_kernel(), arrays, (M.M_SHAPE,), ivr, ivc, wvr, wvc, r1, c1)
        np.testing.assert_array_equal(h[0], u[0], err_msg=f"TINSERT at ({r1},{c1})")
    for svr, svc, dvr, dvc in M.FILL_REGIONS:
        arrays = [_codes(rng, s) for s in (M.F_SHAPE, M.F_SHAPE, M.F_SHAPE, M.X_SHAPE)]
        shapes = (M.F_SHAPE, M.F_SHAPE, M.X_SHAPE)
        for hpad in ("max", "min", "zero"):
            h = _both(M._fill_kernel(hpad), arrays, shapes, svr, svc, dvr, dvc)[0]
            u = _both(M._fill_kernel("zero"), arrays, shapes, svr, svc, dvr, dvc)[1]
            for name, a, b in zip(("TFILLPAD", "TFILLPAD_INPLACE", "TFILLPAD_EXPAND"), h, u):
                np.testing.assert_array_equal(a, b, err_msg=f"{name} pad={hpad} ({svr},{svc})->({dvr},{dvc})")
