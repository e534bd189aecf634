"""The public Python API on a GPU under torch.cuda.set_sync_debug_mode("error"), which raises on every host
synchronization that goes through PyTorch (a D2H copy, .item(), a stream or device sync): the transpositions (every
algorithm the planner takes for a set of shapes, the skinny ops, the plan queries), the LU / inverse ops (the
register, shared-memory and non-contiguous paths) and their backward passes synchronize nothing; only
check_errors=True does, and that is checked to raise here. Under torch.use_deterministic_algorithms(True) the same
calls run (none is refused) and give the same bits twice."""
import contextlib

import pytest
import torch

import torch_inplace
import torch_inplace.linalg as TL
from conftest import needs_cuda, well_conditioned

pytestmark = [pytest.mark.gpu, needs_cuda]

# Shapes for which the planner takes different algorithms (on-chip, square, skinny, C2R / R2C, tiled, batched).
SHAPES = [(512, 512), (3, 64, 64), (100003, 7), (7, 100003), (4096, 1024), (3072, 5120), (2, 257, 129),
          (9001, 2003)]


@contextlib.contextmanager
def sync_is_an_error():
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode(previous)


def test_sync_debug_mode_catches_a_sync():
    # The check can fail: a D2H copy under the mode raises.
    x = torch.ones(4, device="cuda")
    with sync_is_an_error(), pytest.raises(RuntimeError, match="synchroniz"):
        x.sum().item()


def _transpositions():
    algorithms = set()
    results = []
    for shape in SHAPES:
        x = torch.randn(shape, device="cuda")
        want = x.mT.contiguous()
        with sync_is_an_error():
            plan = torch_inplace.plan(shape, torch.float32, "cuda")
            torch_inplace.transpose_(x)
            torch_inplace.plan(x.shape, torch.float32, x.device).explanation
        algorithms.add(plan.algorithm)
        assert torch.equal(x, want), shape
        results.append(x)
    for shape in [(100003, 7), (5000, 3)]:
        x = torch.randn(shape, device="cuda")
        orig = x.clone()
        with sync_is_an_error():
            torch_inplace.aos_to_soa_(x)
            torch_inplace.soa_to_aos_(x)
        assert torch.equal(x, orig), shape
        results.append(x)
    return algorithms, results


def test_transpositions_never_sync():
    algorithms, _ = _transpositions()
    assert len(algorithms) >= 3, algorithms  # the shapes do reach several engines


def _linalg(dtype):
    out = []
    for n in (1, 3, 8, 16, 24, 32, 40, 64):  # the elementwise, register and shared-memory kernels
        A = well_conditioned((64,), n, dtype, "cuda", seed=n)
        with sync_is_an_error():
            out += list(TL.lu_factor(A)) + list(TL.lu_factor_ex(A)) + [TL.batched_inverse(A)]
            out += list(TL.batched_inverse_ex(A))
            B = A.clone()
            out += [TL.lu_factor_(B), B]
            for view in (lambda t: t, lambda t: t.mT, lambda t: t[::2]):
                C = A.clone()
                TL.inverse_(view(C))
                out.append(C)
            leaf = A.clone().requires_grad_()
            X = TL.batched_inverse(leaf)
            LU, _ = TL.lu_factor(leaf)
            (X.abs().sum() + LU.abs().sum()).backward()
            out.append(leaf.grad)
            D = leaf.detach().clone().requires_grad_()
            E = D * 1
            TL.inverse_(E)
            E.abs().sum().backward()
            out.append(D.grad)
        with sync_is_an_error(), pytest.raises(RuntimeError, match="synchroniz"):
            TL.batched_inverse_ex(A, check_errors=True)  # the one path that reads info on the host
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
def test_linalg_never_syncs(dtype):
    _linalg(dtype)


@contextlib.contextmanager
def deterministic():
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous)


def test_deterministic_algorithms_mode(monkeypatch):
    # cuBLAS needs this for determinism (PyTorch refuses its matmuls without it); the backward passes of n > 32 use
    # matmuls, as torch.linalg's do. Read at each call, so setting it here is enough.
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    with deterministic():
        torch.manual_seed(0)
        first = _transpositions()[1] + _linalg(torch.float32) + _linalg(torch.complex128)
        torch.manual_seed(0)
        second = _transpositions()[1] + _linalg(torch.float32) + _linalg(torch.complex128)
    assert len(first) == len(second)
    for i, (a, b) in enumerate(zip(first, second)):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), i
