"""Row softmax on the simulator against numpy, in the same process, on the same data.

Times examples/kernel_softmax.py's kernel (TROWMAX, TROWEXPANDSUB, TEXP, TROWSUM, TROWEXPANDDIV
over 16-row tiles, on as many blocks as the SoC has vector cores) on a (rows, cols) float32
matrix held in device tensors, against numpy's float32 softmax (max, subtract, exp, sum, divide
along axis 1). Both are warmed up first; each time is the best of --repeat runs. The result is
checked against numpy (max abs error below 1e-6: the simulator computes exp in double and
rounds once, numpy in float32) so the benchmark cannot time a broken kernel.

It also times examples/idl/softmax.idl loaded as a custom instruction: as pypto runs it (one
fused kernel over UB tiles) and unfused (each of its five steps a library kernel, the values
between them through GM), both against the same numpy run.

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
    idl = _idl_rows(x, y, out, args.repeat)
    print("pypto row softmax (examples/kernel_softmax.py) vs numpy float32 softmax")
    print(f"  pypto {pypto.__version__}, backend sim ({args.mode}), soc a2a3, {blocks} blocks, "
          f"Python {platform.python_version()}, numpy {np.__version__}, {platform.machine()} "
          f"{os.cpu_count()} CPUs; best of {args.repeat}")
    print(f"  {args.rows} x {args.cols} float32: pypto {t_pypto * 1e3:9.2f} ms   numpy "
          f"{t_numpy * 1e3:9.2f} ms   pypto/numpy {t_pypto / t_numpy:6.2f}x   (max abs diff "
          f"{err:.1e}; first launch {first * 1e3:.0f} ms)")
    for what, t in idl:
        print(f"  {what}: {t * 1e3:9.2f} ms   pypto/numpy {t / t_numpy:6.2f}x")
    pypto.finalize()


def _idl_rows(x, y, want: np.ndarray, repeat: int) -> list[tuple[str, float]]:
    """(label, best time) of the IDL Softmax run fused, then unfused; each result checked."""
    pypto.load_custom_insn(str(Path(__file__).resolve().parents[1] / "examples" / "idl" / "softmax.idl"),
                           replace=True)
    rows = []
    for label, fused in (("IDL Softmax, one fused kernel        ", True),
                         ("IDL Softmax, unfused (5 library kernels)", False)):
        insn = pypto.load_insn("Softmax")
        if not fused:
            insn._plan.segments = []
        insn.set_operand(0, x)
        insn.set_operand(1, y)
        insn.execute()
        err = float(np.abs(y.numpy() - want).max())
        if not err < 1e-6:
            raise AssertionError(f"{label.strip()} differs from numpy by {err}")
        rows.append((label, best_of(repeat, insn.execute)))
    return rows


if __name__ == "__main__":
    main()
