// Fused backward of the inverse: grad_A = -X^H G X^H for a batch of small matrices (n <= 32), reading X and G
// once and writing grad_A once (the unfused form makes two batched GEMM passes plus a negation).
//
// Same warp organization as small_lu.cuh: a group of G = next_pow2(n) lanes per matrix, lane i owns row i, the
// warp's matrices staged through shared tiles with coalesced global accesses, warp-level syncs only.
// With Y = X^H:  T = G Y (row i: sum_k G[i,k] Y[k,:]),  grad = -Y T (row i: -sum_k Y[i,k] T[k,:]).
// Rows of Y and T are kept in shared memory with 16-byte aligned strides so that each lane reads the broadcast
// rows with vector loads.
#pragma once

#include <type_traits>

#include "kernels/lu/small_lu.cuh"

namespace torch_inplace {
namespace kernels {
namespace lu {

TI_DEVICE float conj_of(float a) { return a; }
TI_DEVICE double conj_of(double a) { return a; }
template <typename R>
TI_DEVICE Cplx<R> conj_of(Cplx<R> a) { return Cplx<R>{a.re, -a.im}; }

// acc + a * b
TI_DEVICE float fma_acc(float acc, float a, float b) { return fmaf(a, b, acc); }
TI_DEVICE double fma_acc(double acc, double a, double b) { return fma(a, b, acc); }
template <typename R>
TI_DEVICE Cplx<R> fma_acc(Cplx<R> acc, Cplx<R> a, Cplx<R> b) {
  return Cplx<R>{fma_r(a.re, b.re, fma_r(-a.im, b.im, acc.re)), fma_r(a.re, b.im, fma_r(a.im, b.re, acc.im))};
}

// Keeps the compiler from hoisting the shared-memory row reads of later k steps above this one: with all n rows
// in flight (n * n values) nvcc 13.0 ran out of registers and spilled for some (dtype, n).
TI_DEVICE void row_fence() { asm volatile("" ::: "memory"); }

template <typename T, int N>
struct BackwardGeometry {
  using Geo = Geometry<T, N>;
  static constexpr int kV = Geo::kV;
  static constexpr int RP = round_up(N, kV);                      // aligned row stride of the Y and T rows
  static constexpr int kGroupElems = round_up(N * (Geo::S > RP ? Geo::S : RP), kV);
  static constexpr int kTileBytes = Geo::kGroups * kGroupElems * static_cast<int>(sizeof(T));
  static constexpr int kWarpSmemBytes = 2 * kTileBytes;
  // Register budget: two rows of n elements per lane (with row_fence, nvcc 13.0 compiles every such (dtype, n)
  // for sm_90 without spilling: checked with -Xptxas -v; complex128 past 16 would need 255 registers).
  static constexpr bool kSupported = N * static_cast<int>(sizeof(T)) <= 256;
};

// grad = -X^H G X^H. Launch: blockDim.x = warps * kWarpSize, dynamic shared memory
// warps * BackwardGeometry<T, N>::kWarpSmemBytes, grid = ceil(batch / (warps * kGroups)).
template <typename T, int N>
__global__ void __launch_bounds__(256) inverse_backward_kernel(const T* X, const T* Gr, T* out, int64_t batch) {
  using Geo = Geometry<T, N>;
  using BG = BackwardGeometry<T, N>;
  constexpr int G = Geo::G, S = Geo::S, RP = BG::RP, GS = BG::kGroupElems, V = BG::kV;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const WarpMatrices wm = warp_matrices(batch, Geo::kGroups);
  if (wm.nmat <= 0) return;
  const int64_t m0 = wm.m0;
  const int nmat = wm.nmat;
  const int valid = nmat * N * N;
  T* ta = reinterpret_cast<T*>(smem_raw + warp * BG::kWarpSmemBytes);
  T* tb = reinterpret_cast<T*>(smem_raw + warp * BG::kWarpSmemBytes + BG::kTileBytes);
  load_tile<T, N, GS>(X + m0 * (N * N), ta, valid, lane);
  load_tile<T, N, GS>(Gr + m0 * (N * N), tb, valid, lane);
  warp_sync();

  const int g = lane / G, i = lane % G;
  const bool row = i < N;
  T* a = ta + g * GS;  // X tile, later T rows
  T* b = tb + g * GS;  // G tile, later Y rows, later the output tile
  T gr[N], xr[N];
#pragma unroll
  for (int k = 0; k < N; ++k) {
    gr[k] = row ? b[i * S + k] : zero_of(T{});
    xr[k] = row ? a[i * S + k] : zero_of(T{});
  }
  warp_sync();
  // Y[k][i] = conj(X[i][k]): lane i writes column i of Y's rows.
  if (row) {
#pragma unroll
    for (int k = 0; k < N; ++k) b[k * RP + i] = conj_of(xr[k]);
  }
  warp_sync();
  // T row i = sum_k G[i][k] Y[k][:]
  T acc[N];
#pragma unroll
  for (int j = 0; j < N; ++j) acc[j] = zero_of(T{});
#pragma unroll
  for (int k = 0; k < N; ++k) {
#pragma unroll
    for (int c = 0; c < RP / V; ++c) {
      const Chunk<T> ch = reinterpret_cast<const Chunk<T>*>(b + k * RP)[c];
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const int j = c * V + v;
        if (j < N) acc[j] = fma_acc(acc[j], gr[k], ch.v[v]);
      }
    }
    row_fence();
  }
  if (row) {
#pragma unroll
    for (int c = 0; c < RP / V; ++c) {
      Chunk<T> ch;
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const int j = c * V + v;
        ch.v[v] = j < N ? acc[j < N ? j : 0] : zero_of(T{});
      }
      reinterpret_cast<Chunk<T>*>(a + i * RP)[c] = ch;
    }
  }
  warp_sync();
  // grad row i = -sum_k Y[i][k] T[k][:], Y[i][k] read from Y's row i.
#pragma unroll
  for (int j = 0; j < N; ++j) acc[j] = zero_of(T{});
#pragma unroll
  for (int kc = 0; kc < RP / V; ++kc) {
    const Chunk<T> yc = reinterpret_cast<const Chunk<T>*>(b + (row ? i : 0) * RP)[kc];
#pragma unroll
    for (int kv = 0; kv < V; ++kv) {
      const int k = kc * V + kv;
      if (k < N) {
#pragma unroll
        for (int c = 0; c < RP / V; ++c) {
          const Chunk<T> ch = reinterpret_cast<const Chunk<T>*>(a + k * RP)[c];
#pragma unroll
          for (int v = 0; v < V; ++v) {
            const int j = c * V + v;
            if (j < N) acc[j] = fma_acc(acc[j], yc.v[kv], ch.v[v]);
          }
        }
        row_fence();
      }
    }
  }
  warp_sync();
  if (row) {
#pragma unroll
    for (int j = 0; j < N; ++j) b[i * S + j] = neg(acc[j]);
  }
  warp_sync();
  store_tile<T, N, GS>(out + m0 * (N * N), tb, valid, lane);
}

// Block variant for float64 and n = 17..24, 31, 32 (kSupported), where the row-per-lane kernel above holds one
// matrix per warp and every lane reads whole broadcast rows (n / 2 shared loads per k step, shared-memory bound
// like the LU kernels). Here
// a group of 4 x 4 lanes owns a matrix (two per warp; four per 64-wide wavefront; 4 x 8 lanes past n = 24) and
// lane (lr, lc) computes the BR x BC block of rows lr*BR.. and columns lc*BC.. (ceil(n / 4) or ceil(n / 8) rounded
// up to whole 16-byte chunks; the tiles are zero-padded). No pivoting, so no per-row bookkeeping:
//   T = G X^H:      T[r][c]    = sum_k G[r][k] conj(X[c][k])   (rows of G and X, 16-byte chunks along k)
//   grad = -X^H T:  grad[r][c] = -sum_k conj(X[k][r]) T[k][c]  (the lane's column blocks of row k of X and T)
// Each step reads (BR + BC) / V chunks (or BR + BC) for BR * BC * V (or BR * BC) multiply-adds, against n / V chunks
// for n in the row-per-lane kernel. Tile rows are an odd number of chunks apart and the group's tiles an odd number
// of chunks apart, so the lanes' chunk reads fall in distinct banks.
template <typename T, int N>
struct BlockBackwardGeometry {
  static constexpr int LR = 4;                                   // lane rows of a group
  static constexpr int LC = N > 24 ? 8 : 4;                      // lane columns (n > 24: one matrix per warp)
  static constexpr int kGroupLanes = LR * LC;
  static constexpr int kGroups = kWarpSize / kGroupLanes;        // matrices per warp
  static constexpr int V = Geometry<T, 1>::kV;
  static constexpr int BR = round_up((N + LR - 1) / LR, V);      // block rows per lane
  static constexpr int BC = round_up((N + LC - 1) / LC, V);      // block columns per lane
  static constexpr int Np = LR * BR > LC * BC ? LR * BR : LC * BC;  // padded size
  static constexpr int Pc = (Np / V) % 2 ? Np / V : Np / V + 1;  // row stride in chunks (odd)
  static constexpr int P = Pc * V;                               // row stride in elements
  static constexpr int GSc = (Np * Pc) % 2 ? Np * Pc : Np * Pc + 1;  // a matrix's chunks (odd)
  static constexpr int GS = GSc * V;
  static constexpr int kTileBytes = kGroups * GS * static_cast<int>(sizeof(T));
  static constexpr int kWarpSmemBytes = 2 * kTileBytes;
  // Measured on an H200 (fp64, 2^18 matrices, forward + backward against the row-per-lane kernel): 5-18 % faster
  // for n = 17..24 and 31..32; for n = 25..30 the padding to 32 costs more than the block layout saves.
  static constexpr bool kSupported = std::is_same<T, double>::value && ((N >= 17 && N <= 24) || N >= 31);
};

// grad = -X^H G X^H, block variant. Launch: blockDim.x = warps * kWarpSize, dynamic shared memory
// warps * BlockBackwardGeometry<T, N>::kWarpSmemBytes, grid = ceil(batch / (warps * kGroups)).
template <typename T, int N>
__global__ void __launch_bounds__(256) block_inverse_backward_kernel(const T* X, const T* Gr, T* out, int64_t batch) {
  using BB = BlockBackwardGeometry<T, N>;
  constexpr int BR = BB::BR, BC = BB::BC, V = BB::V, P = BB::P, GS = BB::GS, Np = BB::Np;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const WarpMatrices wm = warp_matrices(batch, BB::kGroups);
  if (wm.nmat <= 0) return;
  const int64_t m0 = wm.m0;
  const int nmat = wm.nmat;
  const int valid = nmat * N * N;
  T* tx = reinterpret_cast<T*>(smem_raw + warp * BB::kWarpSmemBytes);
  T* tg = reinterpret_cast<T*>(smem_raw + warp * BB::kWarpSmemBytes + BB::kTileBytes);
  if (Np != N || nmat < BB::kGroups) {  // zero padding (and absent matrices): the blocks read whole tiles
    constexpr int kChunks = 2 * BB::kGroups * BB::GSc;
    Chunk<T> z;
#pragma unroll
    for (int v = 0; v < V; ++v) z.v[v] = zero_of(T{});
    for (int c = lane; c < kChunks; c += kWarpSize) reinterpret_cast<Chunk<T>*>(tx)[c] = z;  // tx, tg adjacent
    warp_sync();
  }
  load_tile<T, N, GS, 1, BB::kGroups, P>(X + m0 * (N * N), tx, valid, lane);
  load_tile<T, N, GS, 1, BB::kGroups, P>(Gr + m0 * (N * N), tg, valid, lane);
  warp_sync();

  const int g = lane / BB::kGroupLanes, t = lane % BB::kGroupLanes;
  const int r0 = (t / BB::LC) * BR, c0 = (t % BB::LC) * BC;
  T* x = tx + g * GS;
  T* gt = tg + g * GS;
  T acc[BR][BC];
#pragma unroll
  for (int i = 0; i < BR; ++i) {
#pragma unroll
    for (int j = 0; j < BC; ++j) acc[i][j] = zero_of(T{});
  }
  // T = G X^H
#pragma unroll
  for (int q = 0; q < (N + V - 1) / V; ++q) {
    Chunk<T> gc[BR];
#pragma unroll
    for (int i = 0; i < BR; ++i) gc[i] = reinterpret_cast<const Chunk<T>*>(gt + (r0 + i) * P)[q];
#pragma unroll
    for (int j = 0; j < BC; ++j) {
      const Chunk<T> xc = reinterpret_cast<const Chunk<T>*>(x + (c0 + j) * P)[q];
#pragma unroll
      for (int v = 0; v < V; ++v) {
#pragma unroll
        for (int i = 0; i < BR; ++i) acc[i][j] = fma_acc(acc[i][j], gc[i].v[v], conj_of(xc.v[v]));
      }
    }
    row_fence();
  }
  warp_sync();  // every lane is done with G: T takes its place
#pragma unroll
  for (int i = 0; i < BR; ++i) {
#pragma unroll
    for (int jc = 0; jc < BC / V; ++jc) {
      Chunk<T> ch;
#pragma unroll
      for (int v = 0; v < V; ++v) ch.v[v] = acc[i][jc * V + v];
      reinterpret_cast<Chunk<T>*>(gt + (r0 + i) * P + c0)[jc] = ch;
    }
#pragma unroll
    for (int j = 0; j < BC; ++j) acc[i][j] = zero_of(T{});
  }
  warp_sync();
  // grad = -X^H T (row k of X gives conj(X[k][r]) for the lane's rows, row k of T its columns)
#pragma unroll
  for (int k = 0; k < N; ++k) {
    Chunk<T> xc[BR / V], tc[BC / V];
#pragma unroll
    for (int ic = 0; ic < BR / V; ++ic) xc[ic] = reinterpret_cast<const Chunk<T>*>(x + k * P + r0)[ic];
#pragma unroll
    for (int jc = 0; jc < BC / V; ++jc) tc[jc] = reinterpret_cast<const Chunk<T>*>(gt + k * P + c0)[jc];
#pragma unroll
    for (int i = 0; i < BR; ++i) {
      const T y = conj_of(xc[i / V].v[i % V]);
#pragma unroll
      for (int j = 0; j < BC; ++j) acc[i][j] = fma_acc(acc[i][j], y, tc[j / V].v[j % V]);
    }
    row_fence();
  }
  warp_sync();  // every lane is done with X and T: the result goes to X's tile
#pragma unroll
  for (int i = 0; i < BR; ++i) {
    if (r0 + i < N) {
#pragma unroll
      for (int j = 0; j < BC; ++j) {
        if (c0 + j < N) x[(r0 + i) * P + c0 + j] = neg(acc[i][j]);
      }
    }
  }
  warp_sync();
  store_tile<T, N, GS, 1, BB::kGroups, P>(out + m0 * (N * N), tx, valid, lane);
}

#if !TI_HIP
// Tensor-core variant for float64, n = 17..32 (CUDA): one matrix per warp, both products on the fp64 tensor cores
// (mma.sync m8n8k4, sm_80 and up) over the matrix zero-padded to Np = round_up(n, 8):
//   T = G X^T      (A = G's rows, B = X's rows: both fragments read along k)
//   grad = -X^T T  (A = X's columns, B = T's columns)
// Per matrix 2 (Np / 8)^2 (Np / 4) mma instructions and 2 (Np / 8) (Np / 4) 8-byte fragment loads per operand, where
// the FMA variants above issue n^3 / 16 fused multiply-adds per lane and read every operand once per product step.
// Fragment layouts (PTX ISA, m8n8k4 .f64): A 8 x 4, lane l holds A[l / 4][l % 4]; B 4 x 8, B[l % 4][l / 4]; C 8 x 8,
// C[l / 4][2 (l % 4) + {0, 1}]. Tile rows are P = Np + 4 elements apart (36 or 28: 4 or 12 modulo 16 doubles), so the
// 16 lanes of a half-warp, which read 4 rows x 4 columns of a tile (or its transpose), hit 16 distinct bank pairs.
template <typename T, int N>
struct DmmaBackwardGeometry {
  static constexpr int Np = round_up(N, 8);
  static constexpr int NT = Np / 8;  // 8 x 8 tiles per side
  static constexpr int KS = Np / 4;  // k steps of 4
  static constexpr int P = Np + 4;
  static constexpr int GS = Np * P;  // one matrix's tile
  static constexpr int kTileBytes = GS * static_cast<int>(sizeof(T));
  static constexpr int kWarpSmemBytes = 2 * kTileBytes;
  static constexpr bool kSupported = std::is_same<T, double>::value && N >= 17 && N <= 32;
};

// D(8 x 8) += A(8 x 4) B(4 x 8) in the fragment layouts above.
TI_DEVICE void dmma_8x8x4(double& d0, double& d1, double a, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
               : "+d"(d0), "+d"(d1)
               : "d"(a), "d"(b));
#else
  // Same result through shuffles (the launcher uses this kernel on sm_80 and up only).
  const int lane = threadIdx.x % kWarpSize, r = lane / 4, c = 2 * (lane % 4);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const double ak = shfl(a, r * 4 + k), b0 = shfl(b, c * 4 + k), b1 = shfl(b, (c + 1) * 4 + k);
    d0 = fma(ak, b0, d0);
    d1 = fma(ak, b1, d1);
  }
#endif
}

// acc[i][j] += A_i B_j over the Np x Np tiles `ta`, `tb` (row stride P): with KAlongRows the operands are read
// along their rows (A[i][k] = ta[i][k], B[k][j] = tb[j][k]: ta tb^T), else along their columns (A[i][k] = ta[k][i],
// B[k][j] = tb[k][j]: ta^T tb). Either way a lane's fragment of 8 x 8 tile t at k step ks is one element.
template <int NT, int KS, int P, bool KAlongRows>
TI_DEVICE void dmma_tiles(double (&acc)[NT][NT][2], const double* ta, const double* tb, int fr, int fc) {
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    double a[NT], b[NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const int e = KAlongRows ? (8 * t + fr) * P + 4 * ks + fc : (4 * ks + fc) * P + 8 * t + fr;
      a[t] = ta[e];
      b[t] = tb[e];
    }
#pragma unroll
    for (int i = 0; i < NT; ++i) {
#pragma unroll
      for (int j = 0; j < NT; ++j) dmma_8x8x4(acc[i][j][0], acc[i][j][1], a[i], b[j]);
    }
  }
}

// tile = sign * acc (C fragments: row 8 i + l / 4, columns 8 j + 2 (l % 4) + {0, 1}, one 16-byte store each), and
// acc cleared.
template <int NT, int P>
TI_DEVICE void dmma_store(double* tile, double (&acc)[NT][NT][2], double sign, int fr, int fc) {
#pragma unroll
  for (int i = 0; i < NT; ++i) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      double2 v;
      v.x = sign * acc[i][j][0];
      v.y = sign * acc[i][j][1];
      *reinterpret_cast<double2*>(tile + (8 * i + fr) * P + 8 * j + 2 * fc) = v;
      acc[i][j][0] = acc[i][j][1] = 0.0;
    }
  }
}

// grad = -X^T G X^T (real float64). Launch: blockDim.x = warps * kWarpSize, dynamic shared memory
// warps * DmmaBackwardGeometry<T, N>::kWarpSmemBytes, grid = ceil(batch / warps).
template <typename T, int N>
__global__ void __launch_bounds__(256) dmma_inverse_backward_kernel(const T* X, const T* Gr, T* out, int64_t batch) {
  using DG = DmmaBackwardGeometry<T, N>;
  constexpr int NT = DG::NT, KS = DG::KS, P = DG::P, GS = DG::GS, Np = DG::Np;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const WarpMatrices wm = warp_matrices(batch, 1);
  if (wm.nmat <= 0) return;
  const int64_t m0 = wm.m0;
  T* tx = reinterpret_cast<T*>(smem_raw + warp * DG::kWarpSmemBytes);
  T* tg = tx + GS;
  if (Np != N) {  // zero padding: the products read whole Np x Np tiles
    for (int e = lane; e < 2 * GS; e += kWarpSize) tx[e] = 0.0;
    warp_sync();
  }
  load_tile<T, N, GS, 1, 1, P>(X + m0 * (N * N), tx, N * N, lane);
  load_tile<T, N, GS, 1, 1, P>(Gr + m0 * (N * N), tg, N * N, lane);
  warp_sync();
  const int fr = lane / 4, fc = lane % 4;  // fragment row / column of this lane
  double acc[NT][NT][2] = {};
  dmma_tiles<NT, KS, P, true>(acc, tg, tx, fr, fc);    // T = G X^T
  warp_sync();                                         // every lane is done with G: T takes its place
  dmma_store<NT, P>(tg, acc, 1.0, fr, fc);
  warp_sync();
  dmma_tiles<NT, KS, P, false>(acc, tx, tg, fr, fc);   // X^T T
  warp_sync();                                         // every lane is done with X: -X^T T goes to its tile
  dmma_store<NT, P>(tx, acc, -1.0, fr, fc);
  warp_sync();
  store_tile<T, N, GS, 1, 1, P>(out + m0 * (N * N), tx, N * N, lane);
}
#endif  // !TI_HIP

}  // namespace lu
}  // namespace kernels
}  // namespace torch_inplace

#ifdef TORCH_INPLACE_HIP_CHECK
namespace torch_inplace {
namespace kernels {
namespace lu {
#define TI_LU_BWD_INSTANTIATE(T, N) \
  template __global__ void inverse_backward_kernel<T, N>(const T*, const T*, T*, int64_t);
TI_LU_BWD_INSTANTIATE(float, 1)
TI_LU_BWD_INSTANTIATE(float, 7)
TI_LU_BWD_INSTANTIATE(float, 32)
TI_LU_BWD_INSTANTIATE(double, 16)
TI_LU_BWD_INSTANTIATE(double, 32)
TI_LU_BWD_INSTANTIATE(Cplx<float>, 24)
TI_LU_BWD_INSTANTIATE(Cplx<double>, 16)
#undef TI_LU_BWD_INSTANTIATE
template __global__ void block_inverse_backward_kernel<double, 17>(const double*, const double*, double*, int64_t);
template __global__ void block_inverse_backward_kernel<double, 24>(const double*, const double*, double*, int64_t);
template __global__ void block_inverse_backward_kernel<double, 32>(const double*, const double*, double*, int64_t);
}  // namespace lu
}  // namespace kernels
}  // namespace torch_inplace
#endif
