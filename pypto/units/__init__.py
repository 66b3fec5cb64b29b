"""The built-in instruction units: one module per instruction or family, each holding what pypto
knows about it beyond its table entry (checks, simulator lowering and numba code, load_insn
form, later its C++ emission), registered through ``pypto.ir.registry``.

Importing this package registers them all; pypto's ``__init__`` hands ``registry`` a loader
that imports it on first use (so ``import pypto`` loads no numba code). A new
instruction is a new module here plus its line below (docs/contributing.md walks through one).
"""
from . import pending, elementwise, tile_scalar, memory, sync, exp, rowsum, cvt  # noqa: F401
