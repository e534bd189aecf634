// Host launchers of the small LU / inverse kernels (kernels/lu/small_lu.cuh). Declared for every (T, n) here;
// defined and explicitly instantiated in lu_inst_*.cu (split by dtype and n so builds compile them in parallel).
// No ATen or c10 header here or in the translation units that hold the kernels (lu_inst_*.cu, lu_medium.cu), as in
// transpose_kernel.cu: what they need from ATen (errors, the current device and its properties) comes through the
// functions below, defined in lu_kernel.cu. So torch's hipify and hipcc compile them without a ROCm build of PyTorch
// (tools/hip_check.sh), as a ROCm build of the extension would.
#pragma once

#include <cstdint>

#if defined(__HIPCC__) || defined(USE_ROCM)
#include <hip/hip_runtime.h>
using ti_stream_t = hipStream_t;
using ti_error_t = hipError_t;
#else
#include <cuda_runtime.h>
using ti_stream_t = cudaStream_t;
using ti_error_t = cudaError_t;
#endif

namespace torch_inplace {
namespace lu_cuda {

// Raw element types: float, double, Cplx<float>, Cplx<double> (layout-compatible with c10::complex).
// `rows`: rows per lane (1 to 4), lu::kLaneRows (-3, ops/lu_common.h: a lane per matrix) or, for the inverse,
// lu::kSplitRows (-2: rows split into two column parts) or lu::kTensorCoreRows (-4: float64 on the fp64 tensor
// cores); a code the (T, n) has no kernel for falls back to 1 (rows_supported, lane_supported,
// SplitGeometry::kSupported, DmmaInverseGeometry::kSupported; the tensor cores also need dmma_inverse_available()).
template <typename T, int N>
void launch_lu(const T* in, T* lu, int32_t* ipiv, int32_t* info, int64_t batch, int warps, int rows,
               ti_stream_t stream);
template <typename T, int N>
void launch_inverse(const T* in, T* out, int32_t* info, int64_t batch, int warps, int rows, ti_stream_t stream);
// grad = -X^H G X^H (fused); only where backward_supported<T, N>() (two rows of n elements fit in registers).
template <typename T, int N>
void launch_inverse_backward(const T* X, const T* G, T* out, int64_t batch, ti_stream_t stream);
template <typename T, int N>
bool backward_supported();
// 2 <= n <= 64: the shared-memory kernels of kernels/lu/medium_lu.cuh (one matrix per block; what the ops run at
// 32 < n <= 64, and at n <= 32 under lu::kMediumRows). Defined in lu_medium.cu.
template <typename T>
void launch_medium_lu(const T* in, T* lu, int32_t* ipiv, int32_t* info, int64_t batch, int n, ti_stream_t stream);
template <typename T>
void launch_medium_inverse(const T* in, T* out, int32_t* info, int64_t batch, int n, ti_stream_t stream);
// Whether the float64 inverse may run on the fp64 tensor cores (lu::kTensorCoreRows) on the current device: CUDA,
// compute capability 8.0 and up, and TORCH_INPLACE_LU_DMMA_INVERSE is not 0 (read at every call). Defined in
// lu_kernel.cu.
bool dmma_inverse_available();

// ATen's side of the launchers, defined in lu_kernel.cu. check_runtime raises as C10_CUDA_CHECK does (a c10::Error
// with the runtime's message) unless `err` is success; internal_error raises a c10::Error with `what`.
void check_runtime(ti_error_t err);
[[noreturn]] void internal_error(const char* what);
int current_device();          // c10::cuda::current_device()
int device_sms(int device);    // ATen's (cached) device properties: multiprocessors
int device_major(int device);  // and the compute capability's major version
// The dynamic shared memory one block may take on `device`: CUDA's opt-in limit (227 KB on Hopper), AMD's LDS per
// block (64 KiB; no opt-in). TORCH_INPLACE_LU_SMEM_LIMIT (bytes, read once) lowers it, so tests can take the AMD
// route on an NVIDIA GPU.
int device_smem_per_block(int device);

}  // namespace lu_cuda
}  // namespace torch_inplace

#ifdef TI_LU_DEFINE_LAUNCHERS
#include <atomic>
#include <cstdlib>
#include <type_traits>

#include "kernels/lu/dmma_inverse.cuh"
#include "kernels/lu/inverse_backward.cuh"
#include "kernels/lu/small_lu.cuh"
#include "ops/lu_rows.h"  // lu::kSplitRows, lu::kTensorCoreRows

// After every <<<...>>> launch (the role of C10_CUDA_KERNEL_LAUNCH_CHECK).
#define TI_LU_LAUNCH_CHECK() ::torch_inplace::lu_cuda::check_runtime(cudaGetLastError())
// Launch configurations are plain variables: torch's hipify rewrites each triple-chevron launch into
// hipLaunchKernelGGL by matching text, and mangles a configuration that holds the kernel's name (`kernel` in
// `kernels::kWarpSize`) or a shift (`1 << 20`).

namespace torch_inplace {
namespace lu_cuda {

constexpr int kMaxBlockSmem = 48 * 1024;

// Warps per block of small_lu_kernel (Kind 0) or small_inverse_kernel (Kind 1): 1 to 8, at most what the kernel's
// launch bounds allow (kernels::lu::lu_reg_bound) and 48 KiB of shared memory per block.
template <typename T, int N, int R, int Kind>
static int clamp_warps(int warps) {
  using Geo = kernels::lu::Geometry<T, N, R>;
  constexpr int kMax = kernels::lu::lu_bound_threads(kernels::lu::lu_reg_bound<T, N, R, Kind>()) / kernels::kWarpSize;
  int w = warps < 1 ? 1 : (warps > kMax ? kMax : warps);
  while (w > 1 && w * Geo::kWarpSmemBytes > kMaxBlockSmem) --w;
  return w;
}

using kernels::lu::rows_supported;  // rows per lane that have kernels (kernels/lu/small_lu.cuh)
// lu::kLaneRows: every row of a matrix in one lane (R = n, G = 1) for real types with 2 <= n <= 8.
template <typename T, int N>
constexpr bool lane_supported() {
  return std::is_floating_point<T>::value && N >= 2 && N <= 8;
}

// Persistent launches (lu_persistent in small_lu.cuh: small tiles): the grid is capped at the blocks the GPU holds
// at once, so each warp works through several tiles and fetches the next one while it computes.
// TORCH_INPLACE_LU_PERSIST=0 launches one warp per tile (every warp takes one turn);
// TORCH_INPLACE_LU_PREFETCH=0 keeps the persistent grid without the prefetch; TORCH_INPLACE_LU_GRID_CAP=B caps the
// persistent grid at B blocks (tests and the sanitizer: many turns per warp with small batches). Read at every
// launch.
inline bool lu_env_off(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] == '0' && v[1] == 0;
}

// One type per kernel instantiation (Kind 0: LU, 1: inverse), to key resident_blocks' cache.
template <typename T, int N, int R, int Kind>
struct KernelTag {};

// Resident blocks of `kernel` on the current device: the occupancy calculator's blocks per SM (cached per kernel
// -- the Tag's instantiation --, device and warps per block, which fix the shared memory) times ATen's SM count;
// 0 when the runtime cannot say (then the grid covers the batch).
template <typename Tag, typename Kernel>
int64_t resident_blocks(Kernel kernel, int warps, int smem_bytes) {
  constexpr int kDevices = 64;
  static std::atomic<int> per_sm_cache[kDevices][9];
  const int dev = current_device();
  if (dev < 0 || dev >= kDevices || warps < 1 || warps > 8) return 0;
  int per_sm = per_sm_cache[dev][warps].load(std::memory_order_relaxed);
  if (per_sm == 0) {
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, warps * kernels::kWarpSize, smem_bytes) !=
            cudaSuccess ||
        per_sm <= 0) {
      (void)cudaGetLastError();
      return 0;
    }
    per_sm_cache[dev][warps].store(per_sm, std::memory_order_relaxed);
  }
  return static_cast<int64_t>(per_sm) * device_sms(dev);
}

// Blocks of a launch over `batch` matrices, `per_block` per block and turn: enough for one turn of every warp, or
// the resident blocks when the kernel loops over tiles (kernels::lu::lu_persistent) and that is fewer.
template <typename Tag, typename Kernel>
unsigned lu_grid(Kernel kernel, bool persistent, int64_t batch, int64_t per_block, int warps, int smem_bytes) {
  int64_t blocks = (batch + per_block - 1) / per_block;
  if (persistent && !lu_env_off("TORCH_INPLACE_LU_PERSIST")) {
    const int64_t resident = resident_blocks<Tag>(kernel, warps, smem_bytes);
    if (resident > 0 && resident < blocks) blocks = resident;
    const char* cap = std::getenv("TORCH_INPLACE_LU_GRID_CAP");  // tests: many turns with small batches
    const long long c = cap != nullptr ? std::atoll(cap) : 0;
    if (c > 0 && c < blocks) blocks = c;
  }
  return static_cast<unsigned>(blocks);
}

// One launch of small_lu_kernel (Kind 0) or small_inverse_kernel (Kind 1) for R rows per lane: `args` are the
// kernel's pointer arguments, followed by the batch and the prefetch flag.
template <typename T, int N, int R, int Kind, typename Kernel, typename... Args>
static void launch_small(Kernel kernel, int64_t batch, int warps, ti_stream_t stream, Args... args) {
  using Geo = kernels::lu::Geometry<T, N, R>;
  const int w = clamp_warps<T, N, R, Kind>(warps);
  const int smem = w * Geo::kWarpSmemBytes;
  const unsigned blocks = lu_grid<KernelTag<T, N, R, Kind>>(kernel, kernels::lu::lu_persistent<T, N, R>(), batch,
                                                            static_cast<int64_t>(w) * Geo::kGroups, w, smem);
  const bool prefetch = !lu_env_off("TORCH_INPLACE_LU_PREFETCH");
  const unsigned threads = w * kernels::kWarpSize;
  kernel<<<blocks, threads, smem, stream>>>(args..., batch, prefetch);
  TI_LU_LAUNCH_CHECK();
}

template <typename T, int N, int R>
static void launch_lu_rows(const T* in, T* lu, int32_t* ipiv, int32_t* info, int64_t batch, int warps,
                           ti_stream_t stream) {
  launch_small<T, N, R, 0>(kernels::lu::small_lu_kernel<T, N, R>, batch, warps, stream, in, lu, ipiv, info);
}

template <typename T, int N, int R>
static void launch_inverse_rows(const T* in, T* out, int32_t* info, int64_t batch, int warps, ti_stream_t stream) {
  launch_small<T, N, R, 1>(kernels::lu::small_inverse_kernel<T, N, R>, batch, warps, stream, in, out, info);
}

// n = 1: the elementwise one_by_one_kernel (Kind 0: LU, 1: inverse), whatever the table says.
template <typename T, int Kind>
static void launch_one_by_one(const T* in, T* out, int32_t* ipiv, int32_t* info, int64_t batch, ti_stream_t stream) {
  constexpr int kThreads = 256, kV = kernels::lu::Geometry<T, 1>::kV;
  const int64_t chunks = (batch + kV - 1) / kV;
  constexpr int64_t kMaxBlocks = int64_t{1} << 20;
  const int64_t blocks = (chunks + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
  kernels::lu::one_by_one_kernel<T, Kind><<<grid, kThreads, 0, stream>>>(in, out, ipiv, info, batch);
  TI_LU_LAUNCH_CHECK();
}

template <typename T, int N>
void launch_lu(const T* in, T* lu, int32_t* ipiv, int32_t* info, int64_t batch, int warps, int rows,
               ti_stream_t stream) {
  if constexpr (N == 1) {
    launch_one_by_one<T, 0>(in, lu, ipiv, info, batch, stream);
  } else {
    if constexpr (lane_supported<T, N>()) {
      if (rows == lu::kLaneRows) return launch_lu_rows<T, N, N>(in, lu, ipiv, info, batch, warps, stream);
    }
    if constexpr (rows_supported<T, N, 4>()) {
      if (rows == 4) return launch_lu_rows<T, N, 4>(in, lu, ipiv, info, batch, warps, stream);
    }
    if constexpr (rows_supported<T, N, 3>()) {
      if (rows == 3) return launch_lu_rows<T, N, 3>(in, lu, ipiv, info, batch, warps, stream);
    }
    if constexpr (rows_supported<T, N, 2>()) {
      if (rows == 2) return launch_lu_rows<T, N, 2>(in, lu, ipiv, info, batch, warps, stream);
    }
    launch_lu_rows<T, N, 1>(in, lu, ipiv, info, batch, warps, stream);
  }
}

// Raises a kernel's dynamic shared-memory limit to `limit`, once per device, where a launch needs more than
// kMaxBlockSmem (`raised`: one per kernel, a static of its launcher).
struct SmemLimitRaised {
  static constexpr int kDevices = 64;
  std::atomic<bool> done[kDevices] = {};
};
inline void allow_block_smem(const void* kernel, SmemLimitRaised& raised, int smem, int limit) {
  if (smem <= kMaxBlockSmem) return;
  const int dev = current_device();
  if (dev >= 0 && dev < SmemLimitRaised::kDevices && !raised.done[dev].load(std::memory_order_relaxed)) {
    // No more than the device allows (AMD: 64 KiB, under the medium kernels' complex128 n = 64 tile, which the ops
    // then hand to torch.linalg); `smem` itself fits (lu_kernel.cu routes by it, by_linalg).
    const int device_limit = device_smem_per_block(dev);
    if (limit > device_limit) limit = device_limit < smem ? smem : device_limit;
    check_runtime(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, limit));
    raised.done[dev].store(true, std::memory_order_relaxed);
  }
}

// split_inverse_kernel: one matrix per warp, up to 8 warps per block. Its shared memory may pass 48 KiB per block
// (float64 n = 32 with 8 warps: 73 KB), which CUDA allows once the kernel's limit is raised (per device, once).
template <typename T, int N>
static void launch_inverse_split(const T* in, T* out, int32_t* info, int64_t batch, int warps, ti_stream_t stream) {
  using SG = kernels::lu::SplitGeometry<T, N, 2>;
  constexpr int kMaxSplitSmem = 8 * SG::kWarpSmemBytes;
  const int w = warps < 1 ? 1 : (warps > 8 ? 8 : warps);
  const int smem = w * SG::kWarpSmemBytes;
  if constexpr (kMaxSplitSmem > kMaxBlockSmem) {
    static SmemLimitRaised raised;
    allow_block_smem(reinterpret_cast<const void*>(kernels::lu::split_inverse_kernel<T, N, 2>), raised, smem,
                     kMaxSplitSmem);
  }
  const unsigned grid = static_cast<unsigned>((batch + w - 1) / w), threads = w * kernels::kWarpSize;
  kernels::lu::split_inverse_kernel<T, N, 2><<<grid, threads, smem, stream>>>(in, out, info, batch);
  TI_LU_LAUNCH_CHECK();
}

#if !TI_HIP
// dmma_inverse_kernel: one matrix per warp, up to 8 warps per block; its shared memory passes 48 KiB per block at
// 8 warps for n > 24 (76 KB at n = 32), which the kernel's raised limit allows.
template <int N>
static void launch_inverse_dmma(const double* in, double* out, int32_t* info, int64_t batch, int warps,
                                ti_stream_t stream) {
  using DG = kernels::lu::DmmaInverseGeometry<N>;
  constexpr int kMaxDmmaSmem = 8 * DG::kWarpSmemBytes;
  const int w = warps < 1 ? 1 : (warps > 8 ? 8 : warps);
  const int smem = w * DG::kWarpSmemBytes;
  if constexpr (kMaxDmmaSmem > kMaxBlockSmem) {
    static SmemLimitRaised raised;
    allow_block_smem(reinterpret_cast<const void*>(kernels::lu::dmma_inverse_kernel<N>), raised, smem, kMaxDmmaSmem);
  }
  const unsigned grid = static_cast<unsigned>((batch + w - 1) / w), threads = w * kernels::kWarpSize;
  kernels::lu::dmma_inverse_kernel<N><<<grid, threads, smem, stream>>>(in, out, info, batch);
  TI_LU_LAUNCH_CHECK();
}
#endif

template <typename T, int N>
void launch_inverse(const T* in, T* out, int32_t* info, int64_t batch, int warps, int rows, ti_stream_t stream) {
  if constexpr (N == 1) {
    launch_one_by_one<T, 1>(in, out, nullptr, info, batch, stream);
  } else {
#if !TI_HIP
    if constexpr (std::is_same<T, double>::value && kernels::lu::DmmaInverseGeometry<N>::kSupported) {
      if (rows == lu::kTensorCoreRows && dmma_inverse_available()) {
        return launch_inverse_dmma<N>(in, out, info, batch, warps, stream);
      }
    }
#endif
    if constexpr (kernels::lu::SplitGeometry<T, N, 2>::kSupported) {
      if (rows == lu::kSplitRows) return launch_inverse_split<T, N>(in, out, info, batch, warps, stream);
    }
    if constexpr (lane_supported<T, N>()) {
      if (rows == lu::kLaneRows) return launch_inverse_rows<T, N, N>(in, out, info, batch, warps, stream);
    }
    if constexpr (rows_supported<T, N, 4>()) {
      if (rows == 4) return launch_inverse_rows<T, N, 4>(in, out, info, batch, warps, stream);
    }
    if constexpr (rows_supported<T, N, 3>()) {
      if (rows == 3) return launch_inverse_rows<T, N, 3>(in, out, info, batch, warps, stream);
    }
    if constexpr (rows_supported<T, N, 2>()) {
      if (rows == 2) return launch_inverse_rows<T, N, 2>(in, out, info, batch, warps, stream);
    }
    launch_inverse_rows<T, N, 1>(in, out, info, batch, warps, stream);
  }
}

template <typename T, int N>
bool backward_supported() {
  return kernels::lu::BackwardGeometry<T, N>::kSupported;
}

// Launches one of the fused backward kernels: up to 4 warps per block within kMaxBlockSmem, `groups` matrices
// per warp, `warp_bytes` of shared memory per warp.
template <typename T>
static void launch_backward_kernel(void (*kernel)(const T*, const T*, T*, int64_t), int warp_bytes, int groups,
                                   const T* X, const T* G, T* out, int64_t batch, ti_stream_t stream) {
  int w = 4;
  while (w > 1 && w * warp_bytes > kMaxBlockSmem) --w;
  const int64_t per_block = static_cast<int64_t>(w) * groups;
  const unsigned grid = static_cast<unsigned>((batch + per_block - 1) / per_block), threads = w * kernels::kWarpSize;
  const int smem = w * warp_bytes;
  kernel<<<grid, threads, smem, stream>>>(X, G, out, batch);
  TI_LU_LAUNCH_CHECK();
}

#if !TI_HIP
// The fp64 tensor cores (mma.sync m8n8k4): compute capability 8.0 and up; TORCH_INPLACE_LU_DMMA_BACKWARD=0 keeps the
// FMA kernels (tests, benchmarks).
inline bool dmma_available() {
  return !lu_env_off("TORCH_INPLACE_LU_DMMA_BACKWARD") && device_major(current_device()) >= 8;
}
#endif

template <typename T, int N>
void launch_inverse_backward(const T* X, const T* G, T* out, int64_t batch, ti_stream_t stream) {
  using Geo = kernels::lu::Geometry<T, N>;
  using BG = kernels::lu::BackwardGeometry<T, N>;
  using BB = kernels::lu::BlockBackwardGeometry<T, N>;
#if !TI_HIP
  using DG = kernels::lu::DmmaBackwardGeometry<T, N>;
  if constexpr (DG::kSupported) {  // float64, n = 17..32, tensor cores
    if (dmma_available()) {
      return launch_backward_kernel<T>(kernels::lu::dmma_inverse_backward_kernel<T, N>, DG::kWarpSmemBytes, 1, X, G,
                                       out, batch, stream);
    }
  }
#endif
  if constexpr (BB::kSupported) {  // float64, n = 17..24, 31, 32: the block variant
    launch_backward_kernel<T>(kernels::lu::block_inverse_backward_kernel<T, N>, BB::kWarpSmemBytes, BB::kGroups, X, G,
                              out, batch, stream);
  } else if constexpr (BG::kSupported) {
    launch_backward_kernel<T>(kernels::lu::inverse_backward_kernel<T, N>, BG::kWarpSmemBytes, Geo::kGroups, X, G, out,
                              batch, stream);
  } else {
    internal_error("_inverse_backward: internal error: no fused kernel for this (dtype, n)");
  }
}

}  // namespace lu_cuda
}  // namespace torch_inplace

#define TI_LU_INST(T, N)                                                                                       \
  template void torch_inplace::lu_cuda::launch_lu<T, N>(const T*, T*, int32_t*, int32_t*, int64_t, int, int,   \
                                                        ti_stream_t);                                          \
  template void torch_inplace::lu_cuda::launch_inverse<T, N>(const T*, T*, int32_t*, int64_t, int, int,         \
                                                             ti_stream_t);                                     \
  template bool torch_inplace::lu_cuda::backward_supported<T, N>();                                           \
  template void torch_inplace::lu_cuda::launch_inverse_backward<T, N>(const T*, const T*, T*, int64_t,        \
                                                                      ti_stream_t);
// Real types build about three times the kernels (rows per lane 1, 2, 4): quarters of n, one per file.
#define TI_LU_INST_Q1(T) \
  TI_LU_INST(T, 1) TI_LU_INST(T, 2) TI_LU_INST(T, 3) TI_LU_INST(T, 4) TI_LU_INST(T, 5) TI_LU_INST(T, 6) \
  TI_LU_INST(T, 7) TI_LU_INST(T, 8) TI_LU_INST(T, 9) TI_LU_INST(T, 10)
#define TI_LU_INST_Q2(T) \
  TI_LU_INST(T, 11) TI_LU_INST(T, 12) TI_LU_INST(T, 13) TI_LU_INST(T, 14) TI_LU_INST(T, 15) TI_LU_INST(T, 16)
#define TI_LU_INST_Q3(T) \
  TI_LU_INST(T, 17) TI_LU_INST(T, 18) TI_LU_INST(T, 19) TI_LU_INST(T, 20) TI_LU_INST(T, 21) TI_LU_INST(T, 22) \
  TI_LU_INST(T, 23) TI_LU_INST(T, 24)
#define TI_LU_INST_Q4(T) \
  TI_LU_INST(T, 25) TI_LU_INST(T, 26) TI_LU_INST(T, 27) TI_LU_INST(T, 28) TI_LU_INST(T, 29) TI_LU_INST(T, 30) \
  TI_LU_INST(T, 31) TI_LU_INST(T, 32)
#define TI_LU_INST_LO(T)                                                                                \
  TI_LU_INST(T, 1) TI_LU_INST(T, 2) TI_LU_INST(T, 3) TI_LU_INST(T, 4) TI_LU_INST(T, 5) TI_LU_INST(T, 6)      \
  TI_LU_INST(T, 7) TI_LU_INST(T, 8) TI_LU_INST(T, 9) TI_LU_INST(T, 10) TI_LU_INST(T, 11) TI_LU_INST(T, 12)   \
  TI_LU_INST(T, 13) TI_LU_INST(T, 14) TI_LU_INST(T, 15) TI_LU_INST(T, 16)
#define TI_LU_INST_HI(T)                                                                                \
  TI_LU_INST(T, 17) TI_LU_INST(T, 18) TI_LU_INST(T, 19) TI_LU_INST(T, 20) TI_LU_INST(T, 21)                 \
  TI_LU_INST(T, 22) TI_LU_INST(T, 23) TI_LU_INST(T, 24) TI_LU_INST(T, 25) TI_LU_INST(T, 26)                 \
  TI_LU_INST(T, 27) TI_LU_INST(T, 28) TI_LU_INST(T, 29) TI_LU_INST(T, 30) TI_LU_INST(T, 31) TI_LU_INST(T, 32)
#endif  // TI_LU_DEFINE_LAUNCHERS
