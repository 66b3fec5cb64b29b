"""The C++ emitter: deterministic, portable text (the conditions of npu-backend-notes 1.9), tiles
bound where pypto placed them, an entry point whose arguments follow the launch ABI, and a
reviewed snapshot of the tutorial's kernel. Building and running the text is
tests/test_npu_cpusim.py's (it needs pto-isa)."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import pypto
from pypto import errors as E
from pypto import pto
from pypto.backends import emit_cpp
from pypto.backends.npu import abi
from pypto.backends.npu.emit import core_kind, emit_kernel
from pypto.ir import registry
from pypto.library.kernels import kernel_for

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = Path(__file__).parent / "snapshots"
sys.path.insert(0, str(ROOT / "examples"))
from kernel_add_rows import ROWS, COLS, add_rows  # noqa: E402

CALLS = re.compile(r"^\s*(T[A-Z0-9_]+|set_flag|wait_flag|pipe_barrier)\b[<(]", re.M)


@pytest.fixture
def sim():
    pypto.finalize()
    s = pypto.init(backend="sim")
    yield s
    pypto.finalize()


def traced(kern, *args):
    soc = pypto.runtime.current().soc
    return kern.trace_for(kern.signature(args), soc), soc


def signature(src: str) -> list[str]:
    m = re.search(r'extern "C" void call_kernel\(([^)]*)\)', src)
    return [p.strip() for p in m.group(1).split(",")]


def test_tutorial_kernel_text(sim):
    x = pypto.zeros((ROWS, COLS), pypto.float32)
    k, soc = traced(add_rows, x, x, x)
    src = emit_kernel(k, soc)
    assert src == emit_kernel(k, soc), "emission is not deterministic"
    assert src.index("#include <cstdint>") < src.index("#include <pto/pto-inst.hpp>")
    assert "Event<" not in src and "acl/acl.h" not in src
    assert signature(src) == ["uint32_t blockDim", "void *stream", "uint8_t *x", "uint8_t *y", "uint8_t *z",
                              "uint8_t *pypto_errs"]
    assert CALLS.findall(src) == ["TASSIGN", "TASSIGN", "TLOAD", "TLOAD", "set_flag", "wait_flag", "TADD",
                                  "set_flag", "wait_flag", "TSTORE", "set_flag", "wait_flag"]
    # the tiles at pypto's addresses, inside UB, 32-byte aligned
    for t in k.tiles:
        assert f"TASSIGN({t.name}, {t.addr:#x});" in src
        assert t.addr % 32 == 0 and t.addr + t.type.nbytes <= soc.space("Vec").capacity
    assert "Tile<TileType::Vec, float, 16, 104, BLayout::RowMajor, DYNAMIC, DYNAMIC> a(16, 104);" in src
    # the <<<>>> launch only where bisheng compiles; the CPU build loops over the blocks
    cpu, npu = src.split('extern "C"')[1].split("#else")
    assert "<<<" not in cpu and "pypto_block_idx = pypto_b;" in cpu
    assert "add_rows<<<blockDim, nullptr, stream>>>" in npu
    # the user's lines as comments
    assert "// kernel_add_rows.py:44: pto.TADD(a, a, b)" in src
    assert core_kind(k) == "vec"


def test_guards_mirror_the_simulators_runtime_checks(sim):
    """Each statement with facts only known at run time gets PYPTO_GUARD lines before it, with
    the statement's site id; guards=False leaves them out and changes nothing else."""
    x = pypto.zeros((ROWS, COLS), pypto.float32)
    k, soc = traced(add_rows, x, x, x)
    src = emit_kernel(k, soc)
    guards = re.findall(r"PYPTO_GUARD\((\d+), pypto_(\w+)\(", src)
    kinds = {g for _, g in guards}
    assert kinds == {"set_valid", "bound", "view_shape", "covers"}
    # sites: set_valid a, set_valid b, TLOAD a, TLOAD b, TADD, TSTORE, in program order
    assert sorted({int(s) for s, _ in guards}) == list(range(6))
    # TADD(a, a, b): only b must cover a (a always covers itself)
    assert "pypto_covers(pypto_err, 2, b.GetValidRow(), b.GetValidCol(), a.GetValidRow(), a.GetValidCol())" in src
    assert "pypto_covers(pypto_err, 1," not in src
    bare = emit_kernel(k, soc, guards=False)
    assert "PYPTO_GUARD(" not in bare.split("__global__")[1]
    strip = [ln for ln in src.splitlines() if "PYPTO_GUARD(" not in ln or "#define" in ln]
    assert [ln for ln in strip if ln.strip()] == [ln for ln in bare.splitlines() if ln.strip()]


def test_static_kernels_have_no_guards(sim):
    kern = kernel_for("TADD", "binary")
    x = pypto.zeros((64,), pypto.float32)

    @pypto.kernel
    def k_static(x, z):
        a = pto.Tile(pto.Vec, pto.float32, (1, 64))
        pto.TLOAD(a, x[0:64])
        pto.set_flag(pto.PIPE_MTE2, pto.PIPE_MTE3, pto.EVENT_ID0)
        pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_MTE3, pto.EVENT_ID0)
        pto.TSTORE(z[0:64], a)
    src = emit_kernel(*traced(k_static, x, x))
    assert "PYPTO_GUARD(" not in src.split("__global__")[1]
    assert "PYPTO_GUARD(" in emit_kernel(*traced(kern, x, x, x)).split("__global__")[1]


def test_tutorial_kernel_snapshot(sim):
    """A reviewed snapshot: a change to the emitted text must be looked at (and the snapshot
    rewritten with PYPTO_UPDATE_SNAPSHOTS=1)."""
    x = pypto.zeros((ROWS, COLS), pypto.float32)
    k, soc = traced(add_rows, x, x, x)
    src = emit_kernel(k, soc)
    snap = SNAPSHOTS / "add_rows_a2a3.cpp"
    if os.environ.get("PYPTO_UPDATE_SNAPSHOTS") == "1":
        snap.parent.mkdir(exist_ok=True)
        snap.write_text(src)
    assert src == snap.read_text()


def test_host_entry_names_do_not_shadow_tensor_parameters(sim):
    """Defect: the CPU host entry looped over blocks with a variable named ``b``, which hid a
    tensor parameter named ``b`` (its pointer became the loop counter, and pto-isa's CPU backend
    read GM at address 0). Every name the entry declares must differ from the parameters."""
    def k_names(a, b, c, stream, blockDim):
        t = pto.Tile(pto.Vec, pto.float32, (1, 64))
        pto.TLOAD(t, a[0:1, 0:64])
        pto.TLOAD(t, b[0:1, 0:64])
        pto.TSTORE(c[0:1, 0:64], t)
    x = pypto.zeros((1, 64), pypto.float32)
    src = emit_kernel(*traced(pypto.kernel(k_names), x, x, x, x, x))
    entry = src[src.index('extern "C" void call_kernel'):]
    params = re.search(r"call_kernel\(([^)]*)\)", entry).group(1)
    names = [p.split()[-1].lstrip("*") for p in params.split(",")]
    assert len(names) == len(set(names)), names
    for loop_var in re.findall(r"for \(uint32_t (\w+) =", entry):
        assert loop_var not in names, (loop_var, names)
    assert "(__gm__ float *)b" in entry


def test_kern_cpp_is_the_backend_text(sim):
    x = pypto.zeros((ROWS, COLS), pypto.float32)
    k, soc = traced(add_rows, x, x, x)
    assert add_rows.cpp(x, x, x) == emit_cpp(k, soc)
    assert f"emitted by pypto {pypto.__version__}" in add_rows.cpp(x, x, x)


def test_library_kernel_dynamic_shapes_are_arguments(sim):
    x = pypto.zeros((1000,), pypto.float16)
    kern = kernel_for("TADD", "binary")
    k, soc = traced(kern, x, x, x)
    src = emit_kernel(k, soc)
    assert signature(src) == ["uint32_t blockDim", "void *stream", "uint8_t *x", "uint8_t *y", "uint8_t *z",
                              "int64_t x_d0", "int64_t y_d0", "int64_t z_d0", "uint8_t *pypto_errs"]
    assert "__gm__ half *x" in src
    # one compilation serves every size: the text does not depend on the shape
    y = pypto.zeros((77777,), pypto.float16)
    assert emit_kernel(traced(kern, y, y, y)[0], soc) == src
    args = abi.arguments(k)
    assert [(a.name, a.kind) for a in args] == [("x", "tensor"), ("y", "tensor"), ("z", "tensor"),
                                              ("x_d0", "dim"), ("y_d0", "dim"), ("z_d0", "dim"),
                                              ("pypto_errs", "err")]


@pytest.mark.parametrize("name, form, params, needle", [
    ("TMULS", "scalar", (), r"TMULS\(t0, t0, static_cast<float>\(y\)\);"),
    ("TEXP", "unary", (), r"TEXP\(t0, t0\);"),
    ("TROWSUM", "rowreduce", (), r"TROWSUM\(t2, t0, t1\);"),       # dst, src, tmp
    ("TCVT", "cast", (("rmode", "CAST_RINT"),), r"TCVT\(t1, t0, RoundMode::CAST_RINT\);"),
])
def test_library_kernels_emit_their_instruction(sim, name, form, params, needle):
    kern = kernel_for(name, form, params)
    shape = (40, 30) if form == "rowreduce" else (100,)
    x = pypto.zeros(shape, pypto.float32)
    z = pypto.zeros((40, 1) if form == "rowreduce" else shape,
                    pypto.int32 if form == "cast" else pypto.float32)
    args = (x, 2.5, z) if form == "scalar" else (x, z)
    k, soc = traced(kern, *args)
    src = emit_kernel(k, soc)
    assert re.search(needle, src), src


def test_tcvt_saturation_form_is_guarded_for_the_cpu_backend(sim):
    kern = kernel_for("TCVT", "cast", (("rmode", "CAST_ROUND"), ("satMode", "OFF")))
    x = pypto.zeros((64,), pypto.float32)
    z = pypto.zeros((64,), pypto.int16)
    src = emit_kernel(*traced(kern, x, z))
    cpu = src[src.index("#if defined(__CPU_SIM)  // no SaturationMode"):]
    assert re.search(r"TCVT\(t1, t0, RoundMode::CAST_ROUND\);\s*#else\s*TCVT\(t1, t0, RoundMode::CAST_ROUND, "
                     r"SaturationMode::OFF\);\s*#endif", cpu)


@pypto.kernel
def k_manual(x, z, n, scale):
    # two buffers at fixed UB addresses, flags with two event ids, index arithmetic with // and %
    a = pto.Tile(pto.Vec, pto.float32, (1, 64), valid=pto.DYNAMIC)
    b = pto.Tile(pto.Vec, pto.float32, (1, 64), valid=pto.DYNAMIC)
    pto.TASSIGN(a, 0x100)
    pto.TASSIGN(b, 0x2000)
    for i in pto.range(0, n, 2):
        a.set_valid(1, 64)
        b.set_valid(1, 64)
        pto.TLOAD(a, x[(i // 2) * 128:(i // 2) * 128 + 64])
        pto.TLOAD(b, x[(i // 2) * 128 + 64:(i // 2) * 128 + 128])
        pto.set_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID1)
        pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_V, pto.EVENT_ID1)
        pto.TMULS(a, a, scale)
        pto.TADD(b, b, a)
        pto.pipe_barrier(pto.PIPE_V)
        pto.set_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID3)
        pto.wait_flag(pto.PIPE_V, pto.PIPE_MTE3, pto.EVENT_ID3)
        pto.TSTORE(z[(i % 4) * 64:(i % 4) * 64 + 64], b)
        pto.set_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, pto.EVENT_ID0)
        pto.wait_flag(pto.PIPE_MTE3, pto.PIPE_MTE2, pto.EVENT_ID0)


def test_manual_placement_flags_and_scalars(sim):
    x = pypto.zeros((512,), pypto.float32)
    z = pypto.zeros((256,), pypto.float32)
    k, soc = traced(k_manual, x, z, 6, 0.5)
    src = emit_kernel(k, soc)
    assert signature(src) == ["uint32_t blockDim", "void *stream", "uint8_t *x", "uint8_t *z",
                              "int64_t n", "double scale", "uint8_t *pypto_errs"]
    assert "TASSIGN(a, 0x100);" in src and "TASSIGN(b, 0x2000);" in src
    assert "set_flag(PIPE_MTE2, PIPE_V, EVENT_ID1);" in src
    assert "wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID3);" in src
    assert "pipe_barrier(PIPE_V);" in src
    assert "for (int64_t i0 = 0; i0 < n; i0 += 2) {" in src
    assert "pypto_floordiv(i0, 2)" in src and "pypto_floormod(i0, 4)" in src
    assert "TMULS(a, a, static_cast<float>(scale));" in src
    assert "double scale" in src.split("__global__")[1].split(")")[0]


@pypto.kernel
def k_names(new, delete):
    float = pto.Tile(pto.Vec, pto.int32, (1, 8))       # noqa: A001 - a C++ keyword as a name
    pto.TLOAD(float, new[0:8])
    pto.set_flag(pto.PIPE_MTE2, pto.PIPE_MTE3, pto.EVENT_ID0)
    pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_MTE3, pto.EVENT_ID0)
    pto.TSTORE(delete[0:8], float)


def test_cpp_keywords_are_renamed(sim):
    x = pypto.zeros((8,), pypto.int32)
    src = emit_kernel(*traced(k_names, x, x))
    assert signature(src)[2:] == ["uint8_t *new_", "uint8_t *delete_", "uint8_t *pypto_errs"]
    assert "float_;" in src and "TLOAD(float_, new__v1);" in src


def test_instruction_without_emission_rule_is_a_clear_error(sim):
    x = pypto.zeros((ROWS, COLS), pypto.float32)
    k, soc = traced(add_rows, x, x, x)
    unit = registry.get("TADD")
    registry.register(registry.Unit("TADD", check=unit.check, sim=unit.sim, seed=unit.seed), replace=True)
    try:
        with pytest.raises(E.NotSimulatedError, match="TADD has no C\\+\\+ emission rule"):
            emit_kernel(k, soc)
    finally:
        registry.register(unit, replace=True)


def test_a5_profile_uses_its_capacity(sim):
    pypto.finalize()
    pypto.init(backend="sim", soc="a5")
    x = pypto.zeros((ROWS, COLS), pypto.float32)
    k, soc = traced(add_rows, x, x, x)
    assert "for SoC a5" in emit_kernel(k, soc)


def test_fp4_shapes_are_emitted_in_values():
    """pypto counts packed fp4 pairs (one byte, two values); pto-isa's C++ counts values in tile
    shapes, valid regions and GlobalTensor shapes and strides (its MXFP4 GEMM declares a 128-value
    K as Cols = 128 and a row of K values as a 64-byte stride of 128), so the pair axis doubles:
    columns for A (ND view, Nz / Left tiles), rows for B (DN view, Zn / Right tiles)."""
    pypto.finalize()
    pypto.init(backend="sim", soc="a5")
    try:
        @pypto.kernel
        def k_fp4(a, bt, kp):
            am = pto.TileMatNz(pypto.float4_e2m1x2, (16, 64), valid=pto.DYNAMIC)
            bm = pto.TileMatZn(pypto.float4_e2m1x2, (64, 16))
            al = pto.TileLeft(pypto.float4_e2m1x2, (16, 64))
            am.set_valid(16, kp)
            pto.TLOAD(am, a[0:16, 0:kp])
            pto.TLOAD(bm, pto.GlobalTensor(bt, (1, 1, 1, 64, 16), (1024, 1024, 1024, 1, 64),
                                           layout=pto.DN))
            pto.TMOV(al, am)
            pto.TEXTRACT(pto.TileLeft(pypto.float4_e2m1x2, (16, 32)), am, 0, 32)

        a = pypto.Tensor(np.zeros((16, 64), np.uint8), dtype=pypto.float4_e2m1x2)
        bt = pypto.Tensor(np.zeros((16, 64), np.uint8), dtype=pypto.float4_e2m1x2)
        text = k_fp4.cpp(a, bt, 40, guards=False)
        guarded = k_fp4.cpp(a, bt, 40)
    finally:
        pypto.finalize()
    assert "Tile<TileType::Mat, float4_e2m1x2_t, 16, 128, BLayout::ColMajor, DYNAMIC, DYNAMIC" in text
    assert "Tile<TileType::Mat, float4_e2m1x2_t, 128, 16, BLayout::RowMajor, 128, 16" in text
    assert "Tile<TileType::Left, float4_e2m1x2_t, 16, 128, BLayout::ColMajor, 16, 128" in text
    assert re.search(r"\.ColMaskInternal = \(kp \* 2\);", text)
    assert "Shape<1, 1, 1, 16, DYNAMIC>(1, 1, 1, 16, (kp * 2)), Stride<128, 128, 128, 128, 1>" in text
    assert "Shape<1, 1, 1, 128, 16>, Stride<2048, 2048, 2048, 1, 128>, Layout::DN>" in text
    assert re.search(r"TEXTRACT\(\w+, \w+, \(uint16_t\)\(0\), \(uint16_t\)\(64\)\);", text)
    # a valid count read back in C++ is in values: pypto's guards compare pairs
    assert re.search(r"pypto_view_shape\(pypto_err, 16, kp, \w+\.GetValidRow\(\), \(\w+\.GetValidCol\(\) / 2\)\)",
                     guarded), guarded


def test_cube_sizes_are_guarded_in_the_cpp(sim):
    """m, k, n in 1 .. 4095: the simulator's RANGE fault (what RANGE_MKN) is emitted before a
    cube instruction whose sizes are known only at run time (the chip checks it in debug builds
    only); test_cube's range test runs the TMATMUL case on every backend."""
    from pypto.backends import errcodes as EC

    @pypto.kernel
    def k_gemv(c, k):
        al = pto.TileLeft(pypto.float16, (16, 32))
        br = pto.TileRight(pypto.float16, (32, 16), valid=pto.DYNAMIC)
        acc = pto.TileAcc(pypto.float32, (16, 16))
        br.set_valid(k, 16)
        pto.TGEMV(acc, al, br)                   # TGEMV: m = 1, k = b.validRow, n = b.validCol

    text = k_gemv.cpp(pypto.zeros((16, 16), pypto.float32), 8)
    guard = re.search(r"PYPTO_GUARD\(\d+, pypto_range\(pypto_err, (\d+), (\w+)\.GetValidRow\(\), 1, 4095\)\);"
                      r"\n\s*PYPTO_GUARD\(\d+, pypto_range\(pypto_err, \d+, \w+\.GetValidCol\(\), 1, 4095\)\);"
                      r"\n\s*TGEMV\(", text)
    assert guard and int(guard.group(1)) == EC.RANGE_MKN, text
    assert f"pypto_fault(e, {EC.RANGE}, what, v, lo, hi)" in text


def test_a_dn_view_into_an_mx_b_scale_tile_is_emitted_as_mx_b_dn(sim):
    """bScale kept as N x K/32 rows: the NPU's MX_B_DN GlobalTensor, shape (1, 1, N, K/64, 2)."""
    pypto.finalize()
    pypto.init(backend="sim", soc="a5")

    @pypto.kernel
    def k_scale(sbt, out):
        t = pto.Tile(pto.Mat, pto.float8_e8m0, (4, 64), blayout="ColMajor", slayout="ColMajor",
                     fractal=32)
        pto.TLOAD(t, pto.GlobalTensor(sbt, (1, 1, 1, 4, 64), (1, 1, 1, 1, 8), 2, layout=pto.DN))
        l0 = pto.TileRightScale(pto.float8_e8m0, (4, 64))
        pto.TMOV(l0, t)

    sbt = pypto.zeros((64, 8), pypto.float8_e8m0)
    k, soc = traced(k_scale, sbt, sbt)
    src = emit_cpp(k, soc)
    assert re.search(r"GlobalTensor<float8_e8m0_t, Shape<1, 1, 64, 2, 2>, Stride<1, 1, 8, 2, 1>, "
                     r"Layout::MX_B_DN>", src), src


def test_a_ttest_steering_a_branch_is_kept_in_an_int64(sim):
    @pypto.kernel
    def probe(sig, ones, out, n):
        t = pto.Tile(pto.Vec, pto.int32, (1, 8))
        pto.TLOAD(t, ones)
        for _ in pto.when(pto.TTEST(sig, 5, cmp="GE")):
            for _ in pto.when(n > 2):
                pto.TSTORE(out, t)
        pto.TTEST(sig, 1, cmp="EQ")                 # a result nobody reads is kept all the same

    args = (pypto.zeros((1,), pypto.int32), pypto.zeros((1, 8), pypto.int32),
            pypto.zeros((1, 8), pypto.int32), 3)
    src = emit_kernel(*traced(probe, *args))
    assert "int64_t pypto_tt0 = 0;" in src and "int64_t pypto_tt1 = 0;" in src
    assert re.search(r"pypto_tt0 = comm::TTEST\(.*comm::WaitCmp::GE\) \? 1 : 0;", src)
    assert re.search(r"pypto_tt1 = comm::TTEST\(.*comm::WaitCmp::EQ\) \? 1 : 0;", src)
    assert "if (pypto_tt0 != 0) {" in src and re.search(r"if \(\(\w+ > 2\) != 0\) \{", src)
