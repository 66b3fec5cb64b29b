"""Every simulator knob in one frozen, validated options object (Pallas' InterpretParams pattern).
Environment variables only give defaults, read once when the options are made."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ...errors import PtoError


def _env_mode() -> str:
    return os.environ.get("PYPTO_SIM_MODE", "compiled")


def _env_threads() -> int:
    return int(os.environ.get("PYPTO_SIM_THREADS") or os.cpu_count() or 1)


def default_cache_dir() -> str:
    """PYPTO_CACHE_DIR, else $XDG_CACHE_HOME/pypto/kernels, else ~/.cache/pypto/kernels."""
    return _env_cache()


def _env_cache() -> str:
    return os.environ.get("PYPTO_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pypto", "kernels")


@dataclass(frozen=True, kw_only=True)
class SimOptions:
    """mode: "compiled" (whole kernel -> one numba function) or "eager" (Python body, instruction by
    instruction; print/breakpoint work). uninit_byte: the byte fresh on-chip and GM memory holds
    (0xFF reads as NaN in float tiles, -1 in int tiles). devices: simulated device count.
    cache_dir: where compiled kernels are cached across processes (PYPTO_CACHE_DIR).
    gm_bytes: simulated device memory capacity (default: the SoC profile's HBM size).
    threads: worker threads running a compiled launch's blocks (PYPTO_SIM_THREADS, default: the
    CPU count); each worker has its own on-chip memory, like an AI core. 1 runs blocks in order."""
    mode: str = field(default_factory=_env_mode)
    uninit_byte: int = 0xFF
    devices: int = 1
    cache_dir: str = field(default_factory=_env_cache)
    gm_bytes: int | None = None     # device memory capacity; None = the SoC's HBM size
    threads: int = field(default_factory=_env_threads)

    def __post_init__(self):
        if self.mode not in ("compiled", "eager"):
            raise PtoError(f"SimOptions(mode={self.mode!r}) unknown",
                           rule="mode is 'compiled' or 'eager' (PYPTO_SIM_MODE)",
                           fix="use SimOptions(mode='eager') to debug, 'compiled' for speed")
        if not 0 <= self.uninit_byte <= 255:
            raise PtoError(f"SimOptions(uninit_byte={self.uninit_byte}) is not a byte value")
        if self.gm_bytes is not None and self.gm_bytes < 1:
            raise PtoError(f"SimOptions(gm_bytes={self.gm_bytes}) must be positive")
        if self.threads < 1:
            raise PtoError(f"SimOptions(threads={self.threads}) must be >= 1")
        if self.devices < 1:
            raise PtoError(f"SimOptions(devices={self.devices}) must be >= 1")
