"""The cube (TMATMUL family) and the fixpipe (what happens to data leaving L0C), as numba loops.

Operands are read through their layout descriptors into dense matrices and multiplied with
``np.dot`` (BLAS through numba), so the simulator's tile multiply runs at BLAS speed:
* float inputs (f16, bf16, f32, fp8, hif8) widen exactly to f32 and multiply in f32 (sgemm): the
  accumulation is f32, as the cube's; its order is the BLAS library's (the NPU's is unspecified).
* i8 inputs multiply in f64, which is exact (|sum| < 4095 * 2^14), and accumulate into i32
  modulo 2^32.
* MX (a5): fp8 operands (or fp4 values unpacked from their byte pairs, low nibble first) times
  their e8m0 block scales (2^(e - 127), one per 32 K values) are exact in f64; their products are
  summed there (dgemm) and rounded once to f32.
Operands move into the dense matrices in runs (layout.copy_runs): B as its transpose, so the
columns of Zn boxes stay consecutive.
The fixpipe converts one accumulator value: ReLU first, then the quantisation scale (a multiply),
then the destination type (nearest even; integers saturate). Scales are f32 bit patterns in the
low 32 bits of a u64 (the scalar preQuantScalar, or fp[0, j] of a Scaling tile per column).
"""
import numpy as np
from numba import njit

from ... import errcodes as E
from .checks import in_range
from .convert import BF16, F16, F32, decode, encode
from .floatbits import bf16_to_f32, bits_f32, f16_widen, f16_widen_run
from .layout import _copy_n, add_run16, copy_runs, offset, parts, strided
from .memory import _check, _rc, tstore
from .plain import plain_calls
from .xcall import xcall
from .jit import XCALLED
from .codes import FP4_E2M1, MAX_MKN, Q_SCALAR, Q_VECTOR

_J = XCALLED         # only jitted code calls these (kernels through guarded): lib/jit.py
_decode, _encode = xcall(decode), xcall(encode)
# The cube's helpers call one another through xcall handles (_copy, _raw_x, _dense, ...): linked
# in, numba optimised each helper again inside every specialisation of every caller (measured on
# the tutorial's first matmul, benchmarks/README.md).
_copy, _tstore = xcall(copy_runs), xcall(tstore)


@plain_calls
@njit(**_J)
def _raw(src, lay, rows, cols, transposed):
    """src[0:rows, 0:cols] copied as stored (same element type) into a dense row-major array,
    of the transpose when ``transposed`` (so a Zn operand's box columns stay runs)."""
    out = np.empty(rows * cols, src.dtype)
    dense = strided(1, rows) if transposed else strided(cols, 1)
    _copy(out, 0, dense, 0, 0, src, 0, lay, 0, 0, rows, cols, False, False)
    return out.reshape(cols, rows) if transposed else out.reshape(rows, cols)


_raw_x = xcall(_raw)


@plain_calls
@njit(**_J)
def _f16_boxes_fit(lay, rows, cols, transposed):
    """The boxes tile the window and each box's runs lie along the dense rows of _dense32's
    result (Zz's rows; Zn's columns, transposed)."""
    ir_, ic, brs, bcs, irs, ics = lay
    return (ir_ == 16 and ic == 16 and rows % 16 == 0 and cols % 16 == 0
            and ((not transposed and irs == 16 and ics == 1)
                 or (transposed and irs == 1 and ics == 16)))


@plain_calls
@njit(**_J)
def _f16_boxes(src, lay, rows, cols, transposed):
    """_dense32 of f16 in one pass, box by box: each run of 16 widens into place (one vector
    conversion, f16_widen_run)."""
    brs, bcs = lay[2], lay[3]
    dr, dc = (cols, rows) if transposed else (rows, cols)
    out = np.empty(dr * dc, np.float32)
    for bi in range(rows // 16):
        for bj in range(cols // 16):
            base = bi * brs + bj * bcs
            for x in range(16):                       # the box's run x: 16 of a dense row
                o = (bj * 16 + x) * dc + bi * 16 if transposed else (bi * 16 + x) * dc + bj * 16
                f16_widen_run(out, o, src, base + x * 16)
    return out.reshape(dr, dc)


_boxes = xcall(_f16_boxes)


@plain_calls
@njit(**_J)
def _dense_wide(src, lay, rows, cols, code, transposed):
    """src[0:rows, 0:cols] (or its transpose) of f16, bf16 or f32 as a dense float32 matrix;
    every element widens exactly."""
    if code == F16 and _f16_boxes_fit(lay, rows, cols, transposed):
        return _boxes(src, lay, rows, cols, transposed)
    raw = _raw_x(src, lay, rows, cols, transposed)
    if code == F32:
        return raw.astype(np.float32)
    out = np.empty(raw.shape, np.float32)
    flat, r = out.ravel(), raw.ravel()
    if code == F16:                      # 16 at a time as vector conversions, then the rest
        whole = r.size - r.size % 16
        for x in range(0, whole, 16):
            f16_widen_run(flat, x, r, x)
        for x in range(whole, r.size):
            flat[x] = f16_widen(np.uint16(r[x]))
    else:
        for x in range(r.size):
            flat[x] = bf16_to_f32(np.uint16(r[x]))
    return out


_wide = xcall(_dense_wide)


@plain_calls
@njit(**_J)
def _dense32(src, lay, rows, cols, code, transposed):
    """_dense_wide of any float code, 1-byte floats (fp8, hif8) through a table of the 256
    decoded values. Only mma_float8 and the MX forms call it, so an f16 / bf16 / f32 matmul
    never compiles the decoders (0.5 s of its first launch)."""
    if code == F16 or code == BF16 or code == F32:
        return _wide(src, lay, rows, cols, code, transposed)
    raw = _raw_x(src, lay, rows, cols, transposed)
    out = np.empty(raw.shape, np.float32)
    flat, r = out.ravel(), raw.ravel()
    table = np.empty(256, np.float32)
    for x in range(256):
        table[x] = np.float32(_decode(np.uint8(x), code))
    for x in range(r.size):
        flat[x] = table[np.uint8(r[x])]
    return out


_dense = xcall(_dense32)


@plain_calls
@njit(**_J)
def _fp4_dense(src, lay, rows, cols, code, transposed):
    """src[0:rows, 0:cols] of fp4 byte pairs (or its transpose) as a dense float32 matrix whose
    last axis is doubled: each byte's two values, low nibble first (pairs run along K)."""
    raw = _raw_x(src, lay, rows, cols, transposed)
    mbits = 1 if code == FP4_E2M1 else 2
    table = np.empty(16, np.float32)
    for x in range(16):
        e, m = (x & 7) >> mbits, x & ((1 << mbits) - 1)
        v = m / (1 << mbits) if e == 0 else (1.0 + m / (1 << mbits)) * 2.0 ** (e - 1)
        table[x] = -v if x & 8 else v
    out = np.empty((raw.shape[0], 2 * raw.shape[1]), np.float32)
    for i in range(raw.shape[0]):
        for q in range(raw.shape[1]):
            byte = np.uint8(raw[i, q])
            out[i, 2 * q] = table[byte & 15]
            out[i, 2 * q + 1] = table[byte >> 4]
    return out


_fp4 = xcall(_fp4_dense)


@plain_calls
@njit(**_J)
def _mx_operand(x, lay, rows, cols, code, lanes, transposed):
    """An MX operand's stored rows x cols (fp8 elements, or fp4 pairs when lanes == 2, whose
    values double the K axis: the last one after ``transposed``) as a dense f32 matrix."""
    if lanes == 2:
        return _fp4(x, lay, rows, cols, code, transposed)
    return _dense(x, lay, rows, cols, code, transposed)


_mx = xcall(_mx_operand)


@plain_calls
@njit(**_J)
def _scale_k(x, s, sl, scode, rows, k, scale_rows):
    """x[i, kk] (rows x k, f32) times 2^(e - 127) of its MX scale, in f64 (exact): the scale of
    A's (i, kk) is s[i, kk // 32]; of B's (kk, j), held here as x[j, kk], s[kk // 32, j]."""
    out = np.empty((rows, k), np.float64)
    for i in range(rows):
        for kb in range(0, k, 32):
            e = s[offset(sl, kb // 32, i)] if scale_rows else s[offset(sl, i, kb // 32)]
            f = _decode(e, scode)
            for kk in range(kb, min(kb + 32, k)):
                out[i, kk] = np.float64(x[i, kk]) * f
    return out


_scaled = xcall(_scale_k)


@plain_calls
@njit(**_J)
def _gemm(x, y):
    """x @ y.T through BLAS (numba's np.dot)."""
    return np.dot(x, y.T)


_dot = xcall(_gemm)


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


@njit(inline="always", **_J)
def _add_bias(p, bias, bsl, rows, n):
    """p[i, j] += bias[0, j] (f32): the bias forms seed the accumulator with the bias row."""
    for j in range(n):
        bj = bias[offset(bsl, 0, j)]
        for i in range(rows):
            p[i, j] += bj


@plain_calls
@njit(**_J)
def _into_acc(c, cl, p, rows, n, accumulate):
    """c[0:rows, 0:n] = (or +=) the dense product p through c's layout. Boxes 16 wide and
    row-major inside (L0C's Nz) take a box row per vector move or add; other layouts copy_runs."""
    flat = p.ravel()
    if not (cl[1] == 16 and cl[4] == 16 and cl[5] == 1 and n % 16 == 0):
        _copy(c, 0, cl, 0, 0, flat, 0, strided(n, 1), 0, 0, rows, n, accumulate, False)
        return
    for bj in range(n // 16):
        for bi in range(0, rows, cl[0]):          # offset(cl, i, bj * 16), box row by box row
            base = (bi // cl[0]) * cl[2] + bj * cl[3]
            for x in range(min(cl[0], rows - bi)):
                d, i = base + x * 16, bi + x
                if accumulate:
                    add_run16(c, d, flat, i * n + bj * 16)
                else:
                    _copy_n(c, np.uint64(d), flat, np.uint64(i * n + bj * 16), 16)


_acc = xcall(_into_acc)


@njit(inline="always", **_J)
def _mma(c, cl, a, avr, avc, al, b, bvr, bvc, bl, bias, bsl, acode, bcode, arows, gemv, accumulate,
         has_bias, m16, err, dense):
    m, k, n, rows = _sizes(avr, avc, bvr, bvc, arows, gemv, m16, err)
    if m == 0:
        return
    p = _dot(dense(a, al, rows, k, acode, False), dense(b, bl, k, n, bcode, True))
    if has_bias and not accumulate:
        _add_bias(p, bias, bsl, rows, n)
    _acc(c, cl, p, rows, n, accumulate)


@njit(**_J)
def mma_float(c, cvr, cvc, cl, a, avr, avc, al, b, bvr, bvc, bl, bias, bsvr, bsvc, bsl,
              acode, bcode, arows, gemv, accumulate, has_bias, m16, err):
    """c = a @ b, c += a @ b, or c = bias + a @ b into an f32 accumulator; f16, bf16 or f32
    operands."""
    _mma(c, cl, a, avr, avc, al, b, bvr, bvc, bl, bias, bsl, acode, bcode, arows, gemv, accumulate,
         has_bias, m16, err, _wide)


@njit(**_J)
def mma_float8(c, cvr, cvc, cl, a, avr, avc, al, b, bvr, bvc, bl, bias, bsvr, bsvc, bsl,
               acode, bcode, arows, gemv, accumulate, has_bias, m16, err):
    """mma_float with a 1-byte float operand (fp8 e4m3 / e5m2, hif8)."""
    _mma(c, cl, a, avr, avc, al, b, bvr, bvc, bl, bias, bsl, acode, bcode, arows, gemv, accumulate,
         has_bias, m16, err, _dense)


@njit(**_J)
def mma_int(c, cvr, cvc, cl, a, avr, avc, al, b, bvr, bvc, bl, bias, bsvr, bsvc, bsl,
            acode, bcode, arows, gemv, accumulate, has_bias, m16, err):
    """The same into an i32 accumulator: exact products and sums, wrapping modulo 2^32."""
    m, k, n, rows = _sizes(avr, avc, bvr, bvc, arows, gemv, m16, err)
    if m == 0:
        return
    p = _dot(_raw_x(a, al, rows, k, False).astype(np.float64),
             _raw_x(b, bl, k, n, True).astype(np.float64))
    acc = _raw_x(c, cl, rows, n, False) if accumulate else np.zeros((rows, n), np.int32)
    for i in range(rows):
        for j in range(n):
            s = np.int64(p[i, j]) + np.int64(acc[i, j])
            if has_bias and not accumulate:
                s += np.int64(bias[offset(bsl, 0, j)])
            acc[i, j] = np.int32(((s + 2 ** 31) & 0xFFFFFFFF) - 2 ** 31)
    _copy(c, 0, cl, 0, 0, acc.ravel(), 0, strided(n, 1), 0, 0, rows, n, False, False)


@njit(**_J)
def mma_mx(c, cvr, cvc, cl, a, avr, avc, al, sa, savr, savc, sal, b, bvr, bvc, bl,
           sb, sbvr, sbvc, sbl, bias, bsvr, bsvc, bsl, acode, bcode, scode, lanes, gemv, has_bias,
           accumulate, err):
    """c = (a scaled by sa) @ (b scaled by sb) [+ bias], or c += it, into an f32 accumulator:
    every product of the widened, scaled operands is exact in f64 and summed there (BLAS dgemm),
    then rounded once to f32 (and added to c in f32). fp4 operands (lanes == 2) count pairs along
    K: k = 2 * a.validCol."""
    m, k, n, rows = _sizes(avr, avc * lanes, bvr * lanes, bvc, avr, gemv, False, err)
    if m == 0:
        return
    kq = k // lanes                                   # stored elements along K
    pa = _scaled(_mx(a, al, rows, kq, acode, lanes, False), sa, sal, scode, rows, k, False)
    pb = _scaled(_mx(b, bl, kq, n, bcode, lanes, True), sb, sbl, scode, n, k, True)
    p = _dot(pa, pb).astype(np.float32)
    if has_bias:
        _add_bias(p, bias, bsl, rows, n)
    _acc(c, cl, p, rows, n, accumulate)


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
    _copy(dst, 0, dl, dr0, dc0, src, 0, sl, sr0, sc0, rows, cols, False, False)


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
def store_acc_move(gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, src, vr, vc, lay, mode, relu,
                   err):
    """TSTORE from an Acc tile into a view of its own type, nothing scaled: a plain move, then ReLU
    in GM. Lowering picks it instead of store_acc, so such a store never compiles the fixpipe's
    decode and encode (most of store_acc's compile)."""
    _tstore(gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, src, vr, vc, lay, mode, err)
    if relu and err[0] == 0:
        for i0 in range(s0):
            for i1 in range(s1):
                for i2 in range(s2):
                    for i3 in range(s3):
                        g = off + i0 * t0 + i1 * t1 + i2 * t2 + i3 * t3
                        for i4 in range(s4):
                            if gm[g + i4 * t4] < 0:
                                gm[g + i4 * t4] = 0


@njit(**_J)
def store_acc(gm, off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, src, vr, vc, lay, mode,
              scode, dcode, relu, qmode, scalar, fp, fpvr, fpvc, fpl, rmode, sat, err):
    """TSTORE / TSTORE_FP from an Acc tile: the view's elements get the fixpipe's conversion of
    the tile's (row, col) (the view's shape must equal the tile's valid region). A store that
    converts nothing is store_acc_move's (units/memory.py lowers to one or the other)."""
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
