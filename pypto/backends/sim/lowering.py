"""What a unit's simulator lowering returns, and the helpers every lowering shares.

A lowering turns one IR statement into ``Call``s of numba functions. Both sim modes consume the
same calls: codegen renders them as source of one kernel module, the eager executor evaluates
them on the spot. Argument forms (tuples, so both renderers dispatch on the tag):

  ("tile", t)             a tile operand: storage array, valid rows, valid cols, layout descriptor
  ("int", expr)           an integer scalar expression
  ("gm", tensor_param)    the typed GM array of a tensor parameter
  ("const", value, text)  a constant: its Python value and its source text
  ("scalar", expr, dt)    a runtime scalar converted to dt's compute type
  ("err",)                the error record
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...diagnostics import OVERFLOW, check_scalar  # noqa: F401  (units use L.check_scalar)
from ...errors import NotSimulatedError
from ...ir import registry
from ...ir.nodes import Assign, Expr, GmView, InstrNode, SetValid, Stmt, TileVar, gm_loads
from ...isa import TABLE

LIB = "pypto.backends.sim.lib"


@dataclass(frozen=True)
class Fn:
    """A numba function: ``name`` in importable ``module``, or in a module generated from
    ``source`` (written once into the kernel cache directory under a content-hash name)."""
    module: str
    name: str
    source: str | None = None
    dense: "Fn | None" = None     # the instance to call when every tile operand is ND (lower())
    inplace: tuple = ()           # dense instances for dst being source 1, source 2 (lower())


@dataclass(frozen=True)
class Call:
    fn: Fn
    args: tuple[Any, ...]
    gate: bool = False       # a run-time check that unguarded code after it relies on


def lib(path: str) -> Fn:
    """A function of pypto.backends.sim.lib, named "module.function"."""
    mod, name = path.rsplit(".", 1)
    return Fn(f"{LIB}.{mod}", name)


@functools.lru_cache(maxsize=None)
def ew(form: str, opmod: str, op: str, codec: str) -> Fn:
    """An instance of an elementwise loop template (lib/elementwise.py); lower() swaps in its
    ND-only twin when the call's tiles are all ND, or the twin's in-place form when dst is one
    of the sources."""
    from .lib import elementwise as EW   # numba: only when a kernel is generated
    src, prefix, fn = EW.instance(form, opmod, op, codec, dense=False)
    dsrc, dprefix, _ = EW.instance(form, opmod, op, codec, dense=True)
    inplace = tuple(Fn(p, fn, s) for s, p, _ in (EW.instance(form, opmod, op, codec, True, x)
                                                  for x in EW.aliases(form)))
    return Fn(prefix, fn, src, Fn(dprefix, fn, dsrc), inplace)


def _for_layouts(c: Call) -> Call:
    """The call with its function's instance for the layouts its tiles have (they are static),
    and for dst being a source's very tile (TADD(t, t, u))."""
    tiles = [a[1] for a in c.args if a[0] == "tile"]
    if c.fn.dense is None or not all(t.type.rows_dense for t in tiles):
        return c
    for k, f in enumerate(c.fn.inplace, 1):
        if tiles[k].id == tiles[0].id:
            return Call(f, c.args, c.gate)
    return Call(c.fn.dense, c.args, c.gate)


def lit(value: int | bool) -> tuple:
    """A Python int/bool constant argument. Ints are typed int64 in generated code, not numba
    literals: a literal would compile the callee again for every tile shape and mode value."""
    return ("const", value, repr(value) if isinstance(value, bool) else f"np.int64({int(value)})")


def const(value: Any, storage: Any) -> tuple:
    """A constant of a storage/compute type, with its source text."""
    storage = np.dtype(storage)
    v = value if isinstance(value, np.generic) else np.array(value).astype(storage)[()]
    x = v.item()
    txt = (f"np.{storage.name}(float('{x}'))" if isinstance(x, float) and not math.isfinite(x)
           else f"np.{storage.name}({x!r})")
    return ("const", storage.type(x), txt)


def tile(t: TileVar) -> tuple:
    return ("tile", t)


def err() -> tuple:
    return ("err",)


# -- scalar operands ------------------------------------------------------------------------------
# How f16/bf16 arithmetic codecs are named (f32 and integers compute natively).
CODECS = {"f32": "native", "f16": "f16", "bf16": "bf16"}
WIDE_CODECS = {"f32": "f32w", "f16": "f16w", "bf16": "bf16w"}


def codec(dt, wide: bool = False) -> str:
    """The element codec of dt: how stored bits widen for arithmetic and narrow back."""
    if dt.is_float:
        table = WIDE_CODECS if wide else CODECS
        if dt.short not in table:
            raise NotSimulatedError(f"arithmetic on {dt.name} is not simulated yet",
                                    rule="the simulator computes on f32, f16, bf16 and integers",
                                    fix="convert the data to float32 with TCVT first")
        return table[dt.short]
    return "native"


def _bf16(x: float) -> np.float32:
    from .lib.floatbits import f64_to_bf16      # one rounding (ml_dtypes rounds twice)
    return np.array([int(f64_to_bf16(float(x))) << 16], np.uint32).view(np.float32)[0]


_NARROW = {"f32": np.float32, "f16": lambda x: np.float32(np.float16(x)), "bf16": _bf16}
def scalar_const(x: Any, dt) -> tuple:
    """A static scalar converted to the tile's element type, in the compute type (floats round
    once from double to the element type, then widen to f32)."""
    if dt.is_float:
        if dt.short not in _NARROW:
            raise NotSimulatedError(f"scalar operands of {dt.name} are not simulated yet",
                                    rule="the simulator computes on f32, f16, bf16 and integers",
                                    fix="convert the data to float32 with TCVT first")
        with np.errstate(over="ignore"):
            return const(np.float32(_NARROW[dt.short](x)), np.float32)
    return const(int(x), dt.storage)


def scalar_operand(k: int, x: Any, dt) -> tuple[list[Call], tuple]:
    """(run-time checks, argument) of scalar operand k converted to dt."""
    if not isinstance(x, Expr):
        return [], scalar_const(x, dt)
    if dt.is_int:
        info = np.iinfo(dt.np)
        return [Call(lib("checks.int_scalar"), (lit(k), ("int", x), lit(int(info.min)), lit(int(info.max)),
                                                err()))], ("scalar", x, dt)
    return [Call(lib("checks.float_scalar"), (lit(k), ("scalar", x, None), const(OVERFLOW[dt.short], np.float64),
                                              err()))], ("scalar", x, dt)


# -- GM views -------------------------------------------------------------------------------------
def view(v: GmView) -> tuple:
    return (("gm", v.tensor), ("int", v.offset)) + tuple(("int", s) for s in v.shape) + \
           tuple(("int", s) for s in v.strides)


def gm_element(g: np.ndarray, offset: int, dtype) -> int | float:
    """Eager mode: the value of one GM element (stored bits decoded: f16/bf16 widen to f32)."""
    x = g[offset]
    if dtype.short == "f16":
        return float(np.array([x], np.uint16).view(np.float16)[0])
    if dtype.short == "bf16":
        return float(np.array([int(x) << 16], np.uint32).view(np.float32)[0])
    return x.item()


def bounds(v: GmView, base: int = 0) -> list[Call]:
    """Run-time checks of a view's bounds; ``base`` tells a scalar read's bounds (100 * (j + 1)
    for the j-th GM scalar read of an instruction) from its GM view operand's. Only a scalar
    read's are gates: the kernel reads that element itself, while a view operand is read only by
    the instruction's own guarded call, which a failed check skips. Three bounds to a call
    (checks.bounds), each numbered base + its place in ``v.bounds``."""
    pairs = [x for _, val, lim in v.bounds for x in (("int", val), ("int", lim))]
    pairs += [lit(0)] * (-len(pairs) % 6)
    return [Call(lib("checks.bounds"), (lit(base + k // 2), *pairs[k:k + 6], err()), gate=base != 0)
            for k in range(0, len(pairs), 6)]


# -- statements -----------------------------------------------------------------------------------
def lower(node: Stmt, soc) -> list[Call]:
    """The calls that execute ``node``: an instruction through its unit, or the run-time check of
    a set_valid or of a TASSIGN to a runtime address (static addresses were checked when traced)."""
    if isinstance(node, SetValid):
        t = node.tile.type
        return [Call(lib("checks.set_valid"), (("int", node.rows), ("int", node.cols), lit(t.rows),
                                               lit(t.cols), err()))]
    if isinstance(node, Assign):
        if not isinstance(node.addr, Expr):
            return []
        sp = soc.space(node.tile.type.loc)
        return [Call(lib("checks.assign"), (("int", node.addr), lit(node.tile.type.nbytes),
                                            lit(sp.capacity), lit(sp.align), err()), gate=True)]
    if not isinstance(node, InstrNode):
        return []
    unit = registry.get(node.name)
    if unit is None or unit.sim is None:
        _, why = registry.status(node.name)
        spec = TABLE[node.name]
        raise NotSimulatedError(
            f"{node.name} (opcode {spec.opcode:#06x}) is in the ISA table but the simulator cannot "
            f"run it yet: {why}",
            rule=f"{node.name}: {spec.summary}",
            fix="use an instruction the simulator runs (`pypto info` lists them); kern.ir() still "
                "shows the kernel")
    loads = [g for x in node.operands for g in gm_loads(x)]
    reads = [c for j, g in enumerate(loads) for c in bounds(g.view, 100 * (j + 1))]
    if unit.sim_params is not None:
        why = unit.sim_params(node.params)
        if why:
            raise NotSimulatedError(f"{node.name} with "
                                    f"{', '.join(f'{k}={v}' for k, v in node.params.items())}: {why}",
                                    rule="the simulator runs this instruction only with the "
                                         "parameters it models",
                                    fix="leave the parameter at its default")
    return reads + [_for_layouts(c) for c in unit.sim(node, soc)]


__all__ = ["Fn", "Call", "lib", "ew", "lit", "const", "tile", "err", "codec", "check_scalar",
           "scalar_const", "scalar_operand", "view", "bounds", "lower"]
