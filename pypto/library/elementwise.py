"""Whole-tensor elementwise kernels: a contiguous tensor is walked in 1 x N tiles of TILE_BYTES,
blocks taking every block_num-th chunk; the tail chunk is a narrower valid region.

Sizes are runtime values (dynamic_shapes), so a new shape never recompiles; a new dtype does.
The flags are the ones a real PTO kernel needs between the DMA and vector pipes.
"""
from __future__ import annotations

from ..lang import pto
from ..lang.kernel import kernel

TILE_BYTES = 32 * 1024      # two tiles per kernel: 64 KiB of UB


def launch_dims(n: int, itemsize: int, max_blocks: int) -> int:
    """Blocks for n elements: one per chunk, at most the SoC's vector cores."""
    chunks = -(-n // (TILE_BYTES // itemsize))
    return max(1, min(chunks, max_blocks))


def _walk(n, cols):
    """Yield (offset, width) of this block's chunks."""
    chunks = (n + cols - 1) // cols
    for i in pto.range(pto.block_idx(), chunks, pto.block_num()):
        off = i * cols
        yield off, pto.min(cols, n - off)


def _binary_kernel(op):
    def body(x, y, z):
        n = x.shape[0]
        cols = TILE_BYTES // x.dtype.itemsize
        a = pto.Tile(pto.Vec, x.dtype, (1, cols), valid=pto.DYNAMIC)
        b = pto.Tile(pto.Vec, x.dtype, (1, cols), valid=pto.DYNAMIC)
        for off, w in _walk(n, cols):
            a.set_valid(1, w)
            b.set_valid(1, w)
            pto.TLOAD(a, x[off:off + w])
            pto.TLOAD(b, y[off:off + w])
            pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
            pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
            op(a, a, b)
            pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)
            pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)
            pto.TSTORE(z[off:off + w], a)
            pto.set_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, pto.EVENT_ID0)
            pto.wait_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, pto.EVENT_ID0)

    body.__name__ = body.__qualname__ = f"lib_{op.__name__.lower()}"
    return kernel(body, dynamic_shapes=True)


def _scalar_kernel(op):
    def body(x, z, s):
        n = x.shape[0]
        cols = TILE_BYTES // x.dtype.itemsize
        a = pto.Tile(pto.Vec, x.dtype, (1, cols), valid=pto.DYNAMIC)
        for off, w in _walk(n, cols):
            a.set_valid(1, w)
            pto.TLOAD(a, x[off:off + w])
            pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
            pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID0)
            op(a, a, s)
            pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)
            pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID0)
            pto.TSTORE(z[off:off + w], a)
            pto.set_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, pto.EVENT_ID0)
            pto.wait_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, pto.EVENT_ID0)

    body.__name__ = body.__qualname__ = f"lib_{op.__name__.lower()}"
    return kernel(body, dynamic_shapes=True)


BINARY = {name: _binary_kernel(getattr(pto, name)) for name in ("TADD", "TSUB", "TMUL", "TDIV", "TMAX", "TMIN")}
TILE_SCALAR = {name: _scalar_kernel(getattr(pto, name)) for name in ("TADDS", "TMULS")}
