"""One instruction, one unit: every table entry is either simulated, with an independent
reference and conformance cases, or listed as not simulated with a reason; names are derived
from the registry; registration is open at run time."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pypto
from pypto import errors as E
from pypto.ir import registry
from pypto.isa import TABLE

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = "\n".join(p.read_text() for p in sorted((ROOT / "conformance").glob("test_*.py")))



@pytest.mark.parametrize("name", list(TABLE))
def test_every_entry_is_simulated_with_a_reference_or_says_why_not(name):
    from conformance.references import REFERENCE
    simulated, why = registry.status(name)
    if simulated:
        assert name in REFERENCE, f"{name} is simulated: name its reference in a REFERENCE map " \
                                  "(conformance/reference.py or conformance/ref_*.py)"
        if REFERENCE[name] is not None:
            assert callable(REFERENCE[name]), f"no reference for {name}"
        seed = TABLE[name].seed
        used = re.search(rf"pto\.{name}\b|[\"']{name}[\"']", CONFORMANCE) or \
            (seed and re.search(rf"load_insn\(\s*[\"']{seed}[\"']", CONFORMANCE)) or \
            (seed and re.search(rf"[\"']{seed}[\"']", CONFORMANCE))
        assert used, f"{name} is simulated but no conformance case uses it"
    else:
        assert why and why != "not built yet", f"{name}: not simulated and no reason given"


@pytest.mark.parametrize("name", list(TABLE))
def test_every_simulated_instruction_has_a_cpp_emission_rule(name):
    """What the simulator runs, the NPU backends can emit: the unit carries both."""
    simulated, _ = registry.status(name)
    if not simulated:
        assert registry.get(name) is None or registry.get(name).sim is None
        return
    unit = registry.get(name)
    assert callable(unit.emit), f"{name} is simulated but its unit has no C++ emission rule"


def test_simulated_names_come_from_the_registry():
    sim = registry.simulated()
    assert set(sim) == {n for n, u in registry.units().items() if u.sim is not None}
    assert sim == [n for n in TABLE if n in sim]            # table order
    assert {"TEXP", "TROWSUM", "TCVT"} <= set(sim)


def test_seed_names_are_derived_from_units():
    pypto.init()
    try:
        names = pypto.list_insns()
        assert {"exp", "rowsum", "cast"} <= set(names)
        for seed in names:
            spec = pypto.isa.lookup(seed)
            assert registry.get(spec.name).seed is not None
    finally:
        pypto.finalize()


def test_registration_is_open_and_guarded():
    u = registry.get("TADD")
    with pytest.raises(E.PtoError, match="registered twice"):
        registry.register(registry.Unit("TADD"))
    with pytest.raises(E.PtoError, match="not in the ISA table"):
        registry.register(registry.Unit("TNOPE"))
    free = next(n for n in TABLE if registry.get(n) is None)    # an entry with no unit yet
    registry.register(registry.Unit(free, sim=None), replace=False)
    try:
        assert registry.get(free).sim is None
        assert registry.status(free)[0] is False
    finally:
        registry._UNITS.pop(free)
    assert registry.get("TADD") is u


def test_info_prints_the_status_of_every_instruction(capsys):
    from pypto.cli import main
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for name in TABLE:
        assert re.search(rf"{TABLE[name].opcode:#06x} {name}\s+(simulated|not simulated \[\d+\])", out), name
    assert "matrix issue" in out


LAZY_CHILD = """
import sys
import numpy as np
if STALE:                 # as if the unit modules had changed since _index.py was generated
    import types
    stub = types.ModuleType("pypto.units._index")
    stub.FINGERPRINT, stub.MODULES = "stale", {}
    sys.modules["pypto.units._index"] = stub
import pypto
from pypto import pto
from pypto.ir import registry
from pypto.isa import TABLE

@pypto.kernel
def k(x, y):
    t = pto.Tile(pto.Vec, pto.float32, (16, 64))
    pto.TLOAD(t, x)
    pto.TMULS(t, t, 3.0)
    pto.TSTORE(y, t)

pypto.init()
x, y = pypto.Tensor(np.ones((16, 64), np.float32)), pypto.zeros((16, 64))
k(x, y)
assert (y.numpy() == 3).all()
loaded = len([m for m in sys.modules if m.startswith("pypto.units.") and m != "pypto.units._index"])
lazy = [registry.status(n) for n in TABLE]      # the first unsimulated one loads every module
assert lazy == [registry.status(n) for n in TABLE]
print(loaded, len(pypto.units.modules()), sum(1 for s, _ in lazy if s))
"""


def test_a_process_imports_only_the_unit_modules_its_instructions_need(tmp_path):
    """The first full load writes which module registers each instruction; a later process
    imports just those of its kernel's instructions (a warm first launch: 0.11 -> 0.075 s), and
    a missing or damaged index loads them all. Statuses are the same either way. The packaged
    index (units/_index.py) stands in while the cache has none, unless it is stale."""
    def run(cache: str, stale: bool) -> list[int]:
        env = dict(os.environ, PYPTO_CACHE_DIR=str(tmp_path / cache))   # the session's numba cache
        return [int(v) for v in subprocess.run(
            [sys.executable, "-c", LAZY_CHILD.replace("STALE", str(stale))], env=env,
            capture_output=True, text=True, check=True).stdout.split()]
    first = run("k", stale=True)
    assert first[0] == first[1]                    # no index yet: every module
    second = run("k", stale=True)
    assert 0 < second[0] < first[1] // 2 and second[2] == first[2]
    (tmp_path / "k" / "units-index.json").write_text("{not json")
    assert run("k", stale=True)[0] == first[1]
    packaged = run("empty", stale=False)           # an empty cache, the committed index
    assert 0 < packaged[0] < first[1] // 2 and packaged[2] == first[2]


def test_the_packaged_unit_index_is_up_to_date():
    from pypto.docgen import UNITS_INDEX, units_index
    assert UNITS_INDEX.read_text(encoding="utf-8") == units_index(), \
        "pypto/units/_index.py is stale; run: python3 -m pypto.docgen"
