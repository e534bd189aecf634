// One column step of the Catanzaro decomposition in a single pass through distributed shared memory (Hopper
// thread-block clusters): a cluster holds a whole panel of m rows x W columns on chip, spread over its blocks
// (block r holds rows [r*R, (r+1)*R)), so any row permutation of the panel - the coarse and fine rotations
// and the shared row permutation q of paper 003 sec. 4.6-4.7 together - is one coalesced read and one coalesced
// write of the panel, with no cycle following and no scratch. CUDA sm_90+ only; elsewhere the universal column
// kernels of catanzaro.cuh run instead.
#pragma once

#include "kernels/transpose/catanzaro.cuh"

#if !TI_HIP
#include <cooperative_groups.h>
#endif

namespace torch_inplace {
namespace kernels {

#if !TI_HIP
// step: a ColStep. Panels are W (a power of two, 2^w_log2) columns wide; `panels` per matrix; R rows per block.
template <typename T, typename U>
__global__ void __launch_bounds__(kColThreads) col_cluster_kernel(T* __restrict__ base, CatIdx<U> P, int step, int w_log2, uint32_t R,
                                   DivMod<uint32_t> dm_R, int64_t panels, int64_t total_panels) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  cg::cluster_group cluster = cg::this_cluster();
  const uint32_t rank = cluster.block_rank();
  const uint32_t cs = cluster.num_blocks();
  const int64_t cid = blockIdx.x / cs;
  const int64_t nclusters = gridDim.x / cs;
  const U m = P.m, n = P.n;
  const uint32_t W = 1u << w_log2;
  constexpr int K = 8;
  const uint32_t row0 = rank * R;
  const uint32_t rows = row0 >= m ? 0u : (m - row0 < R ? static_cast<uint32_t>(m - row0) : R);
  const uint32_t cnt = rows << w_log2;
  for (int64_t pnl = cid; pnl < total_panels; pnl += nclusters) {
    const int64_t k = pnl / panels;
    const U j0 = static_cast<U>((pnl - k * panels) << w_log2);
    const uint32_t w = n - j0 < W ? static_cast<uint32_t>(n - j0) : W;
    T* A = base + k * static_cast<int64_t>(m) * n + j0;
    // Phase 1: read this block's rows of the panel and store each element straight into the slot of its
    // output row, wherever in the cluster that is (remote stores are posted: no round trip to wait for).
    for (uint32_t t0 = threadIdx.x; t0 < cnt; t0 += blockDim.x * K) {
      T v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        const uint32_t jj = t & (W - 1);
        if (t < cnt && jj < w) v[s] = A[static_cast<int64_t>(row0 + (t >> w_log2)) * n + jj];
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        const uint32_t jj = t & (W - 1);
        if (t < cnt && jj < w) {
          const U d = col_dst<U>(P, step, static_cast<U>(row0 + (t >> w_log2)), j0 + jj);
          uint32_t rr;
          const uint32_t rk = dm_R.div(static_cast<uint32_t>(d), &rr);
          T* remote = cluster.map_shared_rank(sm, rk);
          remote[(rr << w_log2) + jj] = v[s];
        }
      }
    }
    cluster.sync();
    // Phase 2: write this block's own rows from its own shared memory.
    for (uint32_t t0 = threadIdx.x; t0 < cnt; t0 += blockDim.x * K) {
      T v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        if (t < cnt) v[s] = sm[t];
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        const uint32_t jj = t & (W - 1);
        if (t < cnt && jj < w) A[static_cast<int64_t>(row0 + (t >> w_log2)) * n + jj] = v[s];
      }
    }
    cluster.sync();  // the panel's slots are free (and no block exits while others still read its memory)
  }
#endif
}

// Row shuffle of rows longer than one block's shared memory: a cluster holds one row at a time, block r its
// elements [r*part, (r+1)*part); every output element gathers its source from whichever block holds it.
template <typename T, typename U, bool kC2R>
__global__ void __launch_bounds__(kColThreads)
    row_shuffle_cluster_kernel(T* __restrict__ base, CatIdx<U> P, int64_t total_rows, uint32_t part,
                               DivMod<uint32_t> dm_part) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  cg::cluster_group cluster = cg::this_cluster();
  const uint32_t rank = cluster.block_rank();
  const uint32_t cs = cluster.num_blocks();
  const int64_t cid = blockIdx.x / cs;
  const int64_t nclusters = gridDim.x / cs;
  const U n = P.n, m = P.m;
  const uint32_t j0 = rank * part;
  const uint32_t cnt = j0 >= n ? 0u : (n - j0 < part ? static_cast<uint32_t>(n - j0) : part);
  constexpr int K = 8;
  for (int64_t row = cid; row < total_rows; row += nclusters) {
    T* g = base + row * static_cast<int64_t>(n) + j0;
    const U i = static_cast<U>(row % static_cast<int64_t>(m));
    // Scatter form (remote stores are posted): C2R sends (i, j) to d'_i(j) (eq. 24), R2C to d'^-1_i(j) (eq. 31).
    for (uint32_t t0 = threadIdx.x; t0 < cnt; t0 += blockDim.x * K) {
      T v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        if (t < cnt) v[s] = g[t];
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        if (t < cnt) {
          const U dst = kC2R ? P.row_scatter2(i, j0 + t) : P.row_gather(i, j0 + t);
          uint32_t off;
          const uint32_t rk = dm_part.div(static_cast<uint32_t>(dst), &off);
          T* remote = cluster.map_shared_rank(sm, rk);
          remote[off] = v[s];
        }
      }
    }
    cluster.sync();
    for (uint32_t t0 = threadIdx.x; t0 < cnt; t0 += blockDim.x * K) {
      T v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        if (t < cnt) v[s] = sm[t];
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        if (t < cnt) g[t] = v[s];
      }
    }
    cluster.sync();
  }
#endif
}
#endif  // !TI_HIP

}  // namespace kernels
}  // namespace torch_inplace
