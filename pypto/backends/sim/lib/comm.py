"""The communication instructions (5.10) on the simulator: the data movers stage through their UB
tiles chunk by chunk as the NPU's pto::comm code does, and reach other ranks through the world
(world.py: MPI one-sided operations on the ranks' GM windows).

numba code cannot call MPI, so each instruction is a numba function whose body is one
``objmode`` block (the documented route, comm-semantics 4.4 option B): compiled kernels and the
eager executor call it like any other implementation, and it runs the Python below with the GIL
held. An error inside is parked in world.py and its ticket written into the fault record
(errcodes.COMM), so it reaches the user as the PtoError it is, located at the instruction.

A view is (storage array, element offset, shape, strides) of a kernel tensor; ``peer`` -1 means
this rank. A tile is (storage array, valid rows, valid cols, layout descriptor).
"""
from __future__ import annotations

import time

import numpy as np
from numba import njit, objmode

from ... import errcodes as E
from ...faults import keep_error
from .. import world as W
from ....errors import CommDeadlockError, CommError, PtoError

_J = dict(cache=True)
SUM, MAX, MIN = 0, 1, 2                 # ReduceOp
POLL_DEADLOCK = 0.25                    # seconds between a waiting rank's deadlock checks
SPIN = 100                              # polls before TWAIT starts sleeping between them


# -- Python side ----------------------------------------------------------------------------------
def _run(err, fn, *args) -> None:
    """Run one instruction (its scalars, the last argument, as a list); park its error and record
    the ticket."""
    try:
        fn(*args[:-1], args[-1].tolist())
    except PtoError as e:
        err[0] = E.COMM
        err[1] = keep_error(e)
    except Exception as e:            # noqa: BLE001  (an MPI failure becomes the user's PtoError)
        err[0] = E.COMM
        err[1] = keep_error(CommError(
            f"MPI failed: {type(e).__name__}: {e}",
            rule="communication instructions are one-sided MPI operations on the ranks' GM windows",
            fix="check that every rank allocated the same tensors in the same order (a peer's "
                "buffer is named by this rank's offset)"))


def _peer(w, peer: int) -> int:
    return w.rank if peer < 0 else int(peer)


def _tile_rows(tile, rows: int, cols: int) -> np.ndarray:
    """The first rows x cols of a staging tile as a 2-D view of its storage (staging tiles are
    row-major Vec tiles: element (r, c) at r * row_stride + c, layout descriptor (1, 1, BRS, 1, 0, 0))."""
    arr, stride = tile[0], int(tile[3][2])
    return np.lib.stride_tricks.as_strided(arr, (rows, cols), (stride * arr.itemsize, arr.itemsize))


def _to_tile(tile, data: np.ndarray) -> None:
    """A chunk lands in the staging tile (rows of the chunk's leading dims x its last dim)."""
    rows = int(np.prod(data.shape[:-1]))
    _tile_rows(tile, rows, data.shape[-1])[...] = data.reshape(rows, data.shape[-1])


def _chunks(what: str, shape, tile, dynamic: bool):
    """(index of the chunk's first element, chunk shape) in the order the NPU moves them: the
    whole view when it fits the tile, else D0..D2 looped and D3 x D4 cut into tile-sized pieces
    (a static tile must divide them; a dynamic one takes a ragged last piece)."""
    d0, d1, d2, d3, d4 = (int(s) for s in shape)
    rows, cols = int(tile[1]), int(tile[2])
    if rows < 1 or cols < 1:
        raise CommError(f"{what}: the staging tile's valid region is {rows} x {cols}",
                        rule="data move through the staging tile's valid region, which is not empty",
                        fix="give the staging tile a valid region of at least one element")
    if d0 * d1 * d2 * d3 <= rows and d4 <= cols:
        yield (0, 0, 0, 0, 0), (d0, d1, d2, d3, d4)
        return
    if not dynamic and (d3 % rows or d4 % cols):
        raise CommError(f"{what}: a {d3} x {d4} view does not split into {rows} x {cols} tiles",
                        rule="a staging tile with a static valid region must divide the view's last "
                             "two dimensions (pto::comm asserts it; a dynamic tile takes a ragged tail)",
                        fix="declare the staging tile with valid=pto.DYNAMIC, or pick a tile size that "
                            "divides the view")
    for i0 in range(d0):
        for i1 in range(d1):
            for i2 in range(d2):
                for r in range(0, d3, rows):
                    for c in range(0, d4, cols):
                        yield (i0, i1, i2, r, c), (1, 1, 1, min(rows, d3 - r), min(cols, d4 - c))


def _at(view, idx) -> int:
    return int(view[1]) + sum(int(i) * int(t) for i, t in zip(idx, view[3]))


def _read_local(view, idx, n) -> np.ndarray:
    """A chunk of a local view, copied (a put to the same window bytes must not alias them)."""
    return np.array(W.strided(view[0], _at(view, idx), n, view[3]), copy=True, order="C")


def _write_local(view, idx, n, data) -> None:
    W.strided(view[0], _at(view, idx), n, view[3])[...] = data.reshape(n)


def tput_py(dst, src, peer, tiles, dynamic, atomic, dcode) -> None:
    w = W.current()
    peer = _peer(w, peer)
    dt = W.element_type(dcode)
    for k, (idx, n) in enumerate(_chunks("TPUT", src[2], tiles[0], dynamic)):
        data = _read_local(src, idx, n)
        _to_tile(tiles[k % len(tiles)], data)
        if atomic:
            w.add(peer, dst[0], _at(dst, idx), n, dst[3], data, dt)
        else:
            w.put(peer, dst[0], _at(dst, idx), n, dst[3], data)
    w.flush(peer)


def tget_py(dst, src, peer, tiles, dynamic) -> None:
    w = W.current()
    peer = _peer(w, peer)
    for k, (idx, n) in enumerate(_chunks("TGET", src[2], tiles[0], dynamic)):
        data = w.get(peer, src[0], _at(src, idx), n, src[3])
        _to_tile(tiles[k % len(tiles)], data)
        _write_local(dst, idx, n, data)


def tnotify_py(sig, peer, value, add) -> None:
    w = W.current()
    w.signal(_peer(w, peer), sig[0], int(sig[1]), int(value), bool(add))


def _signal_values(w, sig) -> np.ndarray:
    return w.read(w.rank, sig[0], int(sig[1]), sig[2], sig[3])


def ttest_py(sig, value, cmp, result) -> None:
    w = W.current()
    result[0] = int(W.compare(_signal_values(w, sig), int(cmp), int(value)))


def twait_py(sig, value, cmp) -> None:
    w = W.current()
    cmp, value = int(cmp), int(value)
    if W.compare(_signal_values(w, sig), cmp, value):
        w.sync()
        return
    w.enter_wait()
    published = False          # the registry hears of a wait only once it lasts (no traffic for short ones)
    polls, delay, next_check = 0, 1e-5, time.monotonic() + POLL_DEADLOCK
    try:
        while not W.compare(_signal_values(w, sig), cmp, value):
            polls += 1
            if polls > SPIN:                        # back off: oversubscribed ranks share cores
                time.sleep(delay)
                delay = min(delay * 2, 2e-3)
            if time.monotonic() >= next_check:
                report = w.deadlock()
                if report is not None:
                    raise CommDeadlockError(
                        "TWAIT can never return: no rank can change a signal any more\n    " +
                        report.replace("\n", "\n    "),
                        rule="TWAIT blocks until its signal satisfies the condition; on the NPU it "
                             "polls forever (release builds have no timeout)",
                        fix="make sure some rank notifies this signal with a value that satisfies "
                            "the condition (TNOTIFY after the data, with a barrier between), or "
                            "wait for a value the notifiers reach (GE rather than EQ on a counter)")
                next_check = time.monotonic() + POLL_DEADLOCK
                if not published and w.blocked():   # every block of this rank waits now
                    w.wait_state(sig[0], int(sig[1]), sig[2], sig[3], cmp, value)
                    published = True
        w.sync()                                    # the data that came with the signal, visible
    finally:
        w.leave_wait()
        if published:
            w.running()


def _root(what: str, w, root: int, nranks: int) -> None:
    if nranks > w.size:
        raise CommError(f"{what}: the group has {nranks} ranks but the world has {w.size}",
                        rule="a ParallelGroup's ranks are devices of the world",
                        fix="pass pto.rank_num() (or fewer) as nranks")
    if root != w.rank:
        raise CommError(f"{what} runs on rank {w.rank}, but the group's root is rank {root}",
                        rule="collectives are one-sided: only the root calls them (on another rank "
                             "the NPU's behaviour is undefined)",
                        fix=f"call {what} under a rank test, e.g. only in the root's kernel, or make "
                            "the caller the root")


def _rank_blocks(what: str, group, nranks, root, local, tiles, dynamic):
    """TGATHER_COMM / TSCATTER_COMM: rank r's member pairs with rows r*H .. r*H+H-1 (dimension 3)
    of the root's local tensor, ranks ascending. Yields (rank, chunk index, chunk shape, the local
    block's view, the staging tile)."""
    _root(what, W.current(), root, nranks)
    h = int(group[2][3])
    if int(local[2][3]) < nranks * h:
        raise CommError(f"{what}: the local tensor has {int(local[2][3])} rows in dimension 3, "
                        f"fewer than {nranks} ranks x {h}",
                        rule="the root's tensor holds one block of rows per rank",
                        fix=f"give it at least {nranks * h} rows")
    k = 0
    for r in range(nranks):
        block = (local[0], int(local[1]) + r * h * int(local[3][3]), group[2], local[3])
        for idx, n in _chunks(what, group[2], tiles[0], dynamic):
            yield r, idx, n, block, tiles[k % len(tiles)]
            k += 1


def tgather_py(group, nranks, root, dst, tiles, dynamic) -> None:
    """dst rows r*H .. = rank r's member."""
    w = W.current()
    for r, idx, n, block, tile in _rank_blocks("TGATHER_COMM", group, nranks, root, dst, tiles, dynamic):
        data = w.get(r, group[0], _at(group, idx), n, group[3])
        _to_tile(tile, data)
        _write_local(block, idx, n, data)


def tscatter_py(group, nranks, root, src, tiles, dynamic) -> None:
    """rank r's member = src rows r*H .."""
    w = W.current()
    for r, idx, n, block, tile in _rank_blocks("TSCATTER_COMM", group, nranks, root, src, tiles, dynamic):
        data = _read_local(block, idx, n)
        _to_tile(tile, data)
        w.put(r, group[0], _at(group, idx), n, group[3], data)
    for r in range(nranks):
        w.flush(r)


def tbroadcast_py(group, nranks, root, src, tiles, dynamic) -> None:
    """every member (the root's too) = src; each chunk loaded once, stored to ranks 0..n-1."""
    w = W.current()
    _root("TBROADCAST", w, root, nranks)
    for k, (idx, n) in enumerate(_chunks("TBROADCAST", src[2], tiles[0], dynamic)):
        data = _read_local(src, idx, n)
        _to_tile(tiles[k % len(tiles)], data)
        for r in range(nranks):
            w.put(r, group[0], _at(group, idx), n, group[3], data)
    for r in range(nranks):
        w.flush(r)


def combine(op: int, acc: np.ndarray, x: np.ndarray, dt) -> np.ndarray:
    """acc op x in the element type (storage arrays): TADD / TMAX / TMIN of one rank's chunk."""
    if op == SUM:
        return W.add_values(acc, x, dt)
    a = acc.view(dt.np) if dt.is_float else acc
    b = x.view(dt.np) if dt.is_float else x
    out = np.maximum(a, b) if op == MAX else np.minimum(a, b)
    return out.astype(a.dtype).view(acc.dtype)


def treduce_py(group, nranks, root, dst, acc, recv, pong, two, dynamic, op, dcode) -> None:
    """Per chunk: acc = the root's, then acc = acc op rank r's for r ascending (r != root)."""
    w = W.current()
    _root("TREDUCE", w, root, nranks)
    dt = W.element_type(dcode)
    for idx, n in _chunks("TREDUCE", group[2], acc, dynamic):
        total = w.get(root, group[0], _at(group, idx), n, group[3])
        _to_tile(acc, total)
        k = 0
        for r in range(nranks):
            if r == root:
                continue
            part = w.get(r, group[0], _at(group, idx), n, group[3])
            _to_tile(pong if two and k % 2 else recv, part)
            total = combine(op, total, part, dt)
            _to_tile(acc, total)
            k += 1
        _write_local(dst, idx, n, total)


# -- numba side: one objmode call per instruction ----------------------------------------------------
# numba compiles an objmode block when it first runs, in every process (its object-mode code is
# not cached), once per argument types; boxing each scalar and building the nested tuples there
# was most of that (1.2 s per signature, measured, against 0.56 s with the scalars passed as one
# int64 array). So the scalars travel in one array, and the Python side below rebuilds the call.
def _view(gm, v, at):
    """(array, offset, shape, strides) of a GM view whose 11 scalars start at v[at]."""
    return gm, v[at], tuple(v[at + 1:at + 6]), tuple(v[at + 6:at + 11])


def _tiles(p, play, q, qlay, pr, pc, qr, qc, two):
    return ((p, pr, pc, play), (q, qr, qc, qlay)) if two else ((p, pr, pc, play),)


def _tput(d_gm, s_gm, p, play, q, qlay, v):
    tput_py(_view(d_gm, v, 0), _view(s_gm, v, 12), v[11], _tiles(p, play, q, qlay, *v[23:28]),
            bool(v[28]), bool(v[29]), v[30])


def _tget(d_gm, s_gm, p, play, q, qlay, v):
    tget_py(_view(d_gm, v, 0), _view(s_gm, v, 11), v[22], _tiles(p, play, q, qlay, *v[23:28]),
            bool(v[28]))


def _tnotify(g, v):
    tnotify_py(_view(g, v, 0), v[11], v[12], bool(v[13]))


def _twait(g, v):
    twait_py(_view(g, v, 0), v[11], v[12])


def _ttest(g, result, v):
    ttest_py(_view(g, v, 0), v[11], v[12], result)


def _collective(g_gm, x_gm, p, play, q, qlay, v):
    _COLLECTIVES[v[0]](_view(g_gm, v, 1), v[12], v[13], _view(x_gm, v, 14),
                       _tiles(p, play, q, qlay, *v[25:30]), bool(v[30]))


def _treduce(g_gm, x_gm, a, alay, r, rlay, q, qlay, v):
    treduce_py(_view(g_gm, v, 0), v[11], v[12], _view(x_gm, v, 13), (a, v[24], v[25], alay),
               (r, v[26], v[27], rlay), (q, v[28], v[29], qlay), bool(v[30]), bool(v[31]), v[32],
               v[33])


@njit(**_J)
def tput(d_gm, d_off, d0, d1, d2, d3, d4, e0, e1, e2, e3, e4, peer,
         s_gm, s_off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4,
         p, pr, pc, play, q, qr, qc, qlay, two, dynamic, atomic, dcode, err):
    v = np.array((d_off, d0, d1, d2, d3, d4, e0, e1, e2, e3, e4, peer,
                  s_off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4,
                  pr, pc, qr, qc, two, dynamic, atomic, dcode), np.int64)
    with objmode():
        _run(err, _tput, d_gm, s_gm, p, play, q, qlay, v)


@njit(**_J)
def tget(d_gm, d_off, d0, d1, d2, d3, d4, e0, e1, e2, e3, e4,
         s_gm, s_off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, peer,
         p, pr, pc, play, q, qr, qc, qlay, two, dynamic, err):
    v = np.array((d_off, d0, d1, d2, d3, d4, e0, e1, e2, e3, e4,
                  s_off, s0, s1, s2, s3, s4, t0, t1, t2, t3, t4, peer,
                  pr, pc, qr, qc, two, dynamic), np.int64)
    with objmode():
        _run(err, _tget, d_gm, s_gm, p, play, q, qlay, v)


@njit(**_J)
def tnotify(g, off, d0, d1, d2, d3, d4, e0, e1, e2, e3, e4, peer, value, add, err):
    v = np.array((off, d0, d1, d2, d3, d4, e0, e1, e2, e3, e4, peer, value, add), np.int64)
    with objmode():
        _run(err, _tnotify, g, v)


@njit(**_J)
def twait(g, off, d0, d1, d2, d3, d4, e0, e1, e2, e3, e4, value, cmp, err):
    v = np.array((off, d0, d1, d2, d3, d4, e0, e1, e2, e3, e4, value, cmp), np.int64)
    with objmode():
        _run(err, _twait, g, v)


@njit(**_J)
def ttest(g, off, d0, d1, d2, d3, d4, e0, e1, e2, e3, e4, value, cmp, result, err):
    v = np.array((off, d0, d1, d2, d3, d4, e0, e1, e2, e3, e4, value, cmp), np.int64)
    with objmode():
        _run(err, _ttest, g, result, v)


@njit(**_J)
def collective(kind, g_gm, g_off, g0, g1, g2, g3, g4, h0, h1, h2, h3, h4, nranks, root,
               x_gm, x_off, x0, x1, x2, x3, x4, y0, y1, y2, y3, y4,
               p, pr, pc, play, q, qr, qc, qlay, two, dynamic, err):
    """TGATHER_COMM (kind 0), TSCATTER_COMM (1), TBROADCAST (2): the group, the root's local
    tensor, the staging tile(s)."""
    v = np.array((kind, g_off, g0, g1, g2, g3, g4, h0, h1, h2, h3, h4, nranks, root,
                  x_off, x0, x1, x2, x3, x4, y0, y1, y2, y3, y4,
                  pr, pc, qr, qc, two, dynamic), np.int64)
    with objmode():
        _run(err, _collective, g_gm, x_gm, p, play, q, qlay, v)


@njit(**_J)
def treduce(g_gm, g_off, g0, g1, g2, g3, g4, h0, h1, h2, h3, h4, nranks, root,
            x_gm, x_off, x0, x1, x2, x3, x4, y0, y1, y2, y3, y4,
            a, ar, ac, alay, r, rr, rc, rlay, q, qr, qc, qlay, two, dynamic, op, dcode, err):
    v = np.array((g_off, g0, g1, g2, g3, g4, h0, h1, h2, h3, h4, nranks, root,
                  x_off, x0, x1, x2, x3, x4, y0, y1, y2, y3, y4,
                  ar, ac, rr, rc, qr, qc, two, dynamic, op, dcode), np.int64)
    with objmode():
        _run(err, _treduce, g_gm, x_gm, a, alay, r, rlay, q, qlay, v)


_COLLECTIVES = (tgather_py, tscatter_py, tbroadcast_py)

__all__ = ["tput", "tget", "tnotify", "twait", "ttest", "collective", "treduce", "combine"]
