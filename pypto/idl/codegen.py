"""``python -m pto.codegen`` / ``pypto codegen``: an IDL file -> ``<stem>_pypto.cpp``.

The file builds with a plain ``g++ -shared -fPIC -O2 -o <stem>_pypto.so <stem>_pypto.cpp`` (no
CANN, no Python headers) into a library with a small C ABI (``ABI`` in abi.py): the operators'
manifest (their canonical IDL, which ``load_custom_insn`` parses) and, per operator, a plain C++
reference of its computation (loops in double, independent of the tile lowering).
``--target npu`` also carries every kernel of each operator's plan (fused vector kernels and the
library kernels between them) as PTO C++, each a translation unit of its own behind
``#if PYPTO_DEVICE_KERNEL == k`` (a plain g++ build sees none of them); ``--build npu`` builds
them with bisheng where CANN is present, ``--build cpusim`` with g++ against pto-isa's CPU
backend. The kernels take any shape (dynamic shapes) whose rows fit the tiles chosen for the
sizes given with ``--dims`` (default 1024 for every symbol).
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import IdlError, IdlShapeError, PtoError
from . import ast as A
from .abi import ABI, ABI_VERSION, symbols

class _Cxx:
    """C++ loops for one operator: every expression node a std::vector<double> of its shape."""

    def __init__(self, op: A.Operator):
        self.op = op
        self.sym = {s: f"dims[{i}]" for i, s in enumerate(symbols(op))}
        self.lines: list[str] = []
        self.n = 0
        self.where: dict[str, str] = {}            # name -> C++ buffer (or scalar) expression
        tensors = [f for f in op.inputs if isinstance(f, A.TensorField)]
        scalars = [f for f in op.inputs if isinstance(f, A.ScalarField)]
        for i, f in enumerate(tensors):
            self.where[f.name] = f"inputs[{i}]"
        for i, f in enumerate(scalars):
            self.where[f.name] = f"scalars[{i}]"

    def dim(self, d) -> str:
        return f"(int64_t){d}" if isinstance(d, int) else self.sym[d]

    def size(self, shape: tuple) -> str:
        return " * ".join(self.dim(d) for d in shape) if shape else "1"

    def line(self, s: str) -> None:
        self.lines.append("    " + s)

    def fresh(self, shape: tuple) -> str:
        self.n += 1
        name = f"t{self.n}"
        self.line(f"std::vector<double> {name}((size_t)({self.size(shape)}));")
        return name

    def index(self, shape: tuple, full: tuple) -> str:
        """The row-major index of loop position (i, j) over ``full`` in a buffer of ``shape``,
        broadcasting its size-1 axes."""
        if len(shape) == 1:
            return "0" if shape[0] == 1 and full[-1] != 1 else "j"
        r = "0" if shape[0] == 1 and full[0] != 1 else "i"
        c = "0" if shape[1] == 1 and full[1] != 1 else "j"
        return f"{r} * {self.dim(shape[1])} + {c}"

    def at(self, buf: str, shape: tuple, full: tuple) -> str:
        """buf's element at loop position (i, j); a scalar (shape ()) is its own value."""
        return f"{buf}[{self.index(shape, full)}]" if shape else buf

    def loops(self, shape: tuple, body: str) -> None:
        rows = self.dim(shape[0]) if len(shape) == 2 else "1"
        cols = self.dim(shape[-1]) if shape else "1"
        self.line(f"for (int64_t i = 0; i < {rows}; ++i) for (int64_t j = 0; j < {cols}; ++j) {{ {body} }}")

    def value(self, e) -> tuple[str, tuple]:
        """(C++ buffer or scalar expression, shape) of an expression."""
        if isinstance(e, A.Name):
            return self.where[e.id], tuple(e.shape)
        if isinstance(e, A.Const):
            return repr(float(e.value)), ()
        if isinstance(e, A.Unary):
            return self.elementwise(e, [e.operand], lambda x: f"-({x})")
        if isinstance(e, A.BinOp):
            if e.op == "@":
                return self.matmul(e)
            if e.op == "/" and e.dtype.is_int:
                return self.elementwise(e, [e.lhs, e.rhs], lambda x, y: f"pypto_idiv({x}, {y}, &err)")
            return self.elementwise(e, [e.lhs, e.rhs], lambda x, y, o=e.op: f"({x}) {o} ({y})")
        f = e.func
        fn = {"exp": "std::exp({})", "log": "std::log({})", "sqrt": "std::sqrt({})",
              "rsqrt": "1.0 / std::sqrt({})", "abs": "std::fabs({})", "relu": "std::fmax({}, 0.0)",
              "recip": "1.0 / ({})", "neg": "-({})"}
        if f in fn:
            return self.elementwise(e, [e.args[0]], lambda x, t=fn[f]: t.format(x))
        if f in ("max", "min"):
            return self.elementwise(e, list(e.args), lambda x, y, g=f: f"std::f{g}({x}, {y})")
        if f == "cast":
            conv = _CAST.get(e.to.short)
            return self.elementwise(e, [e.args[0]], (lambda x, c=conv: c.format(x)) if conv else (lambda x: x))
        return self.reduce(e)

    def elementwise(self, e, args, body) -> tuple[str, tuple]:
        vals = [self.value(a) for a in args]
        shape = tuple(e.shape)
        if not shape:
            return body(*[v for v, _ in vals]), ()
        out = self.fresh(shape)
        self.loops(shape, f"{self.at(out, shape, shape)} = {body(*[self.at(v, s, shape) for v, s in vals])};")
        return out, shape

    def matmul(self, e) -> tuple[str, tuple]:
        (a, sa), (b, sb) = self.value(e.lhs), self.value(e.rhs)
        shape = tuple(e.shape)
        out = self.fresh(shape)
        m, k, n = self.dim(sa[0]), self.dim(sa[1]), self.dim(sb[1])
        self.line(f"for (int64_t i = 0; i < {m}; ++i) for (int64_t j = 0; j < {n}; ++j) {{")
        self.line(f"    double s = 0; for (int64_t p = 0; p < {k}; ++p) s += {a}[i * {k} + p] * {b}[p * {n} + j];")
        self.line(f"    {out}[i * {n} + j] = s; }}")
        return out, shape

    def reduce(self, e) -> tuple[str, tuple]:
        (x, sx) = self.value(e.args[0])
        shape = tuple(e.shape)
        out = self.fresh(shape)
        rows, cols = self.dim(sx[0]), self.dim(sx[1])
        kind = e.func[3:]
        row = e.func.startswith("row")
        outer, inner = (rows, cols) if row else (cols, rows)
        elem = f"{x}[o * {cols} + q]" if row else f"{x}[q * {cols} + o]"
        start = {"sum": "0.0", "mean": "0.0", "max": "-INFINITY", "min": "INFINITY"}[kind]
        step = {"sum": "a += v;", "mean": "a += v;", "max": "a = std::fmax(a, v);", "min": "a = std::fmin(a, v);"}[kind]
        fin = f"a / (double)({inner})" if kind == "mean" else "a"
        self.line(f"for (int64_t o = 0; o < {outer}; ++o) {{ double a = {start};")
        self.line(f"    for (int64_t q = 0; q < {inner}; ++q) {{ double v = {elem}; {step} }}")
        self.line(f"    {out}[o] = {fin}; }}")
        return out, shape

    def function(self) -> str:
        outs = {f.name: i for i, f in enumerate(self.op.outputs)}
        for s in self.op.body:
            buf, shape = self.value(s.value)
            if s.target in outs:
                f = self.op.outputs[outs[s.target]]
                full = tuple(f.dims)
                self.loops(full, f"{self.at(f'outputs[{outs[s.target]}]', full, full)} = "
                                 f"{self.at(buf, shape, full)};")
            self.where[s.target] = buf
        head = (f"extern \"C\" int pypto_reference_{self.op.name}(const int64_t *dims, "
                "const double *const *inputs, double *const *outputs, const double *scalars)")
        return "\n".join([head, "{", "    int err = 0;", "    (void)dims; (void)inputs; (void)scalars;"]
                         + self.lines + ["    return err;", "}"])


# cast(x, T) in the reference: integer types round to nearest even and wrap to their width
_CAST = {"i8": "pypto_wrap({}, 8, true)", "u8": "pypto_wrap({}, 8, false)",
         "i16": "pypto_wrap({}, 16, true)", "u16": "pypto_wrap({}, 16, false)",
         "i32": "pypto_wrap({}, 32, true)", "u32": "pypto_wrap({}, 32, false)"}

_PRELUDE = r"""#include <cmath>
#include <cstdint>
#include <vector>

static double pypto_idiv(double a, double b, int *err)
{
    if (b == 0) { *err = 1; return 0; }
    return std::trunc(a / b);
}
static double pypto_wrap(double v, int bits, bool is_signed)
{
    double r = std::nearbyint(v);
    double m = std::ldexp(1.0, bits);
    r = std::fmod(r, m);
    if (r < 0) r += m;
    if (is_signed && r >= m / 2) r -= m;
    return r;
}
"""


def generate(module: A.Module, target: str = "pypto", idl_name: str = "",
             kernels: list[DeviceKernel] | None = None, soc: str | None = None) -> str:
    """The C++ translation unit for a checked module (``kernels``: from device_kernels, for
    target npu)."""
    from .fmt import format_module
    manifest = format_module(module)
    if ")PYPTO_IDL\"" in manifest:
        raise IdlError("the IDL text holds the manifest's delimiter", file=module.file, line=1, column=1,
                       rule="the manifest is embedded as a raw string", fix="remove ')PYPTO_IDL\"'")
    parts = [f"// Generated by pypto codegen from {idl_name or module.file} (target {target}). Do not edit.",
             "// Build: g++ -shared -fPIC -O2 -o <name>.so <name>.cpp   (no CANN, no Python headers)",
             "// " + ABI.replace("\n", "\n// "), "", _PRELUDE,
             f"static const char pypto_manifest_text[] = R\"PYPTO_IDL({manifest}\n)PYPTO_IDL\";", "",
             f"extern \"C\" int pypto_abi_version(void) {{ return {ABI_VERSION}; }}",
             "extern \"C\" const char *pypto_manifest(void) { return pypto_manifest_text; }", ""]
    for op in module.operators:
        _two_d(op)
        parts += [_Cxx(op).function(), ""]
    if target == "npu":
        parts += _device_sections(kernels or [], soc or "a2a3", Path(idl_name or module.file).stem)
    return "\n".join(parts)


def _two_d(op: A.Operator) -> None:
    """The C++ reference loops over at most two dimensions."""
    for s in op.body:
        for e in A.walk(s.value):
            if e.shape is not None and len(e.shape) > 2:
                raise IdlShapeError(f"{op.name}: a value of shape [{', '.join(map(str, e.shape))}]",
                                    file=e.loc.file, line=e.loc.line, column=e.loc.column,
                                    rule="codegen writes the reference for 1-D and 2-D tensors",
                                    fix="reshape the operator's tensors to 2-D")


@dataclass
class DeviceKernel:
    """One kernel of an operator's plan, emitted for --target npu."""
    index: int
    operator: str
    title: str
    name: str
    core: str
    cpp: str


def device_kernels(module: A.Module, soc: str | None = None, dims: dict[str, int] | None = None,
                   size: int = 1024) -> list[DeviceKernel]:
    """Every kernel each operator's execute() launches, as PTO C++ traced with its symbols bound to
    ``dims`` (others ``size``): uses the running session, else a simulator session on ``soc``."""
    from .. import runtime
    from ..backends import core_kind
    from ..tensor import zeros
    from .custom import Custom, CustomInsn
    own = not runtime.is_initialized()
    sess = runtime.init(backend="sim", soc=soc) if own else runtime.current()
    out: list[DeviceKernel] = []
    made = []
    try:
        for op in module.operators:
            insn = CustomInsn(Custom(op, module.file, lambda values: {}), sess)
            for i, f in enumerate(tuple(op.inputs) + tuple(op.outputs)):
                if isinstance(f, A.ScalarField):
                    insn.set_operand(i, f.default if f.default is not None else 1)
                    continue
                t = zeros(tuple(d if isinstance(d, int) else (dims or {}).get(d, size) for d in f.dims), f.dtype)
                made.append(t)
                insn.set_operand(i, t)

            def show(kern, args):
                return kern.name, core_kind(kern.traced(*args)), kern.cpp(*args)
            for title, (name, core, cpp) in insn.kernels(show):
                out.append(DeviceKernel(len(out) + 1, op.name, title, name, core, cpp))
    finally:
        for t in made:
            t.free()
        if own:
            runtime.finalize()
    return out


def _device_sections(kernels: list[DeviceKernel], soc: str, stem: str) -> list[str]:
    out = ["// ---- PTO device kernels (--target npu, SoC " + soc + ") " + "-" * 40,
           "// Each is a translation unit of its own: build kernel k with -DPYPTO_DEVICE_KERNEL=k, e.g.",
           f"//   pypto codegen --idl {stem}.idl --target npu --build npu     (bisheng, needs CANN)",
           f"//   pypto codegen --idl {stem}.idl --target npu --build cpusim  (g++ against pto-isa)"]
    out += [f"//   {k.index}: {k.operator}: {k.title} [{k.core} cores]" for k in kernels]
    out.append("#if defined(PYPTO_DEVICE_KERNEL)")
    for k in kernels:
        out += [f"#if PYPTO_DEVICE_KERNEL == {k.index}", k.cpp.rstrip("\n"), "#endif"]
    return out + ["#endif  // PYPTO_DEVICE_KERNEL", ""]


def build_device_kernels(path: Path, kernels: list[DeviceKernel], kind: str, soc: str) -> list[Path]:
    """Build each device kernel of the generated file into <stem>_<kernel>_<kind>.so beside it."""
    from ..backends import build_cpp
    text = path.read_text()
    built = []
    for k in kernels:
        so = build_cpp(f"#define PYPTO_DEVICE_KERNEL {k.index}\n{text}", kind, soc, k.core, k.name)
        dst = path.with_name(f"{path.stem.removesuffix('_pypto')}_{k.name}_{kind}.so")
        shutil.copyfile(so, dst)
        built.append(dst)
    return built


def _dims(text: str) -> dict[str, int]:
    """"M=128,N=4096" -> {"M": 128, "N": 4096} (ConfigError on anything else)."""
    from ..errors import ConfigError
    out = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        name, _, value = item.partition("=")
        if not name.isidentifier() or not value.strip().isdigit() or int(value) < 1:
            raise ConfigError(f"--dims: {item!r} is not SYMBOL=SIZE",
                              rule="--dims binds dimension symbols to positive sizes",
                              fix="write e.g. --dims M=128,N=4096")
        out[name] = int(value)
    return out


def main(argv: list[str] | None = None, prog: str = "python -m pto.codegen") -> int:
    """The codegen command: writes the .cpp and prints its path; 2 on an error (printed)."""
    ap = argparse.ArgumentParser(prog=prog,
                                 description="Generate <stem>_pypto.cpp from an IDL file.")
    ap.add_argument("--idl", required=True, help="the IDL file")
    ap.add_argument("--output_dir", "--output-dir", default=".", help="where to write the .cpp")
    ap.add_argument("--target", choices=("pypto", "npu"), default="pypto",
                    help="npu: also carry each operator's PTO device kernels")
    ap.add_argument("--soc", default=None, help="the SoC the device kernels are for (default a2a3)")
    ap.add_argument("--dims", default="", help="sizes the device kernels' tiles are chosen for, "
                    "e.g. M=128,N=4096 (default 1024 for every symbol)")
    ap.add_argument("--build", choices=("none", "auto", "npu", "cpusim"), default="auto",
                    help="build the device kernels: npu (bisheng), cpusim (g++ against pto-isa), "
                         "auto (npu where bisheng is found), none")
    args = ap.parse_args(argv)
    from . import parse_file
    try:
        module = parse_file(args.idl)
        kernels, soc = None, args.soc
        if args.target == "npu":
            soc = soc or "a2a3"
            kernels = device_kernels(module, soc, _dims(args.dims))
        text = generate(module, args.target, Path(args.idl).name, kernels, soc)
        out_dir = Path(args.output_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = re.sub(r"\W", "_", Path(args.idl).stem)
        path = out_dir / f"{stem}_pypto.cpp"
        path.write_text(text)
        if kernels:
            kind = args.build
            if kind == "auto":
                from ..backends import can_build
                kind = "npu" if can_build("npu") else "none"
                if kind == "none":
                    print("note: bisheng/CANN not found: the device kernels are written, not built "
                          "(--build cpusim builds them against pto-isa)", file=sys.stderr)
            if kind != "none":
                for so in build_device_kernels(path, kernels, kind, soc):
                    print(so)
    except PtoError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: cannot write into {args.output_dir}: {e.strerror}", file=sys.stderr)
        return 2
    print(path)
    return 0
