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

# (shape, dtype): square, skinny (padded too), factor-poor (Catanzaro), tiled, batched, a short side dividing the long
# one (tiled21 tall, tiled22 wide and batched), 1 and 16-byte elements.
SHAPES = [((512, 512), torch.float32), ((100003, 7), torch.float32), ((7, 100003), torch.float64),
          ((997, 1009), torch.float32), ((3072, 2048), torch.float32), ((5, 120, 77), torch.float32),
          ((4096, 512), torch.float32), ((3, 100, 1200), torch.float64),
          ((3001, 2999), torch.uint8), ((301, 203), torch.complex128)]


def _random(shape, dtype, device):
    return rand(shape, dtype, device, generator=torch.Generator().manual_seed(sum(shape)))


def _applies(shape, dtype, algorithm):
    """Whether the planner plans `algorithm` for `shape` on the second GPU (the plan names that algorithm). It may
    refuse a forced algorithm only as documented, as torch_inplace.plan words it (csrc/plan/transpose_plan.cpp,
    make_plan: no candidate, or noop on a matrix; csrc/plan/gpu_plan.cpp, gpu_candidates: padded where the long side
    is no multiple of the short one within 1/32), and never "auto": any other error fails the test. plan() sees no
    storage slack, so its refusal of padded for want of slack means padded applies to a tensor of
    torch_inplace.empty_transposable."""
    try:
        planned = torch_inplace.plan(shape, dtype, D1, algorithm).algorithm
    except RuntimeError as e:
        if algorithm == "auto":
            raise
        msg = str(e)
        if algorithm == "padded" and msg.startswith("torch_inplace.plan: algorithm 'padded' needs "):
            assert "bytes of storage slack past the elements" in msg, msg
            return True
        rows, cols = shape[-2:]
        documented = [f"algorithm '{algorithm}' cannot transpose a {rows} x {cols} matrix on GPU"]
        if algorithm == "noop":
            documented.append("algorithm 'noop' only applies to empty tensors and vectors")
        if algorithm == "padded":
            documented.append("algorithm 'padded' applies to one matrix whose long side is at most 1/")
        assert any(msg.startswith("torch_inplace.plan: " + d) for d in documented), f"{algorithm}: {msg}"
        return False
    assert algorithm in ("auto", planned), (algorithm, planned)
    return True


def test_every_algorithm_applies_to_a_shape_on_the_other_gpu():
    # Every algorithm but noop (empty tensors and vectors alone) applies to some shape of SHAPES, so that
    # test_transposition_on_the_other_gpu, which runs every algorithm that applies, runs each at least once.
    applies = {algorithm: [shape for shape, dtype in SHAPES if _applies(shape, dtype, algorithm)]
               for algorithm in torch_inplace.algorithms()}
    assert [a for a, shapes in applies.items() if not shapes] == ["noop"], applies
    assert len(applies["auto"]) == len(SHAPES)


@pytest.mark.parametrize("shape,dtype", SHAPES, ids=[f"{s}-{str(d)[6:]}" for s, d in SHAPES])
def test_transposition_on_the_other_gpu(shape, dtype):
    x = _random(shape, dtype, D1)
    want = x.cpu().mT.contiguous()
    ran = []
    for algorithm in torch_inplace.algorithms():
        if not _applies(shape, dtype, algorithm):
            continue  # refused as documented: not an algorithm for this shape
        with torch.cuda.device(0):
            # the padded plan needs the factory's slack behind the tensor
            y = (torch_inplace.empty_transposable(shape, dtype=dtype, device=D1).copy_(x) if algorithm == "padded"
                 else x.clone())
            ptr = y.data_ptr()
            torch_inplace.transpose_(y, algorithm=algorithm)
            assert torch.cuda.current_device() == 0
        assert y.device == torch.device(D1) and y.data_ptr() == ptr, algorithm
        assert torch.equal(y.cpu(), want), algorithm
        ran.append(algorithm)
    # auto always; Catanzaro's two directions, forced, apply to every matrix (gpu_candidates), and the square tile
    # swaps exactly where rows == cols
    assert ran.count("auto") == 1 and {"c2r", "r2c"} <= set(ran), ran
    assert ("square" in ran) == (shape[-1] == shape[-2]), ran
    if shape[-1] <= 64:
        with torch.cuda.device(0):
            y = torch_inplace.aos_to_soa_(x.clone())
            assert torch.equal(y.cpu(), want) and torch.equal(torch_inplace.soa_to_aos_(y), x)


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


def _op_with_the_first_gpu_current(op, t, grad):
    """op on t (a tensor of the second GPU) with the first GPU current; its tensors, as a tuple."""
    with torch.cuda.device(0):
        if op == "transpose_":
            return (torch_inplace.transpose_(t),)
        if op == "batched_inverse":
            return (TL.batched_inverse(t),)
        if op == "inverse_":
            return (TL.inverse_(t),)
        if op == "lu_factor_ex":
            return tuple(TL.lu_factor_ex(t))
        Ag = t.detach().requires_grad_()
        TL.batched_inverse(Ag).backward(grad)
        return (Ag.grad,)


@pytest.mark.parametrize("op", ["transpose_", "batched_inverse", "inverse_", "lu_factor_ex", "backward"])
def test_the_other_gpus_current_stream(op):
    # The second GPU's current stream is a side stream whose input copy waits behind a long sleep; the first GPU is
    # current. A kernel launched on any other stream would read the input before the copy lands. Against torch on the
    # CPU.
    s = torch.cuda.Stream(device=1)
    if op == "transpose_":
        src = _random((997, 1009), torch.float32, D1)
        host = src.cpu()
        want = (host.mT.contiguous(),)
    else:
        src = well_conditioned((4096,), 8, torch.float64, D1, seed=3)
        host = src.cpu()
        want = {"batched_inverse": lambda: (torch.linalg.inv(host),), "inverse_": lambda: (torch.linalg.inv(host),),
                "lu_factor_ex": lambda: tuple(torch.linalg.lu_factor_ex(host)),
                "backward": lambda: (torch.func.grad(lambda a: (torch.linalg.inv(a) * host).sum())(host),)}[op]()
    dst = torch.zeros_like(src)
    _op_with_the_first_gpu_current(op, src.clone(), src)  # the kernels loaded before the sleep (a lazy load may sync)
    torch.cuda.synchronize(1)
    with torch.cuda.stream(s):  # the second GPU's current stream (and current device)
        torch.cuda._sleep(50_000_000)  # on s: about 25 ms
        dst.copy_(src)
        got = _op_with_the_first_gpu_current(op, dst, src)  # the second GPU keeps s as its current stream
    s.synchronize()
    assert all(t.device == torch.device(D1) for t in got), op
    torch.testing.assert_close(tuple(t.cpu() for t in got), want)
