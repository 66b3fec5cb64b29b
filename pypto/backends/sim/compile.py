"""Generated kernel source -> a numba-compiled function, cached on disk by content hash so a
second process loads it instead of compiling again (numba's cache=True needs a real file)."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile

import numba

from ...errors import PtoError

_LOADED: dict[str, object] = {}


def _impl_fingerprint() -> str:
    """Hash of the numba implementations: a cached kernel is stale once they change."""
    h = hashlib.sha256()
    d = os.path.join(os.path.dirname(__file__), "insns")
    for f in sorted(os.listdir(d)):
        if f.endswith(".py"):
            with open(os.path.join(d, f), "rb") as fh:
                h.update(f.encode() + fh.read())
    return h.hexdigest()


_VERSION = "pypto-sim-3-" + _impl_fingerprint()


def load(source: str, cache_dir: str):
    """The function ``kernel`` of a generated module: (function, freshly loaded in this process)."""
    key = _key(source)
    if key in _LOADED:
        return _LOADED[key].kernel, False
    return load_module(source, cache_dir, "k").kernel, True


def count_first_call(fn, stats) -> None:
    """After a loaded function's first call: did numba compile it, or load it from its cache?"""
    if sum(fn.stats.cache_hits.values()):
        stats.cache_loads += 1
    else:
        stats.compiles += 1


def _key(source: str) -> str:
    return hashlib.sha256(f"{_VERSION}\n{numba.__version__}\n{sys.version}\n{source}".encode()).hexdigest()[:24]


def load_module(source: str, cache_dir: str, prefix: str):
    """Import generated source as a real module file in cache_dir (written once, atomically)."""
    key = _key(source)
    if key in _LOADED:
        return _LOADED[key]
    try:
        os.makedirs(cache_dir, exist_ok=True)
    except OSError as e:
        raise PtoError(f"cannot create the kernel cache directory {cache_dir}: {e}",
                       fix="set PYPTO_CACHE_DIR to a writable directory") from None
    name = f"pypto_{prefix}_{key}"
    if cache_dir not in sys.path:
        sys.path.append(cache_dir)   # numba re-imports a cached callee's module by name
    if name in sys.modules:
        _LOADED[key] = sys.modules[name]
        return sys.modules[name]
    path = os.path.join(cache_dir, name + ".py")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod          # numba's cache finds a function's module by name
    spec.loader.exec_module(mod)
    _LOADED[key] = mod
    return mod
