"""Numpy reference of the 5.8 complex instructions (sorts, gathers, scatters, index generation,
partial ops, quantisation, debug print), written from pto-isa-semantics.md (5.8, 5.9 n15-n18,
3.5, Appendix A, the Addendum) and the NPU code it describes, following the **NPU** wherever the
NPU and pto-isa's C++ CPU simulator differ. Imports no pypto code (only numpy, ml_dtypes and the
dtype helpers of ``reference.py``).

Tiles are passed and returned whole, as logical (rows, cols) arrays of the element type; every
instruction here works on row-major (ND) tiles, whose storage is the row-major flattening (the
TGATHERB source may be DN: column-major flattening). Each function returns new arrays for the
operands the instruction writes; everything outside what it writes keeps its input value.

Rules and pypto's choices where the NPU leaves a result undefined:

* Records (TSORT32, TMRGSORT): 8 bytes; f32 tiles hold (value, u32 index bits) in 2 elements,
  f16 tiles (value, 0, index & 0xFFFF, index >> 16) in 4. Values compare as floats (f16 exactly
  widened, -0 == +0); NaNs order after every number and equal to each other (pypto's choice; the
  NPU pads its sorts with NaN so they sort last; under checks="strict" pypto reports NaNs).
* TSORT32(dst, src, idx[, tmp]): rows i < dst.validRow; n = src.validCol (without tmp it must be
  a multiple of 32: ``sort32_legal``); each block of 32 (the last may be partial with tmp) of src
  row i is sorted descending, **stable** (ties keep the lower column: pypto's
  choice, the NPU's order is unspecified), each element paired with idx[i', same column] (i' = 0
  when idx has one valid row, else i), record q of the block written at dst[i, per*(b0+q) ...].
  The index is stored as its raw u32 bits (not converted to the value type).
* TMRGSORT multi-list: each list k of src_k.validCol // per records; repeatedly the head with the
  largest value is taken (ties: the lowest list index), into tmp from column 0, until all lists
  are used up; with exhausted, before each record the merge stops if any list is used up (a list
  that starts empty stops it at once). Then dst[0, :dst.validCol] = tmp[0, :dst.validCol] (tmp
  after the merge: past the merged records its earlier contents). executedNumList[0, k] = records
  taken from list k (0 for absent lists), written only with exhausted; otherwise unchanged.
  Single-list (blockLen): src0.validCol elements in groups of 4 * blockLen, each group's 4 blocks
  of blockLen // per records merged as above (no exhaustion) into dst at the group's offset.
* TGATHER index form: dst[i, j] = src0.flat[idx[i, j]] over dst's valid region; an index outside
  0 .. src0.size - 1 gives 0 (pypto's choice, as the CPU sim; the NPU reads other UB bytes).
  Mask form: over src's valid region, the columns a pattern keeps (P0101 even, P1010 odd, P0001
  c % 4 == 0, P0010 1, P0100 2, P1000 3, P1111 all), all rows' survivors packed densely into
  dst's storage from offset 0.
* TGATHERB: for dst row i < validRow and block k < validCol * size / 32: the 32 bytes of src's
  storage at byte offset off[i, k] go to dst row i bytes [32k, 32k + 32); a block not entirely
  inside src's storage is not copied (pypto's choice, as the CPU sim).
* TSCATTER: over idx's valid region in row-major order, dst.flat[idx[i, j]] = src[i, j] (the
  NPU's flat element offset, not the doc/CPU row number); out-of-range indices are skipped
  (pypto's choice); duplicates: the last write wins.
* TCI: dst.flat[k] = start +- k (wrapping) for k < dst.validCol.
* TTRI: over dst's valid region, lower: 1 where j <= i + d else 0; upper: 0 where j < i + d else 1.
* TPARTADD/MAX/MIN/MUL: a2a3 (all) and a5 ADD/MUL: the source whose valid region equals dst's is
  the "big" one (src0 first); inside the other's region op(big, small), or op(small, big) when
  the small one has fewer valid columns than dst (the NPU's operand order); elsewhere big's
  value; illegal combinations raise ValueError. a5 MAX/MIN: both sources inside dst; dst's valid
  region is filled with the pad (MAX: -inf / integer min; MIN: +inf / integer max), src0 copied
  over its region, then dst = op(dst, src1) over src1's; an empty region anywhere writes nothing.
  Element ops: reference.binary (f16/bf16 in f32 rounded once, integers wrap, max/min propagate a
  quieted NaN); the NaN payload is left open (loose) where both operands are NaN.
* TQUANT (INT8_SYM f32 -> i8, INT8_ASYM f32 -> u8 with offset): x = f32(src * scale[i]), then
  (asym) x = f32(x + offset[i]); q = rint(x) saturated to i32 (NaN -> 0); dst = q clamped to
  [-128, 127] / [0, 255]. a2a3 also rewrites src: its valid elements get the i32 bits of q, then
  src's storage viewed as f16 gets f16(q) (nearest even, clamped to +-65504) at half index
  i * src.Cols + j; a5 leaves src unchanged.
* TPRINT: ``tprint_tile`` / ``tprint_gm`` give the expected text (the NPU's format, see the
  functions).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .reference import BF16, F16, F32, binary, np_dtype

SOCS = ("a2a3", "a5")

# -- legal element types per SoC (5.8 and the NPU headers), independently of pypto's table ------
_I = ("i8", "u8")
_H = ("i16", "u16", "f16", "bf16")
_W = ("i32", "u32", "f32")
_FP8 = ("e4m3", "e5m2")
LEGAL = {
    "TSORT32": {"a2a3": ("f32", "f16"), "a5": ("f32", "f16")},
    "TMRGSORT": {"a2a3": ("f32", "f16"), "a5": ("f32", "f16")},
    "TGATHERB": {"a2a3": _I + _H + _W, "a5": _I + _H + _W},
    "TCI": {"a2a3": ("i32", "u32", "i16", "u16"), "a5": ("i32", "u32", "i16", "u16")},
    "TTRI": {"a2a3": ("i32", "i16", "u32", "u16", "f16", "f32"),
             "a5": ("i32", "i16", "u32", "u16", "f16", "f32", "i8", "u8", "bf16")},
    "TPART": {"a2a3": ("i32", "i16", "f16", "f32"),
              "a5": ("i8", "u8", "i16", "u16", "i32", "u32", "f16", "bf16", "f32")},
    "TGATHER_MASK": {"a2a3": _H + _W, "a5": _I + _H + _W + _FP8},
    "TPRINT": {"a2a3": ("i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "f32"),
               "a5": ("i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "f32")},
}
# (data, index) pairs
GATHER_IDX = {"a2a3": tuple((t, i) for t in _H + _W for i in ("i32", "u32")),
              "a5": tuple((t, i) for t in _W for i in ("i32", "u32"))
              + tuple((t, i) for t in _H for i in ("i16", "u16", "i32", "u32"))
              + tuple((t, i) for t in _I + _FP8 for i in ("i16", "u16"))}
SCATTER_IDX = tuple((t, i) for t in _W for i in ("i32", "u32")) + \
    tuple((t, i) for t in _H + _I for i in ("i16", "u16"))


def _per(dt: np.dtype) -> int:
    return 8 // dt.itemsize


def _words(a: np.ndarray) -> np.ndarray:
    """The storage words of a record tile: u32 for f32, u16 for f16."""
    return a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint16)


def _value(word: int, dt: np.dtype) -> float:
    if dt.itemsize == 4:
        return float(np.array([word], np.uint32).view(np.float32)[0])
    return float(np.array([word], np.uint16).view(np.float16)[0])


def _key(v: float):
    """Sort key, smaller first: descending values, NaNs last (all equal)."""
    return (1, 0.0) if math.isnan(v) else (0, -v)


# -- TSORT32 ---------------------------------------------------------------------------------------

def tsort32(dst: np.ndarray, src: np.ndarray, idx: np.ndarray, dst_valid, src_valid, idx_valid,
            tmp: bool = False) -> np.ndarray:
    dt = np_dtype(src.dtype)
    per = _per(dt)
    out = _words(dst.copy())
    sw = _words(np.ascontiguousarray(src))
    rows = dst_valid[0]
    n = src_valid[1]
    if not tmp and n % 32:
        raise ValueError("TSORT32 without tmp sorts whole 32-element blocks only")
    for i in range(rows):
        ii = 0 if idx_valid[0] == 1 else i
        for b0 in range(0, n, 32):
            cols = list(range(b0, min(b0 + 32, n)))
            order = sorted(cols, key=lambda c: (_key(_value(int(sw[i, c]), dt)), c))
            for q, c in enumerate(order):
                at = per * (b0 + q)
                ix = int(idx[ii, c])
                out[i, at] = sw[i, c]
                if per == 2:
                    out[i, at + 1] = ix
                else:
                    out[i, at + 1] = 0
                    out[i, at + 2] = ix & 0xFFFF
                    out[i, at + 3] = ix >> 16
    return out.view(dt)


def records(values, indices, dtype) -> np.ndarray:
    """A (1, n * per) record row from values and u32 indices (test-input helper)."""
    dt = np_dtype(dtype)
    per = _per(dt)
    v = np.asarray(values, dtype=dt)
    w = np.zeros((1, len(v) * per), np.uint32 if per == 2 else np.uint16)
    vw = _words(v.reshape(1, -1))[0]
    for k, ix in enumerate(indices):
        w[0, k * per] = vw[k]
        if per == 2:
            w[0, k * per + 1] = int(ix)
        else:
            w[0, k * per + 2] = int(ix) & 0xFFFF
            w[0, k * per + 3] = int(ix) >> 16
    return w.view(dt)


# -- TMRGSORT --------------------------------------------------------------------------------------

def _merge(lists: list[np.ndarray], counts: list[int], per: int, dt, exhausted: bool):
    """Merged record words and the records taken per list."""
    pos = [0] * len(lists)
    out: list[int] = []
    while True:
        if exhausted and any(p == c for p, c in zip(pos, counts)):
            break
        best, bkey = -1, None
        for k, (w, c) in enumerate(zip(lists, counts)):
            if pos[k] < c:
                key = _key(_value(int(w[pos[k] * per]), dt))
                if best < 0 or key < bkey:
                    best, bkey = k, key
        if best < 0:
            break
        p = pos[best] * per
        out.extend(int(x) for x in lists[best][p:p + per])
        pos[best] += 1
    return out, pos


def tmrgsort(dst, exe, tmp, srcs, dst_valid_cols: int, src_valid_cols, exhausted: bool = False):
    """Multi-list form: returns (dst, executedNumList, tmp) after the instruction."""
    dt = np_dtype(dst.dtype)
    per = _per(dt)
    lists = [_words(np.ascontiguousarray(s))[0] for s in srcs]
    counts = [vc // per for vc in src_valid_cols]
    merged, pos = _merge(lists, counts, per, dt, exhausted)
    t = _words(tmp.copy())
    t[0, :len(merged)] = merged
    d = _words(dst.copy())
    d[0, :dst_valid_cols] = t[0, :dst_valid_cols]
    e = exe.copy()
    if exhausted:
        e[0, :4] = (pos + [0, 0, 0])[:4]
    return d.view(dt), e, t.view(dt)


def tmrgsort1(dst, src, src_valid_cols: int, block_len: int) -> np.ndarray:
    """Single-list form (dst, src, blockLen)."""
    dt = np_dtype(dst.dtype)
    per = _per(dt)
    s = _words(np.ascontiguousarray(src))[0]
    d = _words(dst.copy())
    group = 4 * block_len
    for base in range(0, src_valid_cols - group + 1, group):
        lists = [s[base + q * block_len: base + (q + 1) * block_len] for q in range(4)]
        merged, _ = _merge(lists, [block_len // per] * 4, per, dt, False)
        d[0, base:base + len(merged)] = merged
    return d.view(dt)


# -- gathers and scatters --------------------------------------------------------------------------

PATTERNS = {"P0101": lambda c: c % 2 == 0, "P1010": lambda c: c % 2 == 1,
            "P0001": lambda c: c % 4 == 0, "P0010": lambda c: c % 4 == 1,
            "P0100": lambda c: c % 4 == 2, "P1000": lambda c: c % 4 == 3, "P1111": lambda c: True}


def tgather(dst, src0, idx, dst_valid) -> np.ndarray:
    out = dst.copy()
    flat = np.ascontiguousarray(src0).reshape(-1)
    bits = flat.view(f"u{flat.dtype.itemsize}")
    ob = out.view(f"u{out.dtype.itemsize}")
    for i in range(dst_valid[0]):
        for j in range(dst_valid[1]):
            k = int(idx[i, j])
            ob[i, j] = bits[k] if 0 <= k < flat.size else 0
    return out


def tgather_mask(dst, src, src_valid, pattern: str) -> np.ndarray:
    out = dst.copy()
    ob = out.reshape(-1).view(f"u{out.dtype.itemsize}")
    sb = np.ascontiguousarray(src).view(f"u{src.dtype.itemsize}")
    keep = PATTERNS[pattern]
    k = 0
    for i in range(src_valid[0]):
        for j in range(src_valid[1]):
            if keep(j):
                ob[k] = sb[i, j]
                k += 1
    return ob.view(out.dtype).reshape(out.shape)


def survivors(src_valid, pattern: str) -> int:
    return src_valid[0] * sum(1 for j in range(src_valid[1]) if PATTERNS[pattern](j))


def tgatherb(dst, src, off, dst_valid, src_layout: str = "ND") -> np.ndarray:
    out = np.ascontiguousarray(dst.copy())
    ob = out.view(np.uint8).reshape(out.shape[0], -1)
    sflat = np.ascontiguousarray(src.T if src_layout == "DN" else src).reshape(-1).view(np.uint8)
    nb = dst_valid[1] * dst.dtype.itemsize // 32
    for i in range(dst_valid[0]):
        for k in range(nb):
            o = int(off[i, k])
            if o + 32 <= sflat.size:
                ob[i, 32 * k:32 * k + 32] = sflat[o:o + 32]
    return out


def tscatter(dst, src, idx, idx_valid) -> np.ndarray:
    out = np.ascontiguousarray(dst.copy())
    ob = out.reshape(-1).view(f"u{out.dtype.itemsize}")
    sb = np.ascontiguousarray(src).view(f"u{src.dtype.itemsize}")
    for i in range(idx_valid[0]):
        for j in range(idx_valid[1]):
            k = int(idx[i, j])
            if 0 <= k < ob.size:
                ob[k] = sb[i, j]
    return out


# -- TCI, TTRI -------------------------------------------------------------------------------------

def tci(dst, start: int, valid_cols: int, descending: int = 0) -> np.ndarray:
    out = dst.copy()
    flat = out.reshape(-1)
    bits = 8 * out.dtype.itemsize
    for k in range(valid_cols):
        v = (start - k if descending else start + k) % (1 << bits)
        if out.dtype.kind == "i" and v >= 1 << (bits - 1):
            v -= 1 << bits
        flat[k] = v
    return out


def ttri(dst, valid, diagonal: int, upper: int = 0) -> np.ndarray:
    out = dst.copy()
    one = np.ones(1, F32).astype(out.dtype)[0] if out.dtype in (F32, F16, BF16) else 1
    zero = np.zeros(1, out.dtype)[0]
    for i in range(valid[0]):
        for j in range(valid[1]):
            if upper:
                out[i, j] = zero if j < i + diagonal else one
            else:
                out[i, j] = one if j <= i + diagonal else zero
    return out


# -- TPART* ----------------------------------------------------------------------------------------

PART_OPS = {"TPARTADD": "add", "TPARTMAX": "max", "TPARTMIN": "min", "TPARTMUL": "mul"}


def part_legal(name: str, soc: str, dst_valid, a_valid, b_valid) -> bool:
    (dr, dc), (ar, ac), (br, bc) = dst_valid, a_valid, b_valid
    if soc == "a5" and name in ("TPARTMAX", "TPARTMIN"):
        return ar <= dr and ac <= dc and br <= dr and bc <= dc
    if dr == 0 or dc == 0:
        return True
    return (ar == dr and ac == dc and br <= dr and bc <= dc) or \
        (br == dr and bc == dc and ar <= dr and ac <= dc)


def _pad(name: str, dt: np.dtype):
    if dt in (F32, F16, BF16):
        return np.array([-np.inf if name == "TPARTMAX" else np.inf], F32).astype(dt)[0]
    info = np.iinfo(dt)
    return dt.type(info.min if name == "TPARTMAX" else info.max)


def tpart(name: str, soc: str, dst, a, b, dst_valid, a_valid, b_valid):
    """(dst after, loose mask: elements whose NaN bit pattern is open)."""
    if not part_legal(name, soc, dst_valid, a_valid, b_valid):
        raise ValueError(f"{name}: illegal valid regions {dst_valid} {a_valid} {b_valid} on {soc}")
    op = PART_OPS[name]
    out = dst.copy()
    loose = np.zeros(out.shape, bool)
    (dr, dc), (ar, ac), (br, bc) = dst_valid, a_valid, b_valid
    if soc == "a5" and name in ("TPARTMAX", "TPARTMIN"):
        if 0 in (ar, ac, br, bc, dr, dc):
            return out, loose
        out[:dr, :dc] = _pad(name, out.dtype)
        out[:ar, :ac] = a[:ar, :ac]
        r, lz = binary(op, out[:br, :bc].copy(), b[:br, :bc].copy(), with_loose=True)
        out[:br, :bc] = r
        loose[:br, :bc] = lz
        return out, loose
    if dr == 0 or dc == 0:
        return out, loose
    if (ar, ac) == (dr, dc):
        big, small, (sr, sc) = a, b, (br, bc)
    else:
        big, small, (sr, sc) = b, a, (ar, ac)
    out[:dr, :dc] = big[:dr, :dc]
    x, y = big[:sr, :sc].copy(), small[:sr, :sc].copy()
    r, lz = binary(op, y, x, with_loose=True) if sc < dc else binary(op, x, y, with_loose=True)
    out[:sr, :sc] = r
    loose[:sr, :sc] = lz
    return out, loose


# -- TQUANT ----------------------------------------------------------------------------------------

def _sat_i32(x: np.float32) -> int:
    if math.isnan(float(x)):
        return 0
    r = float(np.rint(np.float64(x)))
    return int(min(max(r, -2147483648.0), 2147483647.0))


def tquant(dst, src, scale, offset, valid, quant_type: str, soc: str):
    """(dst after, src after). ``scale``/``offset``: one f32 per row (any shape with [i] or
    [i, 0] access)."""
    asym = quant_type == "INT8_ASYM"
    lo, hi = (0, 255) if asym else (-128, 127)
    out = dst.copy()
    s_after = np.ascontiguousarray(src.copy())
    vr, vc = valid
    q = np.zeros((vr, vc), np.int64)
    sc = np.asarray(scale, F32).reshape(-1)
    of = np.asarray(offset, F32).reshape(-1) if asym else None
    with np.errstate(all="ignore"):
        for i in range(vr):
            for j in range(vc):
                x = np.float32(src[i, j] * sc[i])
                if asym:
                    x = np.float32(x + of[i])
                q[i, j] = _sat_i32(x)
                out[i, j] = min(max(q[i, j], lo), hi)
    if soc == "a2a3":
        si = s_after.view(np.int32)
        si[:vr, :vc] = q
        halves = s_after.reshape(-1).view(np.uint16)
        cols = src.shape[1]
        for i in range(vr):
            for j in range(vc):
                h = np.float16(np.clip(float(q[i, j]), -65504.0, 65504.0))
                # float -> half of an integer: numpy rounds to nearest even; the clamp keeps inf out
                halves[i * cols + j] = np.array([h], F16).view(np.uint16)[0]
    return out, s_after


def quant_nan_or_inf(src, scale, offset, valid, quant_type: str) -> bool:
    """Whether some x is NaN or infinite (checks="strict" reports that use)."""
    sc = np.asarray(scale, F32).reshape(-1)
    with np.errstate(all="ignore"):
        for i in range(valid[0]):
            x = (src[i, :valid[1]] * sc[i]).astype(F32)
            if quant_type == "INT8_ASYM":
                x = (x + np.asarray(offset, F32).reshape(-1)[i]).astype(F32)
            if not np.isfinite(x).all():
                return True
    return False


# -- TPRINT ----------------------------------------------------------------------------------------

DTYPE_NAMES = {"f32": "float32", "f16": "float16", "i8": "int8", "u8": "uint8", "i16": "int16",
               "u16": "uint16", "i32": "int32", "u32": "uint32", "i64": "unknown", "u64": "unknown"}


def _fmt(v, is_float: bool) -> str:
    """C printf of the NPU's PrintValue: %6.2f of the value as float, %6d of static_cast<int>."""
    if is_float:
        x = float(v)
        if x != x:
            return ("-nan" if math.copysign(1.0, x) < 0 else "nan").rjust(6)
        return f"{x:6.2f}"
    i = int(v) % (1 << 32)
    return f"{i - (1 << 32) if i >= 1 << 31 else i:6d}"


def tprint_tile(tile: np.ndarray, valid, short: str, layout: str = "ND") -> str:
    rows, cols = tile.shape
    vr, vc = valid
    fl = short in ("f32", "f16")
    lines = [f"=== [TPRINT Tile] Data Type: {DTYPE_NAMES[short]}, Layout: {layout}, TileType: Vec ===",
             f"  Shape: [{rows}, {cols}], Valid Shape: [{vr}, {vc}]"]
    bar = 0 < vc < cols
    for i in range(rows):
        cells = [_fmt(tile[i, j], fl) + ("|" if bar and j == vc - 1 else "") for j in range(cols)]
        lines.append(" ".join(cells))
        if 0 < vr < rows and i == vr - 1:
            lines.append(" ".join("------" + ("|" if bar and j == vc - 1 else "") for j in range(cols)))
    return "\n".join(lines) + "\n"


def tprint_gm(arr: np.ndarray, short: str, layout: str = "ND") -> str:
    """A whole 2-D tensor printed as a GM view (shape (1, 1, 1, rows, cols))."""
    rows, cols = arr.shape
    fl = short in ("f32", "f16")
    lines = [f"=== [TPRINT GlobalTensor] Data Type: {DTYPE_NAMES[short]}, Layout: {layout} ===",
             f"  Shape: [1, 1, 1, {rows}, {cols}]", "  Batch [0, 0, 0]:"]
    lines += [" ".join(_fmt(arr[i, j], fl) for j in range(cols)) for i in range(rows)]
    return "\n".join(lines) + "\n"


def _seed_sort(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """load_insn("sort"): each row sorted descending (stable, NaNs last), with u32 column indices."""
    idx = np.empty(x.shape, np.uint32)
    vals = np.empty_like(x)
    for i in range(x.shape[0]):
        order = sorted(range(x.shape[1]), key=lambda c: (_key(float(x[i, c])), c))
        idx[i] = order
        vals[i] = x[i, order]
    return vals, idx


sort_rows = _seed_sort

REFERENCE: dict[str, Any] = {
    "TPRINT": tprint_tile, "TMRGSORT": tmrgsort, "TSORT32": tsort32, "TGATHER": tgather,
    "TCI": tci, "TTRI": ttri, "TPARTADD": tpart, "TPARTMAX": tpart, "TPARTMIN": tpart,
    "TPARTMUL": tpart, "TGATHERB": tgatherb, "TSCATTER": tscatter, "TQUANT": tquant,
}
