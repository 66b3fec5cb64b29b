"""pypto.testing for users' own suites: assert_close's rules and reports (checked against values
worked out here by hand, not by the code under test), and the pytest plugin run on a user's test
file in a subprocess, on the simulator's two modes (and npu-cpusim where pto-isa is present)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto
import pypto.testing
from pypto import errors as E
from pypto.testing import MismatchError, assert_close, default_tolerance, unavailable_reason

REPO = Path(__file__).resolve().parent.parent


def test_float_ulps_are_counted_on_the_dtypes_own_bits():
    x = np.float32([1.0, -2.0, 1e-30, 0.0])
    up = np.nextafter(x, np.float32(np.inf))
    four = x.copy()
    for _ in range(4):
        four = np.nextafter(four, np.float32(np.inf))
    assert_close(four, x)                                   # 4 ULP is float32's default
    with pytest.raises(MismatchError, match="worst ULP distance: 5"):
        assert_close(np.nextafter(four, np.float32(np.inf)), x)
    assert_close(up, x, ulp=1)
    h = np.float16([1.0, 1000.0])
    one_ulp = np.float16([1.0009765625, 1000.5])            # spacing 2**-10 at 1, 0.5 at 1000
    assert_close(one_ulp, h, ulp=1)
    b = np.array([1.0, 3.0], ml_dtypes.bfloat16)
    assert_close(np.array([1.0078125, 3.015625], ml_dtypes.bfloat16), b, ulp=1)   # bf16 spacing
    with pytest.raises(MismatchError):
        assert_close(np.array([1.015625, 3.0], ml_dtypes.bfloat16), b, ulp=1)


def test_ulps_cross_zero():
    """-0.0 and +0.0 are 0 ULP apart; the smallest subnormals on either side of zero are 2."""
    tiny = np.float32(1e-45)
    assert_close(np.float32([-0.0]), np.float32([0.0]), ulp=0)
    with pytest.raises(MismatchError, match="worst ULP distance: 2"):
        assert_close(np.float32([-tiny]), np.float32([tiny]), ulp=1)


def test_the_report_names_what_a_person_needs():
    e = np.zeros((4, 5), np.float32)
    a = e.copy()
    a[1, 2], a[3, 4], a[0, 0], a[2, 1] = 7.5, np.nan, np.inf, -np.inf
    with pytest.raises(MismatchError) as ei:
        assert_close(a, e, what="kernel out")
    text = str(ei.value)
    assert text.startswith("kernel out: 4 of 20 elements differ (20%")
    assert "[1, 2]: 7.5 vs 0.0" in text and "worst absolute error: 7.5 at [1, 2]" in text
    assert "NaN: 1 in actual only (first at [3, 4])" in text
    assert "inf: 2 elements" in text and "(first at [0, 0])" in text
    assert ei.value.report["mismatches"] == 4 and isinstance(ei.value, AssertionError)


def test_integers_are_exact_and_nan_can_be_refused():
    with pytest.raises(MismatchError, match=r"(?s)1 of 3 elements differ.*\[2\]: 4 vs 3"):
        assert_close(np.int8([1, 2, 4]), np.int8([1, 2, 3]))
    assert_close(np.int8([1, 2, 4]), np.int8([1, 2, 3]), atol=1)
    with pytest.raises(MismatchError, match=r"\[1\]: 2 vs 2.5"):     # not truncated to 2
        assert_close(np.int32([1, 2]), [1.0, 2.5])
    assert_close(np.float32([np.nan]), np.float32([np.nan]))
    with pytest.raises(MismatchError, match="NaN never matches"):
        assert_close(np.float32([np.nan]), np.float32([np.nan]), equal_nan=False)
    with pytest.raises(MismatchError, match="inf"):
        assert_close(np.float32([np.inf]), np.float32([-np.inf]))
    assert default_tolerance(pypto.float16) == {"ulp": 2, "rtol": 0.0, "atol": 0.0}


def test_shapes_and_sides():
    with pytest.raises(MismatchError, match="not real numbers"):
        assert_close(np.complex64([1 + 2j]), np.complex64([1 + 2j]))
    with pytest.raises(MismatchError, match=r"shapes differ: actual \(2,\), expected \(3,\)"):
        assert_close(np.zeros(2), np.zeros(3))
    pypto.finalize()
    pypto.init()
    t = pypto.Tensor(np.float32([1, 2, 3]))
    assert_close(t, [1.0, 2.0, 3.0], dtype=pypto.float32)
    assert_close(np.float32([1, 2, 3]), t)
    pypto.finalize()


def test_torch_tensors():
    torch = pytest.importorskip("torch", reason="torch is optional: its tensors are accepted when installed")
    assert_close(torch.tensor([1.0, 2.0]), np.float32([1, 2]))
    with pytest.raises(MismatchError, match=r"\[1\]: 2.5 vs 2.0"):
        assert_close(torch.tensor([1.0, 2.5]), np.float32([1, 2]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False).filter(lambda v: abs(v) < 1e38),
                min_size=1, max_size=20), st.integers(0, 6))
def test_k_steps_up_is_k_ulp(values, k):
    """k nextafter steps away is exactly k ULP: passes at ulp=k, fails at ulp=k-1."""
    x = np.float32(values)
    y = x.copy()
    for _ in range(k):
        y = np.nextafter(y, np.float32(np.inf))
    assert_close(y, x, ulp=k)
    if k:
        with pytest.raises(MismatchError):
            assert_close(y, x, ulp=k - 1)


# -- the pytest plugin ------------------------------------------------------------------------------

USER_TESTS = '''
import numpy as np
import pytest
import pypto
from pypto import pto
from pypto.testing import assert_close

@pypto.kernel
def double(x, y):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TLOAD(t, x)
    pto.TMULS(t, t, 2.0)
    pto.TSTORE(y, t)

def test_double(pypto_backend):
    x = np.arange(512, dtype=np.float32).reshape(8, 64)
    y = pypto.zeros((8, 64))
    double(pypto.Tensor(x), y)
    assert_close(y, x * 2)

def test_planted_wrong_result(pypto_backend):
    x = np.arange(512, dtype=np.float32).reshape(8, 64)
    y = pypto.zeros((8, 64))
    double(pypto.Tensor(x), y)
    want = x * 2
    want[5, 17] += 1
    assert_close(y, want)

@pytest.mark.pypto_npu
def test_on_hardware():
    pass
'''


def _pytest(tmp_path, *args) -> subprocess.CompletedProcess:
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
                           str(tmp_path / "test_user.py"), *args],       # the plugin: its entry point
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_plugin_runs_a_users_tests_on_each_backend(tmp_path):
    p = _pytest(tmp_path, "--pypto-backend", "sim,sim-eager")
    out = p.stdout
    assert "test_double[sim] PASSED" in out and "test_double[sim-eager] PASSED" in out, out[-3000:]
    assert "test_planted_wrong_result[sim] FAILED" in out and "test_planted_wrong_result[sim-eager] FAILED" in out
    assert "[5, 17]: 674.0 vs 675.0" in out           # the planted element: x[5, 17] = 5 * 64 + 17
    assert "test_on_hardware SKIPPED" in out and "needs an Ascend NPU" in out
    bad = _pytest(tmp_path, "--pypto-backend", "gpu")
    assert bad.returncode != 0 and "not one of sim, sim-eager, npu, npu-cpusim" in bad.stderr


@pytest.mark.skipif(unavailable_reason("npu-cpusim") is not None,
                    reason=f"needs pto-isa's CPU backend: {unavailable_reason('npu-cpusim')}")
def test_plugin_on_npu_cpusim(tmp_path):
    p = _pytest(tmp_path, "--pypto-backend", "npu-cpusim", "--pypto-soc", "a5", "-k", "double")
    assert "test_double[npu-cpusim] PASSED" in p.stdout, p.stdout[-3000:]


def test_an_unavailable_backend_is_skipped_with_its_reason(tmp_path):
    if unavailable_reason("npu") is None:
        pytest.skip("this machine has an NPU: nothing to skip")
    p = _pytest(tmp_path, "--pypto-backend", "npu", "-k", "double", "-rs")
    assert "test_double[npu] SKIPPED" in p.stdout and "no usable npu backend here" in p.stdout


# -- record and compare -------------------------------------------------------------------------------

SCRIPT = '''
import numpy as np
import pypto
from pypto import pto

@pypto.kernel
def scale(x, y):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TLOAD(t, x)
    pto.TMULS(t, t, 3.0)
    pto.TSTORE(y, t)

pypto.init()
x = np.arange(512, dtype=np.float32).reshape(8, 64)
y = pypto.zeros((8, 64))
scale(pypto.Tensor(x), y)
add = pypto.load_insn("add")          # an Insn launches a library kernel: recorded too
z = np.zeros((8, 64), np.float32)
for i, v in enumerate((x, y.numpy(), z)):
    add.set_operand(i, v)
add.execute()
'''


def _golden(tmp_path, *args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "pypto", "golden", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)


def test_record_on_one_backend_compare_on_another(tmp_path):
    (tmp_path / "user.py").write_text(SCRIPT)
    p = _golden(tmp_path, "record", "user.py", "--backend", "sim", "--out", "bundle")
    assert p.returncode == 0 and "recorded 2 launches" in p.stdout, p.stderr
    m = json.loads((tmp_path / "bundle" / "manifest.json").read_text())
    assert [x["kernel"] for x in m["launches"]] == ["scale", "lib_tadd"]
    assert m["backend"] == "sim" and len(m["launches"][0]["cpp_sha256"]) == 64
    cpp = tmp_path / "bundle" / "kernels" / f"scale_{m['launches'][0]['cpp_sha256'][:12]}.cpp"
    assert "TMULS(" in cpp.read_text()
    data = np.load(tmp_path / "bundle" / "launch_0000.npz")          # plain numpy files
    x = np.arange(512, dtype=np.float32).reshape(8, 64)
    np.testing.assert_array_equal(data["in_0"], x)
    np.testing.assert_array_equal(data["out_1"], 3 * x)
    (tmp_path / "user.py").unlink()                    # the bundle carries its own copy of the script
    q = _golden(tmp_path, "compare", "bundle", "--backend", "sim-eager")
    assert q.returncode == 0 and "2 of 2 recorded launches replayed, 0 differ" in q.stdout, q.stdout + q.stderr
    # a planted wrong recording (as if the other backend computed element [6, 9] wrongly)
    bad = dict(data)
    bad["out_1"] = data["out_1"].copy()
    bad["out_1"][6, 9] += 1
    np.savez(tmp_path / "bundle" / "launch_0000.npz", **bad)
    r = _golden(tmp_path, "compare", "bundle", "--backend", "sim")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1 differ" in r.stdout and "launch 0 (scale) argument 1" in r.stdout
    assert "[6, 9]: 1179.0 vs 1180.0" in r.stdout             # 3 * (6 * 64 + 9) = 1179, recorded + 1


def test_record_and_compare_from_python(tmp_path):
    import pypto.testing as T
    from pypto import pto
    pypto.finalize()
    pypto.init()

    @pypto.kernel
    def neg(x, y):
        t = pto.Tile(pto.Vec, pto.float32, (8, 64))
        pto.TLOAD(t, x)
        pto.TNEG(t, t)
        pto.TSTORE(y, t)

    x = pypto.Tensor(np.ones((8, 64), np.float32))
    y = pypto.zeros((8, 64))
    with T.record(tmp_path / "b") as rec:
        neg(x, y)
    assert len(rec.launches) == 1
    with T.compare(tmp_path / "b") as rep:
        neg(x, y)
    assert rep.ok and "1 of 1 recorded launches replayed, 0 differ" in rep.summary()
    with T.compare(tmp_path / "b") as rep:
        neg(x, y)
        neg(x, y)                                                  # one launch too many
    assert not rep.ok and "1 launches more than the bundle has" in rep.summary()
    pypto.finalize()


# -- pto-isa's golden files -------------------------------------------------------------------------

def _add_case(dirname, dtype, shape, valid):
    """A case directory laid out as pto-isa's gen_data.py lays it out (written here by hand)."""
    dirname.mkdir(parents=True)
    rng = np.random.default_rng(3)
    a, b = (rng.integers(1, 10, shape).astype(dtype) for _ in range(2))
    golden = np.zeros(shape, dtype)
    golden[:valid[0], :valid[1]] = (a + b)[:valid[0], :valid[1]]
    a.tofile(dirname / "input1.bin")
    b.tofile(dirname / "input2.bin")
    golden.tofile(dirname / "golden.bin")
    return a, b


def test_a_pto_isa_case_checks_a_pypto_kernel(tmp_path):
    case = tmp_path / "TADDTest.case_half_16x256_16x256_16x200"
    a, b = _add_case(case, np.float16, (16, 256), (16, 200))
    c = pypto.testing.read_case(case)
    assert c.dtype is pypto.float16 and c.shapes == [(16, 256), (16, 256), (16, 200)]
    np.testing.assert_array_equal(c.inputs[0], a)
    pypto.finalize()
    pypto.init()
    out = np.zeros((16, 256), np.float16)
    add = pypto.load_insn("add")
    for i, x in enumerate((*c.inputs, out)):
        add.set_operand(i, x)
    add.execute()
    c.check(out)                                   # outside the valid region the golden is 0
    out[3, 7] += 1
    with pytest.raises(MismatchError, match=r"TADDTest.case_half_16x256_16x256_16x200: 1 of 3200"):
        c.check(out)
    pypto.finalize()
    with pytest.raises(E.ConfigError, match="no element type"):
        _add_case(tmp_path / "mycase", np.int32, (4, 8), (4, 8))
        pypto.testing.read_case(tmp_path / "mycase")
    assert pypto.testing.read_case(tmp_path / "mycase", dtype=pypto.int32, shape=(4, 8)).golden.shape == (4, 8)


@pytest.mark.skipif(not os.environ.get("PTO_ISA_ROOT"), reason="needs a pto-isa checkout (PTO_ISA_ROOT)")
def test_pto_isas_own_tadd_cases(tmp_path):
    """pto-isa's tadd gen_data.py, run in a scratch directory, read and checked against load_insn."""
    gen = Path(os.environ["PTO_ISA_ROOT"]) / "tests" / "cpu" / "st" / "testcase" / "tadd" / "gen_data.py"
    if not gen.exists():
        pytest.skip(f"{gen} is not in this pto-isa checkout")
    subprocess.run([sys.executable, str(gen)], cwd=tmp_path, check=True, capture_output=True)
    cases = sorted(d for d in tmp_path.iterdir() if d.is_dir())
    assert cases
    pypto.finalize()
    pypto.init()
    for d in cases:
        c = pypto.testing.read_case(d)
        out = np.zeros_like(c.golden)
        add = pypto.load_insn("add")
        for i, x in enumerate((*c.inputs, out)):
            add.set_operand(i, x)
        add.execute()
        c.check(out)
    pypto.finalize()


# -- pypto conformance ----------------------------------------------------------------------------

def test_conformance_shards_cover_the_suite_once_and_merge(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    run = lambda *a: subprocess.run([sys.executable, "-m", "pypto", "conformance", *a], cwd=tmp_path,  # noqa: E731
                                    env=env, capture_output=True, text=True, timeout=900)
    # four dtypes in both modes: enough for three non-empty shards, few kernels to compile
    sel = ("--files", "test_arith.py", "--soc", "a5", "-k", "test_binary and TADD and (f32 or i16 or u8 or f16)")
    whole = run(*sel, "--out", "all")
    parts = [run(*sel, "--shard", f"{k}/3", "--out", f"p{k}") for k in (1, 2, 3)]
    assert whole.returncode == 0 and all(p.returncode == 0 for p in parts), whole.stdout[-2000:]
    ids = lambda d: sorted(r["nodeid"] for r in json.loads((tmp_path / d / "results.json").read_text())["results"])  # noqa: E731
    assert sorted(sum((ids(f"p{k}") for k in (1, 2, 3)), [])) == ids("all") and ids("all")
    assert all("a2a3" not in i for i in ids("all"))                       # --soc a5 only
    m = run("merge", "p1", "p2", "p3", "--out", "merged")
    assert m.returncode == 0 and "merged 3 parts" in m.stdout
    md = (tmp_path / "merged" / "report.md").read_text()
    assert "shards 1/3, 2/3, 3/3" in md and "| TADD | f32 | sim-compiled | " in md
    junit = (tmp_path / "merged" / "junit.xml").read_text()
    assert junit.count("<testcase ") == len(ids("all"))
    page = (tmp_path / "merged" / "report.html").read_text()
    assert page.startswith("<!doctype html>") and "<table>" in page and page.count('<tr class="pass">') >= 1


def test_conformance_report_rows():
    from pypto.testing.conformance import markdown, page, summarise
    results = [
        {"nodeid": "conformance/test_arith.py::test_binary[npu-cpusim-a2a3-TMAX-f32]", "outcome": "xfailed",
         "message": "pto-isa's CPU TMAX/TMIN use std::max", "when": "call", "duration": 0},
        {"nodeid": "conformance/test_arith.py::test_binary[sim-eager-a5-TADD-i16]", "outcome": "failed",
         "message": "MismatchError: 1 of 64 elements differ", "when": "call", "duration": 0},
        {"nodeid": "conformance/test_arith.py::test_binary[sim-eager-a5-TADD-i16]", "outcome": "passed",
         "message": "", "when": "call", "duration": 0}]
    rows = summarise(results)
    assert [(r["instruction"], r["dtype"], r["backend"]) for r in rows] == \
        [("TADD", "i16", "sim-eager"), ("TMAX", "f32", "npu-cpusim")]
    assert rows[0]["failed"] == 1 and rows[0]["passed"] == 1 and "1 of 64" in rows[0]["first"]
    assert rows[1]["xfailed"] == 1 and "std::max" in rows[1]["first"]
    text = markdown(rows, {"backend": "npu-cpusim", "soc": None, "pypto": "x"})
    assert "1 passed, 1 failed, 0 skipped, 1 xfailed" in text
    html = page(rows, {"backend": "npu-cpusim"})
    assert '<tr class="fail">' in html and '<tr class="dev">' in html
