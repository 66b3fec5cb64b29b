"""The kernel DSL namespace, mirroring the PTO C++ API: ``from pypto import pto``.

Instruction functions are generated from the ISA table (PTO names, destination first);
instructions without semantics on the active backend raise NotSimulatedError when called.
"""
from __future__ import annotations

import inspect
from typing import Any, Iterator

from .. import dtypes as _D
from ..errors import KernelError as _KernelError
from ..ir.nodes import (Expr as _Expr, ExprLike, GmView, GroupView as _GroupView, RtFloat as _RtFloat,
                        Sync as _Sync, binop as _binop, is_runtime)
from ..isa import TABLE as _TABLE
from ..isa.schema import LAYOUT_ORDERS as _LAYOUT_ORDERS, PIPES as _PIPES, TILE_ALIASES as _TILE_ALIASES
from . import builder as _B
from . import semantic as _S
from ..calls import guard_class, guard_namespace
from .tile import GmTensor, Tile

# -- locations, layouts, pads ---------------------------------------------------------------------
Vec, Mat, Left, Right, Acc, Bias, Scaling = "Vec", "Mat", "Left", "Right", "Acc", "Bias", "Scaling"
ScaleLeft, ScaleRight = "ScaleLeft", "ScaleRight"
RowMajor, ColMajor, NoneBox = "RowMajor", "ColMajor", "NoneBox"
PadNull, PadZero, PadMin, PadMax = "Null", "Zero", "Min", "Max"
ND, DN, NZ = "ND", "DN", "NZ"
DYNAMIC = _S.DYNAMIC

# -- element types (same objects as pypto.float32, ...) -----------------------------------------
float16, bfloat16, float32 = _D.float16, _D.bfloat16, _D.float32
int8, uint8, int16, uint16 = _D.int8, _D.uint8, _D.int16, _D.uint16
int32, uint32, int64, uint64 = _D.int32, _D.uint32, _D.int64, _D.uint64
float8_e4m3, float8_e5m2, hifloat8 = _D.float8_e4m3, _D.float8_e5m2, _D.hifloat8
float8_e8m0 = _D.float8_e8m0
float4_e2m1x2, float4_e1m2x2 = _D.float4_e2m1x2, _D.float4_e1m2x2

# -- pipes and events ----------------------------------------------------------------------------
PIPE_S, PIPE_V, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_M, PIPE_FIX, PIPE_ALL = _PIPES
EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 = range(8)


# -- control ----------------------------------------------------------------------------------------
def range(start: ExprLike, stop: ExprLike | None = None, step: ExprLike = 1) -> Iterator[ExprLike]:  # noqa: A001
    """A runtime loop (one IR loop, not unrolled). Plain Python ``range`` unrolls at trace time."""
    b = _B.current("pto.range")
    start, stop, step = _S.py_scalar(start), _S.py_scalar(stop), _S.py_scalar(step)
    if stop is None:
        start, stop = 0, start
    for n, v in (("start", start), ("stop", stop), ("step", step)):
        _S.require_kernel_scalar(v, f"pto.range {n}")
    return b.range(start, stop, step)


def when(cond: ExprLike) -> Iterator[ExprLike]:
    """A runtime branch: ``for _ in pto.when(cond):`` runs its body once if ``cond`` is
    non-zero when the kernel runs, else never. ``cond`` is a comparison of runtime scalars
    (``pto.rank_id() == 0``, ``n > 4``), TTEST's result, or any integer scalar. One IR node
    (a loop of 0 or 1 trips) in compiled mode, a plain Python test in eager mode; the body may
    not break or return, as in pto.range."""
    b = _B.current("pto.when")
    cond = _S.py_scalar(cond)
    if isinstance(cond, bool):
        cond = int(cond)
    if isinstance(cond, (float, _RtFloat)) or (isinstance(cond, _Expr) and cond.dtype != "i64"):
        raise _KernelError(f"pto.when: {cond!r} is a float, not a condition",
                          rule="a branch condition is an integer scalar or a comparison (1 or 0)",
                          fix="compare it, e.g. pto.when(x > 0.0)")
    _S.require_kernel_scalar(cond, "pto.when condition")
    return b.when(cond)


def block_idx() -> ExprLike:
    """This block's index in 0..block_num()-1 (get_block_idx)."""
    return _B.current("pto.block_idx").block_idx()


def block_num() -> ExprLike:
    """The launch's block count (get_block_num)."""
    return _B.current("pto.block_num").block_num()


def soc():
    """The SoC profile the kernel is traced for (capacities, cores, layouts: pypto.isa.soc)."""
    return _B.current("pto.soc").soc


def rank_id() -> ExprLike:
    """This device's rank in the world, 0 .. rank_num()-1 (HcclDeviceContext::rankId)."""
    return _B.current("pto.rank_id").rank_id()


def rank_num() -> ExprLike:
    """How many devices (ranks) the world has (HcclDeviceContext::rankNum)."""
    return _B.current("pto.rank_num").rank_num()


def remote(view: Any, rank: ExprLike) -> GmView:
    """The same window of the same tensor on device ``rank`` (HcclRemotePtr: the peer's GM window
    at this tensor's offset; tensors are allocated alike on every rank)."""
    _B.current("pto.remote")
    site = _B.user_site()
    if isinstance(view, GmTensor):
        view = _S.slice_view(view._param, (), site)
    return _S.remote_view(view, rank, site)


def ParallelGroup(view: Any, nranks: ExprLike, root: ExprLike) -> GmView:  # noqa: N802
    """pto::comm::ParallelGroup: ``view`` on each of ranks 0 .. nranks-1 (member r is rank r's copy),
    for the collectives TGATHER_COMM / TSCATTER_COMM / TREDUCE / TBROADCAST run by rank ``root``."""
    _B.current("pto.ParallelGroup")
    site = _B.user_site()
    if isinstance(view, GmTensor):
        view = _S.slice_view(view._param, (), site)
    return _S.group_view(view, nranks, root, site)


def min(a: ExprLike, b: ExprLike) -> ExprLike:  # noqa: A001
    """Runtime-scalar minimum (clamps tails)."""
    return _binop("min", a, b)


def max(a: ExprLike, b: ExprLike) -> ExprLike:  # noqa: A001
    """Runtime-scalar maximum."""
    return _binop("max", a, b)


def GlobalTensor(t: GmTensor, shape, stride, offset: ExprLike = 0, layout: str = "ND") -> GmView:  # noqa: N802
    """pto::GlobalTensor: a 5-D (shape, stride in elements) window on a GM tensor parameter."""
    _B.current("pto.GlobalTensor")
    if not isinstance(t, GmTensor):
        raise _KernelError(f"pto.GlobalTensor: {t!r} is not a kernel tensor parameter",
                           rule="a GlobalTensor is a window on a tensor the kernel was launched with",
                           fix="pass one of the kernel's tensor parameters")
    return _S.global_tensor(t._param, shape, stride, offset, layout, _B.user_site())


# -- sync ---------------------------------------------------------------------------------------------
def _pipe(p: Any, what: str) -> str:
    if p not in _PIPES:
        raise _KernelError(f"{what}: {p!r} is not a pipe", rule=f"pipes are pto.PIPE_{', pto.PIPE_'.join(_PIPES)}",
                           fix="pass one of the pto.PIPE_* constants")
    return p


def _sync(kind: str, src, dst, event) -> None:
    from ..ir.nodes import Sync
    b = _B.current(f"pto.{kind}")
    site = _B.user_site()
    try:
        src = _pipe(src, f"pto.{kind} src")
        if kind != "pipe_barrier":
            dst = _pipe(dst, f"pto.{kind} dst")
            if src == dst or "ALL" in (src, dst):
                raise _KernelError(f"pto.{kind}(PIPE_{src}, PIPE_{dst}, ...): a flag joins two different pipes",
                                   rule="set_flag/wait_flag order one pipe after another; use "
                                        "pto.pipe_barrier(pipe) within a pipe")
            event = _S.py_scalar(event)
            if is_runtime(event):
                raise _KernelError(f"pto.{kind}: event id {event!r} is a runtime value",
                                   rule="event ids are compile-time constants (EVENT_ID0..EVENT_ID7): "
                                        "the NPU encodes them in the instruction",
                                   fix="pass pto.EVENT_ID0 ... pto.EVENT_ID7")
            if isinstance(event, bool) or not isinstance(event, int) or not 0 <= event < 8:
                raise _KernelError(f"pto.{kind}: event id {event!r} outside EVENT_ID0..EVENT_ID7",
                                   rule="8 event ids per (src, dst) pipe pair",
                                   fix="pass pto.EVENT_ID0 ... pto.EVENT_ID7")
    except _KernelError as e:
        raise (e.located(str(site)) if site else e) from None
    b.emit(Sync(kind, src, dst, event, site=site))


def set_flag(src: str, dst: str, event_id: int) -> None:
    """Signal from pipe ``src`` to pipe ``dst``: what ``src`` issued so far happens before what
    ``dst`` issues after the matching wait_flag (the checker follows it: pypto/ir/hazards.py)."""
    _sync("set_flag", src, dst, event_id)


def wait_flag(src: str, dst: str, event_id: int) -> None:
    """Make pipe ``dst`` wait for the matching set_flag from ``src``."""
    _sync("wait_flag", src, dst, event_id)


def pipe_barrier(pipe: str) -> None:
    """Order everything issued so far on ``pipe`` before what follows."""
    _sync("pipe_barrier", pipe, None, None)


# -- instructions -----------------------------------------------------------------------------------
def TASSIGN(tile: Tile, addr: ExprLike) -> None:  # noqa: N802
    """Place ``tile`` at byte address ``addr`` of its on-chip space (manual mode)."""
    _B.current("pto.TASSIGN")
    if not isinstance(tile, Tile):
        raise _KernelError(f"TASSIGN: {tile!r} is not a pto.Tile",
                           rule="this version binds tiles; GM tensors are bound by the launch",
                           fix="pass a tile made with pto.Tile(...)")
    _S.assign(tile._tv, addr, _B.user_site())


def _alias(alias: str):
    loc, layout, fractal = _TILE_ALIASES[alias]

    def make(dtype: Any, shape: tuple[int, int], valid: Any = None, pad: str = "Null") -> Tile:
        lay = _B.current(f"pto.{alias}").soc.left_layout if layout == "left" else layout
        blayout, slayout = _LAYOUT_ORDERS[lay]
        return Tile(loc, dtype, shape, valid, blayout=blayout, slayout=slayout, fractal=fractal, pad=pad)

    make.__name__ = make.__qualname__ = alias
    where = "the SoC's own layout (Zz on a2a3, Nz on a5)" if layout == "left" else f"layout {layout}"
    make.__doc__ = f"pto::{alias}: a {loc} tile in {where} with {fractal}-byte fractals."
    return make


for _alias_name in _TILE_ALIASES:
    globals()[_alias_name] = _alias(_alias_name)
del _alias_name


class Event:
    """An event token, as pto::Event<SrcOp, DstOp> in PTO C++: ``e = pto.TLOAD(a, x, record=pto.TADD)``
    sets a flag from TLOAD's pipe to TADD's once the TLOAD is issued, and ``pto.TADD(c, a, b, e)``
    waits for it first. The event id comes from a counter per pipe pair cycling through
    EVENT_ID0..7 (AutoToken). An event is a set_flag/wait_flag pair in the IR, so the checker
    and the emitter treat both styles alike."""

    def __init__(self, src: str, dst: str, event_id: int):
        self.src, self.dst, self.event_id = src, dst, event_id

    def __repr__(self) -> str:
        return f"<pto.Event PIPE_{self.src} -> PIPE_{self.dst}, EVENT_ID{self.event_id}>"


def _record(node, target, site) -> Event:
    """The Event ``record=target`` asks for after ``node``: its pipe to target's pipe."""
    from ..ir.effects import annotate_node
    b = _B.current("record=")
    dst_name = getattr(target, "__name__", target)
    if isinstance(dst_name, str) and dst_name in _PIPES:
        dst = dst_name
    elif isinstance(dst_name, str) and dst_name in _TABLE:
        dst = _TABLE[dst_name].pipe_on(b.soc.name, {})
        if dst is None:
            raise _KernelError(f"record={dst_name}: its pipe depends on its operands' locations",
                               rule=f"{dst_name} runs on a pipe chosen by where its tiles are",
                               fix="name the pipe instead, e.g. record=pto.PIPE_MTE3 (a TSTORE from "
                                   "Vec) or record=pto.PIPE_FIX (from Acc)")
    else:
        raise _KernelError(f"record={target!r}: not a PTO instruction or pipe",
                           rule="record= names the instruction (or pipe) that will wait for the "
                                "event (pto::Event<SrcOp, DstOp>)", fix="pass e.g. record=pto.TADD")
    if node.pipe is None:
        annotate_node(node, b.soc)
    src = node.pipe
    if src == dst:
        raise _KernelError(f"record={dst_name}: {node.name} and {dst_name} both run on PIPE_{src}",
                           rule="an event joins two different pipes (pto::Event static_asserts it)",
                           fix="use pto.pipe_barrier within one pipe")
    counters = b.__dict__.setdefault("_event_ids", {})
    ev = counters.get((src, dst), 0)
    counters[(src, dst)] = (ev + 1) % 8
    b.emit(_Sync("set_flag", src, dst, ev, site=site))
    return Event(src, dst, ev)


def _make(name: str):
    spec = _TABLE[name]
    twin = name + "_COMM" if name + "_COMM" in _TABLE else None   # pto::comm's overload of the name

    def instruction(*operands: Any, record: Any = None, **params: Any) -> Event | None:
        site = _B.user_site()
        waits = []
        while operands and isinstance(operands[-1], Event):      # trailing events: wait first
            waits.insert(0, operands[-1])
            operands = operands[:-1]
        if waits:
            b = _B.current(f"pto.{name}")
            for e in waits:
                b.emit(_Sync("wait_flag", e.src, e.dst, e.event_id, site=site))
        if twin is not None and operands and isinstance(operands[0], _GroupView):
            return globals()[twin](*operands, *waits, record=record, **params)
        node = _S.instr(name, operands, params, site)
        if spec.returns is not None:                 # TTEST: a value, not an event
            return _B.current(f"pto.{name}").scalar_result(node)
        if record is not None:
            try:
                return _record(node, record, site)
            except _KernelError as e:
                raise (e.located(str(site)) if site else e) from None
        return None

    instruction.__name__ = instruction.__qualname__ = name
    ops = ", ".join(o.name for o in spec.operands)
    instruction.__doc__ = (f"{name}({ops}): {spec.summary}  [opcode {spec.opcode:#06x}, pipe {spec.pipe}]. "
                           "Trailing pto.Event arguments are waited for first; record=pto.OTHER "
                           "returns an Event from this instruction's pipe to OTHER's.")
    if twin is not None:
        instruction.__doc__ += (f" With a pto.ParallelGroup first it is pto::comm::{name}, the "
                                f"collective ({name}_COMM).")
    instruction.__signature__ = inspect.Signature(
        [inspect.Parameter(o.name, inspect.Parameter.POSITIONAL_ONLY) for o in spec.operands] +
        [inspect.Parameter("events", inspect.Parameter.VAR_POSITIONAL),
         inspect.Parameter("record", inspect.Parameter.KEYWORD_ONLY, default=None)] +
        [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=p.default) for p in spec.params])
    return instruction


for _name in _TABLE:
    if _name not in globals():
        globals()[_name] = _make(_name)
del _name

__all__ = [n for n in globals() if not n.startswith("_") and n not in ("guard_class", "guard_namespace")]
guard_class(Tile)
guard_namespace(globals(), __all__)
