"""The built-in instruction units: one module per instruction or family, each holding what pypto
knows about it beyond its table entry (checks, simulator lowering and numba code, load_insn
form, C++ emission), registered through ``pypto.ir.registry``.

Importing this package imports every module in it, so each registers its units; pypto's
``__init__`` hands ``registry`` a loader that imports it on first use (so ``import pypto`` loads
no numba code). A new instruction is a new module here (docs/contributing.md walks through one):
no list to edit.
"""
import importlib
import pkgutil

for _m in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
    importlib.import_module(f"{__name__}.{_m}")
del importlib, pkgutil
