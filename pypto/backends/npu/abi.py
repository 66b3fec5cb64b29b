"""The launch ABI of an emitted kernel, derived once from its IR parameters.

Both sides read this one description: the emitter writes the C++ parameter lists from it and the
launcher builds ctypes ``argtypes`` and argument values from it, so the two cannot drift apart.
Order: the kernel's parameters as declared (tensors as GM pointers, scalars as int64/double),
then every dynamic tensor dimension, tensor by tensor, dimension by dimension, then (for a kernel
that talks to other devices) the world it runs in (``pypto_world``: this rank, the rank count and
every rank's GM window base, filled by the host from HCCL's communication resources), then the
fault record the emitted guards write (``pypto_errs``: errcodes.SIZE int64 per block).
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Sequence

from ...errors import NpuLaunchError
from ...ir import effects
from ...ir.nodes import Kernel, ScalarParam, TensorParam, Var

# C++ and ctypes types of kernel scalars (pypto's kernel scalars are i64 and f64)
SCALAR_TYPES = {"i64": ("int64_t", ctypes.c_int64), "f64": ("double", ctypes.c_double)}


@dataclass(frozen=True)
class Arg:
    """One argument of ``call_kernel`` after (blockDim, stream)."""
    name: str              # C++ parameter name
    kind: str              # "tensor" | "scalar" | "dim" | "world" | "err"
    cxx: str               # C++ type at the host boundary
    ctype: Any             # ctypes type the launcher passes
    param: int             # index of the kernel parameter it comes from
    dim: int = -1          # tensor dimension (kind "dim")
    elem: str = ""         # element C++ type (kind "tensor")
    var: Any = None        # the IR Var it binds (scalars and dims)


def arguments(k: Kernel) -> list[Arg]:
    """The call_kernel arguments of kernel ``k``, in order."""
    out: list[Arg] = []
    for p in k.params:
        if isinstance(p, TensorParam):
            out.append(Arg(p.name, "tensor", "uint8_t *", ctypes.c_void_p, p.index, elem=p.dtype.cxx))
        elif isinstance(p, ScalarParam):
            cxx, ct = SCALAR_TYPES[p.var.dtype]
            out.append(Arg(p.name, "scalar", cxx, ct, p.index, var=p.var))
    for p in k.tensor_params:
        for d, n in enumerate(p.shape):
            if isinstance(n, Var):
                out.append(Arg(n.name, "dim", "int64_t", ctypes.c_int64, p.index, dim=d, var=n))
    if effects.uses_world(k):
        out.append(Arg(WORLD, "world", "uint8_t *", ctypes.c_void_p, -1, elem="PyptoWorld"))
    out.append(Arg(ERR, "err", "uint8_t *", ctypes.c_void_p, -1, elem="int64_t"))
    return out


ERR = "pypto_errs"
WORLD = "pypto_world"





def argtypes(args: Sequence[Arg]) -> list:
    """ctypes argtypes of call_kernel: blockDim, stream, then ``args``."""
    return [ctypes.c_uint32, ctypes.c_void_p] + [a.ctype for a in args]


def values(args: Sequence[Arg], k: Kernel, buffers: Sequence, scalars: Sequence, errs: int,
           world: int | None = None) -> list:
    """The ctypes values for one launch. buffers: BufferArg per tensor parameter (in order),
    scalars: one value per scalar parameter (in order), errs: device address of the fault records,
    world: device address of the PyptoWorld (kernels that talk to other devices)."""
    tensors = k.tensor_params
    if len(buffers) != len(tensors) or len(scalars) != len(k.scalar_params):
        raise NpuLaunchError(
            f"kernel {k.name} takes {len(tensors)} tensors and {len(k.scalar_params)} scalars, "
            f"got {len(buffers)} and {len(scalars)}",
            rule="a launch passes one value per kernel parameter", fix="launch with the kernel's parameters")
    by_param = {p.index: b for p, b in zip(tensors, buffers)}
    sval = {p.index: v for p, v in zip(k.scalar_params, scalars)}
    out = []
    for a in args:
        if a.kind == "tensor":
            out.append(ctypes.c_void_p(int(by_param[a.param].addr)))
        elif a.kind == "scalar":
            out.append(a.ctype(sval[a.param]))
        elif a.kind == "err":
            out.append(ctypes.c_void_p(int(errs)))
        elif a.kind == "world":
            if world is None:
                raise NpuLaunchError(
                    f"kernel {k.name} talks to other devices (communication instructions, "
                    "pto.remote or pto.rank_id)",
                    rule="on the NPU such a kernel needs HCCL's communication windows, which pypto's "
                         "NPU backend does not set up yet", fix="run it on the simulator (backend='sim')")
            out.append(ctypes.c_void_p(int(world)))
        else:
            out.append(ctypes.c_int64(int(by_param[a.param].shape[a.dim])))
    return out


__all__ = ["Arg", "arguments", "argtypes", "values"]
