// Standalone timing of the small LU / inverse kernels (kernels/lu/small_lu.cuh) for n = 1..16 (up to 32 with
// -DSLH_N_MAX=32), float32 and float64, 2^20 matrices (2^18 for n > 16, as bench_linalg.py), every (rows per lane,
// warps per block) the library can launch, with the launcher's grid rules (ops/cuda/lu_launch.cuh: warps clamped at
// 48 KiB of shared memory per block, the persistent grid capped at the resident blocks). The split-rows inverse
// (rows -2) has its own harness (split_inverse_harness.cu). Built against two versions of small_lu.cuh, it compares
// kernels in one run (tools/lu_ab.sh):
//   nvcc -std=c++17 -arch=sm_90 -O3 --expt-relaxed-constexpr -I csrc benchmarks/small_lu_harness.cu -o /tmp/slh
//   /tmp/slh [n [element bytes]]     (only that n / element size: profiling with ncu)
// -DSLH_N_MIN=a -DSLH_N_MAX=b compile only n = a..b (a quicker build; tools/lu_ab.sh builds ranges in parallel).
// n = 1 also times the elementwise one_by_one_kernel (w0 r0), the one the library launches there.
// Prints one line per configuration: median ms of 9 launches (CUDA events), GB/s and the fraction of the roofline
// 2 B n^2 sizeof(T) at the copy bandwidth measured first, and a hash of the output bits (factors or inverse, pivots,
// infos) that two builds must share.
#include <utility>

#include "harness_common.cuh"
#include "kernels/lu/small_lu.cuh"

using namespace torch_inplace::kernels;

constexpr int64_t kBatch = batch_of(1);  // n = 1 (the elementwise kernel) and the buffers' size

struct Buffers {
  void *a, *x;
  int32_t *piv, *info;
};

template <typename T, int N, int R>
void run_rows(const Buffers& b, double gbps) {
  using Geo = lu::Geometry<T, N, R>;
#ifdef TI_LU_ROWS_SUPPORTED
  constexpr bool kLaunched = lu::rows_supported<T, N, R>();
#else  // a small_lu.cuh from before 2026-11-26's session 31: the launcher's rule then
  constexpr bool kLaunched = R == 1 || (R < 2 * N && R * N * static_cast<int>(sizeof(T)) <= (R == 4 ? 576 : 512));
#endif
  if constexpr (kLaunched) {
    const char* dt = sizeof(T) == 8 ? "float64" : "float32";
    constexpr int64_t kB = batch_of(N);
    const double bytes = 2.0 * kB * N * N * sizeof(T);
    for (int kind = 0; kind < 2; ++kind) {
      for (int w0 : {1, 2, 4, 8}) {
        int w = w0;
        while (w > 1 && w * Geo::kWarpSmemBytes > kMaxBlockSmem) --w;
        if (w != w0) continue;  // the launcher would clamp it: the same as a smaller count
#ifdef TI_LU_REG_BOUNDS  // the kernels' launch bounds: at most 4 warps a block under a 64- or 72-register bound
        const int regs = kind == 0 ? lu::lu_reg_bound<T, N, R, 0>() : lu::lu_reg_bound<T, N, R, 1>();
        if (w * 32 > lu::lu_bound_threads(regs)) continue;
#endif
        const int smem = w * Geo::kWarpSmemBytes;
        const bool persistent = lu::lu_persistent<T, N, R>();
        const T* a = static_cast<const T*>(b.a);
        T* x = static_cast<T*>(b.x);
        float ms;
        if (kind == 0) {
          auto k = lu::small_lu_kernel<T, N, R>;
          const unsigned g = grid_for(k, persistent, kB, static_cast<int64_t>(w) * Geo::kGroups, w, smem);
          ms = time_ms([&] { k<<<g, w * 32, smem>>>(a, x, b.piv, b.info, kB, true); });
        } else {
          auto k = lu::small_inverse_kernel<T, N, R>;
          const unsigned g = grid_for(k, persistent, kB, static_cast<int64_t>(w) * Geo::kGroups, w, smem);
          ms = time_ms([&] { k<<<g, w * 32, smem>>>(a, x, b.info, kB, true); });
        }
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        unsigned long long h = hash_of(x, kB * N * N * sizeof(T)) + 3 * hash_of(b.info, kB * 4);
        if (kind == 0) h += 7 * hash_of(b.piv, kB * N * 4);
        const double gb = bytes / (ms * 1e-3) / 1e9;
        std::printf("%-7s %s n=%2d w%d r%d %8.4f ms %7.0f GB/s roofline %5.1f%% hash %016llx\n",
                    kind == 0 ? "lu" : "inverse", dt, N, w, R, ms, gb, 100.0 * gb / gbps, h);
        std::fflush(stdout);
      }
    }
  }
}

// n = 1: the elementwise kernel (one_by_one_kernel, reported as w0 r0) as the launcher runs it.
template <typename T>
void run_one_by_one(const Buffers& b, double gbps) {
  constexpr int kV = lu::Geometry<T, 1>::kV;
  const unsigned blocks = static_cast<unsigned>((kBatch / kV + 255) / 256);
  const T* a = static_cast<const T*>(b.a);
  T* x = static_cast<T*>(b.x);
  for (int kind = 0; kind < 2; ++kind) {
    const float ms = time_ms([&] {
      if (kind == 0) {
        lu::one_by_one_kernel<T, 0><<<blocks, 256>>>(a, x, b.piv, b.info, kBatch);
      } else {
        lu::one_by_one_kernel<T, 1><<<blocks, 256>>>(a, x, nullptr, b.info, kBatch);
      }
    });
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    unsigned long long h = hash_of(x, kBatch * sizeof(T)) + 3 * hash_of(b.info, kBatch * 4);
    if (kind == 0) h += 7 * hash_of(b.piv, kBatch * 4);
    const double gb = 2.0 * kBatch * sizeof(T) / (ms * 1e-3) / 1e9;
    std::printf("%-7s %s n=%2d w%d r%d %8.4f ms %7.0f GB/s roofline %5.1f%% hash %016llx\n",
                kind == 0 ? "lu" : "inverse", sizeof(T) == 8 ? "float64" : "float32", 1, 0, 0, ms, gb,
                100.0 * gb / gbps, h);
    std::fflush(stdout);
  }
}

int g_only_n = 0, g_only_bytes = 0;  // command line: [n [element bytes]] runs only those (profiling)

#ifndef SLH_N_MIN
#define SLH_N_MIN 1
#endif
#ifndef SLH_N_MAX
#define SLH_N_MAX 16
#endif
static_assert(SLH_N_MIN >= 1 && SLH_N_MAX <= 32, "the small kernels cover 1 <= n <= 32");

template <typename T, int N>
void run_n(const Buffers& b, double gbps) {
  if constexpr (N >= SLH_N_MIN && N <= SLH_N_MAX) {
    if ((g_only_n && N != g_only_n) || (g_only_bytes && static_cast<int>(sizeof(T)) != g_only_bytes)) return;
    fill<<<1024, 256>>>(static_cast<T*>(b.a), N, batch_of(N) * N * N);
    CK(cudaGetLastError());
    if constexpr (N == 1) run_one_by_one<T>(b, gbps);
    run_rows<T, N, 1>(b, gbps);
    run_rows<T, N, 2>(b, gbps);
    run_rows<T, N, 3>(b, gbps);
    run_rows<T, N, 4>(b, gbps);
    if constexpr (N == 3 || (N >= 5 && N <= 8)) run_rows<T, N, N>(b, gbps);  // lu::kLaneRows (n = 2, 4: rows 2, 4)
  }
}

template <typename T, int... Ns>
void run_all(const Buffers& b, double gbps, std::integer_sequence<int, Ns...>) {
  (run_n<T, Ns + 1>(b, gbps), ...);
}

int main(int argc, char** argv) {
  if (argc > 1) g_only_n = std::atoi(argv[1]);
  if (argc > 2) g_only_bytes = std::atoi(argv[2]);
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  const double gbps = copy_gbps();
  std::printf("device %s copy %.0f GB/s batch %lld (n <= 16), %lld (n > 16)\n", p.name, gbps,
              static_cast<long long>(batch_of(16)), static_cast<long long>(batch_of(17)));
  Buffers b;
  const size_t most = std::max(batch_of(16) * 16 * 16, batch_of(32) * 32 * 32) * sizeof(double);
  CK(cudaMalloc(&b.a, most));
  CK(cudaMalloc(&b.x, most));
  CK(cudaMalloc(&b.piv, std::max(batch_of(16) * 16, batch_of(32) * 32) * 4));
  CK(cudaMalloc(&b.info, kBatch * 4));
  run_all<float>(b, gbps, std::make_integer_sequence<int, SLH_N_MAX>{});
  run_all<double>(b, gbps, std::make_integer_sequence<int, SLH_N_MAX>{});
  return 0;
}
