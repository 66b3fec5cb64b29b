"""The whole-tensor kernels behind load_insn, one per instruction form, written in pypto's DSL.

A contiguous tensor is walked in tiles of about TILE_BYTES, blocks taking every block_num-th
chunk; the tail chunk is a narrower valid region. Sizes are runtime values (dynamic_shapes), so a
new shape never recompiles; a new dtype does. The flags are the ones a real PTO kernel needs
between the DMA and vector pipes.
"""
from __future__ import annotations

import functools

from ..lang import pto
from ..lang.kernel import KernelFunction, kernel

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
    """Yield (offset, width) of this block's chunks."""
    chunks = (n + cols - 1) // cols
    for i in pto.range(pto.block_idx(), chunks, pto.block_num()):
        off = i * cols
        yield off, pto.min(cols, n - off)


def _handoff(src: str, dst: str) -> None:
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
            _handoff(pto.PIPE_MTE2, pto.PIPE_V)
            compute(a, b, y)
            _handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(z[off:off + w], a)
            _handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

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
            _handoff(pto.PIPE_MTE2, pto.PIPE_V)
            op(dst, src, tmp)
            _handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(y[r0:r0 + h, :], dst)
            _handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

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
            _handoff(pto.PIPE_MTE2, pto.PIPE_V)
            op(d, a, **kw)
            _handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(z[off:off + w], d)
            _handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

    body.__name__ = body.__qualname__ = f"lib_{name.lower()}"
    return kernel(body, dynamic_shapes=True)


@functools.lru_cache(maxsize=None)
def kernel_for(name: str, form: str, params: tuple = ()) -> KernelFunction:
    """The library kernel of instruction ``name`` in its load_insn form (cached)."""
    if form in ("binary", "scalar", "unary"):
        return _elementwise(name, form)
    if form == "rowreduce":
        return _rowreduce(name)
    if form == "cast":
        return _cast(name, params)
    raise KeyError(form)
