"""Call a separately compiled numba function without letting LLVM inline it into the caller.

numba links a copy of every callee's code into each caller and optimises it again there: a
generated kernel paid for its implementations on every compile. ``xcall(f)`` is an intrinsic that
calls ``f``'s compiled entry point through an external symbol instead: each implementation is
compiled once per argument types (and cached on disk as usual). Together with cutting long
statement lists into chunk functions (codegen.py; numba's own passes grow faster than linearly
with a function's size), a kernel's compile time grows linearly with its length.

Rule: a cached function that contains an xcall must itself only be called through xcall (never
linked into another cached function), or its symbol hooks would be lost from the caller's cache
entry. Generated kernels, chunks, eager trampolines and the units' loops all follow it.

A kernel cached on disk records which symbols it needs; numba runs the recorded hook before
loading it in a new process, which compiles (or loads) the callee and defines the symbol again.
"""
from __future__ import annotations

import hashlib
import importlib
import threading

import llvmlite.binding as llvm
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.errors import TypingError
from numba.extending import intrinsic
from numba.np.arrayobj import make_array

from ...errcodes import SITE

_DONE: dict = {}
_LOCK = threading.RLock()


def _register(disp, argtypes) -> tuple[str, object]:
    """Compile (or load) ``disp`` for ``argtypes`` and export its entry point under a stable name."""
    key = (disp.py_func.__module__, disp.py_func.__qualname__, tuple(argtypes))
    with _LOCK:
        if key not in _DONE:
            cres = disp.overloads.get(key[2])
            if cres is None:
                disp.compile(key[2])
                cres = disp.overloads[key[2]]
            name = "pypto.xcall." + hashlib.sha256(repr(key).encode()).hexdigest()[:32]
            llvm.add_symbol(name, cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name))
            _DONE[key] = (name, cres.signature)
        return _DONE[key]


class _Reload:
    """Pickled into a cached caller; numba calls it before loading the caller's object code in a
    new process, so the external symbol exists again."""

    def __init__(self, module: str, qualname: str, argtypes):
        self.key = (module, qualname, tuple(argtypes))

    def __call__(self) -> None:
        obj = importlib.import_module(self.key[0])
        for part in self.key[1].split("."):
            obj = getattr(obj, part)
        _register(obj, self.key[2])

    def __eq__(self, other) -> bool:
        return isinstance(other, _Reload) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


def _resolve(typingctx, disp, args):
    fnty = typingctx.resolve_value_type(disp)
    found = typingctx.resolve_function_type(fnty, args, {})
    if found is None:
        raise TypingError(f"{disp.py_func.__qualname__} cannot take {args}")
    return fnty, found


def _external_call(context, builder, disp, name, sig, args, got):
    """Call the exported entry point ``name`` of ``disp`` (and have a cached caller re-export it)."""
    vals = [context.cast(builder, v, a, t) for v, a, t in zip(got, args, sig.args)]
    fnty = context.call_conv.get_function_type(sig.return_type, sig.args)
    fn = cgutils.get_or_insert_function(builder.module, fnty, name)
    status, res = context.call_conv.call_function(builder, fn, sig.return_type, sig.args, vals)
    with cgutils.if_unlikely(builder, status.is_error):
        context.call_conv.return_status_propagate(builder, status)
    context.active_code_library._reload_init.add(
        _Reload(disp.py_func.__module__, disp.py_func.__qualname__, sig.args))
    return res


def xcall(disp):
    """An intrinsic calling the njit dispatcher ``disp`` through an external symbol. (A callee
    marked ``plain_calls`` gets one specialisation whatever constants its callers pass.)"""
    @intrinsic(prefer_literal=True)
    def call(typingctx, *args):
        _, found = _resolve(typingctx, disp, args)
        name, sig = _register(disp, found.args)

        def codegen(context, builder, _sig, llargs):
            got = cgutils.unpack_tuple(builder, llargs[0], len(args))
            return _external_call(context, builder, disp, name, sig, args, got)
        return sig.return_type(types.StarArgTuple.from_types(args)), codegen
    return call


def guarded(disp):
    """A generated kernel's call of an implementation: ``call(site, *args)``, whose last argument
    is the error record. The call is skipped while err[0] is set, and a fault it raises records
    ``site`` in err[7] (a negative site records nothing). The test and the store are emitted as
    LLVM IR, so a kernel is straight-line code for numba: typing and lowering a branch and a
    return after every call cost more than the call itself. The callee is called like ``xcall``:
    never linked into the kernel and optimised again there (measured: linking made a short
    kernel's compile 40 % slower and its launches no faster)."""
    @intrinsic(prefer_literal=False)     # flags reach the callee as bool, not Literal[bool]:
    def call(typingctx, site, *args):    # one specialisation serves both values
        _, found = _resolve(typingctx, disp, args)
        name, sig = _register(disp, found.args)
        errty = args[-1]
        if not (isinstance(errty, types.Array) and errty.dtype == types.int64 and errty.ndim == 1):
            raise TypingError(f"{disp.py_func.__qualname__}: the last argument must be the error record")

        def codegen(context, builder, _sig, llargs):
            got = cgutils.unpack_tuple(builder, llargs[1], len(args))
            ptr = make_array(errty)(context, builder, got[-1]).data
            zero = ir.Constant(ptr.type.pointee, 0)
            with builder.if_then(builder.icmp_signed("==", builder.load(ptr), zero), likely=True):
                _external_call(context, builder, disp, name, sig, args, got)
                where = context.cast(builder, llargs[0], site, types.int64)
                failed = builder.icmp_signed("!=", builder.load(ptr), zero)
                recorded = builder.and_(failed, builder.icmp_signed(">=", where, zero))
                with builder.if_then(recorded, likely=False):
                    builder.store(where, builder.gep(ptr, [ir.Constant(ir.IntType(64), SITE)]))
            return context.get_dummy_value()
        return types.none(site, types.StarArgTuple.from_types(args)), codegen
    return call
