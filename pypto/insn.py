"""The seed's instruction-level API: ``load_insn(name)`` -> Insn, bind operands, ``execute()``.

Each Insn runs the library kernel of its instruction's form (pypto/library/forms.py: binary,
scalar, unary, rowreduce, cast, ...; the unit names it) over whole tensors. Operands are device tensors or numpy
arrays; numpy operands are staged (inputs H2D before, outputs D2H after, all counted in
pypto.stats()), unless ``pypto.init(strict_host_operands=True)``. Mode parameters (TCVT's rounding
and saturation) are keyword arguments of ``load_insn`` or ``set_param``, named as in ``pto.TCVT``.
Everything is validated before anything is written, so a failed execute() leaves its outputs
untouched.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from . import diagnostics as Dx
from . import dtypes as D
from . import isa, runtime
from .errors import (DTypeError, HostMemoryError, InsnNotFoundError, OperandError,
                     OperandIndexError, OperandNotSetError)
from .ir import registry
from .ir.verify import check_params
from .library import forms as _forms  # noqa: F401  (imports the library: registers its forms)
from .library.forms import FORMS, Call, Slot, legal_names
from .tensor import Tensor

_UNSET = object()


def _form(pto_name: str) -> str | None:
    u = registry.get(pto_name)
    return u.seed if u is not None and u.sim is not None and u.seed in FORMS else None


class Insn:
    """A loaded instruction. Operand order is the seed's: inputs first, then the output(s)."""

    def __init__(self, spec: isa.Instr, session: runtime.Session, params: dict[str, Any]):
        self._spec = spec
        self._session = session
        self._formname = _form(spec.name)
        self._form = FORMS[self._formname]
        self._slots = self._form.slots
        self._ops: list[Any] = [_UNSET] * len(self._slots)
        self._params: dict[str, Any] = {}
        self._ready: tuple | None = None      # (operands, prepared launch) of the last launch
        legal = spec.dtypes_on(session.soc.name)
        self.dtypes: tuple[D.DType, ...] = tuple(D.BY_NAME[s] for s in legal if isinstance(s, str))
        for k, v in params.items():
            self.set_param(k, v)

    name = property(lambda self: self._spec.seed or self._spec.name.lower())
    pto_name = property(lambda self: self._spec.name)
    insn_id = property(lambda self: self._spec.opcode)
    num_operands = property(lambda self: len(self._slots))
    params = property(lambda self: dict(self._params))

    def _call(self, info: dict) -> Call:
        return Call(self.name, self._spec, self._session.soc, dict(self._params), info, self._slots)

    @property
    def signature(self) -> str:
        args = ", ".join(f"{s.name}: {'scalar' if s.kind == 'scalar' else 'tensor'}" for s in self._slots)
        ps = "".join(f", {p.name}={self._params.get(p.name, p.default)!r}"
                     for p in self._spec.params + self._form.params)
        return (f"{self.name}({args}{ps})  # {self._spec.summary}; {self.pto_name} opcode "
                f"{self.insn_id:#06x}; dtypes on {self._session.soc.name}: {self._legal_text()}")

    def __repr__(self) -> str:
        return f"<pypto.Insn {self.signature}>"

    # -- binding ------------------------------------------------------------------------------
    def set_operand(self, index: int, value: Any) -> None:
        """Bind operand ``index`` (0-based, seed order) to a Tensor, numpy array or scalar."""
        self._ops[operand_index(self.name, index, [s.name for s in self._slots])] = value
        self._ready = None

    def set_param(self, name: str, value: Any) -> None:
        """Set a mode parameter (e.g. rmode="CAST_RINT" for cast), as pto.<NAME>(..., name=value)."""
        if not isinstance(name, str):
            raise OperandError(f"{self.name}.set_param({name!r}, ...): a parameter name is a string",
                               rule=f"{self.name}'s parameters are named", fix=f"see {self.name}.signature")
        if isinstance(value, np.generic):
            value = value.item()
        check_params(self._spec.name, {name: value}, self._form.params)
        self._params[name] = value
        self._ready = None

    # -- execution ------------------------------------------------------------------------------
    def _tensor_info(self, i: int, slot: Slot, v: Any) -> tuple[D.DType, tuple]:
        what = f"{self.name} operand {i} ({slot.name})"
        if isinstance(v, Tensor):
            v._check_live(what)
            return v.dtype, tuple(v.shape)
        if isinstance(v, np.ndarray):
            if self._session.strict_host_operands:
                raise HostMemoryError(
                    f"{what} is a host (numpy) array",
                    rule="with strict_host_operands=True operands must be in device memory: the "
                         "NPU cannot read host memory, and copying implicitly hides the cost",
                    fix="copy it to the device: pypto.Tensor(arr) (read results with .numpy())")
            try:
                dt = D.as_dtype(v.dtype, context=what)
            except DTypeError as e:
                raise DTypeError(e.message, rule=f"{self.name} takes {self._legal_text()} on "
                                 f"{self._session.soc.name}", fix=e.fix) from None
            if slot.kind == "out" and not v.flags.writeable:
                raise OperandError(f"{what}: the output array is read-only", rule="outputs are written",
                                   fix="pass a writable array")
            return dt, tuple(v.shape)
        raise OperandError(f"{what}: {type(v).__name__} is not a pypto.Tensor or numpy array",
                           rule=f"{self.name}'s {slot.name} is a tensor",
                           fix="pass pypto.Tensor(...) or a numpy array")

    def _legal_text(self) -> str:
        call = self._call({})
        return (self._form.legal_text or legal_names)(call)

    def ir(self) -> str:
        """The library kernel behind execute() for the bound operands, as PTO-style text."""
        return self._prepared(lambda kern, args, blocks: kern.ir(*args))

    def cpp(self) -> str:
        """The library kernel for the bound operands as PTO C++ (what the npu backends build)."""
        return self._prepared(lambda kern, args, blocks: kern.cpp(*args))

    def execute(self) -> None:
        """Run the instruction. Validates every operand first; then stages, launches, copies back.
        Executing again with the same device tensors and scalars reuses the checked launch."""
        ready = self._ready
        if ready is not None and runtime._session is self._session and runtime.launch_hook is None \
                and all(not t.is_freed for t in ready[0]):
            ready[1]()
            return
        self._prepared(None)

    def launch_args(self) -> tuple:
        """(kernel, blocks, args) that execute() would launch, for operands that are all device
        tensors (a composite such as a custom operator launches them itself)."""
        if any(isinstance(v, np.ndarray) for v in self._ops):
            raise OperandError(f"{self.name}.launch_args(): an operand is a numpy array",
                               rule="launch_args() hands out device tensors only",
                               fix="bind pypto.Tensor operands, or call execute()")
        return self._prepared(lambda kern, args, blocks: (kern, blocks, args))

    def _prepared(self, show):
        """Validate the operands; then launch (show None) or return show(kernel, launch args)."""
        if runtime._session is not self._session:
            runtime.current()
            raise OperandError(f"{self.name}: loaded in a session that has ended",
                               rule="an Insn belongs to the session it was loaded in",
                               fix="load the instruction again after pypto.init()")
        missing = [f"{i} ({s.name})" for i, (s, v) in enumerate(zip(self._slots, self._ops)) if v is _UNSET]
        if missing:
            raise OperandNotSetError(f"{self.name}.execute(): operand(s) {', '.join(missing)} not set",
                                     rule=f"all {len(self._slots)} operands must be bound before execute()",
                                     fix="call set_operand(i, x) for each of them")
        info = {i: self._tensor_info(i, s, v) for i, (s, v) in enumerate(zip(self._slots, self._ops))
                if s.kind != "scalar"}
        call = self._call(info)
        dt = self._form.check(call)
        scalars = {i: self._scalar(i, v, dt) for i, (slot, v) in enumerate(zip(self._slots, self._ops))
                   if slot.kind == "scalar"}
        return self._run(call, scalars, show)

    def _scalar(self, i: int, v: Any, dt: D.DType):
        what = f"operand {i} ({self._slots[i].name})"
        if isinstance(v, np.generic) and not isinstance(v, np.bool_):
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise OperandError(f"{self.name} {what}: {type(v).__name__} is not a number",
                               rule="the scalar operand is a Python or numpy number",
                               fix="pass an int or a float")
        Dx.check_scalar(self.name, what, v, dt)
        return int(v) if dt.is_int else float(v)

    def _run(self, call: Call, scalars: dict, show=None):
        """Stage numpy operands, launch the library kernel on the form's views of the tensors (in
        seed order), copy staged outputs back, free what was staged (or, with ``show``, return
        show(kernel, args, blocks) instead of launching)."""
        staged: list[Tensor] = []
        outputs: list[tuple[np.ndarray, Tensor]] = []
        args: list[Any] = []
        views = self._form.views(call)
        try:
            for i, (slot, v) in enumerate(zip(self._slots, self._ops)):
                if slot.kind == "scalar":
                    args.append(scalars[i])
                    continue
                if isinstance(v, np.ndarray):
                    t = Tensor(v) if slot.kind == "in" else Tensor._empty(v.shape, call.info[i][0])
                    staged.append(t)
                    if slot.kind == "out":
                        outputs.append((v, t))
                    v = t
                args.append(v._alias(views[i]))
            blocks = self._form.blocks(call)
            params = tuple(sorted(self._params.items()))
            kern = self._form.kernel(self.pto_name, params)
            if show is not None:
                return show(kern, args, blocks)
            kern[blocks](*args)
            if not staged:                     # device tensors only: the next execute() may reuse it
                run = kern.ready_launch(blocks, args) or functools.partial(kern[blocks], *args)
                self._ready = (tuple(v for v in self._ops if isinstance(v, Tensor)), run)
            for host, t in outputs:
                np.copyto(host, t.numpy())
        finally:
            for t in staged:
                if not t.is_freed:
                    t.free()


def operand_index(insn: str, index: Any, names: list[str]) -> int:
    """``index`` as an int in 0 .. len(names) - 1 (OperandIndexError listing the operands)."""
    n = len(names)
    if isinstance(index, np.integer):
        index = int(index)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
        raise OperandIndexError(
            f"{insn}.set_operand({index!r}, ...): operand index out of range",
            rule=f"{insn} has {n} operands, indices 0..{n - 1}: "
                 + ", ".join(f"{i}={name}" for i, name in enumerate(names)),
            fix=f"use an index from 0 to {n - 1}")
    return index


# Other sources of loadable instructions, asked first by load_insn (custom IDL operators register
# theirs: pypto/idl/custom.py). Each maps a name to an instruction object, or None.
PROVIDERS: list[Callable[[str], Any]] = []


def _loadable(pto_name: str) -> bool:
    return _form(pto_name) is not None


def load_insn(name: str, **params: Any) -> Insn:
    """Load an instruction by seed name ("add") or PTO name ("TADD"); keyword arguments set its
    mode parameters (``load_insn("cast", rmode="CAST_RINT")``)."""
    if not isinstance(name, str):
        raise InsnNotFoundError(f"Insn {name!r} not found: instruction names are strings",
                                rule="load_insn takes a seed name (\"add\") or a PTO name (\"TADD\")",
                                fix="pass the name as a string")
    if not runtime.is_initialized():
        raise InsnNotFoundError(
            f"Insn {name} not found",
            rule="the instruction library is loaded by pypto.init(); no session is running",
            fix="call pypto.init() first")
    for provider in PROVIDERS:
        found = provider(name)
        if found is not None:
            return found
    return library_insn(name, **params)


def library_insn(name: str, **params: Any) -> Insn:
    """load_insn's built-in instruction, never a custom operator of that name: what a custom
    operator's own steps run (one loaded with ``replace=True`` may take a library name)."""
    sess = runtime.current()
    spec = isa.lookup(name)
    if spec is not None and _loadable(spec.name):
        return Insn(spec, sess, params)
    if spec is not None:
        simulated, why = registry.status(spec.name)
        detail = "has no whole-tensor library kernel" if simulated else f"is not simulated yet ({why})"
        raise InsnNotFoundError(
            f"Insn {name} not found: {spec.name} (opcode {spec.opcode:#06x}) is a PTO instruction but "
            f"{detail}",
            rule="load_insn() serves the instructions listed by pypto.list_insns()",
            fix=f"use pto.{spec.name} inside an @pypto.kernel" if simulated else
                "see `pypto info` for what the simulator runs")
    near = [n for n in isa.closest(name) if _loadable(isa.lookup(n).name)]
    hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
    raise InsnNotFoundError(f"Insn {name} not found{hint}",
                            rule=f"loaded instructions: {', '.join(list_insns())}",
                            fix="check the spelling (seed names are lower case, PTO names upper case)")


def list_insns() -> list[str]:
    """Seed names load_insn() accepts (their PTO names work too), in table order."""
    return [spec.seed for spec in isa.TABLE.values() if spec.seed and _loadable(spec.name)]
