"""TLOAD / TSTORE of an unboxed tile call the small move_rows (one function for both directions)
where every line is consecutive in GM and nothing is padded, move_run where the view and the
tile rows it fills are each one run (one row, or whole rows of both), and tload_lines /
tstore_lines otherwise (a column-major tile's columns from a row-major view; a padded tile): the
smaller forms leave out loops whose compile was most of a cold first launch's TLOAD. The results
are numpy's either way."""
from __future__ import annotations

import numpy as np
import pytest

import pypto
from pypto import pto

FORMS = {"consecutive": ("move_rows", "move_rows"),   # rows of 16 from rows of 32
         "whole rows": ("move_run", "move_run"),       # all 32 columns: one run of 8 x 32
         "one row": ("move_run", "move_run"),
         "strided": ("tload_lines", "tstore_lines"),     # GM stride 32 along the tile's lines
         "padded": ("tload_lines", "move_rows")}
WINDOW = {"padded": np.s_[:, 0:10], "whole rows": np.s_[:, :], "one row": np.s_[2:3, 0:16]}


def _kernel(case: str):
    def k(x, y):
        if case == "strided":            # a column-major tile's lines are the view's columns
            src, dst = x[:, 0:16], y[:, 0:16]
            t = pto.Tile(pto.Vec, pto.float32, (8, 16), blayout=pto.ColMajor)
        elif case == "padded":           # 10 columns: the last 32-byte block of each row is padded
            src, dst = x[:, 0:10], y[:, 0:10]
            t = pto.Tile(pto.Vec, pto.float32, (8, 16), valid=(8, 10), pad=pto.PadMax)
        elif case == "whole rows":
            src, dst = x[:, :], y[:, :]
            t = pto.Tile(pto.Vec, pto.float32, (8, 32))
        elif case == "one row":
            src, dst = x[2:3, 0:16], y[2:3, 0:16]
            t = pto.Tile(pto.Vec, pto.float32, (1, 16))
        else:
            src, dst = x[:, 0:16], y[:, 0:16]
            t = pto.Tile(pto.Vec, pto.float32, (8, 16))
        pto.TLOAD(t, src)
        pto.TADDS(t, t, 1.0)
        pto.TSTORE(dst, t)
    k.__name__ = f"k_{case.replace(' ', '_')}"
    return pypto.kernel(k)


@pytest.mark.parametrize("case", sorted(FORMS))
def test_each_move_takes_its_form_and_gives_numpys_result(case):
    pypto.init()
    try:
        xh = np.arange(8 * 32, dtype=np.float32).reshape(8, 32) / 7
        x, y = pypto.Tensor(xh), pypto.zeros((8, 32), pypto.float32)
        k = _kernel(case)
        k(x, y)
        want = np.zeros((8, 32), np.float32)
        cols = WINDOW.get(case, np.s_[:, 0:16])
        want[cols] = xh[cols] + np.float32(1.0)
        np.testing.assert_array_equal(y.numpy(), want)
        prog = next(p for ir in k._traces.values() for p in ir.programs.values())
        src = prog.artifact.gen.source
        load, store = FORMS[case]
        assert f"import {load} as" in src and f"import {store} as" in src
    finally:
        pypto.finalize()
