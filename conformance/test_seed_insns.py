"""Seed API conformance: ``load_insn`` + ``set_operand`` + ``execute`` against the numpy reference.

Every result is compared bit for bit with ``reference.binary`` (so -0.0 and NaN payloads count);
every error case checks the exception type, that it is a ``pypto.PtoError``, and that the output
operand still holds its sentinel afterwards.
"""
from __future__ import annotations

import math

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto
from pypto.testing import finalize_quietly
from pypto import errors

from . import reference as ref
from .helpers import (assert_bits_equal, quiet_nans, random_scalar, rng_for,
                      random_values, seeds, sentinel, shapes, soc_of)

SHAPES = [(5,), (1000,), (37, 129), (4, 300, 65)]
DTYPES = ["float32", "float16", "int32", "int16", "bfloat16"]
A5_EXTRA = ["uint8", "int8", "uint16", "uint32"]
OPS = ref.BINARY_OPS + ref.SCALAR_OPS
KINDS = ("numpy", "tensor")

PROPERTY_SETTINGS = settings(max_examples=40, deadline=None,
                             suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                    HealthCheck.too_slow])


def pdt(name: str):
    return getattr(pypto, name)


def make_inputs(rng: np.random.Generator, op: str, dtype: str, shape: tuple[int, ...]):
    a = random_values(rng, dtype, shape)
    b = random_scalar(rng, dtype) if op in ref.SCALAR_OPS else random_values(rng, dtype, shape)
    return a, b


def as_operand(x: Any, kind: str):
    """numpy array -> the requested operand kind (scalars stay scalars)."""
    if kind == "tensor" and isinstance(x, np.ndarray):
        return pypto.Tensor(x, dtype=pdt(ref.LONG[x.dtype]))
    return x


def host(x: Any) -> np.ndarray:
    return x.numpy() if isinstance(x, pypto.Tensor) else x


def run_seed(op: str, a: Any, b: Any, out: Any) -> None:
    insn = pypto.load_insn(op)
    insn.set_operand(0, a)
    insn.set_operand(1, b)
    insn.set_operand(2, out)
    insn.execute()


def check_case(op: str, dtype: str, a: np.ndarray, b: Any, kinds: tuple[str, str, str],
               soc: str) -> None:
    """Run one case and compare with the reference (or with the DTypeError when illegal)."""
    out_host = sentinel(a.shape, dtype)
    A, B, O = as_operand(a, kinds[0]), as_operand(b, kinds[1]), as_operand(out_host, kinds[2])
    if not ref.is_legal(op, dtype, soc):
        with pytest.raises(errors.DTypeError) as ei:
            run_seed(op, A, B, O)
        assert isinstance(ei.value, pypto.PtoError)
        assert_bits_equal(host(O), sentinel(a.shape, dtype), what="output after DTypeError")
        return
    run_seed(op, A, B, O)
    expected, loose = ref.binary(op, a, b, dtype, with_loose=True)
    assert_bits_equal(host(O), expected, loose=loose, inputs={"a": a, "b": b},
                      what=f"{op} {dtype} {a.shape}")


# ---------------------------------------------------------------------------------------------
# the main matrix: ops x dtypes x shapes x operand kinds
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_seed_op(pto_session, op, dtype, shape, kind):
    rng = rng_for(op, dtype, shape, kind)
    a, b = make_inputs(rng, op, dtype, shape)
    check_case(op, dtype, a, b, (kind, kind, kind), soc_of(pto_session))


@pytest.mark.parametrize("kinds", [("tensor", "numpy", "numpy"), ("numpy", "tensor", "tensor"),
                                   ("tensor", "tensor", "numpy")], ids="-".join)
@pytest.mark.parametrize("op", ["add", "max", "muls"])
def test_seed_mixed_operand_kinds(pto_session, op, kinds):
    rng = rng_for("mixed", op, kinds)
    a, b = make_inputs(rng, op, "float32", (37, 129))
    check_case(op, "float32", a, b, kinds, soc_of(pto_session))


@pytest.mark.parametrize("name", ["TADD", "TSUB", "TMUL", "TDIV", "TMAX", "TMIN", "TADDS", "TMULS"])
def test_seed_pto_names(pto_session, name):
    """The PTO names are accepted as well and compute the same thing."""
    op = {v: k for k, v in ref.PTO_NAME.items()}[name]
    rng = rng_for("pto-name", name)
    a, b = make_inputs(rng, op, "float32", (37, 129))
    out = sentinel(a.shape, "float32")
    run_seed(name, a, b, out)
    expected, loose = ref.binary(op, a, b, "float32", with_loose=True)
    assert_bits_equal(out, expected, loose=loose, inputs={"a": a, "b": b})


@PROPERTY_SETTINGS
@given(data=st.data())
def test_seed_property(pto_session, data):
    soc = soc_of(pto_session)
    op = data.draw(st.sampled_from(OPS), label="op")
    legal = [d for d in DTYPES + A5_EXTRA if ref.is_legal(op, d, soc) and ref.is_modelled(op, d)]
    dtype = data.draw(st.sampled_from(legal), label="dtype")
    shape = data.draw(shapes(), label="shape")
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    a, b = make_inputs(rng, op, dtype, shape)
    check_case(op, dtype, a, b, (kind, kind, kind), soc)


# ---------------------------------------------------------------------------------------------
# the a5 profile: more dtypes (u8 i8 u16 u32, bf16 for TADD/TADDS/TMULS)
# ---------------------------------------------------------------------------------------------
# Each new (op, dtype) pair costs a numba compilation, so the a5-only dtypes are spread over the
# ops rather than crossed with all of them; illegal pairs (cheap: no compilation) are all checked.
A5_CASES = [("add", d) for d in ("uint8", "int8", "uint16", "uint32", "bfloat16")] + [
    ("sub", "uint8"), ("sub", "uint32"), ("mul", "uint32"), ("mul", "uint16"), ("max", "int8"),
    ("min", "uint16"), ("adds", "bfloat16"), ("adds", "uint8"), ("muls", "int8"),
    ("muls", "bfloat16"), ("div", "float16"),
] + [(op, d) for op in OPS for d in DTYPES + A5_EXTRA if not ref.is_legal(op, d, "a5")]


@pytest.mark.parametrize("op,dtype", A5_CASES, ids=[f"{o}-{d}" for o, d in A5_CASES])
def test_seed_a5_dtypes(pto_init, target, op, dtype):
    try:
        pto_init(soc="a5")
    except pypto.PtoError as e:
        if target.backend != "sim":
            pytest.skip(f"a5 profile not available on this {target.backend} device: {e}")
        raise
    for shape in [(5,), (37, 129)]:
        rng = rng_for("a5", op, dtype, shape)
        a, b = make_inputs(rng, op, dtype, shape)
        check_case(op, dtype, a, b, ("tensor", "tensor", "tensor"), "a5")


# ---------------------------------------------------------------------------------------------
# specific semantics worth a named test
# ---------------------------------------------------------------------------------------------
SCALAR_CASES = [
    # (dtype, op, scalar, soc): conversions of the scalar operand to the element type
    ("float16", "adds", 1 + 2.0 ** -11 + 2.0 ** -40, "a2a3"),  # rounds up directly; via f32 -> tie -> down
    ("float16", "adds", 0.1, "a2a3"),
    ("float16", "muls", 65519.0, "a2a3"),                      # largest that stays finite
    ("float16", "muls", math.inf, "a2a3"),                     # inf is a value, not an overflow
    ("float16", "muls", -0.0, "a2a3"),
    ("float32", "adds", 2 ** 24 + 1, "a2a3"),                  # int scalar, rounds to 2^24
    ("float32", "adds", 1e-46, "a2a3"),                        # below the smallest subnormal -> 0
    ("float32", "muls", 1.0 / 3.0, "a2a3"),
    ("int16", "adds", 32767, "a2a3"),                          # the range's ends are fine
    ("int16", "muls", -32768, "a2a3"),
    ("int32", "adds", 2 ** 31 - 1, "a2a3"),
    ("bfloat16", "adds", 1 + 2.0 ** -8 + 2.0 ** -40, "a5"),    # direct rounding, no double rounding
    ("uint8", "adds", 255, "a5"),
    ("int8", "muls", -128, "a5"),
    ("int16", "adds", 7.0, "a2a3"),                            # an integral float is an integer
]

# Scalars that do not fit the element type are refused, as pypto.Tensor data is (defect 5 of
# issue 5: they used to wrap silently, and 1e6 became inf in float16).
BAD_SCALARS = [
    ("int16", "adds", 70000, "a2a3"), ("int16", "muls", -70000, "a2a3"),
    ("int32", "adds", 2 ** 40, "a2a3"), ("int32", "adds", 2 ** 64 + 3, "a2a3"),
    ("uint8", "adds", -1, "a5"), ("int8", "muls", 200, "a5"),
    ("float16", "adds", 1e6, "a2a3"), ("float16", "muls", 70000.0, "a2a3"),
    ("float32", "adds", 1e39, "a2a3"), ("int16", "adds", 1.5, "a2a3"),
]


@pytest.mark.parametrize("dtype,op,scalar,soc", BAD_SCALARS,
                         ids=[f"{d}-{o}-{s!r}-{c}" for d, o, s, c in BAD_SCALARS])
def test_scalar_that_does_not_fit_is_refused(pto_init, target, dtype, op, scalar, soc):
    pto_init(soc=soc)
    a = random_values(rng_for("bad-scalar", dtype, op), dtype, (4, 8))
    out = np.full(a.shape, 7, a.dtype)
    insn = pypto.load_insn(op)
    insn.set_operand(0, pypto.Tensor(a))
    insn.set_operand(1, scalar)
    insn.set_operand(2, out)
    with pytest.raises(pypto.errors.DTypeError) as ei:
        insn.execute()
    assert str(scalar)[:4] in str(ei.value) or repr(scalar)[:4] in str(ei.value)
    assert "Fix:" in str(ei.value)
    assert np.all(out == 7), "a failed execute() leaves its output untouched"


@pytest.mark.parametrize("dtype,op,scalar,soc", SCALAR_CASES,
                         ids=[f"{d}-{o}-{s!r}-{c}" for d, o, s, c in SCALAR_CASES])
def test_scalar_operand_conversion(pto_init, target, dtype, op, scalar, soc):
    try:
        pto_init(soc=soc)
    except pypto.PtoError as e:
        if target.backend != "sim":
            pytest.skip(f"{soc} profile not available on this {target.backend} device: {e}")
        raise
    rng = rng_for("scalar", dtype, op, scalar)
    a = random_values(rng, dtype, (37, 129))
    a.ravel()[:8] = np.array([0, 1, -1, 2, 3, 100, 7, 5]).astype(ref.np_dtype(dtype)) \
        if dtype != "bfloat16" else ref.f32_to_bf16(np.array([0, 1, -1, 2, 3, 100, 7, 5], np.float32))
    check_case(op, dtype, a, scalar, ("tensor", "numpy", "tensor"), soc)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "max", "min"])
def test_signalling_nan_is_quieted(pto_session, op, dtype):
    """A single NaN operand comes out quieted with its sign and payload (IEEE 754 recommendation)."""
    dt = ref.np_dtype(dtype)
    if dt == ref.F32:
        nans = np.array([0x7F800001, 0xFF812345, 0x7FA00000, 0x7FC00001], np.uint32).view(dt)
    else:
        nans = np.array([0x7C01, 0xFD23, 0x7D00, 0x7E01], np.uint16).view(dt)
    others = np.array([1.0, -2.5, 0.0, np.inf], np.float32).astype(dt)
    a = np.concatenate([nans, others])
    b = np.concatenate([others, nans])
    out = sentinel(a.shape, dtype)
    run_seed(op, a, b, out)
    expected, loose = ref.binary(op, a, b, dtype, with_loose=True)
    assert not loose.any()
    assert_bits_equal(out, expected, inputs={"a": a, "b": b})


def test_float16_overflow_and_ties(pto_session):
    """Hardware f16 rounding: 60000 + 60000 = inf, and ties go to even."""
    a = np.array([60000, 1, 1, 2049, -60000, 65504, 1], np.float16)
    b = np.array([60000, 2 ** -11, 3 * 2 ** -11, 0, -60000, 16, 2 ** -24], np.float16)
    out = np.zeros_like(a)
    run_seed("add", a, b, out)
    expected = ref.binary("add", a, b)
    assert_bits_equal(out, expected, inputs={"a": a, "b": b})
    assert np.isposinf(out[0]) and out[1] == 1 and np.isneginf(out[4])


def test_integer_wraparound(pto_session):
    a = np.array([2 ** 31 - 1, -2 ** 31, 65536, -7], np.int32)
    b = np.array([1, -1, 65536, 3], np.int32)
    for op in ("add", "sub", "mul"):
        out = sentinel(a.shape, "int32")
        run_seed(op, a, b, out)
        assert_bits_equal(out, ref.binary(op, a, b), what=op)
    a16 = np.array([32767, -32768, 256, -1], np.int16)
    b16 = np.array([1, -1, 256, -1], np.int16)
    out16 = sentinel(a16.shape, "int16")
    run_seed("mul", a16, b16, out16)
    assert out16.tolist() == [32767, -32768, 0, 1]


# ---------------------------------------------------------------------------------------------
# both sim modes in one test
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", OPS)
def test_seed_modes_bit_identical(sim_modes, op):
    results: dict[tuple[str, str], np.ndarray] = {}
    inputs = {}
    for mode, init in sim_modes:
        init()
        for dtype in ("float32", "float16", "int32", "int16"):
            if not ref.is_legal(op, dtype, "a2a3"):
                continue
            rng = rng_for("modes", op, dtype)
            a, b = make_inputs(rng, op, dtype, (37, 129))
            inputs[dtype] = (a, b)
            out = pypto.Tensor(sentinel(a.shape, dtype))
            run_seed(op, pypto.Tensor(a), b if op in ref.SCALAR_OPS else pypto.Tensor(b), out)
            results[(mode, dtype)] = out.numpy()
        finalize_quietly()
    for (mode, dtype), got in results.items():
        if mode != "compiled":
            continue
        a, b = inputs[dtype]
        assert_bits_equal(results[("eager", dtype)], got, inputs={"a": a, "b": b},
                          what=f"eager vs compiled {op} {dtype}")
        expected, loose = ref.binary(op, a, b, dtype, with_loose=True)
        assert_bits_equal(got, expected, loose=loose, inputs={"a": a, "b": b})


# ---------------------------------------------------------------------------------------------
# the tutorial (seed-walkthrough.md Steps 2-4)
# ---------------------------------------------------------------------------------------------
def test_tutorial_step2(pto_session, capsys):
    add_insn = pypto.load_insn("add")
    print(f"name: {add_insn.name}")
    print(f"id: {hex(add_insn.insn_id)}")
    print(f"operands: {add_insn.num_operands}")
    assert capsys.readouterr().out == "name: add\nid: 0x1001\noperands: 3\n"
    assert pypto.load_insn("TADD").insn_id == 0x1001
    assert isinstance(add_insn.signature, str) and add_insn.signature


def test_tutorial_step3(pto_session, capsys):
    add_insn = pypto.load_insn("add")
    a = np.array([1, 2, 3, 4, 5], dtype=np.float32)
    b = np.array([10, 20, 30, 40, 50], dtype=np.float32)
    c = np.zeros(5, dtype=np.float32)
    add_insn.set_operand(0, a)
    add_insn.set_operand(1, b)
    add_insn.set_operand(2, c)
    add_insn.execute()
    print(f"result: {c}")
    assert capsys.readouterr().out == "result: [11. 22. 33. 44. 55.]\n"


def test_tutorial_step4(pto_session, capsys):
    add_insn = pypto.load_insn("add")
    a = pypto.Tensor([1, 2, 3, 4, 5], dtype=pypto.float32)
    b = pypto.Tensor([10, 20, 30, 40, 50], dtype=pypto.float32)
    c = pypto.Tensor([0, 0, 0, 0, 0], dtype=pypto.float32)
    add_insn.set_operand(0, a)
    add_insn.set_operand(1, b)
    add_insn.set_operand(2, c)
    add_insn.execute()
    print(f"result: {c.numpy()}")
    assert capsys.readouterr().out == "result: [11. 22. 33. 44. 55.]\n"


def test_tutorial_steps_with_second_init(pto_session, capsys):
    """The snippets call pypto.init() themselves; a second init() must be harmless."""
    pypto.init()
    add_insn = pypto.load_insn("add")
    a = pypto.Tensor([1, 2, 3, 4, 5], dtype=pypto.float32)
    b = pypto.Tensor([10, 20, 30, 40, 50], dtype=pypto.float32)
    c = pypto.Tensor([0, 0, 0, 0, 0], dtype=pypto.float32)
    add_insn.set_operand(0, a)
    add_insn.set_operand(1, b)
    add_insn.set_operand(2, c)
    add_insn.execute()
    print(f"result: {c.numpy()}")
    assert capsys.readouterr().out == "result: [11. 22. 33. 44. 55.]\n"


# ---------------------------------------------------------------------------------------------
# staging and compilation
# ---------------------------------------------------------------------------------------------
def test_numpy_operands_are_staged_and_counted(pto_session):
    a = np.arange(1000, dtype=np.float32)
    b = np.full(1000, 0.5, np.float32)
    c = np.zeros(1000, np.float32)
    pypto.reset_stats()
    run_seed("add", a, b, c)
    s = pypto.stats()
    assert s.h2d_copies >= 2 and s.h2d_bytes >= 2 * a.nbytes, s
    assert s.d2h_copies >= 1 and s.d2h_bytes >= c.nbytes, s
    assert_bits_equal(c, a + b)
    A, B, C = pypto.Tensor(a), pypto.Tensor(b), pypto.Tensor(np.zeros(1000, np.float32))
    pypto.reset_stats()
    run_seed("add", A, B, C)
    s = pypto.stats()
    assert s.h2d_copies == 0 and s.d2h_copies == 0, f"device operands must not be copied: {s}"
    assert_bits_equal(C.numpy(), a + b)


def test_new_shape_does_not_recompile(target, pto_session):
    if target.mode != "compiled":
        pytest.skip("compile counting applies to the compiled sim mode")
    rng = rng_for("recompile")
    a, b = make_inputs(rng, "add", "float32", (5,))
    run_seed("add", a, b, np.zeros_like(a))
    before = pypto.stats().compiles
    for shape in [(37, 129), (4, 300, 65), (1000,), (7, 3, 2, 5)]:
        a, b = make_inputs(rng, "add", "float32", shape)
        out = np.zeros_like(a)
        run_seed("add", a, b, out)
        expected, loose = ref.binary("add", a, b, with_loose=True)
        assert_bits_equal(out, expected, loose=loose, inputs={"a": a, "b": b})
    assert pypto.stats().compiles == before, "a new shape of 'add' must not recompile"


# ---------------------------------------------------------------------------------------------
# error cases: type, PtoError, and the output operand left untouched
# ---------------------------------------------------------------------------------------------
def _mk(shape, dtype, kind, fill="random", seed=0):
    """(host array, operand) for an error case; float64 stays a numpy array (it cannot be a Tensor)."""
    dt = ref.np_dtype(dtype)
    rng = np.random.default_rng(seed)
    if dt == np.float64:
        arr = np.full(shape, -1234.5625) if fill == "sentinel" else rng.standard_normal(shape)
        return arr, arr
    arr = sentinel(shape, dt) if fill == "sentinel" else random_values(rng, dt, shape)
    return arr, as_operand(arr, kind)


def _assert_untouched(O, original: np.ndarray):
    assert_bits_equal(host(O), original, what="output operand after the error")


def test_load_insn_before_init():
    finalize_quietly()
    with pytest.raises(pypto.PtoError) as ei:
        pypto.load_insn("add")
    msg = str(ei.value)
    assert "Insn add not found" in msg
    assert "pypto.init()" in msg


@pytest.mark.parametrize("name,suggestion", [("ad", "add"), ("mull", "mul"), ("TADDD", "TADD"),
                                             ("subb", "sub")])
def test_unknown_insn_suggests_closest(pto_session, name, suggestion):
    with pytest.raises(pypto.PtoError) as ei:
        pypto.load_insn(name)
    msg = str(ei.value)
    assert f"Insn {name} not found" in msg
    assert re.search(rf"\b{suggestion}\b", msg), msg


_TADD_LEGAL_A2A3 = {"float32": "f32", "float16": "f16", "int32": "i32", "int16": "i16"}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("pos", [0, 1, 2])
def test_float64_operand_rejected(pto_session, pos, kind):
    shape = (37, 129)
    ops = []
    for i in range(3):
        dtype = np.float64 if i == pos else "float32"
        ops.append(_mk(shape, dtype, kind, fill="sentinel" if i == 2 else "random", seed=i))
    with pytest.raises(errors.DTypeError) as ei:
        run_seed("add", *(o[1] for o in ops))
    assert isinstance(ei.value, pypto.PtoError)
    msg = str(ei.value)
    assert "float64" in msg, msg
    for long, short in _TADD_LEGAL_A2A3.items():
        assert long in msg or re.search(rf"\b{short}\b", msg), f"legal type {long} not listed: {msg}"
    out_host, out_op = ops[2]
    _assert_untouched(out_op, out_host)


def test_tensor_from_float64_rejected(pto_session):
    with pytest.raises(errors.DTypeError) as ei:
        pypto.Tensor(np.zeros(4, np.float64))
    assert isinstance(ei.value, pypto.PtoError)
    assert "float32" in str(ei.value)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtypes", [("float32", "float16", "float32"), ("float32", "float32", "float16"),
                                    ("int32", "float32", "int32"), ("int16", "int16", "int32")],
                         ids="-".join)
def test_mismatched_dtypes(pto_session, dtypes, kind):
    shape = (37, 129)
    ops = [_mk(shape, d, kind, fill="sentinel" if i == 2 else "random", seed=i)
           for i, d in enumerate(dtypes)]
    with pytest.raises(errors.DTypeMismatchError) as ei:
        run_seed("add", *(o[1] for o in ops))
    assert isinstance(ei.value, pypto.PtoError)
    _assert_untouched(ops[2][1], ops[2][0])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shapes_", [((5,), (6,), (5,)), ((5,), (5,), (6,)),
                                     ((37, 129), (129, 37), (37, 129)),
                                     ((4, 300, 65), (4, 300, 65), (300, 4, 65))],
                         ids=lambda s: "_".join("x".join(map(str, t)) for t in s))
def test_mismatched_shapes(pto_session, shapes_, kind):
    ops = [_mk(s, "float32", kind, fill="sentinel" if i == 2 else "random", seed=i)
           for i, s in enumerate(shapes_)]
    with pytest.raises(errors.ShapeError) as ei:
        run_seed("add", *(o[1] for o in ops))
    assert isinstance(ei.value, pypto.PtoError)
    _assert_untouched(ops[2][1], ops[2][0])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("unset", [0, 1, 2])
def test_unset_operand(pto_session, unset, kind):
    shape = (1000,)
    ops = [_mk(shape, "float32", kind, fill="sentinel" if i == 2 else "random", seed=i)
           for i in range(3)]
    insn = pypto.load_insn("add")
    for i in range(3):
        if i != unset:
            insn.set_operand(i, ops[i][1])
    with pytest.raises(errors.OperandNotSetError) as ei:
        insn.execute()
    assert isinstance(ei.value, pypto.PtoError)
    if unset != 2:
        _assert_untouched(ops[2][1], ops[2][0])


def test_execute_with_nothing_set(pto_session):
    with pytest.raises(errors.OperandNotSetError) as ei:
        pypto.load_insn("mul").execute()
    assert isinstance(ei.value, pypto.PtoError)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("index", [3, 4, -1])
def test_operand_index_out_of_range(pto_session, index, kind):
    shape = (37, 129)
    ops = [_mk(shape, "float32", kind, fill="sentinel" if i == 2 else "random", seed=i)
           for i in range(3)]
    insn = pypto.load_insn("add")
    assert insn.num_operands == 3
    with pytest.raises(errors.OperandIndexError) as ei:
        insn.set_operand(index, ops[0][1])
    assert isinstance(ei.value, pypto.PtoError)
    _assert_untouched(ops[2][1], ops[2][0])


def test_scalar_operand_index_out_of_range(pto_session):
    insn = pypto.load_insn("adds")
    assert insn.num_operands == 3
    with pytest.raises(errors.OperandIndexError):
        insn.set_operand(3, 1.0)


def test_non_array_operand_is_a_pto_error(pto_session):
    insn = pypto.load_insn("add")
    with pytest.raises(pypto.PtoError):
        insn.set_operand(0, "not an array")
        insn.set_operand(1, np.zeros(5, np.float32))
        insn.set_operand(2, np.zeros(5, np.float32))
        insn.execute()


@pytest.mark.parametrize("host_pos", [0, 1, 2])
def test_strict_host_operands(pto_init, host_pos):
    pto_init(strict_host_operands=True)
    shape = (37, 129)
    ops = [_mk(shape, "float32", "numpy" if i == host_pos else "tensor",
               fill="sentinel" if i == 2 else "random", seed=i) for i in range(3)]
    with pytest.raises(errors.HostMemoryError) as ei:
        run_seed("add", *(o[1] for o in ops))
    assert isinstance(ei.value, pypto.PtoError)
    assert "pypto.Tensor" in str(ei.value), str(ei.value)
    _assert_untouched(ops[2][1], ops[2][0])


def test_strict_host_operands_allows_tensors(pto_init):
    pto_init(strict_host_operands=True)
    a = np.arange(10, dtype=np.float32)
    out = pypto.Tensor(sentinel((10,), "float32"))
    run_seed("add", pypto.Tensor(a), pypto.Tensor(a), out)
    assert_bits_equal(out.numpy(), a + a)


@pytest.mark.parametrize("dtype", ["int32", "int16"])
def test_div_integer_rejected_on_a2a3(pto_session, dtype):
    """TDIV has no integer types on a2a3."""
    if soc_of(pto_session) != "a2a3":
        pytest.skip("a2a3 rule")
    a = random_values(rng_for("div-int", dtype), dtype, (37, 129), nonzero=True)
    check_case("div", dtype, a, a.copy(), ("tensor", "tensor", "tensor"), "a2a3")


def test_quiet_nans_helper_sanity():
    """The generators only produce quiet NaNs unless asked (keeps NaN payload checks meaningful)."""
    v = random_values(np.random.default_rng(3), "float16", (4096,), raw_bits=0.5)
    bits = v.view(np.uint16)
    nan = np.isnan(v.astype(np.float32))
    assert ((bits[nan] & 0x0200) != 0).all()
    assert_bits_equal(quiet_nans(v), v)
