"""@pypto.kernel: a Python function over GM tensors and scalars, traced to IR and compiled by the
active backend, or run directly by the simulator in eager mode. ``kern[block_dim](*args)``
launches it.

Globals: module globals and closure variables that hold numbers, strings, None or tuples of
them are read at every launch; a changed value re-traces the kernel, so compiled and eager mode
see the same values. Any other object (a list, a config object's attributes) is read when the
kernel is traced, once per signature.
"""
from __future__ import annotations

import dis
import functools
import inspect
import os
import threading
import types
import weakref
from typing import Any, Callable

import numpy as np

from .. import runtime
from ..backends.base import BufferArg
from ..errors import HostMemoryError, KernelError, TraceError
from ..ir import hazards, passes
from ..ir.nodes import Kernel, ScalarParam, TensorParam, Var
from ..ir.printer import explain_kernel, print_kernel
from ..isa.soc import MAX_BLOCK_DIM
from .builder import activate
from .semantic import py_scalar
from .tile import GmTensor
from .trace import TraceBuilder

_MODES = ("compiled", "eager")
_CHECKS = ("default", "strict", "off")
_SIMPLE = (int, float, bool, str, type(None), np.generic)


def _global_names(code: types.CodeType) -> set[str]:
    """Names the code (and the functions nested in it) reads as globals, not attributes."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names


def _simple(v: Any) -> bool:
    return isinstance(v, _SIMPLE) or (isinstance(v, tuple) and all(_simple(x) for x in v))


class KernelFunction:
    """A kernel. Specialises on argument dtypes and shapes (unless dynamic_shapes=True)."""

    def __init__(self, fn: Callable, mode: str | None = None, dynamic_shapes: bool = False,
                 checks: str | None = None):
        if mode is not None and mode not in _MODES:
            raise KernelError(f"@pypto.kernel(mode={mode!r}) unknown", rule=f"mode is one of {_MODES}",
                              fix="use mode='compiled' (default) or mode='eager'")
        if checks is not None and checks not in _CHECKS:
            raise KernelError(f"@pypto.kernel(checks={checks!r}) unknown", rule=f"checks is one of {_CHECKS}",
                              fix="use checks='off' to skip the hazard checker for this kernel")
        self.checks = checks
        sig = inspect.signature(fn)
        for p in sig.parameters.values():
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or p.default is not p.empty:
                raise KernelError(f"kernel {fn.__name__}: parameter {p} is not a plain positional "
                                  "parameter",
                                  rule="a kernel's parameters are its launch arguments, one each: "
                                       "no *args, **kwargs, keyword-only parameters or defaults",
                                  fix=f"write def {fn.__name__}(x, y, z): with one name per argument")
        self.fn = fn
        self.mode = mode
        self.dynamic_shapes = dynamic_shapes
        self.name = fn.__name__
        self._params = list(sig.parameters)
        self._gnames = sorted(_global_names(fn.__code__))
        self._watched: list[str] | None = None
        self._traces: dict[Any, Kernel] = {}
        self._ready: tuple | None = None      # the last compiled launch: its arguments and program
        self._lock = threading.RLock()
        functools.update_wrapper(self, fn)

    # -- launching ---------------------------------------------------------------------------
    def __getitem__(self, block_dim: int) -> Callable[..., None]:
        if isinstance(block_dim, np.integer):
            block_dim = int(block_dim)
        if isinstance(block_dim, bool) or not isinstance(block_dim, int) or not 1 <= block_dim <= MAX_BLOCK_DIM:
            raise KernelError(f"{self.name}[{block_dim!r}]: block_dim must be an int from 1 to "
                              f"{MAX_BLOCK_DIM}",
                              rule=f"kern[block_dim](*args) runs block_dim copies of the kernel; one "
                                   f"launch starts at most {MAX_BLOCK_DIM} blocks (the runtime's limit)",
                              fix=f"launch with {self.name}[1](...) or more blocks, and loop inside "
                                  "the kernel (pto.range) for more work per block")
        return functools.partial(self._launch, block_dim)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self._launch(1, *args, **kwargs)

    def _launch(self, block_dim: int, *args: Any, **kwargs: Any) -> None:
        if kwargs:
            raise KernelError(f"{self.name}: keyword arguments {sorted(kwargs)} at launch",
                              rule="kernels are launched with positional arguments, in parameter order",
                              fix=f"call {self.name}[blocks]({', '.join(self._params)})")
        backend = runtime.current().backend
        args = tuple(py_scalar(a) for a in args)
        hook = runtime.launch_hook
        if hook is not None:
            runtime.launch_hook = None            # the launch inside the hook is not hooked again
            try:
                return hook(self, block_dim, args, lambda: self._launch(block_dim, *args))
            finally:
                runtime.launch_hook = hook
        again = self.ready_launch(block_dim, args, backend)
        if again is not None:
            again()                                                     # as checked last time
            return
        specs = self.signature(args)
        tensors = [a for a, s in zip(args, specs) if s[0] == "T"]
        buffers = [BufferArg(t._buf.addr, tuple(t.shape), t.dtype) for t in tensors]
        scalars = [a for a, s in zip(args, specs) if s[0] == "S"]
        mode = self.mode or backend.default_mode()
        if mode == "eager":
            run_eager = getattr(backend, "run_eager", None)
            if run_eager is None:
                raise KernelError(f"{self.name}: eager mode on the {backend.name} backend",
                                  rule="eager mode is an option of the simulator",
                                  fix="run eager kernels with pypto.init(backend='sim')")
            params = self.make_params(specs, args)
            body = functools.partial(self._run_eager_body, params)
            run_eager(self.name, params, body, buffers, block_dim, scalars)
            return
        k = self.trace_for(specs, backend.soc)
        hazards.enforce(k, backend.soc, self._checks(backend))
        program = backend.compile(k)
        backend.launch(program, buffers, block_dim, scalars)
        self._ready = (backend, block_dim, _remember(args), self.captured(),
                       backend.prepare(program, buffers, block_dim, scalars))

    def ready_launch(self, block_dim: int, args: tuple, backend=None) -> Callable[[], None] | None:
        """The last launch, prepared to repeat, if it ran on this backend with these blocks,
        arguments and captured values (Insn.execute keeps it while its operands stay); else None."""
        ready = self._ready
        if ready is not None and ready[0] is (backend or runtime.current().backend) and \
                ready[1] == block_dim and _same_args(ready[2], args) and ready[3] == self.captured():
            return ready[4]
        return None

    def _checks(self, backend) -> str:
        return self.checks or getattr(getattr(backend, "options", None), "checks", "default")

    def _run_eager_body(self, params: list, executor) -> None:
        if self.checks is not None:
            executor.set_checks(self.checks)
        self.run_body(executor, [GmTensor(p) if isinstance(p, TensorParam) else p.var for p in params])

    # -- tracing -------------------------------------------------------------------------------
    def signature(self, args: tuple) -> tuple:
        from ..tensor import Tensor
        if len(args) != len(self._params):
            raise KernelError(f"{self.name} takes {len(self._params)} arguments "
                              f"({', '.join(self._params)}), got {len(args)}",
                              rule="a kernel is launched with one argument per parameter",
                              fix=f"call {self.name}[blocks]({', '.join(self._params)})")
        spec = []
        for name, a in zip(self._params, args):
            if isinstance(a, Tensor):
                a._check_live(f"kernel {self.name} argument {name}")
                shape = (len(a.shape),) if self.dynamic_shapes else tuple(a.shape)
                spec.append(("T", a.dtype.name, shape))
            elif isinstance(a, (bool, np.bool_)):
                raise KernelError(f"{self.name} argument {name}: bool is not a kernel scalar",
                                  rule="kernel scalars are ints (int64) and floats (f64)",
                                  fix="pass an int")
            elif isinstance(a, int):
                if not -(1 << 63) <= a < (1 << 63):
                    raise KernelError(f"{self.name} argument {name} = {a} does not fit a 64-bit "
                                      "kernel scalar", rule="kernel int scalars are int64",
                                      fix="pass a value in -2**63 .. 2**63-1")
                spec.append(("S", "i64"))
            elif isinstance(a, float):
                spec.append(("S", "f64"))
            elif isinstance(a, np.ndarray) or hasattr(a, "__array_interface__"):
                raise HostMemoryError(
                    f"{self.name} argument {name} is a host (numpy) array",
                    rule="kernels read and write device (GM) memory only; host and device memory "
                         "are separate",
                    fix=f"copy it to the device first: {name} = pypto.Tensor(arr) (and read results "
                        "back with .numpy())")
            else:
                raise KernelError(f"{self.name} argument {name}: {type(a).__name__} is not a "
                                  "pypto.Tensor, int or float",
                                  rule="kernel arguments are device tensors (GM) and scalars",
                                  fix="pass a pypto.Tensor for data and Python/numpy numbers for scalars")
        return tuple(spec)

    def make_params(self, specs: tuple, args: tuple | None = None) -> list:
        """IR parameters for a signature. With args (eager), shapes are the real ints and scalars
        their runtime values."""
        from .. import dtypes as D
        from ..ir.nodes import RtFloat, RtInt
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
                p = ScalarParam(name, i, Var(name, "scalar", s[1]))
                if args is not None:
                    p.var = RtInt(args[i]) if s[1] == "i64" else RtFloat(args[i])
                params.append(p)
        return params

    def captured(self) -> tuple:
        """The simple-valued globals and closure variables the body reads, as (name, value)."""
        g = self.fn.__globals__
        if self._watched is None:      # modules, functions and classes are read at trace time
            self._watched = [n for n in self._gnames
                             if not isinstance(g.get(n), (types.ModuleType, type)) and not callable(g.get(n))]
        if not self._watched and self.fn.__closure__ is None:
            return ()
        out = [(n, type(g[n]).__name__, g[n]) for n in self._watched if n in g and _simple(g[n])]
        for n, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ()):
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if _simple(v):
                out.append((n, type(v).__name__, v))
        return tuple(out)

    def trace_for(self, specs: tuple, soc) -> Kernel:
        key = (specs, soc.name, self.captured())
        k = self._traces.get(key)
        if k is None:
            with self._lock:              # threads launching a new signature at once trace once
                k = self._traces.get(key)
                if k is None:
                    k = self._trace(specs, soc)
                    self._traces[key] = k
        return k

    def run_body(self, builder, args: list) -> None:
        """Run the Python body with ``builder`` receiving its instructions (trace or eager)."""
        with activate(builder):
            ret = self.fn(*args)
        builder.finish()
        if ret is not None:
            raise TraceError(f"kernel {self.name} returned {ret!r}",
                             rule="kernels return nothing; results go to GM with TSTORE",
                             fix="store results with pto.TSTORE and drop the return")

    def _trace(self, specs: tuple, soc) -> Kernel:
        params = self.make_params(specs)
        b = TraceBuilder(soc)
        self.run_body(b, [GmTensor(p) if isinstance(p, TensorParam) else p.var for p in params])
        k = Kernel(self.name, params, b.tiles, b.body, soc.name,
                   source=f"{os.path.basename(inspect.getsourcefile(self.fn) or '?')}:{self.fn.__qualname__}")
        return passes.run(k, soc)

    def traced(self, *args: Any):
        """The kernel's IR for these arguments on the session's SoC (traced once per signature),
        after the passes: placed, checked, annotated, auto mode's flags inserted."""
        args = tuple(py_scalar(a) for a in args)
        return self.trace_for(self.signature(args), runtime.current().soc)

    def ir(self, *args: Any) -> str:
        """The kernel as readable PTO-style text (with each instruction's pipe), traced for these
        arguments. Works for every instruction of the table, simulated or not."""
        return print_kernel(self.traced(*args))

    def cpp(self, *args: Any, guards: bool = True) -> str:
        """The kernel as PTO C++ (what the npu and npu-cpusim backends build), traced for these
        arguments and the session's SoC: a readable, self-contained translation unit.
        guards=False leaves out pypto's run-time checks (PYPTO_GUARD lines) for reading."""
        from ..backends import emit_cpp
        return emit_cpp(self.traced(*args), runtime.current().soc, guards=guards)

    def profile(self, *args: Any, grid: int = 1, events: int | None = None,
                params: dict[str, float] | None = None):
        """pypto.timeline(self, *args, grid=grid): run on the simulator and lay the launch out on
        the SoC's pipes (cycles, per-pipe busy ratios, a Chrome trace with .save)."""
        from ..timing import timeline
        extra = {} if events is None else {"events": events}
        return timeline(self, *args, grid=grid, params=params, **extra)

    def explain(self, *args: Any) -> str:
        """The kernel's IR for these arguments with every tile's space, address range and live
        range (first and last statement using it), then a memory map per on-chip space."""
        return explain_kernel(self.traced(*args), runtime.current().soc)

    def check(self, *args: Any, strict: bool = False) -> list:
        """Every finding of the manual-mode checker for these arguments (nothing runs): a list of
        pypto.ir.hazards.Finding (kind, severity, message, fix, the two statements and their
        lines). strict=True grades reads of never-written bytes as errors."""
        return hazards.check(self.traced(*args), runtime.current().soc, strict)

    def __repr__(self) -> str:
        return f"<pypto.kernel {self.name}{'(dynamic shapes)' if self.dynamic_shapes else ''}>"


def _remember(args: tuple) -> tuple:
    """Launch arguments as the fast path keeps them: tensors by weak reference (a kernel must
    not keep its last launch's device memory alive), scalars by value."""
    from ..tensor import Tensor
    return tuple(weakref.ref(a) if isinstance(a, Tensor) else a for a in args)


def _same_args(before: tuple, now: tuple) -> bool:
    """The same device tensors (still allocated) and equal scalars, position by position."""
    if len(before) != len(now):
        return False
    for x, y in zip(before, now):
        if isinstance(x, weakref.ref):
            if x() is not y or y.is_freed:
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True


def check(kern: KernelFunction, *args: Any, strict: bool = False) -> list:
    """``kern.check(*args)``: every mistake the checker finds, as a list a test can assert on."""
    if not isinstance(kern, KernelFunction):
        raise KernelError(f"pypto.check({kern!r}, ...): not a @pypto.kernel",
                          rule="pypto.check takes a kernel and the arguments it would be launched with",
                          fix="pass the function decorated with @pypto.kernel")
    return kern.check(*args, strict=strict)


def kernel(fn: Callable | None = None, *, mode: str | None = None, dynamic_shapes: bool = False,
           checks: str | None = None):
    """Decorate a PTO kernel. ``mode``: "compiled" (default) or "eager"; ``dynamic_shapes``:
    tensor shapes become runtime values so one compilation serves every shape; ``checks``:
    this kernel's hazard checking ("default", "strict" or "off"; None: the session's
    SimOptions.checks), e.g. "off" for a kernel that reads one tile's bytes through another on
    purpose."""
    if fn is None:
        return lambda f: kernel(f, mode=mode, dynamic_shapes=dynamic_shapes, checks=checks)
    if not inspect.isfunction(fn):
        raise KernelError(f"@pypto.kernel applied to {type(fn).__name__} {fn!r:.60}",
                          rule="a kernel is a Python function whose body calls pto instructions",
                          fix="decorate a def: @pypto.kernel above `def my_kernel(x, y): ...`")
    return KernelFunction(fn, mode, dynamic_shapes, checks)


__all__ = ["kernel", "KernelFunction"]
