"""Shared timing helper for the benchmarks (best of N wall-clock runs, in one process)."""
from __future__ import annotations

import time
from typing import Callable


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    """Best wall time of `repeat` calls of fn(), in seconds."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
