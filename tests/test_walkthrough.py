"""The tutorial's Steps 1-4 (examples/step*.py) as a new user runs them: each in a fresh Python
process, printing exactly what the tutorial shows. The expected lines are copied from the tutorial
text (seed-walkthrough.md), not from pypto's output; the code blocks of Steps 1-4 must appear
verbatim in the examples when the shared docs are present."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
WALKTHROUGH = REPO.parent / "shared" / "docs" / "seed-walkthrough.md"

# What the tutorial shows each step printing (its "# e.g." / "# add" / "# 0x1001" comments).
EXPECTED = {
    "step1_init.py": ["NPU devices: 1"],
    "step2_load_insn.py": ["name: add", "id: 0x1001", "operands: 3"],
    "step3_execute_numpy.py": ["result: [11. 22. 33. 44. 55.]"],
    "step4_device_tensor.py": ["result: [11. 22. 33. 44. 55.]"],
}
STEP_OF = {1: "step1_init.py", 2: "step2_load_insn.py", 3: "step3_execute_numpy.py",
           4: "step4_device_tensor.py"}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for var in ("PYPTO_BACKEND", "PYPTO_SOC", "PYPTO_SIM_MODE"):
        env.pop(var, None)              # the tutorial's defaults, whatever this shell has set
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def run_example(name: str, **env_extra: str) -> subprocess.CompletedProcess:
    env = _env()
    env.update(env_extra)
    return subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=str(REPO), env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_examples_are_the_four_steps():
    assert sorted(p.name for p in EXAMPLES.glob("step*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_prints_what_the_tutorial_shows(name):
    p = run_example(name)
    assert p.returncode == 0, f"{name} failed:\n{p.stderr}"
    assert p.stdout.splitlines() == EXPECTED[name], f"{name} printed:\n{p.stdout}\nstderr:\n{p.stderr}"


@pytest.mark.parametrize("name", ["step3_execute_numpy.py", "step4_device_tensor.py"])
def test_example_in_eager_mode(name):
    """The simulator's eager mode gives the same printed results."""
    p = run_example(name, PYPTO_SIM_MODE="eager")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == EXPECTED[name]


def _python_blocks(markdown: str, heading: str) -> list[str]:
    """The ```python code blocks of the section that starts with ``heading`` (up to the next ##)."""
    start = markdown.index(heading)
    nxt = markdown.find("\n## ", start + len(heading))
    section = markdown[start:nxt if nxt != -1 else len(markdown)]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.fixture(scope="module")
def walkthrough() -> str:
    if not WALKTHROUGH.is_file():
        pytest.skip(f"the shared tutorial text is not checked out next to the repository "
                    f"(looked for {WALKTHROUGH}); the verbatim comparison needs it")
    return WALKTHROUGH.read_text(encoding="utf-8")


@pytest.mark.parametrize("step", [1, 2, 3, 4])
def test_tutorial_code_appears_verbatim_in_the_example(walkthrough, step):
    blocks = _python_blocks(walkthrough, f"## Step {step} ")
    assert len(blocks) == 1, f"Step {step}: expected one python block, found {len(blocks)}"
    code = blocks[0].strip("\n")
    example = (EXAMPLES / STEP_OF[step]).read_text(encoding="utf-8")
    assert code in example, (f"the Step {step} snippet of seed-walkthrough.md is not verbatim in "
                             f"examples/{STEP_OF[step]}")


@pytest.mark.parametrize("step", [1, 2, 3, 4])
def test_expected_lines_are_the_tutorials_comments(walkthrough, step):
    """Guards EXPECTED above: each expected value is what the tutorial's comments show."""
    code = _python_blocks(walkthrough, f"## Step {step} ")[0]
    for line in EXPECTED[STEP_OF[step]]:
        value = line.split(": ", 1)[1]
        assert value in code, f"{value!r} is not shown in the Step {step} snippet"
