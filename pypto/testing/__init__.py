"""pypto for users' own test suites: ``assert_close`` with reports a person can act on, backend
markers that state why they skip, and session clean-up between tests. The pytest plugin
(``--pypto-backend``, the ``pypto_backend`` fixture) is pypto/testing/plugin.py."""
from __future__ import annotations

from ..backends import is_available
from .targets import TARGETS, backend_and_mode
from .compare import MismatchError, assert_close, default_tolerance
from .golden import compare, record
from .ptoisa import PtoIsaCase, read_case


def unavailable_reason(backend: str) -> str | None:
    """None when ``backend`` can run here, else why not (every missing prerequisite)."""
    ok, missing = is_available(backend)
    return None if ok else f"no usable {backend} backend here: {'; '.join(missing)}"


def requires_backend(name: str, reason: str):
    """A skipif marker for tests that need backend ``name``; the reason is required and shown."""
    import pytest
    if not reason:
        raise ValueError("requires_backend needs a reason")
    why = unavailable_reason(name)
    return pytest.mark.skipif(why is not None, reason=f"{reason} ({why})")


def finalize_quietly() -> None:
    """End any pypto session a test left running; a broken finalize is the failing test's to report."""
    from .. import runtime
    try:
        runtime.finalize()
    except Exception:  # noqa: BLE001
        pass


__all__ = ["TARGETS", "backend_and_mode", "assert_close", "MismatchError", "default_tolerance", "record", "compare", "read_case",
           "PtoIsaCase", "unavailable_reason",
           "requires_backend", "finalize_quietly"]
