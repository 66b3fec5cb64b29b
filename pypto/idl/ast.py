"""The IDL's syntax tree. Expression nodes carry ``dtype`` and ``shape``, which the checker
(check.py) fills in: a shape is a tuple of dims (a symbol str or an int), () for a scalar."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from ..dtypes import DType


@dataclass(frozen=True)
class Loc:
    """Where a node starts in its file."""
    file: str
    line: int      # 1-based
    column: int    # 1-based


@dataclass(eq=False)
class Name:
    """A use of an input, a temporary or an (already assigned) output."""
    id: str
    loc: Loc
    dtype: DType | None = None
    shape: tuple | None = None


@dataclass(eq=False)
class Const:
    """A literal (never negative from the parser: ``-3`` is Unary("-", Const(3)))."""
    value: int | float
    loc: Loc
    dtype: DType | None = None
    shape: tuple | None = None


@dataclass(eq=False)
class Unary:
    """``-operand``; loc is the minus sign."""
    op: str
    operand: Expr
    loc: Loc
    dtype: DType | None = None
    shape: tuple | None = None


@dataclass(eq=False)
class BinOp:
    """``lhs op rhs`` with op one of + - * / @; loc is the operator sign."""
    op: str
    lhs: Expr
    rhs: Expr
    loc: Loc
    dtype: DType | None = None
    shape: tuple | None = None


@dataclass(eq=False)
class Call:
    """``func(args)``; for cast(x, T) args is (x,) and ``to`` is T. loc is the function name."""
    func: str
    args: tuple
    loc: Loc
    to: DType | None = None
    dtype: DType | None = None
    shape: tuple | None = None


Expr = Union[Name, Const, Unary, BinOp, Call]


@dataclass
class TensorField:
    """``Tensor<name, DTYPE [dims]>``; loc is the name."""
    name: str
    dtype: DType
    dims: tuple              # each a str symbol or a positive int
    loc: Loc


@dataclass
class ScalarField:
    """``Scalar<name, DTYPE> [= default]`` (inputs only); loc is the name."""
    name: str
    dtype: DType
    default: int | float | None
    loc: Loc


@dataclass
class Assign:
    """``target = value;``; loc is the target."""
    target: str
    value: Expr
    loc: Loc


@dataclass
class Operator:
    """One ``operator Name { ... }`` block; loc is its name."""
    name: str
    inputs: tuple
    outputs: tuple
    body: tuple
    loc: Loc
    package: str | None = None
    env: dict = field(default_factory=dict)     # name -> (dtype, shape), after checking
    # the file's text, so errors found later (evaluation) can still show the line
    source: str | None = field(default=None, repr=False, compare=False)

    def field(self, name: str) -> TensorField | ScalarField | None:
        """The input or output field called ``name`` (None for temporaries and unknowns)."""
        return next((f for f in tuple(self.inputs) + tuple(self.outputs) if f.name == name), None)


@dataclass
class Module:
    """A parsed file: its package and operators (each checked)."""
    package: str | None
    operators: tuple
    file: str


def children(e: Expr) -> tuple:
    """The direct sub-expressions of e."""
    if isinstance(e, Unary):
        return (e.operand,)
    if isinstance(e, BinOp):
        return (e.lhs, e.rhs)
    if isinstance(e, Call):
        return tuple(e.args)
    return ()


def walk(e: Expr) -> list:
    """Every expression node under e (e first)."""
    out = [e]
    for k in children(e):
        out += walk(k)
    return out
