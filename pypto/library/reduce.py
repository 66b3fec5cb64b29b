"""load_insn forms of the column reductions and the row / column broadcasts (5.4), with their
library kernels in pypto's DSL (the row reductions use kernels.py's ``rowreduce`` form).

* ``colreduce``    src (R, C) -> dst (C,) or (1, C): column chunks of one 32-byte block, all R
  rows in one tile (R <= COL_ROWS), so each column is reduced by one instruction in the SoC's
  order; TCOLSUM's isBinary passes through.
* ``rowexpand``    src (R,) or (R, 1) -> dst (R, C): dst[i, j] = src[i].
* ``colexpand``    src (C,) or (1, C) -> dst (R, C): dst[i, j] = src[j].
* ``rowexpand_op`` src0 (R, C), src1 (R,) or (R, 1) -> dst (R, C): dst = op(src0, src1[i]) with
  src1 as a DN column vector.
* ``colexpand_op`` src0 (R, C), src1 (C,) or (1, C) -> dst (R, C): dst = op(src0, src1[j]).
The broadcasts walk EXPAND_ROWS-row chunks (a DN column of 8-bit data needs 32 rows) and column
chunks of one tile, so any size works; sizes are runtime values (one compilation per dtype).
"""
from __future__ import annotations

import functools

from .. import dtypes as D
from ..errors import ShapeError
from ..lang import pto
from ..lang.kernel import KernelFunction, kernel
from . import forms as F
from .kernels import TILE_BYTES, handoff, _walk, launch_dims

COL_ROWS = 2048               # rows of the column-reduction tile (64 KiB of one 32-byte block each)
EXPAND_ROWS = 32              # rows per tile of the broadcasts


def expand_width(itemsize: int) -> int:
    """Columns of a broadcast tile (32 KiB)."""
    return TILE_BYTES // (EXPAND_ROWS * itemsize)


def _op(name: str):
    return getattr(pto, name)


# -- kernels ------------------------------------------------------------------------------------

def _colreduce(name: str, params: tuple) -> KernelFunction:
    op, kw = _op(name), dict(params)
    with_tmp = name == "TCOLSUM"

    def body(x, y):
        rows, cols = x.shape[0], x.shape[1]
        w = 32 // x.dtype.itemsize
        src = pto.Tile(pto.Vec, x.dtype, (COL_ROWS, w), valid=pto.DYNAMIC)
        dst = pto.Tile(pto.Vec, x.dtype, (1, w), valid=pto.DYNAMIC)
        tmp = pto.Tile(pto.Vec, x.dtype, (COL_ROWS // 2, w)) if with_tmp else None
        for off, cw in _walk(cols, w):
            src.set_valid(rows, cw)
            dst.set_valid(1, cw)
            pto.TLOAD(src, x[:, off:off + cw])
            handoff(pto.PIPE_MTE2, pto.PIPE_V)
            if with_tmp:
                op(dst, src, tmp, **kw)
            else:
                op(dst, src)
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(y[:, off:off + cw], dst)
            handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

    body.__name__ = body.__qualname__ = f"lib_{name.lower()}"
    return kernel(body, dynamic_shapes=True)


def _expand_step(op, t, vec, x, y, r0, h: int, c0, w: int) -> None:
    """One (h, w) block of an expansion: dst block = op(src0 block, vec) (``x`` None: op(vec))."""
    t.set_valid(h, w)
    if x is not None:
        pto.TLOAD(t, x[r0:r0 + h, c0:c0 + w])
    handoff(pto.PIPE_MTE2, pto.PIPE_V)
    if x is not None:
        op(t, t, vec)
    else:
        op(t, vec)
    handoff(pto.PIPE_V, pto.PIPE_MTE3)
    pto.TSTORE(y[r0:r0 + h, c0:c0 + w], t)
    handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)
    handoff(pto.PIPE_MTE3, pto.PIPE_V)


def _expand_kernel(name: str, binop: bool, run) -> KernelFunction:
    """The library kernel of an expansion: (src0, vec, dst) for the binary forms, else (vec, dst)."""
    if binop:
        def body(x, v, y):
            run(x, v, y)
    else:
        def body(v, y):
            run(None, v, y)
    body.__name__ = body.__qualname__ = f"lib_{name.lower()}"
    return kernel(body, dynamic_shapes=True)


def _rowexpand(name: str, params: tuple) -> KernelFunction:
    """dst[i, j] = src[i] (TROWEXPAND) or op(src0[i, j], src1[i]) (TROWEXPAND<op>)."""
    op = _op(name)
    binop = name != "TROWEXPAND"

    def run(x, v, y):
        rows, cols = y.shape[0], y.shape[1]
        width = expand_width(y.dtype.itemsize)
        vec = pto.Tile(pto.Vec, y.dtype, (EXPAND_ROWS, 1), blayout=pto.ColMajor, valid=pto.DYNAMIC)
        t = pto.Tile(pto.Vec, y.dtype, (EXPAND_ROWS, width), valid=pto.DYNAMIC)
        chunks = (rows + EXPAND_ROWS - 1) // EXPAND_ROWS
        for i in pto.range(pto.block_idx(), chunks, pto.block_num()):
            r0 = i * EXPAND_ROWS
            h = pto.min(EXPAND_ROWS, rows - r0)
            vec.set_valid(h, 1)
            pto.TLOAD(vec, v[r0:r0 + h, :])
            for c0 in pto.range(0, cols, width):
                _expand_step(op, t, vec, x, y, r0, h, c0, pto.min(width, cols - c0))

    return _expand_kernel(name, binop, run)


def _colexpand(name: str, params: tuple) -> KernelFunction:
    """dst[i, j] = src[j] (TCOLEXPAND) or op(src0[i, j], src1[j]) (TCOLEXPAND<op>)."""
    op = _op(name)
    binop = name != "TCOLEXPAND"

    def run(x, v, y):
        rows, cols = y.shape[0], y.shape[1]
        width = expand_width(y.dtype.itemsize)
        vec = pto.Tile(pto.Vec, y.dtype, (1, width), valid=pto.DYNAMIC)
        t = pto.Tile(pto.Vec, y.dtype, (EXPAND_ROWS, width), valid=pto.DYNAMIC)
        for c0, w in _walk(cols, width):
            vec.set_valid(1, w)
            pto.TLOAD(vec, v[:, c0:c0 + w])
            for r0 in pto.range(0, rows, EXPAND_ROWS):
                _expand_step(op, t, vec, x, y, r0, pto.min(EXPAND_ROWS, rows - r0), c0, w)

    return _expand_kernel(name, binop, run)


@functools.lru_cache(maxsize=None)
def _cached(builder: str, name: str, params: tuple = ()) -> KernelFunction:
    return {"colreduce": _colreduce, "rowexpand": _rowexpand, "colexpand": _colexpand}[builder](name, params)


# -- the forms ----------------------------------------------------------------------------------

def _check_colreduce(call: F.Call) -> D.DType:
    dt = F.same_dtype(call)
    rows, cols = F.matrix(call, 0)
    if rows > COL_ROWS:
        raise ShapeError(f"{call.name}: columns of {rows} elements",
                         rule=f"load_insn's {call.name} takes columns of 1 .. {COL_ROWS} elements (one "
                              "tile of the library kernel holds a whole column)",
                         fix="write an @pypto.kernel that reduces longer columns in several tiles")
    F.vector_of(call, 1, cols, "column")
    return dt


def _check_expand(vec: int, mat: int, axis: int):
    """The vector operand ``vec`` holds one value per row (axis 0) or column (axis 1) of the
    matrix operand ``mat``; src0 and dst of a binop share one shape."""
    def check(call: F.Call) -> D.DType:
        dt = F.same_dtype(call)
        shape = F.matrix(call, mat)
        if len(call.info) == 3:
            F.same_shape(call, (0, 2))
        F.vector_of(call, vec, shape[axis], "row" if axis == 0 else "column")
        return dt
    return check


def _expand_blocks(mat: int, axis: int, call: F.Call) -> int:
    shape = call.info[mat][1]
    if axis == 0:
        chunks = -(-shape[0] // EXPAND_ROWS)
    else:
        chunks = -(-shape[1] // expand_width(call.info[mat][0].itemsize))
    return launch_dims(chunks, call.soc.aiv_cores)


def _empty(*shapes):
    def example(dt, to):
        from ..tensor import empty
        return tuple(empty(s, dt) for s in shapes)
    return example


F.register(F.Form("colreduce", F.slots("src:in dst:out"), functools.partial(_cached, "colreduce"),
                  _check_colreduce,
                  lambda call: {0: call.info[0][1], 1: (1, call.info[0][1][1])},
                  lambda call: launch_dims(-(-call.info[0][1][1] * call.info[0][0].itemsize // 32),
                                           call.soc.aiv_cores),
                  _empty((64, 40), (40,))))
F.register(F.Form("rowexpand", F.slots("src:in dst:out"), functools.partial(_cached, "rowexpand"),
                  _check_expand(0, 1, 0),
                  lambda call: {0: (call.info[1][1][0], 1), 1: call.info[1][1]},
                  functools.partial(_expand_blocks, 1, 0), _empty((64,), (64, 100))))
F.register(F.Form("colexpand", F.slots("src:in dst:out"), functools.partial(_cached, "colexpand"),
                  _check_expand(0, 1, 1),
                  lambda call: {0: (1, call.info[1][1][1]), 1: call.info[1][1]},
                  functools.partial(_expand_blocks, 1, 1), _empty((100,), (64, 100))))
F.register(F.Form("rowexpand_op", F.slots("src0:in src1:in dst:out"),
                  functools.partial(_cached, "rowexpand"), _check_expand(1, 0, 0),
                  lambda call: {0: call.info[0][1], 1: (call.info[0][1][0], 1), 2: call.info[0][1]},
                  functools.partial(_expand_blocks, 0, 0), _empty((64, 100), (64,), (64, 100))))
F.register(F.Form("colexpand_op", F.slots("src0:in src1:in dst:out"),
                  functools.partial(_cached, "colexpand"), _check_expand(1, 0, 1),
                  lambda call: {0: call.info[0][1], 1: (1, call.info[0][1][1]), 2: call.info[0][1]},
                  functools.partial(_expand_blocks, 0, 1), _empty((64, 100), (100,), (64, 100))))
