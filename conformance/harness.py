"""Run one tile instruction on tiles whose whole contents the test chooses; read back whole tiles.

The vector-ISA conformance files describe a case as an instruction, its operands (``T``: a tile
with its dtype, capacity, layout and valid region; ``S``: a scalar) and its mode parameters. For
each static signature the harness builds, once, a kernel that

1. TLOADs every tile operand **whole** from its own GM tensor (so the test sets every element,
   inside and outside the valid region),
2. sets each tile's valid region from kernel arguments (runtime values: new regions reuse the
   compilation) or declares it static,
3. runs the instruction (with the flags a chip needs: MTE2 -> V before, V -> MTE3 after),
4. TSTOREs every tile the instruction writes **whole** (valid region reset to the whole tile),

and returns those tiles as (rows, cols) numpy arrays. So a test sees every element the
instruction wrote and every element it left alone, and compares against its numpy reference.

Nothing here knows pypto's implementation: it drives the public DSL and reads operand roles
(which operands an instruction writes) from the ISA table, a list of facts.
"""
from __future__ import annotations

import functools
import itertools
import linecache
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

import pypto
from pypto.isa import TABLE

from . import reference as ref

_counter = itertools.count()


@dataclass(frozen=True)
class T:
    """A tile operand: element type (a reference dtype name: "f32", "bf16", "u8", ...), capacity
    (rows, cols), layout ("ND" or "DN"), location and pad value; ``valid`` None means the valid
    region is a runtime argument of the launch, a pair makes it static."""
    dtype: str
    shape: tuple[int, int]
    layout: str = "ND"
    loc: str = "Vec"
    pad: str = "Null"
    valid: tuple[int, int] | None = None

    @property
    def np(self) -> np.dtype:
        return ref.np_dtype(self.dtype)


@dataclass(frozen=True)
class S:
    """A scalar operand: "float" or "int"; ``how`` is "arg" (a runtime kernel argument),
    "static" (a constant in the kernel text; each value compiles once) or "gm" (read from a
    one-element GM tensor of ``gm_dtype`` by the scalar unit, x[0, 0])."""
    kind: str = "float"
    how: str = "arg"
    gm_dtype: str | None = None


@dataclass
class Result:
    """Whole tiles of the written operands (operand index -> (rows, cols) array)."""
    tiles: dict[int, np.ndarray] = field(default_factory=dict)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.tiles[i]


def _lit(v: Any) -> str:
    if isinstance(v, float):
        if v != v:
            return "float('nan')"
        if v in (float("inf"), float("-inf")):
            return f"float('{v}')"
    return repr(v)


def written(instr: str, ops: Sequence["T | S"]) -> list[int]:
    """Operand indices the instruction writes (roles out / inout; tmp scratch is not compared),
    in the overload the operands' kinds select."""
    kinds = tuple("tile" if isinstance(o, T) else "scalar" for o in ops)
    slots = TABLE[instr].slots_for(len(ops), kinds)
    return [i for i, o in enumerate(slots) if o.role in ("out", "inout")]


@functools.lru_cache(maxsize=None)
def kernel_for(instr: str, ops: tuple, params: tuple, statics: tuple, bundle: tuple = ()):
    """The @pypto.kernel running ``instr`` once on operands ``ops`` (T / S specs) with mode
    parameters ``params``; ``statics`` holds the values of static scalars. Cached per signature.

    With ``bundle`` (instruction names taking the same operands, ``instr`` among them) the kernel
    holds every one of them, each in a loop whose trip count (argument ``e<k>``: 1 or 0) picks
    the one that runs: the bundle compiles once for all its instructions."""
    members = bundle or (instr,)
    outs = set(written(instr, ops))
    if any(set(written(m, ops)) != outs for m in members):
        raise AssertionError(f"bundle {members}: members write different operands")
    args: list[str] = []
    body: list[str] = []
    names: list[str] = []
    static_vals = iter(statics)
    for i, o in enumerate(ops):
        if isinstance(o, T):
            args.append(f"g{i}")
            if o.valid is None:
                args += [f"r{i}", f"c{i}"]
            if i in outs:
                args.append(f"o{i}")
            bl = "pto.ColMajor" if o.layout == "DN" else "pto.RowMajor"
            body.append(f"t{i} = pto.Tile(pto.{o.loc}, pto.{ref.LONG[o.np]}, {o.shape}, "
                        f"valid=pto.DYNAMIC, blayout={bl}, pad=pto.Pad{o.pad})")
            body.append(f"pto.TLOAD(t{i}, g{i}[:, :])")
            names.append(f"t{i}")
        elif o.how == "arg":
            args.append(f"s{i}")
            names.append(f"s{i}")
        elif o.how == "gm":
            args.append(f"s{i}")
            names.append(f"s{i}[0, 0]")
        else:
            names.append(_lit(next(static_vals)))
    body.append("pto.pipe_barrier(pto.PIPE_ALL)")          # the loads, before any pipe reads

    for i, o in enumerate(ops):
        if isinstance(o, T):
            vr, vc = (f"r{i}", f"c{i}") if o.valid is None else o.valid
            body.append(f"t{i}.set_valid({vr}, {vc})")
    kw = "".join(f", {k}={_lit(v)}" for k, v in params)
    if bundle:
        for k, m in enumerate(members):
            args.append(f"e{k}")
            body.append(f"for _ in pto.range(0, e{k}):")
            body.append("    pto.pipe_barrier(pto.PIPE_V)")       # after the member before it
            body.append(f"    pto.{m}({', '.join(names)}{kw})")
    else:
        body.append(f"pto.{instr}({', '.join(names)}{kw})")
    body.append("pto.pipe_barrier(pto.PIPE_ALL)")          # the instruction, before the stores
    for i in sorted(outs):
        o = ops[i]
        body.append(f"t{i}.set_valid({o.shape[0]}, {o.shape[1]})")
        body.append(f"pto.TSTORE(o{i}[:, :], t{i})")
    name = f"case_{instr.lower()}_{next(_counter)}"
    src = f"def {name}({', '.join(args)}):\n" + "".join(f"    {ln}\n" for ln in body)
    filename = f"<conformance {name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"pto": pypto.pto}
    exec(compile(src, filename, "exec"), ns)
    return pypto.kernel(ns[name])


def run(instr: str, ops: Sequence[T | S], values: Sequence[Any],
        valid: Sequence[tuple[int, int] | None] | None = None, blocks: int = 1,
        bundle: Sequence[str] = (), **params: Any) -> Result:
    """Run ``instr`` once. ``values[i]`` is the whole (rows, cols) content of tile operand i (its
    input, or what an output tile holds before the instruction) or the value of scalar operand
    i; ``valid[i]`` is the runtime valid region of a tile whose spec has none. Returns the whole
    tiles of every written operand, after the instruction. ``bundle``: see kernel_for."""
    ops = tuple(ops)
    valid = list(valid) if valid is not None else [None] * len(ops)
    statics = tuple(v for o, v in zip(ops, values) if isinstance(o, S) and o.how == "static")
    bundle = tuple(bundle) if len(bundle) > 1 else ()
    if bundle and instr not in bundle:
        raise AssertionError(f"{instr} is not in its bundle {bundle}")
    k = kernel_for(bundle[0] if bundle else instr, ops, tuple(sorted(params.items())), statics, bundle)
    outs = written(instr, ops)
    args: list[Any] = []
    out_tensors: dict[int, Any] = {}
    for i, (o, v) in enumerate(zip(ops, values)):
        if isinstance(o, T):
            arr = np.ascontiguousarray(np.asarray(v, dtype=o.np).reshape(o.shape))
            args.append(pypto.Tensor(arr))
            if o.valid is None:
                vr, vc = valid[i] if valid[i] is not None else o.shape
                args += [int(vr), int(vc)]
            if i in outs:
                out_tensors[i] = pypto.zeros(o.shape, getattr(pypto, ref.LONG[o.np]))
                args.append(out_tensors[i])
        elif o.how == "arg":
            args.append(v)
        elif o.how == "gm":
            dt = ref.np_dtype(o.gm_dtype)
            args.append(pypto.Tensor(np.array([[v]], dtype=dt)))
    args += [int(m == instr) for m in bundle]
    k[blocks](*args)
    return Result({i: t.numpy() for i, t in out_tensors.items()})


# -- shapes a family's cases use ---------------------------------------------------------------

def c0(dtype: str) -> int:
    """Elements per 32-byte block: an ND row (a DN column) is a multiple of this."""
    return 32 // ref.np_dtype(dtype).itemsize


def regions(shape: tuple[int, int]) -> list[tuple[int, int]]:
    """Valid regions inside a capacity: the whole tile, a tail in both directions, one row, one
    column."""
    r, c = shape
    out = [(r, c), (max(1, r - 1), max(1, c - 3)), (1, c), (r, 1)]
    return list(dict.fromkeys(out))


__all__ = ["T", "S", "Result", "run", "kernel_for", "written", "c0", "regions"]
