"""Row softmax of a (rows x cols) float32 matrix, written with PTO's row reductions and expansions.

Run:  python examples/kernel_softmax.py

y[i, :] = exp(x[i, :] - max_j x[i, j]) / sum_j exp(x[i, j] - max_j x[i, j])

What it shows:
  * TROWMAX / TROWSUM reduce each row of a tile into an R x 1 column tile (DN layout);
  * TROWEXPANDSUB / TROWEXPANDDIV combine each row with its column value;
  * TEXP in place;
  * pipe_barrier(PIPE_V) between vector instructions that depend on each other (the A2/A3
    vector unit needs it; pto-isa's own flash-attention softmax does the same);
  * tails in both directions: the last row block is short and the row is narrower than the tile.
"""
import numpy as np

import pypto
from pypto import pto

TILE_ROWS = 16
MAX_COLS = 1024             # one tile row holds a whole matrix row (4 KiB of float32)


@pypto.kernel
def softmax_rows(x, y):
    rows, cols = x.shape
    t = pto.Tile(pto.Vec, pto.float32, (TILE_ROWS, MAX_COLS), valid=pto.DYNAMIC)
    tmp = pto.Tile(pto.Vec, pto.float32, (TILE_ROWS, MAX_COLS))          # reduction scratch
    m = pto.Tile(pto.Vec, pto.float32, (TILE_ROWS, 1), blayout=pto.ColMajor, valid=pto.DYNAMIC)
    s = pto.Tile(pto.Vec, pto.float32, (TILE_ROWS, 1), blayout=pto.ColMajor, valid=pto.DYNAMIC)
    for i in pto.range(pto.block_idx(), (rows + TILE_ROWS - 1) // TILE_ROWS, pto.block_num()):
        r0 = i * TILE_ROWS
        h = pto.min(TILE_ROWS, rows - r0)
        t.set_valid(h, cols)
        m.set_valid(h, 1)
        s.set_valid(h, 1)
        pto.TLOAD(t, x[r0:r0 + h, :])
        pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
        pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
        pto.TROWMAX(m, t, tmp)                  # m[r] = max of row r
        pto.pipe_barrier(pto.PIPE_V)
        pto.TROWEXPANDSUB(t, t, m)              # t[r, c] -= m[r]
        pto.pipe_barrier(pto.PIPE_V)
        pto.TEXP(t, t)
        pto.pipe_barrier(pto.PIPE_V)
        pto.TROWSUM(s, t, tmp)                  # s[r] = sum of row r
        pto.pipe_barrier(pto.PIPE_V)
        pto.TROWEXPANDDIV(t, t, s)              # t[r, c] /= s[r]
        pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)
        pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)
        pto.TSTORE(y[r0:r0 + h, :], t)
        pto.set_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, pto.EVENT_ID0)   # the next TLOAD overwrites t
        pto.wait_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, pto.EVENT_ID0)


def softmax_numpy(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main() -> None:
    pypto.init()
    rng = np.random.default_rng(0)
    xh = (rng.standard_normal((300, 1000)) * 4).astype(np.float32)     # 300 = 18 * 16 + 12
    x, y = pypto.Tensor(xh), pypto.zeros(xh.shape, pypto.float32)
    softmax_rows[4](x, y)
    err = np.abs(y.numpy() - softmax_numpy(xh.astype(np.float64))).max()
    print(f"max abs error against float64 numpy: {err:.2e}")
    print(f"rows sum to 1 within {np.abs(y.numpy().sum(axis=1) - 1).max():.2e}")
    pypto.finalize()


if __name__ == "__main__":
    main()
