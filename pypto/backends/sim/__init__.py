"""The numba CPU simulator backend (always available)."""
from __future__ import annotations


def is_available() -> tuple[bool, list[str]]:
    return True, []


def create(soc, device: int, options=None):
    from .backend import SimBackend
    return SimBackend(soc, device, options)
