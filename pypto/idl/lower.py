"""An IDL operator's computation as a plan of whole-tensor library instructions.

Each expression node becomes one step: a ``load_insn`` name (the registry's library kernels:
``add``, ``rowexpandsub``, ``matmul``, ``cast``, ...), its tensor operands, an optional scalar and
mode parameters. Values live in GM tensors of the node's shape; a broadcast row or column vector
uses the row/column-expand forms, a scalar the tile-scalar forms, ``@`` the cube GEMM. The plan is
symbolic (dimension symbols). ``schedule`` (pypto/idl/fuse.py) then groups each run of vector
steps into one fused kernel over UB tiles; ``run`` binds the plan to tensors and launches its
segments (fused kernels and the library kernels between them: ``@``, column reductions) on the
active backend. Values cross GM only between segments.
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
    segments: list = field(default_factory=list)   # Steps and fuse.Fused kernels, in order

    def reduction_depth(self, env: dict) -> int:
        """The longest sum or reduction in the plan (K of an @, a row's length, ...), at least 1."""
        depth = 1
        for s in self.steps:
            dst = self.values[s.dst].shape
            if s.insn == "matmul":
                depth = max(depth, _size(self.values[s.srcs[0]].shape[-1], env))
            elif s.srcs and len(self.values[s.srcs[0]].shape) == len(dst):
                src = self.values[s.srcs[0]].shape
                depth = max([depth] + [_size(a, env) for a, b in zip(src, dst) if b == 1 and a != 1])
        return depth

    def vname(self, i: int) -> str:
        """A value's name: the input's or output's, else t<i>."""
        if self.values[i].name:
            return self.values[i].name
        return next((n for n, v in self.outputs.items() if v == i), f"t{i}")

    def step_text(self, s: Step) -> str:
        v = self.vname
        args = ", ".join(v(i) for i in s.srcs) + (", <scalar>" if s.scalar else "")
        ps = "".join(f", {k}={val!r}" for k, val in s.params.items())
        return f"{v(s.dst)} = {s.insn}({args}{ps})" + (f"    // {s.text}" if s.text else "")

    def text(self) -> str:
        """The segments: each fused kernel with its steps indented, each library step on its
        own line (what ``insn.plan`` shows)."""
        from .fuse import Fused
        lines = []
        for seg in self.segments or self.steps:
            if isinstance(seg, Fused):
                lines.append(seg.text(self.vname))
                lines.extend("    " + self.step_text(s) for s in seg.steps)
            else:
                lines.append(f"library {self.step_text(seg)}")
        return "\n".join(lines)


class _Lowering:
    def __init__(self, op: A.Operator):
        self.op = op
        self.values: list[Value] = []
        self.steps: list[Step] = []
        self.names: dict[str, int | Scalar] = {}
        self.seen: dict[tuple, int | Scalar] = {}
        self.made: dict[tuple, int] = {}
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
        key = (insn, tuple(srcs), tuple(sorted((params or {}).items())))
        if scalar is None and key in self.made:           # the same step on the same values
            return self.made[key]
        dst = self._value(dtype, shape)
        self.steps.append(Step(insn, tuple(srcs), dst, scalar, dict(params or {}), text))
        if scalar is None:
            self.made[key] = dst
        return dst

    def _unsupported(self, node, what: str) -> IdlError:
        from ..errors import IdlFunctionError
        loc = node.loc
        return IdlFunctionError(f"{what} is not lowered to PTO instructions yet",
                                file=loc.file, line=loc.line, column=loc.column,
                                rule="the lowering covers elementwise operators on equal shapes, "
                                     "a tensor with a row [M, 1] or column [1, N] vector or a scalar, "
                                     "a row vector with a column vector, "
                                     "unary functions, max/min, row/column reductions, cast and @",
                                fix="rewrite the expression with those (the numpy reference "
                                    "evaluates it already)")

    # -- expressions -------------------------------------------------------------------------------
    def expr(self, e) -> int | Scalar:
        """The value id of a tensor expression, or a scalar function of the bound sizes. An
        expression met again (its text and type) is the value computed the first time."""
        from .fmt import expr_text
        key = (expr_text(e), e.dtype)
        if key in self.seen:
            return self.seen[key]
        first = len(self.steps)
        out = self._expr(e)
        for s in self.steps[first:]:
            s.loc = s.loc or e.loc
        self.seen[key] = out
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
        if {kind_a, kind_b} == {1, 2}:         # [M, 1] op [1, N]: the row vector expanded first
            if kind_a == 1:
                a, kind_a = self._emit("rowexpand", (a,), e.dtype, e.shape, text="[M, 1] -> [M, N]"), None
            else:
                b, kind_b = self._emit("rowexpand", (b,), e.dtype, e.shape, text="[M, 1] -> [M, N]"), None
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
    if len(shape) == 1 and len(full) == 2 and shape[0] == full[1]:
        return 2
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


def lower(op: A.Operator, soc) -> Plan:
    """The plan of a checked operator, its vector runs fused for this SoC (IdlFunctionError for
    what is not lowered yet)."""
    from .fuse import schedule
    plan = _Lowering(op).plan()
    plan.segments = schedule(plan, op.name, soc)
    return plan


def run(plan: Plan, tensors: dict[str, Any], env: dict, show: Callable[[Any, Any], Any] | None = None):
    """Execute the plan on the active backend: ``tensors`` maps input names to device tensors,
    ``env`` symbol sizes and scalar inputs.
    Returns output name -> a new device tensor holding it (the caller copies it out and frees
    it); every other temporary is freed here, also when a step fails. With ``show`` nothing
    runs: returns [(title, show(kernel, launch args))], one per kernel the plan launches."""
    from .. import runtime
    soc = runtime.current().soc
    held: dict[int, Any] = {i: tensors[v.name] for i, v in enumerate(plan.values)
                            if v.name is not None and v.name in tensors}
    made: list[Any] = []
    result: dict[str, Any] = {}
    shown: list[tuple[str, Any]] = []

    def new(v: int):
        t = _empty(plan.values[v], env)
        made.append(t)
        return t

    try:
        for title, kern, blocks, args in _launches(plan, held, new, env, soc):
            if show is not None:
                shown.append((title, show(kern, args)))
            else:
                kern[blocks](*args)
        if show is not None:
            return shown
        result = {name: held[v] for name, v in plan.outputs.items()}
        return result
    finally:
        keep = {id(t) for t in result.values()}
        for t in made:
            if id(t) not in keep and not t.is_freed:
                t.free()


def _launches(plan: Plan, held: dict, new, env: dict, soc):
    """(title, kernel, blocks, args) of each kernel the plan launches, in order: a fused kernel
    when its tiles fit UB, else its steps as library kernels (a row reduction cannot be split)."""
    from .fuse import Fused
    for seg in plan.segments or plan.steps:
        sizes = seg.sizes(env, soc) if isinstance(seg, Fused) else None
        if sizes is not None:
            kern, blocks, args = _fused_launch(plan, seg, sizes, held, new, env, soc)
            yield seg.text(plan.vname) + f" (tiles {sizes[0]} x {sizes[1]}, {blocks} blocks)", kern, blocks, args
            continue
        if isinstance(seg, Fused) and seg.reduces():
            raise _too_wide(plan, seg, env, soc)
        for s in (seg.steps if isinstance(seg, Fused) else [seg]):
            yield (f"library {plan.step_text(s)}", *_library_launch(plan, s, held, new, env))


def _too_wide(plan: Plan, f, env: dict, soc):
    from ..errors import ShapeError
    n, dt = _size(f.full[1], env), plan.values[f.inputs[0]].dtype
    return ShapeError(f"the fused kernel {f.name}: rows of {n} {dt.name} elements do not fit UB",
                      rule=f"a row reduction holds whole rows in UB: this kernel's tiles take rows of "
                           f"at most {f.widest(env, soc)} elements on {soc.name}",
                      fix="split the rows into narrower tensors, or write an @pypto.kernel that "
                          "reduces a row in several tiles")


def _empty(value: Value, env: dict):
    from ..tensor import empty
    return empty(tuple(_size(d, env) for d in value.shape), value.dtype)


def _library_launch(plan: Plan, s: Step, held: dict, new, env: dict):
    """(kernel, blocks, args) of one library step; its output tensor is made and held."""
    from ..insn import library_insn
    dst = plan.values[s.dst]
    out = new(s.dst)
    insn = library_insn(s.insn, **s.params)
    ops = []
    for i in s.srcs:
        t = held[i]
        if len(t.shape) == 1 and len(dst.shape) == 2:      # an [N] column vector meets [M, N]
            t = t._alias((1, t.shape[0]))
        ops.append(t)
    if s.scalar is not None:
        ops.append(_scalar_for(s.scalar(env), dst.dtype))
    for k, x in enumerate(ops + [out]):
        insn.set_operand(k, x)
    held[s.dst] = out
    return insn.launch_args()


def _fused_launch(plan: Plan, f, sizes: tuple, held: dict, new, env: dict, soc):
    """(kernel, blocks, args) of a fused kernel; its output tensors are made and held."""
    import math

    from ..library.kernels import launch_dims
    from .fuse import kernel_for
    for v in f.outputs:
        held[v] = new(v)
    args = []
    for v in f.inputs + f.outputs:
        t = held[v]
        if f.mode == "flat":
            t = t._alias((math.prod(t.shape),))
        elif len(t.shape) == 1:
            t = t._alias((1, t.shape[0]))
        args.append(t)
    args += [_scalar_for(s.scalar(env), plan.values[s.dst].dtype) for s in f.steps if s.scalar is not None]
    ref = args[[f.kinds[v] for v in f.inputs + f.outputs].index("full")]
    n = ref.shape[0]
    chunks = -(-n // (sizes[1] if f.mode == "flat" else sizes[0]))
    return kernel_for(f, sizes), launch_dims(chunks, soc.aiv_cores), args


def _scalar_for(x: float, dt: D.DType):
    return int(x) if dt.is_int else float(x)
