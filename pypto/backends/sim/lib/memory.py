"""GM <-> tile moves: TLOAD / TSTORE (plain and atomic add), MGATHER / MSCATTER.

A GM view is (array, element offset, 5-D shape, 5-D strides). How the view's elements map onto a
tile's logical (row, col) is the ``mode`` (pto-isa-semantics 4.2):

  ROW (0)  ND view, row-major tile: row ((i0*s1 + i1)*s2 + i2)*s3 + i3, col i4
  COL (1)  DN view, column-major tile: row i3, col ((i0*s1 + i1)*s2 + i2)*s4 + i4
  NZ  (2)  NZ view [B, C1, R1, 16, c0], Nz tile: row i2*s3 + i3, col (i0*s1 + i1)*s4 + i4

Tile elements are addressed through the layout descriptor and move in runs of consecutive storage
where both sides have them (layout.copy_runs). An unboxed tile (ND row-major, DN column-major) is a
stack of lines the view's contiguous axis fills one by one: tload_lines / tstore_lines move those
with no run planning, and compile in a fraction of copy_runs' time (most of a first launch's);
move_rows, for lines consecutive in GM with nothing to pad (what most kernels move), leaves out the
strided and padding loops too and serves both directions; move_run, for a view that is one run of
GM filling whole tile rows (a 1-D window), is a single move. TLOAD pads like the NPU: only the tail
of the last partial 32-byte block of each copied row (PAD_ROWS) or column (PAD_COLS), with the
value the caller passes (units/memory.py decides which, and whether: 4.3); NZ rows are whole
blocks, so nothing is padded there.
"""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ... import errcodes as E
from .checks import strict, undefined
from .floatbits import bf16_to_f32, f16_to_f32, f64_to_bf16, f64_to_f16
from .layout import _copy_n, _store_n, copy_runs, line as _line, offset, parts, strided
from .plain import plain_calls
from .xcall import xcall
from .jit import XCALLED
from .codes import ADD_BF16, ADD_F16, ADD_INT, COL, NO_PAD, PAD_COLS, PAD_ROWS, ROW

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py
# compiled once per element types (loads and stores alike), not again inside every kernel
_copy_runs, _parts = xcall(copy_runs), xcall(parts)


@njit(inline="always", **_J)
def _fits(rows, cols, vr, vc, off, last, gm_len, extents_ok, err):
    """The view fills the tile's valid region (rows x cols == vr x vc) and its elements, off ..
    last, lie in GM; else SHAPE or GM_BOUNDS. False after a fault."""
    if rows != vr or cols != vc:
        err[0] = E.SHAPE
        err[1] = rows
        err[2] = cols
        err[3] = vr
        err[4] = vc
        return False
    if off < 0 or last >= gm_len or not extents_ok:
        err[0] = E.GM_BOUNDS
        err[1] = -1
        err[2] = last
        err[3] = gm_len - 1
        return False
    return True


@njit(inline="always", **_J)     # compiled on its own, it was 0.1-0.15 s of every first launch
def _check(mode, gm_len, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, vr, vc, err):
    """_fits of a 5-D view, whose (rows, cols) on the tile follow from the mode."""
    if mode == ROW:
        rows, cols = s0 * s1 * s2 * s3, s4
    elif mode == COL:
        rows, cols = s3, s0 * s1 * s2 * s4
    else:
        rows, cols = s2 * s3, s0 * s1 * s4
    last = off + (s0 - 1) * t0 + (s1 - 1) * t1 + (s2 - 1) * t2 + (s3 - 1) * t3 + (s4 - 1) * t4
    return _fits(rows, cols, vr, vc, off, last, gm_len,
                 s0 >= 1 and s1 >= 1 and s2 >= 1 and s3 >= 1 and s4 >= 1, err)


@njit(inline="always", **_J)
def _rc(mode, i0, i1, i2, i3, i4, s1, s2, s3, s4):
    """Tile (row, col) of view element (i0, .., i4)."""
    if mode == ROW:
        return ((i0 * s1 + i1) * s2 + i2) * s3 + i3, i4
    if mode == COL:
        return i3, ((i0 * s1 + i1) * s2 + i2) * s4 + i4
    return i2 * s3 + i3, (i0 * s1 + i1) * s4 + i4


@njit(inline="always", **_J)
def _transfer(to_tile, tile, lay, mode, gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4):
    """Move the elements a GM view and a tile's valid region share, GM -> tile or tile -> GM:
    each (i0, i1, i2) of the view is an s3 x s4 block of the tile, moved in runs (copy_runs)."""
    glay = strided(t3, t4)
    for i0 in range(s0):
        for i1 in range(s1):
            for i2 in range(s2):
                g = off + i0 * t0 + i1 * t1 + i2 * t2
                outer = (i0 * s1 + i1) * s2 + i2
                if mode == ROW:
                    r0, c0 = outer * s3, 0
                elif mode == COL:
                    r0, c0 = 0, outer * s4
                else:
                    r0, c0 = i2 * s3, (i0 * s1 + i1) * s4
                if to_tile:
                    _copy_runs(tile, 0, lay, r0, c0, gm, g, glay, 0, 0, s3, s4, False, False)
                else:
                    _copy_runs(gm, g, glay, 0, 0, tile, 0, lay, r0, c0, s3, s4, False, True)


@njit(**_J)
def tload(dst, vr, vc, lay, rows_cap, cols_cap, mode, pad_dir, pad, c0,
          gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, err):
    if not _check(mode, gm.shape[0], off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, vr, vc, err):
        return
    _transfer(True, dst, lay, mode, gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4)
    # the padded window's row and column parts as tables: one division per row or column, not
    # per element (offset() per element was 2.9 % of the 1000^3 GEMM's samples)
    if pad_dir == PAD_ROWS:
        end = min(((vc + c0 - 1) // c0) * c0, cols_cap)
        ro, co = _parts(lay, 0, vr, vc, end - vc)
    elif pad_dir == PAD_COLS:
        end = min(((vr + c0 - 1) // c0) * c0, rows_cap)
        ro, co = _parts(lay, vr, end - vr, 0, vc)
    else:
        return
    for i in range(ro.size):
        for j in range(co.size):
            dst[ro[i] + co[j]] = pad


@njit(**_J)
def tstore(gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, src, vr, vc, lay, mode, err):
    if not _check(mode, gm.shape[0], off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, vr, vc, err):
        return
    _transfer(False, src, lay, mode, gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4)


@njit(inline="always", **_J)
def _line_shape(lay, mode, s3, s4, t3, t4):
    """An unboxed tile's lines in its own mode, (lines per view block, GM step between them, line
    length, GM stride along it, tile step between lines): ROW rows along t4, COL columns along t3."""
    if mode == ROW:
        return s3, t3, s4, t4, lay[2]
    return s4, t4, s3, t3, lay[3]


@njit(inline="always", **_J)
def _gm_line(line, off, s1, s2, so, t0, t1, t2, to):
    """GM start of the tile's line ``line``: the view index (i0, i1, i2, j) it is, row-major."""
    rest, j = divmod(line, so)
    rest, i2 = divmod(rest, s2)
    i0, i1 = divmod(rest, s1)
    return off + i0 * t0 + i1 * t1 + i2 * t2 + j * to


@njit(**_J)
def tload_lines(dst, vr, vc, lay, rows_cap, cols_cap, mode, pad_dir, pad, c0,
                gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, err):
    """tload of an unboxed tile in its own mode (ND row-major ROW, DN column-major COL)."""
    if not _check(mode, gm.shape[0], off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, vr, vc, err):
        return
    so, to, n, st, ls = _line_shape(lay, mode, s3, s4, t3, t4)
    for line in range(s0 * s1 * s2 * so):
        _line(dst, line * ls, gm, _gm_line(line, off, s1, s2, so, t0, t1, t2, to), st, n)
    if pad_dir == NO_PAD:
        return
    # tload's padding, with the rows or columns addressed as lines: through offset()'s general
    # (boxed) form it tripled this function's compile time (0.26 -> 0.75 s)
    lines, valid, cap, ls = (vr, vc, cols_cap, lay[2]) if pad_dir == PAD_ROWS else \
        (vc, vr, rows_cap, lay[3])
    end = ((valid + c0 - 1) // c0) * c0
    end = cap if cap < end else end          # not min(): its overload is one more compile
    for i in range(lines):
        for x in range(valid, end):
            dst[i * ls + x] = pad


@njit(**_J)
def move_rows(store, tile, vr, vc, lay, mode, gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, err):
    """TLOAD (GM -> tile) or, with ``store``, TSTORE (tile -> GM) of an unboxed tile whose lines
    are consecutive in GM, nothing padded: the lines loops without the strided and padding ones
    (a third of tload_lines' compile), one compile for both directions (each was 0.2 s of a cold
    first launch)."""
    if not _check(mode, gm.shape[0], off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, vr, vc, err):
        return
    so, to, n, _, ls = _line_shape(lay, mode, s3, s4, t3, t4)
    for line in range(s0 * s1 * s2 * so):
        g = _gm_line(line, off, s1, s2, so, t0, t1, t2, to)
        if store:
            _store_n(gm, np.uint64(g), tile, np.uint64(line * ls), n)
        else:
            _copy_n(tile, np.uint64(line * ls), gm, np.uint64(g), n)


@njit(**_J)
def move_run(store, tile, vr, vc, lay, gm, off, rows, cols, err):
    """TLOAD or TSTORE of a rows x cols view that is one run of consecutive GM elements, as are
    the tile's first rows (units/memory.py decides: a 1-D window, or whole rows of both): one
    move, checked as move_rows checks it, in a third of its compile."""
    n = rows * cols
    if not _fits(rows, cols, vr, vc, off, off + n - 1, gm.shape[0], rows >= 1 and cols >= 1, err):
        return
    if store:
        _store_n(gm, np.uint64(off), tile, np.uint64(0), n)
    else:
        _copy_n(tile, np.uint64(0), gm, np.uint64(off), n)


@njit(**_J)
def tstore_lines(gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, src, vr, vc, lay, mode, err):
    """tstore of an unboxed tile in its own mode."""
    if not _check(mode, gm.shape[0], off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, vr, vc, err):
        return
    so, to, n, st, ls = _line_shape(lay, mode, s3, s4, t3, t4)
    for line in range(s0 * s1 * s2 * so):
        g = _gm_line(line, off, s1, s2, so, t0, t1, t2, to)
        if st == 1:
            _store_n(gm, np.uint64(g), src, np.uint64(line * ls), n)
        else:
            for x in range(n):
                gm[np.uint64(g + x * st)] = src[np.uint64(line * ls + x)]


@intrinsic
def _cas(typingctx, arr, i, expected, new):
    """Atomically replace arr[i] by ``new`` if its bits still equal ``expected``'s; True when it
    did (LLVM cmpxchg). Blocks of a launch run on several threads: an atomic add must not lose
    another block's update."""
    if not isinstance(arr, types.Array) or arr.dtype != expected or arr.dtype != new:
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        old, val = args[2], args[3]
        if isinstance(aryty.dtype, types.Float):
            ity = ir.IntType(aryty.dtype.bitwidth)
            ptr = builder.bitcast(ptr, ity.as_pointer())
            old, val = builder.bitcast(old, ity), builder.bitcast(val, ity)
        res = builder.cmpxchg(ptr, old, val, "seq_cst", "seq_cst")
        return builder.extract_value(res, 1)
    return types.boolean(arr, i, expected, new), codegen


@njit(inline="always", **_J)
def _bf16_sum(a, b):
    """bf16 bits of a + b (bf16 bit patterns) rounded once from the exact sum: the f64 sum is
    nudged one ulp toward the part it lost, so it can never sit exactly on a bf16 tie."""
    x = np.float64(bf16_to_f32(a))
    y = np.float64(bf16_to_f32(b))
    s = x + y
    if s - s == 0.0:                       # finite: recover the rounding error (TwoSum)
        bb = s - x
        e = (x - (s - bb)) + (y - bb)
        if e > 0.0:
            s = np.nextafter(s, np.inf)
        elif e < 0.0:
            s = np.nextafter(s, -np.inf)
    return f64_to_bf16(s)


@njit(inline="always", **_J)
def _add_f16(a, b):
    """f16 bits of a + b: the f64 sum of two f16 values is exact, so this rounds once."""
    return f64_to_f16(np.float64(f16_to_f32(a)) + np.float64(f16_to_f32(b)))


@njit(inline="always", **_J)
def _view_add(gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, src, lay, mode, kind):
    """gm[k] += src[(r, c)] over the view, each element one atomic read-modify-write."""
    buf = np.empty(1, gm.dtype)            # the new value narrowed to the storage type
    for i0 in range(s0):
        for i1 in range(s1):
            for i2 in range(s2):
                for i3 in range(s3):
                    g = off + i0 * t0 + i1 * t1 + i2 * t2 + i3 * t3
                    for i4 in range(s4):
                        r, c = _rc(mode, i0, i1, i2, i3, i4, s1, s2, s3, s4)
                        k = g + i4 * t4
                        x = src[offset(lay, r, c)]
                        while True:
                            old = gm[k]
                            if kind == ADD_F16:
                                buf[0] = _add_f16(old, x)
                            elif kind == ADD_BF16:
                                buf[0] = _bf16_sum(old, x)
                            else:
                                buf[0] = old + x     # f32: one IEEE addition; integers wrap
                            if _cas(gm, k, old, buf[0]):
                                break


@njit(**_J)
def tstore_add(gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, src, vr, vc, lay, mode, err):
    """TSTORE<AtomicAdd> of f32 and integer elements: GM[i] += src[i] over the view."""
    if _check(mode, gm.shape[0], off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, vr, vc, err):
        _view_add(gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, src, lay, mode, ADD_INT)


@njit(**_J)
def tstore_add_f16(gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, src, vr, vc, lay, mode, err):
    if _check(mode, gm.shape[0], off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, vr, vc, err):
        _view_add(gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, src, lay, mode, ADD_F16)


@njit(**_J)
def tstore_add_bf16(gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, src, vr, vc, lay, mode, err):
    if _check(mode, gm.shape[0], off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, vr, vc, err):
        _view_add(gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, src, lay, mode, ADD_BF16)


# -- MGATHER / MSCATTER ---------------------------------------------------------------------------

@plain_calls
@njit(**_J)
def _indices_ok(k, idx, ivr, ivc, il, vr, vc, off, gm_len, err):
    """idx's valid region covers the (vr, vc) region it indexes, and every index names an element
    of the tensor (0 <= off + index < gm_len), else SRC_VALID or RANGE (RANGE_INDEX)."""
    if ivr < vr or ivc < vc:
        err[0] = E.SRC_VALID
        err[1] = k
        err[2] = ivr
        err[3] = ivc
        err[4] = vr
        err[5] = vc
        return False
    for r in range(vr):
        for c in range(vc):
            i = np.int64(idx[offset(il, r, c)])
            if off + i < 0 or off + i >= gm_len:
                err[0] = E.RANGE
                err[1] = E.RANGE_INDEX
                err[2] = i
                err[3] = -off
                err[4] = gm_len - 1 - off
                return False
    return True


@njit(**_J)
def mgather(dst, dvr, dvc, dl, gm, off, idx, ivr, ivc, il, err):
    """dst[r, c] = gm[off + idx[r, c]] over dst's valid region."""
    if not _indices_ok(2, idx, ivr, ivc, il, dvr, dvc, off, gm.shape[0], err):
        return
    for r in range(dvr):
        for c in range(dvc):
            dst[offset(dl, r, c)] = gm[off + np.int64(idx[offset(il, r, c)])]


@njit(**_J)
def _first_duplicate(idx, il, vr, vc, err):
    """checks='strict': report the first element (row-major) whose index an earlier one used."""
    n = vr * vc
    keys = np.empty(n, np.int64)
    for r in range(vr):
        for c in range(vc):
            keys[r * vc + c] = np.int64(idx[offset(il, r, c)])
    order = np.argsort(keys, kind="mergesort")          # stable: equal keys in row-major order
    best = n
    for j in range(1, n):
        if keys[order[j]] == keys[order[j - 1]] and order[j] < best:
            best = order[j]
    if best < n:
        undefined(E.UB_DUP_INDEX, 2, best // vc, best % vc, keys[best], err)


@njit(**_J)
def mscatter(gm, off, src, svr, svc, sl, idx, ivr, ivc, il, err):
    """gm[off + idx[r, c]] = src[r, c] over src's valid region, row-major (the last write to an
    element wins); indices are all checked before anything is written."""
    if not _indices_ok(2, idx, ivr, ivc, il, svr, svc, off, gm.shape[0], err):
        return
    if strict(err) and svr * svc > 1:
        _first_duplicate(idx, il, svr, svc, err)
        if err[0] != 0:
            return
    for r in range(svr):
        for c in range(svc):
            gm[off + np.int64(idx[offset(il, r, c)])] = src[offset(sl, r, c)]
