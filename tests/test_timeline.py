"""pypto.timeline: the per-SoC cost model and the per-pipe scheduler, against hand-computed
timelines (the documented formulas, evaluated here from the cost table's figures), invariants of
every layout, single- vs double-buffered kernels, the Chrome trace format, and the published A3
GEMM measurements (pto-isa's gemm_performance README) as a drift guard."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import pypto
from pypto import pto
from pypto.errors import DeadlockError, PipeHazardError, TimelineError
from pypto.isa.costs import COSTS, GRADES, cost_table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(params=["compiled", "eager"])
def mode(request):
    pypto.init(sim=pypto.SimOptions(mode=request.param))
    yield request.param
    pypto.finalize()


@pytest.fixture
def session():
    pypto.init()
    yield
    pypto.finalize()


@pypto.kernel
def chain(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (16, 64))
    pto.TLOAD(t, x)
    pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, 0)
    pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, 0)
    pto.TADDS(t, t, 1.0)
    pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, 0)
    pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, 0)
    pto.TSTORE(z, t)


def test_every_figure_has_a_grade_and_a_source():
    for soc, table in COSTS.items():
        for name, f in table.items():
            assert f.grade in GRADES and f.source, (soc, name)


def test_a_chain_matches_the_hand_computed_timeline(mode):
    """TLOAD -> TADDS -> TSTORE with their flags, priced by hand from the table (a2a3)."""
    p = {k: f.value for k, f in cost_table("a2a3").items()}
    x = pypto.Tensor(np.ones((16, 64), np.float32))
    z = pypto.zeros((16, 64), pypto.float32)
    tl = pypto.timeline(chain, x, z)
    np.testing.assert_array_equal(z.numpy(), 2.0)                 # it ran, too
    nbytes = 16 * 64 * 4
    load = p["dma_fixed"] + nbytes / p["l2_bpc"] + p["first_load"]   # the core's first load
    load_done = load + p["load_latency"] + p["hbm_latency"]        # read once: from HBM
    set1 = load_done + p["flag_cost"]                   # a set waits for its pipe's work to land
    adds = p["vec_issue"] + math.ceil(nbytes / 256) * p["vec_cpr"]
    adds_done = set1 + adds + 6                         # TADDS latency (isa/costs VECTOR_LATENCY)
    set2 = adds_done + p["flag_cost"]
    store = p["dma_fixed"] + nbytes / p["mte3_bpc"]
    end = set2 + store + p["store_latency"]
    t0 = p["block_start"]                               # the core starts the block this late
    assert tl.cycles == pytest.approx(t0 + end)
    sl = {s.name: s for s in tl.slices() if s.kind == "instr"}
    assert sl["TLOAD"].start == t0 and sl["TLOAD"].end == pytest.approx(t0 + load)
    assert sl["TADDS"].start == pytest.approx(t0 + set1)
    assert sl["TSTORE"].start == pytest.approx(t0 + set2)
    assert tl.seconds == pytest.approx((t0 + end) / (p["clock_mhz"] * 1e6))
    b = tl.busy()                                       # a DMA is busy until its data is back
    assert b["MTE2"] == pytest.approx((load_done - 0) / (t0 + end))
    assert b["MTE3"] == pytest.approx((store + p["store_latency"]) / (t0 + end))
    assert b["V"] == pytest.approx(adds / (t0 + end))
    statements = 7                                      # 3 instructions, 2 sets, 2 waits
    assert b["S"] == pytest.approx((t0 + statements * p["scalar_issue"]) / (t0 + end))


def test_busy_counts_overlapping_transfer_tails_once():
    from pypto.timing.schedule import Slice, busy_cycles
    two = [Slice("MTE2", 0, 10, "TLOAD", "instr", 0, tail=5),
           Slice("MTE2", 10, 20, "TLOAD", "instr", 0, tail=5),     # starts inside the first's tail
           Slice("MTE2", 40, 41, "TLOAD", "instr", 0, tail=0)]
    assert busy_cycles(two) == 20 + 5 + 1


def _single(x, z, tmp):
    """Load, exp, store per step, one buffer: every pipe waits for the others."""
    t = pto.Tile(pto.Vec, pto.float32, (32, 256))
    for i in pto.range(x.shape[0] // 32):
        pto.TLOAD(t, x[i * 32:i * 32 + 32, :])
        pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, 0)
        pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, 0)
        pto.TEXP(t, t)
        pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, 0)
        pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, 0)
        pto.TSTORE(z[i * 32:i * 32 + 32, :], t)
        pto.set_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, 0)
        pto.wait_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, 0)


def _double(x, z, tmp):
    """The same with two buffers: the load of step i + 1 runs under the exp of step i."""
    ts = [pto.Tile(pto.Vec, pto.float32, (32, 256)) for _ in range(2)]
    for b in range(2):
        pto.set_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, b)
    for i in pto.range(x.shape[0] // 64):
        for b in range(2):
            r = i * 64 + b * 32
            pto.wait_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, b)
            pto.TLOAD(ts[b], x[r:r + 32, :])
            pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, b)
            pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, b)
            pto.TEXP(ts[b], ts[b])
            pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, b)
            pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, b)
            pto.TSTORE(z[r:r + 32, :], ts[b])
            pto.set_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, b)
    for b in range(2):
        pto.wait_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, b)


def _overlap(tl, a: str, b: str) -> float:
    """Cycles during which pipe a and pipe b are both busy (core 0)."""
    sa = [(s.start, s.end) for s in tl.slices() if s.pipe == a and s.kind == "instr"]
    sb = [(s.start, s.end) for s in tl.slices() if s.pipe == b and s.kind == "instr"]
    return sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in sa for s2, e2 in sb)


def test_double_buffering_overlaps_what_single_buffering_serialises(mode):
    xh = np.random.default_rng(0).standard_normal((512, 256)).astype(np.float32)
    runs = {}
    for name, body in (("single", _single), ("double", _double)):
        x, z = pypto.Tensor(xh), pypto.zeros(xh.shape, pypto.float32)
        runs[name] = pypto.timeline(pypto.kernel(body), x, z, 0)
        np.testing.assert_allclose(z.numpy(), np.exp(xh), rtol=1e-6)
    single, double = runs["single"], runs["double"]
    for a, b in (("MTE2", "V"), ("V", "MTE3"), ("MTE2", "MTE3")):
        assert _overlap(single, a, b) == 0
    assert _overlap(double, "MTE2", "V") > 0 and _overlap(double, "MTE2", "MTE3") > 0
    assert double.cycles < 0.8 * single.cycles
    # the same work is priced the same: only where it sits changes
    assert double.by_instruction()["TEXP"] * double.cycles == \
        pytest.approx(single.by_instruction()["TEXP"] * single.cycles)


def _invariants(tl):
    for run in tl.runs:
        for pipe in {s.pipe for s in run.slices}:
            sl = sorted((s for s in run.slices if s.pipe == pipe), key=lambda s: s.start)
            for a, b in zip(sl, sl[1:]):
                assert a.end <= b.start + 1e-9, (pipe, a, b)         # one thing at a time
            assert all(s.end >= s.start for s in sl)
        sets = {s.flow: s for s in run.slices if s.kind == "set"}
        for w in (s for s in run.slices if s.kind == "wait"):
            assert w.end >= sets[w.flow].end - 1e-9                 # released after its set
    for v in tl.busy().values():
        assert 0.0 <= v <= 1.0


def test_invariants_of_a_multi_block_gemm(mode):
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from kernel_gemm import gemm
    rng = np.random.default_rng(1)
    ah = rng.standard_normal((200, 300)).astype(np.float16)
    bh = rng.standard_normal((300, 150)).astype(np.float16)
    c = pypto.zeros((200, 150), pypto.float32)
    tl = pypto.timeline(gemm, pypto.Tensor(ah), pypto.Tensor(bh), c, grid=4)
    _invariants(tl)
    assert len(tl.runs) == 4 and all(r.kind == "AIC" for r in tl.runs)
    assert set(tl.by_instruction()) >= {"TLOAD", "TEXTRACT", "TMATMUL", "TMATMUL_ACC", "TSTORE"}


def test_dynamic_valid_regions_are_priced_at_their_runtime_size(mode):
    """A tile whose valid rows are a kernel argument: each launch's TEXP costs what its rows
    need (one issue + 2 cycles per 256-byte repeat at exp's rate), not the tile's capacity."""
    @pypto.kernel
    def k(x, z, n):
        t = pto.Tile(pto.Vec, pto.float32, (64, 64), valid=pto.DYNAMIC)
        t.set_valid(n, 64)
        pto.TLOAD(t, x[0:n, :])
        pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, 0)
        pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, 0)
        pto.TEXP(t, t)
        pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, 0)
        pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, 0)
        pto.TSTORE(z[0:n, :], t)

    p = {k: f.value for k, f in cost_table("a2a3").items()}
    x = pypto.Tensor(np.zeros((64, 64), np.float32))
    spans = {}
    for n in (8, 64):
        z = pypto.zeros((64, 64), pypto.float32)
        tl = pypto.timeline(k, x, z, n)
        np.testing.assert_array_equal(z.numpy()[:n], 1.0)
        exp = next(s for s in tl.slices() if s.name == "TEXP")
        spans[n] = (exp.end - exp.start, tl.cycles)
        repeats = n * 64 * 4 // 256
        assert exp.end - exp.start == pytest.approx(p["vec_issue"] + repeats * 256 / 4 / p["vec_slow_elems"])
    assert spans[8][1] < spans[64][1]


def test_more_bytes_cost_more_cycles(session):
    def k(x, z):
        t = pto.Tile(pto.Vec, pto.float32, (x.shape[0], 64))
        pto.TLOAD(t, x)
        pto.TSTORE(z, t)
    small, big = (pypto.timeline(pypto.kernel(k), pypto.Tensor(np.ones((r, 64), np.float32)),
                                 pypto.zeros((r, 64), pypto.float32)).cycles for r in (8, 64))
    assert big > small


def test_blocks_beyond_the_cores_queue_on_the_earliest_free_core(session):
    @pypto.kernel
    def k(x, z):
        t = pto.Tile(pto.Vec, pto.float32, (1, 64))
        pto.TLOAD(t, x[pto.block_idx(), :])
        pto.TSTORE(z[pto.block_idx(), :], t)
    cores = pypto.runtime.current().soc.aiv_cores
    n = cores + 3
    x = pypto.Tensor(np.ones((n, 64), np.float32))
    tl = pypto.timeline(k, x, pypto.zeros((n, 64), pypto.float32), grid=n)
    assert len(tl.runs) == cores
    assert sorted(b for r in tl.runs for b in r.blocks) == list(range(n))
    assert max(len(r.blocks) for r in tl.runs) == 2
    p = {k: f.value for k, f in cost_table("a2a3").items()}
    firsts = [min(s.start for s in r.slices if s.kind == "start") for r in tl.runs]
    assert firsts == [i * p["block_dispatch"] for i in range(cores)]      # handed out in turn
    single = next(r for r in tl.runs if len(r.blocks) == 1)
    length = single.end - single.slices[0].end              # one block, after its set-up
    for r in (r for r in tl.runs if len(r.blocks) == 2):    # the second block after the first,
        second = [s for s in r.slices if s.kind == "start"][1]  # without the cold first load
        assert second.start == pytest.approx(r.end - (length - p["first_load"]) - p["block_start"])
        assert second.start >= max(s.end for s in r.slices if s.start < second.start)


def test_a_launch_cannot_beat_hbms_bandwidth(session):
    """Every vector core streams its own 2 MiB once: each byte comes from HBM, and at L2 rates
    the cores would ask more than HBM gives, so the launch lasts about as long as HBM needs."""
    @pypto.kernel
    def k(x):
        t = pto.Tile(pto.Vec, pto.float32, (8, 1024))
        for i in pto.range(64):
            r = (pto.block_idx() * 64 + i) * 8
            pto.TLOAD(t, x[r:r + 8, :])
    cores = pypto.runtime.current().soc
    p = {k: f.value for k, f in cost_table("a2a3").items()}
    x = pypto.Tensor(np.ones((cores.aiv_cores * 64 * 8, 1024), np.float32))
    tl = pypto.timeline(k, x, grid=cores.aiv_cores)
    need = x.nbytes / (p["hbm_bpc"] * cores.aic_cores)
    assert need <= tl.cycles * 1.02 and tl.cycles <= need * 1.15
    assert tl.reprice({"hbm_bpc": 1e6}).cycles < need / 2     # the L2 rates alone: much faster


def test_tensors_overflowing_l2_are_read_from_hbm_again(session):
    """Re-reads hit L2 while the launch's tensors fit it; past its size, that share of them
    comes from HBM again (more latency per load)."""
    @pypto.kernel
    def k(x):
        t = pto.Tile(pto.Vec, pto.float32, (8, 64))
        for _ in pto.range(8):
            pto.TLOAD(t, x[0:8, :])
            pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, 0)       # each load waits for the last one
            pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, 0)
    x = pypto.Tensor(np.ones((8, 64), np.float32))
    tl = pypto.timeline(k, x)
    p = {k: f.value for k, f in cost_table("a2a3").items()}
    small = tl.reprice({"l2_bytes": 2 * x.nbytes})
    half = tl.reprice({"l2_bytes": x.nbytes / 2})            # half of every re-read misses
    loads = 8
    first = 1 / loads                                        # the share read from HBM when it fits
    extra = loads * p["hbm_latency"] * ((first + (1 - first) * 0.5) - first)
    assert small.cycles == pytest.approx(tl.cycles)
    assert half.cycles == pytest.approx(small.cycles + extra)


def test_a_missing_flag_is_the_checkers_error_not_a_silent_order(session):
    @pypto.kernel
    def racy(x, z):
        t = pto.Tile(pto.Vec, pto.float32, (16, 64))
        pto.TLOAD(t, x)
        pto.TADDS(t, t, 1.0)                         # no MTE2 -> V flag
        pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, 0)
        pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, 0)
        pto.TSTORE(z, t)
    x, z = pypto.Tensor(np.ones((16, 64), np.float32)), pypto.zeros((16, 64), pypto.float32)
    with pytest.raises(PipeHazardError):
        pypto.timeline(racy, x, z)


def test_a_wait_no_set_releases_is_a_deadlock_report(session):
    @pypto.kernel(checks="off")
    def stuck(x, z):
        t = pto.Tile(pto.Vec, pto.float32, (16, 64))
        pto.TLOAD(t, x)
        pto.wait_flag(pto.PIPE_MTE3, pto.PIPE_V, 1)  # nothing ever sets MTE3 -> V #1
        pto.TADDS(t, t, 1.0)
        pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, 0)
        pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, 0)
        pto.TSTORE(z, t)
    x, z = pypto.Tensor(np.ones((16, 64), np.float32)), pypto.zeros((16, 64), pypto.float32)
    with pytest.raises(DeadlockError, match="wait_flag MTE3->V #1"):
        pypto.timeline(stuck, x, z)


def test_both_modes_record_the_same_stream():
    out = {}
    for m in ("compiled", "eager"):
        pypto.init(sim=pypto.SimOptions(mode=m))
        try:
            x = pypto.Tensor(np.ones((16, 64), np.float32))
            tl = pypto.timeline(chain, x, pypto.zeros((16, 64), pypto.float32))
            out[m] = [(s.pipe, s.name, s.start, s.end) for s in tl.slices()]
        finally:
            pypto.finalize()
    assert out["compiled"] == out["eager"]


def test_timing_off_records_nothing(session):
    x, z = pypto.Tensor(np.ones((16, 64), np.float32)), pypto.zeros((16, 64), pypto.float32)
    chain(x, z)
    be = pypto.runtime.current().backend
    assert be.last_events is None and be.options.events == 0
    pypto.timeline(chain, x, z)
    assert be.options.events == 0                    # restored after the timeline
    assert len(be.last_events) > 0
    chain(x, z)                                      # the plain kernel again: nothing recorded
    prog = be.compile(chain.traced(x, z))
    assert "_record(" not in prog.artifact.gen.source


def test_chrome_trace_opens_as_perfetto_expects(session, tmp_path):
    xh = np.ones((256, 256), np.float32)
    tl = pypto.timeline(pypto.kernel(_double), pypto.Tensor(xh), pypto.zeros(xh.shape, pypto.float32), 0)
    path = tl.save(str(tmp_path / "k.json"))
    doc = json.load(open(path))
    ev = doc["traceEvents"]
    assert doc["otherData"]["soc"] == "a2a3" and doc["displayTimeUnit"] == "ns"
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {"SCALAR", "MTE2", "MTE1", "CUBE", "FIXP", "VECTOR", "MTE3"}
    assert any(e["ph"] == "M" and e["name"] == "process_name" and e["args"]["name"].startswith("AIV 0")
               for e in ev)
    xs = [e for e in ev if e["ph"] == "X"]
    assert xs and all(e["dur"] > 0 and e["ts"] >= 0 for e in xs)    # every slice is at least a cycle
    by_track: dict = {}
    for e in xs:
        by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_track.values():    # viewers nest a slice whose end passes the next start by 1 ulp
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    starts = {e["id"] for e in ev if e["ph"] == "s"}
    ends = {e["id"] for e in ev if e["ph"] == "f"}
    assert starts and starts == ends
    assert any(e["cat"] == "sync" and e["dur"] > 0 for e in xs)        # a stall is visible


def test_params_override_and_unknown_names_are_errors(session):
    x, z = pypto.Tensor(np.ones((16, 64), np.float32)), pypto.zeros((16, 64), pypto.float32)
    base = pypto.timeline(chain, x, z)
    slower = base.reprice({"l2_bpc": 16})
    assert slower.cycles > base.cycles
    with pytest.raises(TimelineError, match="hbm_bpcx"):
        base.reprice({"hbm_bpcx": 1})


def test_explain_maps_every_tile(session):
    x, z = pypto.Tensor(np.ones((16, 64), np.float32)), pypto.zeros((16, 64), pypto.float32)
    text = chain.explain(x, z)
    assert "memory map:" in text and "Vec (UB, 192 KiB): 4096 B in 1 tile(s)" in text
    assert "[0x00000, 0x01000)" in text


def test_plot_writes_a_png(session, tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is the optional plotting extra")
    x, z = pypto.Tensor(np.ones((16, 64), np.float32)), pypto.zeros((16, 64), pypto.float32)
    path = pypto.timeline(chain, x, z).plot(str(tmp_path / "k.png"))
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_pypto_trace_writes_one_trace_per_launch(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import numpy as np, pypto\n"
                      "pypto.init()\n"
                      "a = pypto.load_insn('add')\n"
                      "x = np.ones((4, 64), np.float32)\n"
                      "for i, t in enumerate((x, x, np.zeros_like(x))):\n"
                      "    a.set_operand(i, t)\n"
                      "a.execute()\n")
    out = subprocess.run([sys.executable, "-m", "pypto", "trace", "-o", str(tmp_path / "t"), str(script)],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    files = os.listdir(tmp_path / "t")
    assert len(files) == 1 and files[0].endswith(".json")
    assert "timeline of" in out.stderr


# -- calibration: the published A3 tables (benchmarks/calibration.py prints all of them) ---------

# (case, time error bound, ratio error bound in points): what the model achieves today (GEMM:
# -2.2 % / 3.3, +1.6 % / 2.1, +3.2 % / 2.3, -0.2 % / 3.6 points; top-k: +1.6 % / 2.9, -0.6 % / 1.5,
# -0.2 % / 0.8, -1.1 % / 1.7; A5 MXFP8: -4.0 % / 3.0, +4.3 % / 3.5, +3.6 % / 2.3, +0.6 % / 1.1),
# with a little room, so a change that moves it further from the chip fails here. The goal is
# 10 % and 5 points.
DRIFT = [("gemm", 1536, 0.03, 4.0), ("gemm", 3072, 0.025, 3.0), ("topk", (2304, "float32"), 0.02, 3.5),
         pytest.param("gemm", 6144, 0.04, 3.0, marks=pytest.mark.slow),
         pytest.param("gemm", 7680, 0.01, 4.0, marks=pytest.mark.slow),
         pytest.param("topk", (3456, "float32"), 0.01, 2.0, marks=pytest.mark.slow),
         pytest.param("topk", (4800, "float32"), 0.01, 1.5, marks=pytest.mark.slow),
         pytest.param("topk", (4800, "float16"), 0.015, 2.5, marks=pytest.mark.slow),
         ("mxfp8", 2048, 0.05, 3.5),
         pytest.param("mxfp8", 4096, 0.05, 4.0, marks=pytest.mark.slow),
         pytest.param("mxfp8", 6144, 0.045, 3.0, marks=pytest.mark.slow),
         pytest.param("mxfp8", 8192, 0.01, 2.0, marks=pytest.mark.slow)]


@pytest.mark.parametrize("kind,case,time_err,ratio_pts", DRIFT)
def test_the_model_stays_near_the_published_a3_measurements(kind, case, time_err, ratio_pts):
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import calibration
    published, _, run = calibration.CASES[kind]
    if kind == "mxfp8":
        ms, ratios, _ = run(case)                 # an a5 session of its own
    else:
        pypto.init(soc="a2a3")
        try:
            ms, ratios, _ = run(case)             # also checks the kernel's result against numpy
        finally:
            pypto.finalize()
    pub = published[case]
    assert abs(ms / pub[0] - 1) <= time_err
    for got, want in zip(ratios, pub[1:]):
        assert abs(got - want) * 100 <= ratio_pts


def test_an_auto_mode_kernel_has_the_same_timeline_in_eager_mode():
    """Auto mode's flags come from tracing; an eager session times the compiled stream."""
    @pypto.kernel
    def auto(x, z):
        t = pto.Tile(pto.Vec, pto.float32, (16, 64))
        pto.TLOAD(t, x)
        pto.TADDS(t, t, 1.0)
        pto.TSTORE(z, t)
    out = {}
    for m in ("compiled", "eager"):
        pypto.init(sim=pypto.SimOptions(mode=m))
        try:
            x = pypto.Tensor(np.ones((16, 64), np.float32))
            z = pypto.zeros((16, 64), pypto.float32)
            tl = pypto.timeline(auto, x, z)
            np.testing.assert_array_equal(z.numpy(), 2.0)
            assert any(s.kind == "set" for s in tl.slices())
            out[m] = tl.cycles
        finally:
            pypto.finalize()
    assert out["compiled"] == out["eager"]


def test_save_can_pick_cores(session, tmp_path):
    @pypto.kernel
    def k(x, z):
        t = pto.Tile(pto.Vec, pto.float32, (1, 64))
        pto.TLOAD(t, x[pto.block_idx(), :])
        pto.TSTORE(z[pto.block_idx(), :], t)
    x = pypto.Tensor(np.ones((3, 64), np.float32))
    tl = pypto.timeline(k, x, pypto.zeros((3, 64), pypto.float32), grid=3)
    doc = json.load(open(tl.save(str(tmp_path / "one.json"), cores=[1])))
    procs = [e for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
    assert [p["args"]["name"] for p in procs] == ["AIV 1 (block 1)"] and doc["otherData"]["cores"] == [1]
    assert len([e for e in tl.trace()["traceEvents"] if e.get("name") == "process_name"]) == 3
