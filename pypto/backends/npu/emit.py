"""Kernel IR -> one self-contained PTO C++ translation unit (pto-isa's public C++ API).

A pure function: the same IR gives the same text, byte for byte. The source builds with bisheng
for the chip and with g++ ``-D__CPU_SIM`` against pto-isa's CPU backend (notes 1.9: <cstdint>
first, flags instead of Event tokens, block index through a macro, the ``<<<>>>`` launch guarded).
Tiles are declared with their full pto::Tile type and bound with TASSIGN at the addresses pypto
placed them at; instructions come from each unit's ``emit`` rule, so an instruction's C++ lives
next to its simulator lowering (pypto/units/).
"""
from __future__ import annotations

import dataclasses

import math
import re
from typing import Callable

from ...errors import NotSimulatedError
from ...ir import guards as G
from ...ir import registry
from ...ir.nodes import (COMPARE_OPS, Assign, BinOp, For, GmLoad, GmView, InstrNode, Kernel, Returned,
                         SetValid, Stmt, Sync, TileVar, Var, binop, walk)
from .. import errcodes as EC
from . import abi

INDENT = "    "
# C++ words a kernel, tile or parameter name must not take (pypto renames them with a "_").
_RESERVED = frozenset("""
    alignas alignof and asm auto bool break case catch char class const constexpr continue decltype
    default delete do double else enum explicit export extern false float for friend goto if inline
    int long mutable namespace new noexcept not nullptr operator or private protected public register
    return short signed sizeof static struct switch template this throw true try typedef typeid
    typename union unsigned using virtual void volatile while xor half pto block_idx block_num
    call_kernel stream blockDim
""".split())

PRELUDE = """\
#include <cstdint>
#include <cstddef>
#include <pto/pto-inst.hpp>

using namespace pto;

#if defined(__CPU_SIM)
// pto-isa's CPU backend runs the blocks one after another; call_kernel sets these.
static thread_local int64_t pypto_block_idx = 0;
static thread_local int64_t pypto_block_num = 1;
#define PYPTO_BLOCK_IDX() pypto_block_idx
#define PYPTO_BLOCK_NUM() pypto_block_num
#else
#define PYPTO_BLOCK_IDX() ((int64_t)get_block_idx())
#define PYPTO_BLOCK_NUM() ((int64_t)get_block_num())
#endif

// Python's // and % (round toward minus infinity); C++'s round toward zero.
static inline AICORE int64_t pypto_floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline AICORE int64_t pypto_floormod(int64_t a, int64_t b)
{
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline AICORE int64_t pypto_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline AICORE int64_t pypto_max(int64_t a, int64_t b) { return a > b ? a : b; }

// Run-time guards: the simulator's checks of facts only known at run time, writing the same
// fault record (codes: pypto/backends/errcodes.py); pypto reads it after the launch and raises
// the PtoError the simulator would. A failed guard ends the block before the statement runs.
#define PYPTO_GUARD(site, fault) \
    do { if (fault) { pypto_err[{SITE}] = (site); pypto_err[{BLOCK}] = block_idx; return; } } while (0)
static inline AICORE bool pypto_fault(__gm__ int64_t *e, int64_t code, int64_t a, int64_t b = 0, int64_t c = 0,
                                      int64_t d = 0, int64_t f = 0)
{
    e[0] = code; e[1] = a; e[2] = b; e[3] = c; e[4] = d; e[5] = f;
    return true;
}
static inline AICORE bool pypto_bound(__gm__ int64_t *e, int64_t k, int64_t v, int64_t lim)
{ return (v < 0 || v > lim) && pypto_fault(e, {GM_BOUNDS}, k, v, lim); }
static inline AICORE bool pypto_set_valid(__gm__ int64_t *e, int64_t r, int64_t c, int64_t cr, int64_t cc)
{ return (r < 0 || c < 0 || r > cr || c > cc) && pypto_fault(e, {SET_VALID}, r, c, cr, cc); }
static inline AICORE bool pypto_assign(__gm__ int64_t *e, int64_t a, int64_t n, int64_t cap, int64_t align)
{
    if (a < 0) return pypto_fault(e, {ASSIGN_NEG}, a);
    if (a % align != 0) return pypto_fault(e, {ASSIGN_ALIGN}, a, align);
    return a + n > cap && pypto_fault(e, {ASSIGN_CAP}, a, n, cap);
}
static inline AICORE bool pypto_int_scalar(__gm__ int64_t *e, int64_t k, int64_t v, int64_t lo, int64_t hi)
{ return (v < lo || v > hi) && pypto_fault(e, {SCALAR_RANGE}, k, v, lo, hi); }
static inline AICORE bool pypto_float_scalar(__gm__ int64_t *e, int64_t k, double v, double lim)
{
    double a = v < 0 ? -v : v;
    return a >= lim && a <= 1.7976931348623157e308 && pypto_fault(e, {SCALAR_INF}, k);
}
static inline AICORE bool pypto_covers(__gm__ int64_t *e, int64_t k, int64_t sr, int64_t sc, int64_t dr, int64_t dc)
{ return (sr < dr || sc < dc) && pypto_fault(e, {SRC_VALID}, k, sr, sc, dr, dc); }
static inline AICORE bool pypto_same_rows(__gm__ int64_t *e, int64_t k, int64_t sr, int64_t dr)
{ return sr != dr && pypto_fault(e, {VALID_ROWS}, k, sr, dr); }
static inline AICORE bool pypto_same_cols(__gm__ int64_t *e, int64_t k, int64_t sc, int64_t dc)
{ return sc != dc && pypto_fault(e, {VALID_COLS}, k, sc, dc); }
static inline AICORE bool pypto_view_shape(__gm__ int64_t *e, int64_t r, int64_t c, int64_t vr, int64_t vc)
{ return (r != vr || c != vc) && pypto_fault(e, {SHAPE}, r, c, vr, vc); }
static inline AICORE bool pypto_range(__gm__ int64_t *e, int64_t what, int64_t v, int64_t lo, int64_t hi)
{ return (v < lo || v > hi) && pypto_fault(e, {RANGE}, what, v, lo, hi); }
"""
for _code in ("SITE", "BLOCK", "GM_BOUNDS", "SET_VALID", "ASSIGN_NEG", "ASSIGN_ALIGN", "ASSIGN_CAP",
              "SCALAR_RANGE", "SCALAR_INF", "SRC_VALID", "VALID_ROWS", "VALID_COLS", "SHAPE", "RANGE"):
    PRELUDE = PRELUDE.replace("{" + _code + "}", str(getattr(EC, _code)))

# Kernels that talk to other devices (ir.effects.uses_world) also get this.
WORLD_PRELUDE = """\
// Many devices: the host fills one PyptoWorld per launch from HCCL's communication resources
// (this rank, the rank count, each rank's GM window base); a peer's copy of a buffer is at the
// same offset in the peer's window (as HcclRemotePtr computes it).
struct PyptoWorld {
    int64_t rank;
    int64_t ranks;
    uint64_t windows[64];
};
template <typename T>
static inline AICORE __gm__ T *pypto_remote(__gm__ PyptoWorld *w, __gm__ T *p, int64_t peer)
{
    return (__gm__ T *)(w->windows[peer] + ((uint64_t)p - w->windows[w->rank]));
}
"""

_CXX_OPS = {"+": "+", "-": "-", "*": "*", **{op: op for op in COMPARE_OPS}}
_CALLS = {"floordiv": "pypto_floordiv", "floormod": "pypto_floormod", "min": "pypto_min", "max": "pypto_max"}
_LAYOUT = {"ND": "Layout::ND", "DN": "Layout::DN", "NZ": "Layout::NZ", "Nz": "Layout::NZ"}


def core_kind(k: Kernel) -> str:
    """"vec", "cube" or "mix": which AI cores the kernel's instructions run on (bisheng's arch)."""
    cores = {s.core for s in walk(k.body) if isinstance(s, InstrNode) and s.core}
    if cores == {"AIC"}:
        return "cube"
    if "AIC" in cores and "AIV" in cores:
        return "mix"
    return "vec"


def _ident(name: str, taken: set[str]) -> str:
    base = re.sub(r"\W", "_", name) or "v"
    if base[0].isdigit():
        base = "_" + base
    if base in _RESERVED or base.startswith("pypto_"):
        base += "_"
    out, n = base, 1
    while out in taken:
        n += 1
        out = f"{base}{n}"
    taken.add(out)
    return out



# Packed fp4: a pypto element is a byte, two values along the storage's contiguous axis; pto-isa's
# C++ counts values in tile shapes, valid regions and GlobalTensor shapes/strides, so the pair
# axis doubles on the way out (and a valid count read back halves).
def fp4_pairs(t: TileVar) -> str | None:
    """The axis ("rows" / "columns") a packed fp4 tile's pairs run along; None for other types."""
    return t.type.contiguous_axis if t.type.dtype.lanes > 1 else None


def values_shape(t: TileVar, rows, cols) -> tuple:
    """(rows, cols) of a tile as pto-isa counts them: fp4 pairs doubled along their axis."""
    axis = fp4_pairs(t)
    return binop("*", rows, 2) if axis == "rows" else rows, binop("*", cols, 2) if axis == "columns" else cols


def _template_dims(dims) -> str:
    """Shape<...> / Stride<...> template arguments: static sizes, DYNAMIC for runtime ones."""
    return ", ".join(str(d) if isinstance(d, int) else "DYNAMIC" for d in dims)


def view_values(v: GmView) -> tuple[list, list]:
    """A GM view's 5-D shape and strides as pto-isa counts them (fp4: values, not pairs)."""
    shape, strides = list(v.shape), list(v.strides)
    if v.tensor.dtype.lanes == 1:
        return shape, strides
    inner = 3 if v.layout == "DN" else 4
    return ([binop("*", d, 2) if k == inner else d for k, d in enumerate(shape)],
            [d if k == inner else binop("*", d, 2) for k, d in enumerate(strides)])

class Emitter:
    """The state of one emission: C++ names of tiles and variables, and the lines so far.
    Units' emit rules get it as ``cx`` and use ``operand``, ``scalar`` and ``expr``."""

    def __init__(self, k: Kernel, soc, guards: bool = True):
        self.k, self.soc, self.with_guards = k, soc, guards
        self.lines: list[str] = []
        self.depth = 1
        self.taken: set[str] = set()
        self.args = abi.arguments(k)
        self.names: dict[int, str] = {}          # id(IR object) -> C++ name
        for a in self.args:
            if a.kind not in ("err", "world"):   # pypto's own names (user names never start with pypto_)
                self.names[self._key(a)] = _ident(a.name, self.taken)
        for t in k.tiles:
            self.names[id(t)] = _ident(t.name, self.taken)
        self._views = 0
        self.sites: list[Stmt] = []             # guard site id -> statement (to decode faults)

    def _key(self, a: abi.Arg) -> int:
        return id(a.var) if a.var is not None else id(self.k.params[a.param])

    def arg_name(self, a: abi.Arg) -> str:
        return a.name if a.kind in ("err", "world") else self.names[self._key(a)]

    # -- helpers for emit rules ----------------------------------------------------------------
    def name(self, x) -> str:
        return self.names[id(x)]

    def expr(self, x) -> str:
        """C++ of an index expression (int64 arithmetic)."""
        if isinstance(x, Returned):
            return f"pypto_tt{x.slot}"
        if isinstance(x, Var):
            if x.kind == "block_idx":
                return "block_idx"
            if x.kind == "block_num":
                return "block_num"
            if x.kind in ("rank_id", "rank_num"):
                return f"{abi.WORLD}->{'rank' if x.kind == 'rank_id' else 'ranks'}"
            if x.kind == "valid":
                t = self._valid_owner(x)
                rows = x.name.startswith('vr_')
                got = f"{self.name(t)}.GetValid{'Row' if rows else 'Col'}()"
                return f"({got} / 2)" if fp4_pairs(t) == ("rows" if rows else "columns") else got
            return self.names[id(x)]
        if isinstance(x, GmLoad):            # a scalar read of GM by the scalar unit
            el = f"{self.name(x.view.tensor)}[{self.expr(x.view.offset)}]"
            return f"((float){el})" if x.view.tensor.dtype.short in ("f16", "bf16") else el
        if isinstance(x, BinOp):
            if x.op in _CALLS:
                return f"{_CALLS[x.op]}({self.expr(x.lhs)}, {self.expr(x.rhs)})"
            return f"({self.expr(x.lhs)} {_CXX_OPS[x.op]} {self.expr(x.rhs)})"
        return self.literal(x)

    @staticmethod
    def literal(x) -> str:
        if isinstance(x, bool):
            return "true" if x else "false"
        if isinstance(x, float):
            if math.isnan(x):
                return "__builtin_nan(\"\")"
            if math.isinf(x):
                return "__builtin_inf()" if x > 0 else "(-__builtin_inf())"
            return repr(x)
        v = int(x)
        return str(v) if -(1 << 31) <= v < (1 << 31) else f"INT64_C({v})"

    def scalar(self, x, dtype) -> str:
        """A scalar operand converted to the tile element type (TileData::DType)."""
        return f"static_cast<{dtype.cxx}>({self.expr(x)})"

    def operand(self, x) -> str:
        """A tile's name, or a GM view declared on the line before (a GlobalTensor)."""
        if isinstance(x, TileVar):
            return self.name(x)
        if isinstance(x, GmView):
            return self._view(x)
        return self.expr(x)

    def _own_site(self, site) -> bool:
        """Whether a site lies in the kernel's own source (library kernels' sites are their callers')."""
        return _basename(site.filename) == (self.k.source or "").split(":", 1)[0]

    def line(self, text: str) -> None:
        self.lines.append(INDENT * self.depth + text if text else "")

    # -- declarations --------------------------------------------------------------------------
    def _valid_owner(self, v: Var) -> TileVar:
        tid = int(v.name.split("_", 1)[1])
        return next(t for t in self.k.tiles if t.id == tid)

    def tile_type(self, t: TileVar) -> str:
        ty = t.type
        rows, cols = values_shape(t, ty.rows, ty.cols)
        vr, vc = ("DYNAMIC", "DYNAMIC") if t.dynamic else \
            tuple(self.literal(v) for v in values_shape(t, t.valid[0], t.valid[1]))
        args = [f"TileType::{ty.loc}", ty.dtype.cxx, str(rows), str(cols), f"BLayout::{ty.blayout}", vr, vc]
        if (ty.slayout, ty.fractal, ty.pad) != ("NoneBox", 512, "Null"):
            args += [f"SLayout::{ty.slayout}", str(ty.fractal), f"PadValue::{ty.pad}"]
        return f"Tile<{', '.join(args)}>"

    def mx_view(self, v: GmView, layout: str) -> str:
        """A DN window (K/32 rows x N columns) of an e8m0 bScale matrix kept as N x K/32 rows, as
        the NPU's MX_B_DN GlobalTensor (pto-isa-semantics 4.1): shape (1, 1, N, K/64, 2)."""
        s0, s1, _, rows, cols = v.shape
        t0, t1, _, _, ld = v.strides
        return self._view(v, (s0, s1, cols, binop("floordiv", rows, 2), 2), (t0, t1, ld, 2, 1), layout)

    def group(self, g: GmView) -> str:
        """A ParallelGroup: every rank's copy of the view (member r in rank r's window)."""
        name = self._view(dataclasses.replace(g, rank=None))
        self.line(f"decltype({name}) {name}_m[64];")
        self.line(f"for (int64_t pypto_r = 0; pypto_r < {self.expr(g.nranks)}; ++pypto_r) {{")
        ctor = self._ctor(g, peer="pypto_r")
        self.line(f"    {name}_m[pypto_r] = decltype({name})({', '.join(ctor)});")
        self.line("}")
        self.line(f"comm::ParallelGroup<decltype({name})> {name}_g({name}_m, (int){self.expr(g.nranks)}, "
                  f"(int){self.expr(g.root)});")
        return f"{name}_g"

    def _ctor(self, v: GmView, shape=None, strides=None, peer: str | None = None) -> list[str]:
        """The GlobalTensor constructor arguments of a view (on rank ``peer`` if given)."""
        if shape is None:
            shape, strides = view_values(v)
        else:
            shape, strides = list(shape), list(strides)
        ptr = self.name(v.tensor)
        off = self.expr(v.offset)
        base = ptr if off == "0" else f"{ptr} + {off}"
        if peer is None and v.rank is not None:
            peer = self.expr(v.rank)
        if peer is not None:
            base = f"pypto_remote({abi.WORLD}, {base}, {peer})"
        ctor = [base]
        tshape, tstride = _template_dims(shape), _template_dims(strides)
        if "DYNAMIC" in tshape + tstride:
            ctor.append(f"Shape<{tshape}>({', '.join(self.expr(x) for x in shape)})")
            ctor.append(f"Stride<{tstride}>({', '.join(self.expr(x) for x in strides)})")
        return ctor

    def _view(self, v: GmView, shape=None, strides=None, layout: str | None = None) -> str:
        self._views += 1
        name = f"{self.name(v.tensor)}_v{self._views}"
        elem = v.tensor.dtype.cxx
        if shape is None:
            shape, strides = view_values(v)
        lay = f"Layout::{layout}" if layout else _LAYOUT[v.layout]
        gt = f"GlobalTensor<{elem}, Shape<{_template_dims(shape)}>, Stride<{_template_dims(strides)}>, {lay}>"
        self.line(f"{gt} {name}({', '.join(self._ctor(v, shape, strides))});")
        return name

    # -- statements ----------------------------------------------------------------------------
    def stmts(self, body: list[Stmt]) -> None:
        for s in body:
            self.stmt(s)

    def guards(self, s: Stmt) -> None:
        if not self.with_guards:
            return
        gs = [g for g in G.of(s, self.soc) if not _trivial(g)]
        if not gs:
            return
        self.sites.append(s)
        site = len(self.sites) - 1
        for g in gs:
            args = ", ".join(self.expr(a) for a in g.args)
            self.line(f"PYPTO_GUARD({site}, pypto_{g.check}(pypto_err, {args}));")

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, InstrNode) and s.site is not None and self._own_site(s.site):
            self.line(f"// {_site(s.site)}")
        self.guards(s)
        if isinstance(s, InstrNode):
            self.instr(s)
        elif isinstance(s, SetValid):
            t = self.name(s.tile)
            rows, cols = values_shape(s.tile, s.rows, s.cols)
            self.line(f"{t}.RowMaskInternal = {self.expr(rows)};")
            self.line(f"{t}.ColMaskInternal = {self.expr(cols)};")
        elif isinstance(s, Assign):
            addr = s.addr if not isinstance(s.addr, int) else f"{s.addr:#x}"
            self.line(f"TASSIGN({self.name(s.tile)}, {self.expr(addr) if not isinstance(addr, str) else addr});")
        elif isinstance(s, Sync):
            if s.kind == "pipe_barrier":
                self.line(f"pipe_barrier(PIPE_{s.src});")
            else:
                self.line(f"{s.kind}(PIPE_{s.src}, PIPE_{s.dst}, EVENT_ID{s.event});")
        elif isinstance(s, For) and s.branch:          # pto.when
            self.line(f"if ({self.expr(s.stop)} != 0) {{")
            self.depth += 1
            self.stmts(s.body)
            self.depth -= 1
            self.line("}")
        elif isinstance(s, For):
            v = _ident(s.var.name, self.taken)
            self.names[id(s.var)] = v
            step = self.expr(s.step)
            if isinstance(s.step, int) or (isinstance(s.step, Var) and s.step.kind == "block_num"):
                up = not isinstance(s.step, int) or s.step > 0
                cond = f"{v} < {self.expr(s.stop)}" if up else f"{v} > {self.expr(s.stop)}"
            else:
                cond = f"({step} > 0 ? {v} < {self.expr(s.stop)} : {v} > {self.expr(s.stop)})"
            inc = f"++{v}" if isinstance(s.step, int) and s.step == 1 else f"{v} += {step}"
            self.line(f"for (int64_t {v} = {self.expr(s.start)}; {cond}; {inc}) {{")
            self.depth += 1
            self.stmts(s.body)
            self.depth -= 1
            self.line("}")
        else:                                   # pragma: no cover - every IR statement is above
            raise AssertionError(type(s))

    def instr(self, node: InstrNode) -> None:
        unit = registry.get(node.name)
        if unit is None or unit.emit is None:
            raise NotSimulatedError(
                f"{node.name} has no C++ emission rule in this version of pypto",
                rule="the NPU backends emit the instructions the simulator runs",
                fix="use the simulator (pypto.init(backend='sim')), or see `pypto info` for the "
                    "instructions each backend runs")
        out = unit.emit(node, self.soc, self)
        for text in ([out] if isinstance(out, str) else out):
            self.line(text)


def _trivial(g: G.Guard) -> bool:
    """A covers guard of a tile against itself (TADD(a, a, b)'s first source) always holds."""
    return g.check == "covers" and g.args[1] is g.args[3] and g.args[2] is g.args[4]


def _basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _site(site) -> str:
    return f"{_basename(site.filename)}:{site.lineno}: {site.line.strip()}"


def emit_kernel(k: Kernel, soc, *, header: str = "", guards: bool = True) -> str:
    """The C++ source of kernel ``k`` (IR after the place/verify/annotate passes) for ``soc``.
    guards=False leaves out the run-time guards (a shorter text to read; not what pypto builds)."""
    return emit_with_sites(k, soc, header=header, guards=guards)[0]


def emit_with_sites(k: Kernel, soc, *, header: str = "", guards: bool = True) -> tuple[str, list[Stmt]]:
    """(source, sites): sites[i] is the statement whose guards report site id i."""
    cx = Emitter(k, soc, guards)
    entry = _ident(k.name, set(cx.taken))
    kind = core_kind(k)
    params = []
    for a in cx.args:
        n = cx.arg_name(a)
        params.append((f"__gm__ {a.elem} *{n}" if a.kind in ("tensor", "err", "world") else f"{a.cxx} {n}", a, n))
    cx.line("const int64_t block_idx = PYPTO_BLOCK_IDX();")
    cx.line("const int64_t block_num = PYPTO_BLOCK_NUM();")
    cx.line(f"__gm__ int64_t *pypto_err = {abi.ERR} + {EC.SIZE} * block_idx;   // this block's fault record")
    cx.line("(void)block_num;")
    cx.line("(void)pypto_err;")
    for n in (s.result.slot for s in walk(k.body) if isinstance(s, InstrNode) and s.result is not None):
        cx.line(f"int64_t pypto_tt{n} = 0;   // what a TTEST returned")
    for t in k.tiles:
        ty = t.type
        where = f"{soc.space(ty.loc).buffer}"
        placed = f" at {where} {t.addr:#x}" if isinstance(t.addr, int) and not t.manual else \
            f" in {where}, placed by TASSIGN"
        cx.line(f"// {t.name}: {ty}{placed}")
        init = "({}, {})".format(*values_shape(t, ty.rows, ty.cols)) if t.dynamic else ""
        cx.line(f"{cx.tile_type(t)} {cx.name(t)}{init};")
        if isinstance(t.addr, int) and not t.manual:
            cx.line(f"TASSIGN({cx.name(t)}, {t.addr:#x});")
    cx.stmts(k.body)
    lines = [f"// {k.name}: PTO C++ emitted by pypto{header} for SoC {soc.name} ({kind} cores).",
             f"// From {k.source or k.name}. Do not edit: regenerate with kern.cpp(*args) or `pypto cpp`.",
             "", PRELUDE] + ([WORLD_PRELUDE] if any(a.kind == "world" for a in cx.args) else [])
    sig = ", ".join(p for p, _, _ in params)
    lines.append(f"__global__ AICORE void {entry}({sig})")
    lines.append("{")
    lines += cx.lines
    lines.append("}")
    lines.append("")
    host = ", ".join(["uint32_t blockDim", "void *stream"] +
                     [f"{a.cxx}{'' if a.cxx.endswith('*') else ' '}{n}" for _, a, n in params])
    call = ", ".join(f"(__gm__ {a.elem} *){n}" if a.kind in ("tensor", "err", "world") else n for _, a, n in params)
    lines += [
        "// Host entry: pypto calls this through ctypes (argument list: pypto/backends/npu/abi.py).",
        f'extern "C" void call_kernel({host})',
        "{",
        "#if defined(__CPU_SIM)",
        "    (void)stream;",
        "    for (uint32_t pypto_b = 0; pypto_b < blockDim; ++pypto_b) {",
        "        pypto_block_idx = pypto_b;",
        "        pypto_block_num = blockDim;",
        f"        {entry}({call});",
        "    }",
        "#else",
        f"    {entry}<<<blockDim, nullptr, stream>>>({call});",
        "#endif",
        "}",
        "",
    ]
    return "\n".join(lines), cx.sites


# -- rule builders for units -------------------------------------------------------------------

def call(cpp: str, params: bool = False) -> Callable:
    """Rule ``CPP(op0, op1, ...);``: tile operands by name, GM views declared first, scalars
    converted to the first source tile's element type (TileData::DType). params=True appends
    the mode parameters that are set, in table order, as enumerators (``CmpMode::GT``)."""
    from ...isa import TABLE

    def rule(node: InstrNode, soc, cx: Emitter) -> str:
        tile = next((o for o in node.operands if isinstance(o, TileVar)), None)
        ops = [cx.operand(o) if isinstance(o, (TileVar, GmView)) or tile is None
               else cx.scalar(o, _src_type(node)) for o in node.operands if o is not None]
        if params:
            ops += [f"{p.type}::{node.params[p.name]}" for p in TABLE[node.name].params
                    if node.params.get(p.name) is not None]
        return f"{cpp}({', '.join(ops)});"
    rule.cpp = cpp
    return rule


def _src_type(node: InstrNode):
    tiles = [o for o in node.operands if isinstance(o, TileVar)]
    return (tiles[1] if len(tiles) > 1 else tiles[0]).type.dtype


__all__ = ["emit_kernel", "Emitter", "call", "core_kind", "PRELUDE"]
