// The codes for "rows per lane" of the GPU LU / inverse kernels besides 1 to 4 (lu_tuning.h's tables, the tuning
// overrides of lu_common.h, the launchers of cuda/lu_launch.cuh). No ATen here: the launchers' translation units
// include this header.
#pragma once

namespace torch_inplace {
namespace lu {

constexpr int kSplitRows = -2;  // rows split into two column parts (split_inverse_kernel; lu_launch.cuh)
constexpr int kLaneRows = -3;   // a lane per matrix: every row in one lane (real types, n <= 8; lu_launch.cuh)
// The float64 inverse on the fp64 tensor cores (dmma_inverse.cuh; 9 <= n <= 32, CUDA, compute capability 8.0 and up)
constexpr int kTensorCoreRows = -4;
constexpr int kMediumRows = -5; // the shared-memory kernels (medium_lu.cuh; what runs at 32 < n <= 64) at n <= 32

}  // namespace lu
}  // namespace torch_inplace
