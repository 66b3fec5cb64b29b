"""The numba loops of complex_index.py (which has the rules), kept apart so tracing its
instructions needs no numba."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..backends.sim.lib.layout import offset
from ..backends.sim.lib.jit import XCALLED

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py


@njit(**_J)
def tci(d, dvr, dvc, dl, start, desc, err):
    s = np.int64(start)
    for k in range(dvc):
        d[k] = s - k if desc else s + k


@njit(**_J)
def ttri(d, dvr, dvc, dl, diag, upper, one, zero, err):
    for r in range(dvr):
        edge = r + diag
        for c in range(dvc):
            if upper:
                v = zero if c < edge else one
            else:
                v = one if c <= edge else zero
            d[offset(dl, r, c)] = v
