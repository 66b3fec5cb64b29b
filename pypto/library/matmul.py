"""load_insn("matmul") and load_insn("matmulbias"): C = A @ B (+ bias) on the cube, in pypto's DSL.

A (M, K) and B (K, N) GM tensors, or batched A (batch, M, K) with B (batch, K, N) or one shared
(K, N); C (M, N) / (batch, M, N). Inputs f16, bf16, f32 (C f32, or f16/bf16 converted by the
fixpipe) and i8 (C i32). The output is cut into BM x BN tiles spread over the blocks (cube cores);
each tile loops over K in BK steps: TLOAD GM -> L1 (ND -> Nz), TMOV L1 -> L0A/L0B, TMATMUL for the
first step (TMATMUL_BIAS with a bias) and TMATMUL_ACC after, then one TSTORE L0C -> GM (with
ReLU when relu=True). Tails are valid regions: m, k, n of the last tiles are what is left.
Tile sizes come from the SoC's L0 capacities (``tile_sizes``).
"""
from __future__ import annotations

import functools

from .. import dtypes as D
from ..errors import DTypeError, ShapeError
from ..isa.schema import Param
from ..lang import pto
from ..lang.kernel import KernelFunction, kernel
from . import forms as F
from .kernels import launch_dims

BM, BN_MAX = 256, 256           # output tile rows; columns: as many as the SoC's L0C holds, up to 256
_ACC = {"f16": "f32", "bf16": "f32", "f32": "f32", "i8": "i32"}
RELU = Param("relu", "bool", (False, True), False)


def tile_sizes(soc, in_dt: D.DType) -> tuple[int, int, int]:
    """(BM, BN, BK): BN is the widest BM x BN 4-byte accumulator L0C holds (fewer, wider tiles
    move less data per multiply), BK the largest that fits a BM x BK tile in L0A and a BK x BN
    one in L0B (this kernel is not double-buffered: examples/kernel_gemm.py shows ping-pong), a
    multiple of 32 bytes' worth of elements. On a2a3 that is 256 x 128 x 128: the cube moves the
    same bytes per multiply as 128 x 256 x 128, but the simulator's costlier side is B's (L1 -> L0B
    transposes its boxes, and BLAS packs it with its slower copy), so B gets the smaller tile
    (benchmarks/README.md, stop 50)."""
    bn = min(BN_MAX, soc.space("Acc").capacity // (BM * 4))
    cap = min(soc.space("Left").capacity // BM, soc.space("Right").capacity // bn)
    bk = cap // in_dt.itemsize
    c0 = 32 // in_dt.itemsize
    return BM, bn, max(c0, min(bk, 4096) // c0 * c0)


def _gemm(bias: bool, relu: bool) -> KernelFunction:
    store = {"reluMode": "NormalRelu"} if relu else {}

    def body(a, b, *rest):
        c = rest[-1]
        in_dt, acc_dt = a.dtype, D.BY_NAME[_ACC[a.dtype.short]]
        bm, bn, bk = tile_sizes(pto.soc(), in_dt)
        batch, m_all, k_all = a.shape[0], a.shape[1], a.shape[2]
        b_batch, n_all = b.shape[0], b.shape[2]
        am = pto.TileMatNz(in_dt, (bm, bk), valid=pto.DYNAMIC)
        bmat = pto.TileMatNz(in_dt, (bk, bn), valid=pto.DYNAMIC)
        al = pto.TileLeft(in_dt, (bm, bk), valid=pto.DYNAMIC)
        br = pto.TileRight(in_dt, (bk, bn), valid=pto.DYNAMIC)
        acc = pto.TileAcc(acc_dt, (bm, bn), valid=pto.DYNAMIC)
        if bias:
            bias_mat = pto.Tile(pto.Mat, rest[0].dtype, (1, bn), valid=pto.DYNAMIC)
            bias_t = pto.TileBias(acc_dt, (1, bn), valid=pto.DYNAMIC)
        mt = (m_all + bm - 1) // bm
        nt = (n_all + bn - 1) // bn
        kt = (k_all + bk - 1) // bk
        for t in pto.range(pto.block_idx(), batch * mt * nt, pto.block_num()):
            bi = t // (mt * nt)
            bb = pto.min(bi, b_batch - 1)                 # a shared B has one batch
            m0 = (t // nt) % mt * bm
            n0 = t % nt * bn
            mh = pto.min(bm, m_all - m0)
            nw = pto.min(bn, n_all - n0)

            def step(k0, first: bool) -> None:
                kw = pto.min(bk, k_all - k0)
                am.set_valid(mh, kw)
                bmat.set_valid(kw, nw)
                pto.TLOAD(am, a[bi, m0:m0 + mh, k0:k0 + kw])
                pto.TLOAD(bmat, b[bb, k0:k0 + kw, n0:n0 + nw])
                if first and bias:
                    bias_mat.set_valid(1, nw)
                    pto.TLOAD(bias_mat, rest[0][0:1, n0:n0 + nw])
                pto.set_flag(pto.PIPE_MTE2, pto.PIPE_MTE1, pto.EVENT_ID0)
                pto.wait_flag(pto.PIPE_MTE2, pto.PIPE_MTE1, pto.EVENT_ID0)
                al.set_valid(mh, kw)
                br.set_valid(kw, nw)
                pto.TMOV(al, am)
                pto.TMOV(br, bmat)
                if first and bias:
                    bias_t.set_valid(1, nw)
                    pto.TMOV(bias_t, bias_mat)
                pto.set_flag(pto.PIPE_MTE1, pto.PIPE_M, pto.EVENT_ID0)
                pto.wait_flag(pto.PIPE_MTE1, pto.PIPE_M, pto.EVENT_ID0)
                if not first:
                    pto.TMATMUL_ACC(acc, al, br)
                elif bias:
                    pto.TMATMUL_BIAS(acc, al, br, bias_t)
                else:
                    pto.TMATMUL(acc, al, br)
                pto.set_flag(pto.PIPE_M, pto.PIPE_MTE2, pto.EVENT_ID0)   # L1/L0 free for the next step
                pto.wait_flag(pto.PIPE_M, pto.PIPE_MTE2, pto.EVENT_ID0)

            acc.set_valid(mh, nw)
            step(0, True)
            for kk in pto.range(1, kt):
                step(kk * bk, False)
            pto.set_flag(pto.PIPE_M, pto.PIPE_FIX, pto.EVENT_ID0)
            pto.wait_flag(pto.PIPE_M, pto.PIPE_FIX, pto.EVENT_ID0)
            pto.TSTORE(c[bi, m0:m0 + mh, n0:n0 + nw], acc, **store)
            pto.set_flag(pto.PIPE_FIX, pto.PIPE_M, pto.EVENT_ID0)
            pto.wait_flag(pto.PIPE_FIX, pto.PIPE_M, pto.EVENT_ID0)

    if bias:
        def fn(a, b, bias_, c):
            body(a, b, bias_, c)
    else:
        def fn(a, b, c):
            body(a, b, c)
    fn.__name__ = fn.__qualname__ = f"lib_matmul{'_bias' if bias else ''}{'_relu' if relu else ''}"
    return kernel(fn, dynamic_shapes=True)


@functools.lru_cache(maxsize=None)
def _cached(pto_name: str, params: tuple = ()) -> KernelFunction:
    return _gemm(pto_name == "TMATMUL_BIAS", bool(dict(params).get("relu", False)))


# -- the forms -----------------------------------------------------------------------------------

def _shapes(call: F.Call) -> tuple[int, int, int, int, int]:
    """(batch, b's batch, M, K, N) of a call; raises on shapes that do not multiply."""
    (_, sa), (_, sb) = call.info[0], call.info[1]
    sc = call.info[len(call.slots) - 1][1]
    if len(sa) not in (2, 3) or len(sb) not in (2, len(sa)) or 0 in sa + sb:
        raise ShapeError(f"{call.name}: a has shape {sa} and b {sb}",
                         rule=f"{call.name} multiplies (M, K) @ (K, N), or batched (batch, M, K) @ "
                              "(batch, K, N) or (K, N)",
                         fix="pass 2-D (or 3-D batched) tensors")
    batch = sa[0] if len(sa) == 3 else 1
    bb = sb[0] if len(sb) == 3 else 1
    m, k = sa[-2:]
    kb, n = sb[-2:]
    if kb != k or bb not in (1, batch):
        raise ShapeError(f"{call.name}: a {sa} @ b {sb} do not multiply",
                         rule="a's last dimension equals b's rows (and batches agree)",
                         fix=f"pass b with {k} rows")
    want = (batch, m, n) if len(sa) == 3 else (m, n)
    if tuple(sc) != want:
        raise ShapeError(f"{call.what(len(call.slots) - 1)} has shape {sc}",
                         rule=f"{call.name}: c is {want} for a {sa} @ b {sb}",
                         fix=f"pass c of shape {want}")
    if call.spec.name == "TMATMUL_BIAS" and call.info[2][1] not in ((n,), (1, n)):
        raise ShapeError(f"{call.what(2)} has shape {call.info[2][1]}",
                         rule=f"{call.name}'s bias holds one value per column: ({n},)",
                         fix=f"pass a bias of shape ({n},)")
    return batch, bb, m, k, n


def _check(call: F.Call) -> D.DType:
    _shapes(call)
    a, b = call.info[0][0], call.info[1][0]
    c = call.info[len(call.slots) - 1][0]
    if a != b or a.short not in _ACC:
        raise DTypeError(f"{call.name}: a is {a.name} and b {b.name}",
                         rule=f"{call.name} multiplies two tensors of one type: float16, bfloat16, "
                              "float32 (float32 result) or int8 (int32 result)",
                         fix="convert the inputs to one of them")
    acc = _ACC[a.short]
    ok = ("f32", "f16", "bf16") if acc == "f32" else ("i32",)
    if c.short not in ok:
        raise DTypeError(f"{call.name}: c is {c.name} for {a.name} inputs",
                         rule=f"{a.name} products accumulate in {D.BY_NAME[acc].name}; the result is "
                              f"stored as {', '.join(D.BY_NAME[x].name for x in ok)}",
                         fix=f"pass c as {D.BY_NAME[ok[0]].name}")
    if call.spec.name == "TMATMUL_BIAS":
        bias = call.info[2][0]
        if bias.short not in ((acc, "f16") if acc == "f32" else (acc,)):
            raise DTypeError(f"{call.name}: bias is {bias.name}",
                             rule=f"the bias is {D.BY_NAME[acc].name} (or float16, widened in L1 -> BT)",
                             fix=f"pass the bias as {D.BY_NAME[acc].name}")
    return a


def _views(call: F.Call) -> dict[int, tuple]:
    batch, bb, m, k, n = _shapes(call)
    out = {0: (batch, m, k), 1: (bb, k, n), len(call.slots) - 1: (batch, m, n)}
    if call.spec.name == "TMATMUL_BIAS":
        out[2] = (1, n)
    return out


def _blocks(call: F.Call) -> int:
    batch, _, m, _, n = _shapes(call)
    bm, bn, _ = tile_sizes(call.soc, call.info[0][0])
    return launch_dims(batch * -(-m // bm) * -(-n // bn), call.soc.aic_cores)


def _example(dt, to):
    from ..tensor import empty
    out = D.BY_NAME[_ACC.get(dt.short, "f32")]
    return empty((64, 32), dt), empty((32, 48), dt), empty((64, 48), out)


def _example_bias(dt, to):
    from ..tensor import empty
    out = D.BY_NAME[_ACC.get(dt.short, "f32")]
    return empty((64, 32), dt), empty((32, 48), dt), empty((48,), out), empty((64, 48), out)


def _legal(call: F.Call) -> str:
    return "float16, bfloat16, float32 (-> float32) and int8 (-> int32)"


F.register(F.Form("matmul", F.slots("a:in b:in c:out"), _cached, _check, _views, _blocks,
                  _example, _legal, params=(RELU,)))
F.register(F.Form("matmulbias", F.slots("a:in b:in bias:in c:out"), _cached, _check, _views,
                  _blocks, _example_bias, _legal, params=(RELU,)))
