"""Tensors whose data is not aligned as PyTorch's own allocations are: numpy's complex128 arrays are only 8-byte
aligned, and torch.from_numpy shares them. The CPU ops must work on them (they crashed: aligned 16-byte moves in the
transposition engine, complex<double> loads in the LU kernels); GPU memory from DLPack at an offset is refused by the
transposition, whose kernels would fault on it. Data is filled and read through numpy (PyTorch's own copy_ can crash
on such a tensor)."""
import numpy as np
import pytest
import torch

import torch_inplace
import torch_inplace.linalg as TL
from conftest import needs_cuda


def misaligned(shape, dtype=np.complex128, offset=8, seed=0):
    """A numpy array of `shape` at `offset` bytes past a 16-byte boundary, filled with random values, and the
    torch tensor that shares it."""
    count = int(np.prod(shape))
    itemsize = np.dtype(dtype).itemsize
    raw = np.zeros(count * itemsize + 64, dtype=np.uint8)
    start = (-raw.ctypes.data) % 16 + offset
    a = raw[start:start + count * itemsize].view(dtype).reshape(shape)
    rng = np.random.default_rng(seed)
    a[...] = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if np.iscomplexobj(a) else 0)
    t = torch.from_numpy(a)
    assert t.data_ptr() % 16 == offset % 16
    return a, t, raw


CPU_ALGORITHMS = ["auto", "square", "c2r", "r2c", "skinny", "tiled32", "cut", "onchip"]


@pytest.mark.parametrize("shape", [(31, 37), (64, 64), (300, 7), (1000, 3000), (5, 40, 24)])
def test_transposition_of_8_byte_aligned_complex128(shape):
    for algorithm in CPU_ALGORITHMS:
        try:
            torch_inplace.plan(shape, torch.complex128, "cpu", algorithm=algorithm)
        except RuntimeError as e:
            assert "cannot transpose" in str(e)
            continue
        a, t, raw = misaligned(shape)
        want = np.swapaxes(a, -1, -2).copy()
        torch_inplace.transpose_(t, algorithm=algorithm)
        assert t.shape == want.shape
        got = a.reshape(want.shape)  # the same bytes, read by numpy
        assert np.array_equal(got, want), algorithm
    for op, back in ((torch_inplace.aos_to_soa_, torch_inplace.soa_to_aos_),):
        a, t, raw = misaligned(shape)
        before = a.copy()
        op(t)
        back(t)
        assert np.array_equal(a, before)


@pytest.mark.parametrize("n", [1, 3, 5, 20, 40])
def test_linalg_of_8_byte_aligned_complex128(n):
    batch = (4,)
    a, t, raw = misaligned(batch + (n, n), seed=n)
    a += n * np.eye(n)  # well conditioned
    A = torch.from_numpy(a.copy())  # an aligned copy: the reference's input
    X_ref = torch.linalg.inv(A)
    LU_ref, piv_ref = torch.linalg.lu_factor(A)
    # Out of place: read the misaligned input.
    X = TL.batched_inverse(t)
    torch.testing.assert_close(X, X_ref)
    LU, piv = TL.lu_factor(t)
    torch.testing.assert_close(LU, LU_ref)
    assert torch.equal(piv, piv_ref)
    # In place: the misaligned storage ends up holding the results.
    TL.inverse_(t)
    torch.testing.assert_close(torch.from_numpy(a.copy()), X_ref)
    a[...] = A.numpy()
    piv2 = TL.lu_factor_(t)
    torch.testing.assert_close(torch.from_numpy(a.copy()), LU_ref)
    assert torch.equal(piv2, piv_ref)


@pytest.mark.gpu
@needs_cuda
def test_gpu_transposition_refuses_misaligned_dlpack_memory():
    cp = pytest.importorskip("cupy")
    m, n = 40, 24
    mem = cp.cuda.alloc(16 * m * n + 16)
    raw = cp.ndarray((16 * m * n + 16,), dtype=cp.uint8, memptr=mem)
    raw[...] = cp.arange(raw.size, dtype=cp.uint8)  # byte writes: safe at any address
    before = raw.copy()
    arr = cp.ndarray((m, n), dtype=cp.complex128, memptr=mem + 8)
    t = torch.from_dlpack(arr)
    if t.data_ptr() % 16 != 8:
        pytest.skip("DLPack import did not keep the offset")
    for op in (torch_inplace.transpose_, torch_inplace.aos_to_soa_, torch_inplace.soa_to_aos_):
        name = op.__name__
        with pytest.raises(RuntimeError, match=rf"{name}: expected data aligned to its 16-byte elements, got an "
                                               r"address 8 bytes past such a boundary"):
            op(t)
        assert t.shape == (m, n)
    torch.cuda.synchronize()
    assert bool((raw == before).all())
