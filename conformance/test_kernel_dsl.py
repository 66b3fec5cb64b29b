"""Kernel DSL conformance: small ``@pypto.kernel`` programs written with ``pypto.pto``.

Covers TLOAD/TSTORE of full and partial tiles, the binary family and TADDS/TMULS on static,
runtime-parameter and ``set_valid`` (DYNAMIC) valid regions, what is and is not written outside
the valid region, ``pto.range`` loops with ``pto.min`` tails, multi-block launches,
``dynamic_shapes=True`` kernels, TLOAD padding per the NPU rule, and compiled == eager.

Kernels are defined once at module level (each new dtype/shape of a static kernel compiles once);
property tests use runtime scalars or ``dynamic_shapes=True`` so that examples share compilations.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto
from pypto.testing import finalize_quietly
from pypto import pto

from . import reference as ref
from .helpers import (assert_bits_equal, random_scalar, random_values, rng_for, seeds,
                      sentinel)

TR, TC = 16, 64                 # tile capacity used throughout (64 columns: 32-byte rule for all types)
FAMILY = ("add", "sub", "mul", "max", "min", "div", "adds", "muls")
A2A3_TYPES = ("float32", "float16", "int32", "int16")
# the big all-ops kernels cost a compilation per dtype: int32 is covered by the runtime-valid,
# tiled and property tests, so these two skip it
FAMILY_TYPES = ("float32", "float16", "int16")

PROPERTY_SETTINGS = settings(max_examples=25, deadline=None,
                             suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                    HealthCheck.too_slow])


def _is_float(dt: Any) -> bool:
    return str(getattr(dt, "name", dt)) in ("float32", "float16", "bfloat16")


def _binary_fns(dt: Any):
    """(name, pto function) of the tile-tile family legal for dt on a2a3 (TDIV: floats only)."""
    fns = [("add", pto.TADD), ("sub", pto.TSUB), ("mul", pto.TMUL), ("max", pto.TMAX),
           ("min", pto.TMIN)]
    if _is_float(dt):
        fns.append(("div", pto.TDIV))
    return fns


def T(arr: np.ndarray) -> "pypto.Tensor":
    return pypto.Tensor(arr)


# =============================================================================================
# kernels
# =============================================================================================
@pypto.kernel
def k_add_16x64(x, y, z):
    a = pto.Tile(pto.Vec, pto.float32, (16, 64))
    b = pto.Tile(pto.Vec, pto.float32, (16, 64))
    c = pto.Tile(pto.Vec, pto.float32, (16, 64))
    pto.TLOAD(a, x[0:16, 0:64])
    pto.TLOAD(b, y[0:16, 0:64])
    pto.TADD(c, a, b)
    pto.TSTORE(z[0:16, 0:64], c)


# a static 5x37 valid region placed at GM offset (3, 10) of 16x64 tensors
SR0, SC0, SVR, SVC = 3, 10, 5, 37
SCALAR_CONST = {"float": 1 + 2.0 ** -11 + 2.0 ** -40, "int": -32768}     # in range of every tested int type


@pypto.kernel
def k_family_static(x, y, zadd, zsub, zmul, zmax, zmin, zdiv, zadds, zmuls, zaddk, s):
    dt = x.dtype
    outs = {"add": zadd, "sub": zsub, "mul": zmul, "max": zmax, "min": zmin, "div": zdiv}
    a = pto.Tile(pto.Vec, dt, (TR, TC), valid=(SVR, SVC))
    b = pto.Tile(pto.Vec, dt, (TR, TC), valid=(SVR, SVC))
    pto.TLOAD(a, x[SR0:SR0 + SVR, SC0:SC0 + SVC])
    pto.TLOAD(b, y[SR0:SR0 + SVR, SC0:SC0 + SVC])
    for name, fn in _binary_fns(dt):
        c = pto.Tile(pto.Vec, dt, (TR, TC), valid=(SVR, SVC))
        fn(c, a, b)
        pto.TSTORE(outs[name][SR0:SR0 + SVR, SC0:SC0 + SVC], c)
    k = SCALAR_CONST["float" if _is_float(dt) else "int"]
    for z, fn, scalar in ((zadds, pto.TADDS, s), (zmuls, pto.TMULS, s), (zaddk, pto.TADDS, k)):
        c = pto.Tile(pto.Vec, dt, (TR, TC), valid=(SVR, SVC))
        fn(c, a, scalar)
        pto.TSTORE(z[SR0:SR0 + SVR, SC0:SC0 + SVC], c)


@pypto.kernel
def k_family_runtime_valid(x, y, zadd, zsub, zmul, zmax, zmin, zdiv, zadds, zmuls, s,
                           ro, co, vr, vc):
    """Valid region and GM offsets are runtime scalar parameters: one compilation per dtype."""
    dt = x.dtype
    outs = {"add": zadd, "sub": zsub, "mul": zmul, "max": zmax, "min": zmin, "div": zdiv}
    a = pto.Tile(pto.Vec, dt, (TR, TC), valid=(vr, vc))
    b = pto.Tile(pto.Vec, dt, (TR, TC), valid=(vr, vc))
    pto.TLOAD(a, x[ro:ro + vr, co:co + vc])
    pto.TLOAD(b, y[ro:ro + vr, co:co + vc])
    for name, fn in _binary_fns(dt):
        c = pto.Tile(pto.Vec, dt, (TR, TC), valid=(vr, vc))
        fn(c, a, b)
        pto.TSTORE(outs[name][ro:ro + vr, co:co + vc], c)
    for z, fn in ((zadds, pto.TADDS), (zmuls, pto.TMULS)):
        c = pto.Tile(pto.Vec, dt, (TR, TC), valid=(vr, vc))
        fn(c, a, s)
        pto.TSTORE(z[ro:ro + vr, co:co + vc], c)


@pypto.kernel
def k_family_observe(x, y, prefill, zadd, zsub, zmul, zmax, zmin, zdiv, zadds, zmuls, s, vr, vc):
    """DYNAMIC tiles + set_valid: the destination tile is first filled from ``prefill``, then
    computed on a (vr, vc) valid region, then stored whole, so GM shows what the instruction
    wrote outside its valid region (it must write nothing there)."""
    dt = x.dtype
    outs = {"add": zadd, "sub": zsub, "mul": zmul, "max": zmax, "min": zmin, "div": zdiv}
    a = pto.Tile(pto.Vec, dt, (TR, TC), valid=pto.DYNAMIC)
    b = pto.Tile(pto.Vec, dt, (TR, TC), valid=pto.DYNAMIC)
    a.set_valid(vr, vc)
    b.set_valid(vr, vc)
    pto.TLOAD(a, x[0:vr, 0:vc])
    pto.TLOAD(b, y[0:vr, 0:vc])
    work = [(outs[name], fn, b) for name, fn in _binary_fns(dt)]
    work += [(zadds, pto.TADDS, s), (zmuls, pto.TMULS, s)]
    for z, fn, other in work:
        c = pto.Tile(pto.Vec, dt, (TR, TC), valid=pto.DYNAMIC)
        c.set_valid(TR, TC)
        pto.TLOAD(c, prefill[0:TR, 0:TC])
        c.set_valid(vr, vc)
        fn(c, a, other)
        c.set_valid(TR, TC)
        pto.TSTORE(z[0:TR, 0:TC], c)


def _tiled_add_mul(x, y, zadd, zmul):
    """Row/column block loops with pto.min tails (shared body of the static and dynamic kernels)."""
    R, C = x.shape
    dt = x.dtype
    a = pto.Tile(pto.Vec, dt, (TR, TC), valid=pto.DYNAMIC)
    b = pto.Tile(pto.Vec, dt, (TR, TC), valid=pto.DYNAMIC)
    c = pto.Tile(pto.Vec, dt, (TR, TC), valid=pto.DYNAMIC)
    d = pto.Tile(pto.Vec, dt, (TR, TC), valid=pto.DYNAMIC)
    for i in pto.range((R + TR - 1) // TR):
        for j in pto.range((C + TC - 1) // TC):
            r0 = i * TR
            c0 = j * TC
            nr = pto.min(TR, R - r0)
            nc = pto.min(TC, C - c0)
            for t in (a, b, c, d):
                t.set_valid(nr, nc)
            pto.TLOAD(a, x[r0:r0 + nr, c0:c0 + nc])
            pto.TLOAD(b, y[r0:r0 + nr, c0:c0 + nc])
            pto.TADD(c, a, b)
            pto.TMUL(d, a, b)
            pto.TSTORE(zadd[r0:r0 + nr, c0:c0 + nc], c)
            pto.TSTORE(zmul[r0:r0 + nr, c0:c0 + nc], d)


@pypto.kernel
def k_tiled(x, y, zadd, zmul):
    _tiled_add_mul(x, y, zadd, zmul)


@pypto.kernel(dynamic_shapes=True)
def k_tiled_dyn(x, y, zadd, zmul):
    _tiled_add_mul(x, y, zadd, zmul)


@pypto.kernel
def k_block_ids(x, z):
    """Block b handles rows [16b, 16b+16) and adds 1000*block_idx + block_num."""
    t = pto.Tile(pto.Vec, pto.int32, (16, 64))
    r0 = pto.block_idx() * 16
    pto.TLOAD(t, x[r0:r0 + 16, 0:64])
    pto.TADDS(t, t, pto.block_idx() * 1000 + pto.block_num())
    pto.TSTORE(z[r0:r0 + 16, 0:64], t)


@pypto.kernel
def k_grid_stride(x, y, z):
    """Row blocks distributed over the launched blocks: for i in range(block_idx, n, block_num)."""
    R, C = x.shape
    dt = x.dtype
    a = pto.Tile(pto.Vec, dt, (TR, TC), valid=pto.DYNAMIC)
    b = pto.Tile(pto.Vec, dt, (TR, TC), valid=pto.DYNAMIC)
    c = pto.Tile(pto.Vec, dt, (TR, TC), valid=pto.DYNAMIC)
    for i in pto.range(pto.block_idx(), (R + TR - 1) // TR, pto.block_num()):
        r0 = i * TR
        nr = pto.min(TR, R - r0)
        for t in (a, b, c):
            t.set_valid(nr, C)
        pto.TLOAD(a, x[r0:r0 + nr, 0:C])
        pto.TLOAD(b, y[r0:r0 + nr, 0:C])
        pto.TSUB(c, a, b)
        pto.TSTORE(z[r0:r0 + nr, 0:C], c)


def _make_pad_kernel(pad):
    @pypto.kernel
    def k_pad(prefill, x, out, vr, vc):
        t = pto.Tile(pto.Vec, x.dtype, (TR, TC), valid=pto.DYNAMIC, pad=pad)
        t.set_valid(TR, TC)
        pto.TLOAD(t, prefill[0:TR, 0:TC])      # whole 32-byte blocks: nothing to pad
        t.set_valid(vr, vc)
        pto.TLOAD(t, x[0:vr, 0:vc])            # the load under test
        t.set_valid(TR, TC)
        pto.TSTORE(out[0:TR, 0:TC], t)         # shows the whole tile
    return k_pad


PAD_NAMES = ("null", "zero", "min", "max")
PAD_KERNELS = {p: _make_pad_kernel(getattr(pto, "Pad" + p.capitalize())) for p in PAD_NAMES}


# =============================================================================================
# helpers
# =============================================================================================
def _scalar_for(dtype: str, rng) -> Any:
    s = random_scalar(rng, dtype)
    return float(s) if ref.is_float(dtype) else s


def _family_outputs(dtype: str, shape):
    return {op: sentinel(shape, dtype) for op in FAMILY}


def _expected_op(op: str, a: np.ndarray, b: np.ndarray, s: Any, dtype: str):
    if op in ref.SCALAR_OPS:
        return ref.binary(op, a, s, dtype, with_loose=True)
    return ref.binary(op, a, b, dtype, with_loose=True)


# =============================================================================================
# tests
# =============================================================================================
def test_tload_tadd_tstore_16x64(pto_session):
    rng = rng_for("16x64")
    x = random_values(rng, "float32", (16, 64))
    y = random_values(rng, "float32", (16, 64))
    z = T(sentinel((16, 64), "float32"))
    k_add_16x64(T(x), T(y), z)
    exp, loose = ref.binary("add", x, y, with_loose=True)
    assert_bits_equal(z.numpy(), exp, loose=loose, inputs={"x": x, "y": y})


def test_launch_with_block_dim_1_is_the_same(pto_session):
    rng = rng_for("16x64-b1")
    x = random_values(rng, "float32", (16, 64))
    y = random_values(rng, "float32", (16, 64))
    z1, z2 = T(sentinel((16, 64), "float32")), T(sentinel((16, 64), "float32"))
    k_add_16x64(T(x), T(y), z1)
    k_add_16x64[1](T(x), T(y), z2)
    assert_bits_equal(z2.numpy(), z1.numpy())


def _run_family_static(dtype: str, seed_key: Any):
    rng = rng_for("static", dtype, seed_key)
    x = random_values(rng, dtype, (TR, TC))
    y = random_values(rng, dtype, (TR, TC))
    s = _scalar_for(dtype, rng)
    outs = _family_outputs(dtype, (TR, TC))
    outs["addk"] = sentinel((TR, TC), dtype)
    zs = {k: T(v) for k, v in outs.items()}
    k_family_static(T(x), T(y), zs["add"], zs["sub"], zs["mul"], zs["max"], zs["min"], zs["div"],
                    zs["adds"], zs["muls"], zs["addk"], s)
    return x, y, s, {k: z.numpy() for k, z in zs.items()}


@pytest.mark.parametrize("dtype", FAMILY_TYPES)
def test_family_static_valid_region(pto_session, dtype):
    """Static 5x37 valid region at GM offset (3, 10): only that region of GM is written."""
    x, y, s, got = _run_family_static(dtype, 0)
    win = (slice(SR0, SR0 + SVR), slice(SC0, SC0 + SVC))
    const = SCALAR_CONST["float" if ref.is_float(dtype) else "int"]
    for op in FAMILY + ("addk",):
        expected = sentinel((TR, TC), dtype)
        if op == "div" and not ref.is_float(dtype):
            assert_bits_equal(got[op], expected, what="untouched zdiv")
            continue
        ref_op, scalar = ("adds", const) if op == "addk" else (op, s)
        e, loose_w = _expected_op(ref_op, x[win], y[win], scalar, dtype)
        expected[win] = e
        loose = np.zeros((TR, TC), bool)
        loose[win] = loose_w
        assert_bits_equal(got[op], expected, loose=loose, inputs={"x": x, "y": y},
                          what=f"{op} {dtype} static valid {SVR}x{SVC}")


def _run_family_runtime(dtype: str, gm_shape, ro, co, vr, vc, rng):
    x = random_values(rng, dtype, gm_shape)
    y = random_values(rng, dtype, gm_shape)
    s = _scalar_for(dtype, rng)
    zs = {k: T(v) for k, v in _family_outputs(dtype, gm_shape).items()}
    k_family_runtime_valid(T(x), T(y), zs["add"], zs["sub"], zs["mul"], zs["max"], zs["min"],
                           zs["div"], zs["adds"], zs["muls"], s, ro, co, vr, vc)
    return x, y, s, {k: z.numpy() for k, z in zs.items()}


def _check_family_runtime(dtype, gm_shape, ro, co, vr, vc, x, y, s, got):
    win = (slice(ro, ro + vr), slice(co, co + vc))
    for op in FAMILY:
        expected = sentinel(gm_shape, dtype)
        loose = np.zeros(gm_shape, bool)
        if not (op == "div" and not ref.is_float(dtype)):
            e, lw = _expected_op(op, x[win], y[win], s, dtype)
            expected[win] = e
            loose[win] = lw
        assert_bits_equal(got[op], expected, loose=loose, inputs={"x": x, "y": y},
                          what=f"{op} {dtype} valid ({vr},{vc}) at ({ro},{co})")


GM_SHAPE = (20, 80)


@pytest.mark.parametrize("dtype", A2A3_TYPES)
@pytest.mark.parametrize("region", [(0, 0, 16, 64), (3, 10, 5, 37), (19, 79, 1, 1), (4, 16, 16, 1)],
                         ids=lambda r: "ro{}co{}-{}x{}".format(*r))
def test_family_runtime_valid_region(pto_session, dtype, region):
    ro, co, vr, vc = region
    rng = rng_for("runtime", dtype, region)
    x, y, s, got = _run_family_runtime(dtype, GM_SHAPE, ro, co, vr, vc, rng)
    _check_family_runtime(dtype, GM_SHAPE, ro, co, vr, vc, x, y, s, got)


@PROPERTY_SETTINGS
@given(data=st.data())
def test_family_runtime_valid_property(pto_session, data):
    dtype = data.draw(st.sampled_from(A2A3_TYPES), label="dtype")
    vr = data.draw(st.integers(1, TR), label="vr")
    vc = data.draw(st.integers(1, TC), label="vc")
    ro = data.draw(st.integers(0, GM_SHAPE[0] - vr), label="ro")
    co = data.draw(st.integers(0, GM_SHAPE[1] - vc), label="co")
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    x, y, s, got = _run_family_runtime(dtype, GM_SHAPE, ro, co, vr, vc, rng)
    _check_family_runtime(dtype, GM_SHAPE, ro, co, vr, vc, x, y, s, got)


def test_runtime_scalars_do_not_recompile(target, pto_session):
    """New values of scalar parameters (valid region, offsets, operand) reuse the compiled kernel."""
    _run_family_runtime("float32", GM_SHAPE, 0, 0, 16, 64, rng_for("norecompile", 0))
    before = pypto.stats().compiles
    for i, (ro, co, vr, vc) in enumerate([(1, 2, 3, 4), (4, 16, 16, 1), (19, 0, 1, 64)]):
        rng = rng_for("norecompile", i + 1)
        x, y, s, got = _run_family_runtime("float32", GM_SHAPE, ro, co, vr, vc, rng)
        _check_family_runtime("float32", GM_SHAPE, ro, co, vr, vc, x, y, s, got)
    if target.mode == "compiled":
        assert pypto.stats().compiles == before, "scalar parameters must not cause a recompile"


@pytest.mark.parametrize("region,error", [((10, 0, 16, 64), "GMBoundsError"),
                                          ((0, 20, 4, 64), "GMBoundsError"),
                                          ((0, 0, 17, 8), "ValidRegionError"),
                                          ((0, 0, 4, 65), "ValidRegionError")],
                         ids=["rows-past-gm", "cols-past-gm", "valid-rows-past-tile",
                              "valid-cols-past-tile"])
def test_runtime_region_errors(pto_session, region, error):
    """Runtime valid regions / GM views are checked when the kernel runs: a PtoError, and (the
    failing TLOAD comes first) nothing stored."""
    ro, co, vr, vc = region
    dtype = "float32"
    x = random_values(rng_for("rt-err", region), dtype, (32, 80) if vr > TR else GM_SHAPE)
    gm_shape = x.shape
    zs = {k: T(v) for k, v in _family_outputs(dtype, gm_shape).items()}
    with pytest.raises(getattr(pypto.errors, error)) as ei:
        k_family_runtime_valid(T(x), T(x), zs["add"], zs["sub"], zs["mul"], zs["max"], zs["min"],
                               zs["div"], zs["adds"], zs["muls"], 1.5, ro, co, vr, vc)
    assert isinstance(ei.value, pypto.PtoError)
    for k, z in zs.items():
        assert_bits_equal(z.numpy(), sentinel(gm_shape, dtype), what=f"z{k} after the error")


@pytest.mark.parametrize("dtype,s", [("float16", 70000.0), ("float16", -1e6), ("int16", 40000),
                                     ("int16", -32769), ("float32", 1e39)])
def test_runtime_scalar_that_does_not_fit_is_refused(pto_session, dtype, s):
    """A runtime scalar parameter that does not fit the tile type is a DTypeError naming it, in
    both modes (compiled checks it when the kernel runs, eager when the instruction runs)."""
    rng = rng_for("rt-bad-scalar", dtype, s)
    with pytest.raises(pypto.errors.DTypeError) as ei:
        _run_observe(dtype, 5, 37, rng, s=s)
    assert "does not fit" in str(ei.value) or "overflows" in str(ei.value)
    assert "TADDS" in str(ei.value)


def _run_observe(dtype: str, vr: int, vc: int, rng, s=None):
    x = random_values(rng, dtype, (TR, TC))
    y = random_values(rng, dtype, (TR, TC))
    prefill = random_values(rng, dtype, (TR, TC))
    s = _scalar_for(dtype, rng) if s is None else s
    zs = {k: T(v) for k, v in _family_outputs(dtype, (TR, TC)).items()}
    k_family_observe(T(x), T(y), T(prefill), zs["add"], zs["sub"], zs["mul"], zs["max"],
                     zs["min"], zs["div"], zs["adds"], zs["muls"], s, vr, vc)
    return x, y, prefill, s, {k: z.numpy() for k, z in zs.items()}


def _check_observe(dtype, vr, vc, x, y, prefill, s, got):
    win = (slice(0, vr), slice(0, vc))
    for op in FAMILY:
        if op == "div" and not ref.is_float(dtype):
            assert_bits_equal(got[op], sentinel((TR, TC), dtype), what="untouched zdiv")
            continue
        expected = prefill.copy()
        loose = np.zeros((TR, TC), bool)
        e, lw = _expected_op(op, x[win], y[win], s, dtype)
        expected[win] = e
        loose[win] = lw
        assert_bits_equal(got[op], expected, loose=loose, inputs={"x": x, "y": y, "prefill": prefill},
                          what=f"{op} {dtype}: tile after computing on valid ({vr},{vc})")


@pytest.mark.parametrize("dtype", FAMILY_TYPES)
@pytest.mark.parametrize("valid", [(5, 37), (16, 64), (1, 1), (16, 9)], ids=lambda v: "%dx%d" % v)
def test_family_computes_only_the_valid_region(pto_session, dtype, valid):
    vr, vc = valid
    _check_observe(dtype, vr, vc, *_run_observe(dtype, vr, vc, rng_for("observe", dtype, valid)))


@pytest.mark.parametrize("dtype,s", [("float16", 1 + 2.0 ** -11 + 2.0 ** -40), ("float16", 0.1),
                                     ("float32", 0.1), ("float16", 65519.0), ("int16", 32767),
                                     ("int16", -7)])
def test_runtime_scalar_converted_to_element_type(pto_session, dtype, s):
    """A runtime scalar parameter is converted to the tile type once, from its Python value."""
    rng = rng_for("rt-scalar", dtype, s)
    x, y, prefill, s2, got = _run_observe(dtype, 5, 37, rng, s=s)
    _check_observe(dtype, 5, 37, x, y, prefill, s2, got)


@pytest.mark.parametrize("dtype,shape", [("float32", (37, 40)), ("int16", (50, 130)),
                                         ("float16", (16, 64)), ("int32", (1, 1))])
def test_range_loop_with_tail(pto_session, dtype, shape):
    rng = rng_for("tiled", dtype, shape)
    x = random_values(rng, dtype, shape)
    y = random_values(rng, dtype, shape)
    za, zm = T(sentinel(shape, dtype)), T(sentinel(shape, dtype))
    k_tiled(T(x), T(y), za, zm)
    for op, z in (("add", za), ("mul", zm)):
        e, loose = ref.binary(op, x, y, with_loose=True)
        assert_bits_equal(z.numpy(), e, loose=loose, inputs={"x": x, "y": y}, what=f"{op} {shape}")


def _run_tiled_dyn(dtype, shape, rng):
    x = random_values(rng, dtype, shape)
    y = random_values(rng, dtype, shape)
    za, zm = T(sentinel(shape, dtype)), T(sentinel(shape, dtype))
    k_tiled_dyn(T(x), T(y), za, zm)
    for op, z in (("add", za), ("mul", zm)):
        e, loose = ref.binary(op, x, y, with_loose=True)
        assert_bits_equal(z.numpy(), e, loose=loose, inputs={"x": x, "y": y},
                          what=f"{op} {dtype} {shape} (dynamic_shapes)")


def test_dynamic_shapes_kernel_two_shapes(target, pto_session):
    rng = rng_for("dyn")
    _run_tiled_dyn("float32", (37, 40), rng)
    before = pypto.stats().compiles
    _run_tiled_dyn("float32", (130, 200), rng)
    _run_tiled_dyn("float32", (1, 300), rng)
    if target.mode == "compiled":
        assert pypto.stats().compiles == before, "dynamic_shapes=True must not recompile per shape"


@PROPERTY_SETTINGS
@given(data=st.data())
def test_dynamic_shapes_property(pto_session, data):
    dtype = data.draw(st.sampled_from(A2A3_TYPES), label="dtype")
    shape = (data.draw(st.integers(1, 80), label="R"), data.draw(st.integers(1, 200), label="C"))
    _run_tiled_dyn(dtype, shape, np.random.default_rng(data.draw(seeds, label="seed")))


def test_multi_block_ids(pto_session):
    rng = rng_for("blocks")
    x = random_values(rng, "int32", (64, 64))
    z = T(sentinel((64, 64), "int32"))
    k_block_ids[4](T(x), z)
    expected = np.concatenate([ref.binary("adds", x[16 * b:16 * b + 16], 1000 * b + 4, "int32")
                               for b in range(4)])
    assert_bits_equal(z.numpy(), expected, inputs={"x": x})


@pytest.mark.parametrize("blocks", [1, 3, 4, 16])
def test_multi_block_grid_stride(pto_session, blocks):
    """10 row blocks (the last one a 6-row tail) over 1, 3, 4 or 16 blocks (some with no work)."""
    rng = rng_for("grid", blocks)
    shape = (150, 40)
    x = random_values(rng, "float32", shape)
    y = random_values(rng, "float32", shape)
    z = T(sentinel(shape, "float32"))
    k_grid_stride[blocks](T(x), T(y), z)
    e, loose = ref.binary("sub", x, y, with_loose=True)
    assert_bits_equal(z.numpy(), e, loose=loose, inputs={"x": x, "y": y})


# --- TLOAD padding ----------------------------------------------------------------------------
PAD_CASES = [
    ("float32", "null"), ("float32", "zero"), ("float32", "min"), ("float32", "max"),
    ("float16", "zero"), ("float16", "min"), ("float16", "max"),
    ("int8", "min"), ("int8", "max"), ("uint8", "min"), ("int16", "min"),
    ("bfloat16", "max"), ("int32", "max"), ("uint16", "min"), ("uint32", "max"),
]
PAD_REGIONS = [(5, 37), (16, 1), (1, 63), (3, 32), (16, 64)]


def _run_pad(dtype, pad, vr, vc, rng):
    prefill = random_values(rng, dtype, (TR, TC))
    x = random_values(rng, dtype, (TR, TC))
    out = T(sentinel((TR, TC), dtype))
    PAD_KERNELS[pad](T(prefill), T(x), out, vr, vc)
    return prefill, x, out.numpy()


@pytest.mark.parametrize("dtype,pad", PAD_CASES, ids=[f"{d}-{p}" for d, p in PAD_CASES])
def test_tload_padding_npu_rule(pto_session, dtype, pad):
    """Only columns [validCol, roundup(validCol, 32 bytes)) of the loaded rows get the pad value;
    everything else outside the copied region keeps what the tile held before."""
    for vr, vc in PAD_REGIONS:
        prefill, x, got = _run_pad(dtype, pad, vr, vc, rng_for("pad", dtype, pad, vr, vc))
        expected = ref.tload(prefill, x[:vr, :vc], pad)
        assert_bits_equal(got, expected, inputs={"prefill": prefill, "x": x},
                          what=f"TLOAD {dtype} pad={pad} valid ({vr},{vc})")


def test_tload_padding_i8_min_is_minus_one(pto_session):
    """NPU PadValueMap: int8 PadMin is 0xff (-1), not -128 as in pto-isa's CPU simulator."""
    _, _, got = _run_pad("int8", "min", 2, 33, rng_for("i8min"))
    assert (got[:2, 33:64] == -1).all(), got[:2, 33:64]


# --- both sim modes --------------------------------------------------------------------------
def test_kernels_bit_identical_between_modes(sim_modes):
    results: dict[str, list[np.ndarray]] = {}
    for mode, init in sim_modes:
        init()
        outs: list[np.ndarray] = []
        for dtype in FAMILY_TYPES:
            _, _, _, got = _run_family_runtime(dtype, GM_SHAPE, 2, 5, 7, 45,
                                               rng_for("modes-rt", dtype))
            outs += [got[k] for k in sorted(got)]
            *_, got = _run_observe(dtype, 5, 37, rng_for("modes-obs", dtype))
            outs += [got[k] for k in sorted(got)]
            x = random_values(rng_for("modes-dyn", dtype), dtype, (41, 150))
            y = random_values(rng_for("modes-dyn2", dtype), dtype, (41, 150))
            za, zm = T(sentinel(x.shape, dtype)), T(sentinel(x.shape, dtype))
            k_tiled_dyn(T(x), T(y), za, zm)
            outs += [za.numpy(), zm.numpy()]
        for pad in PAD_NAMES:
            outs.append(_run_pad("float16", pad, 5, 37, rng_for("modes-pad", pad))[2])
        x = random_values(rng_for("modes-grid"), "float32", (150, 40))
        z = T(sentinel((150, 40), "float32"))
        k_grid_stride[4](T(x), T(x), z)
        outs.append(z.numpy())
        results[mode] = outs
        finalize_quietly()
    assert len(results["compiled"]) == len(results["eager"])
    for i, (c, e) in enumerate(zip(results["compiled"], results["eager"])):
        assert_bits_equal(e, c, what=f"eager vs compiled, output #{i}")


# --- rule violations are PtoErrors raised before anything is written ---------------------------
@pypto.kernel
def k_ub_overflow(x, z):
    # four live 64 KiB f32 tiles = 256 KiB > the 192 KiB UB of a2a3
    ts = [pto.Tile(pto.Vec, pto.float32, (64, 256)) for _ in range(4)]
    for t in ts:
        pto.TLOAD(t, x[0:64, 0:256])
    pto.TADD(ts[3], ts[0], ts[1])
    pto.TADD(ts[3], ts[3], ts[2])
    pto.TSTORE(z[0:64, 0:256], ts[3])


@pypto.kernel
def k_tile_too_big(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (256, 256))        # 256 KiB > 192 KiB
    pto.TLOAD(t, x[0:256, 0:256])
    pto.TSTORE(z[0:256, 0:256], t)


@pypto.kernel
def k_misaligned(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (16, 64))
    pto.TASSIGN(t, 0x10)                                 # UB addresses are 32-byte aligned
    pto.TLOAD(t, x[0:16, 0:64])
    pto.TSTORE(z[0:16, 0:64], t)


@pypto.kernel
def k_assign_past_end(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (16, 64))        # 4 KiB at 190 KiB ends past 192 KiB
    pto.TASSIGN(t, 190 * 1024)
    pto.TLOAD(t, x[0:16, 0:64])
    pto.TSTORE(z[0:16, 0:64], t)


@pypto.kernel
def k_bad_cols(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (16, 5))           # 20-byte rows break the 32-byte rule
    pto.TLOAD(t, x[0:16, 0:5])
    pto.TSTORE(z[0:16, 0:5], t)


@pypto.kernel
def k_valid_too_big(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (16, 64), valid=(17, 64))
    pto.TLOAD(t, x[0:17, 0:64])
    pto.TSTORE(z[0:17, 0:64], t)


@pypto.kernel
def k_gm_out_of_bounds(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (16, 64))
    pto.TLOAD(t, x[8:24, 0:64])                          # x has 16 rows
    pto.TSTORE(z[0:16, 0:64], t)


@pypto.kernel
def k_illegal_dtype(x, z):
    a = pto.Tile(pto.Vec, pto.int32, (16, 64))
    pto.TLOAD(a, x[0:16, 0:64])
    pto.TDIV(a, a, a)                                    # TDIV has no integer types on a2a3
    pto.TSTORE(z[0:16, 0:64], a)


RULE_CASES = [
    (k_ub_overflow, (64, 256), "float32", "TileCapacityError"),
    (k_tile_too_big, (256, 256), "float32", "TileCapacityError"),
    (k_misaligned, (16, 64), "float32", "TileAlignmentError"),
    (k_assign_past_end, (16, 64), "float32", "TileCapacityError"),
    (k_bad_cols, (16, 64), "float32", "TileShapeError"),
    (k_valid_too_big, (32, 64), "float32", "ValidRegionError"),
    (k_gm_out_of_bounds, (16, 64), "float32", "GMBoundsError"),
    (k_illegal_dtype, (16, 64), "int32", "DTypeError"),
]


@pytest.mark.parametrize("kern,shape,dtype,error", RULE_CASES,
                         ids=["ub_overflow", "tile_too_big", "misaligned", "assign_past_end",
                              "bad_cols", "valid_too_big", "gm_out_of_bounds", "illegal_dtype"])
def test_rule_violations_raise_before_writing(pto_session, kern, shape, dtype, error):
    x = random_values(rng_for("rules", error), dtype, shape)
    z = T(sentinel(shape, dtype))
    with pytest.raises(getattr(pypto.errors, error)) as ei:
        kern(T(x), z)
    assert isinstance(ei.value, pypto.PtoError)
    assert_bits_equal(z.numpy(), sentinel(shape, dtype), what="GM after the error")


def test_ub_overflow_message_names_space_and_capacity(pto_session):
    x = T(random_values(rng_for("ub"), "float32", (64, 256)))
    with pytest.raises(pypto.errors.TileCapacityError) as ei:
        k_ub_overflow(x, T(sentinel((64, 256), "float32")))
    msg = str(ei.value)
    assert ("Vec" in msg or "UB" in msg) and ("196608" in msg or "192 KiB" in msg or "192KiB" in msg), msg
