// Interface between the ATen side of the GPU engine (transpose_cuda.cpp) and its launcher
// (transpose_kernel.cu): plain structs only, so the two translation units share no library types.
#pragma once

#include <cstdint>

#include "plan/transpose_plan.h"

#if defined(__HIPCC__) || defined(USE_ROCM)
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif

namespace torch_inplace {
namespace gpu {

struct LaunchPlan {
  int algo = 0;                   // plan::Algo
  bool r2c = false;               // Catanzaro direction
  int64_t batch = 1, rows = 0, cols = 0, esize = 4;
  c2r::Params c2r;
  int64_t tile_m = 0, tile_n = 0;  // tiled sequences 3.1 / 3.2: rows = (rows / tile_m) * tile_m, cols likewise
  plan::Plan::GpuSteps steps;
};

// Runs the plan on `stream`; `scratch` holds the plan's scratch_bytes. Returns the first CUDA error.
cudaError_t launch_transpose(const LaunchPlan& lp, const plan::DeviceCaps& caps, void* data, uint8_t* scratch,
                             cudaStream_t stream);

// Reads the device's properties into caps.
cudaError_t query_caps(int device, plan::DeviceCaps* caps);

// The warp (wavefront) width the kernels and launchers are compiled for (kernels::kWarpSize: 32 on CUDA, 64 on HIP).
int kernel_warp_size();

}  // namespace gpu
}  // namespace torch_inplace
