// GPU time of the ordered in-place row shift (kernels/transpose/skinny.cuh ordered_shift_kernel: the skinny and
// Karlsson cuts' spreading / packing of F rows, the padded plan's packing) against variants, on the shapes the
// library gives it, next to a device-to-device copy of the same bytes in the same process. Standalone (no
// PyTorch); every variant's result is checked on the device against the shift's definition.
//
//   right (spread): element x of the packed rows moves to x + (x / body) * r;
//   left  (pack):   element y of the packed destination comes from y + (y / body) * r.
//
// Variants (all keep the library kernel's protocol: chunks in the safe order through a ticket, a chunk writes once
// the chunks within reach of its destination have loaded):
//   div      the library kernel before it used a strength-reduced division (a 64-bit division per element; MODE 3);
//   lib      the library kernel (E = 64 bytes per thread); wide: 128 bytes per thread, half: 32.
// DIAG=1 runs each correctness check five times and adds divhalf (div with 32 bytes a thread) and three kernels
// that carry the row index from element to element instead of dividing (h-plain as the library had it for one
// commit, h-smem with the values staged in shared memory before the barrier, h-count with every thread counting
// itself into the chunk's flag). With 8 elements a thread (fp32) h-plain and h-count gave wrong results on the left
// shifts, values loaded for one chunk landing at another's addresses, also where no other chunk writes (a
// miscompile, sm_90 / nvcc 13.0); h-smem and every dividing kernel were right. history_shift_harness.log.
//
//   nvcc -std=c++17 -arch=sm_90 -O3 --expt-relaxed-constexpr -I csrc benchmarks/shift_harness.cu -o /tmp/shift &&
//   /tmp/shift
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "harness_common.cuh"
#include "kernels/transpose/skinny.cuh"

using namespace torch_inplace::kernels;

// The library kernel's protocol with other row computations. MODE 3: a 64-bit division per element (the library
// before this harness). Diagnostics, the row index carried from element to element (one division per thread and
// chunk): MODE 0 as the library had it in the working tree; MODE 1: the loaded values staged in shared memory before
// the barrier; MODE 2: every thread fences and counts itself into the chunk's flag (a chunk has loaded when its flag
// reaches blockDim.x).
template <typename T, int E, bool kRight, int MODE>
__global__ void __launch_bounds__(kShiftThreads)
    shift_mode_kernel(T* __restrict__ A, int64_t F, int64_t body, int64_t r, unsigned* flags, int64_t nchunks,
                      DivMod<uint64_t> dm_body) {
  __shared__ int64_t s_chunk;
  __shared__ T s_v[MODE == 1 ? E * kShiftThreads : 1];
  const int64_t C = static_cast<int64_t>(E) * blockDim.x;
  const int64_t X = F * body;
  const int64_t reach = ((F - 1) * r + C - 1) / C + 1;
  const unsigned done = MODE == 2 ? blockDim.x : 1u;
  unsigned* ticket = flags + nchunks;
  while (true) {
    if (threadIdx.x == 0) {
      const int64_t t = atomicAdd(ticket, 1u);
      s_chunk = t < nchunks ? (kRight ? nchunks - 1 - t : t) : -1;
    }
    __syncthreads();
    const int64_t i = s_chunk;
    __syncthreads();
    if (i < 0) return;
    T v[E];
    const int64_t x0 = i * C + threadIdx.x;
    uint64_t rem0;
    const int64_t row0 = static_cast<int64_t>(dm_body.div(static_cast<uint64_t>(x0), &rem0));
    const int64_t next0 = x0 - static_cast<int64_t>(rem0) + body;
    auto step_row = [&](int64_t x, int64_t& row, int64_t& next) {
      if (MODE == 3) {
        row = x / body;
      } else if (x >= next) {
        uint64_t rem;
        row = static_cast<int64_t>(dm_body.div(static_cast<uint64_t>(x), &rem));
        next = x - static_cast<int64_t>(rem) + body;
      }
    };
    {
      int64_t row = row0, next = next0;
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const int64_t x = x0 + e * static_cast<int64_t>(blockDim.x);
        if (!kRight) step_row(x, row, next);
        if (x < X) v[e] = kRight ? A[x] : A[x + row * r];
        if (MODE == 1) s_v[e * blockDim.x + threadIdx.x] = v[e];
      }
    }
    __threadfence();
    if (MODE == 2) atomicAdd(flags + i, 1u);
    __syncthreads();
    if (MODE != 2 && threadIdx.x == 0) atomicExch(flags + i, 1u);
    const int64_t first = kRight ? i + 1 : (i - reach > 0 ? i - reach : 0);
    const int64_t last = kRight ? (i + reach < nchunks - 1 ? i + reach : nchunks - 1) : i - 1;
    for (int64_t j = first + threadIdx.x; j <= last; j += blockDim.x) {
      while (*reinterpret_cast<volatile unsigned*>(flags + j) < done) {
      }
    }
    __threadfence();
    __syncthreads();
    int64_t row = row0, next = next0;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int64_t x = x0 + e * static_cast<int64_t>(blockDim.x);
      if (kRight) step_row(x, row, next);
      const T val = MODE == 1 ? s_v[e * blockDim.x + threadIdx.x] : v[e];
      if (x < X) {
        if (kRight) {
          A[x + row * r] = val;
        } else {
          A[x] = val;
        }
      }
    }
    if (MODE == 1) __syncthreads();
  }
}

// Deterministic bits of position x.
template <typename T>
__global__ void fill_kernel(T* a, int64_t n) {
  for (int64_t x = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; x < n; x += (int64_t)gridDim.x * blockDim.x) {
    uint64_t h = (uint64_t)(x + 1) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    T v;
    unsigned char* p = reinterpret_cast<unsigned char*>(&v);
    for (size_t b = 0; b < sizeof(T); ++b) p[b] = static_cast<unsigned char>(h >> (8 * (b % 8)));
    a[x] = v;
  }
}

template <typename T>
__device__ bool same(const T& a, const T& b) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(&a);
  const unsigned char* q = reinterpret_cast<const unsigned char*>(&b);
  for (size_t k = 0; k < sizeof(T); ++k)
    if (p[k] != q[k]) return false;
  return true;
}

// Mismatches of A against the shift of orig.
template <typename T, bool kRight>
__global__ void check_kernel(const T* A, const T* orig, int64_t F, int64_t body, int64_t r,
                             unsigned long long* bad) {
  const int64_t X = F * body;
  unsigned long long b = 0;
  for (int64_t x = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; x < X; x += (int64_t)gridDim.x * blockDim.x) {
    const int64_t u = x + (x / body) * r;
    const bool wrong = kRight ? !same(A[u], orig[x]) : !same(A[x], orig[u]);
    b += wrong;
    if (wrong && bad[1] < 8) {
      const unsigned long long k = atomicAdd(&bad[1], 1ull);
      if (k < 8) bad[2 + k] = static_cast<unsigned long long>(x);
    }
  }
  if (b) atomicAdd(bad, b);
}

struct Case {
  const char* what;
  int es;
  int64_t F, body, r;
  bool right;
};

template <typename T, bool kRight>
void run_case(const Case& c, int sms) {
  const int64_t X = c.F * c.body, total = c.F * (c.body + c.r);
  T *A, *orig, *cp;
  unsigned* flags;
  unsigned long long* bad;
  CK(cudaMalloc(&A, total * sizeof(T)));
  CK(cudaMalloc(&orig, total * sizeof(T)));
  CK(cudaMalloc(&cp, total * sizeof(T)));
  const int64_t max_chunks = X * static_cast<int64_t>(sizeof(T)) / (16 * kShiftThreads) + 2;  // >= 16 B a thread
  CK(cudaMalloc(&flags, (max_chunks + 1) * 4));
  CK(cudaMalloc(&bad, 10 * sizeof(unsigned long long)));
  fill_kernel<T><<<1024, 256>>>(orig, total);
  CK(cudaGetLastError());
  const double bytes = 2.0 * X * sizeof(T);
  const float copy_ms = time_ms([&] { CK(cudaMemcpyAsync(cp, orig, X * sizeof(T), cudaMemcpyDeviceToDevice)); });
  std::printf("%-34s es %2d F %6lld body %9lld r %5lld %s: copy %.3f ms (%.2f TB/s)\n", c.what, c.es, (long long)c.F,
              (long long)c.body, (long long)c.r, kRight ? "right" : "left ", copy_ms, bytes / copy_ms / 1e9);
  auto variant = [&](const char* name, auto kernel, int E) {
    const int64_t C = int64_t{E} * kShiftThreads;
    const int64_t nchunks = (X + C - 1) / C;
    const int grid = static_cast<int>(std::min<int64_t>(nchunks, int64_t{sms} * 8));
    auto launch = [&] {
      CK(cudaMemsetAsync(flags, 0, (nchunks + 1) * 4));
      kernel<<<grid, kShiftThreads>>>(A, c.F, c.body, c.r, flags, nchunks, DivMod<uint64_t>(c.body));
    };
    unsigned long long nbad = 0;
    for (int trial = 0; trial < (std::getenv("DIAG") ? 5 : 1); ++trial) {
      CK(cudaMemcpy(A, orig, total * sizeof(T), cudaMemcpyDeviceToDevice));
      launch();
      CK(cudaGetLastError());
      CK(cudaMemset(bad, 0, 10 * sizeof(unsigned long long)));
      check_kernel<T, kRight><<<1024, 256>>>(A, orig, c.F, c.body, c.r, bad);
      unsigned long long hb[10];
      CK(cudaMemcpy(hb, bad, sizeof(hb), cudaMemcpyDeviceToHost));
      const unsigned long long b = hb[0];
      if (std::getenv("DIAG")) {
        std::printf("      %s trial %d: %llu wrong", name, trial, b);
        for (int k = 0; k < 8 && k < (int)hb[1]; ++k) {
          const long long x = (long long)hb[2 + k];
          std::printf("  [x %lld chunk %lld +%lld row %lld +%lld]", x, x / (E * kShiftThreads),
                      x % (E * kShiftThreads), x / c.body, x % c.body);
        }
        std::printf("\n");
      }
      nbad += b;
    }
    const float ms = time_ms(launch);
    std::printf("    %-8s %.3f ms %.2f TB/s  (%.2fx the copy's time)  %s\n", name, ms, bytes / ms / 1e9, ms / copy_ms,
                nbad ? "WRONG" : "ok");
  };
  constexpr int E = shift_elems<T>();
  variant("div", shift_mode_kernel<T, E, kRight, 3>, E);
  variant("lib", ordered_shift_kernel<T, E, kRight>, E);
  variant("wide", ordered_shift_kernel<T, 2 * E, kRight>, 2 * E);
  constexpr int H = (E / 2 > 0) ? E / 2 : 1;
  variant("half", ordered_shift_kernel<T, H, kRight>, H);
  if (std::getenv("DIAG")) {
    variant("divhalf", shift_mode_kernel<T, H, kRight, 3>, H);
    variant("h-smem", shift_mode_kernel<T, H, kRight, 1>, H);
    variant("h-count", shift_mode_kernel<T, H, kRight, 2>, H);
    variant("h-plain", shift_mode_kernel<T, H, kRight, 0>, H);
  }
  CK(cudaFree(A));
  CK(cudaFree(orig));
  CK(cudaFree(cp));
  CK(cudaFree(flags));
  CK(cudaFree(bad));
}

template <typename T>
void dispatch(const Case& c, int sms) {
  if (c.right) {
    run_case<T, true>(c, sms);
  } else {
    run_case<T, false>(c, sms);
  }
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s\n", prop.name);
  const Case cases[] = {
      {"cut 10007 x 10000 fp32 (spread)", 4, 10000, 10000, 7, true},
      {"cut 10000 x 10031 fp32 (pack)", 4, 10000, 10000, 31, false},
      {"cut 8200 x 8192 fp64 (spread)", 8, 8192, 8192, 8, true},
      {"cut 13013 x 13000 u8 (spread)", 1, 13000, 13000, 13, true},
      {"cut 7002 x 7000 bf16 (spread)", 2, 7000, 7000, 2, true},
      {"skinny 4435807 x 22 fp32 (spread)", 4, 22, 4435712, 95, true},
      {"skinny 22 x 4435807 fp32 (pack)", 4, 22, 4435712, 95, false},
      {"skinny 5663237 x 13 fp64 (spread)", 8, 13, 5663232, 5, true},
      {"padded 300007 x 1500 fp32 (pack)", 4, 1500, 300007, 193, false},
  };
  for (const Case& c : cases) {
    switch (c.es) {
      case 1: dispatch<uint8_t>(c, prop.multiProcessorCount); break;
      case 2: dispatch<uint16_t>(c, prop.multiProcessorCount); break;
      case 4: dispatch<uint32_t>(c, prop.multiProcessorCount); break;
      default: dispatch<uint64_t>(c, prop.multiProcessorCount); break;
    }
  }
  return 0;
}
