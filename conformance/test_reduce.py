"""Axis reductions and broadcasts (5.4): TROWPROD TROWMAX TROWMIN, TCOLSUM TCOLPROD TCOLMAX
TCOLMIN, TROWEXPAND TCOLEXPAND and the fourteen broadcast binops, against ``ref_reduce``.

Kernels: one kernel per (family, dtype) runs every instruction of the family on whole tiles (each
operand TLOADed whole from its own GM tensor, valid regions set from kernel arguments, every
destination stored whole), so one compilation serves many runtime regions and value sets, and
each case sees every element an instruction wrote and every one it left alone. Results are
compared bit for bit (a NaN result's payload and the zero of max/min(+0, -0) are left open).
Valid regions include tails, one row, one column and empty regions; values include NaN, +-inf,
+-0, subnormals, extremes and the hand-worked f16 column sums of each SoC's add order.
Errors: every kind of illegal use at trace time (error class, instruction and operand named) and
valid-region mismatches at run time. Seed level: load_insn of each form (softmax chain, colsum,
broadcasts) with numpy and pypto.Tensor operands, and its errors.
"""
from __future__ import annotations

import functools
import hashlib
import linecache
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto
from pypto import errors, pto

from . import ref_reduce as R
from . import reference as ref
from .conftest import keep_if, slow_if
from .helpers import assert_bits_equal, random_values, rng_for, seeds

SOCS = ("a2a3", "a5")
PROPERTY = settings(max_examples=5, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
EXPAND_OPS = R.EXPAND_OPS




def np_dt(d: str) -> np.dtype:
    return ref.np_dtype(d)


def c0(d: str) -> int:
    return 32 // np_dt(d).itemsize


def vals(x: list, d: str) -> np.ndarray:
    """Python numbers -> an array of ``d`` (floats rounded to nearest, overflow to inf)."""
    dt = np_dt(d)
    with np.errstate(all="ignore"):
        if dt == ref.BF16:
            return ref.f32_to_bf16(np.array(x, np.float64).astype(np.float32))
        return np.array(x, np.float64).astype(dt) if dt in ref.FLOATS else np.array(x, np.int64).astype(dt)


def raw_bits(rng, d: str, shape) -> np.ndarray:
    dt = np_dt(d)
    b = rng.integers(0, 1 << (8 * dt.itemsize), int(np.prod(shape)), dtype=np.uint64)
    return b.astype(ref.bits_dtype(dt)).view(dt).reshape(shape)


# =============================================================================================
# a kernel running several instructions on whole tiles
# =============================================================================================
@dataclass(frozen=True)
class Tl:
    """A tile of a multi-instruction kernel. load: TLOADed whole from its GM tensor and given a
    runtime valid region (a scratch tmp is neither); out: stored whole after the instructions."""
    name: str
    dtype: str
    shape: tuple[int, int]
    layout: str = "ND"
    load: bool = True
    out: bool = False


@dataclass(frozen=True)
class Op:
    instr: str
    operands: tuple[str, ...]
    params: tuple = ()


@functools.lru_cache(maxsize=None)
def multi_kernel(tiles: tuple[Tl, ...], ops: tuple[Op, ...]):
    args: list[str] = []
    body: list[str] = []
    for t in tiles:
        bl = "pto.ColMajor" if t.layout == "DN" else "pto.RowMajor"
        valid = "valid=pto.DYNAMIC, " if t.load else ""
        body.append(f"{t.name} = pto.Tile(pto.Vec, pto.{ref.LONG[np_dt(t.dtype)]}, {t.shape}, "
                    f"{valid}blayout={bl})")
        if t.load:
            args += [f"g_{t.name}", f"r_{t.name}", f"c_{t.name}"]
            body.append(f"pto.TLOAD({t.name}, g_{t.name}[:, :])")
    body += ["pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)",
             "pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)"]
    body += [f"{t.name}.set_valid(r_{t.name}, c_{t.name})" for t in tiles if t.load]
    for i, op in enumerate(ops):
        kw = "".join(f", {k}={v!r}" for k, v in op.params)
        if i:
            body.append("pto.pipe_barrier(pto.PIPE_V)")     # a2a3: dependent vector instructions
        body.append(f"pto.{op.instr}({', '.join(op.operands)}{kw})")
    body += ["pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)",
             "pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)"]
    for t in tiles:
        if t.out:
            body.append(f"{t.name}.set_valid({t.shape[0]}, {t.shape[1]})")
            body.append(f"pto.TSTORE(g_{t.name}[:, :], {t.name})")      # over its own prefill
    # a name from the signature: the same kernel has the same source (and cache entry) in every
    # process, whatever order the tests run in
    name = "reduce_multi_" + hashlib.sha256(repr((tiles, ops)).encode()).hexdigest()[:12]
    src = f"def {name}({', '.join(args)}):\n" + "".join(f"    {ln}\n" for ln in body)
    filename = f"<conformance {name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"pto": pypto.pto}
    exec(compile(src, filename, "exec"), ns)
    return pypto.kernel(ns[name])


# What pto-isa's CPU backend does not implement: TROWPROD, TCOLPROD and TCOLSUM's isBinary form
# (pypto emits its two-operand TCOLSUM there). They are left out of the shared kernels on
# npu-cpusim (so the others still run there); their seed cases fail to build or differ
# (conformance/deviations_reduce.py).
CPU_MISSING = ("TROWPROD", "TCOLPROD")


def run_multi(tiles: tuple[Tl, ...], ops: tuple[Op, ...], values: dict, valid: dict) -> dict:
    """values[name]: whole contents of each loaded tile (an output's prefill); valid[name]: its
    runtime valid region (default: the whole tile). Returns the stored outputs."""
    if pypto.runtime.current().backend_name == "npu-cpusim":
        kept = present(ops)
        gone = {o.operands[0] for o in ops if o not in kept}
        ops, tiles = kept, tuple(t for t in tiles if t.name not in gone)
    k = multi_kernel(tiles, ops)
    args: list[Any] = []
    outs: dict[str, Any] = {}
    for t in tiles:
        if not t.load:
            continue
        dt = np_dt(t.dtype)
        g = pypto.Tensor(np.ascontiguousarray(np.asarray(values[t.name], dt).reshape(t.shape)))
        args += [g, *valid.get(t.name, t.shape)]
        if t.out:
            outs[t.name] = g
    k(*args)
    return {n: o.numpy() for n, o in outs.items()}


def expect(prefill: np.ndarray, region: tuple, result: np.ndarray, loose: np.ndarray | None = None):
    """The whole tile after an instruction wrote ``result`` at ``region`` (slices)."""
    e = prefill.copy()
    lw = np.zeros(e.shape, bool)
    if result.size:
        e[region] = result
        if loose is not None:
            lw[region] = loose
    return e, lw


def check_outputs(got: dict, want: dict, what: str) -> None:
    assert got, what
    for n, (e, lw) in want.items():
        if n in got:                                       # (CPU_MISSING outputs are left out)
            assert_bits_equal(got[n], e, loose=lw, what=f"{what}: {n}")


def prefills(rng, tiles) -> dict:
    return {t.name: random_values(rng, t.dtype, t.shape, specials=0.0) for t in tiles if t.out}


# =============================================================================================
# row reductions: TROWPROD TROWMAX TROWMIN
# =============================================================================================
ROW_DTYPES = ("f32", "f16")
RR = 16


def row_cols(d: str) -> int:
    return 1024 // np_dt(d).itemsize            # four 256-byte repeats


def row_tiles(d: str) -> tuple[Tl, ...]:
    c = row_cols(d)
    return (Tl("x", d, (RR, c)), Tl("tmp", d, (RR, c), load=False),
            Tl("dprod", d, (RR, 1), "DN", out=True), Tl("dmax", d, (RR, 1), "DN", out=True),
            Tl("dmin", d, (RR, c0(d)), out=True))          # an ND dst with one valid column


ROW_OPS = (Op("TROWPROD", ("dprod", "x", "tmp")), Op("TROWMAX", ("dmax", "x", "tmp")),
           Op("TROWMIN", ("dmin", "x", "tmp")))
ROW_REF = {"dprod": R.rowprod, "dmax": R.rowmax, "dmin": R.rowmin}


def row_values(rng, kind: str, d: str, shape) -> np.ndarray:
    """Rows for the row reductions: products that stay finite (values near 1, exact powers of
    two), specials, rows of +-inf / -0.0 / mixed zeros, or random bits."""
    dt = np_dt(d)
    n = int(np.prod(shape))
    if kind == "near_one":
        return vals(list(1.0 + rng.standard_normal(n) * 0.05), d).reshape(shape)
    if kind == "pow2":
        v = np.exp2(rng.integers(-3, 4, n)) * rng.choice([-1.0, 1.0], n)
        return vals(list(v), d).reshape(shape)
    if kind == "specials":
        x = random_values(rng, dt, shape, specials=0.2)
        x[0] = vals([-np.inf] * shape[1], d)
        x[1] = vals([np.inf] * shape[1], d)
        x[2] = vals([-0.0] * shape[1], d)
        x[3] = vals(list(rng.choice([0.0, -0.0], shape[1])), d)
        x[4] = vals([-np.inf] * shape[1], d)
        x[4, shape[1] // 3] = np.nan
        x[5] = vals([np.inf, -np.inf] * (shape[1] // 2), d)
        return x
    if kind == "bits":
        return random_values(rng, dt, shape, specials=0.1, raw_bits=0.5)
    if kind == "finite":
        return random_values(rng, dt, shape, specials=0.0, raw_bits=0.0)
    return random_values(rng, dt, shape, specials=0.05)


def row_regions(d: str) -> list[tuple[int, int]]:
    n, k, c = 256 // np_dt(d).itemsize, c0(d), row_cols(d)
    return [(RR, c), (5, 3 * n + 7), (1, 1), (RR, 1), (3, n), (7, n + 1), (2, k + 3), (9, 2 * n - 1),
            (4, k), (11, c - 1)]


def run_rows(soc: str, d: str, x: np.ndarray, vr: int, vc: int, rng, what: str = "") -> None:
    tiles = row_tiles(d)
    pre = prefills(rng, tiles)
    valid = {"x": (vr, vc), **{n: (vr, 1) for n in ROW_REF}}
    got = run_multi(tiles, ROW_OPS, {"x": x, **pre}, valid)
    want = {}
    for n, fn in ROW_REF.items():
        r, lw = fn(x, vr, vc, soc=soc, with_loose=True)
        want[n] = expect(pre[n], (slice(0, vr), slice(0, 1)), r, lw)
    check_outputs(got, want, f"row reductions {d} on {soc}, valid ({vr}, {vc}) {what}")


CLEAN_ROWS = ("near_one", "pow2", "finite")
SPECIAL_ROWS = ("specials", "bits")


def present(ops: tuple[Op, ...]) -> tuple[Op, ...]:
    """The ops run_multi keeps on the current backend."""
    if pypto.runtime.current().backend_name == "npu-cpusim":
        return tuple(o for o in ops if o.instr not in CPU_MISSING and dict(o.params).get("isBinary") is not True)
    return ops


@pytest.mark.parametrize("dtype", ROW_DTYPES)
def test_rowred_regions(soc, dtype):
    """Every region (tails over the 256-byte repeats and 32-byte lanes, one row, one column) with
    finite rows (products near 1, exact powers of two, random finite values)."""
    rng = rng_for("rowred", soc, dtype)
    for i, (vr, vc) in enumerate(row_regions(dtype)):
        kind = CLEAN_ROWS[i % len(CLEAN_ROWS)]
        run_rows(soc, dtype, row_values(rng, kind, dtype, (RR, row_cols(dtype))), vr, vc, rng, kind)


@pytest.mark.parametrize("dtype", ROW_DTYPES)
def test_rowred_specials(soc, dtype):
    """NaN, +-inf, +-0, subnormals and raw bit patterns over a few regions."""
    rng = rng_for("rowred-specials", soc, dtype)
    c, n = row_cols(dtype), 256 // np_dt(dtype).itemsize
    for i, (vr, vc) in enumerate([(RR, c), (7, n + 3), (1, 1), (RR, 1)]):
        kind = SPECIAL_ROWS[i % len(SPECIAL_ROWS)]
        run_rows(soc, dtype, row_values(rng, kind, dtype, (RR, c)), vr, vc, rng, kind)


@pytest.mark.parametrize("dtype", ROW_DTYPES)
def test_rowred_hand_rows(soc, dtype):
    """Rows whose results tell the SoCs apart: -inf rows (a5: -max finite), products whose
    rounding depends on the lane order, -0.0 rows, NaN rows; checked against literal values too."""
    rng = rng_for("rowred-hand", soc, dtype)
    c = row_cols(dtype)
    x = np.ones((RR, c), np_dt(dtype))
    x[0] = -np.inf
    x[1] = np.inf
    x[2] = -0.0
    x[3, 5] = np.nan
    x[4, :3] = vals([3.0, 1.0 / 3.0, 3.0], dtype)
    x[5, :] = vals([1.0 + 2.0 ** -10] * c, dtype)
    run_rows(soc, dtype, x, 6, c, rng, "hand")
    big = R.MAX_FINITE[np_dt(dtype)]
    got = run_multi(row_tiles(dtype), ROW_OPS, {"x": x, **prefills(rng, row_tiles(dtype))},
                    {"x": (2, c), "dprod": (2, 1), "dmax": (2, 1), "dmin": (2, 1)})
    want_max0 = -big if soc == "a5" else -np.inf
    want_min1 = big if soc == "a5" else np.inf
    assert got["dmax"][0, 0] == want_max0 and got["dmin"][1, 0] == want_min1
    assert got["dmin"][0, 0] == -np.inf and got["dmax"][1, 0] == np.inf


@pytest.mark.parametrize("dtype", ROW_DTYPES)
def test_rowred_empty_region(soc, dtype):
    """An empty source region (no rows, no columns, neither) writes nothing."""
    rng = rng_for("rowred-empty", soc, dtype)
    c = row_cols(dtype)
    x = row_values(rng, "finite", dtype, (RR, c))
    for vr, vc in ((0, c), (RR, 0), (0, 0), (3, 0)):
        run_rows(soc, dtype, x, vr, vc, rng, "empty")


def test_rowred_valid_rows_mismatch(soc):
    """dst valid rows != src's is a run-time ValidRegionError naming the instruction; GM outputs
    stay as they were."""
    d = "f32"
    rng = rng_for("rowred-mismatch", soc)
    c = row_cols(d)
    x = row_values(rng, "finite", d, (RR, c))
    tiles = row_tiles(d)
    for op in present(ROW_OPS):
        valid = {"x": (5, c), **{m: (5, 1) for m in ROW_REF}}
        valid[op.operands[0]] = (4, 1)
        with pytest.raises(errors.ValidRegionError) as ei:
            run_multi(tiles, ROW_OPS, {"x": x, **prefills(rng, tiles)}, valid)
        assert op.instr in str(ei.value) and "valid rows" in str(ei.value), str(ei.value)


def test_rowred_property(soc):
    @PROPERTY
    @given(dtype=st.sampled_from(ROW_DTYPES), vr=st.integers(0, RR), vc=st.integers(0, 2048),
           kind=st.sampled_from(CLEAN_ROWS + SPECIAL_ROWS), seed=seeds)
    def check(dtype, vr, vc, kind, seed):
        rng = np.random.default_rng(seed)
        vc = min(vc, row_cols(dtype))
        run_rows(soc, dtype, row_values(rng, kind, dtype, (RR, row_cols(dtype))), vr, vc, rng, kind)
    check()


# =============================================================================================
# column reductions: TCOLSUM (sequential and isBinary) TCOLPROD TCOLMAX TCOLMIN
# =============================================================================================
CR = 40
COL_CASES = [(s, d) for s in SOCS for d in R.LEGAL["colsum"][s]]


def col_cols(d: str) -> int:
    return 128 // np_dt(d).itemsize


def col_setup(soc: str, d: str, int_binary: bool = False):
    """(tiles, ops, {output: reference call}) of the column kernel for (soc, dtype)."""
    c = col_cols(d)
    outs = [("dsum", "TCOLSUM", ("isBinary", False))]
    if np_dt(d) in ref.FLOATS or int_binary:       # integer sums do not depend on the order
        outs.append(("dbin", "TCOLSUM", ("isBinary", True)))
    for n, instr in (("dprod", "TCOLPROD"), ("dmax", "TCOLMAX"), ("dmin", "TCOLMIN")):
        if R.is_legal(instr[1:].lower(), d, soc):
            outs.append((n, instr, None))
    tiles = (Tl("x", d, (CR, c)), Tl("tmp", d, (CR // 2, c), load=False)) + \
        tuple(Tl(n, d, (1, c), out=True) for n, _, _ in outs)
    # integer sums use the two-operand form (tmp left out: sequential adds do not need it)
    two = np_dt(d) not in ref.FLOATS and not int_binary
    ops = tuple(Op(i, (n, "x", "tmp") if i == "TCOLSUM" and not (two and n == "dsum") else (n, "x"),
                   (p,) if p else ()) for n, i, p in outs)
    refs = {n: functools.partial({"TCOLSUM": R.colsum, "TCOLPROD": R.colprod, "TCOLMAX": R.colmax,
                                  "TCOLMIN": R.colmin}[i], soc=soc, **({"is_binary": p[1]} if p else {}))
            for n, i, p in outs}
    return tiles, ops, refs


def col_values(rng, kind: str, d: str, shape) -> np.ndarray:
    dt = np_dt(d)
    if kind == "near_one" and dt in ref.FLOATS:
        return vals(list(1.0 + rng.standard_normal(int(np.prod(shape))) * 0.05), d).reshape(shape)
    if kind == "ties" and dt in ref.FLOATS:
        # columns of one big value and ones / halves: every order rounds differently
        big = {ref.F16: 2048.0, ref.BF16: 256.0, ref.F32: 2.0 ** 24}[dt]
        x = np.ones(shape)
        x[rng.integers(0, shape[0], shape[1]), np.arange(shape[1])] = big
        x[:, ::3] *= 0.5
        x[:, 1::4] = -x[:, 1::4]
        return vals(list(x.ravel()), d).reshape(shape)
    if kind == "zeros" and dt in ref.FLOATS:
        x = vals(list(rng.choice([-0.0, 0.0], int(np.prod(shape)), p=[0.8, 0.2])), d).reshape(shape)
        x[:, 0] = vals([-0.0] * shape[0], d)
        return x
    if kind == "small" and dt not in ref.FLOATS:
        lo = -3 if dt.kind == "i" else 0
        return rng.integers(lo, 4, shape).astype(dt)
    if kind in ("finite", "small"):
        return random_values(rng, dt, shape, specials=0.0, raw_bits=0.0)
    return random_values(rng, dt, shape, specials=0.1)


COL_REGIONS = [(CR, None), (1, None), (2, -3), (3, 1), (4, None), (5, -1), (7, None), (8, 2),
               (9, None), (16, -5), (17, None), (33, 3), (6, 1)]


def run_cols(soc: str, d: str, x: np.ndarray, vr: int, vc: int, rng, what: str = "",
             int_binary: bool = False) -> None:
    tiles, ops, refs = col_setup(soc, d, int_binary)
    pre = prefills(rng, tiles)
    valid = {"x": (vr, vc), **{n: (1, vc) for n in refs}}
    got = run_multi(tiles, ops, {"x": x, **pre}, valid)
    want = {}
    for n, fn in refs.items():
        r, lw = fn(x, vr, vc, with_loose=True)
        want[n] = expect(pre[n], (slice(0, 1), slice(0, vc)), r, lw)
    check_outputs(got, want, f"column reductions {d} on {soc}, valid ({vr}, {vc}) {what}")


@slow_if(lambda p: p["target"].mode == "eager" and p["case"][1] not in ("f16", "i32"))
@pytest.mark.parametrize("case", COL_CASES, ids=[f"{s}-{d}" for s, d in COL_CASES])
def test_colred_regions(pto_init, target, case):
    """Every legal dtype of each SoC: row counts that exercise each add order (1, 2, 3, odd and
    even counts, powers of two and one more) with tails, over finite values (integers: full-range
    values that wrap, small ones)."""
    soc_, d = case
    pto_init(soc=soc_)
    rng = rng_for("colred", soc_, d)
    c = col_cols(d)
    kinds = ("finite", "near_one", "ties", "small")
    for i, (vr, vc) in enumerate(COL_REGIONS):
        vc = c if vc is None else (c + vc if vc < 0 else vc)
        kind = kinds[i % len(kinds)]
        run_cols(soc_, d, col_values(rng, kind, d, (CR, c)), vr, vc, rng, kind)


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_colred_specials(soc, dtype):
    """NaN, +-inf, subnormals and columns of -0.0 / mixed zeros (sums start from the first row:
    -0.0 columns stay -0.0)."""
    rng = rng_for("colred-specials", soc, dtype)
    c = col_cols(dtype)
    for i, (vr, vc) in enumerate([(CR, c), (9, c - 1), (1, 3), (2, 1)]):
        run_cols(soc, dtype, col_values(rng, ("random", "zeros")[i % 2], dtype, (CR, c)), vr, vc, rng)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["i16", "i32"])
def test_colsum_int_binary(soc, dtype):
    """isBinary on integers (wrapping sums do not depend on the order)."""
    rng = rng_for("colsum-int-binary", soc, dtype)
    c = col_cols(dtype)
    for vr, vc in ((CR, c), (1, c), (7, 3), (16, c - 1)):
        run_cols(soc, dtype, col_values(rng, "random", dtype, (CR, c)), vr, vc, rng, int_binary=True)


@pytest.mark.parametrize("dtype", ["f16"])
def test_colsum_f16_add_order(soc, dtype):
    """The Addendum's example: an f16 column [2048, 1, 1, 1] sums to 2048 (a2a3 sequential),
    2050 (a2a3 pairwise), 2052 (a5 r0 + (r1 + r2) + r3), 2050 (a5 pairwise); literal values, and
    longer columns against the reference."""
    rng = rng_for("colsum-order", soc)
    c = col_cols(dtype)
    x = np.zeros((CR, c), np.float16)
    x[:4, 0] = [2048, 1, 1, 1]
    x[:4, 1] = [1, 1, 1, 2048]
    x[:4, 2] = [-0.0, -0.0, -0.0, -0.0]
    tiles, ops, refs = col_setup(soc, dtype)
    got = run_multi(tiles, ops, {"x": x, **prefills(rng, tiles)}, {"x": (4, 3), "dsum": (1, 3),
                                                                  "dbin": (1, 3), "dprod": (1, 3),
                                                                  "dmax": (1, 3), "dmin": (1, 3)})
    seq, pair = (2052.0, 2050.0) if soc == "a5" else (2048.0, 2050.0)
    assert got["dsum"][0, 0] == seq, got["dsum"][0, :3]
    assert np.signbit(got["dsum"][0, 2])                                         # -0.0 stays -0.0
    assert "dbin" in got, "no isBinary TCOLSUM on this backend"
    assert got["dbin"][0, 0] == pair and np.signbit(got["dbin"][0, 2]), got["dbin"][0, :3]
    for vr in (4, 5, 6, 7, 8, 11, 12, 23, 24, 31, 40):
        xs = col_values(rng, "ties", dtype, (CR, c))
        run_cols(soc, dtype, xs, vr, c, rng, f"ties, {vr} rows")


def test_colred_empty_region(soc):
    d = "f32"
    rng = rng_for("colred-empty", soc)
    c = col_cols(d)
    x = col_values(rng, "finite", d, (CR, c))
    for vr, vc in ((0, c), (5, 0), (0, 0)):
        run_cols(soc, d, x, vr, vc, rng, "empty")


def test_colred_valid_cols_mismatch(soc):
    d = "f32"
    rng = rng_for("colred-mismatch", soc)
    c = col_cols(d)
    x = col_values(rng, "finite", d, (CR, c))
    tiles, ops, refs = col_setup(soc, d)
    for op in present(ops):
        valid = {"x": (5, c - 2), **{m: (1, c - 2) for m in refs}}
        valid[op.operands[0]] = (1, c - 3)
        with pytest.raises(errors.ValidRegionError) as ei:
            run_multi(tiles, ops, {"x": x, **prefills(rng, tiles)}, valid)
        assert op.instr in str(ei.value) and "valid columns" in str(ei.value), str(ei.value)


@keep_if(lambda p: p["target"].backend == "sim")         # checks='strict' is a simulator option
def test_colsum_binary_one_row_strict(pto_init, target):
    """a5 TCOLSUM isBinary with one valid row addresses the tmp row before tmp on the NPU: pypto
    gives row 0 by default (checked above) and reports it with checks='strict'; a2a3 copies row 0
    on every path, so strict mode accepts it there."""
    rng = rng_for("colsum-strict")
    d = "f16"
    c = col_cols(d)
    x = col_values(rng, "random", d, (CR, c))
    for soc_ in SOCS:
        pto_init(soc=soc_, sim=pypto.SimOptions(mode=target.mode, checks="strict"))
        tiles, ops, refs = col_setup(soc_, d)
        valid = {"x": (1, c), **{m: (1, c) for m in refs}}
        if soc_ == "a5":
            with pytest.raises(errors.UndefinedBehaviorError) as ei:
                run_multi(tiles, ops, {"x": x, **prefills(rng, tiles)}, valid)
            assert "TCOLSUM" in str(ei.value) and "tmp" in str(ei.value)
        else:
            run_multi(tiles, ops, {"x": x, **prefills(rng, tiles)}, valid)
        valid = {"x": (2, c), **{m: (1, c) for m in refs}}
        run_multi(tiles, ops, {"x": x, **prefills(rng, tiles)}, valid)
        pypto.finalize()


def test_colred_property(soc):
    @PROPERTY
    @given(dtype=st.sampled_from(["f16", "f32"]), vr=st.integers(0, CR), vc=st.integers(0, 64),
           kind=st.sampled_from(["random", "near_one", "ties", "zeros"]), seed=seeds)
    def check(dtype, vr, vc, kind, seed):
        rng = np.random.default_rng(seed)
        vc = min(vc, col_cols(dtype))
        run_cols(soc, dtype, col_values(rng, kind, dtype, (CR, col_cols(dtype))), vr, vc, rng, kind)
    check()


# =============================================================================================
# TROWEXPAND / TCOLEXPAND
# =============================================================================================
ER = 32                            # a DN column of 8-bit data needs 32 rows
EXPAND_DTYPES = ("f32", "f16", "bf16", "i32", "u32", "i16", "u16", "i8", "u8")


def ex_cols(d: str) -> int:
    return 64 // np_dt(d).itemsize


def ex_tiles(d: str) -> tuple[Tl, ...]:
    c = ex_cols(d)
    return (Tl("vcol", d, (ER, 1), "DN"), Tl("vnd", d, (ER, c0(d))), Tl("vrow", d, (2, c)),
            Tl("d1", d, (ER, c), out=True), Tl("d2", d, (ER, c), out=True), Tl("d3", d, (ER, c), out=True))


EX_OPS = (Op("TROWEXPAND", ("d1", "vcol")), Op("TROWEXPAND", ("d2", "vnd")), Op("TCOLEXPAND", ("d3", "vrow")))


def run_expand(d: str, vr: int, vc: int, rng, *, nd_cols: int = 1, row_rows: int = 1) -> None:
    tiles = ex_tiles(d)
    c = ex_cols(d)
    v = {"vcol": raw_bits(rng, d, (ER, 1)), "vnd": raw_bits(rng, d, (ER, c0(d))),
         "vrow": raw_bits(rng, d, (2, c))}
    pre = {t.name: raw_bits(rng, d, t.shape) for t in tiles if t.out}
    valid = {"vcol": (vr, 1), "vnd": (vr, nd_cols), "vrow": (row_rows, vc),
             "d1": (vr, vc), "d2": (vr, vc), "d3": (vr, vc)}
    got = run_multi(tiles, EX_OPS, {**v, **pre}, valid)
    reg = (slice(0, vr), slice(0, vc))
    want = {"d1": expect(pre["d1"], reg, R.rowexpand(v["vcol"], vr, vc)),
            "d2": expect(pre["d2"], reg, R.rowexpand(v["vnd"], vr, vc)),
            "d3": expect(pre["d3"], reg, R.colexpand(v["vrow"], vr, vc))}
    check_outputs(got, want, f"TROWEXPAND / TCOLEXPAND {d}, valid ({vr}, {vc})")


@pytest.mark.parametrize("dtype", EXPAND_DTYPES)
def test_expand_copies(soc, dtype):
    """Bit copies of every pattern (NaNs included) over tails, one row, one column, empty."""
    rng = rng_for("expand", soc, dtype)
    c = ex_cols(dtype)
    for vr, vc, nd, rr in ((ER, c, 1, 1), (5, c - 3, 1, 2), (1, 1, 1, 1), (ER, 1, 1, 2), (1, c, 1, 1),
                           (0, c, 1, 1), (7, 0, 1, 1), (ER - 1, c - 1, 1, 1)):
        run_expand(dtype, vr, vc, rng, nd_cols=nd, row_rows=rr)


def test_expand_mismatch(soc):
    d = "f32"
    rng = rng_for("expand-mismatch", soc)
    tiles = ex_tiles(d)
    c = ex_cols(d)
    v = {t.name: raw_bits(rng, d, t.shape) for t in tiles}
    base = {"vcol": (5, 1), "vnd": (5, 1), "vrow": (1, c), "d1": (5, c), "d2": (5, c), "d3": (5, c)}
    for tile, bad, instr, words in (("vcol", (4, 1), "TROWEXPAND", "valid rows"),
                                    ("vrow", (1, c - 1), "TCOLEXPAND", "valid columns"),
                                    ("vrow", (0, c), "TCOLEXPAND", "valid region")):
        with pytest.raises(errors.ValidRegionError) as ei:
            run_multi(tiles, EX_OPS, v, {**base, tile: bad})
        assert instr in str(ei.value) and words in str(ei.value), str(ei.value)


# =============================================================================================
# TROWEXPAND<op> / TCOLEXPAND<op>
# =============================================================================================
BR = 16
BIN_DTYPES = ("f32", "f16")


def bin_cols(d: str) -> int:
    return 256 // np_dt(d).itemsize


def rowop_tiles(d: str, block: bool) -> tuple[Tl, ...]:
    v = Tl("v", d, (BR, c0(d))) if block else Tl("v", d, (BR, 1), "DN")
    return (Tl("a", d, (BR, bin_cols(d))), v) + tuple(Tl(f"d_{o}", d, (BR, bin_cols(d)), out=True)
                                                      for o in EXPAND_OPS)


def colop_tiles(d: str) -> tuple[Tl, ...]:
    return (Tl("a", d, (BR, bin_cols(d))), Tl("v", d, (2, bin_cols(d)))) + \
        tuple(Tl(f"d_{o}", d, (BR, bin_cols(d)), out=True) for o in EXPAND_OPS)


ROW_BIN_OPS = tuple(Op(f"TROWEXPAND{o.upper()}", (f"d_{o}", "a", "v")) for o in EXPAND_OPS)
COL_BIN_OPS = tuple(Op(f"TCOLEXPAND{o.upper()}", (f"d_{o}", "a", "v")) for o in EXPAND_OPS)


def bin_values(rng, d: str, shape, kind: str) -> np.ndarray:
    dt = np_dt(d)
    if kind == "moderate":            # exp stays finite, differences round visibly
        return vals(list(rng.standard_normal(int(np.prod(shape))) * 4), d).reshape(shape)
    x = random_values(rng, dt, shape, specials=0.15)
    flat = x.reshape(-1)
    k = min(flat.size, 12)
    flat[rng.permutation(flat.size)[:k]] = vals([0.0, -0.0, np.inf, -np.inf, np.nan, 0.0, -0.0,
                                                  1.0, -1.0, 2.0 ** -20, 3.0, 0.0][:k], d)
    return x


def run_rowop(d: str, vr: int, vc: int, rng, block: bool, kind: str = "specials",
              uniform_blocks: bool = True) -> None:
    tiles = rowop_tiles(d, block)
    a = bin_values(rng, d, tiles[0].shape, kind)
    v = bin_values(rng, d, tiles[1].shape, kind)
    if block and uniform_blocks:
        v[:, :] = v[:, :1]
        v[3] = bin_values(rng, d, (c0(d),), kind)            # one row with a non-uniform block
    pre = prefills(rng, tiles)
    valid = {"a": (vr, vc), "v": (vr, c0(d) if block else 1), **{f"d_{o}": (vr, vc) for o in EXPAND_OPS}}
    got = run_multi(tiles, ROW_BIN_OPS, {"a": a, "v": v, **pre}, valid)
    want = {}
    for o in EXPAND_OPS:
        r, lw = R.rowexpand_op(o, a, v, vr, vc, block=block, with_loose=True)
        want[f"d_{o}"] = expect(pre[f"d_{o}"], (slice(0, vr), slice(0, vc)), r, lw)
    check_outputs(got, want, f"TROWEXPAND<op> {d} {'block' if block else 'column'} src1, valid "
                             f"({vr}, {vc}), {kind}")


def run_colop(d: str, vr: int, vc: int, rng, kind: str = "specials", v_rows: int = 1) -> None:
    tiles = colop_tiles(d)
    a = bin_values(rng, d, tiles[0].shape, kind)
    v = bin_values(rng, d, tiles[1].shape, kind)
    pre = prefills(rng, tiles)
    valid = {"a": (vr, vc), "v": (v_rows, vc), **{f"d_{o}": (vr, vc) for o in EXPAND_OPS}}
    got = run_multi(tiles, COL_BIN_OPS, {"a": a, "v": v, **pre}, valid)
    want = {}
    for o in EXPAND_OPS:
        r, lw = R.colexpand_op(o, a, v, vr, vc, with_loose=True)
        want[f"d_{o}"] = expect(pre[f"d_{o}"], (slice(0, vr), slice(0, vc)), r, lw)
    check_outputs(got, want, f"TCOLEXPAND<op> {d}, valid ({vr}, {vc}), {kind}")


def bin_regions(d: str) -> list[tuple[int, int]]:
    c = bin_cols(d)
    return [(BR, c), (5, c - 3), (1, 1), (BR, 1), (1, c), (9, c0(d) + 1), (0, 5), (3, 0)]


@pytest.mark.parametrize("form", ["column", "block"])
@pytest.mark.parametrize("dtype", BIN_DTYPES)
def test_rowexpand_ops(soc, dtype, form):
    """All seven ops on one kernel per src1 form over regions with tails, one row / column and
    empty ones; finite values (EXPDIF rounds the difference first). The block form has one row
    whose block is not pre-broadcast (element (i, j) takes lane j % c0)."""
    rng = rng_for("rowop", soc, dtype, form)
    for vr, vc in bin_regions(dtype):
        run_rowop(dtype, vr, vc, rng, form == "block", "moderate")


@pytest.mark.parametrize("dtype", BIN_DTYPES)
def test_rowexpand_ops_specials(soc, dtype):
    """Division by zero (IEEE), NaN (propagated by max / min too), +-inf, +-0, subnormals."""
    rng = rng_for("rowop-specials", soc, dtype)
    c = bin_cols(dtype)
    for vr, vc in ((BR, c), (5, c - 3), (1, 1)):
        run_rowop(dtype, vr, vc, rng, False, "specials")


@pytest.mark.parametrize("dtype", BIN_DTYPES)
def test_colexpand_ops(soc, dtype):
    rng = rng_for("colop", soc, dtype)
    for i, (vr, vc) in enumerate(bin_regions(dtype)):
        run_colop(dtype, vr, vc, rng, "moderate", v_rows=1 + i % 2)


@pytest.mark.parametrize("dtype", BIN_DTYPES)
def test_colexpand_ops_specials(soc, dtype):
    rng = rng_for("colop-specials", soc, dtype)
    c = bin_cols(dtype)
    for vr, vc in ((BR, c), (5, c - 3), (1, 1)):
        run_colop(dtype, vr, vc, rng, "specials")


def test_expand_ops_mismatch(soc):
    d = "f32"
    rng = rng_for("binop-mismatch", soc)
    c = bin_cols(d)
    tiles = rowop_tiles(d, False)
    v = {t.name: random_values(rng, d, t.shape) for t in tiles}
    base = {"a": (5, c), "v": (5, 1), **{f"d_{o}": (5, c) for o in EXPAND_OPS}}
    for tile, bad, words in (("a", (5, c - 1), "src0"), ("a", (6, c), "src0"), ("v", (4, 1), "src1"),
                             ("v", (5, 0), "src1")):
        with pytest.raises(errors.ValidRegionError) as ei:
            run_multi(tiles, ROW_BIN_OPS, v, {**base, tile: bad})
        assert "TROWEXPANDADD" in str(ei.value) and words in str(ei.value), str(ei.value)
    tiles = colop_tiles(d)
    v = {t.name: random_values(rng, d, t.shape) for t in tiles}
    base = {"a": (5, c), "v": (1, c), **{f"d_{o}": (5, c) for o in EXPAND_OPS}}
    for tile, bad in (("a", (4, c)), ("v", (1, c - 1)), ("v", (0, c))):
        with pytest.raises(errors.ValidRegionError) as ei:
            run_multi(tiles, COL_BIN_OPS, v, {**base, tile: bad})
        assert "TCOLEXPANDADD" in str(ei.value), str(ei.value)


def test_expand_ops_property(soc):
    @PROPERTY
    @given(dtype=st.sampled_from(BIN_DTYPES), vr=st.integers(0, BR), vc=st.integers(0, 128),
           which=st.sampled_from(["column", "block", "col"]), kind=st.sampled_from(["specials", "moderate"]),
           seed=seeds)
    def check(dtype, vr, vc, which, kind, seed):
        rng = np.random.default_rng(seed)
        vc = min(vc, bin_cols(dtype))
        if which == "col":
            run_colop(dtype, vr, vc, rng, kind)
        else:
            run_rowop(dtype, vr, vc, rng, which == "block", kind)
    check()


# =============================================================================================
# coverage: every instruction of the family runs in the kernels above
# =============================================================================================
FAMILY_SEEDS = ("rowprod", "rowmax", "rowmin", "colsum", "colprod", "colmax", "colmin", "rowexpand",
                "rowexpandadd", "rowexpandsub", "rowexpandmul", "rowexpanddiv", "rowexpandmax",
                "rowexpandmin", "rowexpandexpdif", "colexpand", "colexpandadd", "colexpandsub",
                "colexpandmul", "colexpanddiv", "colexpandmax", "colexpandmin", "colexpandexpdif")


def test_family_covered():
    """The kernels of this file run every instruction of the family (seed names map to them)."""
    used = {o.instr for ops in (ROW_OPS, EX_OPS, ROW_BIN_OPS, COL_BIN_OPS) for o in ops}
    used |= {o.instr for s in SOCS for d in R.LEGAL["colsum"][s] for o in col_setup(s, d)[1]}
    assert used == {pypto.isa.lookup(n).name for n in FAMILY_SEEDS}


# =============================================================================================
# trace-time errors: one case per kind of illegal use
# =============================================================================================
ERROR_CASES = {
    # name: (tile declarations, instruction, socs, error class, words the message names)
    "rowmax_rows": ("a = T(f32, (16, 64), valid=(5, 64)); t = T(f32, (16, 64)); "
                    "d = T(f32, (16, 1), blayout=CM, valid=(4, 1))", "pto.TROWMAX(d, a, t)", SOCS,
                    errors.ValidRegionError, ("TROWMAX", "src", "valid rows")),
    "rowprod_dst_cols": ("a = T(f32, (16, 64)); t = T(f32, (16, 64)); d = T(f32, (16, 2), blayout=CM)",
                         "pto.TROWPROD(d, a, t)", SOCS, errors.LayoutError, ("TROWPROD", "dst", "DN")),
    "rowmin_dst_valid_cols": ("a = T(f32, (16, 64)); t = T(f32, (16, 64)); d = T(f32, (16, 8), valid=(16, 2))",
                              "pto.TROWMIN(d, a, t)", SOCS, errors.ValidRegionError, ("TROWMIN", "dst")),
    "rowmin_src_dn": ("a = T(f32, (16, 64), blayout=CM); t = T(f32, (16, 64)); "
                      "d = T(f32, (16, 1), blayout=CM)", "pto.TROWMIN(d, a, t)", SOCS,
                      errors.LayoutError, ("TROWMIN", "src", "ND")),
    "rowmax_int": ("a = T(i16, (16, 64)); t = T(i16, (16, 64)); d = T(i16, (16, 16))",
                   "pto.TROWMAX(d, a, t)", SOCS, errors.DTypeError, ("TROWMAX", "int16")),
    "colsum_cols": ("a = T(f32, (16, 64), valid=(16, 60)); t = T(f32, (16, 64)); d = T(f32, (1, 64), valid=(1, 61))",
                    "pto.TCOLSUM(d, a, t)", SOCS, errors.ValidRegionError, ("TCOLSUM", "src", "valid columns")),
    "colsum_tmp_cols": ("a = T(f32, (16, 64)); t = T(f32, (8, 32)); d = T(f32, (1, 64))",
                        "pto.TCOLSUM(d, a, t)", SOCS, errors.OperandError, ("TCOLSUM", "tmp", "columns")),
    "colsum_tmp_rows": ("a = T(f32, (16, 64)); t = T(f32, (4, 64)); d = T(f32, (1, 64))",
                        "pto.TCOLSUM(d, a, t, isBinary=True)", SOCS, errors.OperandError,
                        ("TCOLSUM", "tmp", "rows")),
    "colsum_param": ("a = T(f32, (16, 64)); t = T(f32, (16, 64)); d = T(f32, (1, 64))",
                     "pto.TCOLSUM(d, a, t, isBinary='yes')", SOCS, errors.OperandError, ("TCOLSUM", "isBinary")),
    "colsum_binary_no_tmp": ("a = T(f32, (16, 64)); d = T(f32, (1, 64))", "pto.TCOLSUM(d, a, isBinary=True)",
                             SOCS, errors.OperandError, ("TCOLSUM", "tmp")),
    "colmax_too_many": ("a = T(f32, (16, 64)); d = T(f32, (1, 64))", "pto.TCOLMAX(d, a, a)", SOCS,
                        errors.OperandError, ("TCOLMAX", "operands")),
    "colmax_u8_a2a3": ("a = T(u8, (16, 64)); d = T(u8, (1, 64))", "pto.TCOLMAX(d, a)", ("a2a3",),
                       errors.DTypeError, ("TCOLMAX", "uint8", "a5")),
    "colprod_u8_a5": ("a = T(u8, (16, 64)); d = T(u8, (1, 64))", "pto.TCOLPROD(d, a)", ("a5",),
                      errors.DTypeError, ("TCOLPROD", "uint8")),
    "colmin_dst_dn": ("a = T(f32, (16, 64)); d = T(f32, (8, 64), blayout=CM)", "pto.TCOLMIN(d, a)", SOCS,
                      errors.LayoutError, ("TCOLMIN", "dst", "ND")),
    "rowexpand_rows": ("s = T(f32, (16, 1), blayout=CM, valid=(3, 1)); d = T(f32, (16, 64), valid=(4, 64))",
                       "pto.TROWEXPAND(d, s)", SOCS, errors.ValidRegionError, ("TROWEXPAND", "src", "valid rows")),
    "rowexpand_a5_cols": ("s = T(f32, (16, 8), valid=(16, 2)); d = T(f32, (16, 64))", "pto.TROWEXPAND(d, s)",
                          ("a5",), errors.ValidRegionError, ("TROWEXPAND", "src", "valid columns")),
    "rowexpand_dn_cols": ("s = T(f32, (16, 2), blayout=CM); d = T(f32, (16, 64))", "pto.TROWEXPAND(d, s)",
                          SOCS, errors.LayoutError, ("TROWEXPAND", "src", "DN")),
    "rowexpand_dst_dn": ("s = T(f32, (16, 1), blayout=CM); d = T(f32, (16, 64), blayout=CM)",
                         "pto.TROWEXPAND(d, s)", SOCS, errors.LayoutError, ("TROWEXPAND", "dst", "ND")),
    "rowexpandadd_block_cols": ("a = T(f32, (16, 64)); v = T(f32, (16, 16)); d = T(f32, (16, 64))",
                                "pto.TROWEXPANDADD(d, a, v)", SOCS, errors.LayoutError,
                                ("TROWEXPANDADD", "src1", "32-byte")),
    "rowexpandsub_vec_cols": ("a = T(f32, (16, 64)); v = T(f32, (16, 1), blayout=CM, valid=(16, 0)); "
                              "d = T(f32, (16, 64))", "pto.TROWEXPANDSUB(d, a, v)", SOCS,
                              errors.ValidRegionError, ("TROWEXPANDSUB", "src1", "valid columns")),
    "rowexpandmul_src0": ("a = T(f16, (16, 64), valid=(16, 60)); v = T(f16, (16, 1), blayout=CM); "
                          "d = T(f16, (16, 64))", "pto.TROWEXPANDMUL(d, a, v)", SOCS,
                          errors.ValidRegionError, ("TROWEXPANDMUL", "src0", "valid columns")),
    "rowexpanddiv_rows": ("a = T(f32, (16, 64)); v = T(f32, (16, 1), blayout=CM, valid=(8, 1)); "
                          "d = T(f32, (16, 64))", "pto.TROWEXPANDDIV(d, a, v)", SOCS,
                          errors.ValidRegionError, ("TROWEXPANDDIV", "src1", "valid rows")),
    "rowexpandmax_int": ("a = T(i32, (16, 64)); v = T(i32, (16, 1), blayout=CM); d = T(i32, (16, 64))",
                         "pto.TROWEXPANDMAX(d, a, v)", SOCS, errors.DTypeError, ("TROWEXPANDMAX", "int32")),
    "rowexpandexpdif_mixed": ("a = T(f32, (16, 64)); v = T(f16, (16, 1), blayout=CM); d = T(f32, (16, 64))",
                              "pto.TROWEXPANDEXPDIF(d, a, v)", SOCS, errors.DTypeMismatchError,
                              ("TROWEXPANDEXPDIF", "src1")),
    "colexpand_cols": ("s = T(f32, (1, 64), valid=(1, 30)); d = T(f32, (16, 64), valid=(16, 31))",
                       "pto.TCOLEXPAND(d, s)", SOCS, errors.ValidRegionError, ("TCOLEXPAND", "src", "valid columns")),
    "colexpand_src_dn": ("s = T(f32, (8, 64), blayout=CM); d = T(f32, (16, 64))", "pto.TCOLEXPAND(d, s)",
                         SOCS, errors.LayoutError, ("TCOLEXPAND", "src", "ND")),
    "colexpandmul_src0_type": ("a = T(f32, (16, 128)); v = T(f32, (1, 64)); d = T(f32, (16, 64))",
                               "pto.TCOLEXPANDMUL(d, a, v)", SOCS, errors.OperandError,
                               ("TCOLEXPANDMUL", "src0", "tile type")),
    "colexpandmin_src1_cols": ("a = T(f32, (16, 64)); v = T(f32, (1, 64), valid=(1, 32)); d = T(f32, (16, 64))",
                               "pto.TCOLEXPANDMIN(d, d, v)", SOCS, errors.ValidRegionError,
                               ("TCOLEXPANDMIN", "src1")),
    "colexpandexpdif_int": ("a = T(i16, (16, 64)); v = T(i16, (1, 64))", "pto.TCOLEXPANDEXPDIF(a, a, v)", SOCS,
                            errors.DTypeError, ("TCOLEXPANDEXPDIF", "int16")),
}


@functools.lru_cache(maxsize=None)
def error_kernel(name: str):
    decls, call, *_ = ERROR_CASES[name]
    lines = [d.strip() for d in decls.split(";")]
    src = f"def err_{name}(x):\n" + "".join(f"    {ln}\n" for ln in lines) + f"    {call}\n"
    src = src.replace("T(", "pto.Tile(pto.Vec, ").replace("CM", "pto.ColMajor")
    for short, long in (("f32", "float32"), ("f16", "float16"), ("i16", "int16"), ("i32", "int32"),
                        ("u8", "uint8")):
        src = src.replace(f"Vec, {short},", f"Vec, pto.{long},")
    filename = f"<conformance reduce error {name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"pto": pypto.pto}
    exec(compile(src, filename, "exec"), ns)
    return pypto.kernel(ns[f"err_{name}"])


@keep_if(lambda p: p["soc"] in ERROR_CASES[p["case"]][2])
@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_trace_time_errors(soc, case):
    decls, call, _, cls, words = ERROR_CASES[case]
    with pytest.raises(cls) as ei:
        error_kernel(case)(pypto.zeros((4, 4), pypto.float32))
    msg = str(ei.value)
    assert isinstance(ei.value, pypto.PtoError)
    for w in words:
        assert w in msg, f"{w!r} not in: {msg}"
    assert call in msg, msg                          # the failing line is named


# =============================================================================================
# seed level: load_insn
# =============================================================================================
KINDS = ("numpy", "tensor")


def operand(x: np.ndarray, kind: str):
    return pypto.Tensor(x) if kind == "tensor" else x


def host(x) -> np.ndarray:
    return x.numpy() if isinstance(x, pypto.Tensor) else x


def run_seed(name: str, *ops, **params) -> None:
    ins = pypto.load_insn(name, **params)
    for i, v in enumerate(ops):
        ins.set_operand(i, v)
    ins.execute()


@pytest.mark.parametrize("kind", KINDS)
def test_seed_softmax_chain(soc, kind):
    """rowmax, rowexpandsub, exp, rowsum, rowexpanddiv over a (37, 300) f32 matrix (a row
    softmax), every step against the references bit for bit."""
    rng = rng_for("seed-softmax", soc, kind)
    x = (rng.standard_normal((37, 300)) * 4).astype(np.float32)
    m = operand(np.zeros(37, np.float32), kind)
    run_seed("rowmax", operand(x, kind), m)
    assert_bits_equal(host(m), R.rowmax(x, soc=soc)[:, 0], what="rowmax")
    e = operand(np.zeros_like(x), kind)
    run_seed("rowexpandsub", operand(x, kind), m, e)
    want_e = R.rowexpand_op("sub", x, host(m)[:, None], 37, 300)
    assert_bits_equal(host(e), want_e, what="rowexpandsub")
    run_seed("exp", e, e)
    want_e = ref.exp(want_e)
    assert_bits_equal(host(e), want_e, what="exp")
    s = operand(np.zeros((37, 1), np.float32), kind)
    run_seed("rowsum", e, s)
    assert_bits_equal(host(s), ref.rowsum(want_e, soc=soc), what="rowsum")
    y = operand(np.zeros_like(x), kind)
    run_seed("rowexpanddiv", e, s, y)
    assert_bits_equal(host(y), R.rowexpand_op("div", want_e, host(s), 37, 300), what="rowexpanddiv")
    assert np.allclose(host(y).sum(axis=1), 1.0, atol=1e-5)


@slow_if(lambda p: (p["soc"], p["binary"]) not in (("a2a3", False), ("a5", True)))
@pytest.mark.parametrize("binary", [False, True])
def test_seed_colsum(soc, binary):
    """colsum on f16 (67, 45) with the isBinary parameter; a column of [2048, 1, 1, 1]."""
    rng = rng_for("seed-colsum", soc, binary)
    x = col_values(rng, "ties", "f16", (67, 45))
    x[:, 0] = 0
    x[:4, 0] = [2048, 1, 1, 1]
    out = pypto.Tensor(np.zeros(45, np.float16))
    run_seed("colsum", x, out, isBinary=binary)
    assert_bits_equal(out.numpy(), R.colsum(x, soc=soc, is_binary=binary)[0], what=f"colsum isBinary={binary}")
    y = np.zeros((1, 45), np.float16)
    run_seed("colsum", x[:4, :1].copy(), y[:, :1], isBinary=binary)
    seq, pair = (2052.0, 2050.0) if soc == "a5" else (2048.0, 2050.0)
    assert y[0, 0] == (pair if binary else seq)


# (seed name, dtype, src shape, other shape): one case per form in the quick tier
SEED_CASES = [("rowprod", "f16", (20, 200), None), ("rowmin", "f32", (33, 1000), None),
              ("colmax", "i32", (100, 70), None), ("colprod", "f32", (9, 300), None),
              ("colmin", "u8", (50, 333), None), ("rowexpand", "i8", (70,), (70, 1100)),
              ("colexpand", "u16", (700,), (40, 700)), ("colexpandmul", "f16", (37, 50), (50,)),
              ("rowexpandmax", "f16", (40, 90), (40,)), ("colexpandexpdif", "f32", (20, 300), (300,))]
SLOW_SEEDS = {"rowprod", "colprod", "colmin", "rowexpandmax", "colexpandexpdif"}


def seed_expected(name: str, soc: str, x: np.ndarray, v: np.ndarray | None) -> tuple:
    if name.startswith("row") and name[3:] in ("prod", "max", "min"):
        r, lw = getattr(R, name)(x, soc=soc, with_loose=True)
        return r[:, 0], lw[:, 0]
    if name.startswith("col") and name[3:] in ("sum", "prod", "max", "min"):
        r, lw = getattr(R, name)(x, soc=soc, with_loose=True)
        return r[0], lw[0]
    if name == "rowexpand":
        return R.rowexpand(x[:, None], *v.shape), None
    if name == "colexpand":
        return R.colexpand(x[None, :], *v.shape), None
    op = name[len("rowexpand"):] if name.startswith("rowexpand") else name[len("colexpand"):]
    fn = R.rowexpand_op if name.startswith("row") else R.colexpand_op
    return fn(op, x, v[:, None] if name.startswith("row") else v[None, :], *x.shape, with_loose=True)


def seed_legal(name: str, soc: str) -> bool:
    d = next(c for c in SEED_CASES if c[0] == name)[1]
    key = name if name in R.LEGAL else ("rowexpand_op" if name.startswith("row") else "colexpand_op")
    return R.is_legal(key, d, soc)


@keep_if(lambda p: seed_legal(p["name"], p["soc"]))
@slow_if(lambda p: p["name"] in SLOW_SEEDS or p["kind"] == "tensor" and p["soc"] == "a5")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", [c[0] for c in SEED_CASES])
def test_seed_forms(soc, name, kind):
    _, d, shape, other = next(c for c in SEED_CASES if c[0] == name)
    rng = rng_for("seed", soc, name, kind)
    dt = np_dt(d)
    x = random_values(rng, dt, shape, specials=0.0, raw_bits=0.0)
    if name in ("rowprod", "colprod"):
        x = col_values(rng, "near_one", d, shape)
    if name in ("rowexpand", "colexpand"):
        out_shape, v = other, np.zeros(other, dt)
        want, loose = seed_expected(name, soc, x, v)
        out = operand(v, kind)
        run_seed(name, operand(x, kind), out)
    elif name.startswith(("rowexpand", "colexpand")):
        v = random_values(rng, dt, other, specials=0.0, raw_bits=0.0)
        want, loose = seed_expected(name, soc, x, v)
        out = operand(np.zeros(shape, dt), kind)
        run_seed(name, operand(x, kind), operand(v, kind), out)
    else:
        want, loose = seed_expected(name, soc, x, None)
        out = operand(np.zeros(want.shape, dt), kind)
        run_seed(name, operand(x, kind), out)
    assert_bits_equal(host(out), want, loose=loose, what=f"{name} {d} {shape} on {soc}")


@pytest.mark.parametrize("case", ["vector_length", "dtype_mismatch", "illegal_dtype", "too_many_rows",
                                  "bad_param", "not_2d", "dst_shape"])
def test_seed_errors(soc, case):
    """Everything is validated before a kernel runs (no compilation) and outputs stay untouched."""
    f32 = np.float32
    out = np.full((8, 5), 7, f32)
    if case == "vector_length":
        args, name, cls = (np.ones((8, 5), f32), np.ones(7, f32), out), "rowexpandadd", errors.ShapeError
    elif case == "dtype_mismatch":
        args, name, cls = (np.ones((8, 5), f32), np.ones(5, np.float16), out), "colexpandsub", \
            errors.DTypeMismatchError
    elif case == "illegal_dtype":
        args, name, cls = (np.ones((8, 5), np.int16), np.ones(8, np.int16)), "rowmax", errors.DTypeError
    elif case == "too_many_rows":
        args, name, cls = (np.ones((3000, 5), f32), np.ones(5, f32)), "colsum", errors.ShapeError
    elif case == "bad_param":
        with pytest.raises(errors.OperandError):
            pypto.load_insn("colsum", isBinary="pairwise")
        return
    elif case == "not_2d":
        args, name, cls = (np.ones(40, f32), np.ones(40, f32)), "colmin", errors.ShapeError
    else:
        args, name, cls = (np.ones(8, f32), np.ones((8, 5, 2), f32)), "rowexpand", errors.ShapeError
    with pytest.raises(cls) as ei:
        run_seed(name, *args)
    assert name in str(ei.value)
    assert (out == 7).all()
