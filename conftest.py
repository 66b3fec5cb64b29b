"""The suite's running order: test files run heaviest first.

`make test` hands whole files to its workers (xdist's --dist loadfile, so a file's kernels are
compiled by one worker) and keeps this order (--no-loadscope-reorder). xdist's own order (most
tests first) can leave a file of few but slow tests (the cube's, the complex family's) to one
worker at the end while the other has nothing left; longest first keeps the tail to small files.
The weights are seconds per file from a cold run, in tests/file_costs.json; `make test-costs`
measures them again. A file missing from it counts as the average file.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

COSTS = Path(__file__).parent / "tests" / "file_costs.json"
RECORD = "PYPTO_RECORD_FILE_COSTS"


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    try:
        costs = json.loads(COSTS.read_text())
    except (OSError, ValueError):
        return
    default = sum(costs.values()) / max(len(costs), 1)
    items.sort(key=lambda it: -costs.get(_file(it.nodeid), default))   # stable: files stay whole


class _Recorder:
    """Adds up each file's test durations (the controller sees every worker's reports)."""

    def __init__(self, out: str) -> None:
        self.out, self.costs = out, defaultdict(float)

    def pytest_runtest_logreport(self, report) -> None:
        self.costs[_file(report.nodeid)] += report.duration

    def pytest_sessionfinish(self) -> None:
        data = {f: round(s, 1) for f, s in sorted(self.costs.items())}
        Path(self.out).write_text(json.dumps(data, indent=1) + "\n")


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        return
    out = os.environ.pop(RECORD, None)       # not for the pytest runs some tests start
    if out:
        config.pluginmanager.register(_Recorder(os.path.abspath(out)), "pypto-file-costs")
