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
from .errors import DTypeError, DTypeMismatchError, HostMemoryError, ShapeError, UseAfterFreeError


_CAST_RULE = "pypto.Tensor never rounds, wraps or overflows values silently when converting data"
_DATA_RULE = "tensor data is a rectangular array of numbers (nested lists, a number, or a numpy array)"
_SHAPE_RULE = ("a shape is a non-negative integer or a sequence of them (Python int or numpy "
               "integer; not float or bool)")
_HOST_RULE = "host code sees device memory only through an explicit, counted copy"
_MAX_BYTES = 2 ** 63 - 1                    # numpy's (and the GM heap's) byte counts are int64
_INT_LIMITS = (-2 ** 63, 2 ** 64 - 1)       # what the widest PTO integer types (int64, uint64) hold
_INT_TYPES = (D.int8, D.uint8, D.int16, D.uint16, D.int32, D.uint32, D.int64, D.uint64)


def _c_order(a: np.ndarray) -> np.ndarray:
    return a if a.flags.c_contiguous else a.copy(order="C")     # keeps 0-d arrays 0-d


def _int_type_for(lo: int, hi: int) -> str:
    """The fix for integers lo..hi that do not fit: the narrowest PTO integer type holding them."""
    for d in _INT_TYPES:
        info = np.iinfo(d.np)
        if info.min <= lo and hi <= info.max:
            return f"pass dtype=pypto.{d.name}, which holds {_num(lo)}..{_num(hi)}"
    return (f"no PTO integer type holds {_num(lo)}..{_num(hi)}: pass dtype=pypto.float32 to store "
            "the values as floats, or use smaller values")


def _num(v: Any) -> str:
    """A number for a message, long integers shortened."""
    s = str(v)
    return s if len(s) <= 30 else f"{s[:12]}...({len(s.lstrip('-'))} digits)"


def _int_range_error(value: int, dt: D.DType, lo: int, hi: int) -> DTypeError:
    if not _INT_LIMITS[0] <= value <= _INT_LIMITS[1]:
        return DTypeError(
            f"pypto.Tensor: integer {_num(value)} overflows every PTO integer type",
            rule="PTO integers have at most 64 bits: int64 holds -2**63..2**63-1, uint64 holds "
                 "0..2**64-1",
            fix="pass dtype=pypto.float32 to store it as a float, or use smaller values")
    info = np.iinfo(dt.np)
    return DTypeError(f"pypto.Tensor: value {_num(value)} is outside {dt.name}'s range "
                      f"{info.min}..{info.max}", rule=_CAST_RULE, fix=_int_type_for(lo, hi))


def _as_array(data: Any, context: str, fix: str) -> np.ndarray:
    """np.asarray of user data, its failures (ragged lists, undecodable bytes, ...) a ShapeError."""
    try:
        return np.asarray(data)
    except (ValueError, TypeError, OverflowError) as e:     # UnicodeDecodeError is a ValueError
        raise ShapeError(f"{context}: cannot make an array of {type(data).__name__}: {e}",
                         rule=_DATA_RULE, fix=fix) from None


def _not_numeric(arr: np.ndarray) -> DTypeError:
    """The error for host data that is not numbers: complex, text, bytes, dates, records."""
    what = {"c": "complex numbers", "U": "text", "S": "bytes", "M": "dates", "m": "time deltas"
            }.get(arr.dtype.kind, f"{arr.dtype} data")
    head = f"{what} ({arr.flat[0].item()!r}, ...)" if arr.size and arr.dtype.kind in "cUSMm" else what
    return DTypeError(f"pypto.Tensor: {head} cannot become a PTO tensor",
                      rule=f"tensor data is numeric (no value is dropped or parsed on the way); PTO "
                           f"element types are: {D.LEGAL_NAMES}",
                      fix="pass ints or floats (for complex data, the real and imaginary parts "
                          "as two tensors)")


def _checked_cast(src: np.ndarray, dt: D.DType) -> np.ndarray:
    """src converted to dt, refusing casts that would silently change values: fractions into
    integer types, integers out of range, finite floats overflowing to inf."""
    with np.errstate(all="ignore"):
        out = src.astype(dt.np)
    if src.dtype == out.dtype or src.size == 0:
        return out
    kind = src.dtype.kind
    if kind == "V":                      # bfloat16 and the fp8 types (ml_dtypes): checked as floats
        src, kind = src.astype(np.float64), "f"
    if kind in "cUSMmOV":
        raise _not_numeric(src)
    if dt.is_int and kind == "f":
        bad = ~np.isfinite(src) | (src != np.trunc(src))
        if bad.any():
            raise DTypeError(f"pypto.Tensor: value {src[bad].flat[0].item()!r} is not an integer, so it does "
                             f"not fit {dt.name}", rule=_CAST_RULE,
                             fix="round the data first, or use a float dtype (dtype=pypto.float32)")
    if dt.is_int and kind in "iufc":
        info = np.iinfo(dt.np)
        if kind == "f":                  # exact bounds: float(2**64 - 1) rounds up to 2**64
            wide = src.astype(np.float64)
            bad = (wide < float(info.min)) | (wide >= float(int(info.max) + 1))
        else:
            bad = (src < info.min) | (src > info.max)
        if bad.any():
            value = src[bad].flat[0].item()
            if kind in "iu":
                raise _int_range_error(int(value), dt, int(src.min()), int(src.max()))
            raise DTypeError(f"pypto.Tensor: value {value!r} is outside {dt.name}'s range "
                             f"{info.min}..{info.max}", rule=_CAST_RULE,
                             fix="choose a wider dtype, or scale the data")
    if dt.is_float and kind in "iufb":
        with np.errstate(all="ignore"):
            wide, orig = out.astype(np.float32), src.astype(np.float64)
            bad = (np.isinf(wide) & np.isfinite(orig)) | (np.isnan(wide) & ~np.isnan(orig))
        if bad.any():
            value = src[bad].flat[0].item()
            if math.isinf(value):
                raise DTypeError(f"pypto.Tensor: value {value!r} has no {dt.name} encoding",
                                 rule=f"{dt.name} has no infinity (an infinite value would become NaN)",
                                 fix="clip the data to the type's range first, or use float16/float32")
            if dt.name == "float8_e8m0" and value <= 0:
                raise DTypeError(f"pypto.Tensor: value {value!r} has no float8_e8m0 encoding",
                                 rule="float8_e8m0 (an MX scale) holds positive powers of two only: "
                                      "no zero, no sign", fix="pass positive scales, e.g. 2.0 ** k")
            raise DTypeError(f"pypto.Tensor: value {value!r} overflows {dt.name}", rule=_CAST_RULE,
                             fix="scale the data or choose a wider dtype (float32)")
    return out


def _from_objects(obj: np.ndarray, dtype: D.DType | None) -> tuple[np.ndarray, D.DType]:
    """Data numpy could only hold as Python objects (integers beyond 64 bits, non-numbers) or
    turned into float64 although every element is an integer: checked element by element."""
    vals = obj.ravel().tolist()
    if not vals:                                     # no elements: nothing to convert
        dt = dtype or D.float32
        return np.zeros(obj.shape, dt.np), dt
    for v in vals:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ShapeError(f"pypto.Tensor: element {v!r} ({type(v).__name__}) is not a number",
                             rule=_DATA_RULE, fix="pass only ints and floats, in equal-length rows")
    if all(isinstance(v, (int, np.integer)) for v in vals):
        ints = [int(v) for v in vals]
        dt = dtype or D.int32                        # like any list of ints
        if dt.is_int:
            info, lo, hi = np.iinfo(dt.np), min(ints), max(ints)
            for v in ints:
                if not int(info.min) <= v <= int(info.max):
                    raise _int_range_error(v, dt, lo, hi)
            return np.array(ints, dt.np).reshape(obj.shape), dt
        vals = ints
    elif dtype is None:
        dtype = D.float32                            # like any list holding a float
    dt = dtype or D.float32
    try:
        wide = np.array([float(v) for v in vals], np.float64).reshape(obj.shape)
    except OverflowError:
        big = next(v for v in vals if abs(v) > 1.7e308)
        raise DTypeError(f"pypto.Tensor: integer {_num(big)} overflows {dt.name}", rule=_CAST_RULE,
                         fix="scale the data down first") from None
    return _c_order(_checked_cast(wide, dt)), dt


def _code_bytes(data: Any, dt: D.DType) -> np.ndarray:
    """Data for a tensor whose host arrays hold codes (hif8, packed fp4): its bytes, as uint8."""
    packed = dt.lanes > 1
    helper = f"pypto.dtypes.pack_fp4(values, pypto.{dt.name})" if packed else "pypto.dtypes.hif8_encode(values)"
    what = "packed bytes (uint8, two 4-bit values each)" if packed else "HiFloat8 codes (uint8)"
    arr = _as_array(data, "pypto.Tensor", f"pass a numpy uint8 array of {what}")
    if arr.dtype.kind not in "iu" or (arr.size and (int(arr.min()) < 0 or int(arr.max()) > 255)):
        raise DTypeError(f"pypto.Tensor: {dt.name} data must be {what}, not {arr.dtype} values",
                         rule=(f"a {dt.name} element is one byte holding two fp4 values, low nibble first"
                               if packed else "numpy has no HiFloat8 type: host arrays hold the codes"),
                         fix=f"encode the values first: {helper}")
    return _c_order(arr.astype(np.uint8))


def _host_array(data: Any, dtype: D.DType | None) -> tuple[np.ndarray, D.DType]:
    if isinstance(data, Tensor):
        data = data.numpy()
    if dtype is not None and dtype.coded:
        return _code_bytes(data, dtype), dtype
    if isinstance(data, np.generic) and D.from_numpy(data.dtype) is not None:
        data = np.asarray(data)          # a numpy scalar of a PTO type keeps it, as arrays do
    if isinstance(data, np.ndarray) and data.dtype != object:
        if data.dtype.kind not in "iufb" and D.from_numpy(data.dtype) is None:
            raise _not_numeric(data)
        if dtype is None:
            dt = D.for_host_array(data, context="pypto.Tensor")
            return _c_order(data), dt
        return _c_order(_checked_cast(data, dtype)), dtype
    arr = _as_array(data, "pypto.Tensor",
                    "pass a rectangular nested list (equal-length rows) or a numpy array")
    with np.errstate(all="ignore"):
        huge = (arr.dtype.kind == "f" and arr.size and not isinstance(data, np.ndarray)
                and not np.isnan(arr).any() and np.abs(arr).max() >= 2.0 ** 63)
    if arr.dtype == object or huge:
        # numpy keeps huge integers as objects, or turns ints it cannot hold in int64 into float64
        return _from_objects(np.asarray(data, dtype=object) if arr.dtype != object else arr, dtype)
    if arr.dtype.kind not in "iufb":
        raise _not_numeric(arr)
    if dtype is None:
        if arr.dtype.kind == "f":
            dtype = D.float32
        elif arr.dtype.kind in "iu":
            dtype = D.int32
        else:
            raise DTypeError("pypto.Tensor: bool data has no PTO element type",
                             rule=f"PTO element types are: {D.LEGAL_NAMES}", fix="pass dtype=pypto.uint8")
    return _c_order(_checked_cast(arr, dtype)), dtype


def _shape_tuple(shape: Any, context: str) -> tuple[int, ...]:
    """A shape as a tuple of Python ints: ints and numpy integers only, every dimension >= 0."""
    if isinstance(shape, np.ndarray) and shape.ndim == 0:
        shape = shape[()]
    if isinstance(shape, (int, float, bool, np.generic)):
        dims: tuple = (shape,)
    elif isinstance(shape, (str, bytes)):
        raise ShapeError(f"{context}: shape {shape!r} is a string", rule=_SHAPE_RULE,
                         fix=f"pass integers, e.g. {context}((2, 3))")
    elif isinstance(shape, (dict, set, frozenset)):
        raise ShapeError(f"{context}: shape {shape!r} is a {type(shape).__name__}, not a sequence",
                         rule=_SHAPE_RULE, fix=f"pass a tuple of ints, e.g. {context}((2, 3))")
    else:
        try:
            dims = tuple(shape)
        except TypeError:
            raise ShapeError(f"{context}: shape {shape!r} ({type(shape).__name__}) is not an "
                             "integer or a sequence of integers", rule=_SHAPE_RULE,
                             fix=f"pass a tuple of ints, e.g. {context}((2, 3))") from None
    out = []
    for d in dims:
        if isinstance(d, (bool, np.bool_, np.timedelta64)) or not isinstance(d, (int, np.integer)):
            raise ShapeError(f"{context}: dimension {d!r} ({type(d).__name__}) of shape {shape!r} "
                             "is not an integer", rule=_SHAPE_RULE,
                             fix="pass whole numbers; convert computed sizes with int() or use //")
        if d < 0:
            raise ShapeError(f"{context}: negative dimension {int(d)} in shape {shape!r}",
                             rule=_SHAPE_RULE, fix="every dimension must be 0 or more")
        out.append(int(d))
    if math.prod(d for d in out if d) * 8 > _MAX_BYTES:
        raise ShapeError(f"{context}: shape {shape!r:.100} is too large for any array",
                         rule="the dimensions' product (zeros left out) times the element size "
                              "must fit a 64-bit byte count", fix="use smaller dimensions")
    return tuple(out)


class Tensor:
    """A device tensor. ``pypto.Tensor(data, dtype=None)`` copies host data to device memory.

    Without dtype a numpy array keeps its type (float64 is an error: pass dtype=pypto.float32);
    Python lists of floats become float32 and of ints int32. A single number makes a 0-d tensor
    (shape ``()``): a Python float or np.float64 becomes float32, a Python int int32, and any other
    numpy scalar keeps its type like a 0-d array (np.float16(1) -> float16, np.int64(1) -> int64).
    """

    def __init__(self, data: Any, dtype: Any = None):
        dt = None if dtype is None else D.as_dtype(dtype, context="pypto.Tensor")
        arr, dt = _host_array(data, dt)
        self._init(arr.shape, dt)
        self._session.backend.copy_in(self._buf, arr)

    # -- construction helpers ----------------------------------------------------------------
    def _init(self, shape: Sequence[int], dt: D.DType, context: str = "pypto.Tensor") -> None:
        sess = runtime.current()
        shape = _shape_tuple(shape, context)
        self._session = sess
        self._shape = shape
        self._dtype = dt
        n = math.prod(shape)
        self._buf = sess.backend.alloc(n * dt.itemsize, label=f"{dt.name}{list(shape)}")
        self._owner = True
        sess.tensors.add(self)

    @classmethod
    def _empty(cls, shape: Any, dtype: Any, context: str = "pypto.empty") -> "Tensor":
        """An uninitialised tensor; shape is an int or a sequence of ints (numpy ints too)."""
        dt = D.float32 if dtype is None else D.as_dtype(dtype, context=context)
        shape = _shape_tuple(shape, context)
        t = cls.__new__(cls)
        t._init(shape, dt, context)
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
        arr = _as_array(arr, "copy_from", f"pass a numpy array of shape {self._shape} and dtype "
                        f"pypto.{self._dtype.name}.np")
        rule = "copy_from() copies a host array of exactly the tensor's shape and dtype"
        if arr.dtype != self._dtype.np:
            raise DTypeMismatchError(
                f"copy_from: host array is {arr.dtype}{list(arr.shape)}, the tensor is "
                f"{self._dtype.name}{list(self._shape)}", rule=rule,
                fix=f"convert it first: np.asarray(arr, dtype=pypto.{self._dtype.name}.np)")
        if arr.shape != self._shape:
            raise ShapeError(f"copy_from: host array has shape {arr.shape}, the tensor {self._shape}",
                             rule=rule, fix=f"reshape it first: arr.reshape({self._shape})")
        self._session.backend.copy_in(self._buf, arr)

    def _copy_device_from(self, other: "Tensor") -> None:
        """Copy a device tensor of this shape and dtype into this one, device to device."""
        n = math.prod(self._shape) * self._dtype.itemsize
        self._session.backend.copy_device(self._buf, other._buf, n)

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
        world = getattr(self._session.backend, "world", None)
        dev = f", device={self._session.device}" if world is not None and world.size > 1 else ""
        return (f"pypto.Tensor(shape={self._shape}, dtype={self._dtype.name}{dev}, "
                f"device_ptr={self._buf.addr:#x})")

    def __array__(self, dtype=None, copy=None):
        raise HostMemoryError(
            f"numpy cannot read pypto.Tensor {self._dtype.name}{list(self._shape)} directly: it "
            "lives in device (GM) memory", rule=_HOST_RULE, fix="call tensor.numpy() to copy it to the host")

    def __len__(self) -> int:
        return self._shape[0] if self._shape else 1

    def _host_only(self, what: str, fix: str) -> HostMemoryError:
        return HostMemoryError(
            f"{what} a pypto.Tensor {self._dtype.name}{list(self._shape)}: it lives in device (GM) memory",
            rule=_HOST_RULE, fix=fix)

    def __getitem__(self, index: Any):
        raise self._host_only("indexing", "copy it to the host first: tensor.numpy()[...] (inside a "
                              "kernel, index the kernel's tensor argument)")

    def __setitem__(self, index: Any, value: Any) -> None:
        raise self._host_only("assigning into", "copy a whole host array in: tensor.copy_from(arr)")

    def __iter__(self):
        raise self._host_only("iterating over", "copy it to the host first: tensor.numpy()")


# Arithmetic operators on a device tensor: host code cannot compute on GM memory. The error
# names the instruction that does it on the device (the seed API), or the host copy.
_OPERATORS = {"add": ("add", "+"), "sub": ("sub", "-"), "mul": ("mul", "*"), "truediv": ("div", "/"),
              "matmul": ("matmul", "@"), "floordiv": (None, "//"), "mod": (None, "%"), "pow": (None, "**"),
              "and": ("and", "&"), "or": ("or", "|"), "xor": ("xor", "^"), "lshift": ("shl", "<<"),
              "rshift": ("shr", ">>"), "neg": ("neg", "-"), "abs": ("abs", "abs"), "pos": (None, "+"),
              "invert": ("not", "~")}
_UNARY = ("neg", "abs", "pos", "invert")


def _operator(name: str, seed: str | None, symbol: str, unary: bool):
    host = ("abs(a.numpy())" if symbol == "abs" else f"{symbol}a.numpy()") if unary else \
        f"a.numpy() {symbol} b.numpy()"

    def op(self: Tensor, *other: Any):
        how = (f'run it on the device with pypto.load_insn("{seed}") (or a kernel), or ' if seed else "") + \
            f"compute on host copies: {host}"
        raise self._host_only(f"the operator {symbol} on", how)
    op.__name__ = f"__{name}__"
    return op


for _name, (_seed, _symbol) in _OPERATORS.items():
    setattr(Tensor, f"__{_name}__", _operator(_name, _seed, _symbol, _name in _UNARY))
    if _name not in _UNARY:
        for _side in ("r", "i"):
            setattr(Tensor, f"__{_side}{_name}__", _operator(_side + _name, _seed, _symbol, False))


def empty(shape: int | Sequence[int], dtype: Any = D.float32) -> Tensor:
    """Uninitialised device tensor (the simulator fills it with its poison byte).
    shape: an int or a sequence of ints (Python or numpy integers, each >= 0)."""
    t = Tensor._empty(shape, dtype, context="pypto.empty")
    be = t._session.backend
    if hasattr(be, "fill_uninit"):
        be.fill_uninit(t._buf)
    return t


def zeros(shape: int | Sequence[int], dtype: Any = D.float32) -> Tensor:
    """Device tensor of zeros (written from the host: one counted H2D copy).
    shape: an int or a sequence of ints (Python or numpy integers, each >= 0)."""
    t = Tensor._empty(shape, dtype, context="pypto.zeros")
    t._session.backend.copy_in(t._buf, np.zeros(t.size, t.dtype.np))
    return t


def from_numpy(arr: np.ndarray) -> Tensor:
    """Device copy of a numpy array, keeping its dtype."""
    return Tensor(_as_array(arr, "pypto.from_numpy", "pass a numpy array of a PTO element type"))
