"""Host and device memory stay apart: numpy cannot read a device tensor implicitly."""
from __future__ import annotations

import numpy as np
import pytest

import pypto

pytestmark = pytest.mark.usefixtures("session")


def test_numpy_cannot_read_a_device_tensor_implicitly():
    t = pypto.Tensor([1.0, 2.0])
    before = pypto.stats().d2h_copies
    with pytest.raises(pypto.errors.HostMemoryError, match=r"tensor\.numpy\(\)"):
        np.asarray(t)
    assert pypto.stats().d2h_copies == before          # no hidden copy happened
    np.testing.assert_array_equal(t.numpy(), np.array([1.0, 2.0], np.float32))
    assert pypto.stats().d2h_copies == before + 1


def test_backend_copies_refuse_mismatched_host_arrays_without_copying():
    """The backend's copy_in/copy_out raise a PtoError (not an assert) and count nothing."""
    t = pypto.zeros((4,), pypto.float32)
    be = pypto.runtime.current().backend
    before = pypto.stats()
    with pytest.raises(pypto.errors.ShapeError) as ei:
        be.copy_in(t._buf, np.ones(5, np.float32))              # 20 bytes into 16
    assert ei.value.rule and ei.value.fix
    out = np.zeros((4, 2), np.float32)[:, 0]                    # not C-contiguous
    with pytest.raises(pypto.errors.ShapeError) as ei:
        be.copy_out(t._buf, out)
    assert ei.value.rule and ei.value.fix
    after = pypto.stats()
    assert (after.h2d_copies, after.d2h_copies) == (before.h2d_copies, before.d2h_copies)
    assert not out.any() and not t.numpy().any()
