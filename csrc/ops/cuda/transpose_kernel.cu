// CUDA (and HIP) engine of _transpose_data_: the launcher for the kernels in csrc/kernels/transpose, the GPU
// capabilities provider for the planner, and the dispatch registration.
//
// Stream-ordered: every step is a kernel (or a memset) on the current stream; scratch comes from the caching
// allocator through allocate_workspace; there is no synchronisation and no host round trip, so every plan
// (square, skinny, c2r, r2c, with either column engine) can be captured in a CUDA graph.
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <mutex>
#include <vector>

#include "core/checks.h"
#include "core/workspace.h"
#include "kernels/transpose/catanzaro.cuh"
#include "kernels/transpose/cluster_columns.cuh"
#include "kernels/transpose/square.cuh"

namespace torch_inplace {
namespace {

using namespace kernels;

// ---- device capabilities, cached per device -------------------------------------------------------------
plan::DeviceCaps gpu_caps(int device) {
  static std::mutex mu;
  static std::vector<plan::DeviceCaps> cache;
  static std::vector<bool> have;
  if (device < 0) device = c10::cuda::current_device();
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<int>(cache.size()) <= device) {
    cache.resize(device + 1);
    have.resize(device + 1, false);
  }
  if (!have[device]) {
    cudaDeviceProp prop;
    C10_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    plan::DeviceCaps c;
    c.backend = plan::Backend::CUDA;
    c.num_sms = prop.multiProcessorCount;
    c.smem_per_block = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
    c.warp_size = prop.warpSize;
    c.l2_bytes = prop.l2CacheSize;
    c.cc_major = prop.major;
#if defined(USE_ROCM) || defined(__HIP_PLATFORM_AMD__)
    c.max_cluster = 1;
#else
    c.max_cluster = prop.major >= 9 ? 8 : 1;  // portable cluster size with distributed shared memory
#endif
    cache[device] = c;
    have[device] = true;
  }
  return cache[device];
}

const bool g_caps_registered = register_gpu_caps_provider(&gpu_caps);

// ---- launch helpers ---------------------------------------------------------------------------------------
int grid_for(int64_t work, int threads, const plan::DeviceCaps& caps, int per_sm = 8) {
  const int64_t want = (work + threads - 1) / threads;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(want, int64_t{caps.num_sms} * per_sm)));
}

template <typename K>
void allow_smem(K kernel, int64_t bytes) {
  if (bytes > 48 * 1024) {
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(bytes)));
  }
}

template <typename T, typename U>
struct Engine {
  const plan::Plan& pl;
  const plan::DeviceCaps& caps;
  T* data;
  uint8_t* scratch;
  cudaStream_t stream;
  int64_t batch;

  void square() {
    const int64_t n = pl.problem.rows;
    const int64_t nt = (n + kSqTile - 1) / kSqTile;
    const int64_t pairs = nt * (nt + 1) / 2;
    const int grid = static_cast<int>(std::min<int64_t>(pairs * batch, int64_t{caps.num_sms} * 16));
    square_swap_kernel<T, U><<<grid, dim3(kSqTile, kSqRows), 0, stream>>>(data, static_cast<U>(n), nt, pairs,
                                                                           batch);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }

  void row_shuffle(const CatIdx<U>& P, bool c2r) {
    const auto& g = pl.gpu;
    const int64_t rows = pl.c2r.m * batch;
    if (g.row_block > 0) {
      const int threads = kRowThreads;
      const int64_t blocks = (rows + g.row_block - 1) / g.row_block;
      const int grid = static_cast<int>(std::min<int64_t>(blocks, int64_t{caps.num_sms} * 32));
      auto k = c2r ? row_shuffle_smem_kernel<T, U, true> : row_shuffle_smem_kernel<T, U, false>;
      allow_smem(k, g.row_smem);
      k<<<grid, threads, g.row_smem, stream>>>(data, P, rows, static_cast<int>(g.row_block));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    } else {
      T* slots = reinterpret_cast<T*>(scratch + g.slots_off);
      auto k = c2r ? row_shuffle_gmem_kernel<T, U, true> : row_shuffle_gmem_kernel<T, U, false>;
      k<<<static_cast<int>(g.row_slots), kSlotThreads, 0, stream>>>(data, slots, P, rows);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  }

  void reflect(const CatIdx<U>& P, int step, bool about_zero) {
    const int64_t total = pl.c2r.m * pl.c2r.n * batch;
    reflect_kernel<T, U><<<grid_for(total, 256, caps, 16), 256, 0, stream>>>(data, P, step, about_zero, batch);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }

  void q_permute(const CatIdx<U>& P, bool gather) {
    const auto& g = pl.gpu;
    uint32_t* bitmap = reinterpret_cast<uint32_t*>(scratch + g.bitmap_off);
    C10_CUDA_CHECK(cudaMemsetAsync(bitmap, 0, g.bitmap_bytes, stream));
    q_leaders_kernel<U><<<grid_for(pl.c2r.m, 256, caps, 8), 256, 0, stream>>>(P, bitmap);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    const int64_t words = (pl.c2r.m + 31) / 32;
    const int threads = static_cast<int>(std::min<int64_t>(256, (pl.c2r.n + 31) / 32 * 32));
    const int64_t segs = (pl.c2r.n + threads - 1) / threads;
    const int grid = static_cast<int>(std::min<int64_t>(words * segs * batch, int64_t{caps.num_sms} * 16));
    auto k = gather ? q_cycles_kernel<T, U, true> : q_cycles_kernel<T, U, false>;
    k<<<grid, threads, 0, stream>>>(data, P, bitmap, words, batch);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }

  // One column step. With a cluster plan: one pass through distributed shared memory. Otherwise:
  //   rotations (pre/post) = reflection about the amount, then about 0;
  //   column shuffle (C2R)  = rotate left by j, then gather rows by q;
  //   inverse (R2C)         = scatter rows by q, then rotate right by j.
  void col_step(const CatIdx<U>& P, int step) {
    const auto& g = pl.gpu;
    if (g.col_cluster > 0) {
#if !TI_HIP
      int w_log2 = 0;
      while ((int64_t{1} << w_log2) < g.col_width) ++w_log2;
      const int64_t panels = (pl.c2r.n + g.col_width - 1) / g.col_width;
      const int64_t total = panels * batch;
      const int cs = static_cast<int>(g.col_cluster);
      auto k = col_cluster_kernel<T, U>;
      C10_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(std::max<int64_t>(g.col_smem, 1))));
      if (cs > 8) C10_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
      const int64_t per_sm = std::max<int64_t>(1, std::min<int64_t>(2, caps.smem_per_block / (g.col_smem + 1024)));
      const int64_t clusters = std::max<int64_t>(1, std::min<int64_t>(total, caps.num_sms * per_sm / cs));
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(static_cast<unsigned>(clusters * cs));
      cfg.blockDim = dim3(kColThreads);
      cfg.dynamicSmemBytes = static_cast<size_t>(g.col_smem);
      cfg.stream = stream;
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = cs;
      attr[0].val.clusterDim.y = 1;
      attr[0].val.clusterDim.z = 1;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      C10_CUDA_CHECK(cudaLaunchKernelEx(&cfg, k, data, P, step, w_log2, static_cast<uint32_t>(g.col_rows),
                                        DivMod<uint32_t>(static_cast<uint32_t>(g.col_rows)), panels, total));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      return;
#endif
    }
    switch (step) {
      case kPreRotate:
      case kPostRotate:
        reflect(P, step, false);
        reflect(P, step, true);
        return;
      case kColShuffle:
        reflect(P, kColShuffle, false);
        reflect(P, kColShuffle, true);
        q_permute(P, /*gather=*/true);
        return;
      case kInvColShuffle:
        q_permute(P, /*gather=*/false);
        reflect(P, kNegColumn, false);
        reflect(P, kNegColumn, true);
        return;
    }
  }

  void catanzaro() {
    const CatIdx<U> P(pl.c2r);
    const bool r2c = pl.variant == 1;
    if (!r2c) {
      if (pl.c2r.c > 1) col_step(P, kPreRotate);
      row_shuffle(P, true);
      col_step(P, kColShuffle);
    } else {
      col_step(P, kInvColShuffle);
      row_shuffle(P, false);
      if (pl.c2r.c > 1) col_step(P, kPostRotate);
    }
  }

  void run() {
    switch (pl.algo) {
      case plan::Algo::Square: return square();
      case plan::Algo::C2R:
      case plan::Algo::R2C:
      case plan::Algo::Skinny: return catanzaro();
      default: TORCH_CHECK(false, "transpose_: the GPU engine has no kernel for plan ", plan::algo_name(pl.algo));
    }
  }
};

template <typename T>
void run_plan(const plan::Plan& pl, const plan::DeviceCaps& caps, void* data, uint8_t* scratch,
              cudaStream_t stream) {
  const int64_t m = pl.c2r.m, n = pl.c2r.n;
  const int64_t rows = pl.problem.rows, cols = pl.problem.cols;
  // 32-bit indices inside a matrix when every intermediate (at most m*n + m + n) fits.
  const bool small = std::max(m * n + m + n, rows * cols + rows + cols) < (int64_t{1} << 31);
  if (small) {
    Engine<T, uint32_t>{pl, caps, static_cast<T*>(data), scratch, stream, pl.problem.batch}.run();
  } else {
    Engine<T, uint64_t>{pl, caps, static_cast<T*>(data), scratch, stream, pl.problem.batch}.run();
  }
}

void transpose_data_cuda(at::Tensor& self, c10::string_view algorithm) {
  const char* op = "transpose_";
  check_transposable(self, op, /*check_aliases=*/false);
  const c10::cuda::CUDAGuard guard(self.device());
  const plan::Problem problem = transpose_problem(self);
  const plan::Plan pl = plan_or_throw(problem, self.device(), parse_algorithm(std::string(algorithm), op), op);
  if (pl.algo == plan::Algo::Noop) {
    record_workspace(0);
    return;
  }
  const plan::DeviceCaps caps = device_caps(self.device());
  at::Tensor scratch;
  uint8_t* scratch_ptr = nullptr;
  if (pl.scratch_bytes > 0) {
    scratch = allocate_workspace(pl.scratch_bytes, self.device(), op);
    scratch_ptr = scratch.data_ptr<uint8_t>();
  } else {
    record_workspace(0);
  }
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  void* data = self.data_ptr();
  switch (problem.esize) {
    case 1: return run_plan<ElemOf<1>::type>(pl, caps, data, scratch_ptr, stream);
    case 2: return run_plan<ElemOf<2>::type>(pl, caps, data, scratch_ptr, stream);
    case 4: return run_plan<ElemOf<4>::type>(pl, caps, data, scratch_ptr, stream);
    case 8: return run_plan<ElemOf<8>::type>(pl, caps, data, scratch_ptr, stream);
    case 16: return run_plan<ElemOf<16>::type>(pl, caps, data, scratch_ptr, stream);
    default: TORCH_CHECK(false, op, ": unsupported element size ", problem.esize);
  }
}

}  // namespace

TORCH_LIBRARY_IMPL(inplace, CUDA, m) { m.impl("_transpose_data_", &transpose_data_cuda); }

}  // namespace torch_inplace
