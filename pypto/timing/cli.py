"""`pypto trace script.py [args]`: run a script; every kernel launch in it is also laid out on
the pipes (pypto.timeline) and written as Chrome trace JSON (and a PNG with --plot)."""
from __future__ import annotations

import argparse
import os
import runpy
import sys

from .. import runtime


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="pypto trace", description=__doc__)
    ap.add_argument("script", help="a Python script that launches kernels (or load_insn(...).execute())")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    ap.add_argument("-o", "--out", default=".", metavar="DIR",
                    help="where the traces go: DIR/<kernel>-<n>.json (default: .)")
    ap.add_argument("--plot", action="store_true", help="also draw DIR/<kernel>-<n>.png (matplotlib)")
    ap.add_argument("--max", type=int, default=20, metavar="N",
                    help="trace at most N launches (default 20); the rest run untraced")
    ns = ap.parse_args(argv)
    from ..errors import PtoError
    from . import timeline
    os.makedirs(ns.out, exist_ok=True)
    written: list[str] = []

    def hook(kern, grid, args, run):
        if len(written) >= ns.max:
            return run()
        tl = timeline(kern, *args, grid=grid)
        base = os.path.join(ns.out, f"{tl.kernel}-{len(written)}")
        written.append(tl.save(base + ".json"))
        if ns.plot:
            tl.plot(base + ".png")
        print(f"[pypto trace] {tl}\n[pypto trace] wrote {base}.json (open in https://ui.perfetto.dev)",
              file=sys.stderr)

    before = runtime.launch_hook
    runtime.launch_hook = hook
    sys.argv = [ns.script] + ns.args
    try:
        runpy.run_path(ns.script, run_name="__main__")
    except PtoError as e:
        print(f"pypto trace: error: {e}", file=sys.stderr)
        return 1
    finally:
        runtime.launch_hook = before
    if not written:
        print("pypto trace: the script launched no kernel", file=sys.stderr)
        return 1
    return 0
