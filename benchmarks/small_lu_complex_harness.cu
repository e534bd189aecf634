// Standalone timing of the complex small LU / inverse kernels (kernels/lu/small_lu.cuh, one row per lane: the only
// layout complex types have) at n = NMIN..NMAX, with the warps of the library's table (ops/cuda/lu_tuning.h) and the
// launcher's grid rules, 2^20 matrices for n <= 16 and 2^18 above (as bench_linalg.py). Prints one line per kernel:
// median ms of the launches (CUDA events) and a hash of the output bits. Built against two versions of small_lu.cuh
// (an -I of the old copy first), two runs compare kernels in one session with the same bits checked (session 40:
// uncond_multipliers; the steps are in benchmarks/results/NVIDIA_H200/history_s40_pivot_keys.log):
//   nvcc -std=c++17 -arch=sm_90 -O3 --expt-relaxed-constexpr -I benchmarks [-I OLD] -I csrc -DCT=double \
//        -DNMIN=18 -DNMAX=25 benchmarks/small_lu_complex_harness.cu -o /tmp/slch
// -DCT=float: complex64, -DCT=double: complex128. Entries: random parts in [-1, 1) (harness_common.cuh's fill over
// the real and imaginary parts), so the pivots move.
#include <algorithm>
#include <cstdio>
#include <utility>

#include "harness_common.cuh"
#include "kernels/lu/small_lu.cuh"
#include "ops/cuda/lu_tuning.h"

#ifndef CT
#define CT double
#endif
#ifndef NMIN
#define NMIN 2
#endif
#ifndef NMAX
#define NMAX 32
#endif

using namespace torch_inplace::kernels;
using C = lu::Cplx<CT>;
constexpr int kDtype = sizeof(CT) == 8 ? 3 : 2;  // lu_tuning.h's row: complex64, complex128

template <int N>
void run(C* a, C* x, int32_t* piv, int32_t* info) {
  if constexpr (N >= NMIN && N <= NMAX && N >= 2) {  // n = 1 runs the elementwise kernel
    using Geo = lu::Geometry<C, N, 1>;
    constexpr int64_t kB = batch_of(N);
    fill<CT><<<1024, 256>>>(reinterpret_cast<CT*>(a), N, kB * N * N * 2);
    CK(cudaGetLastError());
    for (int kind = 0; kind < 2; ++kind) {
      int w = kind == 0 ? torch_inplace::lu_cuda::kLuWarps[kDtype][N] : torch_inplace::lu_cuda::kInvWarps[kDtype][N];
      while (w > 1 && w * Geo::kWarpSmemBytes > kMaxBlockSmem) --w;  // the launcher's clamp
      const int smem = w * Geo::kWarpSmemBytes;
      const bool persistent = lu::lu_persistent<C, N, 1>();
      const int64_t per_block = static_cast<int64_t>(w) * Geo::kGroups;
      float ms;
      if (kind == 0) {
        auto k = lu::small_lu_kernel<C, N, 1>;
        const unsigned g = grid_for(k, persistent, kB, per_block, w, smem);
        ms = time_ms([&] { k<<<g, w * 32, smem>>>(a, x, piv, info, kB, true); });
      } else {
        auto k = lu::small_inverse_kernel<C, N, 1>;
        const unsigned g = grid_for(k, persistent, kB, per_block, w, smem);
        ms = time_ms([&] { k<<<g, w * 32, smem>>>(a, x, info, kB, true); });
      }
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      unsigned long long h = hash_of(x, kB * N * N * sizeof(C)) + 3 * hash_of(info, kB * 4);
      if (kind == 0) h += 7 * hash_of(piv, kB * N * 4);
      std::printf("%-7s complex%d n=%2d w%d r1 %8.4f ms hash %016llx\n", kind == 0 ? "lu" : "inverse",
                  static_cast<int>(16 * sizeof(CT)), N, w, ms, h);
      std::fflush(stdout);
    }
  }
}

template <int... Ns>
void run_all(C* a, C* x, int32_t* piv, int32_t* info, std::integer_sequence<int, Ns...>) {
  (run<Ns + 1>(a, x, piv, info), ...);
}

int main() {
  C *a, *x;
  int32_t *piv, *info;
  const int64_t elems = std::max(batch_of(16) * 16 * 16, batch_of(32) * 32 * 32);
  CK(cudaMalloc(&a, elems * sizeof(C)));
  CK(cudaMalloc(&x, elems * sizeof(C)));
  CK(cudaMalloc(&piv, std::max(batch_of(16) * 16, batch_of(32) * 32) * 4));
  CK(cudaMalloc(&info, batch_of(1) * 4));
  run_all(a, x, piv, info, std::make_integer_sequence<int, 32>{});
  return 0;
}
