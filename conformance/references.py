"""Every instruction's independent reference, found by PTO name.

``conformance/reference.py`` and each family's ``conformance/ref_<family>.py`` hold numpy models
written from the ISA semantics (no pypto code); each exposes a ``REFERENCE`` map from PTO name to
its entry point (None where an instruction is not a computation, e.g. TASSIGN). This module
merges them, so a new family adds its file and nothing else.
"""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Callable

from . import reference as _base


def _collect() -> dict[str, Callable | None]:
    out: dict[str, Callable | None] = dict(_base.REFERENCE)
    for m in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if m.name.startswith("ref_"):
            mod = importlib.import_module(f"{__package__}.{m.name}")
            for name, fn in mod.REFERENCE.items():
                if name in out:
                    raise AssertionError(f"{name} has two references ({m.name})")
                out[name] = fn
    return out


REFERENCE = _collect()
