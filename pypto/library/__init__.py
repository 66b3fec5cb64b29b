"""Built-in kernels behind the seed-level instruction names, written in pypto's own DSL."""
from .elementwise import BINARY, TILE_BYTES, TILE_SCALAR, launch_dims

__all__ = ["BINARY", "TILE_SCALAR", "TILE_BYTES", "launch_dims"]
