"""5.2 / 5.3 elementwise loops: dst = op(src0, src1) and dst = op(src, scalar) over dst's valid region.

Each tile operand is (storage array, row stride, col stride, valid rows, valid cols) and is
addressed through its own strides, as the NPU does. The loop templates below are instantiated
once per (op, codec) as ``binary_<op>_<codec>`` / ``scalar_<op>_<codec>``, with the scalar op and
the element codec as module-level names so numba inlines them and the loops vectorise (a
function-typed argument or a closure would stop both, and break numba's cache).
"""
from numba import njit

from . import errcodes as E
from . import ops

_J = dict(error_model="numpy", nogil=True)

OPS = ("add", "sub", "mul", "div", "idiv", "fmax", "fmin", "imax", "imin")
CODECS = {"native": ("ident", "ident"), "f16": ("f16_to_f32", "f32_to_f16"),
          "bf16": ("bf16_to_f32", "f32_to_bf16")}


@njit(cache=True, **_J)
def covers(k, svr, svc, dvr, dvc, err):
    """Source k's valid region must contain dst's, else SRC_VALID."""
    if svr < dvr or svc < dvc:
        err[0] = E.SRC_VALID
        err[1] = k
        err[2] = svr
        err[3] = svc
        err[4] = dvr
        err[5] = dvc
        return False
    return True


_TEMPLATE = '''
def binary(dst, drs, dcs, dvr, dvc, a, ars, acs, avr, avc, b, brs, bcs, bvr, bvc, err):
    if not covers(1, avr, avc, dvr, dvc, err) or not covers(2, bvr, bvc, dvr, dvc, err):
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


def binary_scalar(dst, drs, dcs, dvr, dvc, a, ars, acs, avr, avc, s, err):
    if not covers(1, avr, avc, dvr, dvc, err):
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
'''


def _instantiate(op: str, codec: str):
    ld, st = CODECS[codec]
    env = {"covers": covers, "op": getattr(ops, op), "ld": getattr(ops, ld), "st": getattr(ops, st),
           "__name__": __name__}
    exec(compile(_TEMPLATE, f"<pypto elementwise {op}/{codec}>", "exec"), env)  # noqa: S102
    return njit(**_J)(env["binary"]), njit(**_J)(env["binary_scalar"])


for _op in OPS:
    for _codec in CODECS:
        globals()[f"binary_{_op}_{_codec}"], globals()[f"scalar_{_op}_{_codec}"] = _instantiate(_op, _codec)
del _op, _codec
