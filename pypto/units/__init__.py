"""The built-in instruction units: one module per instruction or family, each holding what pypto
knows about it beyond its table entry (checks, simulator lowering and numba code, load_insn
form, C++ emission), registered through ``pypto.ir.registry``.

Importing this package imports none of them. pypto's ``__init__`` hands ``registry`` two ways in:
``load_all`` imports every module (the registry's first full read), and ``find`` imports only the
module that registers one instruction, from an index the last full load wrote (a first kernel of
TLOAD, TMULS and TSTORE then imports 6 of the modules, not all: 0.06 -> 0.02 s of a warm first
launch). A new instruction is a new module here (docs/contributing.md walks through one): no list
to edit.
"""
from __future__ import annotations

import functools
import importlib
import json
import os
import pkgutil
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_index: dict | None = None        # instruction -> module, once read ({} if missing or stale)


@functools.cache
def modules() -> tuple[str, ...]:
    return tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")))


def _fingerprint() -> str:
    """The unit modules' sources: an edit to any of them makes the index stale."""
    from ..backends.sim.options import source_hash
    return source_hash(_HERE)


def _path() -> str:
    """Beside the running session's compiled kernels (SimOptions.cache_dir), else the default."""
    from .. import runtime
    from ..backends.sim.options import default_cache_dir
    options = getattr(runtime.current().backend, "options", None) if runtime.is_initialized() else None
    return os.path.join(getattr(options, "cache_dir", None) or default_cache_dir(), "units-index.json")


def load_all() -> None:
    """Import every unit module, then write which module registers each instruction."""
    from ..ir import registry
    where: dict[str, str] = {}
    for m in modules():
        before = registry.registered()
        importlib.import_module(f"{__name__}.{m}")
        where.update(dict.fromkeys(registry.registered() - before, m))
    try:                          # the index only saves time: an unwritable cache is no error
        path = _path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"fingerprint": _fingerprint(), "modules": where}, f)
        os.replace(tmp, path)
    except OSError:
        pass


def find(name: str) -> bool:
    """Import the module that registers ``name`` if the index knows it (True); False sends the
    registry to load_all."""
    global _index
    if _index is None:
        try:
            with open(_path()) as f:
                data = json.load(f)
        except (OSError, ValueError):
            data = None
        fresh = isinstance(data, dict) and data.get("fingerprint") == _fingerprint()
        _index = data.get("modules") if fresh and isinstance(data.get("modules"), dict) else {}
    module = _index.get(name)
    if module not in modules():          # unknown here, or a damaged entry: the full load
        return False
    importlib.import_module(f"{__name__}.{module}")
    return True
