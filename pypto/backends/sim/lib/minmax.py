"""min and max of a generated kernel's index and scalar expressions, each one LLVM select.

Python's ``min(a, b)`` in a kernel made numba compile its builtin's implementation once per
process and argument types (0.025 s of a cold first launch of the tutorial's add). These give
Python's results: ``min(a, b)`` is ``b if b < a else a`` (so a NaN ``b`` yields ``a``), ``max``
likewise with ``>``; int64 operands stay int64, any float makes both float64.
"""
from __future__ import annotations

from numba.core import types
from numba.extending import intrinsic


def _pick(less: bool):
    def pick(typingctx, a, b):
        if not all(isinstance(t, (types.Integer, types.Float, types.Boolean)) for t in (a, b)):
            return None
        out = types.float64 if any(isinstance(t, types.Float) for t in (a, b)) else types.int64

        def codegen(context, builder, sig, args):
            x, y = (context.cast(builder, v, t, out) for v, t in zip(args, sig.args))
            if out == types.float64:
                better = builder.fcmp_ordered("<" if less else ">", y, x)
            else:
                better = builder.icmp_signed("<" if less else ">", y, x)
            return builder.select(better, y, x)
        return out(a, b), codegen
    pick.__name__ = "kmin" if less else "kmax"
    return intrinsic(pick)


kmin, kmax = _pick(True), _pick(False)
