"""IR statement -> calls of the numba implementations (instructions, and the run-time checks of
set_valid / TASSIGN). One table, used by both sim modes: codegen renders the calls as source,
the eager executor evaluates them on the spot."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import NotSimulatedError
from ...ir.nodes import Assign, Expr, GmView, InstrNode, SetValid, Stmt, TileVar
from ...isa import TABLE

# Argument forms of a Call (tuples so both renderers can dispatch on the tag):
#   ("view", tile)            typed storage array of the tile
#   ("valid", tile, 0|1)      valid rows / cols
#   ("int", expr)             an int scalar expression
#   ("gm", tensor_param)      typed GM array of a tensor parameter
#   ("const", value, text)    a constant: its Python value and its source text
#   ("scalar", expr, dtype)   a tile-scalar operand converted to dtype's compute type
#   ("err",)                  the fault array


@dataclass(frozen=True)
class Call:
    fn: str                      # "module.function" under pypto.backends.sim.insns
    args: tuple[Any, ...]


def lit(value: int | bool) -> tuple:
    """A Python int/bool constant argument (a literal in generated code)."""
    return ("const", value, repr(value))


def const(value: Any, storage: np.dtype) -> tuple:
    """A constant of a storage/compute type, with its source text."""
    v = np.array(value).astype(storage)[()] if not isinstance(value, np.generic) else value
    name = np.dtype(storage).name
    x = v.item()
    if isinstance(x, float) and not math.isfinite(x):
        txt = f"np.{name}(float('{x}'))"
    else:
        txt = f"np.{name}({x!r})"
    return ("const", np.dtype(storage).type(x), txt)


CODECS = {"f32": "native", "f16": "f16", "bf16": "bf16"}

# op per (instruction, float?) -- the scalar function applied per element
OPS = {
    "TADD": ("add", "add"), "TSUB": ("sub", "sub"), "TMUL": ("mul", "mul"),
    "TDIV": ("div", "idiv"), "TMAX": ("fmax", "imax"), "TMIN": ("fmin", "imin"),
    "TADDS": ("add", "add"), "TMULS": ("mul", "mul"),
}


def codec(dt) -> str:
    """How elements are widened for arithmetic: native (f32, ints), f16 or bf16 (via f32)."""
    if dt.is_float:
        if dt.short not in CODECS:
            raise NotSimulatedError(f"arithmetic on {dt.name} is not simulated yet")
        return CODECS[dt.short]
    return "native"


def scalar_const(x: Any, dt) -> tuple:
    """A static scalar operand converted to the tile's element type, in the compute type."""
    if dt.is_float:
        with np.errstate(over="ignore"):
            return _float_scalar(x, dt)
    return const(dt.wrap(int(x)), dt.storage)


def _bf16(x: float) -> np.float32:
    from .insns.floatbits import f64_to_bf16      # one rounding (ml_dtypes rounds twice)
    return np.array([int(f64_to_bf16(float(x))) << 16], np.uint32).view(np.float32)[0]


_NARROW = {"f32": np.float32, "f16": lambda x: np.float32(np.float16(x)), "bf16": _bf16}


def _float_scalar(x: Any, dt) -> tuple:
    """Round once from double to the element type, then widen to the f32 compute type."""
    if dt.short not in _NARROW:
        raise NotSimulatedError(f"scalar operands of {dt.name} are not simulated yet")
    return const(np.float32(_NARROW[dt.short](x)), np.float32)


def scalar_arg(x: Any, dt) -> tuple:
    if isinstance(x, Expr):
        return ("scalar", x, dt)
    return scalar_const(x, dt)


def _tile(t: TileVar) -> tuple:
    rs, cs = t.type.strides
    return (("view", t), lit(rs), lit(cs), ("valid", t, 0), ("valid", t, 1))


def _view(v: GmView) -> tuple:
    return (("gm", v.tensor), ("int", v.offset)) + tuple(("int", s) for s in v.shape) + \
           tuple(("int", s) for s in v.strides)


def _bounds(v: GmView) -> list[Call]:
    return [Call("checks.bound", (lit(k), ("int", val), ("int", lim), ("err",)))
            for k, (_, val, lim) in enumerate(v.bounds)]


# The NPU's PadValue::Min / Max per element type, as values of the simulator's storage type
# (pto-isa-semantics 3.6 and the addendum: i8 Min is -1, unsigned Min is 0, floats pad +-inf).
# Zero pads 0; Null pads nothing; 8-byte and fp8 types pad 0 for every PadValue.
PAD_MIN_MAX = {
    "f32": (-np.inf, np.inf), "f16": (0xFC00, 0x7C00), "bf16": (0xFF80, 0x7F80),
    "i32": (-2 ** 31, 2 ** 31 - 1), "u32": (0, 2 ** 32 - 1), "i16": (-2 ** 15, 2 ** 15 - 1),
    "u16": (0, 2 ** 16 - 1), "i8": (-1, 127), "u8": (0, 255),
}


def pad_value(t: TileVar) -> tuple:
    dt, pad = t.type.dtype, t.type.pad
    v = PAD_MIN_MAX[dt.short][pad == "Max"] if pad in ("Min", "Max") and dt.short in PAD_MIN_MAX else 0
    return const(v, dt.storage)


def lower(node: Stmt, soc) -> list[Call]:
    """The calls that execute ``node`` (an instruction, or the run-time check of a set_valid or
    of a TASSIGN to a runtime address; statically known addresses were checked when traced)."""
    if isinstance(node, SetValid):
        t = node.tile.type
        return [Call("checks.set_valid", (("int", node.rows), ("int", node.cols), lit(t.rows),
                                          lit(t.cols), ("err",)))]
    if isinstance(node, Assign):
        if not isinstance(node.addr, Expr):
            return []
        sp = soc.space(node.tile.type.loc)
        return [Call("checks.assign", (("int", node.addr), lit(node.tile.type.nbytes), lit(sp.capacity),
                                       lit(sp.align), ("err",)))]
    if not isinstance(node, InstrNode):
        return []
    rule = RULES.get(node.name)
    if rule is None:
        raise NotSimulatedError(f"{node.name} is in the ISA table but is not simulated yet")
    return rule(node)


def _binary(node: InstrNode) -> list[Call]:
    dst, a, b = node.operands
    dt = dst.type.dtype
    op = OPS[node.name][0 if dt.is_float else 1]
    return [Call(f"elementwise.binary_{op}_{codec(dt)}", _tile(dst) + _tile(a) + _tile(b) + (("err",),))]


def _binary_scalar(node: InstrNode) -> list[Call]:
    dst, a, s = node.operands
    dt = dst.type.dtype
    op = OPS[node.name][0 if dt.is_float else 1]
    return [Call(f"elementwise.scalar_{op}_{codec(dt)}", _tile(dst) + _tile(a) + (scalar_arg(s, dt), ("err",)))]


def _tload(node: InstrNode) -> list[Call]:
    t, v = node.operands
    ty = t.type
    rowmajor = ty.blayout == "RowMajor"
    c0 = 32 // ty.dtype.itemsize
    args = _tile(t) + (lit(ty.rows), lit(ty.cols), lit(rowmajor), lit(ty.pad != "Null"),
                       pad_value(t), lit(c0)) + _view(v) + (("err",),)
    return _bounds(v) + [Call("memory.tload", args)]


def _tstore(node: InstrNode) -> list[Call]:
    v, t = node.operands
    rowmajor = t.type.blayout == "RowMajor"
    args = _view(v) + _tile(t) + (lit(rowmajor), ("err",))
    return _bounds(v) + [Call("memory.tstore", args)]


RULES = {
    "TADD": _binary, "TSUB": _binary, "TMUL": _binary, "TDIV": _binary, "TMAX": _binary,
    "TMIN": _binary, "TADDS": _binary_scalar, "TMULS": _binary_scalar,
    "TLOAD": _tload, "TSTORE": _tstore,
}

SIMULATED = frozenset(RULES) | {"TASSIGN"}


def simulated(name: str, params: dict | None = None) -> bool:
    """True if the simulator has semantics for this instruction with these mode parameters
    (so far only every parameter's default, e.g. TSTORE without atomic add)."""
    if name not in SIMULATED:
        return False
    defaults = {p.name: p.default for p in TABLE[name].params}
    return all(defaults.get(k) == v for k, v in (params or {}).items())
