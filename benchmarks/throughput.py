"""Throughput of the simulator's "add" against numpy, in the same process, on the same data.

Times pypto.load_insn("add").execute() on N elements held in device tensors (pypto.Tensor: no
host<->device copies inside the timed region) against np.add(a, b, out=c) on host arrays holding
the same values. Both are warmed up first (numba compile or cache load, first-touch page
faults); each time is the best of --repeat runs (time.perf_counter). Bandwidth counts the bytes
an elementwise add moves: 3 arrays x itemsize x N. The pypto result is checked bit-for-bit
against numpy's (np.array_equal) so the benchmark cannot silently time a broken kernel.

A second line times eager mode (the debugging mode: the kernel's Python body runs instruction by
instruction) on a smaller N, after pypto.finalize(); pypto.init(sim=SimOptions(mode="eager")).

Run:  make bench      or   .venv/bin/python benchmarks/throughput.py [--dtype float16] [--n N]
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from timing import best_of

import pypto

DTYPES = ("float32", "float16", "int32", "int16")


def data(n: int, dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    np_dt = getattr(pypto, dtype).np
    if dtype.startswith("float"):
        return rng.standard_normal(n, dtype=np.float32).astype(np_dt)
    lim = np.iinfo(np_dt).max // 2          # a + b never overflows
    return rng.integers(-lim, lim, n, dtype=np_dt)




def measure(mode: str, n: int, dtype: str, repeat: int) -> dict:
    """Time pypto add (device tensors) and np.add on n elements; returns seconds and a check."""
    pypto.finalize()
    pypto.init(backend="sim", sim=pypto.SimOptions(mode=mode))
    a, b = data(n, dtype, 1), data(n, dtype, 2)
    c = np.empty_like(a)
    dt = getattr(pypto, dtype)
    da, db = pypto.Tensor(a, dtype=dt), pypto.Tensor(b, dtype=dt)
    dc = pypto.empty((n,), dt)
    add = pypto.load_insn("add")
    add.set_operand(0, da)
    add.set_operand(1, db)
    add.set_operand(2, dc)

    t0 = time.perf_counter()
    add.execute()                            # warm-up: compile / cache load
    first = time.perf_counter() - t0
    np.add(a, b, out=c)                      # warm-up: first touch of c

    t_pypto = best_of(repeat, add.execute)
    t_numpy = best_of(repeat, lambda: np.add(a, b, out=c))

    got = dc.numpy()
    if not np.array_equal(got, c):
        bad = np.flatnonzero(got != c)
        raise AssertionError(f"pypto add ({mode}, {dtype}, n={n}) differs from numpy at {bad.size} "
                             f"elements, first at {bad[0]}: {got[bad[0]]!r} != {c[bad[0]]!r}")
    st = pypto.stats()
    pypto.finalize()
    return dict(mode=mode, n=n, dtype=dtype, first=first, pypto=t_pypto, numpy=t_numpy,
                nbytes=3 * a.itemsize * n, stats=st)


def report(r: dict) -> None:
    gbs = lambda t: r["nbytes"] / t / 1e9  # noqa: E731
    print(f"{r['mode']:>8} {r['dtype']:>7} n={r['n']:>9}: pypto {r['pypto'] * 1e3:9.2f} ms "
          f"({gbs(r['pypto']):6.2f} GB/s)   numpy {r['numpy'] * 1e3:8.2f} ms "
          f"({gbs(r['numpy']):6.2f} GB/s)   pypto/numpy {r['pypto'] / r['numpy']:6.2f}x")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtype", choices=DTYPES, default="float32", help="element type (float32)")
    ap.add_argument("--n", type=int, default=16 * 1024 * 1024, help="elements (16*1024*1024)")
    ap.add_argument("--eager-n", type=int, default=1024 * 1024,
                    help="elements for the eager-mode line (1024*1024); 0 skips it")
    ap.add_argument("--repeat", type=int, default=5, help="repetitions; the best is shown (5)")
    args = ap.parse_args(argv)

    print("pypto throughput: load_insn('add').execute() on device tensors vs np.add(a, b, out=c)")
    print(f"  pypto {pypto.__version__}, backend sim, soc a2a3, Python {platform.python_version()}, "
          f"numpy {np.__version__}, {platform.machine()} {os.cpu_count()} CPUs; best of {args.repeat}; "
          "GB/s = 3 arrays x itemsize x n / time; results checked equal to numpy's")
    results = [measure("compiled", args.n, args.dtype, args.repeat)]
    if args.eager_n:
        results.append(measure("eager", args.eager_n, args.dtype, args.repeat))
    for r in results:
        report(r)
    for r in results:
        print(f"  {r['mode']}: first execute (warm-up, excluded) {r['first'] * 1e3:.1f} ms; "
              f"pypto.stats(): {r['stats']}")


if __name__ == "__main__":
    main()
