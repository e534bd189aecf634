"""The LU / inverse ops inside torch.autocast (csrc/ops/autocast/lu_autocast.cpp): a float16 / bfloat16 matrix is
factored or inverted in float32 and the results stay float32 (torch's CPU autocast policy for torch.linalg.inv);
float64 and complex inputs go through unchanged; the in-place ops refuse half precision as they do outside."""
import pytest
import torch

import torch_inplace.linalg as TL
from conftest import LINALG_DEVICES as DEVICES, needs_cuda, same_bits, well_conditioned

HALF = [torch.float16, torch.bfloat16]
OPS = ["batched_inverse", "batched_inverse_ex", "lu_factor", "lu_factor_ex"]


def results(out):
    return (out,) if isinstance(out, torch.Tensor) else tuple(out)


def half_input(device, dtype, n=6, batch=(3, 5)):
    return well_conditioned(batch, n, torch.float32, device, seed=n).to(dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", OPS)
def test_half_input_runs_in_float32(device, dtype, name):
    A = half_input(device, dtype)
    expected = results(getattr(torch.ops.inplace, name)(A.float()))
    for fn in (getattr(torch.ops.inplace, name), getattr(TL, name)):
        with torch.autocast(device, dtype=dtype):
            got = results(fn(A))
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype and g.device == A.device
            assert same_bits(g, e), f"{name} {dtype}"
    # Outside autocast the kernels still refuse half precision, naming the op.
    with pytest.raises(RuntimeError, match=rf"{name.replace('_ex', '')}.*got (Half|BFloat16)"):
        getattr(torch.ops.inplace, name)(A)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
@pytest.mark.parametrize("name", OPS)
def test_other_dtypes_unchanged(device, dtype, name):
    A = well_conditioned((4,), 5, dtype, device)
    expected = results(getattr(torch.ops.inplace, name)(A))
    with torch.autocast(device, dtype=torch.bfloat16):
        got = results(getattr(torch.ops.inplace, name)(A))
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and same_bits(g, e)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", HALF)
def test_gradient_reaches_half_input(device, dtype):
    A = half_input(device, dtype).requires_grad_()
    G = torch.randn(A.shape, generator=torch.Generator().manual_seed(1)).to(device)
    with torch.autocast(device, dtype=dtype):
        X = TL.batched_inverse(A)
        LU, _ = TL.lu_factor(A)
    ((X * G).sum() + (LU * G).sum()).backward()
    assert A.grad.dtype == dtype
    # Each float32 gradient is cast back to the input's dtype by its cast's backward, then the two are summed there.
    A32 = A.detach().float().requires_grad_()
    g_inv, = torch.autograd.grad((torch.linalg.inv(A32) * G).sum(), A32)
    g_lu, = torch.autograd.grad((torch.linalg.lu_factor(A32)[0] * G).sum(), A32)
    ref = (g_inv.to(dtype) + g_lu.to(dtype)).float()
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(A.grad.float(), ref, rtol=2 * eps, atol=2 * eps * ref.abs().max().item())


@pytest.mark.parametrize("device", DEVICES)
def test_transforms_under_autocast(device):
    A = half_input(device, torch.bfloat16)
    with torch.autocast(device, dtype=torch.bfloat16):
        V = torch.func.vmap(TL.batched_inverse)(A)
        LU = torch.func.vmap(TL.lu_factor)(A).LU
        g = torch.func.grad(lambda a: TL.batched_inverse(a).sum())(A)
        # torch's inverse cast the same way; its backward's matmuls run in bfloat16 here too, as ours do.
        ref = torch.func.grad(lambda a: torch.linalg.inv(a.float()).sum())(A)
    assert V.dtype == LU.dtype == torch.float32 and g.dtype == torch.bfloat16
    assert same_bits(V, torch.ops.inplace.batched_inverse(A.float()))
    assert same_bits(LU, torch.ops.inplace.lu_factor(A.float())[0])
    torch.testing.assert_close(g, ref, atol=0.02 * ref.abs().max().item(), rtol=0.02)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["inverse_", "lu_factor_"])
def test_inplace_ops_still_refuse_half(device, name):
    A = half_input(device, torch.float16)
    before = A.clone()
    with torch.autocast(device, dtype=torch.float16):
        with pytest.raises(RuntimeError, match=rf"{name}: expected dtype .* got Half"):
            getattr(TL, name)(A)
    assert same_bits(A, before)


@pytest.mark.parametrize("device", DEVICES)
def test_scripted_and_compiled(device):
    A = half_input(device, torch.bfloat16)
    expected = torch.ops.inplace.batched_inverse(A.float())

    def f(a: torch.Tensor) -> torch.Tensor:
        return torch.ops.inplace.batched_inverse(a)

    scripted = torch.jit.script(f)
    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    with torch.autocast(device, dtype=torch.bfloat16):
        for fn in (scripted, compiled):
            X = fn(A)
            assert X.dtype == torch.float32 and same_bits(X, expected)


@pytest.mark.gpu
@needs_cuda
def test_other_device_context_does_not_cast():
    # autocast("cuda") leaves CPU tensors alone, as torch's own autocast does: refused as outside autocast.
    A = half_input("cpu", torch.float16)
    with torch.autocast("cuda", dtype=torch.float16):
        with pytest.raises(RuntimeError, match="batched_inverse: expected dtype .* got Half"):
            torch.ops.inplace.batched_inverse(A)
