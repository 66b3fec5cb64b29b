"""The cost model's parameters per SoC profile, as data: every number with its grade and source.

Grades (cost-model-notes in the project's design notes): "documented" (stated in a datasheet,
config or code), "derived" (arithmetic on documented or published measured figures, shown in the
source column), "guessed" (to be calibrated; only these are fitted). Rates are bytes per core
clock cycle per core. pypto/timing turns them into per-instruction pipe occupancy and latency.
"""
from __future__ import annotations

from dataclasses import dataclass

GRADES = ("documented", "derived", "guessed")

# Sources, short names used below
_INI = "Huawei PyPTO platform config (A2A3.ini / 950PR_958x.ini)"
_GEMM = "pto-isa kernels/manual/a2a3/gemm_performance README (A3 measurements)"
_MX = "pto-isa kernels/manual/a5/matmul_mxfp8_performance README (A5 measurements)"
_TOPK = "pto-isa kernels/manual/a2a3/topk README (A3 measurements, 48 AIV)"
_HPFIT = "Huawei PyPTO cost model level-1 fits (board measurements)"
_HPL0 = "Huawei PyPTO cost model level 0 (PipeSimulatorFast)"
_CCE = "CANN CCE intrinsic doc (repeat = 8 x 32 B blocks) and pto-isa REPEAT_BYTE"


@dataclass(frozen=True)
class Figure:
    """One model parameter: its value, grade and where it comes from."""
    value: float
    grade: str
    source: str

    def __post_init__(self):
        assert self.grade in GRADES, self.grade


def _f(value: float, grade: str, source: str) -> Figure:
    return Figure(float(value), grade, source)


# The vector ops that run at the transcendental element rate (32 elements per cycle).
SLOW_VECTOR_OPS = frozenset({"TEXP", "TLOG", "TDIV", "TDIVS", "TSQRT", "TRSQRT", "TRECIP",
                             "TROWEXPANDDIV", "TCOLEXPANDDIV", "TROWEXPANDEXPDIF",
                             "TCOLEXPANDEXPDIF"})
# Fixed vector latencies (cycles from the end of the pipe's work until results are visible).
VECTOR_LATENCY = {"TADD": 6, "TADDS": 6, "TSUB": 6, "TSUBS": 6, "TMUL": 7, "TMULS": 7, "TEXP": 12,
                  "TLOG": 12, "TDIV": 13, "TDIVS": 13, "TSQRT": 13, "TRSQRT": 13, "TRECIP": 13,
                  "TROWMAX": 9, "TROWMIN": 9, "TROWSUM": 22, "TCOLSUM": 20}

_A2A3 = {
    "clock_mhz": _f(1800, "derived", f"{_GEMM}: the cube ratios fit 1.80 GHz to < 1 %; "
                                    f"{_INI} gives cube_freq=1850"),
    "hbm_bpc": _f(32, "documented", f"{_INI}: ddr_rate=32 per core (24 x 32 x 1.85 GHz = 1.42 TB/s)"),
    "l2_bpc": _f(110, "documented", f"{_INI}: L2 read 110"),
    "l2_bytes": _f(192 * 2 ** 20, "documented", f"{_INI}: 192 MiB"),
    "nd2nz_eff": _f(0.85, "guessed", f"{_GEMM}: GM->L1 ND->Nz measured 88 B/cyc against the 110 of "
                                     "L2 (0.8); fitted over the four published sizes (0.85)"),
    "mte3_bpc": _f(64, "documented", f"{_INI}: ub_to_ddr=64, ub_to_l2=64"),
    "dma_fixed": _f(20, "guessed", "per DMA instruction set-up"),
    "dma_burst": _f(0, "guessed", f"per burst (row) of a DMA: none, as the 88 B/cyc of {_GEMM} include them"),
    "dma_gran": _f(32, "documented", "UB block: each burst moves whole 32-byte blocks"),
    "load_latency": _f(200, "guessed", f"{_HPL0}: copy-in to L1 200 cycles (bytes from L2); the "
                                       "pipe is free for the next transfer meanwhile"),
    "hbm_latency": _f(900, "guessed", "extra latency of bytes that come from HBM, not L2; fitted "
                                      f"on {_TOPK} (every byte read once: TLOAD at 11.7 % busy)"),
    "store_latency": _f(900, "guessed", "UB -> GM write acknowledged (the MTE3 pipe counts as busy, "
                                        f"the next transfer may start); fitted on {_TOPK}: TSTORE at 10.4 % busy"),
    "fix_latency": _f(100, "guessed", "L0C -> GM write visible (fix_gm_bpc already includes its wait)"),
    "mte1_l0a_bpc": _f(240, "derived", f"{_HPFIT}: L1->L0A fit (~240 B/cyc)"),
    "mte1_l0b_bpc": _f(131, "derived", f"{_HPFIT}: L1->L0B fit (~131 B/cyc)"),
    "mte1_l0b_t_bpc": _f(145, "derived", f"{_HPFIT}: L1->L0B transposed fit (~145 B/cyc)"),
    "mte1_fixed": _f(41, "derived", f"{_HPFIT}: 25-30 cycle intercepts, which predict 358 of the "
                                    f"400 cycles per TEXTRACT pair {_GEMM} measures at 6144^3: "
                                    "fitted there, as the notes' calibration plan says"),
    "l1_ub_bpc": _f(128, "documented", f"{_INI}: L1<->UB 128"),
    "fix_gm_bpc": _f(75, "derived", f"{_GEMM}: TSTORE fp32 ND 6.3 MB per core in 3.1 % of 1.506 ms"),
    "fix_ub_bpc": _f(256, "documented", f"{_INI}: l0_c_to_ub=256"),
    "fix_fixed": _f(30, "guessed", "fixpipe set-up per instruction"),
    "cube_fixed": _f(20, "guessed", f"{_HPFIT}: matmul intercept 0.0107 us = 21 cycles"),
    "cube_m": _f(16, "documented", f"{_INI}: [DtypeMKN] fp16 16x16x16 (m, n per cycle)"),
    "cube_k_bytes": _f(32, "documented", "the 32-byte K fractal (C0_SIZE_BYTE): k0 = 32 / itemsize"),
    "vec_repeat_bytes": _f(256, "documented", _CCE),
    "vec_cpr": _f(2, "documented", f"{_HPL0}: vec_calc_size=128 B/cyc = 2 cycles per 256-B repeat"),
    "vec_slow_elems": _f(32, "derived", f"{_HPFIT}: exp/div/sqrt ~32 elements per cycle"),
    "vec_issue": _f(1, "guessed", "per emitted vector instruction"),
    "vec_latency": _f(10, "documented", f"{_HPL0}: default vector latency (per-op values in VECTOR_LATENCY)"),
    "reduce_row": _f(4, "guessed", "per row to combine a row reduction's repeats"),
    "sort32_block": _f(60, "guessed", f"TSORT32 cycles per 32-element block; fitted on {_TOPK} "
                                      "(vector busy 94 % at 4800 rows), given mrgsort_record"),
    "mrgsort_record": _f(1, "guessed", "TMRGSORT cycles per record emitted (one record per cycle)"),
    "gather_elems": _f(8, "guessed", "elements per cycle of TGATHER/TSCATTER/MGATHER"),
    "block_start": _f(1000, "guessed", "scalar set-up of a block on its core before its first "
                                       "instruction"),
    "block_dispatch": _f(400, "guessed", "cycles between the starts of consecutive blocks of a launch: "
                                         f"fitted with block_start and first_load on {_GEMM} and "
                                         f"{_TOPK}"),
    "scalar_issue": _f(7, "guessed", "scalar cycles per statement issued (address arithmetic, "
                                     f"loop control, the issue itself); fitted on {_TOPK}: "
                                     "scalar busy 3.2 % at 4800 rows"),
    "flag_cost": _f(1, "guessed", "set_flag occupies its pipe one cycle"),
    "first_load": _f(8000, "guessed", "extra MTE2 cycles of a core's first GM load in a launch (a "
                                      "cold core's first transfer): a fixed MTE2-busy start-up per "
                                      f"launch; fitted with block_dispatch on {_GEMM} and {_TOPK}"),
}

_A5 = dict(_A2A3)
_A5.update({
    "clock_mhz": _f(1650, "documented", f"{_INI}: cube_freq=vec_freq=1650"),
    "hbm_bpc": _f(31, "documented", f"{_INI}: ddr_rate=31 (950PR)"),
    "l2_bpc": _f(100, "documented", f"{_INI}: L2 read 100"),
    "l2_bytes": _f(128 * 2 ** 20, "documented", f"{_INI}: 128 MiB"),
    "nd2nz_eff": _f(1.0, "guessed", f"{_MX}: GM->L1 measured ~90 B/cyc against the 100 of L2 "
                                    "(flag bubbles and HBM latency included); fitted there at 1.0"),
    "mte3_bpc": _f(40, "documented", f"{_INI}: AIV ub_to_ddr=40"),
    "load_latency": _f(100, "guessed", f"copy-in latency from L2; fitted on {_MX}"),
    "mte1_fixed": _f(20, "guessed", "L1 -> L0 set-up per TEXTRACT (a5)"),
    "mte1_l0a_bpc": _f(200, "derived", f"{_MX}: TEXTRACT 329 cycles per K step (A, B and their two "
                                       "scale tiles, 49.5 KiB) = 4 x mte1_fixed + bytes at ~200 B/cyc"),
    "mte1_l0b_bpc": _f(200, "derived", f"{_MX}: as L0A"),
    "mte1_l0b_t_bpc": _f(200, "derived", f"{_MX}: as L0A"),
    "block_dispatch": _f(100, "guessed", f"cycles between consecutive blocks' starts; fitted on {_MX}"),
    "first_load": _f(14000, "guessed", "extra MTE2 cycles of a core's first GM load in a launch; "
                                       f"fitted on {_MX}: its MTE2 busy time exceeds ~89 B/cyc per "
                                       "K step by 16,000-23,000 cycles at 2048-6144^3"),
    "fix_ub_bpc": _f(128, "documented", f"{_INI}: l0_c_to_ub=128"),
    "fix_gm_bpc": _f(75, "guessed", "no A5 measurement: the a2a3 figure"),
})

COSTS: dict[str, dict[str, Figure]] = {"a2a3": _A2A3, "a5": _A5}


def cost_table(soc: str) -> dict[str, Figure]:
    """The parameter table of SoC profile ``soc`` (a2a3 or a5)."""
    return COSTS[soc]


__all__ = ["Figure", "GRADES", "COSTS", "cost_table", "SLOW_VECTOR_OPS", "VECTOR_LATENCY"]
