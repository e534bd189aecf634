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

// Every column step splits, for a panel of W columns starting at j0, into a per-column "fine" shift of less
// than W rows and one row permutation pi shared by the whole panel (paper 003 sec. 4.6: coarse + fine):
//   C2R pre-rotate   dst(k, j) = k - j/b        = pi(k - f_j),  f_j = j/b - j0/b,  pi(x) = x - j0/b
//   C2R col shuffle  dst(k, j) = q^-1(k - j)    = pi(k - f_j),  f_j = j - j0,      pi(x) = q^-1(x - j0)
//   R2C post-rotate  dst(k, j) = k + j/b        = pi(k + f_j),  f_j = j/b - j0/b,  pi(x) = x + j0/b
//   R2C inv shuffle  dst(k, j) = q(k) + j       = pi(k) + f_j,  f_j = j - j0,      pi(k) = q(k) + j0
// The cluster holds the whole panel (block r: rows [r*R, (r+1)*R)). The fine shift moves elements by < W rows,
// so it stays in the block's own shared memory except near block boundaries (the only distributed-shared-memory
// traffic); the permutation moves whole W-wide row segments and is applied through global addresses, so every
// global access is a W-element row segment. "Fine then permute" (first three): phase 1 stores row k's element j
// in slot k -/+ f_j, phase 2 writes slot x to global row pi(x). "Permute then fine" (the last): phase 1 fills
// slot x from global row pi^-1(x) = q^-1(x - j0), phase 2 writes global row i from slot i - f_j.
template <typename U>
struct PanelStep {
  const CatIdx<U>* P;
  int step;
  U j0s, j0m, c0;  // the panel's first (super-)column j0s, j0s mod m, j0s / b
  bool unit;       // no super-elements (k == 1) and the panel no wider than m: j - j0s is f_j of the shuffles
  TI_DEVICE U fine(U e) const {  // f_j mod m for element column e (super-column j = e / k)
    U r;
    if (unit) {
      if (step == kPreRotate || step == kPostRotate) return P->dm_b.div(e, &r) - c0;
      return e - j0s;
    }
    const U j = P->dm_k.div(e, &r);
    if (step == kPreRotate || step == kPostRotate) return P->dm_b.div(j, &r) - c0;  // < W/b + 1 <= m
    return P->dm_m.mod(j - j0s);
  }
  TI_DEVICE U pi(U x) const {  // row permutation of the fine-then-permute steps
    const U m = P->m;
    if (step == kPreRotate) return x >= c0 ? x - c0 : x + m - c0;
    if (step == kPostRotate) return add_mod<U>(x, c0, m);
    return P->q_inv(x >= j0m ? x - j0m : x + m - j0m);  // kColShuffle; also pi^-1 of kInvColShuffle
  }
};

#if !TI_HIP
template <typename T, typename U>
__global__ void __launch_bounds__(kColThreads) col_cluster_kernel(T* __restrict__ base, CatIdx<U> P, int step,
                                                                  int w_log2, uint32_t R, DivMod<uint32_t> dm_R,
                                                                  int64_t panels, int64_t total_panels) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  cg::cluster_group cluster = cg::this_cluster();
  const uint32_t rank = cluster.block_rank();
  const uint32_t cs = cluster.num_blocks();
  const int64_t cid = blockIdx.x / cs;
  const int64_t nclusters = gridDim.x / cs;
  const U m = P.m, n = P.nk;  // element columns
  const uint32_t W = 1u << w_log2;
  constexpr int K = 8;
  const uint32_t row0 = rank * R;
  const uint32_t rows = row0 >= m ? 0u : (m - row0 < R ? static_cast<uint32_t>(m - row0) : R);
  const uint32_t cnt = rows << w_log2;
  const bool permute_first = step == kInvColShuffle;
  // Every block of the cluster must be running before any of them touches another's shared memory
  // (racecheck: "located in a block that might not have entered yet").
  cluster.sync();
  const bool forward = step == kPostRotate || step == kInvColShuffle;  // fine shift adds f_j (else subtracts)
  // Slot of row d (any row of the panel): (rank, local row).
  auto slot = [&](U d, uint32_t* rr) {
    if (d >= row0 && d - row0 < R) {  // most moves stay in the block (the fine shift is < W rows)
      *rr = static_cast<uint32_t>(d - row0);
      return rank;
    }
    return dm_R.div(static_cast<uint32_t>(d), rr);
  };
  for (int64_t pnl = cid; pnl < total_panels; pnl += nclusters) {
    const int64_t k = pnl / panels;
    PanelStep<U> ps;
    ps.P = &P;
    ps.step = step;
    const U j0 = static_cast<U>((pnl - k * panels) << w_log2);
    U r0;
    ps.j0s = P.dm_k.div(j0, &r0);
    ps.j0m = P.dm_m.mod(ps.j0s);
    ps.c0 = P.dm_b.div(ps.j0s, &r0);
    ps.unit = P.k == 1 && W <= m;
    const uint32_t w = n - j0 < W ? static_cast<uint32_t>(n - j0) : W;
    T* A = base + k * static_cast<int64_t>(m) * n + j0;
    // Phase 1.
    for (uint32_t t0 = threadIdx.x; t0 < cnt; t0 += blockDim.x * K) {
      T v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        const uint32_t jj = t & (W - 1);
        if (t < cnt && jj < w) {
          const U x = row0 + (t >> w_log2);
          const U src = permute_first ? ps.pi(x) : x;
          v[s] = A[static_cast<int64_t>(src) * n + jj];
        }
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        const uint32_t jj = t & (W - 1);
        if (t < cnt && jj < w) {
          if (permute_first) {
            sm[t] = v[s];
          } else {
            const U x = row0 + (t >> w_log2);
            const U f = ps.fine(j0 + jj);
            const U d = forward ? add_mod<U>(x, f, m) : (x >= f ? x - f : x + m - f);
            uint32_t rr;
            const uint32_t rk = slot(d, &rr);
            T* dst = rk == rank ? sm : cluster.map_shared_rank(sm, rk);
            dst[(rr << w_log2) + jj] = v[s];
          }
        }
      }
    }
    cluster.sync();
    __syncthreads();  // implied by cluster.sync(); explicit for tools that track block barriers only
    // Phase 2.
    for (uint32_t t0 = threadIdx.x; t0 < cnt; t0 += blockDim.x * K) {
      T v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        const uint32_t jj = t & (W - 1);
        if (t < cnt && jj < w) {
          if (!permute_first) {
            v[s] = sm[t];
          } else {
            const U i = row0 + (t >> w_log2);
            const U f = ps.fine(j0 + jj);
            const U y = i >= f ? i - f : i + m - f;
            uint32_t rr;
            const uint32_t rk = slot(y, &rr);
            const T* src = rk == rank ? sm : cluster.map_shared_rank(sm, rk);
            v[s] = src[(rr << w_log2) + jj];
          }
        }
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        const uint32_t jj = t & (W - 1);
        if (t < cnt && jj < w) {
          const U x = row0 + (t >> w_log2);
          const U dst = permute_first ? x : ps.pi(x);
          A[static_cast<int64_t>(dst) * n + jj] = v[s];
        }
      }
    }
    cluster.sync();  // the panel's slots are free (and no block exits while others still use its memory)
    __syncthreads();
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
  const U n = P.nk, m = P.m;  // element columns
  const uint32_t j0 = rank * part;
  const uint32_t cnt = j0 >= n ? 0u : (n - j0 < part ? static_cast<uint32_t>(n - j0) : part);
  constexpr int K = 8;
  cluster.sync();  // all blocks of the cluster running before any remote shared-memory access
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
          U sub;
          const U j = P.dm_k.div(j0 + t, &sub);
          const U dst = (kC2R ? P.row_scatter2(i, j) : P.row_gather(i, j)) * P.k + sub;
          uint32_t off;
          const uint32_t rk = dm_part.div(static_cast<uint32_t>(dst), &off);
          T* remote = cluster.map_shared_rank(sm, rk);
          remote[off] = v[s];
        }
      }
    }
    cluster.sync();
    __syncthreads();
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
    __syncthreads();
  }
#endif
}
#endif  // !TI_HIP

}  // namespace kernels
}  // namespace torch_inplace

#ifdef TORCH_INPLACE_HIP_CHECK
// The cluster kernels are CUDA-only (sm_90 thread-block clusters); under HIP this header defines no kernels
// and the planner never selects them (DeviceCaps::max_cluster == 1), so there is nothing to instantiate.
#endif
