"""Generated files: ``python3 -m pypto.docgen`` rewrites docs/isa-reference.md from the ISA table
(facts) and the instruction registry (what pypto simulates, emits and serves through load_insn),
and pypto/units/_index.py (which unit module registers each instruction). Tests check both
committed files equal what these functions make."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


UNITS_INDEX = Path(__file__).resolve().parent / "units" / "_index.py"


def units_index() -> str:
    """units.packaged_index() from a new process, where no unit module is imported yet."""
    return subprocess.run([sys.executable, "-c", "from pypto.units import packaged_index; "
                           "print(packaged_index(), end='')"], check=True, capture_output=True,
                          text=True).stdout


def main(argv: list[str] | None = None) -> int:
    UNITS_INDEX.write_text(units_index(), encoding="utf-8")
    print(f"wrote {UNITS_INDEX}")
    text = isa_reference()
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT} ({len(TABLE)} instructions)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
