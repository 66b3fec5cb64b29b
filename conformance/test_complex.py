"""5.8 complex instructions against conformance/ref_complex.py, bit for bit, on both SoCs and (through
``target``) both simulator modes.

Kernels come from conformance/harness.py: every tile is loaded whole and read back whole, so
elements an instruction must not touch are checked too. One tile capacity per dtype; valid
regions, scalars and data vary at run time. Covered: TSORT32 (raw u32 index bits, stable ties,
NaNs last, idx broadcast, tail block with tmp), TMRGSORT (2-4 lists, ties between lists, exhausted
and the executed counts, dst past the merged records, the single-list blockLen form), TGATHER
(index form with out-of-range indices, every mask pattern), TGATHERB, TSCATTER (flat offsets,
duplicates, out-of-range), TCI (wrapping), TTRI, TPART* (each SoC's valid-region rule, the a5
MAX/MIN pad), TQUANT (rounding ties, saturation, NaN, the a2a3 source overwrite), TPRINT (the
text), checks="strict" reports, trace-time and run-time errors, and the load_insn forms sort, ci,
tri and part*. Only NaN payloads of TPART results with two NaN operands are left open.
"""
from __future__ import annotations

import functools
import linecache
import zlib
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto
from pypto import errors, pto

from . import ref_complex as R
from . import reference as ref
from .conftest import keep_if, slow_if
from .harness import S, T, run
from .helpers import assert_bits_equal, random_values, rng_for, sentinel

SOCS = ("a2a3", "a5")
KINDS = ("numpy", "tensor")
PROPERTY = settings(max_examples=4, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def npd(short: str) -> np.dtype:
    return ref.np_dtype(short)


def legal(name: str, soc: str, dtype: str) -> bool:
    return dtype in R.LEGAL[name][soc]


def sim_only(p) -> bool:
    return p["target"].backend == "sim"




def strict_session(target, soc: str) -> None:
    pypto.finalize()
    pypto.init(**target.init_kwargs(soc=soc, sim=pypto.SimOptions(mode=target.mode, checks="strict")))


def ints(rng, dtype: str, shape, lo=None, hi=None) -> np.ndarray:
    info = np.iinfo(npd(dtype))
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    wide = np.uint64 if dtype == "u64" else np.int64
    return rng.integers(lo, hi, size=shape, dtype=wide, endpoint=True).astype(npd(dtype))


def with_ties(rng, vals: np.ndarray, share: float = 0.3) -> np.ndarray:
    """``vals`` with a share of elements copied from a few of its own values (ties)."""
    flat = vals.reshape(-1).copy()
    pool = flat[rng.integers(0, flat.size, 4)]
    pick = rng.random(flat.size) < share
    flat[pick] = pool[rng.integers(0, 4, int(pick.sum()))]
    return flat.reshape(vals.shape)


# =============================================================================================
# family kernels: several instructions of one dtype in one kernel (the quick tier compiles few)
# =============================================================================================
@dataclass(frozen=True)
class Family:
    """Tiles (name -> T spec, every valid region a runtime argument), scalar names, and the
    instruction calls: (PTO name, operand names, params tuple)."""
    tiles: tuple
    scalars: tuple
    calls: tuple

    def written(self) -> list[str]:
        out = []
        for instr, names, _ in self.calls:
            kinds = tuple("scalar" if n in self.scalars else "tile" for n in names)
            for o, n in zip(pypto.isa.TABLE[instr].slots_for(len(names), kinds), names):
                if o.role in ("out", "inout") and n not in out:
                    out.append(n)
        return out


@functools.lru_cache(maxsize=None)
def family_kernel(fam: Family):
    outs = fam.written()
    args, body = [], []
    for name, t in fam.tiles:
        args += [f"g_{name}", f"r_{name}", f"c_{name}"] + ([f"o_{name}"] if name in outs else [])
        bl = "pto.ColMajor" if t.layout == "DN" else "pto.RowMajor"
        body.append(f"{name} = pto.Tile(pto.Vec, pto.{ref.LONG[t.np]}, {t.shape}, valid=pto.DYNAMIC, "
                    f"blayout={bl})")
        body.append(f"pto.TLOAD({name}, g_{name}[:, :])")
    args += list(fam.scalars)
    body += [f"{name}.set_valid(r_{name}, c_{name})" for name, _ in fam.tiles]
    for instr, names, params in fam.calls:      # the calls may run on different pipes (TCI: S)
        body.append("pto.pipe_barrier(pto.PIPE_ALL)")
        kw = "".join(f", {p}={v!r}" for p, v in params)
        body.append(f"pto.{instr}({', '.join(names)}{kw})")
    body.append("pto.pipe_barrier(pto.PIPE_ALL)")
    for name, t in fam.tiles:
        if name in outs:
            body += [f"{name}.set_valid({t.shape[0]}, {t.shape[1]})", f"pto.TSTORE(o_{name}[:, :], {name})"]
    fname = f"family_{'_'.join(sorted({c[0].lower() for c in fam.calls}))}"
    src = f"def {fname}({', '.join(args)}):\n" + "".join(f"    {ln}\n" for ln in body)
    filename = f"<conformance {fname} {zlib.crc32(src.encode()):08x}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"pto": pto}
    exec(compile(src, filename, "exec"), ns)
    return pypto.kernel(ns[fname])


def run_family(fam: Family, values: dict, valid: dict | None = None, scalars: dict | None = None) -> dict:
    """Run a family kernel: ``values[name]`` is the whole content of each tile before, ``valid``
    its runtime valid region (default: the whole tile); returns the written tiles after."""
    valid, scalars = valid or {}, scalars or {}
    outs = fam.written()
    args, out_t = [], {}
    for name, t in fam.tiles:
        arr = np.ascontiguousarray(np.asarray(values[name], dtype=t.np).reshape(t.shape))
        args += [pypto.Tensor(arr), *valid.get(name, t.shape)]
        if name in outs:
            out_t[name] = pypto.zeros(t.shape, getattr(pypto, ref.LONG[t.np]))
            args.append(out_t[name])
    args += [scalars[n] for n in fam.scalars]
    family_kernel(fam)(*args)
    return {n: t.numpy() for n, t in out_t.items()}


def traced(instr: str, specs, scalars=(), **params):
    """Trace (never run) a kernel using ``instr`` on tiles with static valid regions (T.valid, or
    the whole tile) and literal scalars: static rules raise while tracing, before any compile."""
    body, names = [], []
    for k, t in enumerate(specs):
        bl = "pto.ColMajor" if t.layout == "DN" else "pto.RowMajor"
        body.append(f"t{k} = pto.Tile(pto.Vec, pto.{ref.LONG[t.np]}, {t.shape}, valid={t.valid or t.shape}, "
                    f"blayout={bl})")
        names.append(f"t{k}")
    kw = "".join(f", {p}={v!r}" for p, v in params.items())
    body.append(f"pto.{instr}({', '.join(names + [repr(x) for x in scalars])}{kw})")
    src = "def traced_case(x):\n" + "".join(f"    {ln}\n" for ln in body)
    filename = f"<conformance traced {zlib.crc32(src.encode()):08x}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"pto": pto}
    exec(compile(src, filename, "exec"), ns)
    pypto.kernel(ns["traced_case"])(pypto.Tensor(np.zeros((1, 8), np.float32)))


# =============================================================================================
# TSORT32
# =============================================================================================
SC = 64                                 # sorted source columns (two 32-blocks)


def sort_ops(dtype: str, tmp: bool):
    per = 8 // npd(dtype).itemsize
    ops = [T(dtype, (2, per * SC)), T(dtype, (2, SC)), T("u32", (2, SC))]
    return ops + [T(dtype, (1, SC))] if tmp else ops


SORT_REGIONS = {False: [((2, 64), 2), ((1, 32), 1), ((2, 64), 1)],
                True: [((2, 64), 2), ((2, 37), 1), ((1, 5), 1), ((2, 33), 2)]}


@pytest.mark.slow
@pytest.mark.parametrize("tmp", [False, True], ids=["notmp", "tmp"])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_tsort32(soc, dtype, tmp):
    per = 8 // npd(dtype).itemsize
    for k, ((vr, vc), ivr) in enumerate(SORT_REGIONS[tmp]):
        rng = rng_for("tsort32", dtype, tmp, k)
        src = with_ties(rng, random_values(rng, dtype, (2, SC)))
        idx = ints(rng, "u32", (2, SC))
        dst = sentinel((2, per * SC), dtype)
        valid = [(vr, per * SC), (vr, vc), (ivr, vc)] + ([(1, SC)] if tmp else [])
        vals = [dst, src, idx] + ([sentinel((1, SC), dtype)] if tmp else [])
        got = run("TSORT32", sort_ops(dtype, tmp), vals, valid)[0]
        want = R.tsort32(dst, src, idx, valid[0], valid[1], valid[2], tmp)
        assert_bits_equal(got, want, what=f"TSORT32 {dtype} valid {(vr, vc)} idx rows {ivr}")


def sort_family(dtype: str) -> Family:
    per = 8 // npd(dtype).itemsize
    tiles = (("d", T(dtype, (2, per * SC))), ("src", T(dtype, (2, SC))), ("idx", T("u32", (2, SC))),
             ("dt", T(dtype, (2, per * SC))), ("srct", T(dtype, (2, SC))), ("tmp", T(dtype, (1, SC))))
    return Family(tiles, (), (("TSORT32", ("d", "src", "idx"), ()),
                              ("TSORT32", ("dt", "srct", "idx", "tmp"), ())))


def run_sort(dtype: str, src, idx, vr: int, vc: int, ivr: int):
    """The 3-operand form sorts the whole 32-blocks of (vr, vc), the 4-operand one all of it."""
    per = 8 // npd(dtype).itemsize
    d0 = sentinel((2, per * SC), dtype)
    vals = {"d": d0, "src": src, "idx": idx, "dt": d0, "srct": src, "tmp": sentinel((1, SC), dtype)}
    valid = {"d": (vr, per * SC), "src": (vr, vc // 32 * 32), "idx": (ivr, vc), "dt": (vr, per * SC),
             "srct": (vr, vc)}
    got = run_family(sort_family(dtype), vals, valid)
    for name, s_, tmp in (("d", "src", False), ("dt", "srct", True)):
        want = R.tsort32(d0, src, idx, valid[name], valid[s_], valid["idx"], tmp)
        assert_bits_equal(got[name], want, what=f"TSORT32{' with tmp' if tmp else ''} valid "
                                                 f"{valid[s_]} idx rows {ivr}")
    return got


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_family_tsort32(soc, dtype):
    """Both forms (tmp: the partial tail block too), idx of one row or one per row, ties, specials
    and NaNs (last), indices of every u32 bit pattern."""
    for k, ((vr, vc), ivr) in enumerate(SORT_REGIONS[True] + SORT_REGIONS[False]):
        rng = rng_for("family-sort", dtype, k)
        run_sort(dtype, with_ties(rng, random_values(rng, dtype, (2, SC))), ints(rng, "u32", (2, SC)),
                 vr, vc, ivr)


def test_tsort32_index_bits_and_ties(soc):
    """Indices are raw u32 bits (not converted to float); equal values keep their column order;
    NaNs come last; -0 and +0 tie."""
    src = np.array([[1.0, 3.0, 3.0, np.nan, -0.0, 0.0, 3.0, -np.inf] + [2.0] * 24 + [0.5] * 32] * 2,
                   np.float32)
    idx = np.tile(np.arange(64, dtype=np.uint32) * 0x01010101 + 7, (2, 1))
    got = run_sort("f32", src, idx, 2, 64, 2)["d"]
    words = got.view(np.uint32)[0, :16]
    assert list(words[1::2][:4]) == [idx[0, 1], idx[0, 2], idx[0, 6], idx[0, 8]]   # 3, 3, 3, then 2s
    block0 = got.view(np.uint32)[0, 1:64:2]
    assert block0[-1] == idx[0, 3]                                      # the NaN sorts last
    zeros = [k for k in range(32) if src[0, k] == 0]
    assert [int(x) for x in block0 if x in idx[0, zeros]] == [int(idx[0, z]) for z in zeros]


@keep_if(sim_only)
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_tsort32_strict_reports_nan(soc, target, dtype):
    strict_session(target, soc)
    src = np.ones((2, SC), npd(dtype))
    src[1, 40] = np.nan
    with pytest.raises(errors.UndefinedBehaviorError, match=r"TSORT32.*NaN.*\(1, 40\)"):
        run_sort(dtype, src, np.zeros((2, SC), np.uint32), 2, 64, 2)
    src[1, 40] = 2.0
    run_sort(dtype, src, np.zeros((2, SC), np.uint32), 2, 64, 2)           # no NaN: runs


@pypto.kernel
def k_sort_partial(x, i, z):
    a = pto.Tile(pto.Vec, pto.float32, (1, 64), valid=(1, 40))
    ix = pto.Tile(pto.Vec, pto.uint32, (1, 64))
    d = pto.Tile(pto.Vec, pto.float32, (1, 128))
    pto.TLOAD(a, x[0:1, 0:40])
    pto.TLOAD(ix, i[0:1, :])
    pto.TSORT32(d, a, ix)  # partial block, no tmp
    pto.TSTORE(z[0:1, :], d)


@pypto.kernel
def k_sort_narrow(x, i, z):
    a = pto.Tile(pto.Vec, pto.float32, (1, 64))
    ix = pto.Tile(pto.Vec, pto.uint32, (1, 64))
    d = pto.Tile(pto.Vec, pto.float32, (1, 64))
    pto.TLOAD(a, x[0:1, :])
    pto.TLOAD(ix, i[0:1, :])
    pto.TSORT32(d, a, ix)  # dst too narrow
    pto.TSTORE(z[0:1, :], d)


def test_tsort32_trace_errors(soc):
    x, i = pypto.Tensor(np.zeros((1, 64), np.float32)), pypto.Tensor(np.zeros((1, 64), np.uint32))
    with pytest.raises(errors.ValidRegionError, match="TSORT32: src a has 40 valid columns and no tmp"):
        k_sort_partial(x, i, pypto.Tensor(np.zeros((1, 128), np.float32)))
    with pytest.raises(errors.TileShapeError, match="TSORT32: dst d has 64 columns but sorting writes 128"):
        k_sort_narrow(x, i, pypto.Tensor(np.zeros((1, 64), np.float32)))


def test_tsort32_runtime_errors(soc):
    fam = sort_family("f32")
    vals = {"d": sentinel((2, 128), "f32"), "src": np.ones((2, SC), np.float32),
            "idx": np.zeros((2, SC), np.uint32), "dt": sentinel((2, 128), "f32"), "tmp": np.zeros((1, SC), np.float32)}
    vals["srct"] = vals["src"]
    with pytest.raises(errors.ValidRegionError, match="TSORT32: idx idx has valid region \\(2, 16\\)"):
        run_family(fam, vals, {"idx": (2, 16)})
    with pytest.raises(errors.ValidRegionError, match="TSORT32: src src has 1 valid rows but dst d has 2"):
        run_family(fam, vals, {"src": (1, 64)})
    with pytest.raises(errors.ValidRegionError, match="TSORT32: src src has 40 valid columns and no tmp"):
        run_family(fam, vals, {"src": (2, 40)})


# =============================================================================================
# TMRGSORT
# =============================================================================================
LIST_RECORDS = 16                       # records per list tile


def mrg_ops(dtype: str, nlists: int):
    per = 8 // npd(dtype).itemsize
    cap = 4 * LIST_RECORDS * per
    return ([T(dtype, (1, cap)), T("u16", (1, 16)), T(dtype, (1, cap))]
            + [T(dtype, (1, LIST_RECORDS * per))] * nlists)


def sorted_list(rng, dtype: str, n: int, k: int, pool: np.ndarray) -> np.ndarray:
    """A (1, LIST_RECORDS * per) record row: n records sorted descending, values partly shared
    with the other lists (ties), indices k * 1000 + position; the rest of the row random."""
    per = 8 // npd(dtype).itemsize
    v = np.where(rng.random(n) < 0.4, pool[rng.integers(0, len(pool), n)],
                 rng.integers(-50, 50, n) / 4.0)
    v = np.sort(v.astype(npd(dtype)).astype(np.float64))[::-1]
    row = random_values(rng, dtype, (1, LIST_RECORDS * per))
    row[0, :n * per] = R.records(v, [k * 1000 + j for j in range(n)], dtype)[0]
    return row


MRG_CASES = [(2, False), (3, True), (4, False), (4, True)]


@pytest.mark.slow
@pytest.mark.parametrize("nlists,exhausted", MRG_CASES, ids=[f"{n}lists-{'exh' if e else 'all'}"
                                                             for n, e in MRG_CASES])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_tmrgsort_lists(soc, dtype, nlists, exhausted):
    per = 8 // npd(dtype).itemsize
    cap = 4 * LIST_RECORDS * per
    for case in range(4):
        rng = rng_for("tmrgsort", dtype, nlists, exhausted, case)
        pool = (rng.integers(-20, 20, 3) / 2.0).astype(np.float64)
        counts = [int(rng.integers(0 if case == 3 else 1, LIST_RECORDS + 1)) for _ in range(nlists)]
        srcs = [sorted_list(rng, dtype, n, k, pool) for k, n in enumerate(counts)]
        total = sum(counts) * per
        dvc = [total, max(per, total // 2), min(cap, total + 3 * per), cap][case]
        dst, exe, tmp = sentinel((1, cap), dtype), ints(rng, "u16", (1, 16)), random_values(rng, dtype, (1, cap))
        valid = [(1, dvc), (1, 16), (1, cap)] + [(1, n * per) for n in counts]
        res = run("TMRGSORT", mrg_ops(dtype, nlists), [dst, exe, tmp] + srcs, valid, exhausted=exhausted)
        wd, we, _ = R.tmrgsort(dst, exe, tmp, srcs, dvc, [n * per for n in counts], exhausted)
        assert_bits_equal(res[0], wd, what=f"dst, counts {counts}, dst valid {dvc}")
        assert_bits_equal(res[1], we, what=f"executedNumList, counts {counts}")


def mrg_family(dtype: str) -> Family:
    per = 8 // npd(dtype).itemsize
    cap, lst = 4 * LIST_RECORDS * per, LIST_RECORDS * per
    tiles = (("d4", T(dtype, (1, cap))), ("e4", T("u16", (1, 16))), ("tmp", T(dtype, (1, cap))),
             ("l0", T(dtype, (1, lst))), ("l1", T(dtype, (1, lst))), ("l2", T(dtype, (1, lst))),
             ("l3", T(dtype, (1, lst))), ("d2", T(dtype, (1, cap))), ("e2", T("u16", (1, 16))),
             ("db", T(dtype, (1, 512))), ("sb", T(dtype, (1, 512))))
    return Family(tiles, ("blen",), (
        ("TMRGSORT", ("d4", "e4", "tmp", "l0", "l1", "l2", "l3"), (("exhausted", False),)),
        ("TMRGSORT", ("d2", "e2", "tmp", "l0", "l1"), (("exhausted", True),)),
        ("TMRGSORT", ("db", "sb", "blen"), ())))


def block_source(rng, dtype: str, blen: int, svc: int) -> np.ndarray:
    per = 8 // npd(dtype).itemsize
    src = random_values(rng, dtype, (1, 512))
    n = blen // per
    for b in range(svc // blen):
        v = np.sort(with_ties(rng, rng.integers(-8, 8, n) / 2.0))[::-1]
        src[0, b * blen:(b + 1) * blen] = R.records(v, rng.integers(0, 2 ** 32, n), dtype)[0]
    return src


def run_mrg(dtype: str, lists, counts, dvc4: int, dvc2: int, blen: int = 64, svc: int = 256,
            sb=None, tmp=None):
    """Run the TMRGSORT family; compare every output with the reference (applied in program
    order: the second merge finds the first one's records in tmp). Returns the outputs."""
    per = 8 // npd(dtype).itemsize
    cap = 4 * LIST_RECORDS * per
    rng = rng_for("mrg-fill", dtype, counts)
    tmp = random_values(rng, dtype, (1, cap)) if tmp is None else tmp
    sb = block_source(rng, dtype, blen, svc) if sb is None else sb
    vals = {"d4": sentinel((1, cap), dtype), "e4": ints(rng, "u16", (1, 16)), "tmp": tmp,
            "d2": sentinel((1, cap), dtype), "e2": ints(rng, "u16", (1, 16)),
            "db": sentinel((1, 512), dtype), "sb": sb}
    vals.update({f"l{k}": x for k, x in enumerate(lists)})
    valid = {"d4": (1, dvc4), "d2": (1, dvc2), "sb": (1, svc)}
    valid.update({f"l{k}": (1, n * per) for k, n in enumerate(counts)})
    got = run_family(mrg_family(dtype), vals, valid, {"blen": blen})
    vcs = [n * per for n in counts]
    wd4, we4, t1 = R.tmrgsort(vals["d4"], vals["e4"], tmp, lists, dvc4, vcs, False)
    wd2, we2, _ = R.tmrgsort(vals["d2"], vals["e2"], t1, lists[:2], dvc2, vcs[:2], True)
    for name, want in (("d4", wd4), ("e4", we4), ("d2", wd2), ("e2", we2),
                       ("db", R.tmrgsort1(vals["db"], sb, svc, blen))):
        assert_bits_equal(got[name], want, what=f"TMRGSORT {name}: counts {counts}, dst valid "
                                                f"{dvc4}/{dvc2}, blockLen {blen} over {svc}")
    return got


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_family_tmrgsort(soc, dtype):
    """4 lists (all records), 2 lists with exhausted (the counts, dst past the merged records
    copied from tmp), the blockLen form; ties between lists, empty lists."""
    per = 8 // npd(dtype).itemsize
    cap = 4 * LIST_RECORDS * per
    for case in range(4):
        rng = rng_for("family-mrg", dtype, case)
        pool = (rng.integers(-20, 20, 3) / 2.0).astype(np.float64)
        counts = [int(rng.integers(0 if case >= 2 else 1, LIST_RECORDS + 1)) for _ in range(4)]
        lists = [sorted_list(rng, dtype, n, k, pool) for k, n in enumerate(counts)]
        total = sum(counts) * per
        dvc4 = [total, max(per, total // 2), min(cap, total + 3 * per), cap][case]
        dvc2 = [(counts[0] + counts[1]) * per, per, cap, 2 * per][case]
        blen, svc = BLOCK_CASES[dtype][case % 3]
        run_mrg(dtype, lists, counts, dvc4, dvc2, blen, svc)


def test_tmrgsort_ties_take_the_lower_list(soc):
    a = R.records([5.0, 5.0, 1.0], [10, 11, 12], "f32")
    b = R.records([5.0, 3.0, -0.0], [20, 21, 22], "f32")
    c = R.records([9.0, 0.0], [30, 31], "f32")
    lists = [np.pad(x, ((0, 0), (0, 2 * LIST_RECORDS - x.shape[1]))) for x in (a, b, c, c)]
    got = run_mrg("f32", lists, [3, 3, 2, 0], 16, 12)
    assert list(got["d4"].view(np.uint32)[0, 1:16:2]) == [30, 10, 11, 20, 21, 12, 22, 31]  # -0 == 0
    # lists a and b with exhausted: 5(10) 5(11) 5(20) 3(21) 1(12), then a is used up
    assert list(got["e2"][0, :4]) == [3, 2, 0, 0]
    assert list(got["d2"].view(np.uint32)[0, 1:10:2]) == [10, 11, 20, 21, 12]


BLOCK_CASES = {"f32": [(64, 256), (64, 512), (128, 512)], "f16": [(64, 256), (64, 512), (128, 512)]}


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_tmrgsort_blocks(soc, dtype):
    per = 8 // npd(dtype).itemsize
    ops = [T(dtype, (1, 512)), T(dtype, (1, 512)), S("int")]
    for blen, svc in BLOCK_CASES[dtype]:
        rng = rng_for("tmrgsort1", dtype, blen, svc)
        src = random_values(rng, dtype, (1, 512))
        n = blen // per
        for b in range(svc // blen):
            v = np.sort(with_ties(rng, rng.integers(-8, 8, n) / 2.0))[::-1]
            src[0, b * blen:(b + 1) * blen] = R.records(v, rng.integers(0, 2 ** 32, n), dtype)[0]
        dst = sentinel((1, 512), dtype)
        got = run("TMRGSORT", ops, [dst, src, blen], [(1, 512), (1, svc), None])[0]
        assert_bits_equal(got, R.tmrgsort1(dst, src, svc, blen), what=f"blockLen {blen}, {svc} cols")


def test_tmrgsort_errors(soc):
    lists = [np.zeros((1, 32), np.float32)] * 4
    with pytest.raises(errors.OperandError, match="blockLen 96 is not a positive multiple of 64"):
        run_mrg("f32", lists, [1, 1, 1, 1], 8, 4, blen=96, svc=384, sb=np.zeros((1, 512), np.float32))
    with pytest.raises(errors.ValidRegionError, match="not 1 .. 255 groups"):
        run_mrg("f32", lists, [1, 1, 1, 1], 8, 4, blen=64, svc=300, sb=np.zeros((1, 512), np.float32))
    # static facts: errors when the kernel is traced
    with pytest.raises(errors.OperandError, match="blockLen 32 is not a positive multiple of 64"):
        traced("TMRGSORT", [T("f32", (1, 512)), T("f32", (1, 512))], (32,))
    st = [T("f32", (1, 128)), T("u16", (1, 16)), T("f32", (1, 64)), T("f32", (1, 64)),
          T("f32", (1, 64), valid=(1, 32))]
    with pytest.raises(errors.TileShapeError, match="tmp t2 has 64 columns but the sources hold 96"):
        traced("TMRGSORT", st)
    with pytest.raises(errors.TileShapeError, match="dst t0 has 200 valid columns but tmp t2 only 64"):
        traced("TMRGSORT", [T("f32", (1, 256), valid=(1, 200))] + st[1:3] + [T("f32", (1, 64), valid=(1, 8))] * 2)
    with pytest.raises(errors.DTypeError, match="executedNumList t1 is int32"):
        traced("TMRGSORT", st[:1] + [T("i32", (1, 8))] + st[2:])
    with pytest.raises(errors.TileShapeError, match="TMRGSORT: tile t0 has 2 rows"):
        traced("TMRGSORT", [T("f32", (2, 64))] + st[1:])
    with pytest.raises(errors.OperandError, match="takes no exhausted parameter"):
        traced("TMRGSORT", [T("f32", (1, 512)), T("f32", (1, 512))], (256,), exhausted=True)
    with pytest.raises(errors.ValidRegionError, match="not 1 .. 255 groups of 4 \\* blockLen = 256"):
        traced("TMRGSORT", [T("f32", (1, 512)), T("f32", (1, 512), valid=(1, 320))], (64,))


@keep_if(sim_only)
def test_tmrgsort_strict_reports_nan(soc, target):
    strict_session(target, soc)
    a = np.pad(R.records([np.nan, 1.0], [1, 2], "f32"), ((0, 0), (0, 28)))
    z = np.zeros((1, 32), np.float32)
    with pytest.raises(errors.UndefinedBehaviorError, match="TMRGSORT.*NaN.*src0 l0"):
        run_mrg("f32", [a, z, z, z], [2, 0, 0, 0], 4, 4)


# =============================================================================================
# TGATHER, TGATHERB, TSCATTER
# =============================================================================================
def gather_cases(soc: str) -> list[tuple[str, str]]:
    """Every data type once (its first legal index type), every index type once."""
    pairs = R.GATHER_IDX[soc]
    out = {}
    for t, i in pairs:
        out.setdefault(t, (t, i))
    for t, i in pairs:
        if i not in {x[1] for x in out.values()}:
            out[t + i] = (t, i)
    return list(out.values())


ALL_GATHER = sorted({p for s in SOCS for p in gather_cases(s)})


def idx_values(rng, idx: str, shape, numel: int) -> np.ndarray:
    v = rng.integers(0, numel, size=shape)
    bad = rng.random(shape) < 0.15
    v[bad] = rng.choice([-1, -7, numel, numel + 5, 40000], size=int(bad.sum()))
    info = np.iinfo(npd(idx))
    return np.where((v < info.min) | (v > info.max), numel, v).astype(npd(idx))


GATHER_DTYPES = ["i8", "u8", "i16", "u16", "f16", "bf16", "i32", "u32", "f32", "e4m3", "e5m2"]
GB_DTYPES = ["i8", "u8", "i16", "u16", "f16", "bf16", "i32", "u32", "f32"]
ONE_PATTERN = dict(zip(GATHER_DTYPES, ("P0101", "P1010", "P1010", "P0001", "P0010", "P0100", "P1000",
                                       "P1111", "P0101", "P0001", "P1111")))


# one index type / pattern per dtype in the quick tier; across the dtypes of a SoC every legal index
# type and every pattern appears (the slow harness tests take every combination)
GATHER_PICK = {"a2a3": {"f32": "i32", "i32": "u32", "u32": "i32", "i16": "i32", "u16": "u32",
                        "f16": "i32", "bf16": "u32"},
               "a5": {"f32": "i32", "i32": "u32", "u32": "i32", "i16": "i32", "u16": "u32",
                      "f16": "i16", "bf16": "u16", "i8": "i16", "u8": "u16", "e4m3": "u16", "e5m2": "i16"}}
SCATTER_PICK = {"f32": "i32", "i32": "u32", "u32": "i32", "i16": "i16", "u16": "u16", "f16": "u16",
                "bf16": "i16", "i8": "i16", "u8": "u16"}


def gather_family(soc: str, dtype: str) -> Family:
    """The gather / scatter forms legal for ``dtype`` on ``soc``, all reading the one source tile
    ``src`` (its valid region is the mask form's domain): TGATHER by index, TGATHER by mask
    pattern, TGATHERB and TSCATTER."""
    size = npd(dtype).itemsize
    tiles, calls = [("src", T(dtype, (8, 32)))], []
    i = GATHER_PICK[soc].get(dtype)
    if i is not None:
        assert (dtype, i) in R.GATHER_IDX[soc]
        tiles += [(f"gd_{i}", T(dtype, (4, 32))), (f"gi_{i}", T(i, (4, 32)))]
        calls.append(("TGATHER", (f"gd_{i}", "src", f"gi_{i}"), ()))
    if legal("TGATHER_MASK", soc, dtype):
        p = ONE_PATTERN[dtype]
        tiles.append((f"md_{p}", T(dtype, (4, 32))))
        calls.append(("TGATHER", (f"md_{p}", "src"), (("maskPattern", p),)))
    if dtype in GB_DTYPES:
        tiles += [("bd", T(dtype, (2, 128 // size))), ("bo", T("u32", (2, 8)))]
        calls.append(("TGATHERB", ("bd", "src", "bo"), ()))
    i = SCATTER_PICK.get(dtype)
    if i is not None:
        tiles += [("ss", T(dtype, (2, 32))), (f"sd_{i}", T(dtype, (4, 32))), (f"si_{i}", T(i, (2, 32)))]
        calls.append(("TSCATTER", (f"sd_{i}", "ss", f"si_{i}"), ()))
    return Family(tuple(tiles), (), tuple(calls))


def test_quick_gather_picks_cover_every_combination():
    """Across the dtypes, the quick tier's families use every legal index type and pattern."""
    for soc in SOCS:
        used = {(t, i) for t, i in GATHER_PICK[soc].items()}
        assert {i for _, i in used} == {i for _, i in R.GATHER_IDX[soc]}
        assert used <= set(R.GATHER_IDX[soc])
        pats = {ONE_PATTERN[t] for t in GATHER_DTYPES if legal("TGATHER_MASK", soc, t)}
        assert pats == set(R.PATTERNS)
    assert {i for i in SCATTER_PICK.values()} == {i for _, i in R.SCATTER_IDX}


def gather_values(dtype: str, soc: str, rng, clean: bool = False) -> dict:
    """Inputs of the gather family; ``clean``: every index in range and no duplicate."""
    vals = {}
    for name, t in gather_family(soc, dtype).tiles:
        if name.startswith(("gi_", "si_")):
            n = 256 if name.startswith("gi_") else 128
            vals[name] = (rng.permutation(n)[:t.shape[0] * t.shape[1]].reshape(t.shape).astype(t.np)
                          if clean else idx_values(rng, t.dtype, t.shape, n))
        elif name == "bo":
            nbytes = 8 * 32 * npd(dtype).itemsize
            off = rng.integers(0, nbytes - 32 + 1, (2, 8)).astype(np.uint32)
            if not clean:
                off[0, 1], off[1, 2] = nbytes - 10, 0xFFFFFFF0   # past src: not copied
            vals[name] = off
        elif name.startswith(("gd_", "md_", "bd")):
            vals[name] = sentinel(t.shape, dtype)           # outputs: untouched parts stay 0xA5
        elif dtype in ("e4m3", "e5m2"):
            vals[name] = ints(rng, "u8", t.shape).view(npd(dtype))
        else:
            vals[name] = random_values(rng, dtype, t.shape)
    return vals


GV = {"src": (4, 32)}                   # the family's default mask domain (P1111 fills dst)
GATHER_REGIONS = [  # (src: the mask domain, gather dst rows, TGATHERB dst, TSCATTER idx)
    ((4, 32), 4, (2, None), (2, 32)), ((3, 17), 1, (1, 1), (1, 7)), ((1, 5), 3, (2, 3), (2, 19)),
    ((8, 1), 2, (2, 2), (2, 32))]


@keep_if(lambda p: len(gather_family(p["soc"], p["dtype"]).calls) > 0)
@pytest.mark.parametrize("dtype", GATHER_DTYPES)
def test_family_gather(soc, dtype):
    fam = gather_family(soc, dtype)
    size = npd(dtype).itemsize
    for k, (sv, gr, (br, bk), iv) in enumerate(GATHER_REGIONS):
        rng = rng_for("family-gather", soc, dtype, k)
        vals = gather_values(dtype, soc, rng)
        for name in vals:
            if name.startswith("si_"):
                vals[name][0, 2] = vals[name][0, 0]            # a duplicate: the last write wins
        bcols = 128 // size if bk is None else bk * 32 // size
        valid = {"src": sv, "bd": (br, bcols)}
        valid.update({n: (gr, 32) for n, _ in fam.tiles if n.startswith("gd_")})
        valid.update({n: iv for n, _ in fam.tiles if n.startswith("si_")})
        got = run_family(fam, vals, valid)
        for name, out in got.items():
            kind, _, tag = name.partition("_")
            if kind == "gd":
                want = R.tgather(vals[name], vals["src"], vals[f"gi_{tag}"], (gr, 32))
            elif kind == "md":
                want = R.tgather_mask(vals[name], vals["src"], sv, tag)
            elif kind == "bd":
                want = R.tgatherb(vals[name], vals["src"], vals["bo"], (br, bcols))
            else:
                want = R.tscatter(vals[name], vals["ss"], vals[f"si_{tag}"], iv)
            assert_bits_equal(out, want, what=f"{name} ({dtype}, regions {k})")


def test_tgather_mask_pattern_counts(soc):
    """The survivors of every row are packed densely from dst offset 0 (5.9 n17: P1010 keeps the
    odd columns); the rest of dst is untouched."""
    src = np.arange(256).reshape(8, 32)
    for dtype, pat, keep in (("i16", "P1010", np.s_[:, 1::2]), ("u32", "P1111", np.s_[:, :])):
        vals = gather_values(dtype, soc, rng_for("counts", dtype), clean=True)
        vals["src"] = src.astype(npd(dtype))
        flat = run_family(gather_family(soc, dtype), vals, GV)[f"md_{pat}"].reshape(-1)
        n = src[:4][keep].size
        assert np.array_equal(flat[:n], src[:4][keep].reshape(-1).astype(npd(dtype)))
        assert_bits_equal(flat[n:], sentinel((128 - n,), dtype))


@pytest.mark.slow
@keep_if(lambda p: p["case"] in gather_cases(p["soc"]))
@pytest.mark.parametrize("case", ALL_GATHER, ids=[f"{t}-{i}" for t, i in ALL_GATHER])
def test_tgather_index(soc, case):
    dt, it = case
    ops = [T(dt, (4, 32)), T(dt, (8, 32)), T(it, (4, 32))]
    for vr in (4, 1, 3):
        rng = rng_for("tgather", dt, it, vr)
        src = random_values(rng, dt, (8, 32)) if dt not in ("e4m3", "e5m2") else \
            ints(rng, "u8", (8, 32)).view(npd(dt))
        idx = idx_values(rng, it, (4, 32), 256)
        dst = sentinel((4, 32), dt)
        got = run("TGATHER", ops, [dst, src, idx], [(vr, 32), (8, 32), (4, 32)])[0]
        assert_bits_equal(got, R.tgather(dst, src, idx, (vr, 32)), what=f"TGATHER {dt}/{it} rows {vr}")


PATTERN_CASES = [("f32", p) for p in R.PATTERNS] + [
    (t, p) for t, p in zip(("i16", "u16", "f16", "bf16", "i32", "u32", "i8", "u8", "e4m3", "e5m2"),
                           ("P1010", "P0001", "P0010", "P0100", "P1000", "P1111", "P0101", "P1010",
                            "P0001", "P1111"))]


@pytest.mark.slow
@keep_if(lambda p: legal("TGATHER_MASK", p["soc"], p["case"][0]))
@pytest.mark.parametrize("case", PATTERN_CASES, ids=[f"{t}-{p}" for t, p in PATTERN_CASES])
def test_tgather_mask(soc, case):
    dt, pat = case
    ops = [T(dt, (4, 32)), T(dt, (4, 32))]
    for sv in ((4, 32), (3, 17), (1, 5), (4, 1)):
        rng = rng_for("tgather-mask", dt, pat, sv)
        src = ints(rng, "u8", (4, 32)).view(npd(dt)) if dt in ("e4m3", "e5m2") else random_values(rng, dt, (4, 32))
        dst = sentinel((4, 32), dt)
        got = run("TGATHER", ops, [dst, src], [(4, 32), sv], maskPattern=pat)[0]
        assert_bits_equal(got, R.tgather_mask(dst, src, sv, pat), what=f"{pat} over {sv}")


@pypto.kernel
def k_gather_mask_no_pattern(x, z):
    a = pto.Tile(pto.Vec, pto.float32, (4, 32))
    d = pto.Tile(pto.Vec, pto.float32, (4, 32))
    pto.TLOAD(a, x[:, :])
    pto.TGATHER(d, a)
    pto.TSTORE(z[:, :], d)


def test_tgather_errors(soc):
    with pytest.raises(errors.OperandError, match="TGATHER\\(dst, src\\) needs maskPattern"):
        k_gather_mask_no_pattern(pypto.Tensor(np.zeros((4, 32), np.float32)),
                                 pypto.Tensor(np.zeros((4, 32), np.float32)))
    ops = [T("f32", (4, 32)), T("f32", (8, 32)), T("i32", (4, 32))]
    vals = [sentinel((4, 32), "f32"), np.zeros((8, 32), np.float32), np.zeros((4, 32), np.int32)]
    with pytest.raises(errors.OperandError, match="TGATHER\\(dst, src0, idx\\) takes no maskPattern"):
        run("TGATHER", ops, vals, maskPattern="P0101")
    with pytest.raises(errors.ValidRegionError, match="TGATHER: dst t0 has 16 valid columns of 32"):
        traced("TGATHER", [T("f32", (4, 32), valid=(4, 16))] + ops[1:])
    with pytest.raises(errors.ValidRegionError, match="TGATHER: idx t2 has 8 valid columns of 32"):
        traced("TGATHER", ops[:2] + [T("i32", (4, 32), valid=(4, 8))])
    with pytest.raises(errors.ValidRegionError, match="TGATHER: idx t2 has valid region \\(2, 32\\) but dst t0 has \\(4, 32\\)"):
        traced("TGATHER", ops[:2] + [T("i32", (4, 32), valid=(2, 32))])
    with pytest.raises(errors.DTypeError, match="TGATHER does not accept"):
        run("TGATHER", [T("f32", (4, 32)), T("f32", (8, 32)), T("i16", (4, 32))],
            vals[:2] + [np.zeros((4, 32), np.int16)])
    with pytest.raises(errors.TileShapeError, match="64 elements survive P0101 but dst t0 holds 32"):
        traced("TGATHER", [T("f32", (1, 32)), T("f32", (4, 32))], maskPattern="P0101")
    # run time (the family kernel): the same rules on runtime valid regions
    vals = gather_values("f32", soc, rng_for("gather-err"))
    with pytest.raises(errors.ValidRegionError, match="TGATHER: dst gd_i32 has 16 valid columns of 32"):
        run_family(gather_family(soc, "f32"), vals, GV | {"gd_i32": (4, 16)})
    with pytest.raises(errors.ValidRegionError, match="TGATHER: idx gi_i32 has 8 valid columns of 32"):
        run_family(gather_family(soc, "f32"), vals, GV | {"gi_i32": (4, 8)})
    with pytest.raises(errors.TileShapeError, match="256 elements survive P1111 but dst md_P1111 holds 128"):
        run_family(gather_family(soc, "u32"), gather_values("u32", soc, rng_for("gather-err")), {"src": (8, 32)})


@pytest.mark.slow
@keep_if(sim_only)       # offsets past src: the CPU backend reads out of bounds (a crash)
@pytest.mark.parametrize("dtype", GB_DTYPES)
def test_tgatherb(soc, dtype):
    size = npd(dtype).itemsize
    c0 = 32 // size
    dcols, scols = 128 // size, 128 // size
    ops = [T(dtype, (2, dcols)), T(dtype, (4, scols)), T("u32", (2, 8))]
    for vr, vc in ((2, dcols), (1, c0), (2, 3 * c0)):
        rng = rng_for("tgatherb", dtype, vr, vc)
        src = random_values(rng, dtype, (4, scols))
        off = rng.integers(0, 512 - 32 + 1, (2, 8)).astype(np.uint32)
        off[0, 1], off[1, 2] = 490, 0xFFFFFFF0                 # past src's 512 bytes: not copied
        dst = sentinel((2, dcols), dtype)
        got = run("TGATHERB", ops, [dst, src, off], [(vr, vc), (4, scols), (2, 8)])[0]
        assert_bits_equal(got, R.tgatherb(dst, src, off, (vr, vc)), what=f"TGATHERB valid {(vr, vc)}")


def test_tgatherb_errors(soc):
    vals = gather_values("f32", soc, rng_for("gatherb-err"))
    with pytest.raises(errors.ValidRegionError, match="TGATHERB: dst bd has 5 valid columns"):
        run_family(gather_family(soc, "f32"), vals, GV | {"bd": (2, 5)})
    with pytest.raises(errors.ValidRegionError, match="TGATHERB: offset bo has valid region \\(2, 2\\)"):
        run_family(gather_family(soc, "f32"), vals, GV | {"bo": (2, 2)})


@keep_if(sim_only)
def test_gather_family_strict_reports(soc, target):
    """checks="strict": an index outside the source (TGATHER, TGATHERB, TSCATTER) and a duplicate
    TSCATTER index are reported; clean data runs."""
    strict_session(target, soc)
    fam = gather_family(soc, "f32")
    clean = gather_values("f32", soc, rng_for("gather-strict"), clean=True)
    run_family(fam, clean, GV)
    cases = [("gi_i32", (2, 5), 256, r"TGATHER: an index outside.*\(2, 5\) of idx gi_i32 \(value 256\)"),
             ("bo", (1, 3), 1000, r"TGATHERB: an index outside.*\(1, 3\) of offset bo \(value 1000\)"),
             ("si_i32", (1, 4), 128, r"TSCATTER: an index outside.*\(1, 4\) of idx si_i32 \(value 128\)"),
             ("si_i32", (0, 6), -1, r"TSCATTER: two scatter indices.*\(0, 6\) of idx si_i32")]
    for name, at, v, msg in cases:
        vals = {k: x.copy() for k, x in clean.items()}
        vals[name][at] = vals[name][0, 0] if v == -1 else v
        with pytest.raises(errors.UndefinedBehaviorError, match=msg):
            run_family(fam, vals, GV)


@pytest.mark.slow
@pytest.mark.parametrize("case", R.SCATTER_IDX, ids=[f"{t}-{i}" for t, i in R.SCATTER_IDX])
def test_tscatter(soc, case):
    dt, it = case
    cols = 32
    ops = [T(dt, (4, cols)), T(dt, (2, cols)), T(it, (2, cols))]
    for iv in ((2, cols), (1, 7), (2, 19)):
        rng = rng_for("tscatter", dt, it, iv)
        src = random_values(rng, dt, (2, cols))
        idx = idx_values(rng, it, (2, cols), 4 * cols)
        idx[0, 2] = idx[0, 0]                                   # a duplicate: the last write wins
        dst = random_values(rng, dt, (4, cols))
        got = run("TSCATTER", ops, [dst, src, idx], [(4, cols), (2, cols), iv])[0]
        assert_bits_equal(got, R.tscatter(dst, src, idx, iv), what=f"TSCATTER {dt}/{it} idx valid {iv}")


def test_tscatter_flat_offsets(soc):
    """idx is a flat element offset into dst (the NPU), not a row number (the doc / CPU)."""
    vals = gather_values("i32", soc, rng_for("flat"), clean=True)
    vals["ss"][0, :8] = np.arange(1, 9)
    vals["si_u32"][0, :8] = [9, 0, 17, 31, 8, 1, 2, 3]
    vals["sd_u32"][:] = 0
    got = run_family(gather_family(soc, "i32"), vals, GV | {"si_u32": (1, 8)})["sd_u32"]
    want = np.zeros(128, np.int32)
    want[[9, 0, 17, 31, 8, 1, 2, 3]] = np.arange(1, 9)
    assert np.array_equal(got.reshape(-1), want)


def test_tscatter_src_must_cover_idx(soc):
    vals = gather_values("i32", soc, rng_for("cover"), clean=True)
    with pytest.raises(errors.ValidRegionError, match="TSCATTER: src ss has valid region \\(1, 32\\)"):
        run_family(gather_family(soc, "i32"), vals, GV | {"ss": (1, 32)})


# =============================================================================================
# TCI, TTRI
# =============================================================================================
CI_DTYPES = ["i32", "u32", "i16", "u16"]


@pytest.mark.slow
@pytest.mark.parametrize("descending", [0, 1])
@pytest.mark.parametrize("dtype", CI_DTYPES)
def test_tci(soc, dtype, descending):
    cols = 32 // npd(dtype).itemsize * 4
    info = np.iinfo(npd(dtype))
    for start, vc in ((0, cols), (int(info.max) - 3, cols), (int(info.min) + 2, 5), (7, 1)):
        dst = sentinel((1, cols), dtype)
        got = run("TCI", [T(dtype, (1, cols)), S("int")], [dst, start], [(1, vc), None],
                  descending=descending)[0]
        assert_bits_equal(got, R.tci(dst, start, vc, descending), what=f"TCI start {start} cols {vc}")


INDEX_DTYPES = ["i32", "u32", "i16", "u16", "f16", "f32", "i8", "u8", "bf16"]


def index_family(soc: str, dtype: str) -> Family:
    c0 = 32 // npd(dtype).itemsize
    tiles, calls, scalars = [], [], []
    if dtype in CI_DTYPES:
        tiles += [("ci0", T(dtype, (2, 4 * c0))), ("ci1", T(dtype, (2, 4 * c0)))]
        calls += [("TCI", ("ci0", "start"), (("descending", 0),)), ("TCI", ("ci1", "start"), (("descending", 1),))]
        scalars.append("start")
    if legal("TTRI", soc, dtype):
        tiles += [("lo", T(dtype, (8, 2 * c0))), ("up", T(dtype, (8, 2 * c0)))]
        calls += [("TTRI", ("lo", "diag"), (("isUpper", 0),)), ("TTRI", ("up", "diag"), (("isUpper", 1),))]
        scalars.append("diag")
    return Family(tuple(tiles), tuple(scalars), tuple(calls))


@keep_if(lambda p: len(index_family(p["soc"], p["dtype"]).calls) > 0)
@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_family_index(soc, dtype):
    """TCI both directions (wrapping at the type's limits, row 0 only whatever the valid rows) and
    TTRI lower and upper with diagonals inside, before and past the valid region."""
    fam = index_family(soc, dtype)
    c0 = 32 // npd(dtype).itemsize
    lim = np.iinfo(npd(dtype)) if dtype in CI_DTYPES else None
    starts = [0, int(lim.max) - 3, int(lim.min) + 2, 7] if lim else [0] * 4
    cases = zip(starts, ((2, 4 * c0), (1, 4 * c0), (2, 5), (1, 1)),
                ((8, 2 * c0), (5, 11), (8, 3), (1, 7)), (0, 2, -40, 40))
    for start, cv, tv, d in cases:
        vals = {n: sentinel(t.shape, dtype) for n, t in fam.tiles}
        valid = {"ci0": cv, "ci1": cv, "lo": tv, "up": tv}
        got = run_family(fam, vals, valid, {"start": start, "diag": d})
        for name, out in got.items():
            want = (R.tci(vals[name], start, cv[1], name == "ci1") if name.startswith("ci") else
                    R.ttri(vals[name], tv, d, name == "up"))
            assert_bits_equal(out, want, what=f"{name}: start {start} diagonal {d} valid {cv} {tv}")


@pypto.kernel
def k_tci_one_col(z):
    d = pto.Tile(pto.Vec, pto.int32, (8, 1), blayout=pto.ColMajor)
    pto.TCI(d, 0)  # one column


def test_tci_errors(soc):
    with pytest.raises(errors.LayoutError, match="TCI operand dst"):
        k_tci_one_col(pypto.Tensor(np.zeros((8, 1), np.int32)))
    with pytest.raises(errors.DTypeError, match="TCI.*start"):
        run("TCI", [T("i16", (1, 16)), S("int", how="static")], [np.zeros((1, 16), np.int16), 40000])
    fam = index_family(soc, "i16")
    with pytest.raises(errors.DTypeError, match="TCI.*start"):
        run_family(fam, {n: np.zeros(t.shape, np.int16) for n, t in fam.tiles}, None,
                   {"start": 40000, "diag": 0})


TRI_CASES = [(t, u) for t in R.LEGAL["TTRI"]["a5"] for u in ((0, 1) if t == "f32" else ((len(t) + ord(t[0])) % 2,))]


@pytest.mark.slow
@keep_if(lambda p: legal("TTRI", p["soc"], p["case"][0]))
@pytest.mark.parametrize("case", TRI_CASES, ids=[f"{t}-{'upper' if u else 'lower'}" for t, u in TRI_CASES])
def test_ttri(soc, case):
    dt, upper = case
    cols = 32 // npd(dt).itemsize * 2
    for valid, d in (((8, cols), 0), ((5, 11), 2), ((8, cols), -3), ((1, 7), 40), ((8, 3), -40)):
        dst = sentinel((8, cols), dt)
        got = run("TTRI", [T(dt, (8, cols)), S("int")], [dst, d], [valid, None], isUpper=upper)[0]
        assert_bits_equal(got, R.ttri(dst, valid, d, upper), what=f"TTRI valid {valid} diagonal {d}")


# =============================================================================================
# TPARTADD / TPARTMAX / TPARTMIN / TPARTMUL
# =============================================================================================
PART_NAMES = ("TPARTADD", "TPARTMAX", "TPARTMIN", "TPARTMUL")
PART_REGIONS = [((8, 32), (8, 32), (8, 32)), ((8, 32), (8, 32), (5, 32)), ((8, 32), (8, 32), (8, 7)),
                ((8, 32), (3, 9), (8, 32)), ((6, 20), (6, 20), (2, 20)), ((8, 32), (5, 7), (3, 20)),
                ((8, 32), (0, 3), (4, 4)), ((0, 32), (0, 32), (0, 5)), ((8, 32), (8, 32), (0, 0))]
PART_CASES = [(n, t) for n in PART_NAMES for t in R.LEGAL["TPART"]["a5"]]


@pytest.mark.slow
@keep_if(lambda p: legal("TPART", p["soc"], p["case"][1]))
@pytest.mark.parametrize("case", PART_CASES, ids=[f"{n}-{t}" for n, t in PART_CASES])
def test_tpart(soc, case):
    name, dt = case
    ops = [T(dt, (8, 32))] * 3
    ran = 0
    for k, (dv, av, bv) in enumerate(PART_REGIONS):
        if not R.part_legal(name, soc, dv, av, bv):
            continue
        rng = rng_for("tpart", name, dt, k)
        a, b = random_values(rng, dt, (8, 32)), random_values(rng, dt, (8, 32))
        dst = sentinel((8, 32), dt)
        got = run(name, ops, [dst, a, b], [dv, av, bv])[0]
        want, loose = R.tpart(name, soc, dst, a, b, dv, av, bv)
        assert_bits_equal(got, want, loose=loose, what=f"{name} valid dst {dv} src0 {av} src1 {bv}")
        ran += 1
    assert ran >= 4


def part_family(dtype: str) -> Family:
    tiles = tuple((n, T(dtype, (8, 32))) for n in ("a", "b", "a2", "b2", "dadd", "dmul", "dmax", "dmin"))
    return Family(tiles, (), (("TPARTADD", ("dadd", "a", "b"), ()), ("TPARTMUL", ("dmul", "a", "b"), ()),
                              ("TPARTMAX", ("dmax", "a2", "b2"), ()), ("TPARTMIN", ("dmin", "a2", "b2"), ())))


def run_part(soc: str, dtype: str, rng, eq, mm, data=None):
    """eq: (dst, src0, src1) valid regions of TPARTADD/MUL; mm: those of TPARTMAX/MIN."""
    vals = {n: sentinel((8, 32), dtype) for n in ("dadd", "dmul", "dmax", "dmin")}
    vals.update(data or {n: random_values(rng, dtype, (8, 32)) for n in ("a", "b", "a2", "b2")})
    valid = {"dadd": eq[0], "dmul": eq[0], "a": eq[1], "b": eq[2], "dmax": mm[0], "dmin": mm[0],
             "a2": mm[1], "b2": mm[2]}
    got = run_family(part_family(dtype), vals, valid)
    for name, (x, y, v) in (("TPARTADD", ("a", "b", eq)), ("TPARTMUL", ("a", "b", eq)),
                            ("TPARTMAX", ("a2", "b2", mm)), ("TPARTMIN", ("a2", "b2", mm))):
        d = "d" + name[5:].lower()
        want, loose = R.tpart(name, soc, vals[d], vals[x], vals[y], *v)
        assert_bits_equal(got[d], want, loose=loose, what=f"{name} valid dst {v[0]} src0 {v[1]} src1 {v[2]}")


@keep_if(lambda p: legal("TPART", p["soc"], p["dtype"]))
@pytest.mark.parametrize("dtype", R.LEGAL["TPART"]["a5"])
def test_family_part(soc, dtype):
    eq = [r for r in PART_REGIONS if R.part_legal("TPARTADD", soc, *r)]
    mm = [r for r in PART_REGIONS if R.part_legal("TPARTMAX", soc, *r)]
    for k in range(max(len(eq), len(mm))):
        run_part(soc, dtype, rng_for("family-part", soc, dtype, k), eq[k % len(eq)], mm[k % len(mm)])


def test_tpart_illegal_regions(soc):
    ok = ((8, 32), (8, 32), (8, 32))
    data = {n: np.ones((8, 32), np.float32) for n in ("a", "b", "a2", "b2")}
    for dv, av, bv in (((8, 32), (5, 32), (8, 7)), ((4, 32), (8, 32), (4, 32))):
        if not R.part_legal("TPARTADD", soc, dv, av, bv):
            with pytest.raises(errors.ValidRegionError, match=f"TPARTADD: src0 a valid \\({av[0]}, {av[1]}\\)"):
                run_part(soc, "f32", None, (dv, av, bv), ok, data)
        if not R.part_legal("TPARTMAX", soc, dv, av, bv):
            with pytest.raises(errors.ValidRegionError, match=f"TPARTMAX: src0 a2 valid \\({av[0]}, {av[1]}\\)"):
                run_part(soc, "f32", None, ok, (dv, av, bv), data)
    for name in PART_NAMES:                                         # static regions: at trace time
        with pytest.raises(errors.ValidRegionError, match=f"{name}: src0 t1 valid \\(8, 32\\), src1 t2"):
            traced(name, [T("f32", (8, 32), valid=(4, 32)), T("f32", (8, 32)), T("f32", (8, 32), valid=(4, 32))])


@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_tpart_property(soc, data):
    """Random legal valid regions (for each rule) and random f16 data."""
    def regions(name):
        dr, dc = data.draw(st.integers(0, 8)), data.draw(st.integers(0, 32))
        if name == "TPARTMAX" and soc == "a5":
            return ((dr, dc), (data.draw(st.integers(0, dr)), data.draw(st.integers(0, dc))),
                    (data.draw(st.integers(0, dr)), data.draw(st.integers(0, dc))))
        small = (data.draw(st.integers(0, dr)), data.draw(st.integers(0, dc)))
        return ((dr, dc), (dr, dc), small) if data.draw(st.booleans()) else ((dr, dc), small, (dr, dc))
    run_part(soc, "f16", rng_for("part-prop", data.draw(st.integers(0, 2 ** 31))),
             regions("TPARTADD"), regions("TPARTMAX"))


# =============================================================================================
# TQUANT
# =============================================================================================
def quant_src(rng) -> np.ndarray:
    x = random_values(rng, "f32", (4, 32), specials=0.15)
    x[0, :12] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 127.5, 128.5, -128.5, 255.5, 300.0, -1e10]
    x[1, :6] = [np.inf, -np.inf, np.nan, -0.0, 2.0 ** 31, 3e38]
    return x


@pytest.mark.slow
@pytest.mark.parametrize("qt", ["INT8_SYM", "INT8_ASYM"])
def test_tquant(soc, qt):
    asym = qt == "INT8_ASYM"
    out = "u8" if asym else "i8"
    ops = [T(out, (4, 32)), T("f32", (4, 32)), T("f32", (8, 1), layout="DN")]
    ops += [T("f32", (8, 1), layout="DN")] if asym else []
    for vr, vc in ((4, 32), (3, 17), (1, 1)):
        rng = rng_for("tquant", qt, vr, vc)
        src = quant_src(rng)
        scale = np.array([[1.0], [1.0], [0.37], [-3.5]] + [[7.0]] * 4, np.float32)
        offset = np.array([[0.0], [10.5], [-3.25], [128.0]] + [[1.0]] * 4, np.float32)
        dst = sentinel((4, 32), out)
        vals = [dst, src, scale] + ([offset] if asym else [])
        valid = [(vr, vc), (vr, vc), (vr, 1)] + ([(vr, 1)] if asym else [])
        res = run("TQUANT", ops, vals, valid, quantType=qt)
        wd, ws = R.tquant(dst, src, scale[:, 0], offset[:, 0], (vr, vc), qt, soc)
        assert_bits_equal(res[0], wd, what=f"TQUANT dst valid {(vr, vc)}")
        assert_bits_equal(res[1], ws, what=f"TQUANT src afterwards ({soc})")


def quant_family() -> Family:
    tiles = (("qd", T("i8", (4, 32))), ("qs", T("f32", (4, 32))), ("sc", T("f32", (8, 1), layout="DN")),
             ("ud", T("u8", (4, 32))), ("us", T("f32", (4, 32))), ("of", T("f32", (8, 1), layout="DN")))
    return Family(tiles, (), (("TQUANT", ("qd", "qs", "sc"), (("quantType", "INT8_SYM"),)),
                              ("TQUANT", ("ud", "us", "sc", "of"), (("quantType", "INT8_ASYM"),))))


QUANT_SCALE = np.array([[1.0], [1.0], [0.37], [-3.5]] + [[7.0]] * 4, np.float32)
QUANT_OFFSET = np.array([[0.0], [10.5], [-3.25], [128.0]] + [[1.0]] * 4, np.float32)


def run_quant(soc: str, rng, vr: int, vc: int, src=None):
    vals = {"qd": sentinel((4, 32), "i8"), "ud": sentinel((4, 32), "u8"), "sc": QUANT_SCALE,
            "of": QUANT_OFFSET, "qs": quant_src(rng) if src is None else src,
            "us": quant_src(rng) if src is None else src}
    valid = {n: (vr, vc) for n in ("qd", "qs", "ud", "us")} | {"sc": (vr, 1), "of": (vr, 1)}
    got = run_family(quant_family(), vals, valid)
    for d, s_, qt in (("qd", "qs", "INT8_SYM"), ("ud", "us", "INT8_ASYM")):
        wd, ws = R.tquant(vals[d], vals[s_], QUANT_SCALE[:, 0], QUANT_OFFSET[:, 0], (vr, vc), qt, soc)
        assert_bits_equal(got[d], wd, what=f"TQUANT {qt} dst valid {(vr, vc)}")
        assert_bits_equal(got[s_], ws, what=f"TQUANT {qt} src afterwards ({soc})")
    return got


def test_family_quant(soc):
    """Both INT8 forms: ties to even, saturation, NaN and infinities, per-row scale and offset, and
    the source afterwards (overwritten on a2a3, unchanged on a5)."""
    for vr, vc in ((4, 32), (3, 17), (1, 1)):
        run_quant(soc, rng_for("family-quant", vr, vc), vr, vc)


@keep_if(sim_only)
def test_tquant_strict_reports_nan(soc, target):
    strict_session(target, soc)
    src = np.ones((4, 32), np.float32)
    run_quant(soc, None, 4, 32, src)
    src[2, 3] = np.nan
    with pytest.raises(errors.UndefinedBehaviorError, match=r"TQUANT: NaN or infinity.*\(2, 3\) of src qs"):
        run_quant(soc, None, 4, 32, src)


def test_tquant_errors(soc):
    ops = [T("i8", (4, 32)), T("f32", (4, 32)), T("f32", (8, 1), layout="DN")]
    vals = [sentinel((4, 32), "i8"), np.ones((4, 32), np.float32), np.ones((8, 1), np.float32)]
    dn = T("f32", (8, 1), layout="DN", valid=(4, 1))
    with pytest.raises(errors.OperandError, match="TQUANT needs quantType"):
        traced("TQUANT", ops[:2] + [dn])
    with pytest.raises(errors.OperandError, match="INT8_ASYM writes uint8 but dst t0 is int8"):
        traced("TQUANT", ops[:2] + [dn], quantType="INT8_ASYM")
    with pytest.raises(errors.OperandError, match="INT8_ASYM needs an offset tile"):
        traced("TQUANT", [T("u8", (4, 32)), ops[1], dn], quantType="INT8_ASYM")
    with pytest.raises(errors.ValidRegionError, match="TQUANT: dst t0 has valid region \\(4, 16\\) but src t1 has \\(4, 32\\)"):
        traced("TQUANT", [T("i8", (4, 32), valid=(4, 16)), ops[1], dn], quantType="INT8_SYM")
    with pytest.raises(errors.ValidRegionError, match="TQUANT: scale t2 / offset valid regions \\(8, 1\\)"):
        traced("TQUANT", ops[:2] + [T("f32", (8, 1), layout="DN")], quantType="INT8_SYM")
    with pytest.raises(errors.LayoutError, match="TQUANT operand scale"):
        traced("TQUANT", ops[:2] + [T("f32", (4, 8))], quantType="INT8_SYM")
    fam_vals = {"qd": sentinel((4, 32), "i8"), "ud": sentinel((4, 32), "u8"), "sc": QUANT_SCALE,
                "of": QUANT_OFFSET, "qs": np.ones((4, 32), np.float32), "us": np.ones((4, 32), np.float32)}
    with pytest.raises(errors.ValidRegionError, match="TQUANT: dst qd has valid region \\(4, 16\\)"):
        run_family(quant_family(), fam_vals, {"qd": (4, 16), "sc": (4, 1), "of": (4, 1), "qs": (4, 32),
                                              "ud": (4, 32), "us": (4, 32)})
    if soc == "a5":
        with pytest.raises(errors.NotSimulatedError, match="MXFP8"):
            traced("TQUANT", ops[:2] + [dn], quantType="MXFP8")
    else:
        with pytest.raises(errors.OperandError, match="MXFP8 does not exist on a2a3"):
            traced("TQUANT", ops[:2] + [dn], quantType="MXFP8")


# =============================================================================================
# TPRINT
# =============================================================================================
PRINT_DTYPES = list(R.LEGAL["TPRINT"]["a2a3"])


def print_family() -> Family:
    tiles = tuple((f"p_{d}", T(d, (3, 32 // npd(d).itemsize))) for d in PRINT_DTYPES)
    calls = tuple(("TPRINT", (f"p_{d}",), ()) for d in PRINT_DTYPES) + (("TPRINT", ("g_p_f32",), ()),)
    return Family(tiles, (), calls)


def test_family_print(soc, capsys):
    """Every printable dtype (specials included), the valid region marked, then a GM tensor, in
    program order."""
    fam = print_family()
    for k, (vr, vc) in enumerate(((2, 5), (3, 4), (1, 1))):
        rng = rng_for("print", k)
        vals = {n: ints(rng, t.dtype, t.shape) if t.dtype in ("i64", "u64") else
                random_values(rng, t.dtype, t.shape, specials=0.3) for n, t in fam.tiles}
        valid = {n: (vr, min(vc * (8 // npd(t.dtype).itemsize), t.shape[1]) if k == 1 else min(vc, t.shape[1]))
                 for n, t in fam.tiles}
        capsys.readouterr()
        run_family(fam, vals, valid)
        want = "".join(R.tprint_tile(vals[n], valid[n], t.dtype) for n, t in fam.tiles)
        want += R.tprint_gm(vals["p_f32"], "f32")
        assert capsys.readouterr().out == want


@pytest.mark.slow
@pytest.mark.parametrize("dtype", PRINT_DTYPES)
def test_tprint_tile(soc, dtype, capsys):
    cols = 32 // npd(dtype).itemsize
    rng = rng_for("tprint", dtype)
    x = ints(rng, dtype, (3, cols)) if dtype in ("i64", "u64") else random_values(rng, dtype, (3, cols), specials=0.3)
    part = (2, min(5, cols - 1))          # a partial region inside the tile (8-byte types: 4 cols)
    capsys.readouterr()
    run("TPRINT", [T(dtype, (3, cols))], [x], [part])
    assert capsys.readouterr().out == R.tprint_tile(x, part, dtype)
    run("TPRINT", [T(dtype, (3, cols))], [x], [(3, cols)])
    assert capsys.readouterr().out == R.tprint_tile(x, (3, cols), dtype)


# =============================================================================================
# seed level: load_insn
# =============================================================================================
def operand(x: np.ndarray, kind: str):
    return pypto.Tensor(x) if kind == "tensor" else x


def host(x) -> np.ndarray:
    return x.numpy() if isinstance(x, pypto.Tensor) else x


def execute(name: str, *ops, **params) -> None:
    ins = pypto.load_insn(name, **params)
    for i, o in enumerate(ops):
        ins.set_operand(i, o)
    ins.execute()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(5, 300), (1, 512), (3, 1)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_seed_sort(soc, dtype, shape, kind):
    rng = rng_for("seed-sort", dtype, shape, kind)
    x = with_ties(rng, random_values(rng, dtype, shape))
    v, i = operand(sentinel(shape, dtype), kind), operand(sentinel(shape, "u32"), kind)
    execute("sort", operand(x, kind), v, i)
    wv, wi = R.sort_rows(x)
    assert_bits_equal(host(i), wi, what="sort indices")
    assert_bits_equal(host(v), wv, what="sort values")


def test_seed_sort_errors(soc):
    x = np.zeros((2, 600), np.float32)
    with pytest.raises(errors.ShapeError, match="rows of 600"):
        execute("sort", x, np.zeros_like(x), np.zeros(x.shape, np.uint32))
    x = np.zeros((2, 8), np.float32)
    with pytest.raises(errors.DTypeError, match="uint32"):
        execute("sort", x, np.zeros_like(x), np.zeros(x.shape, np.int32))
    with pytest.raises(errors.DTypeError, match="sort does not accept int32"):
        execute("sort", x.astype(np.int32), x.astype(np.int32), np.zeros(x.shape, np.uint32))
    with pytest.raises(errors.ShapeError):
        execute("sort", x, np.zeros((2, 7), np.float32), np.zeros(x.shape, np.uint32))


@slow_if(lambda p: p["descending"] and p["dtype"] != "i32")
@pytest.mark.parametrize("descending", [0, 1])
@pytest.mark.parametrize("dtype", CI_DTYPES)
def test_seed_ci(soc, dtype, descending):
    info = np.iinfo(npd(dtype))
    n = 3 * (32768 // npd(dtype).itemsize) // 2 + 5          # one and a half library tiles
    for start in (0, int(info.max) - 100):
        dst = sentinel((n,), dtype)
        execute("ci", start, dst, descending=descending)
        want = R.tci(sentinel((1, n), dtype), start, n, descending)[0]
        assert_bits_equal(dst, want, what=f"ci start {start}")


@slow_if(lambda p: p["upper"] == (p["dtype"] == "f32"))
@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("dtype", ["f32", "i16"])
def test_seed_tri(soc, dtype, upper):
    for shape, d in (((40, 300), 0), ((7, 5), -2), ((20, 1030), 500)):
        dst = pypto.Tensor(sentinel(shape, dtype))
        execute("tri", d, dst, isUpper=upper)
        assert_bits_equal(dst.numpy(), R.ttri(sentinel(shape, dtype), shape, d, upper))


SEED_PART = [("partadd", "f32"), ("partmax", "f16"), ("partmin", "i32"), ("partmul", "i16")]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", SEED_PART, ids=[f"{n}-{t}" for n, t in SEED_PART])
def test_seed_part(soc, case, kind):
    name, dt = case
    pto_name = "T" + name.upper()
    shapes = [((40, 70), (40, 70)), ((40, 70), (17, 70)), ((5, 9), (23, 100))]
    if soc == "a5" and pto_name in ("TPARTMAX", "TPARTMIN"):
        shapes.append(((30, 12), (7, 100)))
    for sa, sb in shapes:
        rng = rng_for("seed-part", name, dt, sa, sb)
        a, b = random_values(rng, dt, sa), random_values(rng, dt, sb)
        dshape = (max(sa[0], sb[0]), max(sa[1], sb[1]))
        z = operand(sentinel(dshape, dt), kind)
        execute(name, operand(a, kind), operand(b, kind), z)
        A, B = np.zeros(dshape, a.dtype), np.zeros(dshape, b.dtype)
        A[:sa[0], :sa[1]], B[:sb[0], :sb[1]] = a, b
        want, loose = R.tpart(pto_name, soc, sentinel(dshape, dt), A, B, dshape, sa, sb)
        assert_bits_equal(host(z), want, loose=loose, what=f"{name} {sa} with {sb}")


def test_seed_part_errors(soc):
    a, b = np.zeros((8, 8), np.float32), np.zeros((4, 16), np.float32)
    with pytest.raises(errors.ShapeError, match="one source has dst's shape"):
        execute("partadd", a, b, np.zeros((8, 16), np.float32))
    with pytest.raises(errors.ShapeError, match="the larger shape"):
        execute("partadd", a, a, np.zeros((8, 16), np.float32))
    with pytest.raises(errors.DTypeMismatchError):
        execute("partadd", a, a.astype(np.float16), a)
