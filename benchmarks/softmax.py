"""Row softmax on the simulator against numpy, in the same process, on the same data.

Times examples/kernel_softmax.py's kernel (TROWMAX, TROWEXPANDSUB, TEXP, TROWSUM, TROWEXPANDDIV
over 16-row tiles, on as many blocks as the SoC has vector cores) on a (rows, cols) float32
matrix held in device tensors, against numpy's float32 softmax (max, subtract, exp, sum, divide
along axis 1). Both are warmed up first; each time is the best of --repeat runs. The result is
checked against numpy (max abs error below 1e-6: the simulator computes exp in double and
rounds once, numpy in float32) so the benchmark cannot time a broken kernel.

Run:  .venv/bin/python benchmarks/softmax.py [--rows 4096] [--cols 1024] [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from timing import best_of

import pypto

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from kernel_softmax import MAX_COLS, softmax_rows  # noqa: E402


def softmax_f32(x: np.ndarray, out: np.ndarray) -> None:
    m = x.max(axis=1, keepdims=True)
    np.subtract(x, m, out=out)
    np.exp(out, out=out)
    np.divide(out, out.sum(axis=1, keepdims=True), out=out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=1024, help=f"at most {MAX_COLS}")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--mode", choices=("compiled", "eager"), default="compiled")
    args = ap.parse_args(argv)
    pypto.init(sim=pypto.SimOptions(mode=args.mode))
    blocks = pypto.runtime.current().soc.aiv_cores
    rng = np.random.default_rng(0)
    xh = (rng.standard_normal((args.rows, args.cols)) * 4).astype(np.float32)
    x, y = pypto.Tensor(xh), pypto.empty(xh.shape, pypto.float32)
    out = np.empty_like(xh)

    t0 = time.perf_counter()
    softmax_rows[blocks](x, y)                    # warm-up: trace + compile or cache load
    first = time.perf_counter() - t0
    softmax_f32(xh, out)
    t_pypto = best_of(args.repeat, lambda: softmax_rows[blocks](x, y))
    t_numpy = best_of(args.repeat, lambda: softmax_f32(xh, out))
    err = float(np.abs(y.numpy() - out).max())
    if not err < 1e-6:
        raise AssertionError(f"softmax differs from numpy by {err}")
    print("pypto row softmax (examples/kernel_softmax.py) vs numpy float32 softmax")
    print(f"  pypto {pypto.__version__}, backend sim ({args.mode}), soc a2a3, {blocks} blocks, "
          f"Python {platform.python_version()}, numpy {np.__version__}, {platform.machine()} "
          f"{os.cpu_count()} CPUs; best of {args.repeat}")
    print(f"  {args.rows} x {args.cols} float32: pypto {t_pypto * 1e3:9.2f} ms   numpy "
          f"{t_numpy * 1e3:9.2f} ms   pypto/numpy {t_pypto / t_numpy:6.2f}x   (max abs diff "
          f"{err:.1e}; first launch {first * 1e3:.0f} ms)")
    pypto.finalize()


if __name__ == "__main__":
    main()
