"""The small CANN runtime surface the npu backend needs (``Runtime``), and ``AclRuntime``: that
surface over pyACL (``import acl``) or any object of the same shape (e.g. ``HostAcl``).

Every runtime return code goes through ``AclRuntime._check``, which raises the pypto error class
from ``acl_codes`` naming the API, code, symbol, context and the runtime's own message. Arguments are
validated in Python first, so a bad call never reaches the runtime.
"""
from __future__ import annotations

import importlib
import os
import sys
import threading
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ...errors import AclDeviceError, AclInitError, AclMemoryError, AclParamError, NpuUnavailableError
from . import acl_codes as codes


@runtime_checkable
class Runtime(Protocol):
    """What the npu backend asks of a device runtime. Pointers and stream handles are ints."""

    def init(self) -> None: ...
    def finalize(self) -> None: ...
    def device_count(self) -> int: ...
    def set_device(self, device: int) -> None: ...
    def reset_device(self, device: int) -> None: ...
    def soc_name(self) -> str: ...
    def malloc(self, nbytes: int) -> int: ...
    def free(self, ptr: int) -> None: ...
    def copy_h2d(self, dst: int, src: np.ndarray) -> None: ...
    def copy_d2h(self, dst: np.ndarray, src: int) -> None: ...
    def create_stream(self) -> int: ...
    def synchronize(self, stream: int) -> None: ...
    def destroy_stream(self, stream: int) -> None: ...
    def last_error(self) -> str: ...
    def version(self) -> str: ...


def _pyacl_missing(exc: BaseException) -> NpuUnavailableError:
    home = (os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME")
            or "<CANN>")
    return NpuUnavailableError(
        f"pyACL (`import acl`) is not importable from Python {sys.version.split()[0]} "
        f"({sys.executable}): {exc}",
        rule="the npu backend drives the device through CANN's pyACL module",
        fix=("get pyACL from the CANN toolkit: `source <CANN>/set_env.sh` (e.g. "
             "/usr/local/Ascend/ascend-toolkit/latest/set_env.sh or /usr/local/Ascend/cann/set_env.sh), "
             f"or add {home}/python/site-packages to PYTHONPATH; pyACL is built per Python version, "
             "so use a Python version your CANN release supports"))


def _param_error(api: str, message: str, fix: str) -> AclParamError:
    """An invalid argument caught in Python, before any runtime call."""
    return AclParamError(
        f"{codes.c_name(api)} ({api}) not called: {message}",
        api=codes.c_name(api), code=codes.ACL_ERROR_INVALID_PARAM, symbol="ACL_ERROR_INVALID_PARAM",
        runtime_message="", rule="arguments are checked in Python before they reach the CANN runtime",
        fix=fix)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _host_array(api: str, arr: Any, name: str, *, writable: bool) -> np.ndarray:
    fix = f"pass {name} as np.ascontiguousarray(x).view(np.uint8).reshape(-1)"
    if not isinstance(arr, np.ndarray):
        raise _param_error(api, f"{name} is a {type(arr).__name__}, not a numpy array", fix)
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise _param_error(api, f"{name} has dtype {arr.dtype} and {arr.ndim} dimension(s); "
                                "a 1-D uint8 array is required", fix)
    if not arr.flags.c_contiguous:
        raise _param_error(api, f"{name} is not C-contiguous", fix)
    if writable and not arr.flags.writeable:
        raise _param_error(api, f"{name} is read-only; the copy writes into it",
                           "pass a writable array (np.empty(n, np.uint8))")
    return arr


def _pointer(api: str, ptr: Any, name: str) -> int:
    if not _is_int(ptr) or int(ptr) <= 0:
        raise _param_error(api, f"{name} {ptr!r} is not a device pointer (a positive int)",
                           "pass the int returned by malloc")
    return int(ptr)


def _device_id(api: str, device: Any) -> int:
    if not _is_int(device) or int(device) < 0:
        raise _param_error(api, f"device {device!r} is not a device id (an int >= 0)",
                           "pass an int between 0 and device_count() - 1")
    return int(device)


class AclRuntime:
    """``Runtime`` over a pyACL-shaped module ``acl``. Thread-safe; the device set on one thread is
    set again (``acl.rt.set_device``) the first time another thread issues work, since CANN's
    current device is per thread."""

    def __init__(self, acl: Any):
        self._acl = acl
        self._lock = threading.RLock()
        self._initialised = False       # init() succeeded (or found ACL already initialised)
        self._owns_init = False         # init() itself initialised ACL, so finalize() must undo it
        self._device: int | None = None  # the device chosen by the last set_device, process wide
        self._generation = 0            # bumped by reset_device: threads' records become stale
        self._tls = threading.local()

    @classmethod
    def from_pyacl(cls) -> "AclRuntime":
        """The runtime over CANN's pyACL; NpuUnavailableError saying how to get it if missing."""
        try:
            acl = importlib.import_module("acl")
        except (ImportError, OSError) as exc:
            raise _pyacl_missing(exc) from exc
        return cls(acl)

    # -- error checking ------------------------------------------------------------------------
    def _check(self, ret: Any, api: str, **context: Any) -> None:
        """Raise the pypto error for a non-zero ACL return code ``ret`` of pyACL function ``api``."""
        if ret == codes.ACL_SUCCESS:
            return
        row = codes.lookup(int(ret))
        if "device" not in context and self._device is not None:
            context["device"] = self._device
        ctx = ", ".join(f"{k}={hex(v) if k in ('pointer', 'dst', 'src', 'stream') and _is_int(v) else v}"
                        for k, v in context.items())
        runtime_message = self.last_error()
        cname = codes.c_name(api)
        message = (f"{cname} ({api}) failed with {row.code} {row.symbol}: {row.meaning}"
                   + (f" [{ctx}]" if ctx else "")
                   + (f"\n  runtime says: {runtime_message}" if runtime_message else ""))
        raise row.error(message, api=cname, code=row.code, symbol=row.symbol,
                        runtime_message=runtime_message,
                        rule=f"{cname} must return ACL_SUCCESS (0); {row.symbol} ({row.code}) means "
                             f"{row.meaning}",
                        fix=row.fix)

    def _bind(self) -> None:
        """Set the chosen device on this thread if this thread has not set it yet."""
        device = self._device
        if device is None:
            return
        if getattr(self._tls, "generation", None) != self._generation or self._tls.device is None:
            self.set_device(device)

    # -- lifecycle ------------------------------------------------------------------------------
    def init(self) -> None:
        """aclInit once; 100002 (already initialised by someone else) counts as success."""
        with self._lock:
            if self._initialised:
                return
            ret = self._acl.init()
            if ret == codes.ACL_ERROR_REPEAT_INITIALIZE:
                self._owns_init = False
            else:
                self._check(ret, "acl.init")
                self._owns_init = True
            self._initialised = True

    def finalize(self) -> None:
        """aclFinalize, only if init() initialised ACL; a no-op otherwise."""
        with self._lock:
            if not self._initialised:
                return
            owns = self._owns_init
            self._initialised = False
            self._owns_init = False
            self._device = None
            self._generation += 1
            if owns:
                self._check(self._acl.finalize(), "acl.finalize")

    @property
    def initialised(self) -> bool:
        return self._initialised

    # -- devices --------------------------------------------------------------------------------
    def device_count(self) -> int:
        n, ret = self._acl.rt.get_device_count()
        if ret == codes.ACL_ERROR_RT_NO_DEVICE or (ret == codes.ACL_SUCCESS and n == 0):
            row = codes.lookup(codes.ACL_ERROR_RT_NO_DEVICE)
            runtime_message = self.last_error()
            raise AclDeviceError(
                f"no Ascend device visible: aclrtGetDeviceCount (acl.rt.get_device_count) returned "
                f"count={n}, code {ret}" + (f"\n  runtime says: {runtime_message}" if runtime_message else ""),
                api="aclrtGetDeviceCount", code=row.code, symbol=row.symbol,
                runtime_message=runtime_message,
                rule="the npu backend needs at least one visible Ascend device", fix=row.fix)
        self._check(ret, "acl.rt.get_device_count")
        return int(n)

    def set_device(self, device: int) -> None:
        """aclrtSetDevice on the calling thread (skipped if this thread already set ``device``)."""
        device = _device_id("acl.rt.set_device", device)
        tls = self._tls
        if getattr(tls, "generation", None) == self._generation and getattr(tls, "device", None) == device:
            return
        self._check(self._acl.rt.set_device(device), "acl.rt.set_device", device=device)
        with self._lock:
            tls.device, tls.generation = device, self._generation
            self._device = device

    def reset_device(self, device: int) -> None:
        """aclrtResetDevice; every thread must set the device again before issuing work."""
        device = _device_id("acl.rt.reset_device", device)
        self._check(self._acl.rt.reset_device(device), "acl.rt.reset_device", device=device)
        with self._lock:
            self._tls.device = None
            if self._device == device:
                self._device = None
            self._generation += 1

    def soc_name(self) -> str:
        name = self._acl.get_soc_name()
        if not name:
            runtime_message = self.last_error()
            raise AclInitError(
                "aclrtGetSocName (acl.get_soc_name) returned no SoC name"
                + (f"\n  runtime says: {runtime_message}" if runtime_message else ""),
                api="aclrtGetSocName", code=codes.ACL_ERROR_UNINITIALIZE, symbol="ACL_ERROR_UNINITIALIZE",
                runtime_message=runtime_message,
                rule="the SoC name is known once ACL is initialised and a device is set",
                fix="call init() and set_device() first; `npu-smi info` shows the chip name")
        return str(name)

    # -- memory ---------------------------------------------------------------------------------
    def malloc(self, nbytes: int) -> int:
        """aclrtMalloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST) -> device pointer."""
        api = "acl.rt.malloc"
        if not _is_int(nbytes) or int(nbytes) <= 0:
            raise _param_error(api, f"size {nbytes!r} is not a positive int",
                               "allocate at least one byte (skip empty tensors before allocating)")
        nbytes = int(nbytes)
        self._bind()
        ptr, ret = self._acl.rt.malloc(nbytes, codes.MEM_MALLOC_HUGE_FIRST)
        self._check(ret, api, size=nbytes)
        if not ptr:
            raise AclMemoryError(f"aclrtMalloc ({api}) returned a null pointer for size={nbytes}",
                                 api="aclrtMalloc", code=0, symbol="ACL_SUCCESS",
                                 runtime_message=self.last_error(),
                                 rule="a successful aclrtMalloc returns a non-null pointer",
                                 fix=codes.lookup(codes.ACL_ERROR_RT_MEMORY_ALLOCATION).fix)
        return int(ptr)

    def free(self, ptr: int) -> None:
        api = "acl.rt.free"
        ptr = _pointer(api, ptr, "pointer")
        self._bind()
        self._check(self._acl.rt.free(ptr), api, pointer=ptr)

    def copy_h2d(self, dst: int, src: np.ndarray) -> None:
        """Copy all of ``src`` (1-D C-contiguous uint8) to device address ``dst``; synchronous."""
        api = "acl.rt.memcpy"
        dst = _pointer(api, dst, "dst")
        src = _host_array(api, src, "src", writable=False)
        if src.nbytes == 0:
            return
        self._bind()
        ret = self._acl.rt.memcpy(dst, src.nbytes, int(src.ctypes.data), src.nbytes,
                                  codes.MEMCPY_HOST_TO_DEVICE)
        self._check(ret, api, kind="host_to_device", dst=dst, size=src.nbytes)

    def copy_d2h(self, dst: np.ndarray, src: int) -> None:
        """Fill all of ``dst`` (1-D C-contiguous writable uint8) from device address ``src``."""
        api = "acl.rt.memcpy"
        dst = _host_array(api, dst, "dst", writable=True)
        src = _pointer(api, src, "src")
        if dst.nbytes == 0:
            return
        self._bind()
        ret = self._acl.rt.memcpy(int(dst.ctypes.data), dst.nbytes, src, dst.nbytes,
                                  codes.MEMCPY_DEVICE_TO_HOST)
        self._check(ret, api, kind="device_to_host", src=src, size=dst.nbytes)

    # -- streams --------------------------------------------------------------------------------
    def create_stream(self) -> int:
        self._bind()
        stream, ret = self._acl.rt.create_stream()
        self._check(ret, "acl.rt.create_stream")
        return int(stream)

    def synchronize(self, stream: int) -> None:
        """aclrtSynchronizeStream: where kernel faults (507xxx) surface."""
        api = "acl.rt.synchronize_stream"
        if not _is_int(stream) or int(stream) < 0:
            raise _param_error(api, f"stream {stream!r} is not a stream handle (an int)",
                               "pass the int returned by create_stream")
        self._bind()
        self._check(self._acl.rt.synchronize_stream(int(stream)), api, stream=int(stream))

    def destroy_stream(self, stream: int) -> None:
        api = "acl.rt.destroy_stream"
        if not _is_int(stream) or int(stream) <= 0:
            raise _param_error(api, f"stream {stream!r} is not a stream handle (a positive int)",
                               "pass the int returned by create_stream")
        self._bind()
        self._check(self._acl.rt.destroy_stream(int(stream)), api, stream=int(stream))

    # -- diagnostics ----------------------------------------------------------------------------
    def last_error(self) -> str:
        """aclGetRecentErrMsg, or "" if there is none (never raises)."""
        try:
            message = self._acl.get_recent_err_msg()
        except Exception:  # noqa: BLE001 - diagnostics must not mask the error being reported
            return ""
        return str(message).strip() if message else ""

    def version(self) -> str:
        """The runtime version as "major.minor.patch"."""
        major, minor, patch, ret = self._acl.get_version()
        self._check(ret, "acl.get_version")
        return f"{major}.{minor}.{patch}"

    def __repr__(self) -> str:
        return (f"<AclRuntime over {getattr(self._acl, '__name__', type(self._acl).__name__)} "
                f"initialised={self._initialised} device={self._device}>")


__all__ = ["Runtime", "AclRuntime"]
