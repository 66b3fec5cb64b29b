"""The pytest plugin pypto installs (entry point ``pypto``): a user's kernel tests run on every
backend they have.

* ``--pypto-backend NAME`` (repeat it, or comma-separate: ``sim,sim-eager,npu-cpusim``; default
  ``sim``) and ``--pypto-soc a2a3|a5``;
* the ``pypto_backend`` fixture: a test that takes it runs once per chosen backend, inside a fresh
  ``pypto.init`` of it (``sim-eager`` is the simulator in eager mode), finalized afterwards; a
  backend this machine cannot run is skipped with the reason;
* the ``pypto_npu`` marker: the test needs a real NPU (skipped with the reason elsewhere).
"""
from __future__ import annotations

import pytest

from .targets import TARGETS as BACKENDS, backend_and_mode

SOCS = ("a2a3", "a5")


def pytest_addoption(parser) -> None:
    group = parser.getgroup("pypto")
    group.addoption("--pypto-backend", action="append", default=None, metavar="NAME",
                    help=f"run pypto_backend tests on NAME ({', '.join(BACKENDS)}); repeat or "
                         "comma-separate for several (default: sim)")
    group.addoption("--pypto-soc", default=None, choices=SOCS, help="the SoC profile (default a2a3)")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "pypto_npu: the test needs a real Ascend NPU with CANN "
                                       "(skipped with the reason where there is none)")
    backends(config)                   # a misspelt --pypto-backend stops the run at once


def backends(config) -> list[str]:
    """The backends chosen on the command line, in order, each once."""
    names: list[str] = []
    for opt in config.getoption("--pypto-backend") or ["sim"]:
        for name in filter(None, (x.strip() for x in opt.split(","))):
            if name not in BACKENDS:
                raise pytest.UsageError(f"--pypto-backend {name}: not one of {', '.join(BACKENDS)}")
            if name not in names:
                names.append(name)
    return names


def pytest_generate_tests(metafunc) -> None:
    if "pypto_backend" in metafunc.fixturenames:
        metafunc.parametrize("pypto_backend", backends(metafunc.config), indirect=True)


def pytest_collection_modifyitems(config, items) -> None:
    from . import unavailable_reason
    why = None
    for item in items:
        if item.get_closest_marker("pypto_npu") is not None:
            why = why or unavailable_reason("npu") or ""
            if why:
                item.add_marker(pytest.mark.skip(reason=f"needs an Ascend NPU: {why}"))


@pytest.fixture
def pypto_backend(request):
    """A running pypto session on one chosen backend; the value is the backend's name."""
    import pypto

    from . import finalize_quietly, unavailable_reason
    name = getattr(request, "param", None) or backends(request.config)[0]
    backend, mode = backend_and_mode(name)
    why = unavailable_reason(backend)
    if why:
        pytest.skip(why)
    finalize_quietly()
    options = {"sim": pypto.SimOptions(mode=mode)} if mode else {}
    pypto.init(backend=backend, soc=request.config.getoption("--pypto-soc"), **options)
    try:
        yield name
    finally:
        finalize_quietly()
