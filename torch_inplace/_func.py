"""torch.func transforms and forward-mode AD for the LU / inverse ops.

The ops' autograd is C++ (``torch::autograd::Function``), so that TorchScript and LibTorch callers differentiate
them too; PyTorch cannot run such a Function under torch.func transforms or with forward-mode AD. This module adds,
for Python callers:

- vmap batching rules (``torch.library.register_vmap``) for every LU / inverse op: the ops take any batch dims, so a
  vmapped call is one call over the physical tensor with the vmapped dim moved to the front (no per-sample loop);
- ``torch.autograd.Function`` twins of the differentiable ops (the same kernels forward, backward and forward-mode
  derivatives written with differentiable torch ops, so that they compose to any order), which the public functions
  of :mod:`torch_inplace.linalg` use while a torch.func transform or a forward-mode AD level is active
  (:func:`transforms_active`; under vmap alone the ops are called directly): ``torch.func.grad``, ``vjp``, ``jvp``,
  ``jacrev``, ``jacfwd``, ``hessian`` and ``torch.autograd.forward_ad`` then work through them.

Called directly (and from TorchScript, LibTorch, or code that torch.compile traces), ``torch.ops.inplace.*`` run
their batching rules under vmap, and under grad-type transforms or with forward-mode tangents their C++ autograd
hands the call to torch.linalg's differentiable ops (``csrc/ops/autograd/lu_autograd.cpp``: the same semantics,
torch's kernels).
"""
from __future__ import annotations

import torch
import torch.autograd.forward_ad as _fwad

_ops = torch.ops.inplace
_DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)


_VMAP = torch._C._functorch.TransformType.Vmap


def transforms_active() -> bool:
    """Whether the ops' C++ autograd cannot run here: a ``torch.autograd.forward_ad`` level is active, or a torch.func
    transform other than vmap (grad, vjp, jvp, jacrev, ...). Under vmap alone the ops run as they are (their batching
    rules below; regular autograd outside the vmap still works through the C++ Functions)."""
    if _fwad._current_level >= 0:
        return True
    if not torch._C._are_functorch_transforms_active():
        return False
    if torch.compiler.is_compiling():
        # Dynamo traces a Function's forward with the transform's wrappers (and cannot trace the stack query): the
        # ops themselves then, whose C++ autograd hands wrapped calls to torch.linalg (lu_autograd.cpp).
        return False
    return any(i.key() != _VMAP for i in torch._C._functorch.get_interpreter_stack())


def check_inplace(A: torch.Tensor, op: str, any_strides: bool = False) -> None:
    """The in-place ops' refusals (as ``csrc/ops/lu.cpp``'s ``check_input``) for the transform path, which
    computes out of place and copies back: the contract stays the same. Under vmap, where the batched tensor's
    strides depend on where the transform put the vmapped dim (not on the caller), any strides are taken."""
    if A.dim() < 2:
        raise RuntimeError(f"{op}: expected a tensor of shape (..., n, n) with at least 2 dims, got a {A.dim()}-D "
                           f"tensor of shape {list(A.shape)}")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: expected square matrices (..., n, n), got shape {list(A.shape)}")
    if A.dtype not in _DTYPES:
        raise RuntimeError(f"{op}: expected dtype float32, float64, complex64 or complex128, got {A.dtype}")
    if not any_strides and not torch._C._functorch.is_batchedtensor(A) and not A.is_contiguous():
        raise RuntimeError(f"{op}: expected a contiguous tensor (the in-place op overwrites its storage), got strides "
                           f"{list(A.stride())} for shape {list(A.shape)}; use the out-of-place op instead")


# ---------------------------------------------------------------------------------------------------------------
# vmap: one call over the physical tensor, the vmapped dim first.


def _front(x: torch.Tensor, d: int) -> torch.Tensor:
    return x if d == 0 else x.movedim(d, 0)


def _vmap_batched_inverse(info, in_dims, A):
    return _ops.batched_inverse(_front(A, in_dims[0])), 0


def _vmap_batched_inverse_ex(info, in_dims, A, *, check_errors=False):
    return tuple(_ops.batched_inverse_ex(_front(A, in_dims[0]), check_errors=check_errors)), (0, 0)


def _vmap_lu_factor(info, in_dims, A):
    return tuple(_ops.lu_factor(_front(A, in_dims[0]))), (0, 0)


def _vmap_lu_factor_ex(info, in_dims, A, *, check_errors=False):
    return tuple(_ops.lu_factor_ex(_front(A, in_dims[0]), check_errors=check_errors)), (0, 0, 0)


def _vmap_inverse_(info, in_dims, A):
    d = in_dims[0]
    Af = _front(A, d)
    if Af.is_contiguous():
        _ops.inverse_(Af)  # in place: Af is A, or a view of it with the same storage order
    else:
        check_inplace(Af, "inverse_", any_strides=True)
        Af.copy_(_ops.batched_inverse(Af))
    return A, d


def _vmap_lu_factor_(info, in_dims, A):
    d = in_dims[0]
    Af = _front(A, d)
    if Af.is_contiguous():
        return _ops.lu_factor_(Af), 0
    check_inplace(Af, "lu_factor_", any_strides=True)
    LU, pivots = _ops.lu_factor(Af)
    Af.copy_(LU)
    return pivots, 0


def _vmap_inverse_backward(info, in_dims, X, G):
    # The C++ backward's fused op, under vmap when autograd's engine runs batched gradients (is_grads_batched).
    X, G = (x.expand(info.batch_size, *x.shape) if d is None else _front(x, d) for x, d in zip((X, G), in_dims))
    return _ops._inverse_backward(X, G), 0


for _name, _rule in (("_inverse_backward", _vmap_inverse_backward), ("batched_inverse", _vmap_batched_inverse),
                     ("batched_inverse_ex", _vmap_batched_inverse_ex),
                     ("lu_factor", _vmap_lu_factor), ("lu_factor_ex", _vmap_lu_factor_ex),
                     ("inverse_", _vmap_inverse_), ("lu_factor_", _vmap_lu_factor_)):
    torch.library.register_vmap(f"inplace::{_name}", _rule)


# ---------------------------------------------------------------------------------------------------------------
# Derivatives with differentiable torch ops (the C++ Functions' formulas, plus forward mode).


def inverse_vjp(X: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """grad_A = -X^H G X^H."""
    Xh = X.mH
    return -(Xh @ (G @ Xh))


def inverse_jvp(X: torch.Tensor, dA: torch.Tensor) -> torch.Tensor:
    """dX = -X dA X."""
    return -(X @ (dA @ X))


def lu_vjp(LU: torch.Tensor, pivots: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """torch.linalg.lu_factor's backward (square): P L^-H (tril(L^H G, -1) + triu(G U^H)) U^-H."""
    P, L, U = torch.lu_unpack(LU, pivots)
    gA = (L.mH @ G).tril(-1) + (G @ U.mH).triu()
    gA = torch.linalg.solve_triangular(U.mH, gA, upper=False, left=False)
    gA = torch.linalg.solve_triangular(L.mH, gA, upper=True, left=True, unitriangular=True)
    return P @ gA


def lu_jvp(LU: torch.Tensor, pivots: torch.Tensor, dA: torch.Tensor) -> torch.Tensor:
    """The packed factors' tangent for A = P L U: with K = L^-1 P^T dA U^-1, dL = L tril(K, -1), dU = triu(K) U,
    and dLU = dL + dU (dL is strictly lower)."""
    P, L, U = torch.lu_unpack(LU, pivots)
    K = torch.linalg.solve_triangular(L, P.mT @ dA, upper=False, left=True, unitriangular=True)
    K = torch.linalg.solve_triangular(U, K, upper=True, left=False)
    return L @ K.tril(-1) + K.triu() @ U


class BatchedInverse(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(A):
        return _ops.batched_inverse(A)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx, G):
        (X,) = ctx.saved_tensors
        return inverse_vjp(X, G)

    @staticmethod
    def jvp(ctx, dA):
        (X,) = ctx.saved_tensors
        return inverse_jvp(X, dA)


class BatchedInverseEx(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(A, check_errors):
        return tuple(_ops.batched_inverse_ex(A, check_errors=check_errors))

    @staticmethod
    def setup_context(ctx, inputs, output):
        X, info = output
        ctx.mark_non_differentiable(info)
        ctx.save_for_backward(X)
        ctx.save_for_forward(X)

    @staticmethod
    def backward(ctx, G, _g_info):
        (X,) = ctx.saved_tensors
        return (None if G is None else inverse_vjp(X, G)), None

    @staticmethod
    def jvp(ctx, dA, _d_check_errors):
        (X,) = ctx.saved_tensors
        return inverse_jvp(X, dA), None


class LUFactorEx(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(A, check_errors):
        return tuple(_ops.lu_factor_ex(A, check_errors=check_errors))

    @staticmethod
    def setup_context(ctx, inputs, output):
        LU, pivots, info = output
        ctx.mark_non_differentiable(pivots, info)
        ctx.save_for_backward(LU, pivots)
        ctx.save_for_forward(LU, pivots)

    @staticmethod
    def backward(ctx, G, _g_pivots, _g_info):
        LU, pivots = ctx.saved_tensors
        return (None if G is None else lu_vjp(LU, pivots, G)), None

    @staticmethod
    def jvp(ctx, dA, _d_check_errors):
        LU, pivots = ctx.saved_tensors
        return lu_jvp(LU, pivots, dA), None, None


def batched_inverse(A: torch.Tensor) -> torch.Tensor:
    return BatchedInverse.apply(A)


def batched_inverse_ex(A: torch.Tensor, check_errors: bool) -> tuple[torch.Tensor, torch.Tensor]:
    return BatchedInverseEx.apply(A, check_errors)


def lu_factor_ex(A: torch.Tensor, check_errors: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return LUFactorEx.apply(A, check_errors)


def inverse_(A: torch.Tensor) -> torch.Tensor:
    """inverse_ under a transform: the inverse out of place, then copied into A (which the transform tracks as an
    in-place op on A)."""
    check_inplace(A, "inverse_")
    return A.copy_(BatchedInverse.apply(A))


def lu_factor_(A: torch.Tensor) -> torch.Tensor:
    check_inplace(A, "lu_factor_")
    LU, pivots, _ = LUFactorEx.apply(A, False)
    A.copy_(LU)
    return pivots
