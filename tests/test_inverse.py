"""batched_inverse / batched_inverse_ex / inverse_ against torch.linalg.inv (CPU always, CUDA under `gpu`)."""
import subprocess
import sys
import textwrap

import pytest
import torch
from torch.library import opcheck

import torch_inplace.linalg as TL
from conftest import (LINALG_DEVICES as DEVICES, LINALG_DTYPES as DTYPES, PY, cuda_kernels_launched, graphed,
                      needs_cuda, python_subprocess_env, same_bits, well_conditioned)



def residual_ratio(A, X):
    """LAPACK-style ||A X - I||_1 / (n ||A||_1 ||X||_1 eps), per matrix."""
    n = A.shape[-1]
    eps = torch.finfo(A.dtype).eps
    I = torch.eye(n, dtype=A.dtype, device=A.device)
    r = torch.linalg.matrix_norm(A @ X - I, ord=1)
    return r / (n * torch.linalg.matrix_norm(A, ord=1) * torch.linalg.matrix_norm(X, ord=1) * eps)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_n_matches_linalg(device, dtype):
    batch = (37,) if device == "cpu" else (1000,)
    for n in range(1, 33):
        A = well_conditioned(batch, n, dtype, device, seed=n)
        X, info = TL.batched_inverse_ex(A)
        assert X.shape == A.shape and X.dtype == dtype and X.device == A.device
        assert info.dtype == torch.int32 and info.shape == batch and int(info.abs().sum()) == 0
        ref = torch.linalg.inv(A)
        tol = 2e-4 if dtype in (torch.float32, torch.complex64) else 1e-11
        torch.testing.assert_close(X, ref, rtol=tol, atol=tol * n, msg=lambda m: f"n={n}: {m}")
        ratio = residual_ratio(A, X).max().item()
        assert ratio <= 30, f"n={n} {dtype}: residual ratio {ratio}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_without_info_same_bits(device, dtype):
    # batched_inverse and inverse_ return no info, and on GPUs their kernels write none: the same bits as
    # batched_inverse_ex, for every kernel (n = 1 elementwise, the register kernels, the shared-memory ones past 32),
    # aligned or not (A[1:] starts n * n elements in), with singular matrices among them.
    for n in list(range(1, 34)) + [40, 64]:
        A = well_conditioned((67,), n, dtype, device, seed=n)
        A[3] = 0
        A[5, :, 0] = 0
        for M in (A, A[1:]):
            X, info = TL.batched_inverse_ex(M)
            s3, s5 = (3, 5) if M is A else (2, 4)
            assert int(info[s3]) == 1 and int(info[s5]) == 1 and int(info[0]) == 0, n
            assert same_bits(TL.batched_inverse(M), X), f"batched_inverse n={n}"
            B = M.clone()
            TL.inverse_(B)
            assert same_bits(B, X), f"inverse_ n={n}"


@pytest.mark.parametrize("device", DEVICES)
def test_n_above_32(device):
    # CUDA: 33..64 run the shared-memory kernels (medium_lu.cuh), past 64 torch.linalg; CPU: one implementation.
    for n in (33, 40, 64, 70):
        A = well_conditioned((3,), n, torch.float64, device, seed=n)
        torch.testing.assert_close(TL.batched_inverse(A), torch.linalg.inv(A), rtol=1e-11, atol=1e-11 * n)
        B = A.clone()
        TL.inverse_(B)
        torch.testing.assert_close(B, torch.linalg.inv(A), rtol=1e-11, atol=1e-11 * n)
        assert residual_ratio(A, B).max().item() <= 30


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_inplace(device, dtype):
    for n in (1, 2, 7, 16, 17, 32):
        A = well_conditioned((5, 3), n, dtype, device, seed=n)
        B = A.clone()
        ptr = B.data_ptr()
        out = TL.inverse_(B)
        assert out is B and B.data_ptr() == ptr
        tol = 2e-4 if dtype in (torch.float32, torch.complex64) else 1e-11
        torch.testing.assert_close(B, torch.linalg.inv(A), rtol=tol, atol=tol * n)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_singular_sets_info(device, dtype):
    n = 6
    A = well_conditioned((4,), n, dtype, device)
    A[1] = 0                       # info 1
    A[2, :, 3] = 0                 # zero column 3: exact zero pivot at step 4
    A[3, 2] = 2 * A[3, 5]          # dependent rows: singular, but rounding may hide it; must not crash
    X, info = TL.batched_inverse_ex(A)
    ref_info = torch.linalg.inv_ex(A.cpu()).info
    assert info[0].item() == 0 and info[1].item() == 1 and info[2].item() == ref_info[2].item() == 4
    assert X.shape == A.shape
    with pytest.raises(torch.linalg.LinAlgError, match=r"^inplace\.batched_inverse_ex: \(Batch element 1\): .*singul"):
        TL.batched_inverse_ex(A, check_errors=True)
    with pytest.raises(torch.linalg.LinAlgError, match=r"^inplace\.batched_inverse_ex: The diagonal element 1 is zero"):
        TL.batched_inverse_ex(A[1], check_errors=True)
    TL.batched_inverse(A)  # no check, no error


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pivoting_across_scales_and_near_ties(device, dtype):
    # Rows scaled by powers of two (exactly) over 2^-12..2^12 and diagonals scaled by 1e-4: a search that misses the
    # largest magnitude by orders (no pivoting, a misread exponent) makes the residual ratio 300-11000 here (a Python
    # Gauss-Jordan without pivoting, n = 5, 13, 24); any pivot within a factor of 2 of the largest stays below 1.
    # Half the matrices also hold a near tie in column 0 (within 2^-20 relative: one 32-bit key counts it as a tie,
    # the float64 inverse's pivot search at n = 13-28 but 24), whichever row it takes.
    g = torch.Generator().manual_seed(7)
    for n in (2, 5, 8, 13, 16, 20, 23, 24, 27, 28, 31):
        A = torch.randn(64, n, n, generator=g, dtype=torch.float64)
        A.diagonal(dim1=-2, dim2=-1).mul_(1e-4)
        A.mul_(torch.exp2(torch.randint(-12, 13, (64, n, 1), generator=g).double()))
        r1, r2 = n // 3, n - 1
        A[::2, r2, 0] = -A[::2, r1, 0] * (1 + 2.0 ** -20)
        A = A.to(dtype=dtype, device=device)
        X, info = TL.batched_inverse_ex(A)
        assert int(info.abs().sum()) == 0
        ratio = residual_ratio(A.double(), X.double()).max().item() * torch.finfo(torch.float64).eps / \
            torch.finfo(dtype).eps
        assert ratio <= 30, f"n={n} {dtype}: residual ratio {ratio}"


@pytest.mark.parametrize("device", DEVICES)
def test_nan_inf_inputs(device):
    for n in (1, 4, 16, 31):
        A = well_conditioned((3,), n, torch.float32, device)
        A[0, 0, 0] = float("nan")
        A[1, n - 1, 0] = float("inf")
        X, info = TL.batched_inverse_ex(A)
        assert X.shape == A.shape and info.shape == (3,)
        assert torch.isnan(X[0]).any()
        torch.testing.assert_close(X[2], torch.linalg.inv(A[2]), rtol=2e-4, atol=2e-4 * n)


@pytest.mark.parametrize("device", DEVICES)
def test_batch_shapes(device):
    for batch in [(), (0,), (1,), (2, 3), (0, 4), (2, 1, 3)]:
        for n in (0, 1, 3, 18):
            A = well_conditioned(batch, n, torch.float64, device) if n else torch.empty(*batch, 0, 0,
                                                                                       dtype=torch.float64,
                                                                                       device=device)
            X, info = TL.batched_inverse_ex(A)
            assert X.shape == A.shape and info.shape == batch
            if A.numel():
                torch.testing.assert_close(X, torch.linalg.inv(A))
            assert (info == 0).all()
    big = 20000 if device == "cpu" else 300000
    A = well_conditioned((big,), 3, torch.float32, device)
    X = TL.batched_inverse(A)
    # Against the float64 inverse, matrix by matrix, within what each matrix's condition allows: a few of these random
    # matrices are conditioned badly enough that two float32 inverses (ours, torch.linalg.inv's LAPACK, whose code
    # path depends on the CPU) differ by more than any fixed 1e-4 (seen on a CI machine: 1.02e-4 relative).
    A64 = A.double().cpu()
    ref = torch.linalg.inv(A64)
    err = (X.double().cpu() - ref).abs().amax((-2, -1)) / ref.abs().amax((-2, -1))
    bound = 30 * torch.linalg.cond(A64) * torch.finfo(torch.float32).eps
    assert (err <= bound).all(), (err / bound).max()
    assert err.median() < 1e-6


@pytest.mark.parametrize("device", DEVICES)
def test_non_contiguous_and_conj_inputs(device):
    A = well_conditioned((4,), 9, torch.complex128, device)
    for view in (A.mT, A[::2], A.conj(), A.mH, A[:, 1:, 1:]):
        torch.testing.assert_close(TL.batched_inverse(view), torch.linalg.inv(view))


@pytest.mark.parametrize("device", DEVICES)
def test_bad_inputs_leave_tensor_unchanged(device):
    cases = [
        (torch.ones(3, 3, dtype=torch.int64, device=device), "dtype"),
        (torch.ones(3, 3, dtype=torch.float16, device=device), "dtype"),
        (torch.ones(4, device=device), "at least 2 dims"),
        (torch.ones(2, 3, 4, device=device), "square"),
    ]
    for t, msg in cases:
        before = t.clone()
        with pytest.raises(RuntimeError, match=f"^batched_inverse: .*{msg}"):
            TL.batched_inverse(t)
        with pytest.raises(RuntimeError, match=f"^batched_inverse_ex: .*{msg}"):
            TL.batched_inverse_ex(t)
        with pytest.raises(RuntimeError, match=f"inverse_: .*{msg}"):
            TL.inverse_(t)
        assert torch.equal(t, before)
    A = well_conditioned((4,), 5, torch.float32, device)
    v = A[:1].expand(3, 5, 5)  # elements that share memory: refused as by torch's in-place ops
    before = v.clone()
    with pytest.raises(RuntimeError, match="^inverse_: expected a tensor whose elements do not overlap in memory"):
        TL.inverse_(v)
    assert torch.equal(v, before)
    # A conjugate view is inverted in its own storage (test_conj_neg_views.py has the rest).
    C = A.to(torch.complex64) * (1 + 1j)
    ref = torch.linalg.inv(C.conj())
    Cc = C.conj()
    TL.inverse_(Cc)
    torch.testing.assert_close(Cc, ref, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_inverse_inplace_takes_any_strides(device, dtype):
    """inverse_ on views that are not contiguous: a transposed one (.mT of contiguous storage) in its own storage,
    no temporary (inv(B^T) = inv(B)^T); any other through a contiguous copy written back. The rest of the storage
    stays as it was. n covers the register, shared-memory (GPU, 33..64) and torch.linalg (> 64) paths."""
    tol = 2e-4 if dtype in (torch.float32, torch.complex64) else 1e-11
    for n in (1, 3, 17, 40, 70):
        B = well_conditioned((6,), n, dtype, device, seed=n)
        views = {
            "mT": lambda t: t.mT,
            "every other matrix": lambda t: t[::2],
            "every other, transposed": lambda t: t[1::2].mT,
            "batch dims swapped": lambda t: t.view(2, 3, n, n).transpose(0, 1),
            "conjugate, sliced": lambda t: t.conj()[::3],
        }
        for what, view in views.items():
            C = B.clone()
            v = view(C)
            ref = torch.linalg.inv(v)
            ptr, shape, strides = v.data_ptr(), v.shape, v.stride()
            mask = torch.ones_like(C)
            view(mask).fill_(0)  # through the same view (math bits included): the elements it does not reach stay 1
            mask = mask != 0
            assert TL.inverse_(v) is v
            assert (v.data_ptr(), v.shape, v.stride()) == (ptr, shape, strides)
            torch.testing.assert_close(v, ref, rtol=tol, atol=tol, msg=lambda m: f"n={n} {what}: {m}")
            assert torch.equal(C[mask], B[mask]), (n, what)


@pytest.mark.gpu
@needs_cuda
def test_inverse_inplace_of_a_transposed_view_allocates_nothing():
    """The .mT case runs in the view's own storage: the caching allocator's peak stays below the tensor's size
    (a sliced view, which takes the copy, raises it by the tensor's size: the check can tell them apart)."""
    B = well_conditioned((256,), 16, torch.float32, "cuda")
    nbytes = B.numel() * B.element_size()

    def peak_of(view):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        TL.inverse_(view)
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base

    ref = torch.linalg.inv(B.mT)
    assert peak_of(B.mT) < nbytes // 4
    torch.testing.assert_close(B.mT, ref, rtol=2e-4, atol=2e-4)
    assert peak_of(B.view(2, 128, 16, 16).transpose(0, 1)) >= nbytes


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    samples = [well_conditioned((3,), 4, torch.float64, device), well_conditioned((2, 2), 17, torch.float32, device),
               well_conditioned((), 3, torch.complex64, device)]
    for A in samples:
        opcheck(torch.ops.inplace.batched_inverse_ex.default, (A,), {"check_errors": False})
        opcheck(torch.ops.inplace.batched_inverse.default, (A,))
        opcheck(torch.ops.inplace.batched_inverse.default, (A.clone().requires_grad_(),))
        opcheck(torch.ops.inplace.inverse_.default, (A.clone(),))
        opcheck(torch.ops.inplace.inverse_.default, (A.clone().requires_grad_() * 1,))
        opcheck(torch.ops.inplace._inverse_data_.default, (A.clone(),))
        X = torch.linalg.inv(A)
        opcheck(torch.ops.inplace._inverse_backward.default, (X, torch.randn_like(X)))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["inverse_", "lu_factor_"])
def test_inplace_on_a_leaf_is_refused_before_writing(op, device):
    A = well_conditioned((2,), 5, torch.float64, device).requires_grad_()
    before = A.detach().clone()
    with pytest.raises(RuntimeError, match=f"^{op}: a leaf Variable that requires grad is being used in an in-place"):
        getattr(torch.ops.inplace, op)(A)
    assert torch.equal(A.detach(), before)
    B = well_conditioned((2,), 5, torch.float64, device).requires_grad_().view(2, 5, 5)  # a view of a leaf
    before = B.detach().clone()
    with pytest.raises(RuntimeError, match=f"^{op}: a view of a leaf Variable that requires grad"):
        getattr(torch.ops.inplace, op)(B)
    assert torch.equal(B.detach(), before)
    # A view of a leaf that is itself a view of a tensor without grad (requires_grad_() on a view): its base is that
    # tensor, a leaf that does not require grad. PyTorch refuses it; the check let it through, the kernel wrote the
    # leaf, and only then did autograd raise (without the op's name, version bumped).
    root = well_conditioned((1,), 5, torch.float64, device)
    leaf = root[0].requires_grad_()
    C = leaf.view(5, 5)
    before, version = leaf.detach().clone(), leaf._version
    with pytest.raises(RuntimeError, match=op + ": a view of a leaf Variable that requires grad"):
        getattr(torch.ops.inplace, op)(C)
    assert torch.equal(leaf.detach(), before) and leaf._version == version


class _Identity(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        return t.view_as(t)  # a view returned by a custom Function

    @staticmethod
    def backward(ctx, g):
        return g


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["inverse_", "lu_factor_"])
def test_inplace_on_views_autograd_forbids_is_refused_before_writing(op, device):
    # Views that PyTorch's in-place ops refuse to write (an output of unbind, a view made under no_grad of a tensor
    # that requires grad, a view returned by a custom Function): the same refusal, naming the op, and nothing
    # written (it once came from mark_dirty, after the kernel had run).
    views = {
        "an output of unbind": (lambda y: y.unbind(0)[1], "output of a function that returns multiple views"),
        "a view made under no_grad": (lambda y: _no_grad_view(y), "created in no_grad mode"),
        "a custom Function's view": (lambda y: _Identity.apply(y), "created inside a custom Function"),
    }
    for what, (view, msg) in views.items():
        for fn in (getattr(TL, op), getattr(torch.ops.inplace, op)):
            y = well_conditioned((2,), 4, torch.float64, device).requires_grad_() * 1
            before = y.detach().clone()
            with pytest.raises(RuntimeError, match=f"^{op}: .*{msg}"):
                fn(view(y))
            assert torch.equal(y.detach(), before), what


def _no_grad_view(y):
    with torch.no_grad():
        return y[1]


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph(device):
    backend = "aot_eager" if device == "cpu" else "inductor"

    @torch.compile(fullgraph=True, backend=backend)
    def f(a):
        x, info = torch.ops.inplace.batched_inverse_ex(a)
        return torch.ops.inplace.batched_inverse(x) * 2, info

    A = well_conditioned((5,), 6, torch.float64, device)
    y, info = f(A)
    torch.testing.assert_close(y, 2 * A)
    assert (info == 0).all()


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    for dtype in (torch.float64, torch.complex128):
        A = well_conditioned((2,), 4, dtype, device).requires_grad_()
        assert torch.autograd.gradcheck(TL.batched_inverse, (A,))
        assert torch.autograd.gradgradcheck(TL.batched_inverse, (A,))
        assert torch.autograd.gradcheck(lambda a: TL.batched_inverse_ex(a)[0], (A,))

        def inplace(a):
            b = a * 1.0
            return TL.inverse_(b)

        assert torch.autograd.gradcheck(inplace, (A,))
        assert torch.autograd.gradgradcheck(inplace, (A,))
    A = well_conditioned((3,), 20, torch.float64, device).requires_grad_()
    G = torch.randn_like(A)
    (g_ours,) = torch.autograd.grad(TL.batched_inverse(A), A, G)
    (g_ref,) = torch.autograd.grad(torch.linalg.inv(A), A, G)
    torch.testing.assert_close(g_ours, g_ref)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["inverse_", "lu_factor_"])
@pytest.mark.parametrize("view", [False, True], ids=["tensor", "transposed_view"])
def test_backward_after_a_pack_hook_raised_is_an_error(name, view, device):
    """PyTorch saves a Function's tensors after its forward ran and gave the output its history; a saved_tensors_hooks
    pack hook that raises there leaves the in-place op's node with nothing saved. Its backward read past the empty
    list (a segfault); it raises now, as PyTorch's own in-place ops' backward does then."""
    def refuse(t):
        raise RuntimeError("pack refused")

    leaf = (torch.eye(3, dtype=torch.float64, device=device) * 2 + 0.1).requires_grad_()
    A = leaf * 1
    if view:
        A = A.mT
    with pytest.raises(RuntimeError, match="pack refused"):
        with torch.autograd.graph.saved_tensors_hooks(refuse, lambda t: t):
            getattr(TL, name)(A)
    with pytest.raises(RuntimeError, match=f"^{name}: expected the [12] tensor\\(s\\) saved for backward, got 0"):
        A.sum().backward()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB (Linux)")
def test_cpu_inverse_scratch_is_per_task_not_per_thread():
    # One large matrix is one task of the loop: its scratch is one n x n slot, whatever the thread count. (A slot per
    # thread, zero-filled, once took 256 x 0.5 MiB here.) A fresh process, so that the peak RSS starts from its own.
    code = textwrap.dedent("""
        import resource, torch, torch_inplace.linalg as TL
        n = 256
        A = torch.randn(1, n, n, dtype=torch.float64) + n * torch.eye(n, dtype=torch.float64)
        want = torch.linalg.inv(A)
        TL.batched_inverse(A[:, :2, :2])
        torch.set_num_threads(256)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        got = TL.batched_inverse(A)
        grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        torch.testing.assert_close(got, want)
        print("grew_kib", grew)
    """)
    r = subprocess.run([PY, "-c", code], env=python_subprocess_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    grew = int(r.stdout.split("grew_kib")[1])
    assert grew < 32 * 1024, f"peak RSS grew by {grew} KiB inverting one 256 x 256 float64 matrix at 256 threads"


def test_inplace_on_leaf_requiring_grad_refused():
    A = well_conditioned((2,), 3, torch.float64, "cpu").requires_grad_()
    with pytest.raises(RuntimeError, match="^inverse_: a leaf Variable"):
        TL.inverse_(A)


def _lu_and_inverse_ops(A, W_lu, W_inv, Leaf, G):
    """Every LU / inverse op on A (the in-place ones on their own copies W_lu, W_inv) and the backward of
    batched_inverse and lu_factor from Leaf with the cotangent G."""
    LU, piv = TL.lu_factor(A)
    LUx, pivx, infox = TL.lu_factor_ex(A)
    X = TL.batched_inverse(A)
    Xx, infoi = TL.batched_inverse_ex(A)
    piv_ = TL.lu_factor_(W_lu)
    TL.inverse_(W_inv)
    (gX,) = torch.autograd.grad(TL.batched_inverse(Leaf), Leaf, G)
    (gLU,) = torch.autograd.grad(TL.lu_factor(Leaf).LU, Leaf, G)
    return LU, piv, LUx, pivx, infox, X, Xx, infoi, piv_, W_lu, W_inv, gX, gLU


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_graph_capture_every_op(dtype):
    # The six ops and the two backward passes captured in one CUDA graph and replayed on new matrices, at an n of
    # every kernel family: the elementwise n = 1, the register kernels (a lane per matrix, several rows per lane,
    # split rows, the fp64 tensor cores, where the table picks them), the shared-memory kernels of 32 < n <= 64.
    # Each replay's results equal, bit for bit, the same calls made eagerly on the new matrices (scratch, pivots and
    # info included), and the inverse is checked against torch.linalg.inv.
    tol = 2e-4 if dtype in (torch.float32, torch.complex64) else 1e-11
    for n in (1, 2, 5, 8, 13, 16, 20, 24, 28, 32, 33, 48, 64):
        A = well_conditioned((300,), n, dtype, "cuda", seed=n)
        W_lu, W_inv, Leaf = A.clone(), A.clone(), A.clone().requires_grad_()
        G = well_conditioned((300,), n, dtype, "cuda", seed=1000 + n)
        graph, outs = graphed(lambda: _lu_and_inverse_ops(A, W_lu, W_inv, Leaf, G))
        for seed in (7, 8):
            B = well_conditioned((300,), n, dtype, "cuda", seed=seed * 100 + n)
            with torch.no_grad():
                for t in (A, W_lu, W_inv, Leaf):
                    t.copy_(B)
            G.copy_(well_conditioned((300,), n, dtype, "cuda", seed=seed * 100 + 50 + n))
            graph.replay()
            torch.cuda.synchronize()
            want = _lu_and_inverse_ops(B, B.clone(), B.clone(), B.clone().requires_grad_(), G)
            for i, (got, ref) in enumerate(zip(outs, want)):
                assert same_bits(got, ref), (n, dtype, i)
            torch.testing.assert_close(outs[5], torch.linalg.inv(B), rtol=tol, atol=tol * n)
            assert int(outs[4].abs().sum()) == 0 and int(outs[7].abs().sum()) == 0


@pytest.mark.gpu
@needs_cuda
def test_cuda_matches_cpu_and_current_stream():
    # The current stream is a side stream whose copy of the input waits behind a long sleep: a kernel launched on any
    # other stream (the legacy default one, which a side stream from torch's pool does not wait for) would read the
    # input before the copy lands, and invert zeros. Against torch.linalg on the CPU.
    s = torch.cuda.Stream()
    for dtype in DTYPES:
        for n in (1, 2, 3, 5, 8, 13, 16, 17, 24, 32):
            A = well_conditioned((333,), n, dtype, "cpu", seed=n)
            X_ref, info_ref = torch.linalg.inv_ex(A)
            assert (info_ref == 0).all()
            src = A.cuda()
            dst, dst_inplace = torch.zeros_like(src), torch.zeros_like(src)
            TL.batched_inverse_ex(src)  # the kernels loaded before the sleep (a lazy load might synchronize)
            TL.batched_inverse(src)
            TL.inverse_(src.clone())
            torch.cuda.synchronize()
            with torch.cuda.stream(s):
                torch.cuda._sleep(50_000_000)  # on s: about 25 ms
                dst.copy_(src)
                dst_inplace.copy_(src)
                X, info = TL.batched_inverse_ex(dst)
                X_noinfo = TL.batched_inverse(dst)
                TL.inverse_(dst_inplace)
                got = [t.cpu() for t in (X, info, X_noinfo, dst_inplace)]  # read back on s
            s.synchronize()
            X, info, X_noinfo, X_inplace = got
            assert torch.equal(info, info_ref), f"{dtype} n={n}: info {info.unique()}"
            tol = 2e-4 if dtype in (torch.float32, torch.complex64) else 1e-11
            for what, out in (("batched_inverse_ex", X), ("batched_inverse", X_noinfo), ("inverse_", X_inplace)):
                torch.testing.assert_close(out, X_ref, rtol=tol, atol=tol * n,
                                           msg=lambda m: f"{what} {dtype} n={n}: {m}")
            ratio = residual_ratio(A, X).max().item()
            assert ratio <= 30, f"{dtype} n={n}: residual ratio {ratio}"


@pytest.mark.parametrize("device", DEVICES)
def test_inverse_backward_op_every_n(device):
    """inplace::_inverse_backward (fused on GPUs for n <= 32) against -X^H G X^H."""
    for dtype in DTYPES:
        for n in range(1, 33):
            X = well_conditioned((37,), n, dtype, device, seed=n)
            G = well_conditioned((37,), n, dtype, device, seed=100 + n)
            out = torch.ops.inplace._inverse_backward(X, G)
            ref = -(X.mH @ G @ X.mH)
            tol = 1e-4 if dtype in (torch.float32, torch.complex64) else 1e-11
            torch.testing.assert_close(out, ref, rtol=tol, atol=tol * n * ref.abs().amax().item(),
                                       msg=lambda m: f"{dtype} n={n}: {m}")
    with pytest.raises(RuntimeError, match="_inverse_backward: expected grad of shape"):
        torch.ops.inplace._inverse_backward(X, G[:, :1])


def kernels_launched(fn):
    """fn() and the names of the library's kernels it launched, in launch order, e.g. "dmma_inverse_backward_kernel"."""
    out, found = cuda_kernels_launched(fn, r"torch_inplace::kernels::lu::(\w+)<")
    return out, [name for (name,) in found]


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("n", range(17, 33))
def test_inverse_backward_tensor_cores_match_fma_kernels(n, monkeypatch):
    """float64 n = 17..32: the fp64 tensor-core backward (mma.sync) against the FMA kernels
    (TORCH_INPLACE_LU_DMMA_BACKWARD=0) and against -X^T G X^T; aligned and unaligned data, a batch ending mid-block.
    The profiler names the kernel each call ran: launch_inverse_backward (csrc/ops/cuda/lu_launch.cuh) takes the
    tensor cores on compute capability 8.0 and up unless the variable is 0, else the block variant where
    BlockBackwardGeometry::kSupported (n = 17..24, 31, 32; csrc/kernels/lu/inverse_backward.cuh), else the row
    kernel."""
    batch = 1001
    X = well_conditioned((batch,), n, torch.float64, "cuda", seed=n)
    G = well_conditioned((batch,), n, torch.float64, "cuda", seed=200 + n)
    ref = -(X.mT @ G @ X.mT)
    fma = "block_inverse_backward_kernel" if n <= 24 or n >= 31 else "inverse_backward_kernel"
    tensor_cores = "dmma_inverse_backward_kernel" if torch.cuda.get_device_capability()[0] >= 8 else fma
    outs = []
    for env, kernel in (("1", tensor_cores), ("0", fma)):
        monkeypatch.setenv("TORCH_INPLACE_LU_DMMA_BACKWARD", env)
        out, ran = kernels_launched(lambda: torch.ops.inplace._inverse_backward(X, G))
        assert ran == [kernel], f"TORCH_INPLACE_LU_DMMA_BACKWARD={env} ran {ran}"
        outs.append(out)
    monkeypatch.delenv("TORCH_INPLACE_LU_DMMA_BACKWARD")
    store = torch.empty(2 * batch * n * n + 1, dtype=torch.float64, device="cuda")
    Xu = store[1:batch * n * n + 1].view(batch, n, n)
    Gu = store[batch * n * n + 1:].view(batch, n, n)
    Xu.copy_(X)
    Gu.copy_(G)
    assert Xu.data_ptr() % 16 != 0
    out, ran = kernels_launched(lambda: torch.ops.inplace._inverse_backward(Xu, Gu))
    assert ran == [tensor_cores], f"unaligned data ran {ran}"
    outs.append(out)
    for out in outs:
        torch.testing.assert_close(out, ref, rtol=1e-11, atol=1e-11 * n * ref.abs().amax().item())
    assert torch.equal(outs[0], outs[2])
