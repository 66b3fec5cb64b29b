"""pto-isa's golden files, so an existing pto-isa test case can check a pypto kernel.

pto-isa's tests generate one directory per case (its ``gen_data.py``) holding ``input1.bin``,
``input2.bin``, ... and ``golden.bin``: raw row-major arrays with no header. The case's name
carries what the files do not: ``TADDTest.case_float_64x64_64x64_64x64`` is float32 data with a
64 x 64 global shape, a 64 x 64 tile and a 64 x 64 valid region. ``read_case`` reads such a
directory (dtype and shape may be given where a name does not follow that pattern) and
``PtoIsaCase.check(actual)`` compares a result with the golden over the valid region, where
pto-isa's goldens are defined.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import dtypes as D
from ..errors import ConfigError
from .compare import assert_close

# the words pto-isa's case names use for element types
DTYPE_WORDS = {"float": "float32", "fp32": "float32", "half": "float16", "fp16": "float16",
               "bf16": "bfloat16", "bfloat16": "bfloat16", "int8": "int8", "uint8": "uint8",
               "int16": "int16", "uint16": "uint16", "int32": "int32", "uint32": "uint32",
               "int64": "int64", "uint64": "uint64"}
_SHAPE = re.compile(r"^\d+(x\d+)+$")
_INPUT = re.compile(r"^input(\d*)\.bin$")


@dataclass
class PtoIsaCase:
    """One pto-isa test case: its inputs and golden as numpy arrays, and the shapes its name gives."""
    name: str
    dtype: D.DType
    shapes: list[tuple[int, ...]]        # as named: global, tile, valid (those present)
    inputs: list[np.ndarray]
    golden: np.ndarray

    @property
    def valid(self) -> tuple[int, ...] | None:
        return self.shapes[2] if len(self.shapes) >= 3 else None

    def check(self, actual: Any, **tolerance: Any) -> dict:
        """assert_close of ``actual`` against the golden over the valid region (all of it when
        the name gives none); tolerance as assert_close's (ulp=, rtol=, atol=)."""
        from .compare import _array
        a = _array(actual, "actual").reshape(self.golden.shape)
        region = tuple(slice(0, n) for n in self.valid) if self.valid and len(self.valid) == a.ndim else ...
        return assert_close(a[region], self.golden[region], dtype=self.dtype, what=self.name, **tolerance)


def read_case(path: str | Path, dtype: Any = None, shape: tuple[int, ...] | None = None) -> PtoIsaCase:
    """Read a pto-isa case directory. ``dtype`` and ``shape`` override what its name says (and
    are needed when it says nothing); each file is shaped as the global shape, else the tile's."""
    p = Path(path)
    if not (p / "golden.bin").exists():
        raise ConfigError(f"{p}: no golden.bin", rule="a pto-isa case directory holds input*.bin and "
                          "golden.bin (its gen_data.py writes them)",
                          fix="run the test's gen_data.py, then pass the case directory it made")
    words = p.name.split(".")[-1].split("_")
    named = next((DTYPE_WORDS[w] for w in words if w in DTYPE_WORDS), None)
    shapes = [tuple(int(n) for n in w.split("x")) for w in words if _SHAPE.match(w)]
    if dtype is None and named is None:
        raise ConfigError(f"{p.name}: the name gives no element type",
                          rule=f"pto-isa case names carry it ({', '.join(sorted(DTYPE_WORDS))})",
                          fix="pass dtype=pypto.float32 (or the case's type)")
    dt = D.as_dtype(dtype if dtype is not None else named, context="read_case dtype")
    if shape is not None:
        shapes = [tuple(shape)] + shapes[1:]
    inputs = sorted((f for f in p.iterdir() if _INPUT.match(f.name)),
                    key=lambda f: int(_INPUT.match(f.name).group(1) or 0))

    def load(f: Path) -> np.ndarray:
        raw = np.fromfile(f, dtype=dt.np)
        for s in shapes[:2]:
            if math.prod(s) == raw.size:
                return raw.reshape(s)
        return raw

    return PtoIsaCase(p.name, dt, shapes, [load(f) for f in inputs], load(p / "golden.bin"))
