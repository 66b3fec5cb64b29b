"""Multi-rank cases: pto-isa's comm system tests (tests/npu/*/comm/st) re-expressed as pypto
kernels, each checked on every rank against numpy written from the semantics (comm-semantics.md
section 5). test_comm.py runs them with pypto.launch_ranks at several rank counts and modes;
``run(mode, names)`` returns each failing case's message.
"""
from __future__ import annotations

import numpy as np

import pypto
from pypto import pto

NP = {"f32": np.float32, "i32": np.int32, "u8": np.uint8, "f16": np.float16, "i16": np.int16}


def pattern(shape, short: str, r: int) -> np.ndarray:
    """The STs' data, i + 10000 r, kept exact in the element type."""
    i = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    if short == "u8":
        return ((i + 10 * r) % 256).astype(np.uint8)
    if short == "f16":
        return ((i % 1000) + 100 * r).astype(np.float16)
    if short == "i16":
        return ((i % 3000) + 100 * r).astype(np.int16)
    return (i + 10000 * r).astype(NP[short])


def tensor(a: np.ndarray) -> pypto.Tensor:
    return pypto.Tensor(a)


def me() -> tuple[int, int]:
    return pypto.rank(), pypto.get_device_count()


# -- kernels ----------------------------------------------------------------------------------
def put_ring(mode, rows, cols, dynamic=False, pong=False, get=False):
    """TPUT x to the next rank's y (get=True: TGET the next rank's x into y)."""
    @pypto.kernel(mode=mode)
    def ring(x, y):
        valid = pto.DYNAMIC if dynamic else None
        t = pto.Tile(pto.Vec, x.dtype, (rows, cols), valid=valid)
        tiles = (t, pto.Tile(pto.Vec, x.dtype, (rows, cols), valid=valid)) if pong else (t,)
        peer = (pto.rank_id() + 1) % pto.rank_num()
        if get:
            pto.TGET(y, pto.remote(x, peer), *tiles)
        else:
            pto.TPUT(pto.remote(y, peer), x, *tiles)
    return ring


def notify_ring(mode, phases):
    """Producer/consumer over a ring: phase k puts data, fences, sets the peer's flag to the
    epoch 2k+1; the consumer waits for it, then checks nothing else (the host does)."""
    @pypto.kernel(mode=mode)
    def ring(x, y, flag):
        t = pto.Tile(pto.Vec, x.dtype, (x.shape[0], x.shape[1]))
        peer = (pto.rank_id() + 1) % pto.rank_num()
        for k in pto.range(phases):
            pto.TPUT(pto.remote(y, peer), x, t)
            pto.pipe_barrier(pto.PIPE_ALL)
            pto.TNOTIFY(pto.remote(flag, peer), 2 * k + 1, notifyOp="Set")
            pto.TWAIT(flag, 2 * k + 1, cmp="GE")
    return ring


def counter(mode, adds):
    """Every rank adds 1 to rank 0's counter ``adds`` times; rank 0 waits until it reaches n*adds."""
    @pypto.kernel(mode=mode)
    def count(c):
        for _ in pto.range(adds):
            pto.TNOTIFY(pto.remote(c, 0), 1, notifyOp="AtomicAdd")
    return count


def wait_for(mode, value, cmp):
    @pypto.kernel(mode=mode)
    def wait(sig):
        pto.TWAIT(sig, value, cmp=cmp)
    return wait


def scoreboard(mode):
    """Rank r sets slot r of rank 0's 1 x n board to r + 1000; rank 0 waits for the whole board."""
    @pypto.kernel(mode=mode)
    def board(b):
        pto.TNOTIFY(pto.remote(pto.GlobalTensor(b, (1, 1, 1, 1, 1), (1, 1, 1, 1, 1), pto.rank_id()), 0),
                    pto.rank_id() + 1000, notifyOp="Set")
    return board


def atomic_put(mode, rows, cols):
    @pypto.kernel(mode=mode)
    def add(x, y):
        t = pto.Tile(pto.Vec, x.dtype, (rows, cols))
        pto.TPUT(pto.remote(y, 0), x, t, atomic="AtomicAdd")
    return add


def fan_out(mode):
    """One kernel, two roles chosen by rank at run time (pto.when): rank 0 puts x into every
    other rank's y, fences and sets its flag; the others wait for the flag, then TTEST it and,
    where it holds, store a row of ones to ``seen``."""
    @pypto.kernel(mode=mode)
    def fan(x, y, flag, ones, seen):
        t = pto.Tile(pto.Vec, x.dtype, (x.shape[0], x.shape[1]))
        for _ in pto.when(pto.rank_id() == 0):
            for r in pto.range(1, pto.rank_num()):
                pto.TPUT(pto.remote(y, r), x, t)
                pto.pipe_barrier(pto.PIPE_ALL)
                pto.TNOTIFY(pto.remote(flag, r), 1, notifyOp="Set")
        for _ in pto.when(pto.rank_id() != 0):
            pto.TWAIT(flag, 1, cmp="EQ")
            o = pto.Tile(pto.Vec, pto.int32, (1, 8))
            pto.TLOAD(o, ones)
            pto.set_flag(pto.PIPE_MTE2, pto.PIPE_MTE3, pto.EVENT_ID0)
            pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_MTE3, pto.EVENT_ID0)
            for _ in pto.when(pto.TTEST(flag, 1, cmp="EQ")):
                pto.TSTORE(seen, o)
    return fan


def collective(mode, name, rows, cols, root, op=None, pong=False):
    @pypto.kernel(mode=mode)
    def coll(mine, other):
        g = pto.ParallelGroup(mine, pto.rank_num(), root)
        t = pto.Tile(pto.Vec, mine.dtype, (rows, cols))
        extra = (pto.Tile(pto.Vec, mine.dtype, (rows, cols)),) if pong else ()
        if name == "TREDUCE":
            recv = pto.Tile(pto.Vec, mine.dtype, (rows, cols))
            pto.TREDUCE(g, other, t, recv, *extra, reduceOp=op)
        elif name == "TGATHER_COMM":
            pto.TGATHER_COMM(g, other, t, *extra)
        elif name == "TSCATTER_COMM":
            pto.TSCATTER_COMM(g, other, t, *extra)
        else:
            pto.TBROADCAST(g, other, t, *extra)
    return coll


# -- cases ------------------------------------------------------------------------------------
def case_tput_ring(mode):
    r, n = me()
    cases = [((256,), "f32", 1, 256, {}), ((4096,), "i32", 1, 1024, {}), ((512,), "u8", 1, 512, {}),
             ((16, 16), "f32", 16, 16, {}), ((128, 64), "f32", 16, 64, {}),
             ((2047, 32), "f32", 128, 32, {"dynamic": True}), ((64, 128), "f16", 16, 32, {}),
             ((128, 64), "i32", 16, 64, {"pong": True}), ((2, 2, 1, 32, 32), "f32", 32, 32, {}),
             ((65, 104), "i16", 16, 32, {"dynamic": True, "pong": True})]
    for get in (False, True):
        for shape, dt, tr, tc, kw in cases:
            x = tensor(pattern(shape, dt, r))
            y = tensor(np.full(shape, 7, NP[dt]))
            pypto.barrier()
            put_ring(mode, tr, tc, get=get, **kw)(x, y)
            pypto.barrier()
            src = (r + 1) % n if get else (r - 1) % n
            got, want = y.numpy(), pattern(shape, dt, src)
            assert np.array_equal(got, want), f"{'TGET' if get else 'TPUT'} {shape} {dt} {kw}: rank {r} got " \
                f"{got.ravel()[:4]} want {want.ravel()[:4]}"


def case_notify_ring(mode):
    r, n = me()
    x = tensor(pattern((8, 64), "f32", r))
    y = tensor(np.zeros((8, 64), np.float32))
    flag = pypto.zeros((1,), pypto.int32)
    pypto.barrier()
    notify_ring(mode, 3)(x, y, flag)
    assert np.array_equal(y.numpy(), pattern((8, 64), "f32", (r - 1) % n))
    assert int(flag.numpy()[0]) == 5, flag.numpy()
    pypto.barrier()


def case_counter(mode):
    r, n = me()
    c = pypto.zeros((1,), pypto.int32)
    pypto.barrier()
    counter(mode, 50)(c)
    if r == 0:
        wait_for(mode, 50 * n, "GE")(c)
        assert int(c.numpy()[0]) == 50 * n
    pypto.barrier()


def case_scoreboard(mode):
    r, n = me()
    b = pypto.zeros((1, n), pypto.int32)
    pypto.barrier()
    scoreboard(mode)(b)
    if r == 0:
        wait_for(mode, 1000, "GE")(b)
        assert np.array_equal(b.numpy()[0], np.arange(n) + 1000), b.numpy()
    pypto.barrier()


def case_atomic_put(mode):
    r, n = me()
    small = lambda k: (np.arange(32 * 64).reshape(32, 64) % 16 + k).astype(NP[dt])  # noqa: E731
    for dt in ("i32", "f32", "f16"):
        x = tensor(small(r))
        y = tensor(np.zeros((32, 64), NP[dt]))
        pypto.barrier()
        atomic_put(mode, 16, 64)(x, y)
        pypto.barrier()
        if r == 0:
            want = sum(small(k).astype(np.float64) for k in range(n))
            assert np.array_equal(y.numpy().astype(np.float64), want), f"{dt}: {y.numpy().ravel()[:4]} vs {want.ravel()[:4]}"
        pypto.barrier()


def case_fan_out(mode):
    r, n = me()
    x = tensor(pattern((8, 64), "f32", r))
    y = tensor(np.zeros((8, 64), np.float32))
    flag, seen = pypto.zeros((1,), pypto.int32), pypto.zeros((1, 8), pypto.int32)
    pypto.barrier()
    fan_out(mode)(x, y, flag, tensor(np.ones((1, 8), np.int32)), seen)
    # rank 0 keeps its zeros; every other rank holds rank 0's x, its flag, and the TTEST's row
    assert np.array_equal(y.numpy(), pattern((8, 64), "f32", 0) if r else np.zeros((8, 64), np.float32))
    assert int(flag.numpy()[0]) == (1 if r else 0)
    assert np.array_equal(seen.numpy(), np.full((1, 8), 1 if r else 0, np.int32))
    pypto.barrier()


def _reduce_ref(parts: list[np.ndarray], root: int, op: str) -> np.ndarray:
    """The NPU's order: acc = root's, then acc op rank r's, r ascending (r != root)."""
    acc = parts[root].copy()
    f = {"Sum": np.add, "Max": np.maximum, "Min": np.minimum}[op]
    for k, p in enumerate(parts):
        if k != root:
            with np.errstate(over="ignore"):
                acc = f(acc, p).astype(acc.dtype)
    return acc


def case_collectives(mode):
    r, n = me()
    roots = sorted({0, n - 1})
    rng = np.random.default_rng(7)
    for root in roots:
        for dt in ("f32", "i32", "f16"):
            shape = (32, 64)
            # TREDUCE: floats from a seeded generator, so the fixed order matters bit for bit
            parts = [(rng.standard_normal(shape) * 100).astype(NP[dt]) if dt != "i32" else
                     rng.integers(-2**31, 2**31 - 1, shape, dtype=np.int64).astype(np.int32) for _ in range(n)]
            for op in ("Sum", "Max", "Min"):
                mine, out = tensor(parts[r]), tensor(np.full(shape, 3, NP[dt]))
                pypto.barrier()
                if r == root:
                    collective(mode, "TREDUCE", 16, 64, root, op, pong=op == "Max")(mine, out)
                    want = _reduce_ref(parts, root, op)
                    assert np.array_equal(out.numpy().view(np.uint8), want.view(np.uint8)), \
                        f"TREDUCE {op} {dt} root {root}"
                pypto.barrier()
            # TGATHER_COMM: rank k's 8 x 64 block at rows 8k; rows past n*8 untouched
            mine = tensor(pattern((8, 64), dt, r))
            dst = tensor(np.full((8 * n + 4, 64), -1, NP[dt]))
            pypto.barrier()
            if r == root:
                collective(mode, "TGATHER_COMM", 8, 64, root)(mine, dst)
                want = np.concatenate([pattern((8, 64), dt, k) for k in range(n)] +
                                      [np.full((4, 64), -1, NP[dt])])
                assert np.array_equal(dst.numpy(), want), f"TGATHER_COMM {dt} root {root}"
            pypto.barrier()
            # TSCATTER_COMM: the root's rows 8k.. go to rank k
            full = pattern((8 * n, 64), dt, 5)
            src = tensor(full)
            part = tensor(np.zeros((8, 64), NP[dt]))
            pypto.barrier()
            if r == root:
                collective(mode, "TSCATTER_COMM", 8, 64, root, pong=True)(part, src)
            pypto.barrier()
            assert np.array_equal(part.numpy(), full[8 * r:8 * r + 8]), f"TSCATTER_COMM {dt} root {root}"
            # TBROADCAST: every rank, the root included, gets the root's tensor
            src = tensor(pattern((64, 64), dt, 9))
            got = tensor(np.zeros((64, 64), NP[dt]))
            pypto.barrier()
            if r == root:
                collective(mode, "TBROADCAST", 16, 64, root)(got, src)
            pypto.barrier()
            assert np.array_equal(got.numpy(), pattern((64, 64), dt, 9)), f"TBROADCAST {dt} root {root}"


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def run(mode: str, names: list[str] | None = None) -> list[str]:
    """Run the named cases (all by default) on this rank; a failing check raises, which ends
    every rank (launch_ranks reports the rank and the message). Returns the cases run."""
    names = names or list(CASES)
    for name in names:
        CASES[name](mode)
    return names


# -- failures the job must report (not part of run()) -------------------------------------------
def fail_on(bad_rank: int) -> int:
    """Rank ``bad_rank`` raises after the first barrier; the others wait in the next one."""
    pypto.barrier()
    if pypto.rank() == bad_rank:
        raise ValueError(f"planted failure on rank {bad_rank}")
    pypto.barrier()
    return pypto.rank()


def deadlock(mode: str) -> None:
    """Rank 0 waits for 5; rank 1 sets 3 and finishes: nobody can ever satisfy rank 0."""
    sig = pypto.zeros((1,), pypto.int32)
    pypto.barrier()

    def notify(s):
        pto.TNOTIFY(pto.remote(s, 0), 3, notifyOp="Set")
    if pypto.rank() == 0:
        wait_for(mode, 5, "EQ")(sig)
    else:
        pypto.kernel(mode=mode)(notify)(sig)


def wrong_root(mode: str) -> None:
    """Rank 1 runs a collective whose root is rank 0."""
    mine, out = tensor(np.zeros((8, 64), np.float32)), tensor(np.zeros((8, 64), np.float32))
    pypto.barrier()
    if pypto.rank() == 1:
        collective(mode, "TBROADCAST", 8, 64, 0)(out, mine)


def skipped_value(mode: str) -> None:
    """Rank 1 adds 3 twice to rank 0's counter; rank 0 waits for it to EQUAL 5 (rule R4)."""
    sig = pypto.zeros((1,), pypto.int32)
    pypto.barrier()
    if pypto.rank() == 0:
        wait_for(mode, 5, "EQ")(sig)
    else:
        counter_by(mode, 3, 2)(sig)


def counter_by(mode, step, times):
    @pypto.kernel(mode=mode)
    def count(c):
        for _ in pto.range(times):
            pto.TNOTIFY(pto.remote(c, 0), step, notifyOp="AtomicAdd")
    return count
