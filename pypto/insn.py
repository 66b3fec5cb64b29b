"""The seed's instruction-level API: ``load_insn(name)`` -> Insn, bind operands, ``execute()``.

Each Insn runs a library kernel over whole tensors. Operands are device tensors or numpy arrays;
numpy operands are staged (inputs H2D before, outputs D2H after, all counted in pypto.stats()),
unless ``pypto.init(strict_host_operands=True)``. Everything is validated before anything is
written, so a failed execute() leaves its outputs untouched.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import dtypes as D
from . import isa, runtime
from .errors import (DTypeError, DTypeMismatchError, HostMemoryError, InsnNotFoundError,
                     OperandError, OperandIndexError, OperandNotSetError, ShapeError)
from .library import BINARY, TILE_SCALAR, launch_dims
from .tensor import Tensor

_UNSET = object()


@dataclass(frozen=True)
class _Slot:
    name: str
    kind: str      # "in" | "out" | "scalar"


_BINARY_SLOTS = (_Slot("src0", "in"), _Slot("src1", "in"), _Slot("dst", "out"))
_SCALAR_SLOTS = (_Slot("src", "in"), _Slot("scalar", "scalar"), _Slot("dst", "out"))


def _library(pto_name: str):
    if pto_name in BINARY:
        return BINARY[pto_name], _BINARY_SLOTS
    if pto_name in TILE_SCALAR:
        return TILE_SCALAR[pto_name], _SCALAR_SLOTS
    return None, None


class Insn:
    """A loaded instruction. Operand order is the seed's: inputs first, then the output."""

    def __init__(self, spec: isa.Instr, session: runtime.Session):
        self._spec = spec
        self._session = session
        self._kernel, self._slots = _library(spec.name)
        self._ops: list[Any] = [_UNSET] * len(self._slots)
        self.dtypes: tuple[D.DType, ...] = tuple(D.BY_NAME[s] for s in spec.dtypes_on(session.soc.name))

    name = property(lambda self: self._spec.seed or self._spec.name.lower())
    pto_name = property(lambda self: self._spec.name)
    insn_id = property(lambda self: self._spec.opcode)
    num_operands = property(lambda self: len(self._slots))

    @property
    def signature(self) -> str:
        args = ", ".join(f"{s.name}: {'scalar' if s.kind == 'scalar' else 'tensor'}" for s in self._slots)
        legal = ", ".join(d.name for d in self.dtypes)
        return (f"{self.name}({args})  # {self._spec.summary}; {self.pto_name} opcode "
                f"{self.insn_id:#06x}; dtypes on {self._session.soc.name}: {legal}")

    def __repr__(self) -> str:
        return f"<pypto.Insn {self.signature}>"

    # -- binding ------------------------------------------------------------------------------
    def set_operand(self, index: int, value: Any) -> None:
        """Bind operand ``index`` (0-based, seed order) to a Tensor, numpy array or scalar."""
        n = len(self._slots)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
            raise OperandIndexError(
                f"{self.name}.set_operand({index!r}, ...): operand index out of range",
                rule=f"{self.name} has {n} operands, indices 0..{n - 1}: "
                     + ", ".join(f"{i}={s.name}" for i, s in enumerate(self._slots)),
                fix=f"use an index from 0 to {n - 1}")
        self._ops[index] = value

    # -- execution ------------------------------------------------------------------------------
    def execute(self) -> None:
        """Run the instruction. Validates every operand first; then stages, launches, copies back."""
        if runtime._session is not self._session:
            runtime.current()
            raise OperandError(f"{self.name}: loaded in a session that has ended",
                               fix="load the instruction again after pypto.init()")
        missing = [f"{i} ({s.name})" for i, (s, v) in enumerate(zip(self._slots, self._ops)) if v is _UNSET]
        if missing:
            raise OperandNotSetError(f"{self.name}.execute(): operand(s) {', '.join(missing)} not set",
                                     rule=f"all {len(self._slots)} operands must be bound before execute()",
                                     fix="call set_operand(i, x) for each of them")
        strict = self._session.strict_host_operands
        dt: D.DType | None = None
        first = None
        shape = None
        for i, (slot, v) in enumerate(zip(self._slots, self._ops)):
            if slot.kind == "scalar":
                continue
            what = f"{self.name} operand {i} ({slot.name})"
            if isinstance(v, Tensor):
                v._check_live(what)
                vdt, vshape = v.dtype, v.shape
            elif isinstance(v, np.ndarray):
                if strict:
                    raise HostMemoryError(
                        f"{what} is a host (numpy) array",
                        rule="with strict_host_operands=True operands must be in device memory: the "
                             "NPU cannot read host memory, and copying implicitly hides the cost",
                        fix="copy it to the device: pypto.Tensor(arr) (read results with .numpy())")
                try:
                    vdt = D.as_dtype(v.dtype, context=what)
                except DTypeError as e:
                    raise DTypeError(e.message, rule=f"{self.name} takes {', '.join(d.name for d in self.dtypes)} "
                                     f"on {self._session.soc.name}", fix=e.fix) from None
                vshape = v.shape
                if slot.kind == "out" and not v.flags.writeable:
                    raise OperandError(f"{what}: the output array is read-only", fix="pass a writable array")
            else:
                raise OperandError(f"{what}: {type(v).__name__} is not a pypto.Tensor or numpy array",
                                   fix="pass pypto.Tensor(...) or a numpy array")
            if dt is None:
                dt, first, shape = vdt, i, vshape
            elif vdt != dt:
                raise DTypeMismatchError(
                    f"{what} is {vdt.name} but operand {first} is {dt.name}",
                    rule=f"{self.name}'s operands share one element type",
                    fix=f"convert them to one type, e.g. dtype=pypto.{dt.name}")
            elif tuple(vshape) != tuple(shape):
                raise ShapeError(
                    f"{what} has shape {tuple(vshape)} but operand {first} has {tuple(shape)}",
                    rule=f"{self.name} is elementwise over equal shapes (no broadcasting)",
                    fix="pass operands of the same shape")
        if dt not in self.dtypes:
            raise DTypeError(
                f"{self.name} does not accept {dt.name} on {self._session.soc.name}",
                rule=f"{self.name} takes {', '.join(d.name for d in self.dtypes)} on {self._session.soc.name}",
                fix="convert the operands" + (" or use pypto.init(soc='a5')"
                                              if dt.short in self._spec.dtypes_on("a5") and
                                              self._session.soc.name != "a5" else ""))
        scalar = None
        for slot, v in zip(self._slots, self._ops):
            if slot.kind == "scalar":
                scalar = self._scalar(v, dt)
        self._run(dt, scalar)

    def _scalar(self, v: Any, dt: D.DType):
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise OperandError(f"{self.name} operand 1 (scalar): {type(v).__name__} is not a number",
                               fix="pass a Python int or float")
        if dt.is_int:
            if isinstance(v, float):
                if not v.is_integer():
                    raise DTypeError(f"{self.name}: scalar {v!r} is not an integer but the tensors are {dt.name}",
                                     rule="the scalar is converted to the tensors' element type",
                                     fix="pass an int, or use float tensors")
            return dt.wrap(int(v))        # the conversion to the element type keeps the low bits
        return float(v)

    def _run(self, dt: D.DType, scalar) -> None:
        """Stage numpy operands, launch the library kernel on flat views (operands in seed
        order), copy staged outputs back, free what was staged."""
        staged: list[Tensor] = []
        outputs: list[tuple[np.ndarray, Tensor]] = []
        args: list[Any] = []
        try:
            for slot, v in zip(self._slots, self._ops):
                if slot.kind == "scalar":
                    args.append(scalar)
                    continue
                if isinstance(v, np.ndarray):
                    t = Tensor(v) if slot.kind == "in" else Tensor._empty(v.shape, dt)
                    staged.append(t)
                    if slot.kind == "out":
                        outputs.append((v, t))
                    v = t
                args.append(v._alias((v.size,)))
            blocks = launch_dims(args[0].size, dt.itemsize, self._session.soc.aiv_cores)
            self._kernel[blocks](*args)
            for host, t in outputs:
                np.copyto(host, t.numpy())
        finally:
            for t in staged:
                if not t.is_freed:
                    t.free()


def load_insn(name: str) -> Insn:
    """Load an instruction by seed name ("add") or PTO name ("TADD")."""
    if not isinstance(name, str):
        raise InsnNotFoundError(f"Insn {name!r} not found: instruction names are strings")
    if not runtime.is_initialized():
        raise InsnNotFoundError(
            f"Insn {name} not found",
            rule="the instruction library is loaded by pypto.init(); no session is running",
            fix="call pypto.init() first")
    sess = runtime.current()
    spec = isa.lookup(name)
    if spec is not None and _library(spec.name)[0] is not None:
        return Insn(spec, sess)
    if spec is not None:
        raise InsnNotFoundError(
            f"Insn {name} not found: {spec.name} (opcode {spec.opcode:#06x}) is a PTO instruction but "
            "has no whole-tensor library kernel yet",
            rule="load_insn() serves the instructions listed by pypto.list_insns()",
            fix=f"use pto.{spec.name} inside an @pypto.kernel")
    near = [n for n in isa.closest(name) if _library(isa.lookup(n).name)[0] is not None]
    hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
    raise InsnNotFoundError(f"Insn {name} not found{hint}",
                            rule=f"loaded instructions: {', '.join(list_insns())}",
                            fix="check the spelling (seed names are lower case, PTO names upper case)")


def list_insns() -> list[str]:
    """Seed names load_insn() accepts (their PTO names work too)."""
    return [seed for seed, pto_name in isa.SEED_NAMES.items() if _library(pto_name)[0] is not None]


def load_custom_insn(path: str) -> None:
    """Custom instructions from IDL files / generated .so (not built yet in this version)."""
    from .errors import NotSimulatedError
    raise NotSimulatedError(f"load_custom_insn({path!r}): custom instructions (IDL) are not built yet",
                            rule="IDL parsing, codegen and .so loading come with the IDL work",
                            fix="write the operator as an @pypto.kernel for now")
