"""The one way every simulator implementation addresses a tile element.

A tile operand arrives as (storage array, valid rows, valid cols, layout descriptor); the
descriptor is ``TileType.desc``: (IR, IC, BRS, BCS, irs, ics). ``offset`` turns a logical
(row, col) into a storage index for ND, DN and the boxed Nz/Zn/Zz layouts alike.
"""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload
from numba.np.arrayobj import make_array

from .plain import plain_calls
from .xcall import xcall
from .jit import INLINE, XCALLED

_J = INLINE
# what copy_runs calls once per copy, line or box: compiled once, not inlined at every use
# (numba's IR inlining was a third of copy_runs' compile time); only jitted code calls them
_C = XCALLED


@plain_calls                # called at hundreds of sites: inlined in numba's IR at each, it was a
@njit(**_C)                 # quarter of a cold conformance/test_reduce.py's compile (lib/checks.py)
def offset(lay, r, c):
    """Storage index of logical element (r, c) (pto-isa-semantics 3.3)."""
    ir_, ic, brs, bcs, irs, ics = lay
    if ir_ == 1 and ic == 1:
        return r * brs + c * bcs
    return (r // ir_) * brs + (c // ic) * bcs + (r % ir_) * irs + (c % ic) * ics


@njit(**_J)
def row_dense(lay):
    """True when a row's elements are consecutive in storage (ND): loops can run on slices."""
    return lay[0] == 1 and lay[1] == 1 and lay[3] == 1


@njit(**_J)
def row_base(lay, r):
    """Storage index of (r, 0) for a row_dense layout."""
    return r * lay[2]


@njit(**_J)
def row(arr, lay, r, n):
    """The first n elements of row r of a row_dense tile, as a slice. Loops over a slice index
    from 0, so numba emits no negative-index fix-up and LLVM vectorises them (indexing the whole
    storage at ``row_base + c`` ran 6x slower for f16)."""
    b = r * lay[2]
    return arr[b:b + n]


@intrinsic
def same(typingctx, x, y):
    """True when two arrays start at the same address (an in-place operand). An intrinsic: numba's
    ``a.ctypes.data`` builds a ctypes object, which cost ~18 us per call."""
    if not (isinstance(x, types.Array) and isinstance(y, types.Array)):
        return None

    def codegen(context, builder, sig, args):
        px = make_array(sig.args[0])(context, builder, args[0]).data
        py = make_array(sig.args[1])(context, builder, args[1]).data
        i64 = ir.IntType(64)
        return builder.icmp_unsigned("==", builder.ptrtoint(px, i64), builder.ptrtoint(py, i64))
    return types.boolean(x, y), codegen


@plain_calls
@njit(**_C)
def row_part(lay, r):
    """The row's share of ``offset``: offset(r, c) == row_part(r) + col_part(c) in every layout."""
    ir_, ic, brs, bcs, irs, ics = lay
    if ir_ == 1 and ic == 1:
        return r * brs
    return (r // ir_) * brs + (r % ir_) * irs


@plain_calls
@njit(**_C)
def col_part(lay, c):
    """The column's share of ``offset`` (see row_part)."""
    ir_, ic, brs, bcs, irs, ics = lay
    if ir_ == 1 and ic == 1:
        return c * bcs
    return (c // ic) * bcs + (c % ic) * ics


@plain_calls
@njit(**_C)
def _line_parts(out, base, lay, x0, rows):
    """out[i] = base + row_part(lay, x0 + i) (col_part when not ``rows``) for every i, stepping
    through the boxes instead of dividing by their size at every line. True when the lines of every
    aligned group of 16 are evenly spaced, out[1] - out[0] apart (unboxed lines, or boxes a
    multiple of 16 lines tall with x0 on a group's start)."""
    ir_, ic, brs, bcs, irs, ics = lay
    inner, outer_step, inner_step = (ir_, brs, irs) if rows else (ic, bcs, ics)
    q, r = x0 // inner, x0 % inner
    for i in range(out.size):
        out[i] = base + q * outer_step + r * inner_step
        r += 1
        if r == inner:
            r, q = 0, q + 1
    return inner == 1 or (inner % 16 == 0 and x0 % 16 == 0)


_line_parts_x = xcall(_line_parts)


@plain_calls
@njit(**_C)
def parts(lay, r0, rows, c0, cols):
    """(row parts of rows r0 .. r0 + rows - 1, column parts of cols c0 ..): loops over a window
    add two table entries per element instead of dividing by the box sizes."""
    ro = np.empty(rows, np.int64)
    co = np.empty(cols, np.int64)
    _line_parts_x(ro, 0, lay, r0, True)
    _line_parts_x(co, 0, lay, c0, False)
    return ro, co


_LONG = 1 << 62


@njit(**_J)
def strided(row_stride, col_stride):
    """The unboxed layout of a strided 2-D block: a GM view's, or a dense scratch matrix's."""
    z, one = np.int64(0), np.int64(1)
    return (one, one, np.int64(row_stride), np.int64(col_stride), z, z)


@plain_calls
@njit(**_C)
def row_run(lay, c):
    """(how many columns from c on lie at one constant storage stride within a row, that
    stride): a whole row in ND and DN, the rest of the box row in the boxed layouts."""
    ir_, ic, brs, bcs, irs, ics = lay
    if ir_ == 1 and ic == 1:
        return _LONG, bcs
    return ic - c % ic, ics


@plain_calls
@njit(**_C)
def col_run(lay, r):
    """The same down a column from row r."""
    ir_, ic, brs, bcs, irs, ics = lay
    if ir_ == 1 and ic == 1:
        return _LONG, brs
    return ir_ - r % ir_, irs


def _i64(builder, v):
    return builder.sext(v, ir.IntType(64)) if v.type.width < 64 else v


def _operands(context, builder, sig, args):
    """(dst data pointer, src data pointer, element size, n as i64) of a (dst, d, src, s, n) move."""
    pd = make_array(sig.args[0])(context, builder, args[0]).data
    ps = make_array(sig.args[2])(context, builder, args[2]).data
    return pd, ps, context.get_abi_sizeof(context.get_data_type(sig.args[0].dtype)), \
        _i64(builder, args[4])


def _mover(widths):
    """The codegen of dst[d:d + n] = src[s:s + n] as one llvm.memmove, where n among ``widths``
    (a function of the element size) branches to a fixed-size move, which LLVM emits as a few
    vector loads then stores, free of a call's set-up."""
    def emit(context, builder, sig, args):
        pd, ps, size, n = _operands(context, builder, sig, args)
        to, frm = builder.gep(pd, [args[1]]), builder.gep(ps, [args[3]])
        i64 = ir.IntType(64)
        done = builder.append_basic_block("move.done")
        other = builder.append_basic_block("move.any")
        switch = builder.switch(n, other)
        for width in widths(size):
            block = builder.append_basic_block(f"move.{width}")
            switch.add_case(ir.Constant(i64, width), block)
            with builder.goto_block(block):          # one vector load, then its store
                vt = ir.VectorType(to.type.pointee, width).as_pointer()
                v = builder.load(builder.bitcast(frm, vt), align=1)
                builder.store(v, builder.bitcast(to, vt), align=1)
                builder.branch(done)
        with builder.goto_block(other):
            cgutils.raw_memmove(builder, to, frm, n, size)
            builder.branch(done)
        builder.position_at_end(done)
    return emit


# a run: the box widths (8, 16 and 32 elements: a 32-byte box row, or L0C's 16) move as vectors
# (GM -> Nz runs 2.4x faster); a box: its 512 bytes
_emit_move, _emit_box = _mover(lambda size: (8, 16, 32)), _mover(lambda size: (512 // size,))


STREAM_MIN_BYTES = 2048     # shorter GM runs are stored through the cache
_LINE = 64                  # bytes per non-temporal vector store (a cache line)


def _emit_stream(context, builder, sig, args, min_bytes=STREAM_MIN_BYTES, fence=True):
    """dst[d:d + n] = src[s:s + n] for a TSTORE's run into GM: non-temporal stores, one cache line
    each, over the 64-byte aligned part of a run of at least ``min_bytes`` and one line (so the
    run reaches past its unaligned lead). They skip the read for ownership of lines about to be
    overwritten and leave the caches to the tiles (a 16M-element add on two threads: 8.0 -> 6.8
    ms). The rest moves as _emit_move does; a fence then orders the stores before whatever the
    block does next (without ``fence``, the caller's _fence does)."""
    pd, ps, size, n = _operands(context, builder, sig, args)
    i64 = ir.IntType(64)
    width = _LINE // size
    const = lambda v: ir.Constant(i64, v)  # noqa: E731
    d0, s0 = (_i64(builder, a) for a in (args[1], args[3]))

    def move(at, count):
        cgutils.raw_memmove(builder, builder.gep(pd, [builder.add(d0, at)]),
                            builder.gep(ps, [builder.add(s0, at)]), count, size)

    addr = builder.ptrtoint(builder.gep(pd, [d0]), i64)
    short = builder.icmp_unsigned("<", n, const(max(width, min_bytes // size)))   # lead < n
    odd = builder.icmp_unsigned("!=", builder.urem(addr, const(size)), const(0))
    with builder.if_else(builder.or_(short, odd)) as (plain, streamed):
        with plain:
            move(const(0), n)
        with streamed:
            lead = builder.udiv(builder.urem(builder.sub(const(_LINE), builder.urem(
                addr, const(_LINE))), const(_LINE)), const(size))
            move(const(0), lead)
            lines = builder.udiv(builder.sub(n, lead), const(width))
            vt = ir.VectorType(pd.type.pointee, width).as_pointer()
            hint = builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)])
            with cgutils.for_range(builder, lines) as loop:
                at = builder.add(lead, builder.mul(loop.index, const(width)))
                v = builder.load(builder.bitcast(
                    builder.gep(ps, [builder.add(s0, at)]), vt), align=size)
                store = builder.store(v, builder.bitcast(
                    builder.gep(pd, [builder.add(d0, at)]), vt), align=_LINE)
                store.set_metadata("nontemporal", hint)
            done = builder.add(lead, builder.mul(lines, const(width)))
            move(done, builder.sub(n, done))
            if fence:
                builder.fence("seq_cst")


def _convert(dst, d, src, s, n):
    """A run between arrays of different dtypes: each element cast as numba casts it."""
    for x in range(np.uint64(n)):
        dst[d + x] = src[s + x]


def _typed_run(emit_same, dst, d, src, s, n):
    """The signature and code of a (dst, d, src, s, n) run: ``emit_same`` between arrays of one
    dtype, else a converting loop. Chosen while typing, as an overload would choose, but with no
    function of its own to compile (an overload's was 0.03-0.04 s of every process's first move)."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array)):
        return None
    same = dst.dtype == src.dtype

    def codegen(context, builder, sig, args):
        if same:
            emit_same(context, builder, sig, args)
        else:
            context.compile_internal(builder, _convert, sig, args)
        return context.get_dummy_value()
    return types.none(dst, d, src, s, n), codegen


@intrinsic
def _copy_n(typingctx, dst, d, src, s, n):
    """dst[d:d + n] = src[s:s + n]."""
    return _typed_run(_emit_move, dst, d, src, s, n)


@intrinsic
def _copy_box(typingctx, dst, d, src, s, n):
    """dst[d:d + n] = src[s:s + n] for a whole box: one vector move for a 512-byte box."""
    return _typed_run(_emit_box, dst, d, src, s, n)


@intrinsic
def _stream_run(typingctx, dst, d, src, s, n):
    """A run of a boxed tile's TSTORE (a box row: one cache line of f32): its whole lines stored
    non-temporally whatever its length, with no fence (copy_runs fences once, after its runs)."""
    return _typed_run(lambda cx, b, sg, a: _emit_stream(cx, b, sg, a, 0, False), dst, d, src, s, n)


@intrinsic
def _fence(typingctx):
    """Order the non-temporal stores before this thread's next memory access."""
    def codegen(context, builder, sig, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()
    return types.none(), codegen


@intrinsic
def _store_n(typingctx, dst, d, src, s, n):
    """A TSTORE's consecutive run into GM: dst[d:d + n] = src[s:s + n], streamed (_emit_stream)."""
    return _typed_run(_emit_stream, dst, d, src, s, n)


@njit(**_J)
def _run(dst, d, ds, src, s, ss, n, add):
    """n elements at strides ds / ss: a plain consecutive copy is one move (_copy_n); unsigned
    indices skip numba's negative-index wraparound test per access, so LLVM vectorises the
    unit-stride loops."""
    if ds == 1 and ss == 1:
        du, su = np.uint64(d), np.uint64(s)
        if add:
            for x in range(np.uint64(n)):
                dst[du + x] += src[su + x]
        else:
            _copy_n(dst, du, src, su, n)
    else:
        for x in range(n):
            di = np.uint64(d + x * ds)
            si = np.uint64(s + x * ss)
            if add:
                dst[di] += src[si]
            else:
                dst[di] = src[si]


@njit(**_J)
def line(dst, d, src, s, ss, n):
    """n elements into consecutive dst from src at stride ss: _run without the adding and
    strided-dst forms a TLOAD of an unboxed tile never takes (its first compile: 0.33 -> 0.30 s)."""
    if ss == 1:
        _copy_n(dst, np.uint64(d), src, np.uint64(s), n)
    else:
        for x in range(n):
            dst[np.uint64(d + x)] = src[np.uint64(s + x * ss)]


@plain_calls
@njit(**_C)
def _lines(dst, d, ds, src, s, ss, n, ls, ld, i0, i1, add):
    """The run of n elements at (src, dst) offset (s, d) of lines i0 .. i1 - 1, whose starts are
    ls[i] in src and ld[i] in dst. Called, not inlined: _run is compiled here once per element
    types, instead of at each place copy_runs moves runs (0.7 s less per copy_runs compile)."""
    for i in range(i0, i1):
        _run(dst, ld[i] + d, ds, src, ls[i] + s, ss, n, add)


@plain_calls
@njit(**_C)
def _runs(sl, s0, dl, d0, count, along_row):
    """The runs a row (along_row) or a column of the window splits into, the same for every row
    (column): (length, src part, dst part) arrays, the parts from col_part / row_part."""
    length = np.empty(count, np.int64)
    sp = np.empty(count, np.int64)
    dp = np.empty(count, np.int64)
    k, j = 0, 0
    while j < count:
        if along_row:
            n = min(row_run(sl, s0 + j)[0], row_run(dl, d0 + j)[0], count - j)
            sp[k], dp[k] = col_part(sl, s0 + j), col_part(dl, d0 + j)
        else:
            n = min(col_run(sl, s0 + j)[0], col_run(dl, d0 + j)[0], count - j)
            sp[k], dp[k] = row_part(sl, s0 + j), row_part(dl, d0 + j)
        length[k] = n
        k += 1
        j += n
    return length[:k], sp[:k], dp[:k]


SAME, TRANSPOSED = 1, 2


@plain_calls
@njit(**_C)
def _box_pair(dl, dr0, dc0, sl, sr0, sc0, rows, cols):
    """How two layouts box over a box-aligned window: SAME (boxed alike, each box's elements
    consecutive in the same order), TRANSPOSED (one row-major inside its boxes, the other
    column-major: L1 Nz -> L0B Zn), else 0."""
    ir_, ic = dl[0], dl[1]
    if ir_ * ic <= 1 or sl[0] != ir_ or sl[1] != ic:
        return 0
    if not (rows % ir_ == 0 and cols % ic == 0 and dr0 % ir_ == 0 and dc0 % ic == 0
            and sr0 % ir_ == 0 and sc0 % ic == 0):
        return 0
    rowmajor, colmajor = (ic, 1), (1, ir_)
    d, s = (dl[4], dl[5]), (sl[4], sl[5])
    if not ((d == rowmajor or d == colmajor) and (s == rowmajor or s == colmajor)):
        return 0
    return SAME if d == s else TRANSPOSED


@plain_calls
@njit(**_C)
def _rows16(dst, d, dstep, src, s, sstep, n, stream):
    """16 runs of n elements, the i-th from src[s + i * sstep] to dst[d + i * dstep]: one run of a
    16-line group whose lines are evenly spaced on both sides (a box's rows in a GM <-> Nz / Zz
    move), each a vector move, fixed-width for a box row. With ``stream`` (dst is GM) each run's
    whole cache lines are stored non-temporally: a TSTORE's output is seldom read again soon, and
    its lines need no read for ownership (the 1024^3 GEMM's 32 stores of 256 x 128 f32: 5 % of
    its samples through the cache, 1.6 % streamed)."""
    if stream:
        for i in range(16):
            _stream_run(dst, np.uint64(d + i * dstep), src, np.uint64(s + i * sstep), n)
    else:
        for i in range(16):
            _copy_n(dst, np.uint64(d + i * dstep), src, np.uint64(s + i * sstep), n)


# One round of the 16 x 16 transpose interleaves row i with row i + 8: the low (h = 0) or high
# (h = 1) halves of the two, element by element. As 16-lane masks, and as 32-lane masks that do the
# same in each half of two boxes held side by side (transpose16_pair).
_MASKS = [[8 * h + i // 2 + (i % 2) * 16 for i in range(16)] for h in (0, 1)]
_LO, _HI = (ir.Constant(ir.VectorType(ir.IntType(32), 16), m) for m in _MASKS)


def _pair(mask):
    lo = [m if m < 16 else m + 16 for m in mask]
    return ir.Constant(ir.VectorType(ir.IntType(32), 32), lo + [m + 16 for m in lo])


_LO2, _HI2 = (_pair(m) for m in _MASKS)
_HALVES = [ir.Constant(ir.VectorType(ir.IntType(32), 16), list(range(16 * h, 16 * h + 16)))
           for h in (0, 1)]
_JOIN = ir.Constant(ir.VectorType(ir.IntType(32), 32), list(range(32)))


def _vector_rows(context, builder, aryty, ary):
    """row(start, i): &ary[start + 16 i] as a pointer to a 16-lane vector of its elements."""
    vt = ir.VectorType(context.get_data_type(aryty.dtype), 16)
    data = make_array(aryty)(context, builder, ary).data

    def row(start, i):
        at = builder.add(start, ir.Constant(start.type, 16 * i))
        return builder.bitcast(builder.gep(data, [at]), vt.as_pointer())
    return row


def _rounds(builder, rows, lo, hi):
    """The transpose's 4 interleaving rounds over 16 row vectors (log2(16): rows become columns)."""
    for _ in range(4):
        rows = [builder.shuffle_vector(rows[i // 2], rows[i // 2 + 8], hi if i % 2 else lo)
                for i in range(16)]
    return rows


@intrinsic
def _transpose16(typingctx, dst, d, src, s):
    """dst[d + 16 x + y] = src[s + 16 y + x] for x, y < 16: one 16 x 16 box as 16 row vectors
    interleaved in 4 rounds (row i with row i + 8, low and high halves: after log2(16) rounds
    the rows are the columns); 2.5x faster than element by element for f16."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array)
            and dst.dtype == src.dtype):
        return None

    def codegen(context, builder, sig, args):
        to = _vector_rows(context, builder, sig.args[0], args[0])
        frm = _vector_rows(context, builder, sig.args[2], args[2])
        rows = _rounds(builder, [builder.load(frm(args[3], i), align=1) for i in range(16)], _LO, _HI)
        for i in range(16):
            builder.store(rows[i], to(args[1], i), align=1)
        return context.get_dummy_value()
    return types.none(dst, d, src, s), codegen


@intrinsic
def add_run16(typingctx, dst, d, src, s):
    """dst[d:d + 16] += src[s:s + 16] between float32 arrays, as one vector add: a box row of an
    accumulator. The two runs must not overlap (all 16 are read before any is written)."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array)
            and dst.dtype == src.dtype == types.float32):
        return None

    def codegen(context, builder, sig, args):
        to = _vector_rows(context, builder, sig.args[0], args[0])(args[1], 0)
        frm = _vector_rows(context, builder, sig.args[2], args[2])(args[3], 0)
        builder.store(builder.fadd(builder.load(to, align=4), builder.load(frm, align=4)), to, align=4)
        return context.get_dummy_value()
    return types.none(dst, d, src, s), codegen


@intrinsic
def transpose16_pair(typingctx, dst, d, d2, src, s, s2):
    """_transpose16 of two boxes at once (src at s and s2 to dst at d and d2): 32-lane vectors
    hold a row of each, so every shuffle round moves both (AVX-512 does it in one instruction)."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array)
            and dst.dtype == src.dtype):
        return None

    def codegen(context, builder, sig, args):
        to = _vector_rows(context, builder, sig.args[0], args[0])
        frm = _vector_rows(context, builder, sig.args[3], args[3])
        rows = _rounds(builder, [builder.shuffle_vector(builder.load(frm(args[4], i), align=1),
                                                        builder.load(frm(args[5], i), align=1), _JOIN)
                                 for i in range(16)], _LO2, _HI2)
        for i in range(16):
            for h, at in enumerate((args[1], args[2])):
                builder.store(builder.shuffle_vector(rows[i], rows[i], _HALVES[h]), to(at, i), align=1)
        return context.get_dummy_value()
    return types.none(dst, d, d2, src, s, s2), codegen


def _box16(dst, d, src, s):
    """dst[d + 16 x + y] = src[s + 16 y + x] for x, y < 16: _transpose16 between arrays of one
    dtype, else a converting loop."""


@overload(_box16, inline="always")
def _box16_impl(dst, d, src, s):
    if dst.dtype == src.dtype:
        return lambda dst, d, src, s: _transpose16(dst, d, src, s)
    return lambda dst, d, src, s: _transpose_box(dst, d, 16, src, s, 16, 16, 16, False)


def _box16_pair(dst, d, d2, src, s, s2):
    """_box16 of two boxes: transpose16_pair for 2-byte elements (a 32-lane vector is then one
    AVX-512 register: half the shuffles); two _box16 otherwise (32 f32 lanes split in two)."""


@overload(_box16_pair, inline="always")
def _box16_pair_impl(dst, d, d2, src, s, s2):
    if dst.dtype == src.dtype and getattr(dst.dtype, "bitwidth", 0) == 16:
        return lambda dst, d, d2, src, s, s2: transpose16_pair(dst, d, d2, src, s, s2)

    def two(dst, d, d2, src, s, s2):
        _box16(dst, d, src, s)
        _box16(dst, d2, src, s2)
    return two


@plain_calls
@njit(**_C)
def _transpose_box(dst, d, di, src, s, si, n, m, add):
    """dst[d + x * di + y] = (or +=) src[s + y * si + x] for x < n, y < m: one box, written in
    dst's order."""
    for x in range(n):
        for y in range(m):
            o, i = np.uint64(d + x * di + y), np.uint64(s + y * si + x)
            if add:
                dst[o] += src[i]
            else:
                dst[o] = src[i]


# copy_runs calls its three larger helpers through xcall: linked in, numba optimised them again
# inside each of copy_runs' specialisations. (copy_runs itself is only ever called through xcall.)
_lines_x, _runs_x, _tbox_x, _rows16_x = (xcall(f) for f in (_lines, _runs, _transpose_box, _rows16))


@plain_calls
@njit(**_C)
def copy_runs(dst, db, dl, dr0, dc0, src, sb, sl, sr0, sc0, rows, cols, add, stream):
    """dst[db + (dr0 + i, dc0 + j)] = (or +=) src[sb + (sr0 + i, sc0 + j)] over a rows x cols
    window, through the two layouts, in runs along rows or along columns (whichever keeps dst,
    then src, consecutive): each run is one strided loop, a vectorised copy when both strides
    are 1. A GM view's 2-D block is ``strided(row stride, col stride)``. Two layouts with the
    same boxes (a box's elements consecutive, in the same order), over a box-aligned window, copy
    whole boxes; with the boxes' inner orders transposed, box by box. ``stream``: dst is GM (a
    TSTORE), whose box rows may go round the caches (_rows16).""" 
    boxes = _box_pair(dl, dr0, dc0, sl, sr0, sc0, rows, cols)
    if boxes == SAME:
        ir_, ic = dl[0], dl[1]
        n = np.uint64(ir_ * ic)
        for bi in range(rows // ir_):                    # box by box, each one move
            for bj in range(cols // ic):
                s = np.uint64(sb + (sr0 // ir_ + bi) * sl[2] + (sc0 // ic + bj) * sl[3])
                d = np.uint64(db + (dr0 // ir_ + bi) * dl[2] + (dc0 // ic + bj) * dl[3])
                if add:
                    for x in range(n):
                        dst[d + x] += src[s + x]
                else:
                    _copy_box(dst, d, src, s, n)
        return
    if boxes == TRANSPOSED:
        ir_, ic = dl[0], dl[1]
        n, m = (ic, ir_) if dl[4] == 1 else (ir_, ic)    # dst's outer and inner box extents
        nbj, vector = cols // ic, n == 16 and m == 16 and not add
        for bi in range(rows // ir_):
            bj = 0
            while bj < nbj:
                d = db + (dr0 // ir_ + bi) * dl[2] + (dc0 // ic + bj) * dl[3]
                s = sb + (sr0 // ir_ + bi) * sl[2] + (sc0 // ic + bj) * sl[3]
                pair = vector and bj + 1 < nbj
                if pair:
                    _box16_pair(dst, d, d + dl[3], src, s, s + sl[3])     # this box and the next
                elif vector:
                    _box16(dst, d, src, s)
                else:
                    _tbox_x(dst, d, m, src, s, n, n, m, add)
                bj += 2 if pair else 1
        return
    ds_r, ss_r = row_run(dl, 0)[1], row_run(sl, 0)[1]
    ds_c, ss_c = col_run(dl, 0)[1], col_run(sl, 0)[1]
    if ds_r == 1 and ss_r == 1:
        along_row = True
    elif ds_c == 1 and ss_c == 1:
        along_row = False
    else:                                  # a transposing copy: keep dst's writes consecutive
        along_row = ds_r == 1 or (ds_c != 1 and ss_r == 1)
    ds, ss = (ds_r, ss_r) if along_row else (ds_c, ss_c)
    s0, d0, count = (sc0, dc0, cols) if along_row else (sr0, dr0, rows)
    length, sp, dp = _runs_x(sl, s0, dl, d0, count, along_row)
    lines = rows if along_row else cols
    ls, ld = np.empty(lines, np.int64), np.empty(lines, np.int64)   # each line's src, dst part
    even = _line_parts_x(ls, sb, sl, sr0 if along_row else sc0, along_row)
    even = _line_parts_x(ld, db, dl, dr0 if along_row else dc0, along_row) and even
    # a whole group's run moves at once (_rows16) when both sides' lines are evenly spaced in it
    rows16 = even and not add and ds == 1 and ss == 1
    for i0 in range(0, lines, 16):   # 16 lines at a time, run by run: a boxed side's box is then
        i1 = min(i0 + 16, lines)     # one stretch of storage, the other side's lines stay in cache
        for k in range(length.size):
            if rows16 and i1 - i0 == 16:
                _rows16_x(dst, ld[i0] + dp[k], ld[1] - ld[0], src, ls[i0] + sp[k], ls[1] - ls[0],
                          length[k], stream)
            else:
                _lines_x(dst, dp[k], ds, src, sp[k], ss, length[k], ls, ld, i0, i1, add)
    if rows16 and stream:
        _fence()
