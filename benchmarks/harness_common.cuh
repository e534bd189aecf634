// Shared pieces of the standalone CUDA harnesses (split_inverse_harness.cu, small_lu_harness.cu,
// small_lu_complex_harness.cu, medium_lu_harness.cu, dmma_inverse_harness.cu, shift_harness.cu, tiles_harness.cu,
// onchip_harness.cu, onchip_skinny_harness.cu, one_by_one_harness.cu): error check, the small LU harnesses' batch and
// grid, random matrices with moving pivots and some singular ones, bitwise comparison and hashes of output bits, event
// timing (back to back, or each call queued behind a sleep kernel) and the device copy bandwidth.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t err_ = (x);                                                                     \
    if (err_ != cudaSuccess) {                                                                  \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(err_), __FILE__, __LINE__);      \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

// The small LU / inverse harnesses: matrices per run, 2^20 for n <= 16 and 2^18 above, as bench_linalg.py; and
// (small_lu_harness.cu, small_lu_complex_harness.cu) the launcher's grid (ops/cuda/lu_launch.cuh): a warp per tile of
// `per_block` / warps matrices, capped at the blocks resident at once for the persistent kernels.
constexpr int64_t batch_of(int n) { return n <= 16 ? int64_t(1) << 20 : int64_t(1) << 18; }
constexpr int kMaxBlockSmem = 48 * 1024;  // the launcher clamps warps a block to this much shared memory
template <typename Kernel>
unsigned grid_for(Kernel kernel, bool persistent, int64_t batch, int64_t per_block, int warps, int smem) {
  int64_t blocks = (batch + per_block - 1) / per_block;
  if (persistent) {
    int per_sm = 0, sms = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, warps * 32, smem));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    blocks = std::min<int64_t>(blocks, static_cast<int64_t>(per_sm) * sms);
  }
  return static_cast<unsigned>(blocks);
}

// Random entries in [-1, 1) plus a dominant entry per row at a column that moves with the matrix (so the pivots
// move); matrix m % 97 == 5 gets row 1 = row 0 (singular).
template <typename T>
__global__ void fill(T* a, int n, int64_t total) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t m = e / ((int64_t)n * n), r0 = (e / n) % n, c = e % n;
    const int64_t r = (m % 97 == 5 && r0 == 1) ? 0 : r0;
    const int64_t src = (m * n + r) * n + c;
    uint64_t h = (uint64_t)src * 0x9E3779B97F4A7C15ull;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    const double u = (double)(h >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
    a[e] = (T)(u + (((r + m) % n) == c ? 0.5 * std::sqrt((double)n) : 0.0));
  }
}

// Entries whose bits differ (on the device: no copies of the whole batch).
template <typename T>
__global__ void count_diff(const T* x, const T* y, int64_t total, unsigned long long* diff) {
  unsigned long long d = 0;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    if constexpr (sizeof(T) == 8) {
      d += __double_as_longlong(x[e]) != __double_as_longlong(y[e]);
    } else {
      d += __float_as_uint(x[e]) != __float_as_uint(y[e]);
    }
  }
  if (d) atomicAdd(diff, d);
}

// Order-independent hash of `count` 32-bit words (position-weighted), summed with atomics.
__global__ void hash_words(const uint32_t* w, int64_t count, unsigned long long* out) {
  unsigned long long h = 0;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < count; e += (int64_t)gridDim.x * blockDim.x) {
    unsigned long long x = (static_cast<unsigned long long>(w[e]) + 1) * (2 * static_cast<unsigned long long>(e) + 1);
    x ^= x >> 29;
    h += x * 0xBF58476D1CE4E5B9ull;
  }
  atomicAdd(out, h);
}

inline unsigned long long hash_of(const void* p, int64_t bytes) {
  unsigned long long* d;
  CK(cudaMalloc(&d, 8));
  CK(cudaMemset(d, 0, 8));
  hash_words<<<1024, 256>>>(static_cast<const uint32_t*>(p), bytes / 4, d);
  unsigned long long h = 0;
  CK(cudaMemcpy(&h, d, 8, cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  return h;
}

template <typename F>
float time_ms(F&& launch) {
  cudaEvent_t s, e;
  CK(cudaEventCreate(&s));
  CK(cudaEventCreate(&e));
  launch();
  launch();
  std::vector<float> ts;
  for (int r = 0; r < 9; ++r) {
    CK(cudaEventRecord(s));
    launch();
    CK(cudaEventRecord(e));
    CK(cudaEventSynchronize(e));
    float ms;
    CK(cudaEventElapsedTime(&ms, s, e));
    ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

// Device copy bandwidth (bytes read plus written per second, GB/s) of a 1 GiB copy, the roofline's speed.
inline double copy_gbps() {
  const size_t bytes = size_t(1) << 30;
  void *a, *b;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 1, bytes));
  const float ms = time_ms([&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); });
  CK(cudaFree(a));
  CK(cudaFree(b));
  return 2.0 * bytes / (ms * 1e-3) / 1e9;
}

// Keeps the GPU busy for `cycles` clocks, so that calls enqueued behind it are timed on the GPU alone.
__global__ void sleep_kernel(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

// Median microseconds of one call over `reps` calls after `warmup`: queued behind a sleep kernel (the GPU's time
// alone, launch included: what small kernels cost inside a stream of work), or, with queued = false, each call on an
// idle GPU (the host's cost of issuing it included, as bench_transpose.py's per-call figure).
template <typename F>
double time_us_median(F&& launch, bool queued, int reps = 21, int warmup = 2, long long sleep_cycles = 400000) {
  cudaEvent_t s, e;
  CK(cudaEventCreate(&s));
  CK(cudaEventCreate(&e));
  std::vector<float> t;
  for (int r = 0; r < reps + warmup; ++r) {
    if (queued) {
      sleep_kernel<<<1, 1>>>(sleep_cycles);
    } else {
      CK(cudaDeviceSynchronize());
    }
    CK(cudaEventRecord(s));
    launch();
    CK(cudaEventRecord(e));
    CK(cudaEventSynchronize(e));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, s, e));
    if (r >= warmup) t.push_back(ms * 1e3f);
  }
  std::sort(t.begin(), t.end());
  CK(cudaEventDestroy(s));
  CK(cudaEventDestroy(e));
  return t[t.size() / 2];
}

template <typename F>
double time_us_queued(F&& launch, int reps = 21, int warmup = 2, long long sleep_cycles = 400000) {
  return time_us_median(launch, true, reps, warmup, sleep_cycles);
}
