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
ops) a tensor whose elements overlap in memory (expanded); nothing is written then. The in-place ops take any other
strides (in place where ``A`` is contiguous, and for ``inverse_`` also where ``A.mT`` is; otherwise through a
contiguous copy written back) and conjugate and negative views:
``inverse_`` inverts them in their own storage (inversion commutes with both bits); ``lu_factor_`` factorizes a
resolved copy and writes it back through the view.

Every function here can be called from TorchScript (``torch.jit.script``), where it calls the operator directly.

torch.func: every op has a vmap batching rule (one call over the batch); under grad-type transforms (``grad``,
``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``) and with ``torch.autograd.forward_ad``, the functions here go
through ``torch.autograd.Function`` twins of the C++ autograd (``torch_inplace/_func.py``), to any order; called
as ``torch.ops.inplace.*`` there, the C++ autograd hands the call to ``torch.linalg``. Under
``torch.func.functionalize`` the functions call the ops (the in-place ones out of place, copied back).
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from . import _C  # type: ignore[attr-defined]  # noqa: F401  (registers torch.ops.inplace.*)
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


def _copies_back(A: torch.Tensor) -> bool:
    """Whether the in-place functions compute out of place and copy back into ``A``: under torch.func.functionalize
    (which cannot take a custom op that mutates its input), and for a view of another tensor inside code that
    torch.compile traces (PyTorch 2.11's inductor, with dynamic shapes, drops the storage offset of a view that a
    custom op mutates: silently wrong values; a ``copy_`` through the view compiles right)."""
    if torch.compiler.is_compiling():
        return A._base is not None
    return _func.functionalizing()


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


def _check_tensor(A: object, fn: str) -> None:
    # As torch.linalg's argument parser: a TypeError, not the dispatcher's RuntimeError, for a non-tensor.
    if not isinstance(A, torch.Tensor):
        raise TypeError(f"{fn}(): argument 'A' must be Tensor, not {_type_name(A)}")


def _type_name(value: object) -> str:
    # As torch's argument parser names a type: qualified outside the builtins (numpy.bool, not bool).
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _check_bool(value: object, fn: str, name: str = "check_errors") -> None:
    # As torch.linalg's argument parser: None, ints or strings are not taken for a flag.
    if not isinstance(value, bool):
        raise TypeError(f"{fn}(): argument '{name}' must be bool, not {_type_name(value)}")


def _check_pivot(pivot: object, fn: str) -> None:
    _check_bool(pivot, fn, "pivot")
    if not pivot:
        raise RuntimeError(f"{fn}: LU without pivoting (pivot=False) is not supported; the factorization always "
                           "uses partial pivoting (pivot=True)")


def lu_factor(A: torch.Tensor, pivot: bool = True) -> LUFactorResult:
    """LU factorization with partial pivoting, ``A = P L U``, as ``torch.linalg.lu_factor``.

    Args:
        A: ``(*, n, n)`` float32, float64, complex64 or complex128 tensor on the CPU or a CUDA/ROCm GPU (any
            batch dims, empty batches included); any strides. Inside ``torch.autocast``, float16 /
            bfloat16 too: computed in float32, with float32 results.
        pivot: only ``True`` (partial pivoting), as ``torch.linalg.lu_factor``'s default. ``torch.linalg`` takes it
            by keyword only; here it may also come by position (TorchScript cannot compile keyword-only arguments).

    Returns:
        ``LUFactorResult(LU, pivots)``: ``LU`` ``(*, n, n)`` of A's dtype, ``L`` (unit diagonal) below and ``U`` on
        and above the diagonal; ``pivots`` ``(*, n)`` int32, 1-based LAPACK row interchanges (LAPACK's choices,
        ties to the first row). Differentiable (``torch.linalg.lu_factor``'s backward), also twice.

    Singular matrices are factorized without error (``U`` has a zero on the diagonal): raising would need a host
    synchronization; see :func:`lu_factor_ex`. No ``out=``: the results are new tensors.

    Raises:
        TypeError: ``A`` is not a tensor, or ``pivot`` is not a bool.
        RuntimeError: naming the op, for ``pivot=False``, fewer than 2 dims, a non-square ``A``
            (``torch.linalg.lu_factor`` also takes rectangular ones; this function does not), another dtype or a sparse,
            quantized or nested tensor; nothing is written then.
    """
    if torch.jit.is_scripting():
        if not pivot:
            raise RuntimeError("lu_factor: LU without pivoting (pivot=False) is not supported")
        LU, pivots = torch.ops.inplace.lu_factor(A)
        return LUFactorResult(LU, pivots)
    _check_tensor(A, "lu_factor")
    _check_pivot(pivot, "lu_factor")
    if _func.transforms_active():
        LU, pivots, _ = _func.lu_factor_ex(A, False)
        return LUFactorResult(LU, pivots)
    return LUFactorResult(*_lu_factor(A))


def lu_factor_ex(A: torch.Tensor, check_errors: bool = False, pivot: bool = True) -> LUFactorExResult:
    """:func:`lu_factor` plus ``info``, as ``torch.linalg.lu_factor_ex``.

    Args:
        A: ``(*, n, n)`` float32, float64, complex64 or complex128 tensor on the CPU or a CUDA/ROCm GPU (any
            batch dims, empty batches included); any strides. Inside ``torch.autocast``, float16 /
            bfloat16 too: computed in float32, with float32 results.
        check_errors: synchronize with the device and raise, as ``torch.linalg.lu_factor_ex`` does, when any
            matrix is singular (the only path that synchronizes the host).
        pivot: only ``True`` (partial pivoting).

    ``torch.linalg`` takes ``pivot`` and ``check_errors`` by keyword only; here they may also come by position
    (TorchScript cannot compile keyword-only arguments), ``check_errors`` first, as before ``pivot`` existed.

    Returns:
        ``LUFactorExResult(LU, pivots, info)``: as :func:`lu_factor`, and ``info`` ``(*)`` int32:
        ``info[b] = k > 0`` when ``U[b, k-1, k-1]`` is exactly zero (the first such k), else 0.

    Raises:
        TypeError: ``A`` is not a tensor, ``pivot`` or ``check_errors`` is not a bool.
        RuntimeError: naming the op, for fewer than 2 dims, a non-square ``A``, another dtype or a sparse,
            quantized or nested tensor; nothing is written then.
        RuntimeError / torch.linalg.LinAlgError: with ``check_errors=True``, for singular input, as torch.
    """
    if torch.jit.is_scripting():
        if not pivot:
            raise RuntimeError("lu_factor_ex: LU without pivoting (pivot=False) is not supported")
        LU, pivots, info = torch.ops.inplace.lu_factor_ex(A, check_errors=check_errors)
        return LUFactorExResult(LU, pivots, info)
    _check_tensor(A, "lu_factor_ex")
    _check_pivot(pivot, "lu_factor_ex")
    _check_bool(check_errors, "lu_factor_ex")
    if _func.transforms_active():
        return LUFactorExResult(*_func.lu_factor_ex(A, check_errors))
    if not check_errors:
        return LUFactorExResult(*_lu_factor_ex(A))
    return LUFactorExResult(*_lu_factor_ex(A, check_errors=True))


def lu_factor_(A: torch.Tensor) -> torch.Tensor:
    """In-place :func:`lu_factor`: ``A`` becomes ``LU`` in its own storage.

    Args:
        A: ``(*, n, n)`` float32, float64, complex64 or complex128 tensor on the CPU or a CUDA/ROCm GPU (any
            batch dims, empty batches included), of any strides whose elements do not overlap: a contiguous ``A``
            is factorized in its own storage, any other through a contiguous copy written back (extra memory the
            size of ``A``). A conjugate or negative view is factorized through a resolved copy that is then
            written back through the view (negation does not commute with the LU).

    Returns:
        ``pivots`` ``(*, n)`` int32 (1-based), outside the autograd graph. Differentiable when ``A`` is not a leaf
        that requires grad (PyTorch's usual in-place rule): gradients reach ``A``'s earlier values as through
        ``torch.linalg.lu_factor``.

    Raises:
        TypeError: ``A`` is not a tensor.
        RuntimeError: naming the op, for fewer than 2 dims, a non-square ``A``, another dtype, a sparse, quantized or
            nested tensor, elements that overlap in memory (an expanded ``A``), a leaf that requires grad (with grad
            mode on, as PyTorch's own in-place ops) or an inference tensor outside ``torch.inference_mode()``;
            nothing is written then.
    """
    if torch.jit.is_scripting():
        return torch.ops.inplace.lu_factor_(A)
    _check_tensor(A, "lu_factor_")
    if _func.transforms_active():
        return _func.lu_factor_(A)
    if _copies_back(A):
        return _func.lu_factor_(A, _lu_factor)
    return _lu_factor_(A)


def batched_inverse(A: torch.Tensor) -> torch.Tensor:
    """Inverse of every matrix in ``A``, as ``torch.linalg.inv``, without the singularity check.

    Args:
        A: ``(*, n, n)`` float32, float64, complex64 or complex128 tensor on the CPU or a CUDA/ROCm GPU (any
            batch dims, empty batches included); any strides. Inside ``torch.autocast``, float16 /
            bfloat16 too: computed in float32, with float32 results.

    Returns:
        ``X`` ``(*, n, n)`` of A's dtype with ``A @ X = I``. Singular matrices give inf/NaN entries (use
        :func:`batched_inverse_ex` to detect them). Differentiable (``-X^H G X^H``), also twice. On GPUs it writes
        no ``info`` (a third of the bytes moved at ``n = 1``); the inverse has the same bits as
        :func:`batched_inverse_ex`'s.

    Raises:
        TypeError: ``A`` is not a tensor.
        RuntimeError: naming the op, for fewer than 2 dims, a non-square ``A``, another dtype or a sparse,
            quantized or nested tensor; nothing is written then.
    """
    if torch.jit.is_scripting():
        return torch.ops.inplace.batched_inverse(A)
    _check_tensor(A, "batched_inverse")
    if _func.transforms_active():
        return _func.batched_inverse(A)
    return _batched_inverse(A)


def batched_inverse_ex(A: torch.Tensor, check_errors: bool = False) -> InverseExResult:
    """:func:`batched_inverse` plus ``info``, as ``torch.linalg.inv_ex``.

    Args:
        A: ``(*, n, n)`` float32, float64, complex64 or complex128 tensor on the CPU or a CUDA/ROCm GPU (any
            batch dims, empty batches included); any strides. Inside ``torch.autocast``, float16 /
            bfloat16 too: computed in float32, with float32 results.
        check_errors: synchronize with the device and raise ``torch.linalg.LinAlgError``, as ``torch.linalg.inv``
            does, when any matrix is singular.

    Returns:
        ``InverseExResult(inverse, info)``: ``info`` ``(*)`` int32, ``info[b] = k > 0`` when the LU factorization of
        ``A[b]`` met an exactly zero pivot at step k, else 0.

    Raises:
        TypeError: ``A`` is not a tensor, or ``check_errors`` is not a bool.
        RuntimeError: naming the op, for fewer than 2 dims, a non-square ``A``, another dtype or a sparse,
            quantized or nested tensor; nothing is written then.
        RuntimeError / torch.linalg.LinAlgError: with ``check_errors=True``, for singular input, as torch.
    """
    if torch.jit.is_scripting():
        X, info = torch.ops.inplace.batched_inverse_ex(A, check_errors=check_errors)
        return InverseExResult(X, info)
    _check_tensor(A, "batched_inverse_ex")
    _check_bool(check_errors, "batched_inverse_ex")
    if _func.transforms_active():
        return InverseExResult(*_func.batched_inverse_ex(A, check_errors))
    if not check_errors:
        return InverseExResult(*_batched_inverse_ex(A))
    return InverseExResult(*_batched_inverse_ex(A, check_errors=True))


def inverse_(A: torch.Tensor) -> torch.Tensor:
    """Invert every matrix of ``A`` in its own storage.

    Args:
        A: ``(*, n, n)`` float32, float64, complex64 or complex128 tensor on the CPU or a CUDA/ROCm GPU (any
            batch dims, empty batches included), of any strides whose elements do not overlap. A contiguous
            ``A`` and a transposed view of contiguous storage (``B.mT``: inv(B^T) = inv(B)^T) are inverted in their
            own storage; any other ``A`` through a contiguous copy written back (extra memory the size of ``A``).
            A conjugate or negative view is inverted in its own storage, bits and all (inversion commutes with
            conjugation and negation).

    Returns:
        ``A``, holding the inverses (singular matrices: inf/NaN entries, as :func:`batched_inverse`). No extra
        device memory on GPUs for ``n <= 64`` (contiguous or transposed ``A``). Differentiable when ``A`` is not a
        leaf that requires grad.

    Raises:
        TypeError: ``A`` is not a tensor.
        RuntimeError: naming the op, for fewer than 2 dims, a non-square ``A``, another dtype, a sparse, quantized or
            nested tensor, elements that overlap in memory (an expanded ``A``), a leaf that requires grad (with grad
            mode on, as PyTorch's own in-place ops) or an inference tensor outside ``torch.inference_mode()``;
            nothing is written then.
    """
    if torch.jit.is_scripting():
        return torch.ops.inplace.inverse_(A)
    _check_tensor(A, "inverse_")
    if _func.transforms_active():
        return _func.inverse_(A)
    if _copies_back(A):
        return _func.inverse_(A, _batched_inverse)
    return _inverse_(A)
