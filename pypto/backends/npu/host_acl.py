"""``HostAcl``: an in-memory stand-in with pyACL's shape (``acl.init()``, ``acl.rt.malloc(...)``, ...)
whose "device memory" is real host memory, so a kernel built for pto-isa's CPU backend can run on the
pointers it hands out. It is the device of the ``npu-cpusim`` backend and the fake runtime of tests.

It checks what the real runtime checks and answers with the code the real runtime would return
(``CODES_FOR_MISUSE`` lists them). For tests it records every call (``calls``), injects return codes
(``inject``) and reports live allocations (``live``). All methods are thread-safe.
"""
from __future__ import annotations

import bisect
import ctypes
import threading
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import acl_codes as codes

GM_ALIGN = 512  # aclrtMalloc returns addresses aligned like GM allocations
STREAM_BASE = 0x5A000  # first stream handle (non-zero: 0 is the default stream)

# Misuse -> the code HostAcl returns (the code CANN returns for the same misuse, as far as documented).
CODES_FOR_MISUSE: dict[str, int] = {
    "rt call before acl.init": codes.ACL_ERROR_UNINITIALIZE,                  # 100001
    "acl.init when already initialised": codes.ACL_ERROR_REPEAT_INITIALIZE,   # 100002
    "acl.finalize when not initialised": codes.ACL_ERROR_REPEAT_FINALIZE,     # 100037
    "get_device_count with no device": codes.ACL_ERROR_RT_NO_DEVICE,          # 207004 (or 0, see no_device_code)
    "set_device/reset_device: id out of range": codes.ACL_ERROR_RT_INVALID_DEVICEID,  # 107001
    "work on a thread that did not set_device": codes.ACL_ERROR_RT_CONTEXT_NULL,      # 107002
    "malloc: size <= 0 or unknown policy": codes.ACL_ERROR_INVALID_PARAM,     # 100000
    "malloc: over the memory budget": codes.ACL_ERROR_RT_MEMORY_ALLOCATION,   # 207001
    "free: unknown, interior or double-freed pointer": codes.ACL_ERROR_RT_PARAM_INVALID,  # 107000
    "memcpy: bad kind, null pointer or count > dest_max": codes.ACL_ERROR_INVALID_PARAM,  # 100000
    "memcpy: device range outside a live allocation": codes.ACL_ERROR_RT_PARAM_INVALID,   # 107000
    "memcpy: host pointer inside device memory (wrong kind)": codes.ACL_ERROR_RT_PARAM_INVALID,  # 107000
    "synchronize/destroy an unknown or destroyed stream": codes.ACL_ERROR_RT_INVALID_HANDLE,  # 107017
    "any argument that is not an int": codes.ACL_ERROR_INVALID_PARAM,         # 100000
}

# How many values precede ``ret`` in each API's result (an injected code returns zeros for them).
_OUTPUTS: dict[str, int] = {
    "acl.get_version": 3, "acl.rt.get_device_count": 1, "acl.rt.malloc": 1, "acl.rt.create_stream": 1,
}
_NOT_INJECTABLE = ("acl.get_soc_name", "acl.get_recent_err_msg")
_POLICIES = frozenset(range(6))  # ACL_MEM_MALLOC_HUGE_FIRST .. NORMAL_ONLY_P2P
_POLICY_FLAGS = 0x0100 | 0x1000  # ACL_MEM_TYPE_LOW/HIGH_BAND_WIDTH


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def api_name(api: str) -> str:
    """Canonical pyACL name: accepts "acl.rt.malloc", "rt.malloc", "init" or the C name "aclrtMalloc"."""
    name = codes.PY_NAMES.get(api, api)
    if not name.startswith("acl."):
        name = "acl." + name
    if name not in codes.C_NAMES:
        raise ValueError(f"unknown ACL API {api!r}; known: {', '.join(sorted(codes.C_NAMES))}")
    return name


@dataclass
class _Injection:
    code: int
    times: int
    after: int


@dataclass
class _Alloc:
    buffer: np.ndarray  # keeps the memory alive
    size: int


class _Rt:
    """``acl.rt`` of a HostAcl."""

    def __init__(self, owner: "HostAcl"):
        self._o = owner

    def get_device_count(self):
        return self._o._call("acl.rt.get_device_count", (), self._o._get_device_count)

    def set_device(self, device_id):
        return self._o._call("acl.rt.set_device", (device_id,), self._o._set_device)

    def reset_device(self, device_id):
        return self._o._call("acl.rt.reset_device", (device_id,), self._o._reset_device)

    def malloc(self, size, policy):
        return self._o._call("acl.rt.malloc", (size, policy), self._o._malloc)

    def free(self, ptr):
        return self._o._call("acl.rt.free", (ptr,), self._o._free)

    def memcpy(self, dst, dest_max, src, count, kind):
        return self._o._call("acl.rt.memcpy", (dst, dest_max, src, count, kind), self._o._memcpy)

    def create_stream(self):
        return self._o._call("acl.rt.create_stream", (), self._o._create_stream)

    def synchronize_stream(self, stream):
        return self._o._call("acl.rt.synchronize_stream", (stream,), self._o._synchronize_stream)

    def destroy_stream(self, stream):
        return self._o._call("acl.rt.destroy_stream", (stream,), self._o._destroy_stream)


class HostAcl:
    """pyACL's shape over host memory. ``device_count`` devices (0: ``get_device_count`` returns
    ``(0, no_device_code)``, 207004 by default; pass 0 for runtimes that report success),
    ``memory_bytes`` of device memory per process, SoC name ``soc``. ``initialized=True`` models a
    process where another library (torch_npu) already called aclInit."""

    def __init__(self, *, device_count: int = 1, soc: str = "Ascend910B1",
                 memory_bytes: int = 4 << 30, no_device_code: int = codes.ACL_ERROR_RT_NO_DEVICE,
                 version: tuple[int, int, int] = (8, 5, 0), initialized: bool = False):
        self.rt = _Rt(self)
        self.device_count = device_count
        self.soc = soc
        self.memory_bytes = memory_bytes
        self.no_device_code = no_device_code
        self.version = version
        self.calls: list[tuple[str, tuple]] = []
        self.recent_err_msg = ""
        self._lock = threading.RLock()
        self._initialised = initialized
        self._generation = 0           # bumped by finalize: every thread's device is unset
        self._tls = threading.local()
        self._allocs: dict[int, _Alloc] = {}
        self._starts: list[int] = []   # sorted keys of _allocs, for address lookup
        self._freed: set[int] = set()
        self._used = 0
        self._streams: set[int] = set()
        self._next_stream = STREAM_BASE
        self._injections: dict[str, list[_Injection]] = {}

    # -- test support ---------------------------------------------------------------------------
    def inject(self, api: str, code: int, times: int = 1, after: int = 0) -> None:
        """After ``after`` normal calls, the next ``times`` calls of ``api`` return ``code`` and do
        nothing (outputs such as the pointer of malloc are 0)."""
        name = api_name(api)
        if name in _NOT_INJECTABLE:
            raise ValueError(f"{name} returns no code; it cannot be injected")
        if not _is_int(code) or code == 0 or times < 1 or after < 0:
            raise ValueError("inject needs a non-zero int code, times >= 1 and after >= 0")
        with self._lock:
            self._injections.setdefault(name, []).append(_Injection(int(code), times, after))

    def live(self) -> dict[int, int]:
        """Live allocations: device pointer -> size in bytes."""
        with self._lock:
            return {ptr: a.size for ptr, a in self._allocs.items()}

    def api_calls(self, api: str) -> list[tuple]:
        """The argument tuples of every recorded call of ``api``."""
        name = api_name(api)
        with self._lock:
            return [args for n, args in self.calls if n == name]

    # -- pyACL's top-level functions ------------------------------------------------------------
    def init(self, config_path: str | None = None):
        args = () if config_path is None else (config_path,)
        return self._call("acl.init", args, self._init)

    def finalize(self):
        return self._call("acl.finalize", (), self._finalize)

    def get_version(self):
        return self._call("acl.get_version", (), lambda: (*self.version, 0))

    def get_soc_name(self):
        with self._lock:
            self.calls.append(("acl.get_soc_name", ()))
            return self.soc if self._initialised else None

    def get_recent_err_msg(self):
        with self._lock:
            self.calls.append(("acl.get_recent_err_msg", ()))
            return self.recent_err_msg

    # -- dispatch -------------------------------------------------------------------------------
    def _call(self, api: str, args: tuple, impl: Callable[..., Any]):
        with self._lock:
            self.calls.append((api, args))
            code = self._injected(api)
            if code is not None:
                self._fail(code, f"injected on {api}")
                return self._shape(api, code)
            return impl(*args)

    def _injected(self, api: str) -> int | None:
        queue = self._injections.get(api)
        if not queue:
            return None
        head = queue[0]
        if head.after > 0:
            head.after -= 1
            return None
        head.times -= 1
        if head.times == 0:
            queue.pop(0)
        return head.code

    @staticmethod
    def _shape(api: str, code: int):
        outputs = _OUTPUTS.get(api, 0)
        return (*([0] * outputs), code) if outputs else code

    def _fail(self, code: int, detail: str) -> int:
        """Record the runtime's message for a failing call and return ``code``."""
        row = codes.lookup(code)
        self.recent_err_msg = f"{row.symbol}({code}): {detail} [HostAcl]"
        return code

    def _require(self, device: bool) -> int:
        """0, or the code for calling before init (100001) or without a device on this thread (107002)."""
        if not self._initialised:
            return self._fail(codes.ACL_ERROR_UNINITIALIZE, "acl.init has not been called")
        if device and self._current_device() is None:
            return self._fail(codes.ACL_ERROR_RT_CONTEXT_NULL,
                              f"no device set on thread {threading.current_thread().name}")
        return 0

    def _current_device(self) -> int | None:
        if getattr(self._tls, "generation", None) != self._generation:
            return None
        return getattr(self._tls, "device", None)

    # -- lifecycle and devices ------------------------------------------------------------------
    def _init(self, config_path: str | None = None) -> int:
        if self._initialised:
            return self._fail(codes.ACL_ERROR_REPEAT_INITIALIZE, "acl.init called twice")
        self._initialised = True
        return 0

    def _finalize(self) -> int:
        """Unsets every thread's device and destroys streams; allocations stay so ``live()`` still
        reports what was never freed."""
        if not self._initialised:
            return self._fail(codes.ACL_ERROR_REPEAT_FINALIZE, "acl.finalize without acl.init")
        self._initialised = False
        self._generation += 1
        self._streams.clear()
        return 0

    def _get_device_count(self):
        code = self._require(device=False)
        if code:
            return 0, code
        if self.device_count == 0:
            if self.no_device_code:
                return 0, self._fail(self.no_device_code, "no device found")
            return 0, 0
        return self.device_count, 0

    def _valid_device(self, device_id) -> int:
        if not _is_int(device_id):
            return self._fail(codes.ACL_ERROR_INVALID_PARAM, f"device id {device_id!r} is not an int")
        if not 0 <= device_id < self.device_count:
            return self._fail(codes.ACL_ERROR_RT_INVALID_DEVICEID,
                              f"device id {device_id} not in [0, {self.device_count})")
        return 0

    def _set_device(self, device_id) -> int:
        code = self._require(device=False) or self._valid_device(device_id)
        if code:
            return code
        self._tls.device, self._tls.generation = int(device_id), self._generation
        return 0

    def _reset_device(self, device_id) -> int:
        code = self._require(device=False) or self._valid_device(device_id)
        if code:
            return code
        if self._current_device() == device_id:
            self._tls.device = None
        return 0

    # -- memory ---------------------------------------------------------------------------------
    def _malloc(self, size, policy):
        code = self._require(device=True)
        if code:
            return 0, code
        if not _is_int(size) or size <= 0:
            return 0, self._fail(codes.ACL_ERROR_INVALID_PARAM, f"malloc size {size!r} is not a positive int")
        if not _is_int(policy) or (policy & ~_POLICY_FLAGS) not in _POLICIES:
            return 0, self._fail(codes.ACL_ERROR_INVALID_PARAM, f"malloc policy {policy!r} is unknown")
        size = int(size)
        if self._used + size > self.memory_bytes:
            return 0, self._fail(codes.ACL_ERROR_RT_MEMORY_ALLOCATION,
                                 f"out of memory: {size} bytes requested, "
                                 f"{self.memory_bytes - self._used} of {self.memory_bytes} free")
        try:
            buffer = np.empty(size + GM_ALIGN - 1, dtype=np.uint8)
        except MemoryError:
            return 0, self._fail(codes.ACL_ERROR_RT_MEMORY_ALLOCATION, f"host allocation of {size} bytes failed")
        base = buffer.ctypes.data
        ptr = base + (-base) % GM_ALIGN
        self._allocs[ptr] = _Alloc(buffer, size)
        bisect.insort(self._starts, ptr)
        self._freed.discard(ptr)
        self._used += size
        return ptr, 0

    def _free(self, ptr) -> int:
        code = self._require(device=True)
        if code:
            return code
        if not _is_int(ptr):
            return self._fail(codes.ACL_ERROR_INVALID_PARAM, f"free pointer {ptr!r} is not an int")
        alloc = self._allocs.pop(int(ptr), None)
        if alloc is None:
            what = "double free of" if ptr in self._freed else "free of unknown or interior pointer"
            return self._fail(codes.ACL_ERROR_RT_PARAM_INVALID, f"{what} {int(ptr):#x}")
        self._starts.remove(int(ptr))
        self._freed.add(int(ptr))
        self._used -= alloc.size
        return 0

    def _owner(self, addr: int) -> int | None:
        """Start of the live allocation containing ``addr``, if any."""
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0:
            start = self._starts[i]
            if addr < start + self._allocs[start].size:
                return start
        return None

    def _overlaps_device(self, addr: int, count: int) -> bool:
        i = bisect.bisect_left(self._starts, addr + count)
        return self._owner(addr) is not None or (i > 0 and self._starts[i - 1] >= addr)

    def _device_range(self, addr: int, count: int, side: str) -> int:
        start = self._owner(addr)
        if start is None:
            return self._fail(codes.ACL_ERROR_RT_PARAM_INVALID,
                              f"memcpy {side} {addr:#x} is not inside a live device allocation")
        end = start + self._allocs[start].size
        if addr + count > end:
            return self._fail(codes.ACL_ERROR_RT_PARAM_INVALID,
                              f"memcpy {side} range [{addr:#x}, {addr + count:#x}) runs {addr + count - end} "
                              f"bytes past its allocation ({start:#x}, {end - start} bytes)")
        return 0

    def _host_range(self, addr: int, count: int, side: str) -> int:
        if self._overlaps_device(addr, count):
            return self._fail(codes.ACL_ERROR_RT_PARAM_INVALID,
                              f"memcpy {side} {addr:#x} is device memory but the kind says host")
        return 0

    def _memcpy(self, dst, dest_max, src, count, kind) -> int:
        if not all(_is_int(v) and v >= 0 for v in (dst, dest_max, src, count, kind)):
            return self._fail(codes.ACL_ERROR_INVALID_PARAM,
                              f"memcpy arguments must be non-negative ints: {(dst, dest_max, src, count, kind)!r}")
        dst, dest_max, src, count, kind = (int(v) for v in (dst, dest_max, src, count, kind))
        if kind > codes.MEMCPY_DEFAULT:
            return self._fail(codes.ACL_ERROR_INVALID_PARAM, f"memcpy kind {kind} is unknown")
        if count > dest_max:
            return self._fail(codes.ACL_ERROR_INVALID_PARAM, f"memcpy count {count} > dest_max {dest_max}")
        code = self._require(device=kind != codes.MEMCPY_HOST_TO_HOST)
        if code:
            return code
        if count == 0:
            return 0
        if not dst or not src:
            return self._fail(codes.ACL_ERROR_INVALID_PARAM, "memcpy with a null pointer")
        if kind == codes.MEMCPY_DEFAULT:
            dst_dev, src_dev = self._owner(dst) is not None, self._owner(src) is not None
        else:
            dst_dev = kind in (codes.MEMCPY_HOST_TO_DEVICE, codes.MEMCPY_DEVICE_TO_DEVICE)
            src_dev = kind in (codes.MEMCPY_DEVICE_TO_HOST, codes.MEMCPY_DEVICE_TO_DEVICE)
        code = ((self._device_range if dst_dev else self._host_range)(dst, count, "dst")
                or (self._device_range if src_dev else self._host_range)(src, count, "src"))
        if code:
            return code
        ctypes.memmove(dst, src, count)
        return 0

    # -- streams --------------------------------------------------------------------------------
    def _create_stream(self):
        code = self._require(device=True)
        if code:
            return 0, code
        stream = self._next_stream
        self._next_stream += 1
        self._streams.add(stream)
        return stream, 0

    def _synchronize_stream(self, stream) -> int:
        code = self._require(device=True)
        if code:
            return code
        if stream != 0 and stream not in self._streams:  # 0 is the default stream
            return self._fail(codes.ACL_ERROR_RT_INVALID_HANDLE, f"stream {stream!r} does not exist")
        return 0

    def _destroy_stream(self, stream) -> int:
        code = self._require(device=True)
        if code:
            return code
        if stream not in self._streams:
            return self._fail(codes.ACL_ERROR_RT_INVALID_HANDLE,
                              f"stream {stream!r} does not exist or was destroyed")
        self._streams.discard(stream)
        return 0

    def __repr__(self) -> str:
        return (f"<HostAcl soc={self.soc} devices={self.device_count} initialised={self._initialised} "
                f"live={len(self._allocs)}>")


__all__ = ["HostAcl", "CODES_FOR_MISUSE", "GM_ALIGN", "api_name"]
