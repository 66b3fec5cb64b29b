"""GEMM on the simulator against numpy, in the same process, on the same data.

Times ``load_insn("matmul")`` (the library GEMM: TLOAD GM -> L1, TMOV L1 -> L0A/L0B, TMATMUL /
TMATMUL_ACC over K, TSTORE L0C -> GM, output tiles spread over the SoC's cube cores) on float16
inputs held in device tensors with a float32 result, against numpy's float32 matmul of the same
inputs (``a32 @ b32``, the inputs converted beforehand, outside the timed region). Both are
warmed up; each time is the best of --repeat runs. The result is checked against numpy (the
difference must lie inside a float32 accumulation's error bound) so the benchmark cannot time a
broken kernel. The simulator's tile multiply is BLAS (numba's np.dot) inside the compiled kernel;
the rest of its time is the data movement each instruction really does (fractal layouts).

Run:  .venv/bin/python benchmarks/gemm.py [--m 1024] [--k 1024] [--n 1024] [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from timing import best_of

import pypto


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--m", type=int, default=1024)
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--soc", choices=("a2a3", "a5"), default="a2a3")
    args = ap.parse_args(argv)
    pypto.init(soc=args.soc)
    rng = np.random.default_rng(0)
    ah = rng.standard_normal((args.m, args.k)).astype(np.float16)
    bh = rng.standard_normal((args.k, args.n)).astype(np.float16)
    a32, b32 = ah.astype(np.float32), bh.astype(np.float32)
    a, b, c = pypto.Tensor(ah), pypto.Tensor(bh), pypto.empty((args.m, args.n), pypto.float32)
    mm = pypto.load_insn("matmul")
    for i, x in enumerate((a, b, c)):
        mm.set_operand(i, x)

    t0 = time.perf_counter()
    mm.execute()                                   # warm-up: trace + compile or cache load
    first = time.perf_counter() - t0
    ref = a32 @ b32
    t_pypto = best_of(args.repeat, mm.execute)
    t_numpy = best_of(args.repeat, lambda: a32 @ b32)
    got = c.numpy().astype(np.float64)
    bound = 2 * (args.k + 2) * float(np.finfo(np.float32).eps) * (np.abs(a32) @ np.abs(b32))
    err = np.abs(got - a32.astype(np.float64) @ b32.astype(np.float64))
    if not (err <= bound + 1e-30).all():
        raise AssertionError(f"matmul differs from the exact product by {err.max()}")
    print("pypto load_insn('matmul') (f16 in, f32 out) vs numpy float32 matmul")
    print(f"  pypto {pypto.__version__}, backend sim (compiled), soc {args.soc}, "
          f"{pypto.runtime.current().soc.aic_cores} cube cores, Python {platform.python_version()}, "
          f"numpy {np.__version__}, {platform.machine()} {os.cpu_count()} CPUs; best of {args.repeat}")
    print(f"  {args.m} x {args.k} x {args.n}: pypto {t_pypto * 1e3:9.2f} ms   numpy "
          f"{t_numpy * 1e3:9.2f} ms   pypto/numpy {t_pypto / t_numpy:6.2f}x   (max abs diff from "
          f"numpy {float(np.abs(got - ref).max()):.1e}; first launch {first * 1e3:.0f} ms)")
    pypto.finalize()


if __name__ == "__main__":
    main()
