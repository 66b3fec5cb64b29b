"""Render the ISA table as the instruction reference (docs/isa-reference.md).

``python3 -m pypto.isa.reference_doc`` rewrites the file; a test checks that the committed file
equals ``render_markdown()``, so the reference cannot drift from the table.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterable

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


def _instr(ins: Instr, socs: Iterable[str]) -> list[str]:
    socs = list(socs)
    out = [f"### {ins.name}", "", f"`{ins.opcode:#06x}` — {ins.summary}", "",
           "| | " + " | ".join(socs) + " |", "|---|" + "---|" * len(socs),
           "| pipe | " + " | ".join(_cell(_pipe(ins, s)) for s in socs) + " |",
           f"| {_cell(_operand_header(ins))} | "
           + " | ".join(_cell(_dtypes(ins, s)) for s in socs) + " |", ""]
    ops = ", ".join(_operand(o) for o in ins.operands) or "none"
    out.append(f"* Operands: {ops}")
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


def render_markdown() -> str:
    socs = list(PROFILES)
    by_cat: dict[str, list[Instr]] = {c: [] for c in sorted(CATEGORY_BASE, key=CATEGORY_BASE.get)}
    for ins in TABLE.values():
        by_cat[ins.category].append(ins)
    lines = ["# PTO instruction reference", "",
             "Generated from `pypto.isa.TABLE` by `python3 -m pypto.isa.reference_doc`; do not edit "
             "by hand. Opcodes are 0x1000 + 0x100 * category + index. Dtype columns give the legal "
             "element types of the operands marked `type T`, or one tuple per legal combination in "
             "operand order (`-` = not a typed operand / absent, `any` = free); `—` means none "
             "listed (absent or TODO on that SoC, or no typed operand). Pipes follow the A5 Op -> "
             "pipe table of the semantics doc. Enum params list their values in C++ enumerator "
             "order; an enumerator's value is its position unless a note says otherwise; \"no "
             "default\" means PTO has no single default (the notes say what omitting it does).", "",
             f"{len(TABLE)} instructions.", "", "## Index", "",
             "| category | instruction | opcode | " + " | ".join(f"pipe {s}" for s in socs)
             + " | summary |", "|---|---|---|" + "---|" * len(socs) + "---|"]
    for cat, items in by_cat.items():
        for ins in sorted(items, key=lambda i: i.opcode):
            lines.append(f"| {cat} | [{ins.name}](#{ins.name.lower()}) | `{ins.opcode:#06x}` | "
                         + " | ".join(_cell(_pipe(ins, s)) for s in socs)
                         + f" | {_cell(ins.summary)} |")
    lines.append("")
    for cat, items in by_cat.items():
        if not items:
            continue
        lines += [f"## {_TITLES.get(cat, cat)}", ""]
        for ins in sorted(items, key=lambda i: i.opcode):
            lines += _instr(ins, socs)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    text = render_markdown()
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT} ({len(TABLE)} instructions)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
