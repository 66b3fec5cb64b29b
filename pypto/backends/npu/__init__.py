"""The Ascend NPU backend through CANN. This version only checks availability: it reports every
missing prerequisite so a user knows exactly what to install; kernels run on the simulator."""
from __future__ import annotations

import glob
import importlib.util
import os
import shutil

from ...errors import BackendUnavailableError


def _ascend_home() -> str | None:
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_HOME"):
        if os.environ.get(var):
            return os.environ[var]
    return None


def is_available() -> tuple[bool, list[str]]:
    """(usable, reasons it is not). Touches no CANN library."""
    missing = []
    if _ascend_home() is None:
        missing.append("CANN toolkit not set up: ASCEND_HOME_PATH is unset "
                       "(source <CANN>/set_env.sh, CANN 8.5 or later)")
    if importlib.util.find_spec("acl") is None:
        missing.append("pyACL (`import acl`) not importable: add CANN's python/site-packages to PYTHONPATH")
    if shutil.which("bisheng") is None:
        missing.append("bisheng compiler not on PATH (<CANN>/compiler/ccec_compiler/bin)")
    if not glob.glob("/dev/davinci[0-9]*"):
        missing.append("no Ascend device: /dev/davinci* not present (npu-smi info lists devices)")
    missing.append("the NPU kernel path (PTO C++ emission, bisheng build, launch) is not built in this "
                   "version of pypto")
    return (not missing), missing


def create(soc, device: int, options=None):
    ok, missing = is_available()
    raise BackendUnavailableError(
        "the npu backend cannot run here:\n    - " + "\n    - ".join(missing),
        rule="the npu backend needs CANN, pyACL, bisheng and an Ascend device",
        fix="use the simulator: pypto.init(backend='sim') (the default where no NPU is usable)")
