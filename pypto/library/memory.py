"""Whole-tensor forms of the memory and movement family: gather (MGATHER), scatter (MSCATTER) and
trans (TTRANS), written in pypto's DSL.

* gather(src, index, dst): dst[k] = src.flat[index[k]] (index int32/uint32, dst of index's shape
  and src's dtype); a5 only, as MGATHER. An index outside src is an IndexRangeError.
* scatter(src, index, base, dst): dst = base, then dst.flat[index[k]] = src[k] in order (the last
  write wins); one block, so the order is the index order. a5 only, as MSCATTER.
* trans(src, dst): dst = src.T for a 2-D src (rows, cols) and dst (cols, rows), in 32 x 32 tiles.
There is no seed form for TMOV (a whole-tensor copy is a TLOAD/TSTORE pair) or for the atomic
store (at tensor level it is "add").
"""
from __future__ import annotations

import functools
import math

from .. import dtypes as D
from ..errors import DTypeError, DTypeMismatchError, ShapeError
from ..lang import pto
from ..lang.kernel import KernelFunction, kernel
from . import forms as F
from .kernels import TILE_BYTES, handoff, _walk, elementwise_chunks, launch_dims

TRANS_TILE = 32               # trans: square tiles (32 x 32: a 32-byte row even for 1-byte types)
INDEX_TYPES = ("i32", "u32")


def _gather(name: str) -> KernelFunction:
    def lib_mgather(x, i, y):
        n = i.shape[0]
        cols = TILE_BYTES // 4
        it = pto.Tile(pto.Vec, i.dtype, (1, cols), valid=pto.DYNAMIC)
        dt = pto.Tile(pto.Vec, x.dtype, (1, cols), valid=pto.DYNAMIC)
        for off, w in _walk(n, cols):
            it.set_valid(1, w)
            dt.set_valid(1, w)
            pto.TLOAD(it, i[off:off + w])
            handoff(pto.PIPE_MTE2, pto.PIPE_V)
            pto.MGATHER(dt, x, it)
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(y[off:off + w], dt)
            handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)
    return kernel(lib_mgather, dynamic_shapes=True)


def _scatter(name: str) -> KernelFunction:
    def lib_mscatter(s, i, base, y):
        n, m = i.shape[0], base.shape[0]
        cols = TILE_BYTES // 4
        bt = pto.Tile(pto.Vec, base.dtype, (1, cols), valid=pto.DYNAMIC)
        for k in pto.range(0, (m + cols - 1) // cols):          # dst = base
            off = k * cols
            w = pto.min(cols, m - off)
            bt.set_valid(1, w)
            pto.TLOAD(bt, base[off:off + w])
            handoff(pto.PIPE_MTE2, pto.PIPE_MTE3)
            pto.TSTORE(y[off:off + w], bt)
            handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)
        handoff(pto.PIPE_MTE3, pto.PIPE_V)
        it = pto.Tile(pto.Vec, i.dtype, (1, cols), valid=pto.DYNAMIC)
        st = pto.Tile(pto.Vec, s.dtype, (1, cols), valid=pto.DYNAMIC)
        for k in pto.range(0, (n + cols - 1) // cols):          # then the writes, in order
            off = k * cols
            w = pto.min(cols, n - off)
            it.set_valid(1, w)
            st.set_valid(1, w)
            pto.TLOAD(it, i[off:off + w])
            pto.TLOAD(st, s[off:off + w])
            handoff(pto.PIPE_MTE2, pto.PIPE_V)
            pto.MSCATTER(y, st, it)
            handoff(pto.PIPE_V, pto.PIPE_MTE2)
    return kernel(lib_mscatter, dynamic_shapes=True)


def _trans(name: str) -> KernelFunction:
    b = TRANS_TILE

    def lib_ttrans(x, y):
        rows, cols = x.shape[0], x.shape[1]
        s = pto.Tile(pto.Vec, x.dtype, (b, b), valid=pto.DYNAMIC)
        d = pto.Tile(pto.Vec, x.dtype, (b, b), valid=pto.DYNAMIC)
        tmp = pto.Tile(pto.Vec, x.dtype, (b, b))
        nr, nc = (rows + b - 1) // b, (cols + b - 1) // b
        for k in pto.range(pto.block_idx(), nr * nc, pto.block_num()):
            r0, c0 = (k // nc) * b, (k % nc) * b
            h, w = pto.min(b, rows - r0), pto.min(b, cols - c0)
            s.set_valid(h, w)
            pto.TLOAD(s, x[r0:r0 + h, c0:c0 + w])
            handoff(pto.PIPE_MTE2, pto.PIPE_V)
            pto.TTRANS(d, s, tmp)
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            d.set_valid(w, h)
            pto.TSTORE(y[c0:c0 + w, r0:r0 + h], d)
            handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)
    return kernel(lib_ttrans, dynamic_shapes=True)


@functools.lru_cache(maxsize=None)
def _cached(form: str, name: str, params: tuple = ()) -> KernelFunction:
    return {"gather": _gather, "scatter": _scatter, "trans": _trans}[form](name)


# -- rules ------------------------------------------------------------------------------------------

def _data_types(call: F.Call) -> tuple[str, ...]:
    return tuple(dict.fromkeys(c[0] for c in call.spec.dtypes_on(call.soc.name)))


def _data_text(call: F.Call) -> str:
    names = ", ".join(D.BY_NAME[s].name for s in _data_types(call) if s in D.BY_NAME)
    return f"{names} (indices int32 or uint32)" if names else "nothing"


def _require_data(call: F.Call, i: int) -> D.DType:
    dt = call.info[i][0]
    if dt.short not in _data_types(call):
        other = "a5" if call.soc.name != "a5" else "a2a3"
        raise DTypeError(f"{call.what(i)} is {dt.name}: {call.name} does not take it on {call.soc.name}",
                         rule=f"{call.name} on {call.soc.name} takes {_data_text(call)}",
                         fix="convert the data" + (f" or use pypto.init(soc='{other}')"
                                                   if dt.short in tuple(c[0] for c in call.spec.dtypes_on(other))
                                                   else ""))
    return dt


def _require_index(call: F.Call, i: int) -> None:
    dt = call.info[i][0]
    if dt.short not in INDEX_TYPES:
        raise DTypeError(f"{call.what(i)} is {dt.name}", rule=f"{call.name}'s indices are int32 or uint32",
                         fix="pass the indices as int32 (e.g. arr.astype(np.int32))")


def _same(call: F.Call, i: int, j: int, what: str) -> None:
    if call.info[i][0] != call.info[j][0]:
        raise DTypeMismatchError(f"{call.what(j)} is {call.info[j][0].name} but {call.what(i)} is "
                                 f"{call.info[i][0].name}", rule=f"{call.name}: {what}",
                                 fix=f"use one element type, e.g. dtype=pypto.{call.info[i][0].name}")
    if call.info[i][1] != call.info[j][1] and "shape" in what:
        raise ShapeError(f"{call.what(j)} has shape {call.info[j][1]} but {call.what(i)} has "
                         f"{call.info[i][1]}", rule=f"{call.name}: {what}", fix="pass equal shapes")


def _nonempty(call: F.Call, *idx: int) -> None:
    for i in idx:
        if math.prod(call.info[i][1]) == 0:
            raise ShapeError(f"{call.what(i)} is empty (shape {call.info[i][1]})",
                             rule=f"{call.name} works on non-empty tensors", fix="pass at least one element")


def _check_gather(call: F.Call) -> D.DType:
    dt = _require_data(call, 0)
    _require_index(call, 1)
    _nonempty(call, 0, 1)
    if call.info[2][0] != dt:
        raise DTypeMismatchError(f"{call.what(2)} is {call.info[2][0].name} but src is {dt.name}",
                                 rule="gather's dst has src's element type", fix=f"use dtype=pypto.{dt.name}")
    if call.info[2][1] != call.info[1][1]:
        raise ShapeError(f"{call.what(2)} has shape {call.info[2][1]} but index has {call.info[1][1]}",
                         rule="gather's dst has index's shape (one value per index)",
                         fix="pass a dst of the index's shape")
    return dt


def _check_scatter(call: F.Call) -> D.DType:
    dt = _require_data(call, 0)
    _require_index(call, 1)
    _nonempty(call, 2)
    if call.info[0][1] != call.info[1][1]:
        raise ShapeError(f"{call.what(0)} has shape {call.info[0][1]} but index has {call.info[1][1]}",
                         rule="scatter writes one value per index: src and index have one shape",
                         fix="pass src and index of one shape")
    _same(call, 0, 2, "base has src's element type")
    _same(call, 2, 3, "dst has base's element type and shape")
    return dt


def _check_trans(call: F.Call) -> D.DType:
    dt = F.same_dtype(call)
    rows, cols = F.matrix(call, 0)
    if call.info[1][1] != (cols, rows):
        raise ShapeError(f"{call.what(1)} has shape {call.info[1][1]}",
                         rule=f"trans of a ({rows}, {cols}) tensor is ({cols}, {rows})",
                         fix=f"pass a dst of shape ({cols}, {rows})")
    return dt


def _flat(call: F.Call) -> dict[int, tuple]:
    return {i: (max(math.prod(s), 1),) for i, (_, s) in call.info.items()}


def _example_gather(dt, to):
    from ..tensor import empty
    return empty((1024,), dt), empty((256,), D.int32), empty((256,), dt)


def _example_scatter(dt, to):
    from ..tensor import empty
    return empty((256,), dt), empty((256,), D.int32), empty((1024,), dt), empty((1024,), dt)


def _example_trans(dt, to):
    from ..tensor import empty
    return empty((64, 96), dt), empty((96, 64), dt)


F.register(F.Form("gather", F.slots("src:in index:in dst:out"), functools.partial(_cached, "gather"),
                  _check_gather, _flat,
                  lambda call: launch_dims(elementwise_chunks(math.prod(call.info[1][1]), 4),
                                           call.soc.aiv_cores),
                  _example_gather, _data_text))
F.register(F.Form("scatter", F.slots("src:in index:in base:in dst:out"),
                  functools.partial(_cached, "scatter"), _check_scatter, _flat, lambda call: 1,
                  _example_scatter, _data_text))
F.register(F.Form("trans", F.slots("src:in dst:out"), functools.partial(_cached, "trans"), _check_trans,
                  lambda call: {0: call.info[0][1], 1: call.info[1][1]},
                  lambda call: launch_dims(math.prod(-(-d // TRANS_TILE) for d in call.info[0][1]),
                                           call.soc.aiv_cores),
                  _example_trans))
