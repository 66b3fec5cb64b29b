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


def test_per_operand_dtype_combinations_are_checked():
    """TCVT, TPRELU, TSEL, TCMP list one dtype per operand; a combination off the list is refused
    (the skeleton never checked these tuples)."""
    f32, i8 = _tile("f", pypto.float32), _tile("i", pypto.int8, addr=256)
    with pytest.raises(DTypeError, match=r"TCVT does not accept the element types \(dst=i8, src=f32\)"):
        verify(_kernel(InstrNode("TCVT", (i8, f32)), [f32, i8]), A2A3)          # f32 -> i8: no such pair
    h = _tile("h", pypto.float16, addr=512)
    verify(_kernel(InstrNode("TCVT", (h, f32)), [f32, h]), A2A3)                 # f32 -> f16 is legal
    a, b, d = _tile("a"), _tile("b", addr=256), _tile("d", addr=512)
    bad_tmp = _tile("t", pypto.int16, addr=768)
    with pytest.raises(DTypeError, match="TPRELU"):                               # a2a3 tmp is u8
        verify(_kernel(InstrNode("TPRELU", (d, a, b, bad_tmp)), [a, b, d, bad_tmp]), A2A3)


def test_optional_operands_may_be_left_out():
    """TMATMUL_ACC's cIn is optional (TMATMUL_ACC(cOut, a, b) accumulates in place): leaving it
    out is legal, leaving out more is not (the skeleton ignored Operand.optional)."""
    from pypto.isa import TABLE
    spec = TABLE["TMATMUL_ACC"]
    assert spec.min_operands == len(spec.operands) - 1
    acc = TileVar(TileType("Acc", pypto.float32, 16, 16, "ColMajor", "RowMajor", 1024), (16, 16), False, "c")
    left = TileVar(TileType("Left", pypto.float16, 16, 16, "RowMajor", "RowMajor"), (16, 16), False, "a")
    right = TileVar(TileType("Right", pypto.float16, 16, 16, "RowMajor", "ColMajor"), (16, 16), False, "b")
    for t in (acc, left, right):
        t.addr = 0
    verify(_kernel(InstrNode("TMATMUL_ACC", (acc, left, right)), [acc, left, right]), A2A3)
    with pytest.raises(OperandError, match="3 to 4 operands"):
        verify(_kernel(InstrNode("TMATMUL_ACC", (acc, left)), [acc, left]), A2A3)
