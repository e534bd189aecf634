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


MATH_BITS = {"none": lambda x: x, "conj": torch.conj, "neg": torch._neg_view}


@pytest.mark.parametrize("bits", list(MATH_BITS))
@pytest.mark.parametrize("dtype, offset", [(np.complex128, 8), (np.complex128, 4), (np.complex64, 4)])
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (4, 5, 5), (2, 17, 17), (33, 33), (70, 70)])
def test_linalg_of_misaligned_complex(shape, dtype, offset, bits):
    """The LU / inverse ops in and out of place on complex data at `offset` bytes past an element boundary, also
    through conj / neg views. PyTorch's own copies (clone, copy_, resolve_conj: the math-bit fallback's too) move
    complex elements with 16-byte instructions and crashed here (a single 3 x 3 complex128 matrix); the batched
    shapes of the first version of this test happened to pass."""
    n = shape[-1]
    a, t, raw = misaligned(shape, dtype=dtype, offset=offset, seed=n)
    a += n * np.eye(n, dtype=dtype)  # well conditioned
    view = MATH_BITS[bits]
    A = view(torch.from_numpy(a.copy())).resolve_conj().resolve_neg()  # an aligned copy of the values: the reference
    X_ref = torch.linalg.inv(A)
    LU_ref, piv_ref = torch.linalg.lu_factor(A)
    base = a.copy()

    def values():  # the misaligned storage's values through the view, read by numpy
        return view(torch.from_numpy(a.copy())).resolve_conj().resolve_neg()

    # Out of place: read the misaligned input.
    torch.testing.assert_close(TL.batched_inverse(view(t)), X_ref)
    X, info = TL.batched_inverse_ex(view(t))
    torch.testing.assert_close(X, X_ref)
    LU, piv = TL.lu_factor(view(t))
    torch.testing.assert_close(LU, LU_ref)
    assert torch.equal(piv, piv_ref)
    assert np.array_equal(a, base)  # the input untouched
    # In place: the misaligned storage ends up holding the results (seen through the view).
    TL.inverse_(view(t))
    torch.testing.assert_close(values(), X_ref)
    a[...] = base
    piv2 = TL.lu_factor_(view(t))
    torch.testing.assert_close(values(), LU_ref)
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


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("bits", list(MATH_BITS))
@pytest.mark.parametrize("shape", [(3, 3), (2, 17, 17), (40, 40), (70, 70)])
def test_gpu_linalg_of_misaligned_complex128(shape, bits):
    """The LU / inverse ops on complex128 GPU memory 8 bytes past a 16-byte boundary (DLPack from CuPy at an
    offset), in and out of place, through conj / neg views: the small kernels (n = 3, 17), the medium ones (40) and
    torch.linalg (70) get an aligned copy, made and written back through real views. Bytes go in and out through
    uint8 copies, which are safe at any address."""
    cp = pytest.importorskip("cupy")
    n = shape[-1]
    nbytes = 16 * int(np.prod(shape))
    mem = cp.cuda.alloc(nbytes + 16)
    raw = cp.ndarray((nbytes + 16,), dtype=cp.uint8, memptr=mem)
    t = torch.from_dlpack(cp.ndarray(shape, dtype=cp.complex128, memptr=mem + 8))
    if t.data_ptr() % 16 != 8:
        pytest.skip("DLPack import did not keep the offset")
    g = torch.Generator().manual_seed(n)
    base = torch.randn(shape, dtype=torch.complex128, generator=g) + n * torch.eye(n, dtype=torch.complex128)
    base_bytes = cp.asarray(base.view(torch.float64).contiguous().view(torch.uint8).reshape(-1).numpy())

    def put():
        raw[8:8 + nbytes] = base_bytes

    def values():  # the misaligned storage's values through the view, on the CPU
        host = torch.from_numpy(cp.asnumpy(raw[8:8 + nbytes]).copy()).view(torch.complex128).reshape(shape)
        return view(host).resolve_conj().resolve_neg()

    view = MATH_BITS[bits]
    A = view(base).resolve_conj().resolve_neg()
    X_ref, (LU_ref, piv_ref) = torch.linalg.inv(A), torch.linalg.lu_factor(A)
    put()
    torch.testing.assert_close(TL.batched_inverse(view(t)).cpu(), X_ref)
    LU, piv = TL.lu_factor(view(t))
    torch.testing.assert_close(LU.cpu(), LU_ref)
    assert torch.equal(piv.cpu(), piv_ref)
    torch.testing.assert_close(values(), A)  # the input untouched
    TL.inverse_(view(t))
    torch.testing.assert_close(values(), X_ref)
    put()
    assert torch.equal(TL.lu_factor_(view(t)).cpu(), piv_ref)
    torch.testing.assert_close(values(), LU_ref)
    torch.cuda.synchronize()
