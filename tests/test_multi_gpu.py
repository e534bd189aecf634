"""Tensors on a second GPU while the first is current: every op runs on its tensor's device and on that device's
current stream, returns results there, and leaves the current device as it was. Needs two GPUs (skipped elsewhere).
"""
import pytest
import torch

import torch_inplace
import torch_inplace.linalg as TL
from conftest import rand, same_bits, well_conditioned

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs two GPUs"),
]

D1 = "cuda:1"

# (shape, dtype): square, skinny, factor-poor (Catanzaro), tiled, batched, 1 and 16-byte elements.
SHAPES = [((512, 512), torch.float32), ((100003, 7), torch.float32), ((7, 100003), torch.float64),
          ((997, 1009), torch.float32), ((3072, 2048), torch.float32), ((5, 120, 77), torch.float32),
          ((3001, 2999), torch.uint8), ((301, 203), torch.complex128)]


def _random(shape, dtype, device):
    return rand(shape, dtype, device, generator=torch.Generator().manual_seed(sum(shape)))


@pytest.mark.parametrize("shape,dtype", SHAPES, ids=[f"{s}-{str(d)[6:]}" for s, d in SHAPES])
def test_transposition_on_the_other_gpu(shape, dtype):
    x = _random(shape, dtype, D1)
    want = x.mT.contiguous()
    for algorithm in torch_inplace.algorithms():
        try:
            torch_inplace.plan(shape, dtype, D1, algorithm)
        except RuntimeError:
            continue  # not an algorithm for this shape
        with torch.cuda.device(0):
            # the padded plan needs the factory's slack behind the tensor
            y = (torch_inplace.empty_transposable(shape, dtype=dtype, device=D1).copy_(x) if algorithm == "padded"
                 else x.clone())
            ptr = y.data_ptr()
            torch_inplace.transpose_(y, algorithm=algorithm)
            assert torch.cuda.current_device() == 0
        assert y.device == torch.device(D1) and y.data_ptr() == ptr, algorithm
        assert torch.equal(y, want), algorithm
    if shape[-1] <= 64:
        with torch.cuda.device(0):
            y = torch_inplace.aos_to_soa_(x.clone())
            assert torch.equal(y, want) and torch.equal(torch_inplace.soa_to_aos_(y), x)


@pytest.mark.parametrize("n", [1, 4, 13, 17, 24, 32, 40, 70])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
def test_linalg_on_the_other_gpu(n, dtype):
    # Against the same calls with the tensor's own device current: the same kernels, so the same bits.
    A = well_conditioned((300,), n, dtype, D1, seed=n)
    A[7] = 0  # singular: info set
    G = torch.randn_like(A)

    def run():
        out = {"inv": TL.batched_inverse(A), "inv_ex": TL.batched_inverse_ex(A), "lu_ex": TL.lu_factor_ex(A)}
        W = A.clone()
        TL.inverse_(W)
        out["inverse_"] = W
        W = A.clone()
        out["lu_"] = (TL.lu_factor_(W), W)
        Ag = A[:7].clone().requires_grad_()  # without the singular matrix
        TL.batched_inverse(Ag).backward(G[:7])
        out["grad"] = Ag.grad
        return out

    with torch.cuda.device(1):
        want = run()
    with torch.cuda.device(0):
        got = run()
        assert torch.cuda.current_device() == 0
    for key in want:
        w, g = want[key], got[key]
        for a, b in zip(w if isinstance(w, tuple) else (w,), g if isinstance(g, tuple) else (g,)):
            assert b.device == torch.device(D1), key
            assert same_bits(b, a), key


@pytest.mark.parametrize("op", ["transpose_", "batched_inverse", "inverse_", "lu_factor_ex", "backward"])
def test_the_other_gpus_current_stream(op):
    # The second GPU's current stream is a side stream whose input copy waits behind a long sleep; the first GPU is
    # current. A kernel launched on any other stream would read the input before the copy lands.
    s = torch.cuda.Stream(device=1)
    if op == "transpose_":
        src = _random((997, 1009), torch.float32, D1)
        want = src.mT.contiguous()
    else:
        src = well_conditioned((4096,), 8, torch.float64, D1, seed=3)
        want = {"batched_inverse": lambda: TL.batched_inverse(src), "inverse_": lambda: TL.batched_inverse(src),
                "lu_factor_ex": lambda: TL.lu_factor_ex(src).LU,
                "backward": lambda: torch.func.grad(lambda a: (torch.linalg.inv(a) * src).sum())(src)}[op]()
    dst = torch.zeros_like(src)
    torch.cuda.synchronize(1)
    with torch.cuda.stream(s):  # the second GPU's current stream (and current device)
        torch.cuda._sleep(50_000_000)  # on s: about 25 ms
        dst.copy_(src)
        with torch.cuda.device(0):  # the first GPU current again; the second keeps s as its current stream
            if op == "transpose_":
                got = torch_inplace.transpose_(dst)
            elif op == "batched_inverse":
                got = TL.batched_inverse(dst)
            elif op == "inverse_":
                got = TL.inverse_(dst)
            elif op == "lu_factor_ex":
                got = TL.lu_factor_ex(dst).LU
            else:
                Ag = dst.detach().requires_grad_()
                TL.batched_inverse(Ag).backward(src)
                got = Ag.grad
    s.synchronize()
    torch.testing.assert_close(got, want)
