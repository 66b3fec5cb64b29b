"""5.2 / 5.3 shifts: TSHL TSHR (count per element from src1) and TSHLS TSHRS (one scalar count).

Over dst's valid region (sources cover it), ND tiles, integers. For a count c in 0 .. bits-1: shl
gives src * 2^c modulo 2^bits; shr is logical for unsigned and arithmetic (sign-filling) for signed
types. A count >= the element width or negative is undefined on the NPU (pto-isa-semantics 5.9
n3): pypto shifts every bit out, so shl gives 0 and shr gives 0 (-1 for a negative signed value)
-- also what C gives on a2a3's scalar TSHL/TSHR loop for 8- and 16-bit counts below 32 -- and
reports the first such count with SimOptions(checks="strict") (UB_SHIFT) before anything is
written. The loops are bits.py's (one per operand form, the operation a runtime code).
Reference: conformance/ref_bits.py ``shift``.
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..ir import guards as G
from ..ir.registry import Unit, register
from .bits import check_scalar, guards_scalar, lower_binary, _scalar
from .elementwise import check_covers

for _name in ("TSHL", "TSHR"):
    register(Unit(_name, check=check_covers, sim=lower_binary, seed="binary", emit=E.call(_name),
                  guards=G.covers))
for _name in ("TSHLS", "TSHRS"):
    register(Unit(_name, check=check_scalar, sim=_scalar([]), seed="scalar", emit=E.call(_name),
                  guards=guards_scalar))
