// Batched transposes of small contiguous r x c matrices through shared memory (the 010! elementary
// transposition of paper 000: tiles that fit on chip), one read and one write of each element. The skinny
// (AoS <-> SoA) path uses it to turn (N/k, k, F) into (N/k, F, k) and back.
#pragma once

#include <cstdint>

#include "kernels/common.cuh"
#include "kernels/transpose/divmod.cuh"

namespace torch_inplace {
namespace kernels {

constexpr int kTileThreads = 512;

// Input tile (i, j) is staged at i * (c + 1) + j (the +1 pad spreads a column over the banks).
template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    small_tiles_kernel(T* __restrict__ base, int64_t count, uint32_t r, uint32_t c, DivMod<uint32_t> dm_r,
                       DivMod<uint32_t> dm_c) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  const uint32_t rc = r * c;
  constexpr int K = 8;
  for (int64_t tile = blockIdx.x; tile < count; tile += gridDim.x) {
    T* g = base + tile * static_cast<int64_t>(rc);
    for (uint32_t t0 = threadIdx.x; t0 < rc; t0 += blockDim.x * K) {
      T v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        if (t < rc) v[s] = g[t];
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        if (t < rc) {
          uint32_t j;
          const uint32_t i = dm_c.div(t, &j);
          sm[i * (c + 1) + j] = v[s];
        }
      }
    }
    __syncthreads();
    for (uint32_t t0 = threadIdx.x; t0 < rc; t0 += blockDim.x * K) {
      T v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        if (t < rc) {
          uint32_t i;
          const uint32_t j = dm_r.div(t, &i);  // output (j, i) of the c x r result
          v[s] = sm[i * (c + 1) + j];
        }
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t t = t0 + s * blockDim.x;
        if (t < rc) g[t] = v[s];
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
#define TI_INST_TILES(T) \
  template __global__ void small_tiles_kernel<T>(T*, int64_t, uint32_t, uint32_t, DivMod<uint32_t>, DivMod<uint32_t>);
TI_INST_TILES(uint8_t)
TI_INST_TILES(uint16_t)
TI_INST_TILES(uint32_t)
TI_INST_TILES(uint64_t)
TI_INST_TILES(Bytes16)
#undef TI_INST_TILES
}  // namespace kernels
}  // namespace torch_inplace
#endif
