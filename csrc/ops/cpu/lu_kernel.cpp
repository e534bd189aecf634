// CPU kernels of lu_factor_ex, lu_factor_, batched_inverse_ex, batched_inverse and inverse_: LAPACK getf2-style LU with partial
// pivoting (row-major, first maximum of |x| or |re| + |im| as in i?amax), getri-style inverse from the factors;
// at::parallel_for over the batch, one matrix per task.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/util/complex.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/lu_common.h"

namespace torch_inplace {
namespace {

// The pivot measure of LAPACK's i?amax: |x| for reals, |re| + |im| for complex (scabs1 / dcabs1: in the real type).
template <typename T>
inline T abs1(T x) {
  return std::abs(x);
}
template <typename R>
inline R abs1(c10::complex<R> x) {
  return std::abs(x.real()) + std::abs(x.imag());
}

// Whether x * (1 / p) can stand for x / p: LAPACK's getf2 scales by the reciprocal only where |p| >= sfmin (the
// smallest normal number, whose reciprocal is finite), and divides below it, where 1 / p overflows. Partial
// pivoting keeps every |x| <= |p|, so below sfmin the quotients are finite and the reciprocal is inf.
template <typename T>
inline bool reciprocal_is_safe(T p) {
  using R = typename c10::scalar_value_type<T>::type;
  return std::abs(p) >= std::numeric_limits<R>::min();
}

// x / p where |p| < sfmin. Real division is exact to rounding there. Complex division (numpy's Smith-style
// formula) takes a reciprocal of a number of p's size, inf below sfmin: both sides are scaled into the normal
// range first (by 2^digits, exact), as x is at most about p's size under partial pivoting.
template <typename T>
inline T divide_by_tiny(T x, T p) {
  if constexpr (c10::is_complex<T>::value) {
    using R = typename c10::scalar_value_type<T>::type;
    const R s = std::ldexp(R(1), std::numeric_limits<R>::digits);
    return (x * s) / (p * s);
  } else {
    return x / p;
  }
}

// 1 / p. Complex division (c10's, numpy's Smith-style formula) divides by c + d (d / c) with |c| >= |d|, which
// overflows where |c| + |d| |d / c| passes the largest finite value (both parts above about half of it): the
// reciprocal came out 0, and with it the multipliers of that column, with info 0 (torch.linalg is right there). Such
// a p is finite, so its true reciprocal is not 0: it is then formed with 1 / c factored out, (1 - i r) (1 / c) /
// (1 + r^2), r = d / c, which stays finite. Elsewhere the result is the division's, bit for bit.
template <typename T>
inline T reciprocal(T p) {
  const T inv = T(1) / p;
  if constexpr (c10::is_complex<T>::value) {
    using R = typename c10::scalar_value_type<T>::type;
    if (inv == T(0) && std::isfinite(p.real()) && std::isfinite(p.imag())) {
      const bool re_larger = std::abs(p.real()) >= std::abs(p.imag());
      const R big = re_larger ? p.real() : p.imag(), small = re_larger ? p.imag() : p.real();
      const R r = small / big;
      const R q = (R(1) / big) / (R(1) + r * r);
      return re_larger ? T(q, -r * q) : T(r * q, -q);
    }
  }
  return inv;
}

// In-place LU of the row-major n x n matrix `a`; ipiv 1-based (LAPACK). Returns info (first zero pivot, 1-based).
// N > 0: n is N, a compile-time constant (small n: the loops unroll and the row updates vectorize); N == 0: any n.
template <typename T, int N = 0>
int32_t getrf(T* a, int64_t n_, int32_t* ipiv) {
  const int64_t n = N > 0 ? N : n_;
  int32_t info = 0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    auto best = abs1(a[k * n + k]);
    for (int64_t i = k + 1; i < n; ++i) {
      const auto v = abs1(a[i * n + k]);
      if (v > best) best = v, p = i;
    }
    ipiv[k] = static_cast<int32_t>(p + 1);
    if (a[p * n + k] == T(0)) {
      if (info == 0) info = static_cast<int32_t>(k + 1);
      continue;
    }
    if (p != k) {
      for (int64_t j = 0; j < n; ++j) std::swap(a[k * n + j], a[p * n + j]);
    }
    const T pivot = a[k * n + k];
    const bool scale = reciprocal_is_safe(pivot);
    const T inv = reciprocal(pivot);
    const T* pivot_row = a + k * n;
    for (int64_t i = k + 1; i < n; ++i) {
      T* row = a + i * n;
      const T l = scale ? row[k] * inv : divide_by_tiny(row[k], pivot);
      row[k] = l;
      for (int64_t j = k + 1; j < n; ++j) row[j] -= l * pivot_row[j];
    }
  }
  return info;
}

// X = A^-1 from the factors (A = P L U): X = U^-1 L^-1 P^T, computed by row operations on B = P^T. N as for getrf.
template <typename T, int N = 0>
void getri(const T* lu, const int32_t* ipiv, int64_t n_, T* x) {
  const int64_t n = N > 0 ? N : n_;
  for (int64_t i = 0; i < n * n; ++i) x[i] = T(0);
  for (int64_t i = 0; i < n; ++i) x[i * n + i] = T(1);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t p = ipiv[k] - 1;
    if (p != k) {
      for (int64_t j = 0; j < n; ++j) std::swap(x[k * n + j], x[p * n + j]);
    }
  }
  for (int64_t i = 0; i < n; ++i) {  // L (unit lower) solve
    for (int64_t k = 0; k < i; ++k) {
      const T l = lu[i * n + k];
      if (l == T(0)) continue;
      for (int64_t j = 0; j < n; ++j) x[i * n + j] -= l * x[k * n + j];
    }
  }
  for (int64_t i = n - 1; i >= 0; --i) {  // U solve
    for (int64_t k = i + 1; k < n; ++k) {
      const T u = lu[i * n + k];
      if (u == T(0)) continue;
      for (int64_t j = 0; j < n; ++j) x[i * n + j] -= u * x[k * n + j];
    }
    const T pivot = lu[i * n + i];
    if (reciprocal_is_safe(pivot)) {
      const T inv = reciprocal(pivot);
      for (int64_t j = 0; j < n; ++j) x[i * n + j] *= inv;
    } else {
      for (int64_t j = 0; j < n; ++j) x[i * n + j] = divide_by_tiny(x[i * n + j], pivot);
    }
  }
}

// fn(std::integral_constant<int, N>{}) with N = n for n <= kFixedN (compile-time n), N = 0 above. Unrolled, the
// factorization ran 1.1-1.8x faster at n = 2..4, 1.08-1.26x at n = 5..8 and 1.07-1.14x at n = 9..16 than with loops
// (float32 / float64; complex64 0.97-1.06x past n = 4; single-threaded, best of interleaved runs on 4096 matrices:
// benchmarks/results/cpu-2t/history_s38_cpu_lu_unroll_ab.log). The inverse's triangular solves unroll only at
// n <= kFixedSolveN, past which their unrolled form ran 0.90-0.94x (complex64 n = 6..8, float32 n = 8).
constexpr int kFixedN = 16;
constexpr int kFixedSolveN = 4;
template <int N = 1, typename Fn>
void with_fixed_n(int64_t n, Fn&& fn) {
  if constexpr (N > kFixedN) {
    fn(std::integral_constant<int, 0>{});
  } else {
    if (n == N) return fn(std::integral_constant<int, N>{});
    with_fixed_n<N + 1>(n, std::forward<Fn>(fn));
  }
}

int64_t grain(int64_t n) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, n * n * n)); }

// Factorizes `lu` (contiguous, already holding A) in place.
void lu_inplace_cpu(at::Tensor& lu, at::Tensor& pivots, at::Tensor& info) {
  const int64_t n = lu.size(-1), batch = lu::batch_count(lu);
  if (batch == 0 || n == 0) return;
  init_parallel_thread();
  AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES(lu.scalar_type(), "lu_factor_cpu", [&] {
    scalar_t* a = lu.data_ptr<scalar_t>();
    int32_t* piv = pivots.data_ptr<int32_t>();
    int32_t* inf = info.data_ptr<int32_t>();
    with_fixed_n(n, [&](auto fixed) {
      constexpr int N = decltype(fixed)::value;
      at::parallel_for(0, batch, grain(n), [&](int64_t lo, int64_t hi) {
        for (int64_t b = lo; b < hi; ++b) inf[b] = getrf<scalar_t, N>(a + b * n * n, n, piv + b * n);
      });
    });
  });
}

// Inverts `x` (contiguous, already holding A) in place.
void inverse_inplace_cpu(at::Tensor& x, at::Tensor& info) {
  const int64_t n = x.size(-1), batch = lu::batch_count(x);
  if (batch == 0 || n == 0) return;
  init_parallel_thread();
  AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES(x.scalar_type(), "batched_inverse_cpu", [&] {
    scalar_t* a = x.data_ptr<scalar_t>();
    int32_t* inf = info.data_ptr<int32_t>();
    // A slot of LU and pivots for each task of the loop, allocated (from PyTorch's CPU allocator, so its profiler
    // sees them) before the first matrix is written: a task that ran out of memory mid-loop would leave the batch
    // partly inverted. parallel_for runs at most min(threads, ceil(batch / grain)) tasks, numbered from 0, so a single
    // large matrix takes one slot, not one per thread. Inside a parallel region the loop runs inline, as task 0.
    const int64_t g = grain(n);
    const int64_t tasks = std::min<int64_t>(at::get_num_threads(), (batch + g - 1) / g);
    const int64_t slots = at::in_parallel_region() ? 1 : std::max<int64_t>(1, tasks);
    at::Tensor lu_buf = at::empty({slots * n * n}, x.options());
    at::Tensor piv_buf = at::empty({slots * n}, x.options().dtype(at::kInt));
    scalar_t* const lu_ws = lu_buf.data_ptr<scalar_t>();
    int32_t* const piv_ws = piv_buf.data_ptr<int32_t>();
    with_fixed_n(n, [&](auto fixed) {
      constexpr int N = decltype(fixed)::value;
      at::parallel_for(0, batch, g, [&](int64_t lo, int64_t hi) {
        const int64_t slot = at::in_parallel_region() && slots > 1 ? at::get_thread_num() : 0;
        TORCH_INTERNAL_ASSERT(slot >= 0 && slot < slots, "batched_inverse: thread ", slot, " of ", slots);
        scalar_t* lu = lu_ws + slot * n * n;
        int32_t* piv = piv_ws + slot * n;
        for (int64_t b = lo; b < hi; ++b) {
          scalar_t* m = a + b * n * n;
          std::copy(m, m + n * n, lu);
          inf[b] = getrf<scalar_t, N>(lu, n, piv);
          getri<scalar_t, (N <= kFixedSolveN ? N : 0)>(lu, piv, n, m);
        }
      });
    });
  });
}

std::vector<int64_t> batch_shape(const at::Tensor& A) { return A.sizes().slice(0, A.dim() - 2).vec(); }

at::Tensor new_info(const at::Tensor& A) {
  return at::zeros(batch_shape(A), A.options().dtype(at::kInt));
}
at::Tensor new_pivots(const at::Tensor& A) {
  auto s = batch_shape(A);
  s.push_back(A.size(-1));
  return at::empty(s, A.options().dtype(at::kInt));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_factor_ex_cpu(const at::Tensor& A, bool check_errors) {
  lu::check_input(A, "lu_factor_ex", /*inplace=*/false);
  at::Tensor LU = lu::copy_of_values(A);  // contiguous, conj/neg bits resolved
  at::Tensor pivots = new_pivots(A), info = new_info(A);
  lu_inplace_cpu(LU, pivots, info);
  if (check_errors) lu::check_info(info, "inplace.lu_factor_ex", A.dim() == 2);
  return {LU, pivots, info};
}

at::Tensor lu_factor__cpu(at::Tensor& A) {
  lu::check_input(A, "lu_factor_", /*inplace=*/true);
  at::Tensor pivots = new_pivots(A), info = new_info(A);
  lu::on_dense_storage(A, /*transposes=*/false, [&](at::Tensor& D) { lu_inplace_cpu(D, pivots, info); });
  return pivots;
}

std::tuple<at::Tensor, at::Tensor> batched_inverse_ex_cpu(const at::Tensor& A, bool check_errors) {
  lu::check_input(A, "batched_inverse_ex", /*inplace=*/false);
  at::Tensor X = lu::copy_of_values(A);
  at::Tensor info = new_info(A);
  inverse_inplace_cpu(X, info);
  if (check_errors) lu::check_info(info, "inplace.batched_inverse_ex", A.dim() == 2);
  return {X, info};
}

at::Tensor batched_inverse_cpu(const at::Tensor& A) {
  lu::check_input(A, "batched_inverse", /*inplace=*/false);
  return std::get<0>(batched_inverse_ex_cpu(A, /*check_errors=*/false));
}

void inverse_data_cpu(at::Tensor& A) {
  // Conjugate / negative views arrive as they are (lu.cpp): inverting the storage inverts the view.
  lu::check_input(A, "inverse_", /*inplace=*/true, /*math_bits=*/false);
  at::Tensor info = new_info(A);
  lu::on_dense_storage(A, /*transposes=*/true, [&](at::Tensor& D) { inverse_inplace_cpu(D, info); });
}

at::Tensor inverse_backward_cpu(const at::Tensor& X, const at::Tensor& grad) {
  lu::check_backward_inputs(X, grad);
  return lu::inverse_backward_reference(X, grad);
}

}  // namespace

TORCH_LIBRARY_IMPL(inplace, CPU, m) {
  m.impl("_inverse_backward", &inverse_backward_cpu);
  m.impl("lu_factor_ex", &lu_factor_ex_cpu);
  m.impl("lu_factor_", &lu_factor__cpu);
  m.impl("batched_inverse_ex", &batched_inverse_ex_cpu);
  m.impl("batched_inverse", &batched_inverse_cpu);
  m.impl("_inverse_data_", &inverse_data_cpu);
}

}  // namespace torch_inplace
