"""load_insn forms of the 5.8 (complex) family and their library kernels, in pypto's DSL.

* ``sort`` (TSORT32 + TMRGSORT): ``sort(src, values, indices)`` sorts every row of a 2-D f16/f32
  tensor descending (stable; NaNs last, pypto's order), values (R, C) of src's type and u32
  column indices (R, C). One row at a time: TCI makes the indices, TSORT32 sorts 32-element
  blocks, 4-way TMRGSORTs merge them level by level (lists are tiles TASSIGNed onto the record
  buffers), TGATHER with a mask pattern splits the records. Rows up to SORT_WIDTH elements.
* ``ci`` (TCI): ``ci(start, dst)``: dst.flat[k] = start + k (or - k with descending=1), wrapping
  in the element type.
* ``tri`` (TTRI): ``tri(diagonal, dst)``: the triangular 0/1 mask of a 2-D dst (isUpper=0/1).
* ``part`` (TPARTADD/MAX/MIN/MUL): ``partadd(src0, src1, dst)`` with sources of different 2-D
  shapes and dst of the larger shape (max rows, max cols): op where both are defined, the defined
  one elsewhere; on a2a3 (and for ADD/MUL on a5) one source must have dst's shape; a5 MAX/MIN
  take any two shapes and give the pad (-inf / +inf, integer min / max) where neither is
  defined. Rows of up to PART_WIDTH elements.
"""
from __future__ import annotations

import functools
import math

from .. import dtypes as D
from ..errors import DTypeError, ShapeError
from ..lang import builder as _B
from ..lang import pto
from ..lang.kernel import KernelFunction, kernel
from . import forms as F
from .kernels import ROWS, TILE_BYTES, handoff, launch_dims

SORT_WIDTH = 512                    # widest row load_insn("sort") takes
_BLOCK = 32


def _clamp(x, lo, hi):
    return pto.max(lo, pto.min(hi, x))


# -- sort -----------------------------------------------------------------------------------------

def _levels(width: int) -> list[int]:
    """Run lengths (records) after each 4-way merge level, from 32-record blocks to ``width``."""
    out, n = [], _BLOCK
    while n < width:
        n = min(4 * n, width)
        out.append(n)
    return out


def _sort_kernel() -> KernelFunction:
    W = SORT_WIDTH
    rec_bytes = 8 * W

    def body(x, values, indices):
        rows, cols = x.shape[0], x.shape[1]
        dt = x.dtype
        per = 8 // dt.itemsize                  # elements per 8-byte record
        # UB map (manual placement: record buffers A and B are also viewed as list tiles)
        a_addr, b_addr = 0, rec_bytes
        base = 2 * rec_bytes
        src = pto.Tile(pto.Vec, dt, (1, W), valid=pto.DYNAMIC)
        idx = pto.Tile(pto.Vec, pto.uint32, (1, W), valid=pto.DYNAMIC)
        tsort_tmp = pto.Tile(pto.Vec, dt, (1, W))
        mtmp = pto.Tile(pto.Vec, dt, (1, per * W))
        vals = pto.Tile(pto.Vec, dt, (1, W), valid=pto.DYNAMIC)
        inds = pto.Tile(pto.Vec, pto.uint32, (1, W), valid=pto.DYNAMIC)
        exe = pto.Tile(pto.Vec, pto.uint16, (1, 16))
        rec = pto.Tile(pto.Vec, dt, (1, per * W), valid=pto.DYNAMIC)
        addr = base
        for t in (src, idx, tsort_tmp, mtmp, vals, inds, exe):
            pto.TASSIGN(t, addr)
            addr += t.nbytes
        pto.TASSIGN(rec, a_addr)
        # lists of each level: tiles onto the buffer the level reads; outputs onto the other
        run, bufs, levels = _BLOCK, (a_addr, b_addr), []
        for lvl, out_len in enumerate(_levels(W)):
            src_buf, dst_buf = bufs[lvl % 2], bufs[(lvl + 1) % 2]
            groups = []
            for g in range(W // out_len if W % out_len == 0 else -(-W // out_len)):
                lists = []
                for q in range(4):
                    start = g * out_len + q * run
                    if start >= W:
                        break
                    t = pto.Tile(pto.Vec, dt, (1, per * run), valid=pto.DYNAMIC)
                    pto.TASSIGN(t, src_buf + 8 * start)
                    lists.append((t, start, run))
                out = pto.Tile(pto.Vec, dt, (1, per * out_len), valid=pto.DYNAMIC)
                pto.TASSIGN(out, dst_buf + 8 * g * out_len)
                groups.append((out, g * out_len, out_len, lists))
            levels.append(groups)
            run = out_len
        final_buf = bufs[len(levels) % 2]
        final = pto.Tile(pto.Vec, dt, (1, per * W), valid=pto.DYNAMIC)
        final_u32 = pto.Tile(pto.Vec, pto.uint32, (1, 2 * W), valid=pto.DYNAMIC)
        pto.TASSIGN(final, final_buf)
        pto.TASSIGN(final_u32, final_buf)

        idx.set_valid(1, cols)
        pto.TCI(idx, 0)
        handoff(pto.PIPE_S, pto.PIPE_V)
        for r in pto.range(pto.block_idx(), rows, pto.block_num()):
            src.set_valid(1, cols)
            pto.TLOAD(src, x[r:r + 1, :])
            handoff(pto.PIPE_MTE2, pto.PIPE_V)
            rec.set_valid(1, per * cols)
            pto.TSORT32(rec, src, idx, tsort_tmp)
            for groups in levels:
                pto.pipe_barrier(pto.PIPE_V)
                for out, start, length, lists in groups:
                    for t, s, n in lists:
                        t.set_valid(1, per * _clamp(cols - s, 0, n))
                    out.set_valid(1, per * _clamp(cols - start, 0, length))
                    pto.TMRGSORT(out, exe, mtmp, *[t for t, _, _ in lists])
            pto.pipe_barrier(pto.PIPE_V)
            final.set_valid(1, per * cols)
            final_u32.set_valid(1, 2 * cols)
            vals.set_valid(1, W)
            inds.set_valid(1, W)
            pto.TGATHER(vals, final, maskPattern="P0101" if per == 2 else "P0001")
            pto.TGATHER(inds, final_u32, maskPattern="P1010")
            vals.set_valid(1, cols)
            inds.set_valid(1, cols)
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(values[r:r + 1, :], vals)
            pto.TSTORE(indices[r:r + 1, :], inds)
            handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

    body.__name__ = body.__qualname__ = "lib_sort"
    return kernel(body, dynamic_shapes=True)


@functools.lru_cache(maxsize=None)
def _cached_sort(name: str, params: tuple = ()) -> KernelFunction:
    return _sort_kernel()


def _check_sort(call: F.Call) -> D.DType:
    xdt = call.info[0][0]
    if xdt.short not in ("f16", "f32"):
        raise DTypeError(f"sort does not accept {xdt.name}",
                         rule="sort sorts float16 or float32 rows (TSORT32's value types)",
                         fix="convert the data to float32")
    rows, cols = F.matrix(call, 0, SORT_WIDTH)
    for i, want_dt in ((1, xdt), (2, D.uint32)):
        dt, shape = call.info[i]
        if shape != (rows, cols):
            raise ShapeError(f"{call.what(i)} has shape {shape}",
                             rule="sort writes values and u32 indices of the source's shape",
                             fix=f"pass an output of shape {(rows, cols)}")
        if dt != want_dt:
            raise DTypeError(f"{call.what(i)} is {dt.name}",
                             rule="sort's values have the source's type, its indices are uint32",
                             fix=f"pass a {want_dt.name} output")
    return xdt


def _sort_example(dt, to):
    from ..tensor import empty
    return empty((4, 100), dt), empty((4, 100), dt), empty((4, 100), D.uint32)


F.register(F.Form("sort", F.slots("src:in values:out indices:out"), _cached_sort,
                  _check_sort, lambda call: {i: call.info[i][1] for i in range(3)},
                  lambda call: launch_dims(call.info[0][1][0], call.soc.aiv_cores), _sort_example,
                  lambda call: "float16, float32 (values) with uint32 indices"))


# -- ci ---------------------------------------------------------------------------------------------

def _ci_kernel(name: str, params: tuple) -> KernelFunction:
    desc = int(dict(params).get("descending") or 0)

    def body(start, dst):
        n = dst.shape[0]
        dt = dst.dtype
        cols = TILE_BYTES // dt.itemsize
        bits = 8 * dt.itemsize
        lo = -(1 << (bits - 1)) if dt.is_signed else 0
        t = pto.Tile(pto.Vec, dt, (1, cols), valid=pto.DYNAMIC)
        chunks = (n + cols - 1) // cols
        for i in pto.range(pto.block_idx(), chunks, pto.block_num()):
            off = i * cols
            w = pto.min(cols, n - off)
            t.set_valid(1, w)
            first = start - off if desc else start + off
            pto.TCI(t, (first - lo) % (1 << bits) + lo, descending=desc)
            handoff(pto.PIPE_S, pto.PIPE_MTE3)
            pto.TSTORE(dst[off:off + w], t)
            handoff(pto.PIPE_MTE3, pto.PIPE_S)

    body.__name__ = body.__qualname__ = "lib_tci"
    return kernel(body, dynamic_shapes=True)


def _check_one_out(call: F.Call) -> D.DType:
    dt, shape = call.info[1]
    F.require_legal(call, dt)
    if 0 in shape or not shape:
        raise ShapeError(f"{call.what(1)} has shape {shape}", rule=f"{call.name} fills a non-empty tensor",
                         fix="pass a tensor with at least one element")
    return dt


def _ci_blocks(call: F.Call) -> int:
    dt, shape = call.info[1]
    return launch_dims(-(-math.prod(shape) // (TILE_BYTES // dt.itemsize)), call.soc.aiv_cores)


def _scalar_example(shape):
    def ex(dt, to):
        from ..tensor import empty
        return 0, empty(shape, dt)
    return ex


F.register(F.Form("ci", F.slots("start:scalar dst:out"), functools.lru_cache(maxsize=None)(_ci_kernel),
                  _check_one_out, F.flat, _ci_blocks, _scalar_example((1024,))))


# -- tri --------------------------------------------------------------------------------------------

def _tri_kernel(name: str, params: tuple) -> KernelFunction:
    upper = int(dict(params).get("isUpper") or 0)

    def body(diagonal, dst):
        rows, cols = dst.shape[0], dst.shape[1]
        dt = dst.dtype
        width = TILE_BYTES // (ROWS * dt.itemsize)
        t = pto.Tile(pto.Vec, dt, (ROWS, width), valid=pto.DYNAMIC)
        rchunks = (rows + ROWS - 1) // ROWS
        cchunks = (cols + width - 1) // width
        for i in pto.range(pto.block_idx(), rchunks * cchunks, pto.block_num()):
            r0 = (i // cchunks) * ROWS
            c0 = (i % cchunks) * width
            h = pto.min(ROWS, rows - r0)
            w = pto.min(width, cols - c0)
            t.set_valid(h, w)
            pto.TTRI(t, diagonal + r0 - c0, isUpper=upper)
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(dst[r0:r0 + h, c0:c0 + w], t)
            handoff(pto.PIPE_MTE3, pto.PIPE_V)

    body.__name__ = body.__qualname__ = "lib_ttri"
    return kernel(body, dynamic_shapes=True)


def _check_tri(call: F.Call) -> D.DType:
    dt, shape = call.info[1]
    F.require_legal(call, dt)
    F.matrix(call, 1)
    return D.int32


def _tri_blocks(call: F.Call) -> int:
    dt, (rows, cols) = call.info[1]
    width = TILE_BYTES // (ROWS * dt.itemsize)
    return launch_dims(-(-rows // ROWS) * -(-cols // width), call.soc.aiv_cores)


F.register(F.Form("tri", F.slots("diagonal:scalar dst:out"), functools.lru_cache(maxsize=None)(_tri_kernel),
                  _check_tri, lambda call: {1: call.info[1][1]}, _tri_blocks, _scalar_example((64, 64))))


# -- part -------------------------------------------------------------------------------------------

def part_width(itemsize: int) -> int:
    return TILE_BYTES // (ROWS * itemsize)


def _padded(name: str) -> bool:
    return _B.current("load_insn part").soc.name == "a5" and name in ("TPARTMAX", "TPARTMIN")


def _part_kernel(name: str, params: tuple) -> KernelFunction:
    op = getattr(pto, name)

    def body(x, y, z):
        rows, cols = z.shape[0], z.shape[1]
        r0, c0, r1, c1 = x.shape[0], x.shape[1], y.shape[0], y.shape[1]
        dt = z.dtype
        width = part_width(dt.itemsize)
        a = pto.Tile(pto.Vec, dt, (ROWS, width), valid=pto.DYNAMIC)
        b = pto.Tile(pto.Vec, dt, (ROWS, width), valid=pto.DYNAMIC)
        d = pto.Tile(pto.Vec, dt, (ROWS, width), valid=pto.DYNAMIC)
        chunks = (rows + ROWS - 1) // ROWS
        both = (pto.min(r0, r1) + ROWS - 1) // ROWS        # chunks where both sources have rows

        def load(t, src, nr, nc, top, h):
            # a view cannot be empty: at least one row is loaded, then the real count is set
            first = pto.min(top, nr - 1)
            n = _clamp(nr - top, 1, h)
            t.set_valid(n, nc)
            pto.TLOAD(t, src[first:first + n, :])
            t.set_valid(_clamp(nr - top, 0, h), nc)

        def chunk(i, compute):
            top = i * ROWS
            h = pto.min(ROWS, rows - top)
            load(a, x, r0, c0, top, h)
            load(b, y, r1, c1, top, h)
            d.set_valid(h, cols)
            handoff(pto.PIPE_MTE2, pto.PIPE_V)
            compute()
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            pto.TSTORE(z[top:top + h, :], d)
            handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

        def combine():
            op(d, a, b)

        def alone():
            # a5 TPARTMAX/MIN write nothing when a source has no valid rows: past the shorter
            # source, each source is combined with itself (the empty one writes nothing)
            op(d, a, a)
            pto.pipe_barrier(pto.PIPE_V)
            op(d, b, b)

        if _padded(name):
            for i in pto.range(pto.block_idx(), both, pto.block_num()):
                chunk(i, combine)
            for i in pto.range(both + pto.block_idx(), chunks, pto.block_num()):
                chunk(i, alone)
        else:
            for i in pto.range(pto.block_idx(), chunks, pto.block_num()):
                chunk(i, combine)

    body.__name__ = body.__qualname__ = f"lib_{name.lower()}"
    return kernel(body, dynamic_shapes=True)


def _check_part(call: F.Call) -> D.DType:
    dt = F.same_dtype(call)
    width = part_width(dt.itemsize)
    (r0, c0), (r1, c1), (rd, cd) = (F.matrix(call, i, width) for i in range(3))
    if (rd, cd) != (max(r0, r1), max(c0, c1)):
        raise ShapeError(f"{call.what(2)} has shape {(rd, cd)}",
                         rule=f"{call.name}'s dst has the larger shape: (max rows, max cols) of the "
                              "sources", fix=f"pass a dst of shape {(max(r0, r1), max(c0, c1))}")
    padded = call.soc.name == "a5" and call.spec.name in ("TPARTMAX", "TPARTMIN")
    if not padded and (r0, c0) != (rd, cd) and (r1, c1) != (rd, cd):
        raise ShapeError(f"{call.name}: shapes {(r0, c0)} and {(r1, c1)}",
                         rule=f"{call.name} on {call.soc.name}: one source has dst's shape and the "
                              "other fits inside it (a5 TPARTMAX/TPARTMIN take any two shapes)",
                         fix="pass a source of the larger shape")
    return dt


def _part_blocks(call: F.Call) -> int:
    return launch_dims(-(-call.info[2][1][0] // ROWS), call.soc.aiv_cores)


def _part_example(dt, to):
    from ..tensor import empty
    return empty((16, 64), dt), empty((9, 40), dt), empty((16, 64), dt)


F.register(F.Form("part", F.slots("src0:in src1:in dst:out"), functools.lru_cache(maxsize=None)(_part_kernel),
                  _check_part, lambda call: {i: call.info[i][1] for i in range(3)}, _part_blocks,
                  _part_example))
