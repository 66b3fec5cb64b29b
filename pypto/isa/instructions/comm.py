"""5.10 Communication instructions (9): remote reads/writes, signals and collectives between ranks.

Data is staged through UB tiles (one tile, or a ping/pong pair for double buffering) and chunked
automatically when the GM tensor is larger than the tile. The staging tile has the GM tensors'
element type. The collectives are executed by the root rank only; ``group`` is the ParallelGroup
(the ranks' GM tensors, the rank count and the root index). The C++ TGATHER/TSCATTER of
``pto::comm`` are named TGATHER_COMM/TSCATTER_COMM here to keep table names unique.
Data movers run MTE2 and MTE3 and hand over between them internally, so their pipe is ALL.
A param default of None means PTO has no single default for it (see the notes).
"""
from ..schema import Instr, Operand, Param, both, per_soc

# The doc gives no dtype list: the data movers take what TLOAD/TSTORE move [infer];
# TREDUCE needs the vector add/max/min, so it takes the types TADD and TMAX share [infer].
_DATA = per_soc("i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32",
                "i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 e4m3 e5m2")
_REDUCE = per_soc("i32 i16 f16 f32", "u32 i32 u16 i16 u8 i8 f32 f16")

_TILE = Operand("tile", role="tmp")
_PONG = Operand("pong", role="tmp", optional=True)
_GROUP_IN = Operand("group", kind="gm", role="in", locs=())
_GROUP_OUT = Operand("group", kind="gm", role="out", locs=())
_SIGNAL_IN = Operand("signal", kind="gm", role="in", locs=(), group=None)
_VALUE = Operand("value", kind="scalar", locs=(), group=None)
_I32_SIGNAL = both(("i32", None))
_WAIT_CMP = Param("cmp", "WaitCmp", ("EQ", "NE", "GT", "GE", "LT", "LE"), None)
_ROOT = "only the root rank calls it; calling it on another rank is undefined"

INSTRUCTIONS = (
    Instr("TPUT", 0x1801, "comm", "dstRemote = srcLocal (remote write, optionally an atomic add)",
          (Operand("dstRemote", kind="gm", role="out", locs=()),
           Operand("srcLocal", kind="gm", locs=()), _TILE, _PONG),
          _DATA, pipe="ALL", domain="src",
          params=(Param("atomic", "AtomicType", ("None", "AtomicAdd"), "None"),),
          spec_ref="5.10",
          notes=("atomic is a template or a run-time argument (C++ AtomicNone / AtomicAdd)",
                 "AtomicAdd (TSTORE in atomic-add mode, dst += src, each element atomic) takes "
                 "f16 f32 i16 i32 i8 bf16 on a2a3 and the same without bf16 on a5",
                 "stages through UB: TLOAD on MTE2, TSTORE on MTE3, handed over on EVENT_ID0 "
                 "(ping-pong: EVENT_ID0/1); ends with an MTE3 -> MTE2 wait but does not hold the "
                 "scalar unit, so a TNOTIFY right after it can overtake the data: put "
                 "pipe_barrier(PIPE_ALL) between them",
                 "CPU sim: copies the wrong way (into src) and ignores AtomicAdd; its ping-pong "
                 "form does not compile")),
    Instr("TGET", 0x1802, "comm", "dstLocal = srcRemote (remote read)",
          (Operand("dstLocal", kind="gm", role="out", locs=()),
           Operand("srcRemote", kind="gm", locs=()), _TILE, _PONG),
          _DATA, pipe="ALL", domain="src", spec_ref="5.10"),
    Instr("TNOTIFY", 0x1803, "comm", "signal = value, or signal += value (remote i32 signal)",
          (Operand("signal", kind="gm", role="inout", locs=(), group=None), _VALUE),
          _I32_SIGNAL, pipe="ALL",
          params=(Param("notifyOp", "NotifyOp", ("AtomicAdd", "Set"), None),), spec_ref="5.10",
          notes=("NotifyOp enumerators: AtomicAdd=0, Set=1",
                 "a scalar store (Set) or scalar atomic add (AtomicAdd) of element 0 of the "
                 "signal, with cache maintenance around it; it ends with pipe_barrier(PIPE_ALL) "
                 "(hence pipe ALL) but has no barrier before the store",
                 "CPU sim: the add is not atomic")),
    Instr("TWAIT", 0x1804, "comm", "block until (signal cmp value) holds",
          (_SIGNAL_IN, _VALUE), _I32_SIGNAL, pipe="S", params=(_WAIT_CMP,), spec_ref="5.10",
          notes=("WaitCmp order differs from CmpMode: EQ NE GT GE LT LE",
                 "the signal is a local 5-D int32 tensor (a 1x1x1x1x1 Signal, or a Signal2D "
                 "sub-grid): every element must satisfy the condition; nothing resets it",
                 "NPU: polls with cache invalidation and a PIPE_ALL barrier every 64 sweeps; "
                 "release builds wait forever (the 10^8-sweep deadlock assert is debug-only)",
                 "pipe S is inferred (a scalar poll of GM)")),
    Instr("TTEST", 0x1805, "comm", "return whether (signal cmp value) holds, without blocking",
          (_SIGNAL_IN, _VALUE), _I32_SIGNAL, pipe="S", params=(_WAIT_CMP,), spec_ref="5.10",
          returns="bool",
          notes=("returns a bool instead of an event",
                 "one sweep over the 5-D int32 signal, stopping at the first element that fails; "
                 "true only if every element passes",
                 "pipe S is inferred (a scalar read of GM)")),
    Instr("TGATHER_COMM", 0x1806, "comm",
          "dst = the ranks' tensors concatenated along DIM_3 (rank r's rows at r * H)",
          (_GROUP_IN, Operand("dst", kind="gm", role="out", locs=()), _TILE, _PONG),
          _DATA, pipe="ALL", domain="src", spec_ref="5.10",
          notes=("C++ pto::comm::TGATHER; PTO-AS spells it tgather", _ROOT,
                 "ranks visited in ascending order, the root included; dst rows past N * H are "
                 "left untouched",
                 "CPU sim: a no-op")),
    Instr("TSCATTER_COMM", 0x1807, "comm", "split src along DIM_3 into equal parts, one per rank",
          (_GROUP_OUT, Operand("src", kind="gm", locs=()), _TILE, _PONG),
          _DATA, pipe="ALL", domain="src", spec_ref="5.10",
          notes=("C++ pto::comm::TSCATTER; PTO-AS spells it tscatter", _ROOT,
                 "CPU sim: a no-op")),
    Instr("TREDUCE", 0x1808, "comm", "dst = elementwise reduceOp over all ranks' tensors",
          (_GROUP_IN, Operand("dst", kind="gm", role="out", locs=()),
           Operand("acc", role="tmp"), Operand("recv", role="tmp"), _PONG),
          _REDUCE, pipe="ALL", domain="src",
          params=(Param("reduceOp", "ReduceOp", ("Sum", "Max", "Min"), None),), spec_ref="5.10",
          notes=("acc holds the running result; recv (and pong for double buffering) receive the "
                 "next rank's chunk; the vector unit does the reduction",
                 "fixed order, so float results are deterministic: acc = the root's chunk, then "
                 "acc = acc op rank r's for r ascending, skipping the root (NPU and CPU sim agree)",
                 _ROOT)),
    Instr("TBROADCAST", 0x1809, "comm", "copy src from the root to every rank's tensor",
          (_GROUP_OUT, Operand("src", kind="gm", locs=()), _TILE, _PONG),
          _DATA, pipe="ALL", domain="src", spec_ref="5.10",
          notes=(_ROOT, "every rank's tensor is written, the root's included, in ascending rank "
                        "order; each chunk is loaded once")),
)
