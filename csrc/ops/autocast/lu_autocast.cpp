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

#include <tuple>

#include "torch_inplace.h"

namespace torch_inplace {
namespace {

// Runs `fn` on A cast to float32 where autocast for `device` would cast it, with that autocast key excluded so the
// call below goes on to the autograd and backend kernels.
template <c10::DeviceType device, typename Fn>
auto in_float32(const at::Tensor& A, Fn&& fn) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(at::autocast::get_autocast_dispatch_key_from_device_type(device));
  return fn(at::autocast::cached_cast(at::kFloat, A, device));
}

template <c10::DeviceType device>
at::Tensor batched_inverse_autocast(const at::Tensor& A) {
  return in_float32<device>(A, [](const at::Tensor& a) { return batched_inverse(a); });
}

template <c10::DeviceType device>
std::tuple<at::Tensor, at::Tensor> batched_inverse_ex_autocast(const at::Tensor& A, bool check_errors) {
  return in_float32<device>(A, [&](const at::Tensor& a) { return batched_inverse_ex(a, check_errors); });
}

// lu_factor has its own kernel here because its composite checks the dtype (naming lu_factor) before lu_factor_ex.
template <c10::DeviceType device>
std::tuple<at::Tensor, at::Tensor> lu_factor_autocast(const at::Tensor& A) {
  return in_float32<device>(A, [](const at::Tensor& a) { return lu_factor(a); });
}

template <c10::DeviceType device>
std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_factor_ex_autocast(const at::Tensor& A, bool check_errors) {
  return in_float32<device>(A, [&](const at::Tensor& a) { return lu_factor_ex(a, check_errors); });
}

}  // namespace

TORCH_LIBRARY_IMPL(inplace, AutocastCPU, m) {
  m.impl("batched_inverse", &batched_inverse_autocast<c10::DeviceType::CPU>);
  m.impl("batched_inverse_ex", &batched_inverse_ex_autocast<c10::DeviceType::CPU>);
  m.impl("lu_factor", &lu_factor_autocast<c10::DeviceType::CPU>);
  m.impl("lu_factor_ex", &lu_factor_ex_autocast<c10::DeviceType::CPU>);
}

// AutocastCUDA also serves ROCm builds, whose tensors are "cuda" tensors.
TORCH_LIBRARY_IMPL(inplace, AutocastCUDA, m) {
  m.impl("batched_inverse", &batched_inverse_autocast<c10::DeviceType::CUDA>);
  m.impl("batched_inverse_ex", &batched_inverse_ex_autocast<c10::DeviceType::CUDA>);
  m.impl("lu_factor", &lu_factor_autocast<c10::DeviceType::CUDA>);
  m.impl("lu_factor_ex", &lu_factor_ex_autocast<c10::DeviceType::CUDA>);
}

}  // namespace torch_inplace
