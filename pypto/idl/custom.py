"""Custom instructions: ``load_custom_insn(path)`` registers IDL operators (from an ``.idl`` file or
a library built from ``pypto codegen``'s C++), ``load_insn(name)`` returns a ``CustomInsn``.

A CustomInsn follows the seed Insn's protocol: operands in IDL order (tensor and scalar inputs as
declared, then outputs), ``set_operand``, ``execute()`` on the active backend (the operator's
plan of library instructions, pypto/idl/lower.py), plus ``reference(*arrays)`` (the library's
C++ reference, or the numpy evaluation of the IDL) and ``verify()``. Everything is checked before
anything runs, and outputs are written only after every step succeeded.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import dtypes as D
from .. import isa, runtime
from ..errors import CustomReferenceError, IdlError, OperandError, OperandNotSetError
from ..insn import PROVIDERS, operand_index
from ..tensor import Tensor
from . import ast as A

_UNSET = object()


@dataclass
class Custom:
    """A registered operator: its checked IDL, where it came from, and its reference."""
    op: A.Operator
    source: str
    reference: Callable[[dict], dict]          # name -> array/number  ->  output name -> array


_REGISTRY: dict[str, Custom] = {}


def registered(name: str) -> Custom | None:
    return _REGISTRY.get(name)


def names() -> list[str]:
    return sorted(_REGISTRY)


def load_custom_insn(path: str | Path, replace: bool = False) -> list[str]:
    """Register the operators of an IDL file or a generated library (.so); returns their names.
    May be called before pypto.init(). A name that clashes with a built-in instruction or an
    already loaded operator is an error unless ``replace=True``."""
    from . import parse, parse_file
    if not isinstance(path, (str, Path)):
        raise IdlError(f"load_custom_insn({path!r}): not a path", file="<argument>", line=1, column=1,
                       rule="load_custom_insn takes the path of an .idl file or a generated .so",
                       fix="pass a string path")
    p = Path(path)
    try:
        found = p.exists()
    except (OSError, ValueError) as e:               # a name too long, a NUL byte
        raise IdlError(f"load_custom_insn: {str(path)[:80]!r} is not a usable path: {e.__class__.__name__}",
                       file="<argument>", line=1, column=1,
                       rule="load_custom_insn reads an .idl file or a library built from pypto codegen",
                       fix="pass the path of an existing file") from None
    if not found:
        raise IdlError(f"load_custom_insn: {path} does not exist", file=str(path), line=1, column=1,
                       rule="load_custom_insn reads an .idl file or a library built from pypto codegen",
                       fix="check the path (relative paths are from the current directory)")
    if p.suffix == ".idl":
        module = parse_file(str(path))
        refs = {op.name: _numpy_reference(op) for op in module.operators}
    else:
        lib = _open_library(p)
        module = parse(lib.manifest, file=f"{path}(manifest)")
        refs = {op.name: _library_reference(lib, op) for op in module.operators}
    new = {}
    for op in module.operators:
        _check_name(op, replace, str(path))
        new[op.name] = Custom(op, str(path), refs[op.name])
    _REGISTRY.update(new)
    return list(new)


def _check_name(op: A.Operator, replace: bool, source: str) -> None:
    clash = None
    if isa.lookup(op.name) is not None:
        clash = f"the built-in instruction {isa.lookup(op.name).name}"
    elif op.name in _REGISTRY and _REGISTRY[op.name].source != source:
        clash = f"the operator loaded from {_REGISTRY[op.name].source}"
    if clash and not replace:
        loc = op.loc
        raise IdlError(f"operator {op.name} clashes with {clash}", file=loc.file, line=loc.line,
                       column=loc.column,
                       rule="custom operator names are unique among instructions and loaded operators",
                       fix="rename the operator, or pass replace=True to load_custom_insn")


# -- references ---------------------------------------------------------------------------------

def _numpy_reference(op: A.Operator) -> Callable[[dict], dict]:
    from . import evaluate
    return lambda values: evaluate(op, values)


@dataclass
class _Library:
    handle: Any
    manifest: str


def _open_library(p: Path) -> _Library:
    try:
        handle = ctypes.CDLL(str(p.resolve()))
    except OSError as e:
        raise IdlError(f"load_custom_insn: {p} is not a loadable library ({e})", file=str(p), line=1,
                       column=1, rule="load_custom_insn loads an .idl file or a shared library built "
                                      "from pypto codegen's C++",
                       fix="build it with: g++ -shared -fPIC -O2 -o NAME.so NAME_pypto.cpp") from None
    try:
        version, manifest = handle.pypto_abi_version, handle.pypto_manifest
    except AttributeError:
        raise IdlError(f"load_custom_insn: {p} has no pypto manifest", file=str(p), line=1, column=1,
                       rule="a custom-instruction library exports pypto_abi_version and pypto_manifest "
                            "(pypto codegen writes them)",
                       fix="regenerate the C++ with python -m pto.codegen and build it again") from None
    from .abi import ABI_VERSION
    version.restype = ctypes.c_int
    if version() != ABI_VERSION:
        raise IdlError(f"load_custom_insn: {p} has ABI version {version()}, not {ABI_VERSION}",
                       file=str(p), line=1, column=1, rule="the library and this pypto must agree",
                       fix="regenerate and rebuild it with this pypto")
    manifest.restype = ctypes.c_char_p
    return _Library(handle, manifest().decode("utf-8", "replace"))


def _library_reference(lib: _Library, op: A.Operator) -> Callable[[dict], dict]:
    from . import bind
    from .abi import symbols
    from .evaluate import to_dtype
    fn = getattr(lib.handle, f"pypto_reference_{op.name}")
    fn.restype = ctypes.c_int
    syms = symbols(op)

    def run(values: dict) -> dict:
        shapes = {f.name: np.shape(values[f.name]) for f in op.inputs if isinstance(f, A.TensorField)}
        sizes = bind(op, shapes)
        ins = [np.ascontiguousarray(values[f.name], np.float64) for f in op.inputs
               if isinstance(f, A.TensorField)]
        scal = [float(values[f.name]) if f.name in values else float(f.default)
                for f in op.inputs if isinstance(f, A.ScalarField)]
        outs = [np.zeros([d if isinstance(d, int) else sizes[d] for d in f.dims]) for f in op.outputs]
        dims = (ctypes.c_int64 * max(1, len(syms)))(*[sizes[s] for s in syms])
        dp = ctypes.POINTER(ctypes.c_double)
        rc = fn(dims, (dp * max(1, len(ins)))(*[a.ctypes.data_as(dp) for a in ins]),
                (dp * len(outs))(*[a.ctypes.data_as(dp) for a in outs]),
                (ctypes.c_double * max(1, len(scal)))(*scal))
        if rc:
            raise CustomReferenceError(f"{op.name} reference: integer division by zero",
                           rule="the reference divides integers like C (truncating); a zero divisor "
                                "has no result", fix="check the inputs")
        return {f.name: to_dtype(np.rint(o) if f.dtype.is_int else o, f.dtype)
                for f, o in zip(op.outputs, outs)}
    return run


# -- the instruction --------------------------------------------------------------------------------

class CustomInsn:
    """A loaded custom operator. Operands: its inputs in declaration order, then its outputs."""

    def __init__(self, custom: Custom, session: runtime.Session):
        from .lower import check_dtypes, lower
        self._c = custom
        self._op = custom.op
        self._session = session
        self._fields = tuple(self._op.inputs) + tuple(self._op.outputs)
        self._ops: list[Any] = [_UNSET] * len(self._fields)
        self._plan = lower(self._op, session.soc)
        check_dtypes(self._plan, session.soc, getattr(self._op, "source", None))

    name = property(lambda self: self._op.name)
    num_operands = property(lambda self: len(self._fields))
    plan = property(lambda self: self._plan.text())

    @property
    def signature(self) -> str:
        def one(f) -> str:
            if isinstance(f, A.ScalarField):
                d = "" if f.default is None else f" = {f.default!r}"
                return f"{f.name}: scalar {f.dtype.name}{d}"
            return f"{f.name}: tensor {f.dtype.name} [{', '.join(str(d) for d in f.dims)}]"
        return f"{self.name}({', '.join(one(f) for f in self._fields)})  # custom, from {self._c.source}"

    def __repr__(self) -> str:
        return f"<pypto.CustomInsn {self.signature}>"

    def set_operand(self, index: int, value: Any) -> None:
        """Bind operand ``index`` (IDL order: inputs, then outputs) to a tensor, array or number."""
        self._ops[operand_index(self.name, index, [f.name for f in self._fields])] = value

    # -- checking ---------------------------------------------------------------------------------
    def _bound(self) -> tuple[dict, dict]:
        """(symbol sizes and scalar values, name -> operand), every operand checked."""
        from . import bind
        missing = [f"{i} ({f.name})" for i, (f, v) in enumerate(zip(self._fields, self._ops))
                   if v is _UNSET and not (isinstance(f, A.ScalarField) and f.default is not None)]
        if missing:
            raise OperandNotSetError(f"{self.name}.execute(): operand(s) {', '.join(missing)} not set",
                                     rule=f"every operand of {self.name} without a default must be bound",
                                     fix="call set_operand(i, x) for each of them")
        shapes, env, named = {}, {}, {}
        for i, (f, v) in enumerate(zip(self._fields, self._ops)):
            what = f"{self.name} operand {i} ({f.name})"
            if isinstance(f, A.ScalarField):
                v = f.default if v is _UNSET else v
                if isinstance(v, np.generic):
                    v = v.item()
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise OperandError(f"{what}: {type(v).__name__} is not a number",
                                       rule=f"{f.name} is a {f.dtype.name} scalar", fix="pass an int or float")
                env[f.name] = int(v) if f.dtype.is_int else float(v)
                continue
            if not isinstance(v, (Tensor, np.ndarray)):
                raise OperandError(f"{what}: {type(v).__name__} is not a pypto.Tensor or numpy array",
                                   rule=f"{f.name} is a tensor", fix="pass pypto.Tensor(...)")
            if isinstance(v, Tensor):
                v._check_live(what)
                dt = v.dtype
            else:
                dt = D.as_dtype(v.dtype, context=what)
            if dt is not f.dtype:
                raise OperandError(f"{what} is {dt.name}, not {f.dtype.name}",
                                   rule=f"the IDL declares {f.name} as {f.dtype.name}",
                                   fix=f"pass a {f.dtype.name} tensor")
            shapes[f.name] = tuple(v.shape)
            named[f.name] = v
        env.update(bind(self._op, shapes))
        return env, named

    def ir(self) -> str:
        """Each kernel of the plan for the bound operands (fused or library) as PTO text."""
        return "\n".join(f"// {t}\n{x}" for t, x in self.kernels(lambda kern, args: kern.ir(*args)))

    def cpp(self) -> str:
        """Each kernel of the plan for the bound operands (fused or library) as PTO C++."""
        return "\n".join(f"// {t}\n{x}" for t, x in self.kernels(lambda kern, args: kern.cpp(*args)))

    def kernels(self, show: Callable[[Any, list], Any]) -> list[tuple[str, Any]]:
        """[(title, show(kernel, launch args))] for every kernel execute() would launch with the
        bound operands, in order; nothing runs (the arguments live only during show)."""
        return self._run(show)

    def execute(self) -> None:
        """Run the operator's plan on the active backend; outputs are written at the end."""
        self._run(None)

    def _run(self, show):
        from .lower import run
        if runtime._session is not self._session:
            raise OperandError(f"{self.name}: loaded in a session that has ended",
                               rule="an Insn belongs to the session it was loaded in",
                               fix="load the instruction again after pypto.init()")
        env, named = self._bound()
        inputs = {f.name: named[f.name] for f in self._op.inputs if isinstance(f, A.TensorField)}
        staged = [k for k, v in inputs.items() if isinstance(v, np.ndarray)]
        for k in staged:
            inputs[k] = Tensor(inputs[k])
        try:
            if show is not None:
                return run(self._plan, inputs, env, show)
            results = run(self._plan, inputs, env)
            try:
                for f in self._op.outputs:
                    out, got = named[f.name], results[f.name]
                    if isinstance(out, Tensor):
                        out._copy_device_from(got)
                    else:
                        np.copyto(out, got.numpy())
            finally:
                for t in {id(t): t for t in results.values()}.values():
                    if not t.is_freed:
                        t.free()
        finally:
            for k in staged:
                inputs[k].free()

    # -- references -------------------------------------------------------------------------------
    def reference(self, *arrays: Any) -> dict[str, np.ndarray]:
        """The reference result for these inputs (IDL order; scalars may be left to their
        defaults), or for the bound operands when called without arguments."""
        ins = list(self._op.inputs)
        if not arrays:
            arrays = tuple(np.asarray(v.numpy() if isinstance(v, Tensor) else v) if v is not _UNSET
                           else _UNSET for v in self._ops[:len(ins)])
        values = {}
        for f, v in zip(ins, arrays):
            if v is _UNSET:
                continue
            values[f.name] = v.numpy() if isinstance(v, Tensor) else v
        return self._c.reference(values)

    def verify(self, rtol: float | None = None, atol: float | None = None) -> dict:
        """execute() on the backend, then compare every output with the reference at a tolerance
        of its dtype. Returns per output the worst error and where it is; raises a PtoError
        naming the worst element when an output is outside the tolerance."""
        want = self.reference()
        env, _ = self._bound()
        self.execute()
        depth = self._plan.reduction_depth(env)
        report = {}
        for i, f in enumerate(self._op.outputs):
            v = self._ops[len(self._op.inputs) + i]
            got = np.asarray(v.numpy() if isinstance(v, Tensor) else v).astype(np.float64)
            exp = np.asarray(want[f.name]).astype(np.float64)
            rt, at = _tolerance(f.dtype, depth, exp) if rtol is None else (rtol, atol or 0.0)
            err = np.abs(got - exp)
            bound = at + rt * np.abs(exp)
            worst = np.unravel_index(int(np.argmax(err - bound)), err.shape) if err.size else ()
            report[f.name] = {"max_abs_error": float(err.max()) if err.size else 0.0,
                              "worst_index": tuple(int(x) for x in worst), "rtol": rt, "atol": at}
            if err.size and not (err <= bound).all():
                raise CustomReferenceError(f"{self.name}.verify(): output {f.name} differs from the reference by "
                               f"{err[worst]:.3g} at {tuple(int(x) for x in worst)} (got {got[worst]!r}, "
                               f"reference {exp[worst]!r})",
                               rule=f"{f.dtype.name} results agree within rtol={rt:g}, atol={at:g}",
                               fix="look at the plan (insn.plan) and the inputs there")
        return report


def _tolerance(dt: D.DType, depth: int, exp: np.ndarray) -> tuple[float, float]:
    """(rtol, atol) for an output of dtype dt: a few units of its precision, and an absolute part
    growing with sqrt(the longest sum behind it) times the output's magnitude, since a backend
    may add a K-long dot product or a row in any order."""
    if dt.is_int:
        return 0.0, 0.0
    eps = {"f32": 2.0 ** -20, "f16": 2.0 ** -8, "bf16": 2.0 ** -5}.get(dt.short, 2.0 ** -3)
    big = float(np.abs(exp[np.isfinite(exp)]).max()) if np.isfinite(exp).any() else 0.0
    return eps, float(eps * (1.0 + np.sqrt(depth) * big))


def load(name: str) -> CustomInsn | None:
    """The CustomInsn of a registered operator in the current session (None if unknown)."""
    c = _REGISTRY.get(name)
    return None if c is None else CustomInsn(c, runtime.current())


PROVIDERS.append(load)
