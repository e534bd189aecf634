// GPU time of the on-chip transposition (kernels/transpose/onchip.cuh) on small tensors, per element size, for
// elements in flight per thread U = 4, 8, 16 (the kernel's template parameter; the library launches
// onchip_unroll()), next to floors measured in the same process: an empty kernel of the same grid, an empty
// cooperative kernel with one grid barrier, and (4-byte elements) an out-of-place 32 x 32-tile transpose of the
// same bytes. Each call is queued behind a sleep kernel (GPU time alone), median of 41. Standalone (no PyTorch);
// every variant's result is checked against a host transpose. The geometry is the library planner's.
//
//   nvcc -std=c++17 -arch=sm_90 -O3 --expt-relaxed-constexpr -I csrc benchmarks/onchip_harness.cu \
//        csrc/plan/gpu_plan.cpp csrc/plan/transpose_plan.cpp -o /tmp/onchip && /tmp/onchip
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "harness_common.cuh"
#include "kernels/transpose/onchip.cuh"
#include "plan/transpose_plan.h"

using namespace torch_inplace::kernels;
namespace plan = torch_inplace::plan;

__global__ void empty_kernel() {}
__global__ void barrier_kernel() { cooperative_groups::this_grid().sync(); }

// Out-of-place transpose through 32 x 32 shared tiles: what a one-pass y.copy_(x.mT) does.
__global__ void oop_transpose(const uint32_t* __restrict__ in, uint32_t* __restrict__ out, int m, int n) {
  __shared__ uint32_t t[32][33];
  const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
  for (int i = threadIdx.y; i < 32; i += 8) {
    const int r = r0 + i, c = c0 + threadIdx.x;
    if (r < m && c < n) t[i][threadIdx.x] = in[static_cast<int64_t>(r) * n + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += 8) {
    const int c = c0 + i, r = r0 + threadIdx.x;
    if (r < m && c < n) out[static_cast<int64_t>(c) * m + r] = t[threadIdx.x][i];
  }
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Plan {
  OnChipGeo geo;
  int grid = 0;
  int smem = 0;
};

// The planner's on-chip plan (plan_onchip, csrc/plan/gpu_plan.cpp) for one m x n matrix of `es`-byte elements;
// grid 0 where the tensor does not fit on chip.
static Plan make_plan(int64_t m, int64_t n, int64_t es, const plan::DeviceCaps& caps) {
  plan::Problem pr;
  pr.rows = m;
  pr.cols = n;
  pr.esize = es;
  Plan p;
  const std::vector<plan::Plan> c = plan::gpu_candidates(pr, caps, plan::Algo::OnChip);
  if (c.empty() || c[0].algo != plan::Algo::OnChip) return p;
  const auto& g = c[0].gpu;
  p.geo = onchip_geo(1, m, n, g.oc_tr, g.oc_tc, g.oc_s, g.oc_per_block);
  p.grid = static_cast<int>(g.oc_grid);
  p.smem = static_cast<int>(g.oc_smem);
  return p;
}

// Each call queued behind a sleep kernel, median of 41 (harness_common.cuh).
template <typename F>
static double time_us(F&& f) {
  return time_us_queued(f, 41, 3, 200000);
}

static void launch_coop(const void* kernel, const Plan& p, void** args) {
  CK(cudaLaunchCooperativeKernel(kernel, dim3(p.grid), dim3(kOnChipThreads), args, p.smem, 0));
}

template <typename T, int U>
static void onchip(const Plan& p, T* d) {
  OnChipGeo geo = p.geo;
  void* args[] = {&d, &geo};
  launch_coop(reinterpret_cast<const void*>(onchip_transpose_kernel<T, U>), p, args);
}

template <typename T>
static void run(const char* tname, const plan::DeviceCaps& caps, int smem_optin) {
  const int64_t shapes[][2] = {{55522, 5},   {47658, 12}, {22391, 23}, {17686, 26}, {132945, 13},
                               {305097, 11}, {5, 55522},  {23, 22391}, {1000, 1000}, {3000, 2000}};
  const int64_t es = sizeof(T);
  CK(cudaFuncSetAttribute(onchip_transpose_kernel<T, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_optin));
  CK(cudaFuncSetAttribute(onchip_transpose_kernel<T, 8>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_optin));
  CK(cudaFuncSetAttribute(onchip_transpose_kernel<T, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_optin));
  for (const auto& sh : shapes) {
    const int64_t m = sh[0], n = sh[1], numel = m * n;
    const Plan p = make_plan(m, n, es, caps);
    if (p.grid == 0) continue;  // not on chip
    std::vector<unsigned char> h(numel * es), ref(numel * es), got(numel * es);
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<unsigned char>((i * 2654435761u) >> 7);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) std::memcpy(&ref[(j * m + i) * es], &h[(i * n + j) * es], es);
    T *d, *d2;
    CK(cudaMalloc(&d, numel * es));
    CK(cudaMalloc(&d2, numel * es));
    bool ok = true;
    auto check = [&](auto&& f, T* where) {
      CK(cudaMemcpy(d, h.data(), numel * es, cudaMemcpyHostToDevice));
      f();
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(got.data(), where, numel * es, cudaMemcpyDeviceToHost));
      ok = ok && got == ref;
    };
    check([&] { onchip<T, 4>(p, d); }, d);
    check([&] { onchip<T, 8>(p, d); }, d);
    check([&] { onchip<T, 16>(p, d); }, d);
    const double u4 = time_us([&] { onchip<T, 4>(p, d); });
    const double u8 = time_us([&] { onchip<T, 8>(p, d); });
    const double u16 = time_us([&] { onchip<T, 16>(p, d); });
    const double empty = time_us([&] { empty_kernel<<<p.grid, kOnChipThreads>>>(); });
    const double barrier = time_us([&] {
      void* none[] = {nullptr};
      launch_coop(reinterpret_cast<const void*>(barrier_kernel), Plan{p.geo, p.grid, 0}, none);
    });
    double oop = 0.0;
    if constexpr (sizeof(T) == 4) {
      const dim3 grid(static_cast<unsigned>(cdiv(n, 32)), static_cast<unsigned>(cdiv(m, 32)));
      auto f = [&] { oop_transpose<<<grid, dim3(32, 8)>>>(d, d2, static_cast<int>(m), static_cast<int>(n)); };
      check(f, d2);
      oop = time_us(f);
    }
    std::printf("%-4s (%6lld, %6lld) grid %3d, %3d KB/block | U=4 %6.2f  U=8 %6.2f  U=16 %6.2f us | floors: empty %5.2f"
                "  barrier %5.2f  out-of-place %5.2f us | %s\n",
                tname, static_cast<long long>(m), static_cast<long long>(n), p.grid, p.smem / 1024, u4, u8, u16, empty,
                barrier, oop, ok ? "ok" : "MISMATCH");
    CK(cudaFree(d));
    CK(cudaFree(d2));
  }
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, %d SMs; library U = %d (onchip_unroll)\n", prop.name, prop.multiProcessorCount,
              onchip_unroll<uint32_t>());
  const int optin = static_cast<int>(prop.sharedMemPerBlockOptin);
  plan::DeviceCaps caps;  // what the library's query_caps reads
  caps.backend = plan::Backend::CUDA;
  caps.num_sms = prop.multiProcessorCount;
  caps.smem_per_block = optin;
  caps.warp_size = prop.warpSize;
  caps.l2_bytes = prop.l2CacheSize;
  caps.cc_major = prop.major;
  caps.max_cluster = prop.major >= 9 ? 16 : 1;
  run<uint8_t>("u8", caps, optin);
  run<uint16_t>("u16", caps, optin);
  run<uint32_t>("u32", caps, optin);
  run<uint64_t>("u64", caps, optin);
  run<Bytes16>("b16", caps, optin);
  return 0;
}
