"""User-facing handles inside a kernel: Tile (an on-chip tile) and GmTensor (a GM tensor parameter)."""
from __future__ import annotations

from typing import Any

from ..errors import PtoError
from ..ir.nodes import ExprLike, GmView, TensorParam, TileVar
from . import builder as B
from . import semantic as S


class Tile:
    """pto::Tile: a typed 2-D view at an address of an on-chip space (Vec=UB, Mat=L1, Left=L0A, ...).

    ``valid=None`` is the whole tile; ``(r, c)`` a static (or runtime) valid region;
    ``pto.DYNAMIC`` a region set at run time with ``set_valid``.
    """

    def __init__(self, loc: str, dtype: Any, shape: tuple[int, int], valid: Any = None,
                 blayout: str = "RowMajor", slayout: str | None = None, fractal: int | None = None,
                 pad: str = "Null"):
        b = B.current("pto.Tile")
        site = B.user_site()
        try:
            ty = S.check_tile_type(b.soc, loc, dtype, shape, blayout, slayout, fractal, pad, "pto.Tile")
            vpair, dyn = S.check_valid(ty, valid, "pto.Tile")
        except PtoError as e:
            raise (e.located(str(site)) if site is not None else e) from None
        name = S.tile_name(site, b.tile_names, len(b.tile_names))
        init = (ty.rows, ty.cols) if dyn else vpair
        self._tv = TileVar(ty, init, dyn, name, id=len(b.tiles))
        if dyn:
            self._tv.valid = b.dynamic_valid(self._tv)
        b.new_tile(self._tv, site)
        if dyn and valid is not S.DYNAMIC and valid is not None:
            S.set_valid(self._tv, vpair[0], vpair[1], site)

    _ir = property(lambda self: self._tv)        # what the semantic layer puts in the IR

    # static facts
    loc = property(lambda self: self._tv.type.loc)
    dtype = property(lambda self: self._tv.type.dtype)
    shape = property(lambda self: (self._tv.type.rows, self._tv.type.cols))
    rows = property(lambda self: self._tv.type.rows)
    cols = property(lambda self: self._tv.type.cols)
    nbytes = property(lambda self: self._tv.type.nbytes)
    name = property(lambda self: self._tv.name)

    @property
    def valid(self) -> tuple[ExprLike, ExprLike]:
        """The current valid region: ints, or runtime expressions while tracing."""
        return self._tv.valid

    @property
    def addr(self) -> int | None:
        return self._tv.addr

    def set_valid(self, rows: ExprLike, cols: ExprLike) -> None:
        """Change a dynamic tile's valid region at run time."""
        S.set_valid(self._tv, rows, cols, B.user_site())

    def __getitem__(self, key):
        from ..errors import KernelError
        raise KernelError(f"tile {self.name} is not indexable ({self.name}[{key!r}])",
                          rule="an instruction takes whole tiles; its valid region says which "
                               "elements it works on",
                          fix="pass the tile itself and set its valid region (valid=... or "
                              "set_valid); to see a tile's contents use mode='eager' and .numpy()")

    def numpy(self, storage: bool = False):
        """Eager mode only: a copy of the tile's contents as a (rows, cols) numpy array, element
        (r, c) at [r, c] whatever the layout; ``storage=True``: the elements in the order the
        on-chip memory holds them (a flat array: Nz boxes, Zn boxes, ... as pto-isa-semantics
        3.3 says)."""
        b = B.current("Tile.numpy")
        if not b.eager:
            from ..errors import TraceError
            raise TraceError(f"tile {self.name} has no contents while tracing",
                             rule="compiled kernels are traced first; tile data exists only when run",
                             fix="run the kernel with mode='eager' (or PYPTO_SIM_MODE=eager) to "
                                 "inspect tiles with print()/breakpoint()")
        return b.tile_numpy(self._tv, storage)

    def __repr__(self) -> str:
        b = B.active()
        body = f"Tile {self.name}: {self._tv.type}, valid ({self._tv.valid[0]}, {self._tv.valid[1]})"
        if self._tv.addr is not None:
            body += f" @ {self._tv.addr:#x}"
        if b is not None and b.eager and self._tv.addr is not None:
            body += "\n" + repr(b.tile_numpy(self._tv)[: self._tv.valid[0], : self._tv.valid[1]])
        return body


class GmTensor:
    """A GM tensor parameter inside a kernel: ``.shape``/``.dtype`` of the launch argument;
    slicing gives a GM view (GlobalTensor) for TLOAD/TSTORE."""

    def __init__(self, param: TensorParam):
        self._param = param

    _ir = property(lambda self: self._param)     # what the semantic layer puts in the IR
    shape = property(lambda self: self._param.shape)
    dtype = property(lambda self: self._param.dtype)
    name = property(lambda self: self._param.name)
    ndim = property(lambda self: len(self._param.shape))

    @property
    def numel(self) -> ExprLike:
        return self._param.numel

    def __getitem__(self, key) -> GmView:
        return S.slice_view(self._param, key, B.user_site())

    def __repr__(self) -> str:
        return f"GmTensor {self.name}: {self.dtype.name}{list(self.shape)}"
