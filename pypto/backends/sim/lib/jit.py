"""The numba options of pypto's library functions, in one place."""

# Cached on disk; numpy's error model (no exception check on every division); the GIL released,
# since blocks run on threads; and no C callback wrapper: nothing uses a library function as a
# first-class function value, and building that wrapper costs a tenth of a tiny function's
# compile, a few percent of a library function's (benchmarks/README.md).
LIB = dict(cache=True, error_model="numpy", nogil=True, no_cfunc_wrapper=True)
# Small helpers numba inlines into each caller (its IR inlining: only where LLVM must see the body
# inside the caller's loop, to vectorise it).
INLINE = dict(LIB, inline="always")
# Functions only jitted code calls (the elementwise templates, the units' instruction loops, the
# cube's and the moves' entry points, the checks, layout.py's helpers): numba builds no CPython
# entry point for them, up to a third of a small function's compile. Calling one from Python would
# crash the process: a function Python calls keeps LIB (a test wraps one in an njit function).
XCALLED = dict(LIB, no_cpython_wrapper=True)
