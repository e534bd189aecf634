// Batched inverse of one matrix per 32 lanes for 17 <= n <= 32, the lanes as a 4 x 8 grid (rows code
// lu::kGridRows; real types).
//
// Why: small_inverse_kernel with a row per lane (n > 16) hands each step's pivot row to every lane through shared
// memory: the pivot lane writes n entries, every lane reads all n. For float64 that is n / 2 16-byte writes and n / 2
// broadcast reads (2 wavefronts each) per step, about 1.5 n^2 wavefronts per matrix, and the shared-memory pipe
// bounds the kernel (ncu, float64 n = 20: 1204 wavefronts per matrix, mio_throttle and short_scoreboard stalls).
// Here lane (rg, cg) = (lane / 8, lane % 8) holds rows rg, rg + 4, ... and columns cg, cg + 8, ... of its matrix
// (RS x CS entries, RS = ceil(n / 4), CS = ceil(n / 8)), and a step needs of the pivot row only the lane's CS
// columns and of column k only its RS rows: 2 (RS + CS) 32-bit shuffles per step instead of about 1.5 n wavefronts
// (float64 n = 20: 16 against 30), and the idle lanes of a row per lane (12 of 32 at n = 20) take part.
//
// The arithmetic of every entry is that of small_inverse_kernel (same pivot keys, reciprocal, multipliers and fused
// multiply-adds in the same order), so the results are the same bits; tests/test_lu_kernels_gpu.py checks that.
//
// Step k (k and the column's owner cgk = k % 8, slot tk = k / 8 are compile-time):
//  1. pivot search: the lanes of column group cgk offer their candidate rows' keys; one group-wide maximum
//     (pivot_search) gives the pivot's LAPACK position in every lane, and each lane of the pivot's row group knows
//     which of its slots holds it;
//  2. the pivot row: lane (rg, cg) takes entries cg + 8 t from lane (rg_p, cg) (rg_p by a ballot);
//  3. the multipliers: lane (rg, cgk) now holds the pivot in its copy of the pivot row; it computes the reciprocal and
//     the multipliers of its rows (the reciprocal itself for the pivot row) and lane (rg, cg) takes them from it;
//  4. the update, the pivot row left unscaled (scaled by its reciprocal at the end, as small_inverse_kernel does).
// The matrix comes in and goes out through the warp's tile (for_each_tile, stage_out; Geometry<T, N, 1>), the
// column interchanges applied while the entries go back to the tile.
#pragma once

#include "kernels/lu/small_lu.cuh"

namespace torch_inplace {
namespace kernels {
namespace lu {

template <typename T, int N>
struct GridGeometry {
  static constexpr int kRG = 4, kCG = 8;             // row groups x column groups: 32 lanes per matrix
  static constexpr int RS = (N + kRG - 1) / kRG;     // rows per lane
  static constexpr int CS = (N + kCG - 1) / kCG;     // columns per lane
  // One matrix per 32 lanes (Geometry<T, N, 1>::G == 32: n > 16), real types, 32- or 64-wide warps.
  static constexpr bool kSupported =
      std::is_floating_point<T>::value && N > 16 && N <= 32 && Geometry<T, N, 1>::G == 32 && kWarpSize % 32 == 0;
};

// Entry t of the pivot row in a lane of the pivot's row group: the slot `is_piv` marks (the first slot elsewhere).
template <typename T, int RS, int CS>
TI_DEVICE T grid_pick(const T (&a)[RS][CS], const bool (&is_piv)[RS], int t) {
  T v = a[0][t];
#pragma unroll
  for (int s = 1; s < RS; ++s) v = is_piv[s] ? a[s][t] : v;
  return v;
}

// Same launch as small_inverse_kernel<T, N, 1> (blockDim.x = warps * kWarpSize, warps * Geometry<T, N, 1>::
// kWarpSmemBytes of dynamic shared memory); `in` may equal `out`.
template <typename T, int N>
__global__ void __launch_bounds__(256) grid_inverse_kernel(const T* in, T* out, int32_t* info, int64_t batch,
                                                           bool prefetch) {
  using Geo = Geometry<T, N, 1>;
  using GG = GridGeometry<T, N>;
  constexpr int RS = GG::RS, CS = GG::CS, TS = Geo::TS;
  static_assert(GG::kSupported, "grid_inverse_kernel: real types, 16 < n <= 32");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const WarpSmem<T, N, 1> sm(smem_raw + warp * Geo::kWarpSmemBytes);
  for_each_tile<T, N, 1>(in, batch, sm, lane, prefetch, [&](int64_t m0, int nmat, int ln) {
    const int g = ln / 32, gl = ln % 32;  // matrix of the warp (0, or 0..1 on 64-wide wavefronts), lane in it
    const int rg = gl / GG::kCG, cg = gl % GG::kCG;
    const T* tile = sm.tile + g * Geo::GS;
    T a[RS][CS];
    bool pivoted[RS];
    int pos[RS], my_step[RS] = {};
    T my_recip[RS];
#pragma unroll
    for (int s = 0; s < RS; ++s) {
      const int r = rg + GG::kRG * s;
#pragma unroll
      for (int t = 0; t < CS; ++t) {
        const int c = cg + GG::kCG * t;
        a[s][t] = (r < N && c < N) ? tile[r * TS + c] : zero_of(T{});
      }
      pivoted[s] = r >= N;  // padding rows: never a candidate, no position
      pos[s] = r;
      my_recip[s] = one_of(T{});
    }
    int my_info = 0;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      constexpr int kCG = GG::kCG;
      const int cgk = k % kCG, tk = k / kCG;
      // 1. The pivot: candidates offered by the lanes of column group cgk only.
      T colk[RS];
      bool cand[RS];
#pragma unroll
      for (int s = 0; s < RS; ++s) {
        colk[s] = a[s][tk];
        cand[s] = !pivoted[s] && cg == cgk;
      }
      decltype(abs1(T{})) mag[RS];
#pragma unroll
      for (int s = 0; s < RS; ++s) mag[s] = abs1(colk[s]);
      bool zero;
      const int pr = pivot_search<32, RS>(mag, cand, pos, zero);
      if (zero && my_info == 0) my_info = k + 1;
      bool is_piv[RS], any_piv = false;
#pragma unroll
      for (int s = 0; s < RS; ++s) {
        is_piv[s] = !pivoted[s] && pos[s] == pr;
        any_piv = any_piv || is_piv[s];
      }
      // 2. The pivot row's entries of this lane's columns, from the lane of the pivot's row group in this column.
      const int src_row = group_lane_of<32>(any_piv, g) - g * 32;  // lane (rg_p, 0) of this matrix
      T prow[CS];
#pragma unroll
      for (int t = 0; t < CS; ++t) prow[t] = shfl(grid_pick<T, RS, CS>(a, is_piv, t), src_row + cg, 32);
      // 3. The multipliers, from the lane of this row group in column group cgk (which holds the pivot in prow).
      const T rc = recip(prow[tk]);
      T f[RS];
#pragma unroll
      for (int s = 0; s < RS; ++s) {
        const T v = is_piv[s] ? rc : mul(colk[s], rc);
        f[s] = shfl(v, rg * kCG + cgk, 32);
      }
      // 4. The update; column k becomes column p_k of the right-hand side: 1 in the (unscaled) pivot row, 0 - f
      //    elsewhere.
#pragma unroll
      for (int s = 0; s < RS; ++s) {
        if (!is_piv[s]) {
#pragma unroll
          for (int t = 0; t < CS; ++t) a[s][t] = fnms(a[s][t], f[s], prow[t]);
        }
        if (cg == cgk) a[s][tk] = is_piv[s] ? one_of(T{}) : fnms(zero_of(T{}), f[s], one_of(T{}));
        if (is_piv[s]) {
          my_recip[s] = f[s];
          pivoted[s] = true;
          my_step[s] = k;
        }
      }
      swap_positions<RS>(is_piv, pos, k, pr);
    }
    // Row pivoted at step k is row k of the inverse; column slot j holds column perm[j], the row pivoted at step j.
    int* perm = sm.perm + g * N;
    if (cg == 0) {
#pragma unroll
      for (int s = 0; s < RS; ++s) {
        if (rg + GG::kRG * s < N) perm[my_step[s]] = rg + GG::kRG * s;
      }
    }
    warp_sync();
    T* otile = sm.tile + g * Geo::GS;
#pragma unroll
    for (int t = 0; t < CS; ++t) {
      const int c = cg + GG::kCG * t;
      if (c < N) {
        const int pc = perm[c];
#pragma unroll
        for (int s = 0; s < RS; ++s) {
          if (rg + GG::kRG * s < N) otile[my_step[s] * TS + pc] = mul(a[s][t], my_recip[s]);
        }
      }
    }
    warp_sync();
    stage_out<T, N, 1>(out + m0 * (N * N), sm.tile, nmat * N * N, ln);
    if (g < nmat && gl == 0) info[m0 + g] = my_info;
  });
}

}  // namespace lu
}  // namespace kernels
}  // namespace torch_inplace
