#!/usr/bin/env python3
"""Hardware smoke test for pypto's NPU backend: one command, one report to send back.

On an Ascend machine (CANN toolkit installed and sourced, pyACL importable, PTO_ISA_ROOT set):

    source <CANN>/set_env.sh            # e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh
    export PTO_ISA_ROOT=<pto-isa checkout>
    cd <pypto checkout>
    python scripts/npu_smoke.py         # add --soc a5 on an A5 machine; --quick skips step 4

Each step below runs isolated (a failure never stops the next one), is timed, and records
PASS, FAIL or SKIP with the error text:

1. environment: Python, numpy, numba and pypto versions, the ASCEND_* / PTO_ISA_ROOT / PYPTO_*
   variables, `python -m pypto doctor` and `npu-smi info`;
2. the tutorial: examples/step*.py and examples/kernel_add_rows.py, run with PYPTO_BACKEND set;
3. library kernels: every instruction of pypto.list_insns() through load_insn / set_operand /
   execute, a few dtypes and shapes with tails, compared with conformance/reference.py;
4. the conformance quick tier: pytest conformance --backend B -m "not slow".

It writes npu-smoke-report.md and npu-smoke-report.json in the current directory and exits 0
when everything that ran passed, 1 otherwise. Send both files back (they contain the versions,
the variables listed above, and test output; read them first if your paths are private).
Without an NPU, `--backend sim` dry-runs the same steps on the simulator. See docs/npu-smoke.md.
"""
from __future__ import annotations

import argparse
import datetime
import functools
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import xml.etree.ElementTree as ET
import zlib
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent          # the pypto checkout
sys.path.insert(0, str(ROOT))
CASE_TAG = "SMOKE-CASE "                               # worker -> parent result lines
NAMED_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "PTO_ISA_ROOT")
VAR_PREFIXES = ("ASCEND_", "PYPTO_")
TAIL_LINES = 20


# -- steps and subprocesses ---------------------------------------------------------------------
@dataclass
class Step:
    name: str
    result: str = "PASS"     # PASS | FAIL | SKIP
    seconds: float = 0.0
    note: str = ""           # one line for the summary table
    error: str = ""          # first lines of the exception, or the failing subprocess's tail
    output: str = ""         # stdout tail
    details: Any = None      # step-specific data (versions, kernel cases, conformance counts)


@dataclass
class Context:
    args: argparse.Namespace
    tmp: str                 # scratch working directory of every subprocess (removed at the end)
    env: dict[str, str]      # environment of every subprocess


@dataclass
class Proc:
    rc: int | None           # None: killed after printing nothing for --timeout seconds
    out: str
    err: str


def tail(text: str, n: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-n:])


def error_text(e: BaseException, n: int = 15) -> str:
    """The first lines of an exception as Python prints its last line (pypto's errors are several
    lines: message, Rule, Fix)."""
    text = "".join(traceback.format_exception_only(type(e), e)).rstrip()
    return "\n".join(text.splitlines()[:n])


def failure_text(text: str, n: int = 25) -> str:
    """From the last `SomeError: ...` line of a traceback to its end, else the tail."""
    lines = text.rstrip().splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b", lines[i]):
            return "\n".join(lines[i:i + n])
    return tail(text)


def proc_error(p: Proc) -> str:
    return failure_text(p.err) if p.rc is not None else tail(p.err, 5)


def _kill_group(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)      # the process and its children (pytest-xdist workers)
    except ProcessLookupError:
        pass
    p.wait()


def run_proc(argv: list[str], ctx: Context, timeout: float, env: dict[str, str] | None = None) -> Proc:
    """Run argv (no shell) in the scratch directory. A process that prints nothing for `timeout`
    seconds is killed with its whole process group (so one hung kernel cannot hang the run)."""
    p = subprocess.Popen(argv, cwd=ctx.tmp, env=env or ctx.env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    bufs: dict[str, list[bytes]] = {"out": [], "err": []}
    last = [time.monotonic()]

    def pump(stream: Any, buf: list[bytes]) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):
            buf.append(chunk)
            last[0] = time.monotonic()
    pumps = [threading.Thread(target=pump, args=(p.stdout, bufs["out"]), daemon=True),
             threading.Thread(target=pump, args=(p.stderr, bufs["err"]), daemon=True)]
    for t in pumps:
        t.start()
    hung = False
    try:
        while p.poll() is None and not hung:
            hung = time.monotonic() - last[0] > timeout
            time.sleep(0.2)
        if hung:
            _kill_group(p)
    except BaseException:                 # Ctrl-C: do not leave the child running
        _kill_group(p)
        raise
    for t in pumps:
        t.join(timeout=10)
    out, err = (b"".join(bufs[k]).decode(errors="replace") for k in ("out", "err"))
    if hung:
        return Proc(None, out, err + f"\n[npu_smoke] no output for {timeout:g} s: killed")
    return Proc(p.returncode, out, err)


def run_step(name: str, fn: Callable[[Step, Context], None], ctx: Context) -> Step:
    step = Step(name)
    t0 = time.perf_counter()
    try:
        fn(step, ctx)
    except KeyboardInterrupt:
        step.result, step.error = "FAIL", "interrupted (Ctrl-C)"
    except Exception as e:  # noqa: BLE001 - one step's failure never stops the others
        step.result, step.error = "FAIL", error_text(e)
    step.seconds = round(time.perf_counter() - t0, 2)
    note = f"  ({step.note})" if step.note else ""
    print(f"  {step.result:<4} {step.seconds:8.1f} s  {name}{note}", flush=True)
    return step


# -- step 1: environment -----------------------------------------------------------------------
def version_of(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def relevant_variables() -> dict[str, str]:
    names = sorted({*NAMED_VARS, *(k for k in os.environ if k.startswith(VAR_PREFIXES))})
    return {k: os.environ.get(k, "(unset)") for k in names}


def step_environment(step: Step, ctx: Context) -> None:
    import pypto
    from pypto.isa.soc import get_profile
    versions = {
        "python": platform.python_version(), "platform": platform.platform(),
        "numpy": np.__version__, "numba": version_of("numba"),
        "ml_dtypes": version_of("ml_dtypes"), "pypto": pypto.__version__,
        "pypto checkout": git_commit(),
        "pyACL (import acl)": "importable" if importlib.util.find_spec("acl") else "not importable",
        "bisheng": shutil.which("bisheng") or "not on PATH",
        "npu-smi": shutil.which("npu-smi") or "not on PATH",
        "backend": ctx.args.backend,
        "soc": get_profile(ctx.args.soc or os.environ.get("PYPTO_SOC")).name,
    }
    step.details = {"versions": versions, "variables": relevant_variables()}
    step.note = (f"pypto {versions['pypto']}, Python {versions['python']}, numpy {versions['numpy']}, "
                 f"numba {versions['numba']}")


def step_doctor(step: Step, ctx: Context) -> None:
    p = run_proc([sys.executable, "-m", "pypto", "doctor"], ctx, ctx.args.timeout)
    step.output = tail(p.out + p.err, 60)
    step.details = {"exit_status": p.rc}
    step.note = f"exit status {p.rc}" if p.rc is not None else "timed out"
    if p.rc != 0:       # recorded; the later steps run anyway
        step.result = "FAIL"
        step.error = "\n".join(doctor_problems(p.out)[:30]) or proc_error(p)


def doctor_problems(text: str) -> list[str]:
    """The doctor's sections that say NOT (settings or a required backend NOT USABLE, NOT OK)."""
    keep, out = False, []
    for ln in text.splitlines():
        if not ln.startswith(" "):
            keep = "NOT" in ln
        if keep:
            out.append(ln)
    return out


def step_npu_smi(step: Step, ctx: Context) -> None:
    exe = shutil.which("npu-smi")
    if exe is None:
        step.result, step.note = "SKIP", "npu-smi not on PATH"
        return
    p = run_proc([exe, "info"], ctx, min(ctx.args.timeout, 60))
    step.output = tail(p.out, 80)
    if p.rc != 0:
        step.result, step.error = "FAIL", tail(p.err or p.out, 10)


# -- step 2: the tutorial ------------------------------------------------------------------------
def example_paths() -> list[Path]:
    ex = ROOT / "examples"
    return sorted(ex.glob("step*.py")) + [ex / "kernel_add_rows.py"]


def step_example(step: Step, ctx: Context, path: Path) -> None:
    p = run_proc([sys.executable, str(path)], ctx, ctx.args.timeout)
    step.output = tail(p.out)
    last = [ln for ln in p.out.splitlines() if ln.strip()]
    step.note = last[-1].strip()[:80] if last else ""
    if p.rc != 0:
        step.result, step.error = "FAIL", proc_error(p)
        step.note = f"exit status {p.rc}" if p.rc is not None else "timed out"


# -- step 3: library kernels (run in a worker subprocess: a device fault cannot kill the report) --
DTYPES = ("float32", "float16", "int32", "int16")
CAST_PAIRS = (("float32", "float16"), ("float16", "float32"), ("float32", "int32"),
              ("int32", "float32"), ("float32", "bfloat16"), ("float16", "int8"))
SHAPES = ((1000,), (70000,))             # neither is a multiple of any tile: both have a tail
ROWSUM_SHAPES = ((40, 25), (70, 1000))   # 1000 and 70000 elements; partial repeats and row blocks
ULP_TOL = {"exp": 4, "div": 2}           # the NPU's exp/div approximate; default 1 ulp
VALUE_RANGE = {"exp": (-10.0, 10.0), "rowsum": (-1.0, 1.0)}


def kernel_cases(name: str, soc: str, ref: Any) -> list[tuple[str, tuple[int, ...]]]:
    """(dtype label, shape) cases for one instruction; [] when the reference does not model it."""
    if name == "cast":
        labels = [f"{s}->{d}" for s, d in CAST_PAIRS if ref.is_cvt_legal(s, d, soc)]
    elif name in ref.LEGAL:
        labels = [d for d in DTYPES if ref.is_legal(name, d, soc) and ref.is_modelled(name, d)]
    else:
        return []
    return [(lab, shape) for lab in labels for shape in (ROWSUM_SHAPES if name == "rowsum" else SHAPES)]


def random_values(rng: Any, dtype: Any, shape: tuple[int, ...], lo: float, hi: float) -> Any:
    if dtype.kind in "iu":
        return rng.integers(int(lo), int(hi), size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(dtype)


def make_case(ref: Any, name: str, label: str, shape: tuple[int, ...], soc: str):
    """(operands in seed order, the output last; expected result)."""
    rng = np.random.default_rng(zlib.crc32(f"{name} {label} {shape}".encode()))
    src = ref.np_dtype(label.split("->")[0])
    lo, hi = VALUE_RANGE.get(name, (-100.0, 100.0))
    if src == ref.F16 and name == "exp":
        lo, hi = -8.0, 8.0                         # e**8 ~ 2981 stays finite in f16
    x = random_values(rng, src, shape, lo, hi)
    if name == "cast":
        dst = ref.np_dtype(label.split("->")[1])
        return [x, np.zeros(shape, dst)], ref.cast(x, src, dst, soc)[0]
    if name == "rowsum":
        return [x, np.zeros((shape[0], 1), src)], ref.rowsum(x, dtype=src, soc=soc)
    if name == "exp":
        return [x, np.zeros(shape, src)], ref.exp(x)
    if name in ref.SCALAR_OPS:
        s = 3 if src.kind in "iu" else 1.5
        return [x, s, np.zeros(shape, src)], ref.binary(name, x, s, src)
    y = random_values(rng, src, shape, lo, hi)
    if name == "div":                              # keep divisors away from zero
        y = (np.sign(x.astype(np.float32) + 0.5) * rng.uniform(0.5, 8.0, shape)).astype(src)
    return [x, y, np.zeros(shape, src)], ref.binary(name, x, y, src)


def ulp_distance(got: Any, want: Any) -> Any:
    """Elementwise distance in units in the last place (both NaN: 0; +0 and -0: 0)."""
    w = got.dtype.itemsize * 8
    ub = np.dtype(f"u{got.dtype.itemsize}")

    def ordered(v: Any) -> Any:
        u = np.ascontiguousarray(v).view(ub).astype(np.int64)
        mag = u & ((1 << (w - 1)) - 1)
        return np.where(u >> (w - 1) == 1, -mag, mag)
    d = np.abs(ordered(got) - ordered(want))
    d[np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))] = 0
    return d


def compare(name: str, got: Any, want: Any, x: Any) -> tuple[bool, str]:
    got = np.asarray(got).reshape(want.shape)
    if got.dtype != want.dtype:
        return False, f"result dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind in "iu":
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        bad = int((diff != 0).sum())
        return bad == 0, ("exact" if bad == 0 else
                          f"{bad} of {want.size} differ, max |diff| {diff.max()}")
    nan_diff = int((np.isnan(got.astype(np.float32)) != np.isnan(want.astype(np.float32))).sum())
    if nan_diff:
        return False, f"{nan_diff} of {want.size} elements: NaN where a number was expected, or back"
    ulp = ulp_distance(got, want)
    with np.errstate(all="ignore"):
        abs_err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    max_ulp, max_abs = int(ulp.max()), float(np.nan_to_num(abs_err, nan=np.inf).max())
    if max_ulp == 0:
        return True, "exact"
    text = f"{max_ulp} ulp, max abs {max_abs:.3g}"
    if name == "rowsum":      # summation order: bound by 4 eps * sum |row|
        bound = 4 * np.finfo(want.dtype).eps * np.abs(x.astype(np.float64)).sum(axis=1, keepdims=True)
        return bool((abs_err <= bound).all()), text + " (bound: 4 eps * sum|row|)"
    tol = ULP_TOL.get(name, 1)
    return max_ulp <= tol, text + f" (tolerance {tol} ulp)"


def run_case(name: str, label: str, shape: tuple[int, ...], kind: str, soc: str) -> dict[str, Any]:
    import pypto
    from conformance import reference as ref
    rec = {"name": name, "dtype": label, "shape": "x".join(map(str, shape)), "operands": kind,
           "result": "FAIL", "max_error": "", "error": "", "seconds": 0.0}
    t0 = time.perf_counter()
    try:
        ops, want = make_case(ref, name, label, shape, soc)
        if kind == "tensor":
            ops = [pypto.Tensor(v) if isinstance(v, np.ndarray) else v for v in ops]
        insn = pypto.load_insn(name)
        for i, v in enumerate(ops):
            insn.set_operand(i, v)
        insn.execute()
        got = ops[-1].numpy() if kind == "tensor" else ops[-1]
        ok, rec["max_error"] = compare(name, got, want, ops[0] if kind == "numpy" else ops[0].numpy())
        rec["result"] = "PASS" if ok else "FAIL"
    except Exception as e:  # noqa: BLE001 - recorded per case
        rec["error"] = error_text(e, 8)
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    return rec


def emit(record: dict[str, Any]) -> None:
    print(CASE_TAG + json.dumps(record), flush=True)


def kernels_worker(backend: str, soc: str | None) -> int:
    """The step-3 subprocess: one result line per case on stdout."""
    import pypto
    try:
        soc_name = pypto.init(backend=backend, soc=soc).soc.name
        names = pypto.list_insns()
        from conformance import reference as ref
    except Exception as e:  # noqa: BLE001 - e.g. BackendUnavailableError: reported as the step's error
        emit({"fatal": error_text(e, 25)})
        return 1
    for name in names:
        cases = kernel_cases(name, soc_name, ref)
        if not cases:
            emit({"name": name, "dtype": "", "shape": "", "operands": "", "result": "SKIP",
                  "max_error": "", "error": "conformance/reference.py does not model it", "seconds": 0})
        for i, (label, shape) in enumerate(cases):
            emit(run_case(name, label, shape, "numpy" if i % 2 == 0 else "tensor", soc_name))
    pypto.finalize()
    return 0


def step_kernels(step: Step, ctx: Context) -> None:
    argv = [sys.executable, str(Path(__file__).resolve()), "--kernels-worker",
            "--backend", ctx.args.backend] + (["--soc", ctx.args.soc] if ctx.args.soc else [])
    p = run_proc(argv, ctx, ctx.args.timeout)
    recs = [json.loads(ln[len(CASE_TAG):]) for ln in p.out.splitlines() if ln.startswith(CASE_TAG)]
    fatal = [r["fatal"] for r in recs if "fatal" in r]
    cases = [r for r in recs if "fatal" not in r]
    n = Counter(r["result"] for r in cases)
    step.details = cases
    step.note = f"{n['PASS']} passed, {n['FAIL']} failed, {n['SKIP']} skipped of {len(cases)} cases"
    bad = [f"{r['name']} {r['dtype']} {r['shape']}: {r['error'] or r['max_error']}".splitlines()[0]
           for r in cases if r["result"] == "FAIL"]
    if fatal:
        step.result, step.error, step.note = "FAIL", fatal[0], "pypto.init() failed"
    elif p.rc != 0:
        step.result = "FAIL"
        step.error = f"worker exit status {p.rc} after {len(cases)} cases:\n" + proc_error(p)
    elif bad:
        step.result, step.error = "FAIL", "\n".join(bad[:20])
    elif not n["PASS"]:
        step.result = "SKIP"


# -- step 4: the conformance quick tier ------------------------------------------------------------
def parse_junit(path: Path) -> dict[str, Any]:
    counts = dict(passed=0, failed=0, errors=0, skipped=0, xfailed=0)
    failures: list[dict[str, str]] = []
    skips: Counter[str] = Counter()
    for tc in ET.parse(path).iter("testcase"):
        kids = {c.tag: c for c in tc}
        bad = kids.get("failure", kids.get("error"))
        if bad is not None:
            counts["failed" if "failure" in kids else "errors"] += 1
            if len(failures) < 50:
                msg = (bad.get("message") or bad.text or "").strip()
                failures.append({"test": f"{tc.get('classname', '')}::{tc.get('name', '')}",
                                 "message": "\n".join(msg.splitlines()[:6])})
        elif "skipped" in kids:
            sk = kids["skipped"]
            if sk.get("type") == "pytest.xfail":
                counts["xfailed"] += 1
            else:
                counts["skipped"] += 1
                skips[((sk.get("message") or "").strip().splitlines() or [""])[0]] += 1
        else:
            counts["passed"] += 1
    return {"counts": counts, "failures": failures, "skip_reasons": skips.most_common(5)}


def step_conformance(step: Step, ctx: Context) -> None:
    a = ctx.args
    if a.no_conformance:
        step.result, step.note = "SKIP", "--quick / --no-conformance"
        return
    xml = Path(ctx.tmp) / "conformance.xml"
    argv = [sys.executable, "-m", "pytest", "-q", str(ROOT / "conformance"), "--backend", a.backend,
            "-m", "not slow", "-p", "no:cacheprovider", "--junitxml", str(xml)]
    if importlib.util.find_spec("xdist") is not None:
        argv += ["-n", "auto"]
    argv += shlex.split(a.conformance_args)
    env = {k: v for k, v in ctx.env.items() if k != "PYPTO_BACKEND"}   # --backend decides
    print("       running the conformance quick tier (several minutes) ...", flush=True)
    p = run_proc(argv, ctx, a.timeout, env)
    shown = " ".join(shlex.quote(x) for x in argv[1:])
    step.output = "$ python " + shown.replace(str(ROOT) + os.sep, "").replace(str(xml), "<tmp>.xml") \
        + "\n" + tail(p.out)
    if not xml.exists():
        step.result, step.error = "FAIL", f"no junit xml (exit status {p.rc}):\n" + tail(p.err or p.out)
        return
    step.details = parse_junit(xml)
    c = step.details["counts"]
    step.note = ", ".join(f"{v} {k}" for k, v in c.items() if v) or "no tests"
    unavailable = [r for r, _ in step.details["skip_reasons"] if f"no usable {a.backend} backend" in r]
    if p.rc is None:
        step.result, step.error = "FAIL", proc_error(p)
    elif c["failed"] or c["errors"]:
        step.result = "FAIL"
        step.error = "\n".join(f"{f['test']}: {(f['message'].splitlines() or [''])[0]}"
                               for f in step.details["failures"][:20])
    elif unavailable:
        step.result, step.error = "SKIP", unavailable[0]
    elif p.rc != 0:
        step.result, step.error = "FAIL", f"pytest exit status {p.rc}\n" + tail(p.err or p.out)


# -- step 5: the report --------------------------------------------------------------------------
def fence(text: str) -> str:
    return f"````\n{text.rstrip()}\n````\n" if text.strip() else ""


def cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(meta: dict[str, Any], steps: list[Step]) -> str:
    out = [f"# pypto NPU smoke report\n\n**{meta['overall']}** ({meta['counts']}); backend "
           f"`{meta['backend']}`, soc `{meta['soc']}`, {meta['date']}, {meta['seconds']:.0f} s in all.\n\n"
           f"Command: `{meta['command']}`\n\n## Summary\n\n| # | step | result | seconds | note |\n"
           "|---:|---|---|---:|---|"]
    out += [f"| {i} | {cell(s.name)} | {s.result} | {s.seconds:.1f} | {cell(s.note)} |"
            for i, s in enumerate(steps, 1)]
    out.append("\n## Details\n")
    for i, s in enumerate(steps, 1):
        out.append(f"### {i}. {s.name}: {s.result} ({s.seconds:.1f} s)\n")
        if s.name == "environment" and s.details:
            out.append("Versions and variables: see Environment at the end.\n")
        if s.error:
            out.append("Error:\n\n" + fence(s.error))
        if s.name == "library kernels" and s.details:
            out.append("| instruction | dtype | shape | operands | result | max error | seconds |\n"
                       "|---|---|---|---|---|---|---:|")
            out += [f"| {r['name']} | {r['dtype']} | {r['shape']} | {r['operands']} | {r['result']} | "
                    f"{cell(r['max_error'] or (r['error'].splitlines() or [''])[0])} "
                    f"| {r['seconds']} |" for r in s.details]
            out.append("")
        if s.name.startswith("conformance") and s.details:
            out.append("Counts: " + ", ".join(f"{k} {v}" for k, v in s.details["counts"].items()) + "\n")
            out += [f"- skipped {n}x: {cell(r)}" for r, n in s.details["skip_reasons"]]
            out += [f"- FAILED `{f['test']}`\n\n" + fence(f["message"]) for f in s.details["failures"]]
            out.append("")
        if s.output:
            out.append("Output:\n\n" + fence(s.output))
    env = next((s.details for s in steps if s.name == "environment" and s.details), None)
    if env:
        out.append("## Environment\n\n| | |\n|---|---|")
        out += [f"| {k} | {cell(v)} |" for k, v in env["versions"].items()]
        out.append("\n| variable | value |\n|---|---|")
        out += [f"| {k} | {cell(v)} |" for k, v in env["variables"].items()]
    return "\n".join(out) + "\n"


def write_report(path: Path, meta: dict[str, Any], steps: list[Step]) -> Path:
    path.write_text(render_markdown(meta, steps), encoding="utf-8")
    js = path.with_suffix(".json")
    js.write_text(json.dumps({"meta": meta, "steps": [asdict(s) for s in steps]}, indent=2, default=str),
                  encoding="utf-8")
    return js


# -- main ----------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="pypto NPU hardware smoke test (see docs/npu-smoke.md)")
    ap.add_argument("--backend", default="npu", help="npu (default), npu-cpusim or sim (a dry run)")
    ap.add_argument("--soc", choices=("a2a3", "a5"), default=None,
                    help="SoC profile (default: PYPTO_SOC, else pypto's default a2a3)")
    ap.add_argument("--report", default="npu-smoke-report.md",
                    help="Markdown report path (the .json goes next to it); default: ./npu-smoke-report.md")
    ap.add_argument("--quick", "--no-conformance", dest="no_conformance", action="store_true",
                    help="skip step 4, the conformance quick tier")
    ap.add_argument("--timeout", type=float, default=900.0, metavar="S",
                    help="kill a subprocess (doctor, an example, the kernel worker, pytest) that "
                         "prints nothing for S seconds; default 900")
    ap.add_argument("--conformance-args", default="",
                    help='extra pytest arguments, e.g. "-k add" (default: the whole quick tier)')
    ap.add_argument("--kernels-worker", action="store_true", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def child_env(args: argparse.Namespace) -> dict[str, str]:
    env = dict(os.environ, PYPTO_BACKEND=args.backend, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    if args.soc:
        env["PYPTO_SOC"] = args.soc
    return env


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.kernels_worker:
        return kernels_worker(args.backend, args.soc)
    ctx = Context(args, tempfile.mkdtemp(prefix="pypto-smoke-"), child_env(args))
    plan: list[tuple[str, Callable[[Step, Context], None]]] = [
        ("environment", step_environment), ("pypto doctor", step_doctor), ("npu-smi info", step_npu_smi)]
    plan += [(f"example {p.relative_to(ROOT).as_posix()}", functools.partial(step_example, path=p))
             for p in example_paths()]
    plan += [("library kernels", step_kernels), ("conformance quick tier", step_conformance)]
    print(f"pypto NPU smoke test: backend {args.backend}, soc {args.soc or 'default'}", flush=True)
    t0, steps = time.perf_counter(), []
    try:
        for name, fn in plan:
            steps.append(run_step(name, fn, ctx))
            if steps[-1].error == "interrupted (Ctrl-C)":
                break
    finally:
        shutil.rmtree(ctx.tmp, ignore_errors=True)
    n = Counter(s.result for s in steps)
    overall = "PASS" if not n["FAIL"] and len(steps) == len(plan) else "FAIL"
    soc = next((s.details["versions"]["soc"] for s in steps if s.name == "environment" and s.details),
               args.soc or "default")
    meta = {"overall": overall, "counts": f"{n['PASS']} passed, {n['FAIL']} failed, {n['SKIP']} skipped",
            "backend": args.backend, "soc": soc, "seconds": round(time.perf_counter() - t0, 1),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(["python scripts/npu_smoke.py",
                                 *(shlex.quote(a) for a in (argv or sys.argv[1:]))])}
    report = Path(args.report)
    js = write_report(report, meta, steps)
    print(f"\n{overall}: {meta['counts']} in {meta['seconds']:.0f} s")
    for s in steps:
        if s.result == "FAIL":
            print(f"  FAIL {s.name}: " + (s.error.splitlines() or [""])[0][:150])
    print(f"report: {report} and {js}")
    return 0 if overall == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
