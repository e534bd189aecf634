"""lu_factor / lu_factor_ex / lu_factor_ against torch.linalg.lu_factor (CPU always, CUDA under `gpu`)."""
import pytest
import torch
from torch.library import opcheck

import torch_inplace.linalg as TL
from conftest import LINALG_DEVICES as DEVICES, LINALG_DTYPES as DTYPES, well_conditioned as random_matrices



def tol(dtype, n):
    return (2e-4 * n) if dtype in (torch.float32, torch.complex64) else 1e-11 * n


def check_factorization(A, LU, piv):
    n = A.shape[-1]
    assert LU.shape == A.shape and LU.dtype == A.dtype and piv.shape == A.shape[:-1] and piv.dtype == torch.int32
    assert ((piv >= 1) & (piv <= n)).all()
    P, L, U = torch.lu_unpack(LU, piv)
    t = tol(A.dtype, n)
    torch.testing.assert_close(P @ L @ U, A, rtol=t, atol=t * (A.abs().amax() if A.numel() else 1))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_n_matches_linalg(device, dtype):
    batch = (29,) if device == "cpu" else (1000,)
    for n in range(1, 33):
        A = random_matrices(batch, n, dtype, device, seed=n)
        LU, piv, info = TL.lu_factor_ex(A)
        check_factorization(A, LU, piv)
        assert info.shape == batch and info.dtype == torch.int32 and (info == 0).all()
        # LAPACK (CPU) is the reference: torch's CUDA backends pivot complex matrices on |z| rather than on
        # LAPACK's |re| + |im|.
        LU_ref, piv_ref = (t.to(device) for t in torch.linalg.lu_factor(A.cpu()))
        # Same pivots as LAPACK (ties and near-ties aside, which these inputs do not have in double precision).
        if dtype in (torch.float64, torch.complex128):
            assert torch.equal(piv, piv_ref), f"n={n}"
        if torch.equal(piv, piv_ref):
            torch.testing.assert_close(LU, LU_ref, rtol=tol(dtype, n), atol=tol(dtype, n))
        LU2, piv2 = TL.lu_factor(A)
        assert torch.equal(LU2, LU) and torch.equal(piv2, piv)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_inplace(device, dtype):
    for n in (1, 3, 8, 16, 19, 32, 40):
        A = random_matrices((4, 2), n, dtype, device, seed=n)
        B = A.clone()
        ptr = B.data_ptr()
        piv = TL.lu_factor_(B)
        assert B.data_ptr() == ptr
        LU, piv_ref = TL.lu_factor(A)
        assert torch.equal(piv, piv_ref)
        torch.testing.assert_close(B, LU, rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_singular_sets_info(device, dtype):
    n = 5
    A = random_matrices((3,), n, dtype, device)
    A[1] = 0
    A[2, :, 2] = 0
    LU, piv, info = TL.lu_factor_ex(A)
    _, piv_ref, info_ref = torch.linalg.lu_factor_ex(A.cpu())
    assert info.tolist() == info_ref.tolist() == [0, 1, 3]
    assert torch.equal(piv.cpu(), piv_ref)
    check_factorization(A, LU, piv)
    with pytest.raises(RuntimeError, match="lu_factor_ex.*is zero") as ours:
        TL.lu_factor_ex(A, check_errors=True)
    with pytest.raises(RuntimeError) as theirs:
        torch.linalg.lu_factor_ex(A, check_errors=True)
    assert type(ours.value) is type(theirs.value)
    TL.lu_factor(A)  # no check, no error


@pytest.mark.parametrize("device", DEVICES)
def test_nan_inf_inputs(device):
    for n in (1, 5, 16, 32):
        A = random_matrices((3,), n, torch.float64, device)
        A[0, 0, 0] = float("nan")
        A[1, n - 1, n - 1] = float("inf")
        LU, piv, info = TL.lu_factor_ex(A)
        assert LU.shape == A.shape and ((piv >= 1) & (piv <= n)).all()
        check_factorization(A[2:], LU[2:], piv[2:])


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_finite_inputs_info_matches_lapack(dtype):
    # CPU: NaN / inf entries placed at random; info as LAPACK's (torch's CPU path): a NaN pivot is not a zero pivot.
    g = torch.Generator().manual_seed(11)
    for n in (1, 2, 3, 5, 16, 32):
        for trial in range(12):
            A = random_matrices((), n, dtype, "cpu", seed=trial)
            for _ in range(int(torch.randint(1, 4, (1,), generator=g))):
                i, j = torch.randint(0, n, (2,), generator=g).tolist()
                A[i, j] = (float("nan"), float("inf"), -float("inf"))[int(torch.randint(0, 3, (1,), generator=g))]
            info = TL.lu_factor_ex(A).info
            assert torch.equal(info, torch.linalg.lu_factor_ex(A).info), (n, trial, A)
    A = torch.full((3, 3), float("nan"), dtype=dtype)
    assert int(TL.lu_factor_ex(A).info) == 0 and int(torch.linalg.lu_factor_ex(A).info) == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exact_ties_pick_the_first_row_as_lapack(dtype):
    # Small-integer matrices tie in exact arithmetic at many steps; the kernels take the first of the largest |x|
    # as LAPACK's idamax does, so the pivots equal torch's (CPU) up to n = 16 (README). Complex ties of |re| + |im|
    # can round apart in either implementation, so real dtypes only.
    A = torch.tensor([[1.0, 2.0], [-1.0, 3.0]], dtype=dtype)
    assert TL.lu_factor(A).pivots.tolist() == [1, 2] == torch.linalg.lu_factor(A).pivots.tolist()
    g = torch.Generator().manual_seed(5)
    compared = 0
    for n in range(2, 17):
        A = torch.randint(-2, 3, (100, n, n), generator=g).to(dtype)
        LU, piv, info = TL.lu_factor_ex(A)
        LU_ref, piv_ref, info_ref = torch.linalg.lu_factor_ex(A)
        ok = (info == 0) & (info_ref == 0)
        assert torch.equal(piv[ok], piv_ref[ok]), n
        torch.testing.assert_close(LU[ok], LU_ref[ok])
        compared += int(ok.sum())
    assert compared > 1000


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_pivots_near_the_largest_finite_value(device, dtype):
    """Pivots c + di with both parts above half the largest finite value: Smith's reciprocal divides by c + d (d / c),
    which overflowed, so the reciprocal was 0, every multiplier of that column 0 and info 0 (CPU and GPU alike).
    A = B * 2^e with e the largest exponent: scaling by a power of two is exact, so the LU of A is B's with U scaled
    by 2^e and A^-1 is B^-1 scaled by 2^-e (subnormal in complex64, hence the looser tolerance there)."""
    real = torch.float32 if dtype == torch.complex64 else torch.float64
    e = 127 if real == torch.float32 else 1023  # 2^e (1 + i): |re| + |im| = 2^(e + 1) > the largest finite value
    g = torch.Generator().manual_seed(11)
    for n in (1, 2, 5, 16, 32, 40):  # n = 1 (elementwise kernel), the register kernels, the medium ones (n > 32)
        u = torch.rand(3, n, generator=g, dtype=torch.float64)
        off = torch.randn(3, n, n, 2, generator=g, dtype=torch.float64) * (0.3 / n)
        B = torch.view_as_complex(off) + torch.diag_embed((1 + 1j) * (1 + 0.1 * u))  # pivots on the diagonal
        B = B.to(dtype)
        A = (B * 2.0 ** e).to(device)
        LU_B, piv_B = torch.linalg.lu_factor(B.to(torch.complex128))
        LU, piv, info = TL.lu_factor_ex(A)
        assert torch.equal(info.cpu(), torch.zeros(3, dtype=torch.int32)), (n, info)
        assert torch.equal(piv.cpu(), piv_B), n
        LU = LU.cpu().to(torch.complex128)
        rtol = 1e-5 if dtype == torch.complex64 else 1e-12
        torch.testing.assert_close(LU.tril(-1), LU_B.tril(-1), rtol=rtol, atol=rtol)
        torch.testing.assert_close(LU.triu() * 2.0 ** -e, LU_B.triu(), rtol=rtol, atol=rtol)
        X = TL.batched_inverse(A).cpu().to(torch.complex128) * 2.0 ** e
        X_ref = torch.linalg.inv(B.to(torch.complex128))
        torch.testing.assert_close(X, X_ref, rtol=1e-3 if dtype == torch.complex64 else 1e-9,
                                   atol=1e-3 if dtype == torch.complex64 else 1e-9)


@pytest.mark.parametrize("dtype", DTYPES)
def test_subnormal_pivots_give_finite_factors(dtype):
    """A column whose entries are all subnormal (below sfmin): LAPACK's getf2 divides by such a pivot instead of
    multiplying by its reciprocal (inf), so the multipliers stay finite. The CPU kernel does the same. Scaling a
    column by a power of two scales U's entry in it and nothing else, so the factors of the scaled matrix are the
    unscaled ones exactly."""
    real = torch.float32 if dtype in (torch.float32, torch.complex64) else torch.float64
    tiny = torch.finfo(real).tiny
    A1 = torch.tensor([[4.0, 1.0, 0.5], [3.0, 2.0, 1.0], [2.0, -1.0, 3.0]], dtype=real).to(dtype)
    if dtype.is_complex:
        A1 = A1 * (1 + 1j)
    LU1, piv1, _ = TL.lu_factor_ex(A1)
    for scale in (tiny / 4, tiny * 2.0 ** -20, 2.0 ** -4):  # subnormal, deep subnormal, and normal
        A = A1.clone()
        A[:, 0] *= scale
        LU, piv, info = TL.lu_factor_ex(A)
        expected = LU1.clone()
        expected[0, 0] *= scale
        assert int(info) == 0 and torch.equal(piv, piv1)
        torch.testing.assert_close(LU, expected, rtol=1e-6 if real == torch.float32 else 1e-14, atol=0)
        # The inverse's first row is 1 / scale times the unscaled one: inf where that overflows, never the NaN of
        # 0 * inf.
        X = TL.batched_inverse(A)
        assert not torch.isnan(torch.view_as_real(X) if dtype.is_complex else X).any(), X


@pytest.mark.parametrize("device", DEVICES)
def test_batch_shapes(device):
    for batch in [(), (0,), (1,), (2, 3), (3, 0, 2)]:
        for n in (0, 1, 4, 21):
            A = random_matrices(batch, n, torch.float64, device)
            LU, piv, info = TL.lu_factor_ex(A)
            assert LU.shape == A.shape and piv.shape == (*batch, n) and info.shape == batch
            if A.numel():
                LU_ref, piv_ref = torch.linalg.lu_factor(A)
                torch.testing.assert_close(LU, LU_ref)
                assert torch.equal(piv, piv_ref)
    big = 20000 if device == "cpu" else 300000
    A = random_matrices((big,), 4, torch.float32, device)
    check_factorization(A, *TL.lu_factor(A))


@pytest.mark.parametrize("device", DEVICES)
def test_non_contiguous_inputs(device):
    A = random_matrices((4,), 7, torch.complex128, device)
    for view in (A.mT, A[::2], A.conj(), A.mH):
        LU, piv = TL.lu_factor(view)
        LU_ref, piv_ref = (t.to(device) for t in torch.linalg.lu_factor(view.cpu()))
        torch.testing.assert_close(LU, LU_ref)
        assert torch.equal(piv, piv_ref)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("view", ["conj", "neg", "conj_neg"])
def test_in_place_on_conj_and_neg_views(device, view):
    # PyTorch's math-bit fallback asserts on an in-place op returning another tensor; lu_factor_ does its work itself:
    # the logical values of the view end up as torch.linalg.lu_factor's LU, the bit stays, the pivots match.
    dtype = torch.float64 if view == "neg" else torch.complex128
    A = random_matrices((6,), 7, dtype, device, seed=3)
    logical = {"conj": lambda t: t.conj(), "neg": lambda t: t._neg_view(),
               "conj_neg": lambda t: t.conj()._neg_view()}[view]
    V = logical(A.clone())
    LU_ref, piv_ref = torch.linalg.lu_factor(logical(A.clone()).resolve_conj().resolve_neg().cpu())
    piv = TL.lu_factor_(V)
    assert V.is_conj() == ("conj" in view) and V.is_neg() == ("neg" in view)
    torch.testing.assert_close(V.resolve_conj().resolve_neg().cpu(), LU_ref)
    assert torch.equal(piv.cpu(), piv_ref)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("view", ["row", "reshape", "conj"])
def test_in_place_on_views_of_tensors_that_require_grad(device, view):
    """lu_factor_ on a view of a tensor in the graph (B[i], a reshape, a conjugate view) factorizes it and carries
    torch.linalg.lu_factor's gradient back to the base, as inverse_ does; nothing was refused after the kernel ran."""
    dtype = torch.complex128 if view == "conj" else torch.float64
    n = 5
    A = random_matrices((3,), n, dtype, device, seed=7)
    take = {"row": lambda B: B[1], "reshape": lambda B: B.view(3 * n, n)[n:2 * n].view(n, n),
            "conj": lambda B: B[1].conj()}[view]
    G = random_matrices((), n, dtype, device, seed=8)

    x = A.clone().requires_grad_()
    V = take(x * 1)
    piv = TL.lu_factor_(V)
    (V * G).real.sum().backward()

    y = A.clone().requires_grad_()
    LU_ref, piv_ref = torch.linalg.lu_factor(take(y * 1).resolve_conj())
    (LU_ref * G).real.sum().backward()
    torch.testing.assert_close(V.detach().resolve_conj(), LU_ref.detach())
    assert torch.equal(piv.cpu(), piv_ref.cpu())
    torch.testing.assert_close(x.grad, y.grad)
    assert x.grad[0].abs().max() == 0 and x.grad[1].abs().max() > 0


@pytest.mark.parametrize("device", DEVICES)
def test_inference_tensor_outside_inference_mode_refused(device):
    with torch.inference_mode():
        A = random_matrices((2,), 4, torch.float64, device)
    before = A.clone()
    for fn, name in ((TL.lu_factor_, "lu_factor_"), (TL.inverse_, "inverse_")):
        with pytest.raises(RuntimeError, match=name + ": expected a tensor that may be updated in place, got an "
                           "inference tensor outside torch.inference_mode"):
            fn(A)
        assert torch.equal(A, before)
    with torch.inference_mode():  # inside it, as for PyTorch's own in-place ops
        TL.inverse_(A)
    torch.testing.assert_close(A, torch.linalg.inv(before))


@pytest.mark.parametrize("value", [None, 1, 0, "yes", "numpy"])
def test_check_errors_must_be_bool(value):
    """As torch.linalg's argument parser: a TypeError naming the type, qualified outside the builtins."""
    if value == "numpy":
        value = pytest.importorskip("numpy").bool_(True)
    name = {type(None): "NoneType", int: "int", str: "str"}.get(type(value), f"numpy.{type(value).__qualname__}")
    A = random_matrices((2,), 3, torch.float64, "cpu")
    with pytest.raises(TypeError, match=f"^lu_factor_ex\\(\\): argument 'check_errors' must be bool, not {name}$"):
        TL.lu_factor_ex(A, check_errors=value)
    with pytest.raises(TypeError, match=f"^batched_inverse_ex\\(\\): argument 'check_errors' must be bool, not {name}$"):
        TL.batched_inverse_ex(A, check_errors=value)


def test_errors_name_the_op_called():
    with pytest.raises(RuntimeError, match=r"^lu_factor: expected square"):
        TL.lu_factor(torch.randn(3, 4))
    with pytest.raises(RuntimeError, match=r"^lu_factor_ex: expected square"):
        TL.lu_factor_ex(torch.randn(3, 4))
    with pytest.raises(RuntimeError, match=r"^batched_inverse: expected a tensor of shape"):
        TL.batched_inverse(torch.randn(4))
    with pytest.raises(RuntimeError, match=r"^batched_inverse: expected dtype"):
        TL.batched_inverse(torch.ones(3, 3, dtype=torch.int64))


def test_wrappers_are_scriptable():
    def f(A: torch.Tensor) -> torch.Tensor:
        X, info = TL.batched_inverse_ex(A, check_errors=False)
        r = TL.lu_factor_ex(A)
        LU, piv = TL.lu_factor(A)
        B = A.clone()
        TL.inverse_(B)
        C = A.clone()
        TL.lu_factor_(C)
        return X + TL.batched_inverse(A) + r.LU + LU + B + C + info.sum() + piv.sum()

    A = random_matrices((3,), 5, torch.float64, "cpu", seed=1)
    scripted = torch.jit.script(f)
    torch.testing.assert_close(scripted(A), f(A), rtol=0, atol=0)
    assert "inplace::batched_inverse_ex" in str(scripted.inlined_graph)


@pytest.mark.parametrize("device", DEVICES)
def test_bad_inputs_leave_tensor_unchanged(device):
    cases = [
        (torch.ones(3, 3, dtype=torch.int32, device=device), "dtype"),
        (torch.ones(3, 3, dtype=torch.bfloat16, device=device), "dtype"),
        (torch.ones(5, device=device), "at least 2 dims"),
        (torch.ones(3, 2, device=device), "square"),
    ]
    for t, msg in cases:
        before = t.clone()
        with pytest.raises(RuntimeError, match=f"^lu_factor: .*{msg}"):
            TL.lu_factor(t)
        with pytest.raises(RuntimeError, match=f"^lu_factor_ex: .*{msg}"):
            TL.lu_factor_ex(t)
        with pytest.raises(RuntimeError, match=f"lu_factor_: .*{msg}"):
            TL.lu_factor_(t)
        assert torch.equal(t, before)
    v = random_matrices((1,), 4, torch.float64, device).expand(3, 4, 4)  # overlapping elements
    before = v.clone()
    with pytest.raises(RuntimeError, match="^lu_factor_: expected a tensor whose elements do not overlap in memory"):
        TL.lu_factor_(v)
    assert torch.equal(v, before)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_factor_inplace_takes_any_strides(device, dtype):
    """lu_factor_ on views that are not contiguous (factorized in a contiguous copy written back through the view),
    against torch.linalg.lu_factor of the same view; the rest of the storage stays as it was."""
    tol = 1e-4 if dtype in (torch.float32, torch.complex64) else 1e-10
    for n in (1, 3, 17, 40, 70):
        B = random_matrices((6,), n, dtype, device)
        views = {
            "mT": lambda t: t.mT,
            "every other matrix": lambda t: t[::2],
            "batch dims swapped": lambda t: t.view(2, 3, n, n).transpose(0, 1),
            "negative, sliced, transposed": lambda t: t._neg_view()[1::2].mT,
        }
        for what, view in views.items():
            C = B.clone()
            v = view(C)
            LU_ref, piv_ref = torch.linalg.lu_factor(v)
            mask = torch.ones_like(C)
            view(mask).fill_(0)  # through the same view (math bits included): the elements it does not reach stay 1
            mask = mask != 0
            piv = TL.lu_factor_(v)
            assert piv.dtype == torch.int32 and piv.shape == v.shape[:-1], (n, what)
            if device == "cpu" or dtype.is_floating_point:  # PyTorch's CUDA backend may pivot complex input otherwise
                assert torch.equal(piv, piv_ref), (n, what)
                torch.testing.assert_close(v, LU_ref, rtol=tol, atol=tol, msg=lambda m: f"n={n} {what}: {m}")
            P, L, U = torch.lu_unpack(v, piv)
            torch.testing.assert_close(P @ L @ U, view(B), rtol=tol, atol=tol, msg=lambda m: f"n={n} {what}: {m}")
            assert torch.equal(C[mask], B[mask]), (n, what)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    for A in (random_matrices((3,), 5, torch.float64, device), random_matrices((), 18, torch.complex64, device)):
        opcheck(torch.ops.inplace.lu_factor_ex.default, (A,), {"check_errors": False})
        opcheck(torch.ops.inplace.lu_factor.default, (A,))
        opcheck(torch.ops.inplace.lu_factor_ex.default, (A.clone().requires_grad_(),))
        opcheck(torch.ops.inplace.lu_factor_.default, (A.clone(),))
        opcheck(torch.ops.inplace.lu_factor_.default, (A.clone().requires_grad_() * 1,))


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph(device):
    backend = "aot_eager" if device == "cpu" else "inductor"

    @torch.compile(fullgraph=True, backend=backend)
    def f(a):
        LU, piv, info = torch.ops.inplace.lu_factor_ex(a)
        LU2, piv2 = torch.ops.inplace.lu_factor(a)
        return LU + LU2, piv, info

    A = random_matrices((5,), 6, torch.float64, device)
    y, piv, info = f(A)
    LU_ref, piv_ref = torch.linalg.lu_factor(A)
    torch.testing.assert_close(y, 2 * LU_ref)
    assert torch.equal(piv, piv_ref) and (info == 0).all()


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    A = random_matrices((2,), 3, torch.float64, device).requires_grad_()
    assert torch.autograd.gradcheck(lambda a: TL.lu_factor(a)[0], (A,))
    assert torch.autograd.gradgradcheck(lambda a: TL.lu_factor(a)[0], (A,))

    def inplace(a):
        b = a * 1.0
        TL.lu_factor_(b)
        return b

    assert torch.autograd.gradcheck(inplace, (A,))
    Ac = random_matrices((), 3, torch.complex128, device).requires_grad_()
    assert torch.autograd.gradcheck(lambda a: TL.lu_factor_ex(a)[0], (Ac,))
    A = random_matrices((3,), 9, torch.float64, device).requires_grad_()
    G = torch.randn_like(A)
    (g_ours,) = torch.autograd.grad(TL.lu_factor(A)[0], A, G)
    (g_ref,) = torch.autograd.grad(torch.linalg.lu_factor(A)[0], A, G)
    torch.testing.assert_close(g_ours, g_ref)


def test_tuning_op_validates_and_resets():
    """The private tuning op (benchmarks/tune_lu.py) refuses bad arguments and its overrides reset to the table."""
    op = torch.ops.inplace._small_lu_tuning
    bad = [(("qr", torch.float32, 4), "expected kind"), (("lu", torch.int32, 4), "expected dtype"),
           (("lu", torch.float32, 33), "expected 1 <= n <= 32"), (("lu", torch.float32, 4, 9), "expected warps"),
           (("inverse", torch.float32, 4, 2, 5), "expected rows"),
           (("lu", torch.float64, 24, 1, -2), "split rows .* are for kind 'inverse' only"),
           (("lu", torch.float64, 24, 1, -4), "the tensor-core kernel .* is for kind 'inverse' only")]
    for args, msg in bad:
        with pytest.raises(RuntimeError, match="_small_lu_tuning: " + msg):
            op(*args)
    try:
        _set_and_reset_overrides(op)
    finally:  # overrides are process-wide: none may outlive a failure here
        for kind, dtype, n in (("inverse", torch.float64, 7), ("lu", torch.float64, 20), ("inverse", torch.float64, 24),
                               ("lu", torch.float32, 6), ("lu", torch.float64, 12)):
            op(kind, dtype, n, 0, 0)


def _set_and_reset_overrides(op):
    assert op("inverse", torch.float64, 7, 2, 4) == 2
    assert op("inverse", torch.float64, 7) == 2          # query
    assert op("inverse", torch.float64, 7, 0, 0) == 0    # reset to the committed table
    assert op("lu", torch.float64, 20, 2, 3) == 2        # three rows per lane
    assert op("lu", torch.float64, 20, 0, 0) == 0
    assert op("inverse", torch.float64, 24, 8, -2) == 8  # split rows
    assert op("inverse", torch.float64, 24, 0, 0) == 0
    assert op("lu", torch.float32, 6, 4, -3) == 4        # a lane per matrix
    assert op("lu", torch.float32, 6, 0, 0) == 0
    assert op("lu", torch.float64, 12, 1, -5) == 1       # the shared-memory kernel of n > 32
    assert op("lu", torch.float64, 12, 0, 0) == 0
    assert op("inverse", torch.float64, 24, 6, -4) == 6  # the float64 tensor-core kernel
    assert op("inverse", torch.float64, 24, 0, 0) == 0
    with pytest.raises(RuntimeError, match="_small_lu_tuning: expected rows .*-3 \\(a lane per matrix\\)"):
        op("lu", torch.float32, 6, 1, -6)


@pytest.mark.parametrize("device", DEVICES)
def test_calls_without_grad_record_nothing_and_bump_versions(device):
    """Calls with no gradient to record go straight to the kernels: no graph node on the outputs, version counters
    still bumped by the in-place ops (a saved tensor changed in place is refused at backward)."""
    A = random_matrices((3,), 5, torch.float64, device, seed=1)
    X, info = TL.batched_inverse_ex(A)
    LU, piv, linfo = TL.lu_factor_ex(A)
    assert X.grad_fn is None and LU.grad_fn is None and not X.requires_grad
    torch.testing.assert_close(X, torch.linalg.inv(A))
    for op in (TL.inverse_, TL.lu_factor_):
        w = torch.randn(3, 5, 5, dtype=torch.float64, device=device, requires_grad=True)
        B = A.clone()
        y = B * w  # saves B for w's gradient
        v = B._version
        op(B)
        assert B._version > v
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    Ag = A.clone().requires_grad_()
    assert TL.batched_inverse(Ag).grad_fn is not None and TL.lu_factor(Ag)[0].grad_fn is not None


def test_wrapper_signatures_follow_torch_linalg():
    """pivot (True only) and check_errors by keyword, as in torch.linalg; a non-tensor is a TypeError."""
    A = random_matrices((2,), 3, torch.float64, "cpu")
    LU, piv = TL.lu_factor(A, pivot=True)
    torch.testing.assert_close(LU, torch.linalg.lu_factor(A, pivot=True)[0])
    assert torch.equal(TL.lu_factor_ex(A, pivot=True, check_errors=True).info, torch.zeros(2, dtype=torch.int32))
    for fn in (TL.lu_factor, TL.lu_factor_ex):
        with pytest.raises(RuntimeError, match=rf"^{fn.__name__}: LU without pivoting \(pivot=False\) is not"):
            fn(A, pivot=False)
        with pytest.raises(TypeError, match=rf"^{fn.__name__}\(\): argument 'pivot' must be bool"):
            fn(A, pivot=1)
    assert torch.equal(TL.lu_factor_ex(A, True).info, TL.lu_factor_ex(A, check_errors=True).info)  # positional
    for fn in (TL.lu_factor, TL.lu_factor_ex, TL.lu_factor_, TL.batched_inverse, TL.batched_inverse_ex,
               TL.inverse_):
        for bad in (None, [[1.0, 2.0], [3.0, 4.0]]):
            with pytest.raises(TypeError, match=rf"^{fn.__name__}\(\): argument 'A' must be Tensor"):
                fn(bad)


def test_scripted_wrappers_take_the_keywords():
    A = random_matrices((2,), 4, torch.float64, "cpu")

    @torch.jit.script
    def f(a: torch.Tensor):
        return TL.lu_factor_ex(a, pivot=True, check_errors=False).LU, TL.batched_inverse_ex(a, check_errors=False)[0]

    LU, X = f(A)
    torch.testing.assert_close(LU, torch.linalg.lu_factor(A).LU)
    torch.testing.assert_close(X, torch.linalg.inv(A))
