"""torch_inplace: in-place transposition and small batched LU / inverse as PyTorch operators.

Every function here is a thin, typed wrapper around a ``torch.ops.inplace.*`` operator, so the same ops are
available to TorchScript and to C++ (LibTorch) callers; the op wrappers can themselves be scripted
(``torch.jit.script``), where they call the operators directly.
"""
from __future__ import annotations

import contextlib
import importlib.util
import operator
import os
import sys
from typing import Any, Callable, Iterator, NamedTuple, Optional, Sequence, TypeVar, cast

import torch
from torch.types import Device


def _refuse_second_copy() -> None:
    # The C++ library (libtorch_inplace.so, loaded by torch.ops.load_library or linked into an embedding program)
    # registers the same operators as this package's extension; registering them twice aborts the process, so
    # refuse the import with an error instead.
    if "torch_inplace._C" in sys.modules:  # importlib.reload: the extension is this package's own
        return
    try:
        found = torch._C._jit_get_operation("inplace::transpose_")
    except RuntimeError:
        return
    if (found[0] if isinstance(found, tuple) else found) is None:
        return
    # This package's own library, loaded by path (torch.ops.load_library(get_library_path())): importing it as the
    # extension module reuses the loaded library, which registers nothing twice.
    spec = importlib.util.find_spec("torch_inplace._C")
    if spec is not None and spec.origin is not None:
        own = os.path.realpath(spec.origin)
        if any(os.path.realpath(p) == own for p in getattr(torch.ops, "loaded_libraries", ())):
            return
    raise ImportError("torch_inplace: the operators inplace::* are already registered in this process (by "
                      "libtorch_inplace.so, the LibTorch build of this library, loaded with torch.ops.load_library "
                      "or linked into the program); the Python package carries its own copy and cannot be loaded "
                      "beside it: use torch.ops.inplace.* directly, or the package alone")


_refuse_second_copy()

try:
    from . import _C  # type: ignore[attr-defined]  # noqa: E402,F401  (loads the library; its registrars define the ops)
except ImportError as _e:
    raise ImportError(
        f"torch_inplace: its compiled library could not be loaded ({_e}). It must be built against the torch "
        f"installed here (torch {torch.__version__}): rebuild with `pip install --no-build-isolation .`; in a "
        "source checkout, build it in place (`python setup.py build_ext --inplace`) or import the installed package "
        "from outside the checkout") from _e
from . import linalg  # noqa: E402
from .linalg import _type_name  # noqa: E402
from .linalg import (InverseExResult, LUFactorExResult, LUFactorResult, batched_inverse, batched_inverse_ex,
                     inverse_, lu_factor, lu_factor_, lu_factor_ex)  # noqa: E402

__all__ = [
    "transpose_",
    "aos_to_soa_",
    "soa_to_aos_",
    "plan",
    "Plan",
    "algorithms",
    "empty_transposable",
    "workspace_limit",
    "get_workspace_limit",
    "set_workspace_limit",
    "workspace_stats",
    "reset_workspace_stats",
    "WorkspaceStats",
    "built_with_gpu",
    "get_library_path",
    "linalg",
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

__version__ = "0.1.0"

_ops = torch.ops.inplace
# The hot ops' overloads, looked up once: calling an OpOverload skips the namespace and packet lookups of
# `torch.ops.inplace.name(...)`, which cost about as much as the rest of a small call's host time. (Scripted code
# and torch.compile see the same operators.)
_transpose = _ops.transpose_.default
_aos_to_soa = _ops.aos_to_soa_.default
_soa_to_aos = _ops.soa_to_aos_.default

ALGORITHMS = ("auto", "noop", "square", "c2r", "r2c", "skinny", "tiled31", "tiled32", "tiled21", "tiled22",
              "padded", "cut", "onchip")


def _as_int(value: object, fn: str, what: str) -> int:
    """``value`` as a Python int (ints and integer-like objects such as NumPy integers or 0-dim integer tensors);
    a TypeError naming ``fn`` for anything else, ``bool`` included."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)  # type: ignore[arg-type]
        except TypeError:
            pass
    raise TypeError(f"{fn}(): expected {what}, got {_type_name(value)} {value!r}")


def _as_device(device: object, fn: str, op: str) -> torch.device:
    """``device`` as a torch.device; else torch.device's own error type, naming the function: a TypeError as
    ``fn()``, a RuntimeError (an unknown device string) as ``op``, as the op's other RuntimeErrors do."""
    expected = 'expected a device ("cpu", "cuda", "cuda:1", an index or a torch.device)'
    try:
        return torch.device(device)  # type: ignore[arg-type, call-overload]
    except TypeError:
        raise TypeError(f"{fn}(): {expected}, got {_type_name(device)} {device!r}") from None
    except RuntimeError as e:
        reason = str(e).splitlines()[0]
        raise RuntimeError(f"{op}: {expected}, got {_type_name(device)} {device!r} ({reason})") from None


def _not_a_tensor(t: object, fn: str) -> None:
    # As torch's argument parser: a TypeError, not the dispatcher's RuntimeError, for a non-tensor.
    raise TypeError(f"{fn}(): argument 't' must be Tensor, not {_type_name(t)}")


def _refuse_functional(t: torch.Tensor, fn: str) -> None:
    # After a refusal: torch.func.functionalize refuses the op (a custom op returning an alias of its input) with
    # PyTorch's internal message; this one says why and what to use instead.
    if not torch.compiler.is_compiling() and torch._is_functional_tensor(t):
        raise RuntimeError(f"{fn}: expected a plain tensor, got a tensor of torch.func.functionalize; the op changes "
                           "the tensor's shape in place, which functionalization cannot follow: use "
                           "x.mT.contiguous() inside functionalized functions") from None


@torch.jit.unused  # scripted code calls the ops directly (TorchScript has no try blocks)
def _call_transposing(fn: str, t: torch.Tensor, algorithm: str = "auto") -> torch.Tensor:
    try:
        if fn == "transpose_":
            return _transpose(t) if algorithm == "auto" else _transpose(t, algorithm=algorithm)
        return _aos_to_soa(t) if fn == "aos_to_soa_" else _soa_to_aos(t)
    except RuntimeError:
        _refuse_functional(t, fn)
        raise


def algorithms() -> tuple[str, ...]:
    """Names accepted by ``transpose_(t, algorithm=...)`` and :func:`plan` (not every one applies to every
    shape or device; the planner says why when it refuses)."""
    return ALGORITHMS


def transpose_(t: torch.Tensor, algorithm: str = "auto") -> torch.Tensor:
    """Transpose the last two dims of ``t`` physically, in its own storage.

    Args:
        t: a contiguous tensor of shape ``(..., m, n)`` and any dtype of 1, 2, 4, 8 or 16 bytes, on the CPU or a
            CUDA/ROCm device, that owns its whole storage (storage offset 0, no other tensor sharing it).
        algorithm: ``"auto"`` (the planner's choice) or an algorithm name from :func:`algorithms`, for tests and
            benchmarks.

    Returns:
        ``t`` itself, now a contiguous ``(..., n, m)`` tensor with ``t[..., j, i]`` equal to the old
        ``t[..., i, j]``; ``t.data_ptr()`` is unchanged.

    Raises:
        TypeError: ``t`` is not a tensor, or ``algorithm`` not a str.
        RuntimeError: naming ``transpose_``, for a non-contiguous tensor, fewer than 2 dims, a storage offset,
            a storage with other elements outside the tensor, a storage shared with another tensor (a view of a
            tensor still held, an alias such as ``t.detach()``, an output autograd saved for backward), a leaf
            that requires grad, a dual tensor of forward-mode AD, an inference tensor outside
            ``torch.inference_mode()``, a sparse or quantized tensor, a tensor of a torch.func transform (vmap,
            grad, jvp, ...) or of ``functionalize``, an unknown or inapplicable algorithm, or a workspace limit no
            plan fits. The tensor is unchanged after a refusal.

    Conjugate and negative views are transposed in their own storage, bits and all. Memory shared outside
    PyTorch's storage bookkeeping cannot be seen: a NumPy array behind ``torch.from_numpy``, the producer of a
    ``torch.from_dlpack`` or ``torch.frombuffer`` tensor, and the consumers of ``t``'s own DLPack exports
    (``torch.from_dlpack(t)``, ``np.from_dlpack(t)``, a capsule) keep their old shape and see the transposed bytes.
    Neither can the inner tensors of a tensor subclass (``__torch_dispatch__``): for those the ownership checks
    see only the subclass.
    """
    if torch.jit.is_scripting():
        return torch.ops.inplace.transpose_(t, algorithm=algorithm)
    if not isinstance(t, torch.Tensor):
        _not_a_tensor(t, "transpose_")
    if not isinstance(algorithm, str):
        raise TypeError(f"transpose_(): argument 'algorithm' must be str, not {_type_name(algorithm)}")
    return _call_transposing("transpose_", t, algorithm)


def aos_to_soa_(t: torch.Tensor) -> torch.Tensor:
    """Array of structures ``(..., N, F)`` -> structure of arrays ``(..., F, N)``, in place.

    The same permutation as :func:`transpose_`, planned for a small structure dimension ``F`` (the skinny path
    keeps the short side on chip). Any ``F`` is taken: the op does not check that it is the short side.

    Args:
        t: ``(..., N, F)``, with the requirements of :func:`transpose_`'s ``t``.

    Returns:
        ``t`` itself, now a contiguous ``(..., F, N)`` tensor; ``t.data_ptr()`` is unchanged.

    Raises:
        TypeError: ``t`` is not a tensor.
        RuntimeError: as :func:`transpose_`'s, naming ``aos_to_soa_``; the tensor is unchanged then.
    """
    if torch.jit.is_scripting():
        return torch.ops.inplace.aos_to_soa_(t)
    if not isinstance(t, torch.Tensor):
        _not_a_tensor(t, "aos_to_soa_")
    return _call_transposing("aos_to_soa_", t)


def soa_to_aos_(t: torch.Tensor) -> torch.Tensor:
    """Structure of arrays ``(..., F, N)`` -> array of structures ``(..., N, F)``, in place.

    The inverse of :func:`aos_to_soa_`.

    Args:
        t: ``(..., F, N)``, with the requirements of :func:`transpose_`'s ``t``.

    Returns:
        ``t`` itself, now a contiguous ``(..., N, F)`` tensor; ``t.data_ptr()`` is unchanged.

    Raises:
        TypeError: ``t`` is not a tensor.
        RuntimeError: as :func:`transpose_`'s, naming ``soa_to_aos_``; the tensor is unchanged then.
    """
    if torch.jit.is_scripting():
        return torch.ops.inplace.soa_to_aos_(t)
    if not isinstance(t, torch.Tensor):
        _not_a_tensor(t, "soa_to_aos_")
    return _call_transposing("soa_to_aos_", t)


class Plan(NamedTuple):
    """What :func:`transpose_` would do for a shape: ``algorithm``, the ``scratch_bytes`` it allocates and
    ``explanation`` (why)."""

    algorithm: str
    scratch_bytes: int
    explanation: str


def plan(shape: Sequence[int], dtype: torch.dtype = torch.float32, device: torch.device | str | int = "cpu",
         algorithm: str = "auto") -> Plan:
    """The planner's choice for transposing a ``(..., m, n)`` tensor of ``dtype`` on ``device`` in place.

    Args:
        shape: the tensor's shape (at least 2 dims).
        dtype: its dtype (the element size is what matters).
        device: ``"cpu"``, a GPU (``"cuda"``, ``"cuda:1"``, an index) or a ``torch.device``.
        algorithm: ``"auto"``, or a name from :func:`algorithms` to see whether and how it would apply.

    Returns:
        ``Plan(algorithm, scratch_bytes, explanation)``, under the current workspace limit.

    Raises:
        TypeError: ``shape`` is not a sequence of integers, ``dtype`` not a ``torch.dtype``, ``device`` not a
            device, or ``algorithm`` not a str.
        RuntimeError: no plan fits the workspace limit, a forced ``algorithm`` cannot apply, the shape has fewer
            than 2 dims, ``device`` is a string torch does not know, or the build has no kernels for ``device``.
    """
    if not isinstance(device, (torch.device, str, int)) or isinstance(device, bool):
        raise TypeError(f"plan(): expected device to be a torch.device, str or int, got {_type_name(device)}")
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"plan(): expected dtype to be a torch.dtype, got {_type_name(dtype)} {dtype!r}")
    if not isinstance(algorithm, str):
        raise TypeError(f"plan(): expected algorithm to be a str, got {_type_name(algorithm)}")
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (Sequence, torch.Size)):
        raise TypeError(f"plan(): expected shape to be a sequence of integers, got {_type_name(shape)}")
    sizes = [_as_int(s, "plan", "integer sizes in shape") for s in shape]
    name, scratch, why = _ops._plan_transpose(sizes, dtype, _as_device(device, "plan", "torch_inplace.plan"), algorithm)
    return Plan(name, scratch, why)


def empty_transposable(*shape: int | Sequence[int], dtype: Optional[torch.dtype] = None, device: Device = None,
                       requires_grad: bool = False) -> torch.Tensor:
    """An uninitialised contiguous tensor whose storage carries the slack the GPU planner can use to pad
    awkward shapes, so later :func:`transpose_` calls (either way round) may take the padded path.

    Args:
        shape: ``empty_transposable(m, n)`` or ``empty_transposable((b, m, n))``, as ``torch.empty``.
        dtype: as ``torch.empty`` (default: ``torch.get_default_dtype()``).
        device: as ``torch.empty`` (default: the current default device).
        requires_grad: as ``torch.empty``.

    Returns:
        A tensor of ``shape`` (the slack lies in its storage, past its elements).

    Raises:
        TypeError: a size is not an integer, ``dtype`` not a ``torch.dtype``, ``device`` not a device or
            ``requires_grad`` not a bool.
        RuntimeError: a negative size, fewer than 2 dims (the op transposes the last two), a dtype the transposition
            does not take (quantized, or elements of other than 1, 2, 4, 8 or 16 bytes), a byte count past int64,
            ``requires_grad=True`` with a dtype that is neither floating point nor complex, a device string torch
            does not know, or a GPU device where ``torch.cuda.is_available()`` is False.
    """
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
        shape = tuple(shape[0])
    fn = "empty_transposable"
    sizes = [_as_int(s, fn, "integer sizes") for s in shape]
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise TypeError(f"{fn}(): expected dtype to be a torch.dtype or None, got {_type_name(dtype)} {dtype!r}")
    if not isinstance(requires_grad, bool):
        raise TypeError(f"{fn}(): expected requires_grad to be a bool, got {_type_name(requires_grad)}")
    if requires_grad:  # refused before the allocation, as torch.empty does, but naming the function
        dt = dtype if dtype is not None else torch.get_default_dtype()
        if not (dt.is_floating_point or dt.is_complex):
            raise RuntimeError(f"{fn}: only tensors of floating point or complex dtype can require gradients, got "
                               f"requires_grad=True with dtype {dt}")
    if device is not None:
        dev = _as_device(device, fn, fn)
    elif torch.compiler.is_compiling():  # Dynamo cannot trace get_default_device(); the op's default is the CPU
        dev = None
    else:
        dev = torch.get_default_device()  # torch.set_default_device, as torch.empty follows it
    if (dev is not None and dev.type == "cuda" and not torch.compiler.is_compiling()
            and not torch.cuda.is_available()):
        raise RuntimeError(f"{fn}: expected an available GPU for device {str(dev)!r}, but torch.cuda.is_available() "
                           "is False (no GPU, driver or GPU build of PyTorch)")
    out = _ops.empty_transposable(sizes, dtype=dtype, device=dev)
    return out.requires_grad_() if requires_grad else out


@torch.library.register_fake("inplace::empty_transposable")
def _empty_transposable_fake(size, dtype=None, device=None):
    # Under torch.compile / fake tensors: a tensor of the shape, dtype and device (the slack is storage only).
    return torch.empty(size, dtype=dtype, device=device)


_Fn = TypeVar("_Fn", bound=Callable[..., Any])


def _not_compiled(fn: _Fn) -> _Fn:
    """torch.compiler.disable, keeping fn's signature for type checkers (torch's decorator has no annotations, so
    mypy saw the decorated functions as Any)."""
    return cast(_Fn, torch.compiler.disable(fn))


# The workspace calls change (or read) per-thread state in C++ ops that take no tensor, which Dynamo would run while it
# traces (and then again at run time, or never where the trace fails): a limit set during a trace leaked into the
# thread. Kept out of compiled code, they run where the Python code runs them.
@_not_compiled
def _new_scope() -> int:
    return int(_ops._new_workspace_scope())


@_not_compiled
def _enter_limit(nbytes: int, scope: int) -> None:
    _ops._enter_workspace_limit(nbytes, scope)


@_not_compiled
def _exit_limit(scope: int, must_exist: bool) -> None:
    _ops._exit_workspace_limit(scope, must_exist)


@_not_compiled
def get_workspace_limit() -> int:
    """The limit on scratch bytes per op call that applies to this thread's calls (-1: none): the latest
    :func:`workspace_limit` context this thread entered and has not left, else the process-wide one (:func:`set_workspace_limit`)."""
    return int(_ops._workspace_limit())


def _limit_bytes(nbytes: Optional[int], fn: str) -> int:
    if nbytes is None:
        return -1
    value = _as_int(nbytes, fn, "an integer number of bytes or None")
    if not -1 <= value < 2**63:
        raise RuntimeError(f"{fn}: expected a byte count >= 0 (or -1 for no limit) below 2**63, got {value}")
    return value


@_not_compiled
def set_workspace_limit(nbytes: Optional[int]) -> None:
    """Set the process-wide scratch limit per op call (every thread outside a :func:`workspace_limit` context);
    ``None`` or -1 removes it.

    Raises:
        TypeError: ``nbytes`` is neither ``None`` nor an integer (a ``bool``, ``float`` or ``str`` is refused).
        RuntimeError: ``nbytes`` is below -1 or not below 2**63.
    """
    _ops._set_workspace_limit(_limit_bytes(nbytes, "set_workspace_limit"))


@contextlib.contextmanager
def workspace_limit(nbytes: Optional[int]) -> Iterator[None]:
    """Context manager: inside it the transposition planner only picks algorithms whose scratch fits in ``nbytes``
    and the transposition ops raise (before touching their input) when none does. Ends on exit. The LU / inverse ops
    plan no scratch: the copies they make of inputs their kernels cannot take as they are (strided views for the
    in-place ops, conj / neg views, misaligned complex data) are the size of the input, as torch.linalg's own, and
    are neither limited nor counted.

    The limit applies to the calls of the thread that entered the context (like ``torch.no_grad()``), over the
    process-wide one of :func:`set_workspace_limit`; other threads keep theirs. Contexts nest: the latest one the
    thread entered and has not left applies. They may end in any order (generators or asyncio tasks that hold one
    across a ``yield`` or an ``await``), but they belong to the thread, not to the task: tasks interleaved on one
    thread see each other's limits while both are open. A context must end on the thread that entered it.

    Args:
        nbytes: scratch bytes per op call; ``None`` (or -1) for no limit.

    Raises:
        TypeError / RuntimeError: as :func:`set_workspace_limit`; RuntimeError on exit on another thread than the
            one that entered the context (the context is then over, but its limit stays on the thread that entered
            it until that thread ends).
    """
    limit = _limit_bytes(nbytes, "workspace_limit")
    # The scope's id comes first and the entry runs inside the try, so that an asynchronous exception (Ctrl-C) that
    # lands just after the scope opened, before this frame could know, still closes it: otherwise its limit stayed
    # on the thread for good. Until the entry is seen to return, closing a scope that never opened is no error.
    # (contextlib's own frames around this generator, after it yields and before it resumes, are out of reach: an
    # interrupt there leaves the scope open until its exception is dropped, which finalizes the generator.)
    scope = _new_scope()
    entered = False
    try:
        _enter_limit(limit, scope)
        entered = True
        yield
    finally:
        try:
            _exit_limit(scope, entered)
        except BaseException:
            # An asynchronous exception in the exit's own Python frames, before or after the scope closed: close it
            # (where it is still open) and let the exception go on.
            _exit_limit(scope, False)
            raise


class WorkspaceStats(NamedTuple):
    """Scratch bytes of the transposition ops' calls (:func:`workspace_stats`): ``last_bytes`` of the latest call,
    ``peak_bytes`` the most one call took, ``total_bytes`` their sum, ``calls`` the calls planned (with scratch or
    none) since the last :func:`reset_workspace_stats`. The LU / inverse ops are not counted (they plan no scratch;
    :func:`workspace_limit` says what they copy)."""

    last_bytes: int
    peak_bytes: int
    total_bytes: int
    calls: int


@_not_compiled
def workspace_stats() -> WorkspaceStats:
    """Scratch bytes recorded by the transposition ops since the last :func:`reset_workspace_stats`."""
    return WorkspaceStats(*[int(v) for v in _ops._workspace_stats()])


@_not_compiled
def reset_workspace_stats() -> None:
    """Zero the counters that :func:`workspace_stats` reports."""
    _ops._reset_workspace_stats()


def built_with_gpu() -> bool:
    """Whether this build of the library carries GPU (CUDA or HIP) kernels."""
    return bool(_ops._built_with_gpu())


def _library_path() -> str:
    return _C.__file__


def get_library_path() -> str:
    """Path of the compiled library, for ``torch.ops.load_library`` in processes that run TorchScript or call
    ``torch.ops.inplace.*`` without importing the package (importing it afterwards is fine; the Python-side
    registrations -- vmap rules, fake kernels -- come with the import)."""
    return os.path.abspath(_library_path())
