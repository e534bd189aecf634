// ATen side of the GPU engine of _transpose_data_: validation, planning, scratch from the caching allocator,
// the capabilities provider for the planner, and the CUDA dispatch registration. The kernels run through
// transpose_kernel.cu (see transpose_launch.h for why the launcher is a separate, ATen-free translation unit).
// Compiled in GPU builds only (setup.py defines TORCH_INPLACE_WITH_CUDA there).
#ifdef TORCH_INPLACE_WITH_CUDA

#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <mutex>
#include <vector>

#include "core/checks.h"
#include "core/workspace.h"
#include "ops/cuda/transpose_launch.h"

namespace torch_inplace {
namespace {

// Device capabilities, read once per device.
plan::DeviceCaps gpu_caps(int device, const char* op) {
  static std::mutex mu;
  static std::vector<plan::DeviceCaps> cache;
  static std::vector<char> have;
  if (device < 0) device = c10::cuda::current_device();
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<int>(cache.size()) <= device) {
    cache.resize(device + 1);
    have.resize(device + 1, 0);
  }
  if (!have[device]) {
    C10_CUDA_CHECK(gpu::query_caps(device, &cache[device]));
    // The launchers size blocks with the compile-time warp width (kernels/common.cuh): a device with another one is
    // refused (a ROCm build runs on the 64-wide wavefronts of gfx9 GPUs only), not given wrong results.
    TORCH_CHECK(cache[device].warp_size == gpu::kernel_warp_size(), op, ": expected a GPU with ",
                gpu::kernel_warp_size(), "-lane warps (wavefronts), which this build's kernels are compiled for, got "
                "device ", device, " with ", cache[device].warp_size, "-lane ones");
    have[device] = 1;
  }
  return cache[device];
}

const bool g_caps_registered = register_gpu_caps_provider(&gpu_caps);

void transpose_data_cuda(at::Tensor& self, c10::string_view algorithm) {
  const char* op = "transpose_";
  check_transposable(self, op, CheckLevel::kMemory);
  // The kernels move whole elements (up to 16 bytes at once), which the GPU faults on at a misaligned address (an
  // error that ends the CUDA context). PyTorch's allocations are aligned; memory from DLPack can start anywhere.
  const int64_t misalignment = element_misalignment(self);
  TORCH_CHECK(misalignment == 0, op, ": expected data aligned to its ", self.element_size(),
              "-byte elements, got an address ", misalignment, " bytes past such a boundary (memory from another "
              "library at an offset?); copy it into a tensor PyTorch allocated first");
  const c10::cuda::CUDAGuard guard(self.device());
  const plan::Problem problem = transpose_problem(self);
  const std::shared_ptr<const plan::Plan> cached =
      plan_cached(problem, self.device(), parse_algorithm(std::string(algorithm), op), op);
  const plan::Plan& pl = *cached;
  if (pl.algo == plan::Algo::Noop) {
    record_workspace(0);
    return;
  }
  const plan::DeviceCaps caps = device_caps(self.device(), op);
  const at::Tensor scratch = allocate_workspace(pl.scratch_bytes, pl.workspace_limit, self.device(), op);
  uint8_t* scratch_ptr = workspace_ptr(scratch);
  gpu::LaunchPlan lp;
  lp.algo = static_cast<int>(pl.algo);
  lp.r2c = pl.variant == 1;
  lp.batch = problem.batch;
  lp.rows = problem.rows;
  lp.cols = problem.cols;
  lp.esize = problem.esize;
  lp.c2r = pl.c2r;
  lp.tile_m = pl.tile_m;
  lp.tile_n = pl.tile_n;
  lp.steps = pl.gpu;
  const cudaError_t err =
      gpu::launch_transpose(lp, caps, self.data_ptr(), scratch_ptr, at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err != cudaErrorNotSupported, op, ": the GPU engine has no kernel for plan '",
              plan::algo_name(pl.algo), "'");
  C10_CUDA_CHECK(err);
}

}  // namespace

TORCH_LIBRARY_IMPL(inplace, CUDA, m) { m.impl("_transpose_data_", &transpose_data_cuda); }

}  // namespace torch_inplace

#endif  // TORCH_INPLACE_WITH_CUDA
