"""Names, dtypes and shapes of an operator: fills every expression node's dtype and shape.

Shapes are symbolic: dims are symbols or ints, and a size-1 dim broadcasts as in numpy, so
``x - rowmax(x)`` is [M, N] - [M, 1] -> [M, N]. A scalar-valued operand (a constant, a Scalar
input, or an expression of those) takes the dtype of the tensor it meets, except that a float one
never meets an integer tensor (it would be truncated silently); two constants give FLOAT32 if
either is a float, else INT32. ``@`` of FLOAT16/BFLOAT16/FLOAT32 gives FLOAT32 and of
INT8 gives INT32, as the cube accumulates. Each temporary and output is assigned once; outputs get
exactly their declared dtype and dims. Checking is idempotent (it only fills dtype/shape/env).
"""
from __future__ import annotations

from .. import dtypes as D
from ..errors import IdlFunctionError, IdlNameError, IdlShapeError, IdlTypeError
from . import ast as A
from .fmt import expr_text
from .parser import DTYPES, IDL_NAME

UNARY = ("exp", "log", "sqrt", "rsqrt", "abs", "relu", "recip", "neg")
BINARY = ("max", "min")
REDUCTIONS = ("rowsum", "rowmax", "rowmin", "rowmean", "colsum", "colmax", "colmin", "colmean")
FUNCTIONS = UNARY + BINARY + REDUCTIONS + ("cast",)
FLOAT_ONLY = frozenset({"exp", "log", "sqrt", "rsqrt", "recip", "rowmean", "colmean"})
MATMUL = {D.float16: D.float32, D.bfloat16: D.float32, D.float32: D.float32, D.int8: D.int32}
_FLOATS = "FLOAT16, BFLOAT16, FLOAT32"


def _n(dt: D.DType) -> str:
    return IDL_NAME.get(dt, dt.name)


def _s(shape: tuple) -> str:
    return "a scalar" if shape == () else "[" + ", ".join(str(d) for d in shape) + "]"


def broadcast(sa: tuple, sb: tuple) -> tuple | None:
    """numpy's broadcast of two symbolic shapes (a dim of 1 stretches), None if they clash."""
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
    out = []
    for x, y in zip(pa, pb):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


class _Checker:
    def __init__(self, op: A.Operator, source: str | None):
        self.op, self.source = op, source
        self.env: dict[str, tuple] = {}        # name -> (dtype, shape)
        self.literal: set = set()              # nodes that are constant expressions
        self.literal_names: set[str] = set()   # temporaries holding one

    def err(self, cls, loc: A.Loc, msg: str, rule: str, fix: str):
        return cls(msg, file=loc.file, line=loc.line, column=loc.column, source=self.source,
                   rule=rule, fix=fix)

    # -- fields ---------------------------------------------------------------------------------
    def fields(self) -> None:
        seen: dict[str, A.Loc] = {}
        for f in tuple(self.op.inputs) + tuple(self.op.outputs):
            if f.name in seen:
                raise self.err(IdlNameError, f.loc, f"{f.name} is declared twice (first at line "
                               f"{seen[f.name].line})", "input and output names are unique in an "
                               "operator", "rename one of them")
            seen[f.name] = f.loc
            if isinstance(f, A.ScalarField) and f.default is not None:
                self.default(f)
        for f in self.op.inputs:
            self.env[f.name] = (f.dtype, () if isinstance(f, A.ScalarField) else tuple(f.dims))

    def default(self, f: A.ScalarField) -> None:
        """An integer Scalar's default is an integer its dtype holds."""
        if not f.dtype.is_int:
            return
        lo, hi = (-(1 << (f.dtype.bits - 1)), (1 << (f.dtype.bits - 1)) - 1) if f.dtype.is_signed \
            else (0, (1 << f.dtype.bits) - 1)
        if not isinstance(f.default, int) or not lo <= f.default <= hi:
            raise self.err(IdlTypeError, f.loc, f"{f.name} is {_n(f.dtype)} but its default is "
                           f"{f.default!r}", f"an {_n(f.dtype)} default is an integer in "
                           f"[{lo}, {hi}]", "change the default or the dtype")

    # -- expressions ----------------------------------------------------------------------------
    def expr(self, e) -> None:
        if isinstance(e, A.Name):
            if e.id not in self.env:
                outputs = {f.name for f in self.op.outputs}
                why = f"output {e.id} is not assigned yet" if e.id in outputs else \
                    f"{e.id} is not defined"
                known = ", ".join(self.env) or "none"
                raise self.err(IdlNameError, e.loc, why, "a name is an input, or a temporary or "
                               f"output assigned before this use (defined here: {known})",
                               "assign it first, or declare it as an input")
            e.dtype, e.shape = self.env[e.id]
            if e.id in self.literal_names:
                self.literal.add(e)
        elif isinstance(e, A.Const):
            e.dtype, e.shape = (D.int32 if isinstance(e.value, int) else D.float32), ()
            self.literal.add(e)
        elif isinstance(e, A.Unary):
            self.expr(e.operand)
            e.dtype, e.shape = e.operand.dtype, e.operand.shape
            if e.operand in self.literal:
                self.literal.add(e)
        elif isinstance(e, A.BinOp):
            self.expr(e.lhs)
            self.expr(e.rhs)
            if e.op == "@":
                self.matmul(e)
            else:
                self.elementwise(e, e.lhs, e.rhs, e.op)
        elif isinstance(e, A.Call):
            self.call(e)
        else:
            raise TypeError(f"not an IDL expression: {e!r}")

    def elementwise(self, e, a, b, op: str) -> None:
        """dtype and shape of a binary elementwise operation (+ - * / max min)."""
        shape = broadcast(a.shape, b.shape)
        if shape is None:
            raise self.err(IdlShapeError, e.loc, f"{op}: shapes {_s(a.shape)} and {_s(b.shape)} do "
                           "not broadcast", "operands broadcast as in numpy: dims are equal, or "
                           "one of them is 1 (aligned from the right)",
                           "reduce one side (rowsum, colmax, ...) or check the declared dims")
        la, lb = a in self.literal, b in self.literal
        if la and lb:
            e.dtype = D.float32 if a.dtype.is_float or b.dtype.is_float else D.int32
            self.literal.add(e)
        elif (a.shape == ()) == (b.shape == ()) and not (la or lb):
            if a.dtype is not b.dtype:          # two tensors, or two typed scalars
                raise self.err(IdlTypeError, e.loc, f"{op} of {_n(a.dtype)} and {_n(b.dtype)}",
                               f"both operands of {op} have one dtype (a constant or Scalar input "
                               "takes the tensor's)", f"cast one side: cast({expr_text(b)}, {_n(a.dtype)})")
            e.dtype = a.dtype
        else:                                   # a loose scalar meets a tensor (or typed scalar)
            loose, fixed = (a, b) if (la or (a.shape == () and b.shape != ())) else (b, a)
            if loose.dtype.is_float and fixed.dtype.is_int:
                raise self.err(IdlTypeError, loose.loc, f"{op}: the float {expr_text(loose)} meets "
                               f"{_n(fixed.dtype)} {expr_text(fixed)}", "a float constant or "
                               "Scalar does not combine with an integer tensor",
                               f"use an integer constant, or cast the tensor: "
                               f"cast({expr_text(fixed)}, FLOAT32)")
            e.dtype = fixed.dtype
        e.shape = shape

    def matmul(self, e: A.BinOp) -> None:
        a, b = e.lhs, e.rhs
        for x in (a, b):
            if x.dtype not in MATMUL:
                raise self.err(IdlTypeError, e.loc, f"@ of {_n(x.dtype)} ({expr_text(x)})",
                               f"@ multiplies {_FLOATS} (giving FLOAT32) or INT8 (giving INT32)",
                               f"cast the operands, e.g. cast({expr_text(x)}, FLOAT16)")
        if a.dtype is not b.dtype:
            raise self.err(IdlTypeError, e.loc, f"@ of {_n(a.dtype)} and {_n(b.dtype)}",
                           "both operands of @ have one dtype", f"cast one side to {_n(a.dtype)}")
        for x in (a, b):
            if len(x.shape) != 2:
                raise self.err(IdlShapeError, e.loc, f"@ of {_s(x.shape)} ({expr_text(x)})",
                               "@ multiplies 2-D tensors: [M, K] @ [K, N]", "use 2-D tensors")
        if a.shape[1] != b.shape[0]:
            raise self.err(IdlShapeError, e.loc, f"@ of {_s(a.shape)} and {_s(b.shape)}: the inner "
                           f"dims {a.shape[1]} and {b.shape[0]} differ", "[M, K] @ [K, N]: the "
                           "left's columns are the right's rows",
                           "declare both with the same dimension symbol")
        e.dtype, e.shape = MATMUL[a.dtype], (a.shape[0], b.shape[1])

    def call(self, e: A.Call) -> None:
        f = e.func
        if f not in FUNCTIONS:
            raise self.err(IdlFunctionError, e.loc, f"unknown function {f}()",
                           f"the functions are {', '.join(FUNCTIONS)}", "use one of them")
        if f == "cast":
            self.cast(e)
            return
        want = 2 if f in BINARY else 1
        if len(e.args) != want:
            form = f"{f}(x, y)" if want == 2 else f"{f}(x)"
            raise self.err(IdlFunctionError, e.loc, f"{f}() takes {want} argument"
                           f"{'s' if want > 1 else ''}, got {len(e.args)}", f"it is called {form}",
                           f"pass {want} argument{'s' if want > 1 else ''}")
        for a in e.args:
            self.expr(a)
        x = e.args[0]
        if f in BINARY:
            self.elementwise(e, x, e.args[1], f)
            return
        if f in FLOAT_ONLY and not x.dtype.is_float:
            raise self.err(IdlTypeError, e.loc, f"{f}() of {_n(x.dtype)}", f"{f} takes {_FLOATS}",
                           f"cast first: {f}(cast({expr_text(x)}, FLOAT32))")
        e.dtype = x.dtype
        if f in UNARY:
            e.shape = x.shape
            if x in self.literal:
                self.literal.add(e)
            return
        if len(x.shape) != 2:
            raise self.err(IdlShapeError, e.loc, f"{f}() of {_s(x.shape)}",
                           f"{f} reduces a 2-D tensor ([M, N] -> "
                           f"{'[M, 1]' if f.startswith('row') else '[1, N]'})", "pass a 2-D tensor")
        e.shape = (x.shape[0], 1) if f.startswith("row") else (1, x.shape[1])

    def cast(self, e: A.Call) -> None:
        if e.to is None and len(e.args) == 2:
            raise self.err(IdlTypeError, e.args[1].loc, "cast()'s second argument is not a dtype",
                           f"cast(x, DTYPE) with DTYPE one of {', '.join(DTYPES)}",
                           "write e.g. cast(x, FLOAT32)")
        if e.to is None or len(e.args) != 1:
            raise self.err(IdlFunctionError, e.loc, f"cast() takes 2 arguments, got "
                           f"{len(e.args) + (e.to is not None)}", "it is called cast(x, DTYPE)",
                           "pass a value and a dtype name")
        self.expr(e.args[0])
        e.dtype, e.shape = e.to, e.args[0].shape

    # -- statements -----------------------------------------------------------------------------
    def body(self) -> None:
        outputs = {f.name: f for f in self.op.outputs}
        inputs = {f.name for f in self.op.inputs}
        assigned: dict[str, A.Loc] = {}
        for s in self.op.body:
            if s.target in inputs:
                raise self.err(IdlNameError, s.loc, f"{s.target} is an input and cannot be assigned",
                               "inputs are read-only in the computation",
                               "assign the value to a new name")
            if s.target in assigned:
                raise self.err(IdlNameError, s.loc, f"{s.target} is assigned twice (first at line "
                               f"{assigned[s.target].line})", "each temporary and output is "
                               "assigned exactly once", "give the second value a new name")
            self.expr(s.value)
            v = s.value
            if s.target in outputs:
                self.output(outputs[s.target], s)
            elif v in self.literal:
                self.literal_names.add(s.target)
            assigned[s.target] = s.loc
            self.env[s.target] = (v.dtype, tuple(v.shape))
        for f in self.op.outputs:
            if f.name not in assigned:
                raise self.err(IdlNameError, f.loc, f"output {f.name} is never assigned",
                               "every output is assigned exactly once in the computation",
                               f"add `{f.name} = ...;` to the computation")

    def output(self, f: A.TensorField, s: A.Assign) -> None:
        """An output's value has exactly the declared dtype and dims."""
        v = s.value
        if v.shape != () and v.dtype is not f.dtype:
            raise self.err(IdlTypeError, s.loc, f"output {f.name} is declared {_n(f.dtype)} but "
                           f"{expr_text(v)} is {_n(v.dtype)}", "an output is assigned a value of "
                           "its declared dtype", f"write {f.name} = cast({expr_text(v)}, "
                           f"{_n(f.dtype)}); or declare {f.name} {_n(v.dtype)}")
        if tuple(v.shape) != tuple(f.dims):
            raise self.err(IdlShapeError, s.loc, f"output {f.name} is declared {_s(f.dims)} but "
                           f"{expr_text(v)} is {_s(v.shape)}", "an output is assigned a value of "
                           "exactly its declared dims (after broadcasting)",
                           "check the expression or the declared dims")


def check(op: A.Operator, source: str | None = None) -> A.Operator:
    """Fill dtype/shape on every expression node and ``op.env``; raise the first IdlError.
    ``source`` (default: the text the operator was parsed from) gives errors their excerpt."""
    c = _Checker(op, source if source is not None else op.source)
    c.fields()
    c.body()
    op.env = dict(c.env)
    return op
