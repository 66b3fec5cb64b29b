"""Generated source -> imported module, cached on disk by content hash so a second process loads
its numba-compiled functions instead of compiling again (numba's cache=True needs a real file).

Thread-safe: launches from several threads may ask for the same module at once.
"""
from __future__ import annotations

import gc
import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import threading

import numba
from numba.core import event

from ...errors import ConfigError, PtoError
from . import native, numba_cache
from .options import source_hash

_LOADED: dict[str, object] = {}
_LOCK = threading.RLock()
_HERE = os.path.dirname(os.path.abspath(__file__))
_UNITS = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "units")


_LIB_FINGERPRINT = source_hash(os.path.join(_HERE, "lib"))
_UNIT_RE = re.compile(r"(?:pypto\.units\.|from \.)(\w+) import")
_unit_hashes: dict[str, str] = {}


def _unit_fingerprint(name: str, seen: set[str]) -> str:
    """Hash of a unit module's file and of the units it imports (numba's cache does not follow
    calls into other modules, so a kernel's key must)."""
    if name in seen:
        return ""
    seen.add(name)
    path = os.path.join(_UNITS, name + ".py")
    if not os.path.exists(path):
        return ""
    known = _unit_hashes.get(path)
    if known is None:
        with open(path, "rb") as fh:
            text = fh.read()
        known = _unit_hashes[path] = (hashlib.sha256(text).hexdigest(),
                                      sorted(set(_UNIT_RE.findall(text.decode("utf-8")))))
    h, deps = known
    return h + "".join(_unit_fingerprint(d, seen) for d in deps)


def _fingerprint(source: str) -> str:
    """What a generated module's numba code depends on: the sim library and the unit modules
    it (or they) import; an edit to any of them gives the module a new name."""
    seen: set[str] = set()
    return _LIB_FINGERPRINT + "".join(_unit_fingerprint(u, seen)
                                      for u in sorted(set(_UNIT_RE.findall(source))))


_VERSION = "pypto-sim-5"


def module_name(source: str, prefix: str) -> str:
    key = hashlib.sha256(f"{_VERSION}\n{_fingerprint(source)}\n{numba.__version__}\n{sys.version}\n"
                         f"{source}".encode()).hexdigest()[:24]
    return f"pypto_{prefix}_{key}"


def count_new_specialisations(fn, seen: dict, stats) -> None:
    """After a call of a numba dispatcher: count every type specialisation it gained since the
    last look (``seen`` holds what was counted), as a compile or a load from numba's disk cache.
    So a re-specialisation (a new argument type) shows in pypto.stats() like a first compile."""
    n = len(fn.overloads)
    old = seen.get("n", 0)
    if n <= old:
        return
    hits = sum(fn.stats.cache_hits.values())
    new_hits = min(hits - seen.get("hits", 0), n - old)
    stats.cache_loads += new_hits
    stats.compiles += n - old - new_hits
    seen["n"], seen["hits"] = n, hits


class _GcPausedWhileCompiling(event.Listener):
    """Python's cyclic collector off while numba compiles (any compile: kernels, chunks, eager
    trampolines, implementations; nested compiles count once). A compile makes many short-lived
    objects, and the collections they set off walk the whole heap: measured, a tenth of a
    compile's time. What the compile left is collected as usual afterwards."""

    def __init__(self) -> None:
        self.depth, self.was_on = 0, False

    def on_start(self, ev) -> None:
        with _LOCK:
            if self.depth == 0:
                self.was_on = gc.isenabled()
                gc.disable()
            self.depth += 1

    def on_end(self, ev) -> None:
        with _LOCK:
            self.depth -= 1
            if self.depth == 0 and self.was_on:
                gc.enable()


event.register("numba:compile", _GcPausedWhileCompiling())


numba_cache.install()
native.keep_object_code()


def _scipy_imported_only_for_the_cube() -> None:
    """numba's arraymath, imported when numba first compiles or loads anything, asks at once
    whether SciPy's BLAS imports (SciPy's linalg: 0.1-0.2 s of every process's first launch).
    Only the cube's kernels call BLAS (backend.compile fits its threads, which loads it); so the
    check is skipped at that import and its answer (is SciPy installed) set afterwards, as numba
    would have found it. A process with no cube kernel never imports SciPy's linalg."""
    if "numba.np.arraymath" in sys.modules:
        return
    import numba.np.linalg as linalg
    check = linalg.ensure_blas
    linalg.ensure_blas = lambda: None
    try:
        import numba.np.arraymath as arraymath
    finally:
        linalg.ensure_blas = check
    arraymath._HAVE_BLAS = importlib.util.find_spec("scipy") is not None


_scipy_imported_only_for_the_cube()


def _holds(path: str, source: str) -> bool:
    """Whether the cached module file is there and holds exactly this source."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read() == source
    except (OSError, UnicodeDecodeError):
        return False


def load_module(source: str, cache_dir: str, prefix: str):
    """Import generated source as a real module file in cache_dir (written once, atomically;
    source that does not even parse is a pypto bug and never reaches the cache)."""
    name = module_name(source, prefix)
    mod = _LOADED.get(name)
    if mod is not None:
        return mod
    with _LOCK:
        if name in _LOADED:
            return _LOADED[name]
        try:
            compile(source, name, "exec")
        except SyntaxError as e:
            raise PtoError(f"internal error: pypto generated invalid simulator code ({e.msg}, line "
                           f"{e.lineno})", rule="this is a pypto bug, not an error in your kernel",
                           fix="please report it with the kernel; meanwhile try "
                               "@pypto.kernel(mode='eager')") from None
        try:
            os.makedirs(cache_dir, exist_ok=True)
            path = os.path.join(cache_dir, name + ".py")
            if not _holds(path, source):           # missing, or damaged since it was written
                fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".tmp")
                with os.fdopen(fd, "w") as f:
                    f.write(source)
                os.replace(tmp, path)
        except OSError as e:
            raise ConfigError(f"cannot write the kernel cache directory {cache_dir}: {e}",
                           rule="compiled kernels are cached on disk",
                           fix="set PYPTO_CACHE_DIR (or SimOptions(cache_dir=...)) to a writable "
                               "directory") from None
        if cache_dir not in sys.path:
            sys.path.append(cache_dir)   # numba re-imports a cached callee's module by name
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod          # numba's cache finds a function's module by name
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[name]
            raise
        _LOADED[name] = mod              # published only once whole (other threads wait above)
        return mod


def resolve(fn, cache_dir: str):
    """(module name, function) of a lowering's Fn, generating its module first if it has one."""
    if fn.source is None:
        mod = importlib.import_module(fn.module)     # waits while another thread imports it
        return fn.module, getattr(mod, fn.name)
    mod = load_module(fn.source, cache_dir, fn.module)
    return mod.__name__, getattr(mod, fn.name)
