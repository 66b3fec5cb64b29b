"""Library helpers compile one specialisation per plain argument types (lib/plain.py): a constant
at a call site (0, True) is not a new numba compile."""
from __future__ import annotations

import numpy as np
from numba import njit, types

from pypto.backends.sim.lib import cube, layout
from pypto.backends.sim.lib.plain import plain_calls


def _helper(x, flag):
    return x * 2 if flag else x + 1


def _caller(helper):
    @njit
    def caller(x, v):
        return helper(x, True) + helper(x, False) + helper(0, v)
    return caller


def _literal(sig) -> bool:
    return any(isinstance(t, types.Literal) for t in sig)


def test_constants_at_call_sites_share_one_specialisation():
    raw, plain = njit(_helper), plain_calls(njit(_helper))
    got = [_caller(h)(3, v) for h in (raw, plain) for v in (True, False)]
    assert got[:2] == got[2:] == [6 + 4 + 0, 6 + 4 + 1]
    # numba's own rule, which plain_calls changes: one compile per distinct constant
    assert len(raw.overloads) == 3 and sum(map(_literal, raw.overloads)) == 3
    assert list(plain.overloads) == [(types.int64, types.boolean)]


def test_the_cube_operand_path_is_compiled_for_plain_types():
    lay = types.UniTuple(types.int64, 6)
    u16 = types.Array(types.uint16, 1, "C")
    cube._raw.get_call_template((u16, lay, types.int64, types.int64, types.literal(True)), {})
    layout.copy_runs.get_call_template(
        (u16, types.literal(0), lay, types.literal(0), types.literal(0), u16, types.literal(0), lay,
         types.int64, types.int64, types.int64, types.int64, types.literal(False),
         types.literal(False)), {})
    for disp in (cube._raw, layout.copy_runs):
        assert disp.overloads and not any(map(_literal, disp.overloads)), disp.py_func.__name__


def test_a_plain_helper_still_runs_from_python():
    plain = plain_calls(njit(_helper))
    assert plain(np.int64(3), True) == 6 and plain(3, False) == 4
