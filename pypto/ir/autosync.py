"""Auto mode: a kernel that places no tile (no TASSIGN) and sets no flag gets the flags a correct
program needs, so that its emitted C++ is right on the chip.

The hazard checker finds each unordered pair of instructions (the latest earlier access, so
one flag often orders several); a set_flag/wait_flag pair goes between them:
the set right after the earlier statement's outermost enclosing statement in the innermost loop
the two share, the wait right before the later one's. When the earlier one comes later in that
loop's body (iteration i feeds iteration i + 1), the flag is also set once before the loop and
waited for once after it. On a2a3 a dependent vector instruction gets pipe_barrier(PIPE_V). This
repeats until the checker has nothing to say; every inserted statement is marked ``auto``.
Event ids cycle per pipe pair; if that ever leaves a flag unbalanced, the kernel is redone one
hazard at a time, each pair taking the first id that keeps its flags balanced.
"""
from __future__ import annotations

from ..errors import KernelError
from . import hazards
from .nodes import Assign, For, Kernel, Stmt, Sync, walk

MAX_STEPS = 512
MAX_ROUNDS = 16
PRUNE_UP_TO = 48
ORDERING = ("raw", "war", "waw")
FLAG_KINDS = ("deadlock", "double-set", "left-set")


def is_auto(k: Kernel) -> bool:
    """A kernel in auto mode: no flags, barriers or TASSIGN of its own."""
    return not any(isinstance(s, (Sync, Assign)) for s in walk(k.body))


def insert(k: Kernel, soc) -> None:
    """The pass: in auto mode, add the flags and barriers the checker asks for. Each round
    orders every hazard the checker reports (skipping those a flag of the round already orders),
    with event ids cycling per pipe pair; should that leave a flag unbalanced, the kernel is
    redone one hazard at a time, each pair taking the first id that keeps the flags balanced."""
    if not is_auto(k):
        return
    saved = _snapshot(k.body)
    ids: dict[tuple, int] = {}
    pairs: list[list[tuple[list, Stmt]]] = []
    for _ in range(MAX_ROUNDS):
        found = hazards.check(k, soc, strict=True)
        if any(f.kind in FLAG_KINDS for f in found):
            break
        todo = _ordering(found)
        if not todo:
            _prune(k, soc, pairs)
            return
        done: list[tuple] = []
        barriers: set[int] = set()
        for f in todo:
            if f.kind == "barrier":
                if id(f.second) not in barriers:
                    barriers.add(id(f.second))
                    _barrier(k, f.second)
                continue
            src, dst = f.pipes
            if any(q == src and p == dst and a >= f.at[0] and c <= f.at[1] for q, p, a, c in done):
                continue                   # a flag of this round already orders the pair
            ev = ids.get((src, dst), 0)
            ids[(src, dst)] = (ev + 1) % hazards.EVENT_IDS
            pairs.append(_flag(k, f.first, f.second, src, dst, ev))
            done.append((src, dst) + f.at)
    _restore(saved)
    _insert_exact(k, soc)


def _prune(k: Kernel, soc, pairs: list) -> None:
    """Drop each inserted flag pair the others already make redundant (a round inserts the
    flags of all its hazards at once, before it knows what they order together). Kernels with
    many pairs keep them all: each try is one more check of the whole kernel."""
    if len(pairs) > PRUNE_UP_TO:
        return
    for made in pairs:
        before = _snapshot(k.body)
        for where, s in made:
            where.remove(s)
        if any(f.kind in FLAG_KINDS or f.kind in ORDERING for f in hazards.check(k, soc, strict=True)):
            _restore(before)                      # needed after all


def _ordering(found: list) -> list:
    """The findings a flag or a barrier fixes."""
    return [f for f in found if (f.kind in ORDERING or f.kind == "barrier")
            and f.first is not None and f.second is not None]


def _barrier(k: Kernel, before: Stmt) -> None:
    """pipe_barrier(PIPE_V) right before ``before``."""
    body, i = _place(k.body, before)
    body.insert(i, Sync("pipe_barrier", "V", None, None, auto=True))


def _insert_exact(k: Kernel, soc) -> None:
    for _ in range(MAX_STEPS):
        todo = _ordering(hazards.check(k, soc, strict=True))
        if not todo:
            return
        f = todo[0]
        if f.kind == "barrier":
            _barrier(k, f.second)
            continue
        for ev in range(hazards.EVENT_IDS):      # the first id whose flags stay balanced
            made = _flag(k, f.first, f.second, *f.pipes, ev)
            if not any(x.kind in FLAG_KINDS for x in hazards.check(k, soc, strict=True)):
                break
            for where, s in made:
                where.remove(s)
        else:
            raise KernelError(f"auto mode needs more than {hazards.EVENT_IDS} flags from PIPE_{f.pipes[0]} "
                              f"to PIPE_{f.pipes[1]} at once in kernel {k.name}",
                              rule=f"the chip has {hazards.EVENT_IDS} event ids per pipe pair",
                              fix="split the kernel, or synchronise it yourself (manual mode)")
    raise KernelError(f"auto mode could not order kernel {k.name}'s pipes in {MAX_STEPS} steps",
                      rule="auto mode inserts one flag pair per hazard the checker reports",
                      fix="add the flags yourself (manual mode) and run pypto.check(kernel, ...)")


def _snapshot(body: list[Stmt]) -> list[tuple[list, list]]:
    out = [(body, list(body))]
    for s in body:
        if isinstance(s, For):
            out += _snapshot(s.body)
    return out


def _restore(saved: list[tuple[list, list]]) -> None:
    for lst, items in saved:
        lst[:] = items


def _place(body: list[Stmt], s: Stmt) -> tuple[list[Stmt], int]:
    """The statement list holding ``s`` and its index there."""
    for i, x in enumerate(body):
        if x is s:
            return body, i
        if isinstance(x, For):
            found = _place(x.body, s)
            if found[0] is not None:
                return found
    return None, -1


def _loops(body: list[Stmt], s: Stmt, outer: tuple = ()) -> tuple | None:
    """The loops enclosing ``s``, outermost first."""
    for x in body:
        if x is s:
            return outer
        if isinstance(x, For):
            found = _loops(x.body, s, outer + (x,))
            if found is not None:
                return found
    return None


def _flag(k: Kernel, a: Stmt, c: Stmt, src: str, dst: str, ev: int) -> list[tuple[list, Stmt]]:
    """Insert the flag pair ordering ``c`` after ``a``; returns what it inserted, and where."""
    la, lc = _loops(k.body, a), _loops(k.body, c)
    n = 0
    while n < min(len(la), len(lc)) and la[n] is lc[n]:
        n += 1
    loop = la[n - 1] if n else None
    body = loop.body if loop is not None else k.body
    top_a = la[n] if len(la) > n else a
    top_c = lc[n] if len(lc) > n else c
    made = []

    def put(where: list[Stmt], i: int, kind: str) -> None:
        s = Sync(kind, src, dst, ev, auto=True)
        where.insert(i, s)
        made.append((where, s))

    ia = next(i for i, x in enumerate(body) if x is top_a)
    put(body, ia + 1, "set_flag")
    ic = next(i for i, x in enumerate(body) if x is top_c)
    put(body, ic, "wait_flag")
    if ia >= ic and loop is not None:            # iteration i's a orders iteration i + 1's c
        outer, i = _place(k.body, loop)
        put(outer, i, "set_flag")
        put(outer, i + 2, "wait_flag")
    return made
