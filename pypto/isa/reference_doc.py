"""Render the ISA table as the instruction reference (docs/isa-reference.md).

Facts only: what is implemented (simulated, emitted, served by load_insn) comes in through a
``status`` function, so this module imports no program code. ``python3 -m pypto.docgen``
rewrites the file with the registry's status; a test checks that the committed file equals it,
so the reference cannot drift from the table or the implementation.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from . import CATEGORY_BASE, PROFILES, TABLE
from .schema import LAYOUTS, Instr, Operand, Param, PipeRule

OUTPUT = Path(__file__).resolve().parents[2] / "docs" / "isa-reference.md"

_TITLES = {
    "elementwise": "Elementwise tile-tile (5.2)",
    "tile_scalar": "Tile-scalar (5.3)",
    "reduce_expand": "Axis reduce / expand (5.4)",
    "memory": "Memory GM <-> tile (5.5)",
    "matmul": "Matrix multiply (5.6, 6)",
    "movement": "Data movement / layout (5.7)",
    "complex": "Complex (5.8)",
    "sync": "Synchronisation and manual binding (5.1)",
    "comm": "Communication (5.10)",
    "intrinsic": "Intrinsics without an ISA page (5.11)",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _dtype(d: Any) -> str:
    if isinstance(d, tuple):
        if all(x is None for x in d):
            return "any"
        return "(" + ", ".join("-" if x is None else str(x) for x in d) + ")"
    return str(d)


def _dtypes(ins: Instr, soc: str) -> str:
    dts = ins.dtypes_on(soc)
    if not dts:
        return "—"
    return ("; " if isinstance(dts[0], tuple) else " ").join(_dtype(d) for d in dts)


def _pipe(ins: Instr, soc: str) -> str:
    """The pipe on ``soc``; for location-dependent pipes, each pipe with the locations that pick it."""
    rule = ins.pipe if isinstance(ins.pipe, (str, PipeRule)) else ins.pipe.get(soc)
    if not isinstance(rule, PipeRule):
        return str(rule)
    by_pipe: dict[str, list[str]] = {}
    for key, pipe in rule.table.items():
        by_pipe.setdefault(pipe, []).append("->".join(key))
    return ", ".join(f"{p} ({' '.join(keys)})" for p, keys in by_pipe.items())


def _operand(op: Operand) -> str:
    bits = [op.kind, op.role]
    if isinstance(op.locs, tuple) and op.locs:
        bits.append("/".join(op.locs))
    elif op.locs and not isinstance(op.locs, tuple):
        bits.append("; ".join(f"{s}: {'/'.join(v)}" for s, v in op.locs.items()))
    if op.kind == "tile" and op.layouts != LAYOUTS:
        bits.append("layout " + "/".join(op.layouts))
    if op.group:
        bits.append(f"type {op.group}")
    if op.optional:
        bits.append("optional")
    return f"`{op.name}` ({', '.join(bits)})"


def _param(p: Param) -> str:
    values = " ".join(str(v) for v in p.values) if p.values else "any"
    default = "no default" if p.default is None else f"default `{p.default}`"
    return f"`{p.name}`: {p.type} [{values}], {default}"


def _operand_header(ins: Instr) -> str:
    if any(isinstance(d, tuple) for s in PROFILES for d in ins.dtypes_on(s)):
        return "dtypes (" + ", ".join(o.name for o in ins.operands) + ")"
    return "dtypes (type T)"


@dataclass(frozen=True)
class Status:
    """What pypto implements of one instruction (given by the caller; isa/ holds facts only)."""
    simulated: bool = False
    emitted: bool = False
    load_insn: str | None = None     # the seed-level name load_insn serves, if any
    why: str = ""                    # why it is not simulated


def _status_line(st: Status) -> str:
    if not st.simulated:
        return f"* Status: not simulated ({st.why})" if st.why else "* Status: not simulated"
    bits = ["simulated (compiled and eager)"]
    bits.append("emitted as PTO C++" if st.emitted else "no C++ emission")
    bits.append(f"`load_insn(\"{st.load_insn}\")`" if st.load_insn else "no load_insn form")
    return "* Status: " + ", ".join(bits)


def _mark(st: Status) -> tuple[str, str, str]:
    return ("yes" if st.simulated else "no", "yes" if st.emitted else "no",
            f"`{st.load_insn}`" if st.load_insn else "")


def _instr(ins: Instr, socs: Iterable[str], st: Status | None = None) -> list[str]:
    socs = list(socs)
    out = [f"### {ins.name}", "", f"`{ins.opcode:#06x}` — {ins.summary}", "",
           "| | " + " | ".join(socs) + " |", "|---|" + "---|" * len(socs),
           "| pipe | " + " | ".join(_cell(_pipe(ins, s)) for s in socs) + " |",
           f"| {_cell(_operand_header(ins))} | "
           + " | ".join(_cell(_dtypes(ins, s)) for s in socs) + " |", ""]
    if st is not None:
        out.append(_status_line(st))
    ops = ", ".join(_operand(o) for o in ins.operands) or "none"
    out.append(f"* Operands: {ops}")
    for alt in ins.overloads:
        out.append(f"* Also: ({', '.join(_operand(o) for o in alt)})")
    if ins.params:
        out.append("* Params: " + "; ".join(_param(p) for p in ins.params))
    extra = []
    if any(o.kind == "tile" for o in ins.operands):
        extra.append(f"domain: {ins.domain} valid region")
    if ins.seed:
        extra.append(f"seed name: `{ins.seed}`")
    if ins.spec_ref:
        extra.append(f"semantics doc: {ins.spec_ref}")
    if extra:
        out.append("* " + "; ".join(extra))
    if ins.notes:
        out.append("* Notes:")
        out.extend(f"  * {n}" for n in ins.notes)
    out.append("")
    return out


def render_markdown(status: Callable[[str], Status] | None = None) -> str:
    """The reference; ``status(name)`` says what pypto implements (python -m pypto.docgen
    passes the registry's)."""
    socs = list(PROFILES)
    by_cat: dict[str, list[Instr]] = {c: [] for c in sorted(CATEGORY_BASE, key=CATEGORY_BASE.get)}
    for ins in TABLE.values():
        by_cat[ins.category].append(ins)
    lines = ["# PTO instruction reference", "",
             "Generated from `pypto.isa.TABLE` and pypto's instruction registry by `python3 -m "
             "pypto.docgen`; do not edit "
             "by hand. Opcodes are 0x1000 + 0x100 * category + index. Dtype columns give the legal "
             "element types of the operands marked `type T`, or one tuple per legal combination in "
             "operand order (`-` = not a typed operand / absent, `any` = free); `—` means none "
             "listed (absent or TODO on that SoC, or no typed operand). Pipes follow the A5 Op -> "
             "pipe table of the semantics doc. Enum params list their values in C++ enumerator "
             "order; an enumerator's value is its position unless a note says otherwise; \"no "
             "default\" means PTO has no single default (the notes say what omitting it does).", "",
             f"{len(TABLE)} instructions" + (
                 f"; {sum(status(n).simulated for n in TABLE)} simulated." if status else "."),
             "", "## Index", "",
             "| category | instruction | opcode | " + " | ".join(f"pipe {s}" for s in socs)
             + (" | sim | C++ | load_insn" if status else "")
             + " | summary |", "|---|---|---|" + "---|" * len(socs) + ("---|---|---|" if status else "")
             + "---|"]
    for cat, items in by_cat.items():
        for ins in sorted(items, key=lambda i: i.opcode):
            marks = " | ".join(_mark(status(ins.name))) + " | " if status else ""
            lines.append(f"| {cat} | [{ins.name}](#{ins.name.lower()}) | `{ins.opcode:#06x}` | "
                         + " | ".join(_cell(_pipe(ins, s)) for s in socs)
                         + f" | {marks}{_cell(ins.summary)} |")
    lines.append("")
    for cat, items in by_cat.items():
        if not items:
            continue
        lines += [f"## {_TITLES.get(cat, cat)}", ""]
        for ins in sorted(items, key=lambda i: i.opcode):
            lines += _instr(ins, socs, status(ins.name) if status else None)
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    print("the reference needs the registry's status: run python3 -m pypto.docgen")
    sys.exit(2)
