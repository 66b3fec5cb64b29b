"""The NPU backend's flows without CANN or pto-isa: a fake compiler builds a stand-in for the
kernel whose only job is to report the arguments it received, so the launch ABI (argument order
and types from abi.py), fault records, device memory through the runtime and every refusal are
checked here; tests/test_npu_cpusim.py runs real kernels where pto-isa is present."""
from __future__ import annotations

import os
import stat
import sys
import textwrap

import numpy as np
import pytest

import pypto
from pypto import errors as E
from pypto import pto, runtime
from pypto.backends.npu import toolchain
from pypto.backends.npu.backend import NpuBackend
from pypto.backends.npu.host_acl import HostAcl
from pypto.backends.npu.runtime import AclRuntime
from pypto.isa.soc import get_profile

# What the stand-in kernel does with the arguments it is given (the ABI pypto must pass, written
# out here from the rule in abi.py: blockDim, stream, tensors, scalars, dynamic dims, fault records).
KERNEL_C = r"""
#include <stdint.h>
void call_kernel(uint32_t bd, void *stream, uint8_t *x, uint8_t *y, int64_t n, double s,
                 int64_t x_d0, int64_t y_d0, uint8_t *errs)
{
    int64_t *o = (int64_t *)y;
    o[0] = bd; o[1] = n; o[2] = (int64_t)(s * 1000); o[3] = x_d0; o[4] = y_d0; o[5] = ((int64_t *)x)[2];
    o[6] = stream == 0;
    if (n < 0) {                        /* a guard's fault record, as the emitted C++ writes it */
        int64_t *e = (int64_t *)errs + 16 * (bd - 1);
        e[0] = 3; e[1] = 0; e[2] = n; e[3] = 8; e[7] = 0; e[8] = bd - 1;
    }
}
"""

FAKE_CXX = """#!{python}
import os, subprocess, sys
if "--version" in sys.argv:
    print("g++ (fake) 12.2.0")
    sys.exit(0)
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write("compile\\n")
src = next(a for a in sys.argv if a.endswith(".cpp"))
if "BROKEN" in open(src).read():
    print(src + ":3:5: error: 'TBROKEN' was not declared in this scope", file=sys.stderr)
    sys.exit(1)
out = sys.argv[sys.argv.index("-o") + 1]
sys.exit(subprocess.call(["cc", "-shared", "-fPIC", "-x", "c", os.environ["FAKE_KERNEL_C"], "-o", out]))
"""


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A session on an NpuBackend over HostAcl, with a fake C++ compiler and pto-isa tree."""
    inc = tmp_path / "pto-isa" / "include" / "pto"
    inc.mkdir(parents=True)
    (inc / "pto-inst.hpp").write_text("// fake\n")
    cxx = tmp_path / "fake-g++"
    cxx.write_text(FAKE_CXX.format(python=sys.executable))
    cxx.chmod(cxx.stat().st_mode | stat.S_IEXEC)
    kc = tmp_path / "kernel.c"
    kc.write_text(KERNEL_C)
    log = tmp_path / "compiles.log"
    log.write_text("")
    monkeypatch.setenv("CXX", str(cxx))
    monkeypatch.setenv("PTO_ISA_ROOT", str(tmp_path / "pto-isa"))
    monkeypatch.setenv("FAKE_KERNEL_C", str(kc))
    monkeypatch.setenv("FAKE_LOG", str(log))
    pypto.finalize()
    acl = HostAcl()
    soc = get_profile("a2a3")
    be = NpuBackend(soc, 0, name="npu-cpusim", runtime=AclRuntime(acl), target_kind="cpusim",
                    toolchain=toolchain.discover(), cache_dir=tmp_path / "cache",
                    max_blocks={"vec": 4, "cube": 2, "mix": 2})
    runtime._session = runtime.Session(be, soc, 0, False)
    yield be, acl, log
    pypto.finalize()


@pypto.kernel(dynamic_shapes=True)
def k_abi(x, y, n, s):
    a = pto.Tile(pto.Vec, pto.int64, (1, 8))
    pto.TLOAD(a, x[0:8])
    pto.set_flag(pto.PIPE_MTE2, pto.PIPE_MTE3, pto.EVENT_ID0)
    pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_MTE3, pto.EVENT_ID0)
    pto.TSTORE(y[0:8], a)


def test_launch_passes_the_abi_in_order(fake):
    be, acl, log = fake
    x = pypto.Tensor(np.arange(10, dtype=np.int64))
    y = pypto.zeros((8,), pypto.int64)
    k_abi[3](x, y, 42, 2.5)
    got = y.numpy()
    assert got[:7].tolist() == [3, 42, 2500, 10, 8, 2, 0]       # stream: a real (non-null) handle
    assert be.stats.launches == 1 and be.stats.compiles == 1
    k_abi[1](x, y, 7, -1.0)                                      # same specialisation: no rebuild
    assert y.numpy()[:3].tolist() == [1, 7, -1000]
    assert log.read_text().count("compile") == 1


def test_fault_record_becomes_the_simulators_error(fake):
    be, acl, log = fake
    x = pypto.Tensor(np.arange(10, dtype=np.int64))
    y = pypto.zeros((8,), pypto.int64)
    with pytest.raises(E.GMBoundsError) as ei:
        k_abi[2](x, y, -5, 0.0)
    msg = str(ei.value)
    assert "kernel k_abi, block 1, TLOAD" in msg and "test_npu_backend.py" in msg
    # the next launch starts from clean records
    k_abi[2](x, y, 5, 0.0)
    assert y.numpy()[1] == 5


def test_block_dim_beyond_the_cores_is_refused(fake):
    x = pypto.Tensor(np.arange(10, dtype=np.int64))
    y = pypto.zeros((8,), pypto.int64)
    with pytest.raises(E.NpuLaunchError, match="5 blocks, but a2a3 has 4 vector cores"):
        k_abi[5](x, y, 1, 1.0)
    assert y.numpy().tolist() == [0] * 8


def test_kernel_fault_at_sync_names_the_kernel(fake):
    be, acl, log = fake
    x = pypto.Tensor(np.arange(10, dtype=np.int64))
    y = pypto.zeros((8,), pypto.int64)
    acl.inject("acl.rt.synchronize_stream", 507015)
    with pytest.raises(E.KernelFaultError) as ei:
        k_abi[1](x, y, 1, 1.0)
    assert ei.value.code == 507015 and "k_abi[1]" in str(ei.value)
    assert "ASCEND_SLOG_PRINT_TO_STDOUT" in str(ei.value)


def test_compile_error_keeps_source_and_log(fake, tmp_path):
    be, acl, log = fake

    @pypto.kernel
    def k_broken(x):
        a = pto.Tile(pto.Vec, pto.int64, (1, 8))
        pto.TLOAD(a, x[0:8])
    x = pypto.zeros((8,), pypto.int64)
    orig = be.source

    def broken(kernel):
        src, sites = orig(kernel)
        return src.replace("TLOAD(a", "BROKEN TLOAD(a"), sites
    be.source = broken
    with pytest.raises(E.NpuCompileError) as ei:
        k_broken(x)
    e = ei.value
    assert os.path.isfile(e.source_path) and "BROKEN" in open(e.source_path).read()
    assert os.path.isfile(e.log_path) and "TBROKEN" in e.first_error
    assert str(e.source_path) in str(e) and "TBROKEN" in str(e)


def test_device_memory_goes_through_the_runtime(fake):
    be, acl, log = fake
    before = dict(acl.live())
    t = pypto.Tensor(np.arange(100, dtype=np.float32))
    assert len(acl.live()) == len(before) + 1
    assert np.array_equal(t.numpy(), np.arange(100, dtype=np.float32))
    t.free()
    assert acl.live() == before
    acl.inject("acl.rt.malloc", 207001)
    with pytest.raises(E.AclMemoryError):
        pypto.Tensor(np.zeros(10, np.float32))
    assert acl.live() == before and be.stats.live_tensors == 0


def test_finalize_releases_everything(fake):
    be, acl, log = fake
    x = pypto.Tensor(np.arange(10, dtype=np.int64))
    y = pypto.zeros((8,), pypto.int64)
    k_abi[1](x, y, 1, 1.0)
    pypto.finalize()
    assert acl.live() == {}
    names = [c[0] for c in acl.calls]
    assert names[-3:] == ["acl.rt.destroy_stream", "acl.rt.reset_device", "acl.finalize"]


def test_npu_backend_unavailable_here_lists_every_piece(monkeypatch):
    """No CANN on this machine: init(backend='npu') names each missing piece with its fix."""
    from pypto.backends import is_available
    ok, missing = is_available("npu")
    if ok:
        pytest.skip("an NPU is usable here")
    pypto.finalize()
    with pytest.raises(E.BackendUnavailableError) as ei:
        pypto.init(backend="npu")
    for m in missing:
        assert m in str(ei.value)
    assert "pypto.init(backend='sim')" in str(ei.value)


def test_cpusim_unavailable_without_pto_isa(monkeypatch, tmp_path):
    monkeypatch.setenv("PTO_ISA_ROOT", str(tmp_path / "nowhere"))
    from pypto.backends import is_available
    ok, missing = is_available("npu-cpusim")
    assert not ok and any("PTO_ISA_ROOT" in m for m in missing)
    pypto.finalize()
    with pytest.raises(E.NpuUnavailableError, match="PTO_ISA_ROOT"):
        pypto.init(backend="npu-cpusim")


def test_doctor_reports_both_npu_backends(capsys, monkeypatch, tmp_path):
    from pypto import cli
    monkeypatch.setenv("PTO_ISA_ROOT", str(tmp_path / "nowhere"))
    monkeypatch.delenv("PYPTO_BACKEND", raising=False)
    rc = cli.main(["doctor"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "npu-cpusim backend: not available" in out and "PTO_ISA_ROOT" in out
    assert "npu backend:" in out
    assert cli.main(["doctor", "--require", "npu-cpusim"]) == 1


def test_cli_cpp_writes_the_source(tmp_path, capsys):
    from pypto import cli
    out = tmp_path / "k.cpp"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rc = cli.main(["cpp", os.path.join(root, "examples", "kernel_add_rows.py") + ":add_rows",
                   "float32[300,100]", "float32[300,100]", "float32[300,100]", "-o", str(out)])
    assert rc == 0
    src = out.read_text()
    assert 'extern "C" void call_kernel(' in src and "TADD(a, a, b);" in src
    assert cli.main(["cpp", "--insn", "cast", "--to", "int16", "--param", "rmode=CAST_RINT"]) == 0
    assert "RoundMode::CAST_RINT" in capsys.readouterr().out
    assert cli.main(["cpp", "nowhere.py:k"]) == 1
    assert cli.main(["cpp", os.path.join(root, "examples", "kernel_add_rows.py") + ":nope"]) == 1
    err = capsys.readouterr().err
    assert "no @pypto.kernel named nope" in err and "add_rows" in err
