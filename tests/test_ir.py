"""The IR spine: layout descriptors, pipes/core/effects resolved into nodes, the pass framework
(placement with live ranges, verification) on IR built without the DSL, and index arithmetic
named for what it computes."""
from __future__ import annotations

import numpy as np
import pytest

import pypto
from pypto import dtypes as D
from pypto import errors as E
from pypto import pto
from pypto.ir import passes
from pypto.ir.nodes import (Effect, For, GmView, InstrNode, Kernel, TensorParam, TileType, TileVar, Var,
                            binop)
from pypto.ir.placement import live_ranges
from pypto.ir.printer import print_kernel
from pypto.isa.soc import get_profile

A2A3, A5 = get_profile("a2a3"), get_profile("a5")


# -- layout descriptors against pto-isa-semantics 3.3, written out independently ---------------
def _offset_3_3(layout, r, c, rows, cols, ir_, ic):
    br, rr, bc, cc = r // ir_, r % ir_, c // ic, c % ic
    n = ir_ * ic
    return {"ND": r * cols + c, "DN": c * rows + r,
            "Nz": bc * (rows * ic) + br * n + rr * ic + cc,
            "Zn": br * (cols * ir_) + bc * n + cc * ir_ + rr,
            "Zz": br * (cols * ir_) + bc * n + rr * ic + cc}[layout]


LAYOUTS = {"ND": ("RowMajor", "NoneBox"), "DN": ("ColMajor", "NoneBox"), "Nz": ("ColMajor", "RowMajor"),
           "Zn": ("RowMajor", "ColMajor"), "Zz": ("RowMajor", "RowMajor")}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dt,shape", [(D.float16, (32, 48)), (D.float32, (16, 32)), (D.int8, (32, 64))])
def test_layout_descriptor_matches_the_offset_formulas(layout, dt, shape):
    b, s = LAYOUTS[layout]
    ty = TileType("Mat", dt, shape[0], shape[1], b, s)
    assert ty.layout_name == layout
    ir_, ic, brs, bcs, irs, ics = ty.desc
    inner = ty.inner
    seen = set()
    for r in range(shape[0]):
        for c in range(shape[1]):
            got = (r // ir_) * brs + (c // ic) * bcs + (r % ir_) * irs + (c % ic) * ics
            assert got == _offset_3_3(layout, r, c, *shape, *inner)
            seen.add(got)
    assert seen == set(range(shape[0] * shape[1]))          # a permutation of the storage


def test_acc_tiles_use_16x16_boxes():
    ty = TileType("Acc", D.float32, 32, 32, "ColMajor", "RowMajor", 1024)
    assert ty.inner == (16, 16) and ty.layout_name == "Nz"


# -- IR built by hand: placement, verification, annotation ----------------------------------
def _hand_kernel(share: bool):
    vec = TileType("Vec", D.float32, 8, 64)
    tiles = [TileVar(vec, (8, 64), False, f"t{i}", id=i) for i in range(4)]
    x = TensorParam("x", 0, D.float32, (8, 64))
    view = GmView(x, 0, (1, 1, 1, 8, 64), (512, 512, 512, 64, 1))
    t0, t1, t2, t3 = tiles
    body = [InstrNode("TLOAD", (t0, view)), InstrNode("TEXP", (t1, t0)), InstrNode("TSTORE", (view, t1)),
            InstrNode("TLOAD", (t2, view)), InstrNode("TADD", (t3, t2, t2)), InstrNode("TSTORE", (view, t3))]
    return Kernel("hand", [x], tiles, body, "a2a3", share_tiles=share), tiles


def test_hand_built_ir_is_placed_verified_and_annotated():
    k, (t0, t1, t2, t3) = _hand_kernel(share=False)
    passes.run(k, A2A3)
    addrs = [t.addr for t in (t0, t1, t2, t3)]
    assert addrs == [0, 2048, 4096, 6144]                     # packed, 32-byte aligned, no sharing
    instrs = [s for s in k.body if isinstance(s, InstrNode)]
    load, exp_, store = instrs[:3]
    assert (load.pipe, exp_.pipe, store.pipe) == ("MTE2", "V", "MTE3")
    assert {n.core for n in instrs} == {"AIV"}
    assert exp_.effects == (Effect("write", 0, "valid"), Effect("read", 1, "valid"))
    assert store.effects == (Effect("write", 0, "view"), Effect("read", 1, "valid"))
    text = print_kernel(k)
    assert "pto.texp %t1, %t0  // PIPE_V, AIV" in text


def test_live_range_placement_shares_bytes_of_dead_tiles():
    k, tiles = _hand_kernel(share=True)
    r = live_ranges(k)
    assert r[0] == (0, 1) and r[1] == (1, 2) and r[2] == (3, 4) and r[3] == (4, 5)
    passes.run(k, A2A3)
    t0, t1, t2, t3 = tiles
    assert t0.addr != t1.addr                                 # live together at statement 1
    assert t2.addr in (t0.addr, t1.addr)                      # t0, t1 are dead by statement 3
    assert {t2.addr, t3.addr} <= {t0.addr, t1.addr} and t2.addr != t3.addr


def test_a_tile_used_in_a_loop_lives_for_the_whole_loop():
    k, tiles = _hand_kernel(share=True)
    t0, t1 = tiles[:2]
    loop = For(Var("i0", "loop"), 0, 4, 1, body=[InstrNode("TEXP", (t1, t0))])
    k.body = [k.body[0], loop, k.body[2]]
    r = live_ranges(k)
    assert r[0][1] >= r[1][1] - 1 and r[1][0] <= 1


def test_verify_rejects_undeclared_and_unknown():
    k, tiles = _hand_kernel(share=False)
    k.tiles = tiles[:3]
    with pytest.raises(E.VerifyError) as ei:
        passes.run(k, A2A3)
    assert "not declared" in str(ei.value) and "Rule:" in str(ei.value) and "Fix:" in str(ei.value)


def test_pipes_depend_on_operand_locations():
    from pypto.isa import TABLE
    assert TABLE["TSTORE"].pipe_on("a2a3", {"src": "Vec"}) == "MTE3"
    assert TABLE["TSTORE"].pipe_on("a2a3", {"src": "Acc"}) == "FIX"
    assert TABLE["TMOV"].pipe_on("a5", {"src": "Vec", "dst": "Vec"}) == "V"


def test_hidden_scratch_is_an_effect_on_a2a3_only():
    from pypto.ir.effects import effects_of
    vec8 = TileType("Vec", D.uint8, 8, 32)
    vec = TileType("Vec", D.float32, 8, 64)
    m, a, b, d = (TileVar(vec8, (8, 32), False, "m"), TileVar(vec, (8, 64), False, "a"),
                  TileVar(vec, (8, 64), False, "b"), TileVar(vec, (8, 64), False, "d"))
    node = InstrNode("TSEL", (d, m, a, b))
    scratch = [e for e in effects_of(node, A2A3) if e.region == "scratch"]
    assert scratch == [Effect("write", None, "scratch", "Vec", (188416, 196608))]
    assert not [e for e in effects_of(node, A5) if e.region == "scratch"]


# -- index arithmetic: floordiv / floormod, as Python's // and % ------------------------------
def test_floor_division_is_named_and_printed_as_such():
    i = Var("i", "loop")
    e = binop("floordiv", binop("-", i, 7), 4)
    assert repr(e) == "floordiv((i - 7), 4)"
    assert repr((i - 7) % 4) == "floormod((i - 7), 4)"


@pytest.mark.parametrize("mode", ["compiled", "eager"])
def test_floor_division_computes_like_python_in_both_modes(mode):
    @pypto.kernel(mode=mode)
    def k(x, z, s):
        t = pto.Tile(pto.Vec, pto.int32, (1, 8))
        pto.TLOAD(t, x[0:1, 0:8])
        pto.TADDS(t, t, (s - 7) // 4 + (s - 7) % 4 * 100)
        pto.TSTORE(z[0:1, 0:8], t)

    pypto.init()
    try:
        for s in (0, 3, 10, -5):
            x = pypto.Tensor(np.zeros((1, 8), np.int32))
            z = pypto.zeros((1, 8), pypto.int32)
            k(x, z, s)
            assert (z.numpy() == (s - 7) // 4 + (s - 7) % 4 * 100).all(), s
    finally:
        pypto.finalize()


# -- kern.ir() for instructions the simulator does not run ------------------------------------
def test_ir_of_unsimulated_instructions_shows_their_pipes():
    @pypto.kernel
    def k(x, z):
        a = pto.Tile(pto.Vec, pto.float32, (8, 64))
        b = pto.Tile(pto.Vec, pto.int8, (8, 64))
        pto.TLOAD(a, x)
        pto.TDEQUANT(a, b, a, a)
        pto.TLOG(a, a)
        pto.TSTORE(z, a)

    pypto.init()
    try:
        x, z = pypto.Tensor(np.ones((8, 64), np.float32)), pypto.zeros((8, 64), pypto.float32)
        text = k.ir(x, z)
        assert "pto.tdequant %a, %b, %a, %a  // PIPE_V, AIV" in text and "pto.tlog %a, %a  // PIPE_V" in text
        with pytest.raises(E.NotSimulatedError, match="TDEQUANT"):
            k(x, z)
    finally:
        pypto.finalize()


@pytest.mark.parametrize("mode", ["compiled", "eager"])
def test_event_buffer_records_instruction_block_and_pipe(mode):
    """SimOptions(events=N): each executed instruction leaves (site, block, pipe, order, dynamic
    tile sizes), the same in both modes, for the cost model and timeline."""
    from pypto.isa.schema import PIPES

    @pypto.kernel
    def k(x, z):
        t = pto.Tile(pto.Vec, pto.float32, (1, 8))
        for i in pto.range(2):
            pto.TLOAD(t, x[pto.block_idx(), 0:8])
            pto.TADDS(t, t, 1.0)
            pto.TSTORE(z[pto.block_idx(), 0:8], t)

    pypto.init(sim=pypto.SimOptions(mode=mode, events=64, threads=2))
    try:
        x, z = pypto.Tensor(np.zeros((3, 8), np.float32)), pypto.zeros((3, 8), pypto.float32)
        k[3](x, z)
        be = pypto.runtime.current().backend
        from pypto.ir.nodes import InstrNode, Sync
        every = be.last_events
        kinds = [type(be.last_event_sites[s]) for s in every[:, 0]]
        # flags too (the timeline orders pipes by them); auto mode's flags exist only in the
        # traced kernel: eager mode runs the body without them
        assert set(kinds) == ({InstrNode, Sync} if mode == "compiled" else {InstrNode})
        ev = every[[k is InstrNode for k in kinds]]
        assert ev.shape == (3 * 2 * 3, 8)
        assert not ev[:, 4:].any()                      # no dynamic tiles: no runtime sizes
        names = [be.last_event_sites[s].name for s in ev[:, 0]]
        assert names == ["TLOAD", "TADDS", "TSTORE"] * 6
        assert list(ev[:, 1]) == [b for b in range(3) for _ in range(6)]
        assert [PIPES[p] for p in ev[:, 2]] == ["MTE2", "V", "MTE3"] * 6
        for row, k in zip(every, kinds):                # a wait is recorded on the pipe it holds
            node = be.last_event_sites[row[0]]
            if k is Sync and node.kind == "wait_flag":
                assert PIPES[row[2]] == node.dst
    finally:
        pypto.finalize()
