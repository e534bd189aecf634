// Shared by the LU / inverse op files (lu.cpp, cpu/, cuda/, meta/, autograd/): validation and small helpers.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <type_traits>

#include "core/checks.h"
#include "ops/lu_rows.h"

namespace torch_inplace {
namespace lu {

// Throws (naming `op`) unless A is a strided (..., n, n) tensor with >= 2 dims of float32, float64, complex64
// or complex128. In-place ops (`inplace`) also need a tensor without internally overlapping elements (an expanded
// tensor is refused, as by PyTorch's own in-place ops; any other strides are taken) and, with `math_bits` (backends:
// the dispatcher's conjugate/negative fallbacks run between the Autograd key and them), no conj/neg bits.
void check_input(const at::Tensor& A, const char* op, bool inplace, bool math_bits = true);

// Whether A's data starts at a multiple of its element size, as the kernels' element types need (core/checks.h);
// tensors without memory of their own (meta, fake) count as aligned.
inline bool element_aligned(const at::Tensor& A) { return !misaligned_memory(A); }

// PyTorch's own copies (clone, copy_, resolve_conj) move complex elements with 16-byte instructions that fault where
// the data is not element-aligned: numpy's complex128 arrays may be 8-byte aligned, and torch.from_numpy shares them
// (A.clone() crashes on such a tensor; GPU memory from DLPack at an offset faults alike). These two copy through real
// views of the same bytes instead, which need only the real type's alignment; elsewhere they are clone and copy_.
// copy_of_values: a contiguous, element-aligned copy of A's values (conj / neg bits resolved).
at::Tensor copy_of_values(const at::Tensor& A);
// write_values: A's values = `values` (element-aligned, no conj / neg bit), through A's conj / neg bits.
void write_values(at::Tensor& A, const at::Tensor& values);
// A itself where PyTorch's ops can read it, else copy_of_values(A) (for the ops that hand A to torch.linalg).
at::Tensor readable(const at::Tensor& A);

// How an in-place kernel, which works on contiguous (..., n, n) storage, reaches a validated A of any strides: on A
// itself where it is contiguous; on A.mT() where that is contiguous and `transposes` (the operation commutes with
// transposition, as inversion does: inv(B^T) = inv(B)^T), so a transposed view is still done in its own storage;
// otherwise (and wherever A's data is not element-aligned) on a contiguous copy that is written back (extra memory
// the size of A, as torch.linalg's out= forms). `kernel` is called exactly once.
template <typename F>
auto on_dense_storage(at::Tensor& A, bool transposes, F&& kernel) -> decltype(kernel(A)) {
  if (element_aligned(A)) {
    if (A.is_contiguous()) return kernel(A);
    if (transposes) {
      at::Tensor t = A.mT();
      if (t.is_contiguous()) return kernel(t);
    }
  }
  at::Tensor tmp = copy_of_values(A);
  if constexpr (std::is_void_v<decltype(kernel(A))>) {
    kernel(tmp);
    write_values(A, tmp);
  } else {
    auto out = kernel(tmp);
    write_values(A, tmp);
    return out;
  }
}

// A contiguous, element-aligned tensor holding A's values (A itself when it already is one; conj/neg bits resolved).
at::Tensor contiguous_input(const at::Tensor& A);

// Raises as torch.linalg does for singular input when any info is > 0 (syncs the host).
void check_info(const at::Tensor& info, const char* api, bool is_matrix);

// Checks the operands of _inverse_backward (same shape, dtype and device; validated X).
void check_backward_inputs(const at::Tensor& X, const at::Tensor& grad);
// -X^H G X^H with two matmuls (differentiable; the CPU kernel and the GPU fallback).
at::Tensor inverse_backward_reference(const at::Tensor& X, const at::Tensor& grad);

// Matrices in the batch (product of the leading dims).
int64_t batch_count(const at::Tensor& A);

// Tuning overrides for the GPU kernels of (kind 0 = LU, 1 = inverse; dtype index 0..3; n): warps per block and
// rows per lane (1 to 4, kLaneRows, kMediumRows, or kSplitRows / kTensorCoreRows for the inverse); 0 means "use the
// committed table".
// Set by the private op inplace::_small_lu_tuning (benchmarks/tune_lu.py, benchmarks/lu_table_ab.py). The row codes
// (kSplitRows, kLaneRows, kTensorCoreRows, kMediumRows) are in ops/lu_rows.h.
int tuning_override(int kind, int dtype_index, int64_t n);
int rows_override(int kind, int dtype_index, int64_t n);
int dtype_index(at::ScalarType t);

}  // namespace lu
}  // namespace torch_inplace
