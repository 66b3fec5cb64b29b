"""A tiled GEMM written the way it is written for the chip: C = A @ B, float16 in, float32 out.

Run:  python examples/kernel_gemm.py

What it shows:
  * the cube's memory path: GM -TLOAD (MTE2)-> Mat (L1, ND -> Nz) -TMOV/TEXTRACT (MTE1)->
    Left/Right (L0A/L0B) -TMATMUL (M)-> Acc (L0C) -TSTORE (FIX, the fixpipe)-> GM;
  * pto.TileLeft / pto.TileRight / pto.TileAcc, which pick the SoC's fractal layouts (Left is Zz
    on a2a3 and Nz on a5);
  * ping-pong (double buffering): two L1 buffers and two L0 buffer pairs, so the DMA of step i + 1
    may overlap the cube's work on step i; the flags say which buffer each pipe may touch;
  * TMATMUL for the first K step and TMATMUL_ACC after it (the accumulator lives in L0C across
    the whole K loop); tails in M, N and K through valid regions;
  * output tiles spread over blocks (cube cores) with pto.block_idx() / pto.block_num().
The same computation is one call with pypto.load_insn("matmul").
"""
import numpy as np

import pypto
from pypto import pto

BM, BN = 64, 64          # one output tile (L0C)
BK1 = 128                # K columns per L1 load (two buffers of BM x BK1 and BK1 x BN)
BK0 = 64                 # K columns per L0 step (TEXTRACT windows of the L1 tiles)


@pypto.kernel
def gemm(a, b, c):
    m_all, k_all = a.shape                 # static: K's steps (and their tails) unroll below
    n_all = b.shape[1]
    f16, f32 = pto.float16, pto.float32
    # L1: two buffers each for A and B (ping-pong); ND data becomes Nz on the way in
    a1 = [pto.TileMatNz(f16, (BM, BK1), valid=pto.DYNAMIC) for _ in range(2)]
    b1 = [pto.TileMatNz(f16, (BK1, BN), valid=pto.DYNAMIC) for _ in range(2)]
    # L0: two Left and two Right buffers, one accumulator
    a0 = [pto.TileLeft(f16, (BM, BK0), valid=pto.DYNAMIC) for _ in range(2)]
    b0 = [pto.TileRight(f16, (BK0, BN), valid=pto.DYNAMIC) for _ in range(2)]
    acc = pto.TileAcc(f32, (BM, BN), valid=pto.DYNAMIC)

    mt, nt = (m_all + BM - 1) // BM, (n_all + BN - 1) // BN
    for t in pto.range(pto.block_idx(), mt * nt, pto.block_num()):     # a runtime loop
        m0, n0 = t // nt * BM, t % nt * BN
        mh, nw = pto.min(BM, m_all - m0), pto.min(BN, n_all - n0)
        acc.set_valid(mh, nw)
        for s in range(2):          # event s = "buffer s is free": both start free
            pto.set_flag(pto.PIPE_MTE1, pto.PIPE_MTE2, s)      # L1 buffer s
            pto.set_flag(pto.PIPE_M, pto.PIPE_MTE1, s)         # L0 pair s
        step = 0
        for k1 in range(0, k_all, BK1):                          # Python loops unroll
            buf, kw1 = (k1 // BK1) % 2, min(BK1, k_all - k1)
            pto.wait_flag(pto.PIPE_MTE1, pto.PIPE_MTE2, buf)    # MTE1 is done with buf
            a1[buf].set_valid(mh, kw1)
            b1[buf].set_valid(kw1, nw)
            pto.TLOAD(a1[buf], a[m0:m0 + mh, k1:k1 + kw1])
            pto.TLOAD(b1[buf], b[k1:k1 + kw1, n0:n0 + nw])
            pto.set_flag(pto.PIPE_MTE2, pto.PIPE_MTE1, buf)     # buf is loaded ...
            pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_MTE1, buf)    # ... before MTE1 reads it
            for k0 in range(0, kw1, BK0):
                p, kw0 = step % 2, min(BK0, kw1 - k0)
                pto.wait_flag(pto.PIPE_M, pto.PIPE_MTE1, p)     # the cube is done with pair p
                pto.TEXTRACT(a0[p], a1[buf], 0, k0)             # BM x BK0 window at (0, k0)
                pto.TEXTRACT(b0[p], b1[buf], k0, 0)             # BK0 x BN window at (k0, 0)
                a0[p].set_valid(mh, kw0)                        # m, k of this step ...
                b0[p].set_valid(kw0, nw)                        # ... and n
                pto.set_flag(pto.PIPE_MTE1, pto.PIPE_M, p)
                pto.wait_flag(pto.PIPE_MTE1, pto.PIPE_M, p)
                if step == 0:
                    pto.TMATMUL(acc, a0[p], b0[p])              # acc = a @ b
                else:
                    pto.TMATMUL_ACC(acc, a0[p], b0[p])          # acc += a @ b
                pto.set_flag(pto.PIPE_M, pto.PIPE_MTE1, p)      # pair p is free again
                step += 1
            pto.set_flag(pto.PIPE_MTE1, pto.PIPE_MTE2, buf)     # L1 buffer buf is free again
        for s in range(2):          # balance the flags before the next tile
            pto.wait_flag(pto.PIPE_MTE1, pto.PIPE_MTE2, s)
            pto.wait_flag(pto.PIPE_M, pto.PIPE_MTE1, s)
        pto.set_flag(pto.PIPE_M, pto.PIPE_FIX, pto.EVENT_ID0)   # the accumulator is final ...
        pto.wait_flag(pto.PIPE_M, pto.PIPE_FIX, pto.EVENT_ID0)  # ... before the fixpipe reads it
        pto.TSTORE(c[m0:m0 + mh, n0:n0 + nw], acc)              # L0C -> GM (FIX)
        pto.set_flag(pto.PIPE_FIX, pto.PIPE_M, pto.EVENT_ID0)   # the store is done before the
        pto.wait_flag(pto.PIPE_FIX, pto.PIPE_M, pto.EVENT_ID0)  # next tile's TMATMUL


def main() -> None:
    pypto.init()                           # soc="a5" works too (TileLeft becomes Nz)
    m, k, n = 200, 300, 150                # tails in every dimension
    rng = np.random.default_rng(0)
    ah = rng.standard_normal((m, k)).astype(np.float16)
    bh = rng.standard_normal((k, n)).astype(np.float16)
    a, b = pypto.Tensor(ah), pypto.Tensor(bh)
    c = pypto.zeros((m, n), pypto.float32)
    gemm[4](a, b, c)                       # 4 blocks (cube cores) share the 12 output tiles
    ref = ah.astype(np.float64) @ bh.astype(np.float64)
    print(f"gemm {m}x{k} @ {k}x{n}: max abs error {np.abs(c.numpy() - ref).max():.2e}")
    lib = np.zeros((m, n), np.float32)     # the library kernel computes the same
    mm = pypto.load_insn("matmul")
    for i, x in enumerate((ah, bh, lib)):
        mm.set_operand(i, x)
    mm.execute()
    print(f"load_insn('matmul') agrees to {np.abs(lib - c.numpy()).max():.2e}")
    pypto.finalize()


if __name__ == "__main__":
    main()
