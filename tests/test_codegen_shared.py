"""Generated kernels compute a repeated index subexpression once per scope (codegen.expr's bind):
numba types and lowers every copy of `(rows + 15) // 16` or `min(16, rows - r0)` otherwise, which
was 3.4 of the 5.8 s the library matmul kernel took to compile. Results must not change."""
from __future__ import annotations

import re

import numpy as np
import pytest

import pypto
from pypto import pto

ROWS = 16


@pytest.mark.parametrize("mode", ["compiled", "eager"])
def test_a_repeated_tail_expression_is_computed_once_and_the_result_is_unchanged(mode):
    @pypto.kernel(mode=mode)
    def k(x, y, z):
        rows, cols = x.shape
        t = pto.Tile(pto.Vec, pto.float32, (ROWS, 64), valid=pto.DYNAMIC)
        u = pto.Tile(pto.Vec, pto.float32, (ROWS, 64), valid=pto.DYNAMIC)
        for i in pto.range(pto.block_idx(), (rows + ROWS - 1) // ROWS, pto.block_num()):
            h = pto.min(ROWS, rows - i * ROWS)
            t.set_valid(h, cols)
            u.set_valid(h, cols)
            pto.TLOAD(t, x[i * ROWS:i * ROWS + h, :])
            pto.TLOAD(u, y[i * ROWS:i * ROWS + h, :])
            pto.TADD(t, t, u)
            pto.TSTORE(z[i * ROWS:i * ROWS + h, :], t)

    pypto.init()
    try:
        rng = np.random.default_rng(3)
        xh = rng.standard_normal((37, 48)).astype(np.float32)
        yh = rng.standard_normal((37, 48)).astype(np.float32)
        x, y, z = pypto.Tensor(xh), pypto.Tensor(yh), pypto.zeros((37, 48), pypto.float32)
        k[2](x, y, z)
        np.testing.assert_array_equal(z.numpy(), xh + yh)
        if mode == "compiled":
            prog = next(p for ir in k._traces.values() for p in ir.programs.values())
            body = prog.artifact.gen.source.split("def kernel(", 1)[1]
            shared = [ln for ln in body.splitlines() if re.match(r"\s+_e\d+ = ", ln)]
            others = [ln for ln in body.splitlines() if ln not in shared]
            # each floordiv / min is written once, as a shared local; every use reads the local
            assert shared and not [ln for ln in others if "//" in ln or "min(" in ln]
            assert len(shared) == len(set(ln.split(" = ", 1)[1] for ln in shared))
    finally:
        pypto.finalize()


def test_an_index_expression_is_walked_once_per_node():
    """codegen.expr finds an operand's purity in the walk that writes it: asking again at every
    level (as it once did) walked a depth-d expression d^2/2 times."""
    from pypto.backends.sim import codegen
    from pypto.ir.nodes import BinOp, Var

    reads = []

    class Counted(BinOp):
        def __getattribute__(self, name):
            if name == "lhs":
                reads.append(1)
            return object.__getattribute__(self, name)

    depth = 200
    x = Var("n", "shape")
    for i in range(depth):
        x = Counted("floordiv" if i % 2 else "+", x, i + 1)
    names = {}
    src = codegen.expr(x, lambda s: names.setdefault(s, f"_e{len(names)}"))
    assert len(reads) <= 2 * depth
    # the same expression, written without the counter, by the same rules: every floordiv is bound
    assert src.startswith("_e") and len(names) == depth // 2
