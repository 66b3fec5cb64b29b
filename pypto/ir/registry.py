"""The door every instruction's implementation comes through: one ``Unit`` per instruction.

A unit holds what pypto knows about an instruction beyond its ISA table entry: static checks,
the simulator lowering (and so its numba implementation), the whole-tensor form ``load_insn``
wraps it in, and, later, its C++ emission rule. The built-in units live in ``pypto.units`` (one
module per instruction or family); the package wires them in with ``add_loader`` and they
register on first use. Instructions defined at run time (IDL) call ``register`` the same way.
Every list of names is derived from here.
"""
from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import PtoError
from ..isa import TABLE


@dataclass(frozen=True)
class Unit:
    """Everything about one instruction that is code, not fact.

    check(node, soc): static checks beyond the table's generic ones (raise a PtoError).
    sim(node, soc) -> list of calls: the simulator lowering; None = not simulated.
    sim_params(params) -> reason or None: mode parameters the simulator cannot honour.
    seed: the load_insn whole-tensor form ("binary", "scalar", "unary", "rowreduce", "cast").
    seed_params: mode parameters load_insn passes through (e.g. TCVT's rmode, satMode).
    effects(node, soc) -> extra Effects beyond the table's (e.g. scratch used only in one mode).
    emit(node, soc, cx) -> C++ line(s): the emission rule of the NPU backends.
    guards(node, soc) -> [ir.guards.Guard]: run-time facts the instruction needs (the simulator
    checks them in its numba code; the NPU backends emit them into the C++).
    separate(dtype, soc) -> operand names that must not share storage (an in-place dst among
    them is refused by check; a code generator asks before it reuses a tile).
    """
    name: str
    check: Callable[[Any, Any], None] | None = None
    sim: Callable[[Any, Any], list] | None = None
    sim_params: Callable[[dict], str | None] | None = None
    seed: str | None = None
    seed_params: tuple[str, ...] = ()
    effects: Callable[[Any, Any], tuple] | None = None
    emit: Callable[..., str | list[str]] | None = None
    guards: Callable[[Any, Any], list] | None = None
    separate: Callable[[Any, Any], tuple[str, ...]] | None = None
    notes: tuple[str, ...] = field(default=())


_UNITS: dict[str, Unit] = {}
_ORIGIN: dict[str, str | None] = {}
_LOCK = threading.RLock()
_LOADERS: list[Callable[[], None]] = []
_FINDERS: list[Callable[[str], bool]] = []
_loaded = False
# category (or one instruction's name, which wins) -> why its instructions without a simulator
# lowering are not simulated
PENDING: dict[str, str] = {}


def add_loader(load: Callable[[], None]) -> None:
    """Run ``load`` (which registers units) before the registry is first read."""
    global _loaded
    with _LOCK:
        _LOADERS.append(load)
        _loaded = False


def add_finder(find: Callable[[str], bool]) -> None:
    """``find(name)`` loads just what registers ``name`` when it knows that (returns True), so a
    lookup of one instruction need not run the loaders; anything it does not know loads them."""
    with _LOCK:
        _FINDERS.append(find)


def registered() -> frozenset[str]:
    """The names registered so far, loading nothing."""
    with _LOCK:
        return frozenset(_UNITS)


def register(unit: Unit, *, replace: bool = False) -> Unit:
    """Add a unit. Its name must be in the ISA table; registering a name twice is an error
    unless ``replace`` (a deliberate override, e.g. by a test or an IDL reload)."""
    if unit.name not in TABLE:
        raise PtoError(f"cannot register {unit.name}: it is not in the ISA table",
                       rule="a unit implements an instruction of pypto.isa.TABLE",
                       fix="add the table entry first (pypto/isa/instructions/)")
    with _LOCK:
        if unit.name in _UNITS and not replace:
            raise PtoError(f"instruction {unit.name} is registered twice",
                           rule="one instruction, one unit", fix="pass replace=True to override")
        _UNITS[unit.name] = unit
        _ORIGIN[unit.name] = _importing()
    return unit


def _importing() -> str | None:
    """The module whose import runs the caller's registration (the innermost module body on
    the stack): importing it alone registers the unit again, whatever imported it first."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_name != "<module>":
        f = f.f_back
    return None if f is None else f.f_globals.get("__name__")


def origin(name: str) -> str | None:
    """The module whose import registered ``name`` (None: not registered, or not at import)."""
    return _ORIGIN.get(name)


def _ensure_loaded() -> None:
    global _loaded
    if _loaded:
        return
    with _LOCK:
        if not _loaded:
            while _LOADERS:
                _LOADERS.pop(0)()
            _loaded = True


def get(name: str) -> Unit | None:
    """The unit of ``name``, or None when only its table entry exists."""
    unit = _UNITS.get(name)
    if unit is None and not _loaded:
        if not any(find(name) for find in list(_FINDERS)) or name not in _UNITS:
            _ensure_loaded()
        unit = _UNITS.get(name)
    return unit


def separate(name: str, dtype, soc) -> tuple[str, ...]:
    """The operands of ``name`` that must not share storage for this element type and SoC."""
    unit = get(name)
    return unit.separate(dtype, soc) if unit is not None and unit.separate is not None else ()


def units() -> dict[str, Unit]:
    _ensure_loaded()
    return dict(_UNITS)


def simulated() -> list[str]:
    """Instructions the simulator runs, in table order."""
    _ensure_loaded()
    return [n for n in TABLE if n in _UNITS and _UNITS[n].sim is not None]


def status(name: str) -> tuple[bool, str]:
    """(simulated?, why not) for a table entry."""
    u = get(name)
    if u is not None and u.sim is not None:
        return True, ""
    _ensure_loaded()                     # PENDING is filled by whichever unit module knows why
    return False, PENDING.get(name) or PENDING.get(TABLE[name].category, "not built yet")


__all__ = ["Unit", "register", "registered", "add_loader", "add_finder", "get", "units", "simulated",
           "status"]
