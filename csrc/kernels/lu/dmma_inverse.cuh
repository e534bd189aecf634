// Float64 inverse of small matrices (9 <= n <= 32) on the fp64 tensor cores: blocked Gauss-Jordan, one matrix per
// warp (CUDA, mma.sync m8n8k4, compute capability 8.0 and up; HIP builds leave it out).
//
// Why: small_inverse_kernel (small_lu.cuh) hands each step's whole pivot row to every row, n values per lane per step
// by shuffles or shared memory, and for float64 at n > 16 that traffic and its bookkeeping bound it (about 40
// shuffles and 145 instructions a step at n = 24). Here the steps are taken four columns (a panel) at a time:
//   - within a panel a step touches only the panel's four columns, held a row per lane (lane l: row l, so n <= 32):
//     the pivot search is one warp reduction, the pivot row's four entries are one broadcast through shared memory,
//     and the multipliers are each lane's own;
//   - after the panel, every other column takes the panel's steps at once as a rank-4 update on the tensor cores,
//     C += W R, with R the panel's pivot rows (outside the panel as they were before it) and W the panel's columns
//     as the steps left them minus 1 at each pivot's place.
// That update applies the panel's elementary transforms at once: their product is E = I + W S^T (S: the unit vectors
// of the pivot rows), and in-place Gauss-Jordan leaves E's columns at S in the panel's slots, so the panel minus S
// is W. The panel's rows keep
// W itself (a pivot row's own slot holds 1 - 1 = 0 rather than 1: the same later updates, as that row is never a
// pivot again), and the panel's columns of the matrix take W + S in the same instruction: S in the accumulators, the
// identity in B. Mathematically these are small_inverse_kernel's steps, with its lazy row interchanges, unscaled
// pivot rows (multipliers a_ik / a_kk, one reciprocal a step) and column permutation at the end; the rounding
// differs (the tensor cores sum four products an instruction), so the bits are not the other variants'.
//
// Layout: the matrix zero-padded to Np = round_up(n, 8), (Np / 8)^2 tiles of 8 x 8 in registers; lane l = 4 r + c
// holds rows 8 t + r at columns 8 u + 2 c + {0, 1}: the accumulator fragment of every tile (PTX ISA, m8n8k4 .f64:
// C[l / 4][2 (l % 4) + {0, 1}]; A 8 x 4: A[l / 4][l % 4]; B 4 x 8: B[l % 4][l / 4]). A panel's columns 4 q..4 q + 3
// lie in one tile column, in two lanes of every quad; they go to the rows' lanes and back (as W) through shared
// memory, and R through shared memory too.
//
// Pivots: the largest magnitude in the column among the rows not yet pivoted, on one 32-bit key per row (the
// magnitude's bits 31..62, as pivot_search_one_key: within about 2^-15 relative counts as a tie), ties to the
// smallest row index (the register kernels break ties by LAPACK's row position; the inverse shows no pivots); info is
// getrf's (the first step whose column is exactly zero), as in the other kernels.
//
// Measured (benchmarks/dmma_inverse_harness.cu, H100, 2^18 matrices, against the register kernels' best of one row
// per lane at 1-8 warps and lu_tuning.h's pick): n = 20-24 1.05-1.27x, 27-32 1.04-1.27x; n = 17-19, 25, 26 slower
// (0.80-0.99x), where lu_tuning.h keeps the register kernels.
#pragma once

#include "kernels/lu/inverse_backward.cuh"

namespace torch_inplace {
namespace kernels {
namespace lu {

#if !TI_HIP
template <int N>
struct DmmaInverseGeometry {
  static constexpr int Np = round_up(N, 8);
  static constexpr int NT = Np / 8;    // tiles per side
  static constexpr int P = Np + 4;     // row stride of the tile and of the pivot rows (doubles; see DmmaBackward)
  static constexpr int kTile = Np * P; // the matrix staged in and out; between, the panel's R (4 x P) and rows
  // the tile, then the pivots' reciprocals and pivot rows (by step) and the rows' steps (by row)
  static constexpr int kWarpSmemBytes = kTile * 8 + 32 * 8 + 2 * 32 * 4;
  static constexpr bool kSupported = N >= 9 && N <= 32;
  static_assert(!kSupported || 4 * P + 128 + 8 <= kTile, "R, the panel by rows and the pivot rows fit in the tile");
};

// Inverse (getrf + getri semantics; info as getrf's, none written where `info` is null) of float64 matrices, n in
// 9..32. `in` may equal `out`. Launch: blockDim.x = warps * kWarpSize, warps * DmmaInverseGeometry<N>::kWarpSmemBytes
// of dynamic shared memory, ceil(batch / warps) blocks; warp w of the grid inverts matrix w. (The bounds' explicit
// one block per SM is the measured form: ptxas gives n = 24 72 registers with it, 75 without.)
template <int N>
__global__ void __launch_bounds__(256, 1) dmma_inverse_kernel(const double* in, double* out, int32_t* info,
                                                           int64_t batch) {
  using DG = DmmaInverseGeometry<N>;
  constexpr int NT = DG::NT, P = DG::P;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const WarpMatrices wm = warp_matrices(batch, 1);
  if (wm.nmat <= 0) return;
  const int64_t m0 = wm.m0;
  double* tile = reinterpret_cast<double*>(smem_raw + warp * DG::kWarpSmemBytes);
  double* rbuf = tile;           // 4 x P: the panel's pivot rows
  double* pb = tile + 4 * P;     // the panel by rows: columns 0-1 of rows 0..31, then columns 2-3 (16 bytes a row each)
  double* prbuf = pb + 128;      // 2 x 4: a step's pivot row in the panel (two slots: no sync before rewriting)
  double* rcs = tile + DG::kTile;                  // by step: 1 / pivot
  int* perm = reinterpret_cast<int*>(rcs + 32);    // by step: the row pivoted
  int* step_of = perm + 32;                        // by row: its step; rows >= n: -1
  const int r = lane >> 2, c = lane & 3;

  load_tile<double, N, DG::kTile, 1, 1, P>(in + m0 * (N * N), tile, N * N, lane);
  warp_sync();
  double a[NT][NT][2];
#pragma unroll
  for (int t = 0; t < NT; ++t) {
#pragma unroll
    for (int u = 0; u < NT; ++u) {
      const int row = 8 * t + r, col = 8 * u + 2 * c;
      const double2 v = *reinterpret_cast<const double2*>(tile + row * P + col);
      a[t][u][0] = (row < N && col < N) ? v.x : 0.0;
      a[t][u][1] = (row < N && col + 1 < N) ? v.y : 0.0;
    }
  }
  step_of[lane] = -1;
  warp_sync();  // every lane has its entries: the tile now holds R and the panel by rows

  // This lane's row in the panel steps is row `lane`. Pivot-search mask: ~63 | (32 - lane) while that row (< n) has
  // not been a pivot, else 0; a row's key is (its magnitude's bits 62..31 & ~63) | (32 - row): the largest
  // magnitude, ties to the smallest row. The lanes past Np read rows of the panel that nothing wrote: they are never
  // candidates (m = 0) and their rows never reach W (the A operand reads rows below Np), so they stay harmless.
  // Rows n..Np-1 are zero and stay zero.
  uint32_t m = lane < N ? (0xffffffc0u | static_cast<uint32_t>(32 - lane)) : 0u;
  int my_info = 0;
#pragma unroll
  for (int k0 = 0; k0 < N; k0 += 4) {
    const int b = N - k0 < 4 ? N - k0 : 4;  // the panel's columns
    const int uP = k0 >> 3, c0 = (k0 & 7) >> 1;
    const bool in_panel = (c & 2) == c0;  // this lane's slots in tile column uP are panel columns
    // The panel by rows: lane l takes row l's four panel entries (through shared memory).
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      double2 v;
      v.x = a[t][uP][0];
      v.y = a[t][uP][1];
      if (in_panel) *reinterpret_cast<double2*>(pb + (c & 1) * 64 + (8 * t + r) * 2) = v;
    }
    warp_sync();
    double q[4];
    {
      const double2 lo = *reinterpret_cast<const double2*>(pb + lane * 2);
      const double2 hi = *reinterpret_cast<const double2*>(pb + 64 + lane * 2);
      q[0] = lo.x;
      q[1] = lo.y;
      q[2] = hi.x;
      q[3] = hi.y;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (j >= b) continue;
      const int k = k0 + j;
      const double x = q[j];
      uint32_t best = group_max_u32<32>(
          (__funnelshift_l(static_cast<uint32_t>(__double2loint(x)),
                           static_cast<uint32_t>(__double2hiint(x)) & 0x7fffffffu, 1) &
           m & 0xffffffc0u) |
          (m & 63u));
      if (best < 64u) {
        // (The whole warp.) No candidate above 2^-1037: the exact test, as pivot_search_one_key (a non-zero
        // magnitude lifted to bit 6, so that "< 64" means exactly zero).
        const uint64_t bits = static_cast<uint64_t>(__double_as_longlong(x)) & 0x7fffffffffffffffull;
        const uint32_t top = static_cast<uint32_t>(bits >> 31) | (bits != 0u ? 1u : 0u);
        best = group_max_u32<32>(m != 0u ? (mag_field(top) | (m & 63u)) : 0u);
        if (best < 64u && my_info == 0) my_info = k + 1;
      }
      const int p = 32 - static_cast<int>(best & 63u);
      // The pivot row's panel entries (through shared memory: two stores by the pivot lane, two broadcast loads);
      // -1 / pivot (every lane alike).
      const bool is_p = lane == p;
      double* const prow = prbuf + (k & 1) * 4;
      if (is_p) {
        double2 lo, hi;
        lo.x = q[0];
        lo.y = q[1];
        hi.x = q[2];
        hi.y = q[3];
        *reinterpret_cast<double2*>(prow) = lo;
        *reinterpret_cast<double2*>(prow + 2) = hi;
      }
      warp_sync();
      double pr[4];
      {
        const double2 lo = *reinterpret_cast<const double2*>(prow);
        const double2 hi = *reinterpret_cast<const double2*>(prow + 2);
        pr[0] = lo.x;
        pr[1] = lo.y;
        pr[2] = hi.x;
        pr[3] = hi.y;
      }
      const double nrc = 1.0 / -pr[j];
      if (lane == 0) {
        rcs[k] = nrc;
        perm[k] = p;
        step_of[p] = k;
      }
      // -f (0 in the pivot row, which keeps its entries); column j becomes W's: -f, and 1 - 1 in the pivot row
      // (slot k holds column p of [A | I]'s right half, 1 in the unscaled pivot row; W leaves out that 1).
      const double nfe = is_p ? 0.0 : x * nrc;
#pragma unroll
      for (int cc = 0; cc < 4; ++cc) {
        if (cc < b && cc != j) q[cc] = fma(nfe, pr[cc], q[cc]);
      }
      q[j] = nfe;
      m = is_p ? 0u : m;
    }
    // The panel's four steps on the other columns: C += W R, with W the panel as the steps left it minus S (1 at
    // (p_j, j)), which is what q holds, and R the panel's pivot rows (outside the panel as they were before it). The
    // panel's own columns take W + S (their final values): S in the accumulators, the identity in B.
    {
      double2 lo, hi;
      lo.x = q[0];
      lo.y = q[1];
      hi.x = q[2];
      hi.y = q[3];
      *reinterpret_cast<double2*>(pb + lane * 2) = lo;
      *reinterpret_cast<double2*>(pb + 64 + lane * 2) = hi;
    }
    warp_sync();  // perm, step_of, W by rows
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      // R's row of this lane's row: its step in this panel (no store where it has none)
      const unsigned js = static_cast<unsigned>(step_of[8 * t + r] - k0);
      double* const dst = rbuf + js * P;
#pragma unroll
      for (int u = 0; u < NT; ++u) {
        double2 val;
        val.x = a[t][u][0];
        val.y = a[t][u][1];
        if (js < static_cast<unsigned>(b)) *reinterpret_cast<double2*>(dst + 8 * u + 2 * c) = val;
      }
    }
    double fa[NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) fa[t] = pb[(c >> 1) * 64 + (8 * t + r) * 2 + (c & 1)];
    {
      const int j0 = 2 * (c & 1);
      const int q0 = j0 < b ? perm[k0 + j0] : -1, q1 = j0 + 1 < b ? perm[k0 + j0 + 1] : -1;
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        const int row = 8 * t + r;
        a[t][uP][0] = in_panel ? (row == q0 ? 1.0 : 0.0) : a[t][uP][0];
        a[t][uP][1] = in_panel ? (row == q1 ? 1.0 : 0.0) : a[t][uP][1];
      }
    }
    warp_sync();  // R
    double fb[NT];
#pragma unroll
    for (int u = 0; u < NT; ++u) {
      const int col = 8 * u + r;
      const double rv = rbuf[c * P + col];
      const bool panel_col = col >= k0 && col < k0 + 4;
      fb[u] = panel_col ? (col - k0 == c ? 1.0 : 0.0) : (c < b ? rv : 0.0);
    }
    warp_sync();  // the next panel rewrites R and the panel by rows
#pragma unroll
    for (int t = 0; t < NT; ++t) {
#pragma unroll
      for (int u = 0; u < NT; ++u) dmma_8x8x4(a[t][u][0], a[t][u][1], fa[t], fb[u]);
    }
  }
  warp_sync();
  // The row pivoted at step k is row k of the inverse (scaled by its pivot's reciprocal); its slot j holds
  // column perm[j].
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    const int row = 8 * t + r;
    if (row < N) {
      const int ms = step_of[row];
      const double sc = -rcs[ms];  // rcs: -1 / pivot
#pragma unroll
      for (int u = 0; u < NT; ++u) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = 8 * u + 2 * c + e;
          if (col < N) tile[ms * P + perm[col]] = a[t][u][e] * sc;
        }
      }
    }
  }
  warp_sync();
  store_tile<double, N, DG::kTile, 1, 1, P>(out + m0 * (N * N), tile, N * N, lane);
  if (info != nullptr && lane == 0) info[m0] = my_info;
}
#endif  // !TI_HIP

}  // namespace lu
}  // namespace kernels
}  // namespace torch_inplace
