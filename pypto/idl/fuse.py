"""Fusion: each run of vector steps of an operator's plan becomes one kernel over tiles held in UB.

Two shapes of fused kernel:

* ``rows``: a 2-D [M, N] computation with row vectors [M, 1], column vectors [1, N] (or [N]) and
  row reductions. It walks R rows at a time, each row whole in a tile of W >= N columns; row
  vectors are DN (R, 1) tiles, column vectors (1, W) tiles loaded once per block.
* ``flat``: every value of one shape (any rank): it walks the flattened elements C at a time.

Values inside a fused kernel never touch GM: inputs are loaded once per chunk, outputs stored
once. A tile is reused once its value is dead, in place unless the instruction's unit says dst
must not share its sources' storage on this SoC (a2a3's TRECIP and float TDIVS) or it reduces,
so a chain needs only as many tiles as it has live values. R and W (or C) are chosen at launch, the
largest that fit the SoC's UB, and tails are valid regions. ``@`` (the cube) and column
reductions (they combine rows held by different blocks) stay library kernels between fused ones.
A run that cannot fit UB (a row too wide) runs as its library steps instead.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import dtypes as D
from .. import isa
from ..ir import registry
from .check import broadcast

ROWS = (64, 32, 16, 8)         # row-block heights tried, tallest first
FLAT_MAX = 8192                # elements per flat chunk at most (32 KiB of f32 per tile)


@dataclass
class Fused:
    """One fused kernel: plan steps computed over tiles, reading ``inputs`` from and writing
    ``outputs`` to GM (value ids of the plan)."""
    steps: list
    mode: str                          # "rows" or "flat"
    full: tuple                        # the symbolic shape the kernel walks
    inputs: list[int]
    outputs: list[int]
    kinds: dict[int, str]              # value -> "full", "row" or "col"
    slots: dict[int, tuple]            # value -> (kind, dtype, index): the tile holding it
    counts: dict[tuple, int]           # (kind, dtype) -> tiles of that kind
    scratch: tuple                     # dtypes needing a reduction scratch tile
    name: str

    def key(self) -> tuple:
        """Everything the kernel's code depends on except the tile sizes (its cache key)."""
        steps = tuple((s.insn, tuple(self.slots[i] for i in s.srcs), self.slots[s.dst],
                       s.scalar is not None, tuple(sorted(s.params.items()))) for s in self.steps)
        return (self.mode, steps, tuple(self.slots[v] for v in self.inputs),
                tuple(self.slots[v] for v in self.outputs),
                tuple(sorted(self.counts.items(), key=str)), self.scratch, self.name)

    def sizes(self, env: dict, soc) -> tuple | None:
        """(R, W) for rows or (1, C) for flat: the largest tiles that fit UB; None if none does."""
        budget = soc.ub_scratch[0] if soc.ub_scratch else soc.space("Vec").capacity
        if self.mode == "flat":
            per = sum(n * dt.itemsize for (_, dt), n in self.counts.items())
            c = FLAT_MAX
            while c > 32 and c * per > budget:
                c //= 2
            return (1, c) if c * per <= budget else None
        w = _width(_size(self.full[1], env))
        row_dts = [dt for (kind, dt) in self.counts if kind == "row"]
        for r in ROWS:
            if any(r * dt.itemsize % 32 for dt in row_dts):
                continue
            used = sum(cnt * _tile_bytes(kind, dt, r, w) for (kind, dt), cnt in self.counts.items())
            used += sum(r * w * dt.itemsize for dt in self.scratch)
            if used <= budget:
                return r, w
        return None

    def reduces(self) -> bool:
        """Whether a step reduces rows (it then needs whole rows in UB: no library fallback)."""
        return any(_scratch(s.insn) for s in self.steps)

    def widest(self, env: dict, soc) -> int:
        """The widest row (elements) whose tiles fit UB, other sizes as in env."""
        n = 32
        while n < 1 << 24:
            wider = n * 2 if n < 2048 else n + 1024
            if not self.sizes({**env, self.full[1]: wider} if isinstance(self.full[1], str) else env, soc):
                break
            n = wider
        return n

    def text(self, vname) -> str:
        """One line: the kernel, its mode, its tiles, what it reads and writes (vname names values)."""
        ins = ", ".join(vname(v) for v in self.inputs)
        outs = ", ".join(vname(v) for v in self.outputs)
        tiles = sum(self.counts.values()) + len(self.scratch)
        return (f"kernel {self.name}: {self.mode}, {len(self.steps)} steps over {tiles} UB tiles; "
                f"reads {ins}; writes {outs}")


def _width(n: int) -> int:
    """Tile columns for rows of n elements: a power of two up to 2048, then a multiple of 1024
    (each width is one compiled kernel; this keeps their number small)."""
    w = 32
    while w < n and w < 2048:
        w *= 2
    return w if w >= n else -(-n // 1024) * 1024


def _tile_bytes(kind: str, dt: D.DType, r: int, w: int) -> int:
    if kind == "full":
        return r * w * dt.itemsize
    if kind == "row":
        return -(-r * dt.itemsize // 32) * 32
    return w * dt.itemsize


def _size(d, env: dict) -> int:
    return d if isinstance(d, int) else env[d]


# -- grouping -------------------------------------------------------------------------------------

def _vector(step, values) -> bool:
    """A step a fused kernel can compute: a vector-pipe instruction that does not combine rows."""
    if isa.lookup(step.insn).pipe != "V":
        return False
    dst = values[step.dst].shape
    return not any(len(values[i].shape) == 2 and len(dst) == 2 and dst[0] == 1 and values[i].shape[0] != 1
                   for i in step.srcs)


def _scratch(insn: str) -> bool:
    """Whether the instruction takes a scratch tile (a row reduction's ``tmp``)."""
    return any(o.name == "tmp" for o in isa.lookup(insn).operands)


def _kind(shape: tuple, full: tuple) -> str | None:
    if tuple(shape) == tuple(full):
        return "full"
    if len(full) != 2:
        return None
    if tuple(shape) == (full[0], 1):
        return "row"
    if tuple(shape) in ((1, full[1]), (full[1],)):
        return "col"
    return None


def _fit(run: list, values, later: set[int], plan_outputs: set[int], name: str, soc) -> Fused | None:
    """The fused kernel of a run of vector steps, or None if its shapes do not make one."""
    made = {s.dst for s in run}
    used = [v for s in run for v in (*s.srcs, s.dst)]
    shapes = {tuple(values[v].shape) for v in used}
    if len(shapes) == 1:
        mode, full = "flat", shapes.pop()
    else:
        full = None
        for s in shapes:
            full = s if full is None else broadcast(full, s)
            if full is None:
                return None
        mode = "rows"
    kinds = {}
    for v in used:
        k = "full" if mode == "flat" else _kind(values[v].shape, full)
        if k is None:
            return None
        kinds[v] = k
    inputs = list(dict.fromkeys(v for s in run for v in s.srcs if v not in made))
    outputs = [s.dst for s in run if s.dst in later or s.dst in plan_outputs]
    if mode == "rows" and (len(full) != 2 or any(kinds[v] == "col" for v in outputs)
                           or not any(kinds[v] == "full" for v in inputs + outputs)):
        return None
    last = {}
    for k, s in enumerate(run):
        for v in s.srcs:
            last[v] = k
    free: dict[tuple, list[int]] = {}
    counts: dict[tuple, int] = {}
    slots: dict[int, tuple] = {}

    def take(v: int) -> None:
        pool = (kinds[v], values[v].dtype)
        if free.get(pool):
            slots[v] = pool + (free[pool].pop(),)
        else:
            counts[pool] = counts.get(pool, 0) + 1
            slots[v] = pool + (counts[pool] - 1,)

    def release(k: int, s) -> None:
        for v in set(s.srcs):
            if last[v] == k and v not in outputs and kinds[v] != "col":
                free.setdefault(slots[v][:2], []).append(slots[v][2])

    for v in inputs:
        take(v)
    scratch = []
    for k, s in enumerate(run):
        if _scratch(s.insn) or "dst" in registry.separate(isa.lookup(s.insn).name, values[s.dst].dtype, soc):
            take(s.dst)                # a reduction, or dst must not share its sources' storage
            release(k, s)
        else:
            release(k, s)              # in place where the instruction allows it
            take(s.dst)
        if _scratch(s.insn):
            dt = values[s.srcs[0]].dtype
            if dt not in scratch:
                scratch.append(dt)
    return Fused(list(run), mode, tuple(full), inputs, outputs, kinds, slots, counts,
                 tuple(scratch), name)


def _order(steps: list, values) -> list:
    """The steps in an order that keeps vector runs long: a library step (@, a column reduction)
    runs as soon as its sources exist, before any vector step still waiting."""
    made_by = {s.dst: k for k, s in enumerate(steps)}
    done: set[int] = set()
    order: list = []
    left = list(range(len(steps)))
    while left:
        ready = [k for k in left if all(made_by.get(v) in done or v not in made_by for v in steps[k].srcs)]
        lib = [k for k in ready if not _vector(steps[k], values)]
        k = (lib or ready)[0]
        order.append(steps[k])
        done.add(k)
        left.remove(k)
    return order


def schedule(plan, op_name: str, soc) -> list:
    """The plan's steps as segments on this SoC: each a library Step or a Fused kernel, in order."""
    values, steps = plan.values, _order(plan.steps, plan.values)
    outs = set(plan.outputs.values())
    segments: list = []
    run: list = []

    def close(end: int) -> None:
        if not run:
            return
        later = {v for s in steps[end:] for v in s.srcs}
        f = _fit(run, values, later, outs, f"idl_{op_name}_{len(segments)}", soc)
        segments.extend([f] if f is not None else run)
        run.clear()

    for k, s in enumerate(steps):
        if _vector(s, values):
            run.append(s)
        else:
            close(k)
            segments.append(s)
    close(len(steps))
    return segments


# -- the kernel -----------------------------------------------------------------------------------

_KERNELS: dict[tuple, Any] = {}


def kernel_for(f: Fused, sizes: tuple):
    """The fused kernel's KernelFunction for these tile sizes (shared by equal fusions)."""
    key = (f.key(), sizes)
    kern = _KERNELS.get(key)
    if kern is None:
        kern = _KERNELS[key] = _build(f, sizes)
    return kern


def _build(f: Fused, sizes: tuple):
    from ..lang import pto
    from ..lang.kernel import kernel
    from ..library.kernels import handoff
    r, w = sizes
    ntensors = len(f.inputs) + len(f.outputs)
    ref = next(v for v in f.inputs + f.outputs if f.kinds[v] == "full")

    def body(args: tuple) -> None:
        gm = dict(zip(f.inputs + f.outputs, args[:ntensors]))
        scalars = iter(args[ntensors:])
        step_scalars = [next(scalars) if s.scalar is not None else None for s in f.steps]
        tiles = {}
        for (kind, dt), n in f.counts.items():
            shape = {"full": (r, w), "row": (r, 1), "col": (1, w)}[kind]
            extra = {"blayout": pto.ColMajor} if kind == "row" else {}
            for i in range(n):
                tiles[(kind, dt, i)] = pto.Tile(pto.Vec, dt, shape, valid=pto.DYNAMIC, **extra)
        tmp = {dt: pto.Tile(pto.Vec, dt, (r, w)) for dt in f.scratch}
        t = {v: tiles[f.slots[v]] for v in f.slots}
        if f.mode == "flat":
            n = gm[ref].shape[0]
            chunks = (n + w - 1) // w
        else:
            n, cols = gm[ref].shape[0], gm[ref].shape[1]
            chunks = (n + r - 1) // r
            for key_, tile in tiles.items():
                if key_[0] == "col":
                    tile.set_valid(1, cols)
            for v in f.inputs:
                if f.kinds[v] == "col":
                    pto.TLOAD(t[v], gm[v][0:1, :])
        for i in pto.range(pto.block_idx(), chunks, pto.block_num()):
            if f.mode == "flat":
                off = i * w
                h = pto.min(w, n - off)
                for tile in tiles.values():
                    tile.set_valid(1, h)
                window = (lambda x, off=off, h=h: x[off:off + h])
            else:
                off = i * r
                h = pto.min(r, n - off)
                for key_, tile in tiles.items():
                    if key_[0] != "col":
                        tile.set_valid(h, cols if key_[0] == "full" else 1)
                window = (lambda x, off=off, h=h: x[off:off + h, :])
            for v in f.inputs:
                if f.kinds[v] != "col":
                    pto.TLOAD(t[v], window(gm[v]))
            handoff(pto.PIPE_MTE2, pto.PIPE_V)
            for s, sc in zip(f.steps, step_scalars):
                pto.pipe_barrier(pto.PIPE_V)       # after the step before (or the last iteration's)
                srcs = iter(t[v] for v in s.srcs)
                ops = []
                for o in isa.lookup(s.insn).operands[1:]:
                    if o.kind == "scalar":
                        ops.append(sc)
                    elif o.name == "tmp":
                        ops.append(tmp[f.slots[s.srcs[0]][1]])
                    else:
                        ops.append(next(srcs))
                getattr(pto, isa.lookup(s.insn).name)(t[s.dst], *ops, **s.params)
            handoff(pto.PIPE_V, pto.PIPE_MTE3)
            for v in f.outputs:
                pto.TSTORE(window(gm[v]), t[v])
            handoff(pto.PIPE_MTE3, pto.PIPE_MTE2)

    params = ", ".join(f"a{i}" for i in range(ntensors + sum(s.scalar is not None for s in f.steps)))
    ns: dict[str, Any] = {"_body": body}
    exec(compile(f"def {f.name}({params}):\n    _body(({params},))\n", f"<idl {f.name}>", "exec"), ns)
    return kernel(ns[f.name], dynamic_shapes=True)

