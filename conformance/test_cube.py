"""The matrix (cube) path on every backend: GM -> Mat (ND -> Nz) -> Left/Right -> TMATMUL family ->
Acc -> GM / Mat / Vec through the fixpipe, every legal dtype combination of each SoC, runtime
m/k/n (1, 15, 16, 17 and random up to the tile), the a2a3 m == 1 rule, i32 wrap-around, bias,
ReLU and quantisation on the way out, the boxed layouts' storage order, and the illegal cases.
Compared with ``ref_cube`` (exact sums in float64 / Python ints, 3.3's offset table)."""
from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pypto
from pypto import pto

from . import ref_cube as R
from .conftest import every_case_eager, keep_if, slow_if
from .helpers import rng_for
from .test_units import PROPERTY

MC, KC, NC = 32, 64, 64                   # tile capacity of the instruction-level cases
# (A, B) -> C per SoC (pto-isa-semantics 6.3)
PAIRS_A2A3 = [("f16", "f16"), ("bf16", "bf16"), ("f32", "f32"), ("i8", "i8")]
PAIRS_A5 = PAIRS_A2A3 + [("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3"), ("e5m2", "e5m2"),
                         ("hif8", "hif8")]
PAIRS = [(s, a, b) for s, ps in (("a2a3", PAIRS_A2A3), ("a5", PAIRS_A5)) for a, b in ps]
DT = {"f16": pypto.float16, "bf16": pypto.bfloat16, "f32": pypto.float32, "i8": pypto.int8,
      "e4m3": pypto.float8_e4m3, "e5m2": pypto.float8_e5m2, "hif8": pypto.hifloat8,
      "i32": pypto.int32}
OPS = ("TMATMUL", "TMATMUL_ACC", "TMATMUL_BIAS", "TGEMV", "TGEMV_ACC", "TGEMV_BIAS")


QUICK_COMPILED_MKN = {(17, 17, 17), (MC, KC, NC)}
QUICK_SKIP = {("e4m3", "e5m2"), ("e5m2", "e5m2")}       # the full tier has every fp8 pairing
QUICK_STORES = {("f32", False, "none", False), ("f16", False, "none", False),
                ("bf16", True, "none", False), ("i8", False, "scalar", False),
                ("i16", False, "scalar", True), ("u8", False, "vector", True),
                ("i8", True, "scalar", True)}


def one_soc(p: dict) -> bool:
    """The quick tier runs a case present on both SoCs on one of them (chosen by the case), the
    full tier on both: each compiled kernel is traced per SoC, and compiling is most of the time."""
    import zlib
    if "a_dt" in p and (p["a_dt"], p["b_dt"]) not in PAIRS_A2A3:
        return (p["a_dt"], p["b_dt"]) in QUICK_SKIP     # a5-only pairs: one SoC anyway
    if "out" in p and (p["out"], p["relu"], p["quant"], p["integer"]) not in QUICK_STORES:
        return True
    key = repr(sorted((k, repr(v)) for k, v in p.items() if k not in ("soc", "target")))
    return p["soc"] == ("a2a3", "a5")[zlib.crc32(key.encode()) % 2]


def not_cpusim(p: dict) -> bool:
    """Cases pto-isa's CPU backend cannot run (each test says why: an assert that kills the
    process, or a dtype drawn inside the test that the backend lacks)."""
    return p["target"].backend != "npu-cpusim"


def _init(pto_init, target, soc):
    try:
        pto_init(soc=soc)
    except pypto.PtoError as e:
        if target.backend != "sim":
            pytest.skip(f"{soc} profile not available on this {target.backend} device: {e}")
        raise


def _values(rng, dt: str, shape) -> tuple[np.ndarray, np.ndarray]:
    """(host array to upload, its values as float64)."""
    if dt == "i8":
        x = rng.integers(-128, 128, shape).astype(np.int8)
        return x, x.astype(np.float64)
    if dt == "hif8":
        codes = pypto.dtypes.hif8_encode(rng.standard_normal(shape).astype(np.float32))
        return codes, pypto.dtypes.hif8_decode(codes).astype(np.float64)
    npt = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32,
           "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}[dt]
    x = rng.standard_normal(shape).astype(np.float32).astype(npt)
    return x, x.astype(np.float64)


def _up(x: np.ndarray, dt: str) -> pypto.Tensor:
    """Upload a host array (hif8 arrays hold codes, so they name their type)."""
    return pypto.Tensor(x, dtype=DT[dt]) if dt == "hif8" else pypto.Tensor(x)


def _acc_of(a: str) -> str:
    return "i32" if a == "i8" else "f32"


@functools.lru_cache(maxsize=None)
def _kernel(a_dt: str, b_dt: str, op: str):
    """One cube op on runtime sizes. Every tile has the capacity (MC, KC, NC); A is loaded with
    ``lm`` rows, the accumulator stored with ``sr`` rows. The _ACC forms first set the
    accumulator to a2 @ b2 (TMATMUL), the _BIAS forms load the bias GM -> Mat -> Bias."""
    acc_dt = DT[_acc_of(a_dt)]

    def k_cube(a, b, a2, b2, bias, c, m, k, n, lm, sr):
        am = pto.TileMatNz(DT[a_dt], (MC, KC), valid=pto.DYNAMIC)
        bm = pto.TileMatNz(DT[b_dt], (KC, NC), valid=pto.DYNAMIC)
        al = pto.TileLeft(DT[a_dt], (MC, KC), valid=pto.DYNAMIC)
        br = pto.TileRight(DT[b_dt], (KC, NC), valid=pto.DYNAMIC)
        acc = pto.TileAcc(acc_dt, (MC, NC), valid=pto.DYNAMIC)
        am.set_valid(lm, k)
        bm.set_valid(k, n)
        br.set_valid(k, n)

        def to_l0(ga, gb):
            pto.TLOAD(am, ga[0:lm, 0:k])
            pto.TLOAD(bm, gb[0:k, 0:n])
            al.set_valid(lm, k)           # the NPU's TMOV ignores valid regions; pto-isa's CPU
            pto.TMOV(al, am)              # TMOV asserts equal valid rows
            pto.TMOV(br, bm)
            al.set_valid(m, k)
        if op.endswith("_ACC"):
            to_l0(a2, b2)
            pto.TMATMUL(acc, al, br)
        to_l0(a, b)
        if op.endswith("_BIAS"):
            bmat = pto.Tile(pto.Mat, acc_dt, (1, NC), valid=pto.DYNAMIC)
            bt = pto.TileBias(acc_dt, (1, NC))
            bmat.set_valid(1, n)
            pto.TLOAD(bmat, bias[0:1, 0:n])
            pto.TMOV(bt, bmat)
            getattr(pto, op)(acc, al, br, bt)
        else:
            getattr(pto, op)(acc, al, br)
        acc.set_valid(sr, n)
        pto.TSTORE(c[0:sr, 0:n], acc)

    k_cube.__name__ = f"k_{op.lower()}_{a_dt}_{b_dt}"
    return pypto.kernel(k_cube)


def _run_cube(soc: str, a_dt: str, b_dt: str, op: str, m: int, k: int, n: int, seed_key) -> None:
    rng = rng_for(seed_key)
    gemv = op.startswith("TGEMV")
    m = 1 if gemv else m
    rows = 16 if (soc == "a2a3" and m == 1 and not gemv) else m
    lm = max(rows, m)
    a, av = _values(rng, a_dt, (MC, KC))
    b, bv = _values(rng, b_dt, (KC, NC))
    a2, a2v = _values(rng, a_dt, (MC, KC))
    b2, b2v = _values(rng, b_dt, (KC, NC))
    integer = a_dt == "i8"
    acc_np = np.int32 if integer else np.float32
    bias = (rng.integers(-1000, 1000, (1, NC)) if integer else rng.standard_normal((1, NC))).astype(acc_np)
    c = pypto.zeros((MC, NC), DT[_acc_of(a_dt)])
    _kernel(a_dt, b_dt, op)(_up(a, a_dt), _up(b, b_dt), _up(a2, a_dt), _up(b2, b_dt),
                            pypto.Tensor(bias), c, m, k, n, lm, rows)
    old = R.matmul(a2v, b2v, m, k, n, integer=integer, rows_written=rows) if op.endswith("_ACC") else None
    want = R.matmul(av, bv, m, k, n, integer=integer, rows_written=rows, acc=old,
                    bias=bias[0].astype(np.float64) if op.endswith("_BIAS") and not integer else
                    (bias[0] if op.endswith("_BIAS") else None))
    got = c.numpy()[:rows, :n]
    if integer:
        np.testing.assert_array_equal(got, want)
        return
    tol = R.tolerance(av, bv, rows, k, n, None if old is None else old)
    err = np.abs(got.astype(np.float64) - want)
    assert (err <= tol).all(), f"max error {err.max()} over tolerance {tol[err > tol].min()}"


# every size of every pair runs eager; compiled (a kernel per size) runs two sizes per pair
@every_case_eager
@slow_if(lambda p: one_soc(p) or p["target"].mode == "compiled" and p["mkn"] not in QUICK_COMPILED_MKN)
@pytest.mark.parametrize("soc,a_dt,b_dt", PAIRS)
@pytest.mark.parametrize("mkn", [(1, 1, 1), (15, 15, 15), (16, 16, 16), (17, 17, 17), (MC, KC, NC),
                                 (1, 64, 48), (32, 1, 17), (15, 33, 64)])
def test_tmatmul_every_pair(pto_init, target, soc, a_dt, b_dt, mkn):
    _init(pto_init, target, soc)
    _run_cube(soc, a_dt, b_dt, "TMATMUL", *mkn, ("mm", soc, a_dt, b_dt, mkn))


@slow_if(one_soc)
@pytest.mark.parametrize("soc", ["a2a3", "a5"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dt", ["f16", "i8"])
def test_family(pto_init, target, soc, op, dt):
    """Each form (accumulate, bias, GEMV), with m == 1 on a2a3 writing 16 rows."""
    _init(pto_init, target, soc)
    for mkn in ((17, 33, 20), (1, 16, 16)):
        _run_cube(soc, dt, dt, op, *mkn, ("family", soc, op, dt, mkn))


@keep_if(not_cpusim)
@pytest.mark.parametrize("soc", ["a2a3", "a5"])
@given(m=st.integers(1, MC), k=st.integers(1, KC), n=st.integers(1, NC),
       dt=st.sampled_from(["f16", "bf16", "f32", "i8"]))
@PROPERTY
def test_random_sizes(pto_init, target, soc, m, k, n, dt):
    """Random runtime m/k/n (npu-cpusim runs the fixed sizes of test_tmatmul_every_pair: bf16,
    drawn here, is not a type its TMATMUL takes)."""
    _init(pto_init, target, soc)
    _run_cube(soc, dt, dt, "TMATMUL_ACC", m, k, n, ("random", soc, m, k, n, dt))


@functools.lru_cache(maxsize=None)
def _wrap_kernel(steps: int):
    def k_wrap(a, b, c):
        am = pto.TileMatNz(pto.int8, (16, 4096))
        bm = pto.TileMatZn(pto.int8, (4096, 16))          # from a DN view (DN -> Zn)
        al = pto.TileLeft(pto.int8, (16, 4096), valid=(16, 4095))
        br = pto.TileRight(pto.int8, (4096, 16), valid=(4095, 16))
        acc = pto.TileAcc(pto.int32, (16, 16))
        pto.TLOAD(am, a)
        pto.TLOAD(bm, _dn_view(b, 4096, 16))
        pto.TMOV(al, am)
        pto.TMOV(br, bm)
        pto.TMATMUL(acc, al, br)
        for _ in range(steps):
            pto.TMATMUL_ACC(acc, al, br)
        pto.TSTORE(c, acc)
    return pypto.kernel(k_wrap)


@keep_if(not_cpusim)
@pytest.mark.parametrize("soc", ["a2a3", "a5"])
def test_int32_accumulation_wraps(pto_init, target, soc):
    """40 x 4095 products of 127 * 127 pass 2^31: the accumulator wraps modulo 2^32 (not on
    npu-cpusim: its TMOV asserts equal valid rows, and this kernel's L0 tiles hold 4095 of the
    L1 tiles' 4096, which the NPU's TMOV allows)."""
    _init(pto_init, target, soc)
    a = np.full((16, 4096), 127, np.int8)
    b = np.full((4096, 16), 127, np.int8)
    c = pypto.zeros((16, 16), pypto.int32)
    _wrap_kernel(40)(pypto.Tensor(a), pypto.Tensor(np.ascontiguousarray(b.T)), c)
    want = R.matmul(a.astype(np.int64), b.astype(np.int64), 16, 4095, 16, integer=True) * 0
    total = 41 * 4095 * 127 * 127
    want[:] = ((total + 2 ** 31) % 2 ** 32) - 2 ** 31
    np.testing.assert_array_equal(c.numpy(), want)


# -- the fixpipe: Acc -> GM, Mat, Vec -----------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _store_kernel(out: str, relu: bool, quant: str, integer: bool):
    acc_dt = pypto.int32 if integer else pypto.float32
    in_dt = pypto.int8 if integer else pypto.float16
    kw = {"reluMode": "NormalRelu"} if relu else {}

    def k_store(a, b, scales, c, word):
        am = pto.TileMatNz(in_dt, (32, 64))
        bm = pto.TileMatNz(in_dt, (64, 32))
        al = pto.TileLeft(in_dt, (32, 64))
        br = pto.TileRight(in_dt, (64, 32))
        acc = pto.TileAcc(acc_dt, (32, 32))
        pto.TLOAD(am, a)
        pto.TLOAD(bm, b)
        pto.TMOV(al, am)
        pto.TMOV(br, bm)
        pto.TMATMUL(acc, al, br)
        if quant == "vector":
            sm = pto.Tile(pto.Mat, pypto.uint64, (1, 32))
            fp = pto.TileScaling(pypto.uint64, (1, 32))
            pto.TLOAD(sm, scales)
            pto.TMOV(fp, sm)
            pto.TSTORE_FP(c, acc, fp, **kw)
        elif quant == "scalar":
            pto.TSTORE(c, acc, word, **kw)
        else:
            pto.TSTORE(c, acc, **kw)
    k_store.__name__ = f"k_store_{out}_{relu}_{quant}_{integer}"
    return pypto.kernel(k_store)


STORES = [("f32", False, "none", False), ("f16", False, "none", False), ("bf16", True, "none", False),
          ("f32", True, "none", False), ("i32", True, "none", True), ("i8", False, "scalar", False),
          ("f16", True, "scalar", False), ("i8", True, "scalar", True), ("f16", False, "scalar", True),
          ("i16", False, "scalar", True), ("u8", False, "vector", True), ("i8", True, "vector", False),
          ("f16", False, "vector", True)]


@slow_if(one_soc)
@pytest.mark.parametrize("soc", ["a2a3", "a5"])
@pytest.mark.parametrize("out,relu,quant,integer", STORES)
def test_tstore_from_acc(pto_init, target, soc, out, relu, quant, integer):
    _init(pto_init, target, soc)
    rng = rng_for("store", soc, out, relu, quant, integer)
    a, av = _values(rng, "i8" if integer else "f16", (32, 64))
    b, bv = _values(rng, "i8" if integer else "f16", (64, 32))
    scale = 0.03125 if integer else 7.5
    per_col = (np.arange(32) % 5 + 1) * scale / 3
    scales = np.array([[R.quant_word(s) for s in per_col]], np.uint64)
    c = pypto.zeros((32, 32), DT.get(out) or getattr(pypto, {"u8": "uint8", "i16": "int16"}[out]))
    _store_kernel(out, relu, quant, integer)(pypto.Tensor(a), pypto.Tensor(b), pypto.Tensor(scales),
                                             c, R.quant_word(scale))
    acc = R.matmul(av, bv, 32, 64, 32, integer=integer)
    acc = acc.astype(np.int32) if integer else acc.astype(np.float32)
    q = per_col[None, :].astype(np.float32) if quant == "vector" else \
        (np.float32(scale) if quant == "scalar" else None)
    want = R.fixpipe(acc, out, relu=relu, scale=q)
    got = c.numpy()
    if integer or out in ("i8", "u8", "i16"):
        np.testing.assert_array_equal(got, want)
    else:
        # the accumulation order is open: compare after conversion within one step of dst's type
        exact = R.fixpipe(R.matmul(av, bv, 32, 64, 32), out, relu=relu, scale=q).astype(np.float64)
        tol = R.tolerance(av, bv, 32, 64, 32) * (1 if q is None else float(np.max(q)))
        step = np.abs(exact) * {"f32": 2 ** -23, "f16": 2 ** -10, "bf16": 2 ** -7}[out]
        assert (np.abs(got.astype(np.float64) - exact) <= tol + step + 1e-30).all()


@functools.lru_cache(maxsize=None)
def _acc_move_kernel(form: str, dst_loc: str, out: str, relu: bool):
    kw = {"reluMode": "NormalRelu"} if relu else {}
    odt = DT[out]

    def k_accmove(a, b, c, r0, c0):
        am = pto.TileMatNz(pypto.float16, (32, 64))
        bm = pto.TileMatNz(pypto.float16, (64, 32))
        al = pto.TileLeft(pypto.float16, (32, 64))
        br = pto.TileRight(pypto.float16, (64, 32))
        acc = pto.TileAcc(pypto.float32, (32, 32))
        pto.TLOAD(am, a)
        pto.TLOAD(bm, b)
        pto.TMOV(al, am)
        pto.TMOV(br, bm)
        pto.TMATMUL(acc, al, br)
        shape = {"TMOV": (32, 32), "TEXTRACT": (16, 16), "TINSERT": (64, 48)}[form]
        d = pto.TileMatNz(odt, shape) if dst_loc == "Mat" else pto.Tile(pto.Vec, odt, shape)
        if form == "TMOV":
            pto.TMOV(d, acc, **kw)
        else:
            getattr(pto, form)(d, acc, r0, c0, **kw)
        pto.TSTORE(c, d)
    k_accmove.__name__ = f"k_accmove_{form}_{dst_loc}_{out}_{relu}"
    return pypto.kernel(k_accmove)


ACC_MOVES = [("a2a3", "TMOV", "Mat", "f16", False), ("a2a3", "TEXTRACT", "Mat", "bf16", True),
             ("a2a3", "TINSERT", "Mat", "f16", True), ("a5", "TMOV", "Vec", "f32", True),
             ("a5", "TEXTRACT", "Vec", "f16", False), ("a5", "TINSERT", "Vec", "bf16", False)]


@slow_if(lambda p: (p["soc"], p["form"]) in (("a2a3", "TEXTRACT"), ("a5", "TINSERT")))
@keep_if(not_cpusim)
@pytest.mark.parametrize("soc,form,dst_loc,out,relu", ACC_MOVES)
def test_acc_to_mat_and_vec(pto_init, target, soc, form, dst_loc, out, relu):
    """TMOV / TEXTRACT / TINSERT out of L0C convert on the way (a2a3 Mat tiles are stored back to
    GM, which a2a3 allows; a5 Vec tiles likewise)."""
    _init(pto_init, target, soc)
    rng = rng_for("accmove", soc, form, out)
    a, av = _values(rng, "f16", (32, 64))
    b, bv = _values(rng, "f16", (64, 32))
    r0, c0 = (16, 0) if form == "TEXTRACT" else ((16, 16) if form == "TINSERT" else (0, 0))
    shape = {"TMOV": (32, 32), "TEXTRACT": (16, 16), "TINSERT": (64, 48)}[form]
    c = pypto.zeros(shape, DT[out])
    _acc_move_kernel(form, dst_loc, out, relu)(pypto.Tensor(a), pypto.Tensor(b), c, r0, c0)
    acc = R.matmul(av, bv, 32, 64, 32)
    conv = R.fixpipe(acc.astype(np.float32), out, relu=relu).astype(np.float64)
    got = c.numpy().astype(np.float64)
    if form == "TMOV":
        want, sel = conv, np.s_[:, :]
    elif form == "TEXTRACT":
        want, sel = conv[r0:r0 + 16, c0:c0 + 16], np.s_[:, :]
    else:
        want, sel = conv, np.s_[r0:r0 + 32, c0:c0 + 32]
    step = {"f32": 2 ** -20, "f16": 2 ** -9, "bf16": 2 ** -6}[out]
    assert np.allclose(got[sel], want, rtol=step, atol=1e-3)


# -- moves into the cube, bias, layouts --------------------------------------------------------

@pytest.mark.parametrize("soc", ["a2a3", "a5"])
def test_bias_from_f16(pto_init, target, soc):
    """TMOV Mat -> Bias widens f16 to f32; TMATMUL_BIAS adds it to every row."""
    _init(pto_init, target, soc)

    def k_bias16(a, b, bias, c):
        am, bm = pto.TileMatNz(pypto.float16, (16, 32)), pto.TileMatNz(pypto.float16, (32, 16))
        al, br = pto.TileLeft(pypto.float16, (16, 32)), pto.TileRight(pypto.float16, (32, 16))
        bmat = pto.Tile(pto.Mat, pypto.float16, (1, 32))
        bt = pto.TileBias(pypto.float32, (1, 16))
        acc = pto.TileAcc(pypto.float32, (16, 16))
        pto.TLOAD(am, a)
        pto.TLOAD(bm, b)
        pto.TLOAD(bmat, bias)
        pto.TMOV(al, am)
        pto.TMOV(br, bm)
        pto.TMOV(bt, bmat)
        pto.TMATMUL_BIAS(acc, al, br, bt)
        pto.TSTORE(c, acc)

    rng = rng_for("bias16", soc)
    a, av = _values(rng, "f16", (16, 32))
    b, bv = _values(rng, "f16", (32, 16))
    bias = rng.standard_normal((1, 32)).astype(np.float16)
    c = pypto.zeros((16, 16), pypto.float32)
    pypto.kernel(k_bias16)(pypto.Tensor(a), pypto.Tensor(b), pypto.Tensor(bias), c)
    want = R.matmul(av, bv, 16, 32, 16, bias=bias[0, :16].astype(np.float64))
    assert (np.abs(c.numpy() - want) <= R.tolerance(av, bv, 16, 32, 16, bias[0, :16]) + 1e-6).all()


@pytest.mark.parametrize("soc", ["a2a3", "a5"])
@pytest.mark.parametrize("dt", ["f16", "f32", "i8"])
def test_boxed_layouts_storage_order(sim_modes, soc, dt):
    """Each boxed layout's storage (eager tiles show it) follows 3.3: Mat Nz from ND and Zn from DN,
    Left (Zz on a2a3, Nz on a5) and Right Zn by TMOV, TEXTRACT windows, and Acc Nz 16 x 16."""
    for mode, init in sim_modes:
        if mode != "eager":
            continue
        init(soc=soc)
        rng = rng_for("layout", soc, dt)
        x, xv = _values(rng, dt, (32, 64))
        seen = {}

        @pypto.kernel(mode="eager")
        def k_layouts(g, gt, c):
            nz = pto.TileMatNz(DT[dt], (32, 64))
            zn = pto.TileMatZn(DT[dt], (32, 64))
            left = pto.TileLeft(DT[dt], (32, 64))
            right = pto.TileRight(DT[dt], (32, 64))
            win = pto.TileLeft(DT[dt], (16, 32))
            pto.TLOAD(nz, g)
            pto.TLOAD(zn, _dn_view(gt, 32, 64))
            pto.TMOV(left, nz)
            pto.TMOV(right, zn)
            pto.TEXTRACT(win, nz, 16, 32)
            for name, t in (("nz", nz), ("zn", zn), ("left", left), ("right", right), ("win", win)):
                seen[name] = t.numpy(storage=True)
            if soc == "a5":                            # a5's DMA also turns DN into Nz
                pto.TLOAD(nz, _dn_view(gt, 32, 64))
                seen["nz_dn"] = nz.numpy(storage=True)

        k_layouts(_up(x, dt), _up(np.ascontiguousarray(x.T), dt), pypto.zeros((1, 1), pypto.float32))
        left_layout = "Zz" if soc == "a2a3" else "Nz"
        for name, lay, logical in (("nz", "Nz", x), ("zn", "Zn", x), ("left", left_layout, x),
                                   ("right", "Zn", x), ("win", left_layout, x[16:32, 32:64]),
                                   ("nz_dn", "Nz", x)):
            if name == "nz_dn" and soc == "a2a3":
                continue
            want = R.storage(np.ascontiguousarray(logical), lay)
            np.testing.assert_array_equal(seen[name].view(want.dtype), want, err_msg=name)


@pytest.mark.parametrize("soc", ["a2a3", "a5"])
def test_acc_storage_order(sim_modes, soc):
    """The accumulator holds C in Nz with 16 x 16 boxes (1024-byte fractals of f32)."""
    for mode, init in sim_modes:
        if mode != "eager":
            continue
        init(soc=soc)
        rng = rng_for("accstore", soc)
        a, av = _values(rng, "i8", (32, 32))
        b, bv = _values(rng, "i8", (32, 64))
        seen = {}

        @pypto.kernel(mode="eager")
        def k_acc(x, y, c):
            am, bm = pto.TileMatNz(pypto.int8, (32, 32)), pto.TileMatNz(pypto.int8, (32, 64))
            al, br = pto.TileLeft(pypto.int8, (32, 32)), pto.TileRight(pypto.int8, (32, 64))
            acc = pto.TileAcc(pypto.int32, (32, 64))
            pto.TLOAD(am, x)
            pto.TLOAD(bm, y)
            pto.TMOV(al, am)
            pto.TMOV(br, bm)
            pto.TMATMUL(acc, al, br)
            seen["acc"] = acc.numpy(storage=True)

        k_acc(pypto.Tensor(a), pypto.Tensor(b), pypto.zeros((1, 1), pypto.float32))
        want = R.storage(R.matmul(av, bv, 32, 32, 64, integer=True), "Nz", fractal=1024)
        np.testing.assert_array_equal(seen["acc"], want)


# -- what is refused -------------------------------------------------------------------------

def _trace(fn, *args):
    return pypto.kernel(fn)(*args)


ILLEGAL = [("a2a3", "f16", "f32", pypto.errors.DTypeError), ("a2a3", "i8", "f16", pypto.errors.DTypeError),
           ("a2a3", "e4m3", "e4m3", pypto.PtoError), ("a5", "f16", "bf16", pypto.errors.DTypeError),
           ("a5", "hif8", "e4m3", pypto.errors.DTypeError)]


@pytest.mark.parametrize("soc,a_dt,b_dt,err", ILLEGAL)
def test_illegal_pairs_are_refused_with_the_legal_list(pto_init, target, soc, a_dt, b_dt, err):
    _init(pto_init, target, soc)

    def k_bad(c):
        al = pto.TileLeft(DT[a_dt], (16, 32))
        br = pto.TileRight(DT[b_dt], (32, 16))
        acc = pto.TileAcc(pypto.float32, (16, 16))
        pto.TMATMUL(acc, al, br)
        pto.TSTORE(c, acc)

    with pytest.raises(err) as e:
        _trace(k_bad, pypto.zeros((16, 16), pypto.float32))
    if err is pypto.errors.DTypeError:
        assert "takes" in e.value.rule and "f16" in e.value.rule


@pytest.mark.parametrize("soc", ["a2a3", "a5"])
def test_cube_rules_are_refused(pto_init, target, soc):
    """Wrong fractal, shapes that do not chain, a cIn that is not cOut, an f16 accumulator, a
    plain f32 -> i8 store, Acc -> Vec on a2a3: each a PtoError naming the rule."""
    _init(pto_init, target, soc)
    other_left = ("ColMajor", "RowMajor") if soc == "a2a3" else ("RowMajor", "RowMajor")

    def case(which):
        def k_rule(c):
            al = pto.TileLeft(pypto.float16, (16, 32))
            br = pto.TileRight(pypto.float16, (32, 16))
            acc = pto.TileAcc(pypto.float32, (16, 16))
            if which == "fractal":
                wrong = pto.Tile(pto.Left, pypto.float16, (16, 32), blayout=other_left[0],
                                 slayout=other_left[1])
                pto.TMATMUL(acc, wrong, br)
            elif which == "shape":
                pto.TMATMUL(acc, al, pto.TileRight(pypto.float16, (16, 16)))
            elif which == "cin":
                pto.TMATMUL_ACC(acc, pto.TileAcc(pypto.float32, (16, 16)), al, br)
            elif which == "f16acc":
                pto.TMATMUL(pto.TileAcc(pypto.float16, (16, 16)), al, br)
            elif which == "store":
                pto.TMATMUL(acc, al, br)
                pto.TSTORE(c, acc)
            elif which == "accvec":
                pto.TMATMUL(acc, al, br)
                pto.TMOV(pto.Tile(pto.Vec, pypto.float32, (16, 16)), acc)
        return k_rule

    expect = {"fractal": (pypto.PtoError, "fractal"), "shape": (pypto.PtoError, "b.Cols == c.Cols"),
              "cin": (pypto.PtoError, "ignores cIn"), "f16acc": (pypto.errors.DTypeError, "takes"),
              "store": (pypto.errors.DTypeError, "fixpipe")}
    if soc == "a2a3":
        expect["accvec"] = (pypto.PtoError, "a2a3")
    for which, (err, word) in expect.items():
        with pytest.raises(err) as e:
            _trace(case(which), pypto.zeros((16, 16), pypto.int8))
        assert word in str(e.value), (which, str(e.value))


@pytest.mark.parametrize("soc", ["a2a3", "a5"])
def test_runtime_k_outside_4095_is_a_range_error(pto_init, target, soc):
    """The simulator's RANGE fault; the C++ backends emit the same check before the TMATMUL."""
    _init(pto_init, target, soc)

    def k_zero(c, k):
        al = pto.TileLeft(pypto.float16, (16, 32), valid=pto.DYNAMIC)
        br = pto.TileRight(pypto.float16, (32, 16))
        acc = pto.TileAcc(pypto.float32, (16, 16))
        al.set_valid(16, k)
        pto.TMATMUL(acc, al, br)
        pto.TSTORE(c, acc)

    c = pypto.zeros((16, 16), pypto.float32)
    with pytest.raises(pypto.PtoError, match="matrix size"):
        pypto.kernel(k_zero)(c, 0)
    assert (c.numpy() == 0).all()


@functools.lru_cache(maxsize=None)
def _fp_kernel(form: str):
    """Acc (f32) -> Mat (i8) with per-column scales from a Scaling tile, then Mat -> GM (a2a3)."""
    def k_fp(a, b, scales, c, r0, c0):
        am = pto.TileMatNz(pypto.float16, (32, 64))
        bm = pto.TileMatNz(pypto.float16, (64, 32))
        al = pto.TileLeft(pypto.float16, (32, 64))
        br = pto.TileRight(pypto.float16, (64, 32))
        acc = pto.TileAcc(pypto.float32, (32, 32))
        sm = pto.Tile(pto.Mat, pypto.uint64, (1, 32))
        fp = pto.TileScaling(pypto.uint64, (1, 32))
        pto.TLOAD(am, a)
        pto.TLOAD(bm, b)
        pto.TLOAD(sm, scales)
        pto.TMOV(al, am)
        pto.TMOV(br, bm)
        pto.TMOV(fp, sm)
        pto.TMATMUL(acc, al, br)
        shape = {"TMOV_FP": (32, 32), "TEXTRACT_FP": (16, 32), "TINSERT_FP": (64, 64)}[form]
        d = pto.TileMatNz(pypto.int8, shape)
        if form == "TMOV_FP":
            pto.TMOV_FP(d, acc, fp)
        elif form == "TEXTRACT_FP":
            pto.TEXTRACT_FP(d, acc, fp, r0, c0)
        else:
            pto.TINSERT_FP(d, acc, fp, r0, c0, reluMode="NormalRelu")
        pto.TSTORE(c, d)
    k_fp.__name__ = f"k_{form.lower()}"
    return pypto.kernel(k_fp)


@keep_if(not_cpusim)
@pytest.mark.parametrize("form", ["TMOV_FP", "TEXTRACT_FP", "TINSERT_FP"])
def test_vector_quantised_moves_out_of_l0c(pto_init, target, form):
    """The _FP moves quantise each column j by the f32 scale in fp[0, j] (f32 -> i8, saturating;
    TINSERT_FP with ReLU first)."""
    _init(pto_init, target, "a2a3")
    rng = rng_for("fp", form)
    a, av = _values(rng, "f16", (32, 64))
    b, bv = _values(rng, "f16", (64, 32))
    per_col = ((np.arange(32) % 7) + 1) * 2.5
    scales = np.array([[R.quant_word(s) for s in per_col]], np.uint64)
    r0, c0 = {"TMOV_FP": (0, 0), "TEXTRACT_FP": (16, 0), "TINSERT_FP": (16, 32)}[form]
    shape = {"TMOV_FP": (32, 32), "TEXTRACT_FP": (16, 32), "TINSERT_FP": (64, 64)}[form]
    c = pypto.zeros(shape, pypto.int8)
    _fp_kernel(form)(pypto.Tensor(a), pypto.Tensor(b), pypto.Tensor(scales), c, r0, c0)
    acc = R.matmul(av, bv, 32, 64, 32).astype(np.float32)
    want = R.fixpipe(acc, "i8", relu=form == "TINSERT_FP", scale=per_col[None, :].astype(np.float32))
    got = c.numpy().astype(np.int64)
    if form == "TEXTRACT_FP":
        got_region, want_region = got, want[16:32, :]
    elif form == "TINSERT_FP":
        got_region, want_region = got[16:48, 32:64], want
    else:
        got_region, want_region = got, want
    # the accumulation order is open: a product within one rounding of .5 may round either way
    assert np.abs(got_region - want_region.astype(np.int64)).max() <= 1
    assert (got_region == want_region).mean() > 0.95


def _dn_view(g, rows: int, cols: int):
    """A DN view of a (rows, cols) matrix whose tensor holds it column by column."""
    n = rows * cols
    return pto.GlobalTensor(g, (1, 1, 1, rows, cols), (n, n, n, 1, rows), layout=pto.DN)


MAT_LOADS = [("a2a3", "ND", "Nz"), ("a2a3", "DN", "Zn")]      # a5 stores no Mat tile: its loads
                                                               # are checked in the storage test


@slow_if(lambda p: p["dt"] != "f16")
@pytest.mark.parametrize("soc,view,layout", MAT_LOADS)
@pytest.mark.parametrize("dt", ["f16", "f32", "i8"])
def test_mat_layouts_round_trip_through_tstore(pto_init, target, soc, view, layout, dt):
    """a2a3's DMA conversions into boxed L1 tiles (ND -> Nz, DN -> Zn), stored back to an ND
    tensor, give the matrix unchanged."""
    _init(pto_init, target, soc)
    rows, cols = 32, 64
    x, _ = _values(rng_for("roundtrip", soc, view, layout, dt), dt, (rows, cols))
    blayout, slayout = {"Nz": ("ColMajor", "RowMajor"), "Zn": ("RowMajor", "ColMajor")}[layout]

    def k_round(g, out):
        t = pto.Tile(pto.Mat, DT[dt], (rows, cols), blayout=blayout, slayout=slayout)
        pto.TLOAD(t, g if view == "ND" else _dn_view(g, rows, cols))
        pto.TSTORE(out, t)

    out = pypto.zeros((rows, cols), DT[dt])
    pypto.kernel(k_round)(_up(x if view == "ND" else np.ascontiguousarray(x.T), dt), out)
    np.testing.assert_array_equal(out.numpy(), x)


@pytest.mark.parametrize("soc,view,layout", [("a2a3", "ND", "Zz"), ("a2a3", "ND", "Zn"),
                                             ("a2a3", "DN", "Nz"), ("a5", "ND", "Zn")])
def test_mat_loads_the_dma_cannot_make_are_refused(pto_init, soc, view, layout):
    pto_init(soc=soc)
    blayout, slayout = {"Nz": ("ColMajor", "RowMajor"), "Zn": ("RowMajor", "ColMajor"),
                        "Zz": ("RowMajor", "RowMajor")}[layout]

    def k_bad(g, out):
        t = pto.Tile(pto.Mat, pto.float16, (32, 64), blayout=blayout, slayout=slayout)
        pto.TLOAD(t, g if view == "ND" else _dn_view(g, 32, 64))
        pto.TSTORE(out, t)
    with pytest.raises(pypto.errors.LayoutError, match=f"(?s){view} view .*converts into boxed L1"):
        _trace(k_bad, pypto.zeros((32, 64), pypto.float16), pypto.zeros((32, 64), pypto.float16))


ND2NZ_PADS = [("a2a3", "ND", "Nz"), ("a2a3", "DN", "Zn"), ("a5", "ND", "Nz"), ("a5", "DN", "Zn"),
              ("a5", "DN", "Nz")]


@pytest.mark.parametrize("soc,view,layout", ND2NZ_PADS)
@pytest.mark.parametrize("dt", ["f16", "i8"])
def test_mat_load_zero_fills_the_partial_block(sim_modes, soc, view, layout, dt):
    """TLOAD of a 20 x 13 window into a boxed L1 tile that held other data: the nd2nz DMA (ND ->
    Nz, DN -> Zn) zeroes the rest of each line's last 32-byte block, whatever the tile's
    PadValue (here Max), and nothing else; a5's DN -> Nz leaves the tile's other elements as
    they were (pypto's choice where the NPU is undocumented). Eager tiles show the contents
    (a5 has no TSTORE from L1); pto-isa's CPU TLOAD fills the whole tile instead (fidelity.md)."""
    rows, cols, vr, vc = 32, 64, 20, 13
    x, _ = _values(rng_for("nd2nz-pad", soc, view, layout, dt), dt, (vr, vc))
    old = np.full((rows, cols), 7, x.dtype)
    blayout, slayout = {"Nz": ("ColMajor", "RowMajor"), "Zn": ("RowMajor", "ColMajor")}[layout]
    dn = view == "DN"
    seen = {}

    def k_pad(g_old, g, out):
        t = pto.Tile(pto.Mat, DT[dt], (rows, cols), valid=pto.DYNAMIC, blayout=blayout,
                     slayout=slayout, pad=pto.PadMax)
        pto.TLOAD(t, _dn_view(g_old, rows, cols) if dn else g_old)
        t.set_valid(vr, vc)
        pto.TLOAD(t, _dn_view(g, vr, vc) if dn else g)
        seen["t"] = t.numpy()

    for mode, init in sim_modes:
        if mode != "eager":
            continue
        init(soc=soc)
        pypto.kernel(k_pad, mode="eager")(_up(old, dt), _up(np.ascontiguousarray(x.T) if dn else x, dt),
                                          pypto.zeros((1, 1), pypto.float32))
        want = old.copy()
        want[:vr, :vc] = x
        c0 = 32 // x.dtype.itemsize
        if (view, layout) == ("ND", "Nz"):
            want[:vr, vc:-(-vc // c0) * c0] = 0
        elif (view, layout) == ("DN", "Zn"):
            want[vr:-(-vr // c0) * c0, :vc] = 0
        np.testing.assert_array_equal(seen["t"].view(want.dtype), want)


@slow_if(lambda p: p["dt"] != "f16")
@pytest.mark.parametrize("dt", ["f16", "f32", "i8"])
def test_nz_tensor_into_mat_nz(pto_init, target, dt):
    """An NZ GM tensor holds an Nz tile's storage order: loaded into a2a3's L1 and stored as ND, it
    reads as its logical matrix."""
    _init(pto_init, target, "a2a3")
    rows, cols = 32, 64
    x, _ = _values(rng_for("nz-into-mat", dt), dt, (rows, cols))
    c0 = 32 // x.dtype.itemsize
    nz = R.storage(x, "Nz").reshape(1, cols // c0, rows // 16, 16, c0)

    def k_nz(g, o):
        t = pto.TileMatNz(DT[dt], (rows, cols))
        pto.TLOAD(t, pto.GlobalTensor(g, nz.shape, (nz.size, rows * c0, 16 * c0, c0, 1),
                                      layout=pto.NZ))
        pto.TSTORE(o, t)

    out = pypto.zeros((rows, cols), DT[dt])
    pypto.kernel(k_nz)(_up(nz.reshape(-1), dt), out)
    np.testing.assert_array_equal(out.numpy(), x)


# -- MX (a5): fp8 operands with e8m0 block scales ------------------------------------------------

FP4 = {"e2m1": pypto.float4_e2m1x2, "e1m2": pypto.float4_e1m2x2}     # packed: two K values a byte
MX_PAIRS = [("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3"), ("e5m2", "e5m2")]
MXK = 128                                  # K capacity: 4 scales per row of A / column of B


def _scale_tile(loc_rows: int, loc_cols: int, right: bool, mat: bool):
    """An e8m0 scale tile: the Mat staging tile in the scale's own layout, or the L0 tile."""
    if not mat:
        return (pto.TileRightScale if right else pto.TileLeftScale)(pto.float8_e8m0, (loc_rows, loc_cols))
    order = pto.ColMajor if right else pto.RowMajor
    return pto.Tile(pto.Mat, pto.float8_e8m0, (loc_rows, loc_cols), blayout=order, slayout=order,
                    fractal=32)


_MX_SEEN: dict = {}                        # eager kernels leave the scale tiles' storage here


@functools.lru_cache(maxsize=None)
def _mx_kernel(a_dt: str, b_dt: str, op: str, bias: bool, mode: str):
    """fp8 operands: A and B from ND windows into Nz Mat tiles. Packed fp4 ("e2m1"/"e1m2"): the
    NPU's MXFP4 GEMM data path, A (pairs along K = columns) from an ND view into Nz, B (pairs
    along K = rows) from a DN view into Zn; kk counts pairs then."""
    fp4 = a_dt in FP4
    kq = MXK // 2 if fp4 else MXK                # K capacity in stored elements
    dta, dtb = (FP4[a_dt], FP4[b_dt]) if fp4 else (DT[a_dt], DT[b_dt])

    def k_mx(a, b, sa, sbt, bias_g, c, m, kk, n):
        am = pto.TileMatNz(dta, (MC, kq), valid=pto.DYNAMIC)
        bm = (pto.TileMatZn if fp4 else pto.TileMatNz)(dtb, (kq, NC), valid=pto.DYNAMIC)
        sam, sbm = _scale_tile(MC, MXK // 32, False, True), _scale_tile(MXK // 32, NC, True, True)
        al = pto.TileLeft(dta, (MC, kq), valid=pto.DYNAMIC)
        br = pto.TileRight(dtb, (kq, NC), valid=pto.DYNAMIC)
        sal, sbr = _scale_tile(MC, MXK // 32, False, False), _scale_tile(MXK // 32, NC, True, False)
        acc = pto.TileAcc(pto.float32, (MC, NC), valid=pto.DYNAMIC)
        am.set_valid(m, kk)
        bm.set_valid(kk, n)
        pto.TLOAD(am, a[0:m, 0:kk])
        pto.TLOAD(bm, pto.GlobalTensor(b, (1, 1, 1, kk, n), (kq * NC, kq * NC, kq * NC, 1, kq),
                                       layout=pto.DN) if fp4 else b[0:kk, 0:n])
        pto.TLOAD(sam, sa[:, :])
        pto.TLOAD(sbm, pto.GlobalTensor(sbt, (1, 1, 1, MXK // 32, NC), (1, 1, 1, 1, MXK // 32), 0,
                                        layout=pto.DN))      # bScale from its N x K/32 transpose
        pto.TMOV(al, am)
        pto.TMOV(br, bm)
        pto.TMOV(sal, sam)
        pto.TMOV(sbr, sbm)
        al.set_valid(m, kk)
        br.set_valid(kk, n)
        extra = ()
        if bias:
            bmat = pto.Tile(pto.Mat, pto.float32, (1, NC))
            bt = pto.TileBias(pto.float32, (1, NC))
            pto.TLOAD(bmat, bias_g[:, :])
            pto.TMOV(bt, bmat)
            extra = (bt,)
        getattr(pto, op)(acc, al, sal, br, sbr, *extra)
        rows = 1 if op == "TGEMV_MX" else m
        acc.set_valid(rows, n)
        pto.TSTORE(c[0:rows, 0:n], acc)
        if mode == "eager":
            _MX_SEEN["sal"], _MX_SEEN["sbr"] = sal.numpy(storage=True), sbr.numpy(storage=True)

    k_mx.__name__ = f"k_{op.lower()}_{a_dt}_{b_dt}{'_bias' if bias else ''}"
    return pypto.kernel(k_mx, mode=mode)


def _run_mx(a_dt, b_dt, op, bias, m, k, n, mode, key):
    rng = rng_for(key)
    m = 1 if op == "TGEMV_MX" else m
    a, av = _values(rng, a_dt, (MC, MXK))
    b, bv = _values(rng, b_dt, (MXK, NC))
    sa = rng.integers(118, 137, (MC, MXK // 32)).astype(np.uint8)     # 2^-9 .. 2^9
    sb = rng.integers(118, 137, (MXK // 32, NC)).astype(np.uint8)
    bias_v = rng.standard_normal((1, NC)).astype(np.float32)
    c = pypto.zeros((MC, NC), pypto.float32)
    _MX_SEEN.clear()
    e8 = ml_dtypes.float8_e8m0fnu
    _mx_kernel(a_dt, b_dt, op, bias, mode)(_up(a, a_dt), _up(b, b_dt), pypto.Tensor(sa.view(e8)),
                                         pypto.Tensor(np.ascontiguousarray(sb.T).view(e8)),
                                         pypto.Tensor(bias_v), c, m, k, n)
    fa, fb = R.mx_scaled(av, sa, False), R.mx_scaled(bv, sb, True)
    want = R.matmul(fa, fb, m, k, n, bias=bias_v[0] if bias else None)
    err = np.abs(c.numpy()[:m, :n].astype(np.float64) - want)
    tol = R.tolerance(fa, fb, m, k, n, bias_v[0, :n] if bias else None)
    assert (err <= tol).all(), f"max error {err.max()} over tolerance {tol[err > tol].min()}"
    if mode == "eager":                         # the scale tiles' storage: GM's MX_A_ZZ / MX_B_NN
        np.testing.assert_array_equal(_MX_SEEN["sal"].view(np.uint8), R.storage(sa, "Zz", 32))
        np.testing.assert_array_equal(_MX_SEEN["sbr"].view(np.uint8), R.storage(sb, "Nn", 32))


QUICK_MX = {("TMATMUL_MX", False, "e4m3", "e4m3"), ("TGEMV_MX", True, "e5m2", "e4m3")}


@slow_if(lambda p: (p["op"], p["bias"], p["a_dt"], p["b_dt"]) not in QUICK_MX)   # full tier: all
@pytest.mark.parametrize("a_dt,b_dt", MX_PAIRS)
@pytest.mark.parametrize("op,bias", [("TMATMUL_MX", False), ("TMATMUL_MX", True), ("TGEMV_MX", True)])
def test_mx_matmul(sim_modes, op, bias, a_dt, b_dt):
    """C = (A . 2^(sa - 127)) @ (B . 2^(sb - 127)) [+ bias] over runtime m/k/n, on a5, every fp8
    pairing, both simulator modes (npu-cpusim has no fp8 or e8m0 types)."""
    for mode, init in sim_modes:
        init(soc="a5")
        for mkn in ((MC, MXK, NC), (17, 70, 33)):
            _run_mx(a_dt, b_dt, op, bias, *mkn, mode, ("mx", op, bias, a_dt, b_dt, mkn))


def _mx_acc_kernel(mode: str, c_in_other: bool = False, b_scale_rows: bool = False,
                   op: str = "TMATMUL_MX"):
    """Two MX products into one accumulator: c = A.B, then c += A.B (the accumulate overload).
    ``b_scale_rows``: bScale comes as N x K/32 rows through a DN view (the NPU's MX_B_DN)."""
    mx = getattr(pto, op)
    def k_mx_acc(a, b, sa, sb, c):
        am, bm = pto.TileMatNz(pto.float8_e5m2, (MC, MXK)), pto.TileMatNz(pto.float8_e5m2, (MXK, NC))
        sam, sbm = _scale_tile(MC, MXK // 32, False, True), _scale_tile(MXK // 32, NC, True, True)
        al, br = pto.TileLeft(pto.float8_e5m2, (MC, MXK)), pto.TileRight(pto.float8_e5m2, (MXK, NC))
        sal, sbr = _scale_tile(MC, MXK // 32, False, False), _scale_tile(MXK // 32, NC, True, False)
        rows = 1 if op == "TGEMV_MX" else MC
        acc = pto.TileAcc(pto.float32, (MC, NC), valid=(rows, NC))
        for t, g in ((am, a), (bm, b), (sam, sa)):
            pto.TLOAD(t, g[:, :])
        pto.TLOAD(sbm, pto.GlobalTensor(sb, (1, 1, 1, MXK // 32, NC), (1, 1, 1, 1, MXK // 32), 0,
                                        layout=pto.DN) if b_scale_rows else sb[:, :])
        for dst, src in ((al, am), (br, bm), (sal, sam), (sbr, sbm)):
            pto.TMOV(dst, src)
        mx(acc, al, sal, br, sbr)
        mx(acc, pto.TileAcc(pto.float32, (MC, NC)) if c_in_other else acc, al, sal, br, sbr)
        pto.TSTORE(c[0:rows, :], acc)
    k_mx_acc.__name__ = f"k_mx_acc_{op.lower()}"
    return pypto.kernel(k_mx_acc, mode=mode)


@pytest.mark.parametrize("op", ["TMATMUL_MX", "TGEMV_MX"])
def test_mx_accumulate_overload_adds_into_the_accumulator(sim_modes, op):
    """TMATMUL_MX / TGEMV_MX(cOut, cOut, a, aScale, b, bScale) add the scaled product to cOut:
    two equal products give twice one (exact in f32), so a form that overwrote would give half."""
    e8 = ml_dtypes.float8_e8m0fnu
    m = 1 if op == "TGEMV_MX" else MC
    for mode, init in sim_modes:
        init(soc="a5")
        rng = rng_for("mx-acc", mode, op)
        a, av = _values(rng, "e5m2", (MC, MXK))
        b, bv = _values(rng, "e5m2", (MXK, NC))
        sa = rng.integers(120, 134, (MC, MXK // 32)).astype(np.uint8)
        sb = rng.integers(120, 134, (MXK // 32, NC)).astype(np.uint8)
        c = pypto.zeros((MC, NC), pypto.float32)
        _mx_acc_kernel(mode, b_scale_rows=True, op=op)(
            pypto.Tensor(a), pypto.Tensor(b), pypto.Tensor(sa.view(e8)),
            pypto.Tensor(np.ascontiguousarray(sb.T).view(e8)), c)
        fa, fb = R.mx_scaled(av, sa, False), R.mx_scaled(bv, sb, True)
        want = R.matmul(fa, fb, m, MXK, NC)
        tol = R.tolerance(fa, fb, m, MXK, NC)
        err = np.abs(c.numpy()[:m].astype(np.float64) - 2 * want)
        assert (err <= 2 * tol).all(), f"{mode}: max error {err.max()}"


def test_a_plain_nd_bscale_has_no_npu_load(pto_init):
    """The NPU loads bScale from MX_B_DN (its N x K/32 transpose), MX_B_ND (pair-interleaved) or
    MX_B_NN, never from a plain K/32 x N matrix: that TLOAD is a LayoutError naming the DN form."""
    pto_init(soc="a5")
    e8 = ml_dtypes.float8_e8m0fnu
    args = (pypto.zeros((MC, MXK), pypto.float8_e5m2), pypto.zeros((MXK, NC), pypto.float8_e5m2),
            pypto.Tensor(np.full((MC, MXK // 32), 127, np.uint8).view(e8)),
            pypto.Tensor(np.full((MXK // 32, NC), 127, np.uint8).view(e8)),
            pypto.zeros((MC, NC), pypto.float32))
    with pytest.raises(pypto.errors.LayoutError, match=r"(?s)plain K/32 x N.*layout=pto.DN"):
        _mx_acc_kernel("compiled")(*args)


def test_mx_accumulate_needs_cin_to_be_cout(pto_init):
    pto_init(soc="a5")
    e8 = ml_dtypes.float8_e8m0fnu
    args = (pypto.zeros((MC, MXK), pypto.float8_e5m2), pypto.zeros((MXK, NC), pypto.float8_e5m2),
            pypto.Tensor(np.full((MC, MXK // 32), 127, np.uint8).view(e8)),
            pypto.Tensor(np.full((MXK // 32, NC), 127, np.uint8).view(e8)),
            pypto.zeros((MC, NC), pypto.float32))
    with pytest.raises(pypto.errors.OperandError, match="cIn .* is not cOut"):
        _mx_acc_kernel("compiled", c_in_other=True, b_scale_rows=True)(*args)


def test_mx_is_a5_only(pto_init):
    pto_init(soc="a2a3")

    def k_a2a3(c):
        al = pto.TileLeft(pto.float16, (16, 64))
        acc = pto.TileAcc(pto.float32, (16, 16))
        pto.TMATMUL_MX(acc, al, al, al, al)
    with pytest.raises(pypto.PtoError, match="a2a3"):
        _trace(k_a2a3, pypto.zeros((16, 16), pypto.float32))


def _mx_rule_kernel(dt, scale_cols: int):
    def k_rule(c):
        al = pto.TileLeft(dt, (16, 64))
        br = pto.TileRight(dt, (64, 16))
        sal = pto.TileLeftScale(pto.float8_e8m0, (16, scale_cols))
        sbr = pto.TileRightScale(pto.float8_e8m0, (2, 16))
        pto.TMATMUL_MX(pto.TileAcc(pto.float32, (16, 16)), al, sal, br, sbr)
    return k_rule


def test_mx_scale_shapes(pto_init):
    """One scale per 32 K values: aScale (M, K/32); fp4 tiles count pairs, so K = 2 * a.Cols."""
    pto_init(soc="a5")
    with pytest.raises(pypto.errors.TileShapeError, match=r"(?s)aScale .* shape \(16, 2\)"):
        _trace(_mx_rule_kernel(pto.float8_e4m3, 4), pypto.zeros((16, 16), pypto.float32))
    with pytest.raises(pypto.errors.TileShapeError, match=r"(?s)aScale .*fp4 pairs.* shape \(16, 4\)"):
        _trace(_mx_rule_kernel(pto.float4_e2m1x2, 2), pypto.zeros((16, 16), pypto.float32))


# -- MX with packed fp4 operands (a5): a byte holds two K values, low nibble first --------------

FP4_PAIRS = [("e2m1", "e2m1"), ("e2m1", "e1m2"), ("e1m2", "e2m1"), ("e1m2", "e1m2")]


QUICK_MX4 = {("TMATMUL_MX", False, "e2m1", "e2m1"), ("TGEMV_MX", True, "e1m2", "e2m1")}


@slow_if(lambda p: (p["op"], p["bias"], p["a_fmt"], p["b_fmt"]) not in QUICK_MX4)
@pytest.mark.parametrize("a_fmt,b_fmt", FP4_PAIRS)
@pytest.mark.parametrize("op,bias", [("TMATMUL_MX", False), ("TMATMUL_MX", True), ("TGEMV_MX", True)])
def test_mx_fp4_matmul(sim_modes, op, bias, a_fmt, b_fmt):
    """MX with packed fp4 operands, every pairing of e2m1 / e1m2, runtime m/k/n (k an even number
    of values), both simulator modes: C = (A . 2^(sa - 127)) @ (B . 2^(sb - 127)) [+ bias]."""
    for mode, init in sim_modes:
        init(soc="a5")
        kern = _mx_kernel(a_fmt, b_fmt, op, bias, mode)
        for m, k, n in ((MC, MXK, NC), (17, 70, 33)):
            rng = rng_for("mx4", op, bias, a_fmt, b_fmt, m, k, n)
            m = 1 if op == "TGEMV_MX" else m
            ac = rng.integers(0, 16, (MC, MXK)).astype(np.uint8)
            bc = rng.integers(0, 16, (MXK, NC)).astype(np.uint8)
            sa = rng.integers(118, 137, (MC, MXK // 32)).astype(np.uint8)
            sb = rng.integers(118, 137, (MXK // 32, NC)).astype(np.uint8)
            bias_v = rng.standard_normal((1, NC)).astype(np.float32)
            c = pypto.zeros((MC, NC), pypto.float32)
            e8 = ml_dtypes.float8_e8m0fnu
            kern(pypto.Tensor(R.pack_pairs(ac), dtype=FP4[a_fmt]),
                 pypto.Tensor(R.pack_pairs(np.ascontiguousarray(bc.T)), dtype=FP4[b_fmt]),
                 pypto.Tensor(sa.view(e8)), pypto.Tensor(np.ascontiguousarray(sb.T).view(e8)),
                 pypto.Tensor(bias_v), c, m, k // 2, n)
            fa = R.mx_scaled(R.fp4_values(ac, a_fmt), sa, False)
            fb = R.mx_scaled(R.fp4_values(bc, b_fmt), sb, True)
            want = R.matmul(fa, fb, m, k, n, bias=bias_v[0] if bias else None)
            err = np.abs(c.numpy()[:m, :n].astype(np.float64) - want)
            tol = R.tolerance(fa, fb, m, k, n, bias_v[0, :n] if bias else None)
            assert (err <= tol).all(), f"{mode}: max error {err.max()}"


@pytest.mark.parametrize("soc", ["a5"])
def test_mx_fp4_pairs_keep_their_axis(pto_init, soc):
    """fp4 pairs run along the storage's contiguous axis: a DN view into an Nz tile (legal for
    other types on a5), or an Nz Mat tile moved into the Zn Right tile, would turn them between
    rows and columns: refused."""
    pto_init(soc=soc)

    def k_view(g, c):
        t = pto.TileMatNz(pto.float4_e2m1x2, (32, 64))
        pto.TLOAD(t, _dn_view(g, 32, 64))

    def k_move(g, c):
        t = pto.TileMatNz(pto.float4_e2m1x2, (32, 64))
        br = pto.TileRight(pto.float4_e2m1x2, (32, 64))
        pto.TLOAD(t, g)
        pto.TMOV(br, t)
    g = pypto.Tensor(np.zeros((32, 64), np.uint8), dtype=pypto.float4_e2m1x2)
    for k in (k_view, k_move):
        with pytest.raises(pypto.errors.LayoutError, match="fp4 pairs"):
            _trace(k, g, pypto.zeros((1, 1), pypto.float32))
