"""Finding the compilers and headers the npu and npu-cpusim builds need (CANN, bisheng, pto-isa, g++).

Nothing runs at import. ``discover()`` looks once and returns a frozen ``Toolchain``; ``missing()``
lists every absent piece with how to get it, so a user fixes them all in one go (notes 2.1, 3.5).
"""
from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...errors import ConfigError, NpuUnavailableError

TARGET_KINDS = ("npu", "cpusim")

# Where a CANN toolkit is looked for: these variables in order, then these directories.
CANN_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_INSTALL_PATH")
DEFAULT_CANN_ROOTS = ("/usr/local/Ascend/cann", "/usr/local/Ascend/ascend-toolkit/latest")
BISHENG_IN_CANN = Path("compiler", "ccec_compiler", "bin", "bisheng")
# Where the pto-isa headers are looked for: these variables in order, then CANN's include dirs.
PTO_ISA_VARS = ("PTO_ISA_ROOT", "PTO_LIB_PATH", "PTO_TILE_LIB_CODE_PATH")
PTO_MARKER = Path("pto", "pto-inst.hpp")          # relative to an include dir
CXX_CANDIDATES = ("g++", "clang++")
# Oldest host compilers known to build pto-isa's CPU backend in C++20 (g++ 12 verified, notes 1.9).
MIN_CXX_MAJOR = {"gcc": 12, "clang": 15}
VERSION_TIMEOUT_S = 30.0

PTO_ISA_SOURCE = "a checkout of the pto-isa repository (cannmirror/pto-isa on GitHub)"


@dataclass(frozen=True)
class Toolchain:
    """What discover() found; None where a piece is absent. ``notes`` holds (topic, text) remarks
    about settings that were present but unusable, shown by missing()."""
    cann: Path | None = None
    bisheng: Path | None = None
    pto_isa_include: Path | None = None
    cxx: Path | None = None
    cann_version: str = "unknown"
    pto_isa_version: str = "unknown"
    pto_isa_tree: str = ""            # stat hash of include/pto/**: catches edited headers
    cxx_id: str | None = None         # compiler_identity(cxx); "" when it did not run
    bisheng_id: str | None = None     # compiler_identity(bisheng); "" when it did not run
    notes: tuple[tuple[str, str], ...] = ()

    def compiler(self, kind: str) -> Path | None:
        """The compiler a target kind uses: bisheng for "npu", the host C++ compiler for "cpusim"."""
        return self.bisheng if _check_kind(kind) == "npu" else self.cxx

    def compiler_id(self, kind: str) -> str:
        """The identity (``--version`` text) of the compiler a target kind uses, "" if unknown."""
        ident = self.bisheng_id if _check_kind(kind) == "npu" else self.cxx_id
        return ident or ""


def _check_kind(kind: str) -> str:
    if kind not in TARGET_KINDS:
        raise ConfigError(f"build target kind {kind!r} is unknown",
                          rule=f"target kinds: {', '.join(TARGET_KINDS)}",
                          fix="use kind='npu' (bisheng, real device) or kind='cpusim' "
                              "(g++, pto-isa CPU backend)")
    return kind


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def _which(name: str, env: Mapping[str, str]) -> Path | None:
    found = shutil.which(name, path=env.get("PATH", os.defpath))
    return Path(found) if found else None


def _is_exe(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _first_set(env: Mapping[str, str], names: tuple[str, ...]) -> tuple[str, str] | None:
    for name in names:
        if env.get(name):
            return name, env[name]
    return None


# -- discovery ------------------------------------------------------------------------------------
def _cann_search(env: Mapping[str, str]) -> tuple[Path | None, str | None]:
    """(CANN root, note). The first set variable decides; the default dirs only when none is set."""
    chosen = _first_set(env, CANN_VARS)
    if chosen is not None:
        var, value = chosen
        path = Path(value).expanduser()
        if path.is_dir():
            return path, None
        return None, f"{var}={value} is not a directory"
    for root in DEFAULT_CANN_ROOTS:
        if Path(root).is_dir():
            return Path(root), None
    return None, None


def find_cann(env: Mapping[str, str] | None = None) -> Path | None:
    """The CANN toolkit root: ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME, ASCEND_INSTALL_PATH, then the
    standard install dirs."""
    return _cann_search(_env(env))[0]


def find_bisheng(env: Mapping[str, str] | None = None, cann: Path | None = None) -> Path | None:
    """bisheng on PATH, else <cann>/compiler/ccec_compiler/bin/bisheng."""
    env = _env(env)
    found = _which("bisheng", env)
    if found is not None:
        return found
    if cann is not None and _is_exe(cann / BISHENG_IN_CANN):
        return cann / BISHENG_IN_CANN
    return None


def _as_include_dir(path: Path) -> Path | None:
    """The include dir holding pto/pto-inst.hpp: ``path/include`` (a repo root) or ``path`` itself."""
    for cand in (path / "include", path):
        if (cand / PTO_MARKER).is_file():
            return cand
    return None


def _pto_isa_search(env: Mapping[str, str], cann: Path | None) -> tuple[Path | None, str | None]:
    chosen = _first_set(env, PTO_ISA_VARS)
    if chosen is not None:
        var, value = chosen
        inc = _as_include_dir(Path(value).expanduser())
        if inc is not None:
            return inc, None
        marker = PTO_MARKER.as_posix()
        return None, f"{var}={value} holds neither include/{marker} nor {marker}"
    if cann is not None:
        for cand in (cann / "include", cann / f"{platform.machine()}-linux" / "include"):
            if (cand / PTO_MARKER).is_file():
                return cand, None
    return None, None


def find_pto_isa(env: Mapping[str, str] | None = None, cann: Path | None = None) -> Path | None:
    """The pto-isa include dir (holding pto/pto-inst.hpp): PTO_ISA_ROOT, PTO_LIB_PATH,
    PTO_TILE_LIB_CODE_PATH (a repo root or its include dir), then CANN's bundled headers."""
    return _pto_isa_search(_env(env), cann)[0]


def _cxx_search(env: Mapping[str, str]) -> tuple[Path | None, str | None]:
    if env.get("CXX"):
        value = env["CXX"]
        path = Path(value).expanduser()
        if os.sep in value and _is_exe(path):
            return path, None
        found = None if os.sep in value else _which(value, env)
        if found is not None:
            return found, None
        return None, f"CXX={value} is not an executable file or a program on PATH"
    for name in CXX_CANDIDATES:
        found = _which(name, env)
        if found is not None:
            return found, None
    return None, None


def find_cxx(env: Mapping[str, str] | None = None) -> Path | None:
    """The host C++ compiler: CXX (a path or a program on PATH), else g++, else clang++."""
    return _cxx_search(_env(env))[0]


# -- versions -------------------------------------------------------------------------------------
def _git_dir(root: Path) -> Path | None:
    dot = root / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():                                   # a worktree or submodule: "gitdir: <path>"
        text = dot.read_text(errors="replace").strip()
        if text.startswith("gitdir:"):
            target = Path(text[len("gitdir:"):].strip())
            return target if target.is_absolute() else (root / target)
    return None


_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def _read_head(git_dir: Path) -> str | None:
    """HEAD's commit read from the files (loose ref, then packed-refs), or None."""
    try:
        head = (git_dir / "HEAD").read_text().strip()
        if _SHA.match(head):
            return head
        if not head.startswith("ref:"):
            return None
        ref = head[len("ref:"):].strip()
        common = git_dir
        if (git_dir / "commondir").is_file():
            common = (git_dir / (git_dir / "commondir").read_text().strip()).resolve()
        for base in (git_dir, common):
            loose = base / ref
            if loose.is_file():
                sha = loose.read_text().strip()
                return sha if _SHA.match(sha) else None
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[1] == ref and _SHA.match(parts[0]):
                    return parts[0]
    except OSError:
        return None
    return None


def _git_rev_parse(root: Path) -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        out = subprocess.run([git, "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=VERSION_TIMEOUT_S, shell=False)
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and _SHA.match(sha) else None


def pto_isa_tree_hash(include_dir: Path) -> str:
    """sha256 over the relative path, size and mtime_ns of every file under include/pto."""
    h = hashlib.sha256()
    top = Path(include_dir) / "pto"
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for fname in sorted(filenames):
            path = Path(dirpath) / fname
            try:
                st = path.stat()
            except OSError:
                continue
            h.update(f"{path.relative_to(top).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def pto_isa_version(include_dir: Path) -> str:
    """The git HEAD commit of the pto-isa checkout holding ``include_dir``, else a hash of its
    headers' paths, sizes and mtimes (CANN's bundled copy, a tarball)."""
    include_dir = Path(include_dir)
    for root in (include_dir.parent, include_dir):
        git_dir = _git_dir(root)
        if git_dir is not None:
            sha = _read_head(git_dir) or _git_rev_parse(root)
            if sha:
                return sha
    return "tree-" + pto_isa_tree_hash(include_dir)


def cann_version(cann: Path | None) -> str:
    """CANN's version from its version.info files (first ``Version=`` line), else "unknown"."""
    if cann is None:
        return "unknown"
    cann = Path(cann)
    candidates = [cann / "version.info", cann / "compiler" / "version.info",
                  *sorted(cann.glob("*/version.info"))]
    for path in candidates:
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            key, sep, value = line.partition("=")
            if sep and key.strip().lower() == "version" and value.strip():
                return value.strip()
    return "unknown"


_ID_CACHE: dict[tuple[str, int], str] = {}
_ID_LOCK = threading.Lock()


def compiler_identity(path: Path) -> str:
    """The first lines of ``<compiler> --version`` (cached per path and mtime); "" if it does not run."""
    path = Path(path)
    try:
        stamp = (str(path.resolve()), path.stat().st_mtime_ns)
    except OSError:
        return ""
    with _ID_LOCK:
        if stamp in _ID_CACHE:
            return _ID_CACHE[stamp]
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                             errors="replace", timeout=VERSION_TIMEOUT_S, shell=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    if out.returncode != 0:
        return ""
    lines = [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]
    ident = " | ".join(lines[:2])
    with _ID_LOCK:
        _ID_CACHE[stamp] = ident
    return ident


def cxx_major(identity: str) -> tuple[str, int] | None:
    """("gcc" | "clang", major version) parsed from a ``--version`` first line, None if unknown."""
    first = identity.split(" | ")[0]
    m = re.search(r"clang version (\d+)\.", first)
    if m:
        return "clang", int(m.group(1))
    m = re.search(r"^(?:\S*g\+\+|\S*c\+\+|gcc)\S*\s.*?(\d+)\.\d+(?:\.\d+)?\s*$", first)
    if m:
        return "gcc", int(m.group(1))
    return None


# -- the toolchain ---------------------------------------------------------------------------------
def discover(env: Mapping[str, str] | None = None) -> Toolchain:
    """Look for every piece once (paths, versions, compiler identities) and return them."""
    env = _env(env)
    notes: list[tuple[str, str]] = []
    cann, note = _cann_search(env)
    if note:
        notes.append(("cann", note))
    bisheng = find_bisheng(env, cann)
    inc, note = _pto_isa_search(env, cann)
    if note:
        notes.append(("pto_isa", note))
    cxx, note = _cxx_search(env)
    if note:
        notes.append(("cxx", note))
    return Toolchain(
        cann=cann, bisheng=bisheng, pto_isa_include=inc, cxx=cxx,
        cann_version=cann_version(cann),
        pto_isa_version=pto_isa_version(inc) if inc is not None else "unknown",
        pto_isa_tree=pto_isa_tree_hash(inc) if inc is not None else "",
        cxx_id=compiler_identity(cxx) if cxx is not None else None,
        bisheng_id=compiler_identity(bisheng) if bisheng is not None else None,
        notes=tuple(notes))


# The environment discovery reads; discover_cached() looks again only when one of these changes.
ENV_INPUTS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_INSTALL_PATH", "PTO_ISA_ROOT",
              "PTO_LIB_PATH", "PTO_TILE_LIB_CODE_PATH", "CXX", "PATH")
_DISCOVERED: dict[tuple, Toolchain] = {}


def discover_cached() -> Toolchain:
    """discover() for the process environment, memoised on the variables it reads (pypto.init()
    asks whether the NPU backends are usable every time; the answer rarely changes)."""
    key = tuple(os.environ.get(v) for v in ENV_INPUTS)
    tc = _DISCOVERED.get(key)
    if tc is None:
        tc = _DISCOVERED[key] = discover()
    return tc


def _with_note(tc: Toolchain, topic: str, text: str) -> str:
    extra = [n for t, n in tc.notes if t == topic]
    return text + (f" (found: {'; '.join(extra)})" if extra else "")


def _missing_pto_isa(tc: Toolchain) -> list[str]:
    if tc.pto_isa_include is not None:
        return []
    return [_with_note(tc, "pto_isa",
                       f"pto-isa headers not found: set PTO_ISA_ROOT to {PTO_ISA_SOURCE}; it must "
                       f"contain include/{PTO_MARKER.as_posix()}")]


def _missing_cxx(tc: Toolchain) -> list[str]:
    if tc.cxx is None:
        return [_with_note(tc, "cxx",
                           "no host C++ compiler: install g++ 12 or later (e.g. apt-get install g++) "
                           "or clang++ 15 or later, or set CXX to one")]
    if tc.cxx_id == "":
        return [f"the host C++ compiler {tc.cxx} did not run (`{tc.cxx} --version` failed): "
                "set CXX to a working g++ 12+ or clang++ 15+"]
    parsed = cxx_major(tc.cxx_id or "")
    if parsed is not None and parsed[1] < MIN_CXX_MAJOR[parsed[0]]:
        family, major = parsed
        return [f"{tc.cxx} is {family} {major}, too old for pto-isa's C++20 CPU backend: install "
                f"{'g++' if family == 'gcc' else 'clang++'} {MIN_CXX_MAJOR[family]} or later and "
                "set CXX to it"]
    return []


def _missing_cann(tc: Toolchain) -> list[str]:
    if tc.cann is not None:
        return []
    return [_with_note(tc, "cann",
                       "CANN toolkit not found (ASCEND_HOME_PATH unset, no /usr/local/Ascend/cann): "
                       "install CANN 8.5 or later and `source <CANN>/set_env.sh`, or set "
                       "ASCEND_HOME_PATH to its root")]


def _missing_bisheng(tc: Toolchain) -> list[str]:
    if tc.bisheng is None:
        where = (str(tc.cann / BISHENG_IN_CANN) if tc.cann is not None
                 else "<CANN>/" + BISHENG_IN_CANN.as_posix())
        return [f"bisheng compiler not found on PATH nor at {where}: install the CANN toolkit "
                "package (it ships bisheng) and `source <CANN>/set_env.sh`"]
    if tc.bisheng_id == "":
        return [f"bisheng at {tc.bisheng} did not run (`bisheng --version` failed): "
                "`source <CANN>/set_env.sh` so its libraries are found, or reinstall the toolkit"]
    return []


def missing(tc: Toolchain, target_kind: str) -> list[str]:
    """Every piece the build of ``target_kind`` ("npu" | "cpusim") lacks, each with how to get it.
    (pyACL and the device are the runtime's checks, not the build's.)"""
    if _check_kind(target_kind) == "cpusim":
        return _missing_cxx(tc) + _missing_pto_isa(tc)
    return _missing_cann(tc) + _missing_bisheng(tc) + _missing_pto_isa(tc)


_NEEDS = {"npu": "the npu build needs the CANN toolkit, its bisheng compiler and the pto-isa headers",
          "cpusim": "the npu-cpusim build needs a C++20 host compiler and the pto-isa headers"}


def require(tc: Toolchain, kind: str) -> Toolchain:
    """``tc`` if it can build ``kind``, else NpuUnavailableError listing every missing piece."""
    gaps = missing(tc, kind)
    if gaps:
        raise NpuUnavailableError(
            f"the {kind} build cannot run here:\n    - " + "\n    - ".join(gaps),
            rule=_NEEDS[kind],
            fix="fix each item above (every one says how); the simulator needs none of them: "
                "pypto.init(backend='sim')")
    return tc
