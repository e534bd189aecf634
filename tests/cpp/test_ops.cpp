// The ops through LibTorch (the public C++ API of csrc/torch_inplace.h, i.e. through the dispatcher) on CPU, and on
// CUDA where this LibTorch sees a GPU (skipped elsewhere): results against t.transpose(-2, -1).contiguous(), and
// refusals that leave the tensor untouched.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "torch_inplace.h"

namespace {

at::Tensor make(c10::IntArrayRef shape, at::ScalarType dtype) {
  at::Tensor t;
  if (dtype == at::kBool) {
    t = at::randint(0, 2, shape, at::kLong).to(at::kBool);
  } else if (at::isComplexType(dtype) || at::isFloatingType(dtype)) {
    t = at::randn(shape, at::TensorOptions().dtype(dtype));
  } else {
    t = at::randint(-100, 100, shape, at::kLong).to(dtype);
    if (dtype == at::kByte) t = t.abs();
  }
  return t.contiguous().clone();  // owns its whole storage, not a view
}

std::string desc(c10::IntArrayRef shape, at::ScalarType dtype, const std::string& algo = "auto") {
  std::ostringstream os;
  os << shape << " " << dtype << " algorithm=" << algo;
  return os.str();
}

void expect_transposed(at::Tensor t, const std::string& algo = "auto") {
  const std::string what = desc(t.sizes(), t.scalar_type(), algo);
  // clone, not contiguous(): for m == 1 or n == 1 the transpose view is already contiguous and would alias t
  const at::Tensor want = t.transpose(-2, -1).clone(at::MemoryFormat::Contiguous);
  const void* ptr = t.data_ptr();
  at::Tensor& out = torch_inplace::transpose_(t, algo);
  EXPECT_TRUE(out.is_same(t)) << what;
  EXPECT_EQ(t.sizes(), want.sizes()) << what;
  EXPECT_TRUE(t.is_contiguous()) << what;
  EXPECT_EQ(t.data_ptr(), ptr) << what << ": not in place";
  EXPECT_TRUE(at::equal(t, want)) << what;
}

TEST(Ops, Registered) {
  for (const char* name : {"inplace::transpose_", "inplace::aos_to_soa_", "inplace::soa_to_aos_",
                           "inplace::_transpose_data_"}) {
    EXPECT_TRUE(c10::Dispatcher::singleton().findSchema({name, ""}).has_value()) << name;
  }
}

TEST(Ops, TransposeShapesAndDtypes) {
  const std::vector<std::vector<int64_t>> shapes = {
      {2, 3}, {3, 2}, {1, 7}, {7, 1}, {1, 1}, {0, 5}, {5, 0}, {2, 0, 3}, {13, 17}, {64, 64}, {100, 3}, {3, 100},
      {4, 37, 53}, {2, 3, 40, 24}, {300, 500}, {1000, 7}, {6, 4096}};
  const std::vector<at::ScalarType> dtypes = {at::kBool,  at::kByte,     at::kChar,   at::kShort,
                                              at::kInt,   at::kLong,     at::kHalf,   at::kBFloat16,
                                              at::kFloat, at::kDouble,   at::kComplexFloat, at::kComplexDouble};
  for (const auto& s : shapes)
    for (at::ScalarType d : dtypes) expect_transposed(make(s, d));
}

TEST(Ops, EveryShapeUpTo20) {
  for (int64_t m = 1; m <= 20; ++m)
    for (int64_t n = 1; n <= 20; ++n) {
      expect_transposed(make({m, n}, at::kFloat));
      expect_transposed(make({2, m, n}, at::kComplexDouble));
    }
}

TEST(Ops, ForcedAlgorithms) {
  expect_transposed(make({300, 500}, at::kFloat), "c2r");
  expect_transposed(make({300, 500}, at::kFloat), "r2c");
  expect_transposed(make({500, 300}, at::kDouble), "c2r");
  expect_transposed(make({500, 300}, at::kDouble), "r2c");
  expect_transposed(make({500, 300}, at::kDouble), "tiled32");
  expect_transposed(make({4, 96, 160}, at::kComplexDouble), "tiled32");
  expect_transposed(make({3, 2000}, at::kShort), "skinny");
  expect_transposed(make({2000, 5}, at::kShort), "skinny");
  expect_transposed(make({3, 129, 129}, at::kByte), "square");
}

TEST(Ops, AosSoaRoundTrip) {
  at::Tensor t = make({2, 1000, 3}, at::kFloat);
  const at::Tensor orig = t.clone();
  const void* ptr = t.data_ptr();
  torch_inplace::aos_to_soa_(t);
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 3, 1000}));
  EXPECT_TRUE(at::equal(t, orig.transpose(-2, -1).contiguous()));
  torch_inplace::soa_to_aos_(t);
  EXPECT_EQ(t.sizes(), orig.sizes());
  EXPECT_EQ(t.data_ptr(), ptr);
  EXPECT_TRUE(at::equal(t, orig));
}

// A refused call throws an error naming the op and leaves the tensor (shape, strides, bytes) as it was.
void expect_refused(at::Tensor t, const std::string& needle, const std::string& algo = "auto") {
  const at::Tensor before = t.clone();
  const std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  const std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  try {
    torch_inplace::transpose_(t, algo);
    ADD_FAILURE() << "expected a refusal (" << needle << ") for " << t.sizes();
  } catch (const c10::Error& e) {
    const std::string msg = e.what_without_backtrace();
    EXPECT_NE(msg.find("transpose_:"), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
  EXPECT_EQ(t.sizes().vec(), sizes);
  EXPECT_EQ(t.strides().vec(), strides);
  EXPECT_TRUE(at::equal(t, before));
}

TEST(Ops, Refusals) {
  // Non-contiguous.
  expect_refused(make({5, 7}, at::kFloat).t(), "contiguous");
  // A view at an offset into a larger tensor (its base must not change either).
  at::Tensor base = make({6, 5}, at::kInt);
  const at::Tensor base_before = base.clone();
  expect_refused(base.narrow(0, 1, 3), "storage offset");
  EXPECT_TRUE(at::equal(base, base_before));
  // A view at offset 0 that does not cover its storage.
  expect_refused(base.narrow(0, 0, 3), "owns its whole storage");
  EXPECT_TRUE(at::equal(base, base_before));
  // Fewer than 2 dims.
  expect_refused(make({12}, at::kFloat), "at least 2 dims");
  // Storage shared with another live tensor.
  at::Tensor owner = make({4, 6}, at::kFloat);
  at::Tensor alias = owner.view({24});
  expect_refused(owner, "shares");
  // An unknown algorithm.
  expect_refused(make({4, 6}, at::kFloat), "algorithm", "fastest");
  // An algorithm that cannot transpose this shape.
  expect_refused(make({4, 6}, at::kFloat), "square", "square");
  // A view of a tensor the caller still holds (no Python object: its TensorImpl's holders tell); the base unchanged.
  at::Tensor held = make({4, 6}, at::kFloat);
  const at::Tensor held_before = held.clone();
  expect_refused(held.view({6, 4}), "got a view of a live tensor");
  EXPECT_TRUE(at::equal(held, held_before));
  EXPECT_EQ(held.sizes(), c10::IntArrayRef({4, 6}));
}

TEST(Ops, ViewWhoseBaseOnlyItHolds) {
  // The base lives only through the view (a temporary): nothing else can see the bytes move.
  at::Tensor v = make({24}, at::kFloat).view({4, 6});
  ASSERT_TRUE(v.is_view());
  const at::Tensor want = v.t().clone(at::MemoryFormat::Contiguous);
  torch_inplace::transpose_(v);
  EXPECT_TRUE(at::equal(v, want));
}

TEST(Ops, LeafRefusalsNameTheOp) {
  at::Tensor leaf = at::randn({4, 6}, at::kDouble).set_requires_grad(true);
  try {
    torch_inplace::transpose_(leaf);
    ADD_FAILURE() << "a leaf that requires grad was transposed";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("transpose_: a leaf Variable that requires grad"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(leaf.sizes(), c10::IntArrayRef({4, 6}));
}

TEST(Ops, EmptyTransposableOptions) {
  at::Tensor t = torch_inplace::empty_transposable({3, 4}, at::TensorOptions().dtype(at::kDouble).requires_grad(true));
  EXPECT_TRUE(t.requires_grad());
  EXPECT_EQ(t.scalar_type(), at::kDouble);
  for (const at::TensorOptions& bad : {at::TensorOptions().layout(at::kSparse), at::TensorOptions().pinned_memory(true),
                                       at::TensorOptions().memory_format(at::MemoryFormat::ChannelsLast)}) {
    EXPECT_THROW(torch_inplace::empty_transposable({3, 4}, bad), c10::Error);
  }
}

TEST(Ops, PlanAndWorkspaceLimit) {
  using torch_inplace::workspace_limit;
  const torch_inplace::TransposePlan p = torch_inplace::plan_transpose({300, 200}, at::kFloat);
  EXPECT_FALSE(p.algorithm.empty());
  EXPECT_NE(p.explanation.find(p.algorithm), std::string::npos) << p.explanation;
  ASSERT_GT(p.scratch_bytes, 16);
  EXPECT_EQ(torch_inplace::plan_transpose({300, 200}, at::kDouble, at::Device(at::kCPU), "r2c").algorithm, "r2c");
  EXPECT_THROW(torch_inplace::plan_transpose({30, 20}, at::kFloat, at::Device(at::kCPU), "square"), c10::Error);
  EXPECT_THROW(torch_inplace::plan_transpose({30}, at::kFloat), c10::Error);
  try {  // the C++ function names itself (Python's torch_inplace.plan names the Python function)
    torch_inplace::plan_transpose({30, 20}, at::kFloat, at::Device(at::kCPU), "bogus");
    ADD_FAILURE() << "an unknown algorithm was accepted";
  } catch (const c10::Error& e) {
    EXPECT_EQ(e.msg().rfind("torch_inplace::plan_transpose: ", 0), 0u) << e.msg();
  }
  ASSERT_EQ(workspace_limit(), -1);
  {
    torch_inplace::WorkspaceLimitGuard guard(p.scratch_bytes);
    EXPECT_EQ(workspace_limit(), p.scratch_bytes);
    torch_inplace::reset_workspace_stats();
    expect_transposed(make({300, 200}, at::kFloat));
    const torch_inplace::WorkspaceStats st = torch_inplace::workspace_stats();
    EXPECT_EQ(st.calls, 1);
    EXPECT_EQ(st.last_bytes, p.scratch_bytes);
    EXPECT_EQ(st.peak_bytes, p.scratch_bytes);
    EXPECT_EQ(st.total_bytes, p.scratch_bytes);
  }
  EXPECT_EQ(workspace_limit(), -1);
  {
    torch_inplace::WorkspaceLimitGuard guard(16);
    expect_refused(make({300, 200}, at::kFloat), "no algorithm fits the workspace limit of 16 B");
    EXPECT_THROW(torch_inplace::plan_transpose({300, 200}, at::kFloat), c10::Error);
    expect_transposed(make({50, 50}, at::kFloat));  // squares need no scratch
  }
  EXPECT_EQ(workspace_limit(), -1);
  EXPECT_THROW(torch_inplace::set_workspace_limit(-5), c10::Error);
  EXPECT_THROW(torch_inplace::WorkspaceLimitGuard bad(-5), c10::Error);
  EXPECT_EQ(workspace_limit(), -1);
  // A guard is the calling thread's, over the process-wide limit; another thread sees only the process-wide one.
  torch_inplace::set_workspace_limit(4096);
  {
    torch_inplace::WorkspaceLimitGuard guard(100);
    EXPECT_EQ(workspace_limit(), 100);
    int64_t other = 0;
    std::thread([&] { other = workspace_limit(); }).join();
    EXPECT_EQ(other, 4096);
    {
      torch_inplace::WorkspaceLimitGuard none(-1);
      EXPECT_EQ(workspace_limit(), -1);
    }
    EXPECT_EQ(workspace_limit(), 100);
  }
  EXPECT_EQ(workspace_limit(), 4096);
  torch_inplace::set_workspace_limit(-1);
  // Guards may end in any order (Python's generators and asyncio tasks end their scopes so): the thread's latest guard
  // still alive applies, and none outlives its end.
  {
    auto a = std::make_unique<torch_inplace::WorkspaceLimitGuard>(100);
    auto b = std::make_unique<torch_inplace::WorkspaceLimitGuard>(200);
    EXPECT_EQ(workspace_limit(), 200);
    a.reset();
    EXPECT_EQ(workspace_limit(), 200);
    b.reset();
    EXPECT_EQ(workspace_limit(), -1);
  }
  EXPECT_FALSE(torch_inplace::detail::exit_workspace_limit_scope(-7));  // no such scope on this thread
  torch_inplace::reset_workspace_stats();
  EXPECT_EQ(torch_inplace::workspace_stats().calls, 0);
}

// The GPU engine from C++ (a build with -DTORCH_INPLACE_WITH_CUDA=ON on a GPU machine): the planner's choices on
// shapes of every family, batches, forced algorithms, AoS <-> SoA, the padded factory, the on-device refusals.
TEST(Ops, Cuda) {
  if (!at::hasCUDA()) GTEST_SKIP() << "this LibTorch sees no CUDA device";
  ASSERT_TRUE(torch_inplace::built_with_gpu());
  const torch_inplace::TransposePlan p =
      torch_inplace::plan_transpose({30011, 20011}, at::kFloat, at::Device(at::kCUDA, 0));
  EXPECT_FALSE(p.algorithm.empty());
  EXPECT_LE(p.scratch_bytes, 30011LL * 20011 * 4 / 1000 + (1 << 20)) << p.explanation;  // issue 3's memory bound
  auto cuda = [](at::Tensor t) { return t.to(at::Device(at::kCUDA, 0)).clone(); };
  const std::vector<std::vector<int64_t>> shapes = {
      {1, 7}, {7, 1}, {2, 3}, {13, 17}, {64, 64}, {512, 512}, {100, 3}, {3, 100000}, {100000, 5}, {4, 37, 53},
      {2, 3, 40, 24}, {1009, 2003}, {3000, 2000}, {6007, 13}, {16, 65536}};
  for (const auto& s : shapes)
    for (at::ScalarType d : {at::kByte, at::kHalf, at::kFloat, at::kDouble, at::kComplexDouble})
      expect_transposed(cuda(make(s, d)));
  // The algorithms that take any shape of their kind (the tiled sequences, the cut and the on-chip kernel have
  // shape conditions of their own: tests/test_transpose_gpu.py forces those).
  const std::vector<std::pair<std::vector<int64_t>, std::string>> forced = {
      {{1200, 1200}, "square"}, {{3, 1200, 1200}, "square"}, {{1500, 900}, "c2r"},   {{900, 1500}, "r2c"},
      {{1009, 2003}, "c2r"},    {{1009, 2003}, "r2c"},       {{200000, 7}, "skinny"}, {{7, 200000}, "skinny"}};
  for (const auto& [shape, algo] : forced)
    for (at::ScalarType d : {at::kFloat, at::kDouble}) expect_transposed(cuda(make(shape, d)), algo);
  at::Tensor aos = cuda(make({2, 100000, 3}, at::kFloat));
  const at::Tensor orig = aos.clone();
  torch_inplace::aos_to_soa_(aos);
  EXPECT_TRUE(at::equal(aos, orig.transpose(-2, -1).contiguous()));
  torch_inplace::soa_to_aos_(aos);
  EXPECT_TRUE(at::equal(aos, orig));
  expect_refused(cuda(make({5, 7}, at::kFloat)).t(), "contiguous");
  at::Tensor held = cuda(make({40, 60}, at::kFloat));
  const at::Tensor held_before = held.clone();
  expect_refused(held.view({60, 40}), "got a view of a live tensor");
  EXPECT_TRUE(at::equal(held, held_before));
  // empty_transposable on the GPU: the padded plan may use its slack.
  at::Tensor padded = torch_inplace::empty_transposable({1201, 1103}, at::TensorOptions().device(at::kCUDA, 0));
  padded.copy_(cuda(make({1201, 1103}, at::kFloat)));
  expect_transposed(padded);
}

}  // namespace
