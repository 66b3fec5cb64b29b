"""The BLAS behind numba's ``np.dot`` (the cube's tile multiply) shares the cores with the
simulator's block threads: while blocks run in parallel it gets cores // threads threads of its
own, since BLAS threads on top of busy block threads only contend. numba calls SciPy's BLAS, so
numpy's (the user's, and the benchmarks' reference) is left alone."""
from __future__ import annotations

import os
import sys
import threading

_LOCK = threading.Lock()
_fitted: int | None = None


def share_cores(threads: int) -> None:
    """Limit SciPy's BLAS to max(1, cores // threads) threads, once per thread count, when it is
    loaded (numba loads it with the first cube kernel, compiled or cached: before that there is
    nothing to fit, and importing SciPy here would cost every parallel launch's process 0.1 s)."""
    global _fitted
    if _fitted == threads or "scipy.linalg.cython_blas" not in sys.modules:
        return
    with _LOCK:
        if _fitted == threads:
            return
        _fitted = threads
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:                      # nothing to fit the threads with
            return
        ctl = ThreadpoolController()
        paths = [i["filepath"] for i in ctl.info() if i["user_api"] == "blas"
                 and "scipy" in os.path.basename(os.path.dirname(i["filepath"]))
                 and "numpy" not in i["filepath"]]
        for p in paths:
            ctl.select(filepath=p).limit(limits=max(1, (os.cpu_count() or 1) // threads))
