"""Print a Kernel as readable PTO-style text (level-2, destination first)."""
from __future__ import annotations

from .nodes import (CALL_OPS, Assign, BinOp, For, GmLoad, GmView, GroupView, InstrNode, Kernel, ScalarParam,
                    SetValid, Sync, TensorParam, TileVar, Var, walk)


def expr(x) -> str:
    if isinstance(x, Var):
        return f"%{x.name}"
    if isinstance(x, GmLoad):
        return f"load_scalar %{x.view.tensor.name}[{expr(x.view.offset)}]"
    if isinstance(x, BinOp):
        if x.op in CALL_OPS:
            return f"{x.op}({expr(x.lhs)}, {expr(x.rhs)})"
        return f"({expr(x.lhs)} {x.op} {expr(x.rhs)})"
    return repr(x)


def operand(x) -> str:
    if isinstance(x, TileVar):
        return f"%{x.name}"
    if isinstance(x, GmView):
        shp = "x".join(expr(s) for s in x.shape)
        std = ", ".join(expr(s) for s in x.strides)
        text = f"%{x.tensor.name}[off {expr(x.offset)}, shape {shp}, stride ({std}), {x.layout}]"
        if x.rank is not None:                     # a peer's copy (pto.remote)
            text += f" @rank({expr(x.rank)})"
        if isinstance(x, GroupView):               # a ParallelGroup
            text = f"group({text}, ranks {expr(x.nranks)}, root {expr(x.root)})"
        return text
    return expr(x)


def _tile_decl(t: TileVar) -> str:
    ty = t.type
    valid = "x".join(expr(v) for v in t.valid) if not t.dynamic else "?x?"
    addr = f" @ {t.addr:#x}" if t.addr is not None else ""
    how = " (TASSIGN)" if t.manual else ""
    return (f"%{t.name} = alloc_tile !pto.tile_buf<{ty.loc}, {ty.dtype.short}, {ty.rows}, {ty.cols}, "
            f"valid {valid}, {ty.layout_name}, pad {ty.pad}>{addr}{how}")


def _stmts(stmts, indent: int, out: list[str]) -> None:
    pad = "  " * indent
    for s in stmts:
        if isinstance(s, InstrNode):
            ops = ", ".join(operand(o) for o in s.operands)
            params = ""
            if s.params:
                params = " {" + ", ".join(f"{k} = {v}" for k, v in s.params.items()) + "}"
            pipe = f"  // PIPE_{s.pipe}" + (f", {s.core}" if s.core else "") if s.pipe else ""
            res = f"%{s.result.name} = " if s.result is not None else ""
            out.append(f"{pad}{res}pto.{s.name.lower()} {ops}{params}{pipe}")
        elif isinstance(s, SetValid):
            out.append(f"{pad}pto.set_valid %{s.tile.name}, {expr(s.rows)}, {expr(s.cols)}")
        elif isinstance(s, Assign):
            addr = f"{s.addr:#x}" if isinstance(s.addr, int) else expr(s.addr)
            out.append(f"{pad}pto.tassign %{s.tile.name}, {addr}")
        elif isinstance(s, Sync):
            tag = "  // auto" if s.auto else ""
            if s.kind == "pipe_barrier":
                out.append(f"{pad}pto.barrier PIPE_{s.src}{tag}")
            else:
                out.append(f"{pad}pto.{s.kind} PIPE_{s.src}, PIPE_{s.dst}, EVENT_ID{s.event}{tag}")
        elif isinstance(s, For) and s.branch:
            out.append(f"{pad}if {expr(s.stop)} {{")
            _stmts(s.body, indent + 1, out)
            out.append(f"{pad}}}")
        elif isinstance(s, For):
            out.append(f"{pad}for %{s.var.name} = {expr(s.start)} to {expr(s.stop)} step {expr(s.step)} {{")
            _stmts(s.body, indent + 1, out)
            out.append(f"{pad}}}")


def print_kernel(k: Kernel) -> str:
    params = []
    for p in k.params:
        if isinstance(p, TensorParam):
            shp = "x".join(expr(d) for d in p.shape)
            params.append(f"%{p.name}: !pto.gm<{shp}x{p.dtype.short}>")
        elif isinstance(p, ScalarParam):
            params.append(f"%{p.name}: {p.var.dtype}")
    out = [f"// soc {k.soc}", f"kernel @{k.name}({', '.join(params)}) {{"]
    for t in k.tiles:
        out.append("  " + _tile_decl(t))
    _stmts(k.body, 1, out)
    out.append("}")
    return "\n".join(out) + "\n"


def _uses(k: Kernel) -> dict[int, tuple[int, int]]:
    """Per tile id: the first and last statement (numbered in program order) naming it."""
    span: dict[int, tuple[int, int]] = {}
    for i, s in enumerate(walk(k.body), 1):
        tiles = [o for o in getattr(s, "operands", ()) if isinstance(o, TileVar)]
        tiles += [s.tile] if isinstance(s, (SetValid, Assign)) else []
        for t in tiles:
            a, _ = span.get(t.id, (i, i))
            span[t.id] = (a, i)
    return span


def explain_kernel(k: Kernel, soc) -> str:
    """The kernel's IR, then each tile's space, byte range and live range (statements numbered
    as in program order, loops once), then a memory map per on-chip space."""
    out = [print_kernel(k).rstrip("\n"), "", "tiles (live range: first..last statement using it):"]
    span = _uses(k)
    by_space: dict[str, list] = {}
    for t in k.tiles:
        ty = t.type
        space = soc.space(ty.loc)
        lo = t.addr
        rng = f"[{lo:#07x}, {lo + ty.nbytes:#07x})" if lo is not None else "(not placed)"
        live = span.get(t.id)
        live_s = f"{live[0]}..{live[1]}" if live else "unused"
        out.append(f"  %{t.name:<12} {ty.loc:<6} {space.buffer:<4} {rng:<20} {ty.nbytes:>7} B  "
                   f"live {live_s}")
        if lo is not None:
            by_space.setdefault(ty.loc, []).append((lo, lo + ty.nbytes, t.name, live_s))
    out.append("")
    out.append("memory map:")
    for loc, items in by_space.items():
        cap = soc.space(loc).capacity
        used = sum(b - a for a, b, _, _ in items)
        out.append(f"  {loc} ({soc.space(loc).buffer}, {cap // 1024} KiB): {used} B in "
                   f"{len(items)} tile(s)")
        for a, b, name, live in sorted(items):
            out.append(f"    {a:#07x}-{b:#07x}  %{name} (live {live})")
    return "\n".join(out) + "\n"
