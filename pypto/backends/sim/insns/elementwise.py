"""5.2 / 5.3 elementwise loops: dst = op(src0, src1) and dst = op(src, scalar) over dst's valid region.

Each tile operand is (storage array, row stride, col stride, valid rows, valid cols) and is
addressed through its own strides, as the NPU does. The loop template below is instantiated
once per (op, codec) as ``binary_<op>_<codec>`` / ``scalar_<op>_<codec>``, with the scalar op and
the element codec as module-level names so numba inlines them and the loops vectorise (a
function-typed argument or a closure would stop both, and neither could be cached on disk).
"""
import re

from numba import njit

from . import errcodes as E


OPS = ("add", "sub", "mul", "div", "idiv", "fmax", "fmin", "imax", "imin")
CODECS = {"native": ("ident", "ident"), "f16": ("f16_to_f32", "f32_to_f16"),
          "bf16": ("bf16_to_f32", "f32_to_bf16")}


@njit(cache=True, error_model="numpy", nogil=True)
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


_TEMPLATE = """\
from numba import njit
from pypto.backends.sim.insns.elementwise import covers
from pypto.backends.sim.insns.ops import {op} as op, {ld} as ld, {st} as st


@njit(cache=True, error_model="numpy", nogil=True)
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


@njit(cache=True, error_model="numpy", nogil=True)
def scalar(dst, drs, dcs, dvr, dvc, a, ars, acs, avr, avc, s, err):
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
"""
_NAME = re.compile(r"(binary|scalar)_({ops})_({codecs})".format(ops="|".join(OPS), codecs="|".join(CODECS)))


def __getattr__(name: str):
    """binary_<op>_<codec> / scalar_<op>_<codec>, made on first use from the template above as a
    real module in the kernel cache directory, so numba caches it on disk like any kernel."""
    m = _NAME.fullmatch(name)
    if m is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .. import compile as C
    from ..options import default_cache_dir
    kind, op, codec = m.groups()
    ld, st = CODECS[codec]
    mod = C.load_module(_TEMPLATE.format(op=op, ld=ld, st=st), default_cache_dir(), f"ew_{op}_{codec}")
    globals()[f"binary_{op}_{codec}"] = mod.binary
    globals()[f"scalar_{op}_{codec}"] = mod.scalar
    return globals()[name]
