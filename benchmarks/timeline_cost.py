"""What timing costs: a launch plain, the same launch recording its events, and the whole
pypto.timeline (recording, pricing, scheduling), for the A3 GEMM kernel at 1536^3 (24 blocks)
and the softmax example (4096 x 1024, one block per vector core). Best of --repeat runs each,
ratios against the plain launch in the same process.

    python benchmarks/timeline_cost.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import pypto                                                   # noqa: E402
from gemm_performance import gemm_performance                  # noqa: E402
from kernel_softmax import softmax_rows                        # noqa: E402


def best(n, fn) -> float:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    r = ap.parse_args(argv).repeat
    pypto.init()
    be = pypto.runtime.current().backend
    rng = np.random.default_rng(0)
    g = [pypto.Tensor(rng.standard_normal((1536, 1536)).astype(np.float16)) for _ in range(2)]
    g.append(pypto.zeros((1536, 1536), pypto.float32))
    xs = pypto.Tensor(rng.standard_normal((4096, 1024)).astype(np.float32))
    cases = [("GEMM 1536^3, 24 blocks", gemm_performance, g, 24),
             ("softmax 4096 x 1024", softmax_rows, [xs, pypto.empty((4096, 1024), pypto.float32)],
              pypto.runtime.current().soc.aiv_cores)]
    print(f"{'kernel':<24} {'plain':>9} {'recording':>11} {'timeline':>10} {'events':>9}")
    for name, k, args, grid in cases:
        k[grid](*args)                                         # compile both variants first
        tl = pypto.timeline(k, *args, grid=grid)

        def recorded():
            with be.recording(2_000_000):
                k[grid](*args)
        plain = best(r, lambda: k[grid](*args))
        rec = best(r, recorded)
        full = best(r, lambda: pypto.timeline(k, *args, grid=grid))
        print(f"{name:<24} {plain * 1e3:7.1f}ms {rec * 1e3:7.1f}ms {rec / plain:4.2f}x "
              f"{full / plain:8.2f}x {tl.events:>9,}")
    pypto.finalize()


if __name__ == "__main__":
    main()
