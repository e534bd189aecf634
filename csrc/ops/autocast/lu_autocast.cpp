// Autocast kernels of the out-of-place LU / inverse ops (batched_inverse, batched_inverse_ex, lu_factor,
// lu_factor_ex): inside torch.autocast, a float16 / bfloat16 matrix is factored or inverted in float32 and the
// results stay float32. This is the float32 policy torch's CPU autocast applies to torch.linalg.inv; a training loop
// under mixed precision hands these ops the half-precision outputs of its matmuls, which the kernels do not take.
//
// float32, float64 and complex inputs, and tensors on another device than the autocast context's, go through
// unchanged (at::autocast::cached_cast casts only eligible floating tensors, never float64). The cast is an ordinary
// differentiable op, so the gradient reaches a half-precision input in its own dtype. The in-place ops (inverse_,
// lu_factor_, the transpositions) have no kernel here: they cannot change their argument's dtype, and refuse one the
// kernels do not take as they do outside autocast.
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include "torch_inplace.h"

namespace torch_inplace {
namespace {

// The kernel of `op` (a public function of torch_inplace.h, which calls through the dispatcher) for autocast on
// `device`: A cast to float32 where that autocast would cast it, the other arguments as they are, and the autocast key
// excluded so that the call goes on to the autograd and backend kernels.
template <c10::DeviceType device, auto op, typename... Args>
auto in_float32(const at::Tensor& A, Args... args) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(at::autocast::get_autocast_dispatch_key_from_device_type(device));
  return op(at::autocast::cached_cast(at::kFloat, A, device), args...);
}

// lu_factor has its own kernel because its composite checks the dtype (naming lu_factor) before lu_factor_ex.
template <c10::DeviceType device>
void register_float32_kernels(torch::Library& m) {
  m.impl("batched_inverse", &in_float32<device, &batched_inverse>);
  m.impl("batched_inverse_ex", &in_float32<device, &batched_inverse_ex, bool>);
  m.impl("lu_factor", &in_float32<device, &lu_factor>);
  m.impl("lu_factor_ex", &in_float32<device, &lu_factor_ex, bool>);
}

}  // namespace

TORCH_LIBRARY_IMPL(inplace, AutocastCPU, m) { register_float32_kernels<c10::DeviceType::CPU>(m); }

// AutocastCUDA also serves ROCm builds, whose tensors are "cuda" tensors.
TORCH_LIBRARY_IMPL(inplace, AutocastCUDA, m) { register_float32_kernels<c10::DeviceType::CUDA>(m); }

}  // namespace torch_inplace
