"""The manual-mode checker (pypto/ir/hazards.py) on a corpus of kernels, in both simulator modes.

Each wrong kernel carries one planted mistake, marked in its source with ``# A`` (the earlier
statement of the pair) and ``# B`` (the one the chip gets wrong); the launch must raise the
right error, whose finding names those two lines. Each correct kernel (double-buffered
pipelines, a GEMM with L1/L0 ping-pong, auto-mode kernels, every library kernel behind
load_insn, the fused IDL kernels) must have no finding at all. The lines are read from the
source here, not from the checker."""
from __future__ import annotations

import inspect
import sys
from pathlib import Path

import numpy as np
import pytest

import pypto
from pypto import errors as E
from pypto import pto

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "examples"))
from kernel_add_rows import add_rows  # noqa: E402
from kernel_gemm import gemm  # noqa: E402
from kernel_softmax import softmax_rows  # noqa: E402

R, C = 16, 64
f16, f32 = pto.float16, pto.float32
MTE1, MTE2, MTE3, V, M, FIX, S = (pto.PIPE_MTE1, pto.PIPE_MTE2, pto.PIPE_MTE3, pto.PIPE_V,
                                  pto.PIPE_M, pto.PIPE_FIX, pto.PIPE_S)


def flag(src, dst, ev=0):
    pto.set_flag(src, dst, ev)
    pto.wait_flag(src, dst, ev)


def vt(dt=f32, shape=(R, C)):
    return pto.Tile(pto.Vec, dt, shape)


def marks(fn) -> dict[str, int]:
    """Source line of each ``# A`` / ``# B`` mark in a kernel function."""
    lines, first = inspect.getsourcelines(fn)
    out = {}
    for i, line in enumerate(lines):
        for tag in ("A", "B"):
            if line.rstrip().endswith(f"# {tag}"):
                out[tag] = first + i
    return out


# -- wrong kernels: (function, error class, finding kind, args builder name) ------------------------

def w_no_mte2_v(x, y, z):
    a, b = vt(), vt()
    pto.TLOAD(a, x[0:R, :])
    pto.TLOAD(b, y[0:R, :])                     # A
    pto.TADD(a, a, b)                           # B
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], a)


def w_no_v_mte3(x, y, z):
    a, b = vt(), vt()
    pto.TLOAD(a, x[0:R, :])
    pto.TLOAD(b, y[0:R, :])
    flag(MTE2, V)
    pto.TADD(a, a, b)                           # A
    pto.TSTORE(z[0:R, :], a)                    # B


def w_loop_no_mte3_mte2(x, y, z):
    a, b = vt(), vt()
    for i in pto.range(0, 4):
        pto.TLOAD(a, x[i * R:(i + 1) * R, :])   # B
        pto.TLOAD(b, y[i * R:(i + 1) * R, :])
        flag(MTE2, V)
        pto.TADD(a, a, b)
        flag(V, MTE3)
        pto.TSTORE(z[i * R:(i + 1) * R, :], a)  # A


def w_loop_no_v_mte2(x, y, z):
    """The store goes from its own tile c, so the next TLOAD of a races the TADD reading a."""
    a, b, c = vt(), vt(), vt()
    for i in pto.range(0, 4):
        pto.TLOAD(a, x[i * R:(i + 1) * R, :])   # B
        pto.TLOAD(b, y[i * R:(i + 1) * R, :])
        flag(MTE2, V)
        pto.TADD(c, a, b)                       # A
        flag(V, MTE3)
        pto.TSTORE(z[i * R:(i + 1) * R, :], c)
        flag(MTE3, V)


def w_wrong_pipes(x, y, z):
    a = vt()
    pto.TLOAD(a, x[0:R, :])                     # A
    flag(MTE2, MTE3)                            # orders MTE3 after the load, not V
    pto.TMULS(a, a, 2.0)                        # B
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], a)


def w_wait_after_use(x, y, z):
    a = vt()
    pto.TLOAD(a, x[0:R, :])                     # A
    pto.set_flag(MTE2, V, 0)
    pto.TMULS(a, a, 2.0)                        # B
    pto.wait_flag(MTE2, V, 0)
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], a)


def w_backwards_flag(x, y, z):
    a = vt()
    pto.TLOAD(a, x[0:R, :])                     # A
    flag(V, MTE2)                               # the reverse direction orders nothing here
    pto.TMULS(a, a, 2.0)                        # B
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], a)


def w_deadlock(x, y, z):
    a = vt()
    pto.TLOAD(a, x[0:R, :])
    pto.wait_flag(MTE2, V, 0)                   # B
    pto.TMULS(a, a, 2.0)
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], a)


def w_event_mismatch(x, y, z):
    a = vt()
    pto.TLOAD(a, x[0:R, :])
    pto.set_flag(MTE2, V, 0)
    pto.wait_flag(MTE2, V, 1)                   # B
    pto.TMULS(a, a, 2.0)
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], a)


def w_double_set(x, y, z):
    a = vt()
    pto.TLOAD(a, x[0:R, :])
    pto.set_flag(MTE2, V, 0)                    # A
    pto.set_flag(MTE2, V, 0)                    # B
    pto.wait_flag(MTE2, V, 0)
    pto.TMULS(a, a, 2.0)
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], a)


def w_left_set(x, y, z):
    a = vt()
    pto.TLOAD(a, x[0:R, :])
    flag(MTE2, V)
    pto.TMULS(a, a, 2.0)
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], a)
    pto.set_flag(MTE3, MTE2, 0)                 # A


def w_no_prime(x, y, z):
    """The loop waits for the previous iteration's flag, but nothing sets it before iteration 0."""
    a = vt()
    for i in pto.range(0, 4):
        pto.wait_flag(MTE3, MTE2, 0)            # B
        pto.TLOAD(a, x[i * R:(i + 1) * R, :])
        flag(MTE2, V)
        pto.TMULS(a, a, 2.0)
        flag(V, MTE3)
        pto.TSTORE(z[i * R:(i + 1) * R, :], a)
        pto.set_flag(MTE3, MTE2, 0)
    pto.wait_flag(MTE3, MTE2, 0)


def w_no_drain(x, y, z):
    a = vt()
    pto.set_flag(MTE3, MTE2, 0)
    for i in pto.range(0, 4):
        pto.wait_flag(MTE3, MTE2, 0)
        pto.TLOAD(a, x[i * R:(i + 1) * R, :])
        flag(MTE2, V)
        pto.TMULS(a, a, 2.0)
        flag(V, MTE3)
        pto.TSTORE(z[i * R:(i + 1) * R, :], a)
        pto.set_flag(MTE3, MTE2, 0)             # A


def w_pingpong_same_event(x, y, z):
    """Two buffers, but both use EVENT_ID0: iteration 1 sets the flag iteration 0 set."""
    bufs = [vt(), vt()]
    pto.set_flag(MTE3, MTE2, 0)                 # A
    pto.set_flag(MTE3, MTE2, 0)                 # B
    for i in range(4):
        a = bufs[i % 2]
        pto.wait_flag(MTE3, MTE2, 0)
        pto.TLOAD(a, x[i * R:(i + 1) * R, :])
        flag(MTE2, V)
        pto.TMULS(a, a, 2.0)
        flag(V, MTE3)
        pto.TSTORE(z[i * R:(i + 1) * R, :], a)
        pto.set_flag(MTE3, MTE2, 0)
    for s in range(2):
        pto.wait_flag(MTE3, MTE2, 0)


def w_gm_store_then_load(x, y, z):
    """z is written by MTE3, then read back by MTE2 with no MTE3 -> MTE2 flag."""
    a, b = vt(), vt()
    pto.TLOAD(a, x[0:R, :])
    flag(MTE2, V)
    pto.TMULS(a, a, 2.0)
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], a)                    # A
    pto.TLOAD(b, z[0:R, :])                     # B
    flag(MTE2, V)
    pto.TADDS(b, b, 1.0)
    flag(V, MTE3)
    pto.TSTORE(y[0:R, :], b)


def w_overlap(x, y, z):
    a, b = vt(), vt()
    pto.TASSIGN(a, 0x0)
    pto.TASSIGN(b, 0x800)                       # half of a (a is 4 KiB)
    pto.TLOAD(a, x[0:R, :])
    pto.TLOAD(b, y[0:R, :])                     # A
    flag(MTE2, V)
    pto.TADD(a, a, b)                           # B
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], a)


def w_scratch(x, y, z):
    """a2a3's TROWEXPANDADD writes the hidden scratch at 184 KiB, where tile b was placed."""
    a = vt()
    v = pto.Tile(pto.Vec, f32, (R, 1), blayout=pto.ColMajor)
    b = vt()
    pto.TASSIGN(a, 0x0)
    pto.TASSIGN(v, 0x1000)
    pto.TASSIGN(b, 184 * 1024)
    pto.TLOAD(a, x[0:R, :])
    pto.TLOAD(b, y[0:R, :])
    pto.TLOAD(v, y[0:R, 0:1])
    flag(MTE2, V)
    pto.TROWEXPANDADD(a, a, v)                  # A
    pto.pipe_barrier(V)
    pto.TADD(a, a, b)                           # B
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], a)


def w_uninit_strict(x, y, z):
    a, b = vt(), vt()
    pto.TLOAD(a, x[0:R, :])
    flag(MTE2, V)
    pto.TADD(a, a, b)                           # B
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], a)


def w_stale_rows(x, y, z):
    """Eight rows loaded, sixteen read: the chip's other eight rows are stale."""
    a = pto.Tile(pto.Vec, f32, (R, C), valid=pto.DYNAMIC)
    b = vt()
    a.set_valid(8, C)
    pto.TLOAD(a, x[0:8, :])                     # A
    pto.TLOAD(b, y[0:R, :])
    flag(MTE2, V)
    a.set_valid(R, C)
    pto.TADD(b, b, a)                           # B
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], b)


def w_barrier_strict(x, y, z):
    """a2a3, checks='strict': TMULS reads what TADD wrote on the same pipe with no barrier."""
    a, b, c = vt(), vt(), vt()
    pto.TLOAD(a, x[0:R, :])
    pto.TLOAD(b, y[0:R, :])
    flag(MTE2, V)
    pto.TADD(c, a, b)                           # A
    pto.TMULS(a, c, 2.0)                        # B
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], a)


def w_capacity(x, y, z):
    a = pto.Tile(pto.Vec, f32, (64, 512))
    pto.TASSIGN(a, 0x20000)                     # B
    pto.TLOAD(a, x[0:64, 0:C])


def w_misaligned(x, y, z):
    a = vt()
    pto.TASSIGN(a, 0x810)                       # B
    pto.TLOAD(a, x[0:R, :])


def w_gm_bounds(x, y, z):
    a = vt()
    pto.TLOAD(a, x[4 * R - 8:5 * R - 8, :])    # B


def w_event_range(x, y, z):
    a = vt()
    pto.TLOAD(a, x[0:R, :])
    pto.set_flag(MTE2, V, 8)                    # B


def _cube_tiles():
    a1, b1 = pto.TileMatNz(f16, (32, 32)), pto.TileMatNz(f16, (32, 32))
    a0, b0 = pto.TileLeft(f16, (32, 32)), pto.TileRight(f16, (32, 32))
    return a1, b1, a0, b0, pto.TileAcc(f32, (32, 32))


def w_cube_no_mte2_mte1(a, b, c):
    a1, b1, a0, b0, acc = _cube_tiles()
    pto.TLOAD(a1, a[:, :])                      # A
    pto.TLOAD(b1, b[:, :])
    pto.TMOV(a0, a1)                            # B
    pto.TMOV(b0, b1)
    flag(MTE1, M)
    pto.TMATMUL(acc, a0, b0)
    flag(M, FIX)
    pto.TSTORE(c[:, :], acc)


def w_cube_no_mte1_m(a, b, c):
    a1, b1, a0, b0, acc = _cube_tiles()
    pto.TLOAD(a1, a[:, :])
    pto.TLOAD(b1, b[:, :])
    flag(MTE2, MTE1)
    pto.TMOV(a0, a1)
    pto.TMOV(b0, b1)                            # A
    pto.TMATMUL(acc, a0, b0)                    # B
    flag(M, FIX)
    pto.TSTORE(c[:, :], acc)


def w_cube_no_m_fix(a, b, c):
    a1, b1, a0, b0, acc = _cube_tiles()
    pto.TLOAD(a1, a[:, :])
    pto.TLOAD(b1, b[:, :])
    flag(MTE2, MTE1)
    pto.TMOV(a0, a1)
    pto.TMOV(b0, b1)
    flag(MTE1, M)
    pto.TMATMUL(acc, a0, b0)                    # A
    pto.TSTORE(c[:, :], acc)                    # B


def w_cube_k_loop_no_m_mte1(a, b, c):
    """Two K steps through one L0 pair: the second TMOV into a0 races the first TMATMUL."""
    a1, b1, a0, b0, acc = _cube_tiles()
    pto.TLOAD(a1, a[:, 0:32])
    pto.TLOAD(b1, b[0:32, :])
    flag(MTE2, MTE1)
    for k in range(2):
        pto.TMOV(a0, a1)                        # B
        pto.TMOV(b0, b1)
        flag(MTE1, M)
        if k == 0:
            pto.TMATMUL(acc, a0, b0)            # A
        else:
            pto.TMATMUL_ACC(acc, a0, b0)
    flag(M, FIX)
    pto.TSTORE(c[:, :], acc)


def w_cube_store_then_matmul(a, b, c):
    """Two output tiles through one accumulator: the second TMATMUL overwrites acc while the
    fixpipe may still be storing the first."""
    a1, b1, a0, b0, acc = _cube_tiles()
    pto.TLOAD(a1, a[:, :])
    pto.TLOAD(b1, b[:, :])
    flag(MTE2, MTE1)
    pto.TMOV(a0, a1)
    pto.TMOV(b0, b1)
    flag(MTE1, M)
    pto.TMATMUL(acc, a0, b0)
    flag(M, FIX)
    pto.TSTORE(c[:, :], acc)                    # A
    pto.TMATMUL(acc, a0, b0)                    # B
    flag(M, FIX)
    pto.TSTORE(c[:, :], acc)


def w_mixed_no_fix_v(a, b, c):
    """a5: the cube's result moves to UB through the fixpipe, then the vector unit adds to it."""
    a1, b1, a0, b0, acc = _cube_tiles()
    v = pto.Tile(pto.Vec, f32, (32, 32))
    pto.TLOAD(a1, a[:, :])
    pto.TLOAD(b1, b[:, :])
    flag(MTE2, MTE1)
    pto.TMOV(a0, a1)
    pto.TMOV(b0, b1)
    flag(MTE1, M)
    pto.TMATMUL(acc, a0, b0)
    flag(M, FIX)
    pto.TMOV(v, acc)                            # A
    pto.TADDS(v, v, 1.0)                        # B
    flag(V, MTE3)
    pto.TSTORE(c[:, :], v)


WRONG = [
    (w_no_mte2_v, E.PipeHazardError, "raw"),
    (w_no_v_mte3, E.PipeHazardError, "raw"),
    (w_loop_no_mte3_mte2, E.PipeHazardError, "war"),
    (w_loop_no_v_mte2, E.PipeHazardError, "war"),
    (w_wrong_pipes, E.PipeHazardError, "raw"),
    (w_wait_after_use, E.PipeHazardError, "raw"),
    (w_backwards_flag, E.PipeHazardError, "raw"),
    (w_deadlock, E.DeadlockError, "deadlock"),
    (w_event_mismatch, E.DeadlockError, "deadlock"),
    (w_double_set, E.FlagError, "double-set"),
    (w_left_set, E.FlagError, "left-set"),
    (w_no_prime, E.DeadlockError, "deadlock"),
    (w_no_drain, E.FlagError, "left-set"),
    (w_pingpong_same_event, E.FlagError, "double-set"),
    (w_gm_store_then_load, E.PipeHazardError, "raw"),
    (w_overlap, E.TileOverlapError, "overlap"),
    (w_scratch, E.TileOverlapError, "overlap"),
    (w_uninit_strict, E.UninitializedReadError, "uninit"),
    (w_stale_rows, E.StaleReadError, "stale"),
    (w_barrier_strict, E.PipeHazardError, "barrier"),
    (w_cube_no_mte2_mte1, E.PipeHazardError, "raw"),
    (w_cube_no_mte1_m, E.PipeHazardError, "raw"),
    (w_cube_no_m_fix, E.PipeHazardError, "raw"),
    (w_cube_k_loop_no_m_mte1, E.PipeHazardError, "war"),
    (w_cube_store_then_matmul, E.PipeHazardError, "war"),
    (w_mixed_no_fix_v, E.PipeHazardError, "raw"),
]
# mistakes other parts of pypto catch before the checker runs: (function, error class)
WRONG_ELSEWHERE = [
    (w_capacity, E.TileCapacityError),
    (w_misaligned, E.TileAlignmentError),
    (w_gm_bounds, E.GMBoundsError),
    (w_event_range, E.KernelError),
]


def _cube(fn) -> bool:
    return any(t in fn.__name__ for t in ("cube", "mixed"))


def _args(fn):
    if _cube(fn):
        rng = np.random.default_rng(0)
        return (pypto.Tensor(rng.standard_normal((32, 32)).astype(np.float16)),
                pypto.Tensor(rng.standard_normal((32, 32)).astype(np.float16)), pypto.zeros((32, 32)))
    x = pypto.Tensor(np.arange(4 * R * C, dtype=np.float32).reshape(4 * R, C))
    return x, pypto.Tensor(np.ones((4 * R, C), np.float32)), pypto.zeros((4 * R, C))


MODES = ("compiled", "eager")


@pytest.fixture(params=MODES)
def mode(request):
    pypto.finalize()
    yield request.param
    pypto.finalize()


def _start(mode: str, fn) -> None:
    checks = "strict" if fn.__name__.endswith("_strict") else "default"
    soc = "a5" if _cube(fn) else "a2a3"          # a5: its Acc -> Vec move, and pto-isa's CPU TMATMUL
    pypto.init(soc=soc, sim=pypto.SimOptions(mode=mode, checks=checks))


@pytest.mark.parametrize("fn,cls,kind", WRONG, ids=[w[0].__name__ for w in WRONG])
def test_each_planted_mistake_is_caught_with_its_lines(mode, fn, cls, kind):
    _start(mode, fn)
    args = _args(fn)
    out = args[-1]
    before = out.numpy().copy()
    with pytest.raises(cls) as ei:
        pypto.kernel(fn)(*args)
    f = ei.value.finding
    want = marks(fn)
    assert f.kind == kind, str(f)
    assert f.lines == (want.get("A"), want.get("B")), str(f)
    assert f.fix and f.rule and str(want.get("B", want.get("A"))) in str(ei.value)
    if mode == "compiled":             # checked before anything runs: the output is untouched
        assert np.array_equal(out.numpy(), before)


@pytest.mark.parametrize("fn,cls", WRONG_ELSEWHERE, ids=[w[0].__name__ for w in WRONG_ELSEWHERE])
def test_mistakes_caught_before_the_checker_name_their_line(mode, fn, cls):
    _start(mode, fn)
    with pytest.raises(cls) as ei:
        pypto.kernel(fn)(*_args(fn))
    assert f":{marks(fn)['B']}" in str(ei.value)


def test_check_lists_every_finding_without_running():
    """pypto.check: each kernel's findings as data (nothing runs, so nothing is raised)."""
    pypto.finalize()
    pypto.init()
    x, y, z = _args(w_no_mte2_v)
    for fn, _, kind in WRONG:
        if _cube(fn):
            continue
        found = pypto.check(pypto.kernel(fn), x, y, z, strict=fn.__name__.endswith("_strict"))
        assert any(f.kind == kind and f.severity == "error" for f in found), (fn.__name__, found)
    assert not pypto.check(pypto.kernel(w_barrier_strict), x, y, z)      # only with strict
    both = pypto.check(pypto.kernel(_two_mistakes), x, y, z)
    assert [f.kind for f in both if f.severity == "error"] == ["raw", "war", "raw"]
    pypto.finalize()


def _two_mistakes(x, y, z):
    a = vt()
    pto.TLOAD(a, x[0:R, :])
    pto.TMULS(a, a, 2.0)
    pto.set_flag(V, MTE3, 0)
    pto.wait_flag(V, MTE3, 0)
    pto.TSTORE(z[0:R, :], a)
    pto.TLOAD(a, y[0:R, :])      # WAR: the TSTORE may still read a
    pto.TMULS(a, a, 3.0)         # RAW again


# -- correct kernels ---------------------------------------------------------------------------------

def ok_double_buffered(x, y, z):
    """Two buffers, one event id each: the load of i + 1 overlaps the work on i."""
    bufs = [vt(), vt()]
    for s in range(2):
        pto.set_flag(MTE3, MTE2, s)
    for i in range(4):
        s = i % 2
        a = bufs[s]
        pto.wait_flag(MTE3, MTE2, s)
        pto.TLOAD(a, x[i * R:(i + 1) * R, :])
        flag(MTE2, V, s)
        pto.TMULS(a, a, 2.0)
        flag(V, MTE3, s)
        pto.TSTORE(z[i * R:(i + 1) * R, :], a)
        pto.set_flag(MTE3, MTE2, s)
    for s in range(2):
        pto.wait_flag(MTE3, MTE2, s)


def ok_runtime_loop_pingpong(x, y, z):
    a, b = vt(), vt()
    pto.set_flag(MTE3, MTE2, 0)
    for i in pto.range(0, 4):
        pto.wait_flag(MTE3, MTE2, 0)
        pto.TLOAD(a, x[i * R:(i + 1) * R, :])
        pto.TLOAD(b, y[i * R:(i + 1) * R, :])
        flag(MTE2, V)
        pto.TADD(a, a, b)
        flag(V, MTE3)
        pto.TSTORE(z[i * R:(i + 1) * R, :], a)
        pto.set_flag(MTE3, MTE2, 0)
    pto.wait_flag(MTE3, MTE2, 0)


def ok_barrier_all(x, y, z):
    a, b = vt(), vt()
    pto.TLOAD(a, x[0:R, :])
    pto.TLOAD(b, y[0:R, :])
    pto.pipe_barrier(pto.PIPE_ALL)
    pto.TADD(a, a, b)
    pto.pipe_barrier(pto.PIPE_ALL)
    pto.TSTORE(z[0:R, :], a)


def ok_reinterpret(x, y, z):
    """One buffer viewed as two tile types (the TRESHAPE idiom): not an overlap mistake."""
    a = vt()
    flat = pto.Tile(pto.Vec, f32, (1, R * C))
    pto.TASSIGN(a, 0)
    pto.TASSIGN(flat, 0)
    pto.TLOAD(a, x[0:R, :])
    flag(MTE2, V)
    pto.TMULS(a, a, 2.0)
    flag(V, MTE3)
    pto.TSTORE(z[0:R, :], a)


def ok_auto_vector(x, y, z):
    """Auto mode: no flags, no TASSIGN; pypto inserts what the chip needs."""
    a, b, c = vt(), vt(), vt()
    for i in pto.range(0, 4):
        pto.TLOAD(a, x[i * R:(i + 1) * R, :])
        pto.TLOAD(b, y[i * R:(i + 1) * R, :])
        pto.TADD(c, a, b)
        pto.TMULS(c, c, 0.5)
        pto.TSTORE(z[i * R:(i + 1) * R, :], c)


def ok_auto_cube(a, b, c):
    a1, b1, a0, b0, acc = _cube_tiles()
    pto.TLOAD(a1, a[:, :])
    pto.TLOAD(b1, b[:, :])
    pto.TMOV(a0, a1)
    pto.TMOV(b0, b1)
    pto.TMATMUL(acc, a0, b0)
    pto.TSTORE(c[:, :], acc)


def ok_cube(a, b, c):
    a1, b1, a0, b0, acc = _cube_tiles()
    pto.TLOAD(a1, a[:, :])
    pto.TLOAD(b1, b[:, :])
    flag(MTE2, MTE1)
    pto.TMOV(a0, a1)
    pto.TMOV(b0, b1)
    flag(MTE1, M)
    pto.TMATMUL(acc, a0, b0)
    flag(M, FIX)
    pto.TSTORE(c[:, :], acc)


def ok_mixed(a, b, c):
    a1, b1, a0, b0, acc = _cube_tiles()
    v = pto.Tile(pto.Vec, f32, (32, 32))
    pto.TLOAD(a1, a[:, :])
    pto.TLOAD(b1, b[:, :])
    flag(MTE2, MTE1)
    pto.TMOV(a0, a1)
    pto.TMOV(b0, b1)
    flag(MTE1, M)
    pto.TMATMUL(acc, a0, b0)
    flag(M, FIX)
    pto.TMOV(v, acc)
    flag(FIX, V)
    pto.TADDS(v, v, 0.0)
    flag(V, MTE3)
    pto.TSTORE(c[:, :], v)


def ok_tail_rows(x, y, z):
    """A short last block: every tile read only as far as it was written."""
    a = pto.Tile(pto.Vec, f32, (R, C), valid=pto.DYNAMIC)
    b = pto.Tile(pto.Vec, f32, (R, C), valid=pto.DYNAMIC)
    a.set_valid(8, C)
    b.set_valid(8, C)
    pto.TLOAD(a, x[0:8, :])
    pto.TLOAD(b, y[0:8, :])
    flag(MTE2, V)
    pto.TADD(a, a, b)
    flag(V, MTE3)
    pto.TSTORE(z[0:8, :], a)


CORRECT = [ok_tail_rows, ok_double_buffered, ok_runtime_loop_pingpong, ok_barrier_all, ok_reinterpret,
           ok_auto_vector, ok_auto_cube, ok_cube, ok_mixed]


@pytest.mark.parametrize("fn", CORRECT, ids=[f.__name__ for f in CORRECT])
def test_correct_kernels_are_clean_and_compute(mode, fn):
    cube = _cube(fn)
    pypto.init(soc="a5" if cube else "a2a3", sim=pypto.SimOptions(mode=mode))
    args = _args(w_cube_no_m_fix if cube else w_no_mte2_v)
    k = pypto.kernel(fn)
    assert pypto.check(k, *args) == []
    k(*args)
    ins = [a.numpy().astype(np.float64) for a in args[:2]]
    want = {"ok_auto_vector": (ins[0][:4 * R] + ins[1][:4 * R]) * 0.5,
            "ok_runtime_loop_pingpong": ins[0] + ins[1],
            "ok_double_buffered": ins[0] * 2, "ok_barrier_all": (ins[0] + ins[1])[:R],
            "ok_tail_rows": (ins[0] + ins[1])[:8],
            "ok_reinterpret": ins[0][:R] * 2}.get(fn.__name__, ins[0] @ ins[1] if cube else None)
    got = args[-1].numpy()[:want.shape[0]]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


def test_auto_mode_shows_the_flags_it_inserted():
    pypto.finalize()
    pypto.init()
    text = pypto.kernel(ok_auto_vector).ir(*_args(w_no_mte2_v))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().endswith("// auto")]
    assert "pto.set_flag PIPE_MTE2, PIPE_V, EVENT_ID0  // auto" in lines
    assert "pto.set_flag PIPE_V, PIPE_MTE3, EVENT_ID0  // auto" in lines
    assert "pto.barrier PIPE_V  // auto" in lines                   # TADD -> TMULS on c (a2a3)
    # the loop's WAR on c (TSTORE of i, TADD of i + 1): primed before the loop, drained after
    assert text.index("pto.set_flag PIPE_MTE3, PIPE_V") < text.index("for %")
    assert text.rindex("pto.wait_flag PIPE_MTE3, PIPE_V") > text.rindex("pto.tstore")
    cpp = pypto.kernel(ok_auto_vector).cpp(*_args(w_no_mte2_v))
    assert "set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)" in cpp and "pipe_barrier(PIPE_V)" in cpp
    pypto.finalize()


def test_examples_are_clean():
    """The tutorial's add_rows, the row softmax and the L1/L0 ping-pong GEMM."""
    pypto.finalize()
    pypto.init()
    x = pypto.Tensor(np.ones((300, 100), np.float32))
    assert pypto.check(add_rows, x, x, pypto.zeros((300, 100))) == []
    assert [f for f in pypto.check(softmax_rows, x, pypto.zeros((300, 100)))] == []
    a, b = pypto.Tensor(np.ones((200, 300), np.float16)), pypto.Tensor(np.ones((300, 150), np.float16))
    assert pypto.check(gemm, a, b, pypto.zeros((200, 150))) == []
    pypto.finalize()


@pytest.mark.parametrize("soc", ["a2a3", "a5"])
def test_every_library_kernel_is_clean(soc):
    """Every load_insn name, at every element type it takes on the SoC: no finding at all."""
    pypto.finalize()
    pypto.init(soc=soc)
    checked = 0
    for name in pypto.list_insns():
        insn = pypto.load_insn(name)
        for dt in insn.dtypes[:2]:
            try:
                ops = insn._form.example(dt, None)
            except E.PtoError:
                continue
            for i, x in enumerate(ops):
                insn.set_operand(i, x)
            try:
                kern, _, args = insn.launch_args()
            except E.PtoError:
                continue
            found = pypto.check(kern, *args)
            assert found == [], (name, dt.name, [str(f) for f in found])
            checked += 1
    assert checked > 100
    pypto.finalize()


def test_fused_idl_kernels_are_clean():
    from pypto.idl import custom
    pypto.finalize()
    custom._REGISTRY.clear()
    for f in ("softmax.idl", "layernorm.idl", "gemm_bias_relu.idl"):
        pypto.load_custom_insn(str(REPO / "examples" / "idl" / f))
    pypto.init()
    shapes = {"Softmax": [(40, 300), (40, 300)], "LayerNorm": [(40, 300), None, (40, 300)],
              "GemmBiasRelu": [(40, 64), (64, 96), (1, 96), (40, 96)]}
    dts = {"GemmBiasRelu": [pypto.float16, pypto.float16, pypto.float32, pypto.float32]}
    for name, shp in shapes.items():
        insn = pypto.load_insn(name)
        for i, s in enumerate(shp):
            dt = dts.get(name, [pypto.float32] * 4)[i]
            insn.set_operand(i, 1e-5 if s is None else pypto.zeros(s, dt))
        for title, found in insn.kernels(lambda kern, args: pypto.check(kern, *args)):
            assert found == [], (name, title, [str(f) for f in found])
    pypto.finalize()
    custom._REGISTRY.clear()


# -- event tokens ------------------------------------------------------------------------------------

def ok_events(x, y, z):
    """The pto::Event style: e = INSTR(..., record=NEXT), NEXT(..., e)."""
    a, b = vt(), vt()
    for i in pto.range(0, 4):
        pto.TLOAD(a, x[i * R:(i + 1) * R, :])
        e0 = pto.TLOAD(b, y[i * R:(i + 1) * R, :], record=pto.TADD)
        e1 = pto.TADD(a, a, b, e0, record=pto.PIPE_MTE3)       # TSTORE's pipe depends on its tile
        e2 = pto.TSTORE(z[i * R:(i + 1) * R, :], a, e1, record=pto.TLOAD)
        pto.wait_flag(e2.src, e2.dst, e2.event_id)         # the next TLOAD may overwrite a


def w_events_missing_wait(x, y, z):
    a, b = vt(), vt()
    pto.TLOAD(a, x[0:R, :])
    e0 = pto.TLOAD(b, y[0:R, :], record=pto.TADD)      # A
    pto.TADD(a, a, b)                                   # B
    e1 = pto.TADD(a, a, b, e0, record=pto.PIPE_MTE3)
    pto.TSTORE(z[0:R, :], a, e1)


def test_event_tokens_are_flag_pairs(mode):
    pypto.init(sim=pypto.SimOptions(mode=mode))
    args = _args(w_no_mte2_v)
    k = pypto.kernel(ok_events)
    assert pypto.check(k, *args) == []
    k(*args)
    ins = [a.numpy() for a in args[:2]]
    np.testing.assert_array_equal(args[2].numpy(), ins[0] + ins[1])
    text = k.ir(*args)
    assert "pto.set_flag PIPE_MTE2, PIPE_V, EVENT_ID0" in text and "pto.wait_flag PIPE_V, PIPE_MTE3, EVENT_ID0" in text
    assert "set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)" in k.cpp(*args)
    with pytest.raises(E.PipeHazardError) as ei:
        pypto.kernel(w_events_missing_wait)(*args)
    assert ei.value.finding.lines == (marks(w_events_missing_wait)["A"], marks(w_events_missing_wait)["B"])


from pypto.testing import unavailable_reason  # noqa: E402

_WHY = unavailable_reason("npu-cpusim")


@pytest.mark.skipif(_WHY is not None, reason=f"needs pto-isa's CPU backend: {_WHY}")
def test_inserted_flags_and_events_build_as_cpp():
    """Auto mode's flags and event tokens are emitted as set_flag/wait_flag/pipe_barrier that
    pto-isa's C++ accepts (pto::Event itself does not exist under its CPU backend)."""
    pypto.finalize()
    pypto.init(backend="npu-cpusim")
    for fn in (ok_auto_vector, ok_events):
        args = _args(w_no_mte2_v)
        pypto.kernel(fn)(*args)
        ins = [a.numpy().astype(np.float64) for a in args[:2]]
        want = (ins[0] + ins[1]) * (0.5 if fn is ok_auto_vector else 1)
        np.testing.assert_allclose(args[2].numpy(), want, rtol=1e-6)
    pypto.finalize()


def _flag_pairs(body, out):
    """(statement list, index) of each set_flag directly followed by its wait_flag."""
    from pypto.ir.nodes import For, Sync
    for i, s in enumerate(body):
        if isinstance(s, For):
            _flag_pairs(s.body, out)
        elif isinstance(s, Sync) and s.kind == "set_flag" and i + 1 < len(body):
            n = body[i + 1]
            if isinstance(n, Sync) and n.kind == "wait_flag" and (n.src, n.dst, n.event) == (s.src, s.dst, s.event):
                out.append((body, i))
    return out


def test_removing_any_flag_pair_of_a_correct_kernel_is_caught():
    """Mutation test of the checker: drop each set/wait pair of correct manual kernels in turn;
    every mutant must have an error. (The GEMM's last per-tile "L1 buffer free" pair is dropped
    safely: the next tile's priming set_flag on the same pipes orders the same work, so it is
    left out here.)"""
    from pypto.ir import hazards
    pypto.finalize()
    pypto.init()
    soc = pypto.runtime.current().soc
    x = pypto.Tensor(np.ones((300, 100), np.float32))
    a, b = pypto.Tensor(np.ones((200, 300), np.float16)), pypto.Tensor(np.ones((300, 150), np.float16))
    cases = [(add_rows, (x, x, pypto.zeros((300, 100)))), (softmax_rows, (x, pypto.zeros((300, 100)))),
             (pypto.kernel(ok_double_buffered), _args(w_no_mte2_v)),
             (pypto.kernel(ok_runtime_loop_pingpong), _args(w_no_mte2_v)),
             (gemm, (a, b, pypto.zeros((200, 150))))]
    mutants = skipped = 0
    for kern, args in cases:
        k = kern.trace_for(kern.signature(tuple(args)), soc)
        for body, i in _flag_pairs(k.body, []):
            pair = body[i:i + 2]
            del body[i:i + 2]
            found = [f for f in hazards.check(k, soc) if f.severity == "error"]
            body[i:i] = pair
            if not found and kern is gemm and (pair[0].src, pair[0].dst) == ("MTE1", "MTE2"):
                skipped += 1                               # the redundant pair described above
                continue
            assert found, (kern.name, pair[0].src, pair[0].dst, pair[0].site)
            mutants += 1
    assert mutants >= 25 and skipped <= 1
    pypto.finalize()
