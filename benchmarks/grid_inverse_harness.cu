// Standalone check and timing of grid_inverse_kernel (kernels/lu/small_lu.cuh: a PR x PC grid of row / column blocks
// per matrix) against the kernel lu_tuning.h picks today for the inverse (one row per lane, rows per lane, or split
// rows), 2^18 matrices, n in [NLO, NHI] (default 17..32), float64 and float32:
//   nvcc -std=c++17 -arch=sm_90 -O3 --expt-relaxed-constexpr -I csrc [-DNLO=17 -DNHI=24] \
//        benchmarks/grid_inverse_harness.cu -o /tmp/g
// Prints per (dtype, n, PR, warps): both times (median of 9 launches), whether the inverses and infos are equal bit
// for bit, and the residual max |A X - I| of the first 32 invertible matrices. Every 97th matrix is singular.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "harness_common.cuh"
#include "kernels/lu/small_lu.cuh"
#include "ops/cuda/lu_tuning.h"

#ifndef NLO
#define NLO 17
#endif
#ifndef NHI
#define NHI 32
#endif

using namespace torch_inplace::kernels;
namespace tuning = torch_inplace::lu_cuda;

template <typename T>
constexpr int dt_index() {
  return sizeof(T) == 4 ? 0 : 1;
}

// The table's kernel for (T, N): warps and rows code as the op launches it (lu_launch.cuh).
template <typename T, int N>
void launch_table(const T* a, T* x, int32_t* info, int64_t batch) {
  constexpr int warps = tuning::kInvWarps[dt_index<T>()][N];
  constexpr int rows = tuning::kInvRows[dt_index<T>()][N];
  if constexpr (rows == -2) {
    using SG = lu::SplitGeometry<T, N, 2>;
    CK(cudaFuncSetAttribute(lu::split_inverse_kernel<T, N, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            8 * SG::kWarpSmemBytes));
    lu::split_inverse_kernel<T, N, 2><<<(unsigned)((batch + warps - 1) / warps), warps * 32,
                                        warps * SG::kWarpSmemBytes>>>(a, x, info, batch);
  } else {
    constexpr int R = rows == 2 || rows == 4 ? rows : 1;
    using Geo = lu::Geometry<T, N, R>;
    int w = warps;
    while (w > 1 && w * Geo::kWarpSmemBytes > 48 * 1024) --w;
    const int64_t per = (int64_t)w * Geo::kGroups;
    lu::small_inverse_kernel<T, N, R><<<(unsigned)((batch + per - 1) / per), w * 32, w * Geo::kWarpSmemBytes>>>(
        a, x, info, batch, false);
  }
}

template <typename T, int N, int PR>
void launch_grid(const T* a, T* x, int32_t* info, int64_t batch, int warps) {
  using GG = lu::GridGeometry<T, N, PR>;
  CK(cudaFuncSetAttribute(lu::grid_inverse_kernel<T, N, PR>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          8 * GG::kWarpSmemBytes));
  lu::grid_inverse_kernel<T, N, PR><<<(unsigned)((batch + warps - 1) / warps), warps * 32,
                                      warps * GG::kWarpSmemBytes>>>(a, x, info, batch);
}

template <typename T, int N, int PR>
void run(int64_t batch) {
  if constexpr (!lu::GridGeometry<T, N, PR>::kSupported) {
    return;
  } else {
    const int64_t total = batch * N * N;
    T *a, *x0, *x1;
    int32_t *i0, *i1;
    CK(cudaMalloc(&a, total * sizeof(T)));
    CK(cudaMalloc(&x0, total * sizeof(T)));
    CK(cudaMalloc(&x1, total * sizeof(T)));
    CK(cudaMalloc(&i0, batch * 4));
    CK(cudaMalloc(&i1, batch * 4));
    fill<<<1024, 256>>>(a, N, total);
    CK(cudaGetLastError());
    const float t0 = time_ms([&] { launch_table<T, N>(a, x0, i0, batch); });
    CK(cudaGetLastError());
    std::vector<int32_t> f0(batch), f1(batch);
    CK(cudaMemcpy(f0.data(), i0, batch * 4, cudaMemcpyDeviceToHost));
    unsigned long long* dd;
    CK(cudaMalloc(&dd, 8));
    for (int warps : {1, 2, 4, 8}) {
      CK(cudaMemset(x1, 0xff, total * sizeof(T)));
      CK(cudaMemset(i1, 0xff, batch * 4));
      const float t1 = time_ms([&] { launch_grid<T, N, PR>(a, x1, i1, batch, warps); });
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      CK(cudaMemset(dd, 0, 8));
      count_diff<<<1024, 256>>>(x0, x1, total, dd);
      unsigned long long ndiff = 0;
      CK(cudaMemcpy(&ndiff, dd, 8, cudaMemcpyDeviceToHost));
      const int64_t hn = std::min<int64_t>(64 * N * N, total);
      std::vector<T> h1(hn), ha(hn);
      CK(cudaMemcpy(h1.data(), x1, hn * sizeof(T), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(ha.data(), a, hn * sizeof(T), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(f1.data(), i1, batch * 4, cudaMemcpyDeviceToHost));
      int64_t singular = 0;
      for (int64_t m = 0; m < batch; ++m) singular += f1[m] != 0;
      double resid = 0;
      for (int m = 0, done = 0; m < 64 && m < batch && done < 32; ++m) {
        if (f1[m] != 0) continue;
        ++done;
        for (int r = 0; r < N; ++r) {
          for (int c = 0; c < N; ++c) {
            double s = 0;
            for (int k = 0; k < N; ++k) s += (double)ha[(m * N + r) * N + k] * (double)h1[((int64_t)m * N + k) * N + c];
            resid = std::max(resid, std::fabs(s - (r == c ? 1.0 : 0.0)));
          }
        }
      }
      const double gb = 2.0 * total * sizeof(T) / 1e9;
      std::printf("%s n=%2d B=%lld table %.3f ms (w%d r%d, %.0f GB/s) grid PR=%d PC=%d w%d %.3f ms (%.0f GB/s) "
                  "speedup %.3fx | bitwise equal %d info equal %d (singular %lld) residual %.2e\n",
                  sizeof(T) == 8 ? "fp64" : "fp32", N, (long long)batch, t0, tuning::kInvWarps[dt_index<T>()][N],
                  tuning::kInvRows[dt_index<T>()][N], gb / t0 * 1e3, PR, 32 / PR, warps, t1, gb / t1 * 1e3, t0 / t1,
                  (int)(ndiff == 0), (int)(f0 == f1), (long long)singular, resid);
      std::fflush(stdout);
    }
    CK(cudaFree(dd));
    CK(cudaFree(a));
    CK(cudaFree(x0));
    CK(cudaFree(x1));
    CK(cudaFree(i0));
    CK(cudaFree(i1));
  }
}

template <int N>
void run_n() {
  if constexpr (N <= NHI) {
    const int64_t B = 1 << 18;
    run<double, N, 4>(B);
    run<double, N, 8>(B);
    run<float, N, 4>(B);
    run<float, N, 8>(B);
    run_n<N + 1>();
  }
}

int main() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("device %s\n", p.name);
  run_n<NLO>();
  if (NLO <= 21 && NHI >= 21) run<double, 21, 8>(1001);  // a grid ending mid-block
  return 0;
}
