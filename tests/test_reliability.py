"""Reliability at small scale (the full-size figures: benchmarks/reliability.py, docs/reliability.md).

* A concurrency soak: 8 threads of mixed launches (library instructions with device and host
  operands, a cached kernel, eager kernels, kernel objects made per launch, in both modes), every
  result checked against numpy.
* Four processes compiling the same kernels into one empty cache directory at once; a fifth loads
  them all without compiling; after every cached file is truncated, a sixth compiles again and
  is right (a damaged entry is a cache miss, never a crash or a wrong result).
* Leaks: tensor create/free cycles and launches leave live device bytes, gc-tracked Python
  objects and open files where they were.
* Device memory exhaustion is an OutOfDeviceMemoryError, and the heap works afterwards.
The slow tier runs the soak and the leak check at the sizes the docs report.
"""
from __future__ import annotations

import numpy as np
import pytest

import pypto
from pypto.errors import OutOfDeviceMemoryError
from pypto.testing import reliability as R


@pytest.mark.parametrize("threads,per_thread", [
    (8, 60),
    pytest.param(8, 1000, marks=pytest.mark.slow),
])
def test_concurrent_mixed_launches_all_right(threads, per_thread, session):
    report = R.soak(threads, per_thread, seed=threads + per_thread)
    assert not report.errors, report.errors[:5]
    assert report.wrong == 0
    assert sum(report.by_kind.values()) == threads * per_thread
    assert all(report.by_kind.values()), report.by_kind       # every kind ran
    assert pypto.stats().live_bytes == 0                       # every tensor of the soak freed


def test_processes_racing_on_one_cache_never_load_a_bad_entry():
    report = R.cache_race(processes=4)
    assert not report.failed, report.failed
    assert report.wrong == 0
    assert report.reload_compiles == 0, "a process after the race compiled again"
    assert report.reload_loads > 0
    assert report.damaged_recovered


@pytest.mark.parametrize("cycles,launches", [
    (5_000, 1_000),
    pytest.param(100_000, 10_000, marks=pytest.mark.slow),
])
def test_no_leaks(cycles, launches, session):
    report = R.leak_check(cycles, launches)
    g = report.growth()
    assert g["live_bytes"] == 0
    assert g["open_files"] == 0
    assert g["objects"] <= 100, f"{g['objects']} Python objects more after {cycles + launches} calls"


def test_device_memory_exhaustion_is_an_error_and_the_heap_recovers(fresh):
    pypto.init(sim=pypto.SimOptions(gm_bytes=16 << 20))
    held = []
    with pytest.raises(OutOfDeviceMemoryError):
        for _ in range(100):
            held.append(pypto.zeros((1 << 18,), pypto.float32))     # 1 MiB each
    assert len(held) == 16                                          # the whole GM, then no more
    with pytest.raises(OutOfDeviceMemoryError):                      # a failing copy leaks nothing
        pypto.Tensor(np.ones(1 << 20, np.float32))
    assert pypto.stats().live_bytes == len(held) << 20
    for t in held[::2]:
        t.free()
    small = [pypto.Tensor(np.full(1 << 17, i, np.float32)) for i in range(len(held[::2]) * 2)]
    assert all((t.numpy() == i).all() for i, t in enumerate(small))
    for t in held[1::2] + small:
        t.free()
    assert pypto.stats().live_bytes == 0
    big = pypto.zeros((15 << 18,), pypto.float32)                    # 15 MiB in one piece again
    assert big.numpy().sum() == 0
