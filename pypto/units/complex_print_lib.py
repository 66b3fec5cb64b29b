"""The numba loops of complex_print.py (which has the rules), kept apart so tracing its
instructions needs no numba."""
from __future__ import annotations

import warnings

from numba import njit, objmode
from numba.core.errors import NumbaWarning

from .complex_print import _print_gm, _print_tile

warnings.filterwarnings("ignore", message="Code running in object mode won't allow parallel",
                        category=NumbaWarning)


@njit(cache=True, error_model="numpy")
def tprint_tile(src, vr, vc, lay, rows, cols, code, lcode, err):
    with objmode():
        _print_tile(src, vr, vc, lay, rows, cols, code, lcode)


@njit(cache=True, error_model="numpy")
def tprint_gm(g, off, n0, n1, n2, n3, n4, s0, s1, s2, s3, s4, code, lcode, err):
    with objmode():
        _print_gm(g, off, (n0, n1, n2, n3, n4), (s0, s1, s2, s3, s4), code, lcode)
