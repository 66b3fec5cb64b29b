"""The tutorial's performance table, reproduced on pypto's simulator.

The tutorial ("pypto in 10 minutes", see seed-walkthrough.md) times three things on an Ascend 910
(PyTorch 2.1, CANN 8.0) and prints PTO C++ beside pypto. This script runs the same three rows on
the simulator, in this process, and prints them beside the tutorial's figures:

  load instruction, 1000 times      pypto.load_insn("add") x1000
  execute instruction, 10000 times  add.execute() on three 5-element float32 device tensors x10000,
                                    after one warm-up execute (so numba compilation is excluded;
                                    the first launch is timed and reported separately)
  full flow, 100 times              each iteration: pypto.init(), load_insn("add"),
                                    pypto.Tensor x3, execute(), c.numpy(), pypto.finalize()

Each row is the best of --repeat repetitions (time.perf_counter). The tutorial's numbers were
measured on NPU hardware; they are printed for reference only, not as a target: the simulator
runs on this CPU and does different work (no driver, no DMA, no device launch).

With --cold (the default) the script also starts two child processes sharing a fresh, empty
kernel cache (PYPTO_CACHE_DIR and NUMBA_CACHE_DIR pointed at a temporary directory) and times the
first execute() in each: the first is a true cold compile, the second shows what the on-disk
cache saves. --no-cold skips this (it takes a few seconds).

Run:  make bench      or   .venv/bin/python benchmarks/seed_table.py [--repeat N] [--no-cold]
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

from timing import best_of

import pypto

# (operation, iterations, tutorial PTO C++ ms, tutorial pypto ms)
TUTORIAL = [
    ("load instruction, 1000 times", 1000, 120.0, 150.0),
    ("execute instruction, 10000 times", 10000, 800.0, 820.0),
    ("full flow (init, load, alloc, copy, execute, read back), 100 times", 100, 5000.0, 5200.0),
]

A = [1, 2, 3, 4, 5]
B = [10, 20, 30, 40, 50]
EXPECTED = np.array([11, 22, 33, 44, 55], np.float32)


def _options(mode: str):
    return pypto.SimOptions(mode=mode)




def row_load(n: int) -> None:
    for _ in range(n):
        pypto.load_insn("add")


def make_add():
    """A bound add over three small device tensors (the tutorial's Step 4); needs a session."""
    add = pypto.load_insn("add")
    a = pypto.Tensor(A, dtype=pypto.float32)
    b = pypto.Tensor(B, dtype=pypto.float32)
    c = pypto.Tensor([0, 0, 0, 0, 0], dtype=pypto.float32)
    add.set_operand(0, a)
    add.set_operand(1, b)
    add.set_operand(2, c)
    return add, c


def row_execute(add, n: int) -> None:
    for _ in range(n):
        add.execute()


def row_full_flow(n: int, mode: str) -> None:
    for _ in range(n):
        pypto.init(backend="sim", sim=_options(mode))
        add, c = make_add()
        add.execute()
        out = c.numpy()
        pypto.finalize()
    if not np.array_equal(out, EXPECTED):
        raise SystemExit(f"full flow computed {out}, expected {EXPECTED}")


_CHILD = r"""
import time, pypto
pypto.init(backend="sim", sim=pypto.SimOptions(mode="compiled"))
add = pypto.load_insn("add")
ts = [pypto.Tensor(v, dtype=pypto.float32) for v in ([1, 2, 3, 4, 5], [10, 20, 30, 40, 50], [0] * 5)]
for i, t in enumerate(ts):
    add.set_operand(i, t)
t0 = time.perf_counter()
add.execute()
print(time.perf_counter() - t0)
"""


def cold_first_launch() -> tuple[float, float]:
    """First execute() in a child process with an empty kernel cache, then in a second child
    that finds the first one's cache on disk. Returns seconds (cold, warm-cache)."""
    with tempfile.TemporaryDirectory(prefix="pypto-bench-cache-") as d:
        env = dict(os.environ, PYPTO_CACHE_DIR=os.path.join(d, "kernels"),
                   NUMBA_CACHE_DIR=os.path.join(d, "numba"))
        env.pop("PYPTO_SIM_MODE", None)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        times = []
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                                 text=True, check=True)
            times.append(float(out.stdout.strip().splitlines()[-1]))
    return times[0], times[1]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="repetitions per row; the best is shown (3)")
    ap.add_argument("--mode", choices=("compiled", "eager"), default="compiled",
                    help="simulator mode (compiled, the default, is the fast one)")
    ap.add_argument("--cold", action=argparse.BooleanOptionalAction, default=True,
                    help="also time a cold-cache first launch in child processes (default on)")
    args = ap.parse_args(argv)

    pypto.finalize()
    pypto.init(backend="sim", sim=_options(args.mode))
    pypto.reset_stats()

    # first launch: trace + compile (or load from the on-disk cache) + run
    add, c = make_add()
    t0 = time.perf_counter()
    add.execute()
    first = time.perf_counter() - t0
    first_stats = pypto.stats()
    if not np.array_equal(c.numpy(), EXPECTED):
        raise SystemExit(f"add computed {c.numpy()}, expected {EXPECTED}")

    measured = [
        best_of(args.repeat, lambda: row_load(TUTORIAL[0][1])),
        best_of(args.repeat, lambda: row_execute(add, TUTORIAL[1][1])),
    ]
    if not np.array_equal(c.numpy(), EXPECTED):
        raise SystemExit(f"add computed {c.numpy()}, expected {EXPECTED}")
    run_stats = pypto.stats()
    pypto.finalize()
    measured.append(best_of(args.repeat, lambda: row_full_flow(TUTORIAL[2][1], args.mode)))

    print("pypto seed table: the tutorial's three performance rows on the simulator")
    print(f"  pypto {pypto.__version__}, backend sim ({args.mode} mode), soc a2a3, "
          f"Python {platform.python_version()}, numpy {np.__version__}, {platform.machine()} "
          f"{os.cpu_count()} CPUs; best of {args.repeat}")
    print("  The tutorial's figures were measured on an Ascend 910 (x1, PyTorch 2.1, CANN 8.0). They")
    print("  are printed for reference, not compared as a target: the simulator runs on this CPU.")
    print()
    hdr = ("operation", "tutorial PTO C++ (ms)", "tutorial pypto (ms)", "pypto sim (ms)",
           "sim / tutorial-pypto")
    rows = [(name, f"{cpp:.0f}", f"{py:.0f}", f"{m * 1e3:.1f}", f"{m * 1e3 / py:.3f}x")
            for (name, _, cpp, py), m in zip(TUTORIAL, measured)]
    widths = [max(len(r[i]) for r in rows + [hdr]) for i in range(len(hdr))]
    line = lambda r: "| " + " | ".join(x.ljust(w) if i == 0 else x.rjust(w)  # noqa: E731
                                       for i, (x, w) in enumerate(zip(r, widths))) + " |"
    print(line(hdr))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
    print()
    per = [measured[0] / TUTORIAL[0][1], measured[1] / TUTORIAL[1][1], measured[2] / TUTORIAL[2][1]]
    print(f"per call: load_insn {per[0] * 1e6:.2f} us, execute {per[1] * 1e6:.1f} us, "
          f"full flow {per[2] * 1e3:.2f} ms")
    print()
    print(f"first launch in this process (excluded from the table): {first * 1e3:.1f} ms "
          f"(trace + {'numba compile or on-disk cache load' if args.mode == 'compiled' else 'eager run'}"
          f" + run; stats after it: {first_stats})")
    if args.cold:
        cold, warm = cold_first_launch()
        print(f"first launch, cold cache (child process, empty PYPTO_CACHE_DIR and NUMBA_CACHE_DIR): "
              f"{cold * 1e3:.0f} ms")
        print(f"first launch, second child process on the same cache:                          "
              f"{warm * 1e3:.0f} ms")
    print()
    print(f"pypto.stats() after the load and execute rows: {run_stats}")


if __name__ == "__main__":
    main()
