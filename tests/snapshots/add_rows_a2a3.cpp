// add_rows: PTO C++ emitted by pypto for SoC a2a3 (vec cores).
// From kernel_add_rows.py:add_rows. Do not edit: regenerate with kern.cpp(*args) or `pypto cpp`.

#include <cstdint>
#include <cstddef>
#include <pto/pto-inst.hpp>

using namespace pto;

#if defined(__CPU_SIM)
// pto-isa's CPU backend runs the blocks one after another; call_kernel sets these.
static thread_local int64_t pypto_block_idx = 0;
static thread_local int64_t pypto_block_num = 1;
#define PYPTO_BLOCK_IDX() pypto_block_idx
#define PYPTO_BLOCK_NUM() pypto_block_num
#else
#define PYPTO_BLOCK_IDX() ((int64_t)get_block_idx())
#define PYPTO_BLOCK_NUM() ((int64_t)get_block_num())
#endif

// Python's // and % (round toward minus infinity); C++'s round toward zero.
static inline AICORE int64_t pypto_floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline AICORE int64_t pypto_floormod(int64_t a, int64_t b)
{
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline AICORE int64_t pypto_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline AICORE int64_t pypto_max(int64_t a, int64_t b) { return a > b ? a : b; }

// Run-time guards: the simulator's checks of facts only known at run time, writing the same
// fault record (codes: pypto/backends/errcodes.py); pypto reads it after the launch and raises
// the PtoError the simulator would. A failed guard ends the block before the statement runs.
#define PYPTO_GUARD(site, fault)     do { if (fault) { pypto_err[7] = (site); pypto_err[8] = block_idx; return; } } while (0)
static inline AICORE bool pypto_fault(__gm__ int64_t *e, int64_t code, int64_t a, int64_t b = 0, int64_t c = 0,
                                      int64_t d = 0, int64_t f = 0)
{
    e[0] = code; e[1] = a; e[2] = b; e[3] = c; e[4] = d; e[5] = f;
    return true;
}
static inline AICORE bool pypto_bound(__gm__ int64_t *e, int64_t k, int64_t v, int64_t lim)
{ return (v < 0 || v > lim) && pypto_fault(e, 3, k, v, lim); }
static inline AICORE bool pypto_set_valid(__gm__ int64_t *e, int64_t r, int64_t c, int64_t cr, int64_t cc)
{ return (r < 0 || c < 0 || r > cr || c > cc) && pypto_fault(e, 4, r, c, cr, cc); }
static inline AICORE bool pypto_assign(__gm__ int64_t *e, int64_t a, int64_t n, int64_t cap, int64_t align)
{
    if (a < 0) return pypto_fault(e, 7, a);
    if (a % align != 0) return pypto_fault(e, 5, a, align);
    return a + n > cap && pypto_fault(e, 6, a, n, cap);
}
static inline AICORE bool pypto_int_scalar(__gm__ int64_t *e, int64_t k, int64_t v, int64_t lo, int64_t hi)
{ return (v < lo || v > hi) && pypto_fault(e, 8, k, v, lo, hi); }
static inline AICORE bool pypto_float_scalar(__gm__ int64_t *e, int64_t k, double v, double lim)
{
    double a = v < 0 ? -v : v;
    return a >= lim && a <= 1.7976931348623157e308 && pypto_fault(e, 9, k);
}
static inline AICORE bool pypto_covers(__gm__ int64_t *e, int64_t k, int64_t sr, int64_t sc, int64_t dr, int64_t dc)
{ return (sr < dr || sc < dc) && pypto_fault(e, 1, k, sr, sc, dr, dc); }
static inline AICORE bool pypto_same_rows(__gm__ int64_t *e, int64_t k, int64_t sr, int64_t dr)
{ return sr != dr && pypto_fault(e, 10, k, sr, dr); }
static inline AICORE bool pypto_same_cols(__gm__ int64_t *e, int64_t k, int64_t sc, int64_t dc)
{ return sc != dc && pypto_fault(e, 12, k, sc, dc); }
static inline AICORE bool pypto_view_shape(__gm__ int64_t *e, int64_t r, int64_t c, int64_t vr, int64_t vc)
{ return (r != vr || c != vc) && pypto_fault(e, 2, r, c, vr, vc); }
static inline AICORE bool pypto_range(__gm__ int64_t *e, int64_t what, int64_t v, int64_t lo, int64_t hi)
{ return (v < lo || v > hi) && pypto_fault(e, 13, what, v, lo, hi); }

__global__ AICORE void add_rows(__gm__ float *x, __gm__ float *y, __gm__ float *z, __gm__ int64_t *pypto_errs)
{
    const int64_t block_idx = PYPTO_BLOCK_IDX();
    const int64_t block_num = PYPTO_BLOCK_NUM();
    __gm__ int64_t *pypto_err = pypto_errs + 16 * block_idx;   // this block's fault record
    (void)block_num;
    (void)pypto_err;
    // a: Vec<f32, 16x104, ND> at UB 0x0
    Tile<TileType::Vec, float, 16, 104, BLayout::RowMajor, DYNAMIC, DYNAMIC> a(16, 104);
    TASSIGN(a, 0x0);
    // b: Vec<f32, 16x104, ND> at UB 0x1a00
    Tile<TileType::Vec, float, 16, 104, BLayout::RowMajor, DYNAMIC, DYNAMIC> b(16, 104);
    TASSIGN(b, 0x1a00);
    for (int64_t i0 = block_idx; i0 < 19; i0 += block_num) {
        PYPTO_GUARD(0, pypto_set_valid(pypto_err, pypto_min(16, (300 - (i0 * 16))), 100, 16, 104));
        a.RowMaskInternal = pypto_min(16, (300 - (i0 * 16)));
        a.ColMaskInternal = 100;
        PYPTO_GUARD(1, pypto_set_valid(pypto_err, pypto_min(16, (300 - (i0 * 16))), 100, 16, 104));
        b.RowMaskInternal = pypto_min(16, (300 - (i0 * 16)));
        b.ColMaskInternal = 100;
        // kernel_add_rows.py:40: pto.TLOAD(a, x[r0:r0 + h, 0:cols])        # GM -> UB on the MTE2 pipe
        PYPTO_GUARD(2, pypto_bound(pypto_err, 0, ((i0 * 16) + pypto_min(16, (300 - (i0 * 16)))), 300));
        PYPTO_GUARD(2, pypto_bound(pypto_err, 1, (pypto_min(16, (300 - (i0 * 16))) - 1), 299));
        PYPTO_GUARD(2, pypto_bound(pypto_err, 2, (i0 * 16), 299));
        PYPTO_GUARD(2, pypto_view_shape(pypto_err, pypto_min(16, (300 - (i0 * 16))), 100, a.GetValidRow(), a.GetValidCol()));
        PYPTO_GUARD(2, pypto_bound(pypto_err, -1, ((((i0 * 16) * 100) + ((pypto_min(16, (300 - (i0 * 16))) - 1) * 100)) + 99), 29999));
        GlobalTensor<float, Shape<1, 1, 1, DYNAMIC, 100>, Stride<100, 100, 100, 100, 1>, Layout::ND> x_v1(x + ((i0 * 16) * 100), Shape<1, 1, 1, DYNAMIC, 100>(1, 1, 1, pypto_min(16, (300 - (i0 * 16))), 100), Stride<100, 100, 100, 100, 1>(100, 100, 100, 100, 1));
        TLOAD(a, x_v1);
        // kernel_add_rows.py:41: pto.TLOAD(b, y[r0:r0 + h, 0:cols])
        PYPTO_GUARD(3, pypto_bound(pypto_err, 0, ((i0 * 16) + pypto_min(16, (300 - (i0 * 16)))), 300));
        PYPTO_GUARD(3, pypto_bound(pypto_err, 1, (pypto_min(16, (300 - (i0 * 16))) - 1), 299));
        PYPTO_GUARD(3, pypto_bound(pypto_err, 2, (i0 * 16), 299));
        PYPTO_GUARD(3, pypto_view_shape(pypto_err, pypto_min(16, (300 - (i0 * 16))), 100, b.GetValidRow(), b.GetValidCol()));
        PYPTO_GUARD(3, pypto_bound(pypto_err, -1, ((((i0 * 16) * 100) + ((pypto_min(16, (300 - (i0 * 16))) - 1) * 100)) + 99), 29999));
        GlobalTensor<float, Shape<1, 1, 1, DYNAMIC, 100>, Stride<100, 100, 100, 100, 1>, Layout::ND> y_v2(y + ((i0 * 16) * 100), Shape<1, 1, 1, DYNAMIC, 100>(1, 1, 1, pypto_min(16, (300 - (i0 * 16))), 100), Stride<100, 100, 100, 100, 1>(100, 100, 100, 100, 1));
        TLOAD(b, y_v2);
        set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
        wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
        // kernel_add_rows.py:44: pto.TADD(a, a, b)                         # over a's valid region (h x 100), on pipe V
        PYPTO_GUARD(4, pypto_covers(pypto_err, 2, b.GetValidRow(), b.GetValidCol(), a.GetValidRow(), a.GetValidCol()));
        TADD(a, a, b);
        set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
        wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
        // kernel_add_rows.py:47: pto.TSTORE(z[r0:r0 + h, 0:cols], a)       # UB -> GM on the MTE3 pipe
        PYPTO_GUARD(5, pypto_bound(pypto_err, 0, ((i0 * 16) + pypto_min(16, (300 - (i0 * 16)))), 300));
        PYPTO_GUARD(5, pypto_bound(pypto_err, 1, (pypto_min(16, (300 - (i0 * 16))) - 1), 299));
        PYPTO_GUARD(5, pypto_bound(pypto_err, 2, (i0 * 16), 299));
        PYPTO_GUARD(5, pypto_view_shape(pypto_err, pypto_min(16, (300 - (i0 * 16))), 100, a.GetValidRow(), a.GetValidCol()));
        PYPTO_GUARD(5, pypto_bound(pypto_err, -1, ((((i0 * 16) * 100) + ((pypto_min(16, (300 - (i0 * 16))) - 1) * 100)) + 99), 29999));
        GlobalTensor<float, Shape<1, 1, 1, DYNAMIC, 100>, Stride<100, 100, 100, 100, 1>, Layout::ND> z_v3(z + ((i0 * 16) * 100), Shape<1, 1, 1, DYNAMIC, 100>(1, 1, 1, pypto_min(16, (300 - (i0 * 16))), 100), Stride<100, 100, 100, 100, 1>(100, 100, 100, 100, 1));
        TSTORE(z_v3, a);
        set_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID0);
        wait_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID0);
    }
}

// Host entry: pypto calls this through ctypes (argument list: pypto/backends/npu/abi.py).
extern "C" void call_kernel(uint32_t blockDim, void *stream, uint8_t *x, uint8_t *y, uint8_t *z, uint8_t *pypto_errs)
{
#if defined(__CPU_SIM)
    (void)stream;
    for (uint32_t pypto_b = 0; pypto_b < blockDim; ++pypto_b) {
        pypto_block_idx = pypto_b;
        pypto_block_num = blockDim;
        add_rows((__gm__ float *)x, (__gm__ float *)y, (__gm__ float *)z, (__gm__ int64_t *)pypto_errs);
    }
#else
    add_rows<<<blockDim, nullptr, stream>>>((__gm__ float *)x, (__gm__ float *)y, (__gm__ float *)z, (__gm__ int64_t *)pypto_errs);
#endif
}
