"""Every simulator knob in one frozen, validated options object (Pallas' InterpretParams pattern).
Environment variables only give defaults; they are read once per process (``env()``), and
``reload_env()`` re-reads them (for tests, or after changing os.environ)."""
from __future__ import annotations

import operator
import os
from dataclasses import dataclass, field

import numpy as np

from ...errors import ConfigError

from ...config import ENV_VARS, EnvSnapshot, env, reload_env  # noqa: F401  (re-exported for callers)

SIM_MODES = ("compiled", "eager")
CHECKS = ("default", "strict", "off")


def _env_mode() -> str:
    raw = env().get("PYPTO_SIM_MODE")
    if raw is None:
        return "compiled"
    if raw.strip().lower() not in SIM_MODES:
        raise ConfigError(f"PYPTO_SIM_MODE={raw!r} is not a simulator mode",
                          rule=f"PYPTO_SIM_MODE is one of: {', '.join(SIM_MODES)}",
                          fix="set PYPTO_SIM_MODE=compiled (fast) or PYPTO_SIM_MODE=eager (debugging), "
                              "or unset it")
    return raw.strip().lower()


def _env_threads() -> int:
    raw = env().get("PYPTO_SIM_THREADS")
    if raw is None:
        return os.cpu_count() or 1
    try:
        n = int(raw.strip())
    except ValueError:
        n = 0
    if n < 1:
        raise ConfigError(f"PYPTO_SIM_THREADS={raw!r} is not a thread count",
                          rule="PYPTO_SIM_THREADS is a positive integer (1 runs blocks in order)",
                          fix=f"set e.g. PYPTO_SIM_THREADS={os.cpu_count() or 1}, or unset it to "
                              "use the CPU count")
    return n


def _env_native() -> bool:
    raw = env().get("PYPTO_SIM_NATIVE")
    if raw is None:
        return True
    if raw.strip() not in ("0", "1"):
        raise ConfigError(f"PYPTO_SIM_NATIVE={raw!r} is not 0 or 1",
                          rule="PYPTO_SIM_NATIVE is 1 (keep compiled kernels as native code for later "
                               "processes) or 0 (numba only)",
                          fix="set PYPTO_SIM_NATIVE=0 or 1, or unset it")
    return raw.strip() == "1"


def source_hash(directory: str) -> str:
    """Hash of the .py files under ``directory`` (relative names and contents): part of the key
    of what the on-disk cache holds for code there, so an edit makes it stale."""
    import hashlib
    h = hashlib.sha256()
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(root, f)
                with open(path, "rb") as fh:
                    h.update(os.path.relpath(path, directory).encode() + fh.read())
    return h.hexdigest()


def default_cache_dir() -> str:
    """PYPTO_CACHE_DIR, else $XDG_CACHE_HOME/pypto/kernels, else ~/.cache/pypto/kernels."""
    return _env_cache()


def _env_cache() -> str:
    e = env()
    return e.get("PYPTO_CACHE_DIR") or os.path.join(
        e.xdg_cache_home or os.path.expanduser("~/.cache"), "pypto", "kernels")


# integer fields: (name, lowest, highest, rule, fix)
MAX_EVENTS = 100_000_000          # events per worker a launch may record (64 bytes each)
_INT_FIELDS = (
    ("uninit_byte", 0, 255, "uninit_byte is one byte, 0..255",
     "use e.g. SimOptions(uninit_byte=0xFF) (NaN in float tiles)"),
    ("gm_bytes", 1, None, "gm_bytes is a positive byte count, or None",
     "use e.g. SimOptions(gm_bytes=2**30), or None for the SoC's HBM size"),
    ("threads", 1, None, "threads is an integer >= 1 (PYPTO_SIM_THREADS)",
     "use SimOptions(threads=1) to run blocks in order"),
    ("devices", 1, None, "devices is an integer >= 1, or None (as many as MPI ranks)",
     "use SimOptions(devices=1), or start N ranks with mpiexec -n N"),
    ("events", 0, MAX_EVENTS, f"events is how many events to record per worker: 0 (off) to {MAX_EVENTS:,}",
     "use e.g. SimOptions(events=100_000)"),
)


def _int_field(opts: "SimOptions", name: str, lo: int, hi: int | None, rule: str, fix: str) -> None:
    """Normalise an integer field (numpy integers accepted) and check its range, or a PtoError."""
    value = getattr(opts, name)
    if value is None and name in ("gm_bytes", "devices"):
        return
    try:
        if isinstance(value, bool):
            raise TypeError
        n = operator.index(value)
    except TypeError:
        raise ConfigError(f"SimOptions({name}={value!r}) is not an integer", rule=rule, fix=fix) from None
    if n < lo or (hi is not None and n > hi):
        raise ConfigError(f"SimOptions({name}={n}) is out of range", rule=rule, fix=fix)
    object.__setattr__(opts, name, n)


@dataclass(frozen=True, kw_only=True)
class SimOptions:
    """mode: "compiled" (whole kernel -> one numba function) or "eager" (Python body, instruction by
    instruction; print/breakpoint work). uninit_byte: the byte fresh on-chip and GM memory holds
    (0xFF reads as NaN in float tiles, -1 in int tiles). devices: simulated device count; each
    device is one MPI rank (None: as many as the MPI launcher started, 1 without one).
    cache_dir: where compiled kernels are cached across processes (PYPTO_CACHE_DIR).
    gm_bytes: simulated device memory capacity (default: the SoC profile's HBM size).
    threads: worker threads running a compiled launch's blocks (PYPTO_SIM_THREADS, default: the
    CPU count); each worker has its own on-chip memory, like an AI core. 1 runs blocks in order.
    events: record up to this many (instruction, block, pipe) events per worker and launch for
    the cost model and timeline (0: off; the backend's ``last_events`` holds them).
    checks: "default": the manual-mode checker (pypto/ir/hazards.py) runs on every kernel and its
    errors stop the launch (missing flags, deadlocks, overlapping tiles), and where the NPU's result
    is undefined (integer division by zero, shift counts past the width, NaNs in a sort, ...) the
    simulator gives a documented value; "strict" also raises an UndefinedBehaviorError naming such
    an element and makes reads of never-written on-chip bytes errors; "off" skips the checker
    (for speed; pypto.check() still runs it).
    native: after a kernel's first launch, keep its machine code beside the kernel cache, so a
    later process launches it without importing numba (backends/sim/native.py; PYPTO_SIM_NATIVE)."""
    mode: str = field(default_factory=_env_mode)
    uninit_byte: int = 0xFF
    devices: int | None = None
    cache_dir: str = field(default_factory=_env_cache)
    gm_bytes: int | None = None     # device memory capacity; None = the SoC's HBM size
    threads: int = field(default_factory=_env_threads)
    events: int = 0
    checks: str = "default"
    native: bool = field(default_factory=_env_native)

    @property
    def strict(self) -> bool:
        """Whether undefined results are reported (checks="strict") rather than given a value."""
        return self.checks == "strict"

    def __post_init__(self):
        if self.checks not in CHECKS:
            raise ConfigError(f"SimOptions(checks={self.checks!r}) unknown",
                              rule="checks is 'default' (the checker on; documented values where the "
                                   "NPU's result is undefined), 'strict' (report such uses as errors) "
                                   "or 'off' (no hazard checker)",
                              fix="use SimOptions(checks='strict') to find undefined uses")
        if self.mode not in SIM_MODES:
            raise ConfigError(f"SimOptions(mode={self.mode!r}) unknown",
                           rule="mode is 'compiled' or 'eager' (PYPTO_SIM_MODE)",
                           fix="use SimOptions(mode='eager') to debug, 'compiled' for speed")
        for spec in _INT_FIELDS:
            _int_field(self, *spec)
        if not isinstance(self.native, (bool, np.bool_)):
            raise ConfigError(f"SimOptions(native={self.native!r}) is not True or False",
                              rule="native is a bool (PYPTO_SIM_NATIVE)",
                              fix="use SimOptions(native=False) to launch every kernel through numba")
        if not isinstance(self.cache_dir, (str, os.PathLike)):
            raise ConfigError(f"SimOptions(cache_dir={self.cache_dir!r}) is not a path",
                           rule="cache_dir is a directory path (PYPTO_CACHE_DIR)",
                           fix="pass a string, e.g. SimOptions(cache_dir='/tmp/pypto-kernels')")
