"""Built-in kernels behind the seed-level instruction names, written in pypto's own DSL."""
from .kernels import ROWS, TILE_BYTES, kernel_for, launch_dims

__all__ = ["kernel_for", "launch_dims", "TILE_BYTES", "ROWS"]
