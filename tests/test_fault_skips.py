"""After a fault nothing more runs: the first faulting instruction is the one reported, later
instructions neither write nor leave events, and a loop stops at the faulting iteration. Compiled
kernels get this from guarded calls (no branch after every call); eager mode raises at once."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import pypto
from pypto import pto


def _two_faults(x, z, r):
    a = pto.Tile(pto.Vec, pto.float32, (8, 16), valid=pto.DYNAMIC)
    d = pto.Tile(pto.Vec, pto.float32, (8, 16))
    pto.TLOAD(d, x[0:8, 0:16])
    a.set_valid(r, 16)
    pto.TLOAD(a, x[0:r, 0:16])
    pto.TADD(d, a, d)                    # FIRST: a has fewer valid rows than d
    pto.TSTORE(z[0:8, 0:16], d)
    pto.TADD(d, a, d)                    # SECOND


def _faults_in_iteration(x, z, stop):
    d = pto.Tile(pto.Vec, pto.float32, (8, 16))
    for i in pto.range(0, 4):
        pto.TLOAD(d, x[i * 8:i * 8 + 8, 0:16])
        pto.TSTORE(z[i * 8:i * 8 + 8, 0:stop], d)    # LOOP: its view ends past z from i == 2


def _load_faults_in_iteration(x, z, rows):
    d = pto.Tile(pto.Vec, pto.float32, (8, 16))
    for i in pto.range(0, 4):
        pto.TLOAD(d, x[i * 8:i * 8 + 8, 0:rows])     # LOAD: its view ends past x from i == 2
        pto.TADDS(d, d, 1.0)
        pto.TSTORE(z[i * 8:i * 8 + 8, 0:16], d)


def _bad_region(x, z, r):
    a = pto.Tile(pto.Vec, pto.float32, (8, 16), valid=pto.DYNAMIC)
    a.set_valid(r, 16)                   # REGION: more rows than the tile has
    pto.TLOAD(a, x[0:8, 0:16])
    pto.TADDS(a, a, 1.0)
    pto.TSTORE(z[0:8, 0:16], a)


def _line(fn, tag: str) -> int:
    src, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(src) if tag in ln)


def _names(backend) -> list[str]:
    """The recorded instructions, in order (flags are recorded too; they are left out here)."""
    sites = [backend.last_event_sites[s] for s in backend.last_events[:, 0]]
    return [n.name for n in sites if hasattr(n, "name")]


@pytest.fixture(params=["compiled", "eager"])
def session(request):
    pypto.init(sim=pypto.SimOptions(mode=request.param, events=64))
    yield pypto.runtime.current().backend
    pypto.finalize()


def test_first_fault_is_reported_and_nothing_after_it_runs(session):
    x = pypto.Tensor(np.arange(128, dtype=np.float32).reshape(8, 16))
    z = pypto.zeros((8, 16), pypto.float32)
    with pytest.raises(pypto.errors.ValidRegionError) as ei:
        pypto.kernel(_two_faults)(x, z, 5)
    assert f"test_fault_skips.py:{_line(_two_faults, 'FIRST')}" in str(ei.value)
    assert not z.numpy().any()                                 # the TSTORE after it never ran
    names = _names(session)
    assert names == ["TLOAD", "TLOAD"]


def test_a_loop_stops_at_the_faulting_iteration(session):
    xh = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    x, z = pypto.Tensor(xh), pypto.zeros((16, 16), pypto.float32)
    with pytest.raises(pypto.errors.GMBoundsError) as ei:
        pypto.kernel(_faults_in_iteration)(x, z, 16)
    assert f"test_fault_skips.py:{_line(_faults_in_iteration, 'LOOP')}" in str(ei.value)
    np.testing.assert_array_equal(z.numpy(), xh[:16])         # iterations 0 and 1 stored
    names = _names(session)
    assert names == ["TLOAD", "TSTORE"] * 2 + ["TLOAD"]


def test_a_failed_view_check_skips_the_rest_of_its_iteration(session):
    """A GM view's run-time bounds check is no early return in compiled kernels (only its
    instruction's guarded call reads the view): the calls after it are skipped instead."""
    xh = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
    x, z = pypto.Tensor(xh), pypto.zeros((32, 16), pypto.float32)
    with pytest.raises(pypto.errors.GMBoundsError) as ei:
        pypto.kernel(_load_faults_in_iteration)(x, z, 16)
    assert f"test_fault_skips.py:{_line(_load_faults_in_iteration, 'LOAD')}" in str(ei.value)
    np.testing.assert_array_equal(z.numpy()[:16], xh + 1)     # iterations 0 and 1 stored
    assert not z.numpy()[16:].any()
    assert _names(session) == ["TLOAD", "TADDS", "TSTORE"] * 2


def test_a_bad_runtime_valid_region_stops_the_kernel_there(session):
    """Compiled kernels run on past a failed set_valid check (only guarded calls read a valid
    region): the region is still the fault reported, and nothing after it runs."""
    x = pypto.Tensor(np.arange(128, dtype=np.float32).reshape(8, 16))
    z = pypto.zeros((8, 16), pypto.float32)
    with pytest.raises(pypto.PtoError) as ei:
        pypto.kernel(_bad_region)(x, z, 9)
    assert f"test_fault_skips.py:{_line(_bad_region, 'REGION')}" in str(ei.value)
    assert not z.numpy().any()
    assert _names(session) == []
