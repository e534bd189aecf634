"""Small batched LU factorization and inversion (``torch.ops.inplace.*``), with ``torch.linalg`` semantics.

All functions take ``A`` of shape ``(*, n, n)`` (any batch dims, empty batches included) and dtype float32,
float64, complex64 or complex128, on the CPU or a CUDA/ROCm GPU. On GPUs, ``n <= 32`` runs the register
kernels of Abdelfattah et al. (ICCS 2017): one read and one write of each matrix, the current stream, no host
synchronization, CUDA-graph capturable. ``32 < n <= 64`` runs shared-memory kernels (one matrix per thread block;
the same guarantees; on an H200 2.0-2.7x ``torch.linalg.inv``, 1.1-1.7x ``torch.linalg.lu_factor``). For ``n > 64`` the GPU path delegates to
``torch.linalg`` (``linalg_lu_factor_ex`` / ``linalg_inv_ex``), which may synchronize the host.

Differences from ``torch.linalg``: :func:`lu_factor` and :func:`batched_inverse` never raise for singular input
(raising needs a host sync); use the ``_ex`` forms with ``check_errors=True`` for that. All are differentiable
(``batched_inverse``/``inverse_``: ``-X^H G X^H``; ``lu_factor``: the same backward as
``torch.linalg.lu_factor``), also twice.

Errors: a ``RuntimeError`` naming the op for fewer than 2 dims, non-square matrices, other dtypes or (in-place
ops) a non-contiguous tensor; nothing is written then. The in-place ops take conjugate and negative views through a
resolved copy written back through the view, as PyTorch does.

Every function here can be called from TorchScript (``torch.jit.script``), where it calls the operator directly.

torch.func: every op has a vmap batching rule (one call over the batch); under grad-type transforms (``grad``,
``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``) and with ``torch.autograd.forward_ad``, the functions here go
through ``torch.autograd.Function`` twins of the C++ autograd (``torch_inplace/_func.py``), to any order; called
as ``torch.ops.inplace.*`` there, the C++ autograd hands the call to ``torch.linalg``.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from . import _C  # noqa: F401  (registers torch.ops.inplace.*)
from . import _func  # vmap rules; the autograd.Function twins used under torch.func transforms

__all__ = [
    "lu_factor",
    "lu_factor_ex",
    "lu_factor_",
    "batched_inverse",
    "batched_inverse_ex",
    "inverse_",
    "LUFactorResult",
    "LUFactorExResult",
    "InverseExResult",
]

_ops = torch.ops.inplace
# Overloads looked up once (see torch_inplace/__init__.py): less host time per call.
_lu_factor = _ops.lu_factor.default
_lu_factor_ex = _ops.lu_factor_ex.default
_lu_factor_ = _ops.lu_factor_.default
_batched_inverse = _ops.batched_inverse.default
_batched_inverse_ex = _ops.batched_inverse_ex.default
_inverse_ = _ops.inverse_.default


class LUFactorResult(NamedTuple):
    """What :func:`lu_factor` returns: ``LU`` ``(*, n, n)`` and 1-based int32 ``pivots`` ``(*, n)``."""

    LU: torch.Tensor
    pivots: torch.Tensor


class LUFactorExResult(NamedTuple):
    """What :func:`lu_factor_ex` returns: ``LU``, ``pivots`` and int32 ``info`` ``(*)``."""

    LU: torch.Tensor
    pivots: torch.Tensor
    info: torch.Tensor


class InverseExResult(NamedTuple):
    """What :func:`batched_inverse_ex` returns: ``inverse`` ``(*, n, n)`` and int32 ``info`` ``(*)``."""

    inverse: torch.Tensor
    info: torch.Tensor


def lu_factor(A: torch.Tensor) -> LUFactorResult:
    """LU factorization with partial pivoting, ``A = P L U``, as ``torch.linalg.lu_factor``.

    Args:
        A: ``(*, n, n)`` float32/float64/complex64/complex128 tensor (any strides).

    Returns:
        ``(LU, pivots)``: ``LU`` ``(*, n, n)`` of A's dtype, ``L`` (unit diagonal) below and ``U`` on and above
        the diagonal; ``pivots`` ``(*, n)`` int32, 1-based LAPACK row interchanges.

    Singular matrices are factorized without error (``U`` has a zero on the diagonal); see :func:`lu_factor_ex`.
    """
    if torch.jit.is_scripting():
        LU, pivots = torch.ops.inplace.lu_factor(A)
        return LUFactorResult(LU, pivots)
    if _func.transforms_active():
        LU, pivots, _ = _func.lu_factor_ex(A, False)
        return LUFactorResult(LU, pivots)
    return LUFactorResult(*_lu_factor(A))


def _check_bool(check_errors: object, fn: str) -> None:
    # As torch.linalg's argument parser: None, ints or strings are not taken for a flag.
    if not isinstance(check_errors, bool):
        raise TypeError(f"{fn}(): argument 'check_errors' must be bool, not {type(check_errors).__name__}")


def lu_factor_ex(A: torch.Tensor, check_errors: bool = False) -> LUFactorExResult:
    """:func:`lu_factor` plus ``info`` ``(*)`` int32, as ``torch.linalg.lu_factor_ex``.

    ``info[b] = k > 0`` when ``U[b, k-1, k-1]`` is exactly zero (the first such k), else 0. With
    ``check_errors=True`` the call synchronizes and raises the error ``torch.linalg.lu_factor_ex`` raises when
    any ``info`` is positive.
    """
    if torch.jit.is_scripting():
        LU, pivots, info = torch.ops.inplace.lu_factor_ex(A, check_errors=check_errors)
        return LUFactorExResult(LU, pivots, info)
    _check_bool(check_errors, "lu_factor_ex")
    if _func.transforms_active():
        return LUFactorExResult(*_func.lu_factor_ex(A, check_errors))
    if not check_errors:
        return LUFactorExResult(*_lu_factor_ex(A))
    return LUFactorExResult(*_lu_factor_ex(A, check_errors=True))


def lu_factor_(A: torch.Tensor) -> torch.Tensor:
    """In-place :func:`lu_factor`: ``A`` becomes ``LU``; returns ``pivots`` ``(*, n)`` int32 (1-based).

    ``A`` must be contiguous. A conjugate or negative view is factorized through a resolved copy that is then
    written back through the view (as PyTorch does for in-place ops on such views). Differentiable when ``A`` is
    not a leaf that requires grad (PyTorch's usual in-place rule).
    """
    if torch.jit.is_scripting():
        return torch.ops.inplace.lu_factor_(A)
    if _func.transforms_active():
        return _func.lu_factor_(A)
    return _lu_factor_(A)


def batched_inverse(A: torch.Tensor) -> torch.Tensor:
    """Inverse of every matrix in ``A`` ``(*, n, n)``, as ``torch.linalg.inv``, without the singularity check
    (singular matrices give inf/NaN entries; use :func:`batched_inverse_ex` to detect them). On GPUs it writes no ``info``
    (a third of the bytes moved at ``n = 1``); the inverse has the same bits as :func:`batched_inverse_ex`'s."""
    if torch.jit.is_scripting():
        return torch.ops.inplace.batched_inverse(A)
    if _func.transforms_active():
        return _func.batched_inverse(A)
    return _batched_inverse(A)


def batched_inverse_ex(A: torch.Tensor, check_errors: bool = False) -> InverseExResult:
    """:func:`batched_inverse` plus ``info`` ``(*)`` int32, as ``torch.linalg.inv_ex``: ``info[b] = k > 0`` when
    the LU factorization of ``A[b]`` met an exactly zero pivot at step k. ``check_errors=True`` synchronizes and
    raises ``torch.linalg.LinAlgError`` for singular input, as ``torch.linalg.inv`` does."""
    if torch.jit.is_scripting():
        X, info = torch.ops.inplace.batched_inverse_ex(A, check_errors=check_errors)
        return InverseExResult(X, info)
    _check_bool(check_errors, "batched_inverse_ex")
    if _func.transforms_active():
        return InverseExResult(*_func.batched_inverse_ex(A, check_errors))
    if not check_errors:
        return InverseExResult(*_batched_inverse_ex(A))
    return InverseExResult(*_batched_inverse_ex(A, check_errors=True))


def inverse_(A: torch.Tensor) -> torch.Tensor:
    """Invert every matrix of a contiguous ``A`` ``(*, n, n)`` in its own storage; returns ``A``.

    No extra device memory on GPUs for ``n <= 64``. ``A`` must be contiguous. A conjugate or negative view is
    inverted through a resolved copy that is written back through the view (PyTorch's math-bit fallback).
    """
    if torch.jit.is_scripting():
        return torch.ops.inplace.inverse_(A)
    if _func.transforms_active():
        return _func.inverse_(A)
    return _inverse_(A)
