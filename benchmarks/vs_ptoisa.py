"""pypto's simulator beside pto-isa's CPU backend running pypto's own emitted C++ of the same kernels.

The same three kernels run on three targets in one process, each checked against numpy first:
  sim           pypto's numba simulator (compiled mode)
  cpusim -O2    the kernel's emitted PTO C++ built with g++ -O2 against pto-isa's CPU backend
  cpusim -O3n   the same source built with -O3 -march=native
Rows: the library add on 16M float32 elements, the row softmax of examples/kernel_softmax.py on
4096 x 1024 float32, and the library GEMM 1024^3 (f16 in, f32 out) on the a5 profile (pto-isa's
CPU backend builds a5's cube path; see docs/fidelity.md). The ratio is target time / sim time:
above 1 means the simulator is faster. Build time (g++) is reported apart, never timed.

Needs PTO_ISA_ROOT (a pto-isa checkout) and g++; without them it says so and stops.
Run:  PTO_ISA_ROOT=... .venv/bin/python benchmarks/vs_ptoisa.py [--repeat 3] [--gemm 1024]
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
from pypto import config
from pypto.testing import unavailable_reason

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from kernel_softmax import softmax_rows  # noqa: E402

TARGETS = (("sim", "sim", None), ("cpusim -O2", "npu-cpusim", "-O2"),
           ("cpusim -O3 -march=native", "npu-cpusim", "-O3 -march=native"))


def _insn(name: str, *tensors):
    ins = pypto.load_insn(name)
    for i, t in enumerate(tensors):
        ins.set_operand(i, t)
    return ins


def add_row(n: int):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(n, dtype=np.float32) for _ in range(2))
    x, y, z = pypto.Tensor(a), pypto.Tensor(b), pypto.empty((n,), pypto.float32)
    ins = _insn("add", x, y, z)
    return ins.execute, lambda: np.array_equal(z.numpy(), a + b)


def softmax_row(rows: int, cols: int):
    xh = (np.random.default_rng(1).standard_normal((rows, cols)) * 4).astype(np.float32)
    x, y = pypto.Tensor(xh), pypto.empty(xh.shape, pypto.float32)
    blocks = pypto.runtime.current().soc.aiv_cores
    e = np.exp(xh.astype(np.float64) - xh.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    return (lambda: softmax_rows[blocks](x, y)), lambda: np.abs(y.numpy() - want).max() < 1e-5


def gemm_row(size: int):
    rng = np.random.default_rng(2)
    ah, bh = (rng.standard_normal((size, size)).astype(np.float16) for _ in range(2))
    a, b, c = pypto.Tensor(ah), pypto.Tensor(bh), pypto.empty((size, size), pypto.float32)
    ins = _insn("matmul", a, b, c)
    want = ah.astype(np.float64) @ bh.astype(np.float64)
    return ins.execute, lambda: np.abs(c.numpy() - want).max() < 1e-2 * np.sqrt(size)


def run_target(backend: str, flags: str | None, rows, repeat: int) -> dict[str, tuple[float, float]]:
    """{row: (seconds, first call incl. build)} on one target."""
    if flags is not None:
        os.environ["PYPTO_CPUSIM_CXXFLAGS"] = flags
        config.reload_env()
    out = {}
    for name, soc, make in rows:
        pypto.init(backend=backend, soc=soc)
        try:
            run, ok = make()
            t0 = time.perf_counter()
            run()
            first = time.perf_counter() - t0
            if not ok():
                raise AssertionError(f"{name} on {backend} {flags or ''} differs from numpy")
            out[name] = (best_of(repeat, run), first)
        finally:
            pypto.finalize()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n", type=int, default=16 * 1024 * 1024, help="add: elements")
    ap.add_argument("--rows", type=int, default=4096, help="softmax: rows (1024 columns)")
    ap.add_argument("--gemm", type=int, default=1024, help="GEMM: m = k = n")
    args = ap.parse_args(argv)
    why = unavailable_reason("npu-cpusim")
    if why is not None:                 # skipped, not failed: `make bench` runs it everywhere
        print(f"vs_ptoisa: skipped, pto-isa's CPU backend is not usable here: {why}")
        return
    rows = [(f"add f32, {args.n} elements", "a2a3", lambda: add_row(args.n)),
            (f"softmax {args.rows} x 1024 f32", "a2a3", lambda: softmax_row(args.rows, 1024)),
            (f"GEMM {args.gemm}^3 f16 -> f32 (a5)", "a5", lambda: gemm_row(args.gemm))]
    print("pypto's simulator vs pto-isa's CPU backend on pypto's emitted C++ (same process)")
    print(f"  pypto {pypto.__version__}, Python {platform.python_version()}, numpy {np.__version__}, "
          f"{platform.machine()} {os.cpu_count()} CPUs; best of {args.repeat}")
    results = {label: run_target(backend, flags, rows, args.repeat) for label, backend, flags in TARGETS}
    sim = results["sim"]
    print(f"  {'row':34s} {'target':26s} {'time':>10s} {'vs sim':>8s} {'first call':>11s}")
    for name, _, _ in rows:
        for label, _, _ in TARGETS:
            t, first = results[label][name]
            print(f"  {name:34s} {label:26s} {t * 1e3:8.1f}ms {t / sim[name][0]:7.2f}x {first:10.2f}s")
    print("  (vs sim: target time / simulator time; above 1 means the simulator is faster; the first\n"
          "   call of a cpusim row includes its g++ build unless the build cache held it)")


if __name__ == "__main__":
    main()
