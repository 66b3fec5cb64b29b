"""Writing your own PTO kernel: z = x + y for two (rows x 100) float32 matrices, tile by tile.

Run:  python examples/kernel_add_rows.py

What it shows:
  * pto.Tile in the unified buffer (pto.Vec) with a dynamic valid region;
  * GM views by slicing the kernel's tensor parameters (x[r0:r0 + h, 0:COLS]);
  * a runtime loop (pto.range) over blocks of TILE_ROWS rows, the tail handled by shrinking
    the tiles' valid region with pto.min;
  * work split over 4 blocks (AI cores) with pto.block_idx() / pto.block_num();
  * the MTE2 -> V -> MTE3 flags a real PTO kernel needs between the DMA and vector pipes;
  * kern.ir(...): the traced kernel as PTO-style text;
  * the same kernel run in compiled mode (the default) and in eager mode (the debugging mode).
"""
import numpy as np

import pypto
from pypto import pto

ROWS, COLS = 300, 100       # 300 = 18 * 16 + 12: the last row block is a 12-row tail
TILE_ROWS = 16
# An ND (row-major) tile's row must be a multiple of 32 bytes: 100 float32 are 400 bytes, so the
# tile is declared 104 columns wide (416 bytes) and only its first 100 columns are valid.
TILE_COLS = 104


@pypto.kernel
def add_rows(x, y, z):
    rows, cols = x.shape                          # static: the launch arguments' shape
    # Two tiles in the unified buffer (UB). valid=pto.DYNAMIC: the valid region is set at run time.
    a = pto.Tile(pto.Vec, pto.float32, (TILE_ROWS, TILE_COLS), valid=pto.DYNAMIC)
    b = pto.Tile(pto.Vec, pto.float32, (TILE_ROWS, TILE_COLS), valid=pto.DYNAMIC)
    nblk = (rows + TILE_ROWS - 1) // TILE_ROWS    # row blocks; the last may be partial
    # Block k of block_num takes row blocks k, k + block_num, k + 2 * block_num, ...
    for i in pto.range(pto.block_idx(), nblk, pto.block_num()):
        r0 = i * TILE_ROWS
        h = pto.min(TILE_ROWS, rows - r0)         # 16, or 12 for the tail
        a.set_valid(h, cols)
        b.set_valid(h, cols)
        pto.TLOAD(a, x[r0:r0 + h, 0:cols])        # GM -> UB on the MTE2 pipe
        pto.TLOAD(b, y[r0:r0 + h, 0:cols])
        pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)     # loads done ...
        pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)    # ... before the vector add
        pto.TADD(a, a, b)                         # over a's valid region (h x 100), on pipe V
        pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)     # add done ...
        pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)    # ... before the store
        pto.TSTORE(z[r0:r0 + h, 0:cols], a)       # UB -> GM on the MTE3 pipe
        pto.set_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, pto.EVENT_ID0)  # store done before the next
        pto.wait_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, pto.EVENT_ID0)  # iteration overwrites a


def run(mode: str) -> None:
    rng = np.random.default_rng(0)
    xh = rng.standard_normal((ROWS, COLS), dtype=np.float32)
    yh = rng.standard_normal((ROWS, COLS), dtype=np.float32)
    x, y = pypto.Tensor(xh), pypto.Tensor(yh)             # host -> device (GM)
    z = pypto.zeros((ROWS, COLS), pypto.float32)
    add_rows[4](x, y, z)                                   # launch on 4 blocks
    err = np.abs(z.numpy() - (xh + yh)).max()              # device -> host, compare with numpy
    print(f"{mode}: max abs error: {err}")
    assert err == 0.0


if __name__ == "__main__":
    pypto.init()                                            # compiled mode (the default)
    x = pypto.zeros((ROWS, COLS), pypto.float32)
    print(add_rows.ir(x, x, x))                             # traced for these shapes and dtypes
    run("compiled")

    pypto.finalize()
    pypto.init(sim=pypto.SimOptions(mode="eager"))         # same kernel, run line by line
    run("eager")
    pypto.finalize()
