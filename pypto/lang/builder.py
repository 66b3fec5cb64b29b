"""The active builder (``ir.executor.Builder``) of the kernel being traced or run eagerly, held
in a ContextVar. The DSL never patches modules or user globals."""
from __future__ import annotations

import contextlib
import functools
import linecache
import contextvars
import os
import sys
from ..errors import DslContextError
from ..ir.executor import Builder
from ..ir.nodes import Site

_active: contextvars.ContextVar["Builder | None"] = contextvars.ContextVar("pypto_builder", default=None)

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def current(what: str = "this function") -> Builder:
    b = _active.get()
    if b is None:
        raise DslContextError(f"{what} can only be called inside an @pypto.kernel function",
                              rule="pypto.pto.* builds kernel code; it has no meaning on the host",
                              fix="put the call in a function decorated with @pypto.kernel and launch it")
    return b


def active() -> Builder | None:
    return _active.get()


@contextlib.contextmanager
def activate(builder: Builder):
    token = _active.set(builder)
    try:
        yield builder
    finally:
        _active.reset(token)


@functools.lru_cache(maxsize=None)
def _outside_pypto(filename: str) -> bool:
    return not os.path.abspath(filename).startswith(_PKG_DIR + os.sep)


@functools.lru_cache(maxsize=4096)
def _site(filename: str, lineno: int, function: str) -> Site:
    line = linecache.getline(filename, lineno)
    return Site(os.path.basename(filename), lineno, line, function)


def user_site() -> Site | None:
    """The innermost stack frame outside the pypto package: the user's kernel line."""
    f = sys._getframe(1)
    while f is not None:
        code = f.f_code
        if _outside_pypto(code.co_filename):
            return _site(code.co_filename, f.f_lineno, code.co_name)
        f = f.f_back
    return None
