"""`pypto` command: `pypto info` (version, SoC profiles, simulated instructions) and
`pypto doctor` (what the npu backend still needs on this machine)."""
from __future__ import annotations

import argparse
import sys


def _info() -> int:
    import pypto
    from pypto.backends.sim.lowering import SIMULATED
    from pypto.isa import PROFILES, TABLE
    print(f"pypto {pypto.__version__}")
    for p in PROFILES.values():
        caps = ", ".join(f"{sp.buffer}={sp.capacity // 1024} KiB" for sp in p.spaces.values())
        print(f"  soc {p.name}: {p.description}; {caps}")
    print(f"  ISA table: {len(TABLE)} instructions; simulated: {', '.join(sorted(SIMULATED))}")
    print(f"  seed instructions: {', '.join(pypto.list_insns())}")
    return 0


def _doctor() -> int:
    from pypto.backends import is_available
    ok, missing = is_available("npu")
    print("sim backend: available")
    if ok:
        print("npu backend: available")
        return 0
    print("npu backend: not available here:")
    for m in missing:
        print(f"  - {m}")
    return 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="pypto", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="version, SoC profiles, instructions")
    sub.add_parser("doctor", help="check the npu backend's prerequisites")
    ns = ap.parse_args(argv)
    return {"info": _info, "doctor": _doctor}[ns.cmd]()


if __name__ == "__main__":
    sys.exit(main())
