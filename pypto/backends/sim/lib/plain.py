"""Library helpers compiled once per plain argument types, whatever constants their callers pass.

numba compiles a jitted function called from other jitted code for the argument types at the
call site, and a constant there is a literal type: ``_raw(src, lay, r, c, False)`` and
``_raw(src, lay, r, c, True)`` were two compiles, and ``copy_runs`` called with 0 for an offset
was compiled again beside the one taking any int64. In a cold run of the cube's conformance
tests such literal specialisations were 29 % of the compile time (68 of 235 s). ``plain_calls``
types every call of a helper with its arguments' plain types, so one specialisation serves them
all; LLVM still sees the constants where it links the helper into its caller.
"""
from __future__ import annotations

from numba.core import types


def plain_calls(disp):
    """Make the njit dispatcher ``disp`` compile calls from jitted code for the plain types of
    their arguments (Literal[int](0) as int64, Literal[bool](True) as bool). Calls from Python
    are unchanged. Returns ``disp`` (use as a decorator above ``@njit``)."""
    resolve = disp.get_call_template

    def get_call_template(args, kws):
        return resolve(tuple(types.unliteral(a) for a in args),
                       {k: types.unliteral(v) for k, v in kws.items()})
    disp.get_call_template = get_call_template
    return disp
