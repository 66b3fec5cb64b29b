"""The C ABI of a library built from ``pypto codegen``'s C++: its version, its description and the
order of an operator's dimension symbols (shared by the generator and the loader)."""
from __future__ import annotations

from . import ast as A

ABI_VERSION = 1
ABI = """C ABI of a generated library (version 1):
  int pypto_abi_version(void);                 -> 1
  const char *pypto_manifest(void);            -> the operators' canonical IDL text
  int pypto_reference_<Operator>(const int64_t *dims, const double *const *inputs,
                                 double *const *outputs, const double *scalars);
      dims: the sizes of the operator's dimension symbols, in order of first appearance in its
      fields (inputs, then outputs); inputs: its tensor inputs in declaration order, row-major,
      as double; outputs: its outputs likewise (written); scalars: its Scalar inputs in
      declaration order. Returns 0, or 1 for an integer division by zero."""


def symbols(op: A.Operator) -> list[str]:
    """An operator's dimension symbols in ABI order (first appearance: inputs, then outputs)."""
    out: list[str] = []
    for f in tuple(op.inputs) + tuple(op.outputs):
        if isinstance(f, A.TensorField):
            out += [d for d in f.dims if isinstance(d, str) and d not in out]
    return out
