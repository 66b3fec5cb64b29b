"""The cost model against published chip measurements: pto-isa's A3 GEMM and top-k tables and
its A5 MXFP8 GEMM table.

examples/gemm_performance.py is pto-isa's kernels/manual/a2a3/gemm_performance kernel in pypto's
DSL with its exact tiling (24 cube cores, 128 x 256 x 64 base blocks, 4 K-steps per L1 load,
double-buffered L1 and L0); examples/topk.py is kernels/manual/a2a3/topk (48 vector cores, two
rows per step, double-buffered UB, TSORT32 + TMRGSORT + TGATHER); examples/mxfp8_performance.py
is kernels/manual/a5/matmul_mxfp8_performance (32 cube cores, e5m2 data with e8m0 scales,
TMATMUL_MX, bf16 out). This script runs each on the
simulator for every published case (checking the result against numpy), lays the launch out
with pypto.timeline and prints predicted beside measured: time (relative error) and the
published busy ratios (error in points).

    python benchmarks/calibration.py                     (every case: about four minutes)
    python benchmarks/calibration.py --gemm 1536 3072 --topk 2304 --mxfp8 2048
    python benchmarks/calibration.py --fit               (re-fit the guessed parameters)

The published figures (pto-isa kernels/manual/a2a3/gemm_performance/README.md, measured on a
24-core Ascend A3; kernels/manual/a2a3/topk/README.md, measured on 48 A3 vector cores;
kernels/manual/a5/matmul_mxfp8_performance/README.md, measured on an A5) are data below, not code
under test.
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import pypto                                               # noqa: E402
import mxfp8_performance as mxfp8                          # noqa: E402
import topk                                                # noqa: E402
from gemm_performance import gemm_performance, tiling      # noqa: E402

# m = k = n: (time in ms, TMATMUL, TEXTRACT, TLOAD, TSTORE busy ratios)
PUBLISHED = {
    1536: (0.0388, 0.545, 0.422, 0.722, 0.077),
    3072: (0.2067, 0.790, 0.620, 0.909, 0.058),
    6144: (1.5060, 0.867, 0.681, 0.952, 0.031),
    7680: (3.1680, 0.806, 0.630, 0.984, 0.024),
}
COLUMNS = ("TMATMUL", "TEXTRACT", "TLOAD", "TSTORE")

# (rows, dtype): (time in ms, vector, scalar, MTE2, MTE3 busy ratios); 1024 of 1280 columns
TOPK_PUBLISHED = {
    (2304, "float32"): (0.161375, 0.887, 0.060, 0.124, 0.101),
    (3456, "float32"): (0.238819, 0.915, 0.046, 0.123, 0.105),
    (4800, "float32"): (0.324106, 0.940, 0.032, 0.117, 0.104),
    (4800, "float16"): (0.326886, 0.937, 0.024, 0.115, 0.096),
}
TOPK_COLUMNS = ("vector", "scalar", "MTE2", "MTE3")

# A5, m = k = n: (time in ms, TMATMUL, TEXTRACT, TLOAD, TSTORE busy ratios)
MX_PUBLISHED = {
    2048: (0.0383, 0.582, 0.351, 0.846, 0.073),
    4096: (0.1879, 0.877, 0.542, 0.963, 0.053),
    6144: (0.6020, 0.916, 0.573, 0.982, 0.035),
    8192: (1.4749, 0.901, 0.562, 0.996, 0.026),
}


def predict(size: int, params: dict | None = None, keep=None):
    """(predicted ms, ratios) of the GEMM at m = k = n = size; ``keep`` reuses a Timeline."""
    tl = keep
    if tl is None:
        rng = np.random.default_rng(0)
        ah = rng.standard_normal((size, size)).astype(np.float16)
        bt = rng.standard_normal((size, size)).astype(np.float16)
        a, b = pypto.Tensor(ah), pypto.Tensor(bt)
        c = pypto.zeros((size, size), pypto.float32)
        tl = pypto.timeline(gemm_performance, a, b, c, grid=tiling(size, size, size)["blocks"],
                            params=params)
        if not np.allclose(c.numpy(), ah.astype(np.float32) @ bt.astype(np.float32).T,
                           rtol=1e-3, atol=1e-2):
            raise AssertionError(f"gemm {size}^3 differs from numpy")
    ins = tl.by_instruction()
    ratios = (ins.get("TMATMUL", 0) + ins.get("TMATMUL_ACC", 0), ins.get("TEXTRACT", 0),
              ins.get("TLOAD", 0), ins.get("TSTORE", 0))
    return tl.seconds * 1e3, ratios, tl


def predict_topk(rows: int, dtype: str, params: dict | None = None, keep=None):
    """(predicted ms, ratios) of the top-k kernel on ``rows`` rows; ``keep`` reuses a Timeline."""
    tl = keep
    if tl is None:
        args, xh = topk.inputs(rows, dtype)
        tl = pypto.timeline(topk.topk_kernel, *args, grid=topk.BLOCKS, params=params)
        values, indices = topk.reference(xh, topk.TOPK[dtype])
        if not (np.array_equal(args[0].numpy(), values) and np.array_equal(args[1].numpy(), indices)):
            raise AssertionError(f"topk {rows} {dtype} differs from numpy")
    b = tl.busy()
    return tl.seconds * 1e3, (b["V"], b["S"], b["MTE2"], b["MTE3"]), tl


def predict_mx(size: int, params: dict | None = None, keep=None):
    """(predicted ms, ratios) of the A5 MXFP8 GEMM at m = k = n = size; ``keep`` reuses a Timeline."""
    tl = keep
    if tl is None:
        pypto.init(soc="a5")
        try:
            dev, host = mxfp8.inputs(size)
            tl = pypto.timeline(mxfp8.mxfp8_performance, *dev,
                                grid=mxfp8.tiling(size, size, size)["blocks"], params=params)
            want = mxfp8.reference(host)
            if not np.abs(dev[-1].numpy().astype(np.float64) - want).max() <= 2 ** -7 * np.abs(want).max():
                raise AssertionError(f"mxfp8 {size}^3 differs from numpy")
        finally:
            pypto.finalize()
    ins = tl.by_instruction()
    ratios = (ins.get("TMATMUL_MX", 0), ins.get("TEXTRACT", 0), ins.get("TLOAD", 0), ins.get("TSTORE", 0))
    return tl.seconds * 1e3, ratios, tl


CASES = {"gemm": (PUBLISHED, COLUMNS, lambda key, **kw: predict(key, **kw)),
         "topk": (TOPK_PUBLISHED, TOPK_COLUMNS, lambda key, **kw: predict_topk(*key, **kw)),
         "mxfp8": (MX_PUBLISHED, COLUMNS, lambda key, **kw: predict_mx(key, **kw))}


def table(kind: str, keys, params=None) -> list[tuple]:
    published, _, run = CASES[kind]
    rows = []
    for key in keys:
        t0 = time.perf_counter()
        ms, ratios, _ = run(key, params=params)
        pub = published[key]
        rows.append((key, ms, pub[0], ratios, pub[1:], time.perf_counter() - t0))
    return rows


def show(kind: str, rows) -> tuple[float, float]:
    """Print one table; returns the worst time error and the worst ratio error (points)."""
    columns = CASES[kind][1]
    print(f"{'case':>14} | {'time pred / meas (ms)':>24} {'err':>7} | " +
          " | ".join(f"{c:>17}" for c in columns) + " | run (s)")
    worst_t, worst_r = 0.0, 0.0
    for key, ms, pub_ms, r, pr, secs in rows:
        err = ms / pub_ms - 1
        worst_t = max(worst_t, abs(err))
        cells = []
        for a, b in zip(r, pr):
            worst_r = max(worst_r, abs(a - b) * 100)
            cells.append(f"{a:5.1%} / {b:5.1%} {100 * (a - b):+4.1f}")
        name = f"{key[0]} {key[1]}" if kind == "topk" else f"{key}^3"
        print(f"{name:>14} | {ms:>10.4f} / {pub_ms:<10.4f}   {err:+6.1%} | " + " | ".join(cells) +
              f" | {secs:6.1f}")
    print(f"worst: time {worst_t:.1%}, ratio {worst_r:.1f} points (goal: within 10 % and 5 points)\n")
    return worst_t, worst_r


# the guessed parameters the fit moves, and the values it tries
FIT_GRID = {"nd2nz_eff": (0.83, 0.85, 0.87), "block_dispatch": (300, 400, 500),
            "first_load": (6000, 8000, 10000), "hbm_latency": (700, 900, 1100)}


MX_FIT_GRID = {"nd2nz_eff": (0.95, 1.0), "block_dispatch": (50, 100, 150),
               "first_load": (12000, 14000, 16000), "load_latency": (100, 200)}


def fit(cases: dict, grid: dict = FIT_GRID) -> dict:
    """Grid search over ``grid``, minimising the worst time error plus the worst ratio error
    (points / 100) over ``cases`` ({kind: keys}); each kernel runs once and is re-priced."""
    keep = {(kind, key): CASES[kind][2](key)[2] for kind, keys in cases.items() for key in keys}
    best = None
    for values in itertools.product(*grid.values()):
        params = dict(zip(grid, values))
        score = 0.0
        for (kind, key), tl in keep.items():
            published, _, run = CASES[kind]
            ms, r, _ = run(key, keep=tl.reprice(params))
            pub = published[key]
            score = max(score, abs(ms / pub[0] - 1) + max(abs(a - b) for a, b in zip(r, pub[1:])))
        if best is None or score < best[0]:
            best = (score, params)
    print(f"best of {np.prod([len(v) for v in grid.values()])}: {best[1]} (score {best[0]:.3f})\n")
    return best[1]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gemm", nargs="*", type=int, help="GEMM sizes (default: every published one)")
    ap.add_argument("--topk", nargs="*", type=int, help="top-k row counts (default: every one)")
    ap.add_argument("--mxfp8", nargs="*", type=int, help="A5 MXFP8 GEMM sizes (default: every one)")
    ap.add_argument("--fit", action="store_true", help="grid-search the guessed parameters first")
    args = ap.parse_args(argv)
    picked = any(x is not None for x in (args.gemm, args.topk, args.mxfp8))

    def chosen(given, every):                  # a flag alone means every case of its kernel
        if given is None:
            return [] if picked else list(every)
        return given or list(every)
    gemm = chosen(args.gemm, sorted(PUBLISHED))
    rows = chosen(args.topk, sorted({r for r, _ in TOPK_PUBLISHED}))
    tk = [k for k in TOPK_PUBLISHED if k[0] in rows]
    mx = chosen(args.mxfp8, sorted(MX_PUBLISHED))
    pypto.init(soc="a2a3")
    params = fit({"gemm": gemm, "topk": tk}) if args.fit and (gemm or tk) else None
    if gemm:
        print("GEMM, fp16 -> fp32, 24 cube cores (kernels/manual/a2a3/gemm_performance)")
        show("gemm", table("gemm", gemm, params))
    if tk:
        print("top-k of 1024 columns, 48 vector cores (kernels/manual/a2a3/topk)")
        show("topk", table("topk", tk, params))
    pypto.finalize()
    if mx:                                     # a5: its own parameters, its own fit
        mx_params = fit({"mxfp8": mx}, MX_FIT_GRID) if args.fit else None
        print("A5 MXFP8 GEMM, e5m2 + e8m0 scales -> bf16, 32 cube cores "
              "(kernels/manual/a5/matmul_mxfp8_performance)")
        show("mxfp8", table("mxfp8", mx, mx_params))


if __name__ == "__main__":
    main()
