"""torch.func transforms (vmap, grad, vjp, jvp, jacrev, jacfwd, hessian) and forward-mode AD over the LU / inverse
ops (torch_inplace/_func.py), against the same transforms over torch.linalg; the transposition ops refuse them."""
import warnings

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch.func import grad, hessian, jacfwd, jacrev, jvp, vjp, vmap

import torch_inplace
import torch_inplace.linalg as TL
from conftest import LINALG_DEVICES as DEVICES, same_bits, well_conditioned

ops = torch.ops.inplace


def _lu_lu(A):
    return TL.lu_factor(A).LU


def _lu_ex_lu(A):
    return TL.lu_factor_ex(A).LU


def _inv_ex_x(A):
    return TL.batched_inverse_ex(A).inverse


def _inverse_inplace(A):
    B = A * 1  # a non-leaf copy: what the in-place op overwrites
    TL.inverse_(B)
    return B


def _lu_inplace(A):
    B = A * 1
    TL.lu_factor_(B)
    return B


# (name, ours, torch.linalg's)
DIFFERENTIABLE = [
    ("batched_inverse", TL.batched_inverse, torch.linalg.inv),
    ("batched_inverse_ex", _inv_ex_x, torch.linalg.inv),
    ("inverse_", _inverse_inplace, torch.linalg.inv),
    ("lu_factor", _lu_lu, lambda A: torch.linalg.lu_factor(A).LU),
    ("lu_factor_ex", _lu_ex_lu, lambda A: torch.linalg.lu_factor(A).LU),
    ("lu_factor_", _lu_inplace, lambda A: torch.linalg.lu_factor(A).LU),
]
IDS = [d[0] for d in DIFFERENTIABLE]


# ---- vmap --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.complex128])
@pytest.mark.parametrize("n", [1, 4, 17, 33])
def test_vmap_is_one_batched_call(device, dtype, n):
    # Through the public functions and the raw ops alike; the vmapped dim anywhere (in_dims), nested vmaps.
    A = well_conditioned((6,), n, dtype, device, seed=n)
    A[2] = 0  # singular: info set, the same under vmap
    # The unbatched results the vmapped ones must equal are right: against torch.linalg (info, the inverse of the
    # nonsingular matrices, and P L U = A), so that the comparisons below are not only ours against ours.
    X, info = TL.batched_inverse_ex(A)
    X_ref, info_ref = torch.linalg.inv_ex(A)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else {}
    assert torch.equal(info, info_ref)
    keep = info_ref == 0
    torch.testing.assert_close(X[keep], X_ref[keep], **tol)
    LU, piv, lu_info = TL.lu_factor_ex(A)
    assert torch.equal(lu_info, torch.linalg.lu_factor_ex(A).info)
    P, L, U = torch.lu_unpack(LU, piv)
    torch.testing.assert_close((P @ L @ U)[keep], A[keep], **tol)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*performance drop.*")
        for f, g in ((TL.batched_inverse, ops.batched_inverse), (TL.lu_factor, ops.lu_factor),
                     (TL.lu_factor_ex, ops.lu_factor_ex), (TL.batched_inverse_ex, ops.batched_inverse_ex)):
            want = f(A)
            for fn in (f, g):
                got = vmap(fn)(A)
                got2 = vmap(fn, in_dims=2)(A.permute(1, 2, 0).contiguous())
                got3 = vmap(vmap(fn))(A.view(2, 3, n, n))
                for w, a, b, c in zip(*(x if isinstance(x, tuple) else (x,) for x in (want, got, got2, got3))):
                    assert same_bits(a, w) and same_bits(b, w), fn
                    assert same_bits(c.reshape(w.shape), w), fn


VMAP_OPS = [
    ("batched_inverse", TL.batched_inverse, ops.batched_inverse),
    ("batched_inverse_ex", TL.batched_inverse_ex, ops.batched_inverse_ex),
    ("lu_factor", TL.lu_factor, ops.lu_factor),
    ("lu_factor_ex", TL.lu_factor_ex, ops.lu_factor_ex),
    ("inverse_", TL.inverse_, ops.inverse_),
    ("lu_factor_", TL.lu_factor_, ops.lu_factor_),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,public,raw", VMAP_OPS, ids=[v[0] for v in VMAP_OPS])
def test_vmap_checks_the_samples(device, name, public, raw):
    # The batching rules validate the per-sample (logical) tensor: a batch of 4 vectors of length 4 is refused, not
    # taken for one 4 x 4 matrix, and the errors name the shape a sample has. Nothing is written.
    vecs = torch.randn(4, 4, dtype=torch.float64, device=device)
    rect = torch.randn(4, 3, 5, dtype=torch.float64, device=device)
    before = (vecs.clone(), rect.clone())
    for fn in (public, raw):
        with pytest.raises(RuntimeError, match=rf"{name}: expected a tensor of shape \(\.\.\., n, n\) with at least 2 "
                                               r"dims, got a 1-D tensor of shape \[4\]"):
            vmap(fn)(vecs)
        with pytest.raises(RuntimeError, match=rf"{name}: expected square matrices \(\.\.\., n, n\), got shape "
                                               r"\[3, 5\]"):
            vmap(fn)(rect)
    assert torch.equal(vecs, before[0]) and torch.equal(rect, before[1])


def test_vmap_escaped_tensor_is_refused():
    # A batched tensor kept past its vmap has no batch to belong to: refused with the op's name, as torch's ops do.
    saved = []
    vmap(lambda a: saved.append(a) or a)(torch.eye(3).expand(2, 3, 3))
    for name, public, raw in VMAP_OPS:
        for fn in (public, raw):
            with pytest.raises(RuntimeError, match=rf"{name}: expected to run inside torch.func.vmap, got a batched "
                                                   "tensor that escaped its vmap"):
                fn(saved[0])


@pytest.mark.parametrize("device", DEVICES)
def test_vmap_with_unbatched_operands(device):
    # Inside vmap, a call on a tensor the transform does not batch runs as a plain call.
    C = well_conditioned((2,), 3, torch.float64, device, seed=3)
    xs = torch.randn(5, 2, 3, 3, dtype=torch.float64, device=device)
    got = vmap(lambda x: TL.batched_inverse(C) + x)(xs)
    torch.testing.assert_close(got, TL.batched_inverse(C) + xs)
    got = vmap(lambda x: ops.lu_factor_ex(C)[0] * x)(xs)
    torch.testing.assert_close(got, TL.lu_factor(C).LU * xs)
    # Nested: the inner vmap calls the op on a tensor only the outer vmap batches (the outer level's rule runs it).
    ys = xs[:, 0]
    got = vmap(lambda c: vmap(lambda y: TL.batched_inverse(c) + y)(ys))(C)
    torch.testing.assert_close(got, TL.batched_inverse(C)[:, None] + ys[None])
    got = vmap(lambda c: vmap(lambda y: ops.lu_factor(c)[0] * y)(ys))(C)
    torch.testing.assert_close(got, TL.lu_factor(C).LU[:, None] * ys[None])


@pytest.mark.parametrize("device", DEVICES)
def test_vmap_check_errors_raises(device):
    A = well_conditioned((4,), 3, torch.float64, device)
    A[1] = 0
    with pytest.raises(torch.linalg.LinAlgError, match=r"^inplace\.batched_inverse_ex: .*singular"):
        vmap(lambda a: TL.batched_inverse_ex(a, check_errors=True))(A)
    with pytest.raises(RuntimeError, match=r"^inplace\.lu_factor_ex: .*is zero"):  # as torch.linalg.lu_factor_ex's
        vmap(lambda a: TL.lu_factor_ex(a, check_errors=True))(A)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("raw", [False, True], ids=["public", "op"])
def test_vmap_inplace_writes_the_input(device, raw):
    # vmap over an in-place op mutates the batched input itself, whether the vmapped dim is the physical first one
    # (one in-place call) or not (computed out of place and copied back).
    n = 5
    inv_ = ops.inverse_ if raw else TL.inverse_
    lu_ = ops.lu_factor_ if raw else TL.lu_factor_
    for in_dim in (0, 1):
        A = well_conditioned((4,), n, torch.float64, device, seed=in_dim)
        phys = A.clone() if in_dim == 0 else A.transpose(0, 1).contiguous()  # (n, 4, n) for in_dim 1
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*performance drop.*")
            vmap(inv_, in_dims=in_dim)(phys)
        assert same_bits(phys.movedim(in_dim, 0).contiguous(), TL.batched_inverse(A))
        phys = A.clone() if in_dim == 0 else A.transpose(0, 1).contiguous()
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*performance drop.*")
            pivots = vmap(lu_, in_dims=in_dim)(phys)
        LU, want_piv = TL.lu_factor(A)
        assert same_bits(phys.movedim(in_dim, 0).contiguous(), LU) and torch.equal(pivots, want_piv)


# ---- reverse and forward mode through torch.func -------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,ours,theirs", DIFFERENTIABLE, ids=IDS)
def test_grad_vjp_jacrev_jacfwd_hessian(device, name, ours, theirs):
    A = well_conditioned((), 4, torch.float64, device, seed=1)
    W = torch.randn(4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).to(device)

    def loss(f):
        return lambda a: (f(a) * W).sum() + (f(a) ** 2).sum()

    torch.testing.assert_close(grad(loss(ours))(A), grad(loss(theirs))(A))
    (_, pull) = vjp(ours, A)
    (_, pull_ref) = vjp(theirs, A)
    torch.testing.assert_close(pull(W)[0], pull_ref(W)[0])
    torch.testing.assert_close(jacrev(ours)(A), jacrev(theirs)(A))
    torch.testing.assert_close(jacfwd(ours)(A), jacrev(theirs)(A))
    torch.testing.assert_close(hessian(loss(ours))(A), hessian(loss(theirs))(A))
    y, t = jvp(ours, (A,), (W,))
    y_ref, t_ref = jvp(theirs, (A,), (W,))
    torch.testing.assert_close(y, y_ref)
    torch.testing.assert_close(t, t_ref)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("name,ours,theirs", DIFFERENTIABLE, ids=IDS)
def test_forward_ad(device, dtype, name, ours, theirs):
    # torch.linalg on the CPU (LAPACK's pivots, which ours follow; on GPUs torch may pivot complex LU differently).
    A = well_conditioned((3,), 5, dtype, "cpu", seed=3)
    T = well_conditioned((3,), 5, dtype, "cpu", seed=4)
    with fwAD.dual_level():
        got = fwAD.unpack_dual(ours(fwAD.make_dual(A.to(device), T.to(device))))
        want = fwAD.unpack_dual(theirs(fwAD.make_dual(A, T)))
    torch.testing.assert_close(got.primal.cpu(), want.primal)
    torch.testing.assert_close(got.tangent.cpu(), want.tangent)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("f", [TL.batched_inverse, _inv_ex_x, _lu_lu, _lu_ex_lu], ids=["inv", "inv_ex", "lu", "lu_ex"])
def test_gradcheck_forward_and_batched(device, dtype, f):
    # Numerical checks of the forward-mode formulas (the transform path) and of vmapped backward (batched grads).
    A = well_conditioned((2,), 3, dtype, device, seed=5).requires_grad_()
    assert torch.autograd.gradcheck(f, (A,), check_forward_ad=True, check_batched_grad=True,
                                    check_batched_forward_grad=True)
    assert torch.autograd.gradgradcheck(f, (A,), check_fwd_over_rev=True, check_rev_over_rev=True)


@pytest.mark.parametrize("device", DEVICES)
def test_per_sample_gradients(device):
    # The usual functorch recipe: vmap over grad, one gradient per sample, as a loop of single-sample grads.
    A = well_conditioned((6,), 4, torch.float64, device, seed=6)

    def loss(a):
        return TL.batched_inverse(a).abs().sum() + TL.lu_factor(a).LU.sin().sum()

    per_sample = vmap(grad(loss))(A)
    loop = torch.stack([grad(loss)(a) for a in A])
    torch.testing.assert_close(per_sample, loop)
    torch.testing.assert_close(grad(lambda a: vmap(loss)(a).sum())(A), loop)


# ---- refusals ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_inplace_refusals_under_transforms(device):
    A = well_conditioned((2,), 4, torch.float64, device)
    for f, name in ((TL.inverse_, "inverse_"), (TL.lu_factor_, "lu_factor_")):
        with pytest.raises(RuntimeError, match=rf"{name}: expected a tensor whose elements do not overlap"):
            grad(lambda a: f((a * 1)[:1].expand(2, 4, 4)).sum())(A)
        with pytest.raises(RuntimeError, match=rf"{name}: expected square matrices"):
            grad(lambda a: f(a[..., :3] * 1).sum())(A)
        with pytest.raises(RuntimeError, match=rf"{name}: expected dtype float32, float64"):
            vmap(f)(torch.zeros(2, 3, 3, dtype=torch.int32, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_ops_on_strided_views_under_transforms(device):
    # Views that are not contiguous (transposed, every other matrix) under grad, and a vmapped dim that is not
    # outermost in memory under vmap: the same values and gradients as torch.linalg on the same views.
    A = well_conditioned((4,), 5, torch.float64, device)
    for view in (lambda t: t.mT, lambda t: t[::2], lambda t: t[1::2].mT):
        for op, replaced in ((TL.inverse_, _with_inverse), (TL.lu_factor_, _with_lu)):
            def ours(a):
                b = a * 1
                op(view(b))
                return (b * b).sum()

            torch.testing.assert_close(grad(ours)(A), grad(lambda a: replaced(a * 1, view).pow(2).sum())(A))
    Y = A.permute(1, 0, 2).contiguous().permute(1, 0, 2)  # the batch dim is not outermost in memory
    vmap(TL.inverse_)(Y)
    torch.testing.assert_close(Y, torch.linalg.inv(A))
    Y = A.permute(1, 0, 2).contiguous().permute(1, 0, 2)
    pivots = vmap(TL.lu_factor_)(Y)
    LU, piv = torch.linalg.lu_factor(A)
    torch.testing.assert_close(Y, LU)
    assert torch.equal(pivots, piv)


@pytest.mark.parametrize("device", DEVICES)
def test_functionalize(device):
    # torch.func.functionalize has no rule for autograd.Function and cannot take a custom op that mutates its input:
    # the public functions run the ops there (in-place ones out of place, copied back), alone and with grad.
    from torch.func import functionalize

    A = well_conditioned((4,), 5, torch.float64, device)
    torch.testing.assert_close(functionalize(TL.batched_inverse)(A), torch.linalg.inv(A))
    torch.testing.assert_close(functionalize(lambda a: TL.batched_inverse_ex(a)[0])(A), torch.linalg.inv(A))
    LU, piv = functionalize(TL.lu_factor)(A)
    LU_ref, piv_ref = torch.linalg.lu_factor(A)
    torch.testing.assert_close(LU, LU_ref)
    assert torch.equal(piv, piv_ref)
    LU, piv, info = functionalize(TL.lu_factor_ex)(A)
    torch.testing.assert_close(LU, LU_ref)
    for view in (lambda t: t.mT, lambda t: t[::2]):
        def inv_(a):
            b = a.clone()
            TL.inverse_(view(b))
            return b

        def lu_(a):
            b = a.clone()
            return b, TL.lu_factor_(view(b))

        torch.testing.assert_close(functionalize(inv_)(A), _with_inverse(A, view))
        b, p = functionalize(lu_)(A)
        torch.testing.assert_close(b, _with_lu(A, view))
        assert torch.equal(p, torch.linalg.lu_factor(view(A))[1])
    # (grad over functionalized in-place code fails for PyTorch's own copy_ too: "derivative for aten::copy")
    want = grad(lambda a: torch.linalg.inv(a).abs().sum())(A)
    torch.testing.assert_close(functionalize(grad(lambda a: TL.batched_inverse(a).abs().sum()))(A), want)
    torch.testing.assert_close(grad(functionalize(lambda a: TL.batched_inverse(a).abs().sum()))(A), want)


@pytest.mark.parametrize("name", ["inverse_", "lu_factor_"])
def test_grad_refuses_inplace_on_the_input_naming_the_op(name):
    """Under grad the differentiated input is a leaf that requires grad at that level: the in-place ops refuse it as
    PyTorch refuses its own in-place ops there, under the op's name (the copy back raised PyTorch's message alone)."""
    A = well_conditioned((2,), 3, torch.float64, "cpu")
    before = A.clone()

    def f(a):
        getattr(torch_inplace, name)(a)
        return a.sum()

    with pytest.raises(RuntimeError, match=f"^{name}: a leaf Variable that requires grad is being used in an "
                                           "in-place operation"):
        grad(f)(A)
    assert torch.equal(A, before)


@pytest.mark.parametrize("name", ["transpose_", "aos_to_soa_", "soa_to_aos_"])
def test_functionalize_refuses_the_transpositions(name):
    """Under torch.func.functionalize PyTorch refuses a custom op that returns an alias of its input with an internal
    message ("Found a custom (non-ATen) operator whose output has alias annotations"); the Python functions say
    instead why and what to use, as they do for the other transforms. The input is unchanged."""
    from torch.func import functionalize

    x = torch.randn(6, 4)
    before = x.clone()

    def f(t):
        getattr(torch_inplace, name)(t)
        return t

    with pytest.raises(RuntimeError, match=f"{name}: expected a plain tensor, got a tensor of "
                                           "torch.func.functionalize.*x.mT.contiguous"):
        functionalize(f)(x)
    assert x.shape == (6, 4) and torch.equal(x, before)


def _with_inverse(b, view):
    """b with view(b) replaced by its inverse, out of place (torch.linalg)."""
    out = b.clone()
    view(out).copy_(torch.linalg.inv(view(b)))
    return out


def _with_lu(b, view):
    out = b.clone()
    view(out).copy_(torch.linalg.lu_factor(view(b))[0])
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["transpose_", "aos_to_soa_", "soa_to_aos_"])
def test_transposition_refuses_transforms(device, op):
    # The op changes the tensor's shape in place, which the transforms' wrappers (cached sizes, no storage) cannot
    # follow: refused before a byte moves, naming torch.func, both through the public function and the raw op.
    f = getattr(torch_inplace, op)
    x = torch.randn(3, 4, 5, device=device)
    before = x.clone()
    for fn in (f, getattr(ops, op)):
        with pytest.raises(RuntimeError, match=rf"{op}: expected a plain tensor, got a torch.func"):
            vmap(fn)(x)
        with pytest.raises(RuntimeError, match=rf"{op}: expected a plain tensor, got a torch.func"):
            grad(lambda a: fn(a * 1).sum())(x[0])
        with pytest.raises(RuntimeError, match=rf"{op}: expected a plain tensor, got a torch.func"):
            jvp(lambda a: fn(a * 1), (x[0],), (x[1],))
    assert torch.equal(x, before)


def test_plain_calls_take_the_cpp_path():
    # Outside transforms the public functions call the ops directly (C++ autograd: TorchScript / LibTorch's path).
    from torch_inplace import _func

    assert not _func.transforms_active()
    A = well_conditioned((2,), 3, torch.float64, "cpu").requires_grad_()
    assert "CppFunction" in type(TL.batched_inverse(A).grad_fn).__name__
    with fwAD.dual_level():
        assert _func.transforms_active()
    seen = []
    vmap(lambda a: seen.append(_func.transforms_active()) or a)(A.detach())  # vmap alone: the ops directly
    grad(lambda a: seen.append(_func.transforms_active()) or a.sum())(A.detach())
    vmap(grad(lambda a: seen.append(_func.transforms_active()) or a.sum()))(A.detach())
    assert seen == [False, True, True]


# ---- the raw ops and torch.compile: torch.linalg stands in under grad-type transforms and forward AD -----------------

RAW = [
    ("batched_inverse", lambda A: ops.batched_inverse(A), torch.linalg.inv),
    ("batched_inverse_ex", lambda A: ops.batched_inverse_ex(A)[0], torch.linalg.inv),
    ("lu_factor", lambda A: ops.lu_factor(A)[0], lambda A: torch.linalg.lu_factor(A).LU),
    ("lu_factor_ex", lambda A: ops.lu_factor_ex(A)[0], lambda A: torch.linalg.lu_factor(A).LU),
    ("inverse_", lambda A: ops.inverse_(A * 1), torch.linalg.inv),
    ("lu_factor_", lambda A: (lambda B: (ops.lu_factor_(B), B)[1])(A * 1), lambda A: torch.linalg.lu_factor(A).LU),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,ours,theirs", RAW, ids=[r[0] for r in RAW])
def test_raw_ops_under_grad_transforms_and_forward_ad(device, name, ours, theirs):
    # Under grad-type transforms and forward AD the raw ops hand the call to torch.linalg by design
    # (csrc/ops/autograd/lu_autograd.cpp), so this checks that routing and its results, not the kernels: those are
    # checked against LAPACK in test_lu.py / test_inverse.py.
    A = well_conditioned((2,), 4, torch.float64, device, seed=7)
    T = well_conditioned((2,), 4, torch.float64, device, seed=8)
    torch.testing.assert_close(grad(lambda a: ours(a).sin().sum())(A), grad(lambda a: theirs(a).sin().sum())(A))
    torch.testing.assert_close(jvp(ours, (A,), (T,))[1], jvp(theirs, (A,), (T,))[1])
    torch.testing.assert_close(jacrev(ours)(A[0]), jacrev(theirs)(A[0]))
    with fwAD.dual_level():
        primal, got = fwAD.unpack_dual(ours(fwAD.make_dual(A, T)))
        want = fwAD.unpack_dual(theirs(fwAD.make_dual(A, T))).tangent
    torch.testing.assert_close(got, want)
    # Row-major, as the kernels' results and the Meta kernels' (torch.linalg's LU and inverse are column-major).
    assert primal.is_contiguous() and got.is_contiguous()
    assert vmap(ours)(A.unsqueeze(1)).is_contiguous() and grad(lambda a: ours(a).sum())(A).shape == A.shape


@pytest.mark.parametrize("transform", ["vmap", "grad", "jvp", "vmap_grad"])
def test_compiled_transforms(transform):
    # torch.compile(fullgraph=True) over transformed code calling the public functions (the grad-type transforms
    # route to torch.linalg, as in test_raw_ops_under_grad_transforms_and_forward_ad; vmap runs the kernels).
    A = well_conditioned((3,), 4, torch.float64, "cpu", seed=9)
    T = well_conditioned((3,), 4, torch.float64, "cpu", seed=10)

    def program(inv, lu):
        def loss(a):
            return (inv(a) * T[0]).sum() + lu(a).sum()

        return {
            "vmap": lambda a: vmap(inv)(a * 2) + vmap(lu)(a),
            "grad": lambda a: grad(loss)(a[0]),
            "jvp": lambda a: jvp(inv, (a,), (T,))[1] + jvp(lu, (a,), (T,))[1],
            "vmap_grad": lambda a: vmap(grad(loss))(a),
        }[transform]

    torch._dynamo.reset()
    got = torch.compile(program(TL.batched_inverse, _lu_lu), fullgraph=True, backend="aot_eager")(A)
    torch.testing.assert_close(got, program(torch.linalg.inv, lambda a: torch.linalg.lu_factor(a).LU)(A))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fn", [ops.batched_inverse, TL.batched_inverse, _inverse_inplace],
                         ids=["raw", "public", "inverse_"])
def test_double_backward_with_a_constant_cotangent(device, fn):
    # create_graph=True with a cotangent that does not require grad (a Hessian-vector product): the backward must
    # be the differentiable matmul form whenever grad mode is on and X requires grad, not only when G does too (the
    # fused backward op has no derivative).
    A = well_conditioned((3,), 5, torch.float64, device, seed=3).requires_grad_()
    G = torch.randn(3, 5, 5, dtype=torch.float64, device=device)
    V = torch.randn(3, 5, 5, dtype=torch.float64, device=device)

    def hvp(f):
        (g,) = torch.autograd.grad(f(A), A, G, create_graph=True)
        assert g.requires_grad
        return torch.autograd.grad(g, A, V)[0]

    with warnings.catch_warnings():
        # Backpropagating through the fused op is what this guards against: PyTorch's fallback only warns (and on
        # the CPU the values can even come out right), so the warning fails the test.
        warnings.filterwarnings("error", message=".*autograd kernel was not registered.*")
        got = hvp(fn)
    torch.testing.assert_close(got, hvp(torch.linalg.inv))
