"""Public entry points: a call Python cannot bind to the signature raises ArgumentError.

The error is a PtoError and a TypeError at once, so `except TypeError` keeps working and the
message names the signature. Only binding failures are translated (the TypeError was raised
at the call itself, not inside the callee): the successful path costs one try block.
"""
from __future__ import annotations

import functools
import inspect
import os
import sys
from typing import Any, Callable, Iterable

from .errors import ArgumentError, PtoError


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """warnings.warn's stacklevel that points at the caller's first frame outside pypto (the
    user's line), however many pypto frames (guards included) lie between."""
    level, f = 1, sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE):
        level, f = level + 1, f.f_back
    return level


def _usage(fn: Callable) -> str:
    """How to call fn: its public name and signature, without self."""
    name = fn.__qualname__.removesuffix(".__init__")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return f"{name}(...)"
    params = list(sig.parameters.values())
    if params and params[0].name == "self":
        sig = sig.replace(parameters=params[1:])
    return f"{name}{sig}"


def guard(fn: Callable) -> Callable:
    """fn, with a call that does not fit its signature raising ArgumentError."""
    if getattr(fn, "__pypto_guarded__", False):
        return fn

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            tb = e.__traceback__
            if isinstance(e, PtoError) or tb is None or tb.tb_next is not None:
                raise                              # raised inside fn: not a binding failure
            raise ArgumentError(str(e), rule="a call passes the arguments its signature names",
                                fix=f"call it as {_usage(fn)}") from None

    call.__pypto_guarded__ = True
    return call


def guard_class(cls: type) -> type:
    """cls with its constructor and public methods (and __call__ / __getitem__) guarded."""
    for name, member in list(vars(cls).items()):
        if inspect.isfunction(member) and (not name.startswith("_")
                                           or name in ("__init__", "__call__", "__getitem__")):
            setattr(cls, name, guard(member))
    return cls


def guard_namespace(namespace: dict[str, Any], names: Iterable[str]) -> None:
    """Guard the public functions a module exports (its own, not re-exported ones), in place."""
    for name in names:
        obj = namespace.get(name)
        if inspect.isfunction(obj) and obj.__module__.startswith("pypto"):
            namespace[name] = guard(obj)
