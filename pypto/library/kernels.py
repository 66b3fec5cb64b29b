"""The whole-tensor kernels behind load_insn, one per instruction form, written in pypto's DSL.

A contiguous tensor is walked in tiles of about TILE_BYTES, each block taking an even, contiguous
share of the chunks; the tail chunk is a narrower valid region. Sizes are runtime values
(dynamic_shapes), so a new shape never recompiles; a new dtype does. The flags are the ones a real
PTO kernel needs between the DMA and vector pipes.
"""
from __future__ import annotations

import functools
import math

from .. import dtypes as D
from ..errors import DTypeError, OperandError, ShapeError
from ..lang import pto
from ..lang.kernel import KernelFunction, kernel
from . import forms as F

TILE_BYTES = 32 * 1024        # one tile; elementwise kernels use two (64 KiB of UB)
ROWS = 16                     # rows per tile of the row reductions


def launch_dims(chunks: int, max_blocks: int) -> int:
    """Blocks for a number of chunks: one per chunk, at most the SoC's vector cores."""
    return max(1, min(chunks, max_blocks))


def elementwise_chunks(n: int, itemsize: int) -> int:
    return -(-n // (TILE_BYTES // itemsize))


def row_chunks(rows: int) -> int:
    return -(-rows // ROWS)


def row_width(itemsize: int) -> int:
    """The widest row the row-reduction kernel takes (one tile of 64 KiB)."""
    return 2 * TILE_BYTES // (ROWS * itemsize)


def _walk(n, cols):
    """Yield (offset, width) of this block's chunks: an even, contiguous share of them, so its GM
    reads and writes stay sequential (on two simulator threads a 16M-element add took 6.9 ms
    instead of 7.2 ms with every block_num-th chunk)."""
    chunks = (n + cols - 1) // cols
    b, nb = pto.block_idx(), pto.block_num()
    for i in pto.range(b * chunks // nb, (b + 1) * chunks // nb):
        off = i * cols
        yield off, pto.min(cols, n - off)


def handoff(src: str, dst: str) -> None:
    """Pipe dst waits for what pipe src has done (the flag pair a PTO kernel needs between them)."""
    pto.set_flag(src, dst, pto.EVENT_ID0)
    pto.wait_flag(src, dst, pto.EVENT_ID0)


def _elementwise(name: str, form: str) -> KernelFunction:
    """z = op(x, y) (binary: y a tensor; scalar: y a scalar) or z = op(x) (unary)."""
    op = getattr(pto, name)

    def compute(a, b, y):
        if form == "binary":
            op(a, a, b)
        elif form == "scalar":
            op(a, a, y)
        else:
            op(a, a)

    def body(x, y, z):
        n = x.shape[0]
        cols = TILE_BYTES // x.dtype.itemsize
        a = pto.Tile(pto.Vec, x.dtype, (1, cols), valid=pto.DYNAMIC)
        b = pto.Tile(pto.Vec, x.dtype, (1, cols), valid=pto.DYNAMIC) if form == "binary" else None
        loads = [(a, x), (b, y)] if form == "binary" else [(a, x)]
        for off, w in _walk(n, cols):
            for t, src in loads:
                t.set_valid(1, w)
                pto.TLOAD(t, src[off:off + w])
            handoff(pto.PIPE_MTE2, pto.PIPE_V)
            compute(a, b, y)
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(z[off:off + w], a)
            handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

    if form == "unary":
        def body2(x, z):
            body(x, None, z)
        fn = body2
    else:
        fn = body
    fn.__name__ = fn.__qualname__ = f"lib_{name.lower()}"
    return kernel(fn, dynamic_shapes=True)


def _rowreduce(name: str) -> KernelFunction:
    """y[i, 0] = reduce_j x[i, j] over a (rows, cols) tensor, ROWS rows per tile."""
    op = getattr(pto, name)

    def body(x, y):
        rows, cols = x.shape[0], x.shape[1]
        width = row_width(x.dtype.itemsize)
        src = pto.Tile(pto.Vec, x.dtype, (ROWS, width), valid=pto.DYNAMIC)
        tmp = pto.Tile(pto.Vec, x.dtype, (ROWS, width))
        dst = pto.Tile(pto.Vec, x.dtype, (ROWS, 1), blayout=pto.ColMajor, valid=pto.DYNAMIC)
        chunks = (rows + ROWS - 1) // ROWS
        for i in pto.range(pto.block_idx(), chunks, pto.block_num()):
            r0 = i * ROWS
            h = pto.min(ROWS, rows - r0)
            src.set_valid(h, cols)
            dst.set_valid(h, 1)
            pto.TLOAD(src, x[r0:r0 + h, :])
            handoff(pto.PIPE_MTE2, pto.PIPE_V)
            op(dst, src, tmp)
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(y[r0:r0 + h, :], dst)
            handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

    body.__name__ = body.__qualname__ = f"lib_{name.lower()}"
    return kernel(body, dynamic_shapes=True)


def _cast(name: str, params: tuple) -> KernelFunction:
    """z = convert(x) elementwise, with the instruction's mode parameters."""
    op = getattr(pto, name)
    kw = dict(params)

    def body(x, z):
        n = x.shape[0]
        cols = TILE_BYTES // 4
        a = pto.Tile(pto.Vec, x.dtype, (1, cols), valid=pto.DYNAMIC)
        d = pto.Tile(pto.Vec, z.dtype, (1, cols), valid=pto.DYNAMIC)
        for off, w in _walk(n, cols):
            a.set_valid(1, w)
            d.set_valid(1, w)
            pto.TLOAD(a, x[off:off + w])
            handoff(pto.PIPE_MTE2, pto.PIPE_V)
            op(d, a, **kw)
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(z[off:off + w], d)
            handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

    body.__name__ = body.__qualname__ = f"lib_{name.lower()}"
    return kernel(body, dynamic_shapes=True)


# -- the forms of these kernels ---------------------------------------------------------------

def _same(call: F.Call) -> D.DType:
    F.same_shape(call)
    return F.same_dtype(call)


def _elementwise_blocks(call: F.Call, itemsize: int | None = None) -> int:
    n, dt = max(math.prod(call.info[0][1]), 1), call.info[0][0]
    return launch_dims(elementwise_chunks(n, itemsize or dt.itemsize), call.soc.aiv_cores)


def _ew_form(form: str, slot_spec: str, example) -> None:
    F.register(F.Form(form, F.slots(slot_spec), functools.partial(_cached_elementwise, form=form),
                      _same, F.flat, _elementwise_blocks, example))


@functools.lru_cache(maxsize=None)
def _cached_elementwise(name: str, params: tuple = (), *, form: str) -> KernelFunction:
    return _elementwise(name, form)


@functools.lru_cache(maxsize=None)
def _cached_rowreduce(name: str, params: tuple = ()) -> KernelFunction:
    return _rowreduce(name)


@functools.lru_cache(maxsize=None)
def _cached_cast(name: str, params: tuple = ()) -> KernelFunction:
    return _cast(name, params)


def _x(dt, n=1024):
    from ..tensor import empty
    return empty((n,), dt)


_ew_form("binary", "src0:in src1:in dst:out", lambda dt, to: (_x(dt), _x(dt), _x(dt)))
_ew_form("scalar", "src:in scalar:scalar dst:out",
         lambda dt, to: (_x(dt), 1 if dt.is_int else 1.0, _x(dt)))
_ew_form("unary", "src:in dst:out", lambda dt, to: (_x(dt), _x(dt)))


def _check_rowreduce(call: F.Call) -> D.DType:
    dt = F.same_dtype(call)
    rows, cols = F.matrix(call, 0)
    F.vector_of(call, 1, rows, "row")
    if cols > row_width(dt.itemsize):
        F.matrix(call, 0, row_width(dt.itemsize))
    return dt


def _rowreduce_example(dt, to):
    from ..tensor import empty
    return empty((16, 64), dt), empty((16, 1), dt)


F.register(F.Form("rowreduce", F.slots("src:in dst:out"), _cached_rowreduce, _check_rowreduce,
                  lambda call: {0: call.info[0][1], 1: (call.info[0][1][0], 1)},
                  lambda call: launch_dims(row_chunks(call.info[0][1][0]), call.soc.aiv_cores),
                  _rowreduce_example))


def _cast_pairs(call: F.Call) -> str:
    return ", ".join(f"{s}->{d}" for d, s in call.spec.dtypes_on(call.soc.name))


def _check_cast(call: F.Call) -> D.DType:
    (sdt, sshape), (ddt, dshape) = call.info[0], call.info[1]
    if sshape != dshape:
        raise ShapeError(f"{call.what(1)} has shape {dshape} but src has {sshape}",
                         rule=f"{call.name} converts elementwise over equal shapes",
                         fix="pass a dst of the source's shape")
    soc = call.soc.name
    if (ddt.short, sdt.short) not in call.spec.dtypes_on(soc):
        raise DTypeError(f"{call.name} cannot convert {sdt.name} to {ddt.name} on {soc}",
                         rule=f"{call.name} on {soc} converts {_cast_pairs(call)}",
                         fix="pick a legal pair (convert in two steps through float32)")
    if call.params.get("rmode") == "CAST_ODD" and (sdt.short, ddt.short) != ("f32", "f16") \
            and soc == "a5":
        raise OperandError(f"{call.name}: rmode=CAST_ODD converts only float32 -> float16 on a5",
                           rule="on a5 TCVT with CAST_ODD does nothing for any other pair, so the "
                                "output would keep whatever it held",
                           fix="use another rounding mode")
    return sdt


def _cast_example(dt, to):
    from .. import dtypes
    return _x(dt), _x(dtypes.as_dtype(to or "float32", context="--to"))


F.register(F.Form("cast", F.slots("src:in dst:out"), _cached_cast, _check_cast, F.flat,
                  lambda call: _elementwise_blocks(call, 4), _cast_example, _cast_pairs))


def kernel_for(name: str, form: str, params: tuple = ()) -> KernelFunction:
    """The library kernel of instruction ``name`` in its load_insn form (cached)."""
    return F.FORMS[form].kernel(name, params)
