"""Per-instruction numba implementations: the simulator's reference semantics.

Both sim modes call exactly these functions (compiled mode from generated code, eager mode one
call per instruction), so they give bit-identical results and the same diagnostics.
Runtime faults are reported through the ``err`` int64 array (codes in ``errcodes``).
"""
