"""The communication instructions on one device (a world of one rank), against the numpy models
of conformance/ref_comm.py: data movers chunked through their staging tiles, signals with every
compare mode, and the collectives over a one-rank group. Several ranks: tests/test_comm.py.

On the NPU backends these kernels need HCCL's windows, which they do not set up yet: skipped there.
"""
from __future__ import annotations

import numpy as np
import pytest

import pypto
from pypto import pto

from . import ref_comm as ref

CMPS = tuple(ref.CMP)


@pytest.fixture
def one_rank(pto_session, target):
    if target.backend != "sim":
        pytest.skip(f"{target.backend}: communication kernels need HCCL's windows, which the NPU "
                    "backends do not set up yet")
    return pto_session


def _data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 8).astype(dtype)
    return rng.integers(-100, 100, shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int16", "uint8"])
@pytest.mark.parametrize("tile_rows, dynamic, pong", [(32, False, False), (8, False, True), (12, True, False)])
def test_tput_and_tget_to_this_rank(one_rank, dtype, tile_rows, dynamic, pong):
    np_dt = np.dtype(dtype)
    x, y0 = _data((32, 64), np_dt, 1), _data((32, 64), np_dt, 2)
    for name in ("TPUT", "TGET"):
        @pypto.kernel
        def move(a, b):
            valid = pto.DYNAMIC if dynamic else None
            tiles = [pto.Tile(pto.Vec, a.dtype, (tile_rows, 64), valid=valid) for _ in range(2 if pong else 1)]
            if name == "TPUT":
                pto.TPUT(pto.remote(b, pto.rank_id()), a, *tiles)
            else:
                pto.TGET(b, pto.remote(a, 0), *tiles)
        xs, ys = pypto.Tensor(x), pypto.Tensor(y0)
        move(xs, ys)
        want = ref.tput([y0], 0, x)[0] if name == "TPUT" else ref.tget([x], 0)
        assert np.array_equal(ys.numpy(), want), name


@pytest.mark.parametrize("dtype", ["float32", "int32", "int16"])
def test_tput_atomic_add(one_rank, dtype):
    np_dt = np.dtype(dtype)
    x, y0 = _data((16, 64), np_dt, 3), _data((16, 64), np_dt, 4)

    @pypto.kernel
    def add(a, b):
        pto.TPUT(pto.remote(b, 0), a, pto.Tile(pto.Vec, a.dtype, (16, 64)), atomic="AtomicAdd")
    ys = pypto.Tensor(y0)
    add(pypto.Tensor(x), ys)
    assert np.array_equal(ys.numpy(), ref.tput([y0], 0, x, "AtomicAdd")[0])


@pytest.mark.parametrize("op", ["Set", "AtomicAdd"])
def test_tnotify(one_rank, op):
    @pypto.kernel
    def notify(s, v):
        pto.TNOTIFY(pto.remote(s, 0), v, notifyOp=op)
    start = np.array([[7, 9]], np.int32)
    s = pypto.Tensor(start)
    notify(s, 35)
    assert np.array_equal(s.numpy(), ref.tnotify(start, 35, op))


@pytest.mark.parametrize("cmp", CMPS)
def test_twait_returns_when_every_element_holds(one_rank, cmp):
    sig = np.full((2, 3), 5, np.int32) if cmp == "EQ" else np.array([[4, 5, 6], [5, 5, 5]], np.int32)
    value = next(v for v in range(-2, 12) if ref.twait(sig, v, cmp))

    @pypto.kernel
    def wait(s):
        pto.TWAIT(s, value, cmp=cmp)
    wait(pypto.Tensor(sig))                           # returns (a false one is a deadlock report)


def test_ttest_sweeps_a_signal_region(one_rank):
    sig = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.int32)
    got = []

    @pypto.kernel(mode="eager")
    def probe(s):
        region = pto.GlobalTensor(s, (1, 1, 1, 2, 2), (1, 1, 1, 4, 1), 1)     # [[2, 3], [6, 7]]
        for cmp in CMPS:
            for v in range(0, 10):
                got.append(bool(pto.TTEST(region, v, cmp=cmp)))
    probe(pypto.Tensor(sig))
    region = sig[:, 1:3]
    assert got == [ref.twait(region, v, c) for c in CMPS for v in range(0, 10)]


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("name, op", [("TREDUCE", "Sum"), ("TREDUCE", "Max"), ("TREDUCE", "Min"),
                                      ("TGATHER_COMM", None), ("TSCATTER_COMM", None), ("TBROADCAST", None)])
def test_collectives_over_one_rank(one_rank, dtype, name, op):
    np_dt = np.dtype(dtype)
    mine, other0 = _data((32, 64), np_dt, 5), _data((48, 64), np_dt, 6)

    @pypto.kernel
    def coll(m, o):
        g = pto.ParallelGroup(m, pto.rank_num(), 0)
        t = pto.Tile(pto.Vec, m.dtype, (16, 64))
        if name == "TREDUCE":
            pto.TREDUCE(g, o[0:32, :], t, pto.Tile(pto.Vec, m.dtype, (16, 64)), reduceOp=op)
        elif name == "TGATHER_COMM":
            pto.TGATHER_COMM(g, o, t)
        elif name == "TSCATTER_COMM":
            pto.TSCATTER_COMM(g, o, t)
        else:
            pto.TBROADCAST(g, o[0:32, :], t)
    m, o = pypto.Tensor(mine), pypto.Tensor(other0)
    coll(m, o)
    if name == "TREDUCE":
        want = other0.copy()
        want[:32] = ref.treduce([mine], 0, op)
        assert np.array_equal(o.numpy(), want)
    elif name == "TGATHER_COMM":
        assert np.array_equal(o.numpy(), ref.tgather([mine], other0))
    elif name == "TSCATTER_COMM":
        assert np.array_equal(m.numpy(), ref.tscatter(other0[:32], 1)[0])
    else:
        assert np.array_equal(m.numpy(), ref.tbroadcast(other0[:32], 1)[0])
