// Experiment: small in-place transpositions (AoS <-> SoA of 1-4 MB) by ONE thread-block cluster through distributed
// shared memory, against the fixed costs of the whole-GPU cooperative on-chip kernel (cooperative launch, grid
// barrier). Standalone; every result checked against a host transpose.
//
//   nvcc -std=c++17 -O3 -arch=sm_90 -o /tmp/coh benchmarks/cluster_onchip_harness.cu && /tmp/coh
//
// Times: "queued" is one call behind a sleep kernel (GPU time, launch included); "single" is one call on an idle
// GPU (host launch cost included), as bench_transpose.py's per-call figure.
// The timed transposes run back and forth (R x C, then C x R), so each figure is a median over both directions.
// Result (H100, 2026-11-26, benchmarks/results/NVIDIA_H100_80GB_HBM3/history_cluster_onchip_harness.log): a cluster
// barrier saves 0.3-0.5 us against a cooperative grid barrier, but one cluster (at most 16 SMs, element-wise remote
// gathers) transposes 1-3 MB in 17-97 us where an out-of-place kernel takes 4-9 us: not kept.
#include <cooperative_groups.h>

#include "harness_common.cuh"

namespace cg = cooperative_groups;

__global__ void empty_kernel() {}
__global__ void coop_sync_kernel() { cg::this_grid().sync(); }
__global__ void cluster_sync_kernel() { cg::this_cluster().sync(); }

template <typename F>
double time_us_single(F&& launch) {
  return time_us_median(launch, false);
}

// Block b of the cluster's share of an in-place transposition of R x C 4-byte elements: elements [lo, hi), staged in
// its shared memory (n4 16-byte chunks, then the tail) before the cluster barrier, written back after it.
struct ClusterShare {
  int lo, hi, n4;
};

__device__ ClusterShare stage_share(const float* data, float* sm, int total, int chunk, int b) {
  ClusterShare sh;
  sh.lo = b * chunk;
  sh.hi = min(total, sh.lo + chunk);
  sh.n4 = max(0, sh.hi - sh.lo) / 4;
  const float4* src = reinterpret_cast<const float4*>(data + sh.lo);
  for (int i = threadIdx.x; i < sh.n4; i += blockDim.x) reinterpret_cast<float4*>(sm)[i] = src[i];
  for (int i = sh.lo + sh.n4 * 4 + threadIdx.x; i < sh.hi; i += blockDim.x) sm[i - sh.lo] = data[i];
  return sh;
}

// Result element o (o = c * R + r <- r * C + c of the input), from the shared memory of the block that staged it;
// the float reciprocals inv_r = 1 / R and inv_chunk = 1 / chunk give the quotients to within one, corrected.
__device__ float gather(cg::cluster_group& cl, float* sm, int o, int R, int C, int chunk, float inv_r,
                       float inv_chunk) {
  int c = static_cast<int>(static_cast<float>(o) * inv_r);
  int r = o - c * R;
  if (r < 0) { --c; r += R; } else if (r >= R) { ++c; r -= R; }
  const int i = r * C + c;
  int owner = static_cast<int>(static_cast<float>(i) * inv_chunk);
  int off = i - owner * chunk;
  if (off < 0) { --owner; off += chunk; } else if (off >= chunk) { ++owner; off -= chunk; }
  return cl.map_shared_rank(sm, owner)[off];
}

// In place: the R x C matrix `data` (row-major, 4-byte elements) becomes C x R. Block b of the cluster stages
// elements [b * chunk, (b + 1) * chunk) in its shared memory; after the cluster barrier it writes the same range of the
// result, gathering each element from the shared memory of the block that holds it: one element per store, or
// (kVec4) four consecutive results per 16-byte store, the tail element by element.
template <bool kVec4>
__global__ void __launch_bounds__(1024) cluster_transpose(float* data, int R, int C, int chunk) {
  extern __shared__ __align__(16) float sm[];
  cg::cluster_group cl = cg::this_cluster();
  const ClusterShare sh = stage_share(data, sm, R * C, chunk, static_cast<int>(cl.block_rank()));
  cl.sync();
  const float inv_r = 1.0f / static_cast<float>(R), inv_chunk = 1.0f / static_cast<float>(chunk);
  auto get = [&](int o) { return gather(cl, sm, o, R, C, chunk, inv_r, inv_chunk); };
  const int nv = kVec4 ? sh.n4 : 0;
  for (int q = threadIdx.x; q < nv; q += blockDim.x) {
    const int o = sh.lo + 4 * q;
    float4 v;
    v.x = get(o);
    v.y = get(o + 1);
    v.z = get(o + 2);
    v.w = get(o + 3);
    reinterpret_cast<float4*>(data + sh.lo)[q] = v;
  }
  for (int o = sh.lo + nv * 4 + threadIdx.x; o < sh.hi; o += blockDim.x) data[o] = get(o);
  cl.sync();  // no block leaves while others read its shared memory
}

// Out of place, one element per thread (reference for a plain transpose kernel's cost).
__global__ void naive_transpose(const float* in, float* out, int R, int C) {
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o < R * C) {
    const int c = o / R, r = o % R;
    out[o] = in[r * C + c];
  }
}

// One cluster of `blocks` blocks of 1024 threads.
template <typename... P, typename... A>
void launch_cluster(void (*kernel)(P...), int blocks, int smem, A... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(1024);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = blocks;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

int main() {
  int dev = 0;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device %s, %d SMs, smem per block optin %zu\n", prop.name, prop.multiProcessorCount,
              prop.sharedMemPerBlockOptin);
  const int sms = prop.multiProcessorCount;
  // Fixed costs.
  auto coop = [&](int blocks, int threads) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(threads);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, coop_sync_kernel));
  };
  auto clus = [&](int blocks) { launch_cluster(cluster_sync_kernel, blocks, 0); };
  CK(cudaFuncSetAttribute(cluster_sync_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  const int max_smem = static_cast<int>(prop.sharedMemPerBlockOptin);
  for (auto k : {cluster_transpose<false>, cluster_transpose<true>}) {
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem));
  }
  std::printf("%-40s %9s %9s\n", "fixed cost", "queued", "single");
  auto row = [&](const char* name, auto&& fn) {
    const double q = time_us_queued(fn), s = time_us_single(fn);
    std::printf("%-40s %8.2fus %8.2fus\n", name, q, s);
  };
  row("empty <<<132, 256>>>", [&] { empty_kernel<<<sms, 256>>>(); });
  row("cooperative 132 x 256, one grid sync", [&] { coop(sms, 256); });
  row("cooperative 132 x 1024, one grid sync", [&] { coop(sms, 1024); });
  row("cluster 8 x 1024, one cluster sync", [&] { clus(8); });
  row("cluster 16 x 1024, one cluster sync", [&] { clus(16); });
  // Transpositions.
  struct Shape {
    int R, C;
  } shapes[] = {{55522, 5}, {23057, 18}, {87905, 6}, {47658, 12}, {61335, 11}, {29018, 21},
                {5, 55522}, {18, 23057}, {12, 47658}, {28, 20998}, {13, 55090}};
  std::printf("%-14s %6s %7s | %-22s %-22s %-22s %-22s\n", "shape", "MB", "blocks", "cluster q / single",
              "cluster v4 q / single", "naive oop q / single", "memcpy q / single");
  for (auto sh : shapes) {
    const int R = sh.R, C = sh.C, total = R * C;
    const size_t bytes = static_cast<size_t>(total) * 4;
    std::vector<float> h(total), want(total), got(total);
    for (int i = 0; i < total; ++i) h[i] = static_cast<float>((i * 2654435761u) % 1000003u);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) want[c * R + r] = h[r * C + c];
    float *d, *d2;
    CK(cudaMalloc(&d, bytes));
    CK(cudaMalloc(&d2, bytes));
    int blocks = 1;
    while (blocks < 16 &&
           static_cast<size_t>((total + blocks - 1) / blocks + 3) / 4 * 16 > static_cast<size_t>(max_smem)) {
      blocks *= 2;
    }
    int chunk = ((total + blocks - 1) / blocks + 3) / 4 * 4;
    if (static_cast<size_t>(chunk) * 4 > static_cast<size_t>(max_smem)) {
      std::printf("%6d x %-6d does not fit one cluster\n", R, C);
      continue;
    }
    // At least 8 blocks for bandwidth.
    if (blocks < 8) {
      blocks = 8;
      chunk = ((total + blocks - 1) / blocks + 3) / 4 * 4;
    }
    const int smem = chunk * 4;
    double res[4][2];
    for (int v = 0; v < 2; ++v) {
      auto kernel = v == 0 ? cluster_transpose<false> : cluster_transpose<true>;
      CK(cudaMemcpy(d, h.data(), bytes, cudaMemcpyHostToDevice));
      launch_cluster(kernel, blocks, smem, d, R, C, chunk);
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(got.data(), d, bytes, cudaMemcpyDeviceToHost));
      size_t bad = 0;
      for (int i = 0; i < total; ++i) bad += got[i] != want[i];
      if (bad) std::printf("  WRONG: variant %d, %zu mismatches\n", v, bad);
      // Timed calls transpose back and forth (R x C, then C x R): the data stays a permutation of h.
      int rr = R, cc = C;
      auto fn = [&] {
        launch_cluster(kernel, blocks, smem, d, rr, cc, chunk);
        std::swap(rr, cc);
      };
      res[v][0] = time_us_queued(fn);
      res[v][1] = time_us_single(fn);
    }
    auto naive = [&] { naive_transpose<<<(total + 255) / 256, 256>>>(d, d2, R, C); };
    res[2][0] = time_us_queued(naive);
    res[2][1] = time_us_single(naive);
    auto cpy = [&] { CK(cudaMemcpyAsync(d2, d, bytes, cudaMemcpyDeviceToDevice)); };
    res[3][0] = time_us_queued(cpy);
    res[3][1] = time_us_single(cpy);
    std::printf("%6d x %-6d %6.2f %7d | %8.2f / %8.2f    %8.2f / %8.2f    %8.2f / %8.2f    %8.2f / %8.2f\n", R, C,
                bytes / 1e6, blocks, res[0][0], res[0][1], res[1][0], res[1][1], res[2][0], res[2][1], res[3][0],
                res[3][1]);
    CK(cudaFree(d));
    CK(cudaFree(d2));
  }
  return 0;
}
