"""load_insn's forms of the bit, compare and select family, and their library kernels.

* ``xor`` (src0, src1, dst), ``scalar_distinct`` (src, scalar, dst) and ``xors`` (src, scalar,
  dst): elementwise over equal shapes like ``binary`` / ``scalar``, but dst (and TXOR's / TXORS's
  tmp) is a tile of its own, since those instructions may not run in place.
* ``cmp`` (src0, src1, dst) and ``cmps`` (src, scalar, dst): n source elements -> dst, a uint8
  tensor of ceil(n / 8) bytes holding the predicate bits LSB first (element 8b+k is bit k of byte
  b; one row, so both SoCs pack alike). The bits of the last byte past n are 0. The mode comes
  from load_insn(..., cmpMode=...).
* ``sel`` (mask, src0, src1, dst) and ``sels`` (mask, src, scalar, dst): mask is a uint8 tensor of
  ceil(n / 8) bytes in the same packing; element k takes src0 (src) where bit k is 1.
Tensors are walked in one-row chunks of a multiple of 256 elements, so every chunk's bits start
on a byte boundary; sizes are runtime values (a new size does not recompile).
"""
from __future__ import annotations

import functools
import math

from .. import dtypes as D
from ..errors import DTypeError, DTypeMismatchError, OperandError, ShapeError
from ..lang import pto
from ..lang.kernel import KernelFunction, kernel
from . import forms as F
from .kernels import TILE_BYTES, handoff, _walk, elementwise_chunks, launch_dims


def _cols(dt) -> int:
    return TILE_BYTES // dt.itemsize


def _tile(dt, cols):
    return pto.Tile(pto.Vec, dt, (1, cols), valid=pto.DYNAMIC)


# -- kernels ----------------------------------------------------------------------------------------
def _elementwise(name: str, form: str, params: tuple) -> KernelFunction:
    """dst = op(x, y) with dst (and tmp) tiles of their own."""
    op = getattr(pto, name)

    def body(x, y, z):
        n = x.shape[0]
        cols = _cols(x.dtype)
        a = _tile(x.dtype, cols)
        b = _tile(x.dtype, cols) if form == "xor" else None
        d = _tile(x.dtype, cols)
        t = _tile(x.dtype, cols) if form in ("xor", "xors") else None
        for off, w in _walk(n, cols):
            a.set_valid(1, w)
            pto.TLOAD(a, x[off:off + w])
            if b is not None:
                b.set_valid(1, w)
                pto.TLOAD(b, y[off:off + w])
            d.set_valid(1, w)
            if t is not None:
                t.set_valid(1, w)
            handoff(pto.PIPE_MTE2, pto.PIPE_V)
            if form == "xor":
                op(d, a, b, t)
            elif form == "xors":
                op(d, a, y, t)
            else:
                op(d, a, y)
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(z[off:off + w], d)
            handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

    body.__name__ = body.__qualname__ = f"lib_{name.lower()}"
    return kernel(body, dynamic_shapes=True)


def _compare(name: str, form: str, params: tuple) -> KernelFunction:
    """z (bits) = x cmpMode y over n elements, chunk by chunk (a chunk's bits start at byte off / 8)."""
    op = getattr(pto, name)
    kw = dict(params)

    def body(x, y, z):
        n = x.shape[0]
        cols = _cols(x.dtype)
        a = _tile(x.dtype, cols)
        b = _tile(x.dtype, cols) if form == "cmp" else None
        m = _tile(D.uint8, cols // 8)
        for off, w in _walk(n, cols):
            nb = (w + 7) // 8
            a.set_valid(1, w)
            pto.TLOAD(a, x[off:off + w])
            if b is not None:
                b.set_valid(1, w)
                pto.TLOAD(b, y[off:off + w])
            m.set_valid(1, nb)
            handoff(pto.PIPE_MTE2, pto.PIPE_V)
            op(m, a, b if b is not None else y, **kw)
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(z[off // 8:off // 8 + nb], m)
            handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

    body.__name__ = body.__qualname__ = f"lib_{name.lower()}"
    return kernel(body, dynamic_shapes=True)


def _select(name: str, form: str, params: tuple) -> KernelFunction:
    """z = mask ? x : y (a tensor or a scalar) over n elements."""
    op = getattr(pto, name)

    def body(mask, x, y, z):
        n = x.shape[0]
        cols = _cols(x.dtype)
        m = _tile(D.uint8, cols // 8)
        a = _tile(x.dtype, cols)
        b = _tile(x.dtype, cols) if form == "sel" else None
        d = _tile(x.dtype, cols)
        for off, w in _walk(n, cols):
            nb = (w + 7) // 8
            m.set_valid(1, nb)
            pto.TLOAD(m, mask[off // 8:off // 8 + nb])
            a.set_valid(1, w)
            pto.TLOAD(a, x[off:off + w])
            if b is not None:
                b.set_valid(1, w)
                pto.TLOAD(b, y[off:off + w])
            d.set_valid(1, w)
            handoff(pto.PIPE_MTE2, pto.PIPE_V)
            op(d, m, a, b if b is not None else y)
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(z[off:off + w], d)
            handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

    body.__name__ = body.__qualname__ = f"lib_{name.lower()}"
    return kernel(body, dynamic_shapes=True)


@functools.lru_cache(maxsize=None)
def _cached(name: str, params: tuple = (), *, form: str) -> KernelFunction:
    if form in ("cmp", "cmps"):
        return _compare(name, form, params)
    if form in ("sel", "sels"):
        return _select(name, form, params)
    return _elementwise(name, form, params)


# -- rules ------------------------------------------------------------------------------------------
def _legal_sources(call: F.Call) -> list[D.DType]:
    """Element types the data operands may have (per-operand tuples or one shared list)."""
    col = {"TCMP": 1, "TCMPS": 1, "TSEL": 0, "TSELS": 0}.get(call.spec.name)
    out: list[D.DType] = []
    for combo in call.spec.dtypes_on(call.soc.name):
        s = combo[col] if isinstance(combo, tuple) else combo
        if s in D.BY_NAME and D.BY_NAME[s] not in out:
            out.append(D.BY_NAME[s])
    return out


def _legal_text(call: F.Call) -> str:
    return ", ".join(d.name for d in _legal_sources(call))


def _require(call: F.Call, dt: D.DType) -> None:
    legal = _legal_sources(call)
    if dt not in legal:
        raise DTypeError(f"{call.name} does not accept {dt.name} on {call.soc.name}",
                         rule=f"{call.name} takes {', '.join(d.name for d in legal)} on {call.soc.name}",
                         fix="convert the operands first")


def _same(call: F.Call, idx: list[int]) -> D.DType:
    first = idx[0]
    dt, shape = call.info[first]
    for i in idx[1:]:
        if call.info[i][0] != dt:
            raise DTypeMismatchError(f"{call.what(i)} is {call.info[i][0].name} but operand {first} is {dt.name}",
                                     rule=f"{call.name}'s data operands share one element type",
                                     fix=f"convert them to one type, e.g. dtype=pypto.{dt.name}")
        if call.info[i][1] != shape:
            raise ShapeError(f"{call.what(i)} has shape {call.info[i][1]} but operand {first} has {shape}",
                             rule=f"{call.name} is elementwise over equal shapes (no broadcasting)",
                             fix="pass operands of the same shape")
    _require(call, dt)
    return dt


def _bits_operand(call: F.Call, i: int, n: int) -> None:
    dt, shape = call.info[i]
    what = call.slots[i].name
    if dt != D.uint8:
        raise DTypeError(f"{call.what(i)} is {dt.name}",
                         rule=f"{call.name}'s {what} is a uint8 tensor of packed predicate bits (8 per byte)",
                         fix="pass a uint8 array")
    if math.prod(shape) != -(-n // 8):
        raise ShapeError(f"{call.what(i)} has {math.prod(shape)} bytes for {n} elements",
                         rule=f"{call.name}'s {what} holds one bit per element, LSB first: "
                              f"ceil({n} / 8) = {-(-n // 8)} bytes",
                         fix=f"pass a uint8 array of shape ({-(-n // 8)},)")


def _require_mode(call: F.Call) -> None:
    if call.params.get("cmpMode") is None:
        raise OperandError(f"{call.name}: cmpMode is not set",
                           rule=f"{call.name} needs a comparison: cmpMode is one of EQ, NE, LT, LE, GT, GE",
                           fix=f"load_insn(\"{call.name}\", cmpMode=\"EQ\") or insn.set_param(\"cmpMode\", \"LT\")")


def _check_elementwise(call: F.Call) -> D.DType:
    return _same(call, sorted(call.info))


def _check_cmp(call: F.Call) -> D.DType:
    _require_mode(call)
    tensors = sorted(call.info)
    dt = _same(call, tensors[:-1])
    _bits_operand(call, tensors[-1], math.prod(call.info[tensors[0]][1]))
    return dt


def _check_sel(call: F.Call) -> D.DType:
    tensors = sorted(call.info)
    dt = _same(call, tensors[1:])
    _bits_operand(call, tensors[0], math.prod(call.info[tensors[1]][1]))
    return dt


def _blocks(data: int):
    def blocks(call: F.Call) -> int:
        dt, shape = call.info[data]
        return launch_dims(elementwise_chunks(max(math.prod(shape), 1), dt.itemsize), call.soc.aiv_cores)
    return blocks


def _x(dt, n=1024):
    from ..tensor import empty
    return empty((n,), dt)


def _scalar_of(dt):
    return 1 if dt.is_int else 1.0


def _register(name, slots, check, data, example):
    F.register(F.Form(name, F.slots(slots), functools.partial(_cached, form=name), check, F.flat,
                      _blocks(data), example, _legal_text))


_register("xor", "src0:in src1:in dst:out", _check_elementwise, 0, lambda dt, to: (_x(dt), _x(dt), _x(dt)))
_register("scalar_distinct", "src:in scalar:scalar dst:out", _check_elementwise, 0,
          lambda dt, to: (_x(dt), _scalar_of(dt), _x(dt)))
_register("xors", "src:in scalar:scalar dst:out", _check_elementwise, 0,
          lambda dt, to: (_x(dt), _scalar_of(dt), _x(dt)))
_register("cmp", "src0:in src1:in dst:out", _check_cmp, 0,
          lambda dt, to: (_x(dt), _x(dt), _x(D.uint8, 128)))
_register("cmps", "src:in scalar:scalar dst:out", _check_cmp, 0,
          lambda dt, to: (_x(dt), _scalar_of(dt), _x(D.uint8, 128)))
_register("sel", "mask:in src0:in src1:in dst:out", _check_sel, 1,
          lambda dt, to: (_x(D.uint8, 128), _x(dt), _x(dt), _x(dt)))
_register("sels", "mask:in src:in scalar:scalar dst:out", _check_sel, 1,
          lambda dt, to: (_x(D.uint8, 128), _x(dt), _scalar_of(dt), _x(dt)))
