"""Calls into compiled code without numba's Python wrappers: eager mode's calls of the
implementations (``entry``) and the launches of generated kernels (``Launcher``).

Calling a numba function from Python takes a compiled Python wrapper per argument types, a numba
compile of its own: eager mode's wrappers (trampolines) were 541 of a cold quick tier's compiles
(7 % of its compiling, 18 % in the two largest conformance files). Here the implementation is
compiled (or loaded from numba's cache) exactly as for a kernel (lib/xcall.py), and a
ten-instruction LLVM entry (entry.py) is JIT-linked per signature, with no numba typing or
lowering; a call packs its arguments as words and goes through ctypes, which releases the GIL
like a nogil numba call.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import struct
import threading
from typing import Any, Callable

import numpy as np
from numba import typeof
from numba._dispatcher import compute_fingerprint
from numba.core.compiler_lock import global_compiler_lock
from numba.core.typing.typeof import Purpose

from . import compile as C
from .entry import Unpackable, entry_module, packable, words as words_of
from .lib import xcall

_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
_ENTRIES: dict[tuple, "Direct | None"] = {}
_BY_SIGNATURE: dict[str, "Direct"] = {}      # xcall symbol -> its entry: one per signature
_LOCK = threading.RLock()


class Direct:
    """One implementation for one tuple of argument types, called with a list of arguments;
    returns False where the implementation raised or a value did not fit its word (call it
    through numba then: it raises the exception, or converts the value)."""
    __slots__ = ("fn", "words", "lib")

    def __init__(self, fn, words: Callable[[list], bytes], lib):
        self.fn, self.words, self.lib = fn, words, lib       # lib keeps the entry's code alive

    def __call__(self, args: list) -> bool:
        try:
            words = self.words(args)
        except struct.error:          # a value its type's word cannot hold: numba converts it
            return False
        return self.fn(words) == 0


def _make(disp, args: list, stats) -> Direct:
    argtypes = tuple(typeof(a, Purpose.argument) for a in args)
    if not all(map(packable, argtypes)):
        raise Unpackable("argument types")
    seen = {"n": len(disp.overloads), "hits": sum(disp.stats.cache_hits.values())}
    _, found = xcall._resolve(disp.typingctx, disp, argtypes)
    name, sig = xcall._register(disp, found.args)
    C.count_new_specialisations(disp, seen, stats)
    made = _BY_SIGNATURE.get(name)       # arguments of other Python types, the same signature
    if made is None:
        fnty = disp.targetctx.call_conv.get_function_type(sig.return_type, sig.args)
        words = words_of(sig.args, fnty)
        lib, addr = _link(disp.targetctx, fnty, name)
        made = _BY_SIGNATURE[name] = Direct(_ENTRY(addr), words, lib)
    return made


def entry(c, args: list, cache_dir: str, stats) -> Direct | None:
    """The direct call of ``c.fn`` for these arguments' types, made on first use; None where the
    arguments cannot be packed as words (the caller then goes through numba). The key is each
    argument's Python type and each array's numba fingerprint (dtype, rank, layout, writable):
    a scalar or a tuple element that its word's struct format cannot hold makes the call fail
    (Direct returns False), so the caller goes through numba for it."""
    kinds = tuple(map(type, args))
    try:
        key = (c.fn.module, c.fn.name, c.fn.source is not None, kinds,
               tuple([compute_fingerprint(args[i]) for i in _arrays(kinds)]))
    except (NotImplementedError, ValueError, TypeError):
        return None
    d = _ENTRIES.get(key, False)
    if d is not False:
        return d
    with _LOCK:
        d = _ENTRIES.get(key, False)
        if d is False:
            _, disp = C.resolve(c.fn, cache_dir)
            try:
                d = _make(disp, args, stats)
            except Unpackable:
                d = None
            except (ValueError, TypeError, NotImplementedError):
                return None               # a value numba cannot type (an int beyond 64 bits)
            _ENTRIES[key] = d
        return d


@functools.lru_cache(maxsize=None)
def _arrays(kinds: tuple) -> tuple[int, ...]:
    return tuple(i for i, k in enumerate(kinds) if k is not int and k is not float and k is not bool
                 and not issubclass(k, (np.generic, tuple)))


class Launcher:
    """A generated kernel compiled without numba's Python wrapper and launched through an entry,
    like a kernel linked from its native form (native.NativeKernel, which it becomes at its first
    call). numba's Python wrapper, which unboxes a dozen arrays, was a tenth of a small kernel's
    compile and, with its machine code, about a quarter. ``python_entry()`` compiles the kernel
    with one, only for what an entry cannot do (arguments of other types, an exception inside)."""

    def __init__(self, disp, python_entry: Callable[[], Callable]):
        self.disp, self.python_entry, self._counted = disp, python_entry, disp
        self._call: Callable | None = None
        self._lock = threading.Lock()

    @property
    def overloads(self) -> dict:
        """The specialisations of the function launches go to (counted in pypto.stats())."""
        return self._counted.overloads

    @property
    def stats(self):
        return self._counted.stats

    def bind(self, args) -> Callable[[], int] | None:
        """NativeKernel.bind, once the first call made the entry."""
        bind = getattr(self._call, "bind", None)
        return None if bind is None else bind(args)

    def __call__(self, *args) -> None:
        call = self._call
        if call is None:
            with self._lock:                 # a kernel whose blocks signal each other starts
                if self._call is None:       # on every thread at once
                    self._call = self._first(args)
                call = self._call
        call(*args)

    def _first(self, args) -> Callable:
        from . import native
        argtypes = tuple(typeof(a, Purpose.argument) for a in args)
        spec = [native._arg_spec(t) for t in argtypes]
        if None in spec:
            return self._python()
        name, sig = xcall._register(self.disp, argtypes)     # compiled, its symbol exported
        ctx = self.disp.targetctx
        fnty = ctx.call_conv.get_function_type(sig.return_type, sig.args)
        try:
            lib, addr = _link(ctx, fnty, name, native.where(spec))
        except Unpackable:
            return self._python()
        return native.NativeKernel(spec, lib, addr, self.python_entry)

    def _python(self) -> Callable:
        self._counted = self.python_entry()
        return self._counted


def _link(ctx, fnty, target: str, where: list[int] | None = None) -> tuple[Any, int]:
    """JIT-link an entry (entry.py) calling the exported symbol ``target``; (its library, its
    address)."""
    name = "pypto.entry." + hashlib.sha256(target.encode()).hexdigest()[:32]
    with global_compiler_lock:
        lib = ctx.codegen().create_library(name)
        lib.add_ir_module(entry_module(fnty, target, name, where))
        lib.finalize()
        return lib, lib.get_pointer_to_function(name)
