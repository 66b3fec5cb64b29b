"""The IR verifier rejects hand-built IR that the DSL would have refused, with the same errors."""
from __future__ import annotations

import pytest

import pypto
from pypto.errors import DTypeError, DTypeMismatchError, LocationError, OperandError, VerifyError
from pypto.ir.nodes import InstrNode, Kernel, TileType, TileVar
from pypto.ir.verify import verify
from pypto.isa.soc import A2A3


def _tile(name, dtype=pypto.float32, loc="Vec", addr=0):
    t = TileVar(TileType(loc, dtype, 8, 8), (8, 8), False, name)
    t.addr = addr
    return t


def _kernel(node, tiles):
    return Kernel("hand_built", [], tiles, [node], "a2a3")


def test_well_formed_ir_passes():
    a, b = _tile("a"), _tile("b", addr=256)
    verify(_kernel(InstrNode("TADD", (a, a, b)), [a, b]), A2A3)


@pytest.mark.parametrize("dt_a, dt_b, loc_a, err", [
    (pypto.float32, pypto.int32, "Vec", DTypeMismatchError),     # operands share one dtype
    (pypto.bfloat16, pypto.bfloat16, "Vec", DTypeError),         # no bf16 TADD on a2a3
    (pypto.float32, pypto.float32, "Mat", LocationError),        # TADD works on Vec tiles
])
def test_table_rules(dt_a, dt_b, loc_a, err):
    a, b = _tile("a", dt_a, loc_a), _tile("b", dt_b, addr=256)
    with pytest.raises(err):
        verify(_kernel(InstrNode("TADD", (a, a, b)), [a, b]), A2A3)


def test_arity_and_declarations():
    a, b = _tile("a"), _tile("b", addr=256)
    with pytest.raises(OperandError):
        verify(_kernel(InstrNode("TADD", (a, b)), [a, b]), A2A3)
    with pytest.raises(VerifyError, match="not declared"):
        verify(_kernel(InstrNode("TADD", (a, a, b)), [a]), A2A3)
    unplaced = _tile("c", addr=None)
    with pytest.raises(VerifyError, match="never placed"):
        verify(_kernel(InstrNode("TADD", (a, a, unplaced)), [a, unplaced]), A2A3)
    with pytest.raises(VerifyError, match="unknown instruction"):
        verify(_kernel(InstrNode("TNOPE", (a,)), [a]), A2A3)
