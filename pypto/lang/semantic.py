"""The one semantic layer: every DSL call is checked here against the ISA table and SoC profile,
then handed to the active builder as an IR node. Tracer and eager executor share all of it,
so both modes give the same diagnostics.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np

from .. import diagnostics as Dx
from .. import dtypes as D
from ..errors import (GMBoundsError, KernelError, LocationError,
                      PtoError, ShapeError, TileCapacityError, TileError, TileShapeError,
                      ValidRegionError)
from ..ir.nodes import (Assign, Expr, ExprLike, GmView, GroupView, InstrNode, SetValid, Site, TensorParam,
                        RtFloat, TileType, TileVar, binop, is_runtime, is_static)
from ..ir.verify import check_instr
from ..isa.soc import LOCATIONS, SocProfile
from . import builder as B

DYNAMIC = object()   # pto.DYNAMIC: a valid region set at run time

_BLAYOUTS = ("RowMajor", "ColMajor")
_SLAYOUTS = ("NoneBox", "RowMajor", "ColMajor")
_PADS = ("Null", "Zero", "Min", "Max")


def _at(err: PtoError, site: Site | None) -> PtoError:
    return err.located(str(site)) if site is not None else err


def py_scalar(x: Any) -> Any:
    """numpy scalars act as the Python scalars they hold (np.int64(4) is 4, np.float32(2) is 2.0);
    numpy bools stay bools, so they are refused wherever Python bools are."""
    if isinstance(x, np.generic):
        if isinstance(x, np.bool_):
            return bool(x)
        if isinstance(x, (np.integer, np.floating)):
            return x.item()
    return x


# -- tiles ------------------------------------------------------------------------------------

def check_tile_type(soc: SocProfile, loc: Any, dtype: Any, shape: Any, blayout: str,
                    slayout: str | None, fractal: int | None, pad: str, what: str) -> TileType:
    if loc not in LOCATIONS:
        raise LocationError(f"{what}: {loc!r} is not a tile location",
                            rule=f"tile locations are pto.{', pto.'.join(LOCATIONS)}",
                            fix="pass e.g. pto.Vec for a unified-buffer (UB) tile")
    soc.space(loc)
    dt = D.as_dtype(dtype, context=what)
    try:
        rows, cols = (py_scalar(v) for v in shape)
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
        ir_, ic = ty.inner
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
        vr, vc = (py_scalar(v) for v in valid)
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
    key = tuple(slice(py_scalar(k.start), py_scalar(k.stop), py_scalar(k.step))
                if isinstance(k, slice) else py_scalar(k) for k in key)
    rank = len(tensor.shape)
    if len(key) > rank:
        raise _at(ShapeError(f"{tensor.name} has rank {rank} but was indexed with {len(key)} indices",
                             fix="use one index or slice per dimension"), site)
    point = len(key) == rank and not any(isinstance(k, slice) for k in key)
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
                raise _at(Dx.empty_window(tensor.name, tensor.shape, f"dim {d}", ext), site)
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
                raise _at(ShapeError(f"{tensor.name}[...]: index {k!r} in dim {d} is not an int or slice",
                                     rule="GM views are indexed with ints, runtime int scalars and "
                                          "slices (step 1)",
                                     fix="use an int index or a start:stop slice"), site)
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
    return GmView(tensor, offset, shape5, str5, "ND", tuple(bounds), point=point)


def global_tensor(tensor: TensorParam, shape, stride, offset, layout, site) -> GmView:
    if not all(isinstance(x, (tuple, list)) and len(x) == 5 for x in (shape, stride)):
        raise _at(ShapeError(f"pto.GlobalTensor takes a 5-entry shape and a 5-entry stride, not "
                             f"shape={shape!r}, stride={stride!r}",
                             rule="a GlobalTensor's shape and stride are tuples of 5 integers",
                             fix="pad with leading 1s, e.g. shape=(1, 1, 1, rows, cols)"), site)
    shape = tuple(_index(s, f"GlobalTensor shape[{i}]", site) for i, s in enumerate(shape))
    stride = tuple(_index(s, f"GlobalTensor stride[{i}]", site) for i, s in enumerate(stride))
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


def _index(x: Any, what: str, site) -> ExprLike:
    """A kernel integer (static or runtime), or the error naming ``what``."""
    x = py_scalar(x)
    try:
        require_kernel_scalar(x, what)
    except PtoError as e:
        raise _at(e, site) from None
    return x


def remote_view(view: Any, rank: Any, site) -> GmView:
    """``view`` on device ``rank``: the same tensor, offset, shape and strides in the peer's GM."""
    if not isinstance(view, GmView) or isinstance(view, GroupView):
        raise _at(KernelError(f"pto.remote: {view!r} is not a GM view",
                              rule="pto.remote names a window (pto.GlobalTensor, x[...]) of a kernel "
                                   "tensor on another device", fix="pass a GlobalTensor or a tensor slice"), site)
    rank = _index(rank, "pto.remote rank", site)
    if _static_int(rank) and rank < 0:
        raise _at(KernelError(f"pto.remote: rank {rank} < 0", rule="ranks run from 0 to pto.rank_num()-1",
                              fix="take the peer modulo pto.rank_num()"), site)
    return dataclasses.replace(view, rank=rank)


def group_view(view: Any, nranks: Any, root: Any, site) -> GmView:
    """pto.ParallelGroup: the view on ranks 0 .. nranks-1, driven by ``root``."""
    if not isinstance(view, GmView) or isinstance(view, GroupView) or view.rank is not None:
        raise _at(KernelError(f"pto.ParallelGroup: {view!r} is not a local GM view",
                              rule="a group names the same window of a tensor on every rank; its "
                                   "members are the peers' copies of this rank's view",
                              fix="pass a GlobalTensor or a slice of a kernel tensor"), site)
    nranks = _index(nranks, "pto.ParallelGroup nranks", site)
    root = _index(root, "pto.ParallelGroup root", site)
    if _static_int(nranks) and nranks < 1:
        raise _at(KernelError(f"pto.ParallelGroup: nranks {nranks} < 1", rule="a group has at least one rank",
                              fix="pass pto.rank_num()"), site)
    if _static_int(root) and (root < 0 or (_static_int(nranks) and root >= nranks)):
        raise _at(KernelError(f"pto.ParallelGroup: root {root} outside 0 .. nranks-1",
                              rule="the root is one of the group's ranks", fix="pass a rank below nranks"), site)
    fields = {f.name: getattr(view, f.name) for f in dataclasses.fields(GmView)}
    return GroupView(**fields, nranks=nranks, root=root)


# -- instructions -----------------------------------------------------------------------------------

def _to_ir(x: Any, site: Site | None) -> Any:
    """A DSL operand as an IR operand: a Tile's TileVar, a whole tensor parameter's full view.
    (Tile and GmTensor hand out their IR object as ``_ir``, so this layer needs no import of
    the handle classes, which are built on it.)"""
    ir = getattr(type(x), "_ir", None)
    if ir is None:
        return x
    obj = x._ir
    return slice_view(obj, (), site) if isinstance(obj, TensorParam) else obj


def instr(name: str, operands: tuple, params: dict, site: Site | None) -> InstrNode:
    """Check one instruction use against the table, the SoC and its unit, then hand it to the
    active builder. Legality does not depend on the backend: kern.ir() works for every
    instruction; a backend that cannot run one says so when it compiles the kernel."""
    b = B.current(f"pto.{name}")
    try:
        ops = tuple(_to_ir(py_scalar(x), site) for x in operands)
        ops = _gm_scalars(name, ops, b, site)
        params = {k: py_scalar(v) for k, v in params.items()}
        node = InstrNode(name, ops, dict(params), site=site)
        check_instr(node, b.soc)
        for x in ops:
            if isinstance(x, TileVar):
                b.placement.ensure(x, site)
    except PtoError as e:
        raise _at(e, site) from None
    b.emit(node)
    return node


def _gm_scalars(name: str, ops: tuple, b, site: Site | None) -> tuple:
    """``x[i, j]`` (one element of a GM tensor) in a scalar operand slot is a scalar read by the
    scalar unit: a GmLoad while tracing, the element's value in eager mode."""
    from ..isa import TABLE
    from ..ir.verify import slots_of
    if name not in TABLE:
        return ops
    slots = slots_of(name, ops)
    return tuple(b.gm_scalar(x, site) if isinstance(x, GmView) and x.point and o.kind == "scalar" else x
                 for o, x in zip(slots, ops)) + ops[len(slots):]


def set_valid(t: TileVar, rows: ExprLike, cols: ExprLike, site: Site | None) -> None:
    b = B.current("Tile.set_valid")
    rows, cols = py_scalar(rows), py_scalar(cols)
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
    addr = py_scalar(addr)
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
