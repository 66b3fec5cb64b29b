"""The UNIT_RULE fault helpers of the units' numba loops (complex_common.py has the decoders and
the static helpers), kept apart so tracing needs no numba."""
from __future__ import annotations

from numba import njit

from ..backends import errcodes as EC
from ..backends.sim.lib.jit import XCALLED
from ..backends.sim.lib.plain import plain_calls

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py


@plain_calls
@njit(**_J)
def rule_fault(rule, a, b, c, d, err):
    """Record a UNIT_RULE fault: the unit's rule id and four values (decoded by the unit)."""
    err[0] = EC.UNIT_RULE
    err[1] = rule
    err[2] = a
    err[3] = b
    err[4] = c
    err[5] = d


@plain_calls
@njit(**_J)
def rule_fault5(rule, a, b, c, d, e, err):
    """rule_fault with a fifth value (err[6])."""
    rule_fault(rule, a, b, c, d, err)
    err[6] = e
