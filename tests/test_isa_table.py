"""Invariants of the ISA table (pypto.isa.TABLE) and of the generated instruction reference.

EXPECTED is written out by hand from pto-isa-semantics.md sections 5.1-5.11 and 6, in the order of
the doc's tables; it is an independent reference, not derived from the table.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import pypto.isa as isa
from pypto.dtypes import BY_NAME
from pypto.isa import reference_doc
from pypto.isa.schema import CATEGORY_BASE, PIPES
from pypto.isa.soc import LOCATIONS

EXPECTED = {
    "sync": "TSYNC TASSIGN TSETFMATRIX TSET_IMG2COL_RPT TSET_IMG2COL_PADDING",
    "elementwise": "TADD TSUB TMUL TDIV TMIN TMAX TABS TNEG TAND TOR TXOR TNOT TSHL TSHR TLOG TEXP "
                   "TSQRT TRSQRT TRECIP TRELU TPRELU TADDC TSUBC TREM TFMOD TCMP TSEL TCVT",
    "tile_scalar": "TEXPANDS TADDS TSUBS TMULS TDIVS TMINS TMAXS TREMS TFMODS TANDS TORS TXORS "
                   "TSHLS TSHRS TLRELU TADDSC TSUBSC TCMPS TSELS",
    "reduce_expand": "TROWSUM TROWPROD TROWMAX TROWMIN TCOLSUM TCOLPROD TCOLMAX TCOLMIN "
                     "TROWEXPAND TROWEXPANDADD TROWEXPANDSUB TROWEXPANDMUL TROWEXPANDDIV "
                     "TROWEXPANDMAX TROWEXPANDMIN TROWEXPANDEXPDIF TCOLEXPAND TCOLEXPANDADD "
                     "TCOLEXPANDSUB TCOLEXPANDMUL TCOLEXPANDDIV TCOLEXPANDMAX TCOLEXPANDMIN "
                     "TCOLEXPANDEXPDIF",
    "memory": "TLOAD TPREFETCH TSTORE TSTORE_FP MGATHER MSCATTER",
    "matmul": "TMATMUL TMATMUL_ACC TMATMUL_BIAS TMATMUL_MX TGEMV TGEMV_ACC TGEMV_BIAS TGEMV_MX",
    "movement": "TEXTRACT TEXTRACT_FP TINSERT TINSERT_FP TIMG2COL TMOV TMOV_FP TFILLPAD "
                "TFILLPAD_INPLACE TFILLPAD_EXPAND TRESHAPE TTRANS",
    "complex": "TPRINT TMRGSORT TSORT32 TGATHER TCI TTRI TPARTADD TPARTMAX TPARTMIN TPARTMUL "
               "TGATHERB TSCATTER TQUANT",
    # pto::comm::TGATHER / TSCATTER are renamed so that table names stay unique.
    "comm": "TPUT TGET TNOTIFY TWAIT TTEST TGATHER_COMM TSCATTER_COMM TREDUCE TBROADCAST",
    "intrinsic": "TPUSH TPOP TFREE TDEQUANT TPACK",
}
EXPECTED_COUNTS = {"sync": 5, "elementwise": 28, "tile_scalar": 19, "reduce_expand": 24,
                   "memory": 6, "matmul": 8, "movement": 12, "complex": 13, "comm": 9,
                   "intrinsic": 5}

# Opcodes fixed before this table was completed (and the examples of the brief): never change.
PINNED = {"TADD": 0x1001, "TSUB": 0x1002, "TMUL": 0x1003, "TDIV": 0x1004, "TMIN": 0x1005,
          "TMAX": 0x1006, "TEXPANDS": 0x1101, "TADDS": 0x1102, "TSUBS": 0x1103, "TMULS": 0x1104,
          "TDIVS": 0x1105, "TLOAD": 0x1301, "TPREFETCH": 0x1302, "TSTORE": 0x1303,
          "TSTORE_FP": 0x1304, "TASSIGN": 0x1702}

# The tutorial's seed names (they must keep their instructions), and the examples.
SEEDS = {"add": "TADD", "sub": "TSUB", "mul": "TMUL", "div": "TDIV", "min": "TMIN", "max": "TMAX",
         "adds": "TADDS", "muls": "TMULS", "exp": "TEXP", "rowsum": "TROWSUM", "cast": "TCVT"}
VECTOR_SEEDS = {"relu": "TRELU", "rem": "TREM", "and": "TAND", "cmp": "TCMP", "sel": "TSEL",
                "colmax": "TCOLMAX", "sort": "TSORT32", "rowmax": "TROWMAX", "sels": "TSELS"}

# Element types only a5 has.
A5_ONLY_DTYPES = {"e4m3", "e5m2", "hif8", "e8m0", "fp4e2m1x2", "fp4e1m2x2"}

KINDS = {"tile", "gm", "scalar"}
ROLES = {"out", "in", "inout", "tmp"}
SOCS = set(isa.PROFILES)

ALL = sorted(isa.TABLE.values(), key=lambda i: i.opcode)
ids = [i.name for i in ALL]


def _per_operand(ins) -> bool:
    return any(isinstance(d, tuple) for s in SOCS for d in ins.dtypes_on(s))


# -- coverage ----------------------------------------------------------------------------------
def test_profiles_are_a2a3_and_a5():
    assert SOCS == {"a2a3", "a5"}


@pytest.mark.parametrize("category", sorted(EXPECTED))
def test_category_holds_exactly_the_doc_instructions(category):
    expected = EXPECTED[category].split()
    assert len(expected) == EXPECTED_COUNTS[category]
    got = [i.name for i in ALL if i.category == category]
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing and not extra, f"missing {missing}, unexpected {extra}"


def test_no_instruction_outside_the_doc_sections():
    names = {n for v in EXPECTED.values() for n in v.split()}
    assert set(isa.TABLE) == names
    assert len(isa.TABLE) == sum(EXPECTED_COUNTS.values())


def test_every_category_is_a_known_block():
    assert {i.category for i in ALL} <= set(CATEGORY_BASE)


# -- opcodes -----------------------------------------------------------------------------------
def test_opcodes_unique():
    assert len({i.opcode for i in ALL}) == len(ALL)
    assert set(isa.BY_OPCODE) == {i.opcode for i in ALL}


def test_tadd_is_0x1001():
    assert isa.TABLE["TADD"].opcode == 0x1001


@pytest.mark.parametrize("name", sorted(PINNED))
def test_pinned_opcodes(name):
    assert isa.TABLE[name].opcode == PINNED[name]


@pytest.mark.parametrize("ins", ALL, ids=ids)
def test_opcode_inside_its_category_block(ins):
    base = CATEGORY_BASE[ins.category]
    assert base < ins.opcode < base + 0x100


@pytest.mark.parametrize("category", sorted(EXPECTED))
def test_opcodes_follow_doc_order_without_gaps(category):
    base = CATEGORY_BASE[category]
    by_opcode = [i.name for i in ALL if i.category == category]
    assert by_opcode == EXPECTED[category].split()
    indices = [i.opcode - base for i in ALL if i.category == category]
    assert indices == list(range(1, len(indices) + 1))


# -- names, seeds, lookup ----------------------------------------------------------------------
@pytest.mark.parametrize("ins", ALL, ids=ids)
def test_name_and_text_fields(ins):
    assert re.fullmatch(r"[A-Z][A-Z0-9_]*", ins.name)
    assert isa.TABLE[ins.name] is ins
    assert ins.summary and "\n" not in ins.summary
    assert ins.spec_ref
    assert all(isinstance(n, str) and n and "\n" not in n for n in ins.notes)
    for text in (ins.summary, *ins.notes):                 # would render as HTML in the reference
        assert not re.search(r"<[A-Za-z/]", text), text
    assert ins.domain in {"dst", "src"} | {o.name for o in ins.operands}


def test_seed_names_are_lower_case_unique_and_keep_the_tutorials():
    seeds = [i.seed for i in ALL if i.seed]
    assert len(seeds) == len(set(seeds))
    assert all(re.fullmatch(r"[a-z][a-z0-9]*", s) for s in seeds)
    assert isa.SEED_NAMES == {i.seed: i.name for i in ALL if i.seed}
    for name, instr in {**SEEDS, **VECTOR_SEEDS}.items():
        assert isa.SEED_NAMES[name] == instr


def test_lookup():
    assert isa.lookup("add") is isa.TABLE["TADD"]
    assert isa.lookup("tcvt") is isa.TABLE["TCVT"]
    assert isa.lookup("nope") is None


# -- pipes -------------------------------------------------------------------------------------
@pytest.mark.parametrize("ins", ALL, ids=ids)
def test_pipe_legal_on_every_profile(ins):
    from pypto.isa.schema import PipeRule
    if isinstance(ins.pipe, PipeRule):
        assert set(ins.pipe.table.values()) <= set(PIPES)
        names = {o.name for o in ins.operands}
        assert set(ins.pipe.operands) <= names
        for key in ins.pipe.table:
            assert len(key) == len(ins.pipe.operands) and set(key) <= set(LOCATIONS), key
    elif not isinstance(ins.pipe, str):
        assert set(ins.pipe) == SOCS
    for soc in SOCS:
        assert ins.pipe_on(soc) in PIPES or isinstance(ins.pipe, PipeRule) and ins.pipe.default is None


def test_pipe_spot_checks():
    t = isa.TABLE
    assert t["TLOAD"].pipe_on("a5") == "MTE2"
    assert t["TSTORE"].pipe_on("a2a3", {"src": "Vec"}) == "MTE3"
    assert t["TSTORE"].pipe_on("a5", {"src": "Acc"}) == "FIX"          # semantics 1.2: TSTORE_ACC
    assert t["TMOV"].pipe_on("a5", {"src": "Vec", "dst": "Vec"}) == "V"   # TMOV_V2V
    assert t["TMOV"].pipe_on("a5", {"src": "Mat", "dst": "Left"}) == "MTE1"
    assert t["TMOV"].pipe_on("a5", {"src": "Acc", "dst": "Vec"}) == "FIX"
    assert t["TEXTRACT"].pipe_on("a2a3", {"src": "Acc", "dst": "Mat"}) == "FIX"
    assert {t[n].pipe_on("a5") for n in EXPECTED["matmul"].split()} == {"M"}
    assert t["TCI"].pipe_on("a5") == "S"
    assert t["TRESHAPE"].pipe_on("a5") == "S"
    assert t["TSETFMATRIX"].pipe_on("a2a3") == "S"
    assert t["TSTORE_FP"].pipe_on("a5") == "FIX"
    assert t["TIMG2COL"].pipe_on("a5") == "MTE1"
    assert {t[n].pipe_on("a2a3") for n in EXPECTED["elementwise"].split()} == {"V"}


# -- operands ----------------------------------------------------------------------------------
@pytest.mark.parametrize("ins", ALL, ids=ids)
def test_operands_well_formed(ins):
    names = [o.name for o in ins.operands]
    assert len(names) == len(set(names)), "operand names must be unique"
    for o in ins.operands:
        assert o.kind in KINDS, o
        assert o.role in ROLES, o
        for soc in SOCS:
            assert set(o.locs_on(soc)) <= set(LOCATIONS), o
        if o.kind == "tile":
            assert any(o.locs_on(soc) for soc in SOCS), f"{o.name}: a tile operand needs a location"
        else:
            assert o.locs == (), f"{o.name}: only tile operands have locations"
        if o.kind == "scalar":
            assert o.group is None, f"{o.name}: scalars take no dtype group"
        assert o.group in (None, "T"), o


@pytest.mark.parametrize("ins", ALL, ids=ids)
def test_outputs_exist_for_tile_producers(ins):
    if ins.category in ("elementwise", "tile_scalar", "reduce_expand", "matmul"):
        assert ins.outputs and ins.operands[0].role in ("out", "inout"), "destination first"


# -- dtypes ------------------------------------------------------------------------------------
@pytest.mark.parametrize("ins", ALL, ids=ids)
def test_dtypes_have_both_profiles_and_one_form(ins):
    assert set(ins.dtypes) == SOCS
    for soc in SOCS:
        dts = ins.dtypes_on(soc)
        kinds = {isinstance(d, tuple) for d in dts}
        assert len(kinds) <= 1, f"{soc}: do not mix names and per-operand tuples"
        assert len(set(dts)) == len(dts), f"{soc}: duplicate dtype entries"


@pytest.mark.parametrize("ins", [i for i in ALL if not _per_operand(i)],
                         ids=[i.name for i in ALL if not _per_operand(i)])
def test_group_t_dtypes_are_known(ins):
    has_t = any(o.group == "T" for o in ins.operands)
    for soc in SOCS:
        dts = ins.dtypes_on(soc)
        for d in dts:
            assert d in BY_NAME, f"{soc}: unknown dtype {d!r}"
            assert BY_NAME[d].short == d, f"{soc}: use the short name, not {d!r}"
        if dts:
            assert has_t, "a dtype list needs at least one group-T operand"


@pytest.mark.parametrize("ins", [i for i in ALL if _per_operand(i)],
                         ids=[i.name for i in ALL if _per_operand(i)])
def test_per_operand_tuples(ins):
    assert all(o.group is None for o in ins.operands), \
        "operands typed by per-operand tuples must have group None"
    for soc in SOCS:
        for combo in ins.dtypes_on(soc):
            assert len(combo) == ins.num_operands, f"{soc}: {combo} vs {ins.num_operands} operands"
            for o, d in zip(ins.operands, combo):
                if d is None:
                    continue
                assert o.kind != "scalar", f"{soc}: scalar {o.name} gets no dtype"
                assert d in BY_NAME and BY_NAME[d].short == d, \
                    f"{soc}: unknown dtype {d!r} for {o.name}"


@pytest.mark.parametrize("ins", ALL, ids=ids)
def test_a5_only_types_not_on_a2a3(ins):
    flat = set()
    for d in ins.dtypes_on("a2a3"):
        flat |= set(d) if isinstance(d, tuple) else {d}
    assert not (flat & A5_ONLY_DTYPES)


def test_absent_on_a_soc_is_an_empty_tuple():
    t = isa.TABLE
    for name in ("TMATMUL_MX", "TGEMV_MX", "TPACK", "MGATHER", "MSCATTER"):
        assert t[name].dtypes_on("a2a3") == () and t[name].dtypes_on("a5")
    for name in ("TADDC", "TSUBC", "TADDSC", "TSUBSC"):
        assert t[name].dtypes_on("a2a3") == () and t[name].dtypes_on("a5") == ()


def test_dtype_spot_checks():
    t = isa.TABLE
    assert ("u8", "i32", "i32") in t["TCMP"].dtypes_on("a2a3")
    assert ("u32", "i8", "i8") in t["TCMP"].dtypes_on("a5")
    assert ("f16", "i32") in t["TCVT"].dtypes_on("a2a3")          # i32 -> f16, a2a3 only
    assert ("f16", "i32") not in t["TCVT"].dtypes_on("a5")
    for soc in SOCS:                                             # f32->i8, i16->i8 nowhere
        assert ("i8", "f32") not in t["TCVT"].dtypes_on(soc)
        assert ("i8", "i16") not in t["TCVT"].dtypes_on(soc)
    assert ("f32", "bf16", "bf16") in t["TMATMUL"].dtypes_on("a2a3")
    assert ("f32", "e4m3", "e5m2") not in t["TMATMUL"].dtypes_on("a2a3")
    assert ("f32", "e4m3", "e5m2") in t["TMATMUL"].dtypes_on("a5")
    assert t["TDIV"].dtypes_on("a2a3") == ("f16", "f32")


# -- params ------------------------------------------------------------------------------------
@pytest.mark.parametrize("ins", ALL, ids=ids)
def test_params_well_formed(ins):
    names = [p.name for p in ins.params]
    assert len(names) == len(set(names))
    for p in ins.params:
        assert p.type
        assert len(set(p.values)) == len(p.values)
        if p.values and p.default is not None:
            assert p.default in p.values, f"{p.name}: default {p.default!r} not a legal value"


def test_param_spot_checks():
    cmp = {p.name: p for p in isa.TABLE["TCMP"].params}["cmpMode"]
    assert cmp.values == ("EQ", "NE", "LT", "LE", "GT", "GE")
    rnd = {p.name: p for p in isa.TABLE["TCVT"].params}["rmode"]
    assert rnd.values[0] == "CAST_NONE" and rnd.values[-1] == "CAST_ODD" and len(rnd.values) == 7
    sat = {p.name: p for p in isa.TABLE["TCVT"].params}["satMode"]
    assert sat.values == ("ON", "OFF")
    pattern = {p.name: p for p in isa.TABLE["TGATHER"].params}["maskPattern"]
    assert pattern.values == ("P0101", "P1010", "P0001", "P0010", "P0100", "P1000", "P1111")


# -- generated reference -----------------------------------------------------------------------
def test_reference_doc_is_up_to_date():
    path = Path(__file__).resolve().parents[1] / "docs" / "isa-reference.md"
    from pypto.docgen import isa_reference
    assert path.exists(), "run: python3 -m pypto.docgen"
    assert path.read_text(encoding="utf-8") == isa_reference(), \
        "docs/isa-reference.md is stale; run: python3 -m pypto.docgen"


def test_reference_doc_mentions_every_instruction():
    text = reference_doc.render_markdown()
    for ins in ALL:
        assert f"### {ins.name}\n" in text
        assert f"`{ins.opcode:#06x}`" in text
