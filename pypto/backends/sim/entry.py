"""A one-pointer entry into a numba-compiled function, and the words it reads.

numba's calling convention passes a return slot, an exception slot, then every argument's data
model flattened into scalars (an array is its meminfo, parent, size, itemsize, data pointer,
shape and strides). ``entry_module`` builds, in LLVM IR and without numba's typing or lowering,
a function ``int32 entry(int64 *words)`` that unpacks one word per scalar and calls the target;
``words`` makes the function that turns Python arguments into those words. native.py keeps a kernel's entry as object
code; eager mode (direct.py) JIT-links one per implementation and argument types.
"""
from __future__ import annotations

import ctypes
import struct
from typing import Any, Callable

from llvmlite import ir


class Unpackable(Exception):
    """An argument type the words cannot carry; the caller goes through numba instead."""


def entry_module(fnty: ir.FunctionType, target: str, entry: str,
                 where: list[int] | None = None) -> ir.Module:
    """IR of ``entry(words)`` calling ``target`` (of numba's function type ``fnty``); scalar k of
    the flattened arguments is word ``where[k]`` (default: word k)."""
    mod = ir.Module(name="pypto_entry")
    kern = ir.Function(mod, fnty, name=target)
    i64 = ir.IntType(64)
    fn = ir.Function(mod, ir.FunctionType(ir.IntType(32), [i64.as_pointer()]), name=entry)
    b = ir.IRBuilder(fn.append_basic_block())
    ret, exc = b.alloca(fnty.args[0].pointee), b.alloca(fnty.args[1].pointee)
    b.store(ir.Constant(fnty.args[0].pointee, None), ret)
    b.store(ir.Constant(fnty.args[1].pointee, None), exc)
    vals = []
    for i, ty in enumerate(fnty.args[2:]):
        w = b.load(b.gep(fn.args[0], [ir.Constant(i64, i if where is None else where[i])]))
        if isinstance(ty, ir.PointerType):
            vals.append(b.inttoptr(w, ty))
        elif isinstance(ty, ir.IntType):
            vals.append(w if ty.width == 64 else b.trunc(w, ty))
        elif isinstance(ty, ir.DoubleType):
            vals.append(b.bitcast(w, ty))
        elif isinstance(ty, ir.FloatType):
            vals.append(b.bitcast(b.trunc(w, ir.IntType(32)), ty))
        else:
            raise Unpackable(f"argument type {ty}")
    b.ret(b.call(kern, [ret, exc] + vals))
    return mod


def _format(ty) -> str:
    """The struct format of a scalar argument's word: the value itself, struct converting it
    (a narrower int is truncated by the entry, a float32 is its bits in the low half)."""
    from numba.core import types
    if isinstance(ty, types.Boolean):
        return "?7x"
    if isinstance(ty, types.Integer):
        return "Q" if not ty.signed else "q"
    if ty == types.float64:
        return "d"
    if ty == types.float32:
        return "f4x"
    raise Unpackable(f"argument type {ty}")


def packable(ty) -> bool:
    """Whether ``words`` has a word layout for an argument of numba type ``ty``."""
    from numba.core import types
    if isinstance(ty, types.Array):
        return True
    try:
        _format(ty.dtype if isinstance(ty, types.UniTuple) else ty)
    except Unpackable:
        return False
    return True


def _data(a: Any) -> int:
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))     # a quarter of a.ctypes.data
    except (TypeError, ValueError, BufferError):                  # read-only, empty, strided
        return a.ctypes.data


def words(argtypes, fnty: ir.FunctionType) -> Callable[[list], bytes]:
    """A function packing a call's Python arguments as the words of an entry made for numba
    types ``argtypes`` (``fnty`` checks that the flattening agrees with numba's, scalar by
    scalar). The words are bytes, which ctypes passes as a pointer to their buffer. The packing
    is one generated call of a struct made for these types, a third of the time of a loop over
    the arguments converting each."""
    from numba.core import types
    n, parts, fmt = 0, [], "<"
    for k, t in enumerate(argtypes):
        a = f"a[{k}]"
        if isinstance(t, types.Array):
            parts.append(f"0, 0, {a}.size, {a}.itemsize, data({a}), *{a}.shape, *{a}.strides")
            fmt += "q" * (5 + 2 * t.ndim)
            n += 5 + 2 * t.ndim
        elif isinstance(t, types.UniTuple):
            parts.append(f"*{a}")
            fmt += _format(t.dtype) * t.count
            n += t.count
        else:
            parts.append(a)
            fmt += _format(t)
            n += 1
    if n != len(fnty.args) - 2:
        raise Unpackable(f"{n} words for {len(fnty.args) - 2} scalars")
    scope = {"pack": struct.Struct(fmt).pack, "data": _data}
    exec(f"def words(a):\n    return pack({', '.join(parts)})\n", scope)
    return scope["words"]
