"""Backend registry: name -> module, imported only when first used (``import pypto`` loads neither
numba kernels nor CANN). Each module offers ``is_available() -> (bool, reasons)`` and
``create(soc, device, options) -> Backend``."""
from __future__ import annotations

import importlib

from ..errors import BackendUnavailableError

REGISTRY = {"sim": "pypto.backends.sim", "npu": "pypto.backends.npu",
            "npu-cpusim": "pypto.backends.npu.cpusim"}


def module(name: str):
    try:
        path = REGISTRY[name]
    except KeyError:
        raise BackendUnavailableError(f"unknown backend {name!r}",
                                      rule=f"backends: {', '.join(REGISTRY)}",
                                      fix="pypto.init(backend='sim') or PYPTO_BACKEND=sim") from None
    return importlib.import_module(path)


def is_available(name: str) -> tuple[bool, list[str]]:
    return module(name).is_available()


def usable(name: str) -> bool:
    """Whether backend ``name`` can run here (its module's quick ``usable()`` where it has one)."""
    mod = module(name)
    quick = getattr(mod, "usable", None)
    return quick() if quick is not None else mod.is_available()[0]


def emit_cpp(kernel, soc, guards: bool = True) -> str:
    """The PTO C++ source the NPU backends build for a kernel's IR (``kern.cpp()``); guards=False
    leaves out pypto's run-time guards (shorter to read, not what the backends build)."""
    from .. import __version__
    from .npu.emit import emit_kernel
    return emit_kernel(kernel, soc, header=f" {__version__}", guards=guards)


def core_kind(kernel) -> str:
    """"vec", "cube" or "mix": the AI cores a kernel's IR runs on (what bisheng builds it for)."""
    from .npu.emit import core_kind as kind
    return kind(kernel)


def build_cpp(source: str, kind: str, soc: str, core: str, name: str):
    """Build emitted PTO C++ into a shared library the way the NPU backends do: kind "npu"
    (bisheng, needs CANN) or "cpusim" (g++ against pto-isa's CPU backend). Returns its path (in
    the build cache); NpuUnavailableError if the toolchain is missing."""
    from .npu import build
    from .npu.toolchain import discover_cached
    return build.build(source, build.BuildTarget(kind, soc, core), discover_cached(), name=name)


def can_build(kind: str) -> bool:
    """Whether build_cpp(kind=...) has its compiler and headers here."""
    from .npu.toolchain import discover_cached
    tc = discover_cached()
    return tc.compiler(kind) is not None and tc.pto_isa_include is not None
