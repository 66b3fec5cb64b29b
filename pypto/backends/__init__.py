"""Backend registry: name -> module, imported only when first used (``import pypto`` loads neither
numba kernels nor CANN). Each module offers ``is_available() -> (bool, reasons)`` and
``create(soc, device, options) -> Backend``."""
from __future__ import annotations

import importlib

from ..errors import BackendUnavailableError

REGISTRY = {"sim": "pypto.backends.sim", "npu": "pypto.backends.npu"}


def module(name: str):
    try:
        path = REGISTRY[name]
    except KeyError:
        raise BackendUnavailableError(f"unknown backend {name!r}",
                                      rule=f"backends: {', '.join(REGISTRY)}",
                                      fix="pypto.init(backend='sim') or PYPTO_BACKEND=sim") from None
    return importlib.import_module(path)


def is_available(name: str) -> tuple[bool, list[str]]:
    return module(name).is_available()
