// Schemas and C++ entry points of the small batched LU and inverse ops (namespace `inplace`).
//
// lu_factor_ex, batched_inverse_ex and batched_inverse are the kernels (CPU, CUDA/HIP, Meta, Autograd):
// batched_inverse has its own so that no `info` is written on GPUs; lu_factor is a CompositeImplicitAutograd
// wrapper of lu_factor_ex that drops `info`. Unlike torch.linalg.lu_factor and
// torch.linalg.inv they do not raise on singular input, because raising needs a host sync: call the _ex form
// with check_errors=True for that. lu_factor_ and inverse_ overwrite A (any strides but overlapping ones).
#include <ATen/MemoryOverlap.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/_conj.h>
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>
#include <torch/library.h>

#include <array>
#include <atomic>

#include "core/checks.h"
#include "ops/lu_common.h"
#include "torch_inplace.h"

namespace torch_inplace {
namespace lu {

void check_input(const at::Tensor& A, const char* op, bool inplace, bool math_bits) {
  TORCH_CHECK(A.defined(), op, ": expected a tensor, got an undefined tensor");
  TORCH_CHECK(!A.is_nested(), op, ": expected a regular tensor of shape (..., n, n), got a nested tensor");
  TORCH_CHECK(A.layout() == c10::kStrided, op, ": expected a strided (dense) tensor, got layout ", A.layout());
  TORCH_CHECK(A.dim() >= 2, op, ": expected a tensor of shape (..., n, n) with at least 2 dims, got a ", A.dim(),
              "-D tensor of shape ", A.sym_sizes());
  TORCH_CHECK(A.sym_size(-1) == A.sym_size(-2), op, ": expected square matrices (..., n, n), got shape ",
              A.sym_sizes());
  const auto st = A.scalar_type();
  TORCH_CHECK(st == at::kFloat || st == at::kDouble || st == at::kComplexFloat || st == at::kComplexDouble, op,
              ": expected dtype float32, float64, complex64 or complex128, got ", st);
  if (inplace) {
    check_not_inference_outside_mode(A, op);
    TORCH_CHECK(at::has_internal_overlap(A) != at::MemOverlap::Yes, op,
                ": expected a tensor whose elements do not overlap in memory (the in-place op writes every element), "
                "got strides ", A.sym_strides(), " for shape ", A.sym_sizes(),
                " (an expanded tensor?); call .clone() first or use the out-of-place op");
    TORCH_CHECK(!math_bits || (!A.is_conj() && !A.is_neg()), op, ": expected a tensor without the conjugate/negative view bit, got "
                "one with is_conj()=", A.is_conj(), ", is_neg()=", A.is_neg(), "; call resolve_conj()/resolve_neg()");
  }
}

namespace {
// Complex data that PyTorch's copies cannot move (lu_common.h).
bool needs_real_copy(const at::Tensor& A) { return A.is_complex() && !element_aligned(A); }

// The same bytes as A, without its conj / neg bits, as real numbers (a trailing dim of 2).
at::Tensor physical_real(const at::Tensor& A) {
  at::Tensor bits = A.is_conj() ? A.conj() : A;  // conj() and _neg_view() of a view with the bit drop it
  if (bits.is_neg()) bits = bits._neg_view();
  return at::view_as_real(bits);
}

// `physical` (aligned values, no bits) seen through A's conj / neg bits.
at::Tensor with_bits_of(const at::Tensor& A, at::Tensor physical) {
  if (A.is_conj()) physical = physical.conj();
  if (A.is_neg()) physical = physical._neg_view();
  return physical;
}
}  // namespace

at::Tensor copy_of_values(const at::Tensor& A) {
  if (!needs_real_copy(A)) return A.clone(at::MemoryFormat::Contiguous);
  const at::Tensor bits = at::view_as_complex(physical_real(A).clone(at::MemoryFormat::Contiguous));
  return with_bits_of(A, bits).resolve_conj().resolve_neg();
}

void write_values(at::Tensor& A, const at::Tensor& values) {
  if (!needs_real_copy(A)) {
    A.copy_(values);
    return;
  }
  // A = conj(S) and / or -S: S = conj(values) and / or -values, resolved in aligned memory, then moved as reals.
  const at::Tensor physical = with_bits_of(A, values).resolve_conj().resolve_neg();
  physical_real(A).copy_(at::view_as_real(physical));
}

at::Tensor readable(const at::Tensor& A) { return needs_real_copy(A) ? copy_of_values(A) : A; }

at::Tensor contiguous_input(const at::Tensor& A) {
  if (!element_aligned(A)) return copy_of_values(A);
  return A.resolve_conj().resolve_neg().contiguous();
}

void check_info(const at::Tensor& info, const char* api, bool is_matrix) {
  at::_linalg_check_errors(info, api, is_matrix);
}

void check_backward_inputs(const at::Tensor& X, const at::Tensor& grad) {
  const char* op = "_inverse_backward";
  check_input(X, op, /*inplace=*/false);
  TORCH_CHECK(grad.defined() && grad.sym_sizes() == X.sym_sizes(), op, ": expected grad of shape ", X.sym_sizes(),
              ", got ", grad.defined() ? grad.sym_sizes() : c10::SymIntArrayRef{});
  TORCH_CHECK(grad.scalar_type() == X.scalar_type(), op, ": expected grad of dtype ", X.scalar_type(), ", got ",
              grad.scalar_type());
  TORCH_CHECK(grad.device() == X.device(), op, ": expected grad on ", X.device(), ", got ", grad.device());
}

at::Tensor inverse_backward_reference(const at::Tensor& X, const at::Tensor& grad) {
  const at::Tensor Xh = X.mH();
  return -at::matmul(Xh, at::matmul(grad, Xh));
}

int64_t batch_count(const at::Tensor& A) {
  int64_t b = 1;
  for (int64_t d = 0; d + 2 < A.dim(); ++d) b *= A.size(d);
  return b;
}

int dtype_index(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return 0;
    case at::kDouble: return 1;
    case at::kComplexFloat: return 2;
    case at::kComplexDouble: return 3;
    default: return -1;
  }
}

namespace {
std::array<std::atomic<int>, 2 * 4 * 33>& overrides() {
  static std::array<std::atomic<int>, 2 * 4 * 33> table{};
  return table;
}
std::array<std::atomic<int>, 2 * 4 * 33>& row_overrides() {
  static std::array<std::atomic<int>, 2 * 4 * 33> table{};
  return table;
}
}  // namespace

int tuning_override(int kind, int dtype_idx, int64_t n) {
  if (kind < 0 || kind > 1 || dtype_idx < 0 || dtype_idx > 3 || n < 1 || n > 32) return 0;
  return overrides()[(kind * 4 + dtype_idx) * 33 + n].load(std::memory_order_relaxed);
}

int rows_override(int kind, int dtype_idx, int64_t n) {
  if (kind < 0 || kind > 1 || dtype_idx < 0 || dtype_idx > 3 || n < 1 || n > 32) return 0;
  return row_overrides()[(kind * 4 + dtype_idx) * 33 + n].load(std::memory_order_relaxed);
}

}  // namespace lu

namespace {

// Sets (>= 1) or resets (0) the overrides of one (kind, dtype, n); -1 leaves one as it is. Returns the warps
// override (0: the table's). A rows count the kernel has no variant for runs with one row per lane (so does the
// tensor-core code for other dtypes or n, on GPUs below compute capability 8.0 and under HIP).
int64_t small_lu_tuning_op(c10::string_view kind, at::ScalarType dtype, int64_t n, int64_t warps, int64_t rows) {
  const char* op = "_small_lu_tuning";
  const int k = kind == "lu" ? 0 : kind == "inverse" ? 1 : -1;
  TORCH_CHECK(k >= 0, op, ": expected kind 'lu' or 'inverse', got '", std::string(kind), "'");
  const int d = lu::dtype_index(dtype);
  TORCH_CHECK(d >= 0, op, ": expected dtype float32, float64, complex64 or complex128, got ", dtype);
  TORCH_CHECK(n >= 1 && n <= 32, op, ": expected 1 <= n <= 32, got ", n);
  TORCH_CHECK(warps >= -1 && warps <= 8, op, ": expected warps in [-1, 8] (-1 query, 0 reset), got ", warps);
  TORCH_CHECK(rows == -1 || rows == 0 || (rows >= 1 && rows <= 4) || rows == lu::kLaneRows ||
                  rows == lu::kSplitRows || rows == lu::kTensorCoreRows || rows == lu::kMediumRows,
              op, ": expected rows -1 (keep), 0 (reset), 1, 2, 3, 4, ", lu::kLaneRows, " (a lane per matrix), ",
              lu::kSplitRows, " (split rows, inverse only), ", lu::kTensorCoreRows,
              " (float64 tensor cores, inverse only) or ", lu::kMediumRows,
              " (the shared-memory kernel of n > 32), got ", rows);
  TORCH_CHECK(rows != lu::kSplitRows || k == 1, op, ": split rows (", lu::kSplitRows, ") are for kind 'inverse' only");
  TORCH_CHECK(rows != lu::kTensorCoreRows || k == 1, op, ": the tensor-core kernel (", lu::kTensorCoreRows,
              ") is for kind 'inverse' only");
  auto& slot = lu::overrides()[(k * 4 + d) * 33 + n];
  if (warps >= 0) slot.store(static_cast<int>(warps));
  if (rows != -1) lu::row_overrides()[(k * 4 + d) * 33 + n].store(static_cast<int>(rows));
  return slot.load();
}

std::tuple<at::Tensor, at::Tensor> lu_factor_composite(const at::Tensor& A) {
  lu::check_input(A, "lu_factor", /*inplace=*/false);  // the errors name the op the caller called
  auto [LU, pivots, info] = torch_inplace::lu_factor_ex(A, /*check_errors=*/false);
  return {LU, pivots};
}

// lu_factor_ on a conjugate or negative view. PyTorch's math-bit fallback materializes such an input for an in-place
// op and writes it back, but asserts when the op returns another tensor than the one it mutates (lu_factor_ returns
// the pivots). So this kernel does the same itself: factor a resolved copy, then copy it back through the view.
at::Tensor lu_factor__math_bits(at::Tensor& A) {
  lu::check_input(A, "lu_factor_", /*inplace=*/true, /*math_bits=*/false);
  at::Tensor resolved = lu::copy_of_values(A);
  at::Tensor pivots = torch_inplace::lu_factor_(resolved);
  lu::write_values(A, resolved);
  return pivots;
}

// The out-of-place ops on a conjugate or negative view: PyTorch's math-bit fallback would resolve the view with its
// own copy, which faults on complex data that is not element-aligned (lu::copy_of_values); this resolves it so and
// runs the op on the copy, which carries no bit. Validated first, so that the errors name the op.
std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_factor_ex_math_bits(const at::Tensor& A, bool check_errors) {
  lu::check_input(A, "lu_factor_ex", /*inplace=*/false);
  return torch_inplace::lu_factor_ex(lu::copy_of_values(A), check_errors);
}
std::tuple<at::Tensor, at::Tensor> batched_inverse_ex_math_bits(const at::Tensor& A, bool check_errors) {
  lu::check_input(A, "batched_inverse_ex", /*inplace=*/false);
  return torch_inplace::batched_inverse_ex(lu::copy_of_values(A), check_errors);
}
at::Tensor batched_inverse_math_bits(const at::Tensor& A) {
  lu::check_input(A, "batched_inverse", /*inplace=*/false);
  return torch_inplace::batched_inverse(lu::copy_of_values(A));
}

// inverse_ = the data-only _inverse_data_ (which backends, Meta and autograd implement) returning its input.
at::Tensor& inverse__composite(at::Tensor& A) {
  // conj/neg views go through as they are (the Conjugate / Negative registrations below).
  lu::check_input(A, "inverse_", /*inplace=*/true, /*math_bits=*/false);
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::_inverse_data_", "")
                       .typed<void(at::Tensor&)>();
  op.call(A);
  return A;
}

// _inverse_data_ on a conjugate or negative view: the same op on a view of the same storage with that bit flipped off
// (at::_conj / at::_neg_view flip it), which inverts the storage and so the view (inversion commutes with both). The
// bit is gone before the keys below (Python, Functionalize): torch.compile's functionalization cannot carry it into
// the op (its auto_functionalized_v2 has no Conjugate / Negative kernel).
void inverse_data_math_bit(at::Tensor& A, bool conj) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::_inverse_data_", "")
                       .typed<void(at::Tensor&)>();
  at::Tensor raw = conj ? at::_conj(A) : at::_neg_view(A);
  op.call(raw);
}
void inverse_data_conj(at::Tensor& A) { inverse_data_math_bit(A, /*conj=*/true); }
void inverse_data_neg(at::Tensor& A) { inverse_data_math_bit(A, /*conj=*/false); }

}  // namespace

std::tuple<at::Tensor, at::Tensor> lu_factor(const at::Tensor& A) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::lu_factor", "")
                       .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&)>();
  return op.call(A);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_factor_ex(const at::Tensor& A, bool check_errors) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::lu_factor_ex", "")
                       .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(const at::Tensor&, bool)>();
  return op.call(A, check_errors);
}

at::Tensor lu_factor_(at::Tensor& A) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::lu_factor_", "")
                       .typed<at::Tensor(at::Tensor&)>();
  return op.call(A);
}

at::Tensor batched_inverse(const at::Tensor& A) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::batched_inverse", "")
                       .typed<at::Tensor(const at::Tensor&)>();
  return op.call(A);
}

std::tuple<at::Tensor, at::Tensor> batched_inverse_ex(const at::Tensor& A, bool check_errors) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::batched_inverse_ex", "")
                       .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, bool)>();
  return op.call(A, check_errors);
}

at::Tensor& inverse_(at::Tensor& A) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::inverse_", "")
                       .typed<at::Tensor&(at::Tensor&)>();
  return op.call(A);
}

TORCH_LIBRARY_FRAGMENT(inplace, m) {
  m.def("lu_factor_ex(Tensor A, *, bool check_errors=False) -> (Tensor LU, Tensor pivots, Tensor info)");
  m.def("lu_factor(Tensor A) -> (Tensor LU, Tensor pivots)");
  m.def("lu_factor_(Tensor(a!) A) -> Tensor");
  m.def("batched_inverse_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)");
  m.def("batched_inverse(Tensor A) -> Tensor");
  m.def("inverse_(Tensor(a!) A) -> Tensor(a!)");
  // The data-only form inverse_ runs through (custom ops may not return an alias of an input under the compiler).
  m.def("_inverse_data_(Tensor(a!) A) -> ()");
  m.def("_inverse_backward(Tensor X, Tensor grad) -> Tensor");
  m.def("_small_lu_tuning(str kind, ScalarType dtype, int n, int warps=-1, int rows=-1) -> int", &small_lu_tuning_op);
}

// Conjugate and negative views. Inversion commutes with both bits (inv(conj(B)) = conj(inv(B)), inv(-B) = -inv(B)), so
// inverse_ and _inverse_data_ invert the view's storage in place: inverse_ falls through to its composite kernel, and
// _inverse_data_ runs on a view without the bit (inverse_data_math_bit above; the backends would also take the bits,
// lu::check_input with math_bits false). PyTorch's math-bit fallback would instead run the op on a resolved copy,
// and it writes the op's result back into the stack slot of its first return, which _inverse_data_ (no returns)
// does not have: the heap was corrupted. lu_factor_ does not commute with negation (L keeps its unit diagonal): its
// kernel above factors a resolved copy. The out-of-place ops run on a resolved copy too, made by the kernels above.
static void register_math_bits(torch::Library& m, void (*inverse_data)(at::Tensor&)) {
  m.impl("lu_factor_", &lu_factor__math_bits);
  m.impl("inverse_", torch::CppFunction::makeFallthrough());
  m.impl("_inverse_data_", inverse_data);
  m.impl("lu_factor_ex", &lu_factor_ex_math_bits);
  m.impl("batched_inverse_ex", &batched_inverse_ex_math_bits);
  m.impl("batched_inverse", &batched_inverse_math_bits);
}
TORCH_LIBRARY_IMPL(inplace, Conjugate, m) { register_math_bits(m, &inverse_data_conj); }
TORCH_LIBRARY_IMPL(inplace, Negative, m) { register_math_bits(m, &inverse_data_neg); }

TORCH_LIBRARY_IMPL(inplace, CompositeImplicitAutograd, m) {
  m.impl("lu_factor", &lu_factor_composite);
  m.impl("inverse_", &inverse__composite);
}

// Sparse, quantized, nested and MKL-DNN tensors (TORCH_INPLACE_FOR_EACH_NON_DENSE_KEY, core/checks.h): without
// these kernels the dispatcher raised its own "Could not run 'inplace::batched_inverse' with arguments from the
// 'SparseCPU' backend" in inference mode. They refuse them as the others do (lu::check_input cannot pass on such a
// tensor: its layout, dtype or nestedness is refused).
namespace {
[[noreturn]] void refuse(const at::Tensor& A, const char* op, bool inplace) {
  lu::check_input(A, op, inplace, /*math_bits=*/false);
  TORCH_CHECK(false, op, ": expected a dense strided tensor, got one with dispatch keys ", A.key_set());
}
void register_refusals(torch::Library& m) {
  m.impl("lu_factor_ex", [](const at::Tensor& A, bool) -> std::tuple<at::Tensor, at::Tensor, at::Tensor> {
    refuse(A, "lu_factor_ex", false);
  });
  m.impl("lu_factor_", [](at::Tensor& A) -> at::Tensor { refuse(A, "lu_factor_", true); });
  m.impl("batched_inverse_ex", [](const at::Tensor& A, bool) -> std::tuple<at::Tensor, at::Tensor> {
    refuse(A, "batched_inverse_ex", false);
  });
  m.impl("batched_inverse", [](const at::Tensor& A) -> at::Tensor { refuse(A, "batched_inverse", false); });
  m.impl("_inverse_data_", [](at::Tensor& A) -> void { refuse(A, "inverse_", true); });
  m.impl("_inverse_backward", [](const at::Tensor& X, const at::Tensor&) -> at::Tensor {
    refuse(X, "_inverse_backward", false);
  });
}
}  // namespace
#define TI_REFUSE_ON(key) \
  TORCH_LIBRARY_IMPL(inplace, key, m) { register_refusals(m); }
TORCH_INPLACE_FOR_EACH_NON_DENSE_KEY(TI_REFUSE_ON)
#undef TI_REFUSE_ON

}  // namespace torch_inplace
