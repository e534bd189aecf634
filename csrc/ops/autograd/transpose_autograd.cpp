// Autograd for the data-only op _transpose_data_ (and through it transpose_, aos_to_soa_, soa_to_aos_).
//
// As a function of the flat buffer the op is a permutation P: out.flat = P(in.flat), the shape unchanged. The
// backward applies P^-1 to the incoming gradient: the gradient of in(i, j) sits at out.flat[j*m + i], so
// grad_in = grad_out.reshape(..., n, m).mT (made contiguous). mark_dirty rebases self's history and bumps its
// version counter, as PyTorch's own in-place ops do (and refuses a leaf that requires grad with the usual
// message). The composite ops' as_strided_ carries its own derivative.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "core/checks.h"

namespace torch_inplace {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The backend kernel of _transpose_data_ (below autograd), always with grad mode on: in the Function, whose forward
// runs with it off ("Mutation under grad mode", core/checks.h), and where nothing is recorded under the caller's
// no_grad too. Functionalization keeps a mutation of a graph input made with grad mode off inside the graph, as a
// copy_ into the input, which the input's old shape cannot take (the op also changes its metadata): compiled
// functions transposing an input under no_grad failed to compile. The call is below autograd, so nothing is recorded
// either way.
void transpose_data_below_autograd(at::Tensor& self, c10::string_view algorithm) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::_transpose_data_", "")
                       .typed<void(at::Tensor&, c10::string_view)>();
  const at::AutoGradMode grad_mode_on(true);
  at::AutoDispatchBelowADInplaceOrView guard;
  op.call(self, algorithm);
}

class TransposeData : public torch::autograd::Function<TransposeData> {
 public:
  static at::Tensor forward(AutogradContext* ctx, at::Tensor self, const std::string& algorithm) {
    transpose_data_below_autograd(self, algorithm);
    ctx->mark_dirty({self});
    return self;
  }

  static variable_list backward(AutogradContext* /*ctx*/, variable_list grads) {
    const at::Tensor& g = grads[0];
    if (!g.defined()) return {at::Tensor(), at::Tensor()};
    std::vector<int64_t> swapped(g.sizes().begin(), g.sizes().end());
    std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
    return {g.reshape(swapped).mT().contiguous(), at::Tensor()};
  }
};

void transpose_data_autograd(at::Tensor& self, c10::string_view algorithm) {
  check_inplace_autograd(self, "_transpose_data_");  // the public ops ran it first, under their own names
  if (!records_autograd(self)) {  // nothing to differentiate: no node, just the version bump
    transpose_data_below_autograd(self, algorithm);
    torch::autograd::impl::bump_version(self);
    return;
  }
  TransposeData::apply(self, std::string(algorithm));
}

}  // namespace

TORCH_LIBRARY_IMPL(inplace, Autograd, m) { m.impl("_transpose_data_", &transpose_data_autograd); }

}  // namespace torch_inplace
