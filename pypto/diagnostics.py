"""The words for each kernel rule that is checked either while tracing (when the values are
known then) or while running (when they are runtime values): one function per rule, used by
``lang/semantic.py`` and by the simulator's fault decoder, so both say the same thing."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import (DTypeError, GMBoundsError, ShapeError, TileAlignmentError, TileCapacityError,
                     ValidRegionError)


def _rc(pair: Any) -> str:
    return f"{pair[0]}x{pair[1]}"


def src_valid_too_small(instr: str, operand: str, src: str, src_valid, dst: str, dst_valid) -> ValidRegionError:
    return ValidRegionError(
        f"{instr}: {operand} {src} has a {_rc(src_valid)} valid region but dst {dst}'s is {_rc(dst_valid)}",
        rule="an elementwise op computes over dst's valid region and reads the same elements of "
             "each source; elements outside a source's valid region are unspecified on the NPU",
        fix=f"give {src} a valid region of at least {_rc(dst_valid)}, or shrink {dst}'s with set_valid")


def view_shape_mismatch(instr: str, view_rc, tile: str, tile_valid, layout: str) -> ShapeError:
    return ShapeError(
        f"{instr}: the GM view is {_rc(view_rc)} (as tile rows x cols) but tile {tile} has a "
        f"{_rc(tile_valid)} valid region",
        rule=f"{instr} moves exactly the tile's valid region: a {layout} tile needs validRow == "
             "s0*s1*s2*s3 and validCol == s4 (the transpose for DN) (pto-isa-semantics 4.2)",
        fix=f"slice the GM view to {_rc(tile_valid)} or set the tile's valid region to {_rc(view_rc)} "
            "(valid=... or set_valid)")


def gm_out_of_bounds(tensor: str, shape, what: str, value, limit) -> GMBoundsError:
    if what.endswith("extent") and value < 0:       # the bound is extent - 1 >= 0
        return empty_window(tensor, shape, what[:-len(" extent")], value + 1)
    return GMBoundsError(
        f"view of {tensor} (shape {tuple(shape)}): {what} = {value} is outside 0..{limit}",
        rule="a GM view must stay inside its tensor",
        fix="clamp the window with pto.min(...) and give the tile a matching valid region")


def empty_window(tensor: str, shape, dim: str, extent) -> GMBoundsError:
    return GMBoundsError(
        f"view of {tensor} (shape {tuple(shape)}): {dim} is empty ({extent} elements)",
        rule="a GM view has at least one element in every dim: TLOAD and TSTORE move at least one "
             "element, so a tile with an empty valid region has nothing to move",
        fix="skip the TLOAD/TSTORE when the window is empty (loop only over non-empty chunks, "
            "e.g. pto.range up to the number of rows that are left)")


def valid_out_of_range(tile: str, rows, cols, cap_rows: int, cap_cols: int) -> ValidRegionError:
    return ValidRegionError(
        f"set_valid({tile}, {rows}, {cols}): outside the tile's {cap_rows}x{cap_cols}",
        rule="the valid region is a prefix rectangle inside the tile (ValidRow <= Rows, "
             "ValidCol <= Cols)",
        fix="clamp the sizes with pto.min(...)")


def assign_misaligned(tile: str, addr: int, buffer: str, align: int) -> TileAlignmentError:
    return TileAlignmentError(
        f"TASSIGN({tile}, {addr:#x}): the address in {buffer} is not {align}-byte aligned",
        rule=f"{buffer} addresses are multiples of {align} bytes (SA-0354)",
        fix=f"use {addr - addr % align:#x} or {addr + align - addr % align:#x}")


def assign_past_end(tile: str, addr: int, nbytes: int, buffer: str, capacity: int) -> TileCapacityError:
    return TileCapacityError(
        f"TASSIGN({tile}, {addr:#x}): {tile} needs {nbytes} bytes, so it would end at "
        f"{addr + nbytes:#x}, past the end of {buffer} ({capacity} bytes)",
        rule="Addr + Rows*Cols*sizeof(T) <= capacity (SA-0353)",
        fix=f"use an address <= {capacity - nbytes:#x}")


def assign_negative(tile: str, addr: int, buffer: str) -> TileCapacityError:
    return TileCapacityError(
        f"TASSIGN({tile}, {addr}): the address is negative",
        rule=f"{buffer} addresses are byte offsets from the start of the buffer, 0 or more",
        fix="pass an address between 0 and the buffer's capacity minus the tile's size")


def scalar_out_of_range(instr: str, operand: str, value, dtype: str, lo, hi) -> DTypeError:
    return DTypeError(
        f"{instr}: scalar {operand} = {value} does not fit {dtype} ({lo} .. {hi})",
        rule="a scalar operand is converted to the tile's element type and must fit it, as "
             "pypto.Tensor data must",
        fix=f"pass a value in {lo} .. {hi}, or use a wider element type")


# the first magnitude that rounds to infinity in each float type
OVERFLOW = {"f32": 2.0 ** 128 - 2.0 ** 103, "f16": 65520.0, "bf16": 2.0 ** 128 - 2.0 ** 119}


def check_scalar(instr: str, operand: str, x: Any, dt) -> None:
    """A static scalar must convert to dt without changing its value class: integers in range,
    no fraction into an integer type, no finite float overflowing to inf (as Tensor data)."""
    if not isinstance(x, (int, float)):       # a runtime expression: checked when it runs
        return
    if dt.is_int:
        if isinstance(x, float) and not x.is_integer():
            raise DTypeError(f"{instr}: scalar {operand} = {x!r} is not an integer but the tile is {dt.name}",
                             rule="the scalar is converted to the tile's element type",
                             fix="pass an int, or use a float tile")
        info = np.iinfo(dt.np)
        if not info.min <= int(x) <= info.max:
            raise scalar_out_of_range(instr, operand, x, dt.name, info.min, info.max)
    elif dt.short in OVERFLOW and math.isfinite(float(x)) and abs(float(x)) >= OVERFLOW[dt.short]:
        raise DTypeError(f"{instr}: scalar {operand} = {x!r} overflows {dt.name} (it would become inf)",
                         rule="a scalar operand is converted to the tile's element type and must fit "
                              "it, as pypto.Tensor data must",
                         fix=f"pass a value whose magnitude is below {OVERFLOW[dt.short]:g}, or use a "
                             "wider type")
