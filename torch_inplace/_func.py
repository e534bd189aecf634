"""torch.func transforms and forward-mode AD for the LU / inverse ops.

The ops' autograd is C++ (``torch::autograd::Function``), so that TorchScript and LibTorch callers differentiate
them too; PyTorch cannot run such a Function under torch.func transforms or with forward-mode AD. This module adds,
for Python callers:

- ``torch.autograd.Function`` twins of the differentiable ops (the same kernels forward, backward and forward-mode
  derivatives written with differentiable torch ops, so that they compose to any order), which the public functions
  of :mod:`torch_inplace.linalg` use while a torch.func transform or a forward-mode AD level is active
  (:func:`transforms_active`): ``torch.func.grad``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian`` and
  ``torch.autograd.forward_ad`` then work through them;
- vmap batching rules for every LU / inverse op (kernels on the FuncTorchBatched key): the ops take any batch dims,
  so a vmapped call is one call over the physical tensor with the vmapped dim moved to the front (no per-sample
  loop). Under vmap alone the ops are called directly and run these rules.

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
# torch.func.functionalize has no rule for autograd.Function and cannot take a custom op that mutates its input
# (transforms_active, functionalizing).
_FUNCTIONALIZE = torch._C._functorch.TransformType.Functionalize


def transforms_active() -> bool:
    """Whether the ops' C++ autograd cannot run here: a ``torch.autograd.forward_ad`` level is active, or a torch.func
    transform other than vmap (grad, vjp, jvp, jacrev, ...) without functionalize. Under vmap alone the ops run as
    they are (their batching rules below; regular autograd outside the vmap still works through the C++ Functions),
    and so they do under functionalize."""
    if _fwad._current_level >= 0:
        return True
    if not torch._C._are_functorch_transforms_active():
        return False
    if torch.compiler.is_compiling():
        # Dynamo traces a Function's forward with the transform's wrappers (and cannot trace the stack query): the
        # ops themselves then, whose C++ autograd hands wrapped calls to torch.linalg (lu_autograd.cpp).
        return False
    keys = [i.key() for i in torch._C._functorch.get_interpreter_stack()]
    # Under functionalize (which has no rule for autograd.Function) the ops themselves, also with grad-type
    # transforms in the stack: their C++ autograd hands such calls to torch.linalg (lu_autograd.cpp).
    return _FUNCTIONALIZE not in keys and any(k != _VMAP for k in keys)


def functionalizing() -> bool:
    """Whether torch.func.functionalize is active (outside torch.compile). PyTorch's C++ functionalization cannot
    take a custom op that mutates its input, so the in-place functions compute out of place and copy back there
    (what functionalization turns the op into anyway)."""
    if not torch._C._are_functorch_transforms_active() or torch.compiler.is_compiling():
        return False
    return any(i.key() == _FUNCTIONALIZE for i in torch._C._functorch.get_interpreter_stack())


def check_inplace(A: torch.Tensor, op: str, autocast: bool = False) -> None:
    """The in-place ops' refusals (as ``csrc/ops/lu.cpp``'s ``check_input``) for the transform path, which
    computes out of place and copies back: the contract stays the same (any strides, none overlapping; a batched
    tensor's overlap is the kernels' check, on the physical tensor).
    ``autocast``: an out-of-place op inside ``torch.autocast`` for A's device, whose Autocast kernel
    (``csrc/ops/autocast/lu_autocast.cpp``) computes a float16 / bfloat16 A in float32."""
    if A.dim() < 2:
        raise RuntimeError(f"{op}: expected a tensor of shape (..., n, n) with at least 2 dims, got a {A.dim()}-D "
                           f"tensor of shape {list(A.shape)}")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: expected square matrices (..., n, n), got shape {list(A.shape)}")
    if A.dtype not in _DTYPES and not (autocast and A.is_floating_point()):
        raise RuntimeError(f"{op}: expected dtype float32, float64, complex64 or complex128, got {A.dtype}")
    # (not traceable by Dynamo: inside compiled code the copy_ back refuses overlapping elements itself)
    if (not torch.compiler.is_compiling() and not torch._C._functorch.is_batchedtensor(A)
            and torch._debug_has_internal_overlap(A) == 1):
        raise RuntimeError(f"{op}: expected a tensor whose elements do not overlap in memory (the in-place op writes "
                           f"every element), got strides {list(A.stride())} for shape {list(A.shape)} (an expanded "
                           "tensor?); call .clone() first or use the out-of-place op")


# ---------------------------------------------------------------------------------------------------------------
# vmap: one call over the physical tensor, the vmapped dim first.
#
# Kernels on the FuncTorchBatched dispatch key, written as PyTorch's generated C++ plumbing is: exclude that key,
# unwrap the arguments at the current vmap level, call the op, wrap its results at that level. (C++ rules would need
# ATen/functorch/DynamicLayer.h, which includes nlohmann/json.hpp that PyTorch's wheels do not ship, pytorch/pytorch
# #181565; torch.library.register_vmap's generic wrapper costs 50-90 us a call more than these.) Each rule first
# validates the per-sample (logical) tensor, so that errors name the shape a sample has and a batch of vectors is
# refused, never taken for one matrix.

_fc = torch._C._functorch
_NO_BATCHED = torch._C.DispatchKeySet(torch._C.DispatchKey.FuncTorchBatched)
_ExcludeGuard = torch._C._ExcludeDispatchKeyGuard


def _current_level(op: str) -> int:
    level = _fc.maybe_current_level()
    if level is None:
        raise RuntimeError(f"{op}: expected to run inside torch.func.vmap, got a batched tensor that escaped its vmap "
                           "(returned or stored outside the vmapped function)")
    return level


def _front(x: torch.Tensor, d: int) -> torch.Tensor:
    return x if d == 0 else x.movedim(d, 0)


def _batched_rule(name: str):
    """The rule of an out-of-place op with one tensor argument and one or several tensor results."""
    op = getattr(_ops, name).default

    def rule(A, *args, **kwargs):
        level = _current_level(name)
        with _ExcludeGuard(_NO_BATCHED):
            a, d = _fc._unwrap_batched(A, level)
            if d is None:  # batched at an outer level only: the next level's rule sees it
                return op(A, *args, **kwargs)
            # the sample's shape and dtype (no strides: A is batched)
            check_inplace(A, name, autocast=torch.is_autocast_enabled(A.device.type))
            out = op(_front(a, d), *args, **kwargs)
            if isinstance(out, torch.Tensor):
                return _fc._add_batch_dim(out, 0, level)
            return tuple(_fc._add_batch_dim(o, 0, level) for o in out)

    return rule


# The in-place ops write the batched input itself: the op runs on the physical tensor with the vmapped dim first, a
# view of the same storage (in place where that view is contiguous; the kernels take any strides, lu_common.h).


def _inplace_rule(name: str, returns_input: bool):
    """The rule of an in-place op with one tensor argument (``returns_input``: the op returns its input)."""
    op = getattr(_ops, name).default

    def rule(A):
        level = _current_level(name)
        with _ExcludeGuard(_NO_BATCHED):
            a, d = _fc._unwrap_batched(A, level)
            if d is None:
                return op(A)
            check_inplace(A, name)
            out = op(_front(a, d))
            return A if returns_input else _fc._add_batch_dim(out, 0, level)

    return rule


_vmap_inverse_ = _inplace_rule("inverse_", returns_input=True)
_vmap_lu_factor_ = _inplace_rule("lu_factor_", returns_input=False)


def _vmap_inverse_backward(X, G):
    # The C++ backward's fused op, under vmap when autograd's engine runs batched gradients (is_grads_batched): either
    # operand may be unbatched, and is then expanded over the batch.
    level = _current_level("_inverse_backward")
    with _ExcludeGuard(_NO_BATCHED):
        (x, xd), (g, gd) = _fc._unwrap_batched(X, level), _fc._unwrap_batched(G, level)
        if xd is None and gd is None:
            return _ops._inverse_backward.default(X, G)
        batch = x.shape[xd] if xd is not None else g.shape[gd]
        x, g = (t.expand(batch, *t.shape) if d is None else _front(t, d) for t, d in ((x, xd), (g, gd)))
        return _fc._add_batch_dim(_ops._inverse_backward.default(x, g), 0, level)


_lib = torch.library.Library("inplace", "IMPL")  # kept: the registrations live as long as this object
for _name, _rule in (("batched_inverse", _batched_rule("batched_inverse")),
                     ("batched_inverse_ex", _batched_rule("batched_inverse_ex")),
                     ("lu_factor", _batched_rule("lu_factor")),
                     ("lu_factor_ex", _batched_rule("lu_factor_ex")),
                     ("inverse_", _vmap_inverse_), ("lu_factor_", _vmap_lu_factor_),
                     ("_inverse_backward", _vmap_inverse_backward)):
    _lib.impl(_name, _rule, "FuncTorchBatched")


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


def _copy_back(A: torch.Tensor, result: torch.Tensor, op: str) -> torch.Tensor:
    # copy_'s refusals (a leaf that requires grad at a transform's level, ...) come before it writes: under the
    # op's name, as the ops' own.
    try:
        return A.copy_(result)
    except RuntimeError as e:
        if str(e).startswith(f"{op}: "):
            raise
        raise RuntimeError(f"{op}: {e}") from None


def inverse_(A: torch.Tensor, inverse=None) -> torch.Tensor:
    """inverse_ out of place, then copied into A: under a transform (``inverse`` None: the autograd.Function twin;
    the transform tracks the copy as an in-place op on A), and where ``linalg._copies_back`` says so (``inverse``
    the op itself)."""
    check_inplace(A, "inverse_")
    return _copy_back(A, (inverse or BatchedInverse.apply)(A), "inverse_")


def lu_factor_(A: torch.Tensor, lu_factor=None) -> torch.Tensor:
    """lu_factor_ out of place, then copied into A; ``lu_factor`` as ``inverse`` of :func:`inverse_`."""
    check_inplace(A, "lu_factor_")
    LU, pivots = lu_factor(A) if lu_factor is not None else LUFactorEx.apply(A, False)[:2]
    _copy_back(A, LU, "lu_factor_")
    return pivots
