"""The BLAS behind numba's ``np.dot`` (the cube's tile multiply) shares the cores with the
simulator's block threads: while blocks run in parallel it gets cores // threads threads of its
own, since BLAS threads on top of busy block threads only contend. numba calls SciPy's BLAS, so
numpy's (the user's, and the benchmarks' reference) is left alone."""
from __future__ import annotations

import os
import threading

_LOCK = threading.Lock()
_fitted: int | None = None


def share_cores(threads: int) -> None:
    """Limit SciPy's BLAS to max(1, cores // threads) threads (once per thread count). Called
    for kernels that use the cube, so a process without one never imports SciPy's linalg."""
    global _fitted
    with _LOCK:
        if _fitted == threads:
            return
        _fitted = threads
        try:
            import scipy.linalg.cython_blas  # noqa: F401  (loads the library numba calls)
            from threadpoolctl import ThreadpoolController
        except ImportError:                      # no SciPy BLAS to fit (numba would say so)
            return
        ctl = ThreadpoolController()
        paths = [i["filepath"] for i in ctl.info() if i["user_api"] == "blas"
                 and "scipy" in os.path.basename(os.path.dirname(i["filepath"]))
                 and "numpy" not in i["filepath"]]
        for p in paths:
            ctl.select(filepath=p).limit(limits=max(1, (os.cpu_count() or 1) // threads))
