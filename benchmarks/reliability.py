"""Reliability figures at full size: the concurrency soak, processes racing on one cache, and the
leak check (pypto/testing/reliability.py). Every launch's result is checked against numpy; the
script exits 1 if any figure is not clean.

Run:  .venv/bin/python benchmarks/reliability.py [--threads 8] [--per-thread 1000]
          [--processes 4] [--cycles 100000] [--launches 10000]
"""
from __future__ import annotations

import argparse
import os
import platform
import sys

import numpy as np

import pypto
from pypto.testing import reliability as R


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--per-thread", type=int, default=1000)
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--cycles", type=int, default=100_000)
    ap.add_argument("--launches", type=int, default=10_000)
    a = ap.parse_args()
    print(f"python {platform.python_version()}, numpy {np.__version__}, pypto {pypto.__version__}, "
          f"{os.cpu_count()} CPUs")
    pypto.init()
    clean = True

    s = R.soak(a.threads, a.per_thread)
    clean &= s.ok
    print(f"\nsoak: {a.threads} threads x {a.per_thread} mixed launches = {s.launches}: "
          f"{s.wrong} wrong, {len(s.errors)} errors, {s.seconds:.1f} s "
          f"({s.launches / s.seconds:.0f} launches/s), {s.compiles} compilations")
    print("  by kind: " + ", ".join(f"{k} {n}" for k, n in s.by_kind.items()))
    for e in s.errors[:5]:
        print("  error:", e)

    c = R.cache_race(a.processes)
    clean &= c.ok
    print(f"\ncache race: {a.processes} processes compiling into one empty cache at once: "
          f"{len(c.failed)} failed, {c.wrong} wrong results, compilations per process {c.compiles}; "
          f"a process after them: {c.reload_compiles} compilations, {c.reload_loads} cache loads; "
          f"after truncating every cached file: {'right' if c.damaged_recovered else 'FAILED'} "
          f"({c.seconds:.0f} s in all)")
    for f in c.failed:
        print("  failed:", f)

    lk = R.leak_check(a.cycles, a.launches)
    g = lk.growth()
    clean &= g["live_bytes"] == 0 and g["open_files"] == 0 and g["objects"] <= 100
    print(f"\nleaks: {a.cycles} create/free cycles + {a.launches} launches in {lk.seconds:.1f} s: "
          f"live device bytes {lk.live_bytes[0]} -> {lk.live_bytes[1]}, Python objects "
          f"{lk.objects[0]} -> {lk.objects[1]} ({g['objects']:+d}), open files "
          f"{lk.open_files[0]} -> {lk.open_files[1]}")
    print("\nclean" if clean else "\nNOT CLEAN")
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
