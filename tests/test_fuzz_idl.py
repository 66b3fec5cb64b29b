"""Fuzzing custom instructions: ``pypto.load_custom_insn`` on random and mutated IDL files (and on
paths that are not IDL at all), then the loaded instruction's operands, reference, IR and C++ and,
within a budget, its execution. Every outcome is success or a PtoError (IdlError for the file).
The IDL parser alone is fuzzed in tests/test_idl_frontend.py; ``make fuzz`` runs this with
10,000 examples.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import pypto
from pypto.idl import ast as A
from pypto.idl import custom, parse

from fuzzing import LONG_RUN, attempt, fuzz_settings, scalars, snapshot
from test_idl_frontend import EXAMPLES, mutants

pytestmark = pytest.mark.usefixtures("session")
RUN_BUDGET = [0 if LONG_RUN else 4]           # executions (each compiles a fused kernel) left
_files = itertools.count()


@pytest.fixture(scope="module", autouse=True)
def _forget_loaded_operators():
    """The mutants load operators under any name, library names too (replace=True): none may
    outlive this module (a later test's load_insn("cast") got a leftover custom "cast")."""
    yield
    custom._REGISTRY.clear()


def _write(tmp_path_factory, text, suffix=".idl"):
    d = tmp_path_factory.getbasetemp() / "fuzz-idl"
    d.mkdir(exist_ok=True)
    p = d / f"op{next(_files)}{suffix}"
    p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    return p


def _operands(op, draw_dims, rng):
    """Device tensors (and numbers) for each field of the operator, its dims drawn once per name."""
    sizes, arrays = {}, []
    for f in list(op.inputs) + list(op.outputs):
        if isinstance(f, A.TensorField):
            shape = tuple(d if isinstance(d, int) else sizes.setdefault(d, draw_dims()) for d in f.dims)
            arrays.append(pypto.Tensor((rng.standard_normal(shape) * 2).astype(f.dtype.np))
                          if not f.dtype.coded else pypto.zeros(shape, f.dtype))
        else:
            arrays.append(1.5 if f.dtype.is_float else 2)
    return arrays


@fuzz_settings(200)
@given(text=st.one_of(st.sampled_from(EXAMPLES), mutants(), mutants(), st.text(max_size=200)), data=st.data())
def test_load_custom_insn_on_mutated_files(text, data, tmp_path_factory):
    path = _write(tmp_path_factory, text)
    out = attempt(pypto.load_custom_insn, str(path), replace=True)
    event("loaded" if out.ok else type(out.error).__name__)
    if not out.ok:
        assert isinstance(out.error, pypto.errors.IdlError)
        return
    ops = {op.name: op for op in parse(path.read_bytes(), str(path)).operators}
    for name in out.value:
        got = attempt(pypto.load_insn, name)
        if not got.ok:
            continue
        insn, op = got.value, ops[name]
        rng = np.random.default_rng(0)
        dims = lambda: data.draw(st.sampled_from([16, 32, 8, 1, 0, 17]))  # noqa: E731
        made = attempt(_operands, op, dims, rng)
        if not made.ok:
            continue
        for i, v in enumerate(made.value):
            attempt(insn.set_operand, i, v)
        if data.draw(st.booleans()):
            attempt(insn.set_operand, data.draw(st.one_of(st.integers(-1, 9), scalars)), data.draw(scalars))
        attempt(insn.ir)
        attempt(insn.cpp)
        hosts = [v.numpy() if isinstance(v, pypto.Tensor) else v for v in made.value]
        attempt(insn.reference, *hosts[:len(op.inputs)])
        if RUN_BUDGET[0] != 1:
            RUN_BUDGET[0] -= 1
            live = [v for v in made.value if isinstance(v, pypto.Tensor)]
            before = snapshot(live)
            res = attempt(insn.execute)
            event("executed" if res.ok else f"execute: {type(res.error).__name__}")
            if not res.ok:
                assert snapshot(live) == before, f"a failed {name}.execute() changed an operand"


@fuzz_settings(100)
@given(blob=st.binary(max_size=300), suffix=st.sampled_from([".idl", "_pypto.so", ".so", ".txt", ""]))
def test_load_custom_insn_on_arbitrary_bytes_and_suffixes(blob, suffix, tmp_path_factory):
    path = _write(tmp_path_factory, blob, suffix)
    out = attempt(pypto.load_custom_insn, str(path), replace=True)
    if not out.ok:
        assert isinstance(out.error, pypto.errors.IdlError)


@fuzz_settings(100)
@given(path=st.one_of(scalars, st.text(max_size=40), st.just("a" * 5000), st.just("."), st.just("/"),
                      st.just("examples/idl"), st.just("examples/idl/softmax.idl")),
       replace=st.one_of(st.booleans(), scalars))
def test_load_custom_insn_on_any_argument(path, replace):
    attempt(pypto.load_custom_insn, path, replace=replace)
