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


def _handoff(src: str, dst: str) -> None:
    """Pipe dst waits for what pipe src has done (the flag pair a PTO kernel needs between them)."""
    pto.set_flag(src, dst, pto.EVENT_ID0)
    pto.wait_flag(src, dst, pto.EVENT_ID0)


def _kernel(op, second_is_tensor: bool):
    """z = op(x, y) elementwise, where y is a GM tensor (TADD...) or a scalar (TADDS...)."""
    def body(x, y, z):
        n = x.shape[0]
        cols = TILE_BYTES // x.dtype.itemsize
        a = pto.Tile(pto.Vec, x.dtype, (1, cols), valid=pto.DYNAMIC)
        b = pto.Tile(pto.Vec, x.dtype, (1, cols), valid=pto.DYNAMIC) if second_is_tensor else None
        loads = [(a, x), (b, y)] if second_is_tensor else [(a, x)]
        for off, w in _walk(n, cols):
            for t, src in loads:
                t.set_valid(1, w)
                pto.TLOAD(t, src[off:off + w])
            _handoff(pto.PIPE_MTE2, pto.PIPE_V)
            op(a, a, b if second_is_tensor else y)
            _handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(z[off:off + w], a)
            _handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

    body.__name__ = body.__qualname__ = f"lib_{op.__name__.lower()}"
    return kernel(body, dynamic_shapes=True)


BINARY = {name: _kernel(getattr(pto, name), True) for name in ("TADD", "TSUB", "TMUL", "TDIV", "TMAX", "TMIN")}
TILE_SCALAR = {name: _kernel(getattr(pto, name), False) for name in ("TADDS", "TMULS")}
