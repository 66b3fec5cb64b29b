"""The A5 MXFP8 GEMM of pto-isa's kernels/manual/a5/matmul_mxfp8_performance, written in pypto's
DSL with the same tiling and flag protocol, so its simulated timeline can be set beside the
published board measurements (benchmarks/calibration.py, docs/timeline.md).

C (m x n, bf16) = (scaleA . A) @ (scaleB . B): A (m x k) and B (given as bt, n x k) are
float8_e5m2, with one e8m0 scale per 32 K values (scaleA m x k/32, scaleB given as n x k/32). 32
cube cores in a 4 x 8 grid each own an m/4 x n/8 block of C and the whole K. Per core, for each
128 x 256 output tile, K runs in 128-wide steps: every 4 steps one TLOAD pair brings a 128 x 512
panel of A and a 512 x 256 panel of B into L1 (double-buffered), every 32 steps the scales for
the next 32 steps come too (double-buffered on their own), TEXTRACT cuts each step's operands and
scales into L0A/L0B and their scale buffers (double-buffered), and TMATMUL_MX accumulates in L0C
(its accumulate form after the first step). The finished tile leaves through the fixpipe as bf16.

Two differences from the reference: a scale panel covers the K steps left when fewer than 32 are
(the reference always loads 32 steps' worth, reading past the scale rows: into the next row, or
past the matrix for the last one); and the reference unrolls nothing: a C++ loop runs every K step. Here the steps are traced, so the
kernel body holds a pto.range loop over pairs of 4-step chunks (their buffers alternate) with the
chunks that load scales written out, which keeps the instruction stream identical.

Run:  python examples/mxfp8_performance.py [m]        (m = k = n, default 2048)
"""
import sys

import ml_dtypes
import numpy as np

import pypto
from pypto import pto

BASE_M, BASE_K, BASE_N = 128, 128, 256
STEP_K = 4                                  # K steps per data panel (stepKa = stepKb)
SCALE_STEPS = 32                            # K steps per scale panel (stepKa * mxScalePara)
GRID_M, GRID_N = 4, 8                       # 32 cores
SK = BASE_K // 32                           # scales per K step


def tiling(m: int, k: int, n: int) -> dict:
    """The per-core split of the reference kernel: singleCoreM = m / 4, singleCoreN = n / 8."""
    return dict(single_m=m // GRID_M, single_n=n // GRID_N, single_k=k, blocks=GRID_M * GRID_N)


@pypto.kernel
def mxfp8_performance(a, bt, sa, sbt, c):
    m, k = a.shape
    n = bt.shape[0]
    t = tiling(m, k, n)
    f8, e8 = pto.float8_e5m2, pto.float8_e8m0
    panel = BASE_K * STEP_K
    a1 = [pto.TileMatNz(f8, (BASE_M, panel)) for _ in range(2)]                # L1 ping-pong
    b1 = [pto.Tile(pto.Mat, f8, (panel, BASE_N), blayout="RowMajor", slayout="ColMajor")
          for _ in range(2)]                                # Zn: B's columns are bt's rows
    sa1 = [pto.Tile(pto.Mat, e8, (BASE_M, SK * SCALE_STEPS), valid=pto.DYNAMIC, blayout="RowMajor",
                    slayout="RowMajor", fractal=32) for _ in range(2)]
    sb1 = [pto.Tile(pto.Mat, e8, (SK * SCALE_STEPS, BASE_N), valid=pto.DYNAMIC, blayout="ColMajor",
                    slayout="ColMajor", fractal=32) for _ in range(2)]
    a0 = [pto.TileLeft(f8, (BASE_M, BASE_K)) for _ in range(2)]                 # L0 ping-pong
    b0 = [pto.TileRight(f8, (BASE_K, BASE_N)) for _ in range(2)]
    sa0 = [pto.TileLeftScale(e8, (BASE_M, SK)) for _ in range(2)]
    sb0 = [pto.TileRightScale(e8, (SK, BASE_N)) for _ in range(2)]
    acc = pto.TileAcc(pto.float32, (BASE_M, BASE_N))
    blk = pto.block_idx()
    m_base = blk % GRID_M * t["single_m"]                  # this core's block of C
    n_base = blk // GRID_M * t["single_n"]
    steps = t["single_k"] // BASE_K
    ks = k // 32                                           # scale columns of a row

    def chunk(m0, n0, c0, buf, mx, scales, first):
        """K steps c0 * 4 .. c0 * 4 + 3 of one output tile: their data panel (and, with
        ``scales``, the scale panel of the next ``scales`` columns) into L1 buffer ``buf`` (scale
        buffer ``mx``), then four TEXTRACT + TMATMUL_MX steps."""
        k0 = c0 * panel
        s0 = c0 * STEP_K * SK                              # first scale column of the chunk
        pto.wait_flag(pto.PIPE_MTE1, pto.PIPE_MTE2, buf)   # MTE1 is done with this L1 buffer
        pto.TLOAD(a1[buf], a[m0:m0 + BASE_M, k0:k0 + panel])
        if scales:
            sa1[mx].set_valid(BASE_M, scales)
            pto.TLOAD(sa1[mx], sa[m0:m0 + BASE_M, s0:s0 + scales])
        pto.set_flag(pto.PIPE_MTE2, pto.PIPE_MTE1, 0)
        pto.TLOAD(b1[buf], pto.GlobalTensor(bt, (1, 1, 1, panel, BASE_N), (1, 1, 1, 1, k),
                                            n0 * k + k0, layout="DN"))
        if scales:
            sb1[mx].set_valid(scales, BASE_N)
            pto.TLOAD(sb1[mx], pto.GlobalTensor(sbt, (1, 1, 1, scales, BASE_N), (1, 1, 1, 1, ks),
                                                n0 * ks + s0, layout="DN"))
        pto.set_flag(pto.PIPE_MTE2, pto.PIPE_MTE1, 1)
        for s in range(STEP_K):
            p = s % 2
            sc = (c0 * STEP_K + s) % SCALE_STEPS * SK          # this step's scale columns
            pto.wait_flag(pto.PIPE_M, pto.PIPE_MTE1, p)        # the cube is done with L0 set p
            if s == 0:
                pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_MTE1, 0)
            pto.TEXTRACT(a0[p], a1[buf], 0, s * BASE_K)
            pto.TEXTRACT(sa0[p], sa1[mx], 0, sc)
            if s == 0:
                pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_MTE1, 1)
            pto.TEXTRACT(b0[p], b1[buf], s * BASE_K, 0)
            pto.TEXTRACT(sb0[p], sb1[mx], sc, 0)
            if s == STEP_K - 1:
                pto.set_flag(pto.PIPE_MTE1, pto.PIPE_MTE2, buf)    # the L1 buffer is free again
            pto.set_flag(pto.PIPE_MTE1, pto.PIPE_M, p)
            pto.wait_flag(pto.PIPE_MTE1, pto.PIPE_M, p)
            if first and s == 0:
                pto.TMATMUL_MX(acc, a0[p], sa0[p], b0[p], sb0[p])       # the tile starts over
            else:
                pto.TMATMUL_MX(acc, acc, a0[p], sa0[p], b0[p], sb0[p])
            pto.set_flag(pto.PIPE_M, pto.PIPE_MTE1, p)

    def tile(m0, n0, mx):
        """One 128 x 256 output tile; ``mx`` is the scale buffer its first scale panel uses.
        Returns the scale buffer the next tile starts with."""
        chunks = steps // STEP_K
        for period in range(0, chunks, SCALE_STEPS // STEP_K):     # a scale panel each
            count = min(SCALE_STEPS // STEP_K, chunks - period)
            chunk(m0, n0, period, 0, mx, count * STEP_K * SK, period == 0)   # data buffers restart at 0
            for pair in pto.range((count - 2) // 2):               # the chunks in between
                c0 = period + 1 + pair * 2
                chunk(m0, n0, c0, 1, mx, False, False)
                chunk(m0, n0, c0 + 1, 0, mx, False, False)
            if count > 1:
                chunk(m0, n0, period + count - 1, 1, mx, False, False)
            mx = 1 - mx
        pto.set_flag(pto.PIPE_M, pto.PIPE_FIX, 0)          # the accumulator is final ...
        pto.wait_flag(pto.PIPE_M, pto.PIPE_FIX, 0)
        pto.TSTORE(c[m0:m0 + BASE_M, n0:n0 + BASE_N], acc)
        pto.set_flag(pto.PIPE_FIX, pto.PIPE_M, 0)          # ... and stored before the next tile
        pto.wait_flag(pto.PIPE_FIX, pto.PIPE_M, 0)
        return mx

    for s in range(2):                                     # every buffer starts free
        pto.set_flag(pto.PIPE_MTE1, pto.PIPE_MTE2, s)
        pto.set_flag(pto.PIPE_M, pto.PIPE_MTE1, s)
    tiles_n = t["single_n"] // BASE_N
    for ij in pto.range(0, t["single_m"] // BASE_M * tiles_n, 2):     # two output tiles a turn:
        mx = 0                                             # the scale buffers alternate per panel
        for half in range(2):
            q = ij + half
            mx = tile(m_base + q // tiles_n * BASE_M, n_base + q % tiles_n * BASE_N, mx)
    for s in range(2):                                     # balance the initial sets
        pto.wait_flag(pto.PIPE_M, pto.PIPE_MTE1, s)
        pto.wait_flag(pto.PIPE_MTE1, pto.PIPE_MTE2, s)


def inputs(size: int, seed: int = 0):
    """A, B^T (e5m2), their e8m0 scales (scaleB as n x k/32) and an empty bf16 C, as device
    tensors; plus the host values."""
    rng = np.random.default_rng(seed)
    e5, e8 = ml_dtypes.float8_e5m2, ml_dtypes.float8_e8m0fnu
    ah = rng.standard_normal((size, size)).astype(np.float32).astype(e5)
    bth = rng.standard_normal((size, size)).astype(np.float32).astype(e5)
    sah = rng.integers(124, 131, (size, size // 32)).astype(np.uint8)
    sbth = rng.integers(124, 131, (size, size // 32)).astype(np.uint8)
    dev = (pypto.Tensor(ah), pypto.Tensor(bth), pypto.Tensor(sah.view(e8)), pypto.Tensor(sbth.view(e8)),
           pypto.zeros((size, size), pypto.bfloat16))
    return dev, (ah, bth, sah, sbth)


def reference(host) -> np.ndarray:
    """numpy: (scaleA . A) @ (scaleB . B) in float64."""
    ah, bth, sah, sbth = host
    fa = ah.astype(np.float64) * np.repeat(2.0 ** (sah.astype(np.float64) - 127), 32, axis=1)
    fbt = bth.astype(np.float64) * np.repeat(2.0 ** (sbth.astype(np.float64) - 127), 32, axis=1)
    return fa @ fbt.T


def main(size: int = 2048) -> None:
    pypto.init(soc="a5")
    dev, host = inputs(size)
    tl = pypto.timeline(mxfp8_performance, *dev, grid=tiling(size, size, size)["blocks"])
    want = reference(host)
    err = np.abs(dev[-1].numpy().astype(np.float64) - want).max() / np.abs(want).max()
    print(f"mxfp8 {size}^3 on 32 cube cores: max error vs numpy {err:.2e} of the largest value (bf16 out)")
    print(tl)
    pypto.finalize()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2048)
