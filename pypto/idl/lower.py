"""An IDL operator's computation as a plan of whole-tensor library instructions.

Each expression node becomes one step: a ``load_insn`` name (the registry's library kernels:
``add``, ``rowexpandsub``, ``matmul``, ``cast``, ...), its tensor operands, an optional scalar and
mode parameters. Values live in GM tensors of the node's shape; a broadcast row or column vector
uses the row/column-expand forms, a scalar the tile-scalar forms, ``@`` the cube GEMM. The plan is
symbolic (dimension symbols); ``run`` binds it to tensors and launches each step on the active
backend. Steps are not fused yet: every intermediate goes through GM.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .. import dtypes as D
from ..errors import IdlError
from . import ast as A

# elementwise binary operators and max/min: (same shape, row vector [M, 1], column vector [1, N], scalar)
_BINARY = {"+": ("add", "rowexpandadd", "colexpandadd", "adds"),
           "-": ("sub", "rowexpandsub", "colexpandsub", "subs"),
           "*": ("mul", "rowexpandmul", "colexpandmul", "muls"),
           "/": ("div", "rowexpanddiv", "colexpanddiv", "divs"),
           "max": ("max", "rowexpandmax", "colexpandmax", "maxs"),
           "min": ("min", "rowexpandmin", "colexpandmin", "mins")}
_COMMUTES = {"+", "*", "max", "min"}
_UNARY = {"exp", "log", "sqrt", "rsqrt", "abs", "relu", "recip", "neg"}
_REDUCE = {"rowsum": "rowsum", "rowmax": "rowmax", "rowmin": "rowmin", "rowmean": "rowsum",
           "colsum": "colsum", "colmax": "colmax", "colmin": "colmin", "colmean": "colsum"}

# a scalar operand: a constant, a Scalar input, or a number computed from the bound sizes
Scalar = Callable[[dict], float]


@dataclass
class Step:
    """dst = insn(srcs..., scalar) with mode parameters; dst and srcs are value ids."""
    insn: str
    srcs: tuple[int, ...]
    dst: int
    scalar: Scalar | None = None
    params: dict = field(default_factory=dict)
    text: str = ""
    loc: A.Loc | None = None         # the IDL expression this step computes


@dataclass
class Value:
    """A tensor the plan computes or reads: an input/output name or a temporary."""
    dtype: D.DType
    shape: tuple
    name: str | None = None          # an input's or output's name


@dataclass
class Plan:
    values: list[Value]
    steps: list[Step]
    outputs: dict[str, int]          # output name -> the value that holds it

    def text(self) -> str:
        """The steps, one per line (what ``insn.plan`` shows)."""
        def v(i: int) -> str:
            x = self.values[i]
            return x.name or f"t{i}"
        lines = []
        for s in self.steps:
            args = ", ".join(v(i) for i in s.srcs) + (", <scalar>" if s.scalar else "")
            ps = "".join(f", {k}={val!r}" for k, val in s.params.items())
            lines.append(f"{v(s.dst)} = {s.insn}({args}{ps})" + (f"    // {s.text}" if s.text else ""))
        return "\n".join(lines)


class _Lowering:
    def __init__(self, op: A.Operator):
        self.op = op
        self.values: list[Value] = []
        self.steps: list[Step] = []
        self.names: dict[str, int | Scalar] = {}
        for f in op.inputs:
            if isinstance(f, A.TensorField):
                self.names[f.name] = self._value(f.dtype, tuple(f.dims), f.name)
            else:
                self.names[f.name] = _scalar_input(f.name)

    def _value(self, dtype: D.DType, shape: tuple, name: str | None = None) -> int:
        self.values.append(Value(dtype, tuple(shape), name))
        return len(self.values) - 1

    def _emit(self, insn: str, srcs: tuple, dtype: D.DType, shape: tuple, scalar=None,
              params=None, text: str = "") -> int:
        dst = self._value(dtype, shape)
        self.steps.append(Step(insn, tuple(srcs), dst, scalar, dict(params or {}), text))
        return dst

    def _unsupported(self, node, what: str) -> IdlError:
        from ..errors import IdlFunctionError
        loc = node.loc
        return IdlFunctionError(f"{what} is not lowered to PTO instructions yet",
                                file=loc.file, line=loc.line, column=loc.column,
                                rule="the lowering covers elementwise operators on equal shapes, "
                                     "a tensor with a row [M, 1] or column [1, N] vector or a scalar, "
                                     "unary functions, max/min, row/column reductions, cast and @",
                                fix="rewrite the expression with those (the numpy reference "
                                    "evaluates it already)")

    # -- expressions -------------------------------------------------------------------------------
    def expr(self, e) -> int | Scalar:
        """The value id of a tensor expression, or a scalar function of the bound sizes."""
        first = len(self.steps)
        out = self._expr(e)
        for s in self.steps[first:]:
            s.loc = s.loc or e.loc
        return out

    def _expr(self, e) -> int | Scalar:
        if isinstance(e, A.Name):
            return self.names[e.id]
        if isinstance(e, A.Const):
            v = e.value
            return lambda env, v=v: v
        if isinstance(e, A.Unary):
            x = self.expr(e.operand)
            if callable(x):
                return lambda env, x=x: -x(env)
            return self._emit("neg", (x,), e.dtype, e.shape, text="-x")
        if isinstance(e, A.BinOp):
            if e.op == "@":
                return self._emit("matmul", (self.expr(e.lhs), self.expr(e.rhs)), e.dtype, e.shape,
                                  text="@")
            return self._binary(e, e.op, e.lhs, e.rhs)
        if isinstance(e, A.Call):
            return self._call(e)
        raise self._unsupported(e, type(e).__name__)

    def _binary(self, e, op: str, lhs, rhs) -> int | Scalar:
        a, b = self.expr(lhs), self.expr(rhs)
        if callable(a) and callable(b):
            fn = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
                  "/": lambda x, y: x / y, "max": max, "min": min}[op]
            return lambda env, a=a, b=b: fn(a(env), b(env))
        if callable(a):                        # scalar op tensor
            if op in _COMMUTES:
                return self._emit(_BINARY[op][3], (b,), e.dtype, e.shape, scalar=a)
            if op == "-":                      # s - x = (-x) + s
                neg = self._emit("neg", (b,), e.dtype, e.shape, text="s - x")
                return self._emit("adds", (neg,), e.dtype, e.shape, scalar=a)
            r = self._emit("recip", (b,), e.dtype, e.shape, text="s / x = recip(x) * s")
            return self._emit("muls", (r,), e.dtype, e.shape, scalar=a)
        if callable(b):
            return self._emit(_BINARY[op][3], (a,), e.dtype, e.shape, scalar=b)
        sa, sb = self.values[a].shape, self.values[b].shape
        if sa == sb:
            return self._emit(_BINARY[op][0], (a, b), e.dtype, e.shape)
        kind_a, kind_b = _vector_kind(sa, e.shape), _vector_kind(sb, e.shape)
        if kind_a is None and kind_b in (1, 2):
            return self._emit(_BINARY[op][kind_b], (a, b), e.dtype, e.shape)
        if kind_b is None and kind_a in (1, 2):
            if op in _COMMUTES:
                return self._emit(_BINARY[op][kind_a], (b, a), e.dtype, e.shape)
            if op == "-":                      # v - x = -(x - v)
                d = self._emit(_BINARY["-"][kind_a], (b, a), e.dtype, e.shape, text="v - x")
                return self._emit("neg", (d,), e.dtype, e.shape)
            r = self._emit("recip", (b,), e.dtype, e.shape, text="v / x")
            return self._emit(_BINARY["*"][kind_a], (r, a), e.dtype, e.shape)
        raise self._unsupported(e, f"broadcasting {list(sa)} {op} {list(sb)}")

    def _call(self, e: A.Call) -> int | Scalar:
        f = e.func
        if f in ("max", "min"):
            return self._binary(e, f, e.args[0], e.args[1])
        x = self.expr(e.args[0])
        if callable(x):
            raise self._unsupported(e, f"{f}() of a scalar")
        if f in _UNARY:
            return self._emit(f, (x,), e.dtype, e.shape)
        if f == "cast":
            if self.values[x].dtype is e.to:
                return x
            return self._emit("cast", (x,), e.dtype, e.shape)
        if f in _REDUCE:
            r = self._emit(_REDUCE[f], (x,), e.dtype, e.shape)
            if f.endswith("mean"):
                dim = self.values[x].shape[1 if f.startswith("row") else 0]
                return self._emit("muls", (r,), e.dtype, e.shape,
                                  scalar=lambda env, d=dim: 1.0 / _size(d, env), text=f)
            return r
        raise self._unsupported(e, f"{f}()")

    def plan(self) -> Plan:
        outputs = {}
        out_names = {f.name for f in self.op.outputs}
        for s in self.op.body:
            v = self.expr(s.value)
            if callable(v):
                raise self._unsupported(s.value, f"assigning a scalar to {s.target}")
            if s.target in out_names:
                if self.values[v].name is not None:     # an input, unchanged: a copy step
                    v = self._emit("muls", (v,), self.values[v].dtype, self.values[v].shape,
                                   scalar=lambda env: 1, text="copy")
                outputs[s.target] = v
            self.names[s.target] = v
        return Plan(self.values, self.steps, outputs)


def _scalar_input(name: str) -> Scalar:
    return lambda env, n=name: env[n]


def _size(d, env: dict) -> int:
    return d if isinstance(d, int) else env[d]


def _vector_kind(shape: tuple, full: tuple) -> int | None:
    """1 for a row vector [M, 1] of a 2-D result, 2 for a column vector [1, N]; None for the
    full shape; 0 for anything else."""
    if tuple(shape) == tuple(full):
        return None
    if len(shape) == 2 and len(full) == 2:
        if shape[1] == 1 and shape[0] == full[0]:
            return 1
        if shape[0] == 1 and shape[1] == full[1]:
            return 2
    return 0


def check_dtypes(plan: Plan, soc, source: str | None = None) -> None:
    """Every step's element types are ones its library instruction takes on this SoC (checked
    when the instruction is loaded, so the error points at the IDL expression)."""
    from .. import isa
    from ..errors import IdlTypeError
    from .parser import IDL_NAME
    for s in plan.steps:
        spec = isa.lookup(s.insn)
        legal = spec.dtypes_on(soc.name)
        dst, srcs = plan.values[s.dst].dtype, [plan.values[i].dtype for i in s.srcs]
        if all(isinstance(x, str) for x in legal):
            have, ok = srcs[0] if srcs else dst, None
            ok = have.short in legal
            names = ", ".join(IDL_NAME.get(D.BY_NAME[x], x) for x in legal)
            what = IDL_NAME.get(have, have.name)
        else:
            have = (dst,) + tuple(srcs)
            ok = tuple(x.short for x in have) in legal
            names = "; ".join(" ".join(IDL_NAME.get(D.BY_NAME[y], y) for y in x[1:]) + " -> "
                              + IDL_NAME.get(D.BY_NAME[x[0]], x[0]) for x in legal)
            what = " ".join(IDL_NAME.get(x, x.name) for x in have[1:]) + " -> " + \
                IDL_NAME.get(dst, dst.name)
        if not ok:
            loc = s.loc or A.Loc("<idl>", 1, 1)
            raise IdlTypeError(f"this runs as {s.insn} ({spec.name}), which takes no {what} on {soc.name}",
                               file=loc.file, line=loc.line, column=loc.column, source=source,
                               rule=f"{s.insn} on {soc.name} takes {names}",
                               fix="cast to one of those types first (cast(x, FLOAT32))")


def lower(op: A.Operator) -> Plan:
    """The plan of a checked operator (raises IdlFunctionError for what is not lowered yet)."""
    return _Lowering(op).plan()


def run(plan: Plan, tensors: dict[str, Any], env: dict, show: Callable[[Any], str] | None = None) -> dict:
    """Execute the plan on the active backend: ``tensors`` maps input names to device tensors,
    ``env`` symbol sizes and scalar inputs.
    Returns output name -> a new device tensor holding it (the caller copies it out and frees
    it); every other temporary is freed here, also when a step fails. With ``show`` nothing
    runs: returns {"text": each step's line and show(its loaded instruction)}."""
    from ..insn import load_insn
    from ..tensor import empty
    held: dict[int, Any] = {i: tensors[v.name] for i, v in enumerate(plan.values)
                            if v.name is not None and v.name in tensors}
    made: list[Any] = []
    result: dict[str, Any] = {}
    texts: list[str] = []
    lines = plan.text().splitlines()
    try:
        for s in plan.steps:
            dst = plan.values[s.dst]
            out = empty(tuple(_size(d, env) for d in dst.shape), dst.dtype)
            made.append(out)
            insn = load_insn(s.insn, **s.params)
            ops = [held[i] for i in s.srcs]
            if s.scalar is not None:
                ops.append(_scalar_for(s.scalar(env), dst.dtype))
            for k, x in enumerate(ops + [out]):
                insn.set_operand(k, x)
            if show is not None:
                texts.append(f"// step {len(texts) + 1}: {lines[len(texts)]}\n{show(insn)}")
            else:
                insn.execute()
            held[s.dst] = out
        if show is not None:
            return {"text": "\n".join(texts)}
        result = {name: held[v] for name, v in plan.outputs.items()}
        return result
    finally:
        keep = {id(t) for t in result.values()}
        for t in made:
            if id(t) not in keep and not t.is_freed:
                t.free()


def _scalar_for(x: float, dt: D.DType):
    return int(x) if dt.is_int else float(x)
