"""Whole-tensor forms of the arithmetic family (load_insn), in pypto's DSL.

* ``unary_to``, ``binary_to``, ``scalar_to``: as kernels.py's unary / binary / scalar forms, but
  the result goes to its own tile: on a2a3 TRECIP, TDIVS and TREM/TFMOD(S) compute in dst before
  they have read their sources, so dst must not be a source.
* ``prelu``: z = x > 0 ? x : x * y, with the u8 tmp tile TPRELU needs on a2a3 (a5 ignores it).
* ``fill``: z = scalar everywhere (TEXPANDS), operands (scalar, dst).
Tensors are walked as flat runs of TILE_BYTES tiles, blocks taking every block_num-th chunk.
"""
from __future__ import annotations

import functools
import math

from .. import dtypes as D
from ..errors import DTypeError
from ..lang import pto
from ..lang.kernel import KernelFunction, kernel
from . import forms as F
from .kernels import (TILE_BYTES, _elementwise_blocks, handoff, _same, _walk, _x, elementwise_chunks,
                      launch_dims)


def prelu_tmp_cols(dt: D.DType, cols: int) -> int:
    """Bytes per row of TPRELU's a2a3 predicate tile for ``cols`` source columns (32-aligned)."""
    per = 256 // dt.itemsize
    need = -(-cols // per) * per // 8
    return -(-need // 32) * 32


def _to(name: str, form: str, params: tuple) -> KernelFunction:
    """z = op(x[, y | scalar]) into a separate dst tile (prelu: with its tmp tile)."""
    op = getattr(pto, name)
    kw = dict(params)
    n_in = {"unary_to": 1, "binary_to": 2, "prelu": 2, "scalar_to": 1}[form]

    def body(*args):
        x, z = args[0], args[-1]
        y = args[1] if len(args) == 3 else None
        n = x.shape[0]
        cols = TILE_BYTES // x.dtype.itemsize
        a = pto.Tile(pto.Vec, x.dtype, (1, cols), valid=pto.DYNAMIC)
        b = pto.Tile(pto.Vec, x.dtype, (1, cols), valid=pto.DYNAMIC) if n_in == 2 else None
        d = pto.Tile(pto.Vec, x.dtype, (1, cols), valid=pto.DYNAMIC)
        tmp = pto.Tile(pto.Vec, pto.uint8, (1, prelu_tmp_cols(x.dtype, cols))) if form == "prelu" else None
        for off, w in _walk(n, cols):
            for t, src in ((a, x), (b, y))[:n_in]:
                t.set_valid(1, w)
                pto.TLOAD(t, src[off:off + w])
            d.set_valid(1, w)
            handoff(pto.PIPE_MTE2, pto.PIPE_V)
            if form == "unary_to":
                op(d, a, **kw)
            elif form == "binary_to":
                op(d, a, b, **kw)
            elif form == "prelu":
                op(d, a, b, tmp, **kw)
            else:
                op(d, a, y, **kw)
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(z[off:off + w], d)
            handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

    if n_in == 1 and form == "unary_to":
        def fn(x, z):
            body(x, z)
    else:
        def fn(x, y, z):
            body(x, y, z)
    fn.__name__ = fn.__qualname__ = f"lib_{name.lower()}"
    return kernel(fn, dynamic_shapes=True)


def _fill(name: str, params: tuple) -> KernelFunction:
    """z = scalar over the whole tensor."""
    op = getattr(pto, name)

    def body(s, z):
        n = z.shape[0]
        cols = TILE_BYTES // z.dtype.itemsize
        d = pto.Tile(pto.Vec, z.dtype, (1, cols), valid=pto.DYNAMIC)
        for off, w in _walk(n, cols):
            d.set_valid(1, w)
            op(d, s)
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(z[off:off + w], d)
            handoff(pto.PIPE_MTE3, pto.PIPE_V)          # d is free again for the next chunk

    body.__name__ = body.__qualname__ = f"lib_{name.lower()}"
    return kernel(body, dynamic_shapes=True)


@functools.lru_cache(maxsize=None)
def _cached(name: str, params: tuple = (), *, form: str) -> KernelFunction:
    return _fill(name, params) if form == "fill" else _to(name, form, params)


def _check_fill(call: F.Call) -> D.DType:
    dt = call.info[1][0]
    F.require_legal(call, dt)
    return dt


def _prelu_legal(call: F.Call) -> str:
    return ", ".join(D.BY_NAME[c[0]].name for c in call.spec.dtypes_on(call.soc.name))


def _check_prelu(call: F.Call) -> D.DType:
    """Same shapes and one element type, one of TPRELU's (dst, src0, src1, tmp) combinations."""
    F.same_shape(call)
    idx = sorted(call.info)
    dt = call.info[idx[0]][0]
    for i in idx[1:]:
        if call.info[i][0] != dt:
            F.same_dtype(call)                   # raises the mismatch error
    if dt.short not in {c[0] for c in call.spec.dtypes_on(call.soc.name)}:
        raise DTypeError(f"{call.name} does not accept {dt.name} on {call.soc.name}",
                         rule=f"{call.name} takes {_prelu_legal(call)} on {call.soc.name}",
                         fix="convert the operands (TCVT)")
    return dt


def _fill_blocks(call: F.Call) -> int:
    n, dt = max(math.prod(call.info[1][1]), 1), call.info[1][0]
    return launch_dims(elementwise_chunks(n, dt.itemsize), call.soc.aiv_cores)


def _register(form: str, slot_spec: str, example, check=_same, blocks=_elementwise_blocks,
              legal_text=None) -> None:
    F.register(F.Form(form, F.slots(slot_spec), functools.partial(_cached, form=form), check, F.flat,
                      blocks, example, legal_text))


_register("unary_to", "src:in dst:out", lambda dt, to: (_x(dt), _x(dt)))
_register("binary_to", "src0:in src1:in dst:out", lambda dt, to: (_x(dt), _x(dt), _x(dt)))
_register("prelu", "src0:in src1:in dst:out", lambda dt, to: (_x(dt), _x(dt), _x(dt)),
          check=_check_prelu, legal_text=_prelu_legal)
_register("scalar_to", "src:in scalar:scalar dst:out",
          lambda dt, to: (_x(dt), 1 if dt.is_int else 1.0, _x(dt)))
_register("fill", "scalar:scalar dst:out", lambda dt, to: (1 if dt.is_int else 1.0, _x(dt)),
          check=_check_fill, blocks=_fill_blocks)
