"""numpy models of the communication instructions (comm-semantics.md), over the ranks' arrays:
``world[r]`` is rank r's copy of a tensor. Written from the semantics; no pypto code."""
from __future__ import annotations

import numpy as np

CMP = {"EQ": np.equal, "NE": np.not_equal, "GT": np.greater, "GE": np.greater_equal,
       "LT": np.less, "LE": np.less_equal}
OPS = {"Sum": np.add, "Max": np.maximum, "Min": np.minimum}


def tput(world: list[np.ndarray], peer: int, src: np.ndarray, atomic: str = "None") -> list[np.ndarray]:
    """The peer's tensor = src (AtomicAdd: += src, in the element type)."""
    out = [w.copy() for w in world]
    out[peer] = (out[peer] + src).astype(src.dtype) if atomic == "AtomicAdd" else src.copy()
    return out


def tget(world: list[np.ndarray], peer: int) -> np.ndarray:
    return world[peer].copy()


def tnotify(signal: np.ndarray, value: int, op: str) -> np.ndarray:
    """Element 0 of an int32 signal is set to, or increased by, value (wrapping)."""
    out = signal.copy().reshape(-1)
    out[0] = np.int32(value) if op == "Set" else (out[:1].astype(np.int64) + value).astype(np.int32)[0]
    return out.reshape(signal.shape)


def twait(signal: np.ndarray, value: int, cmp: str) -> bool:
    """Whether TWAIT returns (TTEST's result): every element satisfies ``element cmp value``."""
    return bool(np.all(CMP[cmp](signal, value)))


def tgather(members: list[np.ndarray], dst: np.ndarray) -> np.ndarray:
    """dst rows r*H .. = member r (dimension 3 of the 5-D view: rows of a 2-D tensor)."""
    out, h = dst.copy(), members[0].shape[-2]
    for r, m in enumerate(members):
        out[..., r * h:(r + 1) * h, :] = m
    return out


def tscatter(src: np.ndarray, n: int) -> list[np.ndarray]:
    h = src.shape[-2] // n
    return [src[..., r * h:(r + 1) * h, :].copy() for r in range(n)]


def tbroadcast(src: np.ndarray, n: int) -> list[np.ndarray]:
    return [src.copy() for _ in range(n)]


def treduce(members: list[np.ndarray], root: int, op: str) -> np.ndarray:
    """acc = the root's, then acc = acc op member r for r ascending, skipping the root."""
    acc = members[root].copy()
    for r, m in enumerate(members):
        if r != root:
            with np.errstate(over="ignore"):
                acc = OPS[op](acc, m).astype(acc.dtype)
    return acc


REFERENCE = {"TPUT": tput, "TGET": tget, "TNOTIFY": tnotify, "TWAIT": twait, "TTEST": twait,
             "TGATHER_COMM": tgather, "TSCATTER_COMM": tscatter, "TBROADCAST": tbroadcast,
             "TREDUCE": treduce}
