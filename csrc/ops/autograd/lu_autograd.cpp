// Autograd of the LU / inverse ops as torch::autograd::Function (C++), registered for the Autograd key so
// TorchScript and LibTorch callers differentiate them too. Backward formulas use differentiable ATen ops, so
// double backward (gradgradcheck) works.
//   inverse:   grad_A = -X^H G X^H
//   lu_factor: torch.linalg.lu_factor's backward (FunctionsManual.cpp linalg_lu_backward, square case):
//              grad_A = P L^-H (tril(L^H G, -1) + triu(G U^H)) U^-H
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "core/checks.h"
#include "ops/lu_common.h"

namespace torch_inplace {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Double backward needs a differentiable graph: the matmul form then; otherwise the fused op
// (inplace::_inverse_backward: one pass over X and G on GPUs).
at::Tensor inverse_backward(const at::Tensor& X, const at::Tensor& G) {
  if (at::GradMode::is_enabled() && (X.requires_grad() || G.requires_grad())) {
    const at::Tensor Xh = X.mH();
    return -at::matmul(Xh, at::matmul(G, Xh));
  }
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::_inverse_backward", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op.call(X, G);
}

at::Tensor lu_backward(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& G) {
  auto [P, L, U] = at::lu_unpack(LU, pivots);
  at::Tensor gA = at::matmul(L.mH(), G).tril(-1) + at::matmul(G, U.mH()).triu();
  gA = at::linalg_solve_triangular(U.mH(), gA, /*upper=*/false, /*left=*/false);
  gA = at::linalg_solve_triangular(L.mH(), gA, /*upper=*/true, /*left=*/true, /*unitriangular=*/true);
  return at::matmul(P, gA);
}

// The backend kernels (below autograd), for the Functions and for calls that record no gradient.
std::tuple<at::Tensor, at::Tensor> inverse_ex_below(const at::Tensor& A, bool check_errors) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::batched_inverse_ex", "")
                       .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, bool)>();
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.call(A, check_errors);
}

at::Tensor inverse_below(const at::Tensor& A) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::batched_inverse", "")
                       .typed<at::Tensor(const at::Tensor&)>();
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.call(A);
}

void inverse_data_below(at::Tensor& A) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::_inverse_data_", "")
                       .typed<void(at::Tensor&)>();
  at::AutoDispatchBelowADInplaceOrView guard;
  op.call(A);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_factor_ex_below(const at::Tensor& A, bool check_errors) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::lu_factor_ex", "")
                       .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(const at::Tensor&, bool)>();
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.call(A, check_errors);
}

at::Tensor lu_factor__below(at::Tensor& A) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::lu_factor_", "")
                       .typed<at::Tensor(at::Tensor&)>();
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.call(A);
}

// The values a Function saved, unpacked (which checks they were not modified since). PyTorch saves them after the
// forward ran and the outputs' history was set, so a saved_tensors_hooks pack hook that raised there leaves a node
// with nothing saved (for the in-place ops, on a tensor already written and given that node): its backward raises,
// as PyTorch's own in-place ops' do then, instead of reading past an empty list.
variable_list saved_values(AutogradContext* ctx, size_t count, const char* op) {
  variable_list saved = ctx->get_saved_variables();
  TORCH_CHECK(saved.size() == count, op, ": expected the ", count, " tensor(s) saved for backward, got ", saved.size(),
              " (did a saved_tensors_hooks pack hook raise in the forward?); the gradient cannot be computed");
  return saved;
}

// The inverse Functions' backward: grad_A from the X they saved (none where X's gradient is undefined).
at::Tensor saved_inverse_grad(AutogradContext* ctx, const at::Tensor& G, const char* op) {
  const at::Tensor X = saved_values(ctx, 1, op)[0];  // unpacked first: checks X was not modified since
  if (!G.defined()) return at::Tensor();
  return inverse_backward(X, G);
}

class BatchedInverseEx : public torch::autograd::Function<BatchedInverseEx> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& A, bool check_errors) {
    auto [X, info] = inverse_ex_below(A, check_errors);
    ctx->save_for_backward({X});
    ctx->mark_non_differentiable({info});
    return {X, info};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {saved_inverse_grad(ctx, grads[0], "batched_inverse_ex"), at::Tensor()};
  }
};

class BatchedInverse : public torch::autograd::Function<BatchedInverse> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& A) {
    at::Tensor X = inverse_below(A);
    ctx->save_for_backward({X});
    return {X};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {saved_inverse_grad(ctx, grads[0], "batched_inverse")};
  }
};

class InverseInplace : public torch::autograd::Function<InverseInplace> {
 public:
  static variable_list forward(AutogradContext* ctx, at::Tensor A) {
    {
      const at::AutoGradMode callers_grad_mode(true);  // "Mutation under grad mode", core/checks.h
      inverse_data_below(A);
    }
    ctx->mark_dirty({A});
    ctx->save_for_backward({A});
    return {A};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {saved_inverse_grad(ctx, grads[0], "inverse_")};
  }
};

class LuFactorEx : public torch::autograd::Function<LuFactorEx> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& A, bool check_errors) {
    auto [LU, pivots, info] = lu_factor_ex_below(A, check_errors);
    ctx->save_for_backward({LU, pivots});
    ctx->mark_non_differentiable({pivots, info});
    return {LU, pivots, info};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = saved_values(ctx, 2, "lu_factor_ex");
    if (!grads[0].defined()) return {at::Tensor(), at::Tensor()};
    return {lu_backward(saved[0], saved[1], grads[0]), at::Tensor()};
  }
};

// Returns A alone: a Function that modifies a view in place may return nothing else (autograd would raise only after
// the kernel ran, e.g. for A = B[0] or a conjugate view of B that requires grad). The pivots, not differentiable,
// come back through `pivots_out`.
class LuFactorInplace : public torch::autograd::Function<LuFactorInplace> {
 public:
  static variable_list forward(AutogradContext* ctx, at::Tensor A, at::Tensor* pivots_out) {
    at::Tensor pivots;
    {
      const at::AutoGradMode callers_grad_mode(true);  // "Mutation under grad mode", core/checks.h
      pivots = lu_factor__below(A);
    }
    ctx->mark_dirty({A});
    ctx->save_for_backward({A, pivots});
    *pivots_out = pivots;
    return {A};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = saved_values(ctx, 2, "lu_factor_");
    if (!grads[0].defined()) return {at::Tensor(), at::Tensor()};
    return {lu_backward(saved[0], saved[1], grads[0]), at::Tensor()};
  }
};

// Where a torch::autograd::Function cannot run: under torch.func's grad-type transforms (grad, vjp, jvp, jacrev, ...:
// their tensor wrappers) and with forward-mode AD tangents (torch.autograd.forward_ad). torch.linalg's differentiable
// ops stand in there, with their derivatives of any order in both modes (the same semantics: no raise for singular
// input without check_errors, 1-based int32 pivots, info). torch_inplace's Python functions route such eager calls to
// autograd.Function twins over these kernels instead (torch_inplace/_func.py); this serves the raw ops, TorchScript
// and LibTorch callers, and torch.compile's traces of transformed code.
bool linalg_stands_in(const at::Tensor& A) {
  return A.key_set().has(c10::DispatchKey::FuncTorchGradWrapper) || A._fw_grad(/*level=*/0).defined();
}

// torch.linalg returns LU and the inverse column-major; the ops' results are row-major wherever they come from (their
// Meta kernels say so to torch.compile). contiguous() is differentiable in both modes.
std::tuple<at::Tensor, at::Tensor> linalg_inv_ex_rows(const at::Tensor& A, bool check_errors) {
  auto [X, info] = at::linalg_inv_ex(A, check_errors);
  return {X.contiguous(), info};
}
std::tuple<at::Tensor, at::Tensor, at::Tensor> linalg_lu_factor_ex_rows(const at::Tensor& A, bool check_errors) {
  auto [LU, pivots, info] = at::linalg_lu_factor_ex(A, /*pivot=*/true, check_errors);
  return {LU.contiguous(), pivots, info};
}

// Each wrapper validates first, so a bad input is refused before autograd or a backend sees it. Calls that
// record no gradient (records_autograd) go straight to the backend; in-place ones bump the version counter.
std::tuple<at::Tensor, at::Tensor> batched_inverse_ex_autograd(const at::Tensor& A, bool check_errors) {
  lu::check_input(A, "batched_inverse_ex", /*inplace=*/false);
  if (linalg_stands_in(A)) return linalg_inv_ex_rows(A, check_errors);
  if (!records_autograd(A)) return inverse_ex_below(A, check_errors);
  auto r = BatchedInverseEx::apply(A, check_errors);
  return {r[0], r[1]};
}

at::Tensor batched_inverse_autograd(const at::Tensor& A) {
  lu::check_input(A, "batched_inverse", /*inplace=*/false);
  if (linalg_stands_in(A)) return std::get<0>(linalg_inv_ex_rows(A, /*check_errors=*/false));
  if (!records_autograd(A)) return inverse_below(A);
  return BatchedInverse::apply(A)[0];
}

void inverse_data_autograd(at::Tensor& A) {
  lu::check_input(A, "inverse_", /*inplace=*/true, /*math_bits=*/false);
  check_inplace_autograd(A, "inverse_");
  if (linalg_stands_in(A)) {
    A.copy_(std::get<0>(at::linalg_inv_ex(A)));
    return;
  }
  if (!records_autograd(A)) {
    inverse_data_below(A);
    torch::autograd::impl::bump_version(A);
    return;
  }
  InverseInplace::apply(A);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_factor_ex_autograd(const at::Tensor& A, bool check_errors) {
  lu::check_input(A, "lu_factor_ex", /*inplace=*/false);
  if (linalg_stands_in(A)) return linalg_lu_factor_ex_rows(A, check_errors);
  if (!records_autograd(A)) return lu_factor_ex_below(A, check_errors);
  auto r = LuFactorEx::apply(A, check_errors);
  return {r[0], r[1], r[2]};
}

at::Tensor lu_factor__autograd(at::Tensor& A) {
  lu::check_input(A, "lu_factor_", /*inplace=*/true, /*math_bits=*/false);
  check_inplace_autograd(A, "lu_factor_");
  if (linalg_stands_in(A)) {
    auto [LU, pivots, info] = at::linalg_lu_factor_ex(A);
    A.copy_(LU);
    return pivots;
  }
  if (!records_autograd(A)) {
    at::Tensor pivots = lu_factor__below(A);
    torch::autograd::impl::bump_version(A);
    return pivots;
  }
  at::Tensor pivots;
  LuFactorInplace::apply(A, &pivots);
  return pivots;
}

}  // namespace

TORCH_LIBRARY_IMPL(inplace, Autograd, m) {
  m.impl("batched_inverse_ex", &batched_inverse_ex_autograd);
  m.impl("batched_inverse", &batched_inverse_autograd);
  m.impl("_inverse_data_", &inverse_data_autograd);
  m.impl("lu_factor_ex", &lu_factor_ex_autograd);
  m.impl("lu_factor_", &lu_factor__autograd);
}

}  // namespace torch_inplace
