"""The ``npu-cpusim`` backend: pypto's emitted C++ built with g++ against pto-isa's CPU backend
(``PTO_ISA_ROOT``) and run on host memory through the NPU backend's launcher. Code nobody here
wrote runs pypto's kernels: the first external check of pypto's semantics."""
from __future__ import annotations

from ...errors import NpuUnavailableError


def is_available() -> tuple[bool, list[str]]:
    from . import toolchain
    missing = toolchain.missing(toolchain.discover_cached(), "cpusim")
    return (not missing), missing


def create(soc, device: int, options=None):
    from . import toolchain
    from .backend import NpuBackend
    from .host_acl import HostAcl
    from .runtime import AclRuntime
    ok, missing = is_available()
    if not ok:
        raise NpuUnavailableError(
            "the npu-cpusim backend cannot run here:\n    - " + "\n    - ".join(missing),
            rule="npu-cpusim builds pypto's C++ with a C++20 compiler against pto-isa's headers",
            fix="set PTO_ISA_ROOT to a pto-isa checkout and make g++ (or CXX) available; or use "
                "the simulator: pypto.init(backend='sim')")
    return NpuBackend(soc, device, name="npu-cpusim", runtime=AclRuntime(HostAcl()),
                      target_kind="cpusim", toolchain=toolchain.discover())
