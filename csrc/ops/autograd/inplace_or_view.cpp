// ADInplaceOrView kernels of the ops that write their argument in place (_transpose_data_, and through it
// transpose_ / aos_to_soa_ / soa_to_aos_; _inverse_data_, and through it inverse_; lu_factor_): the version
// counter bump of PyTorch's own in-place ops where the Autograd kernels do not run.
//
// The Autograd kernels bump the version themselves (mark_dirty, or bump_version where nothing is recorded) and call
// below ADInplaceOrView, so these kernels do not run under them. They run where autograd is excluded but the tensor
// still carries the key: a normal tensor updated inside torch.inference_mode(). Without the bump, a tensor saved
// for backward before the call and overwritten inside inference mode would give a wrong gradient instead of
// autograd's "modified by an inplace operation" error (as y.mul_(2) in the same place gives).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

namespace torch_inplace {
namespace {

void transpose_data_inplace_or_view(c10::DispatchKeySet ks, at::Tensor& self, c10::string_view algorithm) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::_transpose_data_", "")
                       .typed<void(at::Tensor&, c10::string_view)>();
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.redispatch(ks & c10::after_ADInplaceOrView_keyset, self, algorithm);
  }
  torch::autograd::impl::bump_version(self);
}

void inverse_data_inplace_or_view(c10::DispatchKeySet ks, at::Tensor& A) {
  static auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("inplace::_inverse_data_", "").typed<void(at::Tensor&)>();
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.redispatch(ks & c10::after_ADInplaceOrView_keyset, A);
  }
  torch::autograd::impl::bump_version(A);
}

at::Tensor lu_factor__inplace_or_view(c10::DispatchKeySet ks, at::Tensor& A) {
  static auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("inplace::lu_factor_", "").typed<at::Tensor(at::Tensor&)>();
  at::Tensor pivots;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    pivots = op.redispatch(ks & c10::after_ADInplaceOrView_keyset, A);
  }
  torch::autograd::impl::bump_version(A);
  return pivots;
}

}  // namespace

TORCH_LIBRARY_IMPL(inplace, ADInplaceOrView, m) {
  m.impl("_transpose_data_", &transpose_data_inplace_or_view);
  m.impl("_inverse_data_", &inverse_data_inplace_or_view);
  m.impl("lu_factor_", &lu_factor__inplace_or_view);
}

}  // namespace torch_inplace
