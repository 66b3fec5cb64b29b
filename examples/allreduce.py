"""An all-reduce across simulated NPUs from two root-driven collectives: the root TREDUCEs every
rank's tensor into its own (root first, then ranks in ascending order: the NPU's fixed order, so
float sums are bit for bit the NPU's), TBROADCASTs the sum to every rank, and signals each one.

    mpiexec -n 8 python examples/allreduce.py
    python examples/allreduce.py                       # starts 8 ranks itself (launch_ranks)
"""
import numpy as np

import pypto
from pypto import pto

ROOT, ROWS, COLS = 0, 64, 128


@pypto.kernel
def reduce_broadcast(x, out, flag):
    """On the root: out = sum over ranks of x, then every rank's out = the root's out."""
    n = pto.rank_num()
    acc = pto.Tile(pto.Vec, x.dtype, (16, COLS))
    recv = pto.Tile(pto.Vec, x.dtype, (16, COLS))
    pto.TREDUCE(pto.ParallelGroup(x, n, ROOT), out, acc, recv, reduceOp="Sum")
    pto.pipe_barrier(pto.PIPE_ALL)
    pto.TBROADCAST(pto.ParallelGroup(out, n, ROOT), out, acc)
    pto.pipe_barrier(pto.PIPE_ALL)
    for r in pto.range(n):
        pto.TNOTIFY(pto.remote(flag, r), 1, notifyOp="Set")


@pypto.kernel
def wait_for_sum(flag):
    pto.TWAIT(flag, 1, cmp="EQ")


def contribution(r: int, dtype) -> np.ndarray:
    rng = np.random.default_rng(r)
    return (rng.standard_normal((ROWS, COLS)) * 10).astype(dtype)


def expected(n: int, dtype) -> np.ndarray:
    acc = contribution(ROOT, dtype)
    for r in range(n):
        if r != ROOT:
            acc = (acc + contribution(r, dtype)).astype(dtype)
    return acc


def main(dtype=np.float32) -> bool:
    pypto.init()
    r, n = pypto.rank(), pypto.get_device_count()
    x = pypto.Tensor(contribution(r, dtype))
    out, flag = pypto.zeros((ROWS, COLS), pypto.dtypes.from_numpy(np.dtype(dtype))), pypto.zeros((1,), pypto.int32)
    pypto.barrier()                                     # every rank's x is written
    if r == ROOT:                                       # collectives run on the root only
        reduce_broadcast(x, out, flag)
    wait_for_sum(flag)
    ok = np.array_equal(out.numpy().view(np.uint8), expected(n, dtype).view(np.uint8))
    print(f"rank {r} of {n}: all-reduce ({np.dtype(dtype).name}) {'bit-exact' if ok else 'WRONG'}",
          flush=True)
    pypto.barrier()
    return ok


if __name__ == "__main__":
    from pypto.backends.sim.world import launcher_size
    if launcher_size():
        assert main()
    else:
        assert all(pypto.launch_ranks(8, main))
