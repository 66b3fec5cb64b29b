"""Simulated GM allocation when the host cannot back it, and GM alloc/free from many threads."""
from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import pypto
from pypto import errors as E
from pypto.backends.sim import memory as M
from pypto.backends.sim.memory import GM_BASE, SimAllocator

GM_ALIGN = 512
GiB = 1024 ** 3


def _heap_state():
    be = pypto.runtime.current().backend
    st = pypto.stats()
    return list(be.heap.free_list), st.live_tensors, st.live_bytes, len(be.live)


@pytest.fixture
def host_refuses_big_arrays(monkeypatch):
    """numpy raises MemoryError for host arrays of 1 GiB or more, as on a host without the RAM."""
    real = np.empty

    class FakeNumpy:
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def empty(shape, *args, **kwargs):
            n = int(np.prod(shape))
            if n >= GiB:
                raise MemoryError(f"Unable to allocate {n} bytes")
            return real(shape, *args, **kwargs)

    monkeypatch.setattr(M, "np", FakeNumpy())


# -- the host cannot back the simulated GM -----------------------------------------------------

@pytest.mark.usefixtures("session", "host_refuses_big_arrays")
@pytest.mark.parametrize("make", [pypto.empty, pypto.zeros])
def test_the_whole_gm_unbackable_is_a_pto_error_and_later_allocations_work(make):
    """The reported case: all 64 GiB of a2a3 GM at once, on a host that cannot back it."""
    with pytest.raises(E.HostBackingError):
        make((2 ** 34,), pypto.float32)
    st = pypto.stats()
    assert (st.live_tensors, st.live_bytes) == (0, 0)
    t = pypto.Tensor([1.0, 2.0, 3.0])
    assert t.device_ptr == GM_BASE and t.numpy().tolist() == [1.0, 2.0, 3.0]


@pytest.mark.usefixtures("session", "host_refuses_big_arrays")
@pytest.mark.parametrize("make", [pypto.empty, pypto.zeros])
def test_unbackable_allocation_is_a_pto_error_and_leaves_the_heap_unchanged(make):
    keep = pypto.zeros((1000,), pypto.float32)                 # something live before
    before = _heap_state()
    with pytest.raises(E.OutOfDeviceMemoryError) as ei:       # 32 GiB: fits the 64 GiB a2a3 GM
        make((2 ** 33,), pypto.float32)
    err = ei.value
    assert isinstance(err, E.HostBackingError) and isinstance(err, pypto.PtoError)
    msg = str(err)
    assert "host" in msg and "simulated device memory" in msg
    assert err.rule and err.fix
    assert _heap_state() == before                            # nothing reserved, nothing counted
    t = pypto.empty((16,), pypto.float32)                      # and the heap still works
    assert t.device_ptr == GM_BASE + 8 * GM_ALIGN             # right after keep's 4000 B
    t.free()
    assert _heap_state() == before
    keep.free()


@pytest.mark.usefixtures("host_refuses_big_arrays")
def test_many_unbackable_allocations_do_not_leak_address_space(restart):
    restart(backend="sim", sim=pypto.SimOptions(gm_bytes=8 * GiB))
    for _ in range(20):                                       # 20 x 4 GiB > 8 GiB if any leaked
        with pytest.raises(E.HostBackingError):
            pypto.empty((GiB,), pypto.float32)
    st = pypto.stats()
    assert (st.live_tensors, st.live_bytes) == (0, 0)
    assert pypto.runtime.current().backend.heap.free_list == [(GM_BASE, 8 * GiB)]


@pytest.mark.skipif(sys.maxsize <= 2 ** 32, reason="needs a 64-bit address space")
def test_real_host_failure_256_tib(restart):
    """No host can map 256 TiB (beyond a 48-bit address space): numpy's real MemoryError."""
    restart(backend="sim", sim=pypto.SimOptions(gm_bytes=2 ** 50))
    before = _heap_state()
    with pytest.raises(E.HostBackingError):
        pypto.empty((2 ** 48,), pypto.uint8)
    assert _heap_state() == before
    t = pypto.Tensor([1.0, 2.0])
    assert t.device_ptr == GM_BASE and t.numpy().tolist() == [1.0, 2.0]


def test_a_raw_memory_error_from_a_backend_hook_is_rolled_back(session, monkeypatch):
    """Backend.alloc itself turns a MemoryError from _alloc into HostBackingError and undoes
    the address the hook had already reserved."""
    from pypto.backends.sim import backend as B

    def no_host_memory(nbytes):
        raise MemoryError("host out of memory")
    monkeypatch.setattr(B, "host_array", no_host_memory)
    before = _heap_state()
    with pytest.raises(E.HostBackingError) as ei:
        pypto.zeros((4, 4), pypto.float32)
    assert "float32[4, 4]" in str(ei.value)                   # names the operand
    assert _heap_state() == before


def test_transaction_undoes_its_allocations_on_error():
    h = SimAllocator(8 * GM_ALIGN, GM_ALIGN)
    h.alloc(GM_ALIGN)
    saved = list(h.free_list)
    with pytest.raises(RuntimeError):
        with h.transaction():
            h.alloc(2 * GM_ALIGN)
            h.alloc(GM_ALIGN)
            raise RuntimeError("boom")
    assert h.free_list == saved == [(GM_BASE + GM_ALIGN, 7 * GM_ALIGN)]


def test_a_finalizer_free_inside_a_failed_transaction_still_happens():
    """Same-thread frees inside a transaction can only come from finalizers: they are not part
    of the failed call, so the rollback keeps them."""
    h = SimAllocator(8 * GM_ALIGN, GM_ALIGN)
    a = h.alloc(GM_ALIGN)
    with pytest.raises(RuntimeError):
        with h.transaction():
            h.alloc(2 * GM_ALIGN)
            h.free(a, GM_ALIGN)
            raise RuntimeError("boom")
    assert h.free_list == [(GM_BASE, 8 * GM_ALIGN)]


def test_a_free_reentered_during_an_update_is_applied_after_it():
    """A finalizer freeing memory on the same thread mid-alloc (the garbage collector can run
    one anywhere) must not edit the free list under the running alloc."""
    h = SimAllocator(8 * GM_ALIGN, GM_ALIGN)
    a = h.alloc(GM_ALIGN)
    b = h.alloc(GM_ALIGN)
    with h.transaction():                                     # stands for "inside an alloc"
        h.free(a, GM_ALIGN)
        assert h.free_list == [(GM_BASE + 2 * GM_ALIGN, 6 * GM_ALIGN)]     # deferred
    assert h.free_list == [(GM_BASE, GM_ALIGN), (GM_BASE + 2 * GM_ALIGN, 6 * GM_ALIGN)]
    h.free(b, GM_ALIGN)
    assert h.free_list == [(GM_BASE, 8 * GM_ALIGN)]


# -- threads ---------------------------------------------------------------------------------------

@pytest.fixture
def tiny_switch_interval():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)                               # switch threads as often as possible
    yield
    sys.setswitchinterval(old)


@pytest.mark.usefixtures("tiny_switch_interval")
def test_allocator_from_many_threads_never_overlaps_and_coalesces_back():
    cap, threads, rounds = 4096 * GM_ALIGN, 8, 400
    h = SimAllocator(cap, GM_ALIGN)
    owned: dict[int, int] = {}                                # addr -> size, guarded by `guard`
    guard = threading.Lock()
    problems: list[str] = []
    start = threading.Barrier(threads)

    def worker(seed):
        rng = np.random.default_rng(seed)
        mine = []
        start.wait()
        for _ in range(rounds):
            if mine and rng.random() < 0.5:
                addr, size = mine.pop(int(rng.integers(len(mine))))
                with guard:
                    del owned[addr]
                h.free(addr, size)
            else:
                size = int(rng.integers(1, 4)) * GM_ALIGN
                addr = h.alloc(size)
                with guard:
                    for other, osize in owned.items():
                        if addr < other + osize and other < addr + size:
                            problems.append(f"{addr:#x}+{size} overlaps {other:#x}+{osize}")
                    owned[addr] = size
                mine.append((addr, size))
        for addr, size in mine:
            with guard:
                del owned[addr]
            h.free(addr, size)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert problems == []
    assert h.free_list == [(GM_BASE, cap)]


@pytest.mark.usefixtures("tiny_switch_interval")
def test_tensors_from_many_threads_keep_stats_and_heap_consistent(session):
    threads, rounds = 8, 150
    errors: list[BaseException] = []
    start = threading.Barrier(threads)
    base = pypto.stats()

    def worker(i):
        try:
            start.wait()
            for r in range(rounds):
                t = pypto.Tensor(np.full(8 + (r % 5), i, np.int32))
                assert t.numpy().tolist() == [i] * (8 + (r % 5))   # nobody else wrote here
                t.free()
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    st = pypto.stats()
    assert (st.live_tensors, st.live_bytes) == (base.live_tensors, base.live_bytes)
    assert st.h2d_copies - base.h2d_copies == threads * rounds
    assert st.d2h_copies - base.d2h_copies == threads * rounds
    be = pypto.runtime.current().backend
    assert be.heap.free_list == [(GM_BASE, be.gm_capacity)]


def test_two_threads_freeing_one_tensor_free_it_exactly_once(session, monkeypatch):
    """check-then-free must be atomic: one free() wins, the other gets UseAfterFreeError, and the
    heap and the accounting see a single free. The backend's free hook is made slow (as a real
    device's free call can be) so that both threads are inside free() at the same time."""
    import time
    be = pypto.runtime.current().backend
    hook = type(be)._free

    def slow_free(self, buf):
        time.sleep(0.002)                                     # releases the GIL
        hook(self, buf)
    monkeypatch.setattr(type(be), "_free", slow_free)
    for trial in range(20):
        t = pypto.empty((64,), pypto.float32)
        start = threading.Barrier(2)
        outcomes: list[str] = []

        def free_it():
            start.wait()
            try:
                t.free()
                outcomes.append("freed")
            except E.UseAfterFreeError:
                outcomes.append("already freed")
            except BaseException as e:  # noqa: BLE001 - reported below
                outcomes.append(repr(e))

        ts = [threading.Thread(target=free_it) for _ in range(2)]
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        assert sorted(outcomes) == ["already freed", "freed"], f"trial {trial}: {outcomes}"
        st = pypto.stats()
        assert (st.live_tensors, st.live_bytes) == (0, 0), f"trial {trial}: {st}"
        assert be.heap.free_list == [(GM_BASE, be.gm_capacity)], f"trial {trial}"
