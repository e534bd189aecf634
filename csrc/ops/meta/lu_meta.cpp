// Meta (fake-tensor) kernels of the LU / inverse ops: shapes and dtypes only, symbolic sizes allowed, so the
// functional ops trace under torch.compile and torch.library.opcheck.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "ops/lu_common.h"

namespace torch_inplace {
namespace {

std::vector<c10::SymInt> batch_shape(const at::Tensor& A) {
  auto s = A.sym_sizes();
  return std::vector<c10::SymInt>(s.begin(), s.end() - 2);
}

at::Tensor meta_info(const at::Tensor& A) {
  return at::empty_symint(batch_shape(A), A.options().dtype(at::kInt));
}
at::Tensor meta_pivots(const at::Tensor& A) {
  auto s = batch_shape(A);
  s.push_back(A.sym_size(-1));
  return at::empty_symint(s, A.options().dtype(at::kInt));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_factor_ex_meta(const at::Tensor& A, bool /*check_errors*/) {
  lu::check_input(A, "lu_factor_ex", /*inplace=*/false);
  return {at::empty_symint(A.sym_sizes(), A.options()), meta_pivots(A), meta_info(A)};
}

at::Tensor lu_factor__meta(at::Tensor& A) {
  lu::check_input(A, "lu_factor_", /*inplace=*/true);
  return meta_pivots(A);
}

std::tuple<at::Tensor, at::Tensor> batched_inverse_ex_meta(const at::Tensor& A, bool /*check_errors*/) {
  lu::check_input(A, "batched_inverse_ex", /*inplace=*/false);
  return {at::empty_symint(A.sym_sizes(), A.options()), meta_info(A)};
}

at::Tensor batched_inverse_meta(const at::Tensor& A) {
  lu::check_input(A, "batched_inverse", /*inplace=*/false);
  return at::empty_symint(A.sym_sizes(), A.options());
}

void inverse_data_meta(at::Tensor& A) { lu::check_input(A, "inverse_", /*inplace=*/true, /*math_bits=*/false); }

at::Tensor inverse_backward_meta(const at::Tensor& X, const at::Tensor& grad) {
  lu::check_backward_inputs(X, grad);
  return at::empty_symint(X.sym_sizes(), X.options());
}

}  // namespace

TORCH_LIBRARY_IMPL(inplace, Meta, m) {
  m.impl("_inverse_backward", &inverse_backward_meta);
  m.impl("lu_factor_ex", &lu_factor_ex_meta);
  m.impl("lu_factor_", &lu_factor__meta);
  m.impl("batched_inverse_ex", &batched_inverse_ex_meta);
  m.impl("batched_inverse", &batched_inverse_meta);
  m.impl("_inverse_data_", &inverse_data_meta);
}

}  // namespace torch_inplace
