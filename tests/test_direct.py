"""Calls into compiled code without numba's Python wrappers (backends/sim/direct.py, entry.py):
eager mode's calls of the implementations, and generated kernels launched through an entry."""
import sys
import textwrap

import numpy as np
import pytest

import pypto
from pypto import pto
from pypto.backends.sim import direct
from pypto.backends.sim.lowering import Call, Fn
from pypto.backends.base import Stats

CALLEE = '''
import numpy as np
from numba import njit
from pypto.backends.sim.lib.jit import XCALLED


@njit(**XCALLED)
def spread(out, m, i, f, d, flag, tup):
    """Writes back what it received, so a wrong word shows as a wrong value."""
    k = 0
    for r in range(m.shape[0]):
        for c in range(m.shape[1]):
            out[k] = m[r, c]
            k += 1
    out[k] = i
    out[k + 1] = f
    out[k + 2] = d
    out[k + 3] = 1.0 if flag else 0.0
    for e in range(len(tup)):
        out[k + 4 + e] = tup[e]


def _bump(out, x):
    for k in range(out.shape[0]):
        out[k] = x[k] + 1.0


bare = njit(**XCALLED)(_bump)                   # as a generated kernel is compiled
with_python_entry = njit(cache=True)(_bump)


@njit(**XCALLED)
def fails(x):
    if x < 0:
        raise ValueError("negative")
    return x
'''


@pytest.fixture()
def callee(tmp_path, monkeypatch):
    name = f"pypto_test_direct_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(CALLEE))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_every_argument_kind_reaches_the_implementation_as_numba_would_pass_it(callee, tmp_path):
    """A strided 2-D view, an int, a float32, a float64, a bool and a tuple of ints, packed as
    words and unpacked by the entry, arrive as numpy says they are."""
    m = np.arange(24, dtype=np.float64).reshape(4, 6)[::2, 1::2]         # strided, 2 x 3
    out = np.zeros(16)
    args = [out, m, -7, np.float32(1.5), 2.25, True, (3, -4, 5)]
    stats = Stats()
    call = direct.entry(Call(Fn(callee, "spread"), ()), args, str(tmp_path), stats)
    assert call is not None and call(args)
    want = np.concatenate([m.ravel(), [-7, 1.5, 2.25, 1.0, 3, -4, 5]])
    np.testing.assert_array_equal(out[:len(want)], want)
    made = stats.compiles + stats.cache_loads
    assert made == 1                                 # the implementation; no wrapper compiled
    again = direct.entry(Call(Fn(callee, "spread"), ()), args, str(tmp_path), stats)
    assert again is call and stats.compiles + stats.cache_loads == made


def test_an_implementation_that_raises_reports_it_and_unpackable_arguments_are_refused(callee, tmp_path):
    call = direct.entry(Call(Fn(callee, "fails"), ()), [3], str(tmp_path), Stats())
    assert call([3]) and not call([-1])          # the caller then calls through numba to raise
    assert not call([1 << 70])                   # no int64 word holds it: numba decides
    same = direct.entry(Call(Fn(callee, "fails"), ()), [np.int64(4)], str(tmp_path), Stats())
    assert same is call and same([np.int64(4)])  # another Python type, the same signature
    ok = direct.entry(Call(Fn(callee, "spread"), ()), [np.zeros(4), np.zeros((1, 1)), 1, 1.0, 1.0,
                                                        False, ("a",)], str(tmp_path), Stats())
    assert ok is None                            # a tuple of strings: no word for it


def test_eager_mode_compiles_the_implementations_and_no_wrappers(tmp_path):
    """The eager run's compiles are the implementations it calls (TLOAD, TADDS, TSTORE and the
    checks), not one numba wrapper per implementation as before; its result is numpy's."""
    @pypto.kernel(mode="eager")
    def addone(x, y):
        t = pto.Tile(pto.Vec, pto.float32, (8, 32))
        pto.TLOAD(t, x)
        pto.TADDS(t, t, 1.0)
        pto.TSTORE(y, t)

    xh = np.random.default_rng(1).standard_normal((8, 32)).astype(np.float32)
    with pypto.init(sim=pypto.SimOptions(cache_dir=str(tmp_path / "k"))):
        x, y = pypto.Tensor(xh), pypto.zeros((8, 32))
        addone(x, y)
        first = pypto.stats()
        addone(x, y)
        np.testing.assert_array_equal(y.numpy(), xh + np.float32(1))
        assert pypto.stats().compiles + pypto.stats().cache_loads == first.compiles + first.cache_loads
    assert not list((tmp_path / "k").glob("pypto_t_*.py"))     # no trampoline was generated


def test_a_kernel_is_compiled_without_a_python_entry_and_launched_through_its_own(tmp_path):
    @pypto.kernel
    def triple(x, y):
        t = pto.Tile(pto.Vec, pto.float32, (4, 16))
        pto.TLOAD(t, x)
        pto.TMULS(t, t, 3.0)
        pto.TSTORE(y, t)

    xh = np.arange(64, dtype=np.float32).reshape(4, 16)
    with pypto.init(sim=pypto.SimOptions(cache_dir=str(tmp_path / "k"), native=False)):
        x, y = pypto.Tensor(xh), pypto.zeros((4, 16))
        triple(x, y)
        np.testing.assert_array_equal(y.numpy(), xh * 3)
        launcher = pypto.runtime.current().backend.compile(triple.traced(x, y)).artifact.fn
    assert isinstance(launcher, direct.Launcher)
    assert launcher.disp.targetoptions.get("no_cpython_wrapper") is True
    assert len(launcher.overloads) == 1


def test_a_launcher_takes_arguments_its_entry_cannot_through_the_python_entry(callee):
    mod = __import__(callee)
    out, x = np.zeros(3), np.arange(3.0)
    fast = direct.Launcher(mod.bare, lambda: mod.with_python_entry)
    fast(out, x)
    np.testing.assert_array_equal(out, x + 1)
    assert len(fast.overloads) == 1 and fast.bind([out, x]) is not None
    ro = np.arange(3.0)
    ro.flags.writeable = False                       # no word layout for a read-only array
    out[:] = 0
    slow = direct.Launcher(mod.bare, lambda: mod.with_python_entry)
    slow(out, ro)
    np.testing.assert_array_equal(out, ro + 1)
    assert slow.bind([out, ro]) is None and slow.overloads is mod.with_python_entry.overloads
