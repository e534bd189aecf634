// CUDA/HIP kernels of lu_factor_ex, lu_factor_, batched_inverse_ex, batched_inverse and inverse_.
//
// n <= 32: the register kernels of kernels/lu/small_lu.cuh (paper 001), n a template parameter, warps per block
// from lu_tuning.h (benchmarks/tune_lu.py); for the float64 inverse at the n where the table says so, the fp64
// tensor-core kernel of kernels/lu/dmma_inverse.cuh (compute capability 8.0 and up; elsewhere, or with
// TORCH_INPLACE_LU_DMMA_INVERSE=0, the table's kInv*NoTensorCores entries). 32 < n <= 64: the shared-memory kernels
// of kernels/lu/medium_lu.cuh (one matrix per block, n a run-time argument; lu_medium.cu), where its tile fits a
// block's shared memory (all on CUDA; on AMD's 64 KiB all but complex128 at n = 64). n > 64 (and such misses):
// delegated to torch.linalg (linalg_lu_factor_ex / linalg_inv_ex), which may synchronize the host (MAGMA / cuSOLVER
// paths); on an H200 with PyTorch 2.11 it captured single matrices in a CUDA graph, and a batched lu_factor failed
// to capture (benchmarks/lu_fallback_probe.py).
// Everything runs on the current stream; only check_errors=True syncs.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_inv_ex.h>
#include <ATen/ops/linalg_lu_factor_ex.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "kernels/lu/medium_lu.cuh"
#include "kernels/lu/small_lu.cuh"
#include "ops/cuda/lu_launch.cuh"
#include "ops/cuda/lu_tuning.h"
#include "ops/lu_common.h"

namespace torch_inplace {

namespace lu_cuda {
bool dmma_inverse_available() {
#if TI_HIP
  return false;
#else
  const char* v = std::getenv("TORCH_INPLACE_LU_DMMA_INVERSE");
  if (v != nullptr && v[0] == '0' && v[1] == 0) return false;
  return at::cuda::getCurrentDeviceProperties()->major >= 8;
#endif
}

// ATen's side of the launchers (lu_launch.cuh).
void check_runtime(ti_error_t err) { C10_CUDA_CHECK(err); }
void internal_error(const char* what) { TORCH_CHECK(false, what); }
int current_device() { return c10::cuda::current_device(); }
int device_sms(int device) { return at::cuda::getDeviceProperties(device)->multiProcessorCount; }
int device_major(int device) { return at::cuda::getDeviceProperties(device)->major; }
int device_smem_per_block(int device) {
  static const int64_t cap = [] {
    const char* v = std::getenv("TORCH_INPLACE_LU_SMEM_LIMIT");
    return v != nullptr && v[0] != 0 ? std::max<int64_t>(0, std::atoll(v)) : std::numeric_limits<int64_t>::max();
  }();
  const cudaDeviceProp* prop = at::cuda::getDeviceProperties(device);
#if TI_HIP
  const int64_t bytes = static_cast<int64_t>(prop->sharedMemPerBlock);  // the LDS a block may take, no opt-in
#else
  const int64_t bytes = static_cast<int64_t>(prop->sharedMemPerBlockOptin);
#endif
  return static_cast<int>(std::min(bytes, cap));
}
}  // namespace lu_cuda

namespace {

using kernels::lu::Cplx;

constexpr int64_t kMaxSmallN = 32;
constexpr int64_t kMaxMediumN = kernels::lu::kMediumMaxN;  // 64

// The table's float64 inverse entry is the tensor-core kernel, which cannot run here: its kInv*NoTensorCores entry.
bool table_tensor_cores_off(int kind, int d, int64_t n) {
  return kind == 1 && d == 1 && lu_cuda::kInvRows[1][n] == lu::kTensorCoreRows && !lu_cuda::dmma_inverse_available();
}

int warps_for(int kind, at::ScalarType st, int64_t n) {
  const int d = lu::dtype_index(st);
  const int o = lu::tuning_override(kind, d, n);
  if (o > 0) return o;
  if (table_tensor_cores_off(kind, d, n)) return lu_cuda::kInvWarpsNoTensorCores[n];
  return kind == 0 ? lu_cuda::kLuWarps[d][n] : lu_cuda::kInvWarps[d][n];
}

int rows_for(int kind, at::ScalarType st, int64_t n) {
  const int d = lu::dtype_index(st);
  const int o = lu::rows_override(kind, d, n);
  if (o != 0) return o;
  if (table_tensor_cores_off(kind, d, n)) return lu_cuda::kInvRowsNoTensorCores[n];
  return kind == 0 ? lu_cuda::kLuRows[d][n] : lu_cuda::kInvRows[d][n];
}

#define TI_LU_CASES(X) \
  X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) \
  X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31) X(32)

template <typename T>
void run_lu(const void* in, void* out, int32_t* ipiv, int32_t* info, int64_t batch, int64_t n, int warps,
            int rows, cudaStream_t s) {
  const T* i = static_cast<const T*>(in);
  T* o = static_cast<T*>(out);
  if (n > kMaxSmallN || (rows == lu::kMediumRows && n >= 2)) {
    return lu_cuda::launch_medium_lu<T>(i, o, ipiv, info, batch, static_cast<int>(n), s);
  }
  switch (n) {
#define TI_CASE(N) \
  case N: return lu_cuda::launch_lu<T, N>(i, o, ipiv, info, batch, warps, rows, s);
    TI_LU_CASES(TI_CASE)
#undef TI_CASE
    default: TORCH_CHECK(false, "lu_factor: internal error: no small kernel for n = ", n);
  }
}

template <typename T>
void run_inverse(const void* in, void* out, int32_t* info, int64_t batch, int64_t n, int warps, int rows,
                 cudaStream_t s) {
  const T* i = static_cast<const T*>(in);
  T* o = static_cast<T*>(out);
  if (n > kMaxSmallN || (rows == lu::kMediumRows && n >= 2)) {
    return lu_cuda::launch_medium_inverse<T>(i, o, info, batch, static_cast<int>(n), s);
  }
  switch (n) {
#define TI_CASE(N) \
  case N: return lu_cuda::launch_inverse<T, N>(i, o, info, batch, warps, rows, s);
    TI_LU_CASES(TI_CASE)
#undef TI_CASE
    default: TORCH_CHECK(false, "batched_inverse: internal error: no small kernel for n = ", n);
  }
}

template <typename T>
bool run_backward(const void* X, const void* G, void* out, int64_t batch, int64_t n, cudaStream_t s) {
  const T* x = static_cast<const T*>(X);
  const T* g = static_cast<const T*>(G);
  T* o = static_cast<T*>(out);
  switch (n) {
#define TI_CASE(N)                                                            \
  case N:                                                                     \
    if (!lu_cuda::backward_supported<T, N>()) return false;                   \
    lu_cuda::launch_inverse_backward<T, N>(x, g, o, batch, s);                \
    return true;
    TI_LU_CASES(TI_CASE)
#undef TI_CASE
    default: return false;
  }
}

// The kernels' warp width is a compile-time constant (kernels/common.cuh): a device with another one is refused
// (a ROCm build runs on the 64-wide wavefronts of gfx9 GPUs only), not given wrong results.
void check_warp_size(const at::Tensor& A, const char* op) {
  const int lanes = at::cuda::getDeviceProperties(A.get_device())->warpSize;
  TORCH_CHECK(lanes == kernels::kWarpSize, op, ": expected a GPU with ", kernels::kWarpSize,
              "-lane warps (wavefronts), which this build's kernels are compiled for, got ", A.device(), " with ",
              lanes, "-lane ones");
}

// Shared memory of the medium kernels for n of dtype st (MediumSmem in kernels/lu/medium_lu.cuh).
int medium_bytes(at::ScalarType st, int64_t n) {
  const int m = static_cast<int>(n);
  switch (st) {
    case at::kFloat: return kernels::lu::medium_smem_bytes<float>(m);
    case at::kDouble: return kernels::lu::medium_smem_bytes<double>(m);
    case at::kComplexFloat: return kernels::lu::medium_smem_bytes<Cplx<float>>(m);
    default: return kernels::lu::medium_smem_bytes<Cplx<double>>(m);
  }
}

// Whether torch.linalg takes A instead of the kernels: n > 64, or 32 < n <= 64 where the medium kernels' tile does
// not fit a block's shared memory (on AMD's 64 KiB: complex128 at n = 64, 68 KB; every case fits on CUDA GPUs).
// Every GPU op asks this first, so it also refuses a device of another warp width (check_warp_size) for them.
bool by_linalg(const at::Tensor& A, const char* op) {
  check_warp_size(A, op);
  const int64_t n = A.size(-1);
  if (n > kMaxMediumN) return true;
  return n > kMaxSmallN && medium_bytes(A.scalar_type(), n) > lu_cuda::device_smem_per_block(A.get_device());
}

// in: contiguous A (may be `out` itself); out: contiguous, same shape; n <= kMaxMediumN.
void small_lu(const at::Tensor& in, at::Tensor& out, at::Tensor& pivots, at::Tensor& info) {
  const int64_t n = in.size(-1), batch = lu::batch_count(in);
  if (batch == 0 || n == 0) return;
  // The tuning tables cover the register kernels (n <= 32); past them the medium kernels take no tuning.
  const int w = n <= kMaxSmallN ? warps_for(0, in.scalar_type(), n) : 0;
  const int r = n <= kMaxSmallN ? rows_for(0, in.scalar_type(), n) : 0;
  cudaStream_t s = at::cuda::getCurrentCUDAStream();
  const void* i = in.const_data_ptr();
  void* o = out.data_ptr();
  int32_t* p = pivots.data_ptr<int32_t>();
  int32_t* f = info.data_ptr<int32_t>();
  switch (in.scalar_type()) {
    case at::kFloat: return run_lu<float>(i, o, p, f, batch, n, w, r, s);
    case at::kDouble: return run_lu<double>(i, o, p, f, batch, n, w, r, s);
    case at::kComplexFloat: return run_lu<Cplx<float>>(i, o, p, f, batch, n, w, r, s);
    case at::kComplexDouble: return run_lu<Cplx<double>>(i, o, p, f, batch, n, w, r, s);
    default: TORCH_CHECK(false, "lu_factor: unsupported dtype ", in.scalar_type());
  }
}

// info undefined: the kernels write none (batched_inverse and inverse_ return none; at n = 1 that is a third of
// the bytes moved).
void small_inverse(const at::Tensor& in, at::Tensor& out, const at::Tensor& info) {
  const int64_t n = in.size(-1), batch = lu::batch_count(in);
  if (batch == 0 || n == 0) return;
  // The tuning tables cover the register kernels (n <= 32); past them the medium kernels take no tuning.
  const int w = n <= kMaxSmallN ? warps_for(1, in.scalar_type(), n) : 0;
  const int r = n <= kMaxSmallN ? rows_for(1, in.scalar_type(), n) : 0;
  cudaStream_t s = at::cuda::getCurrentCUDAStream();
  const void* i = in.const_data_ptr();
  void* o = out.data_ptr();
  int32_t* f = info.defined() ? info.data_ptr<int32_t>() : nullptr;
  switch (in.scalar_type()) {
    case at::kFloat: return run_inverse<float>(i, o, f, batch, n, w, r, s);
    case at::kDouble: return run_inverse<double>(i, o, f, batch, n, w, r, s);
    case at::kComplexFloat: return run_inverse<Cplx<float>>(i, o, f, batch, n, w, r, s);
    case at::kComplexDouble: return run_inverse<Cplx<double>>(i, o, f, batch, n, w, r, s);
    default: TORCH_CHECK(false, "batched_inverse: unsupported dtype ", in.scalar_type());
  }
}

std::vector<int64_t> batch_shape(const at::Tensor& A) { return A.sizes().slice(0, A.dim() - 2).vec(); }

at::Tensor new_info(const at::Tensor& A) {
  // Every matrix's info is written by the kernel; only n == 0 needs the zeros.
  if (A.size(-1) == 0) return at::zeros(batch_shape(A), A.options().dtype(at::kInt));
  return at::empty(batch_shape(A), A.options().dtype(at::kInt));
}
at::Tensor new_pivots(const at::Tensor& A) {
  auto s = batch_shape(A);
  s.push_back(A.size(-1));
  return at::empty(s, A.options().dtype(at::kInt));
}

// The kernel input: A itself when contiguous and element-aligned with no conj/neg bit, else a contiguous copy.
at::Tensor kernel_input(const at::Tensor& A) {
  if (A.is_contiguous() && lu::element_aligned(A) && !A.is_conj() && !A.is_neg()) return A;
  return lu::contiguous_input(A);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_factor_ex_cuda(const at::Tensor& A, bool check_errors) {
  lu::check_input(A, "lu_factor_ex", /*inplace=*/false);
  c10::cuda::CUDAGuard guard(A.device());
  at::Tensor LU, pivots, info;
  if (by_linalg(A, "lu_factor_ex")) {
    std::tie(LU, pivots, info) = at::linalg_lu_factor_ex(lu::readable(A), /*pivot=*/true, /*check_errors=*/false);
  } else {
    const at::Tensor in = kernel_input(A);
    LU = at::empty(A.sizes(), A.options());
    pivots = new_pivots(A);
    info = new_info(A);
    small_lu(in, LU, pivots, info);
  }
  if (check_errors) lu::check_info(info, "inplace.lu_factor_ex", A.dim() == 2);
  return {LU, pivots, info};
}

at::Tensor lu_factor__cuda(at::Tensor& A) {
  lu::check_input(A, "lu_factor_", /*inplace=*/true);
  c10::cuda::CUDAGuard guard(A.device());
  if (by_linalg(A, "lu_factor_")) {
    auto [LU, pivots, info] = at::linalg_lu_factor_ex(lu::readable(A), /*pivot=*/true, /*check_errors=*/false);
    lu::write_values(A, LU);
    return pivots;
  }
  at::Tensor pivots = new_pivots(A), info = new_info(A);
  lu::on_dense_storage(A, /*transposes=*/false, [&](at::Tensor& D) { small_lu(D, D, pivots, info); });
  return pivots;
}

// The out-of-place inverse of n <= kMaxMediumN by the small / medium kernels, `info` written where defined.
at::Tensor inverse_out_of_place(const at::Tensor& A, const at::Tensor& info) {
  at::Tensor X = at::empty(A.sizes(), A.options());
  small_inverse(kernel_input(A), X, info);
  return X;
}

std::tuple<at::Tensor, at::Tensor> batched_inverse_ex_cuda(const at::Tensor& A, bool check_errors) {
  lu::check_input(A, "batched_inverse_ex", /*inplace=*/false);
  c10::cuda::CUDAGuard guard(A.device());
  at::Tensor X, info;
  if (by_linalg(A, "batched_inverse_ex")) {
    std::tie(X, info) = at::linalg_inv_ex(lu::readable(A), /*check_errors=*/false);
  } else {
    info = new_info(A);
    X = inverse_out_of_place(A, info);
  }
  if (check_errors) lu::check_info(info, "inplace.batched_inverse_ex", A.dim() == 2);
  return {X, info};
}

at::Tensor batched_inverse_cuda(const at::Tensor& A) {
  lu::check_input(A, "batched_inverse", /*inplace=*/false);
  c10::cuda::CUDAGuard guard(A.device());
  if (by_linalg(A, "batched_inverse")) return std::get<0>(at::linalg_inv_ex(lu::readable(A), /*check_errors=*/false));
  return inverse_out_of_place(A, /*info=*/at::Tensor());
}

void inverse_data_cuda(at::Tensor& A) {
  // Conjugate / negative views arrive as they are (lu.cpp): inverting the storage inverts the view.
  lu::check_input(A, "inverse_", /*inplace=*/true, /*math_bits=*/false);
  c10::cuda::CUDAGuard guard(A.device());
  if (by_linalg(A, "inverse_")) {
    lu::write_values(A, std::get<0>(at::linalg_inv_ex(lu::readable(A), /*check_errors=*/false)));
    return;
  }
  lu::on_dense_storage(A, /*transposes=*/true, [](at::Tensor& D) { small_inverse(D, D, /*info=*/at::Tensor()); });
}

// grad_A = -X^H G X^H: the fused kernel for n <= 32 where two rows fit in registers, else two GEMMs.
at::Tensor inverse_backward_cuda(const at::Tensor& X, const at::Tensor& grad) {
  lu::check_backward_inputs(X, grad);
  c10::cuda::CUDAGuard guard(X.device());
  const int64_t n = X.size(-1), batch = lu::batch_count(X);
  if (n >= 1 && n <= kMaxSmallN && batch > 0) {
    const at::Tensor x = kernel_input(X), g = kernel_input(grad);
    at::Tensor out = at::empty(X.sizes(), X.options());
    cudaStream_t s = at::cuda::getCurrentCUDAStream();
    bool done = false;
    switch (X.scalar_type()) {
      case at::kFloat: done = run_backward<float>(x.const_data_ptr(), g.const_data_ptr(), out.data_ptr(), batch, n, s); break;
      case at::kDouble: done = run_backward<double>(x.const_data_ptr(), g.const_data_ptr(), out.data_ptr(), batch, n, s); break;
      case at::kComplexFloat: done = run_backward<Cplx<float>>(x.const_data_ptr(), g.const_data_ptr(), out.data_ptr(), batch, n, s); break;
      case at::kComplexDouble: done = run_backward<Cplx<double>>(x.const_data_ptr(), g.const_data_ptr(), out.data_ptr(), batch, n, s); break;
      default: break;
    }
    if (done) return out;
  }
  return lu::inverse_backward_reference(X, grad);
}

}  // namespace

TORCH_LIBRARY_IMPL(inplace, CUDA, m) {
  m.impl("_inverse_backward", &inverse_backward_cuda);
  m.impl("lu_factor_ex", &lu_factor_ex_cuda);
  m.impl("lu_factor_", &lu_factor__cuda);
  m.impl("batched_inverse_ex", &batched_inverse_ex_cuda);
  m.impl("batched_inverse", &batched_inverse_cuda);
  m.impl("_inverse_data_", &inverse_data_cuda);
}

}  // namespace torch_inplace
