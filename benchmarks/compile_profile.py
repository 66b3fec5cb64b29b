"""Where numba's compile time goes in a test run: each compiled function's own time (nested compiles
subtracted), how often it compiled, and how much of it was numba's IR inlining (inline="always").

Use it as a pytest plugin; each process (every xdist worker) writes its records when it exits:

    PYTHONPATH=benchmarks COMPILE_PROFILE=cprof .venv/bin/python -m pytest -p compile_profile \\
        -m "not slow" conformance/test_reduce.py
    .venv/bin/python benchmarks/compile_profile.py cprof [--top 40]

Start from empty caches (XDG_CACHE_HOME and NUMBA_CACHE_DIR pointing at a new directory) to see a
cold run; a function loaded from the cache shows as a compile of almost no time. Generated modules
are grouped by kind (pypto_k_*: kernels and their chunks, pypto_t_*: eager trampolines, now only
eager mode's fallback, pypto_ew_*: elementwise loops).
"""
from __future__ import annotations

import argparse
import atexit
import glob
import json
import os
import re
import time
from collections import Counter, defaultdict

_stack: list[list[float]] = []
_records: list[tuple[str, float, float, str]] = []


def _name(dispatcher) -> str:
    f = dispatcher.py_func
    return (f.__module__ or "?").split(".")[-1] + ":" + f.__qualname__


def _inlining(dispatcher, args) -> float:
    """Seconds numba's InlineInlinables pass took in this compile (0 if not recorded)."""
    try:
        times = dispatcher.overloads[tuple(args)].metadata.get("pipeline_times", {})
    except (KeyError, AttributeError, TypeError):
        return 0.0
    return sum(t.init + t.run + t.finalize for passes in times.values()
               for name, t in passes.items() if "inline_inlinables" in name)


def _install(out: str) -> None:
    from numba.core import event

    class Listener(event.Listener):
        def on_start(self, ev):
            _stack.append([time.perf_counter(), 0.0])

        def on_end(self, ev):
            t0, nested = _stack.pop()
            took = time.perf_counter() - t0
            if _stack:
                _stack[-1][1] += took
            d = ev.data["dispatcher"]
            args = ev.data["args"]
            _records.append((_name(d), took - nested, _inlining(d, args), repr(tuple(args))))

    event.register("numba:compile", Listener())
    atexit.register(lambda: _write(out))


def _write(out: str) -> None:
    if _records:
        with open(f"{out}.{os.getpid()}.json", "w") as fh:
            json.dump(_records, fh)


def pytest_configure(config) -> None:
    _install(os.environ.get("COMPILE_PROFILE", "compile_profile"))


_GENERATED = [(re.compile(r"pypto_(ew|ar)_\w+?:"), r"pypto_\1_*:"),
              (re.compile(r"pypto_(\w+?)_[0-9a-f]{24}"), r"pypto_\1_*")]


def report(prefix: str, top: int) -> None:
    recs = []
    seen: defaultdict[tuple[str, str], set] = defaultdict(set)
    for path in glob.glob(prefix + ".*.json"):
        with open(path) as fh:
            mine = json.load(fh)
        recs += mine
        for name, took, _inl, sig in mine:
            seen[name, sig].add(path)
    own: defaultdict[str, float] = defaultdict(float)
    inl: defaultdict[str, float] = defaultdict(float)
    count: Counter = Counter()
    for name, took, inlining, _sig in recs:
        for pat, rep in _GENERATED:
            name = pat.sub(rep, name)
        own[name] += took
        inl[name] += inlining
        count[name] += 1
    print(f"{len(recs)} compiles, {sum(own.values()):.0f} s of compiling, "
          f"{sum(inl.values()):.0f} s of it numba's IR inlining")
    again = [(name, took) for name, took, _inl, sig in recs if len(seen[name, sig]) > 1]
    print(f"compiled in more than one process: {len(again)} compiles, "
          f"{sum(t for _n, t in again):.0f} s (the same function and argument types)")
    print(f"{'own s':>8} {'inlining':>8} {'count':>6}  function")
    for name, t in sorted(own.items(), key=lambda x: -x[1])[:top]:
        print(f"{t:8.1f} {inl[name]:8.1f} {count[name]:6d}  {name}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prefix", help="the COMPILE_PROFILE path the run wrote (<prefix>.<pid>.json)")
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    report(a.prefix, a.top)
