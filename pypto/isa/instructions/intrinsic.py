"""5.11 Intrinsics without an ISA page (5).

TPUSH/TPOP/TFREE move tiles through a FIFO between cube and vector cores (a GM ring buffer, or on
a5 also UB/L1 paths) and do their own cross-core flag handshakes, so their pipe is ALL. ``pipe`` is
the FIFO handle (TPipe: its buffer and flag ids); C++ puts it after the tile, as here. TQUANT's a5
MX overloads belong to the TQUANT entry (complex).
"""
from ..schema import Instr, Operand, both

_PIPE = Operand("pipe", kind="scalar", role="inout", locs=(), group=None)

INSTRUCTIONS = (
    Instr("TPUSH", 0x1901, "intrinsic", "append a tile to a cube <-> vector FIFO",
          (Operand("tile", locs=("Acc", "Vec"), group=None), _PIPE),
          both((None, None)), pipe="ALL", domain="src", spec_ref="5.11",
          notes=("data path: an Acc tile leaves through FIX (store to the GM FIFO, or a5 move to UB); "
                 "a Vec tile through MTE3 (store to GM, or a5 insert into L1)",
                 "also a three-operand form (producer, tile, fifo)",
                 "CPU sim: single-threaded stub")),
    Instr("TPOP", 0x1902, "intrinsic", "take the next tile from a cube <-> vector FIFO",
          (Operand("tile", role="out", locs=("Vec", "Mat"), group=None), _PIPE),
          both((None, None)), pipe="ALL", domain="dst", spec_ref="5.11",
          notes=("GM FIFO: the consumer loads the slot (MTE2) after waiting on the producer's flag",
                 "also a three-operand form (consumer, tile, fifo)",
                 "CPU sim: single-threaded stub; it stores into the FIFO where a load is meant "
                 "(looks like a bug upstream)")),
    Instr("TFREE", 0x1903, "intrinsic", "release the FIFO slot consumed by the last TPOP",
          (_PIPE,), both(), pipe="S", spec_ref="5.11",
          notes=("signals the producer that the slot can be reused; pipe S is inferred",)),
    Instr("TDEQUANT", 0x1904, "intrinsic", "dst[i, j] = (src[i, j] - offset[i]) * scale[i]",
          (Operand("dst", role="out", group=None), Operand("src", group=None),
           Operand("scale", group=None), Operand("offset", group=None)),
          both(("f32", "i8", "f32", "f32"), ("f32", "i16", "f32", "f32")),
          spec_ref="5.11",
          notes=("scale and offset hold one value per row; dst and src have the same row stride",
                 "dtypes and formula from the implementation (the doc gives only the signature)",
                 "no CPU sim implementation")),
    Instr("TPACK", 0x1905, "intrinsic",
          "dst = src narrowed to dst's element width, keeping the low-order bytes",
          (Operand("dst", role="out", group=None), Operand("src", group=None)),
          {"a2a3": (),
           "a5": (("u16", "u32"), ("i16", "i32"), ("u8", "u32"), ("i8", "i32"),
                  ("u8", "u16"), ("i8", "i16"))},
          spec_ref="5.11",
          notes=("a5 only; only the widths are checked (b32 -> b16, b32 -> b8, b16 -> b8); the "
                 "integer pairs listed are the meaningful ones",
                 "src and dst valid regions must match",
                 "no CPU sim implementation")),
)
