// Square matrices: swap each tile pair (bi, bj), (bj, bi) across the diagonal through shared memory, each
// transposed on the way (diagonal tiles transpose in place). One read and one write of every element.
// TORCH_INPLACE_GPU_SQUARE_TILE=32 (gpu_plan.cpp, for measurements) keeps 32 x 32 tiles (C = 1) for every size.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common.cuh"

namespace torch_inplace {
namespace kernels {

// The block is kSqTile x kSqRows threads and a tile's side kSqTile * C elements. 32 lanes of x are a warp on CUDA and
// half a wavefront on HIP; the kernel syncs the whole block only, so either width is right.
constexpr int kSqTile = 32;
constexpr int kSqRows = 8;

// Columns per lane (C): tile rows of 128 bytes for 1- and 2-byte elements, 256 for 4-byte ones, and 256 / 512 for 8
// and 16 (C = 1); each tile pair then takes 2 * 32 * 32 * C * C / 256 elements per thread, all in flight before the
// barrier. Staged rows of 1-, 2- and 4-byte elements are padded by sq_pad elements to 4-byte-word strides of 32 k + 1,
// so a warp's column reads (one element per lane, rows W + sq_pad apart) hit distinct banks; 8- and 16-byte rows keep
// one element of padding, as with C = 1 for every size. Static shared memory: two tiles, 16.6-33.8 KB.
template <typename T>
constexpr int sq_cols() {
  return sizeof(T) == 1 ? 4 : sizeof(T) <= 4 ? 2 : 1;
}
template <typename T, int C>
constexpr int sq_pad() {
  return C == 1 || sizeof(T) >= 4 ? 1 : 4 / static_cast<int>(sizeof(T));
}

// Upper-triangle pair p in [0, nt(nt+1)/2) -> (bi, bj), bi <= bj, row-major.
TI_DEVICE void tri_pair(int64_t p, int64_t nt, int64_t* bi, int64_t* bj) {
  const int64_t T = nt * (nt + 1) / 2;
  const int64_t k = T - 1 - p;  // index from the end: rows of length 1, 2, 3, ...
  int64_t r = static_cast<int64_t>((sqrt(8.0 * static_cast<double>(k) + 1.0) - 1.0) * 0.5);
  while (r * (r + 1) / 2 > k) --r;
  while ((r + 1) * (r + 2) / 2 <= k) ++r;
  *bi = nt - 1 - r;
  *bj = nt - 1 - (k - r * (r + 1) / 2);
}

// batch n x n matrices, nt = ceil(n / (kSqTile * C)) tiles a side, pairs = nt (nt + 1) / 2 tile pairs each.
// Launched with kSqTile x kSqRows threads, deliberately without __launch_bounds__: with __launch_bounds__(256), nvcc
// allocated registers differently (float32 36 -> 40, 72 -> 40 at 64-bit indices) and the tiled plans, which run this
// kernel, measured 4% slower in GPU time (25 shapes, 24 slower; other plans 1.00x; bench_transpose_s55 against _s54,
// H200).
template <typename T, typename U, int C = sq_cols<T>()>
__global__ void square_swap_kernel(T* __restrict__ base, U n, int64_t nt, int64_t pairs, int64_t batch) {
  constexpr int W = kSqTile * C, S = W + sq_pad<T, C>();
  __shared__ T s1[W][S];
  __shared__ T s2[W][S];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t nn = static_cast<int64_t>(n) * n;
  for (int64_t task = blockIdx.x; task < pairs * batch; task += gridDim.x) {
    const int64_t k = task / pairs;
    int64_t bi, bj;
    tri_pair(task - k * pairs, nt, &bi, &bj);
    T* A = base + k * nn;
    const U i0 = static_cast<U>(bi * W), j0 = static_cast<U>(bj * W);
    // s1 <- tile (bi, bj), s2 <- tile (bj, bi)
    for (int r = ty; r < W; r += kSqRows) {
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const int x = tx + c * kSqTile;
        const U i = i0 + r, j = j0 + x;
        if (i < n && j < n) s1[r][x] = A[static_cast<int64_t>(i) * n + j];
        if (bi != bj) {
          const U i2 = j0 + r, j2 = i0 + x;
          if (i2 < n && j2 < n) s2[r][x] = A[static_cast<int64_t>(i2) * n + j2];
        }
      }
    }
    __syncthreads();
    for (int r = ty; r < W; r += kSqRows) {
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const int x = tx + c * kSqTile;
        // tile (bi, bj) row r col x <- old (bj, bi) transposed = s2[x][r] (diagonal: s1[x][r])
        const U i = i0 + r, j = j0 + x;
        if (i < n && j < n) A[static_cast<int64_t>(i) * n + j] = bi != bj ? s2[x][r] : s1[x][r];
        if (bi != bj) {
          const U i2 = j0 + r, j2 = i0 + x;
          if (i2 < n && j2 < n) A[static_cast<int64_t>(i2) * n + j2] = s1[x][r];
        }
      }
    }
    __syncthreads();
  }
}

}  // namespace kernels
}  // namespace torch_inplace

#ifdef TORCH_INPLACE_HIP_CHECK
namespace torch_inplace {
namespace kernels {
#define TI_INST_SQ(T, C)                                                                            \
  template __global__ void square_swap_kernel<T, uint32_t, C>(T*, uint32_t, int64_t, int64_t, int64_t); \
  template __global__ void square_swap_kernel<T, uint64_t, C>(T*, uint64_t, int64_t, int64_t, int64_t);
TI_INST_SQ(uint8_t, 1)
TI_INST_SQ(uint8_t, 4)
TI_INST_SQ(uint16_t, 1)
TI_INST_SQ(uint16_t, 2)
TI_INST_SQ(uint32_t, 1)
TI_INST_SQ(uint32_t, 2)
TI_INST_SQ(uint64_t, 1)
TI_INST_SQ(Bytes16, 1)
static_assert(sq_cols<uint8_t>() == 4 && sq_cols<uint16_t>() == 2 && sq_cols<uint32_t>() == 2 &&
                  sq_cols<uint64_t>() == 1 && sq_cols<Bytes16>() == 1,
              "the instantiations above");
#undef TI_INST_SQ
}  // namespace kernels
}  // namespace torch_inplace
#endif
