// The small batched LU and inverse through the public C++ API (csrc/torch_inplace.h, i.e. the dispatcher), as a
// LibTorch program calls them: on CPU, and on CUDA where this LibTorch sees a GPU (a build with
// -DTORCH_INPLACE_WITH_CUDA=ON on a GPU machine; skipped elsewhere). Results are checked against ATen's linalg
// (reconstruction, residuals, gradients), refusals leave the input untouched, singular input sets info.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <torch_inplace/torch_inplace.h>  // one of the two include forms users have (test_ops.cpp has the other)

namespace {

const std::vector<at::ScalarType> kDtypes = {at::kFloat, at::kDouble, at::kComplexFloat, at::kComplexDouble};
// Every kernel family: register kernels (n <= 32, one and several rows a lane), shared memory (32 < n <= 64), and
// the torch.linalg delegation past 64.
const std::vector<int64_t> kSizes = {1, 2, 3, 5, 8, 13, 16, 17, 24, 32, 33, 48, 64, 70};

std::vector<at::Device> devices() {
  std::vector<at::Device> d = {at::Device(at::kCPU)};
  if (at::hasCUDA()) d.emplace_back(at::kCUDA, 0);
  return d;
}

double tol(at::ScalarType dtype, int64_t n) {
  const bool single = dtype == at::kFloat || dtype == at::kComplexFloat;
  return (single ? 2e-4 : 1e-10) * static_cast<double>(n < 8 ? 8 : n);
}

std::string desc(at::Device dev, at::ScalarType dtype, int64_t n) {
  std::ostringstream os;
  os << dev << " " << dtype << " n=" << n;
  return os.str();
}

// Well conditioned, with off-diagonal entries large enough that partial pivoting swaps rows.
at::Tensor well_conditioned(std::vector<int64_t> batch, int64_t n, at::ScalarType dtype, at::Device dev) {
  batch.push_back(n);
  batch.push_back(n);
  at::Tensor A = at::randn(batch, at::TensorOptions().dtype(dtype));
  A = A + 0.5 * static_cast<double>(n) * at::eye(n, at::TensorOptions().dtype(dtype));
  return A.to(dev).contiguous();
}

double rel_max(const at::Tensor& got, const at::Tensor& want) {
  const double scale = std::max(1.0, want.abs().max().item<double>());
  return (got - want).abs().max().item<double>() / scale;
}

TEST(LinalgOps, LuFactorReconstructsA) {
  at::manual_seed(0);
  for (const at::Device dev : devices())
    for (at::ScalarType dtype : kDtypes)
      for (int64_t n : kSizes) {
        const std::string what = desc(dev, dtype, n);
        const at::Tensor A = well_conditioned({3, 2}, n, dtype, dev);
        auto [LU, pivots, info] = torch_inplace::lu_factor_ex(A);
        ASSERT_EQ(LU.sizes(), A.sizes()) << what;
        ASSERT_EQ(pivots.sizes(), (std::vector<int64_t>{3, 2, n})) << what;
        EXPECT_EQ(pivots.scalar_type(), at::kInt) << what;
        EXPECT_EQ(info.sizes(), (std::vector<int64_t>{3, 2})) << what;
        EXPECT_EQ(LU.device(), dev) << what;
        EXPECT_EQ(info.cpu().count_nonzero().item<int64_t>(), 0) << what;
        // 1-based LAPACK pivots: row i is swapped with a row at or below it.
        const at::Tensor rows = at::arange(1, n + 1, pivots.options());
        EXPECT_TRUE((pivots >= rows).all().item<bool>() && (pivots <= n).all().item<bool>()) << what;
        auto [P, L, U] = at::lu_unpack(LU, pivots);
        EXPECT_LT(rel_max(at::matmul(P, at::matmul(L, U)), A), tol(dtype, n)) << what;
        // LAPACK's factorization (ATen's on the CPU) on these inputs, which have no near ties among the pivot
        // candidates: the pivots of i?amax, |re| + |im| for complex. (ATen's CUDA backend picks other complex pivots.)
        auto [LU_ref, piv_ref] = at::linalg_lu_factor(A.cpu());
        EXPECT_TRUE(at::equal(pivots.cpu(), piv_ref)) << what;
        EXPECT_LT(rel_max(LU.cpu(), LU_ref), tol(dtype, n)) << what;
        // lu_factor drops info; lu_factor_ writes LU into A and returns the pivots.
        auto [LU2, piv2] = torch_inplace::lu_factor(A);
        EXPECT_TRUE(at::equal(LU2, LU) && at::equal(piv2, pivots)) << what;
        at::Tensor B = A.clone();
        const void* ptr = B.data_ptr();
        const at::Tensor piv3 = torch_inplace::lu_factor_(B);
        EXPECT_EQ(B.data_ptr(), ptr) << what;
        EXPECT_TRUE(at::equal(B, LU) && at::equal(piv3, pivots)) << what;
      }
}

TEST(LinalgOps, InverseResidual) {
  at::manual_seed(1);
  for (const at::Device dev : devices())
    for (at::ScalarType dtype : kDtypes)
      for (int64_t n : kSizes) {
        const std::string what = desc(dev, dtype, n);
        const at::Tensor A = well_conditioned({5}, n, dtype, dev);
        const at::Tensor X = torch_inplace::batched_inverse(A);
        ASSERT_EQ(X.sizes(), A.sizes()) << what;
        const at::Tensor I = at::eye(n, A.options()).expand_as(A);
        EXPECT_LT(rel_max(at::matmul(A, X), I), tol(dtype, n)) << what;
        EXPECT_LT(rel_max(X, at::linalg_inv(A)), 10 * tol(dtype, n)) << what;
        auto [X2, info] = torch_inplace::batched_inverse_ex(A, /*check_errors=*/true);
        EXPECT_TRUE(at::equal(X2, X)) << what;
        EXPECT_EQ(info.cpu().count_nonzero().item<int64_t>(), 0) << what;
        at::Tensor B = A.clone();
        const void* ptr = B.data_ptr();
        at::Tensor& out = torch_inplace::inverse_(B);
        EXPECT_TRUE(out.is_same(B)) << what;
        EXPECT_EQ(B.data_ptr(), ptr) << what;
        EXPECT_LT(rel_max(B, X), tol(dtype, n)) << what;
      }
}

TEST(LinalgOps, EmptyBatchesAndSeveralBatchDims) {
  for (const at::Device dev : devices()) {
    const at::Tensor empty = at::empty({0, 4, 4}, at::TensorOptions().dtype(at::kFloat).device(dev));
    auto [LU, pivots, info] = torch_inplace::lu_factor_ex(empty);
    EXPECT_EQ(LU.sizes(), empty.sizes());
    EXPECT_EQ(pivots.sizes(), (std::vector<int64_t>{0, 4}));
    EXPECT_EQ(torch_inplace::batched_inverse(empty).sizes(), empty.sizes());
    const at::Tensor A = well_conditioned({2, 3, 4}, 6, at::kDouble, dev);
    EXPECT_LT(rel_max(torch_inplace::batched_inverse(A), at::linalg_inv(A)), 1e-10) << dev;
  }
}

TEST(LinalgOps, SingularSetsInfo) {
  for (const at::Device dev : devices())
    for (at::ScalarType dtype : kDtypes) {
      const int64_t n = 6;
      at::Tensor A = well_conditioned({4}, n, dtype, dev);
      A.select(0, 1).select(1, 2).zero_();  // matrix 1: column 2 is zero, so U(2, 2) == 0
      auto [LU, pivots, info] = torch_inplace::lu_factor_ex(A);
      const at::Tensor got = info.cpu();
      EXPECT_EQ(got[0].item<int>(), 0) << dev << " " << dtype;
      EXPECT_EQ(got[1].item<int>(), 3) << dev << " " << dtype;  // 1-based, as LAPACK's getrf
      auto [X, inv_info] = torch_inplace::batched_inverse_ex(A);
      EXPECT_GT(inv_info.cpu()[1].item<int>(), 0) << dev << " " << dtype;
      EXPECT_EQ(inv_info.cpu()[0].item<int>(), 0) << dev << " " << dtype;
      EXPECT_THROW(torch_inplace::batched_inverse_ex(A, /*check_errors=*/true), c10::Error) << dev;
      EXPECT_THROW(torch_inplace::lu_factor_ex(A, /*check_errors=*/true), c10::Error) << dev;
    }
}

// A refused call names the op and what arrived, and leaves its input as it was.
void expect_refused(const std::function<void(at::Tensor&)>& call, at::Tensor A, const std::string& op,
                    const std::string& needle) {
  const at::Tensor before = A.clone();
  const std::vector<int64_t> sizes = A.sizes().vec();
  try {
    call(A);
    ADD_FAILURE() << op << ": expected a refusal (" << needle << ") for " << A.sizes() << " " << A.scalar_type();
  } catch (const c10::Error& e) {
    const std::string msg = e.what_without_backtrace();
    EXPECT_NE(msg.find(op + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
  EXPECT_EQ(A.sizes().vec(), sizes) << op;
  EXPECT_TRUE(at::equal(A, before)) << op;
}

TEST(LinalgOps, Refusals) {
  for (const at::Device dev : devices()) {
    const auto opts = at::TensorOptions().device(dev);
    auto inv = [](at::Tensor& A) { torch_inplace::inverse_(A); };
    auto luf = [](at::Tensor& A) { torch_inplace::lu_factor_(A); };
    auto bi = [](at::Tensor& A) { torch_inplace::batched_inverse(A); };
    expect_refused(inv, at::ones({3, 4, 4}, opts.dtype(at::kInt)), "inverse_", "expected dtype float32");
    expect_refused(luf, at::ones({3, 4, 4}, opts.dtype(at::kHalf)), "lu_factor_", "expected dtype float32");
    expect_refused(bi, at::randn({2, 3, 4}, opts), "batched_inverse", "expected square matrices");
    expect_refused(bi, at::randn({4}, opts), "batched_inverse", "at least 2 dims");
    expect_refused(inv, well_conditioned({1}, 4, at::kFloat, dev).expand({3, 4, 4}), "inverse_", "do not overlap");
    expect_refused(luf, well_conditioned({1}, 4, at::kFloat, dev).expand({3, 4, 4}), "lu_factor_", "do not overlap");
  }
}

// The in-place ops on views that are not contiguous: inverse_ of a transposed view in its own storage, other views
// (every other matrix) through a copy written back; the matrices the view leaves out stay as they were.
TEST(LinalgOps, InPlaceOpsTakeAnyStrides) {
  at::manual_seed(3);
  for (const at::Device dev : devices())
    for (at::ScalarType dtype : kDtypes)
      for (int64_t n : {3, 17, 40, 70}) {
        const std::string what = desc(dev, dtype, n);
        const at::Tensor B = well_conditioned({4}, n, dtype, dev);
        at::Tensor C = B.clone();
        at::Tensor T = C.mT();
        const void* ptr = T.data_ptr();
        torch_inplace::inverse_(T);
        EXPECT_EQ(T.data_ptr(), ptr) << what;
        EXPECT_LT(rel_max(T, at::linalg_inv(B.mT())), tol(dtype, n)) << what;

        C = B.clone();
        at::Tensor S = C.slice(0, 0, 4, 2);
        torch_inplace::inverse_(S);
        EXPECT_LT(rel_max(S, at::linalg_inv(B.slice(0, 0, 4, 2))), tol(dtype, n)) << what;
        EXPECT_TRUE(at::equal(C.slice(0, 1, 4, 2), B.slice(0, 1, 4, 2))) << what;

        C = B.clone();
        S = C.slice(0, 1, 4, 2).mT();
        const at::Tensor pivots = torch_inplace::lu_factor_(S);
        auto [LU, piv] = torch_inplace::lu_factor(B.slice(0, 1, 4, 2).mT());
        EXPECT_TRUE(at::equal(pivots, piv)) << what;
        EXPECT_LT(rel_max(S, LU), tol(dtype, n)) << what;
        EXPECT_TRUE(at::equal(C.slice(0, 0, 4, 2), B.slice(0, 0, 4, 2))) << what;
      }
}

// Autograd from C++: the gradients of batched_inverse and lu_factor are ATen's linalg ones.
TEST(LinalgOps, Gradients) {
  at::manual_seed(2);
  for (const at::Device dev : devices())
    for (at::ScalarType dtype : {at::kDouble, at::kComplexDouble})
      for (int64_t n : {3, 17, 40}) {
        const std::string what = desc(dev, dtype, n);
        const at::Tensor A0 = well_conditioned({2}, n, dtype, dev);
        const at::Tensor G = at::randn(A0.sizes(), A0.options());
        auto grad_of = [&](const std::function<at::Tensor(const at::Tensor&)>& f) {
          at::Tensor A = A0.detach().clone().set_requires_grad(true);
          at::Tensor loss = at::real((f(A) * G.conj()).sum());
          loss.backward();
          return A.grad();
        };
        const at::Tensor g_inv = grad_of([](const at::Tensor& A) { return torch_inplace::batched_inverse(A); });
        const at::Tensor g_inv_ref = grad_of([](const at::Tensor& A) { return at::linalg_inv(A); });
        EXPECT_LT(rel_max(g_inv, g_inv_ref), 1e-9) << what;
        const at::Tensor g_lu = grad_of([](const at::Tensor& A) { return std::get<0>(torch_inplace::lu_factor(A)); });
        const at::Tensor g_lu_ref = grad_of([](const at::Tensor& A) { return std::get<0>(at::linalg_lu_factor(A)); });
        EXPECT_LT(rel_max(g_lu, g_lu_ref), 1e-9) << what;
        // inverse_ on a non-leaf records the same gradient.
        const at::Tensor g_inplace = grad_of([](const at::Tensor& A) {
          at::Tensor B = A * 1;
          return torch_inplace::inverse_(B);
        });
        EXPECT_LT(rel_max(g_inplace, g_inv_ref), 1e-9) << what;
      }
}

// Autocast on for one device type with one dtype, as torch.autocast sets it, restored on exit.
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType type, at::ScalarType dtype)
      : type_(type), was_enabled_(at::autocast::is_autocast_enabled(type)),
        was_dtype_(at::autocast::get_autocast_dtype(type)) {
    at::autocast::set_autocast_enabled(type_, true);
    at::autocast::set_autocast_dtype(type_, dtype);
  }
  ~AutocastScope() {
    at::autocast::set_autocast_enabled(type_, was_enabled_);
    at::autocast::set_autocast_dtype(type_, was_dtype_);
    at::autocast::clear_cache();
  }

 private:
  c10::DeviceType type_;
  bool was_enabled_;
  at::ScalarType was_dtype_;
};

// Inside autocast, a half-precision matrix is inverted / factored in float32: the same results as on the float32
// copy outside autocast; outside autocast it is refused. (tests/test_autocast.py has more.)
TEST(LinalgOps, AutocastComputesHalfPrecisionInFloat32) {
  for (const at::Device dev : devices()) {
    const at::Tensor A32 = well_conditioned({3}, 6, at::kFloat, dev);
    for (at::ScalarType half : {at::kHalf, at::kBFloat16}) {
      const std::string what = desc(dev, half, 6);
      const at::Tensor A = A32.to(half);
      const at::Tensor X_ref = torch_inplace::batched_inverse(A.to(at::kFloat));
      const at::Tensor LU_ref = std::get<0>(torch_inplace::lu_factor(A.to(at::kFloat)));
      at::Tensor X, LU;
      {
        const AutocastScope autocast(dev.type(), half);
        X = torch_inplace::batched_inverse(A);
        LU = std::get<0>(torch_inplace::lu_factor(A));
      }
      EXPECT_EQ(X.scalar_type(), at::kFloat) << what;
      EXPECT_EQ(LU.scalar_type(), at::kFloat) << what;
      EXPECT_TRUE(at::equal(X, X_ref)) << what;
      EXPECT_TRUE(at::equal(LU, LU_ref)) << what;
      EXPECT_THROW(torch_inplace::batched_inverse(A), c10::Error) << what;
    }
  }
}

}  // namespace
