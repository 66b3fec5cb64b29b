"""Communication between simulated NPUs: pypto's TPUT and TNOTIFY/TWAIT against the bare MPI
one-sided operations they are built on, timed in the same processes.

    .venv/bin/python benchmarks/comm.py [--ranks 2] [--repeat 5]

Rows (rank 0's figures, best of --repeat):
* TPUT bandwidth: a 4 MiB f32 tensor to the next rank through 128 KiB staging tiles, in one
  compiled kernel, vs one MPI Put + Flush of the same bytes into a plain window;
* signal round trip: rank 0 and rank 1 bounce an epoch 200 times with TNOTIFY + TWAIT inside
  one compiled kernel (pto.range), vs the same bounce with MPI Accumulate + Fetch_and_op polling.
Every result is checked (the moved tensor equals numpy's, the epochs arrive).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pypto  # noqa: E402
from pypto import pto  # noqa: E402

ROWS, COLS, TILE_ROWS, BOUNCES = 1024, 1024, 32, 200


@pypto.kernel
def put_next(x, y):
    t = pto.Tile(pto.Vec, pto.float32, (TILE_ROWS, COLS))
    pto.TPUT(pto.remote(y, (pto.rank_id() + 1) % pto.rank_num()), x, t)


@pypto.kernel
def bounce(flag):
    """rank 0 sends odd epochs to rank 1 and waits for the even replies; rank 1 the reverse."""
    me = pto.rank_id()
    other = 1 - me
    for k in pto.range(BOUNCES):
        pto.TWAIT(flag, 2 * k + me, cmp="GE")
        pto.TNOTIFY(pto.remote(flag, other), 2 * k + me + 1, notifyOp="Set")


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        pypto.barrier()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(repeat: int) -> dict:
    from mpi4py import MPI
    pypto.init()
    r, n = pypto.rank(), pypto.get_device_count()
    comm = MPI.COMM_WORLD
    x = pypto.Tensor(np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS) + r)
    y = pypto.zeros((ROWS, COLS), pypto.float32)
    pypto.barrier()
    put_next(x, y)                                     # compile (or load) outside the timing
    pypto.barrier()
    want = np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS) + (r - 1) % n
    assert np.array_equal(y.numpy(), want), "TPUT moved the wrong data"
    t_put = _best(lambda: put_next(x, y), repeat)

    win = MPI.Win.Allocate(ROWS * COLS * 4, 1, comm=comm)
    src = np.arange(ROWS * COLS, dtype=np.float32)
    win.Lock_all()

    def raw_put():
        win.Put([src, src.size, MPI.FLOAT], (r + 1) % n, target=(0, src.size, MPI.FLOAT))
        win.Flush((r + 1) % n)
    t_raw_put = _best(raw_put, repeat)

    t_bounce = t_raw_bounce = float("nan")
    sig = MPI.Win.Allocate(4, 4, comm=comm)
    np.frombuffer(sig.tomemory(), np.int32)[:] = 0
    pypto.barrier()
    sig.Lock_all()
    if n >= 2:
        def pypto_rounds() -> float:
            f = pypto.zeros((1,), pypto.int32)
            pypto.barrier()
            t0 = time.perf_counter()
            if r < 2:
                bounce(f)
                assert int(f.numpy()[0]) >= 2 * BOUNCES - 1, "the epochs did not arrive"
            dt = time.perf_counter() - t0
            pypto.barrier()
            f.free()
            return dt

        def raw_rounds() -> float:
            pypto.barrier()
            np.frombuffer(sig.tomemory(), np.int32)[:] = 0
            pypto.barrier()
            one, got = np.empty(1, np.int32), np.empty(1, np.int32)
            t0 = time.perf_counter()
            if r < 2:
                for k in range(BOUNCES):
                    while True:
                        sig.Fetch_and_op([one, 1, MPI.INT32_T], [got, 1, MPI.INT32_T], r, 0, MPI.NO_OP)
                        sig.Flush(r)
                        if got[0] >= 2 * k + r:
                            break
                    one[0] = 2 * k + r + 1
                    sig.Accumulate([one, 1, MPI.INT32_T], 1 - r, target=(0, 1, MPI.INT32_T), op=MPI.REPLACE)
                    sig.Flush(1 - r)
            dt = time.perf_counter() - t0
            pypto.barrier()
            return dt
        pypto_rounds()                                 # compile outside the timing
        t_bounce = min(pypto_rounds() for _ in range(repeat))
        t_raw_bounce = min(raw_rounds() for _ in range(repeat))
    sig.Unlock_all()
    win.Unlock_all()
    pypto.barrier()
    return dict(rank=r, ranks=n, put=t_put, raw_put=t_raw_put, bounce=t_bounce, raw_bounce=t_raw_bounce,
                mpi=MPI.Get_library_version().splitlines()[0].strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    res = pypto.launch_ranks(args.ranks, measure, args.repeat, init=False)[0]
    mb = ROWS * COLS * 4 / 2**20
    print(f"comm benchmark: {res['ranks']} ranks, {res['mpi']}, Python {platform.python_version()}, "
          f"numpy {np.__version__}, {platform.machine()} {os.cpu_count()} CPUs; best of {args.repeat}")
    print("| row | pypto | bare MPI | pypto / MPI |")
    print("|---|---|---|---|")
    print(f"| TPUT {mb:.0f} MiB f32 ({TILE_ROWS}-row tiles) | {res['put'] * 1e3:.2f} ms ({mb / res['put']:.0f} MiB/s) "
          f"| {res['raw_put'] * 1e3:.2f} ms ({mb / res['raw_put']:.0f} MiB/s) | {res['put'] / res['raw_put']:.2f}x |")
    if res["ranks"] >= 2:
        print(f"| signal round trip (TNOTIFY + TWAIT) | {res['bounce'] / BOUNCES * 1e6:.1f} us "
              f"| {res['raw_bounce'] / BOUNCES * 1e6:.1f} us | {res['bounce'] / res['raw_bounce']:.2f}x |")


if __name__ == "__main__":
    main()
