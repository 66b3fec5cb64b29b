"""Launches from several threads, the simulator's worker threads, and on-chip memory poisoning.

* Launches from several Python threads at once (``load_insn`` and hand-written kernels, compiled
  and eager) give numpy's results, and several threads compiling the same never-seen kernel at
  once all succeed.
* Launches of many blocks reuse the backend's worker threads instead of starting new ones.
* On-chip memory that no instruction wrote reads as the poison byte (SimOptions.uninit_byte,
  0xFF: float32 bits 0xFFFFFFFF) at every launch and in every block, whatever the mode, the thread
  count or what an earlier launch or block left there.

Expected values come from numpy written from the instructions' semantics.
"""
from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import pypto
from pypto import pto

pytestmark = pytest.mark.usefixtures("fresh")

THREADS = 4
N = 1 << 20                         # 1M float32 elements per thread
ROWS, COLS, TR = 1024, 1024, 32     # the hand-written kernel's tensor and tile rows (128 KiB tile)


def _in_threads(fn, n=THREADS):
    """Run fn(i) for i in 0..n-1 on n threads that start together; return the results in order
    (an exception in any thread is re-raised here)."""
    start = threading.Barrier(n)

    def go(i):
        start.wait()
        return fn(i)

    with ThreadPoolExecutor(n, thread_name_prefix="test-launcher") as ex:
        futures = [ex.submit(go, i) for i in range(n)]
        return [f.result() for f in futures]


# -- 1. launches from several threads ----------------------------------------------------------

def test_load_insn_muls_from_several_threads(fresh):
    pypto.init(backend="sim")

    def work(tid):
        rng = np.random.default_rng(100 + tid)
        a = rng.uniform(-1000, 1000, N).astype(np.float32)
        insn = pypto.load_insn("muls")
        bad = []
        for it in range(10):
            s = 1.5 + tid + 0.25 * it                  # exact in float32
            c = np.zeros(N, np.float32)
            insn.set_operand(0, a)
            insn.set_operand(1, s)
            insn.set_operand(2, c)
            insn.execute()
            want = a * np.float32(s)                   # one float32 rounding, as TMULS
            if not np.array_equal(c, want):
                bad.append((it, int(np.sum(c != want))))
        return bad

    assert _in_threads(work) == [[]] * THREADS


def _scale_shift(x, z, s, c):
    """z = x * s + c, tile by tile, blocks taking every block_num-th tile of 32 rows."""
    t = pto.Tile(pto.Vec, pto.float32, (TR, COLS))
    for i in pto.range(pto.block_idx(), x.shape[0] // TR, pto.block_num()):
        pto.TLOAD(t, x[i * TR:i * TR + TR, 0:COLS])
        pto.TMULS(t, t, s)
        pto.TADDS(t, t, c)
        pto.TSTORE(z[i * TR:i * TR + TR, 0:COLS], t)


SCALE_SHIFT = {m: pypto.kernel(_scale_shift, mode=m) for m in ("compiled", "eager")}


@pytest.mark.parametrize("mode,reps", [("compiled", 10), ("eager", 3)])
def test_kernel_launches_from_several_threads(fresh, mode, reps):
    pypto.init(backend="sim", sim=pypto.SimOptions(threads=2))
    k = SCALE_SHIFT[mode]

    def work(tid):
        rng = np.random.default_rng(200 + tid)
        xh = rng.integers(-4096, 4096, (ROWS, COLS)).astype(np.float32)
        x = pypto.Tensor(xh)
        z = pypto.zeros((ROWS, COLS), pypto.float32)
        bad = []
        for it in range(reps):
            s, c = 0.5 * (tid + 1) + it, float(tid * 100 - it)     # exact in float32
            k[4](x, z, s, c)
            want = xh * np.float32(s) + np.float32(c)              # float32 rounding per op
            got = z.numpy()
            if not np.array_equal(got, want):
                bad.append((it, int(np.sum(got != want))))
        x.free()
        z.free()
        return bad

    assert _in_threads(work) == [[]] * THREADS


def _new_kernel(traced: list):
    """A kernel no process has seen (a constant of its own) whose body sleeps while it runs, so
    that threads launching it together all arrive while it is traced (compiled mode runs the body
    once per trace) and reach the compiler together."""
    bias = float(random.randrange(1, 1 << 20)) + 0.5

    @pypto.kernel(mode="compiled")
    def add_bias(x, z):
        traced.append(1)
        time.sleep(0.3)
        t = pto.Tile(pto.Vec, pto.float32, (8, 64))
        pto.TLOAD(t, x[0:8, 0:64])
        pto.TADDS(t, t, bias)
        pto.TSTORE(z[0:8, 0:64], t)

    return add_bias, bias


def _launch_together(k, bias, n=THREADS):
    def work(tid):
        xh = np.arange(512, dtype=np.float32).reshape(8, 64) * (tid + 1)
        x, z = pypto.Tensor(xh), pypto.zeros((8, 64), pypto.float32)
        k(x, z)
        return np.array_equal(z.numpy(), xh + np.float32(bias))
    return _in_threads(work, n)


def test_several_threads_compile_the_same_new_kernel(fresh, tmp_path):
    # a private cache directory and a constant no other kernel has: nothing is cached anywhere
    pypto.init(backend="sim", sim=pypto.SimOptions(cache_dir=str(tmp_path)))
    for _ in range(3):
        k, bias = _new_kernel([])
        # traced here first (kern.ir compiles nothing), so the threads reach the compiler together
        k.ir(pypto.zeros((8, 64), pypto.float32), pypto.zeros((8, 64), pypto.float32))
        assert _launch_together(k, bias, 8) == [True] * 8


def test_several_threads_trace_a_new_kernel_once(fresh, tmp_path):
    pypto.init(backend="sim", sim=pypto.SimOptions(cache_dir=str(tmp_path)))
    pypto.reset_stats()
    traced: list = []
    k, bias = _new_kernel(traced)
    assert _launch_together(k, bias) == [True] * THREADS
    s = pypto.stats()
    assert (len(traced), s.compiles + s.cache_loads) == (1, 1)


# -- 11. the worker threads are reused ----------------------------------------------------------

@pypto.kernel
def _sixteen_blocks(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64))
    b = pto.block_idx()
    pto.TLOAD(t, x[b * 8:b * 8 + 8, 0:64])
    pto.TADDS(t, t, 1.0)
    pto.TSTORE(z[b * 8:b * 8 + 8, 0:64], t)


def _sim_threads():
    return {t.ident for t in threading.enumerate() if t.name.startswith("pypto-sim")}


def test_launches_reuse_the_worker_threads(fresh, monkeypatch):
    for t in threading.enumerate():          # workers of sessions finalized before this test
        if t.name.startswith("pypto-sim"):
            t.join(timeout=10)
    pypto.init(backend="sim", sim=pypto.SimOptions(threads=4, mode="compiled"))
    xh = np.arange(16 * 8 * 64, dtype=np.float32).reshape(128, 64)
    x, z = pypto.Tensor(xh), pypto.zeros((128, 64), pypto.float32)
    _sixteen_blocks[16](x, z)                              # compile (or load) outside the count
    np.testing.assert_array_equal(z.numpy(), xh + 1)
    workers = _sim_threads()

    started = []
    real_start = threading.Thread.start

    def counting_start(self, *a, **kw):
        started.append(self.name)
        return real_start(self, *a, **kw)

    monkeypatch.setattr(threading.Thread, "start", counting_start)
    counts = []
    for i in range(20):
        z2 = pypto.zeros((128, 64), pypto.float32)
        _sixteen_blocks[16](x, z2)
        np.testing.assert_array_equal(z2.numpy(), xh + 1)
        z2.free()
        counts.append(threading.active_count())
    monkeypatch.undo()
    # a persistent pool of 4 workers starts at most 4 threads in all (none once it is full);
    # a pool per launch starts 3-4 threads per launch (60-80 here)
    assert len(started) <= 4, f"{len(started)} threads started in 20 launches: {started[:8]}..."
    assert max(counts) - min(counts) <= 4, counts
    # the pool grows lazily up to its 4 workers, and keeps them: the first launch's are still there
    final = _sim_threads()
    assert workers and workers <= final and len(final) <= 4, (workers, final)


# -- 12. never-written on-chip memory is poisoned at every launch and block ---------------------

PB = 6                  # blocks
POISON32 = 0xFFFFFFFF   # SimOptions() default uninit_byte 0xFF, as float32 bits


def _partial(x, z, narrow):
    """Block b loads rows 8b..8b+7 of x into a tile whose valid region is w columns (block 0: all
    64; the others 64 - narrow) and stores the whole 8x64 tile through a second tile at the same
    address, so the columns TLOAD did not write (pad=PadNull writes nothing, pto-isa-semantics
    4.3) reach GM."""
    t = pto.Tile(pto.Vec, pto.float32, (8, 64), valid=pto.DYNAMIC)
    whole = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TASSIGN(t, 0)
    pto.TASSIGN(whole, 0)
    b = pto.block_idx()
    w = 64 - pto.min(b, 1) * narrow
    t.set_valid(8, w)
    pto.TLOAD(t, x[b * 8:b * 8 + 8, 0:w])
    pto.TSTORE(z[b * 8:b * 8 + 8, 0:64], whole)


PARTIAL = pypto.kernel(_partial, checks="off")      # mode: the session's; aliases on purpose


def _u32(a):
    return np.ascontiguousarray(a).view(np.uint32)


@pytest.mark.parametrize("mode", ["compiled", "eager"])
@pytest.mark.parametrize("threads", [1, 4])
def test_unwritten_on_chip_memory_is_poisoned_at_every_launch_and_block(fresh, mode, threads):
    pypto.init(backend="sim", sim=pypto.SimOptions(mode=mode, threads=threads))
    xh = (np.arange(PB * 8 * 64, dtype=np.float32).reshape(PB * 8, 64) + 1)
    x = pypto.Tensor(xh)
    # reference: block 0 copies its 8 rows whole; blocks 1.. copy 20 columns, the other 44 are the
    # poison's bits
    want = _u32(xh).copy()
    want[8:, 20:] = POISON32
    runs = []
    for launch in range(3):
        z = pypto.zeros((PB * 8, 64), pypto.float32)
        PARTIAL[PB](x, z, 44)
        got = _u32(z.numpy())
        bad = np.argwhere(got != want)
        assert not len(bad), (f"launch {launch + 1}: {len(bad)} elements differ, first at "
                              f"{bad[0].tolist()}: {got[tuple(bad[0])]:#x} != "
                              f"{want[tuple(bad[0])]:#x}")
        runs.append(got)
        # between checks, a launch where every block fills the whole tile with data: the next
        # launch must not see it
        full = pypto.zeros((PB * 8, 64), pypto.float32)
        PARTIAL[PB](x, full, 0)
        np.testing.assert_array_equal(full.numpy(), xh)
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0])       # bit for bit


@pytest.mark.parametrize("mode", ["compiled", "eager"])
def test_poison_follows_uninit_byte(fresh, mode):
    """The poison is SimOptions.uninit_byte, not a constant: 0x7F fills 0x7F7F7F7F."""
    pypto.init(backend="sim", sim=pypto.SimOptions(mode=mode, threads=2, uninit_byte=0x7F))
    xh = np.ones((PB * 8, 64), np.float32)
    z = pypto.zeros((PB * 8, 64), pypto.float32)
    PARTIAL[PB](pypto.Tensor(xh), z, 44)
    got = _u32(z.numpy())
    assert (got[8:, 20:] == 0x7F7F7F7F).all()
    np.testing.assert_array_equal(got[8:, :20], _u32(xh)[8:, :20])


def test_a_module_another_thread_is_importing_is_waited_for(tmp_path, monkeypatch):
    """Defect (the reliability soak, 8 threads): resolving an implementation took its module from
    sys.modules while another thread was still importing it, and found the function missing
    ("partially initialized module ... has no attribute 'tload_lines'")."""
    import sys
    import threading

    from pypto.backends.sim import compile as C
    from pypto.backends.sim.lowering import Fn

    (tmp_path / "pypto_slow_import.py").write_text(
        "import time\ntime.sleep(1.0)\n\n\ndef f():\n    return 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "pypto_slow_import", raising=False)
    importer = threading.Thread(target=__import__, args=("pypto_slow_import",))
    importer.start()
    while "pypto_slow_import" not in sys.modules:
        pass
    try:
        _name, f = C.resolve(Fn("pypto_slow_import", "f"), str(tmp_path / "cache"))
        assert f() == 7
    finally:
        importer.join()
        sys.modules.pop("pypto_slow_import", None)
