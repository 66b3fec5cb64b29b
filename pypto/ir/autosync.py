"""Auto mode: a kernel that places no tile (no TASSIGN) and sets no flag gets the flags a correct
program needs, so that its emitted C++ is right on the chip.

The hazard checker finds the first unordered pair of instructions (the latest earlier access, so
one flag often orders several); a set_flag/wait_flag pair with a free event id goes between them:
the set right after the earlier statement's outermost enclosing statement in the innermost loop
the two share, the wait right before the later one's. When the earlier one comes later in that
loop's body (iteration i feeds iteration i + 1), the flag is also set once before the loop and
waited for once after it. On a2a3 a dependent vector instruction gets pipe_barrier(PIPE_V). This
repeats until the checker has nothing to say; every inserted statement is marked ``auto``.
"""
from __future__ import annotations

from ..errors import KernelError
from . import hazards
from .nodes import Assign, For, Kernel, Stmt, Sync, walk

MAX_STEPS = 512
FLAG_KINDS = ("deadlock", "double-set", "left-set")


def is_auto(k: Kernel) -> bool:
    """A kernel in auto mode: no flags, barriers or TASSIGN of its own."""
    return not any(isinstance(s, (Sync, Assign)) for s in walk(k.body))


def insert(k: Kernel, soc) -> None:
    """The pass: in auto mode, add the flags and barriers the checker asks for."""
    if not is_auto(k):
        return
    for _ in range(MAX_STEPS):
        todo = [f for f in hazards.check(k, soc) if f.kind in ("raw", "war", "waw", "barrier")
                and f.first is not None and f.second is not None]
        if not todo:
            return
        f = todo[0]
        if f.kind == "barrier":
            body, i = _place(k.body, f.second)
            body.insert(i, Sync("pipe_barrier", "V", None, None, auto=True))
        else:
            _flag(k, soc, f.first, f.second, *f.pipes)
    raise KernelError(f"auto mode could not order kernel {k.name}'s pipes in {MAX_STEPS} steps",
                      rule="auto mode inserts one flag pair per hazard the checker reports",
                      fix="add the flags yourself (manual mode) and run pypto.check(kernel, ...)")


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


def _flag(k: Kernel, soc, a: Stmt, c: Stmt, src: str, dst: str) -> None:
    la, lc = _loops(k.body, a), _loops(k.body, c)
    n = 0
    while n < min(len(la), len(lc)) and la[n] is lc[n]:
        n += 1
    loop = la[n - 1] if n else None
    body = loop.body if loop is not None else k.body
    top_a = la[n] if len(la) > n else a
    top_c = lc[n] if len(lc) > n else c
    for ev in range(hazards.EVENT_IDS):          # the first id whose flags stay balanced
        made = []

        def put(where: list[Stmt], i: int, kind: str) -> None:
            s = Sync(kind, src, dst, ev, auto=True)
            where.insert(i, s)
            made.append((where, s))

        ia = next(i for i, x in enumerate(body) if x is top_a)
        put(body, ia + 1, "set_flag")
        ic = next(i for i, x in enumerate(body) if x is top_c)
        put(body, ic, "wait_flag")
        if ia >= ic and loop is not None:        # iteration i's a orders iteration i + 1's c
            outer, i = _place(k.body, loop)
            put(outer, i, "set_flag")
            put(outer, i + 2, "wait_flag")
        if not any(f.kind in FLAG_KINDS for f in hazards.check(k, soc)):
            return
        for where, s in made:
            where.remove(s)
    raise KernelError(f"auto mode needs more than {hazards.EVENT_IDS} flags from PIPE_{src} to PIPE_{dst} "
                      f"at once in kernel {k.name}",
                      rule=f"the chip has {hazards.EVENT_IDS} event ids per pipe pair",
                      fix="split the kernel, or synchronise it yourself (manual mode)")
