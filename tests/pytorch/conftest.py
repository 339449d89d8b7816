"""Fixtures of the PyTorch-bridge tests."""

import pytest


@pytest.fixture(scope="module")
def torch_one_thread():
    """One PyTorch intra-op thread for a module's tests (small tensors: more threads only spin on a shared
    machine); the previous count is restored afterwards. Use with ``pytestmark = pytest.mark.usefixtures(...)``."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
