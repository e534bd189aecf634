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

// One boxed kernel for the three ops: each writes its first argument, and their other arguments and returns pass
// through unchanged.
void bump_after_inplace(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  const at::Tensor self = (*stack)[stack->size() - op.schema().arguments().size()].toTensor();
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.redispatchBoxed(ks & c10::after_ADInplaceOrView_keyset, stack);
  }
  torch::autograd::impl::bump_version(self);
}

}  // namespace

TORCH_LIBRARY_IMPL(inplace, ADInplaceOrView, m) {
  for (const char* name : {"_transpose_data_", "_inverse_data_", "lu_factor_"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&bump_after_inplace>());
  }
}

}  // namespace torch_inplace
