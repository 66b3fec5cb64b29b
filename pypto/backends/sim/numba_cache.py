"""How pypto uses numba's on-disk cache: damaged entries are misses, loads skip the compiler's
registries, and a function is compiled by one process at a time (the others load its result).

Each rule patches numba's caching classes once, and only where the private names it relies on
exist; without them numba's own behaviour stands.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import time

from numba.core.typing.templates import Signature

try:
    import fcntl
except ImportError:          # Windows: no locks between processes; the load-side checks still hold
    fcntl = None


def install() -> None:
    """Apply every rule (idempotent)."""
    _tolerant_entries()
    _cached_loads_skip_the_registries()
    _one_compile_across_processes()


def _ours(cache) -> bool:
    """Whether a numba cache belongs to one of pypto's functions (the sim library, the units,
    the generated modules); numba's and other libraries' functions keep numba's behaviour."""
    return getattr(getattr(cache, "_py_func", None), "__module__", "").startswith("pypto")


def _tolerant_entries() -> None:
    """numba's on-disk cache raises on a truncated or garbled index or data file (a disk that
    filled up, a process killed mid-write, a user's edit); pypto treats such an entry as a miss,
    so the function is compiled again and the entry rewritten. So is an entry whose code is for
    another signature (_holds_signature), and saves hold a lock between processes."""
    from numba.core.caching import IndexDataCacheFile as F
    if getattr(F, "_pypto_tolerant", False):
        return
    load_index, load = F._load_index, F.load

    def _load_index(self):
        try:
            return load_index(self)
        except Exception:  # noqa: BLE001 - any damage: an empty index, rewritten on save
            return {}

    def _load(self, key):
        try:
            data = load(self, key)
        except Exception:  # noqa: BLE001 - a data file that does not unpickle: compile again
            return None
        return data if _holds_signature(data, key) else None

    save = F.save

    def _save(self, key, data):
        with _index_lock(self._index_path):
            save(self, key, data)

    F._load_index, F.load, F.save, F._pypto_tolerant = _load_index, _load, _save, True


def _holds_signature(data, key) -> bool:
    """Whether a cache entry's compiled code is for the signature its index key names. numba
    picks a new entry's data file name from the index it read, so two processes adding
    specialisations of one function at once (pytest-xdist workers, two users' runs) could give
    two signatures one file name and leave one signature's index entry naming the other's code:
    calling that code with the wrong argument types corrupted memory."""
    if not isinstance(data, tuple) or not isinstance(key, tuple) or not key:
        return True
    sig = next((x for x in data if isinstance(x, Signature)), None)
    return sig is None or tuple(sig.args) == tuple(key[0])


@contextlib.contextmanager
def _index_lock(index_path: str):
    """An exclusive lock between processes over one function's cache index and data files, held
    while numba reads the index, picks a data file name, and writes both."""
    try:
        fd = None if fcntl is None else os.open(index_path + ".lock", os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:          # an unwritable cache: numba's own save fails and says so
        fd = None
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd is not None:
            os.close(fd)



def _cached_loads_skip_the_registries() -> None:
    """numba refreshes its whole target before each load from its disk cache; the first refresh
    imports and installs every typing and lowering registry, which only compiling needs (0.1 s
    of a second process's first launch: 0.35 -> 0.25 s). pypto's own functions (the sim library,
    the units, the generated modules) load with just numba's runtime initialised; compiling still
    refreshes (numba's compiler does so itself), and every other function loads as numba loads it.
    Without the private methods this relies on, numba's own path runs unchanged."""
    from numba.core.caching import Cache
    from numba.core.runtime import rtsys
    if getattr(Cache, "_pypto_quick", False) or not all(
            hasattr(Cache, a) for a in ("_load_overload", "_guard_against_spurious_io_errors")):
        return
    full = Cache.load_overload

    def load_overload(self, sig, target_context):
        if not _ours(self):
            return full(self, sig, target_context)
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
        return None          # the guard swallowed an I/O error: a miss, as in numba's own path

    Cache.load_overload, Cache._pypto_quick = load_overload, True


_WAIT = 600.0                       # seconds to wait for another process's compile, then compile
_held: dict[tuple[int, str], int] = {}   # (id of a Cache, signature) -> fd of its compile lock


def _one_compile_across_processes() -> None:
    """A cache miss takes a lock between processes for that function and signature, held until
    this process has compiled and saved it; a process that misses while another holds the lock
    waits, then loads what that one saved. So two pytest-xdist workers (or two users' runs) that
    need the same function at once compile it once: the waiter loses nothing it could have used,
    as it needed that function to go on. A failed compile releases the lock like a finished one;
    a process that dies releases it with its files."""
    from numba.core.caching import Cache
    from numba.core.dispatcher import Dispatcher
    if fcntl is None or getattr(Cache, "_pypto_one_compile", False):
        return
    load, compile_ = Cache.load_overload, Dispatcher.compile

    def load_overload(self, sig, target_context):
        cres = load(self, sig, target_context)
        if cres is not None or not _ours(self):
            return cres
        index = getattr(getattr(self, "_cache_file", None), "_index_path", None)
        fd = None if index is None else _wait_for(
            f"{index}.{hashlib.sha256(str(sig).encode()).hexdigest()[:16]}.compiling")
        if fd is None:
            return None
        cres = load(self, sig, target_context)       # what the process waited for saved
        if cres is not None:
            os.close(fd)
            return cres
        _held[id(self), str(sig)] = fd
        return None

    def compile(self, sig):
        try:
            return compile_(self, sig)
        finally:                 # typing calls compile for every call it resolves: keep it cheap
            if _held:
                fd = _held.pop((id(self._cache), str(sig)), None)
                if fd is not None:
                    os.close(fd)

    Cache.load_overload, Dispatcher.compile = load_overload, compile
    Cache._pypto_one_compile = True


def _wait_for(path: str) -> int | None:
    """An fd holding an exclusive lock on path, once no other process holds it (None if the
    lock cannot be had: an unwritable cache, or a holder past _WAIT)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return None
    deadline = time.monotonic() + _WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.02)
        except OSError:
            os.close(fd)
            return None
