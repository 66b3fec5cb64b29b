"""The shape of one ISA table entry. Everything about an instruction that is a fact, not code.

Opcode map (stable, listed in docs/isa-reference.md): 0x1000 + 0x100 * category + index.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

PIPES = ("S", "V", "MTE1", "MTE2", "MTE3", "M", "FIX", "ALL")

CATEGORY_BASE = {
    "elementwise": 0x1000,   # 5.2 tile-tile
    "tile_scalar": 0x1100,   # 5.3
    "reduce_expand": 0x1200, # 5.4
    "memory": 0x1300,        # 5.5 GM <-> tile
    "matmul": 0x1400,        # 5.6 / 6
    "movement": 0x1500,      # 5.7 data movement / layout
    "complex": 0x1600,       # 5.8
    "sync": 0x1700,          # 5.1 synchronisation and manual binding
    "comm": 0x1800,          # 5.10 communication
    "intrinsic": 0x1900,     # 5.11 intrinsics without an ISA page
}


# Tile layout names (pto-isa-semantics 3.1): unboxed ND/DN, boxed Zz/Nz/Zn, and Nn (only the MX
# scales of ScaleRight use it).
UNBOXED = ("ND", "DN")
LAYOUTS = ("ND", "DN", "Zz", "Nz", "Zn", "Nn")

# (BLayout, SLayout) of each layout name, and the C++ tile aliases of pto_tile.hpp (3.4):
# alias -> (location, layout name, fractal); "left" is the SoC's own (SocProfile.left_layout).
LAYOUT_ORDERS = {"ND": ("RowMajor", "NoneBox"), "DN": ("ColMajor", "NoneBox"),
                 "Zz": ("RowMajor", "RowMajor"), "Nz": ("ColMajor", "RowMajor"),
                 "Zn": ("RowMajor", "ColMajor"), "Nn": ("ColMajor", "ColMajor")}
TILE_ALIASES = {"TileLeft": ("Left", "left", 512), "TileRight": ("Right", "Zn", 512),
                "TileAcc": ("Acc", "Nz", 1024), "TileLeftScale": ("ScaleLeft", "Zz", 32),
                "TileRightScale": ("ScaleRight", "Nn", 32), "TileBias": ("Bias", "ND", 512),
                "TileScaling": ("Scaling", "ND", 512), "TileMatNz": ("Mat", "Nz", 512),
                "TileMatZn": ("Mat", "Zn", 512)}

# Which core kind a tile location belongs to: vector (AIV) or cube (AIC) side of an AI core.
CORE_OF_LOC = {"Vec": "AIV", "Mat": "AIC", "Left": "AIC", "Right": "AIC", "Acc": "AIC",
               "Bias": "AIC", "Scaling": "AIC", "ScaleLeft": "AIC", "ScaleRight": "AIC"}


@dataclass(frozen=True)
class Operand:
    """One operand slot, in PTO order (destination first).

    kind: "tile" | "gm" | "scalar"; role: "out" | "in" | "inout" | "tmp".
    locs: legal tile locations, the same on every SoC, or a mapping SoC -> locations.
    group: operands with the same group letter share a dtype; group None means the operand's
    dtype is given by ``Instr.dtypes`` combinations or free. layouts: legal tile layouts.
    region: which bytes the instruction touches: "valid" (the valid region) or "whole" (the
    whole tile, e.g. a scratch tmp). optional: trailing operands that may be left out.
    """
    name: str
    kind: str = "tile"
    role: str = "in"
    locs: tuple[str, ...] | Mapping[str, tuple[str, ...]] = ("Vec",)
    group: str | None = "T"
    optional: bool = False
    layouts: tuple[str, ...] = LAYOUTS
    region: str = "valid"

    def locs_on(self, soc: str) -> tuple[str, ...]:
        if isinstance(self.locs, tuple):
            return self.locs
        return tuple(self.locs.get(soc, ()))

    @property
    def reads(self) -> bool:
        return self.role in ("in", "inout")

    @property
    def writes(self) -> bool:
        return self.role in ("out", "inout", "tmp")


@dataclass(frozen=True)
class PipeRule:
    """The pipe as a function of operand locations: ``operands`` names the operands whose
    locations form the key of ``table`` (TSTORE: src Vec -> MTE3, Acc -> FIX)."""
    operands: tuple[str, ...]
    table: Mapping[tuple[str, ...], str]
    default: str | None = None


@dataclass(frozen=True)
class Param:
    """A compile-time mode parameter (CmpMode, RoundMode, ...) with its legal values and default."""
    name: str
    type: str
    values: tuple[Any, ...] = ()
    default: Any = None


@dataclass(frozen=True)
class Instr:
    """One PTO instruction.

    dtypes: per SoC profile, the legal element types of group "T" as dtype short names
    ("f32", "i16", ...), or, for instructions whose operands differ in type, tuples giving one
    dtype per operand in ``operands`` order (use None for non-tile/free operands).
    pipe: a plain string (every SoC), a mapping SoC -> pipe, or a PipeRule (or a mapping SoC ->
    PipeRule) when the pipe depends on operand locations. scratch: SoCs on which the instruction
    also writes the SoC's hidden UB scratch (SocProfile.ub_scratch).
    """
    name: str
    opcode: int
    category: str
    summary: str
    operands: tuple[Operand, ...]
    dtypes: Mapping[str, tuple[Any, ...]]
    pipe: str | Mapping[str, Any] | PipeRule = "V"
    params: tuple[Param, ...] = ()
    seed: str | None = None              # load_insn name, e.g. "add"
    domain: str = "dst"                  # iteration domain: dst / src valid region
    notes: tuple[str, ...] = field(default=())
    spec_ref: str = ""                   # section of pto-isa-semantics.md
    scratch: tuple[str, ...] = ()
    # other operand lists of the same instruction (C++ overloads: TDIVS(dst, scalar, src),
    # TGATHER(dst, src) with a mask pattern); chosen by operand kinds. Operands keep the names
    # of the main list where they play the same part (per-operand dtypes match by name).
    overloads: tuple[tuple[Operand, ...], ...] = ()
    returns: str | None = None           # a value the instruction returns (TTEST: "bool")

    def pipe_on(self, soc: str, locs: Mapping[str, str] | None = None) -> str | None:
        """The pipe that runs this instruction on ``soc``; ``locs`` maps operand names to tile
        locations (needed when the pipe depends on them; None when they are not known)."""
        rule = self.pipe if isinstance(self.pipe, (str, PipeRule)) else self.pipe.get(soc)
        if not isinstance(rule, PipeRule):
            return rule
        if locs is None:
            return rule.default
        key = tuple(locs.get(n) for n in rule.operands)
        return rule.table.get(key, rule.default)

    @property
    def min_operands(self) -> int:
        return sum(1 for o in self.operands if not o.optional)

    def slots_for(self, n: int, kinds: tuple[str, ...] | None = None,
                  locs: tuple[str | None, ...] | None = None) -> tuple[Operand, ...]:
        """The operand slots a use with n operands fills: optional slots are left out from the
        last one backwards (TMATMUL_ACC(cOut, a, b) leaves out cIn). ``kinds`` (each operand's
        "tile" / "gm" / "scalar") and ``locs`` (each tile's location) pick among the overloads:
        the first list they fit (TMATMUL_MX(c, a, aScale, b, bScale, bias) and its accumulating
        TMATMUL_MX(cOut, cIn, a, aScale, b, bScale) differ only in locations)."""
        if kinds is not None and self.overloads:
            for ops in (self.operands,) + self.overloads:
                slots = _fill(ops, n)
                if len(slots) == n and all(k == o.kind or (k == "point" and o.kind in ("scalar", "gm"))
                                           for o, k in zip(slots, kinds)) \
                        and (locs is None or all(_loc_fits(o, x) for o, x in zip(slots, locs))):
                    return slots
        return _fill(self.operands, n)

    def dtypes_on(self, soc: str) -> tuple[Any, ...]:
        return tuple(self.dtypes.get(soc, ()))

    @property
    def num_operands(self) -> int:
        return len(self.operands)

    @property
    def outputs(self) -> tuple[Operand, ...]:
        return tuple(o for o in self.operands if o.role in ("out", "inout"))

    @property
    def inputs(self) -> tuple[Operand, ...]:
        return tuple(o for o in self.operands if o.role in ("in", "inout"))


def _loc_fits(o: Operand, loc: str | None) -> bool:
    """A tile in ``loc`` may fill slot ``o`` on some SoC (None: not a tile, or not known)."""
    if loc is None or o.kind != "tile":
        return True
    allowed = o.locs if isinstance(o.locs, tuple) else tuple(x for v in o.locs.values() for x in v)
    return loc in allowed


def _fill(operands: tuple[Operand, ...], n: int) -> tuple[Operand, ...]:
    """``operands`` with optional slots left out from the last one backwards, down to n."""
    drop = len(operands) - n
    if drop <= 0:
        return operands
    keep = list(operands)
    for i in range(len(keep) - 1, -1, -1):
        if drop <= 0:
            break
        if keep[i].optional:
            del keep[i]
            drop -= 1
    return tuple(keep)


def both(*dts: str) -> dict[str, tuple[str, ...]]:
    """Same dtype list on both SoC profiles."""
    return {"a2a3": tuple(dts), "a5": tuple(dts)}


def per_soc(a2a3: str, a5: str) -> dict[str, tuple[str, ...]]:
    """Dtype lists written as space-separated short names, per SoC."""
    return {"a2a3": tuple(a2a3.split()), "a5": tuple(a5.split())}


# Operand shorthands used by the category modules.
# Vector-side tiles are unboxed (ND or DN) on the NPU.
DST = Operand("dst", role="out", layouts=UNBOXED)
SRC = Operand("src", layouts=UNBOXED)
SRC0 = Operand("src0", layouts=UNBOXED)
SRC1 = Operand("src1", layouts=UNBOXED)
SCALAR = Operand("scalar", kind="scalar", locs=(), group=None)
TMP = Operand("tmp", role="tmp", layouts=UNBOXED, region="whole")
