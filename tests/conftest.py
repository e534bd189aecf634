import contextlib
import os
import random
import re
import sys
import zlib

import pytest
import torch

import torch_inplace  # noqa: F401  (registers torch.ops.inplace.*)

HAS_GPU = torch.cuda.is_available()


@pytest.fixture(autouse=True)
def _seeded_and_fresh_plan_cache(request):
    """Each test's global random streams (torch's, Python's) start from a seed of its own id, so a failure
    reproduces alone and in any order. Plans are cached per shape and read the planner's environment knobs when
    made: a test that sets knobs must not leave its plans to the next one (tests of the cache itself clear it and
    run their calls inside one test)."""
    seed = zlib.crc32(request.node.nodeid.encode())
    torch.manual_seed(seed)
    random.seed(seed)
    yield
    torch.ops.inplace._clear_plan_cache()

@contextlib.contextmanager
def num_threads(n):
    """torch's intra-op threads (the CPU kernels' at::parallel_for) set to n for the block, restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# One dtype per element size (bytes moved), plus the special ones the issue names.
DTYPE_BY_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.float32, 8: torch.float64, 16: torch.complex128}
ALL_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
              torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]


def devices():
    """CPU always; the GPU too where there is one (those cases carry the gpu marker)."""
    out = ["cpu"]
    if HAS_GPU:
        out.append(pytest.param("cuda", marks=pytest.mark.gpu))
    return out


def rand(shape, dtype, device="cpu", generator=None):
    """Random (never constant) data of any dtype, so unwritten or misplaced elements show."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool().to(device)
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=generator).to(device)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator).to(dtype).to(device)
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -(2**31)), min(info.max, 2**31 - 1)
    return torch.randint(lo, hi, shape, generator=generator, dtype=torch.int64).to(dtype).to(device)


def ref_transpose(x):
    """Out-of-place reference: a fresh contiguous copy of x.mT (never a view of x)."""
    return x.mT.clone(memory_format=torch.contiguous_format)


# ---- linear algebra ---------------------------------------------------------------------------------------------
LINALG_DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
needs_cuda = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA/ROCm device")
LINALG_DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.gpu, needs_cuda])]


def same_bits(a, b):
    """Bitwise equality (NaN payloads, inf and signed zeros included); complex as its real and imaginary parts."""
    a, b = (torch.view_as_real(t) if t.is_complex() else t for t in (a, b))
    if not a.is_floating_point():
        return torch.equal(a, b)
    as_int = {2: torch.int16, 4: torch.int32, 8: torch.int64}
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.contiguous().view(as_int[a.element_size()]),
                                                                      b.contiguous().view(as_int[b.element_size()]))


def graphed(fn, warmups=2):
    """fn() run `warmups` times on a side stream (allocator, plans, kernel attributes), then captured in a CUDA graph:
    (the graph, what the captured call returned, its outputs living in the graph's pool)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmups):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    return g, out


def well_conditioned(batch, n, dtype, device, seed=0):
    """randn + sqrt(2n) I with rows permuted, so partial pivoting must swap rows (and is exercised at every
    step), with well separated pivots on average."""
    g = torch.Generator().manual_seed(seed)
    real = torch.float32 if dtype in (torch.float32, torch.complex64) else torch.float64
    A = torch.randn(*batch, n, n, generator=g, dtype=real)
    if dtype.is_complex:
        A = torch.complex(A, torch.randn(*batch, n, n, generator=g, dtype=real))
    A = A + (2.0 * n) ** 0.5 * torch.eye(n, dtype=dtype)
    perm = torch.randperm(n, generator=g)
    return A[..., perm, :].contiguous().to(device)


def python_subprocess_env():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(torch_inplace.__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


PY = sys.executable


def cuda_kernels_launched(fn, pattern):
    """fn() and, in launch order, the match groups of `pattern` (a regex) in the names of the CUDA kernels that
    torch.profiler recorded while fn ran (the ops report no kernel of their own); names that do not match are left
    out."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA], acc_events=True) as prof:
        out = fn()
        torch.cuda.synchronize()
    events = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                    key=lambda e: e.time_range.start)
    found = [re.search(pattern, e.name) for e in events]
    return out, [m.groups() for m in found if m]
