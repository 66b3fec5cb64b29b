"""pypto's settings from the environment: the PYPTO_* variables, read once per process.

``env()`` returns the cached snapshot; ``reload_env()`` re-reads it (tests, or after changing
os.environ). One switch, read once (numba's config pattern); SimOptions and pypto.init take their
defaults from here.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass

# The environment variables pypto reads, with what each one sets.
ENV_VARS: dict[str, str] = {
    "PYPTO_BACKEND": "backend pypto.init() picks: sim | npu (default: npu if usable, else sim)",
    "PYPTO_SOC": "SoC profile: a2a3 | a5 (default: a2a3)",
    "PYPTO_SIM_MODE": "simulator mode: compiled | eager (default: compiled)",
    "PYPTO_SIM_THREADS": "simulator worker threads: a positive integer (default: the CPU count)",
    "PYPTO_SIM_NATIVE": "simulator kernels kept as native code for later processes: 1 | 0 (default: 1)",
    "PYPTO_CACHE_DIR": "compiled-kernel cache directory (default: $XDG_CACHE_HOME/pypto/kernels)",
    "PYPTO_CPUSIM_CXXFLAGS": "g++ optimisation flags of npu-cpusim builds, e.g. '-O3 -march=native' "
                             "(default: -O2)",
}


@dataclass(frozen=True)
class EnvSnapshot:
    """The PYPTO_* variables (and XDG_CACHE_HOME) as read once; "" counts as unset (None)."""
    values: dict[str, str | None]
    xdg_cache_home: str | None

    def get(self, name: str) -> str | None:
        """The raw value of a PYPTO_* variable, None when unset or empty."""
        return self.values.get(name)

    def is_set(self, name: str) -> bool:
        return self.values.get(name) is not None


_env: EnvSnapshot | None = None
_env_lock = threading.Lock()


def env() -> EnvSnapshot:
    """The PYPTO_* environment, read on first use and cached for the rest of the process."""
    global _env
    if _env is None:
        with _env_lock:
            if _env is None:
                _env = _read_env()
    return _env


def reload_env() -> EnvSnapshot:
    """Re-read the PYPTO_* environment variables now (tests, or after changing os.environ)."""
    global _env
    with _env_lock:
        _env = _read_env()
    return _env


def _read_env() -> EnvSnapshot:
    values = {name: (os.environ.get(name) or None) for name in ENV_VARS}
    return EnvSnapshot(values, os.environ.get("XDG_CACHE_HOME") or None)
