"""Multi-block launches: worker threads with their own on-chip memory give the same results and
report the same (lowest) faulting block as an in-order run and as eager mode."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import pypto
from pypto import pto

pytestmark = pytest.mark.usefixtures("fresh")


@pypto.kernel(dynamic_shapes=True)
def scale_rows(x, z, s):
    """Block b handles rows b, b + block_num, ...: z[r] = x[r] * s + r."""
    rows = x.shape[0]
    t = pto.Tile(pto.Vec, pto.float32, (1, 64))
    for r in pto.range(pto.block_idx(), rows, pto.block_num()):
        pto.TLOAD(t, x[r:r + 1, 0:64])
        pto.TMULS(t, t, s)
        pto.TADDS(t, t, r)
        pto.TSTORE(z[r:r + 1, 0:64], t)


@pypto.kernel(dynamic_shapes=True)
def overrun(x, z, limit):
    """Blocks >= limit read one row past the end of x."""
    t = pto.Tile(pto.Vec, pto.float32, (1, 64))
    b = pto.block_idx()
    r = b + (b // limit) * x.shape[0]          # in range for b < limit, past the end otherwise
    pto.TLOAD(t, x[r:r + 1, 0:64])
    pto.TSTORE(z[b:b + 1, 0:64], t)


def _run(kern, blocks, mode, threads, *host):
    pypto.init(sim=pypto.SimOptions(mode=mode, threads=threads))
    try:
        devs = [pypto.Tensor(h) for h in host[:-1]] + [host[-1]]
        out = pypto.zeros(host[0].shape, pypto.float32)
        kern[blocks](devs[0], out, *devs[1:])
        return out.numpy()
    finally:
        pypto.finalize()


@pytest.mark.parametrize("blocks", [1, 3, 8, 13])
def test_threads_and_modes_agree_with_reference(blocks):
    x = np.random.default_rng(blocks).standard_normal((29, 64)).astype(np.float32)
    want = x * np.float32(1.5) + np.arange(29, dtype=np.float32)[:, None]
    got = {(m, t): _run(scale_rows, blocks, m, t, x, 1.5)
           for m, t in (("compiled", 1), ("compiled", 4), ("eager", 1))}
    for key, g in got.items():
        np.testing.assert_array_equal(g, want, err_msg=str(key))


@pytest.mark.parametrize("threads", [1, 2, 5])
@pytest.mark.parametrize("mode", ["compiled", "eager"])
def test_lowest_faulting_block_is_reported(mode, threads):
    x = np.ones((16, 64), np.float32)
    pypto.init(sim=pypto.SimOptions(mode=mode, threads=threads))
    try:
        xd, zd = pypto.Tensor(x), pypto.zeros((16, 64), pypto.float32)
        with pytest.raises(pypto.errors.GMBoundsError) as ei:
            overrun[9](xd, zd, 5)
        assert "block 5" in str(ei.value)
    finally:
        pypto.finalize()


def test_workers_have_their_own_on_chip_memory():
    pypto.init(sim=pypto.SimOptions(threads=3))
    try:
        x, z = pypto.Tensor(np.ones((6, 64), np.float32)), pypto.zeros((6, 64), pypto.float32)
        scale_rows[6](x, z, 2.0)
        be = pypto.runtime.current().backend
        seen = []
        real = be.onchip.mine

        launcher = threading.get_ident()

        def spy():
            if threading.get_ident() == launcher:     # let the workers take blocks: a worker
                time.sleep(0.2)                       # that has not started is cancelled
            oc = real()
            seen.append((threading.get_ident(), oc.spaces["Vec"].ctypes.data, oc.spaces["Vec"].nbytes))
            return oc
        be.onchip.mine = spy
        scale_rows[6](x, z, 2.0)
        threads = {t for t, _, _ in seen}
        assert len(threads) >= 2                            # the launching thread and workers
        by_thread = {t: a for t, a, _ in seen}
        assert len(set(by_thread.values())) == len(threads)  # each with its own UB
        assert len({(t, a) for t, a, _ in seen}) == len(threads)
        assert all(n == 192 * 1024 for _, _, n in seen)
    finally:
        pypto.finalize()


def test_a_launch_does_not_wait_for_workers_that_have_not_started():
    """Blocks come from one queue; the launching thread runs whatever no worker took, and a worker
    task still queued when the blocks are done is cancelled instead of awaited. Here every worker
    is busy elsewhere until a watchdog frees them: the launch must finish before that."""
    pypto.init(sim=pypto.SimOptions(threads=2))
    try:
        x = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
        xd, zd = pypto.Tensor(x), pypto.zeros((8, 64), pypto.float32)
        scale_rows[4](xd, zd, 2.0)                     # compiles, starts the worker pool
        pool = pypto.runtime.current().backend._pool
        gate = threading.Event()
        busy = [pool.submit(gate.wait) for _ in range(2)]
        watchdog = threading.Timer(20.0, gate.set)
        watchdog.start()
        try:
            scale_rows[4](xd, zd, 3.0)
            finished_first = not gate.is_set()
        finally:
            gate.set()
            watchdog.cancel()
            for f in busy:
                f.result()
        assert finished_first
        np.testing.assert_array_equal(zd.numpy(), x * np.float32(3.0) + np.arange(8, dtype=np.float32)[:, None])
    finally:
        pypto.finalize()


def test_threads_option_is_validated():
    with pytest.raises(pypto.PtoError):
        pypto.SimOptions(threads=0)


_STARTUP = """
import os, sys
import numpy as np
import pypto
pypto.init()
n = 1 << 16
x, y = (pypto.Tensor(np.full(n, 1.5, np.float32)) for _ in range(2))
z = pypto.empty((n,), pypto.float32)
add = pypto.load_insn("add")
for i, t in enumerate((x, y, z)):
    add.set_operand(i, t)
add.execute()
assert (z.numpy() == 3).all()
print("scipy.linalg" in sys.modules)
a = pypto.Tensor(np.ones((256, 256), np.float16))
c = pypto.empty((256, 256), pypto.float32)
mm = pypto.load_insn("matmul")
for i, t in enumerate((a, a, c)):
    mm.set_operand(i, t)
mm.execute()
mm.execute()
assert (c.numpy() == 256).all()
from threadpoolctl import threadpool_info
print([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"
       and "scipy" in os.path.basename(os.path.dirname(i["filepath"]))
       and "numpy" not in i["filepath"]])
"""


def test_scipy_blas_is_loaded_with_the_first_cube_kernel_and_shares_the_cores():
    """A process whose kernels never reach the cube does not import SciPy's linalg (0.1-0.2 s of
    its first launch); once a cube kernel runs, SciPy's BLAS is held to cores // block threads."""
    env = dict(os.environ, PYPTO_SIM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", _STARTUP], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    first, threads = out.stdout.split("\n")[:2]
    assert first == "False"
    cores = os.cpu_count() or 1
    assert threads == str([max(1, cores // 2)])
