"""Many devices (issue 14): the communication instructions on one rank in this process, and on
2-8 ranks started by pypto.launch_ranks / mpiexec (tests/comm_cases.py holds the kernels).

Expected values come from numpy written from comm-semantics.md (the STs' data, the fixed TREDUCE
order), never from pypto. Multi-rank tests need mpi4py and an MPI launcher (`pip install
'pypto[mpi]'`, which `make test` installs) and are skipped with that reason without them.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import pypto
from pypto import errors as E
from pypto import pto

import comm_cases as C

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ("compiled", "eager")


def _mpi_missing() -> str | None:
    try:
        import mpi4py  # noqa: F401
        from pypto.ranks import find_mpiexec
        find_mpiexec()
    except (ImportError, E.PtoError) as e:
        return f"needs mpi4py and mpiexec (pip install 'pypto[mpi]'): {e}"
    return None


needs_mpi = pytest.mark.skipif(_mpi_missing() is not None, reason=str(_mpi_missing()))


@pytest.fixture
def sim():
    pypto.finalize()
    pypto.init(backend="sim")
    yield
    pypto.finalize()


# -- one rank, in this process --------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_one_rank_data_movers_match_numpy(sim, mode):
    """TPUT/TGET to this rank itself, whole and chunked (static, dynamic ragged, ping-pong)."""
    for shape, dt, tr, tc, kw in [((128, 64), "f32", 16, 64, {}), ((2047, 32), "f32", 128, 32, {"dynamic": True}),
                                  ((64, 128), "f16", 16, 32, {"pong": True}), ((2, 3, 1, 8, 32), "i32", 8, 32, {})]:
        for get in (False, True):
            x = C.tensor(C.pattern(shape, dt, 3))
            y = C.tensor(np.zeros(shape, C.NP[dt]))
            C.put_ring(mode, tr, tc, get=get, **kw)(x, y)
            assert np.array_equal(y.numpy(), C.pattern(shape, dt, 3)), (shape, dt, kw, get)


@pytest.mark.parametrize("mode", MODES)
def test_one_rank_collectives_and_signals(sim, mode):
    x = C.pattern((32, 64), "f32", 1)
    mine, out = C.tensor(x), C.tensor(np.zeros((32, 64), np.float32))
    C.collective(mode, "TREDUCE", 16, 64, 0, "Sum")(mine, out)
    assert np.array_equal(out.numpy(), x)
    dst = C.tensor(np.full((40, 64), -1, np.float32))
    C.collective(mode, "TGATHER_COMM", 16, 64, 0)(mine, dst)
    want = np.full((40, 64), -1, np.float32)
    want[:32] = x
    assert np.array_equal(dst.numpy(), want)
    c = pypto.zeros((1,), pypto.int32)
    C.counter(mode, 7)(c)
    assert int(c.numpy()[0]) == 7
    C.wait_for(mode, 7, "EQ")(c)                    # satisfied: returns


def test_ttest_gives_every_comparison_in_eager_mode(sim):
    seen = []

    @pypto.kernel(mode="eager")
    def probe(sig):
        for cmp in ("EQ", "NE", "GT", "GE", "LT", "LE"):
            for v in (4, 5, 6):
                seen.append((cmp, v, bool(pto.TTEST(sig, v, cmp=cmp))))

    sig = pypto.Tensor(np.array([5], np.int32))
    probe(sig)
    ops = {"EQ": np.equal, "NE": np.not_equal, "GT": np.greater, "GE": np.greater_equal,
           "LT": np.less, "LE": np.less_equal}
    assert seen == [(c, v, bool(ops[c](5, v))) for c in ops for v in (4, 5, 6)]


CMPS = {"EQ": np.equal, "NE": np.not_equal, "GT": np.greater, "GE": np.greater_equal,
        "LT": np.less, "LE": np.less_equal}


@pytest.mark.parametrize("mode", MODES)
def test_ttest_steers_a_pto_when_branch_in_both_modes(sim, mode):
    """TTEST's 1 or 0 as a runtime condition: row k of the output is written only where case k's
    comparison holds (compiled mode: a Returned value and a branch in the IR)."""
    cases = [(c, v) for c in CMPS for v in (4, 5, 6)]

    @pypto.kernel(mode=mode)
    def probe(sig, ones, out):
        t = pto.Tile(pto.Vec, pto.int32, (1, 8))
        pto.TLOAD(t, ones)
        for k, (cmp, v) in enumerate(cases):
            for _ in pto.when(pto.TTEST(sig, v, cmp=cmp)):
                pto.TSTORE(out[k:k + 1, 0:8], t)

    out = pypto.zeros((len(cases), 8), pypto.int32)
    probe(pypto.Tensor(np.array([5], np.int32)), pypto.Tensor(np.ones((1, 8), np.int32)), out)
    want = np.array([[int(CMPS[c](5, v))] * 8 for c, v in cases], np.int32)
    assert np.array_equal(out.numpy(), want)
    if mode == "compiled":
        text = probe.ir(pypto.Tensor(np.array([5], np.int32)), pypto.Tensor(np.ones((1, 8), np.int32)), out)
        assert "%tt0 = pto.ttest" in str(text) and "if %tt0 {" in str(text)


@pytest.mark.parametrize("mode", MODES)
def test_a_notify_right_after_a_put_is_reported(sim, mode):
    """R2: no pipe_barrier(PIPE_ALL) between TPUT and TNOTIFY; the fenced kernel runs."""
    def body(x, y, sig, fence):
        t = pto.Tile(pto.Vec, pto.float32, (8, 64))
        pto.TPUT(pto.remote(y, 0), x, t)
        if fence:
            pto.pipe_barrier(pto.PIPE_ALL)
        pto.TNOTIFY(pto.remote(sig, 0), 1, notifyOp="Set")

    x, y, sig = C.tensor(np.ones((8, 64), np.float32)), pypto.zeros((8, 64), pypto.float32), pypto.zeros((1,), pypto.int32)
    bad = pypto.kernel(mode=mode)(lambda x, y, sig: body(x, y, sig, False))
    with pytest.raises(E.CommOrderError, match="pipe_barrier") as ei:
        bad(x, y, sig)
    assert "TPUT" in str(ei.value)
    assert int(sig.numpy()[0]) == 0              # the signal never went out
    if mode == "compiled":
        assert not y.numpy().any()               # checked before the launch: nothing ran
    good = pypto.kernel(mode=mode)(lambda x, y, sig: body(x, y, sig, True))
    good(x, y, sig)
    assert int(sig.numpy()[0]) == 1 and y.numpy().all()


@pytest.mark.parametrize("mode", MODES)
def test_a_wait_nothing_can_satisfy_is_a_deadlock_report(sim, mode):
    t0 = time.monotonic()
    with pytest.raises(E.CommDeadlockError, match="rank 0"):
        C.wait_for(mode, 1, "EQ")(pypto.zeros((1,), pypto.int32))
    assert time.monotonic() - t0 < 30


def test_misuse_is_a_clear_error(sim):
    sig, x = pypto.zeros((1,), pypto.int32), pypto.zeros((64, 64), pypto.float32)

    @pypto.kernel
    def remote_wait(s):
        pto.TWAIT(pto.remote(s, 0), 1, cmp="EQ")
    with pytest.raises(E.CommError, match="R5"):
        remote_wait(sig)

    @pypto.kernel
    def no_group(a, b):
        pto.TBROADCAST(a, b, pto.Tile(pto.Vec, pto.float32, (8, 64)))
    with pytest.raises(E.OperandError, match="ParallelGroup"):
        no_group(x, x)

    with pytest.raises(E.CommError, match="rank 3 does not exist"):
        _put_to(3)(x, pypto.zeros((64, 64), pypto.float32))
    with pytest.raises(E.CommError, match="DYNAMIC"):
        C.put_ring("eager", 24, 64)(x, pypto.zeros((64, 64), pypto.float32))

    @pypto.kernel
    def wrong_tile(a, b):
        pto.TPUT(pto.remote(b, 0), a, pto.Tile(pto.Vec, pto.float16, (8, 64)))
    with pytest.raises(E.DTypeError, match="element type"):
        wrong_tile(x, x)


def _put_to(peer):
    @pypto.kernel
    def put(a, b):
        pto.TPUT(pto.remote(b, peer), a, pto.Tile(pto.Vec, pto.float32, (64, 64)))
    return put


def test_devices_without_mpi_ranks_says_how_to_start_them():
    pypto.finalize()
    with pytest.raises(E.CommError, match="mpiexec -n 4"):
        pypto.init(backend="sim", devices=4)
    assert not pypto.is_initialized()
    assert pypto.get_device_count() == 1


def test_missing_mpi4py_says_how_to_install_it(monkeypatch):
    from pypto.backends.sim import world
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(E.MpiUnavailableError, match=r"pypto\[mpi\]"):
        world.import_mpi()


# -- several ranks ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def warm():
    """Every multi-rank case and example once here, on a world of one rank: a test of its own,
    and it leaves the kernels in the on-disk cache, so the ranks load them instead of each
    compiling them at once (8 processes compiling on 2 cores was most of a cold run)."""
    import runpy
    pypto.finalize()
    pypto.init(backend="sim")
    ran = {}
    try:
        for mode in MODES:
            ran[mode] = C.run(mode)
        for script in ("allreduce.py", "ring_allgather.py"):
            ran[script] = runpy.run_path(os.path.join(ROOT, "examples", script), run_name="warm")["main"]()
    finally:
        pypto.finalize()
    return ran


def test_every_case_and_example_on_one_rank(warm):
    """Each case checks itself against numpy (a failure raises in the fixture); every one ran."""
    assert warm == {"compiled": list(C.CASES), "eager": list(C.CASES), "allreduce.py": True,
                    "ring_allgather.py": True}
    assert len(C.CASES) == 7


@needs_mpi
@pytest.mark.parametrize("mode", MODES)
def test_every_case_at_2_ranks(warm, mode):
    assert pypto.launch_ranks(2, C.run, mode) == [list(C.CASES)] * 2


@needs_mpi
@pytest.mark.slow
def test_every_case_at_4_ranks(warm):
    assert pypto.launch_ranks(4, C.run, "compiled") == [list(C.CASES)] * 4


@needs_mpi
@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_every_case_at_8_ranks(warm, mode):
    assert pypto.launch_ranks(8, C.run, mode) == [list(C.CASES)] * 8


@needs_mpi
@pytest.mark.parametrize("script, word", [("allreduce.py", "bit-exact"), ("ring_allgather.py", "matches numpy")])
def test_examples_under_mpiexec_with_8_ranks(warm, script, word):
    from pypto.ranks import mpiexec_command
    out = subprocess.run(mpiexec_command(8) + [sys.executable, os.path.join(ROOT, "examples", script)],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count(word) == 8, out.stdout


@needs_mpi
def test_one_failing_rank_ends_the_job_with_its_error():
    t0 = time.monotonic()
    with pytest.raises(E.RankFailedError, match="rank 2 of 4 raised ValueError") as ei:
        pypto.launch_ranks(4, C.fail_on, 2)
    assert "planted failure on rank 2" in str(ei.value)
    assert time.monotonic() - t0 < 120


@needs_mpi
def test_a_deadlock_across_ranks_names_the_ranks():
    with pytest.raises(E.RankFailedError, match="CommDeadlockError") as ei:
        pypto.launch_ranks(2, C.deadlock, "compiled")
    text = str(ei.value)
    assert "rank 0 waits in TWAIT" in text and "EQ 5" in text and "holds [3]" in text
    assert "rank 1 is finished" in text or "rank 1 is in pypto.barrier()" in text


@needs_mpi
def test_a_collective_on_a_rank_that_is_not_its_root_is_refused():
    with pytest.raises(E.RankFailedError, match="root is rank 0"):
        pypto.launch_ranks(2, C.wrong_root, "eager")


# -- C++ emission ------------------------------------------------------------------------------------
def test_emitted_cpp_names_peers_through_the_world(sim):
    x, y, sig = pypto.zeros((8, 64), pypto.float32), pypto.zeros((8, 64), pypto.float32), pypto.zeros((1,), pypto.int32)
    ring = C.notify_ring("compiled", 3)
    ir = str(ring.ir(x, y, sig))
    assert "@rank(floormod" in ir and "pto.tnotify" in ir          # a peer's view, in the IR text
    src = ring.cpp(x, y, sig)
    assert "__gm__ PyptoWorld *pypto_world" in src
    assert "pypto_remote(pypto_world, y, pypto_floormod((pypto_world->rank + 1), pypto_world->ranks))" in src
    assert "comm::TPUT(" in src and "comm::NotifyOp::Set" in src and "comm::WaitCmp::GE" in src
    red = C.collective("compiled", "TREDUCE", 8, 64, 0, "Max").cpp(x, y)
    assert "comm::ParallelGroup<" in red and "comm::ReduceOp::Max" in red
    assert "pypto_remote(pypto_world, mine, pypto_r)" in red
    plain = pypto.kernel(lambda a, b: pto.TADD(pto.Tile(pto.Vec, pto.float32, (8, 64)),
                                               pto.Tile(pto.Vec, pto.float32, (8, 64)),
                                               pto.Tile(pto.Vec, pto.float32, (8, 64)))).cpp(x, y)
    assert "PyptoWorld *pypto_world" not in plain          # only kernels that talk to peers take it


def _cpusim_missing() -> str | None:
    from pypto import backends
    return None if backends.can_build("cpusim") else \
        "needs g++ and pto-isa's headers (set PTO_ISA_ROOT to a pto-isa checkout)"


@pytest.mark.skipif(_cpusim_missing() is not None, reason=str(_cpusim_missing()))
def test_emitted_comm_kernels_compile_against_pto_isa(sim):
    """Every comm kernel's C++ builds against pto-isa's CPU backend, except the ping-pong TPUT,
    which that backend cannot compile (comm-semantics 0.2)."""
    from pypto import backends
    x, y = pypto.zeros((32, 64), pypto.float32), pypto.zeros((32, 64), pypto.float32)
    big, sig = pypto.zeros((64, 64), pypto.float32), pypto.zeros((1,), pypto.int32)
    kernels = [(C.notify_ring("compiled", 2), (x, y, sig)), (C.put_ring("compiled", 16, 64), (x, y)),
               (C.put_ring("compiled", 16, 64, get=True, pong=True), (x, y)),
               (C.atomic_put("compiled", 16, 64), (x, y)), (C.counter("compiled", 3), (sig,)),
               (C.collective("compiled", "TREDUCE", 16, 64, 0, "Min", pong=True), (x, y)),
               (C.collective("compiled", "TGATHER_COMM", 16, 64, 0), (x, big)),
               (C.collective("compiled", "TSCATTER_COMM", 16, 64, 0), (x, big)),
               (C.collective("compiled", "TBROADCAST", 16, 64, 0), (x, y))]
    for i, (k, args) in enumerate(kernels):
        backends.build_cpp(k.cpp(*args), "cpusim", "a2a3", "vec", f"comm_{i}")
    with pytest.raises(E.NpuCompileError, match="TPUT_IMPL"):
        backends.build_cpp(C.put_ring("compiled", 16, 64, pong=True).cpp(x, y), "cpusim", "a2a3", "vec", "comm_pong")


def _handshake():
    """Block b sets flag 1-b of this rank, then waits for its own: the blocks must run at once."""
    @pypto.kernel
    def shake(flags):
        b = pto.block_idx()
        mine = pto.GlobalTensor(flags, (1, 1, 1, 1, 1), (1, 1, 1, 1, 1), b)
        other = pto.GlobalTensor(flags, (1, 1, 1, 1, 1), (1, 1, 1, 1, 1), 1 - b)
        pto.TNOTIFY(pto.remote(other, pto.rank_id()), 1, notifyOp="Set")
        pto.TWAIT(mine, 1, cmp="EQ")
    return shake


def test_blocks_of_one_rank_signal_each_other():
    pypto.finalize()
    pypto.init(backend="sim", sim=pypto.SimOptions(threads=2))
    try:
        flags = pypto.zeros((2,), pypto.int32)
        _handshake()[2](flags)
        assert flags.numpy().tolist() == [1, 1]
    finally:
        pypto.finalize()


def test_blocks_waiting_for_unstarted_blocks_are_reported_not_hung():
    pypto.finalize()
    pypto.init(backend="sim", sim=pypto.SimOptions(threads=1))
    try:
        with pytest.raises(E.CommDeadlockError, match="threads"):
            _handshake()[2](pypto.zeros((2,), pypto.int32))
    finally:
        pypto.finalize()


@pytest.mark.parametrize("mode", MODES)
def test_tgather_with_a_group_is_the_collective(sim, mode):
    """pto.TGATHER(group, ...) is pto::comm::TGATHER, as in PTO C++ (the vector TGATHER otherwise)."""
    x = C.pattern((8, 64), "f32", 4)

    @pypto.kernel(mode=mode)
    def gather(m, o):
        pto.TGATHER(pto.ParallelGroup(m, pto.rank_num(), 0), o, pto.Tile(pto.Vec, pto.float32, (8, 64)))
    out = pypto.zeros((8, 64), pypto.float32)
    gather(C.tensor(x), out)
    assert np.array_equal(out.numpy(), x)
    assert "pto.tgather_comm" in str(gather.ir(C.tensor(x), out))


@needs_mpi
def test_a_counter_that_skips_the_awaited_value_is_explained():
    """R4: TWAIT EQ on a counter fed by AtomicAdd can miss its value; the report says so."""
    with pytest.raises(E.RankFailedError, match="went past the value") as ei:
        pypto.launch_ranks(2, C.skipped_value, "compiled")
    assert "EQ 5; it holds [6]" in str(ei.value)
