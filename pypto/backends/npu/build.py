"""Compiling emitted C++ into a shared library, once per distinct input, safely in parallel.

``argv()`` is a pure function of the target and toolchain (flag sets are tables below, notes 1.1,
1.9, 2.1); ``build()`` caches by a key over everything that can change the output (notes 3.2).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import threading
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:                      # not POSIX: builds still work, without the cross-process lock
    fcntl = None  # type: ignore[assignment]

from ...errors import ConfigError, NpuCompileError
from ..sim.options import default_cache_dir as _pypto_cache_root
from .arch import ARCHS, CORE_KINDS, arch
from .toolchain import TARGET_KINDS, Toolchain, require

OPT_LEVELS = ("-O0", "-O1", "-O2", "-O3")
KEY_SCHEMA = 1                           # bump when the key's inputs or the cache layout change
SRC_PLACEHOLDER = "<src>"
OUT_PLACEHOLDER = "<out>"

# -- flag tables ----------------------------------------------------------------------------------
# pto-isa's CPU backend: C++20 is required (C++17 fails inside its headers), stdint/stddef must come
# before its headers, and -D__CPU_SIM selects the backend (notes 1.9, 2.3).
CPUSIM_FLAGS = ("-std=c++20", "-D__CPU_SIM")
CPUSIM_SHARED = ("-fPIC", "-shared", "-include", "stdint.h", "-include", "stddef.h")
CPUSIM_LIBS = ("-lpthread",)
CPUSIM_DEBUG = ("-g",)                   # pto-isa's _DEBUG asserts need cce::printf: NPU only
SOC_DEFINE = {"a2a3": "-DPYPTO_SOC_A2A3", "a5": "-DPYPTO_SOC_A5"}

# bisheng: the hybrid <<<>>> shared library (notes 1.1 kernel options, 2.1 step 5).
NPU_FLAGS = ("-xcce", "-fPIC", "-shared")
NPU_STD = ("-std=c++17", "-Wno-macro-redefined", "-Wno-ignored-attributes")
NPU_MLLVM = ("-cce-aicore-stack-size=0x8000", "-cce-aicore-function-stack-size=0x8000",
             "-cce-aicore-record-overflow=true", "-cce-aicore-addr-transform",
             "-cce-aicore-dcci-insert-for-scalar=false")
NPU_MIX_ONLY = ("--cce-fatobj-link",)    # cube + vector in one kernel
NPU_DEBUG = ("-D_DEBUG", "--cce-enable-print")
NPU_CANN_INCLUDES = ("include", "pkg_inc", "pkg_inc/runtime", "pkg_inc/profiling")
NPU_LIBS = ("-lruntime",)


@dataclass(frozen=True)
class BuildTarget:
    """What to build for: "npu" (bisheng) or "cpusim" (host g++ against pto-isa's CPU backend), the
    SoC profile, the core kind the kernel runs on, debug and optimisation level."""
    kind: str
    soc: str
    core: str = "vec"
    debug: bool = False
    opt: str = "-O2"
    flags: tuple[str, ...] = ()          # more code-generation flags (cpusim), e.g. -march=native

    def __post_init__(self):
        checks = (("kind", TARGET_KINDS), ("soc", tuple(ARCHS)), ("core", CORE_KINDS), ("opt", OPT_LEVELS))
        for field_name, allowed in checks:
            value = getattr(self, field_name)
            if value not in allowed:
                raise ConfigError(f"BuildTarget({field_name}={value!r}) is not allowed",
                                  rule=f"BuildTarget.{field_name} is one of: {', '.join(allowed)}",
                                  fix=f"use e.g. BuildTarget({field_name}={allowed[0]!r})")
        bad = [f for f in self.flags if not (isinstance(f, str) and f[:2] in ("-m", "-f"))]
        if bad or (self.flags and self.kind != "cpusim"):
            raise ConfigError(f"BuildTarget(flags={self.flags!r}) is not allowed",
                              rule="extra flags are code-generation options (-m..., -f...) of "
                                   "cpusim builds",
                              fix="use e.g. BuildTarget('cpusim', 'a2a3', opt='-O3', "
                                  "flags=('-march=native',))")
        if not isinstance(self.debug, bool):
            raise ConfigError(f"BuildTarget(debug={self.debug!r}) is not a bool",
                              rule="BuildTarget.debug is True or False", fix="use debug=True")


def cpusim_flags(text: str | None) -> dict:
    """BuildTarget's opt and flags from PYPTO_CPUSIM_CXXFLAGS ("-O3 -march=native"): the last
    -O level is opt, the rest are flags (checked by BuildTarget)."""
    words = shlex.split(text or "")
    opts = [w for w in words if w in OPT_LEVELS]
    bad = [w for w in words if w.startswith("-O") and w not in OPT_LEVELS]
    if bad:
        raise ConfigError(f"PYPTO_CPUSIM_CXXFLAGS={text!r} names {bad[0]}",
                          rule=f"the optimisation level is one of {', '.join(OPT_LEVELS)}",
                          fix="use e.g. PYPTO_CPUSIM_CXXFLAGS='-O3 -march=native'")
    return dict(opt=opts[-1] if opts else "-O2", flags=tuple(w for w in words if w not in OPT_LEVELS))


def _cpusim_argv(t: BuildTarget, tc: Toolchain, src: Path, out: Path) -> list[str]:
    return [str(tc.cxx), *CPUSIM_FLAGS, t.opt, *t.flags, *(CPUSIM_DEBUG if t.debug else ()), *CPUSIM_SHARED,
            f"-I{tc.pto_isa_include}", SOC_DEFINE[t.soc], str(src), "-o", str(out), *CPUSIM_LIBS]


def _npu_argv(t: BuildTarget, tc: Toolchain, src: Path, out: Path) -> list[str]:
    a = arch(t.soc)
    mllvm = [x for flag in NPU_MLLVM for x in ("-mllvm", flag)]
    return [str(tc.bisheng), *NPU_FLAGS, t.opt, *NPU_STD,
            f"--cce-aicore-arch={a.arch_for(t.core)}", f"-D{a.memory_base}", *a.extra_flags,
            *mllvm, *(NPU_MIX_ONLY if t.core == "mix" else ()), *(NPU_DEBUG if t.debug else ()),
            f"-I{tc.pto_isa_include}", *(f"-I{tc.cann / d}" for d in NPU_CANN_INCLUDES),
            str(src), "-o", str(out), f"-L{tc.cann / 'lib64'}", *NPU_LIBS]


_ARGV = {"cpusim": _cpusim_argv, "npu": _npu_argv}


def argv(target: BuildTarget, tc: Toolchain, src: Path, out: Path) -> list[str]:
    """The compiler command line building ``src`` into the shared library ``out`` (no shell).
    NpuUnavailableError if the toolchain lacks a piece the target needs."""
    require(tc, target.kind)
    return _ARGV[target.kind](target, tc, Path(src), Path(out))


def key_argv(cmd: Sequence[str], src: Path | str, out: Path | str) -> list[str]:
    """``cmd`` without its output path and with the source path as a placeholder, so a key does not
    depend on where the files were written."""
    src, out = str(src), str(out)
    result: list[str] = []
    skip = False
    for arg in cmd:
        if skip:
            skip = False
            continue
        if arg == "-o":
            skip = True
            continue
        if arg in (out, f"-o{out}"):
            continue
        result.append(SRC_PLACEHOLDER if arg == src else arg)
    return result


def cache_key(source: str, argv_wo_out: Sequence[str], tc: Toolchain, target: BuildTarget) -> str:
    """sha256 over everything that can change the library: source text, command line (without the
    output path), compiler identity, pto-isa version and header stamps, CANN version, target."""
    material = {
        "schema": KEY_SCHEMA, "source": source, "argv": list(argv_wo_out),
        "compiler": tc.compiler_id(target.kind), "pto_isa": tc.pto_isa_version,
        "pto_isa_tree": tc.pto_isa_tree, "cann": tc.cann_version, "target": asdict(target),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def default_cache_dir() -> Path:
    """pypto's kernel cache root (PYPTO_CACHE_DIR, shared with the simulator); builds go in npu/."""
    return Path(_pypto_cache_root())


# -- compile errors --------------------------------------------------------------------------------
_ERROR_LINE = re.compile(r"\b(?:fatal error|error)\s*:", re.IGNORECASE)
_ANY_ERROR = re.compile(r"\berror\b", re.IGNORECASE)
_PTO_TAG = re.compile(r"\[SA-\d+\]|\[PTO\]")
MAX_TAG_LINES = 5


def first_error(log: str) -> str:
    """The first ``error:`` / ``fatal error:`` line of a compiler log (else the first line saying
    error, else the first non-empty line)."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for pattern in (_ERROR_LINE, _ANY_ERROR):
        for line in lines:
            if pattern.search(line):
                return line
    return lines[0] if lines else ""


def pto_check_lines(log: str) -> list[str]:
    """Distinct log lines carrying pto-isa's static-assert tags ([SA-nnnn], [PTO]), first few."""
    seen: list[str] = []
    for line in log.splitlines():
        line = line.strip()
        if _PTO_TAG.search(line) and line not in seen:
            seen.append(line)
            if len(seen) == MAX_TAG_LINES:
                break
    return seen


def _compile_error(target: BuildTarget, tc: Toolchain, cmd: list[str], rc: int | None, src: Path,
                   log_path: Path, log: str, name: str, why: str | None = None) -> NpuCompileError:
    compiler = Path(cmd[0]).name
    first = why or first_error(log)
    status = f"exit code {rc}" if rc is not None else "no exit code"
    lines = [f"{compiler} could not build kernel {name!r} for {target.kind}/{target.soc}/{target.core} "
             f"({status})",
             f"source: {src}", f"log:    {log_path}", f"first error: {first or '(the log is empty)'}"]
    tags = pto_check_lines(log)
    if tags:
        lines.append("pto-isa checks: " + " || ".join(tags))
    return NpuCompileError(
        "\n  ".join(lines), argv=cmd, returncode=rc, source_path=str(src), log_path=str(log_path),
        first_error=first,
        rule=f"the emitted C++ did not compile with {compiler}; this is a pypto bug unless the kernel "
             "uses something the target lacks",
        fix="report it with the two files above (source and log)")


# -- the cached build ------------------------------------------------------------------------------
_MEMO: dict[str, Path] = {}
_MEMO_LOCK = threading.Lock()
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def clear_memo() -> None:
    """Forget the in-process key -> library memo (the disk cache stays)."""
    with _MEMO_LOCK:
        _MEMO.clear()


class _KeyLock:
    """An exclusive flock on ``<dir>/.lock``: one compile per key across threads and processes."""

    def __init__(self, path: Path):
        self.path = path
        self.fd: int | None = None

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            if fcntl is not None:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _run(cmd: list[str], timeout: float) -> tuple[int | None, str, str | None]:
    """(return code or None on timeout, combined stdout+stderr, failure reason or None). The compiler
    runs in its own process group so a timeout also stops its children (cc1plus, ld)."""
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, shell=False,
                                start_new_session=True)
    except OSError as exc:
        why = f"the compiler {cmd[0]} did not start: {exc}"
        return None, f"[pypto] {why}\n", why
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        out, _ = proc.communicate()
        text = out.decode(errors="replace")
        return None, text + f"\n[pypto] compiler killed after {timeout:g} s\n", \
            f"the compiler timed out after {timeout:g} s"
    return proc.returncode, out.decode(errors="replace"), None


_COMPILES = [0]


def compiles_done() -> int:
    """How many libraries this process compiled (not loaded from the cache): pypto.stats()."""
    return _COMPILES[0]


def build(source: str, target: BuildTarget, tc: Toolchain, cache_dir: Path | str | None = None,
          name: str = "kernel", timeout: float = 600) -> Path:
    """The shared library built from ``source``: from the cache when present, else compiled once
    (one compile per key across threads and processes) into ``<cache_dir>/npu/<kk>/<key>/``."""
    if not _NAME.match(name):
        raise ConfigError(f"kernel build name {name!r} is not a file name",
                          rule="build names use letters, digits, '_', '.', '-' and do not start with '.'",
                          fix="use e.g. name='kernel'")
    cache_root = default_cache_dir() if cache_dir is None else Path(cache_dir)
    key = cache_key(source, key_argv(argv(target, tc, Path(SRC_PLACEHOLDER), Path(OUT_PLACEHOLDER)),
                                     SRC_PLACEHOLDER, OUT_PLACEHOLDER), tc, target)
    memo_key = f"{key}/{name}"
    with _MEMO_LOCK:
        hit = _MEMO.get(memo_key)
    if hit is not None and hit.is_file():
        return hit
    folder = cache_root / "npu" / key[:2] / key
    lib = folder / f"{name}.so"
    if not lib.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        with _KeyLock(folder / ".lock"):
            if not lib.is_file():
                _compile(source, target, tc, folder, name, timeout)
    with _MEMO_LOCK:
        _MEMO[memo_key] = lib
    return lib


def _compile(source: str, target: BuildTarget, tc: Toolchain, folder: Path, name: str,
             timeout: float) -> None:
    """Compile into a unique temp file and rename it into place; keep source, cmd and log."""
    src = folder / f"{name}.cpp"
    log_path = folder / "build.log"
    tmp = folder / f"{name}.so.tmp.{os.getpid()}.{uuid.uuid4().hex}"
    src.write_text(source, encoding="utf-8")
    cmd = argv(target, tc, src, tmp)
    (folder / "cmd.txt").write_text(shlex.join(cmd) + "\n", encoding="utf-8")
    rc, log, why = _run(cmd, timeout)
    log_path.write_text(log, encoding="utf-8")
    if rc == 0 and why is None and not tmp.is_file():
        why = f"the compiler exited 0 but wrote no {tmp.name}"
    if rc != 0 or why is not None:
        tmp.unlink(missing_ok=True)
        raise _compile_error(target, tc, cmd, rc, src, log_path, log, name, why)
    os.replace(tmp, folder / f"{name}.so")
    with _MEMO_LOCK:
        _COMPILES[0] += 1
