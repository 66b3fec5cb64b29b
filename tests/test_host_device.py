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
