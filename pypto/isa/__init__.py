"""The PTO instruction table and SoC profiles: facts as data.

``TABLE`` maps an instruction name (TADD) to its ``Instr`` entry; ``SEED_NAMES`` maps seed-level
names ("add") to instruction names. Adding an instruction means adding an entry to one of the
category modules under ``instructions/``.
"""
from __future__ import annotations

import difflib
import importlib

from ..errors import PtoError
from .schema import CATEGORY_BASE, PIPES, Instr, Operand, Param
from .soc import DEFAULT_SOC, PROFILES, SocProfile, get_profile

_CATEGORY_MODULES = ("sync", "elementwise", "tile_scalar", "reduce_expand", "memory", "matmul",
                     "movement", "complex", "comm", "intrinsic")


def _load() -> dict[str, Instr]:
    table: dict[str, Instr] = {}
    opcodes: dict[int, str] = {}
    for mod in _CATEGORY_MODULES:
        try:
            m = importlib.import_module(f"{__name__}.instructions.{mod}")
        except ModuleNotFoundError as e:
            if e.name and e.name.endswith(f"instructions.{mod}"):
                continue
            raise
        for ins in m.INSTRUCTIONS:
            if ins.name in table:
                raise PtoError(f"ISA table: duplicate instruction {ins.name}")
            if ins.opcode in opcodes:
                raise PtoError(f"ISA table: opcode {ins.opcode:#x} used by {opcodes[ins.opcode]} "
                               f"and {ins.name}")
            table[ins.name] = ins
            opcodes[ins.opcode] = ins.name
    return table


TABLE: dict[str, Instr] = _load()
BY_OPCODE: dict[int, Instr] = {i.opcode: i for i in TABLE.values()}
SEED_NAMES: dict[str, str] = {i.seed: i.name for i in TABLE.values() if i.seed}


def lookup(name: str) -> Instr | None:
    """Find an instruction by PTO name (any case) or seed name."""
    if name in SEED_NAMES:
        return TABLE[SEED_NAMES[name]]
    return TABLE.get(name.upper())


def closest(name: str, n: int = 3) -> list[str]:
    pool = list(SEED_NAMES) + list(TABLE)
    return difflib.get_close_matches(name, pool, n=n, cutoff=0.5) or \
        difflib.get_close_matches(name.upper(), pool, n=n, cutoff=0.5)


__all__ = ["TABLE", "BY_OPCODE", "SEED_NAMES", "lookup", "closest", "Instr", "Operand", "Param",
           "PIPES", "CATEGORY_BASE", "PROFILES", "SocProfile", "get_profile", "DEFAULT_SOC"]
