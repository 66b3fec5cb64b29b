"""TLOAD / TSTORE between a GM view (5-D shape/stride, element offset) and a tile.

A tile whose outer layout is row-major (ND, Zz, Zn) takes validRow = s0*s1*s2*s3 rows of s4
elements; a column-major one (DN, Nz) the transpose (pto-isa-semantics 4.2). Tile elements are
addressed through the layout descriptor, so boxed tiles load and store element by element.
TLOAD pads like the NPU: only the tail of the last partial 32-byte block of each copied row
(column for DN), and only when the tile's pad value is not Null (4.3).
"""
from numba import njit

from ... import errcodes as E
from .layout import offset, row_dense

_J = dict(cache=True, error_model="numpy", nogil=True)


@njit(**_J)
def _check(rowmajor, gm_len, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, vr, vc, err):
    if rowmajor:
        rows = s0 * s1 * s2 * s3
        cols = s4
    else:
        rows = s3
        cols = s0 * s1 * s2 * s4
    if rows != vr or cols != vc:
        err[0] = E.SHAPE
        err[1] = rows
        err[2] = cols
        err[3] = vr
        err[4] = vc
        return False
    last = off + (s0 - 1) * t0 + (s1 - 1) * t1 + (s2 - 1) * t2 + (s3 - 1) * t3 + (s4 - 1) * t4
    if off < 0 or last >= gm_len or s0 < 1 or s1 < 1 or s2 < 1 or s3 < 1 or s4 < 1:
        err[0] = E.GM_BOUNDS
        err[1] = -1
        err[2] = last
        err[3] = gm_len - 1
        return False
    return True


@njit(**_J)
def _copy(dst, src, n):
    """dst[:n] = src[:n] over two contiguous views (vectorises; no shape-check error path)."""
    for i in range(n):
        dst[i] = src[i]


@njit(inline="always", **_J)
def _transfer(to_tile, tile, lay, rowmajor, gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4):
    """Move the elements a GM view and a tile's valid region share, GM -> tile or tile -> GM.
    GM row (i0, i1, i2, i3) is tile row ((i0*s1 + i1)*s2 + i2)*s3 + i3 for a row-major tile; a
    column-major tile takes the transpose. Inlined, so each caller's constant direction prunes
    the other branch."""
    dense = rowmajor and row_dense(lay) and t4 == 1
    for i0 in range(s0):
        for i1 in range(s1):
            for i2 in range(s2):
                for i3 in range(s3):
                    g = off + i0 * t0 + i1 * t1 + i2 * t2 + i3 * t3
                    if dense:
                        base = offset(lay, ((i0 * s1 + i1) * s2 + i2) * s3 + i3, 0)
                        if to_tile:
                            _copy(tile[base:base + s4], gm[g:g + s4], s4)
                        else:
                            _copy(gm[g:g + s4], tile[base:base + s4], s4)
                        continue
                    for i4 in range(s4):
                        if rowmajor:
                            t = offset(lay, ((i0 * s1 + i1) * s2 + i2) * s3 + i3, i4)
                        else:
                            t = offset(lay, i3, ((i0 * s1 + i1) * s2 + i2) * s4 + i4)
                        if to_tile:
                            tile[t] = gm[g + i4 * t4]
                        else:
                            gm[g + i4 * t4] = tile[t]


@njit(**_J)
def tload(dst, vr, vc, lay, rows_cap, cols_cap, rowmajor, pad_on, pad, c0,
          gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, err):
    if not _check(rowmajor, gm.shape[0], off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, vr, vc, err):
        return
    _transfer(True, dst, lay, rowmajor, gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4)
    if pad_on:
        if rowmajor:
            end = min(((vc + c0 - 1) // c0) * c0, cols_cap)
            for r in range(vr):
                for c in range(vc, end):
                    dst[offset(lay, r, c)] = pad
        else:
            end = min(((vr + c0 - 1) // c0) * c0, rows_cap)
            for c in range(vc):
                for r in range(vr, end):
                    dst[offset(lay, r, c)] = pad


@njit(**_J)
def tstore(gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, src, vr, vc, lay, rowmajor, err):
    if not _check(rowmajor, gm.shape[0], off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, vr, vc, err):
        return
    _transfer(False, src, lay, rowmajor, gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4)
