"""SoC profiles as data: on-chip capacities and alignments, GM size, core counts, layout choices.

Numbers follow pto-isa-semantics.md section 2 (buffer_limits.hpp) and npu-backend-notes.md 1.4.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import SocError

# Tile locations (pto::TileType) and the on-chip buffer each one lives in.
LOCATIONS = ("Vec", "Mat", "Left", "Right", "Acc", "Bias", "Scaling", "ScaleLeft", "ScaleRight")
BUFFER_OF = {"Vec": "UB", "Mat": "L1", "Left": "L0A", "Right": "L0B", "Acc": "L0C",
             "Bias": "BT", "Scaling": "FB", "ScaleLeft": "L0A_MX", "ScaleRight": "L0B_MX"}

KiB = 1024
GiB = 1024 ** 3


@dataclass(frozen=True)
class Space:
    """One on-chip memory space: the tile location, its buffer name, capacity and alignment (bytes)."""
    loc: str
    buffer: str
    capacity: int
    align: int = 32


@dataclass(frozen=True)
class SocProfile:
    name: str
    description: str
    npu_arch: int
    spaces: dict[str, Space]
    gm_bytes: int                 # device (HBM) capacity
    gm_align: int                 # device allocation alignment
    aic_cores: int                # cube cores
    aiv_cores: int                # vector cores
    left_layout: str              # TileLeft alias layout: "Zz" on a2a3, "Nz" on a5
    ub_scratch: tuple[int, int] | None = None   # hidden UB scratch used by some instructions
    notes: tuple[str, ...] = field(default=())

    def space(self, loc: str) -> Space:
        try:
            return self.spaces[loc]
        except KeyError:
            raise SocError(f"tile location {loc!r} does not exist on SoC {self.name}",
                           rule="locations with capacity 0 are absent on this SoC",
                           fix=f"use one of {', '.join(self.spaces)}") from None


def _spaces(**caps: int) -> dict[str, Space]:
    return {loc: Space(loc, BUFFER_OF[loc], cap) for loc, cap in caps.items() if cap > 0}


A2A3 = SocProfile(
    name="a2a3", description="Ascend 910B/910C (A2/A3, dav-c220)", npu_arch=2201,
    spaces=_spaces(Vec=192 * KiB, Mat=512 * KiB, Left=64 * KiB, Right=64 * KiB, Acc=128 * KiB,
                   Bias=1 * KiB, Scaling=2 * KiB, ScaleLeft=0, ScaleRight=0),
    gm_bytes=64 * GiB, gm_align=512, aic_cores=24, aiv_cores=48, left_layout="Zz",
    ub_scratch=(184 * KiB, 192 * KiB),
    notes=("TSEL/TSELS/TROWEXPAND<op>/TCVT may write UB bytes [188416, 196608)",),
)

A5 = SocProfile(
    name="a5", description="Ascend 950 (A5, dav-c310)", npu_arch=3510,
    spaces=_spaces(Vec=256 * KiB, Mat=512 * KiB, Left=64 * KiB, Right=64 * KiB, Acc=256 * KiB,
                   Bias=4 * KiB, Scaling=4 * KiB, ScaleLeft=4 * KiB, ScaleRight=4 * KiB),
    gm_bytes=128 * GiB, gm_align=512, aic_cores=32, aiv_cores=64, left_layout="Nz",
)

PROFILES: dict[str, SocProfile] = {p.name: p for p in (A2A3, A5)}
ALIASES = {"a2": "a2a3", "a3": "a2a3", "910b": "a2a3", "910c": "a2a3", "ascend910b": "a2a3",
           "950": "a5", "ascend950": "a5"}
DEFAULT_SOC = "a2a3"
# The most blocks one launch may start (the runtime's blockDim limit, the same on every SoC).
MAX_BLOCK_DIM = 65535


def get_profile(name: str | None) -> SocProfile:
    key = (name or DEFAULT_SOC).lower() if name is None or isinstance(name, str) else None
    key = ALIASES.get(key, key)
    try:
        return PROFILES[key]
    except KeyError:
        raise SocError(f"unknown SoC profile {name!r}",
                       rule=f"known profiles: {', '.join(PROFILES)}",
                       fix="pypto.init(soc='a2a3') for Ascend 910B/910C, soc='a5' for Ascend 950") from None
