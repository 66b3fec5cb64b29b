"""Compile time against kernel length: a kernel of N unrolled slots of (TLOAD, TLOAD, TADD,
TSTORE) on 2x16 int32 tiles, at the top level and inside one runtime loop (pto.range), timed to
its first result with an empty kernel cache, each N in a fresh process. Compile time should grow at most linearly with the number of instructions: the
last column (seconds per instruction) should stay flat.

    python benchmarks/compile_time.py [N ...]      (default: 8 16 32 64)
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

CHILD = r"""
import sys, time
import numpy as np
import pypto
from pypto import pto

N = int(sys.argv[1])
IN_LOOP = sys.argv[3] == "loop"

def slots(x, y, z, base):
    for i in range(N):                         # unrolled at trace time
        a = pto.Tile(pto.Vec, pto.int32, (2, 16))
        b = pto.Tile(pto.Vec, pto.int32, (2, 16))
        pto.TLOAD(a, x[base + 2 * i:base + 2 * i + 2, :])
        pto.TLOAD(b, y[base + 2 * i:base + 2 * i + 2, :])
        pto.TADD(a, a, b)
        pto.TSTORE(z[base + 2 * i:base + 2 * i + 2, :], a)

def body(x, y, z):
    if IN_LOOP:                                # the same slots inside one runtime loop
        for r in pto.range(1):
            slots(x, y, z, r * 0)
    else:
        slots(x, y, z, 0)

k = pypto.kernel(body)
pypto.init(sim=pypto.SimOptions(cache_dir=sys.argv[2]))
xh = np.arange(2 * N * 16, dtype=np.int32).reshape(2 * N, 16)
x, y, z = pypto.Tensor(xh), pypto.Tensor(xh), pypto.zeros((2 * N, 16), pypto.int32)
t0 = time.perf_counter()
k(x, y, z)
t1 = time.perf_counter()
assert (z.numpy() == 2 * xh).all()
print(t1 - t0)
"""


def first_result_seconds(n: int, where: str) -> float:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(cache, "numba"))
        out = subprocess.run([sys.executable, "-c", CHILD, str(n), os.path.join(cache, "k"), where],
                             env=env, capture_output=True, text=True, check=True)
        return float(out.stdout.split()[-1])


def main(ns: list[int]) -> None:
    print(f"{'where':>10} {'N':>5} {'instructions':>12} {'first result (s)':>17} {'s / instruction':>16}")
    for where in ("top level", "loop"):
        for n in ns:
            t = first_result_seconds(n, where.split()[0])
            print(f"{where:>10} {n:>5} {4 * n:>12} {t:>17.2f} {t / (4 * n):>16.4f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [8, 16, 32, 64])
