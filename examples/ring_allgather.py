"""A ring all-gather across simulated NPUs: TPUT to the next rank, a PIPE_ALL barrier, TNOTIFY
its flag with the step's epoch, TWAIT for our own; after n - 1 steps every rank holds every
rank's block.

    mpiexec -n 8 python examples/ring_allgather.py     # one process per rank
    python examples/ring_allgather.py                  # starts 8 ranks itself (launch_ranks)
"""
import numpy as np

import pypto
from pypto import pto

ROWS, COLS = 16, 64


@pypto.kernel
def ring_allgather(buf, flag):
    """buf: n blocks of ROWS x COLS; block r is this rank's own on entry."""
    me, n = pto.rank_id(), pto.rank_num()
    nxt = (me + 1) % n
    t = pto.Tile(pto.Vec, pto.float32, (ROWS, COLS))
    for k in pto.range(n - 1):
        slot = (me - k + n) % n                         # the block received in the last step
        block = pto.GlobalTensor(buf, (1, 1, 1, ROWS, COLS), (1, 1, 1, COLS, 1), slot * ROWS * COLS)
        pto.TPUT(pto.remote(block, nxt), block, t)
        pto.pipe_barrier(pto.PIPE_ALL)                  # the data before the signal (rule R2)
        pto.TNOTIFY(pto.remote(flag, nxt), k + 1, notifyOp="Set")
        pto.TWAIT(flag, k + 1, cmp="GE")


def own_block(r: int) -> np.ndarray:
    return (np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS) + 10000 * r)


def main() -> bool:
    pypto.init()
    r, n = pypto.rank(), pypto.get_device_count()
    data = np.zeros((n, ROWS, COLS), np.float32)
    data[r] = own_block(r)
    buf, flag = pypto.Tensor(data), pypto.zeros((1,), pypto.int32)
    pypto.barrier()                                     # every rank's buffers exist
    ring_allgather(buf, flag)
    gathered = buf.numpy()
    pypto.barrier()                                     # nobody leaves while others still read
    same = np.array_equal(gathered, np.stack([own_block(k) for k in range(n)]))
    print(f"rank {r} of {n}: all-gather {'matches numpy' if same else 'WRONG'}", flush=True)
    return same


if __name__ == "__main__":
    from pypto.backends.sim.world import launcher_size
    ranks_ok = [main()] if launcher_size() else pypto.launch_ranks(8, main)
    assert all(ranks_ok)
