// Standalone check and timing of split_inverse_kernel (kernels/lu/small_lu.cuh: rows split into column parts)
// against the library's one-row small_inverse_kernel, 2^18 float64 matrices, n = 17..32:
//   nvcc -std=c++17 -arch=sm_90 -O3 --expt-relaxed-constexpr -I csrc benchmarks/split_inverse_harness.cu -o /tmp/h
// Prints per (n, warps): both times (median of 9 launches), whether the inverses and infos are equal
// bit for bit, and the residual max |A X - I| of the first 32 invertible matrices. Every 97th matrix is singular.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "harness_common.cuh"
#include "kernels/lu/small_lu.cuh"

using namespace torch_inplace::kernels;

template <typename T, int N, int R>
void launch_old(const T* a, T* x, int32_t* info, int64_t batch, int warps) {
  using Geo = lu::Geometry<T, N, R>;
  const int64_t per = (int64_t)warps * Geo::kGroups;
  lu::small_inverse_kernel<T, N, R><<<(unsigned)((batch + per - 1) / per), warps * 32, warps * Geo::kWarpSmemBytes>>>(
      a, x, info, batch, false);
}

template <typename T, int N, int H>
void run(int64_t batch, int old_warps, int old_rows, int new_warps) {
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
  using SG = lu::SplitGeometry<T, N, H>;
  auto old_launch = [&] {
    if (old_rows == 4) {
      if constexpr (N * 4 * sizeof(T) <= 512) launch_old<T, N, 4>(a, x0, i0, batch, old_warps);
    } else {
      launch_old<T, N, 1>(a, x0, i0, batch, old_warps);
    }
  };
  CK(cudaFuncSetAttribute(lu::split_inverse_kernel<T, N, H>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          8 * SG::kWarpSmemBytes));
  auto new_launch = [&] {
    lu::split_inverse_kernel<T, N, H><<<(unsigned)((batch + new_warps - 1) / new_warps), new_warps * 32,
                                        new_warps * SG::kWarpSmemBytes>>>(a, x1, i1, batch);
  };
  const float t0 = time_ms(old_launch);
  CK(cudaGetLastError());
  CK(cudaMemset(x1, 0xff, total * sizeof(T)));
  const float t1 = time_ms(new_launch);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  unsigned long long* dd;
  CK(cudaMalloc(&dd, 8));
  CK(cudaMemset(dd, 0, 8));
  count_diff<<<1024, 256>>>(x0, x1, total, dd);
  unsigned long long ndiff = 0;
  CK(cudaMemcpy(&ndiff, dd, 8, cudaMemcpyDeviceToHost));
  CK(cudaFree(dd));
  const int64_t hn = std::min<int64_t>(64 * N * N, total);
  std::vector<T> h1(hn), ha(hn);
  std::vector<int32_t> f0(batch), f1(batch);
  CK(cudaMemcpy(h1.data(), x1, hn * sizeof(T), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(ha.data(), a, hn * sizeof(T), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(f0.data(), i0, batch * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(f1.data(), i1, batch * 4, cudaMemcpyDeviceToHost));
  const bool same = ndiff == 0;
  const bool info_equal = f0 == f1;
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
  std::printf("%s n=%2d H=%d B=%lld old %.3f ms (w%d r%d, %.0f GB/s) split %.3f ms (w%d, %.0f GB/s) speedup %.3fx | "
              "bitwise equal %d info equal %d (singular %lld) residual %.2e\n",
              sizeof(T) == 8 ? "fp64" : "fp32", N, H, (long long)batch, t0, old_warps, old_rows, gb / t0 * 1e3, t1,
              new_warps, gb / t1 * 1e3, t0 / t1, (int)same, (int)info_equal, (long long)singular, resid);
  std::fflush(stdout);
  CK(cudaFree(a));
  CK(cudaFree(x0));
  CK(cudaFree(x1));
  CK(cudaFree(i0));
  CK(cudaFree(i1));
}

int main() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("device %s\n", p.name);
  const int64_t B = 1 << 18;
  // float64 against the one-row kernel with lu_tuning.h's warps (before the split rows): 1 warp, 4 at n = 32
  run<double, 17, 2>(B, 1, 1, 8);
  run<double, 20, 2>(B, 1, 1, 8);
  run<double, 24, 2>(B, 1, 1, 8);
  run<double, 28, 2>(B, 1, 1, 8);
  run<double, 32, 2>(B, 4, 1, 8);
  run<double, 32, 2>(B, 4, 1, 4);
  run<double, 21, 2>(1001, 1, 1, 4);  // a grid ending mid-block
  // float64 n = 20-27 against the one-row kernel at 8 and 4 warps (the table's one-row picks there)
  if (std::getenv("SIH_ONE_ROW") != nullptr) {
    run<double, 20, 2>(B, 8, 1, 8);
    run<double, 22, 2>(B, 8, 1, 8);
    run<double, 23, 2>(B, 8, 1, 8);
    run<double, 24, 2>(B, 8, 1, 8);
    run<double, 24, 2>(B, 4, 1, 4);
    run<double, 25, 2>(B, 8, 1, 8);
    run<double, 26, 2>(B, 8, 1, 8);
    run<double, 27, 2>(B, 4, 1, 8);
  }
  // float64 n = 28-32, where the table launches split rows at 8 warps from n = 29 on
  if (std::getenv("SIH_SPLIT_TABLE") != nullptr) {
    run<double, 28, 2>(B, 4, 1, 8);
    run<double, 29, 2>(B, 4, 1, 8);
    run<double, 30, 2>(B, 4, 1, 8);
    run<double, 31, 2>(B, 4, 1, 8);
    run<double, 32, 2>(B, 4, 1, 8);
  }
  return 0;
}
