"""5.10 Communication between devices: TPUT, TGET, TNOTIFY, TWAIT, TTEST and the root-driven
collectives TGATHER_COMM, TSCATTER_COMM, TBROADCAST, TREDUCE (comm-semantics.md).

Each device is one MPI rank; a kernel names a peer's buffer with ``pto.remote(view, rank)`` (the
same offset in the peer's GM window, HcclRemotePtr) and a group of them with
``pto.ParallelGroup(view, nranks, root)``. The data movers stage through their Vec tiles chunk
by chunk (the whole view when it fits, else D3 x D4 pieces), so the tiles end holding the last
chunk, as on the NPU. The simulator's code is in backends/sim/lib/comm.py (numba objmode calls
into MPI, backends/sim/world.py); the hazard checker adds rule R2 (a TNOTIFY overtaking a TPUT).

Choices where the NPU leaves the result open:
* TPUT AtomicAdd: integers wrap, floats are one addition rounded to the type (as TSTORE's);
  concurrent adds to one element from several ranks land in an unspecified order.
* TREDUCE Max/Min with NaNs: a NaN wins (numpy's maximum/minimum).
* TTEST returns 1 or 0: a Python value in eager mode, a runtime condition in compiled mode
  (``for _ in pto.when(pto.TTEST(...)):``); the C++ keeps it in an int64 pypto_tt<n>.
Reference: conformance/test_comm.py and tests/comm_cases/.
"""
from __future__ import annotations

from ..backends.sim import lowering as L
from ..backends.sim.world import CMP, DTYPES
from ..errors import CommError, DTypeError, LocationError, OperandError
from ..ir.nodes import GmView, GroupView, TileVar
from ..ir.registry import Unit, register
from ..ir.verify import slots_of
from ..isa import TABLE
from .memory import ATOMIC_TYPES

_FN = "comm."
_KIND = {"TGATHER_COMM": 0, "TSCATTER_COMM": 1, "TBROADCAST": 2}
_REDUCE = {"Sum": 0, "Max": 1, "Min": 2}


def _named(node) -> dict:
    return {o.name: x for o, x in zip(slots_of(node.name, node.operands), node.operands)}


# -- checks ---------------------------------------------------------------------------------------
def _staging(node, t: TileVar, gm: GmView, what: str) -> None:
    ty = t.type
    if ty.loc != "Vec" or ty.layout_name != "ND":
        raise LocationError(f"{node.name}: {what} {t.name} is a {ty.loc} {ty.layout_name} tile",
                            rule="communication stages through row-major (ND) Vec tiles in UB",
                            fix=f"declare {t.name} as pto.Tile(pto.Vec, dtype, (rows, cols))")
    if ty.dtype is not gm.tensor.dtype:
        raise DTypeError(f"{node.name}: {what} {t.name} holds {ty.dtype.name} but the GM data is "
                         f"{gm.tensor.dtype.name}",
                         rule="the staging tile has the GM tensors' element type (pto::comm "
                              "static_asserts it)", fix=f"declare {t.name} with {gm.tensor.dtype.name}")


def _local(node, v: GmView, what: str) -> None:
    if v.rank is not None:
        raise CommError(f"{node.name}: {what} is a view on another rank ({v!r})",
                        rule=f"{node.name}'s {what} is in this device's GM (comm-semantics R5)",
                        fix=f"pass this rank's view as {what}, without pto.remote")


def _group(node, x) -> GroupView:
    if not isinstance(x, GroupView):
        raise OperandError(f"{node.name}: operand group is {x!r}, not a pto.ParallelGroup",
                           rule="a collective takes the group of every rank's copy of a view",
                           fix="pass pto.ParallelGroup(view, pto.rank_num(), root)")
    return x


def check(node, soc) -> None:
    ops = _named(node)
    name = node.name
    if name in ("TPUT", "TGET"):
        dst, src = (ops["dstRemote"], ops["srcLocal"]) if name == "TPUT" else (ops["dstLocal"], ops["srcRemote"])
        _local(node, src if name == "TPUT" else dst, "srcLocal" if name == "TPUT" else "dstLocal")
        if dst.tensor.dtype is not src.tensor.dtype or dst.layout != src.layout:
            raise DTypeError(f"{name}: dst is {dst.tensor.dtype.name} {dst.layout}, src "
                             f"{src.tensor.dtype.name} {src.layout}",
                             rule="source and destination share element type and layout",
                             fix="move between tensors of one dtype and layout")
        _tiles(node, ops, src if name == "TPUT" else dst)
        if name == "TPUT" and node.params.get("atomic", "None") == "AtomicAdd" and \
                dst.tensor.dtype.short not in ATOMIC_TYPES[soc.name]:
            raise DTypeError(f"TPUT(atomic='AtomicAdd') of {dst.tensor.dtype.name} on {soc.name}",
                             rule=f"the atomic add of TSTORE takes {', '.join(ATOMIC_TYPES[soc.name])} "
                                  f"on {soc.name}", fix="put without atomic, or convert the data")
    elif name in ("TWAIT", "TTEST"):
        _local(node, ops["signal"], "signal")
    elif name in _KIND or name == "TREDUCE":
        g = _group(node, ops["group"])
        other = next(x for k, x in ops.items() if k in ("dst", "src"))
        _local(node, other, "dst" if "dst" in ops else "src")
        if other.tensor.dtype is not g.tensor.dtype:
            raise DTypeError(f"{name}: the group is {g.tensor.dtype.name}, the local tensor "
                             f"{other.tensor.dtype.name}", rule="a collective moves one element type",
                             fix="use tensors of one dtype")
        _tiles(node, ops, g)


def _tiles(node, ops: dict, gm: GmView) -> None:
    tiles = [(k, x) for k, x in ops.items() if isinstance(x, TileVar)]
    for k, t in tiles:
        _staging(node, t, gm, k)
    first = tiles[0][1]
    for k, t in tiles[1:]:
        if t.type != first.type:
            raise LocationError(f"{node.name}: {k} {t.name} is {t.type}, {tiles[0][0]} {first.name} "
                                f"is {first.type}", rule="the staging tiles of one transfer are alike",
                                fix=f"declare {t.name} like {first.name}")


# -- simulator ------------------------------------------------------------------------------------
def _peer(v: GmView) -> tuple:
    return ("int", v.rank) if v.rank is not None else L.lit(-1)


def _tile_pair(ping: TileVar, pong: TileVar | None) -> tuple:
    return (L.tile(ping), L.tile(pong if pong is not None else ping), L.lit(pong is not None),
            L.lit(bool(ping.dynamic)))


def _dcode(v: GmView) -> tuple:
    return L.lit(DTYPES.index(v.tensor.dtype.short))


def lower(node, soc) -> list[L.Call]:
    ops = _named(node)
    name = node.name
    fn = L.lib(_FN + name.lower())
    if name == "TPUT":
        dst, src = ops["dstRemote"], ops["srcLocal"]
        args = L.view(dst) + (_peer(dst),) + L.view(src) + _tile_pair(ops["tile"], ops.get("pong")) + \
            (L.lit(node.params.get("atomic", "None") == "AtomicAdd"), _dcode(dst), L.err())
        return L.bounds(dst) + L.bounds(src) + [L.Call(fn, args)]
    if name == "TGET":
        dst, src = ops["dstLocal"], ops["srcRemote"]
        args = L.view(dst) + L.view(src) + (_peer(src),) + _tile_pair(ops["tile"], ops.get("pong")) + (L.err(),)
        return L.bounds(dst) + L.bounds(src) + [L.Call(fn, args)]
    if name == "TNOTIFY":
        sig = ops["signal"]
        args = L.view(sig) + (_peer(sig), ("int", ops["value"]),
                              L.lit(node.params.get("notifyOp") == "AtomicAdd"), L.err())
        return L.bounds(sig) + [L.Call(fn, args)]
    if name in ("TWAIT", "TTEST"):
        sig = ops["signal"]
        args = L.view(sig) + (("int", ops["value"]), L.lit(CMP.index(node.params["cmp"])))
        args += (("result",), L.err()) if name == "TTEST" else (L.err(),)
        return L.bounds(sig) + [L.Call(fn, args)]
    g = ops["group"]
    head = L.view(g) + (("int", g.nranks), ("int", g.root))
    if name == "TREDUCE":
        dst = ops["dst"]
        pong = ops.get("pong")
        args = head + L.view(dst) + (L.tile(ops["acc"]), L.tile(ops["recv"]),
                                     L.tile(pong if pong is not None else ops["recv"]),
                                     L.lit(pong is not None), L.lit(bool(ops["acc"].dynamic)),
                                     L.lit(_REDUCE[node.params["reduceOp"]]), _dcode(g), L.err())
        return L.bounds(g) + L.bounds(dst) + [L.Call(fn, args)]
    other = ops.get("dst", ops.get("src"))
    args = (L.lit(_KIND[name]),) + head + L.view(other) + _tile_pair(ops["tile"], ops.get("pong")) + (L.err(),)
    return L.bounds(g) + L.bounds(other) + [L.Call(L.lib(_FN + "collective"), args)]


# -- C++ emission ---------------------------------------------------------------------------------
_CPP = {"TGATHER_COMM": "TGATHER", "TSCATTER_COMM": "TSCATTER"}


def emit(node, soc, cx) -> str:
    """``comm::NAME(...)`` with pto-isa's signatures: views (a peer's through pypto_remote), the
    group as a ParallelGroup of every rank's view, tiles by name, enumerators for the modes."""
    ops = []
    for o, x in zip(slots_of(node.name, node.operands), node.operands):
        if isinstance(x, GroupView):
            ops.append(cx.group(x))
        elif isinstance(x, (GmView, TileVar)):
            ops.append(cx.operand(x))
        elif x is not None:
            ops.append(f"(int32_t)({cx.expr(x)})")
    p = node.params
    name, tmpl = f"comm::{_CPP.get(node.name, node.name)}", ""
    if node.name == "TPUT" and p.get("atomic", "None") == "AtomicAdd":
        tmpl = "<AtomicType::AtomicAdd>"
    if node.name == "TNOTIFY":
        ops.append(f"comm::NotifyOp::{p['notifyOp']}")
    elif node.name in ("TWAIT", "TTEST"):
        ops.append(f"comm::WaitCmp::{p['cmp']}")
    elif node.name == "TREDUCE":
        ops.append(f"comm::ReduceOp::{p['reduceOp']}")
    call = f"{name}{tmpl}({', '.join(ops)})"
    if node.name == "TTEST":
        return f"pypto_tt{node.result.slot} = {call} ? 1 : 0;" if node.result is not None else f"(void){call};"
    return call + ";"


for _name, _spec in TABLE.items():
    if _spec.category == "comm":
        register(Unit(_name, check=check, sim=lower, emit=emit))
del _name, _spec
