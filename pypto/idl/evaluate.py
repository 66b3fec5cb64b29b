"""The numpy reference of a checked operator.

Inputs are first rounded to their declared dtype (what a device tensor holds), then floats compute
in float64 and integers in int64. Integer ``/`` truncates toward zero, as C does (numpy's
floor_divide does not), and a zero divisor is an error. ``@`` of INT8 is exact and wraps to INT32.
``cast`` to an integer truncates toward zero and saturates (NaN gives 0); other conversions to an
integer dtype wrap (two's complement). Results are converted to each output's declared dtype.
UINT64 values from 2**63 up live in int64 as their two's-complement bits: + - * stay exact modulo
2**64, comparisons (max, min, relu) and / do not.
"""
from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from .. import dtypes as D
from ..errors import IdlError, IdlNameError, IdlShapeError, IdlTypeError
from . import ast as A
from .fmt import expr_text
from .parser import IDL_NAME


def _err(cls, op: A.Operator, loc: A.Loc, msg: str, rule: str, fix: str) -> IdlError:
    return cls(f"{op.name}: {msg}", file=loc.file, line=loc.line, column=loc.column,
               source=op.source, rule=rule, fix=fix)


def bind(op: A.Operator, shapes: dict[str, tuple]) -> dict[str, int]:
    """Symbol -> size from the shapes given for tensor fields (inputs and outputs); a symbol has
    one size everywhere and an integer dim is exact, else IdlShapeError naming the field."""
    sizes: dict[str, int] = {}
    first: dict[str, str] = {}
    rule = "a dimension symbol stands for one size in all of an operator's tensors; integer dims " \
           "are exact"
    for f in tuple(op.inputs) + tuple(op.outputs):
        if not isinstance(f, A.TensorField) or f.name not in shapes:
            continue
        shape = tuple(int(x) for x in shapes[f.name])
        if len(shape) != len(f.dims):
            raise _err(IdlShapeError, op, f.loc, f"{f.name} has shape {shape} but is declared "
                       f"[{', '.join(map(str, f.dims))}] ({len(f.dims)}-D)", rule,
                       f"pass a {len(f.dims)}-D array for {f.name}")
        for d, n in zip(f.dims, shape):
            if n < 1:
                raise _err(IdlShapeError, op, f.loc, f"{f.name} has shape {shape}: {d} is {n}",
                           "every dimension is at least 1", f"pass a non-empty {f.name}")
            if isinstance(d, int):
                if n != d:
                    raise _err(IdlShapeError, op, f.loc, f"{f.name} has shape {shape} but is "
                               f"declared [{', '.join(map(str, f.dims))}]: {n} is not {d}", rule,
                               f"pass {f.name} with that dimension {d}")
            elif d in sizes and sizes[d] != n:
                raise _err(IdlShapeError, op, f.loc, f"symbol {d} is {sizes[d]} in {first[d]} but "
                           f"{n} in {f.name}", rule, f"pass arrays whose {d} dimensions agree")
            elif d not in sizes:
                sizes[d], first[d] = n, f.name
    return sizes


def evaluate(op: A.Operator, values: dict[str, Any]) -> dict[str, np.ndarray]:
    """{output name: array of its declared dtype} for inputs ``values`` (arrays for tensors,
    numbers for scalars; a missing scalar takes its default)."""
    if not op.env:
        from .check import check
        check(op)
    unknown = sorted(set(values) - {f.name for f in op.inputs})
    if unknown:
        raise _err(IdlNameError, op, op.loc, f"{', '.join(unknown)} is not an input",
                   f"the inputs are {', '.join(f.name for f in op.inputs) or 'none'}",
                   "pass values only for the inputs")
    env: dict[str, Any] = {}
    shapes: dict[str, tuple] = {}
    for f in op.inputs:
        if isinstance(f, A.ScalarField):
            env[f.name] = _scalar(op, f, values.get(f.name, f.default))
        elif f.name not in values:
            raise _err(IdlError, op, f.loc, f"tensor input {f.name} is missing",
                       "every tensor input is given", f"pass an array for {f.name}")
        else:
            arr = _array(op, f, values[f.name])
            shapes[f.name] = arr.shape
            env[f.name] = arr
    bind(op, shapes)
    with np.errstate(all="ignore"):
        for s in op.body:
            env[s.target] = _eval(op, s.value, env)
        return {f.name: to_dtype(env[f.name], f.dtype) for f in op.outputs}


def _wide(dt: D.DType) -> type:
    return np.int64 if dt.is_int else np.float64


def _scalar(op: A.Operator, f: A.ScalarField, v: Any) -> np.generic:
    """A scalar input as its dtype holds it (integers wrap), as an int64 / float64 numpy scalar."""
    if v is None:
        raise _err(IdlError, op, f.loc, f"scalar {f.name} has no value and no default",
                   "a Scalar without a default is given a value", f"pass a number for {f.name}")
    if isinstance(v, np.ndarray) and v.shape == ():
        v = v.item()
    kind = "an integer" if f.dtype.is_int else "a number"
    try:
        if isinstance(v, bool) or not isinstance(v, Real) or \
                (f.dtype.is_int and not isinstance(v, Integral)):
            raise TypeError(v)
        if f.dtype.is_int:
            return np.uint64(int(v) % (1 << 64)).astype(f.dtype.np).astype(np.int64)
        return np.float64(np.float64(float(v)).astype(f.dtype.np))
    except (TypeError, ValueError, OverflowError):
        raise _err(IdlTypeError, op, f.loc, f"scalar {f.name} is given {v!r}",
                   f"{f.name} is {IDL_NAME[f.dtype]}: its value is {kind}", f"pass {kind}") from None


def _array(op: A.Operator, f: A.TensorField, v: Any) -> np.ndarray:
    """The input as its declared dtype holds it, widened to float64 / int64."""
    try:
        arr = np.asarray(v)
        if arr.dtype.kind not in "biuf" and D.from_numpy(arr.dtype) is None:    # bf16, fp8 are "V"
            raise TypeError(arr.dtype)
        with np.errstate(all="ignore"):
            return arr.astype(f.dtype.np).astype(_wide(f.dtype))
    except (TypeError, ValueError, OverflowError):
        raise _err(IdlTypeError, op, f.loc, f"input {f.name} is not numeric "
                   f"({type(v).__name__})", f"{f.name} is a {IDL_NAME[f.dtype]} tensor",
                   "pass a numpy array of numbers") from None


def to_dtype(x: Any, dt: D.DType) -> np.ndarray:
    """A float64/int64 value as ``dt`` (floats round, integers wrap)."""
    x = np.asarray(x)
    if dt.is_int:
        return x.astype(np.int64).astype(dt.np)
    return x.astype(np.float64).astype(dt.np)


def _cast(x: Any, to: D.DType) -> np.ndarray:
    """cast(x, to), widened again: float -> integer truncates and saturates."""
    x = np.asarray(x)
    if to.is_int and x.dtype.kind == "f":
        info = np.iinfo(to.np)
        x = np.clip(np.nan_to_num(np.trunc(x), nan=0.0), float(info.min), float(info.max))
        return x.astype(to.np).astype(np.int64)
    return to_dtype(x, to).astype(_wide(to))


def _divide(op: A.Operator, e: A.BinOp, a: Any, b: Any) -> Any:
    if not e.dtype.is_int:
        return np.asarray(a, np.float64) / b
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    if np.any(b == 0):
        raise _err(IdlError, op, e.loc, f"integer division by zero in {expr_text(e)}",
                   "integer / truncates toward zero and needs non-zero divisors",
                   "make sure the divisor has no zeros")
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


_UNARY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x),
          "abs": np.abs, "relu": lambda x: np.maximum(x, 0), "recip": lambda x: 1.0 / x,
          "neg": np.negative}
_REDUCE = {"sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean}


def _eval(op: A.Operator, e: A.Expr, env: dict) -> Any:
    if isinstance(e, A.Name):
        return env[e.id]
    if isinstance(e, A.Const):
        if isinstance(e.value, float):
            return np.float64(e.value)
        return np.uint64(int(e.value) % (1 << 64)).astype(np.int64)
    if isinstance(e, A.Unary):
        return np.negative(_eval(op, e.operand, env))
    if isinstance(e, A.BinOp):
        a, b = _eval(op, e.lhs, env), _eval(op, e.rhs, env)
        if e.op == "@":
            r = np.asarray(a) @ np.asarray(b)
            return to_dtype(r, D.int32).astype(np.int64) if e.dtype.is_int else r
        if e.op == "/":
            return _divide(op, e, a, b)
        return {"+": np.add, "-": np.subtract, "*": np.multiply}[e.op](a, b)
    x = _eval(op, e.args[0], env)
    if e.func == "cast":
        return _cast(x, e.to)
    if e.func in ("max", "min"):
        return (np.maximum if e.func == "max" else np.minimum)(x, _eval(op, e.args[1], env))
    if e.func in _UNARY:
        return _UNARY[e.func](np.asarray(x, _wide(e.dtype)))
    axis = 1 if e.func.startswith("row") else 0
    return _REDUCE[e.func[3:]](np.asarray(x), axis=axis, keepdims=True)
