"""Every Python snippet of README.md and docs/user-guide.md runs as written, and where the text
shows its output right after it, the output is what it prints."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)


def snippets(doc: str):
    """(index, code, shown output or None, file name to save as) for each ```python block."""
    text = (REPO / doc).read_text()
    blocks = list(FENCE.finditer(text))
    for i, m in enumerate(blocks):
        if m.group(1) != "python" or "import pypto" not in m.group(2):
            continue
        shown, name = None, "snippet.py"
        if i + 1 < len(blocks) and blocks[i + 1].group(1) == "":
            between = text[m.end():blocks[i + 1].start()]
            if len(between.strip()) < 60:        # the output block follows the code directly
                shown = blocks[i + 1].group(2)
                saved = re.search(r"saved as `(\w+\.py)`", between)
                name = saved.group(1) if saved else name
        yield i, m.group(2), shown, name


CASES = [(doc, i, code, shown, name) for doc in ("README.md", "docs/user-guide.md")
         for i, code, shown, name in snippets(doc)]


def _norm(s: str) -> list[str]:
    return [" ".join(line.split()) for line in s.strip().splitlines() if line.strip()]


@pytest.mark.parametrize("doc,i,code,shown,name", CASES, ids=[f"{c[0]}#{c[1]}" for c in CASES])
def test_snippet_runs_and_prints_what_the_doc_shows(doc, i, code, shown, name, tmp_path):
    if "breakpoint()" in code:
        code = code.replace("breakpoint()", "pass  # breakpoint() needs a terminal")
    (tmp_path / name).write_text(code)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for var in ("PYPTO_BACKEND", "PYPTO_SOC", "PYPTO_SIM_MODE"):
        env.pop(var, None)
    r = subprocess.run([sys.executable, name], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, f"{doc} snippet {i} failed:\n{r.stderr[-3000:]}"
    if shown is not None:
        got = _norm(r.stdout)
        for line in _norm(shown):
            assert line in got, f"{doc} snippet {i}: shown line {line!r} not printed; got:\n{r.stdout}"


def test_docs_have_snippets():
    assert len(CASES) >= 10


def test_every_documented_deviation_has_a_section_in_fidelity_md():
    """conformance/deviations.py names a heading of docs/fidelity.md for each deviation; the
    page must explain every one of them (and name each test it covers)."""
    from conformance.deviations import DEVIATIONS
    text = (Path(__file__).resolve().parents[1] / "docs" / "fidelity.md").read_text()
    headings = {line[3:].strip() for line in text.splitlines() if line.startswith("## ")}
    for d in DEVIATIONS:
        assert d.doc in headings, f"docs/fidelity.md has no section '## {d.doc}'"
