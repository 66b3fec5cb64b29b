"""What the hazard checker costs: the same launches with SimOptions(checks="default") and "off".

Rows, each the best of --repeat runs in one process, checks on / checks off:
  * compiled add: load_insn("add").execute() on --n float32 elements in device tensors;
  * compiled GEMM: load_insn("matmul").execute(), --size^3, float16 in, float32 out;
  * eager add: the add on --eager-n elements in eager mode (there the checker follows every
    statement as it runs, so its cost grows with the instructions a launch executes).
In compiled mode the checker runs once per traced kernel, before its first launch; that one-off
time (hazards.check on the traced IR) is printed per kernel too. Every result is checked against
numpy, so a broken run cannot be timed.

Run:  .venv/bin/python benchmarks/checks_cost.py [--n 16777216] [--size 1024] [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import platform

import numpy as np

from timing import best_of

import pypto
from pypto.ir import hazards


def _add(n: int, mode: str, checks: str, repeat: int) -> float:
    pypto.init(sim=pypto.SimOptions(mode=mode, checks=checks))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    x, y, z = pypto.Tensor(a), pypto.Tensor(b), pypto.empty((n,), pypto.float32)
    add = pypto.load_insn("add")
    for i, t in enumerate((x, y, z)):
        add.set_operand(i, t)
    add.execute()
    if not np.array_equal(z.numpy(), a + b):
        raise AssertionError("add differs from numpy")
    t = best_of(repeat, add.execute)
    pypto.finalize()
    return t


def _gemm(size: int, checks: str, repeat: int) -> tuple[float, float]:
    pypto.init(sim=pypto.SimOptions(checks=checks))
    rng = np.random.default_rng(0)
    ah = rng.standard_normal((size, size)).astype(np.float16)
    bh = rng.standard_normal((size, size)).astype(np.float16)
    a, b, c = pypto.Tensor(ah), pypto.Tensor(bh), pypto.empty((size, size), pypto.float32)
    mm = pypto.load_insn("matmul")
    for i, t in enumerate((a, b, c)):
        mm.set_operand(i, t)
    mm.execute()
    err = np.abs(c.numpy() - ah.astype(np.float32) @ bh.astype(np.float32)).max()
    if not err < 1e-2:
        raise AssertionError(f"matmul differs from numpy by {err}")
    kern, _, args = mm.launch_args()
    k, soc = kern.traced(*args), pypto.runtime.current().soc
    once = best_of(repeat, lambda: hazards.check(k, soc))
    t = best_of(repeat, mm.execute)
    pypto.finalize()
    return t, once


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=16 * 1024 * 1024)
    ap.add_argument("--eager-n", type=int, default=256 * 1024)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    print("the hazard checker's cost: checks='default' / checks='off', same process")
    print(f"  pypto {pypto.__version__}, backend sim, soc a2a3, Python {platform.python_version()}, "
          f"numpy {np.__version__}, {platform.machine()} {os.cpu_count()} CPUs; best of {args.repeat}")
    rows = []
    on, off = (_add(args.n, "compiled", c, args.repeat) for c in ("default", "off"))
    rows.append((f"compiled add, {args.n} f32", on, off))
    (on, once), (off, _) = (_gemm(args.size, c, args.repeat) for c in ("default", "off"))
    rows.append((f"compiled GEMM {args.size}^3 f16->f32", on, off))
    eon, eoff = (_add(args.eager_n, "eager", c, args.repeat) for c in ("default", "off"))
    rows.append((f"eager add, {args.eager_n} f32", eon, eoff))
    for what, a, b in rows:
        print(f"  {what:32s} on {a * 1e3:9.2f} ms   off {b * 1e3:9.2f} ms   on/off {a / b:5.2f}x")
    print(f"  (compiled: the check itself runs once per traced kernel; the GEMM kernel's took "
          f"{once * 1e3:.2f} ms)")


if __name__ == "__main__":
    main()
