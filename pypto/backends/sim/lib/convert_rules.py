"""TCVT's per-SoC rules in plain Python (no numba): the effective rounding and saturation of a
conversion, resolved once per instruction while a kernel is traced. convert.py's numba functions
take the integer codes this returns, and re-export it."""
from __future__ import annotations

import numpy as np

from .codes import (BF16, CAST_NONE, CAST_ODD, CAST_RINT, CAST_ROUND, CAST_TRUNC, CODES, E4M3, E5M2,
                    F16, F32, HIF8, RMODES, SAT_CLAMP, SAT_WRAP)

_FLOATS = frozenset({F32, F16, BF16, E4M3, E5M2, HIF8})


# a5's vcvt to these destinations rounds one way whatever mode is asked (fp8: nearest even;
# hif8: ROUND_A, half away from zero); the legal sources are f32 (and f16 for hif8).
A5_FIXED_ROUND = {"e4m3": CAST_RINT, "e5m2": CAST_RINT, "hif8": CAST_ROUND}

# The six (src, dst) pairs whose three-argument TCVT keeps the low bits (saturation OFF).
WRAP_BY_DEFAULT = frozenset({("f16", "u8"), ("f16", "i8"), ("f32", "i16"), ("f16", "i16"),
                             ("i64", "i32"), ("i32", "i16")})


def _soc_name(soc) -> str:
    name = getattr(soc, "name", soc)
    if not isinstance(name, str):
        raise ValueError(f"unknown SoC {soc!r}")
    try:
        from pypto.isa.soc import ALIASES
    except Exception:  # pragma: no cover - the ISA package is edited concurrently
        ALIASES = {}
    key = name.lower()
    key = ALIASES.get(key, key)
    if key not in ("a2a3", "a5"):
        raise ValueError(f"unknown SoC {soc!r} (expected 'a2a3' or 'a5')")
    return key


def _rmode_int(rmode) -> int:
    if isinstance(rmode, (int, np.integer)) and not isinstance(rmode, bool):
        if 0 <= int(rmode) < len(RMODES):
            return int(rmode)
    elif isinstance(rmode, str):
        key = rmode.upper().replace("ROUNDMODE::", "")
        key = key if key.startswith("CAST_") else "CAST_" + key
        if key in RMODES:
            return RMODES.index(key)
    raise ValueError(f"unknown rounding mode {rmode!r} (expected one of {', '.join(RMODES)})")


def _sat_given(sat) -> int | None:
    if sat is None:
        return None
    if isinstance(sat, str):
        key = sat.upper().replace("SATURATIONMODE::", "")
        if key == "ON":
            return SAT_CLAMP
        if key == "OFF":
            return SAT_WRAP
    raise ValueError(f"unknown saturation mode {sat!r} (expected 'ON', 'OFF' or None)")


def resolve(soc, src: str, dst: str, rmode, sat=None) -> tuple[int, int, bool]:
    """The effective (rmode, sat, noop) of TCVT(dst <- src, rmode[, sat]) on `soc`.

    soc: "a2a3" / "a5" (or an alias known to pypto.isa.soc, or a SocProfile); src/dst: PTO short
    names ("f32", "i8", ...); rmode: "CAST_RINT" / "RINT" / RoundMode::CAST_RINT or its int;
    sat: "ON" / "OFF" / None (None = the three-argument TCVT).  Returns the CAST_* int to pass to
    cvt_bits (never CAST_NONE), SAT_CLAMP or SAT_WRAP, and noop=True when the instruction does
    nothing (dst keeps its contents): CAST_ODD on a5 for any pair but f32->f16.
    Pair legality is not checked here (the ISA table does that).
    """
    name = _soc_name(soc)
    for t in (src, dst):
        if t not in CODES:
            raise ValueError(f"unknown TCVT element type {t!r} (expected one of {', '.join(CODES)})")
    mode = _rmode_int(rmode)
    given = _sat_given(sat)
    pair = (src, dst)
    fsrc, fdst = CODES[src] in _FLOATS, CODES[dst] in _FLOATS

    # saturation
    default = SAT_WRAP if pair in WRAP_BY_DEFAULT else SAT_CLAMP
    if given is None or (name == "a2a3" and pair not in WRAP_BY_DEFAULT):
        eff_sat = default
    else:
        eff_sat = given

    # rounding
    noop = False
    if mode == CAST_ODD and pair != ("f32", "f16"):
        if name == "a5":
            noop = True
        mode = CAST_NONE
    if mode == CAST_NONE:
        mode = CAST_TRUNC if (name == "a2a3" and fsrc and not fdst) else CAST_RINT
    if name == "a2a3" and pair == ("i32", "f16"):
        mode, eff_sat = CAST_RINT, SAT_CLAMP       # dequantising convert: RNE, then +-65504
    if name == "a5" and dst in A5_FIXED_ROUND:
        mode = A5_FIXED_ROUND[dst]
        eff_sat = default                          # and no saturation bit is set for them
    return mode, eff_sat, noop
