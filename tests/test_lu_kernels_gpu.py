"""Every kernel variant of the small LU / inverse (rows per lane 1, 2, 3, 4; a lane per matrix, -3; the inverse's split
rows, -2; several warps per block) forced through the private tuning op, against LAPACK and against each other. A variant only changes which
lane holds which row (or which part of a row), never the arithmetic of an entry, so its results must equal the
one-row-per-lane kernel's bit for bit. The float64 inverse on the fp64 tensor cores (-4) sums its updates in another
order and is checked against LAPACK and torch.linalg instead. The shared-memory kernels of n > 32 (-5, medium_lu.cuh; forced at n <= 32)
order their arithmetic differently and are checked against LAPACK: pivots, info, P L U = A and A X = I."""

import os
import subprocess
import textwrap

import pytest
import torch

import torch_inplace.linalg as TL
from conftest import PY, cuda_kernels_launched, needs_cuda, python_subprocess_env, well_conditioned

pytestmark = [pytest.mark.gpu, needs_cuda]

KINDS = ("lu", "inverse")
SPLIT = -2  # split_inverse_kernel: rows split into two column parts (inverse only; n > 16, real types)
LANE = -3   # a lane per matrix (every row in one lane; real types, n <= 8)
CONFIGS = [(1, 1), (8, 1), (1, 2), (3, 2), (8, 2), (1, 3), (8, 3), (1, 4), (2, 4), (8, 4), (1, SPLIT), (3, SPLIT),
           (8, SPLIT), (1, LANE), (8, LANE)]


def kernel_of(kind, dtype, n, rows):
    """The kernel that `kind` ("lu" / "inverse") of real `dtype` at 1 <= n <= 32 launches under the forced rows code,
    as (name, template arguments) the way the profiler names it: ("small_lu_kernel", "float,5,3").
    _small_lu_tuning takes every code for every (dtype, n), and a code the (T, n) has no kernel for silently runs
    one row per lane (csrc/ops/lu.cpp, the comment of small_lu_tuning_op). What exists, in the order the launchers
    try it (csrc/ops/cuda/lu_launch.cuh, launch_lu and launch_inverse, lines 198-302):
    - n = 1: the elementwise one_by_one_kernel<T, Kind>, whatever the code (lines 201-202, 275-276);
    - SPLIT, inverse only: split_inverse_kernel<T, N, 2> where SplitGeometry<T, N, 2>::kSupported, i.e. a real type,
      N > 16 lanes per column part and ceil(N / 16) <= 4 rows per lane (csrc/kernels/lu/small_lu.cuh, SplitGeometry);
    - LANE: small_*_kernel<T, N, N> for real types with 2 <= N <= 8 (lu_launch.cuh, lane_supported);
    - rows R = 2, 3, 4: small_*_kernel<T, N, R> where rows_supported<T, N, R>(): a real type, R < 2 N and
      R * N * sizeof(T) <= 512 bytes (576 for R = 4) (small_lu.cuh, rows_supported);
    - anything else: small_*_kernel<T, N, 1>."""
    assert dtype in (torch.float32, torch.float64) and 1 <= n <= 32
    t = "float" if dtype == torch.float32 else "double"
    size = 4 if dtype == torch.float32 else 8
    if n == 1:
        return ("one_by_one_kernel", f"{t},{KINDS.index(kind)}")
    small = "small_lu_kernel" if kind == "lu" else "small_inverse_kernel"
    if rows == SPLIT:
        assert kind == "inverse"  # _small_lu_tuning refuses split rows for the LU
        if n > 16 and (n + 15) // 16 <= 4:
            return ("split_inverse_kernel", f"{t},{n},2")
    elif rows == LANE:
        if 2 <= n <= 8:
            return (small, f"{t},{n},{n}")
    elif rows in (2, 3, 4):
        if rows < 2 * n and rows * n * size <= (576 if rows == 4 else 512):
            return (small, f"{t},{n},{rows}")
    else:
        assert rows == 1, rows
    return (small, f"{t},{n},1")


def variant_exists(dtype, n, rows):
    """Whether forcing `rows` runs a kernel of its own (for the inverse; the LU too unless SPLIT, whose LU runs one row
    per lane in run_with) rather than falling back to the one-row kernel."""
    if rows == 1:
        return True
    kinds = ("inverse",) if rows == SPLIT else KINDS
    return all(kernel_of(k, dtype, n, rows) != kernel_of(k, dtype, n, 1) for k in kinds)


def kernels_launched(fn):
    """fn() and the (name, template arguments) of the library's LU kernels it launched, in launch order: the CUDA
    kernels torch.profiler records, e.g. ("small_lu_kernel", "float,5,3")."""
    out, found = cuda_kernels_launched(fn, r"torch_inplace::kernels::lu::(\w+)<([^<>]*)>")
    return out, [(name, args.replace(" ", "")) for name, args in found]


RATIO_MAX = 30  # LAPACK's threshold for its test ratios (xGET01, xGET03)


def _wide(t):
    """t in float64 (complex128 for complex types): the residuals below are formed without rounding of their own."""
    return t.to(torch.complex128 if t.is_complex() else torch.float64)


def _norm(M):
    return torch.linalg.matrix_norm(M, ord=float("inf"))


def inverse_ratio(A, X):
    """LAPACK's test ratio of an inverse (xGET03, in the infinity norm), per matrix: ||A X - I|| / (n ||A|| ||X|| eps),
    eps that of A's dtype. A backward-stable inverse keeps it of order one however ill-conditioned A is."""
    n = A.shape[-1]
    A64, X64 = _wide(A), _wide(X)
    eye = torch.eye(n, dtype=A64.dtype, device=A.device)
    return _norm(A64 @ X64 - eye) / (n * _norm(A64) * _norm(X64) * torch.finfo(A.dtype).eps)


def lu_ratio(A, LU, piv):
    """LAPACK's test ratio of an LU factorization (xGET01, in the infinity norm), per matrix:
    ||P L U - A|| / (n ||A|| eps), eps that of A's dtype."""
    n = A.shape[-1]
    P, L, U = torch.lu_unpack(_wide(LU), piv)
    A64 = _wide(A)
    return _norm(P @ L @ U - A64) / (n * _norm(A64) * torch.finfo(A.dtype).eps)


def inverse_error_ratio(A, X):
    """X against torch.linalg.inv of A in float64 on the CPU, per matrix and scaled by what A's conditioning allows:
    ||X - inv(A)|| / (n cond(A) ||inv(A)|| eps) with cond(A) = ||A|| ||inv(A)||, eps that of A's dtype."""
    n = A.shape[-1]
    A64 = _wide(A).cpu()
    ref = torch.linalg.inv(A64)
    err = _norm(_wide(X).cpu() - ref)
    return err / (n * _norm(A64) * _norm(ref) ** 2 * torch.finfo(A.dtype).eps)


def assert_ratio(ratio, what):
    """Every matrix's ratio at most RATIO_MAX (a NaN fails)."""
    worst = ratio.max().item()
    at = int(ratio.nan_to_num(float("inf")).argmax())
    assert worst <= RATIO_MAX, f"{what}: worst ratio {worst:.3g} (matrix {at} of those checked)"


def run_with(dtype, n, warps, rows, A):
    """lu_factor_ex, batched_inverse_ex and both in-place ops with (warps, rows) forced; rows None: no override."""
    tune = rows is not None
    if tune:
        for kind in KINDS:
            torch.ops.inplace._small_lu_tuning(kind, dtype, n, warps, 1 if (kind == "lu" and rows == SPLIT) else rows)
    try:
        LU, piv, info = TL.lu_factor_ex(A)
        X, xinfo = TL.batched_inverse_ex(A)
        B = A.clone()
        TL.inverse_(B)
        C = A.clone()
        cpiv = TL.lu_factor_(C)
        torch.cuda.synchronize()
    finally:
        if tune:
            for kind in KINDS:
                torch.ops.inplace._small_lu_tuning(kind, dtype, n, 0, 0)
    assert same(B, X) and same(C, LU) and torch.equal(cpiv, piv)
    return LU, piv, info, X, xinfo


def same(a, b):
    """Bitwise equal, NaN and inf included (singular matrices invert to inf / NaN)."""
    if a.is_complex() and b.is_complex():
        a, b = torch.view_as_real(a), torch.view_as_real(b)
    if not a.is_floating_point():
        return torch.equal(a, b)
    masks_equal = torch.equal(a.isnan(), b.isnan()) and torch.equal(a.isinf(), b.isinf())
    return masks_equal and torch.equal(a.nan_to_num(0.0, 1.0, -1.0), b.nan_to_num(0.0, 1.0, -1.0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", range(1, 33))
def test_variants_match_lapack_and_each_other(dtype, n):
    # 1237 matrices: the last warp of the grid holds a partial group of matrices for every geometry.
    A = well_conditioned((1237,), n, dtype, "cuda", seed=n)
    A[5] = 0                       # singular: info 1
    A[7, :, n // 2] = 0            # singular at step n // 2 + 1
    LU_ref, piv_ref, info_ref = torch.linalg.lu_factor_ex(A.cpu())
    assert info_ref[5] == 1 and info_ref[7] == n // 2 + 1
    base, ran = kernels_launched(lambda: run_with(dtype, n, 1, 1, A))
    # run_with launches lu_factor_ex, batched_inverse_ex, inverse_ and lu_factor_, in that order
    lu_k, inv_k = kernel_of("lu", dtype, n, 1), kernel_of("inverse", dtype, n, 1)
    assert ran == [lu_k, inv_k, inv_k, lu_k], ran
    LU, piv, info, X, xinfo = base
    assert torch.equal(info.cpu(), info_ref) and torch.equal(xinfo.cpu(), info_ref)
    ok = info_ref == 0
    okc = ok.cuda()
    if dtype == torch.float64:
        assert torch.equal(piv.cpu()[ok], piv_ref[ok])
    assert_ratio(lu_ratio(A[okc], LU[okc], piv[okc]), "P L U = A")
    assert_ratio(inverse_ratio(A[okc], X[okc]), "A X = I")
    assert_ratio(inverse_error_ratio(A[okc], X[okc]), "X = torch.linalg.inv(A)")
    tried = {(1, lu_k, inv_k)}
    for warps, rows in CONFIGS[1:]:
        if not variant_exists(dtype, n, rows):
            continue  # _small_lu_tuning would run the one-row kernel: the base compared with itself
        lu_k = kernel_of("lu", dtype, n, 1 if rows == SPLIT else rows)
        inv_k = kernel_of("inverse", dtype, n, rows)
        key = (warps if n > 1 else 1, lu_k, inv_k)  # n = 1: the elementwise kernel, whatever the warps
        if key in tried:
            continue  # also: a lane per matrix at n = 2..4 is the kernel of n rows per lane
        tried.add(key)
        other, ran = kernels_launched(lambda: run_with(dtype, n, warps, rows, A))
        assert ran == [lu_k, inv_k, inv_k, lu_k], f"warps={warps} rows={rows} ran {ran}"
        for name, a, b in zip(("LU", "pivots", "info", "inverse", "inverse info"), base, other):
            assert same(a, b), f"{name} differs with warps={warps} rows={rows}"


MEDIUM = -5  # the shared-memory kernels (medium_lu.cuh): what runs at 32 < n <= 64; forced here at n <= 32


def run_medium(dtype, n, A):
    """The ops through the medium kernels: what runs past n = 32, forced (MEDIUM) at n <= 32."""
    return run_with(dtype, n, 1, MEDIUM if n <= 32 else None, A)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
@pytest.mark.parametrize("n", [2, 3, 17, 32, 33, 37, 48, 49, 63, 64])
def test_medium_kernels_match_lapack(dtype, n):
    # 4500 matrices at n = 33 and 64: more than the grid (32 blocks per SM), so blocks loop over the batch.
    batch = 4500 if n in (33, 64) else 300
    A = well_conditioned((batch,), n, dtype, "cuda", seed=n)
    A[5] = 0                       # singular: info 1
    A[7, :, n // 2] = 0            # singular at step n // 2 + 1
    LU_ref, piv_ref, info_ref = torch.linalg.lu_factor_ex(A.cpu())
    assert info_ref[5] == 1 and info_ref[7] == n // 2 + 1
    LU, piv, info, X, xinfo = run_medium(dtype, n, A)
    assert torch.equal(info.cpu(), info_ref) and torch.equal(xinfo.cpu(), info_ref)
    ok = info_ref == 0
    if dtype in (torch.float64, torch.complex128):
        assert torch.equal(piv.cpu()[ok], piv_ref[ok])
    assert torch.equal(piv[5].cpu(), torch.arange(1, n + 1, dtype=torch.int32))  # zero columns: no interchange
    assert torch.equal(LU[5], torch.zeros_like(LU[5]))
    okc = ok.cuda()
    assert_ratio(lu_ratio(A[okc], LU[okc], piv[okc]), "P L U = A")
    assert_ratio(inverse_ratio(A[okc], X[okc]), "A X = I")
    assert_ratio(inverse_error_ratio(A[okc], X[okc]), "X = torch.linalg.inv(A)")


def test_medium_nan_inf_and_views():
    for n in (33, 64):
        A = well_conditioned((6,), n, torch.float64, "cuda", seed=n)
        A[0, 0, 0] = float("nan")
        A[1, n - 1, n - 1] = float("inf")
        LU, piv, info, X, xinfo = run_medium(torch.float64, n, A)
        assert LU[0].isnan().any() and X[0].isnan().any() and not LU[1].isfinite().all()
        # the other matrices of the batch are untouched by their neighbours
        torch.testing.assert_close(X[2:], torch.linalg.inv(A[2:]), rtol=1e-10, atol=1e-10)
        # a batched, transposed view goes through a contiguous copy and leaves its base alone
        base = well_conditioned((2, 3), n, torch.complex128, "cuda", seed=n + 1)
        view = base.mT
        keep = base.clone()
        torch.testing.assert_close(TL.batched_inverse(view), torch.linalg.inv(view), rtol=1e-10, atol=1e-10)
        assert torch.equal(base, keep)


TENSOR_CORES = -4  # the float64 inverse on the fp64 tensor cores (dmma_inverse.cuh): its own rounding


def tensor_cores():
    return torch.cuda.get_device_capability()[0] >= 8


def inverse_with(n, warps, rows, A):
    """batched_inverse_ex, batched_inverse and inverse_ of float64 A with (warps, rows) forced for the inverse."""
    torch.ops.inplace._small_lu_tuning("inverse", torch.float64, n, warps, rows)
    try:
        X, info = TL.batched_inverse_ex(A)
        Xn = TL.batched_inverse(A)
        B = A.clone()
        TL.inverse_(B)
        torch.cuda.synchronize()
    finally:
        torch.ops.inplace._small_lu_tuning("inverse", torch.float64, n, 0, 0)
    assert same(B, X) and same(Xn, X)
    return X, info


@pytest.mark.parametrize("n", range(9, 33))
def test_tensor_core_inverse_matches_lapack(n):
    """The float64 inverse on the fp64 tensor cores (blocked Gauss-Jordan, one matrix per warp) at every n it covers:
    infos equal LAPACK's (an all-zero matrix, a zero column), A X = I, X = torch.linalg.inv(A); its warps per block
    change only the grid (the same bits); in place, without info and on data 8 bytes off 16-byte alignment alike."""
    if not tensor_cores():
        pytest.skip("no fp64 tensor cores (compute capability below 8.0)")
    batch = 1237  # the last block partial at every warps count
    A = well_conditioned((batch,), n, torch.float64, "cuda", seed=300 + n)
    A[5] = 0                       # singular: info 1
    A[7, :, n // 2] = 0            # singular at step n // 2 + 1
    info_ref = torch.linalg.lu_factor_ex(A.cpu()).info
    ok = (info_ref == 0).cuda()
    X, info = inverse_with(n, 1, TENSOR_CORES, A)
    assert torch.equal(info.cpu(), info_ref)
    assert_ratio(inverse_ratio(A[ok], X[ok]), "A X = I")
    assert_ratio(inverse_error_ratio(A[ok], X[ok]), "X = torch.linalg.inv(A)")
    for warps in (3, 8):
        Xw, infow = inverse_with(n, warps, TENSOR_CORES, A)
        assert same(Xw, X) and torch.equal(infow, info)
    store = torch.empty(batch * n * n + 1, dtype=torch.float64, device="cuda")
    Au = store[1:].view(batch, n, n)
    Au.copy_(A)
    assert Au.data_ptr() % 16 != 0
    Xu, infou = inverse_with(n, 8, TENSOR_CORES, Au)
    assert same(Xu, X) and torch.equal(infou, info)


def test_tensor_core_inverse_nan_inf_and_fallback(monkeypatch):
    """NaN / inf inputs poison only their own matrices; TORCH_INPLACE_LU_DMMA_INVERSE=0 (as on GPUs without fp64
    tensor cores) runs the table's kInv*NoTensorCores pick, bit for bit the kernel that pick forces."""
    if not tensor_cores():
        pytest.skip("no fp64 tensor cores (compute capability below 8.0)")
    for n in (9, 20, 32):
        A = well_conditioned((40,), n, torch.float64, "cuda", seed=n)
        A[0, 0, 0] = float("nan")
        A[1, n - 1, n - 1] = float("inf")
        X, info = inverse_with(n, 2, TENSOR_CORES, A)
        assert X[0].isnan().any() and not X[1].isfinite().all()
        torch.testing.assert_close(X[2:], torch.linalg.inv(A[2:]), rtol=1e-10, atol=1e-10)
    # n = 24: the table's tensor-core pick; n = 28: split rows at 8 warps without the tensor cores
    for n, warps, rows in ((24, 8, 1), (28, 8, SPLIT)):
        A = well_conditioned((300,), n, torch.float64, "cuda", seed=n)
        X_tc = TL.batched_inverse(A)
        monkeypatch.setenv("TORCH_INPLACE_LU_DMMA_INVERSE", "0")
        X_plain = TL.batched_inverse(A)
        monkeypatch.delenv("TORCH_INPLACE_LU_DMMA_INVERSE")
        X_forced, _ = inverse_with(n, warps, rows, A)
        assert same(X_plain, X_forced)
        assert not same(X_tc, X_plain)  # the table's pick ran on the tensor cores (other rounding)
        torch.testing.assert_close(X_tc, X_plain, rtol=1e-10, atol=1e-10)


def test_nan_inf_every_variant():
    for n in (5, 16, 20, 32):
        A = well_conditioned((40,), n, torch.float64, "cuda", seed=n)
        A[0, 0, 0] = float("nan")
        A[1, n - 1, n - 1] = float("inf")
        outs = [run_with(torch.float64, n, 2, rows, A) for rows in (1, 2, 3, 4, SPLIT, LANE)]
        for o in outs[1:]:
            for a, b in zip(outs[0], o):
                assert same(a, b)


# Small tiles run persistent (the grid capped at the resident blocks, each warp looping over tiles and fetching its
# next tile while it works): batches large enough for several turns per warp, every rows-per-lane variant, against
# one warp per tile (TORCH_INPLACE_LU_PERSIST=0), the loop without the prefetch and a grid of three blocks, bit for
# bit; an input whose data is not 16-byte aligned takes the unfetched path.
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 12, 18])
def test_persistent_turns_match_one_turn_per_warp(dtype, n, monkeypatch):
    batch = 300_001 if n <= 8 else 90_001
    A = well_conditioned((batch,), n, dtype, "cuda", seed=100 + n)
    A[3] = 0  # singular: info set, no crash
    keys = ("TORCH_INPLACE_LU_PERSIST", "TORCH_INPLACE_LU_PREFETCH", "TORCH_INPLACE_LU_GRID_CAP")
    modes = [{}, {"TORCH_INPLACE_LU_PERSIST": "0"}, {"TORCH_INPLACE_LU_PREFETCH": "0"},
             {"TORCH_INPLACE_LU_GRID_CAP": "3"}]
    for rows in (1, 2, 3, 4, LANE):
        outs = []
        for env in modes:
            for key in keys:
                monkeypatch.delenv(key, raising=False)
            for key, value in env.items():
                monkeypatch.setenv(key, value)
            outs.append(run_with(dtype, n, 1, rows, A))
        for env, other in zip(modes[1:], outs[1:]):
            for name, a, b in zip(("LU", "pivots", "info", "inverse", "inverse info"), outs[0], other):
                assert same(a, b), f"{name} differs with rows={rows} under {env}"
    for key in keys:
        monkeypatch.delenv(key, raising=False)
    LU, piv, info, X, xinfo = outs[0]
    assert int(info[3]) == 1 and int(xinfo[3]) == 1 and int(info.ne(0).sum()) == 1
    # The one-turn kernels are checked against LAPACK above; here LAPACK's residual ratios on every matrix (they do not
    # depend on conditioning: among 300,000 random matrices a few are ill-conditioned enough to miss any absolute
    # tolerance on A X - I).
    ok = info == 0
    assert_ratio(inverse_ratio(A[ok], X[ok]), "A X = I")
    assert_ratio(lu_ratio(A[ok], LU[ok], piv[ok]), "P L U = A")
    # Unaligned data (a view one element in): same results as the aligned copy.
    store = torch.empty(batch * n * n + 1, dtype=dtype, device="cuda")
    U = store[1:].view(batch, n, n)
    U.copy_(A)
    assert U.data_ptr() % 16 != 0
    Xu, xinfo_u = TL.batched_inverse_ex(U)
    LUu, pivu, infou = TL.lu_factor_ex(U)
    assert same(Xu, X) and same(xinfo_u, xinfo) and same(LUu, LU) and torch.equal(pivu, piv)


def same_c(a, b):
    """same() for complex tensors too (their real and imaginary parts)."""
    return same(torch.view_as_real(a), torch.view_as_real(b)) if a.is_complex() else same(a, b)


# n = 1 runs an elementwise kernel (16 bytes per lane): the factor is A itself with pivot 1, the inverse 1 / a
# (correctly rounded, as torch.reciprocal), info 1 exactly where a == 0 (either sign; NaN is no zero pivot).
# Batches that end mid-chunk, unaligned views (the per-element path) and in place.
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
def test_one_by_one_elementwise(dtype):
    special = [0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e-40, -3e-310, 1e30, -2.5, 1.0]
    for batch in (1, 3, 1001, 65_539):
        real = torch.float32 if dtype in (torch.float32, torch.complex64) else torch.float64
        vals = torch.randn(batch, dtype=real, device="cuda")
        vals[: min(batch, len(special))] = torch.tensor(special[:batch], dtype=real)
        A = (vals if not dtype.is_complex else torch.complex(vals, vals.flip(0))).view(batch, 1, 1)
        store = torch.empty(batch + 1, dtype=dtype, device="cuda")
        for M in (A.contiguous(), store[1:].view(batch, 1, 1).copy_(A)):
            X, xinfo = TL.batched_inverse_ex(M)
            LU, piv, info = TL.lu_factor_ex(M)
            zero = (M == 0).view(batch).int()
            assert torch.equal(xinfo, zero) and torch.equal(info, zero)
            assert torch.equal(piv, torch.ones(batch, 1, dtype=torch.int32, device="cuda"))
            assert same_c(LU, M)
            if dtype.is_complex:
                ok = M.abs().isfinite() & (M != 0) & (M.abs() > 1e-30) & (M.abs() < 1e30)
                torch.testing.assert_close(X[ok], torch.linalg.inv(M[ok.view(batch)]).view(-1))
            else:
                assert same(X, torch.reciprocal(M))
            B = M.clone()
            assert TL.inverse_(B) is B and same_c(B, X)
            C = M.clone()
            assert torch.equal(TL.lu_factor_(C), piv) and same_c(C, M)


# The unit tile (float32 / float64 / complex64, even n <= 16 but where Geometry::kUnitTile says otherwise, several
# lanes per matrix) stages a warp's matrices as 16-byte chunks where its tile is whole and 16-byte aligned, element by
# element otherwise (the grid's last, partial tile; unaligned views), and reads rows in units; the other even n here
# run the element tile through the same checks. Every rows variant, aligned or not, must give the bits of the aligned
# one-row kernel, and LAPACK's pivots and residuals.
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
@pytest.mark.parametrize("n", [2, 4, 6, 8, 10, 12, 14, 16])
def test_unit_tile_staging(dtype, n):
    batch = 4099
    A = well_conditioned((batch,), n, dtype, "cuda", seed=300 + n)
    A[2] = 0
    store = torch.empty(batch * n * n + 1, dtype=dtype, device="cuda")
    Au = store[1:].view(batch, n, n).copy_(A)
    assert Au.data_ptr() % 16 != 0
    rows_variants = (1, 2, 3, 4) if not dtype.is_complex else (1,)
    outs = [run_with_c(dtype, n, warps, rows, M) for rows in rows_variants for warps in (1, 8) for M in (A, Au)]
    for o in outs[1:]:
        for name, a, b in zip(("LU", "pivots", "info", "inverse", "inverse info"), outs[0], o):
            assert same_c(a, b), f"{name} differs"
    LU, piv, info, X, xinfo = outs[0]
    LU_ref, piv_ref, info_ref = torch.linalg.lu_factor_ex(A.cpu())
    assert torch.equal(info.cpu(), info_ref) and torch.equal(xinfo.cpu(), info_ref) and int(info_ref[2]) == 1
    ok = (info_ref == 0).cuda()
    assert_ratio(inverse_ratio(A[ok], X[ok]), "A X = I")
    assert_ratio(lu_ratio(A[ok], LU[ok], piv[ok]), "P L U = A")


def run_with_c(dtype, n, warps, rows, A):
    """run_with for complex tensors too (bitwise comparisons of their real and imaginary parts)."""
    for kind in KINDS:
        torch.ops.inplace._small_lu_tuning(kind, dtype, n, warps, rows)
    try:
        LU, piv, info = TL.lu_factor_ex(A)
        X, xinfo = TL.batched_inverse_ex(A)
        B = A.clone()
        TL.inverse_(B)
        torch.cuda.synchronize()
    finally:
        for kind in KINDS:
            torch.ops.inplace._small_lu_tuning(kind, dtype, n, 0, 0)
    assert same_c(B, X)
    return LU, piv, info, X, xinfo


def test_medium_past_the_shared_memory_limit_goes_to_linalg():
    """Where a block's shared memory cannot hold the medium kernels' tile (AMD's 64 KiB: complex128 at n = 64 needs
    68 KB), the ops hand the matrices to torch.linalg, as past n = 64; the launcher never asks for more than the
    device has. TORCH_INPLACE_LU_SMEM_LIMIT lowers the device's limit to AMD's here (read once: a subprocess)."""
    script = textwrap.dedent(r"""
        import re, torch, torch_inplace.linalg as TL
        from conftest import cuda_kernels_launched, well_conditioned
        def medium_launched(fn):
            return cuda_kernels_launched(fn, r"torch_inplace::kernels::lu::(medium_\w+)")
        for n, dtype, fits in [(64, torch.complex128, False), (63, torch.complex128, True),
                               (64, torch.complex64, True), (64, torch.float64, True)]:
            A = well_conditioned((40,), n, dtype, "cuda", seed=n)
            for name, f, ref in [("inverse", TL.batched_inverse, torch.linalg.inv),
                                 ("inverse_", lambda a: TL.inverse_(a.clone()), torch.linalg.inv),
                                 ("lu", lambda a: TL.lu_factor(a)[0], lambda a: torch.linalg.lu_factor(a)[0]),
                                 ("lu_", lambda a: (lambda B: (TL.lu_factor_(B), B)[1])(a.clone()),
                                  lambda a: torch.linalg.lu_factor(a)[0])]:
                out, ran = medium_launched(lambda: f(A))
                assert bool(ran) == fits, (n, dtype, name, ran)
                torch.testing.assert_close(out, ref(A), rtol=1e-4, atol=1e-4)
        print("ok")
    """)
    env = python_subprocess_env()
    env["TORCH_INPLACE_LU_SMEM_LIMIT"] = str(64 * 1024)
    env["PYTHONPATH"] = os.path.dirname(os.path.abspath(__file__)) + os.pathsep + env["PYTHONPATH"]
    r = subprocess.run([PY, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
