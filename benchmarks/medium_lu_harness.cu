// Standalone timing of the medium LU / inverse kernels (kernels/lu/medium_lu.cuh, one matrix per block in shared
// memory) for float32 and float64 at n = 33, 40, 48, 56, 64 (or the n given), 2^14 matrices as bench_linalg.py, with
// the launcher's grid (ops/cuda/lu_medium.cu: at most 32 blocks per SM, blocks loop over the batch). Built against two
// versions of medium_lu.cuh (-I OLD first for the other one) it compares kernels across two runs:
//   nvcc -std=c++17 -arch=sm_90 -O3 --expt-relaxed-constexpr [-I OLD] -I csrc benchmarks/medium_lu_harness.cu -o /tmp/mlh
//   /tmp/mlh [n ...]          (MLH_BATCH=b: b matrices instead, e.g. under compute-sanitizer)
// Prints one line per (kind, dtype, n): median ms of 9 launches, GB/s and the fraction of the copy roofline, a hash of
// the output bits (factors, pivots, infos; or inverse, infos), and for the inverse the largest |A X - I| over the
// first 64 nonsingular matrices (a build whose arithmetic differs shows other bits, not another residual).
#include <cstring>

#include "harness_common.cuh"
#include "kernels/lu/medium_lu.cuh"

using namespace torch_inplace::kernels;

int64_t kBatch = int64_t(1) << 14;

// max |(A X - I)[i][j]| over matrices m < 64 but the singular ones of fill (m % 97 == 5), as float bits (atomicMax).
template <typename T>
__global__ void residual(const T* a, const T* x, int n, unsigned* out) {
  const int m = blockIdx.x;
  if (m % 97 == 5) return;
  const T* A = a + (int64_t)m * n * n;
  const T* X = x + (int64_t)m * n * n;
  for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
    const int i = e / n, j = e % n;
    double s = 0;
    for (int k = 0; k < n; ++k) s += (double)A[i * n + k] * (double)X[k * n + j];
    const float r = (float)fabs(s - (i == j ? 1.0 : 0.0));
    atomicMax(out, __float_as_uint(r));
  }
}

template <typename T>
void run(int n, void* a, void* x, int32_t* piv, int32_t* info, double gbps) {
  const int sms = [] {
    int s = 0;
    CK(cudaDeviceGetAttribute(&s, cudaDevAttrMultiProcessorCount, 0));
    return s;
  }();
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(kBatch, int64_t{32} * sms));
  const int smem = lu::medium_smem_bytes<T>(n);
  const T* A = static_cast<const T*>(a);
  T* X = static_cast<T*>(x);
  fill<T><<<1024, 256>>>(static_cast<T*>(a), n, kBatch * n * n);
  CK(cudaFuncSetAttribute(lu::medium_lu_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(lu::medium_inverse_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const double bytes = 2.0 * kBatch * n * n * sizeof(T);
  for (int kind = 0; kind < 2; ++kind) {
    float ms;
    if (kind == 0) {
      ms = time_ms([&] { lu::medium_lu_kernel<T><<<grid, lu::kMediumThreads, smem>>>(A, X, piv, info, kBatch, n); });
    } else {
      ms = time_ms([&] { lu::medium_inverse_kernel<T><<<grid, lu::kMediumThreads, smem>>>(A, X, info, kBatch, n); });
    }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    unsigned long long h = hash_of(X, kBatch * n * n * sizeof(T)) + 3 * hash_of(info, kBatch * 4);
    float res = 0;
    if (kind == 0) {
      h += 7 * hash_of(piv, kBatch * n * 4);
    } else {
      unsigned* d;
      CK(cudaMalloc(&d, 4));
      CK(cudaMemset(d, 0, 4));
      residual<T><<<static_cast<unsigned>(std::min<int64_t>(64, kBatch)), 256>>>(A, X, n, d);
      unsigned bits = 0;
      CK(cudaMemcpy(&bits, d, 4, cudaMemcpyDeviceToHost));
      CK(cudaFree(d));
      std::memcpy(&res, &bits, 4);
    }
    const double gb = bytes / (ms * 1e-3) / 1e9;
    std::printf("%-7s %s n=%2d %8.4f ms %7.0f GB/s roofline %5.1f%% hash %016llx residual %.3g\n",
                kind == 0 ? "lu" : "inverse", sizeof(T) == 8 ? "float64" : "float32", n, ms, gb, 100.0 * gb / gbps,
                h, res);
    std::fflush(stdout);
  }
}

int main(int argc, char** argv) {
  std::vector<int> ns;
  for (int i = 1; i < argc; ++i) ns.push_back(std::atoi(argv[i]));
  if (ns.empty()) ns = {33, 40, 48, 56, 64};
  if (const char* b = std::getenv("MLH_BATCH")) kBatch = std::atoll(b);
  const double gbps = copy_gbps();
  std::printf("copy %.0f GB/s, %lld matrices\n", gbps, static_cast<long long>(kBatch));
  void *a, *x;
  int32_t *piv, *info;
  CK(cudaMalloc(&a, kBatch * 64 * 64 * 8));
  CK(cudaMalloc(&x, kBatch * 64 * 64 * 8));
  CK(cudaMalloc(&piv, kBatch * 64 * 4));
  CK(cudaMalloc(&info, kBatch * 4));
  for (int n : ns) {
    run<float>(n, a, x, piv, info, gbps);
    run<double>(n, a, x, piv, info, gbps);
  }
  return 0;
}
