"""Backend selection for the conformance suite.

``pytest conformance --backend sim`` (the default) runs every case on the simulator in both of its
execution modes (compiled and eager); ``--backend npu`` runs them on a real Ascend NPU and
``--backend npu-cpusim`` on pto-isa's CPU backend (pypto's emitted C++ built with g++ against
``PTO_ISA_ROOT``); both skip, with the reason pypto gives, where they cannot run.

Where the backend under test is known to deviate from the NPU on a case (pto-isa's CPU backend,
listed in ``conformance/deviations.py`` and docs/fidelity.md), the case is a strict xfail: it must
fail there, so a fixed deviation shows up as XPASS.

Fixtures:

* ``target``      -- the backend/mode under test (parametrised: sim-compiled, sim-eager | npu).
* ``pto_init``    -- a callable ``pto_init(**extra)`` that calls ``pypto.init`` for the target
                     with extra keyword arguments (``soc="a5"``, ``strict_host_operands=True``);
                     the session is finalized after the test.
* ``pto_session`` -- an initialised default session for the target (finalized after the test).
* ``sim_modes``   -- for tests that compare the two simulator modes in one test: an iterable of
                     ``(mode, init_callable)``; skipped on non-sim backends.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pytest

import pypto

from pypto.testing import finalize_quietly, unavailable_reason

from .deviations import lookup

BACKENDS = ("sim", "npu", "npu-cpusim")
SIM_MODES = ("compiled", "eager")


def pytest_addoption(parser):
    try:
        parser.addoption("--backend", action="store", default="sim", choices=BACKENDS,
                         help="pypto backend the conformance suite runs on (default: sim, "
                              "which runs both sim modes)")
    except ValueError:       # already registered by another conftest of the same run
        pass


@dataclass(frozen=True)
class Target:
    backend: str
    mode: str | None = None

    @property
    def id(self) -> str:
        return f"{self.backend}-{self.mode}" if self.mode else self.backend

    def init_kwargs(self, **extra: Any) -> dict[str, Any]:
        kw: dict[str, Any] = {"backend": self.backend}
        if self.mode is not None:
            kw["sim"] = pypto.SimOptions(mode=self.mode)
        kw.update(extra)
        return kw

    def init(self, **extra: Any):
        return pypto.init(**self.init_kwargs(**extra))


def _targets(config) -> list[Target]:
    backend = config.getoption("--backend", default="sim")
    if backend == "sim":
        return [Target("sim", m) for m in SIM_MODES]
    return [Target(backend)]


def pytest_generate_tests(metafunc):
    if "target" in metafunc.fixturenames:
        ts = _targets(metafunc.config)
        metafunc.parametrize("target", ts, ids=[t.id for t in ts], indirect=True)


@pytest.fixture
def target(request) -> Target:
    t: Target = request.param
    reason = unavailable_reason(t.backend)
    if reason:
        pytest.skip(reason)
    finalize_quietly()
    yield t
    finalize_quietly()


@pytest.fixture
def pto_init(target) -> Callable[..., Any]:
    def init(**extra: Any):
        return target.init(**extra)
    yield init
    finalize_quietly()


@pytest.fixture
def pto_session(pto_init):
    yield pto_init()


@pytest.fixture
def sim_modes(request):
    """[(mode, init)] for both sim modes; each init() starts a fresh session (finalize between)."""
    if request.config.getoption("--backend", default="sim") != "sim":
        pytest.skip("compares the simulator's compiled and eager modes; backend is not sim")
    finalize_quietly()

    def make(mode: str):
        def init(**extra: Any):
            finalize_quietly()
            return Target("sim", mode).init(**extra)
        return init

    yield [(m, make(m)) for m in SIM_MODES]
    finalize_quietly()


def keep_if(predicate):
    """Decorator: collect only the parametrisations whose params (a dict, e.g. {"soc": "a5",
    "case": ...}) satisfy ``predicate`` (cases that do not exist are not collected, not skipped)."""
    def mark(fn):
        fn.keep_if = predicate
        return fn
    return mark


def slow_if(predicate):
    """Decorator: parametrisations satisfying ``predicate`` belong to the full tier (marked slow)."""
    def mark(fn):
        fn.slow_if = predicate
        return fn
    return mark


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    kept, dropped = [], []
    for item in items:
        fn = getattr(item, "function", None)
        params = getattr(getattr(item, "callspec", None), "params", {})
        keep = getattr(fn, "keep_if", None)
        if keep is not None and not keep(params):
            dropped.append(item)
            continue
        slow = getattr(fn, "slow_if", None)
        if slow is not None and slow(params):
            item.add_marker(pytest.mark.slow)
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    backend = config.getoption("--backend", default="sim")
    for item in items:
        d = lookup(backend, item.nodeid)
        if d is not None:
            item.add_marker(pytest.mark.xfail(strict=d.strict, reason=f"{d.reason} (docs/fidelity.md: {d.doc})"))
