"""Rules the bit, shift, compare and select units share, beyond the ISA table's: operands that
must not overlap, predicate masks that must fit their tile, one source covering another.

Each rule is checked when the kernel is traced where the facts are static (same tile twice,
addresses pypto placed or a TASSIGN gave, static valid regions), else at run time: a numba check
(a UNIT_RULE fault, decoded here into the PtoError the trace-time check raises) and the same check
as a guard in the emitted C++. Registers no instruction.
"""
from __future__ import annotations

from ..backends import errcodes as EC
from ..backends import faults
from ..errors import PtoError, TileError, ValidRegionError
from ..ir.nodes import TileVar, is_static
from ..ir.verify import slots_of

LOOPS = f"{__package__}.bits_checks"     # the run-time checks (numba): imported when a kernel is generated


# rule ids of this family's UNIT_RULE faults (err[1]); err[2..5] hold the values listed
OVERLAP = 1        # operand a, operand b
MASK_ROWS = 2      # operand k, valid rows, valid cols (a per-row mask: validRow rows of ceil(vc/8) B)
MASK_STREAM = 3    # operand k, bits (a5: one stream of validRow * validCol bits)
COVERS = 4         # operand k, its valid rows, cols, the reference operand, 0


def mask_bytes(cols: int) -> int:
    return -(-cols // 8)


# -- numba side ---------------------------------------------------------------------------------


# -- trace time -----------------------------------------------------------------------------------
def _label(node, k: int) -> str:
    slots = slots_of(node.name, node.operands)
    x = node.operands[k]
    name = slots[k].name if k < len(slots) else f"operand {k}"
    return f"{name} {x.name}" if isinstance(x, TileVar) else name


def overlap_error(node, i: int, j: int, rule: str, where: str = "") -> TileError:
    return TileError(f"{node.name}: {_label(node, i)} and {_label(node, j)} share on-chip storage{where}",
                     rule=rule, fix="use distinct tiles at disjoint addresses (pypto places tiles it "
                                    "allocates apart; check the TASSIGN addresses)")


def check_disjoint(node, pairs: list[tuple[int, int]], rule: str) -> None:
    """Static part of a no-overlap rule: the same tile twice, or placed ranges that overlap."""
    ops = node.operands
    for i, j in pairs:
        a, b = ops[i], ops[j]
        if a is b:
            raise overlap_error(node, i, j, rule)
        if isinstance(a.addr, int) and isinstance(b.addr, int) and a.type.loc == b.type.loc and \
                a.addr < b.addr + b.type.nbytes and b.addr < a.addr + a.type.nbytes:
            raise overlap_error(node, i, j, rule, f" (bytes {a.addr:#x}..{a.addr + a.type.nbytes:#x} "
                                                  f"and {b.addr:#x}..{b.addr + b.type.nbytes:#x})")


def runtime_pairs(node, pairs) -> list[tuple[int, int]]:
    """The pairs pypto cannot rule out before the run: a tile placed by a TASSIGN (its address
    may be a runtime value) or not placed yet."""
    ops = node.operands
    return [(i, j) for i, j in pairs if ops[i] is not ops[j] and
            any(x.manual or not isinstance(x.addr, int) for x in (ops[i], ops[j]))]


def mask_rows_error(node, k: int, vr, vc) -> ValidRegionError:
    t = node.operands[k]
    rb = t.type.cols * t.type.dtype.itemsize
    return ValidRegionError(
        f"{node.name}: {_label(node, k)} holds {t.type.rows} rows of {rb} bytes, but a {vr} x {vc} "
        f"region needs {vr} rows of {mask_bytes(vc)} bytes of predicate bits",
        rule=f"{node.name} reads / writes predicate bits per row: row i at byte i * "
             f"{t.name}'s row bytes, one bit per element",
        fix=f"declare {t.name} with at least {vr} rows and {mask_bytes(vc)} bytes per row")


def check_mask_rows(node, k: int, vr, vc) -> None:
    t = node.operands[k]
    if not (is_static(vr) and is_static(vc)):
        return
    if vr > t.type.rows or mask_bytes(vc) > t.type.cols * t.type.dtype.itemsize:
        raise mask_rows_error(node, k, vr, vc)


def mask_stream_error(node, k: int, bits) -> ValidRegionError:
    t = node.operands[k]
    return ValidRegionError(
        f"{node.name}: {_label(node, k)} holds {t.type.nbytes} bytes, but {bits} predicate bits need "
        f"{mask_bytes(bits)}",
        rule=f"on a5 {node.name} writes one bit stream of validRow * validCol bits from byte 0",
        fix=f"declare {t.name} with at least {mask_bytes(bits)} bytes")


def covers_error(node, k: int, kv, ref: int, rv) -> ValidRegionError:
    return ValidRegionError(
        f"{node.name}: {_label(node, k)} has a {kv[0]} x {kv[1]} valid region but "
        f"{_label(node, ref)}'s is {rv[0]} x {rv[1]}",
        rule=f"{node.name} reads the same elements of every source over "
             f"{_label(node, ref).split()[0]}'s valid region",
        fix=f"give {node.operands[k].name} a valid region of at least {rv[0]} x {rv[1]}")


def check_covers_src(node, k: int, ref: int) -> None:
    a, b = node.operands[k], node.operands[ref]
    for s, d in zip(a.valid, b.valid):
        if is_static(s) and is_static(d) and s < d:
            raise covers_error(node, k, a.valid, ref, b.valid)


# -- run-time faults -> errors ----------------------------------------------------------------
OVERLAP_RULES: dict[str, str] = {}        # instruction -> the no-overlap rule text


def _decode(rule: int, v: list[int], node) -> PtoError:
    if rule == OVERLAP:
        return overlap_error(node, v[0], v[1], OVERLAP_RULES.get(node.name, "operands must not overlap"),
                             " (TASSIGN addresses known at run time)")
    if rule == MASK_ROWS:
        return mask_rows_error(node, v[0], v[1], v[2])
    if rule == MASK_STREAM:
        return mask_stream_error(node, v[0], v[1])
    if rule == COVERS:
        ref = node.operands[v[3]]
        return covers_error(node, v[0], (v[1], v[2]), v[3], ("?", "?") if ref is None else
                            tuple(x if is_static(x) else "(runtime)" for x in ref.valid))
    return PtoError(f"{node.name}: unknown rule {rule}", rule="this is a pypto bug", fix="report it")


def decoder(name: str, overlap_rule: str | None = None) -> None:
    """Decode instruction ``name``'s UNIT_RULE faults with this module's messages."""
    faults.UNIT_RULES[name] = _decode
    if overlap_rule:
        OVERLAP_RULES[name] = overlap_rule


# -- C++ ----------------------------------------------------------------------------------------------
def guard(cx, node, violated: str, rule: int, *values: str) -> list[str]:
    """C++ that ends the block with the UNIT_RULE fault ``rule`` when ``violated`` holds."""
    if not cx.with_guards:
        return []
    if not cx.sites or cx.sites[-1] is not node:
        cx.sites.append(node)
    site = len(cx.sites) - 1
    vals = ", ".join(f"(int64_t)({v})" for v in (values + ("0",) * 4)[:4])
    return [f"PYPTO_GUARD({site}, ({violated}) && pypto_fault(pypto_err, {EC.UNIT_RULE}, {rule}, {vals}));"]


def _addr(cx, t) -> str:
    return f"((uint64_t)&({cx.operand(t)}.data())[0])"


def overlap_guards(cx, node, pairs) -> list[str]:
    """Run-time no-overlap guards for the pairs whose addresses pypto does not know."""
    out: list[str] = []
    ops = node.operands
    for i, j in runtime_pairs(node, pairs):
        a, b = ops[i], ops[j]
        cond = (f"{_addr(cx, a)} < {_addr(cx, b)} + {b.type.nbytes} && "
                f"{_addr(cx, b)} < {_addr(cx, a)} + {a.type.nbytes}")
        out += guard(cx, node, cond, OVERLAP, str(i), str(j))
    return out


def overlap_calls(L, node, pairs) -> list:
    """Simulator calls checking the run-time pairs (each tile's storage array)."""
    ops = node.operands
    out = []
    for i, j in runtime_pairs(node, pairs):
        out.append(L.Call(L.Fn(LOOPS, "disjoint"),
                          (L.lit(i), L.tile(ops[i]), L.lit(j), L.tile(ops[j]), L.err())))
    return out
