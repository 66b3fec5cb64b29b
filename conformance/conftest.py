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
from .reference import SOCS

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


@pytest.fixture(params=SOCS)
def soc(request, pto_init, target) -> str:
    """Initialise the session under test on this SoC profile and return its name."""
    try:
        pto_init(soc=request.param)
    except pypto.PtoError as e:
        if target.backend != "sim":
            pytest.skip(f"{request.param} profile not available on this {target.backend} device: {e}")
        raise
    return request.param


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


def every_case_eager(fn):
    """Decorator: every case of this test runs eager in the quick tier; its own slow_if chooses
    the compiled ones (for sweeps whose parameter is not a dtype, e.g. conversion pairs)."""
    fn.every_case_eager = True
    return fn


def slow_if(predicate):
    """Decorator: parametrisations satisfying ``predicate`` belong to the full tier (marked slow)."""
    def mark(fn):
        fn.slow_if = predicate
        return fn
    return mark


# Eager mode runs the same per-instruction numba code as compiled mode; what compiled mode adds is
# the generated kernel around those calls, and that text depends on the dtype only through its
# class (a float32, float16 or bfloat16 scalar or GM read, an integer one). A new compiled case
# costs a whole kernel compile, a new eager case at most one small trampoline. So the quick tier
# runs every dtype of a sweep eager and, compiled, the first dtype of each class (in CLASS_ORDER);
# a test without a dtype parameter runs every case compiled and one eager case per SoC, unless it
# is marked every_case_eager. The full tier runs everything in both modes.
CLASS_ORDER = ("f32", "float32", "i32", "int32", "i16", "int16", "f16", "float16", "u8", "uint8",
               "i8", "int8", "u16", "uint16", "u32", "uint32", "bf16", "bfloat16")
DTYPE_CLASS = {"f32": "f32", "float32": "f32", "f16": "f16", "float16": "f16", "bf16": "bf16",
               "bfloat16": "bf16", **{d: "int" for d in CLASS_ORDER if d[0] in "iu"}}
DTYPE_PARAMS = ("dtype", "dt")


def _swept(params: dict) -> str | None:
    """The name of the dtype parameter of a parametrisation, if it has one."""
    return next((k for k in DTYPE_PARAMS if k in params), None)


def _mode_trim(items) -> None:
    groups: dict[tuple, list] = {}
    for item in items:
        cs = getattr(item, "callspec", None)
        mode = getattr(cs.params.get("target"), "mode", None) if cs is not None else None
        if mode not in ("compiled", "eager") or getattr(item.function, "every_case_eager", False):
            continue
        sweep = _swept(cs.params)
        if sweep is not None:
            if mode == "eager":
                continue
            d = str(cs.params[sweep])
            key = (item.nodeid.split("[")[0], DTYPE_CLASS.get(d, d)) + tuple(sorted(
                (k, repr(v)) for k, v in cs.params.items() if k not in (sweep, "target")))
        elif mode == "eager":
            key = (item.nodeid.split("[")[0], repr(cs.params.get("soc")))
        else:
            continue
        groups.setdefault(key, []).append(item)
    for members in groups.values():
        def rank(item):
            cs = item.callspec.params
            d = str(cs[_swept(cs)]) if _swept(cs) else ""
            return CLASS_ORDER.index(d) if d in CLASS_ORDER else len(CLASS_ORDER)
        keep = min(members, key=rank)
        for item in members:
            if item is not keep:
                item.add_marker(pytest.mark.slow)


# A dtype sweep that runs on both SoCs runs each dtype on one of them in the quick tier (chosen
# by a hash of the case, so each SoC gets about half); the full tier runs both. Cases without a
# dtype parameter (the hand-made per-SoC semantics cases) always run on both SoCs.
SOC_PARAMS = ("soc", "soc_")


def _soc_trim(items) -> None:
    import zlib
    groups: dict[tuple, list] = {}
    for item in items:
        cs = getattr(item, "callspec", None)
        if cs is None:
            continue
        socp = next((k for k in SOC_PARAMS if k in cs.params), None)
        if socp is None or _swept(cs.params) is None:
            continue
        key = (item.nodeid.split("[")[0],) + tuple(sorted(
            (k, repr(v)) for k, v in cs.params.items() if k != socp))
        groups.setdefault(key, []).append((str(cs.params[socp]), item))
    for key, members in groups.items():
        socs = sorted({s for s, _ in members})
        if len(socs) < 2:
            continue
        keep = socs[zlib.crc32(repr(key).encode()) % len(socs)]
        for s, item in members:
            if s != keep:
                item.add_marker(pytest.mark.slow)


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
    _mode_trim(items)
    _soc_trim(items)
    backend = config.getoption("--backend", default="sim")
    for item in items:
        d = lookup(backend, item.nodeid)
        if d is not None:
            item.add_marker(pytest.mark.xfail(strict=d.strict, reason=f"{d.reason} (docs/fidelity.md: {d.doc})"))
