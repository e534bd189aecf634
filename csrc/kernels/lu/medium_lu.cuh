// Batched LU factorization and inversion of medium matrices (32 < n <= 64; any 2 <= n <= 64 works) in shared memory:
// one matrix per thread block, the whole matrix in the block's shared memory, n a run-time argument.
//
// The register kernels of small_lu.cuh hold a row per lane and stop at n = 32 (a row of 64 float64 would take 128
// registers per lane); torch.linalg's batched paths for these sizes go through MAGMA / cuBLAS. Here a block of
// kMediumThreads threads keeps the matrix (row stride n | 1: a column read by the warp's lanes is free of bank
// conflicts for 4-byte elements) and, at step k:
//   1. every warp finds the pivot of column k itself (rows k..n-1, a warp-wide arg-max of LAPACK's measure, ties to
//      the first row as in i?amax), so that no barrier is needed to share it;
//   2. warp 0 copies the pivot row to a row buffer (scaled by the pivot's reciprocal for the inverse); barrier;
//   3. warp w updates rows w, w + W, ...: each row reads itself (the pivot row's old place, p, reads row k instead:
//      LAPACK's interchange of rows k and p happens inside the update, and the warp of row p also writes row k from
//      the buffer); barrier.
// LU: LAPACK getrf (right-looking, partial pivoting, ipiv 1-based, info = first zero pivot; a zero pivot column is
// left unscaled). Inverse: Gauss-Jordan with the same row interchanges (the candidates of step k are the rows that
// have not been pivot rows, so the pivots and info are getrf's), column k of the storage reused for column k of the
// inverse; the interchanges' column permutation is applied while the result goes out.
// `in` may equal `out`: a block reads its whole matrix before it writes any of it.
#pragma once

#include "kernels/lu/small_lu.cuh"

namespace torch_inplace {
namespace kernels {
namespace lu {

constexpr int kMediumMaxN = 64;
constexpr int kMediumThreads = 256;
constexpr int kMediumSlots = (kMediumMaxN + kWarpSize - 1) / kWarpSize;  // columns / candidate rows per lane

constexpr int medium_ld(int n) { return n | 1; }  // the tile's row stride

// Shared memory of one block: the matrix (n rows of medium_ld(n) elements), the row buffer (kMediumMaxN elements),
// then the inverse's pivots and column permutation (kMediumMaxN ints each).
template <typename T>
struct MediumSmem {
  static constexpr int ints_offset(int n) {
    return round_up((n * medium_ld(n) + kMediumMaxN) * static_cast<int>(sizeof(T)), 16);
  }
  static constexpr int bytes(int n) { return ints_offset(n) + 2 * kMediumMaxN * 4; }
  T* a;
  T* prow;
  int* piv;
  int* perm;
  TI_DEVICE MediumSmem(unsigned char* base, int n) {
    a = reinterpret_cast<T*>(base);
    prow = a + n * medium_ld(n);
    piv = reinterpret_cast<int*>(base + ints_offset(n));
    perm = piv + kMediumMaxN;
  }
};

template <typename T>
constexpr int medium_smem_bytes(int n) {
  return MediumSmem<T>::bytes(n);
}

// Step k's pivot row (k <= p < n) of the n x n matrix `a` (row stride ld): the largest abs1 in column k, ties to the
// smaller row (a NaN counts as the largest, so it propagates); `zero` when that largest is 0. Every lane of the warp
// must call it (full-warp shuffles); every lane gets the same answer.
template <typename T>
TI_DEVICE int medium_pivot(const T* a, int ld, int n, int k, int lane, bool& zero) {
  using M = decltype(abs1(T{}));
  M best = M(-1);
  int bi = n;
#pragma unroll
  for (int t = 0; t < kMediumSlots; ++t) {
    const int i = k + lane + t * kWarpSize;
    if (i < n) {
      M m = abs1(a[i * ld + k]);
      if (m != m) m = M(INFINITY);
      if (m > best) {
        best = m;
        bi = i;
      }
    }
  }
#pragma unroll
  for (int off = kWarpSize / 2; off > 0; off >>= 1) {
    const M om = shfl_xor(best, off);
    const int oi = shfl_xor(bi, off);
    if (om > best || (om == best && oi < bi)) {
      best = om;
      bi = oi;
    }
  }
  zero = best == M(0);
  return bi;
}

// Coalesced copies between the contiguous n x n matrix and the padded tile (warp per row, lanes along it).
template <typename T>
TI_DEVICE void medium_load(const T* src, T* a, int n, int ld, int warp, int lane, int warps) {
  for (int r = warp; r < n; r += warps) {
    for (int c = lane; c < n; c += kWarpSize) a[r * ld + c] = src[r * n + c];
  }
}

// LU with partial pivoting (getrf). Launch: blockDim.x = kMediumThreads, any grid (blocks take matrices blockIdx.x,
// blockIdx.x + gridDim.x, ...), medium_smem_bytes<T>(n) of dynamic shared memory; 2 <= n <= kMediumMaxN.
template <typename T>
__global__ void __launch_bounds__(kMediumThreads) medium_lu_kernel(const T* in, T* lu, int32_t* ipiv, int32_t* info,
                                                                   int64_t batch, int n) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const MediumSmem<T> sm(smem_raw, n);
  const int ld = medium_ld(n);
  T* a = sm.a;
  T* prow = sm.prow;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize, warps = blockDim.x / kWarpSize;
  const int64_t nn = static_cast<int64_t>(n) * n;
  for (int64_t mtx = blockIdx.x; mtx < batch; mtx += gridDim.x) {
    medium_load(in + mtx * nn, a, n, ld, warp, lane, warps);
    __syncthreads();
    int my_info = 0;
    for (int k = 0; k < n; ++k) {
      bool zero;
      const int p = medium_pivot(a, ld, n, k, lane, zero);
      if (zero && my_info == 0) my_info = k + 1;
      const T pv = a[p * ld + k];
      if (warp == 0) {
        for (int c = lane; c < n; c += kWarpSize) prow[c] = a[p * ld + c];
        if (lane == 0) ipiv[mtx * n + k] = p + 1;
      }
      __syncthreads();
      // A zero pivot column (all zero from row k on) is left as it is, as getrf does.
      const T rc = zero ? one_of(T{}) : recip(pv);
      for (int i = k + 1 + warp; i < n; i += warps) {
        const int s = i == p ? k : i;  // row p takes row k's place
        const T l = mul(a[s * ld + k], rc);
        T v[kMediumSlots];
#pragma unroll
        for (int t = 0; t < kMediumSlots; ++t) {
          const int c = lane + t * kWarpSize;
          if (c < n) v[t] = c < k ? a[s * ld + c] : (c == k ? l : fnms(a[s * ld + c], l, prow[c]));
        }
        warp_sync();  // every lane has read the rows (column k too, row k where i == p) before they change
#pragma unroll
        for (int t = 0; t < kMediumSlots; ++t) {
          const int c = lane + t * kWarpSize;
          if (c < n && (s != i || c >= k)) a[i * ld + c] = v[t];
          if (c < n && i == p) a[k * ld + c] = prow[c];
        }
      }
      __syncthreads();
    }
    for (int r = warp; r < n; r += warps) {
      for (int c = lane; c < n; c += kWarpSize) lu[mtx * nn + r * n + c] = a[r * ld + c];
    }
    if (threadIdx.x == 0) info[mtx] = my_info;
    __syncthreads();  // the tile is read out before the next matrix comes in
  }
}

// Inverse (getrf + getri semantics, info as getrf's, not written where `info` is null). Same launch as
// medium_lu_kernel.
template <typename T>
__global__ void __launch_bounds__(kMediumThreads) medium_inverse_kernel(const T* in, T* out, int32_t* info,
                                                                        int64_t batch, int n) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const MediumSmem<T> sm(smem_raw, n);
  const int ld = medium_ld(n);
  T* a = sm.a;
  T* prow = sm.prow;
  int* piv = sm.piv;
  int* perm = sm.perm;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize, warps = blockDim.x / kWarpSize;
  const int64_t nn = static_cast<int64_t>(n) * n;
  for (int64_t mtx = blockIdx.x; mtx < batch; mtx += gridDim.x) {
    medium_load(in + mtx * nn, a, n, ld, warp, lane, warps);
    __syncthreads();
    int my_info = 0;
    for (int k = 0; k < n; ++k) {
      bool zero;
      const int p = medium_pivot(a, ld, n, k, lane, zero);
      if (zero && my_info == 0) my_info = k + 1;
      if (warp == 0) {
        // The pivot row scaled by the reciprocal; its entry k becomes the reciprocal (column k of the inverse).
        const T rc = recip(a[p * ld + k]);
        for (int c = lane; c < n; c += kWarpSize) prow[c] = c == k ? rc : mul(a[p * ld + c], rc);
        if (lane == 0) piv[k] = p;
      }
      __syncthreads();
      for (int i = warp; i < n; i += warps) {
        if (i == k) {
          if (p == k) {
            for (int c = lane; c < n; c += kWarpSize) a[k * ld + c] = prow[c];
          }
          continue;  // else the warp of row p writes row k
        }
        const int s = i == p ? k : i;
        const T f = a[s * ld + k];
        T v[kMediumSlots];
#pragma unroll
        for (int t = 0; t < kMediumSlots; ++t) {
          const int c = lane + t * kWarpSize;
          if (c < n) v[t] = fnms(c == k ? zero_of(T{}) : a[s * ld + c], f, prow[c]);
        }
        warp_sync();  // every lane has read the rows (column k too, row k where i == p) before they change
#pragma unroll
        for (int t = 0; t < kMediumSlots; ++t) {
          const int c = lane + t * kWarpSize;
          if (c < n) {
            a[i * ld + c] = v[t];
            if (i == p) a[k * ld + c] = prow[c];
          }
        }
      }
      __syncthreads();
    }
    // Undo the interchanges on the columns: X[:, j] = a[:, perm[j]], perm the swaps (k, piv[k]) from the last.
    if (threadIdx.x == 0) {
      for (int c = 0; c < n; ++c) perm[c] = c;
      for (int k = n - 1; k >= 0; --k) {
        const int q = piv[k], t = perm[k];
        perm[k] = perm[q];
        perm[q] = t;
      }
      if (info != nullptr) info[mtx] = my_info;
    }
    __syncthreads();
    for (int r = warp; r < n; r += warps) {
      for (int c = lane; c < n; c += kWarpSize) out[mtx * nn + r * n + c] = a[r * ld + perm[c]];
    }
    __syncthreads();  // the tile is read out before the next matrix comes in
  }
}

}  // namespace lu
}  // namespace kernels
}  // namespace torch_inplace

#ifdef TORCH_INPLACE_HIP_CHECK
// CI compiles each header alone with hipcc for gfx90a: instantiate the kernels for every dtype.
namespace torch_inplace {
namespace kernels {
namespace lu {
#define TI_MEDIUM_INSTANTIATE(T)                                                                             \
  template __global__ void medium_lu_kernel<T>(const T*, T*, int32_t*, int32_t*, int64_t, int);             \
  template __global__ void medium_inverse_kernel<T>(const T*, T*, int32_t*, int64_t, int);
TI_MEDIUM_INSTANTIATE(float)
TI_MEDIUM_INSTANTIATE(double)
TI_MEDIUM_INSTANTIATE(Cplx<float>)
TI_MEDIUM_INSTANTIATE(Cplx<double>)
#undef TI_MEDIUM_INSTANTIATE
}  // namespace lu
}  // namespace kernels
}  // namespace torch_inplace
#endif
