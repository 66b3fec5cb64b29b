"""A compiled kernel kept as native object code, so a later process launches it without numba.

numba's import is most of a warm second process's first launch. After a kernel's first launch,
the object code numba made for it and for every implementation it calls through ``xcall``
(lib/xcall.py) is written beside the kernel cache, with a one-argument entry point. A later
process that traces the same kernel (same IR, SoC and pypto sources) loads those objects with
llvmlite's JIT linker alone and calls the entry through ctypes. Whatever this cannot hold (a
kernel calling numba helpers beyond exception reporting, a non-ELF platform, another CPU,
arguments of other types) is launched through numba as before.
"""
from __future__ import annotations

import ctypes
import dataclasses
import enum
import glob
import hashlib
import importlib.util
import json
import os
import struct
import sys
import tempfile
import threading
import time
import weakref
from operator import contains, is_, itemgetter
from typing import Any, Callable

import numpy as np

from .options import source_hash

FORMAT = "pypto-native-3"
ENTRY = "pypto.native.entry"
# numba helpers a kernel's objects may name without numba's Python side: NRT's memory functions
# (its extension module's init binds them to malloc/free), the CPython wrapper's and exception
# reporting's, pure math, and the BLAS products (each finds SciPy's BLAS itself, holding the
# GIL). A kernel reaching any other (random state, LAPACK) stays with numba.
_HELPERS_ALLOWED = frozenset({
    "numba_do_raise", "numba_unpickle", "numba_runtime_build_excinfo_struct",
    "numba_gil_ensure", "numba_gil_release", "numba_frexp", "numba_frexpf", "numba_ldexp",
    "numba_ldexpf", "numba_nextafter", "numba_nextafterf", "numba_attempt_nocopy_reshape",
    "numba_xxgemm", "numba_xxgemv", "numba_xxdot"})
_SCALARS = {"int64": (int, np.int64), "float64": (float, np.float64), "bool": (bool, np.bool_)}
_FORMATS = {"int64": "q", "float64": "d", "bool": "?7x"}     # one 64-bit word each
_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.dirname(os.path.dirname(_HERE))


class Unkeyable(Exception):
    """The kernel holds a value the key cannot spell; it is launched through numba."""


# -- the key: everything the generated code depends on ------------------------------------------
def _canon(x: Any, out: list[str], memo: dict[int, int]) -> None:
    if x is None or isinstance(x, (bool, int, float, str, bytes, np.generic)):
        out.append(f"{type(x).__name__}:{x!r}")
    elif isinstance(x, (tuple, list)):
        out.append(f"{type(x).__name__}[")
        for e in x:
            _canon(e, out, memo)
        out.append("]")
    elif isinstance(x, dict):
        out.append("{")
        for k in sorted(x, key=repr):
            _canon(k, out, memo)
            _canon(x[k], out, memo)
        out.append("}")
    elif isinstance(x, enum.Enum):
        out.append(f"{type(x).__qualname__}.{x.name}")
    elif isinstance(x, np.dtype):
        out.append(f"dtype:{x.str}")
    elif isinstance(x, type):
        out.append(f"type:{x.__module__}.{x.__qualname__}")
    elif dataclasses.is_dataclass(x) or hasattr(x, "__dict__"):
        if id(x) in memo:
            out.append(f"@{memo[id(x)]}")
            return
        memo[id(x)] = len(memo)
        cls = type(x)
        if cls.__module__ not in sys.modules or not cls.__module__.startswith("pypto"):
            raise Unkeyable(f"{cls.__module__}.{cls.__qualname__}")
        attrs = dict(vars(x)) if hasattr(x, "__dict__") else {
            f.name: getattr(x, f.name) for f in dataclasses.fields(x)}
        for name in ("programs", "findings", "site", "source"):
            attrs.pop(name, None)            # what backends made, the checker's report, where
                                             # the user wrote it: none of it is in the code
        out.append(f"{cls.__module__}.{cls.__qualname__}(")
        for k in sorted(attrs):
            out.append(k + "=")
            _canon(attrs[k], out, memo)
        out.append(")")
    else:
        raise Unkeyable(type(x).__qualname__)


_FINGERPRINT: list[str] = []


def _fingerprint() -> str:
    """pypto's sources, the numba and llvmlite releases, Python (the CPU is checked at load)."""
    if not _FINGERPRINT:
        h = hashlib.sha256(f"{FORMAT}\n{sys.version}\n{source_hash(_PACKAGE)}\n".encode())
        for pkg in ("numba", "llvmlite"):
            spec = importlib.util.find_spec(pkg)
            path = os.path.join(os.path.dirname(spec.origin), "_version.py") if spec and spec.origin else ""
            try:
                with open(path, "rb") as fh:
                    h.update(fh.read())
            except OSError:
                h.update(b"?")
        _FINGERPRINT.append(h.hexdigest())
    return _FINGERPRINT[0]


def kernel_key(kernel, soc, events: bool) -> str | None:
    """A name for the kernel's generated code, from its IR after the passes (None: unkeyable)."""
    out: list[str] = [_fingerprint(), f"events={events}"]
    try:
        _canon(soc, out, {})
        _canon(kernel, out, {})
    except (Unkeyable, RecursionError):
        return None
    return hashlib.sha256("\x00".join(out).encode()).hexdigest()[:32]


def _host() -> list[str]:
    import llvmlite.binding as llvm
    return [llvm.get_process_triple(), llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()]


# -- ELF: which symbols an object leaves for the loader ------------------------------------------
def symbols(obj: bytes) -> tuple[set[str], set[str]] | None:
    """(undefined names, defined global or weak names) of an ELF64 little-endian object (None:
    another format)."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    undefined: set[str] = set()
    defined: set[str] = set()
    for s in secs:
        if s[1] != 2:                                  # SHT_SYMTAB
            continue
        strtab = secs[s[6]][4]
        for off in range(s[4], s[4] + s[5], 24):
            name, info, _, shndx = struct.unpack_from("<IBBH", obj, off)
            if not name or (info >> 4) not in (1, 2):  # STB_GLOBAL, STB_WEAK
                continue
            text = obj[strtab + name:obj.index(b"\0", strtab + name)].decode()
            (undefined if shndx == 0 else defined).add(text)
    return undefined, defined


# -- saving, in the process that compiled (or loaded) the kernel with numba ----------------------
def keep_object_code() -> None:
    """numba drops a cached library's object code once its JIT has loaded it; keep a copy to save
    (a library compiled in this process keeps its own)."""
    from numba.core.codegen import CPUCodeLibrary as Lib
    if getattr(Lib, "_pypto_keeps_objects", False):
        return
    unserialize = Lib._unserialize.__func__

    def _unserialize(cls, codegen, state):
        lib = unserialize(cls, codegen, state)
        if state[1] == "object":
            lib._pypto_object = state[2][0]
        return lib
    Lib._unserialize, Lib._pypto_keeps_objects = classmethod(_unserialize), True


def _object_of(lib) -> bytes | None:
    return getattr(lib, "_pypto_object", None) or getattr(lib, "_compiled_object", None)


def _arg_spec(ty) -> list | None:
    from numba.core import types
    if isinstance(ty, types.Array):
        if ty.layout != "C" or not ty.mutable or not ty.aligned:
            return None
        return ["a", str(np.dtype(str(ty.dtype))), ty.ndim]
    name = str(ty) if ty != types.boolean else "bool"
    return ["s", name] if name in _SCALARS else None


def layout(spec: list) -> tuple[list[int], int]:
    """Each argument's first word in a kernel entry's words, and their count: the scalars first,
    in order (one struct packs a launch's scalars at C speed), then the arrays (each its numba
    data model: meminfo, parent, size, itemsize, data, shape, strides)."""
    at, n = [0] * len(spec), 0
    for want in ("s", "a"):
        for i, s in enumerate(spec):
            if s[0] == want:
                at[i] = n
                n += _size(s)
    return at, n


def _size(s: list) -> int:
    return 5 + 2 * s[2] if s[0] == "a" else 1


def where(spec: list) -> list[int]:
    """The word of each flattened argument scalar (entry.entry_module's ``where``)."""
    at, _ = layout(spec)
    return [at[i] + k for i, s in enumerate(spec) for k in range(_size(s))]


def _wrapper(cres, spec: list) -> bytes:
    """Object code of the kernel's entry: one pointer to its arguments (``spec``, each
    ``_arg_spec``) as 64-bit words (entry.py, laid out by ``layout``)."""
    import llvmlite.binding as llvm
    from .entry import Unpackable, entry_module
    ctx = cres.target_context
    fnty = ctx.call_conv.get_function_type(cres.signature.return_type, cres.signature.args)
    try:
        mod = entry_module(fnty, cres.fndesc.llvm_func_name, ENTRY, where(spec))
    except Unpackable as e:
        raise Unkeyable(str(e)) from None
    llmod = llvm.parse_assembly(str(mod))
    codegen = cres.library.codegen
    llmod.triple, llmod.data_layout = codegen._llvm_module.triple, str(codegen._tm.target_data)
    return codegen._tm.emit_object(llmod)


@dataclasses.dataclass
class Obj:
    """One object file of a kernel's native form: its code, the symbols it leaves undefined and
    those it defines, and the xcall names it provides (name -> the symbol of its function)."""
    data: bytes
    undefined: list[str]
    defines: list[str]
    provides: dict[str, str]


def _collect(cres) -> tuple[list[Obj], set[str]]:
    """The kernel's objects (its own and every xcall callee's, transitively), and what they
    leave to the process (Python's C API, libc, numba's helpers)."""
    from .lib import xcall
    with xcall._LOCK:
        by_name = {name: key for key, (name, _) in xcall._DONE.items()}
    objects, undefined, index, todo = [], set(), {}, [(cres.library, None)]
    while todo:
        lib, provides = todo.pop()
        if id(lib) in index:
            if provides:
                objects[index[id(lib)]].provides.update(provides)
            continue
        obj = _object_of(lib)
        syms = None if obj is None else symbols(obj)
        if syms is None:
            raise Unkeyable("no ELF object code")
        names, defines = syms
        needs = sorted(n for n in names if n.startswith("pypto.xcall."))
        undefined.update(n for n in names if not n.startswith("pypto.xcall."))
        index[id(lib)] = len(objects)
        objects.append(Obj(obj, sorted(names), sorted(defines), dict(provides or {})))
        for n in needs:
            if n not in by_name:
                raise Unkeyable(f"unknown callee {n}")
            module, qualname, argtypes = by_name[n]
            disp = sys.modules[module]
            for part in qualname.split("."):
                disp = getattr(disp, part)
            callee = disp.overloads[argtypes]
            todo.append((callee.library, {n: callee.fndesc.llvm_func_name}))
    bad = sorted(n for n in undefined if n.startswith("numba_") and n not in _HELPERS_ALLOWED)
    if bad:
        raise Unkeyable(f"numba helpers {', '.join(bad)}")
    return objects, undefined


def save(cache_dir: str, key: str, fn, gen) -> None:
    """Write the kernel's native form (or a note of why it has none) under ``cache_dir``."""
    meta: dict[str, Any] = {"format": FORMAT, "fingerprint": _fingerprint()}
    blobs: list[bytes] = []
    try:
        if len(fn.overloads) != 1:
            raise Unkeyable("several specialisations")
        (cres,) = fn.overloads.values()
        args = [_arg_spec(t) for t in cres.signature.args]
        if None in args:
            raise Unkeyable("argument types")
        objects, undefined = _collect(cres)
        from numba.core.compiler_lock import global_compiler_lock
        with global_compiler_lock:           # llvmlite's LLVM context is numba's too
            entry = _wrapper(cres, args)
        syms = symbols(entry)
        objects.append(Obj(entry, sorted(syms[0]), sorted(syms[1]), {}))
        blobs = [o.data for o in objects]
        meta.update(host=_host(), args=args, undefined=sorted(undefined),
                    objects=[{"hash": hashlib.sha256(o.data).hexdigest()[:32], "undefined": o.undefined,
                              "defines": o.defines, "provides": o.provides} for o in objects],
                    params=gen.params, shape_vars=gen.shape_vars, spaces=gen.spaces,
                    space_params=gen.space_params)
    except Unkeyable as e:
        meta["refused"] = str(e)
    except Exception:  # noqa: BLE001 - never fail a launch over its native copy; a later
        return         # process may try again
    root = os.path.join(cache_dir, "native")
    try:
        os.makedirs(root, exist_ok=True)
        for o, blob in zip(meta.get("objects", ()), blobs):
            path = os.path.join(root, o["hash"] + ".o")
            if not os.path.exists(path):
                _write(path, blob)
        _write(os.path.join(root, key + ".json"), json.dumps(meta).encode())
    except OSError:
        return
    if not _PRUNED:
        _PRUNED.append(True)
        prune(root)


_PRUNED: list[bool] = []
STALE_AFTER = 600.0                  # seconds: younger files may belong to a save still under way


def prune(root: str, now: float | None = None) -> int:
    """Delete what no process of this pypto can use: entries saved under other sources or
    releases (their fingerprint differs), then objects no entry names. Files younger than
    STALE_AFTER are kept, since another process may be between writing an entry's objects and
    its description. Returns the bytes freed. Runs once per process, on the saving thread."""
    now = time.time() if now is None else now
    keep: set[str] = set()
    freed = 0
    old: list[str] = []
    for path in glob.glob(os.path.join(root, "*.json")):
        try:
            st = os.stat(path)
            with open(path, "rb") as f:
                meta = json.loads(f.read())
        except OSError:
            continue
        except ValueError:
            meta = None
        young = now - st.st_mtime < STALE_AFTER
        if isinstance(meta, dict) and (young or meta.get("fingerprint") == _fingerprint()):
            keep.update(o.get("hash", "") for o in meta.get("objects", ()) if isinstance(o, dict))
        elif not young:
            old.append(path)
    for path in old + glob.glob(os.path.join(root, "*.o")):
        if path.endswith(".o") and os.path.basename(path)[:-2] in keep:
            continue
        try:
            st = os.stat(path)
            if now - st.st_mtime >= STALE_AFTER:
                os.remove(path)
                freed += st.st_size
        except OSError:
            pass
    return freed


def _write(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


_SAVING: list[threading.Thread] = []


def save_later(cache_dir: str, key: str, fn, gen) -> None:
    """save() on a thread of its own; the interpreter waits for it before exiting."""
    t = threading.Thread(target=save, args=(cache_dir, key, fn, gen), name="pypto-native-save")
    _SAVING[:] = [s for s in _SAVING if s.is_alive()] + [t]
    t.start()


# -- loading, in a later process ------------------------------------------------------------------
LOADS = 0                            # kernels this process launches from their native form
_HELPER_ADDRS: dict[str, int] = {}
_LOAD_LOCK = threading.Lock()
_LINK_LOCK = threading.Lock()
_ENGINES: list = []
_BY_KEY: dict[tuple[str, str], "NativeKernel"] = {}


def _helpers() -> dict[str, int]:
    """numba's C helpers by symbol name, from its two extension modules loaded on their own
    (importing the numba package is what this module avoids)."""
    if not _HELPER_ADDRS:
        spec = importlib.util.find_spec("numba")
        root = os.path.dirname(spec.origin)
        for modname, rel, prefix in (("numba._helperlib", "_helperlib", "numba_"),
                                     ("numba.core.runtime._nrt_python", "core/runtime/_nrt_python", "NRT_")):
            mod = sys.modules.get(modname)
            if mod is None:
                found = glob.glob(os.path.join(root, *rel.split("/")) + ".*")
                found = [f for f in found if f.endswith((".so", ".pyd"))]
                s = importlib.util.spec_from_file_location(modname, found[0])
                mod = importlib.util.module_from_spec(s)
                s.loader.exec_module(mod)
                sys.modules[modname] = mod
            _HELPER_ADDRS.update({prefix + k: v for k, v in mod.c_helpers.items()})
    return _HELPER_ADDRS


def read(cache_dir: str, key: str) -> dict | None:
    """The saved description of a kernel's native form, if any (``refused`` says why not)."""
    try:
        with open(os.path.join(cache_dir, "native", key + ".json"), "rb") as f:
            meta = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("format") == FORMAT else None


def load(cache_dir: str, key: str, meta: dict, fallback: Callable[[], Callable]) -> "NativeKernel | None":
    """The kernel saved under ``key``, linked once per process (kernel objects traced alike share
    it): its objects in a JIT engine of their own, callees before their callers (each callee's
    xcall name is then defined for the process, as lib/xcall.py defines it). None if anything
    does not fit. Engines are never freed: code linked later may call into them."""
    if "refused" in meta:
        return None
    with _LOAD_LOCK:
        done = _BY_KEY.get((cache_dir, key))
    if done is not None:
        return done
    fn = _link(cache_dir, meta, fallback)
    if fn is not None:
        with _LOAD_LOCK:
            fn = _BY_KEY.setdefault((cache_dir, key), fn)
    return fn


def _link(cache_dir: str, meta: dict, fallback: Callable[[], Callable]) -> "NativeKernel | None":
    try:
        objects = []
        for o in meta["objects"]:
            with open(os.path.join(cache_dir, "native", o["hash"] + ".o"), "rb") as f:
                data = f.read()
            if hashlib.sha256(data).hexdigest()[:32] != o["hash"]:
                return None
            objects.append(Obj(data, o["undefined"], o["defines"], o["provides"]))
        import llvmlite.binding as llvm
        if meta["host"] != _host():
            return None
        lock = _LINK_LOCK
        if "numba.core.compiler_lock" in sys.modules:       # numba compiles in this process too:
            lock = sys.modules["numba.core.compiler_lock"].global_compiler_lock  # one LLVM context
        with lock:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            # the engine first: making one opens the process's own symbols (Python's C API, libc)
            tm = llvm.Target.from_default_triple().create_target_machine()
            engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
            for name in meta["undefined"]:
                if llvm.address_of_symbol(name) is None:
                    addr = _helpers().get(name)
                    if addr is None:
                        return None
                    llvm.add_symbol(name, addr)
            _ENGINES.append(engine)
            linked: set[str] = set()
            while objects:
                ready = _linkable(objects, linked, llvm.address_of_symbol)
                if not ready:
                    return None              # LLVM aborts the process on a missing symbol
                for o in ready:
                    engine.add_object_file(llvm.ObjectFileRef.from_data(o.data))
                engine.finalize_object()
                for o in ready:
                    linked.update(o.defines)
                    for name, symbol in o.provides.items():
                        if llvm.address_of_symbol(name) is None:
                            llvm.add_symbol(name, engine.get_function_address(symbol))
                objects = [o for o in objects if all(o is not r for r in ready)]
            addr = engine.get_function_address(ENTRY)
    except (OSError, KeyError, TypeError, ValueError, RuntimeError, ImportError, IndexError):
        return None
    if not addr:
        return None
    global LOADS
    LOADS += 1
    return NativeKernel(meta["args"], engine, addr, fallback)


def _linkable(objects: list[Obj], linked: set[str], known: Callable[[str], Any]) -> list[Obj]:
    """The objects whose every undefined symbol is known to the process, defined by an object
    already linked, or defined by another object of the answer."""
    ready = objects
    while True:
        defs = linked.union(*(o.defines for o in ready))
        keep = [o for o in ready if all(n in defs or known(n) for n in o.undefined)]
        if len(keep) == len(ready):
            return keep
        ready = keep


class NativeKernel:
    """Called like the numba kernel it was saved from (the same arguments); arguments of other
    types, or an exception inside (numba's error path), go to ``fallback()``, the numba kernel.
    Each thread packs the arrays' words once while the same arrays come back (a repeated launch
    changes only scalars, such as the block index, packed by one struct); it holds them by weak
    reference, so a freed tensor is still noticed by the caller."""

    def __init__(self, args: list, engine, addr: int, fallback: Callable[[], Callable]):
        self._spec, self._engine, self._fallback, self._numba = args, engine, fallback, None
        self._fn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(addr)
        self._at, self._words = layout(args)
        self._arrays = [i for i, s in enumerate(args) if s[0] == "a"]
        scalars = [i for i, s in enumerate(args) if s[0] == "s"]
        self._types = tuple(_SCALARS[args[i][1]] for i in scalars)
        self._put = struct.Struct("<" + "".join(_FORMATS[args[i][1]] for i in scalars)).pack_into
        self._scalars_of = _getter(scalars)
        self._arrays_of = _getter(self._arrays)
        self._local = threading.local()
        self.overloads = {"native": None}    # one specialisation, counted when it was loaded

    def pack(self, args) -> "Packed | None":
        """The arguments as the entry's words, or None where one does not fit the saved types."""
        if len(args) != len(self._spec):
            return None
        w = np.zeros(self._words, np.int64)
        for i in self._arrays:
            a, (_, dtype, ndim), at = args[i], self._spec[i], self._at[i]
            if not (isinstance(a, np.ndarray) and a.dtype.name == dtype and a.ndim == ndim
                    and a.flags.c_contiguous and a.flags.writeable and a.flags.aligned):
                return None
            w[at + 2:at + 5] = (a.size, a.itemsize, a.ctypes.data)
            w[at + 5:at + 5 + ndim] = a.shape
            w[at + 5 + ndim:at + 5 + 2 * ndim] = a.strides
        packed = Packed(w)
        return packed if self._put_scalars(packed, args) else None

    def _put_scalars(self, packed: "Packed", args) -> bool:
        vals = self._scalars_of(args)
        if not all(map(contains, self._types, map(type, vals))):     # exact types, as numba's
            return False
        try:
            self._put(packed.raw, 0, *vals)
        except struct.error:               # an int beyond int64
            return False
        return True

    def bind(self, args) -> Callable[[], int] | None:
        """A launch with these arguments, made once and repeated (backend.prepare): it returns
        the entry's status, 0 unless the kernel raised. The caller keeps the arrays alive."""
        packed = self.pack(args)
        if packed is None:
            return None
        fn, ptr = self._fn, packed.ptr
        return lambda keep=packed: fn(ptr)

    def numba(self) -> Callable:
        if self._numba is None:
            self._numba = self._fallback()
        return self._numba

    def __call__(self, *args) -> None:
        last = getattr(self._local, "last", None)
        packed = None
        if last is not None and len(args) == len(self._spec):
            packed, refs = last
            if not (all(map(is_, self._arrays_of(args), map(_deref, refs)))
                    and self._put_scalars(packed, args)):
                packed = None
        if packed is None:
            packed = self.pack(args)
            if packed is None:
                return self.numba()(*args)
            self._local.last = (packed, [weakref.ref(args[i]) for i in self._arrays])
        if self._fn(packed.ptr) != 0:
            self.numba()(*args)            # numba raises what the kernel raised, as it would have


def _getter(idx: list[int]) -> Callable[[tuple], tuple]:
    """A tuple of the items at ``idx`` (operator.itemgetter's speed, a tuple for any length)."""
    if not idx:
        return lambda args: ()
    if len(idx) == 1:
        i = idx[0]
        return lambda args: (args[i],)
    return itemgetter(*idx)


_deref = weakref.ref.__call__


class Packed:
    """A launch's arguments as words, and their address. It holds raw pointers, not the arrays:
    the caller keeps those alive while it runs."""
    __slots__ = ("words", "ptr", "raw")

    def __init__(self, words: np.ndarray):
        self.words, self.ptr, self.raw = words, words.ctypes.data, memoryview(words).cast("B")
