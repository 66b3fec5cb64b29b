"""Fuzzing the kernel DSL: every instruction of the ISA table called with operands of the right and
the wrong kind, dtype, location, shape and valid region, with right and wrong mode parameters
and scalars; tiles, GM views and GlobalTensors built from random arguments. Every kernel either
runs or raises a PtoError, in eager mode (the body runs) and in compiled mode (traced, checked,
and, within a budget, compiled and launched). ``make fuzz`` runs it with 10,000 examples.
"""
from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import pypto
from pypto import dtypes as D
from pypto import pto
from pypto.isa import TABLE

from fuzzing import LONG_RUN, attempt, fuzz_settings, scalars

NAMES = sorted(TABLE)
LOCS = ["Vec", "Mat", "Left", "Right", "Acc", "Bias", "Scaling", "ScaleLeft", "ScaleRight"]
TILE_SHAPES = [(16, 16), (8, 32), (16, 64), (1, 16), (16, 1), (32, 16), (16, 8), (64, 16), (0, 16), (16, 15),
               (3, 5), (16, 16, 2)]
GM_SHAPE = (64, 64)
COMPILE_BUDGET = [0 if LONG_RUN else 6]     # compiled launches left in the quick tier (each compiles)


def _often(data, n: int) -> bool:
    return data.draw(st.sampled_from([True] * (n - 1) + [False]))


def _combo(data, spec) -> list:
    """One legal dtype combination of the instruction on a2a3, one dtype per operand slot."""
    combos = spec.dtypes.get("a2a3", ()) if isinstance(spec.dtypes, dict) else ()
    n = len(spec.operands)
    if not combos:
        return [pypto.float32] * n
    combo = data.draw(st.sampled_from(list(combos)))
    names = list(combo) if isinstance(combo, tuple) else [combo] * n
    names += [names[-1]] * (n - len(names))
    return [D.BY_NAME.get(x, pypto.float32) for x in names]


def _fit(shape, dt) -> tuple:
    """shape widened so one row is a whole number of 32-byte blocks of dt."""
    rows, cols = shape
    per = max(1, 32 // max(1, dt.itemsize // dt.lanes if dt.lanes > 1 else dt.itemsize))
    return (rows, max(cols, per) // per * per)


CUBE_ALIAS = {"Left": "TileLeft", "Right": "TileRight", "Acc": "TileAcc", "Bias": "TileBias",
              "Scaling": "TileScaling", "ScaleLeft": "TileLeftScale", "ScaleRight": "TileRightScale"}
REDUCED = re.compile(r"^T(ROW|COL)(SUM|MAX|MIN|PROD)$")     # their dst holds one column / row


def _tile(data, op, dt, shape, name):
    """A tile for operand op: as the table allows, or with one thing wrong (one time in three)."""
    wrong = data.draw(st.sampled_from([None] * 10 + ["loc", "dtype", "shape", "valid", "extra"]))
    loc = data.draw(st.sampled_from(list(op.locs_on("a2a3") or ("Vec",))))
    shape = _fit(shape, dt)
    valid, extra = None, {}
    m = REDUCED.match(name)
    if m and op.role == "out":
        valid = (shape[0], 1) if m.group(1) == "ROW" else (1, shape[1])
    if wrong == "loc":
        loc = data.draw(st.one_of(st.sampled_from(LOCS), scalars))
    elif wrong == "dtype":
        dt = data.draw(st.one_of(st.sampled_from(D.ALL), scalars))
    elif wrong == "shape":
        shape = data.draw(st.one_of(st.sampled_from(TILE_SHAPES), scalars))
    elif wrong == "valid":
        valid = data.draw(st.one_of(st.tuples(st.integers(-1, 70), st.integers(-1, 70)), scalars))
    elif wrong == "extra":
        extra = data.draw(st.dictionaries(st.sampled_from(["blayout", "slayout", "fractal", "pad"]),
                                          st.one_of(st.sampled_from(["RowMajor", "ColMajor", "NoneBox", 512,
                                                                     32, "Zero", "Max"]), scalars),
                                          min_size=1, max_size=2))
    return ("tile", loc, dt, shape, valid, extra)


def _gm(data):
    rows, cols = data.draw(st.sampled_from([(16, 16), (8, 32), (16, 64), (64, 64), (16, 8)]))
    r0 = 0 if _often(data, 6) else data.draw(st.integers(-8, 70))
    how = data.draw(st.sampled_from(["slice"] * 4 + ["global", "whole", "bad"]))
    return ("gm", data.draw(st.sampled_from(["x", "y"])), how, r0, rows, cols, data.draw(scalars))


def _plan(data):
    """One instruction call: its name, an operand plan and parameters."""
    name = data.draw(st.sampled_from(NAMES))
    spec = TABLE[name]
    dtypes = _combo(data, spec)
    shape = data.draw(st.sampled_from(TILE_SHAPES[:8]))
    ops = []
    for op, dt in zip(spec.operands, dtypes):
        if op.optional and not _often(data, 3):
            break
        kind = op.kind if _often(data, 12) else data.draw(st.sampled_from(["tile", "gm", "scalar"]))
        if kind == "tile":
            ops.append(_tile(data, op, dt, shape, name))
        elif kind == "gm":
            ops.append(_gm(data))
        else:
            ops.append(("scalar", data.draw(st.one_of(st.sampled_from([1, 2, 0.5, -1, 0]), scalars))))
    if not _often(data, 12):
        ops = ops[:-1] if ops and data.draw(st.booleans()) else ops + [ops[0] if ops else ("scalar", 1)]
    params = {}
    for p in spec.params:
        if not _often(data, 3):
            good = list(p.values or ())
            params[p.name] = data.draw(st.sampled_from(good)) if good and _often(data, 6) else \
                data.draw(st.one_of(st.sampled_from([None, "bogus", 3, True]), scalars))
    if not _often(data, 30):
        params[data.draw(st.text(min_size=1, max_size=5))] = data.draw(scalars)
    return name, ops, params


def _build(ops, x, y):
    out = []
    for o in ops:
        if o[0] == "tile":
            _, loc, dt, shape, valid, extra = o
            alias = CUBE_ALIAS.get(loc) if isinstance(loc, str) and not extra else None
            out.append(getattr(pto, alias)(dt, shape, valid=valid) if alias else
                       pto.Tile(loc, dt, shape, valid=valid, **extra))
        elif o[0] == "gm":
            _, which, how, r0, rows, cols, junk = o
            g = x if which == "x" else y
            if how == "slice":
                out.append(g[r0:r0 + rows, 0:cols])
            elif how == "global":
                out.append(pto.GlobalTensor(g, (1, 1, 1, rows, cols), (1, 1, 1, GM_SHAPE[1], 1), r0 * GM_SHAPE[1]))
            elif how == "whole":
                out.append(g)
            else:
                out.append(g[junk])
        else:
            out.append(o[1])
    return out


def _kernel(name, ops, params):
    def body(x, y):
        getattr(pto, name)(*_build(ops, x, y), **params)
    body.__name__ = body.__qualname__ = f"fuzz_{name}"
    return body


def _run(data, mode):
    name, ops, params = _plan(data)
    event(name)
    x = pypto.Tensor(np.arange(np.prod(GM_SHAPE), dtype=np.float32).reshape(GM_SHAPE) % 7)
    y = pypto.zeros(GM_SHAPE, pypto.float32)
    out = attempt(pypto.kernel, _kernel(name, ops, params), mode=mode)
    assert out.ok, out.error
    k = out.value
    with contextlib.redirect_stdout(io.StringIO()):     # TPRINT and friends
        if mode == "eager":
            res = attempt(k, x, y)
        else:
            res = attempt(k.ir, x, y)
            if res.ok:
                res = attempt(pypto.check, k, x, y)
            if res.ok and COMPILE_BUDGET[0] != 1:
                COMPILE_BUDGET[0] -= 1
                res = attempt(k, x, y)
    event(f"{mode}: {'ran' if res.ok else type(res.error).__name__}")
    x.free()
    y.free()


@fuzz_settings(300)
@given(data=st.data())
def test_every_instruction_eager(data, restart):
    if not pypto.is_initialized() or pypto.runtime.current().backend.default_mode() != "eager":
        restart(sim=pypto.SimOptions(mode="eager"))
    _run(data, "eager")


@fuzz_settings(300)
@given(data=st.data())
def test_every_instruction_compiled(data, session):
    _run(data, "compiled")


@fuzz_settings(300)
@given(loc=st.one_of(st.sampled_from(LOCS), scalars), dt=st.one_of(st.sampled_from(D.ALL), scalars),
       shape=st.one_of(st.sampled_from(TILE_SHAPES), st.tuples(st.integers(-2, 5000), st.integers(-2, 5000)),
                       scalars),
       valid=st.one_of(st.none(), st.tuples(st.integers(-2, 80), st.integers(-2, 80)), scalars),
       extra=st.dictionaries(st.sampled_from(["blayout", "slayout", "fractal", "pad", "bogus"]),
                             st.one_of(st.sampled_from(["RowMajor", "ColMajor", "NoneBox", 512, 16, "Zero"]),
                                       scalars), max_size=3),
       rows=st.one_of(st.integers(-3, 70), scalars), cols=st.one_of(st.integers(-3, 70), scalars),
       stride=st.one_of(st.tuples(*[st.integers(-1, 5000)] * 5), scalars),
       index=st.one_of(scalars, st.tuples(st.sampled_from([slice(0, 16), slice(None), slice(-4, None),
                                                            slice(0, 16, 2), slice(70, 90), 3, -1]),
                                          st.sampled_from([slice(0, 16), slice(None), 5, slice(0, 0)]))))
def test_tiles_views_and_global_tensors(loc, dt, shape, valid, extra, rows, cols, stride, index, session):
    def body(x, y):
        t = pto.Tile(loc, dt, shape, valid=valid, **extra)
        g = pto.GlobalTensor(x, (1, 1, 1, rows, cols), stride)
        pto.TLOAD(t, g)
        pto.TSTORE(y[index], t)

    x = pypto.Tensor(np.ones(GM_SHAPE, np.float32))
    y = pypto.zeros(GM_SHAPE, pypto.float32)
    k = pypto.kernel(body, mode="eager")
    out = attempt(k, x, y)
    event("ran" if out.ok else type(out.error).__name__)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_dsl_calls_outside_a_kernel_are_pto_errors(mode, session):
    """The DSL outside a kernel body: a DslContextError, never a raw exception."""
    t = attempt(pto.Tile, pto.Vec, pto.float32, (16, 16))
    assert not t.ok and isinstance(t.error, pypto.errors.DslContextError)
    for name in NAMES:
        out = attempt(getattr(pto, name))
        assert not out.ok, name
