"""Reliability measurements: a concurrent launch soak, processes racing on one kernel cache, and
resource leak checks. The tests run them small (tests/test_reliability.py); the figures in
docs/reliability.md come from running them at full size (benchmarks/reliability.py).

Every launch's result is checked against numpy; a report counts what went wrong instead of
stopping at the first problem, so a figure says how many of N failed.
"""
from __future__ import annotations

import gc
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

import pypto
from pypto import pto


# -- the launches the soak mixes ---------------------------------------------------------------------
@pypto.kernel
def _scale_rows(x, y, s):
    """y = x * s over a 16 x 64 float32 tensor (a cached kernel, compiled once)."""
    t = pto.Tile(pto.Vec, pto.float32, (16, 64))
    pto.TLOAD(t, x)
    pto.TMULS(t, t, s)
    pto.TSTORE(y, t)


@pypto.kernel(mode="eager")
def _add_eager(a, b, c):
    """c = a + b, run instruction by instruction (eager mode beside compiled launches)."""
    ta = pto.Tile(pto.Vec, pto.float32, (16, 64))
    tb = pto.Tile(pto.Vec, pto.float32, (16, 64))
    pto.TLOAD(ta, a)
    pto.TLOAD(tb, b)
    pto.TADD(ta, ta, tb)
    pto.TSTORE(c, ta)


def _new_kernel(depth: int, mode: str | None):
    """A kernel object made for this launch: y = x + depth (depth TADDS in a row). A new object is
    traced again; the same depth shares generated code (a cache hit), a new depth compiles."""
    def body(x, y):
        t = pto.Tile(pto.Vec, pto.float32, (16, 64))
        pto.TLOAD(t, x)
        for _ in range(depth):
            pto.TADDS(t, t, 1.0)
        pto.TSTORE(y, t)
    body.__name__ = body.__qualname__ = f"soak_add{depth}"
    return pypto.kernel(body, mode=mode)


KINDS = ("insn_add", "insn_muls_numpy", "cached_kernel", "eager_kernel", "new_kernel_object",
         "new_kernel_eager")


def _one_launch(kind: str, rng: np.random.Generator) -> bool:
    """One launch of the given kind on fresh random data; True when its result equals numpy's."""
    x = (rng.integers(-50, 50, (16, 64))).astype(np.float32)
    if kind == "insn_add":
        b = (rng.integers(-50, 50, (16, 64))).astype(np.float32)
        with pypto.Tensor(x) as tx, pypto.Tensor(b) as tb, pypto.zeros((16, 64)) as tc:
            insn = pypto.load_insn("add")
            insn.set_operand(0, tx)
            insn.set_operand(1, tb)
            insn.set_operand(2, tc)
            insn.execute()
            return np.array_equal(tc.numpy(), x + b)
    if kind == "insn_muls_numpy":
        s = float(rng.integers(-4, 5))
        out = np.zeros_like(x)
        insn = pypto.load_insn("muls")
        insn.set_operand(0, x)
        insn.set_operand(1, s)
        insn.set_operand(2, out)
        insn.execute()
        return np.array_equal(out, x * np.float32(s))
    with pypto.Tensor(x) as tx, pypto.zeros((16, 64)) as ty:
        if kind == "cached_kernel":
            s = float(rng.integers(-4, 5))
            _scale_rows(tx, ty, s)
            want = x * np.float32(s)
        elif kind == "eager_kernel":
            with pypto.Tensor(x * 2) as tb:
                _add_eager(tx, tb, ty)
            want = x + x * 2
        else:
            depth = int(rng.integers(1, 4))
            _new_kernel(depth, "eager" if kind == "new_kernel_eager" else None)(tx, ty)
            want = x + np.float32(depth)
        return np.array_equal(ty.numpy(), want)


@dataclass
class SoakReport:
    threads: int
    launches: int                      # launches attempted
    wrong: int = 0                     # launches whose result differed from numpy
    errors: list[str] = field(default_factory=list)   # exceptions raised by launches
    seconds: float = 0.0
    by_kind: dict[str, int] = field(default_factory=dict)
    compiles: int = 0

    @property
    def ok(self) -> bool:
        return self.wrong == 0 and not self.errors


def soak(threads: int = 8, per_thread: int = 1000, seed: int = 0) -> SoakReport:
    """threads x per_thread launches of the KINDS mixed at random, all threads starting together
    in the running session; every result checked. Needs pypto.init() first."""
    report = SoakReport(threads, threads * per_thread, by_kind={k: 0 for k in KINDS})
    lock = threading.Lock()
    start = threading.Barrier(threads)
    before = pypto.stats().compiles

    def work(tid: int) -> None:
        rng = np.random.default_rng(seed * 1000 + tid)
        pick = random.Random(seed * 1000 + tid)
        start.wait()
        for _ in range(per_thread):
            kind = pick.choice(KINDS)
            try:
                good = _one_launch(kind, rng)
                err = None
            except Exception as e:  # noqa: BLE001 - counted, not raised: the report is the result
                good, err = False, f"{kind}: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
            with lock:
                report.by_kind[kind] += 1
                if err:
                    report.errors.append(err)
                elif not good:
                    report.wrong += 1

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads, thread_name_prefix="soak") as ex:
        for f in [ex.submit(work, i) for i in range(threads)]:
            f.result()
    report.seconds = time.perf_counter() - t0
    report.compiles = pypto.stats().compiles - before
    return report


# -- processes racing on one cache ----------------------------------------------------------------------
_RACER = r"""
import sys, numpy as np, pypto
from pypto.testing import reliability as R
pypto.init()
rng = np.random.default_rng(int(sys.argv[1]))
bad = [k for k in R.KINDS for _ in range(3) if not R._one_launch(k, rng)]
s = pypto.stats()
print("RESULT", len(bad), s.compiles, s.cache_loads)
"""


@dataclass
class CacheRaceReport:
    processes: int
    wrong: int = 0                       # launches with a wrong result, over every process
    failed: list[str] = field(default_factory=list)    # processes that exited with an error
    compiles: list[int] = field(default_factory=list)  # per racing process
    reload_compiles: int = -1            # a process started after the race: compiles it needed
    reload_loads: int = -1               # ... and kernels it loaded from the cache
    damaged_recovered: bool = False      # after damaging every entry, a process still got it right
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.wrong == 0 and not self.failed and self.damaged_recovered


def _run_racers(n: int, env: dict, timeout: float) -> list[subprocess.CompletedProcess]:
    procs = [subprocess.Popen([sys.executable, "-c", _RACER, str(i)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(n)]
    out = []
    for p in procs:
        try:
            so, se = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            so, se = p.communicate()
        out.append(subprocess.CompletedProcess(p.args, p.returncode, so, se))
    return out


def _result(cp: subprocess.CompletedProcess) -> tuple[int, int, int] | None:
    for line in cp.stdout.splitlines():
        if line.startswith("RESULT "):
            bad, compiles, loads = map(int, line.split()[1:])
            return bad, compiles, loads
    return None


def _damage(cache: str) -> int:
    """Truncate every cached file (generated modules, numba's index and data files)."""
    n = 0
    for root, _, files in os.walk(cache):
        for f in files:
            if f.endswith((".py", ".nbi", ".nbc")):
                with open(os.path.join(root, f), "r+b") as fh:
                    fh.truncate(max(0, os.path.getsize(fh.name) // 3))
                n += 1
    return n


def cache_race(processes: int = 4, timeout: float = 900.0) -> CacheRaceReport:
    """`processes` fresh interpreters compile the soak's kernels into one empty cache directory at
    once; then one more loads them (it should compile nothing), and one more after every cached
    file was truncated (it should compile again and be right)."""
    report = CacheRaceReport(processes)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pypto-race-") as d:
        env = dict(os.environ, PYPTO_CACHE_DIR=os.path.join(d, "kernels"), NUMBA_CACHE_DIR=os.path.join(d, "numba"))
        for i, cp in enumerate(_run_racers(processes, env, timeout)):
            r = _result(cp)
            if cp.returncode or r is None:
                report.failed.append(f"process {i}: exit {cp.returncode}: {cp.stderr.strip()[-400:]}")
                continue
            report.wrong += r[0]
            report.compiles.append(r[1])
        again = _run_racers(1, env, timeout)[0]
        r = _result(again)
        if again.returncode or r is None:
            report.failed.append(f"reload: exit {again.returncode}: {again.stderr.strip()[-400:]}")
        else:
            report.wrong += r[0]
            report.reload_compiles, report.reload_loads = r[1], r[2]
        _damage(d)
        hurt = _run_racers(1, env, timeout)[0]
        r = _result(hurt)
        report.damaged_recovered = hurt.returncode == 0 and r is not None and r[0] == 0
        if not report.damaged_recovered:
            report.failed.append(f"after damage: exit {hurt.returncode}: {hurt.stderr.strip()[-400:]}")
    report.seconds = time.perf_counter() - t0
    return report


# -- leaks -------------------------------------------------------------------------------------------------
def _open_files() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return -1


def _objects() -> int:
    gc.collect()
    return len(gc.get_objects())


@dataclass
class LeakReport:
    alloc_cycles: int
    launches: int
    live_bytes: tuple[int, int] = (0, 0)      # before, after
    objects: tuple[int, int] = (0, 0)         # gc-tracked Python objects, before, after
    open_files: tuple[int, int] = (0, 0)
    seconds: float = 0.0

    def growth(self) -> dict[str, int]:
        return {"live_bytes": self.live_bytes[1] - self.live_bytes[0],
                "objects": self.objects[1] - self.objects[0],
                "open_files": self.open_files[1] - self.open_files[0]}


def _alloc_cycle(i: int, pick: random.Random) -> None:
    """One create/free cycle: zeros, empty or a host copy in varied shapes and dtypes; every
    fourth cycle a construction that fails (a failing call must not leak either)."""
    shape = (pick.randrange(1, 64), pick.randrange(1, 64))
    dt = (pypto.float32, pypto.float16, pypto.int8, pypto.int32, pypto.bfloat16)[i % 5]
    how = i % 4
    if how == 3:
        try:
            pypto.Tensor([1.5, 2], dtype=pypto.int32)
        except pypto.errors.DTypeError:
            return
        raise AssertionError("pypto.Tensor([1.5, 2], dtype=int32) was accepted")
    t = pypto.zeros(shape, dt) if how == 0 else pypto.empty(shape, dt) if how == 1 else \
        pypto.Tensor(np.ones(shape, np.float32))
    t.free()


def leak_check(alloc_cycles: int = 100_000, launches: int = 10_000, seed: int = 0) -> LeakReport:
    """alloc_cycles tensor create/free cycles and `launches` launches of the soak's kinds, after
    a warm-up of both (compiling, caching); what grew in between."""
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    for i in range(2000):                        # warm-up: every kind, depth and cache filled once
        _alloc_cycle(i, pick)
    for i in range(300):
        _one_launch(KINDS[i % len(KINDS)], rng)
    report = LeakReport(alloc_cycles, launches)
    report.live_bytes = (pypto.stats().live_bytes, 0)
    report.objects, report.open_files = (_objects(), 0), (_open_files(), 0)
    t0 = time.perf_counter()
    for i in range(alloc_cycles):
        _alloc_cycle(i, pick)
    for _ in range(launches):
        if not _one_launch(pick.choice(KINDS), rng):
            raise AssertionError("a launch of the leak check computed a wrong result")
    report.seconds = time.perf_counter() - t0
    report.live_bytes = (report.live_bytes[0], pypto.stats().live_bytes)
    report.objects = (report.objects[0], _objects())
    report.open_files = (report.open_files[0], _open_files())
    return report
