"""Custom instructions from IDL: the tutorial's MatMul steps verbatim (codegen, g++ build, load
before init, execute), operators loaded from .idl files executed on the simulator and compared
with numpy written here, the generated library's C++ reference, verify(), and the errors."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pypto
from pypto import errors as E
from pypto.idl import custom, evaluate

REPO = Path(__file__).resolve().parent.parent
IDL = REPO / "examples" / "idl"
GXX = shutil.which("g++")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ is not installed (the .so is built with it)")

# the tutorial's printed result (seed-walkthrough.md, the MatMul section)
TUTORIAL_MATRIX = ["matmul result:", "[[ 27.  30.  33.]", " [ 61.  68.  75.]", " [ 95. 106. 117.]]"]


@pytest.fixture
def fresh():
    """No session and no custom operators before and after."""
    pypto.finalize()
    custom._REGISTRY.clear()
    yield
    pypto.finalize()
    custom._REGISTRY.clear()


def _env() -> dict:
    import os
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    for var in ("PYPTO_BACKEND", "PYPTO_SOC", "PYPTO_SIM_MODE"):
        env.pop(var, None)
    return env


def _build(tmp: Path, idl: Path) -> Path:
    """The tutorial's steps 2 and 3 in ``tmp``: codegen, then a plain g++ build."""
    shutil.copy(idl, tmp / idl.name)
    subprocess.run([sys.executable, "-m", "pto.codegen", "--idl", idl.name, "--output_dir",
                    "./generated", "--target", "pypto"], cwd=tmp, env=_env(), check=True,
                   capture_output=True)
    cpp = tmp / "generated" / f"{idl.stem}_pypto.cpp"
    assert cpp.exists()
    so = tmp / f"{idl.stem}_pypto.so"
    subprocess.run([GXX, "-shared", "-fPIC", "-O2", "-o", str(so), str(cpp)], check=True,
                   capture_output=True)
    return so


@needs_gxx
def test_tutorial_matmul_verbatim(tmp_path):
    """Steps 1-4 of the tutorial's full example in a clean directory print its matrix."""
    _build(tmp_path, IDL / "matmul.idl")
    script = "\n".join([
        "import pypto",
        'pypto.load_custom_insn("./matmul_pypto.so")   # note: before init()',
        "pypto.init()",
        'matmul_insn = pypto.load_insn("MatMul")',
        "a = pypto.Tensor([[1, 2], [3, 4], [5, 6]], dtype=pypto.float32)       # [3, 2]",
        "b = pypto.Tensor([[7, 8, 9], [10, 11, 12]], dtype=pypto.float32)      # [2, 3]",
        "c = pypto.Tensor([[0, 0, 0], [0, 0, 0], [0, 0, 0]], dtype=pypto.float32)",
        "matmul_insn.set_operand(0, a)",
        "matmul_insn.set_operand(1, b)",
        "matmul_insn.set_operand(2, c)",
        "matmul_insn.execute()",
        'print(f"matmul result:\\n{c.numpy()}")'])
    p = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=_env(), capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == TUTORIAL_MATRIX


def test_the_example_script_prints_the_matrix():
    if GXX is None:
        pytest.skip("g++ is not installed (the example builds the .so with it)")
    p = subprocess.run([sys.executable, str(REPO / "examples" / "custom_matmul.py")], env=_env(),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == TUTORIAL_MATRIX


@needs_gxx
def test_library_reference_is_the_cpp_loops(tmp_path, fresh):
    """The .so's reference (plain C++ loops in double) agrees with numpy on every example."""
    rng = np.random.default_rng(3)
    for name in ("matmul", "softmax", "layernorm", "gemm_bias_relu"):
        so = _build(tmp_path, IDL / f"{name}.idl")
        (op_name,) = pypto.load_custom_insn(str(so))
        pypto.init()
        insn = pypto.load_insn(op_name)
        args, want = CASES[name](rng, 5, 7, 3)
        got = insn.reference(*args)
        for k, w in want.items():
            np.testing.assert_allclose(got[k].astype(np.float64), w, rtol=1e-5, atol=1e-6, err_msg=name)
        pypto.finalize()


# -- operators from .idl files, executed on the simulator --------------------------------------------

def _softmax(rng, m, n, k):
    x = rng.standard_normal((m, n)).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return (x,), {"y": e / e.sum(axis=1, keepdims=True)}


def _layernorm(rng, m, n, k):
    x = rng.standard_normal((m, n)).astype(np.float32) * 3 + 1
    x64 = x.astype(np.float64)
    d = x64 - x64.mean(axis=1, keepdims=True)
    return (x, 1e-5), {"y": d / np.sqrt((d * d).mean(axis=1, keepdims=True) + 1e-5)}


def _gemm_bias_relu(rng, m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal((1, n)).astype(np.float32)
    c = a.astype(np.float64) @ b.astype(np.float64) + bias
    return (a, b, bias), {"c": np.maximum(c, 0)}


def _matmul(rng, m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    return (a, b), {"c": a.astype(np.float64) @ b.astype(np.float64)}


CASES = {"matmul": _matmul, "softmax": _softmax, "layernorm": _layernorm, "gemm_bias_relu": _gemm_bias_relu}
OUTS = {"matmul": ("c", pypto.float32), "softmax": ("y", pypto.float32),
        "layernorm": ("y", pypto.float32), "gemm_bias_relu": ("c", pypto.float32)}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("mnk", [(1, 1, 1), (4, 16, 8), (17, 33, 20)])
def test_idl_operators_against_numpy(fresh, name, mnk):
    (op_name,) = pypto.load_custom_insn(str(IDL / f"{name}.idl"))
    pypto.init()
    insn = pypto.load_insn(op_name)
    args, want = CASES[name](np.random.default_rng(hash((name, mnk)) % 2 ** 32), *mnk)
    out_name, out_dt = OUTS[name]
    out = pypto.zeros(want[out_name].shape, out_dt)
    for i, x in enumerate(list(args) + [out]):
        insn.set_operand(i, pypto.Tensor(x) if isinstance(x, np.ndarray) else x)
    insn.execute()
    np.testing.assert_allclose(out.numpy().astype(np.float64), want[out_name], rtol=2e-3, atol=2e-3)
    report = insn.verify()                     # the numpy evaluation of the IDL, at f32 tolerance
    assert report[out_name]["max_abs_error"] <= 1e-3


def test_numpy_operands_and_a_scalar_default(fresh):
    pypto.load_custom_insn(str(IDL / "layernorm.idl"))
    pypto.init()
    insn = pypto.load_insn("LayerNorm")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.zeros_like(x)
    insn.set_operand(0, x)
    insn.set_operand(2, y)                     # eps (operand 1) keeps its default, 1e-5
    insn.execute()
    d = x - x.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(y, d / np.sqrt((d * d).mean(axis=1, keepdims=True) + 1e-5), rtol=1e-4)
    insn.set_operand(1, 100.0)
    insn.execute()
    np.testing.assert_allclose(y, d / np.sqrt((d * d).mean(axis=1, keepdims=True) + 100.0), rtol=1e-4)


# -- errors ---------------------------------------------------------------------------------------

def test_load_before_init_and_name_clashes(fresh, tmp_path):
    assert pypto.load_custom_insn(str(IDL / "matmul.idl")) == ["MatMul"]      # no session yet
    assert pypto.load_custom_insn(str(IDL / "matmul.idl")) == ["MatMul"]      # the same file again
    other = tmp_path / "other.idl"
    other.write_text((IDL / "matmul.idl").read_text())
    with pytest.raises(E.IdlError, match="clashes with the operator loaded from"):
        pypto.load_custom_insn(str(other))
    assert pypto.load_custom_insn(str(other), replace=True) == ["MatMul"]
    p = tmp_path / "add.idl"
    p.write_text((IDL / "matmul.idl").read_text().replace("operator MatMul", "operator TADD"))
    with pytest.raises(E.IdlError, match="built-in instruction TADD"):
        pypto.load_custom_insn(str(p))
    assert pypto.load_custom_insn(str(p), replace=True) == ["TADD"]


SHADOW = """
package t;
operator matmul {
    input  { Tensor<a, FLOAT32 [M, K]>; Tensor<b, FLOAT32 [K, N]>; }
    output { Tensor<c, FLOAT32 [M, N]>; }
    computation { c = a @ b + 1.0; }
}
operator Proj {
    input  { Tensor<x, FLOAT32 [M, K]>; Tensor<w, FLOAT32 [K, N]>; }
    output { Tensor<y, FLOAT32 [M, N]>; }
    computation { y = x @ w; }
}
"""


def test_an_operator_named_like_a_library_instruction_runs_only_when_loaded_by_name(fresh, tmp_path):
    """Defect (found by the full tier's IDL fuzzing): with an operator loaded under a library
    name (replace=True), every operator step of that name ran the custom operator instead, and
    failed with a raw AttributeError. Steps run the library instruction; load_insn gives the
    custom one."""
    p = tmp_path / "shadow.idl"
    p.write_text(SHADOW)
    assert pypto.load_custom_insn(str(p), replace=True) == ["matmul", "Proj"]
    pypto.init()
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((16, 8)).astype(np.float32), rng.standard_normal((8, 4)).astype(np.float32)
    want = x.astype(np.float64) @ w.astype(np.float64)
    for name, plus in (("Proj", 0.0), ("matmul", 1.0)):
        insn, out = pypto.load_insn(name), pypto.zeros((16, 4), pypto.float32)
        for i, t in enumerate((pypto.Tensor(x), pypto.Tensor(w), out)):
            insn.set_operand(i, t)
        insn.execute()
        np.testing.assert_allclose(out.numpy(), want + plus, rtol=1e-4, atol=1e-4)


def test_missing_file_and_not_a_library(fresh, tmp_path):
    with pytest.raises(E.IdlError, match="does not exist"):
        pypto.load_custom_insn(str(tmp_path / "nope.idl"))
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"\x7fELF not really")
    with pytest.raises(E.IdlError, match="not a loadable library"):
        pypto.load_custom_insn(str(junk))


def test_operand_errors_leave_outputs_untouched(fresh):
    pypto.load_custom_insn(str(IDL / "matmul.idl"))
    pypto.init()
    insn = pypto.load_insn("MatMul")
    c = pypto.Tensor(np.full((3, 3), 7, np.float32))
    insn.set_operand(0, pypto.Tensor(np.ones((3, 2), np.float32)))
    insn.set_operand(1, pypto.Tensor(np.ones((4, 3), np.float32)))   # K: 2 vs 4
    insn.set_operand(2, c)
    with pytest.raises(E.PtoError, match="K"):
        insn.execute()
    assert (c.numpy() == 7).all()
    insn.set_operand(1, pypto.Tensor(np.ones((2, 3), np.float16)))   # FLOAT16 where FLOAT32 is declared
    with pytest.raises(E.OperandError, match="FLOAT32|float32"):
        insn.execute()
    assert (c.numpy() == 7).all()
    with pytest.raises(E.OperandIndexError):
        insn.set_operand(3, c)
    fresh_insn = pypto.load_insn("MatMul")
    with pytest.raises(E.OperandNotSetError):
        fresh_insn.execute()


def test_plan_is_inspectable(fresh):
    """Softmax is one fused kernel: its five steps run over UB tiles, x is read and y written once."""
    pypto.load_custom_insn(str(IDL / "softmax.idl"))
    pypto.init()
    plan = pypto.load_insn("Softmax").plan.splitlines()
    assert plan[0].startswith("kernel idl_Softmax_0: rows, 5 steps") and plan[0].endswith("reads x; writes y")
    assert [line.split(" = ")[1].split("(")[0] for line in plan[1:]] == \
        ["rowmax", "rowexpandsub", "exp", "rowsum", "rowexpanddiv"]


def test_codegen_cli_errors(tmp_path):
    bad = tmp_path / "bad.idl"
    bad.write_text("operator X { input { Tensor<a, FLOAT32 [M]>; } output { Tensor<b, FLOAT32 [M]>; }"
                   " computation { b = foo(a); } }")
    p = subprocess.run([sys.executable, "-m", "pto.codegen", "--idl", str(bad), "--output_dir",
                        str(tmp_path / "g")], env=_env(), capture_output=True, text=True)
    assert p.returncode == 2
    assert "bad.idl:1:" in p.stderr and "foo" in p.stderr
    q = subprocess.run([sys.executable, "-m", "pypto", "codegen", "--idl", str(IDL / "softmax.idl"),
                        "--output_dir", str(tmp_path / "g")], env=_env(), capture_output=True, text=True)
    assert q.returncode == 0, q.stderr
    assert (tmp_path / "g" / "softmax_pypto.cpp").exists()


OPERATORS = REPO / "tests" / "data" / "idl_operators.idl"
OPERATOR_NAMES = ["Chain", "RecipSub", "ColNorm", "MaxMin", "GemmCast", "GemmSoftmax", "IntOps",
                  "I8Gemm", "VecLeft", "SqrtLog"]


@pytest.mark.parametrize("name", OPERATOR_NAMES)
def test_operators_run_as_their_numpy_evaluation(fresh, name):
    """Every lowering rule (scalar or vector on the left, means, casts, two outputs, integers)
    against the IDL's numpy evaluation (itself checked against hand-written numpy in
    test_idl_frontend.py), over awkward sizes."""
    pypto.load_custom_insn(str(OPERATORS))
    pypto.init()
    insn = pypto.load_insn(name)
    op = custom.registered(name).op
    rng = np.random.default_rng(len(name))
    for sizes in ({"M": 1, "K": 1, "N": 1}, {"M": 5, "K": 7, "N": 3}, {"M": 33, "K": 17, "N": 40}):
        values, operands = {}, []
        for f in op.inputs + op.outputs:
            if not hasattr(f, "dims"):
                operands.append(f.default)
                continue
            shape = tuple(d if isinstance(d, int) else sizes[d] for d in f.dims)
            if f in op.outputs:
                operands.append(pypto.zeros(shape, f.dtype))
                continue
            x = (rng.integers(-5, 6, shape) if f.dtype.is_int else rng.standard_normal(shape)).astype(f.dtype.np)
            values[f.name] = x
            operands.append(pypto.Tensor(x))
        for i, x in enumerate(operands):
            insn.set_operand(i, x)
        insn.execute()
        want = evaluate(op, values)
        for k, f in enumerate(op.outputs):
            got = operands[len(op.inputs) + k].numpy()
            tol = 0 if f.dtype.is_int else (2e-3 if f.dtype is pypto.float16 else 1e-4)
            np.testing.assert_allclose(got.astype(np.float64), want[f.name].astype(np.float64),
                                       rtol=tol, atol=tol, err_msg=f"{name} {sizes} {f.name}")


def test_each_step_shows_its_kernel(fresh):
    """insn.ir() / insn.cpp(): every plan step with the library kernel it launches (the same
    kernels execute() runs); the seed Insn has them too."""
    pypto.load_custom_insn(str(IDL / "softmax.idl"))
    pypto.init()
    insn = pypto.load_insn("Softmax")
    insn.set_operand(0, pypto.zeros((4, 8)))
    insn.set_operand(1, pypto.zeros((4, 8)))
    text, cpp = insn.ir(), insn.cpp()
    assert text.count("kernel @") == 1 and "kernel @idl_Softmax_0(" in text
    assert cpp.count("PTO C++ emitted by pypto") == 1 and "idl_Softmax_0: PTO C++" in cpp
    assert text.count("pto.tload ") == 1 and text.count("pto.tstore ") == 1     # x in, y out
    for s in ["rowmax", "rowexpandsub", "exp", "rowsum", "rowexpanddiv"]:
        assert f"pto.t{s} " in text, s
        assert f"T{s.upper()}(" in cpp, s
    add = pypto.load_insn("add")
    x = pypto.zeros((4, 8))
    for i in range(3):
        add.set_operand(i, x)
    assert "pto.tadd " in add.ir() and "TADD(" in add.cpp()


def test_a_type_the_library_lacks_is_refused_at_load_insn(fresh, tmp_path):
    """a2a3's TADD takes no INT8: load_insn says so at the IDL expression, before anything runs."""
    p = tmp_path / "i8.idl"
    p.write_text("operator I8Add { input { Tensor<a, INT8 [M, N]>; Tensor<b, INT8 [M, N]>; }\n"
                 "  output { Tensor<c, INT8 [M, N]>; }\n"
                 "  computation { c = a + b; } }\n")
    pypto.load_custom_insn(str(p))
    pypto.init(soc="a2a3")
    with pytest.raises(E.IdlTypeError, match="TADD.*INT8 on a2a3") as ei:
        pypto.load_insn("I8Add")
    assert (ei.value.line, ei.value.column) == (3, 23)          # the +
    assert "INT32, INT16, FLOAT16, FLOAT32" in str(ei.value)


@needs_gxx
def test_codegen_target_npu_carries_every_kernel(tmp_path):
    """--target npu: the plan's kernels (the GEMM, then the fused epilogue) as PTO C++ sections a
    plain g++ build skips; --dims picks the tiles; a bad --dims is a located error."""
    p = subprocess.run([sys.executable, "-m", "pto.codegen", "--idl", str(IDL / "gemm_bias_relu.idl"),
                        "--output_dir", str(tmp_path), "--target", "npu", "--dims", "N=512", "--build", "none"],
                       env=_env(), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    text = (tmp_path / "gemm_bias_relu_pypto.cpp").read_text()
    assert "#if PYPTO_DEVICE_KERNEL == 1" in text and "#if PYPTO_DEVICE_KERNEL == 2" in text
    assert "library t3 = matmul(a, b)" in text and "[cube cores]" in text
    assert "kernel idl_GemmBiasRelu_1: rows" in text and "x 512," in text and "[vec cores]" in text
    assert "TCOLEXPANDADD(" in text and "TRELU(" in text and "TMATMUL(" in text
    so = tmp_path / "plain.so"
    subprocess.run([GXX, "-shared", "-fPIC", "-O2", "-o", str(so), str(tmp_path / "gemm_bias_relu_pypto.cpp")],
                   check=True)
    pypto.load_custom_insn(str(so), replace=True)
    bad = subprocess.run([sys.executable, "-m", "pto.codegen", "--idl", str(IDL / "softmax.idl"),
                          "--output_dir", str(tmp_path), "--target", "npu", "--dims", "N=wide"],
                         env=_env(), capture_output=True, text=True)
    assert bad.returncode == 2 and "--dims" in bad.stderr and "M=128,N=4096" in bad.stderr


from pypto.testing import unavailable_reason  # noqa: E402


@pytest.mark.skipif(unavailable_reason("npu-cpusim") is not None,
                    reason=f"needs pto-isa's CPU backend: {unavailable_reason('npu-cpusim')}")
def test_codegen_builds_the_device_kernels_against_pto_isa(tmp_path):
    """--build cpusim compiles each device section of the generated file (the same file bisheng
    builds with --build npu) into a library exporting the launch ABI."""
    import ctypes
    p = subprocess.run([sys.executable, "-m", "pto.codegen", "--idl", str(IDL / "softmax.idl"),
                        "--output_dir", str(tmp_path), "--target", "npu", "--soc", "a5", "--build", "cpusim"],
                       env=_env(), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    built = [Path(line) for line in p.stdout.split() if line.endswith(".so")]
    assert [b.name for b in built] == ["softmax_idl_Softmax_0_cpusim.so"]
    assert ctypes.CDLL(str(built[0])).call_kernel


def test_device_outputs_are_written_by_one_device_copy(fresh):
    """A device-tensor output receives the result in one device->device copy (no round trip
    through the host), and its values are numpy's softmax."""
    pypto.load_custom_insn(str(IDL / "softmax.idl"))
    pypto.init()
    xh = np.random.default_rng(3).standard_normal((40, 96)).astype(np.float32)
    x, y = pypto.Tensor(xh), pypto.zeros(xh.shape, pypto.float32)
    insn = pypto.load_insn("Softmax")
    insn.set_operand(0, x)
    insn.set_operand(1, y)
    pypto.reset_stats()
    insn.execute()
    s = pypto.stats()
    assert (s.h2d_copies, s.d2h_copies, s.d2d_copies, s.d2d_bytes) == (0, 0, 1, xh.nbytes)
    e = np.exp(xh.astype(np.float64) - xh.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y.numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_device_copy_checks_its_buffers_and_bounces_through_the_host_by_default(fresh):
    from pypto import runtime
    from pypto.backends.base import Backend
    pypto.init()
    be = runtime.current().backend
    a, b = pypto.Tensor(np.arange(6, dtype=np.int32)), pypto.zeros((6,), pypto.int32)
    Backend._copy_device(be, b._buf, a._buf, 24)                 # the generic route
    np.testing.assert_array_equal(b.numpy(), np.arange(6))
    with pytest.raises(E.ShapeError):
        be.copy_device(b._buf, a._buf, 28)
    a.free()
    with pytest.raises(E.UseAfterFreeError):
        be.copy_device(b._buf, a._buf, 24)
    np.testing.assert_array_equal(b.numpy(), np.arange(6))
