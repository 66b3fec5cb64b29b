"""Shared fixtures for pypto's own unit tests (tests/).

* ``clean_env``  -- removes the environment variables that change what ``pypto.init()`` picks
                    (PYPTO_BACKEND, PYPTO_SOC, PYPTO_SIM_MODE), so every test starts from the
                    documented defaults whatever the shell running pytest has set.
* ``session``    -- a fresh default session (simulator, a2a3, compiled mode unless the test's
                    kernel says otherwise), finalized after the test even if it fails.
* ``fresh``      -- no session running before the test, and none left behind after it; for tests
                    that call ``pypto.init`` themselves (other SoCs, options, env selection).
* ``restart``    -- ``restart(**init_kwargs)``: finalize whatever runs and start a new session (for
                    modules whose tests default to ``session`` but need another SoC or option).

The fixtures are opt-in (``pytestmark = pytest.mark.usefixtures("session")``), so the other
modules of this directory (ISA table, float bits) are not affected.
"""
from __future__ import annotations

import pytest
from hypothesis import settings

import pypto
from pypto.backends.sim.options import ENV_VARS, reload_env
from pypto.testing import finalize_quietly


# `make fuzz`: every fuzz test (tests/test_fuzz_*.py) with 10,000 examples instead of its quick budget
settings.register_profile("fuzz", max_examples=10_000, deadline=None)


class _Env:
    """monkeypatch for PYPTO_* variables: pypto reads them once per process, so every change
    re-reads them (reload_env), and the test's end restores both the variables and the cache."""

    def __init__(self, mp):
        self.mp = mp

    def setenv(self, name, value):
        self.mp.setenv(name, value)
        reload_env()

    def delenv(self, name, raising=True):
        self.mp.delenv(name, raising=raising)
        reload_env()

    def __getattr__(self, name):
        return getattr(self.mp, name)


@pytest.fixture
def clean_env(monkeypatch):
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    reload_env()
    yield _Env(monkeypatch)
    monkeypatch.undo()
    reload_env()


@pytest.fixture
def fresh(clean_env):
    finalize_quietly()
    yield clean_env
    finalize_quietly()


@pytest.fixture
def session(fresh):
    s = pypto.init(backend="sim")
    yield s
    finalize_quietly()


@pytest.fixture
def restart(fresh):
    def go(**kwargs):
        finalize_quietly()
        return pypto.init(**kwargs)
    yield go
    finalize_quietly()
