"""The one semantic layer: every DSL call is checked here against the ISA table and SoC profile,
then handed to the active builder as an IR node. Tracer and eager executor share all of it,
so both modes give the same diagnostics.
"""
from __future__ import annotations

import re
from typing import Any

from .. import diagnostics as Dx
from .. import dtypes as D
from ..errors import (DTypeError, GMBoundsError, KernelError, LocationError,
                      NotSimulatedError, OperandError, PtoError, ShapeError, TileCapacityError, TileError, TileShapeError, ValidRegionError)
from ..ir.nodes import (Assign, Expr, ExprLike, GmView, InstrNode, SetValid, Site, TensorParam,
                        RtFloat, TileType, TileVar, binop, is_runtime, is_static)
from ..ir.verify import check_operands
from ..isa import TABLE
from ..isa.soc import LOCATIONS, SocProfile
from . import builder as B

DYNAMIC = object()   # pto.DYNAMIC: a valid region set at run time

_BLAYOUTS = ("RowMajor", "ColMajor")
_SLAYOUTS = ("NoneBox", "RowMajor", "ColMajor")
_PADS = ("Null", "Zero", "Min", "Max")


def _at(err: PtoError, site: Site | None) -> PtoError:
    return err.located(str(site)) if site is not None else err


# -- tiles ------------------------------------------------------------------------------------

def _inner_box(dt: D.DType, slayout: str, fractal: int) -> tuple[int, int]:
    c0 = 32 // dt.itemsize
    if fractal == 1024:
        return 16, 16
    if fractal == 32:
        return 16, 2
    if slayout == "RowMajor":
        return 16, c0
    if slayout == "ColMajor":
        return c0, 16
    return 1, 1


def check_tile_type(soc: SocProfile, loc: Any, dtype: Any, shape: Any, blayout: str,
                    slayout: str | None, fractal: int | None, pad: str, what: str) -> TileType:
    if loc not in LOCATIONS:
        raise LocationError(f"{what}: {loc!r} is not a tile location",
                            rule=f"tile locations are pto.{', pto.'.join(LOCATIONS)}",
                            fix="pass e.g. pto.Vec for a unified-buffer (UB) tile")
    soc.space(loc)
    dt = D.as_dtype(dtype, context=what)
    try:
        rows, cols = shape
    except (TypeError, ValueError):
        raise TileShapeError(f"{what}: shape {shape!r} is not a (rows, cols) pair",
                             rule="tiles are two-dimensional", fix="pass shape=(rows, cols)") from None
    for n, v in (("rows", rows), ("cols", cols)):
        if isinstance(v, Expr):
            raise TileShapeError(f"{what}: {n} = {v} is a runtime value",
                                 rule="a tile's capacity shape is a compile-time constant (its valid "
                                      "region may be dynamic)",
                                 fix="give the largest shape as ints and use valid=pto.DYNAMIC or "
                                     "valid=(r, c) with runtime values")
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise TileShapeError(f"{what}: {n} = {v!r} must be a positive int",
                                 rule="Rows > 0 and Cols > 0 (pto-isa-semantics 3.2)")
    if blayout not in _BLAYOUTS:
        raise TileShapeError(f"{what}: blayout {blayout!r} unknown", rule="blayout is pto.RowMajor or pto.ColMajor")
    slayout = slayout or "NoneBox"
    if slayout not in _SLAYOUTS:
        raise TileShapeError(f"{what}: slayout {slayout!r} unknown",
                             rule="slayout is None (pto.NoneBox), pto.RowMajor or pto.ColMajor")
    if fractal is None:
        fractal = 1024 if loc == "Acc" else 512
    if fractal not in (32, 512, 1024):
        raise TileShapeError(f"{what}: fractal {fractal} unknown", rule="SFractalSize is 512, 1024 or 32")
    if pad not in _PADS:
        raise TileShapeError(f"{what}: pad {pad!r} unknown",
                             rule="pad is pto.PadNull, pto.PadZero, pto.PadMin or pto.PadMax")
    ty = TileType(loc, dt, rows, cols, blayout, slayout, fractal, pad)
    c0 = 32 // dt.itemsize
    if slayout == "NoneBox" and blayout == "RowMajor" and (cols * dt.itemsize) % 32:
        good = -(-cols // c0) * c0
        raise TileShapeError(
            f"{what}: a row of {cols} {dt.name} is {cols * dt.itemsize} bytes",
            rule="an ND (row-major) tile needs Cols * sizeof(dtype) to be a multiple of 32 bytes, "
                 f"i.e. Cols a multiple of {c0} for {dt.name} (pto-isa-semantics 3.2)",
            fix=f"declare cols={good} and valid=({rows}, {cols}): the valid region may be narrower "
                "than the tile")
    if slayout == "NoneBox" and blayout == "ColMajor" and (rows * dt.itemsize) % 32:
        good = -(-rows // c0) * c0
        raise TileShapeError(
            f"{what}: a column of {rows} {dt.name} is {rows * dt.itemsize} bytes",
            rule="a DN (column-major) tile needs Rows * sizeof(dtype) to be a multiple of 32 bytes "
                 "(pto-isa-semantics 3.2)",
            fix=f"declare rows={good} and valid=({rows}, {cols})")
    if slayout != "NoneBox":
        ir_, ic = _inner_box(dt, slayout, fractal)
        if cols % ic:
            raise TileShapeError(f"{what}: cols={cols} is not a multiple of the inner box width {ic}",
                                 rule="boxed tiles need Cols % InnerCols == 0 (pto-isa-semantics 3.2)")
        if rows % ir_ and not (loc == "Vec" or fractal == 32 or rows == 1):
            raise TileShapeError(f"{what}: rows={rows} is not a multiple of the inner box height {ir_}",
                                 rule="boxed tiles need Rows % InnerRows == 0 unless Loc is Vec "
                                      "or Rows == 1 (pto-isa-semantics 3.2)")
    cap = soc.space(loc).capacity
    if ty.nbytes > cap:
        raise TileCapacityError(
            f"{what}: {ty} needs {ty.nbytes} bytes but {soc.space(loc).buffer} ({loc}) holds "
            f"{cap} bytes on {soc.name}",
            rule="a tile must fit in its on-chip memory space (pto-isa-semantics 2)",
            fix="use a smaller tile and loop over the data")
    return ty


def check_valid(ty: TileType, valid: Any, what: str) -> tuple[tuple[ExprLike, ExprLike], bool]:
    """Normalise valid=None | (r, c) | pto.DYNAMIC; returns (valid pair, dynamic?)."""
    if valid is None:
        return (ty.rows, ty.cols), False
    if valid is DYNAMIC:
        return (ty.rows, ty.cols), True
    try:
        vr, vc = valid
    except (TypeError, ValueError):
        raise ValidRegionError(f"{what}: valid={valid!r} is not a (rows, cols) pair",
                               fix="pass valid=None (whole tile), (r, c) or pto.DYNAMIC") from None
    for n, v, lim in (("valid rows", vr, ty.rows), ("valid cols", vc, ty.cols)):
        if v is DYNAMIC:
            continue
        if isinstance(v, Expr) or isinstance(v, RtFloat):
            require_kernel_scalar(v, f"{what}: {n}")
            continue
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= lim:
            raise ValidRegionError(f"{what}: {n} = {v!r} outside 0..{lim}",
                                   rule="the valid region is a prefix rectangle inside the tile "
                                        "(ValidRow <= Rows, ValidCol <= Cols)")
    dyn = any(is_runtime(v) or v is DYNAMIC for v in (vr, vc))
    vr = ty.rows if vr is DYNAMIC else vr
    vc = ty.cols if vc is DYNAMIC else vc
    return (vr, vc), dyn


_NAME_RE = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*[\w.]*Tile\s*\(")


def tile_name(site: Site | None, taken: set[str], n: int) -> str:
    m = _NAME_RE.match(site.line) if site is not None and site.line else None
    base = m.group(1) if m else f"t{n}"
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


# -- placement (auto mode) and TASSIGN (manual mode) -------------------------------------------

class Placement:
    """Per-kernel on-chip allocator: auto tiles bump-allocate; TASSIGN'd tiles claim their range."""

    def __init__(self, soc: SocProfile):
        self.soc = soc
        self.next: dict[str, int] = {}
        self.auto: dict[str, list[TileVar]] = {}
        self.manual_ranges: dict[str, list[tuple[int, int, TileVar]]] = {}

    def ensure(self, t: TileVar, site: Site | None) -> None:
        if t.addr is not None:
            return
        sp = self.soc.space(t.type.loc)
        addr = self.next.get(sp.loc, 0)
        for lo, hi, _ in sorted(self.manual_ranges.get(sp.loc, []), key=lambda r: r[0]):
            if addr < hi and addr + t.type.nbytes > lo:
                addr = -(-hi // sp.align) * sp.align
        if addr + t.type.nbytes > sp.capacity:
            live = ", ".join(f"{x.name} {x.type.nbytes} B @ {x.addr:#x}" for x in self.auto.get(sp.loc, []))
            raise _at(TileCapacityError(
                f"tile {t.name} ({t.type}, {t.type.nbytes} bytes) does not fit in {sp.buffer} "
                f"({sp.loc}): {sp.capacity} bytes on {self.soc.name}, {sp.capacity - addr} bytes free "
                f"after the tiles already placed ({live or 'none'})",
                rule="every live tile needs its own bytes in its on-chip space; pypto's auto mode "
                     "keeps every tile of a kernel live for the whole kernel",
                fix="use fewer or smaller tiles, reuse one tile for several steps, or place tiles "
                    "yourself with pto.TASSIGN"), site)
        t.addr = addr
        self.next[sp.loc] = -(-(addr + t.type.nbytes) // sp.align) * sp.align
        self.auto.setdefault(sp.loc, []).append(t)

    def assign(self, t: TileVar, addr: ExprLike, site: Site | None) -> None:
        sp = self.soc.space(t.type.loc)
        if isinstance(addr, Expr):
            t.manual = True
            return           # checked at run time
        where = f"{sp.buffer} ({sp.loc}, {self.soc.name})"
        if addr % sp.align:
            raise _at(Dx.assign_misaligned(t.name, addr, where, sp.align), site)
        if addr < 0 or addr + t.type.nbytes > sp.capacity:
            raise _at(Dx.assign_past_end(t.name, addr, t.type.nbytes, where, sp.capacity), site)
        for other in self.auto.get(sp.loc, []):
            if other is not t and addr < other.addr + other.type.nbytes and other.addr < addr + t.type.nbytes:
                raise _at(TileError(
                    f"TASSIGN({t.name}, {addr:#x}) overlaps tile {other.name}, which pypto placed "
                    f"automatically at {other.addr:#x}..{other.addr + other.type.nbytes:#x}",
                    rule="in a kernel that uses TASSIGN, auto-placed tiles only avoid the ranges "
                         "assigned before them",
                    fix="TASSIGN every tile of the kernel (manual mode), or none (auto mode)"), site)
        if t in self.auto.get(sp.loc, []):
            self.auto[sp.loc].remove(t)
        t.addr = addr
        t.manual = True
        self.manual_ranges.setdefault(sp.loc, []).append((addr, addr + t.type.nbytes, t))


# -- GM views -------------------------------------------------------------------------------------

def _static_int(x) -> bool:
    return is_static(x) and isinstance(x, int)


def _bound(what: str, value: ExprLike, limit: ExprLike, site: Site | None, tensor: TensorParam):
    """0 <= value <= limit, statically if possible; otherwise returned for a run-time check."""
    if _static_int(value) and _static_int(limit):
        if not 0 <= value <= limit:
            raise _at(Dx.gm_out_of_bounds(tensor.name, tensor.shape, what, value, limit), site)
        return None
    return (what, value, limit)


def slice_view(tensor: TensorParam, key: Any, site: Site | None) -> GmView:
    """x[r0:r1, c0:c1] (any rank up to 5) -> a 5-D GmView; ints index a size-1 extent."""
    if not isinstance(key, tuple):
        key = (key,)
    rank = len(tensor.shape)
    if len(key) > rank:
        raise _at(ShapeError(f"{tensor.name} has rank {rank} but was indexed with {len(key)} indices",
                             fix="use one index or slice per dimension"), site)
    key = key + (slice(None),) * (rank - len(key))
    strides = tensor.strides
    offset: ExprLike = 0
    shape: list[ExprLike] = []
    vstr: list[ExprLike] = []
    bounds = []
    for d, (k, dim, st) in enumerate(zip(key, tensor.shape, strides)):
        if isinstance(k, slice):
            if k.step not in (None, 1):
                raise _at(ShapeError(f"{tensor.name}[...]: slice step {k.step} in dim {d}",
                                     rule="GM views are dense windows", fix="use step 1"), site)
            start = 0 if k.start is None else k.start
            stop = dim if k.stop is None else k.stop
            try:
                require_kernel_scalar(start, f"{tensor.name}[...] dim {d} start")
                require_kernel_scalar(stop, f"{tensor.name}[...] dim {d} stop")
            except PtoError as e:
                raise _at(e, site) from None
            for v in (start, stop):
                if _static_int(v) and v < 0:
                    raise _at(GMBoundsError(f"{tensor.name}[...]: negative index {v} in dim {d}",
                                            rule="PTO GM views have no negative (from-the-end) indices",
                                            fix="write the absolute index"), site)
            ext = binop("-", stop, start)
            if _static_int(ext) and ext <= 0:
                raise _at(GMBoundsError(f"{tensor.name}[...]: empty slice {start}:{stop} in dim {d}",
                                        rule="every GM view extent must be >= 1"), site)
            for b in (_bound(f"dim {d} stop", stop, dim, site, tensor),
                      _bound(f"dim {d} extent", binop("-", ext, 1), binop("-", dim, 1), site, tensor),
                      _bound(f"dim {d} start", start, binop("-", dim, 1), site, tensor)):
                if b is not None:
                    bounds.append(b)
            offset = binop("+", offset, binop("*", start, st))
            shape.append(ext)
            vstr.append(st)
        else:
            if isinstance(k, bool) or not isinstance(k, (int, Expr)):
                raise _at(ShapeError(f"{tensor.name}[...]: index {k!r} in dim {d} is not an int or slice"), site)
            b = _bound(f"dim {d} index", k, binop("-", dim, 1), site, tensor)
            if b is not None:
                bounds.append(b)
            offset = binop("+", offset, binop("*", k, st))
    while len(shape) < 1:
        shape.append(1)
        vstr.append(1)
    if len(shape) > 5:
        raise _at(ShapeError(f"a view of {tensor.name} has {len(shape)} sliced dims; GlobalTensor has 5",
                             fix="index the leading dims with ints"), site)
    pad = 5 - len(shape)
    shape5 = tuple([1] * pad + shape)
    lead = binop("*", shape5[0] if pad == 0 else 1, vstr[0])
    str5 = tuple([lead] * pad + vstr)
    return GmView(tensor, offset, shape5, str5, "ND", tuple(bounds))


def global_tensor(tensor: TensorParam, shape, stride, offset, layout, site) -> GmView:
    if len(shape) != 5 or len(stride) != 5:
        raise _at(ShapeError("pto.GlobalTensor takes a 5-entry shape and a 5-entry stride",
                             fix="pad with leading 1s, e.g. shape=(1, 1, 1, rows, cols)"), site)
    if layout not in ("ND", "DN", "NZ"):
        raise _at(ShapeError(f"GlobalTensor layout {layout!r} is not simulated yet",
                             rule="this version simulates ND and DN GM layouts"), site)
    last: ExprLike = offset
    bounds = []
    for s, t in zip(shape, stride):
        if _static_int(s) and s < 1:
            raise _at(GMBoundsError(f"GlobalTensor shape entry {s} < 1", rule="all shape dims > 0"), site)
        last = binop("+", last, binop("*", binop("-", s, 1), t))
    for b in (_bound("offset", offset, binop("-", tensor.numel, 1), site, tensor),
              _bound("last element", last, binop("-", tensor.numel, 1), site, tensor)):
        if b is not None:
            bounds.append(b)
    return GmView(tensor, offset, tuple(shape), tuple(stride), layout, tuple(bounds))


# -- instructions -----------------------------------------------------------------------------------

def _to_ir(x: Any, site: Site | None) -> Any:
    """A DSL operand as an IR operand: Tile -> TileVar, a whole tensor parameter -> its full view."""
    from .tile import GmTensor, Tile
    if isinstance(x, Tile):
        return x._tv
    if isinstance(x, GmTensor):
        return slice_view(x._param, (), site)
    return x


def instr(name: str, operands: tuple, params: dict, site: Site | None) -> None:
    """Check one instruction use against the table, then hand it to the active builder."""
    b = B.current(f"pto.{name}")
    spec = TABLE[name]
    soc = b.soc
    try:
        if not b.supports(name):
            raise NotSimulatedError(
                f"{name} (opcode {spec.opcode:#06x}) is in the ISA table but is not simulated yet",
                rule=f"{name}: {spec.summary}",
                fix="use an instruction this version simulates (see docs/isa-reference.md)")
        unknown = set(params) - {p.name for p in spec.params}
        if unknown:
            raise OperandError(f"{name}: unknown parameter(s) {sorted(unknown)}",
                               fix=f"known: {[p.name for p in spec.params]}")
        for p in spec.params:
            if p.name in params and p.values and params[p.name] not in p.values:
                raise OperandError(f"{name}: {p.name}={params[p.name]!r} is not a {p.type}",
                                   rule=f"{p.name} is one of {', '.join(map(str, p.values))}")
        if params and not b.supports(name, params):
            raise NotSimulatedError(
                f"{name} with {', '.join(f'{k}={v}' for k, v in params.items())} is not simulated yet",
                rule=f"this version simulates {name} with its default parameters only",
                fix=f"leave the parameters at their defaults "
                    f"({', '.join(f'{p.name}={p.default}' for p in spec.params)})")
        ops = tuple(_to_ir(x, site) for x in operands)
        check_operands(name, ops, soc)
        check = _CHECKS.get(name) or _CHECKS.get(spec.category)
        if check is not None:
            check(spec, ops, soc)
        for x in ops:
            if isinstance(x, TileVar):
                b.placement.ensure(x, site)
    except PtoError as e:
        raise _at(e, site) from None
    b.emit(InstrNode(name, ops, dict(params), site=site))


def _covers(name: str, dst: TileVar, src: TileVar, what: str) -> None:
    """src's valid region must contain dst's (statically known parts; the rest at run time)."""
    for d, s in zip(dst.valid, src.valid):
        if _static_int(d) and _static_int(s) and s < d:
            raise Dx.src_valid_too_small(name, what, src.name, src.valid, dst.name, dst.valid)


def _check_elementwise(spec, ops, soc) -> None:
    dst = ops[0]
    for o, x in zip(spec.operands[1:], ops[1:]):
        if isinstance(x, TileVar) and o.role == "in":
            _covers(spec.name, dst, x, o.name)


def _check_tile_scalar(spec, ops, soc) -> None:
    _check_elementwise(spec, ops, soc)
    dst = ops[0]
    dt = dst.type.dtype
    for o, x in zip(spec.operands, ops):
        if o.kind != "scalar":
            continue
        if isinstance(x, (Expr, RtFloat)):
            if dt.is_int and (isinstance(x, RtFloat) or x.dtype == "f64"):
                raise DTypeError(f"{spec.name}: runtime scalar {x} is a float but the tile is {dt.name}",
                                 rule="the scalar is converted to the tile's element type",
                                 fix="pass an int scalar for integer tiles")
        elif dt.is_int:
            if isinstance(x, float) and not x.is_integer():
                raise DTypeError(f"{spec.name}: scalar {x!r} is not an integer but the tile is {dt.name}",
                                 rule="the scalar is converted to the tile's element type",
                                 fix="pass an int, or use a float tile")


def _tile_shape_for_view(t: TileVar, v: GmView, name: str) -> None:
    s = v.shape
    if t.type.blayout == "RowMajor":
        rows = binop("*", binop("*", binop("*", s[0], s[1]), s[2]), s[3])
        cols = s[4]
    else:
        rows = s[3]
        cols = binop("*", binop("*", binop("*", s[0], s[1]), s[2]), s[4])
    for want, have in zip((rows, cols), t.valid):
        if _static_int(want) and _static_int(have) and want != have:
            raise Dx.view_shape_mismatch(name, (rows, cols), t.name, t.valid, t.type.layout_name)


def _check_tload(spec, ops, soc) -> None:
    t, v = ops
    if t.type.slayout != "NoneBox" or v.layout != "ND" and v.layout != "DN":
        raise NotSimulatedError(f"TLOAD into a boxed ({t.type.layout_name}) tile is not simulated yet",
                                rule="this version simulates ND/DN GM <-> ND/DN tiles")
    _tile_shape_for_view(t, v, "TLOAD")


def _check_tstore(spec, ops, soc) -> None:
    v, t = ops
    if t.type.slayout != "NoneBox":
        raise NotSimulatedError(f"TSTORE from a boxed ({t.type.layout_name}) tile is not simulated yet")
    _tile_shape_for_view(t, v, "TSTORE")


_CHECKS = {"elementwise": _check_elementwise, "tile_scalar": _check_tile_scalar,
           "TLOAD": _check_tload, "TSTORE": _check_tstore}


def set_valid(t: TileVar, rows: ExprLike, cols: ExprLike, site: Site | None) -> None:
    b = B.current("Tile.set_valid")
    try:
        if not t.dynamic:
            raise ValidRegionError(f"set_valid on tile {t.name}, whose valid region is static",
                                   rule="only tiles declared with valid=pto.DYNAMIC (or runtime "
                                        "valid sizes) change their valid region at run time",
                                   fix=f"declare {t.name} with valid=pto.DYNAMIC")
        for n, v, lim in (("rows", rows, t.type.rows), ("cols", cols, t.type.cols)):
            require_kernel_scalar(v, f"set_valid({t.name}) {n}")
            if _static_int(v) and not 0 <= v <= lim:
                raise Dx.valid_out_of_range(t.name, rows, cols, t.type.rows, t.type.cols)
    except PtoError as e:
        raise _at(e, site) from None
    b.emit(SetValid(t, rows, cols, site=site))


def assign(t: TileVar, addr: ExprLike, site: Site | None) -> None:
    b = B.current("pto.TASSIGN")
    try:
        require_kernel_scalar(addr, f"TASSIGN({t.name}) address")
    except PtoError as e:
        raise _at(TileError(e.message, rule="TASSIGN takes an integral byte address"), site) from None
    b.placement.assign(t, addr, site)
    b.emit(Assign(t, addr, site=site))


def require_kernel_scalar(x: Any, what: str) -> None:
    """Loop bounds, indices and sizes are integers (a float scalar parameter cannot be one)."""
    if isinstance(x, bool) or not isinstance(x, (int, Expr)) or isinstance(x, RtFloat) or \
            (isinstance(x, Expr) and x.dtype != "i64"):
        raise KernelError(f"{what}: {x!r} is not an integer",
                          rule="loop bounds, GM indices, valid sizes and addresses are integers",
                          fix="pass an int scalar to the kernel (or convert on the host)")
