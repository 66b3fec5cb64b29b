"""Fuzzing the seed API: every call succeeds or raises a PtoError, a failed call leaves its outputs
bit-identical, and no value is converted lossily without being asked for.

Entry points: ``pypto.Tensor``, ``zeros`` / ``empty`` / ``from_numpy``, ``Tensor.numpy`` /
``copy_from`` / ``free``, ``load_insn`` (every seed and PTO name, misspelt ones too) with
``set_operand`` / ``set_param`` / ``execute`` in both simulator modes, ``quant_scale``, calls
with wrong argument counts, the ``pypto`` command line, and the PYPTO_* environment variables.
Quick budgets here; ``make fuzz`` runs every test with 10,000 examples.
"""
from __future__ import annotations

import contextlib
import io
import math

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pypto
from pypto import cli
from pypto.backends.sim.options import ENV_VARS, reload_env

from fuzzing import (DTYPES, attempt, fuzz_settings, numeric_lists, scalars, snapshot, values)

pytestmark = pytest.mark.usefixtures("session")
dtypes_or_junk = st.one_of(st.none(), st.sampled_from(DTYPES), st.sampled_from([d.name for d in DTYPES]),
                           scalars, st.sampled_from([np.float64, np.complex64, "float64", "f4", b"01", [("a", "i4")]]))


def _exact_values(data) -> np.ndarray | None:
    """The input's values as float64/complex numbers when it is plain numeric data, else None."""
    try:
        arr = np.asarray(data)
    except Exception:  # noqa: BLE001 - not array-like: nothing to compare
        return None
    if arr.dtype.kind in "biuf":
        return arr.astype(np.float64) if arr.dtype.kind != "u" or arr.dtype.itemsize < 8 else None
    if arr.dtype.kind == "V" and arr.dtype.names is None:    # bfloat16 / fp8 (ml_dtypes)
        return arr.astype(np.float64)
    return None


def _check_lossless(data, t: pypto.Tensor, asked) -> None:
    """A tensor made from numbers holds the same numbers: only float rounding to a float dtype
    the caller named (or float32 for Python floats, the documented default) may change a value."""
    exact = _exact_values(data)
    if exact is None or t.dtype.coded or exact.shape != t.shape:
        return
    got = t.numpy().astype(np.float64)
    finite = np.isfinite(exact)
    assert np.array_equal(np.isnan(got), np.isnan(exact)), "NaN appeared or vanished"
    assert np.array_equal(got[~finite & ~np.isnan(exact)], exact[~finite & ~np.isnan(exact)])
    if t.dtype.is_int:
        assert np.array_equal(got[finite], exact[finite]), f"integer data changed in {t.dtype.name}"
    else:
        assert not np.isinf(got[finite]).any(), f"a finite value overflowed to inf in {t.dtype.name}"
        if np.asarray(data).dtype.kind in "iub" and t.dtype.name == "float32" and asked is None:
            assert np.array_equal(got[finite], exact[finite])


@fuzz_settings(400)
@given(data=values, dtype=dtypes_or_junk)
def test_tensor_construction(data, dtype):
    out = attempt(pypto.Tensor, data, dtype=dtype)
    if out.ok:
        t = out.value
        assert isinstance(t.numpy(), np.ndarray)
        _check_lossless(data, t, dtype)
        t.free()


@fuzz_settings(300)
@given(data=numeric_lists, dtype=st.one_of(st.none(), st.sampled_from(DTYPES)))
def test_tensor_from_numbers_is_exact_or_refused(data, dtype):
    out = attempt(pypto.Tensor, data, dtype=dtype)
    if out.ok:
        _check_lossless(data, out.value, dtype)


@fuzz_settings(300)
@given(arr=hnp.arrays(st.sampled_from([np.float16, np.float32, np.float64, np.int8, np.int32, np.int64,
                                       np.uint16, np.uint64, np.complex64, np.bool_]),
                      hnp.array_shapes(min_dims=0, max_dims=2, max_side=4)),
       dtype=st.one_of(st.none(), st.sampled_from(DTYPES)))
def test_numpy_data_is_exact_or_refused(arr, dtype):
    out = attempt(pypto.Tensor, arr, dtype=dtype)
    if out.ok:
        assert arr.dtype.kind != "c", "complex data was accepted"
        _check_lossless(arr, out.value, dtype)
    elif arr.dtype.kind == "c":
        assert isinstance(out.error, pypto.errors.DTypeError)


def _elements(shape) -> int:
    """How many elements a shape made of integers asks for (0 when it is not such a shape)."""
    if isinstance(shape, np.ndarray):
        shape = shape.tolist() if shape.ndim else shape.item()
    dims = shape if isinstance(shape, (list, tuple)) else [shape]
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dims):
        return 0
    return abs(math.prod(int(d) for d in dims))


@fuzz_settings(300)
@given(shape=values, dtype=dtypes_or_junk, which=st.sampled_from(["zeros", "empty", "zeros1"]))
def test_zeros_and_empty(shape, dtype, which):
    if _elements(shape) > 1 << 24:
        return                           # legal and slow (GB of host RAM): the unit tests cover it
    before = pypto.stats().live_bytes
    if which == "zeros1":
        out = attempt(pypto.zeros, shape)
    else:
        out = attempt(getattr(pypto, which), shape, dtype)
    if out.ok:
        t = out.value
        assert t.shape == tuple(int(d) for d in (shape if isinstance(shape, (list, tuple)) else
                                                 np.atleast_1d(shape)))
        if which != "empty":
            assert not any(t.numpy().tobytes())
        t.free()
    assert pypto.stats().live_bytes == before      # nothing leaked by a failed or freed call


@fuzz_settings(300)
@given(arr=values)
def test_from_numpy(arr):
    out = attempt(pypto.from_numpy, arr)
    if out.ok:
        got = out.value.numpy()
        want = np.asarray(arr)
        if want.dtype == object:          # Python ints beyond int64 beside floats: as pypto.Tensor
            _check_lossless(arr, out.value, None)
            return
        assert got.dtype == want.dtype or out.value.dtype.coded
        assert got.tobytes() == np.ascontiguousarray(want).tobytes()


@fuzz_settings(300)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=4), dtype=st.sampled_from(DTYPES),
       data=values, free_first=st.booleans())
def test_copy_from_numpy_free(shape, dtype, data, free_first):
    t = pypto.zeros(shape, dtype)
    if free_first:
        t.free()
    before = snapshot([t])
    out = attempt(t.copy_from, data)
    if not out.ok:
        assert snapshot([t]) == before, "a failed copy_from changed the tensor"
    else:
        assert t.numpy().tobytes() == np.ascontiguousarray(np.asarray(data)).tobytes()
    attempt(t.numpy)
    attempt(t.free)
    assert t.is_freed


@fuzz_settings(300)
@given(scale=scalars)
def test_quant_scale(scale):
    out = attempt(pypto.quant_scale, scale)
    if out.ok:
        want = np.float32(float(scale))
        assert out.value == int(want.view(np.uint32)) and (np.isfinite(want) or not math.isfinite(float(scale)))


# -- load_insn / Insn ------------------------------------------------------------------------------
SHAPES = [(4, 8), (16, 16), (1, 16), (8, 1), (3, 5), (2, 3, 4), (0, 8), (), (8,)]
OPERAND_DTYPES = [pypto.float32, pypto.float16, pypto.int32, pypto.int16, pypto.int8, pypto.uint8,
                  pypto.bfloat16, pypto.uint32, pypto.int64]


def _names() -> list[str]:
    import pypto.isa as isa
    seeds = pypto.list_insns()
    return sorted(set(seeds) | {isa.TABLE[n].name for n in isa.TABLE})


def _often(data, n: int) -> bool:
    """True but one time in n (hypothesis draws small integers far more often than 1/n)."""
    return data.draw(st.sampled_from([True] * (n - 1) + [False]))


def _operand(data, shape, dtype, rng, is_scalar):
    """A value for one operand: usually the kind the slot takes, in the call's shape and dtype."""
    kind = data.draw(st.sampled_from(["fit"] * 40 + ["numpy", "numpy", "scalar", "junk", "freed", "other"]))
    if kind == "fit" and is_scalar:
        return data.draw(st.sampled_from([2, 0.5, -3, 1]))
    if kind == "scalar":
        return data.draw(st.sampled_from([2, 0.5, -3]))
    if kind == "junk":
        return data.draw(scalars)
    if kind == "other":
        shape = data.draw(st.sampled_from(SHAPES))
        dtype = data.draw(st.sampled_from(OPERAND_DTYPES))
    fill = data.draw(st.sampled_from(["ones", "random", "small"]))
    host = {"ones": np.ones(shape), "small": rng.integers(-3, 4, shape),
            "random": rng.standard_normal(shape) * 4}[fill]
    if dtype.is_int:
        info = np.iinfo(dtype.np)
        host = np.clip(np.rint(host), max(info.min, -100), min(info.max, 100))
    host = host.astype(dtype.np)
    if kind == "numpy":
        return host
    t = pypto.Tensor(host)
    if kind == "freed":
        t.free()
    return t


def _run_insn(data):
    """load_insn of a name (real, misspelt or not a string), operands bound mostly in order with
    fitting values, some parameters, execute twice; a failed execute changes no operand."""
    name = data.draw(st.sampled_from(_names())) if _often(data, 10) else \
        data.draw(st.one_of(st.text(max_size=6), scalars))
    out = attempt(pypto.load_insn, name)
    if not out.ok:
        return
    insn = out.value
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    shape = data.draw(st.sampled_from(SHAPES))
    dtype = data.draw(st.sampled_from(OPERAND_DTYPES))
    scalar_slots = {i for i, s in enumerate(insn.signature.split("(", 1)[1].split(")", 1)[0].split(", "))
                    if ": scalar" in s}
    for k, v in data.draw(st.dictionaries(
            st.sampled_from(["cmpMode", "rmode", "satMode", "relu", "accPhase", "x"]),
            st.one_of(st.sampled_from(["EQ", "LT", "CAST_RINT", "ON", "Final", True]), scalars), max_size=2)).items():
        attempt(insn.set_param, k, v)
    bound = []
    order = list(range(insn.num_operands))
    if not _often(data, 10):
        order = data.draw(st.lists(st.one_of(st.integers(-2, 6), scalars), max_size=6))
    for index in order:
        if isinstance(index, int) and not _often(data, 40):
            continue                                        # leave one unset
        v = _operand(data, shape, dtype, rng, isinstance(index, int) and index in scalar_slots)
        if attempt(insn.set_operand, index, v).ok and isinstance(v, (pypto.Tensor, np.ndarray)):
            bound.append(v)
    live = [v for v in bound if isinstance(v, pypto.Tensor)]
    arrays = [v for v in bound if isinstance(v, np.ndarray)]
    before, host_before = snapshot(live), [a.tobytes() for a in arrays]
    out = attempt(insn.execute)
    event(f"execute: {'ran' if out.ok else type(out.error).__name__}")
    if not out.ok:
        assert snapshot(live) == before, f"a failed {name}.execute() changed a device operand"
        assert [a.tobytes() for a in arrays] == host_before, f"a failed {name}.execute() changed a host array"
    attempt(insn.execute)               # again: the cached launch path takes the same decisions


@fuzz_settings(250)
@given(data=st.data())
def test_insn_compiled(data):
    _run_insn(data)


@fuzz_settings(150)
@given(data=st.data())
def test_insn_eager(data, restart):
    if not pypto.is_initialized() or pypto.runtime.current().backend.default_mode() != "eager":
        restart(sim=pypto.SimOptions(mode="eager"))
    _run_insn(data)


# -- wrong argument counts and keywords ---------------------------------------------------------------
CALLABLE_NAMES = ["init", "zeros", "empty", "Tensor", "from_numpy", "load_insn", "list_insns", "stats",
                  "set_device", "get_device_count", "quant_scale", "kernel", "check", "timeline",
                  "SimOptions", "load_custom_insn", "Tensor.numpy", "Tensor.copy_from", "Insn.set_operand",
                  "Insn.set_param", "Insn.execute", "Tile", "pto.TADD", "pto.range", "pto.set_flag",
                  "pto.GlobalTensor", "pto.TASSIGN"]


def _public_callables():
    t = pypto.zeros((2,))
    insn = pypto.load_insn("add")
    return {"init": pypto.init, "zeros": pypto.zeros, "empty": pypto.empty, "Tensor": pypto.Tensor,
            "from_numpy": pypto.from_numpy, "load_insn": pypto.load_insn, "list_insns": pypto.list_insns,
            "stats": pypto.stats, "set_device": pypto.set_device, "get_device_count": pypto.get_device_count,
            "quant_scale": pypto.quant_scale, "kernel": pypto.kernel, "check": pypto.check,
            "timeline": pypto.timeline, "SimOptions": pypto.SimOptions, "load_custom_insn": pypto.load_custom_insn,
            "Tensor.numpy": t.numpy, "Tensor.copy_from": t.copy_from, "Insn.set_operand": insn.set_operand,
            "Insn.set_param": insn.set_param, "Insn.execute": insn.execute, "Tile": pypto.pto.Tile,
            "pto.TADD": pypto.pto.TADD, "pto.range": pypto.pto.range, "pto.set_flag": pypto.pto.set_flag,
            "pto.GlobalTensor": pypto.pto.GlobalTensor, "pto.TASSIGN": pypto.pto.TASSIGN}


@fuzz_settings(300)
@given(which=st.sampled_from(CALLABLE_NAMES),
       args=st.lists(scalars, max_size=6),
       kwargs=st.dictionaries(st.sampled_from(["dtype", "shape", "mode", "bogus", "x", "replace", "soc",
                                               "record", "valid", "layout"]), scalars, max_size=3))
def test_any_arguments_to_public_callables(which, args, kwargs):
    fn = _public_callables()[which]
    if which == "init":
        kwargs.pop("soc", None)                   # keep the running session's SoC
        args = args[:0]
    attempt(fn, *args, **kwargs)


# -- the command line -----------------------------------------------------------------------------
CLI_WORDS = ["info", "doctor", "cpp", "--insn", "add", "--dtype", "float16", "int8", "--to", "--param",
             "rmode=CAST_RINT", "x=1", "--soc", "a5", "zz", "--require", "sim", "npu", "-V", "--help",
             "codegen", "trace", "golden", "record", "compare", "conformance", "merge", "--shard", "1/2",
             "0/0", "nofile.py:k", "examples/step1_add.py", "--backend", "", "-o", "\x00", "--bogus"]


def _fuzzed_argv(argv: list[str]) -> list[str] | None:
    """The drawn command line as run, or None when it is not run (it writes files where it says).
    golden / conformance / trace run scripts and suites, so only their parsers are fuzzed: alone,
    `pypto conformance` runs the whole conformance suite (a cold `make test` drew it and ran 6
    minutes longer)."""
    if "-o" in argv or "--output" in argv:
        return None
    if argv[:1] in (["golden"], ["conformance"], ["trace"]):
        return argv[:1] + ["--help"]
    return argv


def test_the_cli_fuzz_never_runs_a_suite_or_a_script():
    for word in ("golden", "conformance", "trace"):
        assert _fuzzed_argv([word]) == [word, "--help"]
        assert _fuzzed_argv([word, "--shard", "1/2"]) == [word, "--help"]
    assert _fuzzed_argv(["info"]) == ["info"]


@fuzz_settings(120)
@given(argv=st.lists(st.one_of(st.sampled_from(CLI_WORDS), st.text(max_size=6)), max_size=6))
def test_command_line_arguments(argv, tmp_path_factory, monkeypatch):
    monkeypatch.chdir(tmp_path_factory.getbasetemp())
    argv = _fuzzed_argv(argv)
    if argv is None:
        return
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        try:
            code = attempt(cli.main, argv)
        except SystemExit as e:                   # argparse: usage message and exit status 2
            code = e.code
            assert code in (0, 2, None), f"pypto {argv}: exit {code}"
            return
    if code.ok:
        assert code.value in (0, 1, 2), f"pypto {argv} returned {code.value!r}"


# -- environment variables ---------------------------------------------------------------------------
ENV_WORDS = {"PYPTO_BACKEND": ["sim", "npu", "SIM", "gpu", "", " sim"],
             "PYPTO_SOC": ["a2a3", "a5", "A5", "910b", "a9", ""],
             "PYPTO_SIM_MODE": ["compiled", "eager", "EAGER", "interp", ""],
             "PYPTO_SIM_THREADS": ["1", "2", "0", "-1", "1e3", "999999999999", "two", ""],
             "PYPTO_CPUSIM_CXXFLAGS": ["-O2", "", "-O3 -march=native"]}


@fuzz_settings(60)
@given(env=st.fixed_dictionaries({}, optional={k: st.one_of(st.sampled_from(v), st.text(max_size=5))
                                               for k, v in ENV_WORDS.items()}),
       cache=st.sampled_from(["fresh", "fresh", "a file", "/proc/no-such-dir", "", "relative/dir"]))
def test_environment_variables(env, cache, fresh, tmp_path_factory, monkeypatch):
    base = tmp_path_factory.getbasetemp()
    for var in ENV_VARS:
        fresh.delenv(var, raising=False)
    if cache == "a file":
        (base / "fuzz-cache-file").write_text("not a directory")
    monkeypatch.chdir(base)
    fresh.setenv("PYPTO_CACHE_DIR", {"fresh": str(base / "fuzz-cache"),
                                     "a file": str(base / "fuzz-cache-file")}.get(cache, cache))
    for k, v in env.items():
        if "\x00" not in v:
            fresh.setenv(k, v)
    reload_env()
    try:
        out = attempt(pypto.init)
        if out.ok:
            a = pypto.Tensor([1.0, 2.0])
            assert (a.numpy() == [1.0, 2.0]).all()
            b = pypto.zeros((2,))
            insn = pypto.load_insn("add")
            for i, v in enumerate((a, a, b)):
                insn.set_operand(i, v)
            if attempt(insn.execute).ok:          # compiles or loads through the cache directory
                assert (b.numpy() == [2.0, 4.0]).all()
    finally:
        pypto.finalize() if pypto.is_initialized() else None
        reload_env()


# -- pypto.testing.assert_close ---------------------------------------------------------------------
@fuzz_settings(300)
@given(actual=values, expected=values,
       kw=st.dictionaries(st.sampled_from(["dtype", "ulp", "rtol", "atol", "equal_nan"]),
                          st.one_of(scalars, st.sampled_from(DTYPES)), max_size=3))
def test_assert_close_on_anything(actual, expected, kw):
    from pypto.testing import assert_close
    attempt(assert_close, actual, expected, **kw)


# -- timelines: pypto.timeline, kern.profile, Timeline.save / plot --------------------------------------
@pypto.kernel
def _copy_tile(x, y):
    t = pypto.pto.Tile(pypto.pto.Vec, pypto.float32, (16, 64))
    pypto.pto.TLOAD(t, x)
    pypto.pto.TSTORE(y, t)


@fuzz_settings(200)
@given(which=st.sampled_from(["timeline", "profile", "save", "plot"]),
       args=st.lists(scalars, max_size=3),
       kw=st.dictionaries(st.sampled_from(["grid", "events", "params", "cores", "core", "path"]), scalars,
                          max_size=2))
def test_timeline_arguments(which, args, kw, tmp_path_factory, monkeypatch):
    monkeypatch.chdir(tmp_path_factory.getbasetemp())
    x, y = pypto.zeros((16, 64)), pypto.zeros((16, 64))
    if which == "timeline":
        attempt(pypto.timeline, _copy_tile, x, y, *args[:0], **kw)
    elif which == "profile":
        attempt(_copy_tile.profile, x, y, **kw)
    else:
        tl = pypto.timeline(_copy_tile, x, y)
        attempt(getattr(tl, which), *args, **kw)
