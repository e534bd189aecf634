// torch_inplace: public C++ API (LibTorch users). Every function calls through the PyTorch dispatcher, so the
// CPU, CUDA/HIP, autograd and tracing implementations registered by the library all apply.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/string_view.h>

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

// Small batched LU and inverse (n <= 32 in registers, 32 < n <= 64 in shared memory on the GPU; larger n through
// torch.linalg), torch.linalg semantics.
std::tuple<at::Tensor, at::Tensor> lu_factor(const at::Tensor& A);
std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_factor_ex(const at::Tensor& A, bool check_errors = false);
at::Tensor lu_factor_(at::Tensor& A);
at::Tensor batched_inverse(const at::Tensor& A);
std::tuple<at::Tensor, at::Tensor> batched_inverse_ex(const at::Tensor& A, bool check_errors = false);
at::Tensor& inverse_(at::Tensor& A);

}  // namespace torch_inplace
