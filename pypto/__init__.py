"""pypto: Python for Ascend's PTO (Parallel Tile Operation) virtual ISA.

Write PTO programs in Python, run them on a numba CPU simulator that models the NPU (on-chip
spaces, tiles, dtype rules, host/device copies, pipes and flags), or on an Ascend NPU.
"""
from __future__ import annotations

from . import errors
from . import dtypes
from .dtypes import (DType, bfloat16, float4_e1m2x2, float4_e2m1x2, float8_e4m3, float8_e5m2,
                     float8_e8m0, float16, float32, hifloat8, int8, int16, int32, int64, uint8, uint16, uint32,
                     uint64, quant_scale)
from .errors import PtoError
from .runtime import (Session, barrier, finalize, get_device_count, init, is_initialized, rank,
                      reset_stats, set_device, stats)
from .ranks import launch_ranks
from .tensor import Tensor, empty, from_numpy, zeros
from .insn import Insn, list_insns, load_insn
from .idl.custom import load_custom_insn
from .backends.sim.options import SimOptions
from .lang import pto
from .lang.kernel import check, kernel
from .timing import Timeline, timeline

__version__ = "0.1.0"


from . import units as _units  # noqa: E402  (imports no unit module: they load on first use)
from .ir import registry as _registry  # noqa: E402
_registry.add_loader(_units.load_all)
_registry.add_finder(_units.find)

__all__ = [
    "init", "finalize", "is_initialized", "get_device_count", "set_device", "stats", "reset_stats",
    "rank", "barrier", "launch_ranks",
    "Session", "Tensor", "empty", "zeros", "from_numpy", "load_insn", "list_insns",
    "load_custom_insn", "Insn", "kernel", "check", "pto", "SimOptions", "PtoError", "errors", "DType",
    "float16", "bfloat16", "float32", "int8", "uint8", "int16", "uint16", "int32", "uint32",
    "int64", "uint64", "float8_e4m3", "float8_e5m2", "hifloat8", "float8_e8m0", "float4_e2m1x2", "float4_e1m2x2", "dtypes",
    "quant_scale", "timeline", "Timeline",
]

from .calls import guard_class as _guard_class, guard_namespace as _guard_namespace  # noqa: E402
from .lang.kernel import KernelFunction as _KernelFunction  # noqa: E402
from .idl.custom import CustomInsn as _CustomInsn  # noqa: E402
for _cls in (Tensor, Insn, _CustomInsn, SimOptions, Session, Timeline, _KernelFunction):
    _guard_class(_cls)
_guard_namespace(globals(), __all__)
del _cls
