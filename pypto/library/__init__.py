"""Built-in kernels behind the seed-level instruction names, written in pypto's own DSL.

``forms`` holds the whole-tensor forms ``load_insn`` serves; ``kernels`` the shared walking
helpers and the elementwise, row-reduction and cast forms; every other module here is a family's
library kernels and registers its forms when imported (no list to edit).
"""
import importlib
import pkgutil

from .kernels import ROWS, TILE_BYTES, kernel_for, launch_dims

for _m in sorted(m.name for m in pkgutil.iter_modules(__path__)
                 if not m.name.startswith("_") and m.name not in ("forms", "kernels")):
    importlib.import_module(f"{__name__}.{_m}")
del importlib, pkgutil

__all__ = ["kernel_for", "launch_dims", "TILE_BYTES", "ROWS"]
