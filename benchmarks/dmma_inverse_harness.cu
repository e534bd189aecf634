// Standalone check and timing of the float64 tensor-core inverse (kernels/lu/dmma_inverse.cuh) against the register
// kernels of small_lu.cuh (the one-row kernel at 1-8 warps, and lu_tuning.h's pick among them where it is another:
// kInv*NoTensorCores), float64, 2^18 matrices for n > 16 and 2^20 for n <= 16 (as bench_linalg.py):
//   nvcc -std=c++17 -arch=sm_90 -O3 --expt-relaxed-constexpr -I csrc benchmarks/dmma_inverse_harness.cu -o /tmp/dih
//   /tmp/dih            (-DDIH_N_MIN=a -DDIH_N_MAX=b: n = a..b only; default 17..32; -DDIH_MAX_WARPS=w: the
//                        tensor-core kernel at up to w warps per block)
//   /tmp/dih profile    one launch of each kernel per n, nothing timed (for ncu)
// Per n: every configuration's median ms of 9 launches and its share of the copy roofline; for the tensor-core kernel
// the largest difference from the one-row kernel's inverse relative to that matrix's largest entry (invertible
// matrices), the infos that differ (every 97th matrix has two equal rows, singular, where rounding may or may not
// leave an exact zero pivot; the others must agree), and the largest LAPACK-style residual
// |A X - I|_max / (n |A|_max |X|_max eps) over the first 256 matrices, computed on the host.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "harness_common.cuh"
#include "kernels/lu/dmma_inverse.cuh"
#include "ops/cuda/lu_tuning.h"

using namespace torch_inplace::kernels;

#ifndef DIH_N_MIN
#define DIH_N_MIN 17
#endif
#ifndef DIH_N_MAX
#define DIH_N_MAX 32
#endif

// Per matrix: the largest |x - y| over the largest |y| (0 where y is not finite).
__global__ void rel_diff(const double* x, const double* y, int nn, int64_t batch, double* out) {
  const int64_t m = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (m >= batch) return;
  double d = 0.0, s = 0.0;
  bool finite = true;
  for (int e = 0; e < nn; ++e) {
    const double a = x[m * nn + e], b = y[m * nn + e];
    finite = finite && std::isfinite(b);
    d = fmax(d, fabs(a - b));
    s = fmax(s, fabs(b));
  }
  out[m] = finite && s > 0.0 ? d / s : 0.0;
}

template <int N, int R>
float time_rows(const double* a, double* x, int32_t* info, int64_t batch, int warps) {
  using Geo = lu::Geometry<double, N, R>;
  const int64_t per = (int64_t)warps * Geo::kGroups;
  const unsigned g = (unsigned)((batch + per - 1) / per);
  CK(cudaFuncSetAttribute(lu::small_inverse_kernel<double, N, R>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          8 * Geo::kWarpSmemBytes));
  return time_ms([&] {
    lu::small_inverse_kernel<double, N, R><<<g, warps * 32, warps * Geo::kWarpSmemBytes>>>(a, x, info, batch, false);
  });
}

template <int N>
float time_split(const double* a, double* x, int32_t* info, int64_t batch, int warps) {
  using SG = lu::SplitGeometry<double, N, 2>;
  if constexpr (SG::kSupported) {
    const int smem = warps * SG::kWarpSmemBytes;
    CK(cudaFuncSetAttribute(lu::split_inverse_kernel<double, N, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            8 * SG::kWarpSmemBytes));
    return time_ms([&] {
      lu::split_inverse_kernel<double, N, 2><<<(unsigned)((batch + warps - 1) / warps), warps * 32, smem>>>(
          a, x, info, batch);
    });
  }
  return -1.f;
}

template <int N>
float time_dmma(const double* a, double* x, int32_t* info, int64_t batch, int warps) {
  using DG = lu::DmmaInverseGeometry<N>;
  CK(cudaFuncSetAttribute(lu::dmma_inverse_kernel<N>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          8 * DG::kWarpSmemBytes));
  return time_ms([&] {
    lu::dmma_inverse_kernel<N><<<(unsigned)((batch + warps - 1) / warps), warps * 32, warps * DG::kWarpSmemBytes>>>(
        a, x, info, batch);
  });
}

int g_profile = 0;  // command line "profile": one launch each of the one-row kernel (8 warps) and the tensor-core
                    // kernel (4 warps) per n, no timing (ncu)

template <int N>
void run_n(double gbps) {
  constexpr int64_t B = batch_of(N);
  const int64_t total = B * N * N;
  const double bytes = 2.0 * total * 8;
  double *a, *x0, *x1, *rd;
  int32_t *i0, *i1;
  CK(cudaMalloc(&a, total * 8));
  CK(cudaMalloc(&x0, total * 8));
  CK(cudaMalloc(&x1, total * 8));
  CK(cudaMalloc(&rd, B * 8));
  CK(cudaMalloc(&i0, B * 4));
  CK(cudaMalloc(&i1, B * 4));
  fill<<<1024, 256>>>(a, N, total);
  CK(cudaGetLastError());
  if (g_profile) {
    using Geo = lu::Geometry<double, N, 1>;
    CK(cudaFuncSetAttribute(lu::small_inverse_kernel<double, N, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            8 * Geo::kWarpSmemBytes));
    lu::small_inverse_kernel<double, N, 1><<<(unsigned)((B + 7) / 8), 256, 8 * Geo::kWarpSmemBytes>>>(a, x0, i0, B,
                                                                                                 false);
    using DG = lu::DmmaInverseGeometry<N>;
    CK(cudaFuncSetAttribute(lu::dmma_inverse_kernel<N>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            8 * DG::kWarpSmemBytes));
    lu::dmma_inverse_kernel<N><<<(unsigned)((B + 3) / 4), 128, 4 * DG::kWarpSmemBytes>>>(a, x1, i1, B);
    CK(cudaDeviceSynchronize());
    return;
  }
  auto report = [&](const char* name, int w, float ms) {
    const double gb = bytes / (ms * 1e-3) / 1e9;
    std::printf("n=%2d %-6s w%d %8.4f ms roofline %5.1f%%\n", N, name, w, ms, 100.0 * gb / gbps);
    std::fflush(stdout);
  };
  // the register kernels: one row per lane at 1-8 warps, and the table's pick
  float best_old = 1e30f;
  for (int w : {1, 2, 4, 8}) {
    const float ms = time_rows<N, 1>(a, x0, i0, B, w);
    report("r1", w, ms);
    best_old = std::min(best_old, ms);
  }
  // lu_tuning.h's pick among the register kernels (its entry for GPUs without the tensor cores)
  const int tw = torch_inplace::lu_cuda::kInvWarpsNoTensorCores[N];
  const int tr = torch_inplace::lu_cuda::kInvRowsNoTensorCores[N];
  float table_ms = -1.f;
  if (tr == -2) table_ms = time_split<N>(a, x1, i1, B, tw);
  if (tr == 2) table_ms = time_rows<N, 2>(a, x1, i1, B, tw);
  if (tr == 3) table_ms = time_rows<N, 3>(a, x1, i1, B, tw);
  if (tr == 4) table_ms = time_rows<N, 4>(a, x1, i1, B, tw);
  if (table_ms > 0) {
    char name[16];
    std::snprintf(name, sizeof name, "tab%d", tr);
    report(name, tw, table_ms);
    best_old = std::min(best_old, table_ms);
  }
  // the reference inverse for the checks: the one-row kernel
  time_rows<N, 1>(a, x0, i0, B, 1);
  CK(cudaDeviceSynchronize());
  float best_new = 1e30f;
  for (int w : {1, 2, 4, 6, 8}) {
#ifdef DIH_MAX_WARPS
    if (w > DIH_MAX_WARPS) continue;
#endif
    CK(cudaMemset(x1, 0xff, total * 8));
    CK(cudaMemset(i1, 0xff, B * 4));
    const float ms = time_dmma<N>(a, x1, i1, B, w);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    report("dmma", w, ms);
    best_new = std::min(best_new, ms);
  }
  // checks of the last dmma run
  rel_diff<<<(unsigned)((B + 255) / 256), 256>>>(x1, x0, N * N, B, rd);
  CK(cudaGetLastError());
  std::vector<double> h_rd(B);
  std::vector<int32_t> h_i0(B), h_i1(B);
  CK(cudaMemcpy(h_rd.data(), rd, B * 8, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(h_i0.data(), i0, B * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(h_i1.data(), i1, B * 4, cudaMemcpyDeviceToHost));
  double worst = 0.0;
  int64_t info_diff_sing = 0, info_diff_other = 0, nonzero_info = 0;
  for (int64_t m = 0; m < B; ++m) {
    if (h_i0[m] != h_i1[m]) (m % 97 == 5 ? info_diff_sing : info_diff_other) += 1;
    if (h_i0[m] != 0) ++nonzero_info;
    if (h_i0[m] == 0 && h_i1[m] == 0) worst = std::max(worst, h_rd[m]);
  }
  // residuals of the first 256 matrices on the host
  const int S = 256;
  std::vector<double> ha(S * N * N), hx(S * N * N);
  CK(cudaMemcpy(ha.data(), a, ha.size() * 8, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hx.data(), x1, hx.size() * 8, cudaMemcpyDeviceToHost));
  double worst_res = 0.0;
  for (int m = 0; m < S; ++m) {
    if (h_i1[m] != 0) continue;
    const double* A = &ha[m * N * N];
    const double* X = &hx[m * N * N];
    double am = 0, xm = 0, rm = 0;
    for (int e = 0; e < N * N; ++e) {
      am = std::max(am, std::fabs(A[e]));
      xm = std::max(xm, std::fabs(X[e]));
    }
    for (int i = 0; i < N; ++i) {
      for (int j = 0; j < N; ++j) {
        double s = 0;
        for (int q = 0; q < N; ++q) s += A[i * N + q] * X[q * N + j];
        rm = std::max(rm, std::fabs(s - (i == j ? 1.0 : 0.0)));
      }
    }
    worst_res = std::max(worst_res, rm / (N * am * xm * 2.220446049250313e-16));
  }
  std::printf("n=%2d check: max rel diff vs one-row %.3e; info differs %lld (singular-by-rounding set) %lld (others); "
              "nonzero infos %lld; residual ratio max %.2f; best old %.4f ms, dmma %.4f ms: %.3fx\n",
              N, worst, (long long)info_diff_sing, (long long)info_diff_other, (long long)nonzero_info, worst_res,
              best_old, best_new, best_old / best_new);
  std::fflush(stdout);
  CK(cudaFree(a));
  CK(cudaFree(x0));
  CK(cudaFree(x1));
  CK(cudaFree(rd));
  CK(cudaFree(i0));
  CK(cudaFree(i1));
}

template <int... Ns>
void run_all(double gbps, std::integer_sequence<int, Ns...>) {
  (run_n<DIH_N_MIN + Ns>(gbps), ...);
}

int main(int argc, char** argv) {
  g_profile = argc > 1 && std::string(argv[1]) == "profile";
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  const double gbps = copy_gbps();
  std::printf("device %s copy %.0f GB/s\n", p.name, gbps);
  run_all(gbps, std::make_integer_sequence<int, DIH_N_MAX - DIH_N_MIN + 1>{});
  return 0;
}
