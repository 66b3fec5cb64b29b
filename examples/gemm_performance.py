"""The A3 high-performance GEMM of pto-isa's kernels/manual/a2a3/gemm_performance, written in
pypto's DSL with the same tiling, so its simulated timeline can be set beside the published
board measurements (benchmarks/calibration.py, docs/timeline.md).

C (m x n, f32) = A (m x k, f16) @ B (k x n, f16), B given transposed (bt, n x k, as the reference
kernel takes it and reads it through DN views into Zn L1 tiles), on 24 cube cores in a 4 x 6 grid: each core
owns a singleCoreM x singleCoreN block of C and the whole K. Per core, for each 128 x 256 output
tile (baseM x baseN), K runs in 64-wide steps (baseK); every 4 steps (stepKa = stepKb = 4) one
TLOAD pair brings a 128 x 256 panel of A and a 256 x 256 panel of B into L1 (double-buffered),
TEXTRACT cuts each step's 128 x 64 and 64 x 256 windows into L0A / L0B (double-buffered), the
cube accumulates in L0C, and the finished tile leaves through the fixpipe (TSTORE).

Run:  python examples/gemm_performance.py [m]        (m = k = n, default 1536)
"""
import sys

import numpy as np

import pypto
from pypto import pto

BASE_M, BASE_K, BASE_N = 128, 64, 256
STEP_K = 4
GRID_M, GRID_N = 4, 6                      # 24 cores


def tiling(m: int, k: int, n: int) -> dict:
    """The per-core split of the reference kernel: singleCoreM = m / 4, singleCoreN = n / 6."""
    return dict(single_m=m // GRID_M, single_n=n // GRID_N, single_k=k, blocks=GRID_M * GRID_N)


@pypto.kernel
def gemm_performance(a, bt, c):
    m, k = a.shape
    n = bt.shape[0]
    t = tiling(m, k, n)
    f16, f32 = pto.float16, pto.float32
    a1 = [pto.TileMatNz(f16, (BASE_M, BASE_K * STEP_K)) for _ in range(2)]    # L1 ping-pong
    b1 = [pto.Tile(pto.Mat, f16, (BASE_K * STEP_K, BASE_N), blayout="RowMajor", slayout="ColMajor")
          for _ in range(2)]                                # Zn: B's columns are bt's rows
    a0 = [pto.TileLeft(f16, (BASE_M, BASE_K)) for _ in range(2)]              # L0A / L0B ping-pong
    b0 = [pto.TileRight(f16, (BASE_K, BASE_N)) for _ in range(2)]
    acc = pto.TileAcc(f32, (BASE_M, BASE_N))
    blk = pto.block_idx()
    m_base = blk % GRID_M * t["single_m"]                  # this core's block of C
    n_base = blk // GRID_M * t["single_n"]
    panel = BASE_K * STEP_K                                # K columns per L1 load
    pairs = t["single_k"] // panel // 2                    # K panels come in ping-pong pairs

    def load_and_multiply(m0, n0, k0, buf, first):
        """One K panel: TLOAD into L1 buffer ``buf``, then STEP_K TEXTRACT + TMATMUL steps."""
        pto.wait_flag(pto.PIPE_MTE1, pto.PIPE_MTE2, buf)   # MTE1 is done with this L1 buffer
        pto.TLOAD(a1[buf], a[m0:m0 + BASE_M, k0:k0 + panel])
        pto.TLOAD(b1[buf], pto.GlobalTensor(bt, (1, 1, 1, panel, BASE_N), (1, 1, 1, 1, k),
                                            n0 * k + k0, layout="DN"))
        pto.set_flag(pto.PIPE_MTE2, pto.PIPE_MTE1, buf)
        pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_MTE1, buf)
        for s in range(STEP_K):
            p = s % 2
            pto.wait_flag(pto.PIPE_M, pto.PIPE_MTE1, p)    # the cube is done with L0 pair p
            pto.TEXTRACT(a0[p], a1[buf], 0, s * BASE_K)
            pto.TEXTRACT(b0[p], b1[buf], s * BASE_K, 0)
            pto.set_flag(pto.PIPE_MTE1, pto.PIPE_M, p)
            pto.wait_flag(pto.PIPE_MTE1, pto.PIPE_M, p)
            if first and s == 0:
                pto.TMATMUL(acc, a0[p], b0[p])             # the tile's first step starts over
            else:
                pto.TMATMUL_ACC(acc, a0[p], b0[p])
            pto.set_flag(pto.PIPE_M, pto.PIPE_MTE1, p)
        pto.set_flag(pto.PIPE_MTE1, pto.PIPE_MTE2, buf)    # the L1 buffer is free again

    for s in range(2):                                     # every buffer starts free
        pto.set_flag(pto.PIPE_MTE1, pto.PIPE_MTE2, s)
        pto.set_flag(pto.PIPE_M, pto.PIPE_MTE1, s)
    tiles_n = t["single_n"] // BASE_N
    for ij in pto.range(0, t["single_m"] // BASE_M * tiles_n):    # this core's output tiles
        m0, n0 = m_base + ij // tiles_n * BASE_M, n_base + ij % tiles_n * BASE_N
        load_and_multiply(m0, n0, 0, 0, True)
        load_and_multiply(m0, n0, panel, 1, False)
        for pp in pto.range(1, pairs):                 # the rest of K: one runtime loop
            load_and_multiply(m0, n0, pp * 2 * panel, 0, False)
            load_and_multiply(m0, n0, (pp * 2 + 1) * panel, 1, False)
        pto.set_flag(pto.PIPE_M, pto.PIPE_FIX, 0)      # the accumulator is final ...
        pto.wait_flag(pto.PIPE_M, pto.PIPE_FIX, 0)
        pto.TSTORE(c[m0:m0 + BASE_M, n0:n0 + BASE_N], acc)
        pto.set_flag(pto.PIPE_FIX, pto.PIPE_M, 0)      # ... and stored before the next tile
        pto.wait_flag(pto.PIPE_FIX, pto.PIPE_M, 0)
    for s in range(2):                                     # balance the initial sets
        pto.wait_flag(pto.PIPE_M, pto.PIPE_MTE1, s)
        pto.wait_flag(pto.PIPE_MTE1, pto.PIPE_MTE2, s)


def main(size: int = 1536) -> None:
    pypto.init(soc="a2a3")
    rng = np.random.default_rng(0)
    ah = rng.standard_normal((size, size)).astype(np.float16)
    bh = rng.standard_normal((size, size)).astype(np.float16)           # B, k x n
    a, bt = pypto.Tensor(ah), pypto.Tensor(np.ascontiguousarray(bh.T))
    c = pypto.zeros((size, size), pypto.float32)
    tl = pypto.timeline(gemm_performance, a, bt, c, grid=tiling(size, size, size)["blocks"])
    err = np.abs(c.numpy() - ah.astype(np.float32) @ bh.astype(np.float32)).max()
    print(f"gemm {size}^3 on 24 cube cores: max abs error vs numpy {err:.2e}")
    print(tl)
    pypto.finalize()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1536)
