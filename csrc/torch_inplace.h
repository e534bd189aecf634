// torch_inplace: public C++ API (LibTorch users). Every function calls through the PyTorch dispatcher, so the
// CPU, CUDA/HIP, autograd and tracing implementations registered by the library all apply.
#pragma once

// The library's version: CMakeLists.txt takes project(VERSION) from these lines, and tests/test_version.py checks
// that setup.py and torch_inplace.__version__ say the same.
#define TORCH_INPLACE_VERSION_MAJOR 0
#define TORCH_INPLACE_VERSION_MINOR 1
#define TORCH_INPLACE_VERSION_PATCH 0
#define TORCH_INPLACE_VERSION "0.1.0"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <c10/util/string_view.h>

#include <cstdint>
#include <string>
#include <tuple>

namespace torch_inplace {

// Physically transposes the last two dims of a contiguous (..., m, n) tensor in its own storage: afterwards it
// is a contiguous (..., n, m) tensor (same data_ptr) with element (..., i, j) at (..., j, i). `algorithm`
// forces a planner choice ("auto", "square", "c2r", "r2c", "skinny", ...).
at::Tensor& transpose_(at::Tensor& self, c10::string_view algorithm = "auto");
// (..., N, F) array of structures -> (..., F, N) structure of arrays, in place.
at::Tensor& aos_to_soa_(at::Tensor& self);
// (..., F, N) structure of arrays -> (..., N, F) array of structures, in place.
at::Tensor& soa_to_aos_(at::Tensor& self);
// A tensor whose storage carries the slack the GPU planner may use for padded transposes. `options`: dtype, device and
// requires_grad are honoured; a layout other than strided, pinned memory or a memory format other than contiguous is
// refused (c10::Error naming empty_transposable).
at::Tensor empty_transposable(c10::IntArrayRef size, at::TensorOptions options = {});

// The planner's choice for transposing a contiguous (..., m, n) tensor of `dtype` on `device` in place under the
// current workspace limit (Python's torch_inplace.plan): the algorithm's name (as `algorithm` takes it), the scratch
// bytes it takes and why. `algorithm` forces one; c10::Error if it cannot apply, or if no algorithm fits the limit.
struct TransposePlan {
  std::string algorithm;
  int64_t scratch_bytes = 0;
  std::string explanation;
};
TransposePlan plan_transpose(c10::IntArrayRef shape, at::ScalarType dtype = at::kFloat,
                             c10::Device device = c10::Device(c10::kCPU), c10::string_view algorithm = "auto");

// Scratch memory. Every op takes its scratch from PyTorch's allocator (the caching allocator on GPUs); the planner
// only picks algorithms whose scratch fits the workspace limit, and an op for which none fits raises before it
// writes anything. -1: no limit (the default).
//   workspace_limit():         the limit of the calling thread's calls: its innermost WorkspaceLimitGuard's, else
//                              the process-wide one.
//   set_workspace_limit(b):    the process-wide limit (every thread without a guard); b >= 0, or -1; c10::Error
//                              below -1.
int64_t workspace_limit();
void set_workspace_limit(int64_t bytes);

namespace detail {
int64_t enter_workspace_limit_scope(int64_t bytes);  // c10::Error below -1; returns the scope it replaces
void exit_workspace_limit_scope(int64_t previous);
}  // namespace detail

// Sets the calling thread's workspace limit for its scope, over the process-wide one, and restores the thread's
// previous limit on exit (Python's `with torch_inplace.workspace_limit(bytes):`). Other threads do not see it.
// Guards on one thread must end in the reverse order of their construction, as scopes do.
class WorkspaceLimitGuard {
 public:
  explicit WorkspaceLimitGuard(int64_t bytes) : previous_(detail::enter_workspace_limit_scope(bytes)) {}
  ~WorkspaceLimitGuard() { detail::exit_workspace_limit_scope(previous_); }
  WorkspaceLimitGuard(const WorkspaceLimitGuard&) = delete;
  WorkspaceLimitGuard& operator=(const WorkspaceLimitGuard&) = delete;

 private:
  int64_t previous_;
};

// Scratch bytes the ops took since the last reset_workspace_stats().
struct WorkspaceStats {
  int64_t last_bytes = 0;    // scratch of the most recent op call
  int64_t peak_bytes = 0;    // largest scratch of one call since the last reset
  int64_t total_bytes = 0;   // sum over calls since the last reset
  int64_t calls = 0;         // op calls that took scratch (or were planned with none) since the last reset
};
WorkspaceStats workspace_stats();
void reset_workspace_stats();

// Whether this build of the library carries GPU (CUDA or HIP) kernels.
bool built_with_gpu();

// Small batched LU and inverse (n <= 32 in registers, 32 < n <= 64 in shared memory on the GPU; larger n through
// torch.linalg), torch.linalg semantics.
std::tuple<at::Tensor, at::Tensor> lu_factor(const at::Tensor& A);
std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_factor_ex(const at::Tensor& A, bool check_errors = false);
at::Tensor lu_factor_(at::Tensor& A);
at::Tensor batched_inverse(const at::Tensor& A);
std::tuple<at::Tensor, at::Tensor> batched_inverse_ex(const at::Tensor& A, bool check_errors = false);
at::Tensor& inverse_(at::Tensor& A);

}  // namespace torch_inplace
