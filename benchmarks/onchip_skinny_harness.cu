// The skinny on-chip kernel (kernels/transpose/onchip_skinny.cuh, 16-byte accesses on both sides) against the
// element-wise on-chip kernel (onchip.cuh) on the same plan, for AoS <-> SoA and HWC <-> CHW image shapes: GPU time
// of one call queued behind a sleep kernel, median of 21; every result checked against a host transpose. The
// geometry is the library planner's (batches in waves where they do not fit at once).
//
//   nvcc -std=c++17 -arch=sm_90 -O3 --expt-relaxed-constexpr -I csrc benchmarks/onchip_skinny_harness.cu \
//        csrc/plan/gpu_plan.cpp csrc/plan/transpose_plan.cpp -o /tmp/sk && /tmp/sk [wide]
// (wide: 33-100 fields instead, past the planner's rule.)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "harness_common.cuh"
#include "kernels/transpose/onchip_skinny.cuh"
#include "plan/transpose_plan.h"

using namespace torch_inplace::kernels;
namespace plan = torch_inplace::plan;

template <typename K>
static void coop(K kernel, int grid, int smem, void** args) {
  CK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), dim3(grid), dim3(kOnChipThreads), args, smem, 0));
}

template <typename T>
static void run(const char* tname, const plan::DeviceCaps& caps, int optin, std::vector<std::vector<int64_t>> shapes,
                int offset_elems = 0) {
  const int64_t es = sizeof(T);
  CK(cudaFuncSetAttribute(onchip_transpose_kernel<T, 4, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  CK(cudaFuncSetAttribute(onchip_transpose_kernel<T, 4, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  CK(cudaFuncSetAttribute(onchip_skinny_kernel<T, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  CK(cudaFuncSetAttribute(onchip_skinny_kernel<T, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  CK(cudaFuncSetAttribute(onchip_skinny_kernel<T, false, 1, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  CK(cudaFuncSetAttribute(onchip_skinny_kernel<T, false, 3, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  CK(cudaFuncSetAttribute(onchip_skinny_kernel<T, false, 4, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  CK(cudaFuncSetAttribute(onchip_skinny_kernel<T, false, 2, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  for (const auto& sh : shapes) {
    const int64_t b = sh.size() == 3 ? sh[0] : 1, m = sh[sh.size() - 2], n = sh[sh.size() - 1];
    plan::Problem pr;
    pr.batch = b;
    pr.rows = m;
    pr.cols = n;
    pr.esize = es;
    const std::vector<plan::Plan> c = plan::gpu_candidates(pr, caps, plan::Algo::OnChip);
    if (c.empty() || c[0].algo != plan::Algo::OnChip) {
      std::printf("%-4s (%lld, %lld, %lld): not on chip\n", tname, (long long)b, (long long)m, (long long)n);
      continue;
    }
    const auto& g = c[0].gpu;
    OnChipGeo geo = onchip_geo(b, m, n, g.oc_tr, g.oc_tc, g.oc_s, g.oc_per_block, g.oc_wave);
    const int grid = static_cast<int>(g.oc_grid), smem = static_cast<int>(g.oc_smem);
    const bool rows = g.oc_tc == n;
    if (!rows && g.oc_tr != m) {
      std::printf("%-4s (%lld, %lld, %lld): tiles %lld x %lld, not skinny\n", tname, (long long)b, (long long)m,
                  (long long)n, (long long)g.oc_tr, (long long)g.oc_tc);
      continue;
    }
    const int64_t F = rows ? n : m, Lt = rows ? g.oc_tr : g.oc_tc;
    const int64_t per_matrix = (m + g.oc_tr - 1) / g.oc_tr * ((n + g.oc_tc - 1) / g.oc_tc);
    const int64_t segs = std::min<int64_t>(g.oc_per_block, (g.oc_per_block + per_matrix - 1) / per_matrix + 1);
    // The planner's skinny shared memory where it chose the skinny kernel (TORCH_INPLACE_GPU_ONCHIP_SKINNY=1 for
    // every shape it applies to), else the same formula; the element kernel only where its own fits.
    const int sk_smem = static_cast<int>(g.oc_skinny > 0 ? g.oc_skinny
                                                         : onchip_skinny_smem_bytes(g.oc_per_block, Lt, F, es, segs));
    const bool old_fits = smem <= optin;
    const int64_t numel = b * m * n;
    std::vector<unsigned char> h(numel * es), ref(numel * es), got(numel * es);
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<unsigned char>((i * 2654435761u) >> 7);
    for (int64_t q = 0; q < b; ++q)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          std::memcpy(&ref[(q * m * n + j * m + i) * es], &h[(q * m * n + i * n + j) * es], es);
    T* buf;
    CK(cudaMalloc(&buf, (numel + 16) * es));
    T* d = buf + offset_elems;
    bool ok_old = true, ok_new = true;
    const bool waves = geo.waves > 1;
    auto old_k = [&] {
      void* args[] = {&d, &geo};
      if (waves) coop(onchip_transpose_kernel<T, 4, true>, grid, smem, args);
      else coop(onchip_transpose_kernel<T, 4, false>, grid, smem, args);
    };
    auto new_k = [&] {
      void* args[] = {&d, &geo};
      if (waves) coop(onchip_skinny_kernel<T, true>, grid, sk_smem, args);
      else coop(onchip_skinny_kernel<T, false>, grid, sk_smem, args);
    };
    auto check = [&](auto&& f, bool& ok) {
      CK(cudaMemcpy(d, h.data(), numel * es, cudaMemcpyHostToDevice));
      f();
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(got.data(), d, numel * es, cudaMemcpyDeviceToHost));
      ok = got == ref;
    };
    if (old_fits) check(old_k, ok_old);
    check(new_k, ok_new);
    const double t_old = old_fits ? time_us_queued(old_k) : 0.0, t_new = time_us_queued(new_k);
    // Sweep of the depths (one wave only): chunks in flight per thread in the loading phase 1 / 3 / 4, and 2 with
    // two chunks gathered at once.
    double tv[4] = {0, 0, 0, 0};
    if (!waves) {
      auto var = [&](auto kernel) {
        return [&, kernel] {
          void* args[] = {&d, &geo};
          coop(kernel, grid, sk_smem, args);
        };
      };
      auto k0 = var(onchip_skinny_kernel<T, false, 1, 1>);
      auto k1 = var(onchip_skinny_kernel<T, false, 3, 1>);
      auto k2 = var(onchip_skinny_kernel<T, false, 4, 1>);
      auto k3 = var(onchip_skinny_kernel<T, false, 2, 2>);
      bool okv = true;
      check(k0, okv);
      ok_new = ok_new && okv;
      check(k1, okv);
      ok_new = ok_new && okv;
      check(k2, okv);
      ok_new = ok_new && okv;
      check(k3, okv);
      ok_new = ok_new && okv;
      tv[0] = time_us_queued(k0);
      tv[1] = time_us_queued(k1);
      tv[2] = time_us_queued(k2);
      tv[3] = time_us_queued(k3);
    }
    const double gb = 2.0 * numel * es / 1e3;  // bytes / us -> GB/s with /1e3
    std::printf("%-4s (%5lld, %8lld, %8lld) %s F %2lld grid %3d waves %2u smem %6d/%6d | old %8.2f us %6.0f GB/s | "
                "skinny %8.2f us %6.0f GB/s | %5.2fx | LD1 %7.2f LD3 %7.2f LD4 %7.2f GD2 %7.2f | %s %s\n",
                tname, (long long)b, (long long)m, (long long)n, rows ? "rows" : "cols", (long long)F, grid, geo.waves,
                smem, sk_smem, t_old, old_fits ? gb / t_old : 0.0, t_new, gb / t_new, t_old / t_new, tv[0], tv[1],
                tv[2], tv[3],
                !old_fits ? "old-does-not-fit" : ok_old ? "ok" : "OLD-MISMATCH",
                ok_new ? "ok" : "NEW-MISMATCH");
    CK(cudaFree(buf));
  }
}

int main(int argc, char** argv) {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  const int optin = static_cast<int>(prop.sharedMemPerBlockOptin);
  plan::DeviceCaps caps;  // what the library's query_caps reads
  caps.backend = plan::Backend::CUDA;
  caps.num_sms = prop.multiProcessorCount;
  caps.smem_per_block = optin;
  caps.warp_size = prop.warpSize;
  caps.l2_bytes = prop.l2CacheSize;
  caps.cc_major = prop.major;
  caps.max_cluster = prop.major >= 9 ? 16 : 1;
  using S = std::vector<std::vector<int64_t>>;
  const S images = {{50176, 3},     {3, 50176},       {262144, 3},      {3, 262144},     {262144, 4},
                    {4, 262144},    {2073600, 3},     {3, 2073600},     {2073600, 4},    {4, 2073600},
                    {3, 8294400},   {64, 50176, 3},   {64, 3, 50176},   {8, 2073600, 3}, {8, 3, 2073600},
                    {32, 262144, 4}, {256, 50176, 3}, {256, 3, 50176}};
  const S skinny = {{55522, 5},  {47658, 12}, {22391, 23}, {17686, 26}, {132945, 13}, {305097, 11}, {264937, 17},
                    {5, 55522},  {12, 47658}, {23, 22391}, {26, 17686}, {13, 132945}, {11, 305097}, {17, 264937},
                    {2073600, 3}, {3, 2073600}, {64, 50176, 3}, {64, 3, 50176}, {2048, 32, 32}, {1024, 16, 48},
                    {1024, 48, 16}, {4096, 8, 8}};
  if (argc > 1 && std::strcmp(argv[1], "wide") == 0) {  // 33-100 fields: where the rule stops (32)
    const S wide = {{200000, 40}, {40, 200000}, {100000, 48}, {48, 100000}, {60000, 64}, {64, 60000},
                    {40000, 100}, {100, 40000}, {16, 20000, 40}, {16, 40, 20000}};
    run<uint8_t>("u8", caps, optin, wide);
    run<uint16_t>("u16", caps, optin, wide);
    run<uint32_t>("u32", caps, optin, wide);
    return 0;
  }
  run<uint8_t>("u8", caps, optin, images);
  run<uint8_t>("u8", caps, optin, {{8294400, 3}, {8294400, 4}});
  run<uint8_t>("u8+1", caps, optin, {{2073600, 3}, {3, 2073600}, {7, 1001, 3}, {7, 3, 1001}}, 1);
  run<uint16_t>("u16", caps, optin, images);
  run<uint32_t>("u32", caps, optin, skinny);
  run<uint32_t>("u32+1", caps, optin, {{55522, 5}, {5, 55522}, {7, 1001, 3}, {7, 3, 1001}}, 1);
  run<uint64_t>("u64", caps, optin, {{55522, 5}, {22391, 23}, {5, 55522}, {23, 22391}, {100000, 3}, {3, 100000},
                                     {64, 50176, 3}, {64, 3, 50176}, {1024, 16, 16}});
  run<Bytes16>("b16", caps, optin, {{55522, 5}, {5, 55522}, {10000, 3}, {3, 10000}, {512, 16, 8}});
  return 0;
}
