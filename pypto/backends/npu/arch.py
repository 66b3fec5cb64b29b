"""NPU architecture facts as data: bisheng arch names, defines and SoC-name -> profile mapping.

Everything here is a table (npu-backend-notes.md 1.1 and 1.4); code only looks things up, so adding
an SoC or a flag is a one-line data change.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ...errors import NpuUnavailableError, SocError

CORE_KINDS = ("vec", "cube", "mix")
SOC_OVERRIDE_VAR = "PYPTO_NPU_SOC"


@dataclass(frozen=True)
class NpuArch:
    """How bisheng targets one pypto SoC profile: arch per core kind, memory-base define, flags."""
    profile: str                      # pypto SoC profile name ("a2a3", "a5")
    npu_arch: int                     # value of __NPU_ARCH__ on the device
    aicore_arch: Mapping[str, str]    # core kind -> --cce-aicore-arch value
    memory_base: str                  # the define pto-isa selects its memory model with
    extra_flags: tuple[str, ...] = ()

    def arch_for(self, core: str) -> str:
        """The --cce-aicore-arch value for a core kind ("vec", "cube" or "mix")."""
        try:
            return self.aicore_arch[core]
        except KeyError:
            raise SocError(f"core kind {core!r} is not one of {', '.join(CORE_KINDS)}",
                           rule="a kernel runs on vector cores, cube cores or both (mix)",
                           fix="use core='vec', 'cube' or 'mix'") from None


ARCHS: Mapping[str, NpuArch] = MappingProxyType({
    "a2a3": NpuArch(
        profile="a2a3", npu_arch=2201,
        aicore_arch=MappingProxyType({"vec": "dav-c220-vec", "cube": "dav-c220-cube", "mix": "dav-c220"}),
        memory_base="MEMORY_BASE"),
    "a5": NpuArch(
        profile="a5", npu_arch=3510,
        aicore_arch=MappingProxyType({"vec": "dav-c310-vec", "cube": "dav-c310-cube", "mix": "dav-c310"}),
        memory_base="REGISTER_BASE", extra_flags=("-Wno-unknown-attributes",)),
})


def arch(profile: str) -> NpuArch:
    """The NpuArch of a pypto SoC profile name, or SocError naming the known ones."""
    try:
        return ARCHS[profile]
    except KeyError:
        raise SocError(f"SoC profile {profile!r} has no NPU architecture entry",
                       rule=f"NPU SoC profiles: {', '.join(ARCHS)}",
                       fix="use soc='a2a3' (Ascend 910B/910C) or soc='a5' (Ascend 950)") from None


@dataclass(frozen=True)
class SocEntry:
    """One row of the SoC table: a SoC-version prefix, its pypto profile and default core counts
    (None: not known here; ask the device with aclrtGetDeviceInfo)."""
    prefix: str
    profile: str
    aic_cores: int | None
    aiv_cores: int | None


# SoC version strings as aclrtGetSocName()/npu-smi report them. Matching is by longest prefix, so
# the specific rows win over the family fallbacks ("Ascend910B", "Ascend950"). Plain "Ascend910"
# (the first-generation 910A) is deliberately absent: it is not a PTO target.
SOC_TABLE: tuple[SocEntry, ...] = (
    SocEntry("Ascend910B1", "a2a3", 24, 48),
    SocEntry("Ascend910B2", "a2a3", 24, 48),        # also matches Ascend910B2C
    SocEntry("Ascend910B3", "a2a3", 20, 40),
    SocEntry("Ascend910B4", "a2a3", 20, 40),
    SocEntry("Ascend910B4-1", "a2a3", 20, 40),
    SocEntry("Ascend910B", "a2a3", None, None),
    SocEntry("Ascend910_93", "a2a3", 24, 48),       # 9391, 9392, 9381, 9382, 9372, 9362
    SocEntry("Ascend910C", "a2a3", 24, 48),
    SocEntry("Ascend910_9599", "a5", None, None),   # pto-isa's A5 simulator target
    SocEntry("Ascend950DT_957", "a5", 28, 56),
    SocEntry("Ascend950PR_957", "a5", 28, 56),
    SocEntry("Ascend950DT_958", "a5", 32, 64),
    SocEntry("Ascend950PR_958", "a5", 32, 64),
    SocEntry("Ascend950", "a5", None, None),
)


def soc_entry(name: str) -> SocEntry:
    """The SOC_TABLE row whose prefix matches ``name`` longest (case-insensitive), or
    NpuUnavailableError saying which SoC and the known ones."""
    key = name.strip().lower()
    best: SocEntry | None = None
    for entry in SOC_TABLE:
        if key.startswith(entry.prefix.lower()) and (best is None or len(entry.prefix) > len(best.prefix)):
            best = entry
    if best is None:
        known = ", ".join(e.prefix + "*" for e in SOC_TABLE)
        raise NpuUnavailableError(
            f"SoC {name!r} is not a known PTO target",
            rule=f"the npu backend knows the SoC families {known}",
            fix=f"set {SOC_OVERRIDE_VAR}=a2a3|a5 to force a profile")
    return best


def profile_for_soc_name(name: str) -> str:
    """The pypto SoC profile ("a2a3" or "a5") of a SoC version string such as "Ascend910B4"."""
    return soc_entry(name).profile


def default_cores(name: str) -> tuple[int | None, int | None]:
    """(AIC, AIV) default core counts of a SoC version string; None where not known here."""
    entry = soc_entry(name)
    return entry.aic_cores, entry.aiv_cores


def resolve_profile(soc_name: str | None, env: Mapping[str, str]) -> str:
    """The profile to build for: PYPTO_NPU_SOC when set (a2a3 | a5), else the device's SoC name."""
    forced = (env.get(SOC_OVERRIDE_VAR) or "").strip().lower()
    if forced:
        if forced not in ARCHS:
            raise NpuUnavailableError(
                f"{SOC_OVERRIDE_VAR}={forced!r} is not an NPU SoC profile",
                rule=f"{SOC_OVERRIDE_VAR} is one of: {', '.join(ARCHS)}",
                fix=f"set {SOC_OVERRIDE_VAR}=a2a3 or {SOC_OVERRIDE_VAR}=a5, or unset it")
        return forced
    if not soc_name:
        raise NpuUnavailableError(
            "the device reported no SoC name",
            rule="the build profile comes from aclrtGetSocName() or PYPTO_NPU_SOC",
            fix=f"set {SOC_OVERRIDE_VAR}=a2a3|a5 to force a profile")
    return profile_for_soc_name(soc_name)
