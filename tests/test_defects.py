"""Regression tests for reported defects, one test function per item (named test_NN_...), plus
layout, not-simulated and DN-path checks the suite lacked.

Each test failed on the code before the fixes (commit cabc58d) unless it is marked xfail: an
xfail(strict=True) test documents a defect that is still present. Expected values come from numpy
or hand-worked values, never from pypto's own output.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import pypto
from pypto import errors as E
from pypto import pto

pytestmark = pytest.mark.usefixtures("session")

MODES = ("compiled", "eager")


def raises(exc_type, fn, *args, **kwargs):
    """Call fn, expect exc_type (or a subclass); every user error is a PtoError with Rule: and
    Fix: lines. Returns the error."""
    with pytest.raises(exc_type) as ei:
        fn(*args, **kwargs)
    e = ei.value
    assert isinstance(e, pypto.PtoError), f"{type(e).__name__} is not a PtoError: {e}"
    msg = str(e)
    assert "Rule:" in msg and "Fix:" in msg, msg
    return e


def f32(shape, start=0.0):
    return pypto.Tensor((np.arange(int(np.prod(shape)), dtype=np.float32) + start).reshape(shape))


def filled(shape, dtype, value):
    return pypto.Tensor(np.full(shape, value, dtype))


# -- 2. a body holding only flags / barriers ------------------------------------------------------

def _only_sync(x):
    pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
    pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
    pto.pipe_barrier(pto.PIPE_V)


def _loop_only_sync(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TLOAD(t, x[0:8, 0:64])
    for i in pto.range(3):
        pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID1)
        pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID1)
        pto.pipe_barrier(pto.PIPE_ALL)
    pto.TSTORE(z[0:8, 0:64], t)


def test_02_sync_only_bodies_run_compiled_and_leave_no_broken_module(restart, tmp_path):
    restart(backend="sim", sim=pypto.SimOptions(mode="compiled", cache_dir=str(tmp_path)))
    x, z = f32((8, 64), start=1.0), pypto.zeros((8, 64), pypto.float32)
    pypto.kernel(_only_sync)(x)
    pypto.kernel(_loop_only_sync)[2](x, z)
    np.testing.assert_array_equal(z.numpy(), np.arange(512, dtype=np.float32).reshape(8, 64) + 1)
    files = [f for f in os.listdir(tmp_path) if f.endswith(".py")]
    assert files, "the kernels were not cached in the session's cache_dir"
    for f in files:
        with open(tmp_path / f, encoding="utf-8") as fh:
            compile(fh.read(), f, "exec")                 # no IndentationError / SyntaxError
        mod = sys.modules.get(f[:-3])
        if mod is not None and f.startswith("pypto_k_"):
            assert hasattr(mod, "kernel"), f"{f[:-3]} in sys.modules is half-loaded"


# -- 4. a kernel that faults part-way says outputs may be partly written ----------------------------

def _no_tail(x, z):                      # the user guide's no_tail
    t = pto.Tile(pto.Vec, pto.float32, (16, 104), valid=(16, 100))
    for i in pto.range(0, (x.shape[0] + 15) // 16):
        pto.TLOAD(t, x[i * 16:i * 16 + 16, 0:100])       # no pto.min: 300 is not a multiple of 16
        pto.TSTORE(z[i * 16:i * 16 + 16, 0:100], t)


@pytest.mark.parametrize("mode", ["compiled", "eager"])
def test_04_fault_part_way_says_outputs_may_be_partly_written(mode):
    x = pypto.Tensor(np.ones((300, 100), np.float32))
    z = pypto.zeros((300, 100), pypto.float32)
    e = raises(E.GMBoundsError, pypto.kernel(_no_tail, mode=mode)[4], x, z)
    msg = str(e)
    assert "304" in msg                                   # 18 * 16 + 16: the faulting stop
    assert (z.numpy()[:288] == 1).all()                   # rows stored before the fault: partial
    note = [line for line in msg.splitlines() if line.strip().startswith("Note:")]
    assert note and "partly written" in note[0], msg


# -- 5. scalars out of the element type's range --------------------------------------------------

def _adds_kernel(dtype, value, mode):
    def adds_const(x, z):
        t = pto.Tile(pto.Vec, dtype, (8, 16))
        pto.TLOAD(t, x[0:8, 0:16])
        pto.TADDS(t, t, value)
        pto.TSTORE(z[0:8, 0:16], t)
    return pypto.kernel(adds_const, mode=mode)


def _adds_runtime(x, z, s):
    t = pto.Tile(pto.Vec, pto.int16, (8, 16))
    pto.TLOAD(t, x[0:8, 0:16])
    pto.TADDS(t, t, s)
    pto.TSTORE(z[0:8, 0:16], t)


ADDS_RT = {m: pypto.kernel(_adds_runtime, mode=m) for m in MODES}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ["i16_70000", "i16_2**40", "i16_-40000", "f16_1e6", "i16_1.5",
                                  "rt_i16_70000", "rt_i16_1.5"])
def test_05_out_of_range_scalars_are_refused(mode, case):
    np_dt = np.float16 if case.startswith("f16") else np.int16
    x = filled((8, 16), np_dt, 1)
    z = filled((8, 16), np_dt, 77)                          # a sentinel: must stay untouched
    value = {"i16_70000": 70000, "i16_2**40": 2 ** 40, "i16_-40000": -40000, "f16_1e6": 1e6,
             "i16_1.5": 1.5}.get(case)
    if case.startswith("rt_"):
        k, args = ADDS_RT[mode], (x, z, 70000 if case == "rt_i16_70000" else 1.5)
    else:
        k, args = _adds_kernel(pto.float16 if np_dt is np.float16 else pto.int16, value, mode), (x, z)
    e = raises(E.DTypeError, k, *args)
    assert "TADDS" in str(e)
    assert (z.numpy() == 77).all()
    # an in-range value works (the refusal is about the value, not the kernel)
    if case.startswith("rt_"):
        ADDS_RT[mode](x, z, -32768 + 1)
        np.testing.assert_array_equal(z.numpy(), np.full((8, 16), -32766, np.int16))


def test_05_load_insn_adds_refuses_out_of_range_scalar():
    insn = pypto.load_insn("adds")
    a = pypto.Tensor(np.arange(16, dtype=np.int16))
    c = filled((16,), np.int16, 77)
    insn.set_operand(0, a)
    insn.set_operand(1, 70000)
    insn.set_operand(2, c)
    raises(E.DTypeError, insn.execute)
    assert (c.numpy() == 77).all()
    insn.set_operand(1, 32767 - 15)                         # the largest that does not overflow
    insn.execute()
    np.testing.assert_array_equal(c.numpy(), np.arange(16, dtype=np.int16) + np.int16(32752))


# -- 6. numpy scalars wherever Python scalars are accepted --------------------------------------

def _np_scalars(x, z, s, n):
    t = pto.Tile(pto.Vec, pto.float32, (np.int64(4), 64))
    for i in pto.range(np.int64(2)):
        pto.TLOAD(t, x[np.int64(1), :])                     # a (4, 64) view of a (2, 4, 64) tensor
        pto.TADDS(t, t, np.float32(2))
        pto.TADDS(t, t, s)
        pto.TMULS(t, t, n)
        pto.TSTORE(z[np.int64(1), :], t)


def _np_in_expressions(x, z, h):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64), valid=pto.DYNAMIC)
    r = pto.min(np.int64(8), h)                           # as pto.min(8, h)
    r = pto.max(r, np.int32(1)) * np.int64(1) + np.int64(0)
    t.set_valid(r, 64)
    pto.TLOAD(t, x[0:r, 0:64])
    pto.TSTORE(z[0:r, 0:64], t)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", [
    "dsl_arguments",
    "scalar_expressions",
])
def test_06_numpy_scalars_are_accepted(case, mode):
    if case == "dsl_arguments":
        xh = np.arange(2 * 4 * 64, dtype=np.float32).reshape(2, 4, 64) - 100
        x, z = pypto.Tensor(xh), pypto.zeros((2, 4, 64), pypto.float32)
        pypto.kernel(_np_scalars, mode=mode)(x, z, np.float32(1.0), np.int64(3))
        want = np.zeros((2, 4, 64), np.float32)
        want[1] = ((xh[1] + np.float32(2)) + np.float32(1)) * np.float32(3)
    else:
        xh = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
        x, z = pypto.Tensor(xh), pypto.zeros((16, 64), pypto.float32)
        pypto.kernel(_np_in_expressions, mode=mode)(x, z, np.int64(6))
        want = np.zeros((16, 64), np.float32)
        want[:6] = xh[:6]
    np.testing.assert_array_equal(z.numpy(), want)


# -- 7. eager and compiled reject (and accept) the same programs --------------------------------

def _break_in_range(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64))
    for i in pto.range(3):
        pto.TLOAD(t, x[0:8, 0:64])
        break
    pto.TSTORE(z[0:8, 0:64], t)


def _return_in_range(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64))
    for i in pto.range(3):
        pto.TLOAD(t, x[0:8, 0:64])
        return
    pto.TSTORE(z[0:8, 0:64], t)


def _runtime_event(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TLOAD(t, x[0:8, 0:64])
    pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.block_idx())
    pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.block_idx())
    pto.TSTORE(z[0:8, 0:64], t)


FACTOR = 2


def _times_global(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TLOAD(t, x[0:8, 0:64])
    pto.TMULS(t, t, FACTOR)
    pto.TSTORE(z[0:8, 0:64], t)


TIMES_GLOBAL = {m: pypto.kernel(_times_global, mode=m) for m in MODES}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ["break", "return", "runtime_event", "module_global"])
def test_07_eager_and_compiled_reject_and_accept_the_same_programs(case, mode, monkeypatch):
    x, z = f32((8, 64), start=1.0), pypto.zeros((8, 64), pypto.float32)
    if case in ("break", "return"):
        body = _break_in_range if case == "break" else _return_in_range
        e = raises(E.TraceError, pypto.kernel(body, mode=mode), x, z)
        assert case in str(e), str(e)
        if mode == "compiled":              # eager mode ran the TSTORE after the loop already
            assert not z.numpy().any()
    elif case == "runtime_event":
        e = raises(E.KernelError, pypto.kernel(_runtime_event, mode=mode), x, z)
        assert "event" in str(e)
        assert not z.numpy().any()
    else:
        k = TIMES_GLOBAL[mode]
        for factor in (2, 5, -3):
            monkeypatch.setattr(sys.modules[__name__], "FACTOR", factor)
            k(x, z)
            np.testing.assert_array_equal(z.numpy(), x.numpy() * np.float32(factor))


# -- 8. no raw Python exceptions -------------------------------------------------------------------

def _index_a_tile(x, z):
    a = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TLOAD(a, x[0:8, 0:64])
    pto.TADD(a, a, a[0])


def _copy(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TLOAD(t, x[0:8, 0:64])
    pto.TSTORE(z[0:8, 0:64], t)


COPY = pypto.kernel(_copy)


@pytest.mark.parametrize("case", ["kwargs", "kwargs_blocks", "index_tile_compiled",
                                  "index_tile_eager", "star_args", "env_threads"])
def test_08_no_raw_python_exceptions(case, restart, fresh):
    x, z = f32((8, 64)), pypto.zeros((8, 64), pypto.float32)
    if case == "kwargs":
        raises(E.KernelError, COPY, x, z=z)
    elif case == "kwargs_blocks":
        raises(E.KernelError, COPY[2], x=x, z=z)
    elif case.startswith("index_tile"):
        mode = case.rsplit("_", 1)[1]
        e = raises(E.KernelError, pypto.kernel(_index_a_tile, mode=mode), x, z)
        assert "not indexable" in str(e)
    elif case == "star_args":
        def star(*xs):
            pass
        raises(E.KernelError, pypto.kernel, star)
        raises(E.KernelError, pypto.kernel(mode="eager"), star)
    elif case == "env_threads":
        pypto.finalize()
        fresh.setenv("PYPTO_SIM_THREADS", "abc")
        e = raises(pypto.PtoError, restart, backend="sim")
        assert "PYPTO_SIM_THREADS" in str(e)
        return
    assert not z.numpy().any()


# -- 9. messages --------------------------------------------------------------------------------------

def _empty_window(x, z, h):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64), valid=pto.DYNAMIC)
    t.set_valid(h, 64)
    pto.TLOAD(t, x[0:h, :])
    pto.TSTORE(z[0:h, :], t)


def _negative_address(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TASSIGN(t, -32)
    pto.TLOAD(t, x[0:8, 0:64])


@pytest.mark.parametrize("case", [
    "empty_window-compiled", "empty_window-eager",
    "negative_address-compiled", "negative_address-eager", "tensor_2**70",
    "none_argument-compiled", "none_argument-eager",
])
def test_09_messages(case):
    x, z = f32((8, 64)), pypto.zeros((8, 64), pypto.float32)
    what, _, mode = case.partition("-")
    if what == "empty_window":
        e = raises(E.GMBoundsError, pypto.kernel(_empty_window, mode=mode), x, z, 0)
        msg = str(e)
        assert "-1" not in msg, msg
        assert "empty" in msg, msg
    elif what == "negative_address":
        e = raises(E.TileError, pypto.kernel(_negative_address, mode=mode), x, z)
        assert "negative" in str(e) and "-32" in str(e)
    elif what == "tensor_2**70":
        e = raises(E.DTypeError, pypto.Tensor, [2 ** 70])
        msg = str(e).lower()
        assert "overflow" in msg or "does not fit" in msg, msg
        assert "ragged" not in msg
        raises(E.DTypeError, pypto.Tensor, [[1, 2], [3, 2 ** 70]])
    elif what == "none_argument":
        e = raises(E.KernelError, pypto.kernel(_copy, mode=mode), x, None)
        assert "None" in str(e)
    assert not z.numpy().any()


# -- 15. TSTORE from a Mat tile: legal on a2a3 only ------------------------------------------------

def _store_mat(x, z):
    t = pto.Tile(pto.Mat, pto.float32, (8, 64))
    pto.TLOAD(t, x[0:8, 0:64])
    pto.TSTORE(z[0:8, 0:64], t)


def test_15_tstore_from_mat_is_a2a3_only(restart):
    restart(backend="sim", soc="a5")
    x, z = f32((8, 64)), pypto.zeros((8, 64), pypto.float32)
    k = pypto.kernel(_store_mat)
    e = raises(E.LocationError, k.ir, x, z)
    assert "TSTORE" in str(e) and "Mat" in str(e) and "a2a3" in str(e)
    e = raises(E.LocationError, k, x, z)
    assert not z.numpy().any()
    restart(backend="sim", soc="a2a3")
    x, z = f32((8, 64), start=3.0), pypto.zeros((8, 64), pypto.float32)
    text = k.ir(x, z)
    assert "pto.tstore" in text and "Mat" in text
    k(x, z)
    np.testing.assert_array_equal(z.numpy(), np.arange(512, dtype=np.float32).reshape(8, 64) + 3)


# -- boxed (Nz) tiles are refused by TADD ---------------------------------------------------------

def _tadd_boxed(x, z):
    a = pto.Tile(pto.Vec, pto.float32, (16, 64), blayout=pto.ColMajor, slayout=pto.RowMajor)
    pto.TADD(a, a, a)


@pytest.mark.parametrize("mode", MODES)
def test_boxed_tile_refused_by_tadd(mode):
    x, z = f32((16, 64)), pypto.zeros((16, 64), pypto.float32)
    e = raises(E.LayoutError, pypto.kernel(_tadd_boxed, mode=mode), x, z)
    msg = str(e)
    assert "TADD" in msg and "Nz" in msg and "ND" in msg and "DN" in msg, msg


# -- instructions in the table but not simulated: IR yes, launch no ------------------------------

def _log_dequant(x, z):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64))
    q = pto.Tile(pto.Vec, pto.int8, (8, 64))
    pto.TLOAD(t, x[0:8, 0:64])
    pto.TLOG(t, t)
    pto.TDEQUANT(t, q, t, t)
    pto.TSTORE(z[0:8, 0:64], t)


@pytest.mark.parametrize("mode", MODES)
def test_unsimulated_instruction_traces_but_does_not_launch(mode):
    x, z = f32((8, 64), start=1.0), pypto.zeros((8, 64), pypto.float32)
    k = pypto.kernel(_log_dequant, mode=mode)
    lines = k.ir(x, z).splitlines()
    for op in ("pto.tlog", "pto.tdequant"):
        hit = [line for line in lines if line.strip().startswith(op + " ")]
        assert len(hit) == 1 and hit[0].rstrip().endswith("// PIPE_V, AIV"), lines
    e = raises(E.NotSimulatedError, k, x, z)
    assert "TDEQUANT" in str(e) and "TLOG" not in str(e)
    assert not z.numpy().any()


# -- DN (ColMajor) paths ---------------------------------------------------------------------------

def _rowsum_to_dn_column(x, z):
    s = pto.Tile(pto.Vec, pto.float32, (8, 64), valid=(8, 50))
    d = pto.Tile(pto.Vec, pto.float32, (8, 1), blayout=pto.ColMajor)
    tmp = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TLOAD(s, x[0:8, 0:50])
    pto.TROWSUM(d, s, tmp)
    pto.TSTORE(pto.GlobalTensor(z, (1, 1, 1, 8, 1), (8, 8, 8, 1, 8), layout=pto.DN), d)


@pytest.mark.parametrize("mode", MODES)
def test_trowsum_into_a_dn_column(mode):
    rng = np.random.default_rng(5)
    xh = rng.integers(-1000, 1000, (8, 50)).astype(np.float32)     # sums exact in float32
    x, z = pypto.Tensor(xh), pypto.zeros((8, 1), pypto.float32)
    pypto.kernel(_rowsum_to_dn_column, mode=mode)(x, z)
    np.testing.assert_array_equal(z.numpy()[:, 0], xh.sum(axis=1))


def _dn(t):
    """A DN view of the logical 16 x 5 matrix M[r, c] = t[c, r] of a (8, 16) tensor
    (pto-isa-semantics 4.1: DN stride (R*C, R*C, R*C, 1, R))."""
    return pto.GlobalTensor(t, (1, 1, 1, 16, 5), (128, 128, 128, 1, 16), layout=pto.DN)


def _tadd_dn(x, y, z):
    a = pto.Tile(pto.Vec, pto.float32, (16, 8), valid=(16, 5), blayout=pto.ColMajor)
    b = pto.Tile(pto.Vec, pto.float32, (16, 8), valid=(16, 5), blayout=pto.ColMajor)
    pto.TLOAD(a, _dn(x))
    pto.TLOAD(b, _dn(y))
    pto.TADD(a, a, b)
    pto.TSTORE(_dn(z), a)


@pytest.mark.parametrize("mode", MODES)
def test_tadd_on_dn_tiles(mode):
    xh = np.arange(128, dtype=np.float32).reshape(8, 16)
    yh = 1000 + 3 * np.arange(128, dtype=np.float32).reshape(8, 16)
    x, y = pypto.Tensor(xh), pypto.Tensor(yh)
    z = pypto.Tensor(np.full((8, 16), -1, np.float32))
    pypto.kernel(_tadd_dn, mode=mode)(x, y, z)
    want = np.full((8, 16), -1, np.float32)
    want[:5] = xh[:5] + yh[:5]          # columns 0..4 of M are rows 0..4 of the tensors
    np.testing.assert_array_equal(z.numpy(), want)
