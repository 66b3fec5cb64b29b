"""ACL return codes as data: code -> symbol, pypto error class, meaning and fix, plus the pyACL ->
C API name table. One place to read what a CANN runtime code means; nothing here touches CANN.

Codes from CANN's ``acl_base_rt.h`` (general ACL codes) and ``rt_error_codes.h`` (runtime codes).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import (AclDeviceError, AclError, AclInitError, AclMemoryError, AclParamError,
                       AclUnsupportedError, KernelFaultError)


@dataclass(frozen=True)
class AclCode:
    """What one ACL return code means and what the user can do about it."""

    code: int
    symbol: str
    error: type[AclError]
    meaning: str
    fix: str


# Names used by the runtime wrapper and the in-memory stand-in.
ACL_SUCCESS = 0
ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_UNINITIALIZE = 100001
ACL_ERROR_REPEAT_INITIALIZE = 100002
ACL_ERROR_REPEAT_FINALIZE = 100037
ACL_ERROR_RT_PARAM_INVALID = 107000
ACL_ERROR_RT_INVALID_DEVICEID = 107001
ACL_ERROR_RT_CONTEXT_NULL = 107002
ACL_ERROR_RT_INVALID_HANDLE = 107017
ACL_ERROR_RT_MEMORY_ALLOCATION = 207001
ACL_ERROR_RT_NO_DEVICE = 207004

KERNEL_FAULT_FIX = ("rerun with ASCEND_SLOG_PRINT_TO_STDOUT=1 ASCEND_GLOBAL_LOG_LEVEL=1 and check the "
                    "kernel on the simulator (pypto.init(backend='sim'))")
_SUPPORT = ("rerun with ASCEND_SLOG_PRINT_TO_STDOUT=1 ASCEND_GLOBAL_LOG_LEVEL=1 for the runtime's log; "
            "`npu-smi info` shows the device state")
_PARAM = ("check the pointer, size or handle named above; if pypto itself made the call, report it as a "
          "pypto bug with the runtime message")

# code: (symbol, error class, one-line meaning, fix)
_TABLE: dict[int, tuple[str, type[AclError], str, str]] = {
    0: ("ACL_SUCCESS", AclError, "success", "nothing to fix"),
    # -- general ACL codes (acl_base_rt.h) --
    100000: ("ACL_ERROR_INVALID_PARAM", AclParamError, "an argument of the ACL call is invalid", _PARAM),
    100001: ("ACL_ERROR_UNINITIALIZE", AclInitError, "ACL is not initialised (aclInit was not called)",
             "call pypto.init(backend='npu') before using the device, and do not finalize while tensors "
             "are in use"),
    100002: ("ACL_ERROR_REPEAT_INITIALIZE", AclInitError,
             "ACL is already initialised in this process (e.g. by torch_npu)",
             "nothing to fix: pypto treats this as success"),
    100003: ("ACL_ERROR_INVALID_FILE", AclInitError, "the ACL configuration file is invalid",
             "check the JSON file passed to aclInit, or pass none"),
    100037: ("ACL_ERROR_REPEAT_FINALIZE", AclInitError, "ACL was already finalized",
             "finalize once, at process exit"),
    200000: ("ACL_ERROR_BAD_ALLOC", AclMemoryError, "ACL could not allocate host memory",
             "free host memory or reduce the problem size"),
    200006: ("ACL_ERROR_FEATURE_UNSUPPORTED", AclUnsupportedError,
             "the feature is not supported by this CANN version or SoC",
             "upgrade CANN (8.5 or later) or use a SoC that supports it"),
    500001: ("ACL_ERROR_FAILURE", AclError, "ACL failed for an internal reason", _SUPPORT),
    # -- runtime codes (rt_error_codes.h) --
    107000: ("ACL_ERROR_RT_PARAM_INVALID", AclParamError,
             "a runtime argument is invalid (pointer, size or handle)", _PARAM),
    107001: ("ACL_ERROR_RT_INVALID_DEVICEID", AclDeviceError, "the device id does not exist",
             "pick a device id below the device count (`npu-smi info` lists them; "
             "ASCEND_RT_VISIBLE_DEVICES renumbers them)"),
    107002: ("ACL_ERROR_RT_CONTEXT_NULL", AclDeviceError,
             "no device is set on the calling thread (aclrtSetDevice is per thread)",
             "call set_device on every thread that issues work"),
    107008: ("ACL_ERROR_RT_ADDR_UNALIGNED", AclMemoryError, "a device address is not aligned",
             "pass device pointers as returned by aclrtMalloc (32-byte aligned offsets)"),
    107017: ("ACL_ERROR_RT_INVALID_HANDLE", AclParamError,
             "the stream or other handle is invalid or already destroyed",
             "use a stream only between create_stream and destroy_stream, on the device that made it"),
    207000: ("ACL_ERROR_RT_FEATURE_NOT_SUPPORT", AclUnsupportedError,
             "the runtime feature is not supported on this device",
             "upgrade the driver and CANN, or use a SoC that supports it"),
    207001: ("ACL_ERROR_RT_MEMORY_ALLOCATION", AclMemoryError, "device memory allocation failed (out of memory)",
             "free device tensors (del them) or reduce the problem size; `npu-smi info` shows HBM usage"),
    207002: ("ACL_ERROR_RT_MEMORY_FREE", AclMemoryError, "freeing device memory failed",
             "free each pointer once, on the device that allocated it"),
    207004: ("ACL_ERROR_RT_NO_DEVICE", AclDeviceError, "no Ascend device is visible to this process",
             "check `npu-smi info`, the driver install, ASCEND_RT_VISIBLE_DEVICES and (in Docker) that "
             "/dev/davinci* are passed through; or use pypto.init(backend='sim')"),
    207018: ("ACL_ERROR_RT_DEVIDE_OOM", AclMemoryError, "the device is out of memory",
             "free device tensors or reduce the problem size"),
    507000: ("ACL_ERROR_RT_INTERNAL_ERROR", AclError, "runtime internal error", _SUPPORT),
    507014: ("ACL_ERROR_RT_AICORE_TIMEOUT", KernelFaultError, "an AI Core kernel timed out", KERNEL_FAULT_FIX),
    507015: ("ACL_ERROR_RT_AICORE_EXCEPTION", KernelFaultError, "an AI Core kernel raised an exception",
             KERNEL_FAULT_FIX),
    507016: ("ACL_ERROR_RT_AICORE_TRAP_EXCEPTION", KernelFaultError, "an AI Core kernel trapped",
             KERNEL_FAULT_FIX),
    507034: ("ACL_ERROR_RT_VECTOR_CORE_TIMEOUT", KernelFaultError, "a vector core kernel timed out",
             KERNEL_FAULT_FIX),
    507035: ("ACL_ERROR_RT_VECTOR_CORE_EXCEPTION", KernelFaultError, "a vector core kernel raised an exception",
             KERNEL_FAULT_FIX),
    507036: ("ACL_ERROR_RT_VECTOR_CORE_TRAP_EXCEPTION", KernelFaultError, "a vector core kernel trapped",
             KERNEL_FAULT_FIX),
    507042: ("ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW", KernelFaultError,
             "an AI Core kernel read out of bounds", KERNEL_FAULT_FIX),
    507043: ("ACL_ERROR_RT_AICORE_TRAP_WRITE_OVERFLOW", KernelFaultError,
             "an AI Core kernel wrote out of bounds", KERNEL_FAULT_FIX),
    507044: ("ACL_ERROR_RT_VECTOR_CORE_TRAP_READ_OVERFLOW", KernelFaultError,
             "a vector core kernel read out of bounds", KERNEL_FAULT_FIX),
    507045: ("ACL_ERROR_RT_VECTOR_CORE_TRAP_WRITE_OVERFLOW", KernelFaultError,
             "a vector core kernel wrote out of bounds", KERNEL_FAULT_FIX),
    507046: ("ACL_ERROR_RT_STREAM_SYNC_TIMEOUT", KernelFaultError,
             "stream synchronisation timed out (a kernel did not finish)", KERNEL_FAULT_FIX),
    507899: ("ACL_ERROR_RT_DRV_INTERNAL_ERROR", AclError,
             "driver internal error (often follows a kernel fault on the same device)",
             _SUPPORT + "; if a kernel ran before, " + KERNEL_FAULT_FIX),
}

CODES: dict[int, AclCode] = {code: AclCode(code, *row) for code, row in _TABLE.items()}

_UNKNOWN_FIX = "look the code up in CANN's acl_base_rt.h / rt_error_codes.h; " + _SUPPORT


def lookup(code: int) -> AclCode:
    """The table row for ``code``; an unknown code maps to AclError with symbol "unknown"."""
    row = CODES.get(int(code))
    if row is not None:
        return row
    return AclCode(int(code), "unknown", AclError, "a code pypto has no description for", _UNKNOWN_FIX)


# pyACL name -> C API name (the names CANN's documentation and logs use).
C_NAMES: dict[str, str] = {
    "acl.init": "aclInit",
    "acl.finalize": "aclFinalize",
    "acl.get_soc_name": "aclrtGetSocName",
    "acl.get_recent_err_msg": "aclGetRecentErrMsg",
    "acl.get_version": "aclrtGetVersion",
    "acl.rt.get_device_count": "aclrtGetDeviceCount",
    "acl.rt.set_device": "aclrtSetDevice",
    "acl.rt.reset_device": "aclrtResetDevice",
    "acl.rt.malloc": "aclrtMalloc",
    "acl.rt.free": "aclrtFree",
    "acl.rt.memcpy": "aclrtMemcpy",
    "acl.rt.create_stream": "aclrtCreateStream",
    "acl.rt.synchronize_stream": "aclrtSynchronizeStream",
    "acl.rt.destroy_stream": "aclrtDestroyStream",
}
PY_NAMES: dict[str, str] = {c: py for py, c in C_NAMES.items()}


def c_name(api: str) -> str:
    """C name of a pyACL function (``acl.rt.malloc`` -> ``aclrtMalloc``); unknown names unchanged."""
    return C_NAMES.get(api, api)


# aclrtMemcpyKind and aclrtMemMallocPolicy values used by pypto.
MEMCPY_HOST_TO_HOST = 0
MEMCPY_HOST_TO_DEVICE = 1
MEMCPY_DEVICE_TO_HOST = 2
MEMCPY_DEVICE_TO_DEVICE = 3
MEMCPY_DEFAULT = 4
MEM_MALLOC_HUGE_FIRST = 0
