"""The backends a user's tests and golden bundles name; the simulator's eager mode counts as one."""
from __future__ import annotations

TARGETS = ("sim", "sim-eager", "npu", "npu-cpusim")


def backend_and_mode(target: str) -> tuple[str, str | None]:
    """("sim", "eager") for "sim-eager", else (target, None)."""
    return ("sim", "eager") if target == "sim-eager" else (target, None)
