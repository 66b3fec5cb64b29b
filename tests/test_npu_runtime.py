"""The npu backend's runtime layer without CANN: AclRuntime over HostAcl (pyACL's shape over host
memory), the ACL code table, error mapping, per-thread devices, leaks and Python-side validation."""
from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.backends.npu import acl_codes
from pypto.backends.npu.host_acl import CODES_FOR_MISUSE, GM_ALIGN, HostAcl, api_name
from pypto.backends.npu.runtime import AclRuntime, Runtime
from pypto.errors import (AclDeviceError, AclError, AclInitError, AclMemoryError, AclParamError,
                          AclUnsupportedError, KernelFaultError, NpuUnavailableError, PtoError)


def _bytes(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def _names(acl: HostAcl) -> list[str]:
    return [name for name, _ in acl.calls if name != "acl.get_recent_err_msg"]


@pytest.fixture
def acl():
    return HostAcl()


@pytest.fixture
def rt(acl):
    """An initialised runtime with device 0 set on this thread."""
    runtime = AclRuntime(acl)
    runtime.init()
    runtime.set_device(0)
    yield runtime


# -- the code table ----------------------------------------------------------------------------
NOTES_CODES = {
    0: AclError, 100000: AclParamError, 100001: AclInitError, 100002: AclInitError, 100003: AclInitError,
    100037: AclInitError, 200000: AclMemoryError, 200006: AclUnsupportedError, 500001: AclError,
    107000: AclParamError, 107001: AclDeviceError, 107017: AclParamError, 207000: AclUnsupportedError,
    207001: AclMemoryError, 207004: AclDeviceError, 507014: KernelFaultError, 507015: KernelFaultError,
    507016: KernelFaultError, 507042: KernelFaultError, 507043: KernelFaultError,
    507046: KernelFaultError, 507899: AclError,
}


@pytest.mark.parametrize("code,cls", sorted(NOTES_CODES.items()))
def test_table_covers_notes_codes(code, cls):
    row = acl_codes.lookup(code)
    assert row.code == code and row.error is cls
    assert row.symbol.startswith("ACL_") and row.meaning and row.fix


def test_table_symbols_and_kernel_fault_fix():
    assert acl_codes.lookup(207004).symbol == "ACL_ERROR_RT_NO_DEVICE"
    assert acl_codes.lookup(507015).symbol == "ACL_ERROR_RT_AICORE_EXCEPTION"
    faults = [row for row in acl_codes.CODES.values() if row.error is KernelFaultError]
    assert {507014, 507015, 507016, 507042, 507043} <= {row.code for row in faults}
    for row in faults:
        assert "ASCEND_SLOG_PRINT_TO_STDOUT=1 ASCEND_GLOBAL_LOG_LEVEL=1" in row.fix
        assert "pypto.init(backend='sim')" in row.fix
    assert len({row.symbol for row in acl_codes.CODES.values()}) == len(acl_codes.CODES)


def test_unknown_code_maps_to_acl_error():
    row = acl_codes.lookup(123456)
    assert row.error is AclError and row.symbol == "unknown" and row.code == 123456


def test_api_names():
    assert acl_codes.c_name("acl.rt.malloc") == "aclrtMalloc"
    assert api_name("aclrtMalloc") == api_name("rt.malloc") == api_name("acl.rt.malloc") == "acl.rt.malloc"
    assert api_name("init") == "acl.init"
    with pytest.raises(ValueError):
        api_name("rt.no_such_call")


# -- protocol ----------------------------------------------------------------------------------
def test_acl_runtime_implements_protocol():
    expected = {"init", "finalize", "device_count", "set_device", "reset_device", "soc_name", "malloc",
                "free", "copy_h2d", "copy_d2h", "create_stream", "synchronize", "destroy_stream",
                "last_error", "version"}
    members = {name for name in vars(Runtime) if not name.startswith("_")}
    assert members == expected
    assert isinstance(AclRuntime(HostAcl()), Runtime)


# -- the full flow -----------------------------------------------------------------------------
def test_full_flow_round_trip_and_call_sequence():
    acl = HostAcl()
    rt = AclRuntime(acl)
    rt.init()
    assert rt.device_count() == 1
    rt.set_device(0)
    assert rt.soc_name() == "Ascend910B1"
    assert rt.version() == "8.5.0"
    stream = rt.create_stream()
    data = _bytes(1000, seed=1)
    ptr = rt.malloc(data.nbytes)
    assert ptr % GM_ALIGN == 0
    assert acl.live() == {ptr: 1000}
    rt.copy_h2d(ptr, data)
    out = np.zeros(1000, np.uint8)
    rt.copy_d2h(out, ptr)
    assert out.tobytes() == data.tobytes()
    rt.synchronize(stream)
    rt.free(ptr)
    rt.destroy_stream(stream)
    rt.reset_device(0)
    rt.finalize()
    assert acl.live() == {}
    assert acl.calls == [
        ("acl.init", ()),
        ("acl.rt.get_device_count", ()),
        ("acl.rt.set_device", (0,)),
        ("acl.get_soc_name", ()),
        ("acl.get_version", ()),
        ("acl.rt.create_stream", ()),
        ("acl.rt.malloc", (1000, 0)),
        ("acl.rt.memcpy", (ptr, 1000, data.ctypes.data, 1000, 1)),
        ("acl.rt.memcpy", (out.ctypes.data, 1000, ptr, 1000, 2)),
        ("acl.rt.synchronize_stream", (stream,)),
        ("acl.rt.free", (ptr,)),
        ("acl.rt.destroy_stream", (stream,)),
        ("acl.rt.reset_device", (0,)),
        ("acl.finalize", ()),
    ]


def test_init_is_idempotent_and_finalize_only_once():
    acl = HostAcl()
    rt = AclRuntime(acl)
    rt.init()
    rt.init()
    assert acl.api_calls("acl.init") == [()]
    rt.finalize()
    rt.finalize()
    assert acl.api_calls("acl.finalize") == [()]
    rt.init()  # a new session initialises again
    assert len(acl.api_calls("acl.init")) == 2
    rt.finalize()


def test_repeat_initialize_is_success_and_not_finalized():
    acl = HostAcl(initialized=True)  # someone else (torch_npu) called aclInit
    rt = AclRuntime(acl)
    rt.init()
    rt.set_device(0)
    ptr = rt.malloc(64)
    rt.free(ptr)
    rt.finalize()
    assert "acl.finalize" not in _names(acl)
    assert acl.get_soc_name() == "Ascend910B1"  # ACL still initialised for its owner


def test_injected_repeat_initialize_on_init():
    acl = HostAcl()
    acl.inject("acl.init", 100002)
    rt = AclRuntime(acl)
    rt.init()
    assert rt.initialised
    rt.finalize()
    assert _names(acl) == ["acl.init"]


# -- injected codes ----------------------------------------------------------------------------
def _do(rt: AclRuntime, api: str):
    stream = rt.create_stream()
    ptr = rt.malloc(256)
    actions = {
        "acl.init": lambda: (rt.finalize(), rt.init()),
        "acl.finalize": rt.finalize,
        "acl.rt.get_device_count": rt.device_count,
        "acl.rt.set_device": lambda: rt.set_device(0),
        "acl.rt.malloc": lambda: rt.malloc(128),
        "acl.rt.free": lambda: rt.free(ptr),
        "acl.rt.memcpy": lambda: rt.copy_h2d(ptr, _bytes(256)),
        "acl.rt.synchronize_stream": lambda: rt.synchronize(stream),
        "acl.rt.destroy_stream": lambda: rt.destroy_stream(stream),
        "acl.get_version": rt.version,
    }
    actions[api]()


INJECTED = [
    ("acl.rt.malloc", 100000, AclParamError, "ACL_ERROR_INVALID_PARAM"),
    ("acl.rt.malloc", 100001, AclInitError, "ACL_ERROR_UNINITIALIZE"),
    ("acl.init", 100000, AclParamError, "ACL_ERROR_INVALID_PARAM"),
    ("acl.finalize", 100037, AclInitError, "ACL_ERROR_REPEAT_FINALIZE"),
    ("acl.rt.set_device", 107001, AclDeviceError, "ACL_ERROR_RT_INVALID_DEVICEID"),
    ("acl.rt.malloc", 207001, AclMemoryError, "ACL_ERROR_RT_MEMORY_ALLOCATION"),
    ("acl.rt.get_device_count", 207004, AclDeviceError, "ACL_ERROR_RT_NO_DEVICE"),
    ("acl.rt.synchronize_stream", 507015, KernelFaultError, "ACL_ERROR_RT_AICORE_EXCEPTION"),
    ("acl.rt.synchronize_stream", 507014, KernelFaultError, "ACL_ERROR_RT_AICORE_TIMEOUT"),
    ("acl.rt.destroy_stream", 107017, AclParamError, "ACL_ERROR_RT_INVALID_HANDLE"),
    ("acl.rt.memcpy", 500001, AclError, "ACL_ERROR_FAILURE"),
    ("acl.rt.free", 123456, AclError, "unknown"),
    ("acl.get_version", 200006, AclUnsupportedError, "ACL_ERROR_FEATURE_UNSUPPORTED"),
]


@pytest.mark.parametrize("api,code,cls,symbol", INJECTED, ids=[f"{a}-{c}" for a, c, _, _ in INJECTED])
def test_injected_code_raises_mapped_error(api, code, cls, symbol):
    acl = HostAcl()
    rt = AclRuntime(acl)
    rt.init()
    if api != "acl.rt.set_device":
        rt.set_device(0)
    else:
        acl.inject(api, code)
        with pytest.raises(PtoError) as info:
            rt.set_device(0)
    if api != "acl.rt.set_device":
        acl.inject(api, code)
        with pytest.raises(PtoError) as info:
            _do(rt, api)
    err = info.value
    assert type(err) is cls
    cname = acl_codes.c_name(api)
    assert (err.api, err.code, err.symbol) == (cname, code, symbol)
    assert "injected" in err.runtime_message and err.runtime_message in str(err)
    assert cname in str(err) and api in str(err) and str(code) in str(err) and symbol in str(err)
    assert err.rule and err.fix
    if cls is KernelFaultError:
        assert "ASCEND_SLOG_PRINT_TO_STDOUT=1" in err.fix and "backend='sim'" in err.fix


def test_injection_after_and_times():
    acl = HostAcl()
    rt = AclRuntime(acl)
    rt.init()
    rt.set_device(0)
    acl.inject("rt.malloc", 207001, times=2, after=1)
    first = rt.malloc(8)
    for _ in range(2):
        with pytest.raises(AclMemoryError):
            rt.malloc(8)
    last = rt.malloc(8)
    assert acl.live() == {first: 8, last: 8}
    with pytest.raises(ValueError):
        acl.inject("acl.get_soc_name", 1)
    with pytest.raises(ValueError):
        acl.inject("acl.rt.malloc", 0)


def test_context_names_size_and_device(rt, acl):
    acl.inject("acl.rt.malloc", 207001)
    with pytest.raises(AclMemoryError) as info:
        rt.malloc(4096)
    assert "size=4096" in str(info.value) and "device=0" in str(info.value)


# -- devices -----------------------------------------------------------------------------------
@pytest.mark.parametrize("no_device_code", [207004, 0])
def test_no_device_visible(no_device_code):
    rt = AclRuntime(HostAcl(device_count=0, no_device_code=no_device_code))
    rt.init()
    with pytest.raises(AclDeviceError, match="no Ascend device visible") as info:
        rt.device_count()
    assert info.value.code == 207004 and info.value.symbol == "ACL_ERROR_RT_NO_DEVICE"
    assert "npu-smi" in info.value.fix


def test_invalid_device_id_from_runtime():
    acl = HostAcl(device_count=2)
    rt = AclRuntime(acl)
    rt.init()
    assert rt.device_count() == 2
    with pytest.raises(AclDeviceError) as info:
        rt.set_device(2)
    assert info.value.code == 107001 and "device=2" in str(info.value)
    rt.set_device(1)


def test_soc_name_configurable_and_needs_init():
    acl = HostAcl(soc="Ascend910_9391")
    rt = AclRuntime(acl)
    with pytest.raises(AclInitError):
        rt.soc_name()
    rt.init()
    assert rt.soc_name() == "Ascend910_9391"


def _in_thread(fn):
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            box["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_set_device_is_per_thread(rt, acl):
    assert acl.api_calls("acl.rt.set_device") == [(0,)]
    rt.set_device(0)  # same thread, same device: not called again
    assert acl.api_calls("acl.rt.set_device") == [(0,)]
    _in_thread(lambda: rt.set_device(0))  # a new thread must set the device itself
    assert acl.api_calls("acl.rt.set_device") == [(0,), (0,)]
    ptr = _in_thread(lambda: rt.malloc(32))  # work on a fresh thread sets the device first
    names = _names(acl)
    assert names[-2:] == ["acl.rt.set_device", "acl.rt.malloc"]
    _in_thread(lambda: rt.free(ptr))
    assert len(acl.api_calls("acl.rt.set_device")) == 4
    assert acl.live() == {}


def test_host_acl_requires_device_per_thread(acl):
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    ptr, ret = _in_thread(lambda: acl.rt.malloc(16, 0))
    assert (ptr, ret) == (0, 107002) and "no device set" in acl.get_recent_err_msg()
    assert acl.rt.malloc(16, 0)[1] == 0


def test_reset_device_requires_set_again(rt, acl):
    rt.reset_device(0)
    with pytest.raises(AclDeviceError) as info:
        rt.malloc(16)
    assert info.value.code == 107002
    rt.set_device(0)
    rt.free(rt.malloc(16))


def test_calls_before_init_fail(acl):
    rt = AclRuntime(acl)
    with pytest.raises(AclInitError) as info:
        rt.set_device(0)
    assert info.value.code == 100001


# -- memory ------------------------------------------------------------------------------------
def test_failed_malloc_leaves_nothing_allocated(rt, acl):
    acl.inject("acl.rt.malloc", 207001)
    with pytest.raises(AclMemoryError):
        rt.malloc(1 << 20)
    assert acl.live() == {}


def test_out_of_budget_malloc():
    acl = HostAcl(memory_bytes=4096)
    rt = AclRuntime(acl)
    rt.init()
    rt.set_device(0)
    ptr = rt.malloc(3000)
    with pytest.raises(AclMemoryError) as info:
        rt.malloc(2000)
    assert info.value.code == 207001 and "out of memory" in info.value.runtime_message
    assert acl.live() == {ptr: 3000}
    rt.free(ptr)
    rt.free(rt.malloc(4096))  # freed memory is available again


def test_copy_bounds(rt, acl):
    ptr = rt.malloc(100)
    with pytest.raises(AclParamError) as info:
        rt.copy_h2d(ptr, _bytes(101))
    assert info.value.code == 107000 and "past its allocation" in info.value.runtime_message
    with pytest.raises(AclParamError):
        rt.copy_h2d(ptr + 50, _bytes(60))
    with pytest.raises(AclParamError):
        rt.copy_d2h(np.empty(101, np.uint8), ptr)
    rt.copy_h2d(ptr + 50, _bytes(50))  # exactly to the end is fine
    with pytest.raises(AclParamError) as info:
        rt.copy_d2h(np.empty(4, np.uint8), ptr + 4096)
    assert "not inside a live device allocation" in info.value.runtime_message
    rt.free(ptr)
    with pytest.raises(AclParamError):
        rt.copy_h2d(ptr, _bytes(10))  # use after free


def test_host_acl_memcpy_codes(rt, acl):
    ptr = rt.malloc(64)
    host = _bytes(64)
    assert acl.rt.memcpy(ptr, 32, host.ctypes.data, 64, 1) == 100000  # count > dest_max
    assert acl.rt.memcpy(ptr, 64, host.ctypes.data, 64, 9) == 100000  # unknown kind
    assert acl.rt.memcpy(ptr, 64, 0, 64, 1) == 100000                  # null host pointer
    assert acl.rt.memcpy(ptr, 64, ptr, 64, 1) == 107000                # device memory as host source
    assert acl.rt.memcpy(ptr, 64, host.ctypes.data, 64, 4) == 0        # DEFAULT infers the direction
    out = np.empty(64, np.uint8)
    assert acl.rt.memcpy(out.ctypes.data, 64, ptr, 64, 4) == 0
    assert out.tobytes() == host.tobytes()
    assert acl.rt.memcpy(ptr, 64, host.ctypes.data, 0, 1) == 0         # nothing to copy
    assert acl.rt.memcpy("x", 64, host.ctypes.data, 64, 1) == 100000
    rt.free(ptr)


def test_double_free_and_unknown_pointer(rt, acl):
    ptr = rt.malloc(64)
    with pytest.raises(AclParamError) as info:
        rt.free(ptr + 8)
    assert info.value.code == 107000 and "unknown or interior" in info.value.runtime_message
    rt.free(ptr)
    with pytest.raises(AclParamError) as info:
        rt.free(ptr)
    assert info.value.code == 107000 and "double free" in info.value.runtime_message
    assert "pointer=" in str(info.value)


def test_stream_handles(rt, acl):
    s1, s2 = rt.create_stream(), rt.create_stream()
    assert s1 != s2 and s1 > 0
    rt.destroy_stream(s1)
    with pytest.raises(AclParamError) as info:
        rt.synchronize(s1)
    assert info.value.code == 107017
    with pytest.raises(AclParamError):
        rt.destroy_stream(s1)
    rt.synchronize(0)  # the default stream
    rt.destroy_stream(s2)


def test_leak_detection(rt, acl):
    a, b, c = rt.malloc(10), rt.malloc(20), rt.malloc(30)
    rt.free(b)
    assert acl.live() == {a: 10, c: 30}
    rt.finalize()
    assert acl.live() == {a: 10, c: 30}  # finalize does not hide leaks
    assert len({a, b, c}) == 3 and all(p % GM_ALIGN == 0 for p in (a, b, c))


# -- Python-side validation --------------------------------------------------------------------
BAD_CALLS = {
    "malloc negative": lambda rt, p: rt.malloc(-1),
    "malloc zero": lambda rt, p: rt.malloc(0),
    "malloc float": lambda rt, p: rt.malloc(1.5),
    "malloc bool": lambda rt, p: rt.malloc(True),
    "free null": lambda rt, p: rt.free(0),
    "free negative": lambda rt, p: rt.free(-5),
    "free str": lambda rt, p: rt.free("0x10"),
    "h2d float32": lambda rt, p: rt.copy_h2d(p, np.zeros(4, np.float32)),
    "h2d 2-D": lambda rt, p: rt.copy_h2d(p, np.zeros((2, 2), np.uint8)),
    "h2d strided": lambda rt, p: rt.copy_h2d(p, np.zeros(8, np.uint8)[::2]),
    "h2d bytes": lambda rt, p: rt.copy_h2d(p, b"abcd"),
    "h2d null dst": lambda rt, p: rt.copy_h2d(0, np.zeros(4, np.uint8)),
    "d2h read-only": lambda rt, p: rt.copy_d2h(np.frombuffer(b"abcd", np.uint8), p),
    "d2h int16": lambda rt, p: rt.copy_d2h(np.zeros(2, np.int16), p),
    "d2h null src": lambda rt, p: rt.copy_d2h(np.zeros(4, np.uint8), 0),
    "set_device negative": lambda rt, p: rt.set_device(-1),
    "set_device str": lambda rt, p: rt.set_device("0"),
    "reset_device float": lambda rt, p: rt.reset_device(0.0),
    "synchronize negative": lambda rt, p: rt.synchronize(-1),
    "destroy null stream": lambda rt, p: rt.destroy_stream(0),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_python_validation_never_reaches_runtime(rt, acl, name):
    ptr = rt.malloc(16)
    before = list(acl.calls)
    with pytest.raises(AclParamError, match="not called") as info:
        BAD_CALLS[name](rt, ptr)
    assert isinstance(info.value, PtoError) and info.value.fix
    assert acl.calls == before
    rt.free(ptr)


def test_empty_copies_skip_runtime(rt, acl):
    ptr = rt.malloc(16)
    before = list(acl.calls)
    rt.copy_h2d(ptr, np.zeros(0, np.uint8))
    rt.copy_d2h(np.zeros(0, np.uint8), ptr)
    assert acl.calls == before


# -- pyACL loading -----------------------------------------------------------------------------
def test_from_pyacl_without_acl(monkeypatch):
    monkeypatch.setitem(sys.modules, "acl", None)  # makes `import acl` fail whether or not it exists
    with pytest.raises(NpuUnavailableError) as info:
        AclRuntime.from_pyacl()
    text = str(info.value)
    assert "pyACL" in text and "set_env.sh" in text and "python/site-packages" in text
    assert "PYTHONPATH" in text


def test_from_pyacl_uses_the_acl_module(monkeypatch):
    fake = HostAcl()
    monkeypatch.setitem(sys.modules, "acl", fake)
    rt = AclRuntime.from_pyacl()
    rt.init()
    assert fake.calls == [("acl.init", ())]
    rt.finalize()


# -- misuse table and concurrency --------------------------------------------------------------
def test_misuse_codes_are_in_the_table():
    for misuse, code in CODES_FOR_MISUSE.items():
        assert code in acl_codes.CODES, misuse


def test_concurrent_alloc_copy_free(rt, acl):
    errors = []

    def worker(seed):
        try:
            for i in range(20):
                data = _bytes(64 + i, seed * 100 + i)
                ptr = rt.malloc(data.nbytes)
                rt.copy_h2d(ptr, data)
                out = np.empty_like(data)
                rt.copy_d2h(out, ptr)
                assert out.tobytes() == data.tobytes()
                rt.free(ptr)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert acl.live() == {}


# -- property: random malloc/copy/free sequences ------------------------------------------------
_OPS = st.lists(st.one_of(
    st.tuples(st.just("malloc"), st.integers(1, 3000)),
    st.tuples(st.just("copy"), st.integers(0, 50), st.integers(0, 2**31)),
    st.tuples(st.just("free"), st.integers(0, 50)),
), max_size=40)


@settings(max_examples=60, deadline=None)
@given(_OPS)
def test_random_sequences_round_trip(ops):
    acl = HostAcl(memory_bytes=1 << 16)
    rt = AclRuntime(acl)
    rt.init()
    rt.set_device(0)
    model: dict[int, bytes] = {}  # ptr -> contents last written (b"" if never written)
    order: list[int] = []
    for op in ops:
        if op[0] == "malloc":
            free_bytes = acl.memory_bytes - sum(acl.live().values())
            if op[1] > free_bytes:
                with pytest.raises(AclMemoryError):
                    rt.malloc(op[1])
            else:
                ptr = rt.malloc(op[1])
                assert ptr not in model and ptr % GM_ALIGN == 0
                model[ptr] = b""
                order.append(ptr)
        elif order and op[0] == "copy":
            ptr = order[op[1] % len(order)]
            data = _bytes(acl.live()[ptr], op[2])
            rt.copy_h2d(ptr, data)
            model[ptr] = data.tobytes()
        elif order and op[0] == "free":
            ptr = order.pop(op[1] % len(order))
            rt.free(ptr)
            del model[ptr]
        assert set(acl.live()) == set(model)
    for ptr, contents in model.items():
        out = np.empty(acl.live()[ptr], np.uint8)
        rt.copy_d2h(out, ptr)
        if contents:
            assert out.tobytes() == contents
    for ptr in order:
        rt.free(ptr)
    assert acl.live() == {}
    rt.finalize()
