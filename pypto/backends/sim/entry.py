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


_MASK = (1 << 64) - 1
_ARRAY, _INT, _F64, _F32, _TUPLE = range(5)


def _kind(ty) -> int:
    from numba.core import types
    if isinstance(ty, types.Array):
        return _ARRAY
    if isinstance(ty, (types.Boolean, types.Integer)):
        return _INT
    if ty == types.float64:
        return _F64
    if ty == types.float32:
        return _F32
    if isinstance(ty, types.UniTuple) and isinstance(ty.dtype, (types.Integer, types.Boolean)):
        return _TUPLE
    raise Unpackable(f"argument type {ty}")


def _data(a: Any) -> int:
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))     # a quarter of a.ctypes.data
    except (TypeError, ValueError, BufferError):                  # read-only, empty, strided
        return a.ctypes.data


def words(argtypes, fnty: ir.FunctionType) -> Callable[[list], bytes]:
    """A function packing a call's Python arguments as the words of an entry made for numba
    types ``argtypes`` (``fnty`` checks that the flattening agrees with numba's, scalar by
    scalar). The words are bytes, which ctypes passes as a pointer to their buffer. The packing
    is one generated expression, a third of the time of a loop over the arguments' kinds."""
    n, parts = 0, []
    for k, t in enumerate(argtypes):
        kind, a = _kind(t), f"a[{k}]"
        if kind == _ARRAY:
            parts.append(f"0, 0, {a}.size, {a}.itemsize, data({a}), *{a}.shape, *{a}.strides")
            n += 5 + 2 * t.ndim
        elif kind == _TUPLE:
            parts.append(", ".join(f"int({a}[{e}]) & M" for e in range(t.count)))
            n += t.count
        else:
            parts.append({_INT: f"int({a}) & M", _F64: f"f64({a})", _F32: f"f32({a})"}[kind])
            n += 1
    if n != len(fnty.args) - 2:
        raise Unpackable(f"{n} words for {len(fnty.args) - 2} scalars")
    scope = {"pack": struct.Struct(f"<{n}Q").pack, "data": _data, "M": _MASK,
             "f64": lambda x: _F64_BITS(_F64_PACK(x))[0], "f32": lambda x: _F32_BITS(_F32_PACK(x))[0]}
    exec(f"def words(a):\n    return pack({', '.join(parts)})\n", scope)
    return scope["words"]


_F64_PACK, _F64_BITS = struct.Struct("<d").pack, struct.Struct("<Q").unpack
_F32_PACK, _F32_BITS = struct.Struct("<f").pack, struct.Struct("<I").unpack
