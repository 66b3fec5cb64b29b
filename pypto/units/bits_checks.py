"""The run-time checks of the bitwise, compare and select loops (bits_rules.py has the static
rules, the decoders and the C++ guards), kept apart so tracing needs no numba."""
from __future__ import annotations

from numba import njit

from ..backends.sim.lib.jit import XCALLED
from .bits_rules import COVERS, MASK_ROWS, MASK_STREAM, OVERLAP
from .complex_faults import rule_fault5 as rule_fault

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py


@njit(inline="always", **_J)
def overlap(a, b):
    """Whether two tile storage arrays share a byte (they are views of one on-chip space)."""
    pa = a.ctypes.data
    pb = b.ctypes.data
    return pa < pb + b.nbytes and pb < pa + a.nbytes


@njit(**_J)
def disjoint(ia, a, avr, avc, al, ib, b, bvr, bvc, bl, err):
    """Run-time no-overlap check of two tile operands (their storage arrays)."""
    if overlap(a, b):
        rule_fault(OVERLAP, ia, ib, 0, 0, 0, err)


@njit(inline="always", **_J)
def mask_rows_fit(k, vr, vc, rows, row_bytes, err):
    """A per-row mask of vr rows of ceil(vc / 8) bytes fits a tile of rows x row_bytes."""
    if vr > rows or (vc + 7) // 8 > row_bytes:
        rule_fault(MASK_ROWS, k, vr, vc, 0, 0, err)
        return False
    return True


@njit(inline="always", **_J)
def mask_stream_fits(k, bits, nbytes, err):
    if (bits + 7) // 8 > nbytes:
        rule_fault(MASK_STREAM, k, bits, 0, 0, 0, err)
        return False
    return True


@njit(inline="always", **_J)
def covers_src(k, svr, svc, ref, rvr, rvc, err):
    """Operand k's valid region contains operand ref's."""
    if svr < rvr or svc < rvc:
        rule_fault(COVERS, k, svr, svc, ref, 0, err)
        return False
    return True
