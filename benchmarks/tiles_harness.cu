// GPU time of the skinny path's tile pass (kernels/transpose/skinny.cuh: count contiguous R x C tiles, each
// transposed to C x R through shared memory; 010! of sequence 2.1) against a copy of the same bytes, per kernel:
//   vec     group_tiles_vec_kernel (16-byte global accesses; each thread stages and gathers 16 bytes of elements
//           through the odd-stride tile, so a warp's shared-memory accesses fall 4 to a bank);
//   scalar  group_tiles_kernel (one element per thread and step: conflict-free staging, 4-byte global accesses);
//   hybrid  group_tiles_hybrid_kernel: 16-byte global loads staged unpadded with 16-byte shared stores
//           (conflict-free), then one element per thread and step gathered (stride C in shared memory: conflict-free
//           where C words is odd) and written with element stores. It was this harness's own kernel first; the
//           launcher now takes it where C words is not a multiple of 8 (hybrid_tiles).
// The tile shapes are the planner's for AoS <-> SoA (k x F tiles, k * esize = 1 KiB) on tensors of ~400 MB.
// Standalone (no PyTorch); every result is checked on the device.
//
//   nvcc -std=c++17 -arch=sm_90 -O3 --expt-relaxed-constexpr -I csrc benchmarks/tiles_harness.cu -o /tmp/tiles &&
//   /tmp/tiles
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "harness_common.cuh"
#include "kernels/transpose/skinny.cuh"

using namespace torch_inplace::kernels;

template <typename T>
__global__ void fill_kernel(T* a, int64_t n) {
  for (int64_t x = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; x < n; x += (int64_t)gridDim.x * blockDim.x) {
    uint64_t h = (uint64_t)(x + 1) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    a[x] = static_cast<T>(h);
  }
}

// Mismatches of A (tiles transposed) against orig.
template <typename T>
__global__ void check_kernel(const T* A, const T* orig, int64_t n, uint32_t R, uint32_t C, unsigned long long* bad) {
  unsigned long long b = 0;
  const int64_t rc = static_cast<int64_t>(R) * C;
  for (int64_t x = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; x < n; x += (int64_t)gridDim.x * blockDim.x) {
    const int64_t t = x / rc, o = x % rc, i = o / C, j = o % C;  // input (i, j) of tile t
    b += A[t * rc + j * R + i] != orig[x];
  }
  if (b) atomicAdd(bad, b);
}

struct Case {
  const char* what;
  int es;
  uint32_t R, C;
};

template <typename T>
void run_case(const Case& c, const cudaDeviceProp& prop) {
  const int64_t rc = int64_t{c.R} * c.C;
  const int64_t tiles = (int64_t{400} << 20) / (rc * static_cast<int64_t>(sizeof(T)));
  const int64_t n = tiles * rc;
  T *A, *orig;
  unsigned long long* bad;
  CK(cudaMalloc(&A, n * sizeof(T)));
  CK(cudaMalloc(&orig, n * sizeof(T)));
  CK(cudaMalloc(&bad, sizeof(unsigned long long)));
  fill_kernel<T><<<1024, 256>>>(orig, n);
  const double bytes = 2.0 * n * sizeof(T);
  const float copy_ms = time_ms([&] { CK(cudaMemcpyAsync(A, orig, n * sizeof(T), cudaMemcpyDeviceToDevice)); });
  std::printf("%-28s es %2d tiles %u x %u (%lld): copy %.3f ms (%.2f TB/s)\n", c.what, c.es, c.R, c.C,
              (long long)tiles, copy_ms, bytes / copy_ms / 1e9);
  const int64_t S = c.C | 1;
  const int64_t tile_bytes = c.R * S * static_cast<int64_t>(sizeof(T));
  const int64_t G = std::max<int64_t>(1, std::min<int64_t>(tiles, (32 * 1024) / tile_bytes));
  const int64_t groups = (tiles + G - 1) / G;
  const int grid = static_cast<int>(std::min<int64_t>(groups, int64_t{prop.multiProcessorCount} * 16));
  auto variant = [&](const char* name, auto launch) {
    CK(cudaMemcpy(A, orig, n * sizeof(T), cudaMemcpyDeviceToDevice));
    launch();
    CK(cudaGetLastError());
    CK(cudaMemset(bad, 0, sizeof(unsigned long long)));
    check_kernel<T><<<1024, 256>>>(A, orig, n, c.R, c.C, bad);
    unsigned long long nbad = 0;
    CK(cudaMemcpy(&nbad, bad, sizeof(nbad), cudaMemcpyDeviceToHost));
    const float ms = time_ms(launch);
    std::printf("    %-8s %.3f ms %.2f TB/s  (%.2fx the copy's time)  %s\n", name, ms, bytes / ms / 1e9, ms / copy_ms,
                nbad ? "WRONG" : "ok");
  };
  const DivMod<uint32_t> dt(static_cast<uint32_t>(rc)), dc(c.C), dr(c.R);
  const int64_t smem = G * tile_bytes;
  {
    auto k = group_tiles_vec_kernel<T, uint4>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    variant("vec", [&] {
      k<<<grid, kGroupThreads, smem>>>(A, tiles, (uint32_t)G, c.R, c.C, (uint32_t)S, dt, dc, dr);
    });
  }
  {
    auto k = group_tiles_kernel<T>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    variant("scalar", [&] {
      k<<<grid, kGroupThreads, smem>>>(A, tiles, (uint32_t)G, c.R, c.C, (uint32_t)S, dt, dc, dr);
    });
  }
  if (sizeof(T) >= 4) {  // the hybrid kernel takes 4- and 8-byte elements
    const int64_t smem_h = G * rc * static_cast<int64_t>(sizeof(T));
    auto k = group_tiles_hybrid_kernel<T>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_h)));
    variant("hybrid", [&] { k<<<grid, kGroupThreads, smem_h>>>(A, tiles, (uint32_t)G, c.R, c.C, dt, dr); });
  }
  CK(cudaFree(A));
  CK(cudaFree(orig));
  CK(cudaFree(bad));
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s\n", prop.name);
  const Case cases[] = {
      {"AoS -> SoA fp32, 22 fields", 4, 256, 22}, {"SoA -> AoS fp32, 22 fields", 4, 22, 256},
      {"AoS -> SoA fp32, 13 fields", 4, 256, 13}, {"SoA -> AoS fp32, 13 fields", 4, 13, 256},
      {"AoS -> SoA fp32, 6 fields", 4, 256, 6},   {"SoA -> AoS fp32, 27 fields", 4, 27, 256},
      {"AoS -> SoA fp64, 22 fields", 8, 128, 22}, {"SoA -> AoS fp64, 22 fields", 8, 22, 128},
      {"AoS -> SoA fp64, 8 fields", 8, 128, 8},   {"SoA -> AoS fp64, 13 fields", 8, 13, 128},
      // k = 380 (a row of C = 380 words is not a multiple of 8: the launcher's hybrid kernel both ways)
      {"AoS -> SoA fp32, 17 fields", 4, 380, 17}, {"SoA -> AoS fp32, 17 fields", 4, 17, 380},
      {"AoS -> SoA int16, 22 fields", 2, 512, 22}, {"SoA -> AoS int16, 22 fields", 2, 22, 512},
      {"AoS -> SoA uint8, 13 fields", 1, 1024, 13}, {"SoA -> AoS uint8, 13 fields", 1, 13, 1024},
  };
  for (const Case& c : cases) {
    if (c.es == 1) {
      run_case<uint8_t>(c, prop);
    } else if (c.es == 2) {
      run_case<uint16_t>(c, prop);
    } else if (c.es == 4) {
      run_case<uint32_t>(c, prop);
    } else {
      run_case<uint64_t>(c, prop);
    }
  }
  return 0;
}
