"""TRESHAPE (5.7): dst names src's bytes with dst's tile type.

Both SoCs alias (the NPU code is ``TASSIGN(dst, src.data())``): no data moves. pypto models the
alias as placement: when the kernel is traced, dst gets src's address, so dst and src are views
of the same bytes for the whole kernel in both simulator modes (a write through one is read
through the other) and the C++ binds both to one address. So dst must not already live
elsewhere (used before, or TASSIGNed to another address): a TileError. Rules: same location,
same total bytes, no boxed <-> unboxed change; element types are free. dst keeps its own valid
region. Reference: conformance/ref_memory.py ``treshape`` (a byte reinterpretation).
"""
from __future__ import annotations

from ..backends.npu import emit as E
from ..errors import LayoutError, LocationError, NotSimulatedError, TileError, TileShapeError
from ..ir.nodes import Expr
from ..ir.registry import Unit, register


def _bind(node, dst, src) -> None:
    """Give dst src's address (the alias), placing src first if this is its first use."""
    if src.addr is None and not src.manual:
        from ..lang import builder as B
        b = B.active()
        if b is not None:
            b.placement.ensure(src, node.site)
    if src.addr is None or isinstance(src.addr, Expr):
        return          # a runtime address, or IR built without the DSL: checked when lowered
    if dst.addr is None and not dst.manual:
        dst.addr = src.addr
        return
    if dst.addr != src.addr:
        how = "is TASSIGNed to" if dst.manual else "already lives at"
        raise TileError(f"TRESHAPE: dst {dst.name} {how} {dst.addr!r} but src {src.name} is at "
                        f"{src.addr:#x}",
                        rule="TRESHAPE makes dst name src's bytes (the NPU re-binds dst to src's "
                             "address); pypto binds a tile to one address for the whole kernel",
                        fix=f"declare a fresh tile for the reshaped view (first used by TRESHAPE), or "
                            f"TASSIGN {dst.name} to {src.addr:#x}")


def check_reshape(node, soc) -> None:
    dst, src = node.operands
    d, s = dst.type, src.type
    if d.loc != s.loc:
        raise LocationError(f"TRESHAPE: dst {dst.name} is in {d.loc} but src {src.name} in {s.loc}",
                            rule="TRESHAPE reinterprets bytes in place: dst and src share a location",
                            fix="use TMOV to move data between locations")
    if d.nbytes != s.nbytes:
        raise TileShapeError(f"TRESHAPE: dst {dst.name} has {d.nbytes} bytes but src {src.name} has "
                             f"{s.nbytes}", rule="TRESHAPE keeps the total byte size",
                             fix="pick a dst shape and dtype of the same byte size")
    if (d.slayout == "NoneBox") != (s.slayout == "NoneBox"):
        raise LayoutError(f"TRESHAPE: {s.layout_name} src {src.name} -> {d.layout_name} dst {dst.name}",
                          rule="TRESHAPE cannot change between boxed and unboxed layouts",
                          fix="keep both tiles unboxed (ND/DN) or both boxed")
    _bind(node, dst, src)


def lower_reshape(node, soc) -> list:
    dst, src = node.operands
    if src.manual and (src.addr is None or isinstance(src.addr, Expr)):
        raise NotSimulatedError(f"TRESHAPE of tile {src.name}, placed at a runtime address",
                                rule="pypto models TRESHAPE's alias by placement, so src needs an "
                                     "address known when the kernel is traced",
                                fix=f"TASSIGN {src.name} to a constant address")
    if dst.addr != src.addr or dst.addr is None:
        raise TileError(f"TRESHAPE: dst {dst.name} and src {src.name} were placed at different "
                        f"addresses ({dst.addr!r}, {src.addr!r})",
                        rule="TRESHAPE aliases: dst and src must name the same bytes",
                        fix="build the kernel with the DSL (which places dst at src's address), or "
                            "place both tiles at one address")
    return []                            # the alias is the placement: nothing runs


register(Unit("TRESHAPE", check=check_reshape, sim=lower_reshape, emit=E.call("TRESHAPE")))
