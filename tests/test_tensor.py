"""pypto.Tensor and device (GM) memory: construction, dtypes, copies and their accounting,
lifetime, capacity, and the simulator's GM heap allocator."""
from __future__ import annotations

import tracemalloc

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

import pypto
from pypto import errors as E
from pypto.backends.sim.memory import SimAllocator

pytestmark = pytest.mark.usefixtures("session")

GiB = 1024 ** 3
GM_ALIGN = 512
# Every PTO element type pypto offers, with the host type it must round-trip as (written out
# here, not taken from pypto.dtypes).
HOST_TYPES = {
    "float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32), "int8": np.dtype(np.int8), "uint8": np.dtype(np.uint8),
    "int16": np.dtype(np.int16), "uint16": np.dtype(np.uint16), "int32": np.dtype(np.int32),
    "uint32": np.dtype(np.uint32), "int64": np.dtype(np.int64), "uint64": np.dtype(np.uint64),
    "float8_e4m3": np.dtype(ml_dtypes.float8_e4m3fn), "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
}
LEGAL = ["float16", "bfloat16", "float32", "int8", "uint8", "int16", "uint16", "int32", "uint32",
         "int64", "uint64"]
UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

HYP = settings(max_examples=25, deadline=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def raw(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(UINT_OF_SIZE[a.dtype.itemsize])


# -- construction ------------------------------------------------------------------------------

def test_list_of_floats_is_float32():
    t = pypto.Tensor([1.5, 2.0, -3.25])
    assert t.dtype is pypto.float32
    assert t.shape == (3,)
    assert t.nbytes == 12
    out = t.numpy()
    assert out.dtype == np.float32
    assert out.tolist() == [1.5, 2.0, -3.25]


def test_list_of_ints_is_int32():
    t = pypto.Tensor([[1, 2, 3], [4, 5, 6]])
    assert t.dtype is pypto.int32
    assert t.shape == (2, 3)
    assert t.nbytes == 24
    out = t.numpy()
    assert out.dtype == np.int32
    assert out.tolist() == [[1, 2, 3], [4, 5, 6]]


def test_mixed_int_and_float_list_is_float32():
    assert pypto.Tensor([1, 2.5]).dtype is pypto.float32


def test_list_with_explicit_dtype():
    t = pypto.Tensor([1, 2, 3, 4, 5], dtype=pypto.float32)   # the tutorial's Step 4
    assert t.dtype is pypto.float32
    assert t.numpy().tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert pypto.Tensor([1.0, 2.0], dtype=pypto.float16).numpy().dtype == np.float16


@pytest.mark.parametrize("name", list(HOST_TYPES))
def test_numpy_array_keeps_its_dtype(name):
    arr = np.arange(12).reshape(3, 4).astype(HOST_TYPES[name])
    t = pypto.Tensor(arr)
    assert t.dtype is getattr(pypto, name)
    assert t.dtype.np == HOST_TYPES[name]
    out = t.numpy()
    assert out.dtype == HOST_TYPES[name]
    assert np.array_equal(raw(out), raw(arr))


def test_list_that_does_not_fit_int32_is_an_error():
    with pytest.raises(E.DTypeError):
        pypto.Tensor([2 ** 40])


def test_ragged_list_is_a_shape_error():
    with pytest.raises(E.ShapeError):
        pypto.Tensor([[1, 2], [3]])


@pytest.mark.parametrize("make", [
    lambda: pypto.Tensor(np.zeros(4)),                               # float64 array, no dtype
    lambda: pypto.from_numpy(np.linspace(0, 1, 5)),
    lambda: pypto.Tensor(np.zeros(4, np.float32), dtype=np.float64),
    lambda: pypto.Tensor([1.0], dtype="float64"),
    lambda: pypto.empty((2, 2), np.float64),
    lambda: pypto.zeros((2, 2), np.float64),
])
def test_float64_is_rejected_with_the_legal_types(make):
    before = pypto.stats()
    with pytest.raises(E.DTypeError) as ei:
        make()
    msg = str(ei.value)
    assert isinstance(ei.value, pypto.PtoError)
    assert "float64" in msg
    assert "pypto.float32" in msg
    for name in LEGAL:
        assert name in msg, f"{name} not listed in:\n{msg}"
    after = pypto.stats()
    assert (after.live_tensors, after.h2d_copies) == (before.live_tensors, before.h2d_copies)


def test_float64_numpy_suggests_dtype_float32():
    with pytest.raises(E.DTypeError) as ei:
        pypto.Tensor(np.array([1.0, 2.0]))
    assert "dtype=pypto.float32" in str(ei.value)
    t = pypto.Tensor(np.array([1.0, 2.0]), dtype=pypto.float32)      # ... and the fix works
    assert t.dtype is pypto.float32 and t.numpy().tolist() == [1.0, 2.0]


@st.composite
def dtype_and_array(draw):
    name = draw(st.sampled_from(sorted(HOST_TYPES)))
    host = HOST_TYPES[name]
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5))  # 0-d: below
    # arbitrary bit patterns (NaN payloads, -0.0, subnormals, fp8 specials included)
    bits = draw(hnp.arrays(UINT_OF_SIZE[host.itemsize], shape))
    return name, bits.view(host)


@HYP
@given(dtype_and_array(), st.sampled_from(["Tensor", "Tensor+dtype", "from_numpy"]))
def test_every_dtype_round_trips_bit_exactly(case, how):
    name, arr = case
    dt = getattr(pypto, name)
    if how == "Tensor":
        t = pypto.Tensor(arr)
    elif how == "Tensor+dtype":
        t = pypto.Tensor(arr, dtype=dt)
    else:
        t = pypto.from_numpy(arr)
    try:
        assert t.dtype is dt
        assert t.shape == arr.shape
        assert t.nbytes == arr.nbytes
        out = t.numpy()
        assert out.dtype == arr.dtype and out.shape == arr.shape
        assert np.array_equal(raw(out), raw(arr))
    finally:
        t.free()


def test_zero_dim_array_keeps_its_shape():
    # BUG (pypto/tensor.py _host_array): np.ascontiguousarray() returns an array of ndim >= 1, so
    # a 0-d numpy array (or a Python scalar) becomes a tensor of shape (1,) and .numpy() gives a
    # (1,) array back. Tensor._init itself supports shape () (numel 1), so the shape is simply lost.
    # Repro: pypto.Tensor(np.array(3.0, np.float32)).shape == (1,)   (expected ())
    arr = np.array(3.0, np.float32)
    t = pypto.Tensor(arr)
    assert t.shape == ()
    assert t.numpy().shape == ()
    assert t.nbytes == 4


@HYP
@given(st.sampled_from(sorted(HOST_TYPES)), hnp.array_shapes(min_dims=1, max_dims=3, max_side=6))
def test_zeros_and_empty(name, shape):
    dt = getattr(pypto, name)
    z = pypto.zeros(shape, dt)
    e = pypto.empty(shape, dt)
    try:
        for t in (z, e):
            assert t.shape == tuple(shape) and t.dtype is dt
            assert t.nbytes == int(np.prod(shape)) * HOST_TYPES[name].itemsize
        assert not raw(z.numpy()).any()
        assert e.numpy().shape == tuple(shape)
    finally:
        z.free()
        e.free()


def test_empty_and_zeros_accept_an_int_shape_and_dtype_names():
    assert pypto.empty(7, pypto.int8).shape == (7,)
    assert pypto.zeros((2, 3), "float16").dtype is pypto.float16
    assert pypto.zeros((2, 3), np.int16).dtype is pypto.int16


def test_negative_shape_is_an_error():
    with pytest.raises(E.ShapeError):
        pypto.empty((2, -1), pypto.float32)


def _counts():
    st = pypto.stats()
    return st.live_tensors, st.live_bytes, st.h2d_copies


def _has_rule_and_fix(err: E.PtoError) -> None:
    msg = str(err)
    assert err.rule and err.fix, msg
    assert "Rule: " in msg and "Fix: " in msg


@pytest.mark.parametrize("make", [pypto.empty, pypto.zeros, pypto.Tensor._empty])
@pytest.mark.parametrize("shape, bad", [
    ((2.5,), "2.5"), (2.5, "2.5"), ((4.0, 2), "4.0"), ((np.float32(3),), "3.0"),
    ((True, 3), "True"), (True, "True"), ((np.bool_(True),), "True"),
    ((2, -1), "-1"), (-3, "-3"), ((np.int64(-2),), "-2"),
    ("4", "'4'"), (None, "None"), ((2, None), "None"),
])
def test_shapes_must_be_non_negative_integers(make, shape, bad):
    """Floats are not truncated, bools are not 0/1, negatives are refused: each a ShapeError
    naming the bad dimension, the rule and the fix, with nothing allocated."""
    before = _counts()
    with pytest.raises(E.ShapeError) as ei:
        make(shape, pypto.float32)
    assert bad in str(ei.value)
    _has_rule_and_fix(ei.value)
    assert _counts() == before


@pytest.mark.parametrize("shape, want", [
    (np.int64(4), (4,)), ((np.int64(2), np.int32(3)), (2, 3)), ([np.uint8(5)], (5,)),
    (np.array([2, 3]), (2, 3)), (np.array(6), (6,)), ((), ()), (0, (0,)), ((3, 0), (3, 0)),
])
def test_shapes_accept_numpy_integers(shape, want):
    for make in (pypto.empty, pypto.zeros):
        t = make(shape, pypto.int16)
        assert t.shape == want
        assert t.nbytes == 2 * int(np.prod(want))
        assert all(type(d) is int for d in t.shape)
    assert not pypto.zeros(shape, pypto.int16).numpy().any()


def test_negative_dimension_message_has_rule_and_fix():
    with pytest.raises(E.ShapeError) as ei:
        pypto.zeros((2, -1))
    assert "-1" in str(ei.value) and "negative" in str(ei.value)
    _has_rule_and_fix(ei.value)


def test_integer_beyond_64_bits_is_an_overflow_not_ragged_data():
    before = _counts()
    with pytest.raises(E.DTypeError) as ei:
        pypto.Tensor([2 ** 70])
    msg = str(ei.value)
    assert "ragged" not in msg
    assert str(2 ** 70) in msg and "overflow" in msg
    assert "dtype=pypto.float32" in ei.value.fix                # a way out that works:
    _has_rule_and_fix(ei.value)
    assert _counts() == before
    t = pypto.Tensor([2 ** 70], dtype=pypto.float32)
    assert t.numpy().tolist() == [float(2 ** 70)]


@pytest.mark.parametrize("data", [2 ** 70, -(2 ** 64), [[1, 2], [3, 2 ** 64]]])
def test_other_integers_beyond_64_bits(data):
    with pytest.raises(E.DTypeError, match="overflows every PTO integer type") as ei:
        pypto.Tensor(data)
    _has_rule_and_fix(ei.value)


def test_ints_numpy_would_turn_into_float64_stay_integers():
    # numpy makes [1, 2**64 - 1] a float64 array (neither int64 nor uint64 holds both as it
    # infers); they are integers and must not silently become float32 1.8e19.
    with pytest.raises(E.DTypeError) as ei:
        pypto.Tensor([1, 2 ** 64 - 1])
    assert str(2 ** 64 - 1) in str(ei.value) and "int32" in str(ei.value)
    assert "dtype=pypto.uint64" in ei.value.fix
    t = pypto.Tensor([1, 2 ** 64 - 1], dtype=pypto.uint64)
    assert t.numpy().tolist() == [1, 2 ** 64 - 1]
    with pytest.raises(E.DTypeError, match="no PTO integer type holds"):
        pypto.Tensor([-1, 2 ** 64 - 1])


def test_int32_overflow_suggests_the_narrowest_type_that_holds_the_data():
    with pytest.raises(E.DTypeError) as ei:
        pypto.Tensor([2 ** 40])
    assert "dtype=pypto.int64" in ei.value.fix
    _has_rule_and_fix(ei.value)
    with pytest.raises(E.DTypeError) as ei:
        pypto.Tensor([0, 3_000_000_000])
    assert "dtype=pypto.uint32" in ei.value.fix


@pytest.mark.parametrize("data, dtype, exc", [
    ([[1, 2], [3]], None, E.ShapeError),                       # ragged
    ([1, None], None, E.ShapeError),                           # not a number
    (["a", 1], None, E.DTypeError),
    (["a", 1], pypto.float32, E.DTypeError),                   # was a raw ValueError
    ([1 + 2j], None, E.DTypeError),
    ([1.5], pypto.int32, E.DTypeError),                        # fraction into an int type
    ([1e300], None, E.DTypeError),                             # overflows float32
    ([300], pypto.int8, E.DTypeError),
])
def test_bad_data_errors_name_the_rule_and_the_fix(data, dtype, exc):
    before = _counts()
    with pytest.raises(exc) as ei:
        pypto.Tensor(data, dtype=dtype)
    _has_rule_and_fix(ei.value)
    assert _counts() == before


def test_none_is_not_a_dtype():
    with pytest.raises(E.DTypeError) as ei:
        pypto.dtypes.as_dtype(None, context="x")
    assert "float64" not in str(ei.value).split("Rule")[0] and "None" in str(ei.value)
    _has_rule_and_fix(ei.value)


@pytest.mark.parametrize("scalar, want_dtype, want", [
    (1.5, "float32", 1.5),                         # Python float
    (np.float32(1.5), "float32", 1.5),
    (np.float64(1.5), "float32", 1.5),             # np.float64 is a Python float
    (np.float16(1.5), "float16", 1.5),             # other numpy scalars keep their type
    (ml_dtypes.bfloat16(1.5), "bfloat16", 1.5),
    (3, "int32", 3),                               # Python int
    (np.int64(3), "int64", 3),
    (np.int8(-3), "int8", -3),
    (np.uint64(2 ** 63), "uint64", 2 ** 63),
])
def test_a_scalar_makes_a_0d_tensor(scalar, want_dtype, want):
    t = pypto.Tensor(scalar)
    assert t.shape == () and t.size == 1
    assert t.dtype is getattr(pypto, want_dtype)
    out = t.numpy()
    assert out.shape == () and out.dtype == HOST_TYPES[want_dtype] and out.item() == want


def test_numpy_scalars_with_a_dtype_and_in_lists():
    assert pypto.Tensor(np.float32(2.0), dtype=pypto.int16).numpy().item() == 2
    assert pypto.Tensor([np.float32(1.5), np.int64(2)]).numpy().tolist() == [1.5, 2.0]
    with pytest.raises(E.DTypeError):
        pypto.Tensor(np.float32(2.5), dtype=pypto.int32)           # still not rounded
    with pytest.raises(E.DTypeError):
        pypto.Tensor(np.bool_(True))                               # like a Python bool


def test_copy_from_accepts_a_numpy_scalar_and_explains_mismatches():
    t = pypto.zeros((), pypto.float32)
    t.copy_from(np.float32(2.5))
    assert t.numpy().item() == 2.5
    v = pypto.zeros((3,), pypto.float32)
    before = _counts()
    with pytest.raises(E.DTypeMismatchError) as ei:
        v.copy_from(np.zeros(3))                                   # float64
    _has_rule_and_fix(ei.value)
    with pytest.raises(E.ShapeError) as ei:
        v.copy_from(np.zeros(4, np.float32))
    _has_rule_and_fix(ei.value)
    assert _counts() == before


def test_non_contiguous_numpy_input():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    for view in (a.T, a[:, ::2], np.asfortranarray(a)):
        assert np.array_equal(pypto.Tensor(view).numpy(), view)


def test_numpy_returns_a_host_copy():
    t = pypto.Tensor([1.0, 2.0])
    h = t.numpy()
    h[0] = 99
    assert t.numpy().tolist() == [1.0, 2.0]


# -- device addresses ----------------------------------------------------------------------

def test_device_ptr_aligned_and_distinct():
    sizes = [1, 3, 512, 513, 4096, 10_000, 7]
    ts = [pypto.empty((n,), pypto.uint8) for n in sizes]
    ranges = sorted((t.device_ptr, t.device_ptr + t.nbytes) for t in ts)
    for lo, _ in ranges:
        assert lo % GM_ALIGN == 0
    for (lo1, hi1), (lo2, _) in zip(ranges, ranges[1:]):
        assert hi1 <= lo2, "live tensors overlap in device memory"
    assert len({t.device_ptr for t in ts}) == len(ts)


def test_freed_address_is_reused_first_fit():
    a = pypto.empty((100,), pypto.float32)
    b = pypto.empty((100,), pypto.float32)
    pa = a.device_ptr
    a.free()
    c = pypto.empty((10,), pypto.float32)
    assert c.device_ptr == pa
    assert b.device_ptr != pa


# -- lifetime -------------------------------------------------------------------------------

def test_free_then_use():
    t = pypto.Tensor(np.ones((2, 3), np.float32))
    t.free()
    assert t.is_freed
    for use in (t.numpy, lambda: t.device_ptr, lambda: t.copy_from(np.ones((2, 3), np.float32))):
        with pytest.raises(E.UseAfterFreeError) as ei:
            use()
        assert "freed" in str(ei.value)
        assert isinstance(ei.value, pypto.PtoError)
    # static facts stay readable
    assert t.shape == (2, 3) and t.dtype is pypto.float32 and t.nbytes == 24
    assert "freed" in repr(t)


def test_double_free():
    t = pypto.Tensor([1, 2, 3])
    t.free()
    live = pypto.stats().live_tensors
    with pytest.raises(E.UseAfterFreeError):
        t.free()
    assert pypto.stats().live_tensors == live


def test_context_manager_frees():
    with pypto.Tensor([1.0, 2.0]) as t:
        assert pypto.stats().live_tensors == 1
        assert t.numpy().tolist() == [1.0, 2.0]
    assert t.is_freed
    assert pypto.stats().live_tensors == 0
    with pytest.raises(E.UseAfterFreeError):
        t.numpy()


def test_freed_tensor_as_kernel_argument():
    from pypto import pto

    @pypto.kernel
    def nothing(x):
        pto.Tile(pto.Vec, pto.float32, (1, 8))

    t = pypto.Tensor(np.zeros(8, np.float32))
    t.free()
    with pytest.raises(E.UseAfterFreeError):
        nothing(t)


# -- stats ----------------------------------------------------------------------------------

def _counts():
    s = pypto.stats()
    return s.h2d_copies, s.h2d_bytes, s.d2h_copies, s.d2h_bytes


def test_stats_for_a_sequence_of_operations():
    st0 = pypto.stats()
    assert _counts() == (0, 0, 0, 0)
    assert (st0.live_tensors, st0.live_bytes, st0.peak_bytes) == (0, 0, 0)

    a = pypto.Tensor([1.0, 2.0, 3.0])                         # H2D 12 B
    assert _counts() == (1, 12, 0, 0)
    b = pypto.zeros((4, 4), pypto.int16)                       # H2D 32 B (zeros are written)
    assert _counts() == (2, 44, 0, 0)
    c = pypto.empty((10,), pypto.float32)                      # no copy
    assert _counts() == (2, 44, 0, 0)
    a.numpy()                                                   # D2H 12 B
    b.numpy()                                                   # D2H 32 B
    assert _counts() == (2, 44, 2, 44)
    d = pypto.from_numpy(np.ones(5, np.uint8))                 # H2D 5 B
    assert _counts() == (3, 49, 2, 44)
    s = pypto.stats()
    assert (s.live_tensors, s.live_bytes, s.peak_bytes) == (4, 12 + 32 + 40 + 5, 89)

    c.free()
    s = pypto.stats()
    assert (s.live_tensors, s.live_bytes, s.peak_bytes) == (3, 49, 89)
    d.copy_from(np.zeros(5, np.uint8))                          # H2D 5 B
    assert _counts() == (4, 54, 2, 44)
    e = pypto.empty((2, 8), pypto.float32)                      # 64 B: live 113, new peak
    s = pypto.stats()
    assert (s.live_tensors, s.live_bytes, s.peak_bytes) == (4, 113, 113)
    for t in (a, b, d, e):
        t.free()
    s = pypto.stats()
    assert (s.live_tensors, s.live_bytes, s.peak_bytes) == (0, 0, 113)
    assert _counts() == (4, 54, 2, 44)


def test_staged_numpy_operands_are_counted():
    """Step 3 of the tutorial: numpy inputs are copied in, the output copied back, all counted;
    the staging buffers are freed afterwards."""
    add = pypto.load_insn("add")
    a = np.arange(5, dtype=np.float32)
    b = np.full(5, 10, np.float32)
    c = np.zeros(5, np.float32)
    for i, x in enumerate((a, b, c)):
        add.set_operand(i, x)
    add.execute()
    assert c.tolist() == [10.0, 11.0, 12.0, 13.0, 14.0]
    s = pypto.stats()
    assert (s.h2d_copies, s.h2d_bytes) == (2, 40)
    assert (s.d2h_copies, s.d2h_bytes) == (1, 20)
    assert (s.live_tensors, s.live_bytes) == (0, 0)
    assert s.peak_bytes == 60
    assert s.launches == 1


def test_device_operands_and_kernel_launches_copy_nothing():
    add = pypto.load_insn("add")
    a = pypto.Tensor(np.arange(5, dtype=np.float32))
    b = pypto.Tensor(np.full(5, 10, np.float32))
    c = pypto.zeros(5, pypto.float32)
    before = _counts()
    for i, x in enumerate((a, b, c)):
        add.set_operand(i, x)
    add.execute()
    add.execute()
    assert _counts() == before
    assert c.numpy().tolist() == [10.0, 11.0, 12.0, 13.0, 14.0]
    assert _counts() == (before[0], before[1], before[2] + 1, before[3] + 20)


# -- GM capacity ------------------------------------------------------------------------------

def test_out_of_device_memory_before_any_host_allocation():
    """An allocation bigger than the SoC's GM (64 GiB on a2a3) fails before pypto makes the host
    array backing it: tracemalloc (which sees numpy's data buffers) must record no large block."""
    n = (64 * GiB) // 4 + 1024                 # float32 elements: just over 64 GiB
    tracemalloc.start()
    try:
        with pytest.raises(E.OutOfDeviceMemoryError) as ei:
            pypto.empty((n,), pypto.float32)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024, f"{peak} bytes were allocated before the error"
    msg = str(ei.value)
    assert isinstance(ei.value, E.DeviceMemoryError) and isinstance(ei.value, pypto.PtoError)
    assert str(n * 4) in msg and "a2a3" in msg
    s = pypto.stats()
    assert (s.live_tensors, s.live_bytes) == (0, 0)


def test_out_of_device_memory_with_a_small_configured_capacity(restart):
    restart(sim=pypto.SimOptions(gm_bytes=4096))
    a = pypto.empty((2048,), pypto.uint8)
    b = pypto.empty((1024,), pypto.uint8)
    with pytest.raises(E.OutOfDeviceMemoryError):
        pypto.empty((1536,), pypto.uint8)
    assert pypto.stats().live_bytes == 3072                    # the failed call changed nothing
    pa = a.device_ptr
    a.free()
    c = pypto.empty((1536,), pypto.uint8)                      # fits again once a is freed
    assert c.device_ptr == pa
    assert pypto.stats().live_bytes == 2560
    assert b.device_ptr != pa


def test_fragmented_device_memory(restart):
    """Enough bytes free in total but no contiguous block: still a clean OutOfDeviceMemoryError."""
    restart(sim=pypto.SimOptions(gm_bytes=8 * GM_ALIGN))
    ts = [pypto.empty((GM_ALIGN,), pypto.uint8) for _ in range(8)]
    for t in ts[::2]:
        t.free()
    before = pypto.stats()
    with pytest.raises(E.OutOfDeviceMemoryError):
        pypto.empty((2 * GM_ALIGN,), pypto.uint8)
    after = pypto.stats()
    assert (after.live_tensors, after.live_bytes) == (before.live_tensors, before.live_bytes)
    for t in ts[1::2]:
        t.free()
    big = pypto.empty((8 * GM_ALIGN,), pypto.uint8)           # fully coalesced again
    assert big.nbytes == 8 * GM_ALIGN


# -- the GM heap allocator (SimAllocator) -----------------------------------------------------

class _Model:
    """An independent reference: allocated [addr, addr+size) blocks; first fit = the lowest gap."""

    def __init__(self, base, cap, align):
        self.base, self.cap, self.align = base, cap, align
        self.blocks: dict[int, int] = {}

    def first_fit(self, nbytes):
        size = -(-nbytes // self.align) * self.align
        cur = self.base
        for addr in sorted(self.blocks):
            if addr - cur >= size:
                return cur
            cur = addr + self.blocks[addr]
        return cur if self.base + self.cap - cur >= size else None


def _heap(cap=64 * GM_ALIGN, align=GM_ALIGN):
    h = SimAllocator(cap, align)
    base = h.free_list[0][0]
    return h, base


def test_allocator_first_fit_and_coalescing_by_hand():
    h, base = _heap(cap=16 * GM_ALIGN)
    a = h.alloc(1)                       # rounds to one 512-byte unit
    b = h.alloc(GM_ALIGN + 1)            # two units
    c = h.alloc(GM_ALIGN)
    assert (a, b, c) == (base, base + GM_ALIGN, base + 3 * GM_ALIGN)
    h.free(b, GM_ALIGN + 1)
    assert h.alloc(GM_ALIGN) == b        # first fit: the hole left by b
    d = h.alloc(2 * GM_ALIGN)            # the rest of b's hole is too small: after c
    assert d == base + 4 * GM_ALIGN
    h.free(a, 1)
    h.free(b, GM_ALIGN)
    h.free(d, 2 * GM_ALIGN)
    h.free(c, GM_ALIGN)
    assert h.free_list == [(base, 16 * GM_ALIGN)]


def test_allocator_out_of_memory():
    h, base = _heap(cap=4 * GM_ALIGN)
    h.alloc(3 * GM_ALIGN)
    with pytest.raises(E.OutOfDeviceMemoryError):
        h.alloc(2 * GM_ALIGN)
    assert h.alloc(GM_ALIGN) == base + 3 * GM_ALIGN
    with pytest.raises(E.OutOfDeviceMemoryError):
        h.alloc(1)


class AllocatorMachine(RuleBasedStateMachine):
    """Random alloc/free sequences against the model: same addresses (first fit), no overlap,
    the free list always sorted and fully coalesced, and one block again once all is freed."""

    CAP = 48 * GM_ALIGN
    blocks = Bundle("blocks")

    def __init__(self):
        super().__init__()
        self.heap, self.base = _heap(cap=self.CAP)
        self.model = _Model(self.base, self.CAP, GM_ALIGN)
        self.sizes: dict[int, int] = {}

    @rule(target=blocks, nbytes=st.integers(1, 12 * GM_ALIGN))
    def alloc(self, nbytes):
        want = self.model.first_fit(nbytes)
        if want is None:
            with pytest.raises(E.OutOfDeviceMemoryError):
                self.heap.alloc(nbytes)
            return None
        addr = self.heap.alloc(nbytes)
        assert addr == want, f"first fit gives {want:#x}, allocator gave {addr:#x}"
        size = -(-nbytes // GM_ALIGN) * GM_ALIGN
        self.model.blocks[addr] = size
        self.sizes[addr] = nbytes
        return addr

    @rule(addr=consumes(blocks))
    def free(self, addr):
        if addr is None:
            return
        self.heap.free(addr, self.sizes.pop(addr))
        del self.model.blocks[addr]

    @invariant()
    def consistent(self):
        fl = self.heap.free_list
        used = sorted(self.model.blocks.items())
        for (a1, s1), (a2, _) in zip(used, used[1:]):
            assert a1 + s1 <= a2, "allocated blocks overlap"
        for a, s in fl:
            assert s > 0 and a % GM_ALIGN == 0 and s % GM_ALIGN == 0
            assert self.base <= a and a + s <= self.base + self.CAP
        for (a1, s1), (a2, _) in zip(fl, fl[1:]):
            assert a1 + s1 < a2, f"free list not sorted/coalesced: {fl}"
        for a, s in fl:
            for u, us in used:
                assert a + s <= u or u + us <= a, "a free block overlaps an allocated one"
        assert sum(s for _, s in fl) + sum(s for _, s in used) == self.CAP

    def teardown(self):
        for addr, n in list(self.sizes.items()):
            self.heap.free(addr, n)
        assert self.heap.free_list == [(self.base, self.CAP)]


TestAllocatorMachine = AllocatorMachine.TestCase
TestAllocatorMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
