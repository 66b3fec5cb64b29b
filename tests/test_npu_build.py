"""The npu backend's build layer without CANN: arch tables, toolchain discovery, exact compiler
command lines, the cache key, and the cached/locked build driven by a fake compiler. One test
compiles a real kernel with g++ against pto-isa's CPU backend when PTO_ISA_ROOT is set."""
from __future__ import annotations

import ctypes
import dataclasses
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from pypto.backends.npu import arch, build as B, toolchain as T
from pypto.errors import ConfigError, NpuCompileError, NpuUnavailableError, PtoError

# -- arch tables ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name,profile,cores", [
    ("Ascend910B1", "a2a3", (24, 48)),
    ("Ascend910B4", "a2a3", (20, 40)),
    ("Ascend910B4-1", "a2a3", (20, 40)),
    ("Ascend910_9391", "a2a3", (24, 48)),
    ("Ascend910C4", "a2a3", (24, 48)),
    ("Ascend950PR_9579", "a5", (28, 56)),
    ("Ascend950DT_9572", "a5", (28, 56)),
    ("Ascend950PR_9589", "a5", (32, 64)),
    ("Ascend950DT_9582", "a5", (32, 64)),
    ("Ascend910_9599", "a5", (None, None)),
])
def test_soc_names_map_to_profiles_and_core_counts(name, profile, cores):
    assert arch.profile_for_soc_name(name) == profile
    assert arch.default_cores(name) == cores


@pytest.mark.parametrize("name", ["Ascend310P3", "Ascend910", "Ascend910A", "gibberish", ""])
def test_unknown_soc_name_says_which_and_how_to_force(name):
    with pytest.raises(NpuUnavailableError) as err:
        arch.profile_for_soc_name(name)
    text = str(err.value)
    assert repr(name) in text
    assert "Ascend910B1*" in text and "Ascend950*" in text          # the known ones are listed
    assert "PYPTO_NPU_SOC=a2a3|a5" in text


def test_profile_override_from_env():
    assert arch.resolve_profile("Ascend310P3", {"PYPTO_NPU_SOC": "a5"}) == "a5"
    assert arch.resolve_profile("Ascend910B2", {}) == "a2a3"
    with pytest.raises(NpuUnavailableError, match="PYPTO_NPU_SOC='a9'"):
        arch.resolve_profile("Ascend910B2", {"PYPTO_NPU_SOC": "a9"})
    with pytest.raises(NpuUnavailableError, match="no SoC name"):
        arch.resolve_profile(None, {})


def test_arch_table_facts():
    a2, a5 = arch.arch("a2a3"), arch.arch("a5")
    assert (a2.npu_arch, a5.npu_arch) == (2201, 3510)
    assert dict(a2.aicore_arch) == {"vec": "dav-c220-vec", "cube": "dav-c220-cube", "mix": "dav-c220"}
    assert dict(a5.aicore_arch) == {"vec": "dav-c310-vec", "cube": "dav-c310-cube", "mix": "dav-c310"}
    assert (a2.memory_base, a5.memory_base) == ("MEMORY_BASE", "REGISTER_BASE")
    assert (a2.extra_flags, a5.extra_flags) == ((), ("-Wno-unknown-attributes",))
    with pytest.raises(PtoError, match="a2a3, a5"):
        arch.arch("a7")
    with pytest.raises(PtoError, match="vec, cube, mix"):
        a2.arch_for("simd")


# -- exact command lines ----------------------------------------------------------------------------
TC = T.Toolchain(cann=Path("/opt/cann"), bisheng=Path("/opt/cann/bin/bisheng"),
                 pto_isa_include=Path("/src/pto-isa/include"), cxx=Path("/usr/bin/g++"),
                 cann_version="8.5.0", pto_isa_version="abc123", pto_isa_tree="t0",
                 cxx_id="g++ (Debian 12.2.0-14) 12.2.0", bisheng_id="bisheng 1.0")
SRC, OUT = Path("/tmp/b/kernel.cpp"), Path("/tmp/b/kernel.so.tmp")

MLLVM = ["-mllvm", "-cce-aicore-stack-size=0x8000", "-mllvm", "-cce-aicore-function-stack-size=0x8000",
         "-mllvm", "-cce-aicore-record-overflow=true", "-mllvm", "-cce-aicore-addr-transform",
         "-mllvm", "-cce-aicore-dcci-insert-for-scalar=false"]
CANN_INC = ["-I/src/pto-isa/include", "-I/opt/cann/include", "-I/opt/cann/pkg_inc",
            "-I/opt/cann/pkg_inc/runtime", "-I/opt/cann/pkg_inc/profiling"]
TAIL = ["/tmp/b/kernel.cpp", "-o", "/tmp/b/kernel.so.tmp", "-L/opt/cann/lib64", "-lruntime"]


def _npu(arch_flag, base, extra=(), mix=False, debug=False, opt="-O2"):
    return (["/opt/cann/bin/bisheng", "-xcce", "-fPIC", "-shared", opt, "-std=c++17",
             "-Wno-macro-redefined", "-Wno-ignored-attributes", f"--cce-aicore-arch={arch_flag}", base,
             *extra] + MLLVM + (["--cce-fatobj-link"] if mix else [])
            + (["-D_DEBUG", "--cce-enable-print"] if debug else []) + CANN_INC + TAIL)


@pytest.mark.parametrize("soc,core,debug,expected", [
    ("a2a3", "vec", False, _npu("dav-c220-vec", "-DMEMORY_BASE")),
    ("a2a3", "cube", False, _npu("dav-c220-cube", "-DMEMORY_BASE")),
    ("a2a3", "mix", False, _npu("dav-c220", "-DMEMORY_BASE", mix=True)),
    ("a2a3", "vec", True, _npu("dav-c220-vec", "-DMEMORY_BASE", debug=True)),
    ("a5", "vec", False, _npu("dav-c310-vec", "-DREGISTER_BASE", ["-Wno-unknown-attributes"])),
    ("a5", "cube", False, _npu("dav-c310-cube", "-DREGISTER_BASE", ["-Wno-unknown-attributes"])),
    ("a5", "mix", True, _npu("dav-c310", "-DREGISTER_BASE", ["-Wno-unknown-attributes"], mix=True,
                             debug=True)),
])
def test_npu_argv_exact(soc, core, debug, expected):
    assert B.argv(B.BuildTarget("npu", soc, core, debug), TC, SRC, OUT) == expected


def test_npu_argv_opt_level():
    got = B.argv(B.BuildTarget("npu", "a2a3", "vec", opt="-O3"), TC, SRC, OUT)
    assert got == _npu("dav-c220-vec", "-DMEMORY_BASE", opt="-O3")


def test_fatobj_link_only_for_mix():
    for soc in ("a2a3", "a5"):
        for core in ("vec", "cube", "mix"):
            for debug in (False, True):
                cmd = B.argv(B.BuildTarget("npu", soc, core, debug), TC, SRC, OUT)
                assert ("--cce-fatobj-link" in cmd) == (core == "mix")


CPUSIM_HEAD = ["/usr/bin/g++", "-std=c++20", "-D__CPU_SIM"]
CPUSIM_MID = ["-fPIC", "-shared", "-include", "stdint.h", "-include", "stddef.h", "-I/src/pto-isa/include"]
CPUSIM_TAIL = ["/tmp/b/kernel.cpp", "-o", "/tmp/b/kernel.so.tmp", "-lpthread"]


@pytest.mark.parametrize("soc,core,debug,expected", [
    ("a2a3", "vec", False, CPUSIM_HEAD + ["-O2"] + CPUSIM_MID + ["-DPYPTO_SOC_A2A3"] + CPUSIM_TAIL),
    ("a2a3", "mix", False, CPUSIM_HEAD + ["-O2"] + CPUSIM_MID + ["-DPYPTO_SOC_A2A3"] + CPUSIM_TAIL),
    ("a5", "cube", False, CPUSIM_HEAD + ["-O2"] + CPUSIM_MID + ["-DPYPTO_SOC_A5"] + CPUSIM_TAIL),
    ("a5", "vec", True, CPUSIM_HEAD + ["-O2", "-g"] + CPUSIM_MID + ["-DPYPTO_SOC_A5"] + CPUSIM_TAIL),
])
def test_cpusim_argv_exact(soc, core, debug, expected):
    assert B.argv(B.BuildTarget("cpusim", soc, core, debug), TC, SRC, OUT) == expected


def test_cpusim_flags_from_the_environment_variable():
    """PYPTO_CPUSIM_CXXFLAGS="-O3 -march=native" (what benchmarks/vs_ptoisa.py builds with): the
    level replaces -O2, the rest follows it."""
    got = B.argv(B.BuildTarget("cpusim", "a2a3", **B.cpusim_flags("-O3 -march=native")), TC, SRC, OUT)
    assert got == CPUSIM_HEAD + ["-O3", "-march=native"] + CPUSIM_MID + ["-DPYPTO_SOC_A2A3"] + CPUSIM_TAIL
    assert B.cpusim_flags(None) == dict(opt="-O2", flags=())
    with pytest.raises(ConfigError, match="PYPTO_CPUSIM_CXXFLAGS"):
        B.cpusim_flags("-Ofast")


def test_argv_needs_the_toolchain_pieces():
    with pytest.raises(NpuUnavailableError, match="CANN toolkit not found"):
        B.argv(B.BuildTarget("npu", "a2a3"), dataclasses.replace(TC, cann=None), SRC, OUT)
    with pytest.raises(NpuUnavailableError, match="no host C\\+\\+ compiler"):
        B.argv(B.BuildTarget("cpusim", "a2a3"), dataclasses.replace(TC, cxx=None), SRC, OUT)


@pytest.mark.parametrize("kw", [dict(kind="gpu"), dict(soc="a9"), dict(core="simd"), dict(opt="-O9"),
                                dict(debug=1), dict(flags=("-march=native",)),
                                dict(kind="cpusim", flags=("-o/tmp/x",)), dict(kind="cpusim", flags=(3,))])
def test_build_target_rejects_bad_fields(kw):
    base = dict(kind="npu", soc="a2a3")
    with pytest.raises(ConfigError):
        B.BuildTarget(**{**base, **kw})


# -- the cache key -------------------------------------------------------------------------------------
TARGET = B.BuildTarget("npu", "a2a3", "vec")
SOURCE = "// kernel\nint x;\n"


def _key(source=SOURCE, tc=TC, target=TARGET, src=SRC, out=OUT, cmd=None):
    cmd = B.argv(target, tc, src, out) if cmd is None else cmd
    return B.cache_key(source, B.key_argv(cmd, src, out), tc, target)


def test_key_ignores_where_source_and_output_live():
    assert _key() == _key(src=Path("/var/tmp/x/k.cpp"), out=Path("/elsewhere/k.so.tmp.1.ab"))
    assert B.SRC_PLACEHOLDER in B.key_argv(B.argv(TARGET, TC, SRC, OUT), SRC, OUT)
    assert str(OUT) not in B.key_argv(B.argv(TARGET, TC, SRC, OUT), SRC, OUT)


def test_key_changes_with_every_input():
    base = _key()
    variants = {
        "source": _key(source=SOURCE + " "),
        "target.soc": _key(target=B.BuildTarget("npu", "a5", "vec")),
        "target.core": _key(target=B.BuildTarget("npu", "a2a3", "cube")),
        "target.debug": _key(target=B.BuildTarget("npu", "a2a3", "vec", debug=True)),
        "target.opt": _key(target=B.BuildTarget("npu", "a2a3", "vec", opt="-O3")),
        "compiler id": _key(tc=dataclasses.replace(TC, bisheng_id="bisheng 1.1")),
        "pto-isa version": _key(tc=dataclasses.replace(TC, pto_isa_version="abc124")),
        "pto-isa headers": _key(tc=dataclasses.replace(TC, pto_isa_tree="t1")),
        "cann version": _key(tc=dataclasses.replace(TC, cann_version="8.5.1")),
        "cann root": _key(tc=dataclasses.replace(TC, cann=Path("/opt/cann2"))),
    }
    # each argv element, changed on its own (same target, same toolchain record)
    cmd = B.argv(TARGET, TC, SRC, OUT)
    for i, arg in enumerate(cmd):
        if arg in (str(SRC), str(OUT), "-o"):
            continue
        changed = list(cmd)
        changed[i] = arg + "x"
        variants[f"argv[{i}]={arg}"] = _key(cmd=changed)
    for what, key in variants.items():
        assert key != base, what
    assert len(set(variants.values())) == len(variants)


def test_key_for_a_target_uses_its_own_compiler_identity():
    cpu = B.BuildTarget("cpusim", "a2a3")
    assert _key(target=cpu) != _key(target=cpu, tc=dataclasses.replace(TC, cxx_id="g++ 13.1.0"))
    assert _key(target=cpu) == _key(target=cpu, tc=dataclasses.replace(TC, bisheng_id="other"))


# -- toolchain discovery -------------------------------------------------------------------------------
def _exe(path: Path, text: str = "#!/bin/sh\necho fake 1.0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _pto_layout(root: Path) -> Path:
    inc = root / "include"
    (inc / "pto").mkdir(parents=True)
    (inc / "pto" / "pto-inst.hpp").write_text("// fake\n")
    return inc


@pytest.fixture
def no_default_cann(monkeypatch):
    monkeypatch.setattr(T, "DEFAULT_CANN_ROOTS", ())


def test_discovery_finds_cann_bisheng_pto_isa_and_cxx(tmp_path, no_default_cann):
    cann = tmp_path / "cann"
    bisheng = _exe(cann / "compiler" / "ccec_compiler" / "bin" / "bisheng")
    (cann / "version.info").write_text("# toolkit\nVersion=8.5.0.alpha1\n")
    inc = _pto_layout(tmp_path / "pto-isa")
    cxx = _exe(tmp_path / "bin" / "g++", "#!/bin/sh\necho 'g++ (Fake) 13.2.0'\necho second\n")
    env = {"ASCEND_HOME_PATH": str(cann), "PTO_ISA_ROOT": str(tmp_path / "pto-isa"),
           "PATH": str(tmp_path / "bin")}
    tc = T.discover(env)
    assert tc.cann == cann and tc.bisheng == bisheng and tc.pto_isa_include == inc and tc.cxx == cxx
    assert tc.cann_version == "8.5.0.alpha1"
    assert tc.cxx_id == "g++ (Fake) 13.2.0 | second" and tc.bisheng_id == "fake 1.0"
    assert tc.pto_isa_version.startswith("tree-")               # not a git checkout
    assert T.missing(tc, "npu") == [] and T.missing(tc, "cpusim") == []
    assert T.require(tc, "npu") is tc


def test_bisheng_on_path_wins_and_pto_isa_accepts_an_include_dir(tmp_path, no_default_cann):
    on_path = _exe(tmp_path / "bin" / "bisheng")
    _exe(tmp_path / "cann" / "compiler" / "ccec_compiler" / "bin" / "bisheng")
    inc = _pto_layout(tmp_path / "repo")
    env = {"PATH": str(tmp_path / "bin"), "ASCEND_TOOLKIT_HOME": str(tmp_path / "cann"),
           "PTO_LIB_PATH": str(inc)}
    assert T.find_bisheng(env, T.find_cann(env)) == on_path
    assert T.find_pto_isa(env, None) == inc
    assert T.find_pto_isa({"PTO_TILE_LIB_CODE_PATH": str(tmp_path / "repo")}, None) == inc


def test_cann_search_order(tmp_path, monkeypatch):
    dirs = {v: tmp_path / v for v in ("a", "b", "c", "d")}
    for d in dirs.values():
        d.mkdir()
    monkeypatch.setattr(T, "DEFAULT_CANN_ROOTS", (str(tmp_path / "none"), str(dirs["d"])))
    full = {"ASCEND_HOME_PATH": str(dirs["a"]), "ASCEND_TOOLKIT_HOME": str(dirs["b"]),
            "ASCEND_INSTALL_PATH": str(dirs["c"])}
    assert T.find_cann(full) == dirs["a"]
    assert T.find_cann({k: v for k, v in full.items() if k != "ASCEND_HOME_PATH"}) == dirs["b"]
    assert T.find_cann({"ASCEND_INSTALL_PATH": str(dirs["c"])}) == dirs["c"]
    assert T.find_cann({}) == dirs["d"]


def test_pto_isa_from_cann_include(tmp_path, no_default_cann):
    cann = tmp_path / "cann"
    inc = _pto_layout(cann)            # <cann>/include/pto/pto-inst.hpp
    assert T.find_pto_isa({}, cann) == inc


def test_cxx_choice(tmp_path):
    gpp = _exe(tmp_path / "bin" / "g++")
    clang = _exe(tmp_path / "bin" / "clang++")
    mine = _exe(tmp_path / "other" / "mycxx")
    assert T.find_cxx({"PATH": str(tmp_path / "bin")}) == gpp
    gpp.unlink()
    assert T.find_cxx({"PATH": str(tmp_path / "bin")}) == clang
    assert T.find_cxx({"PATH": str(tmp_path / "bin"), "CXX": str(mine)}) == mine
    assert T.find_cxx({"PATH": str(tmp_path / "other"), "CXX": "mycxx"}) == mine
    assert T.find_cxx({"PATH": str(tmp_path / "bin"), "CXX": "nonexistent-cxx"}) is None


def test_missing_lists_every_piece_with_a_fix(tmp_path, no_default_cann):
    tc = T.discover({"PATH": str(tmp_path)})                    # an empty PATH dir: nothing at all
    npu = T.missing(tc, "npu")
    assert len(npu) == 3
    assert "CANN toolkit not found" in npu[0] and "set_env.sh" in npu[0] and "ASCEND_HOME_PATH" in npu[0]
    assert "bisheng compiler not found" in npu[1] and "install the CANN toolkit" in npu[1]
    assert "pto-isa headers not found" in npu[2] and "set PTO_ISA_ROOT" in npu[2]
    assert "cannmirror/pto-isa" in npu[2]
    cpu = T.missing(tc, "cpusim")
    assert len(cpu) == 2
    assert "no host C++ compiler" in cpu[0] and "set CXX" in cpu[0]
    assert "pto-isa headers not found" in cpu[1]
    with pytest.raises(NpuUnavailableError) as err:
        T.require(tc, "npu")
    text = str(err.value)
    for item in npu:
        assert item in text
    assert "Rule:" in text and "Fix:" in text
    with pytest.raises(ConfigError):
        T.missing(tc, "gpu")


def test_missing_explains_a_bad_setting(tmp_path, no_default_cann):
    env = {"PATH": str(tmp_path), "ASCEND_HOME_PATH": str(tmp_path / "nope"),
           "PTO_ISA_ROOT": str(tmp_path), "CXX": "no-such-g++"}
    tc = T.discover(env)
    npu, cpu = T.missing(tc, "npu"), T.missing(tc, "cpusim")
    assert f"ASCEND_HOME_PATH={tmp_path / 'nope'} is not a directory" in npu[0]
    assert f"PTO_ISA_ROOT={tmp_path} holds neither" in npu[2]
    assert "CXX=no-such-g++ is not an executable" in cpu[0]


def test_missing_flags_old_or_broken_compilers(tmp_path):
    base = T.Toolchain(pto_isa_include=Path("/x/include"), cxx=Path("/usr/bin/g++"))
    old = dataclasses.replace(base, cxx_id="g++ (GCC) 9.4.0")
    assert "too old" in T.missing(old, "cpusim")[0] and "g++ 12 or later" in T.missing(old, "cpusim")[0]
    old_clang = dataclasses.replace(base, cxx_id="Ubuntu clang version 11.1.0-6")
    assert "clang++ 15 or later" in T.missing(old_clang, "cpusim")[0]
    ok = dataclasses.replace(base, cxx_id="g++ (Debian 12.2.0-14+deb12u1) 12.2.0")
    assert T.missing(ok, "cpusim") == []
    assert "did not run" in T.missing(dataclasses.replace(base, cxx_id=""), "cpusim")[0]
    broken = _exe(tmp_path / "bad-cxx", "#!/bin/sh\nexit 3\n")
    assert T.compiler_identity(broken) == ""


def test_pto_isa_version_from_git_files(tmp_path):
    root = tmp_path / "pto-isa"
    inc = _pto_layout(root)
    sha = "0123456789abcdef0123456789abcdef01234567"
    git = root / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text(sha + "\n")
    assert T.pto_isa_version(inc) == sha
    (git / "refs" / "heads" / "main").unlink()
    other = "fedcba9876543210fedcba9876543210fedcba98"
    (git / "packed-refs").write_text(f"# pack-refs with: peeled\n{other} refs/heads/main\n")
    assert T.pto_isa_version(inc) == other
    (git / "HEAD").write_text(sha + "\n")                          # detached HEAD
    assert T.pto_isa_version(root / "include") == sha


def test_pto_isa_version_without_git_tracks_the_headers(tmp_path):
    inc = _pto_layout(tmp_path / "p")
    v1 = T.pto_isa_version(inc)
    assert v1.startswith("tree-") and v1 == T.pto_isa_version(inc)
    (inc / "pto" / "extra.hpp").write_text("// more\n")
    assert T.pto_isa_version(inc) != v1


def test_cann_version_files(tmp_path):
    assert T.cann_version(None) == "unknown"
    assert T.cann_version(tmp_path) == "unknown"
    (tmp_path / "toolkit").mkdir()
    (tmp_path / "toolkit" / "version.info").write_text("Version=8.5.0\n")
    assert T.cann_version(tmp_path) == "8.5.0"
    (tmp_path / "compiler").mkdir()
    (tmp_path / "compiler" / "version.info").write_text("version_dir=x\nVersion=9.0.0\n")
    assert T.cann_version(tmp_path) == "9.0.0"
    (tmp_path / "version.info").write_text("Version=9.1.0\n")
    assert T.cann_version(tmp_path) == "9.1.0"


# -- build() with a fake compiler ----------------------------------------------------------------------
FAKE_CXX = '''#!{python}
import os, sys, time
args = sys.argv[1:]
if args == ["--version"]:
    print("fakecxx 1.0")
    sys.exit(0)
with open({count!r}, "a") as f:
    f.write("%d\\n" % os.getpid())
out = args[args.index("-o") + 1]
src = [a for a in args if a.endswith(".cpp")][0]
text = open(src).read()
if "SLEEP" in text:
    time.sleep(60)
if "BROKEN" in text:
    sys.stderr.write(src + ":1:1: warning: something odd\\n")
    sys.stderr.write(src + ":2:5: error: 'TADDX' was not declared in this scope\\n")
    sys.stderr.write("pto_tile.hpp:9: error: static assertion failed: [SA-0352] tile too big\\n")
    sys.exit(1)
if "NOOUT" in text:
    sys.exit(0)
time.sleep(0.2)   # widen the window in which concurrent builders overlap
with open(out, "w") as f:
    f.write("built from " + src)
'''


@pytest.fixture
def fake(tmp_path):
    """(toolchain whose cxx is the fake compiler, file counting its compiles, cache dir)."""
    count = tmp_path / "invocations.txt"
    cxx = _exe(tmp_path / "bin" / "fakecxx", FAKE_CXX.format(python=sys.executable, count=str(count)))
    inc = _pto_layout(tmp_path / "pto-isa")
    tc = T.Toolchain(cxx=cxx, pto_isa_include=inc, cxx_id=T.compiler_identity(cxx),
                     pto_isa_version="v1", pto_isa_tree="t")
    assert tc.cxx_id == "fakecxx 1.0"
    B.clear_memo()
    yield tc, count, tmp_path / "cache"
    B.clear_memo()


def _compiles(count: Path) -> int:
    return len(count.read_text().splitlines()) if count.exists() else 0


CPU = B.BuildTarget("cpusim", "a2a3")


def test_build_caches_on_disk_and_in_memory(fake):
    tc, count, cache = fake
    lib = B.build("int ok;\n", CPU, tc, cache, name="add")
    assert lib.name == "add.so" and lib.read_text().startswith("built from")
    folder = lib.parent
    assert folder.parent.name == folder.name[:2] and folder.parent.parent == cache / "npu"
    assert (folder / "add.cpp").read_text() == "int ok;\n"
    assert (folder / "cmd.txt").read_text().startswith(str(tc.cxx) + " -std=c++20 -D__CPU_SIM")
    assert (folder / "build.log").exists()
    assert not list(folder.glob("*.tmp.*"))
    assert _compiles(count) == 1
    assert B.build("int ok;\n", CPU, tc, cache, name="add") == lib          # memo
    B.clear_memo()
    assert B.build("int ok;\n", CPU, tc, cache, name="add") == lib          # disk
    assert _compiles(count) == 1
    B.build("int ok2;\n", CPU, tc, cache, name="add")                       # another source
    assert _compiles(count) == 2


def test_eight_threads_compile_once(fake):
    tc, count, cache = fake
    results, errors = [], []
    barrier = threading.Barrier(8)

    def worker():
        try:
            barrier.wait()
            results.append(B.build("int threads;\n", CPU, tc, cache))
        except Exception as exc:       # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == 8 and len(set(results)) == 1 and results[0].is_file()
    assert _compiles(count) == 1


CHILD = """
import sys
from pathlib import Path
from pypto.backends.npu import build as B, toolchain as T
tc = T.Toolchain(cxx=Path(sys.argv[1]), pto_isa_include=Path(sys.argv[2]), cxx_id="fakecxx 1.0",
                 pto_isa_version="v1", pto_isa_tree="t")
print(B.build("int procs;\\n", B.BuildTarget("cpusim", "a2a3"), tc, Path(sys.argv[3])))
"""


def test_two_processes_compile_once(fake):
    tc, count, cache = fake
    cmd = [sys.executable, "-c", CHILD, str(tc.cxx), str(tc.pto_isa_include), str(cache)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    paths = {Path(out.strip()) for out, _ in outs}
    assert len(paths) == 1 and paths.pop().is_file()
    assert _compiles(count) == 1
    # and this process finds the same library without compiling
    assert B.build("int procs;\n", CPU, tc, cache).is_file() and _compiles(count) == 1


def test_failure_keeps_source_and_log(fake):
    tc, count, cache = fake
    with pytest.raises(NpuCompileError) as err:
        B.build("// BROKEN\nTADDX();\n", CPU, tc, cache, name="bad")
    e = err.value
    assert e.returncode == 1
    assert e.first_error.endswith("2:5: error: 'TADDX' was not declared in this scope")
    src, log = Path(e.source_path), Path(e.log_path)
    assert src.read_text() == "// BROKEN\nTADDX();\n" and src.name == "bad.cpp"
    assert "'TADDX' was not declared" in log.read_text() and "warning: something odd" in log.read_text()
    text = str(e)
    for piece in (str(src), str(log), "exit code 1", e.first_error, "[SA-0352] tile too big",
                  "did not compile with fakecxx", "report it with the two files"):
        assert piece in text, piece
    assert e.argv[0] == str(tc.cxx)
    assert not (src.parent / "bad.so").exists() and not list(src.parent.glob("*.tmp.*"))
    with pytest.raises(NpuCompileError):                           # failures are not cached
        B.build("// BROKEN\nTADDX();\n", CPU, tc, cache, name="bad")
    assert _compiles(count) == 2


def test_no_output_is_a_failure(fake):
    tc, _, cache = fake
    with pytest.raises(NpuCompileError, match="wrote no"):
        B.build("// NOOUT\n", CPU, tc, cache)


def test_timeout(fake):
    tc, _, cache = fake
    with pytest.raises(NpuCompileError) as err:
        B.build("// SLEEP\n", CPU, tc, cache, timeout=1)
    e = err.value
    assert e.returncode is None and "timed out after 1 s" in e.first_error
    assert Path(e.source_path).exists() and "killed after 1 s" in Path(e.log_path).read_text()
    assert not list(Path(e.source_path).parent.glob("*.so*"))


def test_unrunnable_compiler(fake, tmp_path):
    tc, _, cache = fake
    gone = dataclasses.replace(tc, cxx=tmp_path / "deleted-cxx")
    with pytest.raises(NpuCompileError) as err:
        B.build("int x;\n", CPU, gone, cache)
    assert err.value.returncode is None and "did not start" in err.value.first_error


def test_bad_build_name(fake):
    tc, _, cache = fake
    with pytest.raises(ConfigError):
        B.build("int x;\n", CPU, tc, cache, name="../escape")


def test_default_cache_dir_is_the_pypto_cache(clean_env, tmp_path):
    clean_env.setenv("PYPTO_CACHE_DIR", str(tmp_path / "c"))
    assert B.default_cache_dir() == tmp_path / "c"


# -- a real compile against pto-isa's CPU backend -------------------------------------------------------
TADD_KERNEL = textwrap.dedent("""\
    #include <cstdint>
    #include <cstddef>
    #include <pto/pto-inst.hpp>

    using namespace pto;

    constexpr int R = 16, C = 64;
    using Gm = GlobalTensor<float, Shape<1, 1, 1, R, C>, Stride<1, 1, 1, C, 1>>;
    using VecTile = Tile<TileType::Vec, float, R, C, BLayout::RowMajor>;

    extern "C" void tadd_16x64(float* z, float* x, float* y) {
        VecTile a, b, c;
        TASSIGN(a, 0x0);
        TASSIGN(b, 0x1000);
        TASSIGN(c, 0x2000);
        Gm gx(x), gy(y), gz(z);
        TLOAD(a, gx);
        TLOAD(b, gy);
        set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
        wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
        TADD(c, a, b);
        set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
        wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
        TSTORE(gz, c);
    }
""")


@pytest.mark.skipif(not os.environ.get("PTO_ISA_ROOT"),
                    reason="needs PTO_ISA_ROOT pointing at a pto-isa checkout (and g++ 12+) to compile "
                           "against pto-isa's CPU backend")
def test_real_cpusim_compile_and_run(tmp_path):
    tc = T.discover()
    T.require(tc, "cpusim")
    B.clear_memo()
    lib = B.build(TADD_KERNEL, B.BuildTarget("cpusim", "a2a3"), tc, tmp_path / "cache", name="tadd")
    fn = ctypes.CDLL(str(lib)).tadd_16x64
    fn.argtypes = [ctypes.c_void_p] * 3
    fn.restype = None
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 64), dtype=np.float32)
    y = rng.standard_normal((16, 64), dtype=np.float32)
    z = np.zeros_like(x)
    fn(z.ctypes.data, x.ctypes.data, y.ctypes.data)
    np.testing.assert_array_equal(z, x + y)
