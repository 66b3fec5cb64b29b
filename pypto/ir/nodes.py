"""Kernel IR: scalar expressions, typed tiles, GM views, instruction nodes, loops and sync.

The IR is small and explicit so that every consumer (verifier, simulator, printer, C++ emitter)
is a plain function over it. Tracing builds it; eager mode builds the same nodes one at a time.
"""
from __future__ import annotations

import functools
import itertools
import operator
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

from ..errors import TraceError

# -- scalar expressions ----------------------------------------------------------------------------

# Integer ops of index expressions. Python's // and % round toward minus infinity, C's / and %
# toward zero, so the IR names them for what they compute: floordiv, floormod.
_FOLD = {"+": operator.add, "-": operator.sub, "*": operator.mul, "floordiv": operator.floordiv,
         "floormod": operator.mod, "min": min, "max": max}
# Comparisons give 1 or 0 (an int64, as in C): the conditions of pto.when.
COMPARE_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
               ">": operator.gt, ">=": operator.ge}
_FOLD.update({op: (lambda f: lambda a, b: int(f(a, b)))(f) for op, f in COMPARE_OPS.items()})
CALL_OPS = ("floordiv", "floormod", "min", "max")     # printed as calls: floordiv(a, b)


class Expr:
    """A runtime scalar (index arithmetic). Python operators build new expressions."""

    dtype: str = "i64"

    def __add__(self, o): return binop("+", self, o)
    def __radd__(self, o): return binop("+", o, self)
    def __sub__(self, o): return binop("-", self, o)
    def __rsub__(self, o): return binop("-", o, self)
    def __mul__(self, o): return binop("*", self, o)
    def __rmul__(self, o): return binop("*", o, self)
    def __floordiv__(self, o): return binop("floordiv", self, o)
    def __rfloordiv__(self, o): return binop("floordiv", o, self)
    def __mod__(self, o): return binop("floormod", self, o)
    def __rmod__(self, o): return binop("floormod", o, self)
    def __neg__(self): return binop("-", 0, self)

    def __truediv__(self, o):
        raise TraceError("`/` on a runtime scalar is not supported inside a kernel",
                         rule="kernel index arithmetic is integer: + - * // %",
                         fix="use `//` for index arithmetic")

    __rtruediv__ = __truediv__

    # comparisons build a runtime condition (1 or 0) for pto.when; `if` on one is refused below
    def __lt__(self, o): return binop("<", self, o)
    def __le__(self, o): return binop("<=", self, o)
    def __gt__(self, o): return binop(">", self, o)
    def __ge__(self, o): return binop(">=", self, o)
    def __eq__(self, o): return binop("==", self, o)      # type: ignore[override]
    def __ne__(self, o): return binop("!=", self, o)      # type: ignore[override]

    def __bool__(self):
        raise TraceError(f"the runtime value `{self}` has no truth value while tracing",
                         rule="Python `if`/`while`/`and`/`or` run at trace time; runtime values are "
                              "only known when the kernel runs",
                         fix="branch with `for _ in pto.when(cond):`, use pto.min/pto.max and valid "
                             "regions for tails and pto.range for loops, or run the kernel with "
                             "mode='eager' to use Python control flow")

    def __index__(self):
        raise TraceError(f"the runtime value `{self}` cannot be used as a Python int while tracing",
                         rule="plain `range()` and Python indexing unroll at trace time and need "
                              "trace-time constants",
                         fix="use pto.range(...) for a runtime loop")

    def __hash__(self):
        return id(self)


@dataclass(eq=False, repr=False)
class Var(Expr):
    """A named runtime value: a scalar parameter, a dynamic shape, a loop index, block id, valid size."""
    name: str
    kind: str          # "scalar" | "shape" | "loop" | "block_idx" | "block_num" | "valid" | "rank_id" | "rank_num"
    dtype: str = "i64"

    def __repr__(self):
        return self.name


@dataclass(eq=False, repr=False)
class BinOp(Expr):
    op: str
    lhs: "ExprLike"
    rhs: "ExprLike"
    dtype: str = "i64"

    def __repr__(self):
        if self.op in CALL_OPS:
            return f"{self.op}({self.lhs!r}, {self.rhs!r})"
        return f"({self.lhs!r} {self.op} {self.rhs!r})"


@dataclass(eq=False, repr=False)
class Returned(Var):
    """The value an instruction returned (TTEST: 1 or 0), read after it ran; ``slot`` numbers
    the kernel's returned values."""
    slot: int = 0


ExprLike = Union[int, float, Expr]


def binop(op: str, a: ExprLike, b: ExprLike) -> ExprLike:
    """Build ``a op b``, folding constants and trivial identities (numpy numbers act as the
    Python numbers they hold)."""
    a = a.item() if isinstance(a, (np.integer, np.floating)) else a
    b = b.item() if isinstance(b, (np.integer, np.floating)) else b
    for x in (a, b):
        if not isinstance(x, (int, float, Expr)) or isinstance(x, bool):
            raise TraceError(f"cannot combine {type(x).__name__} {x!r} with a runtime scalar",
                             rule="kernel scalars are ints, floats or runtime scalar expressions",
                             fix="use an int or float (or a numpy number) here")
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        r = _FOLD[op](a, b)
        if isinstance(r, int) and not isinstance(r, RtInt) and (isinstance(a, RtInt) or isinstance(b, RtInt)):
            r = RtInt(r)
        return r
    if op == "+" and not isinstance(b, Expr) and b == 0:
        return a
    if op == "+" and not isinstance(a, Expr) and a == 0:
        return b
    if op == "*" and not isinstance(b, Expr) and b == 1:
        return a
    if op == "*" and not isinstance(a, Expr) and a == 1:
        return b
    if op == "*" and ((not isinstance(a, Expr) and a == 0) or (not isinstance(b, Expr) and b == 0)):
        return 0
    if op == "-" and not isinstance(b, Expr) and b == 0:
        return a
    if op == "-" and isinstance(a, BinOp) and a.op == "+" and a.lhs is b:
        return a.rhs                       # (x + w) - x  ->  w  (slice extents)
    if op == "floordiv" and not isinstance(b, Expr) and b == 1:
        return a
    dt = "f64" if "f64" in (getattr(a, "dtype", _lit_dtype(a)), getattr(b, "dtype", _lit_dtype(b))) \
        and op not in COMPARE_OPS else "i64"
    return BinOp(op, a, b, dt)


def _lit_dtype(x):
    return "f64" if isinstance(x, float) else "i64"


class RtInt(int):
    """Eager mode's stand-in for a runtime scalar: a real int that remembers it is a runtime value,
    so eager and compiled runs make the same static/dynamic decisions (valid regions, checks)."""

    def _w(op):
        def f(self, o):
            r = op(int(self), o if not isinstance(o, RtInt) else int(o))
            return RtInt(r) if isinstance(r, int) else r
        return f

    def _rw(op):
        def f(self, o):
            r = op(o, int(self))
            return RtInt(r) if isinstance(r, int) else r
        return f

    __add__, __sub__, __mul__ = _w(operator.add), _w(operator.sub), _w(operator.mul)
    __floordiv__, __mod__ = _w(operator.floordiv), _w(operator.mod)
    __radd__, __rsub__, __rmul__ = _rw(operator.add), _rw(operator.sub), _rw(operator.mul)
    __rfloordiv__, __rmod__ = _rw(operator.floordiv), _rw(operator.mod)

    def __neg__(self):
        return RtInt(-int(self))

    def __repr__(self):
        return int.__repr__(self)

    del _w, _rw


class RtFloat(float):
    """Eager mode's stand-in for a runtime float scalar parameter."""


def is_runtime(x: Any) -> bool:
    """True for values known only when the kernel runs (IR expressions, or their eager values)."""
    return isinstance(x, (Expr, RtInt, RtFloat))


def is_static(x: Any) -> bool:
    return not isinstance(x, Expr)


def free_vars(x: ExprLike) -> set[Var]:
    if isinstance(x, Var):
        return {x}
    if isinstance(x, BinOp):
        return free_vars(x.lhs) | free_vars(x.rhs)
    if type(x).__name__ == "GmLoad":
        return free_vars(x.view.offset)
    return set()


# -- types -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TileType:
    """Everything static about a tile (pto::Tile template arguments)."""
    loc: str
    dtype: Any            # pypto.dtypes.DType
    rows: int
    cols: int
    blayout: str = "RowMajor"      # RowMajor | ColMajor
    slayout: str = "NoneBox"       # NoneBox | RowMajor | ColMajor
    fractal: int = 512
    pad: str = "Null"              # Null | Zero | Min | Max

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.dtype.itemsize

    @property
    def numel(self) -> int:
        return self.rows * self.cols

    @property
    def layout_name(self) -> str:
        if self.slayout == "NoneBox":
            return "ND" if self.blayout == "RowMajor" else "DN"
        return {("RowMajor", "RowMajor"): "Zz", ("ColMajor", "RowMajor"): "Nz",
                ("RowMajor", "ColMajor"): "Zn", ("ColMajor", "ColMajor"): "Nn"}[(self.blayout, self.slayout)]

    @property
    def contiguous_axis(self) -> str:
        """The axis consecutive storage runs along ("columns" or "rows"): the box's inner order,
        else the layout's. Packed fp4 pairs run along it."""
        order = self.slayout if self.slayout != "NoneBox" else self.blayout
        return "columns" if order == "RowMajor" else "rows"

    @functools.cached_property
    def inner(self) -> tuple[int, int]:
        """The inner box (InnerRows, InnerCols) of pto-isa-semantics 3.1; (1, 1) when unboxed."""
        c0 = 32 // self.dtype.itemsize
        if self.slayout == "NoneBox":
            return 1, 1
        if self.fractal == 1024:
            return 16, 16
        if self.fractal == 32:     # MX scales: ScaleLeft Zz 16 x 2, ScaleRight Nn 2 x 16 (GM MX_A_ZZ / MX_B_NN)
            return (16, 2) if self.slayout == "RowMajor" else (2, 16)
        return (16, c0) if self.slayout == "RowMajor" else (c0, 16)

    @functools.cached_property
    def desc(self) -> tuple[int, int, int, int, int, int]:
        """The layout descriptor every simulator implementation addresses a tile through:
        (IR, IC, BRS, BCS, irs, ics) with storage offset of logical (r, c) =
        (r // IR) * BRS + (c // IC) * BCS + (r % IR) * irs + (c % IC) * ics. This one form covers
        ND, DN and the boxed Nz, Zn, Zz layouts (pto-isa-semantics 3.3)."""
        ir_, ic = self.inner
        n = ir_ * ic
        if self.slayout == "NoneBox":
            return (1, 1, self.cols, 1, 0, 0) if self.blayout == "RowMajor" else (1, 1, 1, self.rows, 0, 0)
        inner_rowmajor = self.slayout == "RowMajor"
        irs, ics = (ic, 1) if inner_rowmajor else (1, ir_)
        if self.blayout == "ColMajor":          # Nz (and Nn): boxes go down a column of boxes first
            return (ir_, ic, n, self.rows * ic, irs, ics)
        return (ir_, ic, self.cols * ir_, n, irs, ics)    # Zz / Zn: boxes row-wise

    @property
    def rows_dense(self) -> bool:
        """Whether each row's elements are consecutive in storage (the simulator's row_dense of
        ``desc``): ND, or a one-row DN tile."""
        ir_, ic, _, bcs, _, _ = self.desc
        return ir_ == 1 and ic == 1 and bcs == 1

    @property
    def strides(self) -> tuple[int, int]:
        """(row stride, col stride) in elements for unboxed layouts."""
        return (self.cols, 1) if self.blayout == "RowMajor" else (1, self.rows)

    def __str__(self) -> str:
        return (f"{self.loc}<{self.dtype.short}, {self.rows}x{self.cols}, {self.layout_name}"
                f"{'' if self.pad == 'Null' else ', pad=' + self.pad}>")


_tile_ids = itertools.count()


@dataclass(eq=False)
class TileVar:
    """One tile in a kernel. ``valid`` holds ints (static) or Vars (dynamic, changed by SetValid)."""
    type: TileType
    valid: tuple[ExprLike, ExprLike]
    dynamic: bool
    name: str
    id: int = field(default_factory=lambda: next(_tile_ids))
    addr: int | None = None        # byte address in its space once placed
    manual: bool = False           # placed by TASSIGN

    def __repr__(self):
        return f"%{self.name}"


@dataclass(eq=False)
class TensorParam:
    """A GM tensor kernel parameter. shape entries are ints or Vars (dynamic_shapes)."""
    name: str
    index: int
    dtype: Any
    shape: tuple[ExprLike, ...]

    @property
    def strides(self) -> tuple[ExprLike, ...]:
        st: list[ExprLike] = []
        acc: ExprLike = 1
        for d in reversed(self.shape):
            st.append(acc)
            acc = binop("*", acc, d)
        return tuple(reversed(st))

    @property
    def numel(self) -> ExprLike:
        acc: ExprLike = 1
        for d in self.shape:
            acc = binop("*", acc, d)
        return acc

    def __repr__(self):
        return f"%{self.name}"


@dataclass(eq=False)
class ScalarParam:
    name: str
    index: int
    var: Var


@dataclass(eq=False)
class GmView:
    """A 5-D window on a tensor parameter (pto::GlobalTensor): element offset, shape, strides.

    ``bounds`` lists (what, value, limit) facts that must hold (0 <= value <= limit) for the view
    to stay inside its tensor; static ones are checked when built, the rest at run time.
    """
    tensor: TensorParam
    offset: ExprLike
    shape: tuple[ExprLike, ExprLike, ExprLike, ExprLike, ExprLike]
    strides: tuple[ExprLike, ExprLike, ExprLike, ExprLike, ExprLike]
    layout: str = "ND"
    bounds: tuple[tuple[str, ExprLike, ExprLike], ...] = ()
    point: bool = False        # x[i, j] with an int for every dimension: one element
    rank: ExprLike | None = None   # a peer device's copy of the tensor (None: this device's)

    def __repr__(self):
        shp = "x".join(str(s) for s in self.shape)
        peer = f"@rank({self.rank!r})" if self.rank is not None else ""
        return f"{self.tensor!r}{peer}[off={self.offset!r}, shape={shp}]"

    def _not_a_scalar(self, *_):
        what = "one element of" if self.point else "a window on"
        raise TraceError(f"{self.tensor.name}[...] is {what} a GM tensor, used here as a number",
                         rule="a GM element is read as a scalar only as an instruction's scalar "
                              "operand (TADDS(t, t, x[i])); arithmetic, comparisons and pto.when "
                              "take kernel scalars, loop indices, block and rank ids",
                         fix="pass the value as a kernel scalar argument, or load it into a tile "
                             "(or, between devices, TTEST a signal)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _not_a_scalar
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __truediv__ = __rtruediv__ = _not_a_scalar
    __lt__ = __le__ = __gt__ = __ge__ = __index__ = __int__ = __float__ = _not_a_scalar

    def __eq__(self, o):                  # views compare by identity; with a number, refused
        if isinstance(o, (int, float, Expr)):
            self._not_a_scalar()
        return self is o

    def __ne__(self, o):
        return not self.__eq__(o)

    __hash__ = object.__hash__


@dataclass(eq=False, repr=False)
class GroupView(GmView):
    """pto::comm::ParallelGroup: the same view on every rank 0..nranks-1 (member r is rank r's
    copy, as HcclRemotePtr names it), driven by rank ``root``."""
    nranks: ExprLike = 1
    root: ExprLike = 0

    def __repr__(self):
        return f"group({GmView.__repr__(self)}, nranks={self.nranks!r}, root={self.root!r})"


@dataclass(eq=False, repr=False)
class GmLoad(Expr):
    """One element of a GM tensor read by the scalar unit (PIPE_S) when the kernel runs:
    ``x[i, j]`` used as an instruction's scalar operand, as PTO C++ reads ``src[0]``."""
    view: GmView
    dtype: str = "i64"

    def __repr__(self):
        return f"{self.view.tensor!r}[{self.view.offset!r}]"


def gm_loads(x: Any) -> list["GmLoad"]:
    """The GM scalar reads inside an operand or expression."""
    if isinstance(x, GmLoad):
        return [x]
    if isinstance(x, BinOp):
        return gm_loads(x.lhs) + gm_loads(x.rhs)
    return []


# -- statements -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Site:
    """Where in the user's kernel source a node came from."""
    filename: str
    lineno: int
    line: str
    function: str

    def __str__(self):
        return f"{self.filename}:{self.lineno} in {self.function}: {self.line.strip()}"


@dataclass(eq=False)
class Stmt:
    site: Site | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class Effect:
    """One thing an instruction reads or writes. ``operand`` indexes node.operands (None for hidden
    scratch); region: "valid" (the tile's valid region), "whole" (the whole tile), "view" (a GM
    view), "gm_scalar" (GM elements the scalar unit reads for a scalar operand, x[i, j]) or
    "scratch" (``span`` bytes of on-chip ``space`` that no operand names)."""
    access: str                       # "read" | "write"
    operand: int | None
    region: str
    space: str | None = None
    span: tuple[int, int] | None = None

    def __str__(self) -> str:
        what = f"%{self.operand}" if self.operand is not None else f"{self.space}[{self.span[0]:#x}:{self.span[1]:#x}]"
        return f"{self.access[0].upper()} {what}.{self.region}"


@dataclass(eq=False)
class InstrNode(Stmt):
    """One PTO instruction. operands follow the table's order; params are mode parameters.
    pipe, core and effects are resolved from the table and the SoC by ``ir.effects.annotate``."""
    name: str
    operands: tuple[Any, ...]
    params: dict[str, Any] = field(default_factory=dict)
    pipe: str | None = None
    core: str | None = None
    effects: tuple[Effect, ...] = ()
    result: Returned | None = None      # the value it returns, when a kernel reads it (TTEST)


def dynamic_tiles(node: InstrNode) -> list[TileVar]:
    """The instruction's first two distinct tile operands with a dynamic valid region: the ones
    whose runtime sizes a recorded event carries (for the cost model)."""
    out: list[TileVar] = []
    for o in node.operands:
        if isinstance(o, TileVar) and o.dynamic and all(o is not t for t in out):
            out.append(o)
    return out[:2]


@dataclass(eq=False)
class SetValid(Stmt):
    tile: TileVar
    rows: ExprLike
    cols: ExprLike


@dataclass(eq=False)
class Assign(Stmt):
    """TASSIGN: place a tile at a byte address of its space."""
    tile: TileVar
    addr: int


@dataclass(eq=False)
class Sync(Stmt):
    kind: str                    # "set_flag" | "wait_flag" | "pipe_barrier"
    src: str | None
    dst: str | None
    event: int | None
    auto: bool = False           # inserted by auto mode (ir/autosync.py), not written by the user

    @property
    def pipe(self) -> str | None:
        """The pipe the statement sits on: a wait holds its destination pipe; a set (and a
        barrier) runs on its source pipe."""
        return self.dst if self.kind == "wait_flag" else self.src


@dataclass(eq=False)
class For(Stmt):
    """A runtime loop; with ``branch`` (pto.when) it runs once when ``stop`` (a 1-or-0
    condition) is 1, else never: a data-dependent branch that every pass handles as a loop."""
    var: Var
    start: ExprLike
    stop: ExprLike
    step: ExprLike
    body: list[Stmt] = field(default_factory=list)
    branch: bool = False


@dataclass(eq=False)
class Kernel:
    name: str
    params: list[TensorParam | ScalarParam]
    tiles: list[TileVar]
    body: list[Stmt]
    soc: str
    source: str = ""              # qualified name / file of the Python function
    share_tiles: bool = False     # placement may give tiles with disjoint lifetimes the same bytes
    findings: dict | None = None  # checking level -> the hazard checker's findings (ir/hazards.py)
    # what backends compiled from this kernel (opaque to the IR), so it lives and dies with it
    programs: dict = field(default_factory=dict, repr=False)

    @property
    def tensor_params(self) -> list[TensorParam]:
        return [p for p in self.params if isinstance(p, TensorParam)]

    @property
    def scalar_params(self) -> list[ScalarParam]:
        return [p for p in self.params if isinstance(p, ScalarParam)]


def walk(stmts: list[Stmt]):
    """Yield every statement, depth first."""
    for s in stmts:
        yield s
        if isinstance(s, For):
            yield from walk(s.body)
