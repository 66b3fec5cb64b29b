"""Golden-reference bundles: record every kernel launch of a run on one backend, replay the same
launches on another and compare, launch by launch.

A bundle is plain files: ``manifest.json`` (pypto's version, the backend, SoC and script, and per
launch the kernel, its source, the block count, its arguments and the sha256 of its emitted C++),
``kernels/<name>_<sha>.cpp`` (that C++), ``script.py`` and ``launch_NNNN.npz`` (each tensor argument before the launch, ``in_K``, and after it,
``out_K``; bfloat16 and fp8 arrays are stored as their bits, the manifest names their dtype).

Replaying runs the same program again (``pypto golden compare`` re-runs the bundle's copy of the
recorded script, or ``--script`` when it imports modules of its own): the
K-th launch gets exactly the recorded inputs copied into its tensors, so a difference upstream
does not spread, and each tensor afterwards is compared with the recorded one by
``assert_close``. Every ``load_insn`` and custom instruction launches kernels, so they are
recorded and replayed too.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import runpy
import shutil
import sys
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .. import dtypes as D
from .. import runtime
from ..errors import ConfigError, PtoError
from .targets import TARGETS, backend_and_mode
from .compare import MismatchError, assert_close

FORMAT = 1
SCRIPT = "script.py"           # the recorded script, copied into the bundle


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "V" or a.dtype.type.__module__ == "ml_dtypes" else a


def _unbits(a: np.ndarray, dtype: str) -> np.ndarray:
    dt = D.as_dtype(dtype, context="golden bundle")
    return a.view(dt.np) if a.dtype != np.dtype(dt.np) else a


class Recorder:
    """The launch hook that writes a bundle (use ``record(dir)``)."""

    def __init__(self, out: Path, script: str | None = None, script_args: list[str] | None = None):
        self.out, self.script, self.script_args = out, script, list(script_args or [])
        self.launches: list[dict] = []
        self._hashes: dict = {}
        out.mkdir(parents=True, exist_ok=True)

    def __call__(self, kern, block_dim: int, args: tuple, launch) -> None:
        from ..tensor import Tensor
        before = {f"in_{i}": _bits(a.numpy()) for i, a in enumerate(args) if isinstance(a, Tensor)}
        launch()
        after = {f"out_{i}": _bits(a.numpy()) for i, a in enumerate(args) if isinstance(a, Tensor)}
        k = len(self.launches)
        np.savez(self.out / f"launch_{k:04d}.npz", **before, **after)
        sess = runtime.current()
        self.launches.append({
            "index": k, "kernel": kern.name,
            "source": f"{getattr(kern.fn, '__module__', '?')}:{kern.fn.__qualname__}",
            "blocks": block_dim, "backend": sess.backend.name, "soc": sess.soc.name,
            "args": [{"tensor": i, "shape": list(a.shape), "dtype": a.dtype.name} if isinstance(a, Tensor)
                     else {"scalar": a} for i, a in enumerate(args)],
            "cpp_sha256": self._hash(kern, args)})

    def _hash(self, kern, args: tuple) -> str | None:
        try:
            key = (kern.name, kern.signature(args))
            if key not in self._hashes:
                cpp = kern.cpp(*args)
                digest = self._hashes[key] = hashlib.sha256(cpp.encode()).hexdigest()
                (self.out / "kernels").mkdir(exist_ok=True)
                (self.out / "kernels" / f"{kern.name}_{digest[:12]}.cpp").write_text(cpp)
            return self._hashes[key]
        except PtoError:
            return None

    def finish(self) -> None:
        from .. import __version__
        sess = runtime._session
        manifest = {"format": FORMAT, "pypto": __version__, "script": self.script,
                    "script_args": self.script_args,
                    "backend": sess.backend.name if sess else None, "soc": sess.soc.name if sess else None,
                    "launches": self.launches}
        (self.out / "manifest.json").write_text(json.dumps(manifest, indent=1))


class Replayer:
    """The launch hook that replays a bundle's launches and compares (use ``compare(dir)``)."""

    def __init__(self, bundle: Path, **tolerance: Any):
        self.bundle = bundle
        self.manifest = load_manifest(bundle)
        self.tolerance = {k: v for k, v in tolerance.items() if v is not None}
        self.results: list[dict] = []
        self.extra = 0

    def __call__(self, kern, block_dim: int, args: tuple, launch) -> None:
        from ..tensor import Tensor
        k = len(self.results) + self.extra
        recs = self.manifest["launches"]
        if k >= len(recs):
            self.extra += 1
            launch()
            return
        rec = recs[k]
        data = np.load(self.bundle / f"launch_{k:04d}.npz")
        if rec["kernel"] != kern.name:
            self.results.append({"index": k, "kernel": kern.name, "ok": False,
                                 "problem": f"the run launches {kern.name} where the bundle has {rec['kernel']}"})
            launch()
            return
        for i, a in enumerate(args):
            if isinstance(a, Tensor) and f"in_{i}" in data:
                a.copy_from(_unbits(data[f"in_{i}"], rec["args"][i]["dtype"]))
        launch()
        problems = []
        for i, a in enumerate(args):
            if isinstance(a, Tensor) and f"out_{i}" in data:
                want = _unbits(data[f"out_{i}"], rec["args"][i]["dtype"])
                try:
                    assert_close(a.numpy(), want, what=f"launch {k} ({kern.name}) argument {i}",
                                 **self.tolerance)
                except MismatchError as e:
                    problems.append(str(e).split("\n  Rule:")[0])
        self.results.append({"index": k, "kernel": kern.name, "ok": not problems,
                             "problem": "\n".join(problems)})

    def summary(self) -> str:
        recs = self.manifest["launches"]
        bad = [r for r in self.results if not r["ok"]]
        lines = [f"{len(self.results)} of {len(recs)} recorded launches replayed, {len(bad)} differ"
                 f" (recorded on {self.manifest.get('backend')}/{self.manifest.get('soc')}, "
                 f"replayed on {runtime._session.backend.name if runtime._session else '?'})"]
        if len(self.results) < len(recs):
            lines.append(f"  the run made {len(self.results)} launches; the bundle has {len(recs)}")
        if self.extra:
            lines.append(f"  the run made {self.extra} launches more than the bundle has")
        lines += [r["problem"] for r in bad]
        return "\n".join(lines)

    @property
    def ok(self) -> bool:
        return (all(r["ok"] for r in self.results) and not self.extra
                and len(self.results) == len(self.manifest["launches"]))


def load_manifest(bundle: Path) -> dict:
    try:
        m = json.loads((Path(bundle) / "manifest.json").read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"{bundle}: not a golden bundle ({e})",
                          rule="a bundle is a directory with manifest.json and launch_NNNN.npz files",
                          fix="record one with `pypto golden record SCRIPT.py --out DIR`") from None
    if m.get("format") != FORMAT:
        raise ConfigError(f"{bundle}: bundle format {m.get('format')!r}, this pypto reads {FORMAT}",
                          rule="bundles are read by the pypto that wrote them or a newer one",
                          fix="record it again")
    return m


@contextlib.contextmanager
def _hooked(hook) -> Iterator:
    if runtime.launch_hook is not None:
        raise ConfigError("pypto.testing.record/compare: a launch hook is already active",
                          rule="one recording or replay at a time", fix="end the other one first")
    runtime.launch_hook = hook
    try:
        yield hook
    finally:
        runtime.launch_hook = None


@contextlib.contextmanager
def record(out: str | os.PathLike, script: str | None = None,
           script_args: list[str] | None = None) -> Iterator[Recorder]:
    """Record every kernel launch inside the block into the bundle directory ``out``."""
    rec = Recorder(Path(out), script, script_args)
    with _hooked(rec):
        try:
            yield rec
        finally:
            rec.finish()


@contextlib.contextmanager
def compare(bundle: str | os.PathLike, **tolerance: Any) -> Iterator[Replayer]:
    """Replay the bundle's launches as the block makes them; ``.ok`` and ``.summary()`` after.
    ``tolerance``: ulp=, rtol=, atol= for assert_close (its dtype defaults otherwise)."""
    rep = Replayer(Path(bundle), **tolerance)
    with _hooked(rep):
        yield rep


# -- the command line -------------------------------------------------------------------------------

def _environment(backend: str | None, soc: str | None) -> None:
    from ..config import reload_env
    if backend:
        name, mode = backend_and_mode(backend)
        os.environ["PYPTO_BACKEND"] = name
        if mode:
            os.environ["PYPTO_SIM_MODE"] = mode
    if soc:
        os.environ["PYPTO_SOC"] = soc
    reload_env()


def _run_script(script: str, argv: list[str]) -> None:
    old = sys.argv
    sys.argv = [script, *argv]
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        sys.argv = old


def main(argv: list[str], prog: str = "pypto golden") -> int:
    """``pypto golden record SCRIPT.py [ARGS] --backend X --out DIR`` and ``pypto golden compare
    DIR --backend Y``: 0 when every launch matches, 1 when one differs, 2 on a usage error."""
    import argparse
    ap = argparse.ArgumentParser(prog=prog, description="record and compare golden-reference bundles")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="run a script and record every kernel launch")
    r.add_argument("script")
    r.add_argument("args", nargs="*", help="the script's own arguments (after -- if they look like options)")
    c = sub.add_parser("compare", help="re-run a bundle's script on another backend and compare")
    c.add_argument("bundle")
    c.add_argument("--script", help="run this script instead of the bundle's copy of the recorded one")
    for p in (r, c):
        p.add_argument("--backend", choices=TARGETS)
        p.add_argument("--soc", choices=("a2a3", "a5"))
    r.add_argument("--out", required=True)
    for k in ("ulp", "rtol", "atol"):
        c.add_argument(f"--{k}", type=int if k == "ulp" else float)
    ns = ap.parse_args(argv)
    _environment(ns.backend, ns.soc)
    try:
        if ns.cmd == "record":
            rest = [a for a in ns.args if a != "--"]
            Path(ns.out).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ns.script, Path(ns.out) / SCRIPT)      # compare runs this copy
            with record(ns.out, script=SCRIPT, script_args=rest) as rec:
                _run_script(ns.script, rest)
            print(f"recorded {len(rec.launches)} launches into {ns.out}")
            return 0
        m = load_manifest(Path(ns.bundle))
        script = ns.script or str(Path(ns.bundle) / m["script"])
        with compare(ns.bundle, ulp=ns.ulp, rtol=ns.rtol, atol=ns.atol) as rep:
            _run_script(script, m.get("script_args", []))
        print(rep.summary())
        return 0 if rep.ok else 1
    except PtoError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        from .. import finalize
        finalize()
