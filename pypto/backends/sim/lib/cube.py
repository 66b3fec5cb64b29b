"""The cube (TMATMUL family) and the fixpipe (what happens to data leaving L0C), as numba loops.

Operands are read through their layout descriptors into dense matrices and multiplied with
``np.dot`` (BLAS through numba), so the simulator's tile multiply runs at BLAS speed:
* float inputs (f16, bf16, f32, fp8, hif8) widen exactly to f32 and multiply in f32 (sgemm): the
  accumulation is f32, as the cube's; its order is the BLAS library's (the NPU's is unspecified).
* i8 inputs multiply in f64, which is exact (|sum| < 4095 * 2^14), and accumulate into i32
  modulo 2^32.
The fixpipe converts one accumulator value: ReLU first, then the quantisation scale (a multiply),
then the destination type (nearest even; integers saturate). Scales are f32 bit patterns in the
low 32 bits of a u64 (the scalar preQuantScalar, or fp[0, j] of a Scaling tile per column).
"""
import numpy as np
from numba import njit

from ... import errcodes as E
from .checks import in_range
from .convert import BF16, F16, F32, decode, encode
from .floatbits import bf16_to_f32, bits_f32, f16_to_f32
from .layout import offset, parts
from .memory import _check, _rc
from .xcall import xcall

_J = dict(cache=True, error_model="numpy", nogil=True)
_decode, _encode = xcall(decode), xcall(encode)
MAX_MKN = 4095
Q_NONE, Q_SCALAR, Q_VECTOR = 0, 1, 2


@njit(**_J)
def _dense32(src, lay, rows, cols, code):
    """src[0:rows, 0:cols] as a dense float32 matrix (every element widens exactly)."""
    out = np.empty((rows, cols), np.float32)
    ro, co = parts(lay, 0, rows, 0, cols)
    if code == F32:
        for i in range(rows):
            for j in range(cols):
                out[i, j] = src[ro[i] + co[j]]
    elif code == F16:
        for i in range(rows):
            for j in range(cols):
                out[i, j] = f16_to_f32(np.uint16(src[ro[i] + co[j]]))
    elif code == BF16:
        for i in range(rows):
            for j in range(cols):
                out[i, j] = bf16_to_f32(np.uint16(src[ro[i] + co[j]]))
    else:
        table = np.empty(256, np.float32)          # 1-byte floats: decode each code once
        for x in range(256):
            table[x] = np.float32(decode(np.uint8(x), code))
        for i in range(rows):
            for j in range(cols):
                out[i, j] = table[np.uint8(src[ro[i] + co[j]])]
    return out


@njit(**_J)
def _dense64(src, lay, rows, cols):
    """An integer tile's src[0:rows, 0:cols] as a dense float64 matrix."""
    out = np.empty((rows, cols), np.float64)
    ro, co = parts(lay, 0, rows, 0, cols)
    for i in range(rows):
        for j in range(cols):
            out[i, j] = src[ro[i] + co[j]]
    return out


@njit(inline="always", **_J)
def _sizes(avr, avc, bvr, bvc, arows, gemv, m16, err):
    """(m, k, n, rows written) of one cube operation, or m = 0 after a RANGE fault."""
    if gemv:
        m, k, n = 1, bvr, bvc
    else:
        m, k, n = avr, avc, bvc
    if not (in_range(E.RANGE_MKN, m, 1, MAX_MKN, err) and in_range(E.RANGE_MKN, k, 1, MAX_MKN, err)
            and in_range(E.RANGE_MKN, n, 1, MAX_MKN, err)):
        return 0, 0, 0, 0
    rows = min(16, arows) if (m16 and m == 1 and not gemv) else m
    return m, k, n, rows


@njit(**_J)
def mma_float(c, cvr, cvc, cl, a, avr, avc, al, b, bvr, bvc, bl, bias, bsvr, bsvc, bsl,
              acode, bcode, arows, gemv, accumulate, has_bias, m16, err):
    """c = a @ b, c += a @ b, or c = bias + a @ b into an f32 accumulator."""
    m, k, n, rows = _sizes(avr, avc, bvr, bvc, arows, gemv, m16, err)
    if m == 0:
        return
    p = np.dot(_dense32(a, al, rows, k, acode), _dense32(b, bl, k, n, bcode))
    ro, co = parts(cl, 0, rows, 0, n)
    for i in range(rows):
        for j in range(n):
            o = ro[i] + co[j]
            if accumulate:
                c[o] = c[o] + p[i, j]
            elif has_bias:
                c[o] = bias[offset(bsl, 0, j)] + p[i, j]
            else:
                c[o] = p[i, j]


@njit(**_J)
def mma_int(c, cvr, cvc, cl, a, avr, avc, al, b, bvr, bvc, bl, bias, bsvr, bsvc, bsl,
            acode, bcode, arows, gemv, accumulate, has_bias, m16, err):
    """The same into an i32 accumulator: exact products and sums, wrapping modulo 2^32."""
    m, k, n, rows = _sizes(avr, avc, bvr, bvc, arows, gemv, m16, err)
    if m == 0:
        return
    p = np.dot(_dense64(a, al, rows, k), _dense64(b, bl, k, n))
    ro, co = parts(cl, 0, rows, 0, n)
    for i in range(rows):
        for j in range(n):
            o = ro[i] + co[j]
            s = np.int64(p[i, j])
            if accumulate:
                s += np.int64(c[o])
            elif has_bias:
                s += np.int64(bias[offset(bsl, 0, j)])
            c[o] = np.int32(((s + 2 ** 31) & 0xFFFFFFFF) - 2 ** 31)


# -- moves -------------------------------------------------------------------------------------------

@njit(inline="always", **_J)
def _inside(rows, cols, sr0, sc0, dr0, dc0, srows, scols, drows, dcols, err):
    """The rows x cols windows at (sr0, sc0) of src and (dr0, dc0) of dst lie inside the tiles."""
    return (in_range(E.RANGE_OFFSET, sr0, 0, srows - rows, err) and
            in_range(E.RANGE_OFFSET, sc0, 0, scols - cols, err) and
            in_range(E.RANGE_OFFSET, dr0, 0, drows - rows, err) and
            in_range(E.RANGE_OFFSET, dc0, 0, dcols - cols, err))


@njit(**_J)
def copy_window(dst, dvr, dvc, dl, src, svr, svc, sl, rows, cols, sr0, sc0, dr0, dc0,
                srows, scols, drows, dcols, err):
    """dst[dr0 + i, dc0 + j] = src[sr0 + i, sc0 + j] (raw elements, any layouts)."""
    if not _inside(rows, cols, sr0, sc0, dr0, dc0, srows, scols, drows, dcols, err):
        return
    sro, sco = parts(sl, sr0, rows, sc0, cols)
    dro, dco = parts(dl, dr0, rows, dc0, cols)
    for i in range(rows):
        for j in range(cols):
            dst[dro[i] + dco[j]] = src[sro[i] + sco[j]]


@njit(inline="always", **_J)
def _put(dst, o, bits, dcode):
    if dcode == F32:
        dst[o] = bits_f32(bits)
    else:
        dst[o] = bits


@njit(inline="always", **_J)
def _scale(qmode, scalar, fp, fpl, j):
    if qmode == Q_SCALAR:
        return np.float64(bits_f32(scalar & 0xFFFFFFFF))
    if qmode == Q_VECTOR:
        return np.float64(bits_f32(np.int64(fp[offset(fpl, 0, j)]) & 0xFFFFFFFF))
    return 1.0


@njit(inline="always", **_J)
def _fix(v, relu, q):
    if relu and v < 0:
        v = 0.0
    return v * q


@njit(**_J)
def convert_window(dst, dvr, dvc, dl, src, svr, svc, sl, rows, cols, sr0, sc0, dr0, dc0,
                   srows, scols, drows, dcols, scode, dcode, relu, qmode, scalar, fp, fpvr, fpvc,
                   fpl, rmode, sat, err):
    """The fixpipe between tiles (Acc -> Mat/Vec, and Mat -> Bias's f16 -> f32): each element
    is decoded, ReLU'd, scaled and encoded as dst's type."""
    if not _inside(rows, cols, sr0, sc0, dr0, dc0, srows, scols, drows, dcols, err):
        return
    sro, sco = parts(sl, sr0, rows, sc0, cols)
    dro, dco = parts(dl, dr0, rows, dc0, cols)
    for j in range(cols):
        q = _scale(qmode, scalar, fp, fpl, sc0 + j)
        for i in range(rows):
            v = _decode(src[sro[i] + sco[j]], scode)
            _put(dst, dro[i] + dco[j], _encode(_fix(v, relu, q), dcode, rmode, sat), dcode)


@njit(**_J)
def store_acc(gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, src, vr, vc, lay, mode,
              scode, dcode, relu, qmode, scalar, fp, fpvr, fpvc, fpl, rmode, sat, err):
    """TSTORE / TSTORE_FP from an Acc tile: the view's elements get the fixpipe's conversion of
    the tile's (row, col) (the view's shape must equal the tile's valid region)."""
    if not _check(mode, gm.shape[0], off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, vr, vc, err):
        return
    for i0 in range(s0):
        for i1 in range(s1):
            for i2 in range(s2):
                for i3 in range(s3):
                    for i4 in range(s4):
                        r, c = _rc(mode, i0, i1, i2, i3, i4, s1, s2, s3, s4)
                        q = _scale(qmode, scalar, fp, fpl, c)
                        v = _decode(src[offset(lay, r, c)], scode)
                        g = off + i0 * t0 + i1 * t1 + i2 * t2 + i3 * t3 + i4 * t4
                        _put(gm, g, _encode(_fix(v, relu, q), dcode, rmode, sat), dcode)


# Called through xcall (lib/xcall.py): each is compiled once per argument types and shared by every
# kernel, instead of being optimised again inside each (their work is BLAS and whole tiles, so
# inlining buys nothing); convert_window and store_acc must be, as they contain xcalls.
for _f in (mma_float, mma_int, copy_window, convert_window, store_acc):
    _f.calls_xcall = True
del _f
