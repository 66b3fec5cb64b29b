"""Why an instruction of the table is not simulated yet: one reason per family, as data.

``registry.status`` reads it for every table entry without a simulator lowering, so the
`pypto info` listing, NotSimulatedError messages and the table-coverage test all say the same.
"""
from __future__ import annotations

from ..ir import registry

registry.PENDING.update({
    "elementwise": "the rest of the vector ISA comes with the vector-ISA issue (issue 7)",
    "tile_scalar": "the rest of the vector ISA comes with the vector-ISA issue (issue 7)",
    "reduce_expand": "the rest of the vector ISA comes with the vector-ISA issue (issue 7)",
    "complex": "the rest of the vector ISA comes with the vector-ISA issue (issue 7)",
    "memory": "GM gather/scatter, prefetch and quantising stores come with the vector-ISA and "
              "matrix issues (issues 7 and 8)",
    "movement": "TIMG2COL (img2col of a ConvTile) is not built yet",
    "sync": "img2col and compute-mode state come with the matrix issue (issue 8)",
    "intrinsic": "tile FIFOs between cube and vector cores, dequantise and pack come with the "
                 "matrix issue (issue 8)",
})
