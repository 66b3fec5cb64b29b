"""``assert_close``: compare a result with a reference, element by element, at a tolerance of its
element type, and say what differs in a way a person can act on.

An element passes when both are NaN (``equal_nan``), both are the same infinity, or it is within
``ulp`` units in the last place of the dtype, or within ``atol + rtol * |expected|``. Defaults: exact
for integers and booleans; for floats a few ULP (float64/float32: 4, float16/bfloat16: 2, 8-bit
floats: 1) and no absolute or relative slack, all overridable. ULPs are counted on the dtype's
own bit patterns (ml_dtypes for bfloat16 and fp8), so a float16 result one rounding away from its
reference is 1 ULP whatever its magnitude.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as D
from ..errors import ArgumentError, DTypeError, PtoError

ULP = {8: 4, 4: 4, 2: 2, 1: 1}          # default ULP slack by float width in bytes
SHOWN = 5                               # mismatching elements listed in the report


class MismatchError(PtoError, AssertionError):
    """assert_close found elements outside the tolerance (an AssertionError, so test runners
    report it as a failure); ``.report`` holds the numbers as a dict."""


def default_tolerance(dtype: Any) -> dict:
    """The defaults for a dtype: {"ulp": n, "rtol": 0.0, "atol": 0.0} (ulp 0 for integers)."""
    dt = _dtype(dtype)
    if dt.kind in "iub":
        return {"ulp": 0, "rtol": 0.0, "atol": 0.0}
    return {"ulp": ULP.get(dt.itemsize, 1), "rtol": 0.0, "atol": 0.0}


def assert_close(actual: Any, expected: Any, *, dtype: Any = None, ulp: int | None = None,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = True,
                 what: str = "") -> dict:
    """Raise MismatchError unless ``actual`` matches ``expected`` at the tolerance of ``dtype``
    (default: the actual side's). Either side may be a numpy array or scalar, a pypto.Tensor, a
    torch tensor or a nested list. Returns the report (element count, worst errors) on success."""
    _check_tolerances(ulp=ulp, rtol=rtol, atol=atol, equal_nan=equal_nan)
    a, e = _array(actual, "actual"), _array(expected, "expected")
    if not (_real(a.dtype) and _real(e.dtype)):
        raise MismatchError(f"{what or 'assert_close'}: {a.dtype} vs {e.dtype}: not real numbers",
                            rule="assert_close compares real numbers element by element",
                            fix="compare the real and imaginary parts (or the fields) separately")
    dt = _dtype(dtype if dtype is not None else a.dtype)
    if not _real(dt):
        raise DTypeError(f"assert_close: dtype {dtype!r} is not a real number type",
                           rule="the tolerance is counted in the units of a real number type",
                           fix="pass dtype=pypto.float32 (or another PTO or numpy number type)")
    if dt.itemsize > 8:
        raise DTypeError(f"assert_close: dtype {dt} is wider than 64 bits",
                         rule="ULP distances are counted on bit patterns of at most 64 bits",
                         fix="pass dtype=np.float64 (ULPs of float64), or cast both sides to it")
    if a.shape != e.shape:
        raise MismatchError(f"{what or 'assert_close'}: shapes differ: actual {a.shape}, expected {e.shape}",
                            rule="assert_close compares element by element",
                            fix="compare arrays of one shape (reshape or slice one side)")
    tol = default_tolerance(dt)
    tol.update({k: v for k, v in (("ulp", ulp), ("rtol", rtol), ("atol", atol)) if v is not None})
    with np.errstate(all="ignore"):        # inf - inf, 0 * inf: NaN handled below, not warned
        report = _compare(a, e, dt, tol, equal_nan)
    if report["mismatches"]:
        err = MismatchError(_text(report, what), rule=_rule(dt, tol, equal_nan),
                            fix="look at the first indices listed; pass ulp=, rtol= or atol= if "
                                "the tolerance is what is wrong")
        err.report = report
        raise err
    return report


# -- conversions ----------------------------------------------------------------------------------

def _real(dt: np.dtype) -> bool:
    """Booleans, integers and real floats (numpy's or ml_dtypes' bfloat16 / fp8)."""
    return dt.kind in "biuf" or (dt.kind == "V" and dt.names is None and D.from_numpy(dt) is not None)


def _check_tolerances(**given: Any) -> None:
    for name, v in given.items():
        if v is None:
            continue
        if name == "equal_nan":
            good = isinstance(v, (bool, np.bool_))
            want = "True or False"
        elif name == "ulp":
            good = isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and v >= 0
            want = "a whole number >= 0"
        else:
            good = (isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
                    and v >= 0)                  # NaN fails v >= 0
            want = "a number >= 0"
        if not good:
            raise ArgumentError(f"assert_close: {name}={v!r} is not {want}",
                                rule="the tolerances are non-negative numbers (ulp a whole number)",
                                fix=f"pass {name}= as {want}, or leave it out for the dtype's default")


def _array(x: Any, side: str) -> np.ndarray:
    from ..tensor import Tensor
    if isinstance(x, Tensor):
        return x.numpy()
    if type(x).__module__.split(".")[0] == "torch":
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":            # numpy has no bfloat16: move the bits
            import ml_dtypes
            import torch
            return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()
    try:
        return np.asarray(x)
    except (TypeError, ValueError, OverflowError) as err:
        raise MismatchError(f"assert_close: the {side} side ({type(x).__name__}) is not an array: {err}",
                            rule="assert_close takes numpy arrays, pypto.Tensors, torch tensors, "
                                 "numbers and nested lists",
                            fix=f"convert the {side} side to a numpy array") from None


def _dtype(dtype: Any) -> np.dtype:
    if isinstance(dtype, D.DType):
        return np.dtype(dtype.np)
    try:
        return np.dtype(dtype)
    except Exception:  # noqa: BLE001 - np.dtype raises TypeError, ValueError, SyntaxError, ...
        return np.dtype(D.as_dtype(dtype, context="assert_close dtype").np)


def _ordered(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """The dtype's bit patterns as integers that order like the values (for ULP distances)."""
    nbits = 8 * dt.itemsize
    with np.errstate(over="ignore", invalid="ignore"):
        bits = np.ascontiguousarray(x.astype(dt)).view(f"u{dt.itemsize}").astype(np.int64)
    magnitude = np.int64((1 << (nbits - 1)) - 1)
    negative = bits < 0 if nbits == 64 else (bits >> (nbits - 1)) & 1 == 1   # 64 bits: wrapped
    return np.where(negative, -(bits & magnitude), bits).reshape(x.shape)   # 0-d stays 0-d


# -- the comparison ---------------------------------------------------------------------------------

def _compare(a: np.ndarray, e: np.ndarray, dt: np.dtype, tol: dict, equal_nan: bool) -> dict:
    n = a.size
    if dt.kind in "iub":
        if "f" in (a.dtype.kind, e.dtype.kind):      # a float side: 2.5 is not the integer 2
            av, ev = a.astype(np.float64), e.astype(np.float64)
        else:
            wide = np.uint64 if np.dtype(np.uint64) in (a.dtype, e.dtype) else np.int64
            av, ev = a.astype(wide), e.astype(wide)
        diff = np.abs(av.astype(np.float64) - ev.astype(np.float64))
        ok = (av == ev) | (diff <= tol["atol"])
        return _report(a, e, ok, diff, diff / np.maximum(np.abs(ev.astype(np.float64)), 1), None, n, dt)
    af, ef = a.astype(np.float64), e.astype(np.float64)
    an, en = np.isnan(af), np.isnan(ef)
    ai, ei = np.isinf(af), np.isinf(ef)
    finite = ~(an | en | ai | ei)
    diff = np.where(finite, np.abs(af - ef), np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        rel = np.where(finite, diff / np.maximum(np.abs(ef), np.finfo(np.float64).tiny), np.inf)
    ulps = np.where(finite, np.abs(_ordered(a, dt) - _ordered(e, dt)), np.iinfo(np.int64).max)
    ok = finite & ((ulps <= tol["ulp"]) | (diff <= tol["atol"] + tol["rtol"] * np.abs(ef)))
    ok |= (an & en) if equal_nan else False
    ok |= ai & ei & (np.sign(af) == np.sign(ef))
    r = _report(a, e, ok, diff, rel, ulps, n, dt)
    r["nan"] = {"actual_only": int((an & ~en).sum()), "expected_only": int((en & ~an).sum()),
                "first_actual_only": _first(an & ~en), "first_expected_only": _first(en & ~an)}
    r["inf"] = {"mismatched": int(((ai | ei) & ~ok & ~an & ~en).sum()),
                "first": _first((ai | ei) & ~ok & ~an & ~en)}
    return r


def _first(mask: np.ndarray) -> list[int] | None:
    idx = np.argwhere(mask)
    return [int(i) for i in idx[0]] if len(idx) else None


def _report(a, e, ok, diff, rel, ulps, n, dt) -> dict:
    bad = np.argwhere(~ok)
    r = {"elements": int(n), "mismatches": int(len(bad)), "dtype": str(dt),
         "first": [(tuple(int(i) for i in ix), a[tuple(ix)].item(), e[tuple(ix)].item()) for ix in bad[:SHOWN]]}
    for name, arr in (("abs", diff), ("rel", rel), ("ulp", ulps)):
        if arr is None or not arr.size:
            continue
        fin = np.where(np.isfinite(arr.astype(np.float64)) & (arr != np.iinfo(np.int64).max), arr, -1)
        if fin.max() < 0:
            continue
        at = np.unravel_index(int(np.argmax(fin)), arr.shape)
        r[f"worst_{name}"] = (float(fin[at]), tuple(int(i) for i in at))
    return r


def _text(r: dict, what: str) -> str:
    head = (f"{what + ': ' if what else ''}{r['mismatches']} of {r['elements']} elements differ "
            f"({100.0 * r['mismatches'] / max(r['elements'], 1):.3g}%, dtype {r['dtype']})")
    lines = [head, "  first mismatches (index: actual vs expected):"]
    lines += [f"    {list(ix)}: {av!r} vs {ev!r}" for ix, av, ev in r["first"]]
    for name, label in (("worst_abs", "worst absolute error"), ("worst_rel", "worst relative error"),
                        ("worst_ulp", "worst ULP distance")):
        if name in r:
            v, at = r[name]
            lines.append(f"  {label}: {v:.6g} at {list(at)}")
    nan = r.get("nan")
    for side in ("actual", "expected"):
        if nan and nan[f"{side}_only"]:
            lines.append(f"  NaN: {nan[f'{side}_only']} in {side} only (first at {nan[f'first_{side}_only']})")
    inf = r.get("inf")
    if inf and inf["mismatched"]:
        lines.append(f"  inf: {inf['mismatched']} elements with an infinity on one side or of "
                     f"opposite signs (first at {inf['first']})")
    return "\n".join(lines)


def _rule(dt: np.dtype, tol: dict, equal_nan: bool) -> str:
    if dt.kind in "iub":
        return f"{dt} results must be equal" + (f" within {tol['atol']:g}" if tol["atol"] else "")
    parts = [f"within {tol['ulp']} ULP of {dt}"]
    if tol["atol"] or tol["rtol"]:
        parts.append(f"or within atol={tol['atol']:g} + rtol={tol['rtol']:g} * |expected|")
    return (f"each element {' '.join(parts)}; infinities match in sign; NaN "
            f"{'matches NaN' if equal_nan else 'never matches'}")
