// The n = 1 inverse's floor (issue 4's fp32 roofline target at n = 1): 2^20 float32 1 x 1 matrices (8 MB moved),
// GPU time queued behind a sleep kernel as bench_linalg.py's *_queued_ms, for the library's one_by_one_kernel at its
// launch (256 threads) and 128, straight one-launch variants with K 16-byte chunks a thread (all loads first), grid-
// stride variants at a few blocks an SM, cudaMemcpyAsync of the same 4 MB, and an empty kernel (the method's floor).
// Every variant's output is compared bit for bit with one_by_one_kernel's.
//   nvcc -std=c++17 -arch=sm_90 -O3 --expt-relaxed-constexpr -I csrc benchmarks/one_by_one_harness.cu -o /tmp/obo
#include <functional>
#include <string>
#include "harness_common.cuh"
#include "kernels/lu/small_lu.cuh"
using namespace torch_inplace::kernels::lu;

__device__ __forceinline__ float4 rc4(float4 a) {
  return make_float4(1.f * (1.f / a.x), 1.f * (1.f / a.y), 1.f * (1.f / a.z), 1.f * (1.f / a.w));
}
// K chunks a thread, block-contiguous (thread t of block b: chunks b*T*K + t + j*T), all loads first.
template <int K, int CS>
__global__ void __launch_bounds__(1024) rk(const float4* __restrict__ in, float4* __restrict__ out, int64_t nc) {
  const int64_t base = (int64_t)blockIdx.x * blockDim.x * K + threadIdx.x;
  float4 v[K];
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const int64_t i = base + (int64_t)j * blockDim.x;
    if (i < nc) v[j] = CS ? __ldcs(in + i) : in[i];
  }
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const int64_t i = base + (int64_t)j * blockDim.x;
    if (i < nc) { if (CS == 2) __stcs(out + i, rc4(v[j])); else out[i] = rc4(v[j]); }
  }
}
// grid-stride, K chunks per iteration
template <int K>
__global__ void __launch_bounds__(1024) rgs(const float4* __restrict__ in, float4* __restrict__ out, int64_t nc) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t base = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; base < nc; base += stride * K) {
    float4 v[K];
#pragma unroll
    for (int j = 0; j < K; ++j) { const int64_t i = base + j * stride; if (i < nc) v[j] = in[i]; }
#pragma unroll
    for (int j = 0; j < K; ++j) { const int64_t i = base + j * stride; if (i < nc) out[i] = rc4(v[j]); }
  }
}
__global__ void empty_kernel() {}

int main() {
  const int64_t B = int64_t(1) << 20, nc = B / 4;
  float *a, *x, *ref;
  CK(cudaMalloc(&a, B * 4)); CK(cudaMalloc(&x, B * 4)); CK(cudaMalloc(&ref, B * 4));
  fill<float><<<1024, 256>>>(a, 1, B);
  const double bw = copy_gbps();
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, copy %.0f GB/s, %d SMs; 2^20 float32, 8 MB; us queued (median of 101), %% of roofline\n",
              prop.name, bw, sms);
  one_by_one_kernel<float, 1><<<1024, 256>>>(a, ref, nullptr, nullptr, B);
  CK(cudaDeviceSynchronize());
  unsigned long long* dd; CK(cudaMalloc(&dd, 8));
  auto check = [&]() {
    CK(cudaMemset(dd, 0, 8)); count_diff<float><<<256, 256>>>(x, ref, B, dd);
    unsigned long long h = 0; CK(cudaMemcpy(&h, dd, 8, cudaMemcpyDeviceToHost)); return h;
  };
  struct V {
    std::string name;
    std::function<void()> f;
  };
  std::vector<V> vs;
  auto add = [&](std::string nm, std::function<void()> f) { vs.push_back({std::move(nm), std::move(f)}); };
  for (int t : {128, 256}) {  // the kernel is bounded to 256 threads a block; the library launches 256
    const int64_t blocks = (nc + t - 1) / t;
    add("one_by_one_kernel T=" + std::to_string(t),
        [=] { one_by_one_kernel<float, 1><<<(unsigned)blocks, t>>>(a, x, nullptr, nullptr, B); });
  }
  const float4* in4 = reinterpret_cast<const float4*>(a); float4* out4 = reinterpret_cast<float4*>(x);
#define ADDK(K, T, CS)                                 \
  add("rk K=" #K " T=" #T " cs=" #CS, [=] {            \
    const unsigned blocks = (nc + T * K - 1) / (T * K); \
    rk<K, CS><<<blocks, T>>>(in4, out4, nc);            \
  });
  ADDK(1, 256, 0) ADDK(2, 256, 0) ADDK(4, 256, 0) ADDK(8, 256, 0) ADDK(2, 512, 0) ADDK(4, 512, 0) ADDK(2, 1024, 0)
  ADDK(4, 128, 0) ADDK(8, 128, 0) ADDK(2, 256, 1) ADDK(2, 256, 2) ADDK(4, 256, 2)
#define ADDG(K, T, BPS) \
  add("rgs K=" #K " T=" #T " blocks/SM=" #BPS, [=] { rgs<K><<<(unsigned)(sms * BPS), T>>>(in4, out4, nc); });
  ADDG(1, 1024, 2) ADDG(2, 1024, 2) ADDG(4, 512, 4) ADDG(2, 512, 4) ADDG(4, 256, 8) ADDG(2, 256, 8) ADDG(1, 256, 8)
  add("cudaMemcpyAsync 4 MB", [=] { CK(cudaMemcpyAsync(x, a, B * 4, cudaMemcpyDeviceToDevice)); });
  add("empty kernel", [=] { empty_kernel<<<1, 32>>>(); });
  for (int round = 0; round < 3; ++round) {
    for (auto& v : vs) {
      CK(cudaMemset(x, 0, B * 4));
      const double us = time_us_queued(v.f, 101, 5);
      const bool is_k = v.name.find("cuda") == std::string::npos && v.name.find("empty") == std::string::npos;
      const unsigned long long d = is_k ? check() : 0;
      std::printf("round %d %-32s %7.2f us  %5.1f%%  diff %llu\n", round, v.name.c_str(), us,
                  100.0 * 8.0 * B / (us * 1e3) / bw, d);
    }
  }
  return 0;
}
