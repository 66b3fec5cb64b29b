"""The whole-tensor forms ``load_insn`` serves, as data: a form is the seed operand order, the
rules its tensors must meet, the shape each tensor is viewed as, the library kernel it runs and
how many blocks that kernel is launched on.

An instruction's unit names its form (``Unit.seed``); a family module of ``pypto.library``
registers the forms it defines with ``register``. ``pypto.insn`` is generic over them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from .. import dtypes as D
from ..errors import DTypeError, DTypeMismatchError, ShapeError


@dataclass(frozen=True)
class Slot:
    name: str
    kind: str                  # "in" | "out" | "scalar"


@dataclass
class Call:
    """What a form's rules see of one execute(): the instruction and its operands' (dtype, shape)
    by seed index (tensors only), its mode parameters and the session's SoC profile."""
    name: str                  # seed name, for messages
    spec: Any                  # isa.Instr
    soc: Any                   # SocProfile
    params: dict
    info: dict[int, tuple[D.DType, tuple]]
    slots: tuple[Slot, ...]

    def what(self, i: int) -> str:
        return f"{self.name} operand {i} ({self.slots[i].name})"

    @property
    def legal(self) -> tuple[D.DType, ...]:
        return tuple(D.BY_NAME[s] for s in self.spec.dtypes_on(self.soc.name) if isinstance(s, str))


@dataclass(frozen=True)
class Form:
    """check(call) -> the element type scalars convert to (raises a PtoError otherwise);
    views(call) -> the shape each tensor operand is passed to the kernel as, by seed index;
    kernel(pto_name, params) -> the library kernel; blocks(call) -> its block count;
    example(dtype, to) -> arguments for ``pypto cpp --insn`` (pypto.empty tensors and scalars);
    legal_text(call) -> the element types the signature lists; params: load_insn parameters of
    the form itself (not of the instruction), e.g. matmul's relu epilogue."""
    name: str
    slots: tuple[Slot, ...]
    kernel: Callable[[str, tuple], Any]
    check: Callable[[Call], D.DType]
    views: Callable[[Call], dict[int, tuple]]
    blocks: Callable[[Call], int]
    example: Callable[[Any, Any], tuple]
    legal_text: Callable[[Call], str] | None = None
    params: tuple = ()


FORMS: dict[str, Form] = {}


def register(form: Form) -> Form:
    FORMS[form.name] = form
    return form


def slots(spec: str) -> tuple[Slot, ...]:
    """'src:in scalar:scalar dst:out' -> slots."""
    return tuple(Slot(*p.split(":")) for p in spec.split())


# -- rules forms share ---------------------------------------------------------------------------

def legal_names(call: Call) -> str:
    return ", ".join(d.name for d in call.legal)


def require_legal(call: Call, dt: D.DType) -> None:
    if dt not in call.legal:
        other = "a5" if call.soc.name != "a5" else "a2a3"
        raise DTypeError(
            f"{call.name} does not accept {dt.name} on {call.soc.name}",
            rule=f"{call.name} takes {legal_names(call)} on {call.soc.name}",
            fix="convert the operands" + (f" or use pypto.init(soc='{other}')"
                                          if dt.short in call.spec.dtypes_on(other) else ""))


def same_dtype(call: Call, indices=None) -> D.DType:
    """The operands (all tensors, or ``indices``) share one element type, legal on the SoC."""
    idx = [i for i in call.info if indices is None or i in indices]
    first = idx[0]
    dt = call.info[first][0]
    for i in idx[1:]:
        vdt = call.info[i][0]
        if vdt != dt:
            raise DTypeMismatchError(f"{call.what(i)} is {vdt.name} but operand {first} is {dt.name}",
                                     rule=f"{call.name}'s operands share one element type",
                                     fix=f"convert them to one type, e.g. dtype=pypto.{dt.name}")
    require_legal(call, dt)
    return dt


def same_shape(call: Call, indices=None) -> tuple:
    idx = [i for i in call.info if indices is None or i in indices]
    first = idx[0]
    shape = call.info[first][1]
    for i in idx[1:]:
        if call.info[i][1] != shape:
            raise ShapeError(f"{call.what(i)} has shape {call.info[i][1]} but operand {first} has {shape}",
                             rule=f"{call.name} is elementwise over equal shapes (no broadcasting)",
                             fix="pass operands of the same shape")
    return shape


def matrix(call: Call, i: int, max_cols: int | None = None) -> tuple[int, int]:
    """Operand i is a 2-D (rows, cols) tensor (rows at most ``max_cols`` wide)."""
    shape = call.info[i][1]
    if len(shape) != 2 or 0 in shape:
        raise ShapeError(f"{call.what(i)} has shape {shape}",
                         rule=f"{call.name} works on a 2-D (rows, cols) tensor",
                         fix="reshape the input to (rows, cols)")
    if max_cols is not None and shape[1] > max_cols:
        raise ShapeError(f"{call.name}: rows of {shape[1]} elements",
                         rule=f"load_insn's {call.name} takes rows of 1 .. {max_cols} "
                              f"{call.info[i][0].name} elements (one tile of the library kernel)",
                         fix="write an @pypto.kernel that works on wider rows in several tiles")
    return shape


def vector_of(call: Call, i: int, n: int, what: str) -> None:
    """Operand i holds one value per row (shape (n,) or (n, 1)) or per column (what="column":
    (n,) or (1, n))."""
    shape = call.info[i][1]
    two_d = (1, n) if what == "column" else (n, 1)
    if shape not in ((n,), two_d):
        raise ShapeError(f"{call.what(i)} has shape {shape}",
                         rule=f"{call.name}'s {call.slots[i].name} holds one value per {what}: "
                              f"shape ({n},) or {two_d}", fix=f"pass an operand of shape ({n},)")


def flat(call: Call) -> dict[int, tuple]:
    """Every tensor viewed as one flat run of elements."""
    return {i: (math.prod(s),) for i, (_, s) in call.info.items()}


__all__ = ["Slot", "Call", "Form", "FORMS", "register", "slots", "legal_names", "require_legal",
           "same_dtype", "same_shape", "matrix", "vector_of", "flat"]
