"""In-place ops on conjugate and negative views (``t.conj()``, ``t._neg_view()``).

transpose_ / aos_to_soa_ / soa_to_aos_ and inverse_ commute with both bits, so they permute or invert the view's
storage in place, bits and all; lu_factor_ does not commute with negation and goes through a resolved copy. PyTorch's
math-bit fallback, which these ops once went through, corrupted the heap for the data-only ops that return nothing
(_transpose_data_, _inverse_data_): a subprocess with glibc's heap checks repeats the calls.
"""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import torch_inplace
import torch_inplace.linalg as TL
from conftest import devices, well_conditioned

VIEWS = {
    "conj": lambda t: t.conj(),
    "neg": lambda t: t._neg_view(),
    "conj_neg": lambda t: t.conj()._neg_view(),
}
MOVES = {
    "transpose_": (torch_inplace.transpose_, lambda x: x.mT.contiguous()),
    "aos_to_soa_": (torch_inplace.aos_to_soa_, lambda x: x.mT.contiguous()),
    "soa_to_aos_": (torch_inplace.soa_to_aos_, lambda x: x.mT.contiguous()),
}
SHAPES = {"transpose_": (3, 37, 23), "aos_to_soa_": (2, 301, 5), "soa_to_aos_": (2, 5, 301)}


def _ops_run(fn):
    """The ATen ops a call dispatches (profiler events), to see whether it copied the tensor."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], acc_events=True) as prof:
        fn()
    return {e.name for e in prof.events()}


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("view", ["conj", "neg"])  # both bits take a view of a view, which the moves refuse
@pytest.mark.parametrize("op", list(MOVES))
@pytest.mark.parametrize("inference", [False, True])
def test_moves_permute_the_view_in_place(op, view, inference, device):
    fn, ref = MOVES[op]
    with torch.inference_mode(inference):
        base = torch.randn(SHAPES[op], dtype=torch.complex64, device=device)
        expected = ref(VIEWS[view](base.clone()).resolve_conj().resolve_neg())
        t = VIEWS[view](base)
        del base  # the view is the storage's only holder
        p = t.data_ptr()
        ran = _ops_run(lambda: fn(t))
    assert t.data_ptr() == p and t.is_contiguous() and t.shape == expected.shape
    assert t.is_conj() == ("conj" in view) and t.is_neg() == ("neg" in view)
    torch.testing.assert_close(t.resolve_conj().resolve_neg(), expected, rtol=0, atol=0)
    # In place: no resolved copy of the tensor (the math-bit fallback's clone and copy back).
    assert not ran & {"aten::clone", "aten::copy_", "aten::_conj_physical", "aten::_neg_view_copy"}, ran


@pytest.mark.parametrize("view", ["conj", "neg"])
def test_bit_view_of_a_view_is_refused_with_the_reason(view):
    # view(...).conj(): autograd's view metadata keeps the intermediate view alive, indistinguishable from one the
    # caller holds, so the op refuses it (tensor untouched) and says to take the bit first, which it accepts.
    base = torch.randn(4, 6, dtype=torch.complex64)
    t = VIEWS[view](base.view(2, 12))
    del base
    before = t.resolve_conj().resolve_neg().clone()
    with pytest.raises(RuntimeError, match=r"transpose_: .*taken of another view.*take conj\(\) before view\(\)"):
        torch_inplace.transpose_(t)
    assert t.shape == (2, 12)
    torch.testing.assert_close(t.resolve_conj().resolve_neg(), before, rtol=0, atol=0)
    base = torch.randn(4, 6, dtype=torch.complex64)
    t = VIEWS[view](base).view(2, 12)
    expected = t.resolve_conj().resolve_neg().mT.contiguous()
    del base
    torch_inplace.transpose_(t)
    torch.testing.assert_close(t.resolve_conj().resolve_neg(), expected, rtol=0, atol=0)
    # A second bit view of the same base is a tensor the caller holds: refused without that reason.
    base = torch.randn(4, 6, dtype=torch.complex64)
    t, other = VIEWS[view](base), VIEWS[view](base)
    del base
    with pytest.raises(RuntimeError, match="^transpose_: expected a tensor whose storage no other tensor shares, "
                       "got a storage shared with 1 other tensor") as info:
        torch_inplace.transpose_(t)
    assert "taken of another view" not in str(info.value)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("view,dtype", [(v, d) for v in VIEWS for d in (torch.float64, torch.complex128)
                                        if d.is_complex or "conj" not in v])  # a real tensor has no conjugate view
@pytest.mark.parametrize("n", [3, 17, 40])
@pytest.mark.parametrize("inference", [False, True])
def test_inverse_inverts_the_view_in_place(n, dtype, view, inference, device):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA/ROCm device")
    with torch.inference_mode(inference):
        A = well_conditioned((4,), n, dtype, device)
        expected = torch.linalg.inv(VIEWS[view](A.clone()).resolve_conj().resolve_neg())
        V = VIEWS[view](A)
        del A
        p = V.data_ptr()
        ran = _ops_run(lambda: TL.inverse_(V))
    assert V.data_ptr() == p and V.is_conj() == ("conj" in view) and V.is_neg() == ("neg" in view)
    torch.testing.assert_close(V.resolve_conj().resolve_neg(), expected, rtol=1e-10, atol=1e-10)
    if n <= 64:  # the library's kernels (past 64 the GPU hands the call to torch.linalg, which copies)
        assert not ran & {"aten::clone", "aten::copy_"}, ran


def test_inverse_on_conj_view_keeps_its_gradient():
    B = well_conditioned((3,), 4, torch.complex128, "cpu").requires_grad_()
    V = (B * 1).conj()
    TL.inverse_(V)
    ref = torch.linalg.inv(B.conj())
    torch.testing.assert_close(V, ref)
    g = torch.randn_like(ref)
    (gB,) = torch.autograd.grad((V * g.conj()).real.sum(), B)
    (gref,) = torch.autograd.grad((ref * g.conj()).real.sum(), B)
    torch.testing.assert_close(gB, gref)


def test_repeated_calls_keep_the_heap_intact():
    """The math-bit fallback wrote past the end of the dispatcher's stack for ops that return nothing: glibc's
    heap checks (MALLOC_CHECK_=3) aborted the process within a few hundred calls."""
    code = textwrap.dedent("""
        import torch, torch_inplace
        for _ in range(1500):
            torch_inplace.inverse_(torch.randn(3, 2, 2, dtype=torch.complex128).conj())
            torch_inplace.inverse_(torch.randn(3, 2, 2, dtype=torch.float64)._neg_view())
            torch_inplace.transpose_(torch.randn(3, 5, dtype=torch.complex64).conj())
            torch_inplace.transpose_(torch.randn(3, 5, dtype=torch.float32)._neg_view())
            torch_inplace.aos_to_soa_(torch.randn(5, 3, dtype=torch.complex64).conj())
            torch_inplace.soa_to_aos_(torch.randn(3, 5, dtype=torch.complex64)._neg_view())
            torch_inplace.lu_factor_(torch.randn(2, 3, 3, dtype=torch.complex128).conj())
        print("heap ok")
    """)
    env = dict(os.environ, MALLOC_CHECK_="3", PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "heap ok" in r.stdout, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("view", ["mH", "conj", "neg"])
@pytest.mark.parametrize("name", ["inverse_", "lu_factor_"])
def test_compiled_inplace_on_a_bit_view_graph_input(name, view, backend, request):
    # A conjugate or negative view passed into compiled code and written there: inverse_ runs on a view without the bit
    # (its Conjugate / Negative kernels), so functionalization never sees the bit (it once failed: no
    # auto_functionalized_v2 kernel at the Conjugate key). complex128 under aot_eager; under inductor float64 only
    # (PyTorch 2.11's inductor cannot compile a mutating custom op on complex tensors), and for lu_factor_ not on a
    # negative view (inductor ignores a graph input's negative bit, for PyTorch's own add_ too).
    dtype = torch.complex128 if backend == "aot_eager" else torch.float64
    if backend == "inductor" and name == "lu_factor_" and view == "neg":  # run, so that a fix upstream shows
        request.applymarker(pytest.mark.xfail(strict=True, raises=AssertionError,
                                              reason="inductor ignores the negative bit of a graph input (PyTorch "
                                              "2.11, its own in-place ops too): a wrong result"))
    make = {"mH": lambda t: t.mH, "conj": lambda t: t.conj(), "neg": lambda t: t._neg_view()}[view]
    B = well_conditioned((2,), 4, dtype, "cpu")
    # the Python function (which copies back through a view inside compiled code) and the raw op
    for op in (getattr(TL, name), getattr(torch.ops.inplace, name)):
        torch._dynamo.reset()
        want = make(B.clone())
        op(want)
        got = make(B.clone())
        torch.compile(op, backend=backend)(got)
        torch.testing.assert_close(got.resolve_conj().resolve_neg(), want.resolve_conj().resolve_neg())
