"""@pypto.kernel: a Python function over GM tensors and scalars, traced to IR (compiled mode) or
run directly by the simulator (eager mode). ``kern[block_dim](*args)`` launches it."""
from __future__ import annotations

import functools
import inspect
import os
from typing import Any, Callable

from ..errors import HostMemoryError, KernelError, PtoError, TraceError
from ..ir.nodes import Kernel, ScalarParam, TensorParam, Var
from ..ir.printer import print_kernel
from .builder import activate
from .tile import GmTensor
from .trace import TraceBuilder

_MODES = ("compiled", "eager")


class KernelFunction:
    """A kernel. Specialises on argument dtypes and shapes (unless dynamic_shapes=True)."""

    def __init__(self, fn: Callable, mode: str | None = None, dynamic_shapes: bool = False):
        if mode is not None and mode not in _MODES:
            raise KernelError(f"@pypto.kernel(mode={mode!r}) unknown", rule=f"mode is one of {_MODES}")
        self.fn = fn
        self.mode = mode
        self.dynamic_shapes = dynamic_shapes
        self.name = fn.__name__
        self._params = list(inspect.signature(fn).parameters)
        self._traces: dict[Any, Kernel] = {}
        functools.update_wrapper(self, fn)

    # -- launching ---------------------------------------------------------------------------
    def __getitem__(self, block_dim: int) -> Callable[..., None]:
        if isinstance(block_dim, bool) or not isinstance(block_dim, int) or block_dim < 1:
            raise KernelError(f"{self.name}[{block_dim!r}]: block_dim must be a positive int",
                              rule="kern[block_dim](*args) runs block_dim copies of the kernel")
        return functools.partial(self._launch, block_dim)

    def __call__(self, *args: Any) -> None:
        self._launch(1, *args)

    def _launch(self, block_dim: int, *args: Any) -> None:
        from .. import runtime
        sess = runtime.current()
        backend = sess.backend
        specs = self.signature(args)
        mode = self.mode or backend.default_mode()
        if mode == "eager":
            backend.run_eager(self, specs, args, block_dim)
            return
        k = self.trace_for(specs, backend)
        backend.run_compiled(k, args, block_dim)

    # -- tracing -------------------------------------------------------------------------------
    def signature(self, args: tuple) -> tuple:
        from ..tensor import Tensor
        if len(args) != len(self._params):
            raise KernelError(f"{self.name} takes {len(self._params)} arguments "
                              f"({', '.join(self._params)}), got {len(args)}")
        spec = []
        for name, a in zip(self._params, args):
            if isinstance(a, Tensor):
                a._check_live(f"kernel {self.name} argument {name}")
                shape = (len(a.shape),) if self.dynamic_shapes else tuple(a.shape)
                spec.append(("T", a.dtype.name, shape))
            elif isinstance(a, bool):
                raise KernelError(f"{self.name} argument {name}: bool is not a kernel scalar",
                                  fix="pass an int")
            elif isinstance(a, int):
                if not -(1 << 63) <= a < (1 << 63):
                    raise KernelError(f"{self.name} argument {name} = {a} does not fit a 64-bit "
                                      "kernel scalar", rule="kernel int scalars are int64",
                                      fix="pass a value in -2**63 .. 2**63-1")
                spec.append(("S", "i64"))
            elif isinstance(a, float):
                spec.append(("S", "f64"))
            elif hasattr(a, "__array__"):
                raise HostMemoryError(
                    f"{self.name} argument {name} is a host (numpy) array",
                    rule="kernels read and write device (GM) memory only; host and device memory "
                         "are separate",
                    fix=f"copy it to the device first: {name} = pypto.Tensor(arr) (and read results "
                        "back with .numpy())")
            else:
                raise KernelError(f"{self.name} argument {name}: {type(a).__name__} is not a "
                                  "pypto.Tensor, int or float")
        return tuple(spec)

    def make_params(self, specs: tuple, args: tuple | None = None) -> list:
        """IR parameters for a signature. With args (eager), shapes are the real ints."""
        from .. import dtypes as D
        params: list = []
        for i, (name, s) in enumerate(zip(self._params, specs)):
            if s[0] == "T":
                if args is not None:
                    shape = tuple(args[i].shape)
                elif self.dynamic_shapes:
                    shape = tuple(Var(f"{name}_d{k}", "shape") for k in range(s[2][0]))
                else:
                    shape = s[2]
                params.append(TensorParam(name, i, D.as_dtype(s[1]), shape))
            else:
                params.append(ScalarParam(name, i, Var(name, "scalar", s[1])))
        return params

    def trace_for(self, specs: tuple, backend) -> Kernel:
        key = (specs, backend.soc.name, backend.name)
        k = self._traces.get(key)
        if k is None:
            k = self._trace(specs, backend.soc, backend.supports)
            self._traces[key] = k
        return k

    def run_body(self, builder, args: list) -> None:
        """Run the Python body with ``builder`` receiving its instructions (trace or eager)."""
        with activate(builder):
            ret = self.fn(*args)
        if ret is not None:
            raise TraceError(f"kernel {self.name} returned {ret!r}",
                             rule="kernels return nothing; results go to GM with TSTORE")

    def _trace(self, specs: tuple, soc, supports) -> Kernel:
        from ..ir.verify import verify
        params = self.make_params(specs)
        b = TraceBuilder(soc, supports)
        self.run_body(b, [GmTensor(p) if isinstance(p, TensorParam) else p.var for p in params])
        k = Kernel(self.name, params, b.tiles, b.body, soc.name,
                   source=f"{os.path.basename(inspect.getsourcefile(self.fn) or '?')}:{self.fn.__qualname__}")
        verify(k, soc)
        return k

    def ir(self, *args: Any) -> str:
        """The kernel as readable PTO-style text, traced for these arguments."""
        from .. import runtime
        backend = runtime.current().backend
        return print_kernel(self.trace_for(self.signature(args), backend))

    def __repr__(self) -> str:
        return f"<pypto.kernel {self.name}{'(dynamic shapes)' if self.dynamic_shapes else ''}>"


def kernel(fn: Callable | None = None, *, mode: str | None = None, dynamic_shapes: bool = False):
    """Decorate a PTO kernel. ``mode``: "compiled" (default) or "eager"; ``dynamic_shapes``:
    tensor shapes become runtime values so one compilation serves every shape."""
    if fn is None:
        return lambda f: KernelFunction(f, mode, dynamic_shapes)
    return KernelFunction(fn, mode, dynamic_shapes)


__all__ = ["kernel", "KernelFunction", "PtoError"]
