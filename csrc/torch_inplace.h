// torch_inplace: public C++ API (LibTorch users); it includes ATen and c10 headers only. The tensor ops (transpose_,
// aos_to_soa_, soa_to_aos_ and the LU / inverse functions) call through the PyTorch dispatcher, so the CPU, CUDA/HIP,
// autograd and tracing implementations registered by the library all apply. empty_transposable, plan_transpose, the
// workspace functions and built_with_gpu call the implementation directly, not through the dispatcher.
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

// TORCH_INPLACE_API marks what libtorch_inplace exports: the functions declared below. The library is built with
// hidden visibility, so nothing else of it (planner, kernel launchers, helpers) is visible to its users; its ops
// register with the dispatcher from static initialisers, which needs no exported symbol. The library's build defines
// TORCH_INPLACE_BUILD_LIBRARY (dllexport on Windows; users get dllimport). The structs and WorkspaceLimitGuard below
// are header-only (no out-of-line members, no virtual functions) and need no mark.
#if defined(_WIN32)
#if defined(TORCH_INPLACE_BUILD_LIBRARY)
#define TORCH_INPLACE_API __declspec(dllexport)
#else
#define TORCH_INPLACE_API __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define TORCH_INPLACE_API __attribute__((visibility("default")))
#else
#define TORCH_INPLACE_API
#endif

namespace torch_inplace {

// Physically transposes the last two dims of a contiguous (..., m, n) tensor in its own storage: afterwards it
// is a contiguous (..., n, m) tensor (same data_ptr) with element (..., i, j) at (..., j, i). `algorithm`
// forces a planner choice ("auto", "square", "c2r", "r2c", "skinny", ...).
TORCH_INPLACE_API at::Tensor& transpose_(at::Tensor& self, c10::string_view algorithm = "auto");
// (..., N, F) array of structures -> (..., F, N) structure of arrays, in place.
TORCH_INPLACE_API at::Tensor& aos_to_soa_(at::Tensor& self);
// (..., F, N) structure of arrays -> (..., N, F) array of structures, in place.
TORCH_INPLACE_API at::Tensor& soa_to_aos_(at::Tensor& self);
// A tensor whose storage carries the slack the GPU planner may use for padded transposes. `size` needs at least 2 dims
// (..., m, n). `options`: dtype, device and requires_grad are honoured; a layout other than strided, pinned memory or
// a memory format other than contiguous is refused (c10::Error naming empty_transposable, as a shorter `size` is).
TORCH_INPLACE_API at::Tensor empty_transposable(c10::IntArrayRef size, at::TensorOptions options = {});

// The planner's choice for transposing a contiguous (..., m, n) tensor of `dtype` on `device` in place under the
// current workspace limit (Python's torch_inplace.plan): the algorithm's name (as `algorithm` takes it), the scratch
// bytes it takes and why. `algorithm` forces one; c10::Error if it cannot apply, or if no algorithm fits the limit.
struct TransposePlan {
  std::string algorithm;
  int64_t scratch_bytes = 0;
  std::string explanation;
};
TORCH_INPLACE_API TransposePlan plan_transpose(c10::IntArrayRef shape, at::ScalarType dtype = at::kFloat,
                                               c10::Device device = c10::Device(c10::kCPU),
                                               c10::string_view algorithm = "auto");

// Scratch memory. The transposition ops take their scratch from PyTorch's allocator (the caching allocator on GPUs);
// the planner only picks algorithms whose scratch fits the workspace limit, and an op for which none fits raises
// before it writes anything. -1: no limit (the default). The LU / inverse ops plan no scratch: the copies they make
// of inputs their kernels cannot take as they are (strided views for the in-place ops, conj / neg views, misaligned
// complex data) are the size of the input, neither limited nor counted in workspace_stats().
//   workspace_limit():         the limit of the calling thread's calls: its latest WorkspaceLimitGuard still alive,
//                              else the process-wide one.
//   set_workspace_limit(b):    the process-wide limit (every thread without a guard); b >= 0, or -1; c10::Error
//                              below -1.
TORCH_INPLACE_API int64_t workspace_limit();
TORCH_INPLACE_API void set_workspace_limit(int64_t bytes);

namespace detail {
// Opens a scope of the calling thread (c10::Error below -1) and returns its id; closing it (on the same thread)
// removes it, in any order, and returns false where no open scope of this thread has that id.
TORCH_INPLACE_API int64_t enter_workspace_limit_scope(int64_t bytes);
TORCH_INPLACE_API bool exit_workspace_limit_scope(int64_t scope) noexcept;
// The same in two steps, for callers that must know the id before the scope opens (Python's context manager, which
// closes the scope in a `finally` however an asynchronous exception interrupts its entry): a fresh id of the calling
// thread, then the scope opened under it (c10::Error below -1, or for an id this thread did not hand out).
TORCH_INPLACE_API int64_t new_workspace_limit_scope_id() noexcept;
TORCH_INPLACE_API void enter_workspace_limit_scope_as(int64_t bytes, int64_t scope);
}  // namespace detail

// Sets the calling thread's workspace limit for its scope, over the process-wide one (Python's
// `with torch_inplace.workspace_limit(bytes):`); the thread's latest guard still alive applies. Other threads do
// not see it. A guard must end on the thread that made it.
class WorkspaceLimitGuard {
 public:
  explicit WorkspaceLimitGuard(int64_t bytes) : scope_(detail::enter_workspace_limit_scope(bytes)) {}
  ~WorkspaceLimitGuard() { detail::exit_workspace_limit_scope(scope_); }
  WorkspaceLimitGuard(const WorkspaceLimitGuard&) = delete;
  WorkspaceLimitGuard& operator=(const WorkspaceLimitGuard&) = delete;

 private:
  int64_t scope_;
};

// Scratch bytes the ops took since the last reset_workspace_stats().
struct WorkspaceStats {
  int64_t last_bytes = 0;    // scratch of the most recent op call
  int64_t peak_bytes = 0;    // largest scratch of one call since the last reset
  int64_t total_bytes = 0;   // sum over calls since the last reset
  int64_t calls = 0;         // op calls that took scratch (or were planned with none) since the last reset
};
TORCH_INPLACE_API WorkspaceStats workspace_stats();
TORCH_INPLACE_API void reset_workspace_stats();

// Whether this build of the library carries GPU (CUDA or HIP) kernels.
TORCH_INPLACE_API bool built_with_gpu();

// Small batched LU and inverse (n <= 32 in registers, 32 < n <= 64 in shared memory on the GPU; larger n through
// torch.linalg), as torch.linalg's but for what follows. Only square (..., n, n) float32, float64, complex64 or
// complex128 input, any batch dims (c10::Error otherwise). The in-place ones take any strides but overlapping ones
// (an expanded tensor): in place where A is contiguous (inverse_: or A.mT() is), otherwise through a contiguous copy
// written back. Pivots are int32 and 1-based, as LAPACK's getrf. A singular matrix raises only where check_errors
// is true (raising needs a host synchronization); elsewhere its result just comes out, and the _ex variants report
// it in `info` (> 0).
//   lu_factor(A)                       -> (LU, pivots); no error for a singular A (torch.linalg.lu_factor raises).
//   lu_factor_ex(A, check_errors)      -> (LU, pivots, info); info > 0: U(info, info) (1-based) is U's first zero
//                                         diagonal entry.
//   lu_factor_(A)                      overwrites A with its LU factors and returns the pivots.
//   batched_inverse(A)                 -> the inverse: inf / nan entries for a singular A, no error
//                                         (torch.linalg.inv raises).
//   batched_inverse_ex(A, check_errors) -> (inverse, info); info > 0 for a singular matrix.
//   inverse_(A)                        overwrites A with its inverse (inf / nan for a singular A, no error), returns A.
TORCH_INPLACE_API std::tuple<at::Tensor, at::Tensor> lu_factor(const at::Tensor& A);
TORCH_INPLACE_API std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_factor_ex(const at::Tensor& A,
                                                                 bool check_errors = false);
TORCH_INPLACE_API at::Tensor lu_factor_(at::Tensor& A);
TORCH_INPLACE_API at::Tensor batched_inverse(const at::Tensor& A);
TORCH_INPLACE_API std::tuple<at::Tensor, at::Tensor> batched_inverse_ex(const at::Tensor& A, bool check_errors = false);
TORCH_INPLACE_API at::Tensor& inverse_(at::Tensor& A);

}  // namespace torch_inplace
