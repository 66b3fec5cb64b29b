"""Numpy reference of the memory and data-movement family for Vec tiles (pto-isa-semantics 3.3,
3.6, 4, 5.5, 5.7, 5.9 n12-n14, 9 and the Addendum), following the NPU per SoC. Imports nothing of
pypto (numpy, ml_dtypes and conformance/reference.py's dtype helpers only).

Tiles are given as their whole logical (Rows, Cols) contents; where the storage order matters
(Nz tiles, TRESHAPE, a5 TMOV ND -> Nz) the functions say so. Rules and choices:

* TLOAD (``tload``): the view's elements land in the valid region (ND: rows of s4; DN: the same
  logical placement; NZ view [B, C1, R1, 16, c0] -> tile row i2*16 + i3, column (i0*C1 + i1)*c0 +
  i4, ``nz_block``). Padding with PadZero/PadMin/PadMax (values: reference.pad_value, NPU column of
  3.6) only on the last partial 32-byte block: ND columns [vc, roundup(vc, c0)) of the copied
  rows; DN rows [vr, roundup(vr, c0)) of the copied columns; NZ nothing. PadNull writes nothing;
  everything else keeps its contents.
* TSTORE (``tstore``): the inverse; ``tstore_add`` is the atomic add: GM[k] += tile[k]; integers
  wrap modulo 2^w; f32 is one f32 addition; f16 and bf16 are the exact sum (fractions) rounded
  once to nearest even, overflow to +-inf (ties at the overflow threshold go to inf), an exact
  zero sum is +0 except -0 + -0 = -0 (IEEE); a NaN operand or inf - inf gives a NaN whose payload
  the ISA leaves open (``loose`` mask).
* TPREFETCH (``tprefetch``): pypto's choice: the tile keeps its contents.
* MGATHER / MSCATTER (``mgather`` / ``mscatter``): one index idx[i, j] per element, over dst's
  (src's) valid region; indices count from the view's first element; an index outside the tensor raises IndexError (pypto: a run-time
  error, nothing written); scatter duplicates: the last write in row-major order wins.
* TFILLPAD family (``tfillpad``): rows r < svr: dst[r, c] = src[r, c] for c < svc (not for
  INPLACE), pad for svc <= c < dst.Cols; rows svr <= r < dvr: pad across dst.Cols; the rest keeps
  its contents; a2a3 does nothing when dst's valid region is empty. Pad: dst's PadValue.
* TMOV Vec -> Vec (``tmov``): ND -> ND over min(src valid, dst valid); a2a3 copies whole 32-byte
  blocks: columns up to roundup(vc, c0), or whole rows when dst's valid width is static and full
  or vc == Cols; a5 exactly the region. ``tmov_nd2nz_storage``: a5 ND -> Nz, element (r, c) to
  storage ((c // c0) * V + r) * c0 + c % c0, V = roundup(svr, 16) (+1 when dst holds (Rows + 1)
  * Cols elements).
* TEXTRACT / TINSERT Vec -> Vec (``textract`` / ``tinsert``): pypto's definition (no NPU has the
  pair): a window copy inside the source's (destination's) valid region.
* TRESHAPE (``treshape``): the source's storage bytes read as the destination's ND type; and dst
  aliases src (both name the same bytes afterwards).
* TTRANS (``ttrans``): dst[j, i] = src[i, j]; a2a3 over src's valid region, a5 over src's whole
  shape.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from .reference import BF16, F16, F32, bits_dtype, np_dtype, pad_value

SOCS = ("a2a3", "a5")


def c0_of(dtype: Any) -> int:
    return 32 // np_dtype(dtype).itemsize


def _up(x: int, m: int) -> int:
    return -(-x // m) * m


# ---------------------------------------------------------------------------------------------
# TLOAD / TSTORE / TPREFETCH
# ---------------------------------------------------------------------------------------------
def nz_block(gm5: np.ndarray) -> np.ndarray:
    """The logical (R1*16, B*C1*c0) block of an NZ array [B, C1, R1, 16, c0] (section 4.2)."""
    b, c1, r1, r16, c0 = gm5.shape
    out = np.empty((r1 * r16, b * c1 * c0), gm5.dtype)
    for i0 in range(b):
        for i1 in range(c1):
            for i2 in range(r1):
                for i3 in range(r16):
                    out[i2 * r16 + i3, (i0 * c1 + i1) * c0:(i0 * c1 + i1 + 1) * c0] = gm5[i0, i1, i2, i3]
    return out


def nz_array(block: np.ndarray, batches: int = 1) -> np.ndarray:
    """Inverse of ``nz_block``: the NZ array [B, C1, R1, 16, c0] holding a logical block."""
    rows, cols = block.shape
    c0 = c0_of(block.dtype)
    c1 = cols // (batches * c0)
    out = np.empty((batches, c1, rows // 16, 16, c0), block.dtype)
    for i0 in range(batches):
        for i1 in range(c1):
            col = (i0 * c1 + i1) * c0
            out[i0, i1] = block[:, col:col + c0].reshape(rows // 16, 16, c0)
    return out


def nz_offset(r: int, c: int, rows: int, dtype: Any) -> int:
    """Storage index of (r, c) in an Nz tile of ``rows`` rows (section 3.3, 16 x c0 boxes)."""
    c0 = c0_of(dtype)
    return (c // c0) * (rows * c0) + (r // 16) * (16 * c0) + (r % 16) * c0 + (c % c0)


def tload(tile: np.ndarray, block: np.ndarray, pad: str = "null", layout: str = "ND") -> np.ndarray:
    """Logical tile contents after TLOAD of the (validRow, validCol) ``block`` into a tile of layout
    "ND", "DN" or "Nz" (from an NZ view) whose contents were ``tile``."""
    out = np.array(tile, copy=True)
    blk = np.asarray(block, dtype=out.dtype)
    vr, vc = blk.shape
    rows, cols = out.shape
    if vr > rows or vc > cols:
        raise ValueError("GM block larger than the tile")
    out[:vr, :vc] = blk
    pad = pad.lower().removeprefix("pad")
    if pad == "null" or layout == "Nz":
        return out
    c0 = c0_of(out.dtype)
    if layout == "ND":
        out[:vr, vc:min(cols, _up(vc, c0))] = pad_value(out.dtype, pad)
    else:
        out[vr:min(rows, _up(vr, c0)), :vc] = pad_value(out.dtype, pad)
    return out


def pad_region(dtype: Any, valid: tuple[int, int], shape: tuple[int, int], layout: str = "ND") -> np.ndarray:
    """Mask of the elements TLOAD pads (pad != null)."""
    vr, vc = valid
    m = np.zeros(shape, bool)
    c0 = c0_of(dtype)
    if layout == "ND":
        m[:vr, vc:min(shape[1], _up(vc, c0))] = True
    elif layout == "DN":
        m[vr:min(shape[0], _up(vr, c0)), :vc] = True
    return m


def tstore(gm: np.ndarray, tile: np.ndarray, valid: tuple[int, int], at: tuple[int, int] = (0, 0)) -> np.ndarray:
    """2-D GM contents after TSTORE of the tile's valid region at GM offset ``at``."""
    out = np.array(gm, copy=True)
    vr, vc = valid
    r0, c0 = at
    out[r0:r0 + vr, c0:c0 + vc] = np.asarray(tile)[:vr, :vc]
    return out


def tprefetch(tile: np.ndarray) -> np.ndarray:
    """pypto's choice: the tile keeps its contents."""
    return np.array(tile, copy=True)


# -- atomic add ----------------------------------------------------------------------------------
def _float_bits(dt: np.dtype) -> tuple[int, int]:
    """(exponent bits, mantissa bits) of f16 / bf16."""
    return (5, 10) if dt == F16 else (8, 7)


def _round_exact(x: Fraction, dt: np.dtype) -> int:
    """Bits of the exact value ``x`` rounded once to f16/bf16 (nearest even, overflow to inf)."""
    eb, mb = _float_bits(dt)
    bias = (1 << (eb - 1)) - 1
    neg = x < 0
    a = -x if neg else x
    sign = (1 << (eb + mb)) if neg else 0
    if a == 0:
        return sign
    emin = 1 - bias
    # exponent of a: 2^e <= a < 2^(e+1)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    q = a / Fraction(2) ** (e - mb)            # significand in units of the last place
    n = q.numerator // q.denominator
    rem = q - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    if n >= (1 << (mb + 1)):                    # carried into the next binade
        n >>= 1
        e += 1
    if e > bias:                                # overflow: infinity
        return sign | (((1 << eb) - 1) << mb)
    if n < (1 << mb):                           # subnormal (e == emin)
        return sign | n
    return sign | ((e + bias) << mb) | (n - (1 << mb))


def tstore_add(gm: np.ndarray, tile: np.ndarray, dtype: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """(gm + tile elementwise as the atomic add rounds it, loose mask of NaN results)."""
    dt = np_dtype(dtype if dtype is not None else np.asarray(gm).dtype)
    a = np.asarray(gm, dtype=dt)
    b = np.asarray(tile, dtype=dt)
    if dt.kind in "iu":
        w = 8 * dt.itemsize
        s = (a.astype(np.int64) + b.astype(np.int64)) & ((1 << w) - 1)
        return s.astype(np.uint64).astype(bits_dtype(dt)).view(dt), np.zeros(a.shape, bool)
    if dt == F32:
        with np.errstate(over="ignore", invalid="ignore"):
            out = (a + b).astype(F32)
        return out, np.isnan(out)
    out_bits = np.empty(a.shape, bits_dtype(dt))
    loose = np.zeros(a.shape, bool)
    af, bf = a.astype(np.float64), b.astype(np.float64)
    for k in np.ndindex(a.shape):
        x, y = float(af[k]), float(bf[k])
        if np.isnan(x) or np.isnan(y) or (np.isinf(x) and np.isinf(y) and x != y):
            loose[k] = True
            out_bits[k] = np.array([np.nan], dt).view(bits_dtype(dt))[0]
        elif np.isinf(x) or np.isinf(y):
            out_bits[k] = np.array([x + y], np.float64).astype(F32).astype(dt).view(bits_dtype(dt))[0]
        elif x == 0 and y == 0:                 # IEEE: -0 + -0 = -0, any other zero sum +0
            neg = np.signbit(x) and np.signbit(y)
            out_bits[k] = (1 << (8 * dt.itemsize - 1)) if neg else 0
        else:
            out_bits[k] = _round_exact(Fraction(x) + Fraction(y), dt)
    return out_bits.view(dt), loose


# ---------------------------------------------------------------------------------------------
# MGATHER / MSCATTER
# ---------------------------------------------------------------------------------------------
def mgather(table: np.ndarray, idx: np.ndarray, dst: np.ndarray, valid: tuple[int, int],
            offset: int = 0) -> np.ndarray:
    """dst after MGATHER over its valid region from the flat ``table`` (the whole tensor), the
    view starting at element ``offset``."""
    flat = np.asarray(table).reshape(-1)
    out = np.array(dst, copy=True)
    vr, vc = valid
    k = offset + np.asarray(idx)[:vr, :vc].astype(np.int64)
    if ((k < 0) | (k >= flat.size)).any():
        raise IndexError("an index outside the tensor")
    out[:vr, :vc] = flat[k]
    return out


def mscatter(gm: np.ndarray, src: np.ndarray, idx: np.ndarray, valid: tuple[int, int],
             offset: int = 0) -> np.ndarray:
    """The flat GM tensor after MSCATTER of src's valid region (row-major: the last write wins)."""
    out = np.array(gm, copy=True).reshape(-1)
    vr, vc = valid
    k = offset + np.asarray(idx)[:vr, :vc].astype(np.int64)
    if ((k < 0) | (k >= out.size)).any():
        raise IndexError("an index outside the tensor")
    for r in range(vr):
        for c in range(vc):
            out[k[r, c]] = src[r, c]
    return out.reshape(np.shape(gm))


def first_duplicate(idx: np.ndarray, valid: tuple[int, int]) -> tuple[int, int] | None:
    """The first element (row-major) of the valid region whose index an earlier element used."""
    seen = set()
    for r in range(valid[0]):
        for c in range(valid[1]):
            k = int(idx[r, c])
            if k in seen:
                return r, c
            seen.add(k)
    return None


# ---------------------------------------------------------------------------------------------
# TFILLPAD, TMOV, TEXTRACT, TINSERT, TRESHAPE, TTRANS
# ---------------------------------------------------------------------------------------------
def tfillpad(dst: np.ndarray, src: np.ndarray, src_valid: tuple[int, int], dst_valid: tuple[int, int],
             pad: str, copy: bool = True, soc: str = "a2a3") -> np.ndarray:
    """dst after TFILLPAD (copy=False: TFILLPAD_INPLACE) with dst's pad value ``pad``."""
    out = np.array(dst, copy=True)
    svr, svc = src_valid
    dvr, dvc = dst_valid
    if soc == "a2a3" and (dvr == 0 or dvc == 0):
        return out
    p = pad_value(out.dtype, pad)
    if copy:
        out[:svr, :svc] = np.asarray(src)[:svr, :svc]
    out[:svr, svc:] = p
    if dvr > svr:
        out[svr:dvr, :] = p
    return out


def tmov(dst: np.ndarray, src: np.ndarray, src_valid: tuple[int, int], dst_valid: tuple[int, int],
         soc: str = "a2a3", dst_static_full: bool = False) -> np.ndarray:
    """dst after a Vec ND -> ND TMOV."""
    out = np.array(dst, copy=True)
    vr, vc = min(src_valid[0], dst_valid[0]), min(src_valid[1], dst_valid[1])
    if vr == 0 or vc == 0:
        return out
    cols = out.shape[1]
    w = vc
    if soc == "a2a3":
        w = cols if dst_static_full or vc == cols else min(_up(vc, c0_of(out.dtype)), cols)
    out[:vr, :w] = np.asarray(src)[:vr, :w]
    return out


def tmov_nd2nz_storage(storage: np.ndarray, src: np.ndarray, src_valid: tuple[int, int]) -> np.ndarray:
    """Flat storage of the Nz dst (same shape as src) after a5's ND -> Nz TMOV."""
    out = np.array(storage, copy=True).reshape(-1)
    rows, cols = src.shape
    c0 = c0_of(src.dtype)
    extra = 1 if out.size >= (rows + 1) * cols else 0
    v = _up(src_valid[0], 16) + extra
    for r in range(src_valid[0]):
        for c in range(src_valid[1]):
            out[((c // c0) * v + r) * c0 + c % c0] = src[r, c]
    return out


def textract(dst: np.ndarray, src: np.ndarray, dst_valid: tuple[int, int], src_valid: tuple[int, int],
             r0: int, c0: int) -> np.ndarray:
    vr, vc = dst_valid
    if r0 < 0 or c0 < 0 or r0 + vr > src_valid[0] or c0 + vc > src_valid[1]:
        raise IndexError("window outside src's valid region")
    out = np.array(dst, copy=True)
    out[:vr, :vc] = np.asarray(src)[r0:r0 + vr, c0:c0 + vc]
    return out


def tinsert(dst: np.ndarray, src: np.ndarray, dst_valid: tuple[int, int], src_valid: tuple[int, int],
            r0: int, c0: int) -> np.ndarray:
    vr, vc = src_valid
    if r0 < 0 or c0 < 0 or r0 + vr > dst_valid[0] or c0 + vc > dst_valid[1]:
        raise IndexError("window outside dst's valid region")
    out = np.array(dst, copy=True)
    out[r0:r0 + vr, c0:c0 + vc] = np.asarray(src)[:vr, :vc]
    return out


def treshape(src: np.ndarray, dtype: Any, shape: tuple[int, int]) -> np.ndarray:
    """An ND tile's storage bytes read as an ND tile of ``dtype`` and ``shape``."""
    raw = np.ascontiguousarray(src).view(np.uint8).reshape(-1)
    return raw.view(np_dtype(dtype)).reshape(shape)


def ttrans(dst: np.ndarray, src: np.ndarray, src_valid: tuple[int, int], soc: str = "a2a3") -> np.ndarray:
    out = np.array(dst, copy=True)
    vr, vc = src_valid if soc == "a2a3" else np.shape(src)
    out[:vc, :vr] = np.asarray(src)[:vr, :vc].T
    return out


REFERENCE = {"TLOAD": tload, "TSTORE": tstore, "TPREFETCH": tprefetch, "MGATHER": mgather,
             "MSCATTER": mscatter, "TFILLPAD": tfillpad, "TFILLPAD_INPLACE": tfillpad,
             "TFILLPAD_EXPAND": tfillpad, "TMOV": tmov, "TEXTRACT": textract, "TINSERT": tinsert,
             "TRESHAPE": treshape, "TTRANS": ttrans}

__all__ = ["tload", "tstore", "tstore_add", "tprefetch", "mgather", "mscatter", "first_duplicate",
           "tfillpad", "tmov", "tmov_nd2nz_storage", "textract", "tinsert", "treshape", "ttrans",
           "nz_block", "nz_array", "nz_offset", "pad_region", "c0_of", "REFERENCE"]
