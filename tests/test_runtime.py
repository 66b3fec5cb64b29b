"""The runtime: init/finalize, sessions, devices, backend selection, SoC profiles.

Capacities are written out by hand from pto-isa-semantics.md section 2 (buffer_limits.hpp), an
independent reference, and checked both as profile data and by behaviour (a tile of exactly a
space's capacity is accepted, one 32 bytes larger is refused).
"""
from __future__ import annotations

import glob
import importlib.util
import os
import shutil

import numpy as np
import pytest

import pypto
from pypto import errors as E
from pypto import pto

KiB = 1024

# pto-isa-semantics.md section 2: TileType -> (buffer, A2A3 bytes, A5 bytes); every alignment 32 B.
SECTION2 = {
    "Vec": ("UB", 192 * KiB, 256 * KiB),
    "Mat": ("L1", 512 * KiB, 512 * KiB),
    "Left": ("L0A", 64 * KiB, 64 * KiB),
    "Right": ("L0B", 64 * KiB, 64 * KiB),
    "Acc": ("L0C", 128 * KiB, 256 * KiB),
    "Bias": ("bias table", 1 * KiB, 4 * KiB),
    "Scaling": ("FBuffer", 2 * KiB, 4 * KiB),
    "ScaleLeft": ("L0A (MX scales)", 0, 4 * KiB),
    "ScaleRight": ("L0B (MX scales)", 0, 4 * KiB),
}
SOC_COLUMN = {"a2a3": 1, "a5": 2}


# -- init / finalize / is_initialized ------------------------------------------------------------

def test_not_initialized_at_start_and_after_finalize(fresh):
    assert not pypto.is_initialized()
    s = pypto.init()
    assert pypto.is_initialized()
    assert isinstance(s, pypto.Session)
    pypto.finalize()
    assert not pypto.is_initialized()
    pypto.finalize()                       # safe to call twice
    assert not pypto.is_initialized()


def test_things_that_need_a_session_raise_not_initialized(fresh):
    for call in (pypto.stats, pypto.reset_stats, lambda: pypto.set_device(0),
                 lambda: pypto.Tensor([1.0]), lambda: pypto.empty((2,), pypto.float32),
                 lambda: pypto.zeros((2,), pypto.float32)):
        with pytest.raises(E.NotInitializedError) as ei:
            call()
        assert isinstance(ei.value, pypto.PtoError)
        assert "pypto.init()" in str(ei.value)


def test_init_twice_returns_the_same_session(fresh):
    s1 = pypto.init()
    s2 = pypto.init()
    assert s2 is s1
    assert pypto.init(backend=None, soc=None, device=0) is s1


def test_init_twice_with_the_same_explicit_settings_returns_the_same_session(fresh):
    s1 = pypto.init(backend="sim", soc="a5")
    assert pypto.init(backend="sim", soc="a5") is s1
    assert pypto.init() is s1          # no arguments: "whatever is running"


def test_init_again_naming_the_running_defaults_is_not_other_settings(fresh):
    # BUG (pypto/runtime.py init): init() compares the new arguments with the *raw* arguments of
    # the first call, not with the settings the session actually resolved. After pypto.init()
    # (which runs the sim backend with soc a2a3), pypto.init(soc="a2a3") or
    # pypto.init(backend="sim") ask for exactly what is running, yet raise
    # "pypto is already initialised ...; asked again with {'soc': 'a2a3'}".
    s1 = pypto.init()
    assert s1.soc.name == "a2a3" and s1.backend_name == "sim"
    assert pypto.init(soc="a2a3") is s1
    assert pypto.init(backend="sim") is s1


@pytest.mark.parametrize("other", [dict(soc="a5"), dict(strict_host_operands=True),
                                   dict(sim=pypto.SimOptions(mode="eager"))])
def test_init_with_other_settings_while_running_is_an_error(fresh, other):
    s1 = pypto.init(backend="sim", soc="a2a3")
    with pytest.raises(pypto.PtoError) as ei:
        pypto.init(**other)
    msg = str(ei.value)
    assert "already" in msg and "finalize()" in msg
    # the running session is untouched
    assert pypto.init() is s1
    assert s1.soc.name == "a2a3" and not s1.strict_host_operands


def test_context_manager_finalizes(fresh):
    with pypto.init() as s:
        assert pypto.is_initialized()
        assert isinstance(s, pypto.Session)
        t = pypto.Tensor([1.0, 2.0])
        assert t.numpy().tolist() == [1.0, 2.0]
    assert not pypto.is_initialized()
    with pytest.raises(E.UseAfterFreeError):
        t.numpy()


def test_context_manager_finalizes_on_exception(fresh):
    with pytest.raises(ZeroDivisionError):
        with pypto.init():
            1 / 0
    assert not pypto.is_initialized()


def test_finalize_frees_every_tensor(fresh):
    s = pypto.init()
    be = s.backend
    ts = [pypto.Tensor(np.arange(10, dtype=np.float32)), pypto.zeros((3, 5), pypto.int16),
          pypto.empty((1000,), pypto.uint8), pypto.from_numpy(np.ones((2, 2), np.int64))]
    sub = ts[0]
    expected_live = sum(t.nbytes for t in ts)
    assert pypto.stats().live_bytes == expected_live
    assert pypto.stats().live_tensors == len(ts)
    pypto.finalize()
    assert be.stats.live_bytes == 0
    assert be.stats.live_tensors == 0
    for t in ts + [sub]:
        assert t.is_freed
        with pytest.raises(E.UseAfterFreeError):
            t.numpy()
        with pytest.raises(E.UseAfterFreeError):
            t.device_ptr
        with pytest.raises(E.UseAfterFreeError):
            t.free()


def test_tensors_of_an_ended_session_stay_dead_in_the_next_one(fresh):
    pypto.init()
    t = pypto.Tensor([1.0, 2.0, 3.0])
    pypto.finalize()
    pypto.init()
    with pytest.raises(E.UseAfterFreeError):
        t.numpy()
    st = pypto.stats()
    assert (st.live_bytes, st.live_tensors, st.h2d_copies, st.d2h_copies) == (0, 0, 0, 0)


def test_reset_stats_keeps_live_memory(session):
    t = pypto.Tensor(np.zeros(16, np.float32))
    t.numpy()
    pypto.reset_stats()
    st = pypto.stats()
    assert (st.h2d_copies, st.h2d_bytes, st.d2h_copies, st.d2h_bytes) == (0, 0, 0, 0)
    assert st.live_tensors == 1 and st.live_bytes == 64 and st.peak_bytes == 64


# -- devices --------------------------------------------------------------------------------

def test_device_count_and_set_device(session):
    assert pypto.get_device_count() == 1
    pypto.set_device(0)
    assert session.device == 0


@pytest.mark.parametrize("bad", [1, -1, 7, True, "0", 0.0, None])
def test_set_device_bad_index(session, bad):
    with pytest.raises(E.DeviceError) as ei:
        pypto.set_device(bad)
    assert isinstance(ei.value, pypto.PtoError)
    assert session.device == 0


@pytest.mark.parametrize("bad", [1, -1, True])
def test_init_with_a_bad_device_leaves_no_session(fresh, bad):
    with pytest.raises(E.DeviceError):
        pypto.init(device=bad)
    assert not pypto.is_initialized()


def test_several_simulated_devices_are_mpi_ranks(fresh):
    """One simulated NPU per MPI rank (tests/test_comm.py runs them): a plain process is one
    device, and asking it for more says how to start the ranks."""
    pypto.init(sim=pypto.SimOptions(devices=1))
    assert pypto.get_device_count() == 1 and pypto.rank() == 0
    pypto.set_device(0)
    with pytest.raises(E.DeviceError):
        pypto.set_device(1)
    pypto.finalize()
    with pytest.raises(E.CommError, match="mpiexec -n 3"):
        pypto.init(sim=pypto.SimOptions(devices=3))


def test_device_count_before_init(fresh):
    # the sim (what init() picks here unless an NPU is usable) has one device
    ok, _ = pypto.backends.is_available("npu")
    if not ok:
        assert pypto.get_device_count() == 1
    assert not pypto.is_initialized()          # asking does not start a session


# -- backend selection ------------------------------------------------------------------------

def _npu_usable() -> bool:
    return pypto.backends.is_available("npu")[0]


def test_default_backend(fresh):
    s = pypto.init()
    assert s.backend_name == ("npu" if _npu_usable() else "sim")


def test_auto_choice_skips_the_toolchain_search_without_a_device(fresh, monkeypatch):
    import pypto.backends.npu as npu

    def searched():
        raise AssertionError("the CANN toolchain was searched on a machine without a device")
    monkeypatch.setattr(npu.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(npu, "_missing", searched)
    assert pypto.init().backend_name == "sim"


@pytest.mark.parametrize("devices,missing,expect", [([], ["bisheng"], False),
                                                    (["/dev/davinci0"], ["bisheng"], False),
                                                    (["/dev/davinci0"], [], True)])
def test_usable_agrees_with_is_available(monkeypatch, devices, missing, expect):
    import pypto.backends.npu as npu
    monkeypatch.setattr(npu.glob, "glob", lambda pattern: devices)
    monkeypatch.setattr(npu, "_missing", lambda: list(missing) + ([] if devices else ["no device"]))
    assert pypto.backends.usable("npu") is expect
    assert pypto.backends.is_available("npu")[0] is expect


def test_backend_from_argument(fresh):
    assert pypto.init(backend="sim").backend_name == "sim"


def test_backend_from_environment(fresh):
    fresh.setenv("PYPTO_BACKEND", "sim")
    assert pypto.init().backend_name == "sim"


def test_argument_beats_environment(fresh):
    fresh.setenv("PYPTO_BACKEND", "npu")
    assert pypto.init(backend="sim").backend_name == "sim"


def test_unknown_backend(fresh):
    with pytest.raises(E.BackendUnavailableError) as ei:
        pypto.init(backend="tpu")
    assert "tpu" in str(ei.value) and "sim" in str(ei.value)
    assert not pypto.is_initialized()
    fresh.setenv("PYPTO_BACKEND", "cuda")
    with pytest.raises(E.BackendUnavailableError):
        pypto.init()


def _missing_npu_prerequisites() -> dict[str, list[str]]:
    """What this machine lacks for an NPU, found independently of pypto: {what: words one of
    which the error must contain}."""
    missing = {}
    if not any(os.environ.get(v) for v in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_HOME")):
        missing["CANN toolkit"] = ["CANN", "ASCEND_HOME"]
    if importlib.util.find_spec("acl") is None:
        missing["pyACL"] = ["acl", "pyACL"]
    if shutil.which("bisheng") is None:
        missing["bisheng compiler"] = ["bisheng"]
    if not glob.glob("/dev/davinci[0-9]*"):
        missing["device"] = ["/dev/davinci", "npu-smi"]
    return missing


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_npu_backend_unavailable_lists_every_missing_prerequisite(fresh, how):
    missing = _missing_npu_prerequisites()
    if not missing and _npu_usable():
        pytest.skip("an NPU is usable on this machine")
    if how == "environment":
        fresh.setenv("PYPTO_BACKEND", "npu")
        call = pypto.init
    else:
        call = lambda: pypto.init(backend="npu")  # noqa: E731
    with pytest.raises(E.BackendUnavailableError) as ei:
        call()
    msg = str(ei.value)
    assert isinstance(ei.value, pypto.PtoError)
    for what, words in missing.items():
        assert any(w in msg for w in words), f"{what} not named in:\n{msg}"
    assert "backend='sim'" in msg or "PYPTO_BACKEND=sim" in msg      # the way out
    assert not pypto.is_initialized()


def test_get_device_count_when_npu_requested_but_absent(fresh):
    if _npu_usable():
        pytest.skip("an NPU is usable on this machine")
    fresh.setenv("PYPTO_BACKEND", "npu")
    assert pypto.get_device_count() == 0


# -- SoC profiles -------------------------------------------------------------------------------

def test_default_soc_is_a2a3(fresh):
    assert pypto.init().soc.name == "a2a3"


def test_soc_from_environment(fresh):
    fresh.setenv("PYPTO_SOC", "a5")
    assert pypto.init().soc.name == "a5"


@pytest.mark.parametrize("bad", ["a9", "910x", "A2A3X"])
def test_unknown_soc(fresh, bad):
    with pytest.raises(E.SocError) as ei:
        pypto.init(soc=bad)
    msg = str(ei.value)
    assert isinstance(ei.value, pypto.PtoError)
    assert repr(bad) in msg and "a2a3" in msg and "a5" in msg
    assert not pypto.is_initialized()


@pytest.mark.parametrize("soc", ["a2a3", "a5"])
def test_soc_capacities_match_section_2(fresh, soc):
    s = pypto.init(soc=soc)
    col = SOC_COLUMN[soc]
    for loc, row in SECTION2.items():
        cap = row[col]
        if cap == 0:
            with pytest.raises(E.SocError):
                s.soc.space(loc)
            continue
        sp = s.soc.space(loc)
        assert sp.capacity == cap, f"{soc} {loc}"
        assert sp.align == 32, f"{soc} {loc}"
    assert s.soc.space("Vec").buffer == "UB"


def test_ub_is_192_kib_on_a2a3_and_256_kib_on_a5(fresh):
    assert pypto.init(soc="a2a3").soc.space("Vec").capacity == 196608
    pypto.finalize()
    assert pypto.init(soc="a5").soc.space("Vec").capacity == 262144


def _declare(loc, cols):
    @pypto.kernel
    def declare(x):
        pto.Tile(loc, pto.float32, (1, cols))
    return declare


@pytest.mark.parametrize("soc", ["a2a3", "a5"])
def test_tile_capacity_follows_the_soc(fresh, soc):
    """Behaviour, not just data: per location, a 1 x N f32 tile of exactly the capacity is legal
    and one 32 bytes larger is a TileCapacityError naming the buffer and the capacity; a location
    the SoC lacks is an error too. Only traced (kern.ir), nothing is compiled."""
    pypto.init(soc=soc)
    x = pypto.Tensor(np.zeros(8, np.float32))
    col = SOC_COLUMN[soc]
    for loc, row in SECTION2.items():
        cap = row[col]
        if cap == 0:
            with pytest.raises(pypto.PtoError):
                _declare(loc, 8).ir(x)
            continue
        _declare(loc, cap // 4).ir(x)
        with pytest.raises(E.TileCapacityError) as ei:
            _declare(loc, cap // 4 + 8).ir(x)
        assert str(cap) in str(ei.value), f"{soc} {loc}: {ei.value}"


def test_backend_markers_state_why_they_skip():
    from pypto.testing import requires_backend, unavailable_reason
    assert unavailable_reason("sim") is None
    assert not requires_backend("sim", "needs the simulator").args[0]
    why = unavailable_reason("npu")
    mark = requires_backend("npu", "needs an Ascend NPU")
    assert mark.args[0] == (why is not None)
    if why is not None:
        assert "needs an Ascend NPU" in mark.kwargs["reason"] and why in mark.kwargs["reason"]
    with pytest.raises(ValueError):
        requires_backend("npu", "")
