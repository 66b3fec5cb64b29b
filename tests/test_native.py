"""Kernels kept as native code (backends/sim/native.py): a later process launches them without
numba's dispatcher, with the same results and the same fault reports; anything that does not fit
goes through numba."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import pypto
from pypto.backends.sim import native
from pypto.errors import ConfigError

CHILD = r"""
import sys
import numpy as np
import pypto
from pypto import pto
from pypto.backends.sim import native

@pypto.kernel
def k(x, z, w, r, s):
    a = pto.Tile(pto.Vec, pto.float32, (8, 16), valid=pto.DYNAMIC)
    d = pto.Tile(pto.Vec, pto.float32, (8, 16))
    i = pto.block_idx()
    a.set_valid(r, 16)
    pto.TLOAD(a, x[i * 8:i * 8 + r, 0:16])
    pto.TMULS(a, a, s)
    pto.TLOAD(d, x[i * 8:i * 8 + 8, 0:16])
    pto.TADD(d, d, d)
    pto.TSTORE(z[i * 8:i * 8 + r, 0:16], a)
    pto.TSTORE(w[i * 8:i * 8 + 8, 0:16], d)

@pypto.kernel
def k2(x, z):                            # its exp loop allocates (numba's NRT) inside the kernel
    t = pto.Tile(pto.Vec, pto.float32, (8, 16))
    pto.TLOAD(t, x)
    pto.TEXP(t, t)
    pto.TSTORE(z, t, atomic="AtomicAdd")

pypto.init()
small = np.arange(128, dtype=np.float32).reshape(8, 16) / 13 - 4
e = pypto.Tensor(np.ones((8, 16), np.float32))
k2(pypto.Tensor(small), e)
assert np.allclose(e.numpy(), 1 + np.exp(small.astype(np.float64)), rtol=1e-6), "exp differs"
import hashlib
print("EXP", hashlib.sha256(e.numpy().tobytes()).hexdigest())
src = np.arange(4 * 8 * 16, dtype=np.float32).reshape(32, 16) / 7
x = pypto.Tensor(src)
z, w = pypto.zeros((32, 16)), pypto.zeros((32, 16))
k[4](x, z, w, 8, 2.5)
assert np.array_equal(z.numpy(), src * np.float32(2.5)), "results differ from numpy"
assert np.array_equal(w.numpy(), src + src), "results differ from numpy"
try:
    k[4](x, z, w, 9, 2.5)                   # more valid rows than the tile has
except pypto.PtoError as e:
    print("FAULT", str(e).replace("\n", " | "))
print("NATIVE", native.LOADS)
prog = next(p for ir in k._traces.values() for p in ir.programs.values())
print("SOURCE", hashlib.sha256(prog.artifact.gen.source.encode()).hexdigest())
"""


def _run(tmp_path, script=CHILD, cold=False, **env) -> str:
    """The child in a process whose kernel cache is tmp_path's (its kernels compile the first time
    and are saved as native code there). Its numba cache is the test session's, where the library
    is usually compiled already, unless ``cold``: then it starts empty too."""
    e = dict(os.environ, PYPTO_CACHE_DIR=str(tmp_path / "k"), **env)
    if cold:
        e["NUMBA_CACHE_DIR"] = str(tmp_path / "nb")
    if "PYPTO_SIM_NATIVE" not in env:
        e.pop("PYPTO_SIM_NATIVE", None)
    return subprocess.run([sys.executable, "-c", script], env=e, capture_output=True, text=True,
                          check=True).stdout


def _line(out: str, tag: str) -> str:
    return next(ln[len(tag) + 1:] for ln in out.splitlines() if ln.startswith(tag))


def test_a_later_process_launches_natively_with_the_same_results_and_faults(tmp_path):
    first, second = _run(tmp_path, cold=True), _run(tmp_path, cold=True)
    assert _line(first, "NATIVE") == "0" and _line(second, "NATIVE") == "2"
    assert _line(first, "EXP") == _line(second, "EXP")          # bit for bit
    assert "9, 16): outside the tile" in _line(first, "FAULT")
    assert _line(first, "FAULT") == _line(second, "FAULT")
    # a natively loaded kernel still shows its generated source (a warm cache once broke this)
    assert _line(first, "SOURCE") == _line(second, "SOURCE")
    saved = [f for f in os.listdir(tmp_path / "k" / "native") if f.endswith(".json")]
    assert len(saved) == 2


def test_native_off_saves_nothing_and_launches_through_numba(tmp_path):
    for _ in range(2):
        out = _run(tmp_path, PYPTO_SIM_NATIVE="0")
        assert _line(out, "NATIVE") == "0"
    assert not (tmp_path / "k" / "native").exists()


def test_a_damaged_object_file_falls_back_to_numba(tmp_path):
    _run(tmp_path)
    root = tmp_path / "k" / "native"
    for f in root.iterdir():
        if f.suffix == ".o":
            f.write_bytes(f.read_bytes()[:100])
    out = _run(tmp_path)                 # the child checks its results against numpy
    assert _line(out, "NATIVE") == "0"


def test_a_kernel_with_no_native_form_is_remembered_and_runs_through_numba(tmp_path):
    _run(tmp_path)
    for meta in (f for f in (tmp_path / "k" / "native").iterdir() if f.suffix == ".json"):
        data = json.loads(meta.read_text())
        meta.write_text(json.dumps({"format": data["format"], "refused": "for the test"}))
    assert _line(_run(tmp_path), "NATIVE") == "0"



def test_prune_deletes_entries_of_other_sources_and_objects_nothing_names(tmp_path):
    """Entries saved under another fingerprint and objects no entry names go once they are older
    than STALE_AFTER; the current entries, their objects and young files stay."""
    now = 1_000_000.0
    old, young = now - native.STALE_AFTER - 1, now - 1

    def put(name: str, data: bytes, mtime: float) -> None:
        (tmp_path / name).write_bytes(data)
        os.utime(tmp_path / name, (mtime, mtime))

    def entry(fingerprint: str, *hashes: str) -> bytes:
        return json.dumps({"format": native.FORMAT, "fingerprint": fingerprint,
                           "objects": [{"hash": h} for h in hashes]}).encode()

    put("cur.json", entry(native._fingerprint(), "a", "shared"), old)
    put("a.o", b"a" * 10, old)
    put("shared.o", b"s" * 20, old)
    put("stale.json", entry("another pypto", "b", "shared"), old)
    put("b.o", b"b" * 30, old)
    put("orphan.o", b"c" * 40, old)
    put("fresh.o", b"d" * 50, young)                  # a save still writing its entry
    put("stale-young.json", entry("another pypto", "e"), young)
    put("e.o", b"e" * 60, old)
    put("damaged.json", b"{not json", old)
    freed = native.prune(str(tmp_path), now)
    left = sorted(f.name for f in tmp_path.iterdir())
    assert left == ["a.o", "cur.json", "e.o", "fresh.o", "shared.o", "stale-young.json"]
    assert freed == 30 + 40 + len(entry("another pypto", "b", "shared")) + len(b"{not json")

def _kernel(scale: float):
    from pypto import pto

    def body(x, z):
        t = pto.Tile(pto.Vec, pto.float32, (2, 8))
        pto.TLOAD(t, x)
        pto.TMULS(t, t, scale)
        pto.TSTORE(z, t)
    return pypto.kernel(body)


def _traced(scale: float):
    from pypto.ir import passes
    from pypto.isa.soc import get_profile
    soc = get_profile("a2a3")
    x, z = pypto.Tensor(np.ones((2, 8), np.float32)), pypto.zeros((2, 8))
    kern = _kernel(scale)
    k = kern.trace_for(kern.signature((x, z)), soc)
    passes.run(k, soc)
    return k, soc


def test_the_key_names_the_code_not_the_trace(session_sim):
    (a, soc), (b, _), (c, _) = _traced(2.0), _traced(2.0), _traced(3.0)
    ka, kb, kc = (native.kernel_key(k, soc, False) for k in (a, b, c))
    assert ka is not None and len({ka, kc}) == 2
    assert native.kernel_key(a, soc, True) != ka
    a.params[0].name = object()          # a value the key cannot spell: no native form
    assert native.kernel_key(a, soc, False) is None
    assert kb is not None


@pytest.fixture
def session_sim():
    pypto.init(sim=pypto.SimOptions())
    yield
    pypto.finalize()


def test_undefined_symbols_are_read_from_the_object():
    import llvmlite.binding as llvm
    mod = llvm.parse_assembly('declare void @"outside.one"()\n'
                              'declare double @sqrt(double)\n'
                              'define double @inside(double %x) {\n'
                              '  call void @"outside.one"()\n'
                              '  %r = call double @sqrt(double %x)\n'
                              '  ret double %r\n}\n')
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    tm = llvm.Target.from_default_triple().create_target_machine()
    mod.triple = llvm.get_process_triple()
    obj = tm.emit_object(mod)
    if obj[:4] != b"\x7fELF":
        pytest.skip("native kernels are ELF-only; this platform's objects are not ELF")
    assert native.symbols(obj) == ({"outside.one", "sqrt"}, {"inside"})
    assert native.symbols(b"MZ not an ELF object") is None


def test_arguments_that_do_not_fit_the_saved_types_are_refused():
    k = native.NativeKernel([["a", "float32", 1], ["s", "int64"], ["s", "float64"]], None, 1,
                            lambda: None)
    a = np.zeros(4, np.float32)
    p = k.pack([a, 3, 0.5])
    w = p.words          # the scalars first, then each array's data model (native.layout)
    assert w[0] == 3 and w[1] == np.float64(0.5).view(np.int64)
    assert p.ptr == w.ctypes.data and list(w[4:7]) == [4, 4, a.ctypes.data] and w[7] == 4 and w[8] == 4
    assert k.pack([a.astype(np.float64), 3, 0.5]) is None        # another dtype
    assert k.pack([np.zeros(8, np.float32)[::2], 3, 0.5]) is None  # not contiguous
    assert k.pack([a, True, 0.5]) is None                         # a bool is not an int64
    assert k.pack([a, 3, 1]) is None                              # an int is not a float64
    ro = a.copy()
    ro.flags.writeable = False
    assert k.pack([ro, 3, 0.5]) is None


def test_the_native_option_is_checked(clean_env):
    with pytest.raises(ConfigError, match="native"):
        pypto.SimOptions(native="yes")
    clean_env.setenv("PYPTO_SIM_NATIVE", "maybe")
    with pytest.raises(ConfigError, match="PYPTO_SIM_NATIVE"):
        pypto.SimOptions()


PLUGIN = """
import os
def pytest_unconfigure(config):
    from pypto.backends.sim import native
    with open(os.environ["NATIVE_LOADS_TO"], "a") as f:
        f.write(f"{native.LOADS}\\n")
"""


def test_the_launch_fast_path_tests_pass_again_from_native_code(tmp_path):
    """tests/test_launch_fast_path.py (repeated launches, new data, a freed tensor, faults the data
    causes, several threads) in a fresh process, then again in one that launches natively."""
    (tmp_path / "native_loads.py").write_text(PLUGIN)
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYPTO_CACHE_DIR=str(tmp_path / "k"), NATIVE_LOADS_TO=str(tmp_path / "loads"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.path.dirname(here)]))
    env.pop("PYPTO_SIM_NATIVE", None)
    for _ in range(2):
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "native_loads", "-p",
                            "no:cacheprovider", os.path.join(here, "test_launch_fast_path.py")],
                           env=env, capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, r.stdout[-2000:]
    first, second = (int(n) for n in (tmp_path / "loads").read_text().split())
    assert first == 0 and second >= 3


def test_objects_are_linked_only_once_every_symbol_they_name_is_there():
    """A callee before its caller, an entry together with the kernel it calls, and nothing whose
    symbol nobody defines (LLVM would abort the process)."""
    O = native.Obj
    callee = O(b"", ["memmove"], ["callee_fn"], {"pypto.xcall.a": "callee_fn"})
    kernel = O(b"", ["pypto.xcall.a", "Py_IncRef"], ["kernel_fn"], {})
    entry = O(b"", ["kernel_fn"], ["entry"], {})
    orphan = O(b"", ["nowhere"], ["orphan_fn"], {})
    known = {"memmove", "Py_IncRef"}
    objs = [entry, kernel, callee, orphan]
    assert native._linkable(objs, set(), known.__contains__) == [callee]
    known.add("pypto.xcall.a")                       # the callee's name, once it is linked
    assert native._linkable([entry, kernel, orphan], {"callee_fn"}, known.__contains__) == [entry, kernel]
    assert native._linkable([orphan], {"callee_fn", "kernel_fn"}, known.__contains__) == []


ADD_CHILD = r"""
import sys
import numpy as np
import pypto
pypto.init()
add = pypto.load_insn("add")
c = np.zeros(5, np.float32)
for i, t in enumerate((np.array([1, 2, 3, 4, 5], np.float32), np.array([10, 20, 30, 40, 50], np.float32), c)):
    add.set_operand(i, t)
add.execute()
print("RESULT", c)
print("NUMBA", "numba" in sys.modules)
"""


def test_the_tutorials_add_runs_in_a_later_process_without_importing_numba(tmp_path):
    """TADD, TLOAD and TSTORE are registered by modules that do not import numba, and the
    units index names those modules (not the first module whose import reached them)."""
    first, second = _run(tmp_path, ADD_CHILD), _run(tmp_path, ADD_CHILD)
    assert _line(first, "RESULT") == _line(second, "RESULT") == "[11. 22. 33. 44. 55.]"  # the tutorial's
    assert _line(first, "NUMBA") == "True" and _line(second, "NUMBA") == "False"



MIXED_CHILD = r"""
import sys
sys.path.insert(0, {examples!r})
import numpy as np
import pypto
from pypto import pto
pypto.init()
from kernel_softmax import softmax_rows
xh = (np.random.default_rng(0).standard_normal((16, 256)) * 4).astype(np.float32)
y = pypto.empty(xh.shape, pypto.float32)
softmax_rows[2](pypto.Tensor(xh), y)
e = np.exp(xh.astype(np.float64) - xh.max(axis=1, keepdims=True))
assert np.abs(y.numpy() - e / e.sum(axis=1, keepdims=True)).max() < 1e-6, "softmax differs"

@pypto.kernel
def k(x, w, z):
    a = pto.Tile(pto.Vec, pto.int16, (8, 16))
    b = pto.Tile(pto.Vec, pto.int16, (8, 16))
    f = pto.Tile(pto.Vec, pto.float32, (8, 16))
    pto.TLOAD(a, x)
    pto.TLOAD(b, w)
    pto.TAND(a, a, b)
    pto.TCVT(f, a)
    pto.TSTORE(z, f)

u = np.arange(128, dtype=np.int16).reshape(8, 16) * 37
v = np.full((8, 16), 0x5A5, np.int16)
z = pypto.zeros((8, 16))
k(pypto.Tensor(u), pypto.Tensor(v), z)
assert np.array_equal(z.numpy(), (u & v).astype(np.float32)), "and/convert differs"
print("NUMBA", "numba" in sys.modules)
"""


def test_every_unit_module_imports_without_numba():
    """Tracing needs only the module that registers an instruction: none of them imports numba
    (their loops live in modules the generated kernels import)."""
    from pypto.units import _index
    mods = sorted(set(_index.MODULES.values()))
    code = ("import importlib, sys\n"
            f"for m in {mods!r}:\n"
            "    importlib.import_module('pypto.units.' + m)\n"
            "print(sorted(k for k in sys.modules if k == 'numba' or k.startswith('numba.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_softmax_and_bitwise_kernels_run_in_a_later_process_without_importing_numba(tmp_path):
    """The softmax example (row reductions, broadcasts, TEXP) and a TAND / TCVT kernel: the
    second process launches them from native code, with results checked against numpy."""
    child = MIXED_CHILD.format(examples=os.path.join(os.path.dirname(__file__), "..", "examples"))
    first, second = _run(tmp_path, child), _run(tmp_path, child)
    assert _line(first, "NUMBA") == "True" and _line(second, "NUMBA") == "False"

def test_the_units_index_names_the_module_that_registers_each_instruction():
    code = ("import pypto.units.{m} as _, sys\n"
            "from pypto.ir import registry\n"
            "print(sorted(registry.registered()))")
    from pypto.units import _index
    for module in ("elementwise", "memory"):
        want = {n for n, m in _index.MODULES.items() if m == module}
        out = subprocess.run([sys.executable, "-c", code.format(m=module)], capture_output=True,
                             text=True, check=True).stdout
        assert want and want <= set(eval(out)), module
