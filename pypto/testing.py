"""Helpers for test suites of pypto programs: backend markers that state why they skip, and
session clean-up between tests."""
from __future__ import annotations

import pytest

from .backends import is_available


def unavailable_reason(backend: str) -> str | None:
    """None when ``backend`` can run here, else why not (every missing prerequisite)."""
    ok, missing = is_available(backend)
    return None if ok else f"no usable {backend} backend here: {'; '.join(missing)}"


def requires_backend(name: str, reason: str):
    """A skipif marker for tests that need backend ``name``; the reason is required and shown."""
    if not reason:
        raise ValueError("requires_backend needs a reason")
    why = unavailable_reason(name)
    return pytest.mark.skipif(why is not None, reason=f"{reason} ({why})")


def finalize_quietly() -> None:
    """End any pypto session a test left running; a broken finalize is the failing test's to report."""
    from . import runtime
    try:
        runtime.finalize()
    except Exception:  # noqa: BLE001
        pass
