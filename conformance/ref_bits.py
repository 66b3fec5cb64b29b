"""Numpy reference of the bit, shift, compare and select instructions (pto-isa-semantics 5.2, 5.3,
5.9 n3 n5 n6 n8, 9 and the Addendum's TCMP/TCMPS paragraph), following the NPU per SoC. Imports
no pypto code. Tiles are whole 2-D arrays in row-major (ND) storage; ``valid`` is (rows, cols).

Rules (and pypto's choices where the NPU leaves a result open):

* TAND TOR TXOR TNOT TANDS TORS TXORS: two's-complement bit operations in the element type over
  dst's valid region; a scalar is converted to the element type first. TXOR / TXORS on a2a3 also
  leave src0 | src1 (src | s) in tmp (not compared here).
* TSHL TSHR TSHLS TSHRS: a count c in 0 .. bits-1 gives x * 2^c modulo 2^bits (shl), a logical
  (unsigned) or arithmetic (signed) shift (shr). A count >= the element width or negative is
  undefined on the NPU; pypto's default shifts every bit out: shl gives 0, shr gives 0, or -1 for
  a negative signed x. ``shift`` returns the mask of those elements too (SimOptions(checks=
  "strict") reports them).
* TCMP / TCMPS: predicate bits, bit k of mask byte b = element 8b+k (LSB first). cmpMode EQ NE LT
  LE GT GE; IEEE comparisons for floats (NaN unequal to everything, NE true; -0 == +0). The
  domain is the source's valid region (src0's for TCMP).
  - a2a3 (dst u8): row i's bits start at dst byte i * dst.Cols. Whole 256-byte repeats are
    computed (64 elements of 4 bytes, 128 of 2), so per row ceil(vc / rep) * rep / 8 bytes are
    written; every bit past validCol is 0 there (pypto's choice: the NPU writes comparisons of
    whatever the tiles hold). i32 always compares EQ. TCMPS with i16/u16 compares the raw bits of
    src and of the converted scalar as float16.
  - a5 (dst u8 or u32, read as bytes): one LSB-first stream over the first validRow * validCol
    storage elements of the sources (row strides ignored) from dst byte 0, written in whole
    chunks of 128 elements (256 for 1-byte sources); bits past the stream are 0.
  Bytes not written keep their previous contents.
* TSEL / TSELS: per row on both SoCs: element (i, j) of dst's valid region takes src0 (src) where
  bit j % 8 of mask byte [i, j // 8] is 1 (the mask read as bytes: its row i starts at byte
  i * mask row bytes), else src1 (the scalar, converted to the element type). Mask bits past
  validCol are never read. (TSELS: the NPU/doc meaning, not pto-isa's CPU simulator's.)
"""
from __future__ import annotations

import numpy as np

from .reference import np_dtype

MODES = ("EQ", "NE", "LT", "LE", "GT", "GE")


# -- bit operations ---------------------------------------------------------------------------------
def band(a, b):
    return np.bitwise_and(a, np.asarray(b, dtype=a.dtype))


def bor(a, b):
    return np.bitwise_or(a, np.asarray(b, dtype=a.dtype))


def bxor(a, b):
    return np.bitwise_xor(a, np.asarray(b, dtype=a.dtype))


def bnot(a):
    return np.invert(a)


def shift(x, n, left: bool):
    """(x shifted by n elementwise, mask of counts outside 0 .. bits-1)."""
    x = np.asarray(x)
    bits = x.dtype.itemsize * 8
    xi = x.astype(np.int64)
    ni = np.broadcast_to(np.asarray(n).astype(np.int64), x.shape)
    bad = (ni < 0) | (ni >= bits)
    safe = np.where(bad, 0, ni)
    v = np.left_shift(xi, safe) if left else np.right_shift(xi, safe)
    out_of_range = np.zeros_like(xi) if left else np.where(xi < 0, -1, 0)
    v = np.where(bad, out_of_range, v)
    return v.astype(x.dtype), bad


def shl(x, n):
    return shift(x, n, True)


def shr(x, n):
    return shift(x, n, False)


def scalar_to(s, dtype):
    """A scalar operand converted to the element type (floats round once from the double)."""
    dt = np_dtype(dtype)
    if dt.kind == "f":
        with np.errstate(over="ignore"):
            return np.array(float(s), dtype=np.float64).astype(dt)[()]
    info = np.iinfo(dt)
    s = int(s)
    assert info.min <= s <= info.max, f"scalar {s} does not fit {dt}"
    return dt.type(s)


def region(dst, valid, values):
    """dst with its valid region replaced by the same region of ``values``."""
    out = np.array(dst, copy=True)
    vr, vc = valid
    out[:vr, :vc] = np.asarray(values)[:vr, :vc]
    return out


# -- compare --------------------------------------------------------------------------------------------
def predicate(x, y, mode: str):
    with np.errstate(invalid="ignore"):
        return {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
                "GT": np.greater, "GE": np.greater_equal}[mode](x, y)


def _pack_into(out_bytes, start, bits):
    """Write the LSB-first packing of ``bits`` at byte ``start`` (clipped at the end)."""
    packed = np.packbits(bits.astype(np.uint8), bitorder="little")
    end = min(start + packed.size, out_bytes.size)
    if end > start:
        out_bytes[start:end] = packed[:end - start]


def _compare(dst, a, b_of, valid, mode, soc):
    out = np.array(dst, copy=True)
    ob = out.reshape(-1).view(np.uint8)
    vr, vc = valid
    if soc == "a2a3":
        rep = 256 // a.dtype.itemsize
        nbits = -(-vc // rep) * rep
        rowbytes = dst.shape[1] * dst.dtype.itemsize
        for r in range(vr):
            bits = np.zeros(nbits, bool)
            bits[:vc] = predicate(a[r, :vc], b_of(r, slice(0, vc)), mode)
            _pack_into(ob, r * rowbytes, bits)
    else:
        n = vr * vc
        chunk = 256 if a.dtype.itemsize == 1 else 128
        bits = np.zeros(-(-n // chunk) * chunk, bool)
        flat = a.reshape(-1)[:n]
        bits[:n] = predicate(flat, b_of(None, slice(0, n)), mode)
        _pack_into(ob, 0, bits)
    return out


def tcmp(dst, src0, src1, valid, mode: str, soc: str):
    """The whole dst tile after TCMP(dst, src0, src1, cmpMode=mode) on ``soc``."""
    src0, src1 = np.asarray(src0), np.asarray(src1)
    if soc == "a2a3" and src0.dtype == np.int32:
        mode = "EQ"

    def other(r, cols):
        return src1[r, cols] if r is not None else src1.reshape(-1)[cols]
    return _compare(dst, src0, other, valid, mode, soc)


def tcmps(dst, src, scalar, valid, mode: str, soc: str):
    """The whole dst tile after TCMPS(dst, src, scalar, cmpMode=mode) on ``soc``."""
    src = np.asarray(src)
    s = scalar_to(scalar, src.dtype)
    if soc == "a2a3" and src.dtype == np.int32:
        mode = "EQ"
    if soc == "a2a3" and src.dtype in (np.int16, np.uint16):
        src = src.view(np.float16)
        s = np.array([s]).view(np.float16)[0]
    return _compare(dst, src, lambda r, cols: s, valid, mode, soc)


# -- select -----------------------------------------------------------------------------------------------
def mask_bits(mask, valid):
    """The (vr, vc) selection bits of a mask tile read per row as bytes."""
    vr, vc = valid
    mb = np.ascontiguousarray(mask).view(np.uint8).reshape(mask.shape[0], -1)
    j = np.arange(vc)
    return ((mb[:vr, j // 8] >> (j % 8)) & 1).astype(bool)


def tsel(dst, mask, src0, src1, valid):
    vr, vc = valid
    out = np.array(dst, copy=True)
    out[:vr, :vc] = np.where(mask_bits(mask, valid), src0[:vr, :vc], src1[:vr, :vc])
    return out


def tsels(dst, mask, src, scalar, valid):
    vr, vc = valid
    out = np.array(dst, copy=True)
    s = scalar_to(scalar, src.dtype)
    out[:vr, :vc] = np.where(mask_bits(mask, valid), src[:vr, :vc], s)
    return out


REFERENCE = {
    "TAND": band, "TOR": bor, "TXOR": bxor, "TNOT": bnot, "TSHL": shl, "TSHR": shr,
    "TANDS": band, "TORS": bor, "TXORS": bxor, "TSHLS": shl, "TSHRS": shr,
    "TCMP": tcmp, "TCMPS": tcmps, "TSEL": tsel, "TSELS": tsels,
}
