"""The `pypto` command (info, doctor, --version, python -m pypto) and the PYPTO_* environment
settings it reports (read once per process, validated)."""
from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numba
import numpy as np
import pytest

import pypto
from pypto import cli
from pypto import errors as E
from pypto.backends.sim import options as O

REPO = Path(__file__).resolve().parents[1]
ENV_VARS = ("PYPTO_BACKEND", "PYPTO_SOC", "PYPTO_SIM_MODE", "PYPTO_SIM_THREADS", "PYPTO_SIM_NATIVE", "PYPTO_CACHE_DIR",
            "PYPTO_CPUSIM_CXXFLAGS")
# The version written in pyproject.toml (independent of pypto.__version__).
VERSION = re.search(r'^version\s*=\s*"([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M).group(1)
NPU_USABLE = os.path.exists("/dev/davinci0") and bool(os.environ.get("ASCEND_HOME_PATH"))


@pytest.fixture
def env(monkeypatch, tmp_path):
    """No PYPTO_* variable set except a private kernel cache; the cached settings re-read before
    and after the test (monkeypatch undone first)."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "kernels"))
    O.reload_env()
    yield monkeypatch
    monkeypatch.undo()
    O.reload_env()


def run(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


# -- pypto --version / python -m pypto ---------------------------------------------------------

def test_version_flag(capsys):
    with pytest.raises(SystemExit) as ei:
        cli.main(["--version"])
    assert ei.value.code == 0
    assert capsys.readouterr().out.strip() == f"pypto {VERSION}"


def test_python_dash_m_pypto_version():
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "pypto", "--version"], capture_output=True,
                       text=True, cwd=REPO, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"pypto {VERSION}"


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as ei:
        cli.main([])
    assert ei.value.code == 2


# -- pypto info ----------------------------------------------------------------------------------

def test_info_shows_versions_cache_and_settings(env, capsys, tmp_path):
    env.setenv("PYPTO_SIM_MODE", "eager")
    O.reload_env()
    code, out = run(capsys, "info")
    assert code == 0
    for piece in (f"pypto {VERSION}", f"Python {platform.python_version()}", f"numpy {np.__version__}",
                  f"numba {numba.__version__}", f"ml_dtypes {ml_dtypes.__version__}"):
        assert piece in out, piece
    assert f"kernel cache directory: {tmp_path / 'kernels'}" in out
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.strip().startswith("PYPTO_")}
    assert set(lines) == set(ENV_VARS)
    assert "set: 'eager'" in lines["PYPTO_SIM_MODE"]
    assert "set:" in lines["PYPTO_CACHE_DIR"] and str(tmp_path / "kernels") in lines["PYPTO_CACHE_DIR"]
    for var in ("PYPTO_BACKEND", "PYPTO_SOC", "PYPTO_SIM_THREADS"):
        assert "unset" in lines[var], lines[var]
    assert "a2a3" in lines["PYPTO_SOC"]                            # the default it falls back to
    assert str(os.cpu_count()) in lines["PYPTO_SIM_THREADS"]
    # the lines `pypto info` always had
    assert "soc a2a3:" in out and "soc a5:" in out
    assert re.search(r"ISA table: \d+ instructions; simulated: ", out)
    assert "seed instructions: add, sub, mul" in out


def test_info_flags_an_invalid_setting_instead_of_crashing(env, capsys):
    env.setenv("PYPTO_SIM_THREADS", "abc")
    O.reload_env()
    code, out = run(capsys, "info")
    assert code == 0
    line = next(ln for ln in out.splitlines() if "PYPTO_SIM_THREADS" in ln)
    assert "'abc'" in line and "INVALID" in line


# -- pypto doctor --------------------------------------------------------------------------------

def test_doctor_succeeds_where_the_simulator_works(env, capsys, tmp_path):
    code, out = run(capsys, "doctor")
    assert code == 0, out
    assert f"numba {numba.__version__}" in out
    assert "JIT compiles and runs" in out
    assert str(tmp_path / "kernels") in out
    assert "npu backend:" in out                                   # still reported


@pytest.mark.skipif(NPU_USABLE, reason="an NPU is set up here")
@pytest.mark.parametrize("argv", [["--require", "npu"], ["--backend", "npu"], ["--require", "all"],
                                  ["--require", "sim", "--require", "npu"]])
def test_doctor_fails_when_a_required_npu_is_missing(env, capsys, argv):
    code, out = run(capsys, "doctor", *argv)
    assert code == 1
    assert "ASCEND_HOME_PATH" in out or "/dev/davinci" in out    # names what is missing


@pytest.mark.skipif(NPU_USABLE, reason="an NPU is set up here")
def test_doctor_requires_the_backend_pypto_init_would_use(env, capsys):
    env.setenv("PYPTO_BACKEND", "npu")
    O.reload_env()
    assert run(capsys, "doctor")[0] == 1
    assert run(capsys, "doctor", "--require", "sim")[0] == 0


@pytest.mark.parametrize("var, value", [("PYPTO_SIM_THREADS", "abc"), ("PYPTO_SIM_MODE", "fast"),
                                        ("PYPTO_SOC", "nosuchsoc"), ("PYPTO_BACKEND", "cuda"),
                                        ("PYPTO_CPUSIM_CXXFLAGS", "-Ofast")])
def test_doctor_fails_on_a_setting_that_breaks_init(env, capsys, var, value):
    env.setenv(var, value)
    O.reload_env()
    code, out = run(capsys, "doctor")
    assert code == 1
    assert repr(value) in out and var in out                       # the value and the variable


def test_doctor_fails_when_numba_is_missing(env, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)               # `import numba` raises
    code, out = run(capsys, "doctor")
    assert code == 1
    assert "numba does not import" in out and "pip install numba" in out


def test_doctor_fails_when_the_cache_directory_cannot_be_made(env, capsys, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env.setenv("PYPTO_CACHE_DIR", str(blocker / "kernels"))        # under a regular file
    O.reload_env()
    code, out = run(capsys, "doctor")
    assert code == 1
    assert "PYPTO_CACHE_DIR" in out


def test_doctor_rejects_an_unknown_backend(capsys):
    with pytest.raises(SystemExit) as ei:
        cli.main(["doctor", "--require", "gpu"])
    assert ei.value.code == 2


# -- PYPTO_* settings: read once, validated -------------------------------------------------------

def test_environment_is_read_once_until_reload(env):
    env.setenv("PYPTO_SIM_THREADS", "3")
    env.setenv("PYPTO_SIM_MODE", "eager")
    O.reload_env()
    assert (pypto.SimOptions().threads, pypto.SimOptions().mode) == (3, "eager")
    env.setenv("PYPTO_SIM_THREADS", "5")                          # changed after the first read
    env.setenv("PYPTO_SIM_MODE", "compiled")
    assert (pypto.SimOptions().threads, pypto.SimOptions().mode) == (3, "eager")
    O.reload_env()
    assert (pypto.SimOptions().threads, pypto.SimOptions().mode) == (5, "compiled")


def test_explicit_options_still_beat_the_environment(env):
    env.setenv("PYPTO_SIM_THREADS", "3")
    O.reload_env()
    assert pypto.SimOptions(threads=1).threads == 1
    assert pypto.SimOptions(threads=np.int64(2)).threads == 2      # numpy integers accepted


@pytest.mark.parametrize("var, value, legal", [
    ("PYPTO_SIM_THREADS", "abc", "positive integer"),
    ("PYPTO_SIM_THREADS", "0", "positive integer"),
    ("PYPTO_SIM_THREADS", "-2", "positive integer"),
    ("PYPTO_SIM_MODE", "fast", "compiled"),
])
def test_bad_environment_values_are_pto_errors(env, var, value, legal):
    env.setenv(var, value)
    O.reload_env()
    with pytest.raises(E.ConfigError) as ei:
        pypto.SimOptions()
    err = ei.value
    assert isinstance(err, pypto.PtoError)
    msg = str(err)
    assert var in msg and repr(value) in msg and legal in msg
    assert err.rule and err.fix
    if var == "PYPTO_SIM_MODE":
        assert "eager" in msg


def test_bad_environment_value_fails_init_cleanly(env):
    from pypto.testing import finalize_quietly
    finalize_quietly()
    env.setenv("PYPTO_SIM_THREADS", "abc")
    O.reload_env()
    with pytest.raises(E.ConfigError, match="PYPTO_SIM_THREADS"):
        pypto.init(backend="sim")
    assert not pypto.is_initialized()


@pytest.mark.parametrize("kwargs", [dict(threads="4"), dict(devices=1.5), dict(uninit_byte=256),
                                    dict(gm_bytes=0), dict(threads=True), dict(cache_dir=3)])
def test_bad_sim_options_say_the_rule_and_the_fix(env, kwargs):
    with pytest.raises(E.PtoError) as ei:
        pypto.SimOptions(**kwargs)
    assert ei.value.rule and ei.value.fix
