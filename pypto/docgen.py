"""Generated documentation: ``python3 -m pypto.docgen`` rewrites docs/isa-reference.md from the
ISA table (facts) and the instruction registry (what pypto simulates, emits and serves through
load_insn). A test checks the committed file equals ``isa_reference()``."""
from __future__ import annotations

import sys

from .isa import TABLE
from .isa.reference_doc import OUTPUT, Status, render_markdown


def status(name: str) -> Status:
    """What pypto implements of instruction ``name``, from its registered unit."""
    from .insn import _form
    from .ir import registry
    simulated, why = registry.status(name)
    unit = registry.get(name)
    return Status(simulated=simulated, emitted=bool(unit is not None and unit.emit is not None),
                  load_insn=TABLE[name].seed if _form(name) else None, why=why)


def isa_reference() -> str:
    return render_markdown(status)


def main(argv: list[str] | None = None) -> int:
    text = isa_reference()
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT} ({len(TABLE)} instructions)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
