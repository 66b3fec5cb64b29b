"""5.2 / 5.3 elementwise loops: dst = op(src0, src1) and dst = op(src, scalar) over dst's valid region.

Each tile operand is (storage array, row stride, col stride, valid rows, valid cols) and is
addressed through its own strides, as the NPU does.
"""
from numba import njit

from . import errcodes as E

_J = dict(cache=True, error_model="numpy", nogil=True)


@njit(**_J)
def _covers(k, svr, svc, dvr, dvc, err):
    if svr < dvr or svc < dvc:
        err[0] = E.SRC_VALID
        err[1] = k
        err[2] = svr
        err[3] = svc
        err[4] = dvr
        err[5] = dvc
        return False
    return True


@njit(**_J)
def binary(op, ld, st, dst, drs, dcs, dvr, dvc, a, ars, acs, avr, avc, b, brs, bcs, bvr, bvc, err):
    if not _covers(1, avr, avc, dvr, dvc, err) or not _covers(2, bvr, bvc, dvr, dvc, err):
        return
    if dcs == 1 and acs == 1 and bcs == 1:
        for r in range(dvr):
            d0 = r * drs
            a0 = r * ars
            b0 = r * brs
            for c in range(dvc):
                dst[d0 + c] = st(op(ld(a[a0 + c]), ld(b[b0 + c])))
    else:
        for r in range(dvr):
            for c in range(dvc):
                dst[r * drs + c * dcs] = st(op(ld(a[r * ars + c * acs]), ld(b[r * brs + c * bcs])))


@njit(**_J)
def binary_scalar(op, ld, st, dst, drs, dcs, dvr, dvc, a, ars, acs, avr, avc, s, err):
    if not _covers(1, avr, avc, dvr, dvc, err):
        return
    if dcs == 1 and acs == 1:
        for r in range(dvr):
            d0 = r * drs
            a0 = r * ars
            for c in range(dvc):
                dst[d0 + c] = st(op(ld(a[a0 + c]), s))
    else:
        for r in range(dvr):
            for c in range(dvc):
                dst[r * drs + c * dcs] = st(op(ld(a[r * ars + c * acs]), s))
