"""5.1 Synchronisation and manual binding.

Flags and barriers (``set_flag``/``wait_flag``/``pipe_barrier``, ``Event``) are not instructions in
this table; they are IR sync nodes. TSETHF32MODE / TSETTF32MODE are listed by pto-isa's manifest but
have no page and no public intrinsic, so they are not entries either.

A param default of None means PTO has no single default for it (see the notes).
"""
from ..schema import Instr, Operand, Param, both

_ANY = ("Vec", "Mat", "Left", "Right", "Acc", "Bias", "Scaling", "ScaleLeft", "ScaleRight")

# The img2col / FMATRIX state is configured from a ConvTile in L1; its element type is free.
_CONV = Operand("src", role="in", locs=("Mat",), group=None)
_FMATRIX = Param("fmatrixMode", "SetFmatrixMode",
                 ("FMATRIX_A_AUTO", "FMATRIX_B_AUTO", "FMATRIX_A_MANUAL", "FMATRIX_B_MANUAL"),
                 "FMATRIX_A_MANUAL")

INSTRUCTIONS = (
    Instr("TSYNC", 0x1701, "sync",
          "barrier on the pipe of the Op given as template argument, or wait for the given events",
          (), both(), pipe={"a2a3": "V", "a5": "ALL"},
          params=(Param("op", "Op", (), None),),
          spec_ref="1.3, 5.1",
          notes=("a2a3 accepts only Ops that run on PIPE_V; a5 accepts only PIPE_MTE3 Ops or "
                 "OP_COUNT (= PIPE_ALL); the pipe column gives the widest legal barrier",
                 "the event form takes no op and just waits on each event before continuing",
                 "CPU sim: no-op; the Event type does not exist there, so the event form fails to build")),
    Instr("TASSIGN", 0x1702, "sync", "bind a tile to an on-chip byte address (manual mode)",
          (Operand("tile", role="out", locs=_ANY, group=None),
           Operand("addr", kind="scalar", locs=(), group=None)),
          both(), pipe="S", spec_ref="2",
          notes=("NPU: no bounds, alignment or overlap check at run time; the compile-time form "
                 "checks that the buffer exists, the tile fits and addr % 32 == 0",
                 "a no-op in auto mode (__PTO_AUTO__)",
                 "CPU sim: ignored for tiles (every tile owns private storage, nothing aliases)")),
    Instr("TSETFMATRIX", 0x1703, "sync",
          "load the FMATRIX registers (feature-map size, padding) used by TIMG2COL from a ConvTile",
          (_CONV,), both(), pipe="S", params=(_FMATRIX,), spec_ref="5.1, 3.7",
          notes=("fmatrixMode picks the A or B register set and AUTO/MANUAL configuration",
                 "no CPU sim implementation")),
    Instr("TSET_IMG2COL_RPT", 0x1704, "sync",
          "set the img2col repeat state (repeat time/stride/mode) from a ConvTile",
          (_CONV,), both(), pipe="S", params=(_FMATRIX,), spec_ref="5.1",
          notes=("a2a3 has no fmatrixMode argument (the param applies on a5 only)",
                 "not declared in the CPU sim")),
    Instr("TSET_IMG2COL_PADDING", 0x1705, "sync",
          "set the img2col padding value state from a ConvTile",
          (_CONV,), both(), pipe="S", params=(_FMATRIX,), spec_ref="5.1",
          notes=("a2a3 has no fmatrixMode argument (the param applies on a5 only)",
                 "not declared in the CPU sim")),
)
