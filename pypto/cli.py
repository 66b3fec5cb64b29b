"""The `pypto` command (also `python -m pypto`).

  pypto --version            print pypto's version
  pypto info                 versions, PYPTO_* settings, kernel cache, SoC profiles, instructions
  pypto doctor [--require B] check every backend; exit 1 only if a required backend cannot run
  pypto cpp FILE.py:KERNEL ARG...   write a kernel's PTO C++ (what the npu backends build)
  pypto cpp --insn NAME [--dtype D] the C++ of the library kernel behind load_insn(NAME)
"""
from __future__ import annotations

import argparse
import functools
import importlib.metadata
import os
import platform
import sys
import tempfile
import time
from typing import Callable

DOCTOR_HELP = """\
Check the health of every backend and print what works and what is missing.

settings: every PYPTO_* variable that is set holds a legal value (a bad one makes
pypto.init() fail, so it always counts).
sim: numba imports, numba compiles and runs a tiny function, and the kernel cache directory
is writable (or can be created).
npu: the CANN toolkit, pyACL, the bisheng compiler, pto-isa's headers and an Ascend device.
npu-cpusim: a C++20 compiler and pto-isa's headers (PTO_ISA_ROOT).

Exit status: 0 when the settings and every required backend are usable, 1 when not, 2 on a
usage error. Without --require, the required backend is the one pypto.init()
would use: PYPTO_BACKEND if set, else sim (init() falls back to sim when no NPU is usable), so
`pypto doctor` succeeds on any machine where the simulator works. Missing NPU prerequisites are
still listed, as information.
"""


def _version(dist: str) -> str:
    """Installed version of a distribution, or 'not installed'."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        try:
            return getattr(__import__(dist), "__version__", "unknown")
        except ImportError:
            return "not installed"


def versions() -> dict[str, str]:
    """pypto, Python, numpy, numba and ml_dtypes versions."""
    import pypto
    return {"pypto": pypto.__version__, "Python": platform.python_version(),
            "numpy": _version("numpy"), "numba": _version("numba"), "ml_dtypes": _version("ml_dtypes")}


def _defaults() -> dict[str, Callable[[], str]]:
    """What each PYPTO_* variable means when it is unset."""
    from pypto.backends.sim.options import _env_cache
    from pypto.isa.soc import get_profile
    return {
        "PYPTO_BACKEND": lambda: "auto (npu if usable, else sim)",
        "PYPTO_SOC": lambda: get_profile(None).name,
        "PYPTO_SIM_MODE": lambda: "compiled",
        "PYPTO_SIM_THREADS": lambda: f"{os.cpu_count() or 1} (the CPU count)",
        "PYPTO_SIM_NATIVE": lambda: "1",
        "PYPTO_CACHE_DIR": _env_cache,
        "PYPTO_CPUSIM_CXXFLAGS": lambda: "-O2",
    }


def _setting_problem(name: str) -> tuple[str, str] | None:
    """(why, fix) if the set value of a PYPTO_* variable would make pypto.init() fail, else None."""
    from pypto.backends import REGISTRY
    from pypto.backends.sim.options import _env_mode, _env_native, _env_threads, env
    from pypto.errors import PtoError
    from pypto.isa.soc import PROFILES, get_profile
    value = env().get(name)
    if value is None:
        return None
    try:
        if name == "PYPTO_BACKEND" and value not in REGISTRY:
            return (f"PYPTO_BACKEND={value!r} is not a backend (legal: {', '.join(REGISTRY)})",
                    "set PYPTO_BACKEND=sim, or unset it to pick automatically")
        if name == "PYPTO_SOC":
            try:
                get_profile(value)
            except PtoError as e:
                return e.message, f"set PYPTO_SOC to one of {', '.join(PROFILES)}, or unset it"
        elif name == "PYPTO_SIM_MODE":
            _env_mode()
        elif name == "PYPTO_SIM_THREADS":
            _env_threads()
        elif name == "PYPTO_SIM_NATIVE":
            _env_native()
        elif name == "PYPTO_CPUSIM_CXXFLAGS":
            from pypto.backends.npu.build import BuildTarget, cpusim_flags
            BuildTarget("cpusim", "a2a3", **cpusim_flags(value))
    except PtoError as e:
        return e.message, e.fix or f"fix or unset {name}"
    return None


def _instruction_status() -> list[str]:
    """One line per table entry: opcode, name, simulated (and emitted as C++ for the NPU
    backends) or why not (grouped reasons)."""
    from pypto.ir import registry
    from pypto.isa import TABLE
    lines, reasons = [], {}
    for name, spec in TABLE.items():
        ok, why = registry.status(name)
        if not ok:
            key = reasons.setdefault(why, f"[{len(reasons) + 1}]")
        unit = registry.get(name)
        cpp = ", C++" if unit is not None and unit.emit is not None else ""
        lines.append(f"    {spec.opcode:#06x} {name:<22} " + (f"simulated{cpp}" if ok else f"not simulated {key}"))
    lines += [f"    {key} {why}" for why, key in reasons.items()]
    return lines


def _info() -> int:
    import pypto
    from pypto.backends.sim.options import ENV_VARS, default_cache_dir, env
    from pypto.isa import PROFILES, TABLE
    print(f"pypto {pypto.__version__}")
    print("  versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()))
    print(f"  kernel cache directory: {default_cache_dir()}")
    print("  settings from the environment:")
    defaults = _defaults()
    for name in ENV_VARS:
        value = env().get(name)
        if value is None:
            print(f"    {name:<21} unset (default: {defaults[name]()})")
        else:
            bad = _setting_problem(name)
            print(f"    {name:<21} set: {value!r}" + (f"  INVALID: {bad[0]}" if bad else ""))
    for p in PROFILES.values():
        caps = ", ".join(f"{sp.buffer}={sp.capacity // 1024} KiB" for sp in p.spaces.values())
        print(f"  soc {p.name}: {p.description}; {caps}")
    from pypto.ir import registry
    print(f"  ISA table: {len(TABLE)} instructions; simulated: {', '.join(registry.simulated())}")
    print(f"  seed instructions: {', '.join(pypto.list_insns())}")
    print("  instructions:")
    for line in _instruction_status():
        print(line)
    return 0


# -- doctor ---------------------------------------------------------------------------------------
Check = tuple[bool, str, "str | None"]     # (passed, what was checked, how to fix a failure)


def _check_settings() -> list[Check]:
    from pypto.backends.sim.options import ENV_VARS
    out: list[Check] = []
    for name in ENV_VARS:
        bad = _setting_problem(name)
        if bad:
            out.append((False, bad[0], bad[1]))
    return out or [(True, "PYPTO_* environment variables hold legal values", None)]


@functools.lru_cache(maxsize=1)
def _smoke_function():
    """The doctor's numba smoke test, compiled once per process (numba keeps each compiled
    function's machine code for the life of the process)."""
    import numba
    return numba.njit(cache=False)(lambda x: x * 2 + 1)


def _check_numba() -> list[Check]:
    try:
        import numba
    except Exception as e:  # noqa: BLE001 - any import failure means the simulator cannot run
        return [(False, f"numba does not import: {type(e).__name__}: {e}",
                 "pip install numba (see pyproject.toml for the supported versions)")]
    out: list[Check] = [(True, f"numba {numba.__version__} imports", None)]
    try:
        import numpy as np
        t0 = time.perf_counter()
        got = _smoke_function()(np.arange(4, dtype=np.float32)).tolist()
        ok = got == [1.0, 3.0, 5.0, 7.0]
        out.append((ok, f"numba JIT compiles and runs a function ({time.perf_counter() - t0:.2f} s)"
                    if ok else f"numba JIT ran a function but returned {got}, not [1, 3, 5, 7]",
                    None if ok else "reinstall numba and llvmlite"))
    except Exception as e:  # noqa: BLE001 - report, never crash the doctor
        out.append((False, f"numba JIT smoke test failed: {type(e).__name__}: {e}",
                    "reinstall numba and llvmlite (pip install --force-reinstall numba)"))
    return out


def _check_cache_dir() -> Check:
    from pypto.backends.sim.options import default_cache_dir
    path = default_cache_dir()
    fix = "set PYPTO_CACHE_DIR to a writable directory"
    if os.path.isdir(path):
        try:
            fd, tmp = tempfile.mkstemp(dir=path, prefix=".pypto-doctor-")
            os.close(fd)
            os.remove(tmp)
        except OSError as e:
            return False, f"kernel cache directory {path} is not writable: {e.strerror or e}", fix
        return True, f"kernel cache directory {path} is writable", None
    if os.path.exists(path):
        return False, f"kernel cache path {path} exists but is not a directory", fix
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent) and os.path.dirname(parent) != parent:
        parent = os.path.dirname(parent)
    if os.path.isdir(parent) and os.access(parent, os.W_OK | os.X_OK):
        return True, f"kernel cache directory {path} can be created (in {parent})", None
    return False, f"kernel cache directory {path} cannot be created: {parent} is not writable", fix


def _check_sim() -> list[Check]:
    return _check_numba() + [_check_cache_dir()]


def _check_backend(name: str) -> list[Check]:
    from pypto.backends import is_available
    ok, missing = is_available(name)
    return [(True, "all prerequisites found", None)] if ok else [(False, m, None) for m in missing]


CPP_HELP = """\
Write the PTO C++ translation unit pypto emits for a kernel: the source the npu backend builds
with bisheng and npu-cpusim builds with g++ against pto-isa's CPU backend. The kernel is traced
for the given arguments on the simulator (no NPU or compiler needed).

  pypto cpp examples/kernel_add_rows.py:add_rows float32[300,100] float32[300,100] float32[300,100]
  pypto cpp --insn add --dtype float16 -o add_f16.cpp
  pypto cpp --insn cast --dtype float32 --to int16 --param rmode=CAST_RINT
"""


def _cpp_arg(text: str):
    """A launch argument from the command line: DTYPE[d0,...] -> an uninitialised tensor."""
    import re
    import pypto
    from pypto.errors import ConfigError
    m = re.fullmatch(r"\s*(\w+)\s*\[([\d,\s]*)\]\s*", text)
    if m:
        shape = tuple(int(d) for d in m.group(2).split(",") if d.strip())
        return pypto.empty(shape, pypto.dtypes.as_dtype(m.group(1), context=f"argument {text!r}"))
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    raise ConfigError(f"argument {text!r} is neither a tensor nor a number",
                   rule="pypto cpp arguments are DTYPE[d0,d1,...] tensors or numbers",
                   fix="write e.g. float32[300,100] or 2.5")


def _cpp_kernel(ns):
    import importlib.util
    from pypto.errors import ConfigError
    from pypto.lang.kernel import KernelFunction
    path, _, name = (ns.kernel or "").rpartition(":")
    if not path or not name:
        raise ConfigError(f"{ns.kernel!r} does not name a kernel", rule="pypto cpp takes FILE.py:KERNEL or --insn NAME",
                       fix="e.g. pypto cpp examples/kernel_add_rows.py:add_rows float32[300,100] ...")
    spec = importlib.util.spec_from_file_location("_pypto_cpp_target", path)
    if spec is None or not os.path.isfile(path):
        raise ConfigError(f"{path} is not a Python file", rule="pypto cpp loads the kernel's file",
                       fix="give the path of the .py file that defines the kernel")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.pop(0)
    kern = getattr(mod, name, None)
    if not isinstance(kern, KernelFunction):
        raise ConfigError(f"{path} has no @pypto.kernel named {name}",
                       rule="pypto cpp emits kernels decorated with @pypto.kernel",
                       fix=f"pick one of: {', '.join(k for k, v in vars(mod).items() if isinstance(v, KernelFunction)) or 'none found'}")
    return kern.cpp(*[_cpp_arg(a) for a in ns.args])


def _cpp_insn(ns) -> str:
    import pypto
    from pypto.errors import ConfigError
    from pypto.library import kernel_for
    ins = pypto.load_insn(ns.insn)
    params = []
    for p in ns.param:
        k, eq, v = p.partition("=")
        if not eq:
            raise ConfigError(f"--param {p!r} is not NAME=VALUE", rule="mode parameters are NAME=VALUE",
                           fix="e.g. --param rmode=CAST_RINT")
        ins.set_param(k, v)
        params.append((k, v))
    dt = pypto.dtypes.as_dtype(ns.dtype, context="--dtype")
    kern = kernel_for(ins._spec.name, ins._formname, tuple(sorted(params)))
    args = ins._form.example(dt, ns.to)
    return kern.cpp(*args)


def _cpp(ns) -> int:
    import pypto
    from pypto.errors import ConfigError
    if bool(ns.insn) == bool(ns.kernel):
        raise ConfigError("pypto cpp takes either FILE.py:KERNEL (with its arguments) or --insn NAME",
                       rule="one kernel per call", fix="see `pypto cpp --help`")
    pypto.finalize()
    with pypto.init(backend="sim", soc=ns.soc):
        src = _cpp_insn(ns) if ns.insn else _cpp_kernel(ns)
    if ns.output:
        with open(ns.output, "w", encoding="utf-8") as f:
            f.write(src)
        print(f"wrote {ns.output} ({len(src.splitlines())} lines)", file=sys.stderr)
    else:
        sys.stdout.write(src)
    return 0


def _default_required() -> list[str]:
    from pypto.backends import REGISTRY
    from pypto.backends.sim.options import env
    chosen = env().get("PYPTO_BACKEND")
    return [chosen] if chosen in REGISTRY else ["sim"]


def _doctor(require: list[str] | None) -> int:
    import pypto
    from pypto.backends import REGISTRY
    if not require:
        required = _default_required()
    elif "all" in require:
        required = list(REGISTRY)
    else:
        required = list(dict.fromkeys(require))
    print(f"pypto doctor: pypto {pypto.__version__}, Python {platform.python_version()}")
    settings = _check_settings()
    results = {"sim": _check_sim(), "npu": _check_backend("npu"), "npu-cpusim": _check_backend("npu-cpusim")}
    ok = _report("settings", settings, required=True, mark_missing="problem")
    for name, checks in results.items():
        usable = _report(f"{name} backend", checks, required=name in required,
                         mark_missing="FAIL" if name == "sim" else "missing")
        ok &= usable or name not in required
    print(f"required: {', '.join(required)} -> {'ok' if ok else 'NOT OK'}")
    if not ok:
        print("  (exit status 1; `pypto doctor --help` explains which backends are required)")
    return 0 if ok else 1


def _report(title: str, checks: list[Check], required: bool, mark_missing: str) -> bool:
    usable = all(passed for passed, _, _ in checks)
    state = "ok" if usable else ("NOT USABLE" if required else "not available (not required)")
    print(f"{title}: {state}")
    for passed, what, fix in checks:
        print(f"  [{'ok' if passed else mark_missing}] {what}" + (f" -- fix: {fix}" if fix else ""))
    return usable


def _parser() -> argparse.ArgumentParser:
    import pypto
    from pypto.backends import REGISTRY
    ap = argparse.ArgumentParser(prog="pypto", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-V", "--version", action="version", version=f"pypto {pypto.__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="versions, PYPTO_* settings, kernel cache, SoC profiles, instructions",
                   description="Show versions (pypto, Python, numpy, numba, ml_dtypes), the kernel "
                               "cache directory, the PYPTO_* environment settings (set or default), "
                               "the SoC profiles and the simulated instructions.")
    doc = sub.add_parser("doctor", help="check every backend; exit 1 if a required one cannot run",
                         description=DOCTOR_HELP,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    doc.add_argument("--require", "--backend", dest="require", action="append", metavar="BACKEND",
                     choices=[*REGISTRY, "all"],
                     help=f"exit 1 unless BACKEND ({', '.join(REGISTRY)}, or all) is usable; "
                          "repeatable (--backend is the same option). Default: the backend "
                          "pypto.init() would use (PYPTO_BACKEND, else sim)")
    cpp = sub.add_parser("cpp", help="write a kernel's PTO C++ (what the npu backends build)",
                         description=CPP_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    cpp.add_argument("kernel", nargs="?", metavar="FILE.py:KERNEL",
                     help="a Python file and the name of an @pypto.kernel in it")
    cpp.add_argument("args", nargs="*", metavar="ARG",
                     help="launch arguments: tensors as DTYPE[d0,d1,...] (e.g. float32[300,100]), "
                          "scalars as numbers (3, 2.5)")
    cpp.add_argument("--insn", metavar="NAME", help="instead: the library kernel behind load_insn(NAME)")
    cpp.add_argument("--dtype", default="float32", help="element type of --insn's operands (default float32)")
    cpp.add_argument("--to", metavar="DTYPE", help="destination type for --insn cast")
    cpp.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                     help="a mode parameter of --insn (e.g. rmode=CAST_RINT); repeatable")
    cpp.add_argument("--soc", default=None, help="SoC profile: a2a3 (default) or a5")
    cpp.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    sub.add_parser("conformance", help="run the conformance suite on a backend / SoC / shard and "
                                       "write Markdown, HTML and JUnit reports", add_help=False)
    sub.add_parser("golden", help="record a script's launches into a bundle / compare on another "
                                  "backend (pypto golden record|compare --help)", add_help=False)
    sub.add_parser("codegen", help="IDL file -> <stem>_pypto.cpp (same as python -m pto.codegen)",
                   description="pypto codegen --idl FILE.idl [--output_dir DIR] [--target pypto|npu]")
    sub.add_parser("trace", help="run a script and write each launch's per-pipe timeline as Chrome "
                                 "trace JSON (pypto trace --help)", add_help=False)
    sub.metavar = "{info,doctor,cpp,codegen,golden,conformance,trace}"
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run the `pypto` command with argv (default: sys.argv[1:]); returns the exit status."""
    from pypto.errors import PtoError
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["codegen"]:              # its own parser: the tutorial's flags, verbatim
        from pypto.idl.codegen import main as codegen
        return codegen(argv[1:], prog="pypto codegen")
    if argv[:1] == ["golden"]:               # record / compare: pypto/testing/golden.py
        from pypto.testing.golden import main as golden
        return golden(argv[1:])
    if argv[:1] == ["trace"]:                # timelines of a script's launches: pypto/timing/cli.py
        from pypto.timing.cli import main as trace
        return trace(argv[1:])
    if argv[:1] == ["conformance"]:          # the suite and its reports: pypto/testing/conformance.py
        from pypto.testing.conformance import main as conformance
        return conformance(argv[1:])
    ns = _parser().parse_args(argv)
    try:
        if ns.cmd == "info":
            return _info()
        if ns.cmd == "cpp":
            return _cpp(ns)
        return _doctor(ns.require)
    except PtoError as e:
        print(f"pypto {ns.cmd}: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:               # `pypto info | head`: the reader left; not an error of ours
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1


if __name__ == "__main__":
    sys.exit(main())
