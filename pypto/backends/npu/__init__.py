"""The Ascend NPU backend through CANN: kernels emitted as PTO C++, built with bisheng, launched
through pyACL. ``is_available`` lists every missing prerequisite (with how to get it) without
touching any CANN library; ``cpusim`` is the same path on pto-isa's CPU backend."""
from __future__ import annotations

import glob
import importlib.util

from ...errors import BackendUnavailableError, NpuUnavailableError


def _devices() -> list[str]:
    return glob.glob("/dev/davinci[0-9]*")


def _missing() -> list[str]:
    from . import toolchain
    missing = toolchain.missing(toolchain.discover_cached(), "npu")
    if importlib.util.find_spec("acl") is None:
        missing.append("pyACL (`import acl`) is not importable: source <CANN>/set_env.sh (or add "
                       "<CANN>/python/site-packages to PYTHONPATH) in the shell that runs Python")
    if not _devices():
        missing.append("no Ascend device: /dev/davinci* is not present (`npu-smi info` lists the "
                       "devices; in a container, pass the /dev/davinci* devices through)")
    return missing


def is_available() -> tuple[bool, list[str]]:
    """(usable, reasons it is not). Touches no CANN library."""
    missing = _missing()
    return (not missing), missing


def usable() -> bool:
    """is_available()[0], but a machine without an Ascend device answers at once: the toolchain
    search it skips was 15-45 ms of every pypto.init() that chooses its backend itself."""
    return bool(_devices()) and not _missing()


def create(soc, device: int, options=None):
    """The npu backend on ``device``; the SoC profile must be the chip's."""
    missing = _missing()
    if missing:
        raise NpuUnavailableError(
            "the npu backend cannot run here:\n    - " + "\n    - ".join(missing),
            rule="the npu backend needs CANN (bisheng, pyACL), pto-isa's headers and an Ascend device",
            fix="use the simulator: pypto.init(backend='sim'), or pto-isa's CPU backend: "
                "pypto.init(backend='npu-cpusim')")
    from . import arch, toolchain
    from .backend import NpuBackend
    from .runtime import AclRuntime
    rt = AclRuntime.from_pyacl()
    rt.init()
    chip = rt.soc_name()
    profile = arch.profile_for_soc_name(chip)
    if profile != soc.name:
        rt.finalize()
        raise BackendUnavailableError(
            f"the device is {chip} ({profile}) but the session's SoC profile is {soc.name}",
            rule="kernels are built and checked for the SoC they run on",
            fix=f"pypto.init(backend='npu', soc='{profile}') (or PYPTO_SOC={profile})")
    entry = arch.soc_entry(chip)
    aic, aiv = entry.aic_cores or soc.aic_cores, entry.aiv_cores or soc.aiv_cores
    return NpuBackend(soc, device, name="npu", runtime=rt, target_kind="npu",
                      toolchain=toolchain.discover(), max_blocks={"vec": aiv, "cube": aic, "mix": aic})
