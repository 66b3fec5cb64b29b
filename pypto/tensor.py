"""pypto.Tensor: a handle to device (GM) memory on the active backend.

Data crosses between host and device only through counted copies: construction (H2D) and
``.numpy()`` (D2H). Like ``torch.tensor(...).npu()`` / ``x.cpu().numpy()``.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from . import dtypes as D
from . import runtime
from .errors import DTypeError, HostMemoryError, ShapeError, UseAfterFreeError


def _c_order(a: np.ndarray) -> np.ndarray:
    return a if a.flags.c_contiguous else a.copy(order="C")     # keeps 0-d arrays 0-d


def _checked_cast(src: np.ndarray, dt: D.DType) -> np.ndarray:
    """src converted to dt, refusing casts that would silently change values: fractions into
    integer types, integers out of range, finite floats overflowing to inf."""
    with np.errstate(all="ignore"):
        out = src.astype(dt.np)
    if src.dtype == out.dtype or src.size == 0:
        return out
    kind = src.dtype.kind
    if dt.is_int and kind in "fc":
        bad = ~np.isfinite(src) | (src != np.trunc(src))
        if bad.any():
            raise DTypeError(f"pypto.Tensor: value {src[bad].flat[0].item()!r} is not an integer, so it does "
                             f"not fit {dt.name}", fix="round the data first, or use a float dtype")
    if dt.is_int and kind in "iufc":
        info = np.iinfo(dt.np)
        wide = src.astype(np.float64) if kind in "fc" else src
        bad = (wide < info.min) | (wide > info.max)
        if bad.any():
            raise DTypeError(f"pypto.Tensor: value {src[bad].flat[0].item()!r} is outside {dt.name}'s range "
                             f"{info.min}..{info.max}", fix="choose a wider dtype")
    if dt.is_float and kind in "iuf":
        with np.errstate(all="ignore"):
            bad = np.isinf(out.astype(np.float32)) & np.isfinite(src.astype(np.float64))
        if bad.any():
            raise DTypeError(f"pypto.Tensor: value {src[bad].flat[0].item()!r} overflows {dt.name}",
                             fix="scale the data or choose a wider dtype (float32)")
    return out


def _host_array(data: Any, dtype: D.DType | None) -> tuple[np.ndarray, D.DType]:
    if isinstance(data, Tensor):
        data = data.numpy()
    if isinstance(data, np.ndarray):
        if dtype is None:
            dt = D.for_host_array(data, context="pypto.Tensor")
            return _c_order(data), dt
        return _c_order(_checked_cast(data, dtype)), dtype
    try:
        arr = np.asarray(data)
    except (ValueError, TypeError) as e:
        raise ShapeError(f"pypto.Tensor: cannot make an array of {type(data).__name__}: {e}",
                         fix="pass a rectangular nested list or a numpy array") from None
    if arr.dtype == object:
        raise ShapeError("pypto.Tensor: ragged or non-numeric data", fix="pass a rectangular nested list")
    if dtype is None:
        if arr.dtype.kind == "f":
            dtype = D.float32
        elif arr.dtype.kind in "iu":
            dtype = D.int32
        elif arr.dtype.kind == "b":
            raise DTypeError("pypto.Tensor: bool data has no PTO element type",
                             rule=f"PTO element types are: {D.LEGAL_NAMES}", fix="pass dtype=pypto.uint8")
        else:
            dtype = D.for_host_array(arr, context="pypto.Tensor")
    if arr.dtype.kind not in "iufb":
        arr = arr.astype(np.float64)
    return _c_order(_checked_cast(arr, dtype)), dtype


class Tensor:
    """A device tensor. ``pypto.Tensor(data, dtype=None)`` copies host data to device memory.

    Without dtype a numpy array keeps its type (float64 is an error: pass dtype=pypto.float32);
    Python lists of floats become float32 and of ints int32.
    """

    def __init__(self, data: Any, dtype: Any = None):
        dt = None if dtype is None else D.as_dtype(dtype, context="pypto.Tensor")
        arr, dt = _host_array(data, dt)
        self._init(arr.shape, dt)
        self._session.backend.copy_in(self._buf, arr)

    # -- construction helpers ----------------------------------------------------------------
    def _init(self, shape: Sequence[int], dt: D.DType) -> None:
        sess = runtime.current()
        shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ShapeError(f"negative dimension in shape {shape}")
        self._session = sess
        self._shape = shape
        self._dtype = dt
        n = math.prod(shape)
        self._buf = sess.backend.alloc(n * dt.itemsize, label=f"{dt.name}{list(shape)}")
        self._owner = True
        sess.tensors.add(self)

    @classmethod
    def _empty(cls, shape, dtype) -> "Tensor":
        t = cls.__new__(cls)
        if isinstance(shape, int):
            shape = (shape,)
        t._init(shape, D.as_dtype(dtype, context="pypto.empty"))
        return t

    def _alias(self, shape: tuple[int, ...]) -> "Tensor":
        """A view of the same device memory with another (same-size) shape; does not own it."""
        t = Tensor.__new__(Tensor)
        t._session, t._shape, t._dtype, t._buf, t._owner = self._session, tuple(shape), self._dtype, self._buf, False
        return t

    # -- properties ----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> D.DType:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return math.prod(self._shape)

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.itemsize

    @property
    def device_ptr(self) -> int:
        self._check_live("device_ptr")
        return self._buf.addr

    @property
    def is_freed(self) -> bool:
        return self._buf.freed

    def _check_live(self, what: str) -> None:
        self._buf.check_live(what)
        if runtime._session is not self._session:
            raise UseAfterFreeError(f"{what}: this tensor belongs to a session that has ended",
                                    rule="pypto.finalize() frees every tensor of the session",
                                    fix="create tensors after the pypto.init() you use them with")

    # -- data movement -------------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """Copy device -> host (counted in pypto.stats())."""
        self._check_live("Tensor.numpy()")
        out = np.empty(self._shape, self._dtype.np)
        self._session.backend.copy_out(self._buf, out)
        return out

    def copy_from(self, arr: np.ndarray) -> None:
        """Copy a host array of the same shape and dtype into this tensor (H2D)."""
        self._check_live("Tensor.copy_from()")
        arr = np.asarray(arr)
        if D.as_dtype(arr.dtype) != self._dtype or arr.shape != self._shape:
            raise ShapeError(f"copy_from: host {arr.dtype}{list(arr.shape)} vs tensor "
                             f"{self._dtype.name}{list(self._shape)}")
        self._session.backend.copy_in(self._buf, arr)

    # -- lifetime -------------------------------------------------------------------------------
    def free(self) -> None:
        """Release the device memory now; later use raises UseAfterFreeError."""
        self._check_live("Tensor.free()")
        self._session.backend.free(self._buf)

    def _release(self) -> None:
        if self._owner and not self._buf.freed:
            self._session.backend.free(self._buf)

    def __enter__(self) -> "Tensor":
        return self

    def __exit__(self, *exc) -> None:
        if not self._buf.freed and runtime._session is self._session:
            self.free()

    def __del__(self):
        try:
            if self._owner and not self._buf.freed and runtime._session is self._session:
                self._session.backend.free(self._buf)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self) -> str:
        if self._buf.freed:
            return f"pypto.Tensor(<freed>, shape={self._shape}, dtype={self._dtype.name})"
        return (f"pypto.Tensor(shape={self._shape}, dtype={self._dtype.name}, "
                f"device_ptr={self._buf.addr:#x})")

    def __array__(self, dtype=None, copy=None):
        raise HostMemoryError(
            f"numpy cannot read pypto.Tensor {self._dtype.name}{list(self._shape)} directly: it "
            "lives in device (GM) memory",
            rule="host code sees device memory only through an explicit, counted copy",
            fix="call tensor.numpy() to copy it to the host")

    def __len__(self) -> int:
        return self._shape[0] if self._shape else 1


def empty(shape, dtype: Any = D.float32) -> Tensor:
    """Uninitialised device tensor (the simulator fills it with its poison byte)."""
    t = Tensor._empty(shape, dtype)
    be = t._session.backend
    if hasattr(be, "fill_uninit"):
        be.fill_uninit(t._buf)
    return t


def zeros(shape, dtype: Any = D.float32) -> Tensor:
    """Device tensor of zeros (written from the host: one counted H2D copy)."""
    t = Tensor._empty(shape, dtype)
    t._session.backend.copy_in(t._buf, np.zeros(t.size, t.dtype.np))
    return t


def from_numpy(arr: np.ndarray) -> Tensor:
    """Device copy of a numpy array, keeping its dtype."""
    return Tensor(np.asarray(arr))
