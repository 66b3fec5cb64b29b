"""Static rules the axis reductions and broadcasts share (5.4): which valid sizes must agree and
the layouts of the one-value-per-row / per-column operands. What only the run time knows is
checked by the numba loops (same_rows / same_cols / covers) and by the guards below."""
from __future__ import annotations

from ..errors import LayoutError, OperandError, ValidRegionError
from ..ir import guards as G
from ..ir.nodes import TileVar, binop, is_static

# the codes reduce_lib.py's loops take (here, so the units that lower to them trace without numba)
SUM, PROD, MAX, MIN = 0, 1, 2, 3                      # reduction kinds
SEQ_A2A3, SEQ_A5, PAIR_A2A3, PAIR_A5 = 0, 1, 2, 3     # column orders
LOOPS = f"{__package__}.reduce_lib"                   # the module of those loops
# the row / column broadcasts: instruction suffix -> opc (its index) and their loops' module
EXPAND_OPS = ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN", "EXPDIF")
EXPAND_LOOPS = f"{__package__}.expand_ops"

ROWS, COLS = 0, 1
_WHAT = ("rows", "columns")


def c0(t: TileVar) -> int:
    """Elements of t's type in one 32-byte block."""
    return 32 // t.type.dtype.itemsize


def equal_valid(name: str, slot: str, x: TileVar, dst: TileVar, axis: int, why: str) -> None:
    """x's valid rows (axis 0) or columns (axis 1) equal dst's when both are static."""
    a, b = x.valid[axis], dst.valid[axis]
    if is_static(a) and is_static(b) and a != b:
        w = _WHAT[axis]
        raise ValidRegionError(f"{name}: {slot} {x.name} has {a} valid {w} but dst {dst.name} has {b}",
                               rule=f"{name}: {why} ({slot}.valid{'Row' if axis == 0 else 'Col'} == "
                                    f"dst.valid{'Row' if axis == 0 else 'Col'}; the NPU asserts it)",
                               fix=f"give {x.name} and {dst.name} the same number of valid {w} "
                                   "(valid=... or set_valid)")


def fixed_valid(name: str, slot: str, x: TileVar, axis: int, need: int, why: str) -> None:
    """x's valid size on ``axis`` is ``need`` when it is static."""
    a = x.valid[axis]
    if is_static(a) and a != need:
        w = _WHAT[axis]
        raise ValidRegionError(f"{name}: {slot} {x.name} has {a} valid {w}; it needs {need}",
                               rule=f"{name}: {why}",
                               fix=f"declare {x.name} with {need} valid {w} (valid=... or set_valid)")


def column_vector(name: str, slot: str, x: TileVar, why: str) -> None:
    """A DN operand holding one value per row must be an (R, 1) column."""
    if x.type.layout_name == "DN" and x.type.cols != 1:
        raise LayoutError(f"{name}: {slot} {x.name} is a DN tile with {x.type.cols} columns",
                          rule=f"{name}: {why}",
                          fix=f"declare {x.name} with shape ({x.type.rows}, 1) and blayout=pto.ColMajor")


def check_row_reduce(node, soc) -> None:
    """TROWSUM / TROWPROD / TROWMAX / TROWMIN: dst is an R x 1 column with src's valid rows."""
    name = node.name
    dst, src = node.operands[0], node.operands[1]
    column_vector(name, "dst", dst, "a row reduction writes one value per row into an R x 1 tile: "
                                    "a DN column (Cols == 1) or an ND tile with one valid column")
    fixed_valid(name, "dst", dst, COLS, 1, "a row reduction writes column 0 only: dst's valid region "
                                           "is R x 1")
    equal_valid(name, "src", src, dst, ROWS, "a row reduction writes one value per source row")


def check_col_reduce(node, soc) -> None:
    """TCOLSUM / TCOLPROD / TCOLMAX / TCOLMIN: dst row 0 gets one value per source column."""
    name = node.name
    dst, src = node.operands[0], node.operands[1]
    equal_valid(name, "src", src, dst, COLS, "a column reduction writes one value per source column")


def check_tmp_rows_cols(node, binary: bool) -> None:
    """TCOLSUM's tmp: at least src's valid columns, and (pairwise adds) half its valid rows;
    a dynamic valid size is taken at its capacity."""
    name = node.name
    src, tmp = node.operands[1], node.operands[2]
    cols = src.valid[1] if is_static(src.valid[1]) else src.type.cols
    if tmp.type.cols < cols:
        raise OperandError(f"{name}: tmp {tmp.name} has {tmp.type.cols} columns but src {src.name} "
                           f"may have {cols} valid columns",
                           rule=f"{name}: src.validCol <= tmp.Cols (the NPU asserts it)",
                           fix=f"declare {tmp.name} with at least {cols} columns (src's shape works)")
    rows = (src.valid[0] if is_static(src.valid[0]) else src.type.rows) // 2
    if binary and tmp.type.rows < rows:
        raise OperandError(f"{name}: tmp {tmp.name} has {tmp.type.rows} rows but isBinary=True "
                           f"needs {rows} (half of src {src.name}'s valid rows)",
                           rule=f"{name} with isBinary adds row pairs into tmp: tmp needs "
                                "src.validRow / 2 rows",
                           fix=f"declare {tmp.name} with at least {rows} rows (src's shape works)")


# -- run-time guards (the NPU backends' mirrors of the numba checks) -------------------------------

def same_cols(k: int, x: TileVar, dst: TileVar) -> G.Guard:
    return G.Guard("same_cols", (k, x.valid[1], dst.valid[1]))


def same_rows(k: int, x: TileVar, dst: TileVar) -> G.Guard:
    return G.Guard("same_rows", (k, x.valid[0], dst.valid[0]))


def guard_col_reduce(node, soc) -> list:
    return [same_cols(1, node.operands[1], node.operands[0])]


def covers_row0(k: int, x: TileVar, dst: TileVar) -> G.Guard:
    """x has a valid row 0 covering dst's valid columns (when dst is not empty)."""
    return G.Guard("covers", (k, x.valid[0], x.valid[1], binop("min", dst.valid[0], 1), dst.valid[1]))
