"""IR node -> calls of the numba implementations. One table, used by both sim modes:
codegen renders the calls as source, the eager executor evaluates them on the spot."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import NotSimulatedError
from ...ir.nodes import Expr, GmView, InstrNode, TileVar

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


def _wrap_int(x: int, dt) -> int:
    m = 1 << dt.bits
    x %= m
    return x - m if dt.kind == "int" and x >= m // 2 else x


def scalar_const(x: Any, dt) -> tuple:
    """A static scalar operand converted to the tile's element type, in the compute type."""
    if dt.is_float:
        with np.errstate(over="ignore"):
            return _float_scalar(x, dt)
    return const(_wrap_int(int(x), dt), dt.storage)


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
    return (("view", t), ("const", rs, repr(rs)), ("const", cs, repr(cs)), ("valid", t, 0), ("valid", t, 1))


def _view(v: GmView) -> tuple:
    return (("gm", v.tensor), ("int", v.offset)) + tuple(("int", s) for s in v.shape) + \
           tuple(("int", s) for s in v.strides)


def _bounds(v: GmView) -> list[Call]:
    return [Call("checks.bound", (("const", k, repr(k)), ("int", val), ("int", lim), ("err",)))
            for k, (_, val, lim) in enumerate(v.bounds)]


_PAD_FLOAT = {"Zero": 0.0, "Min": -np.inf, "Max": np.inf}


def pad_value(t: TileVar) -> tuple:
    """The NPU's pad bit pattern for the tile's dtype (pto-isa-semantics 3.6 + addendum)."""
    dt, pad = t.type.dtype, t.type.pad
    if pad == "Null" or dt.itemsize == 8 or dt.short in ("e4m3", "e5m2"):
        return const(0, dt.storage)
    if dt.short == "f32":
        return const(_PAD_FLOAT[pad], np.float32)
    if dt.short in ("f16", "bf16"):
        bits = {"Zero": 0, "Min": {"f16": 0xFC00, "bf16": 0xFF80}, "Max": {"f16": 0x7C00, "bf16": 0x7F80}}[pad]
        return const(bits if pad == "Zero" else bits[dt.short], np.uint16)
    info = np.iinfo(dt.np)
    if pad == "Zero":
        return const(0, dt.storage)
    if pad == "Min":
        return const(-1 if dt.short == "i8" else info.min, dt.storage)
    return const(info.max, dt.storage)


def lower(node: InstrNode) -> list[Call]:
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
    args = _tile(t) + (("const", ty.rows, repr(ty.rows)), ("const", ty.cols, repr(ty.cols)),
                       ("const", rowmajor, repr(rowmajor)), ("const", ty.pad != "Null", repr(ty.pad != "Null")),
                       pad_value(t), ("const", c0, repr(c0))) + _view(v) + (("err",),)
    return _bounds(v) + [Call("memory.tload", args)]


def _tstore(node: InstrNode) -> list[Call]:
    v, t = node.operands
    rowmajor = t.type.blayout == "RowMajor"
    args = _view(v) + _tile(t) + (("const", rowmajor, repr(rowmajor)), ("err",))
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
    from ...isa import TABLE
    defaults = {p.name: p.default for p in TABLE[name].params}
    return all(defaults.get(k) == v for k, v in (params or {}).items())
