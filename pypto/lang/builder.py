"""The active builder of the kernel being traced or run eagerly, held in a ContextVar.

Two builders implement the same small contract: the tracer (records IR) and the simulator's
eager executor (runs each node at once). The DSL never patches modules or user globals.
"""
from __future__ import annotations

import contextlib
import functools
import linecache
import contextvars
import os
import sys
from typing import Any, Iterator

from ..errors import DslContextError
from ..ir.nodes import ExprLike, Site, Stmt, TileVar

_active: contextvars.ContextVar["Builder | None"] = contextvars.ContextVar("pypto_builder", default=None)

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Builder:
    """What the DSL needs from whoever receives its instructions."""

    soc: Any          # SocProfile
    eager: bool = False

    def supports(self, name: str, params: dict | None = None) -> bool:
        """Does the target have semantics for this instruction (with these mode parameters)?"""
        raise NotImplementedError

    def emit(self, stmt: Stmt) -> None:
        raise NotImplementedError

    def range(self, start: ExprLike, stop: ExprLike, step: ExprLike) -> Iterator[ExprLike]:
        raise NotImplementedError

    def block_idx(self) -> ExprLike:
        raise NotImplementedError

    def block_num(self) -> ExprLike:
        raise NotImplementedError

    def new_tile(self, tile: TileVar, site: Site | None = None) -> None:
        raise NotImplementedError

    def dynamic_valid(self, tile: TileVar) -> tuple[ExprLike, ExprLike]:
        """The initial valid region of a tile declared with a dynamic valid region."""
        raise NotImplementedError


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
