"""A small pass framework: a pass is a function ``(kernel, soc) -> None`` that checks or annotates
the IR in place. Verification, placement and annotation run on every kernel, whether traced
from the DSL or built directly (IDL lowering); later checkers, flag insertion and the cost
model are passes too, added to ``PASSES`` by name."""
from __future__ import annotations

from typing import Callable, Sequence

from .autosync import insert as autosync
from .effects import annotate
from .nodes import Kernel
from .placement import place
from .verify import verify

Pass = Callable[[Kernel, object], None]

PASSES: dict[str, Pass] = {"place": place, "verify": verify, "annotate": annotate, "autosync": autosync}
DEFAULT: tuple[str, ...] = ("place", "verify", "annotate", "autosync")


def run(k: Kernel, soc, passes: Sequence[str | Pass] = DEFAULT) -> Kernel:
    """Run passes (names from PASSES, or functions) over ``k`` in order; returns ``k``."""
    for p in passes:
        (PASSES[p] if isinstance(p, str) else p)(k, soc)
    return k


__all__ = ["PASSES", "DEFAULT", "run", "Pass"]
