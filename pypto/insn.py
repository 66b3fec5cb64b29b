"""The seed's instruction-level API: ``load_insn(name)`` -> Insn, bind operands, ``execute()``.

Each Insn runs the library kernel of its instruction's form (binary, scalar, unary, rowreduce,
cast; declared by the instruction's unit) over whole tensors. Operands are device tensors or numpy
arrays; numpy operands are staged (inputs H2D before, outputs D2H after, all counted in
pypto.stats()), unless ``pypto.init(strict_host_operands=True)``. Mode parameters (TCVT's rounding
and saturation) are keyword arguments of ``load_insn`` or ``set_param``, named as in ``pto.TCVT``.
Everything is validated before anything is written, so a failed execute() leaves its outputs
untouched.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import diagnostics as Dx
from . import dtypes as D
from . import isa, runtime
from .errors import (DTypeError, DTypeMismatchError, HostMemoryError, InsnNotFoundError,
                     OperandError, OperandIndexError, OperandNotSetError, ShapeError)
from .ir import registry
from .ir.verify import check_params
from .library import kernel_for, launch_dims
from .library.kernels import elementwise_chunks, row_chunks, row_width
from .tensor import Tensor

_UNSET = object()


@dataclass(frozen=True)
class _Slot:
    name: str
    kind: str      # "in" | "out" | "scalar"


# Seed operand order per form: inputs first, then the output.
SLOTS = {
    "binary": (_Slot("src0", "in"), _Slot("src1", "in"), _Slot("dst", "out")),
    "scalar": (_Slot("src", "in"), _Slot("scalar", "scalar"), _Slot("dst", "out")),
    "unary": (_Slot("src", "in"), _Slot("dst", "out")),
    "rowreduce": (_Slot("src", "in"), _Slot("dst", "out")),
    "cast": (_Slot("src", "in"), _Slot("dst", "out")),
}


def _form(pto_name: str) -> str | None:
    u = registry.get(pto_name)
    return u.seed if u is not None and u.sim is not None else None


class Insn:
    """A loaded instruction. Operand order is the seed's: inputs first, then the output."""

    def __init__(self, spec: isa.Instr, session: runtime.Session, params: dict[str, Any]):
        self._spec = spec
        self._session = session
        self._formname = _form(spec.name)
        self._slots = SLOTS[self._formname]
        self._ops: list[Any] = [_UNSET] * len(self._slots)
        self._params: dict[str, Any] = {}
        legal = spec.dtypes_on(session.soc.name)
        self.dtypes: tuple[D.DType, ...] = tuple(D.BY_NAME[s] for s in legal if isinstance(s, str))
        for k, v in params.items():
            self.set_param(k, v)

    name = property(lambda self: self._spec.seed or self._spec.name.lower())
    pto_name = property(lambda self: self._spec.name)
    insn_id = property(lambda self: self._spec.opcode)
    num_operands = property(lambda self: len(self._slots))
    params = property(lambda self: dict(self._params))

    @property
    def signature(self) -> str:
        args = ", ".join(f"{s.name}: {'scalar' if s.kind == 'scalar' else 'tensor'}" for s in self._slots)
        if self._formname == "cast":
            legal = ", ".join(f"{s}->{d}" for d, s in self._spec.dtypes_on(self._session.soc.name))
        else:
            legal = ", ".join(d.name for d in self.dtypes)
        ps = "".join(f", {p.name}={self._params.get(p.name, p.default)!r}" for p in self._spec.params)
        return (f"{self.name}({args}{ps})  # {self._spec.summary}; {self.pto_name} opcode "
                f"{self.insn_id:#06x}; dtypes on {self._session.soc.name}: {legal}")

    def __repr__(self) -> str:
        return f"<pypto.Insn {self.signature}>"

    # -- binding ------------------------------------------------------------------------------
    def set_operand(self, index: int, value: Any) -> None:
        """Bind operand ``index`` (0-based, seed order) to a Tensor, numpy array or scalar."""
        n = len(self._slots)
        if isinstance(index, np.integer):
            index = int(index)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
            raise OperandIndexError(
                f"{self.name}.set_operand({index!r}, ...): operand index out of range",
                rule=f"{self.name} has {n} operands, indices 0..{n - 1}: "
                     + ", ".join(f"{i}={s.name}" for i, s in enumerate(self._slots)),
                fix=f"use an index from 0 to {n - 1}")
        self._ops[index] = value

    def set_param(self, name: str, value: Any) -> None:
        """Set a mode parameter (e.g. rmode="CAST_RINT" for cast), as pto.<NAME>(..., name=value)."""
        if isinstance(value, np.generic):
            value = value.item()
        check_params(self._spec.name, {name: value})
        self._params[name] = value

    # -- execution ------------------------------------------------------------------------------
    def _tensor_info(self, i: int, slot: _Slot, v: Any) -> tuple[D.DType, tuple]:
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
        if self._formname == "cast":
            return ", ".join(f"{s}->{d}" for d, s in self._spec.dtypes_on(self._session.soc.name))
        return ", ".join(d.name for d in self.dtypes)

    def execute(self) -> None:
        """Run the instruction. Validates every operand first; then stages, launches, copies back."""
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
        dt = getattr(self, f"_check_{self._formname}", self._check_same)(info)
        scalar = None
        for i, (slot, v) in enumerate(zip(self._slots, self._ops)):
            if slot.kind == "scalar":
                scalar = self._scalar(v, dt)
        self._run(info, scalar)

    def _check_same(self, info: dict) -> D.DType:
        """Forms whose tensors share one element type and one shape."""
        (first, (dt, shape)), *rest = info.items()
        for i, (vdt, vshape) in rest:
            what = f"{self.name} operand {i} ({self._slots[i].name})"
            if vdt != dt:
                raise DTypeMismatchError(f"{what} is {vdt.name} but operand {first} is {dt.name}",
                                         rule=f"{self.name}'s operands share one element type",
                                         fix=f"convert them to one type, e.g. dtype=pypto.{dt.name}")
            if self._formname != "rowreduce" and vshape != shape:
                raise ShapeError(f"{what} has shape {vshape} but operand {first} has {shape}",
                                 rule=f"{self.name} is elementwise over equal shapes (no broadcasting)",
                                 fix="pass operands of the same shape")
        if dt not in self.dtypes:
            raise DTypeError(
                f"{self.name} does not accept {dt.name} on {self._session.soc.name}",
                rule=f"{self.name} takes {self._legal_text()} on {self._session.soc.name}",
                fix="convert the operands" + (" or use pypto.init(soc='a5')"
                                              if dt.short in self._spec.dtypes_on("a5") and
                                              self._session.soc.name != "a5" else ""))
        return dt

    def _check_rowreduce(self, info: dict) -> D.DType:
        dt = self._check_same(info)
        (sshape), (dshape) = info[0][1], info[1][1]
        if len(sshape) != 2:
            raise ShapeError(f"{self.name} operand 0 (src) has shape {sshape}",
                             rule=f"{self.name} reduces each row of a 2-D (rows, cols) tensor",
                             fix="reshape the input to (rows, cols)")
        if dshape not in ((sshape[0],), (sshape[0], 1)):
            raise ShapeError(f"{self.name} operand 1 (dst) has shape {dshape} for a {sshape} source",
                             rule=f"{self.name} writes one value per row: dst is (rows,) or (rows, 1)",
                             fix=f"pass a dst of shape ({sshape[0]},)")
        if sshape[1] > row_width(dt.itemsize) or sshape[1] < 1:
            raise ShapeError(f"{self.name}: rows of {sshape[1]} elements",
                             rule=f"load_insn's {self.name} takes rows of 1 .. {row_width(dt.itemsize)} "
                                  f"{dt.name} elements (one tile of the library kernel)",
                             fix="write an @pypto.kernel that reduces wider rows in several tiles")
        return dt

    def _check_cast(self, info: dict) -> D.DType:
        (sdt, sshape), (ddt, dshape) = info[0], info[1]
        if sshape != dshape:
            raise ShapeError(f"{self.name} operand 1 (dst) has shape {dshape} but src has {sshape}",
                             rule=f"{self.name} converts elementwise over equal shapes",
                             fix="pass a dst of the source's shape")
        soc = self._session.soc.name
        if (ddt.short, sdt.short) not in self._spec.dtypes_on(soc):
            raise DTypeError(f"{self.name} cannot convert {sdt.name} to {ddt.name} on {soc}",
                             rule=f"{self.name} on {soc} converts {self._legal_text()}",
                             fix="pick a legal pair (convert in two steps through float32)")
        if self._params.get("rmode") == "CAST_ODD" and (sdt.short, ddt.short) != ("f32", "f16") \
                and soc == "a5":
            raise OperandError(f"{self.name}: rmode=CAST_ODD converts only float32 -> float16 on a5",
                               rule="on a5 TCVT with CAST_ODD does nothing for any other pair, so the "
                                    "output would keep whatever it held",
                               fix="use another rounding mode")
        return sdt

    def _scalar(self, v: Any, dt: D.DType):
        if isinstance(v, np.generic) and not isinstance(v, np.bool_):
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise OperandError(f"{self.name} operand 1 (scalar): {type(v).__name__} is not a number",
                               rule="the scalar operand is a Python or numpy number",
                               fix="pass an int or a float")
        Dx.check_scalar(self.name, "operand 1 (scalar)", v, dt)
        return int(v) if dt.is_int else float(v)

    def _run(self, info: dict, scalar) -> None:
        """Stage numpy operands, launch the library kernel on flat (or 2-D) views in seed order,
        copy staged outputs back, free what was staged."""
        staged: list[Tensor] = []
        outputs: list[tuple[np.ndarray, Tensor]] = []
        args: list[Any] = []
        form = self._formname
        try:
            for i, (slot, v) in enumerate(zip(self._slots, self._ops)):
                if slot.kind == "scalar":
                    args.append(scalar)
                    continue
                if isinstance(v, np.ndarray):
                    t = Tensor(v) if slot.kind == "in" else Tensor._empty(v.shape, info[i][0])
                    staged.append(t)
                    if slot.kind == "out":
                        outputs.append((v, t))
                    v = t
                if form == "rowreduce":
                    shape = info[0][1] if slot.kind == "in" else (info[0][1][0], 1)
                else:
                    shape = (v.size,)
                args.append(v._alias(shape))
            cores = self._session.soc.aiv_cores
            if form == "rowreduce":
                blocks = launch_dims(row_chunks(info[0][1][0]), cores)
            else:
                itemsize = 4 if form == "cast" else info[0][0].itemsize
                blocks = launch_dims(elementwise_chunks(max(args[0].size, 1), itemsize), cores)
            params = tuple(sorted(self._params.items()))
            kernel_for(self.pto_name, form, params)[blocks](*args)
            for host, t in outputs:
                np.copyto(host, t.numpy())
        finally:
            for t in staged:
                if not t.is_freed:
                    t.free()


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


def load_custom_insn(path: str) -> None:
    """Custom instructions from IDL files / generated .so (not built yet in this version)."""
    from .errors import NotSimulatedError
    raise NotSimulatedError(f"load_custom_insn({path!r}): custom instructions (IDL) are not built yet",
                            rule="IDL parsing, codegen and .so loading come with the IDL work",
                            fix="write the operator as an @pypto.kernel for now")
