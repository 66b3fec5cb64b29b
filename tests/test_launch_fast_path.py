"""Repeated launches reuse the checked launch (Insn.execute and kern[b](...) with the same device
tensors and scalars) without changing what a launch means: new data is read, a changed operand
or a freed tensor takes the full path, and a kernel keeps no tensor of its last launch alive."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import pypto
from pypto import errors as E
from pypto import pto


@pytest.fixture
def session():
    pypto.finalize()
    pypto.init()
    yield
    pypto.finalize()


def test_execute_again_reads_the_new_data(session):
    a, b, c = (pypto.Tensor(np.arange(8, dtype=np.float32)) for _ in range(3))
    add = pypto.load_insn("add")
    for i, t in enumerate((a, b, c)):
        add.set_operand(i, t)
    add.execute()
    np.testing.assert_array_equal(c.numpy(), 2 * np.arange(8))
    launches = pypto.stats().launches
    a.copy_from(np.full(8, 10, np.float32))
    add.execute()                                           # the fast path: same operands
    np.testing.assert_array_equal(c.numpy(), 10 + np.arange(8))
    assert pypto.stats().launches == launches + 1
    d = pypto.Tensor(np.ones((2, 3), np.float32))
    e = pypto.zeros((2, 3))
    add.set_operand(0, d)
    add.set_operand(1, d)
    add.set_operand(2, e)
    add.execute()                                           # new operands: checked again
    np.testing.assert_array_equal(e.numpy(), np.full((2, 3), 2))
    d.free()
    with pytest.raises(E.UseAfterFreeError):
        add.execute()


def test_a_scalar_change_is_not_missed(session):
    x, y = pypto.Tensor(np.ones(4, np.float32)), pypto.zeros((4,))
    adds = pypto.load_insn("adds")
    for i, v in enumerate((x, 1.5, y)):
        adds.set_operand(i, v)
    adds.execute()
    adds.set_operand(1, 4.0)
    adds.execute()
    np.testing.assert_array_equal(y.numpy(), np.full(4, 5.0))


@pypto.kernel
def scale(x, y, s):
    t = pto.Tile(pto.Vec, pto.float32, (8, 64))
    pto.TLOAD(t, x)
    pto.TMULS(t, t, s)
    pto.TSTORE(y, t)


def test_kernel_relaunch_and_its_memory(session):
    x, y = pypto.Tensor(np.ones((8, 64), np.float32)), pypto.zeros((8, 64))
    scale(x, y, 2.0)
    scale(x, y, 3.0)                                        # a scalar differs: full path
    np.testing.assert_array_equal(y.numpy(), np.full((8, 64), 3.0))
    x.copy_from(np.full((8, 64), 2, np.float32))
    scale(x, y, 3.0)                                        # fast path, new data
    np.testing.assert_array_equal(y.numpy(), np.full((8, 64), 6.0))
    live = pypto.stats().live_bytes
    del x, y
    gc.collect()
    assert pypto.stats().live_bytes == live - 2 * 8 * 64 * 4  # the kernel held no reference
    z = pypto.zeros((8, 64))
    with pytest.raises(E.KernelError, match="takes 3 arguments"):
        scale(z, z)


def test_a_repeated_launch_reports_a_fault_the_data_causes_and_recovers():
    """The prepared repeat reuses its error record: a fault the new data causes is reported as a
    full launch reports it, and the next clean launch is not haunted by it."""
    pypto.finalize()
    pypto.init(soc="a5", sim=pypto.SimOptions(checks="strict"))
    try:
        a = pypto.Tensor(np.arange(1, 41, dtype=np.int32).reshape(4, 10) * 7)
        b = pypto.Tensor(np.full((4, 10), 3, np.int32))
        c = pypto.zeros((4, 10), pypto.int32)
        div = pypto.load_insn("div")
        for i, t in enumerate((a, b, c)):
            div.set_operand(i, t)
        div.execute()
        np.testing.assert_array_equal(c.numpy(), (np.arange(1, 41).reshape(4, 10) * 7) // 3)
        zero = np.full((4, 10), 3, np.int32)
        zero[2, 5] = 0
        b.copy_from(zero)
        with pytest.raises(E.UndefinedBehaviorError) as fast:
            div.execute()                                   # same operands: the prepared repeat
        fresh = pypto.load_insn("div")
        for i, t in enumerate((a, b, c)):
            fresh.set_operand(i, t)
        with pytest.raises(E.UndefinedBehaviorError) as full:
            fresh.execute()                                 # a new Insn: the full path
        assert str(fast.value) == str(full.value)
        assert f"(0, {2 * 10 + 5})" in str(fast.value)      # the library kernel sees one row
        b.copy_from(np.full((4, 10), 5, np.int32))
        div.execute()
        np.testing.assert_array_equal(c.numpy(), (np.arange(1, 41).reshape(4, 10) * 7) // 5)
    finally:
        pypto.finalize()


def test_repeated_launches_from_several_threads_each_get_their_own_result(session):
    """One Insn per thread, all prepared, run at once: every thread's result is its own."""
    from concurrent.futures import ThreadPoolExecutor
    a = [pypto.Tensor(np.full(64, k, np.float32)) for k in range(4)]
    outs = [pypto.zeros((64,), pypto.float32) for _ in range(4)]
    insns = []
    for k in range(4):
        ins = pypto.load_insn("mul")
        for i, t in enumerate((a[k], a[k], outs[k])):
            ins.set_operand(i, t)
        ins.execute()
        insns.append(ins)
    bad = []

    def work(k):
        for _ in range(200):
            insns[k].execute()
            if not np.array_equal(outs[k].numpy(), np.full(64, k * k, np.float32)):
                bad.append(k)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(4)))
    assert not bad
