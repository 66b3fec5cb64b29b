"""``pto``: a thin alias of pypto's tool entry points, so the tutorial's ``python -m pto.codegen``
works as written. The library itself is ``pypto``."""
