// Square matrices: swap each tile pair (bi, bj), (bj, bi) across the diagonal through shared memory, each
// transposed on the way (diagonal tiles transpose in place). One read and one write of every element.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common.cuh"

namespace torch_inplace {
namespace kernels {

constexpr int kSqTile = 32;
constexpr int kSqRows = 8;  // block is kSqTile x kSqRows threads

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

template <typename T, typename U>
__global__ void square_swap_kernel(T* __restrict__ base, U n, int64_t nt, int64_t pairs, int64_t batch) {
  __shared__ T s1[kSqTile][kSqTile + 1];
  __shared__ T s2[kSqTile][kSqTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t nn = static_cast<int64_t>(n) * n;
  for (int64_t task = blockIdx.x; task < pairs * batch; task += gridDim.x) {
    const int64_t k = task / pairs;
    int64_t bi, bj;
    tri_pair(task - k * pairs, nt, &bi, &bj);
    T* A = base + k * nn;
    const U i0 = static_cast<U>(bi * kSqTile), j0 = static_cast<U>(bj * kSqTile);
    // s1 <- tile (bi, bj), s2 <- tile (bj, bi)
    for (int r = ty; r < kSqTile; r += kSqRows) {
      const U i = i0 + r, j = j0 + tx;
      if (i < n && j < n) s1[r][tx] = A[static_cast<int64_t>(i) * n + j];
      if (bi != bj) {
        const U i2 = j0 + r, j2 = i0 + tx;
        if (i2 < n && j2 < n) s2[r][tx] = A[static_cast<int64_t>(i2) * n + j2];
      }
    }
    __syncthreads();
    for (int r = ty; r < kSqTile; r += kSqRows) {
      // tile (bi, bj) row r col tx <- old (bj, bi) transposed = s2[tx][r] (diagonal: s1[tx][r])
      const U i = i0 + r, j = j0 + tx;
      if (i < n && j < n) A[static_cast<int64_t>(i) * n + j] = bi != bj ? s2[tx][r] : s1[tx][r];
      if (bi != bj) {
        const U i2 = j0 + r, j2 = i0 + tx;
        if (i2 < n && j2 < n) A[static_cast<int64_t>(i2) * n + j2] = s1[tx][r];
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
#define TI_INST_SQ(T)                                                                        \
  template __global__ void square_swap_kernel<T, uint32_t>(T*, uint32_t, int64_t, int64_t, int64_t); \
  template __global__ void square_swap_kernel<T, uint64_t>(T*, uint64_t, int64_t, int64_t, int64_t);
TI_INST_SQ(uint8_t)
TI_INST_SQ(uint16_t)
TI_INST_SQ(uint32_t)
TI_INST_SQ(uint64_t)
TI_INST_SQ(Bytes16)
#undef TI_INST_SQ
}  // namespace kernels
}  // namespace torch_inplace
#endif
