// Schemas and C++ entry points of the transposition ops (namespace `inplace`).
//
// transpose_, aos_to_soa_ and soa_to_aos_ are CompositeImplicitAutograd: each validates, runs the data-only op
// _transpose_data_ (which permutes the bytes of the last two dims and leaves the shape alone), then changes
// the metadata with the built-in as_strided_. That is the form PyTorch's compiler stack understands (custom ops
// may not change an input's shape); eager, TorchScript and LibTorch callers see one op.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/safe_numerics.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <typeinfo>

#include "core/checks.h"
#include "core/workspace.h"
#include "torch_inplace.h"

namespace torch_inplace {

namespace {

// max(x, 1) without a guard on symbolic sizes.
int64_t at_least_one(int64_t x) { return std::max<int64_t>(x, 1); }
c10::SymInt at_least_one(const c10::SymInt& x) { return x.max(c10::SymInt(1)); }

// Row-major strides of `sizes` (int64_t, or SymInt under torch.compile with dynamic shapes).
template <typename T>
std::vector<T> contiguous_strides(c10::ArrayRef<T> sizes) {
  std::vector<T> strides(sizes.size());
  T s = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    strides[i] = s;
    if (i > 0) s = s * at_least_one(sizes[i]);  // no product past the first dim's stride (it could overflow)
  }
  return strides;
}

// The planner's problem for a (..., m, n) shape of `dtype`, after checking the shape; `op` names the caller.
plan::Problem shape_problem(c10::IntArrayRef shape, at::ScalarType dtype, const char* op) {
  TORCH_CHECK(shape.size() >= 2, op, ": expected a shape with at least 2 dims (..., m, n), got ", shape);
  for (int64_t s : shape) TORCH_CHECK(s >= 0, op, ": expected non-negative sizes, got ", shape);
  check_transposable_dtype(dtype, op, "dtype");
  const int64_t es = static_cast<int64_t>(c10::elementSize(dtype));
  plan::Problem p;
  p.rows = shape[shape.size() - 2];
  p.cols = shape[shape.size() - 1];
  p.esize = es;
  // An empty shape has 0 bytes whatever its other sizes (torch.empty(2**62, 0) exists): no overflow to refuse, and
  // a batch too large to count is an empty one to the planner.
  const bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  for (size_t i = 0; i + 2 < shape.size(); ++i) {
    if (c10::mul_overflows(p.batch, shape[i], &p.batch)) p.batch = 0;  // only where empty (checked below)
  }
  int64_t bytes = es;
  for (int64_t s : shape) {
    TORCH_CHECK(empty || !c10::mul_overflows(bytes, s, &bytes), op, ": expected a shape of fewer than 2^63 bytes, got ",
                shape, " of ", dtype);
  }
  return p;
}

// Runs fn (a call of the data op, whose refusals name transpose_: no plan fits the workspace limit, ...) so that
// they name `op`, the op called, instead. Free on success; other exception types (out of memory, ...) pass as they
// are.
template <typename Fn>
void call_naming(const char* op, Fn&& fn) {
  if (std::strcmp(op, "transpose_") == 0) return fn();
  try {
    fn();
  } catch (const c10::Error& e) {
    const std::string data_op_prefix = "transpose_: ";
    const std::string& msg = e.msg();
    if (typeid(e) != typeid(c10::Error) || msg.compare(0, data_op_prefix.size(), data_op_prefix) != 0) throw;
    TORCH_CHECK(false, op, ": ", msg.substr(data_op_prefix.size()));
  }
}

at::Tensor& transpose_impl(at::Tensor& self, const char* op, c10::string_view algorithm) {
  check_transposable(self, op, CheckLevel::kPublic);
  parse_algorithm(std::string(algorithm), op);
  static auto data_op = c10::Dispatcher::singleton()
                            .findSchemaOrThrow("inplace::_transpose_data_", "")
                            .typed<void(at::Tensor&, c10::string_view)>();
  // Sizes may be symbolic under torch.compile(dynamic=True): build the new geometry with SymInts, before the data
  // moves, so that running out of host memory for it cannot leave the data transposed under the old shape.
  const int64_t d = self.dim();
  std::vector<c10::SymInt> sizes(self.sym_sizes().begin(), self.sym_sizes().end());
  std::swap(sizes[d - 1], sizes[d - 2]);
  const std::vector<c10::SymInt> strides = contiguous_strides<c10::SymInt>(sizes);
  call_naming(op, [&] { data_op.call(self, algorithm); });
  self.as_strided__symint(sizes, strides, c10::SymInt(0));
  return self;
}

at::Tensor& transpose_composite(at::Tensor& self, c10::string_view algorithm) {
  return transpose_impl(self, "transpose_", algorithm);
}
at::Tensor& aos_to_soa_composite(at::Tensor& self) { return transpose_impl(self, "aos_to_soa_", "auto"); }
at::Tensor& soa_to_aos_composite(at::Tensor& self) { return transpose_impl(self, "soa_to_aos_", "auto"); }

// `op` names the caller in errors: torch_inplace.plan (Python, through the op) or torch_inplace::plan_transpose (C++).
std::tuple<std::string, int64_t, std::string> plan_transpose_named(c10::IntArrayRef shape, at::ScalarType dtype,
                                                                   c10::Device device, c10::string_view algorithm,
                                                                   const char* op) {
  const plan::Problem p = shape_problem(shape, dtype, op);
  const plan::Algo forced = parse_algorithm(std::string(algorithm), op);
  if (device.is_meta()) {
    // transpose_ on a meta tensor (shape propagation) moves no data: only the shape changes.
    return {"noop", 0, "meta tensors hold no data: transpose_ only changes the shape"};
  }
  const plan::Plan pl = plan_or_throw(p, device, forced, op);
  return {plan::algo_name(pl.algo), pl.scratch_bytes, pl.explain()};
}

std::tuple<std::string, int64_t, std::string> plan_transpose_op(c10::IntArrayRef shape, at::ScalarType dtype,
                                                                c10::Device device, c10::string_view algorithm) {
  return plan_transpose_named(shape, dtype, device, algorithm, "torch_inplace.plan");
}

int64_t workspace_limit_op() { return workspace_limit(); }
void set_workspace_limit_op(int64_t bytes) { set_workspace_limit(bytes); }
int64_t new_workspace_scope_op() { return detail::new_workspace_limit_scope_id(); }
void enter_workspace_limit_op(int64_t bytes, int64_t scope) { detail::enter_workspace_limit_scope_as(bytes, scope); }
// must_exist False: the caller cannot tell whether its entry completed (an asynchronous exception, a KeyboardInterrupt
// say, may have come just before or just after it), so a scope that never opened is no error.
void exit_workspace_limit_op(int64_t scope, bool must_exist) {
  const bool closed = detail::exit_workspace_limit_scope(scope);
  TORCH_CHECK(closed || !must_exist,
              "workspace_limit: expected the context to end on the thread that entered it, once; this thread has no "
              "open context ", scope, " (its limit stays on the thread that entered it until that thread ends)");
}
std::vector<int64_t> workspace_stats_op() {
  const WorkspaceStats s = workspace_stats();
  return {s.last_bytes, s.peak_bytes, s.total_bytes, s.calls};
}
void reset_workspace_stats_op() { reset_workspace_stats(); }
void clear_plan_cache_op() { clear_plan_cache(); }

at::Tensor empty_transposable_op(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                                 std::optional<c10::Device> device) {
  const at::ScalarType st = dtype.value_or(c10::get_default_dtype_as_scalartype());
  const c10::Device dev = device.value_or(c10::Device(c10::kCPU));
  const plan::Problem p = shape_problem(size, st, "empty_transposable");
  const int64_t numel = p.batch * p.rows * p.cols;
  const int64_t slack = dev.is_cpu() ? 0 : plan::padding_slack_bytes(p);
  // One allocation of numel + slack elements' bytes, viewed as the requested shape: the storage carries the
  // slack, and the registry marks it as the tensor's own so transpose_ may use it for padding.
  const int64_t slack_elems = (slack + p.esize - 1) / p.esize;
  at::Tensor flat = at::empty({numel + slack_elems}, at::TensorOptions().dtype(st).device(dev));
  at::Tensor out = at::empty({0}, flat.options());
  out.set_(flat.storage(), 0, size, contiguous_strides<int64_t>(size));
  if (slack_elems > 0) register_transposable_storage(out.storage());  // a storage without slack has nothing to mark
  return out;
}

}  // namespace

at::Tensor& transpose_(at::Tensor& self, c10::string_view algorithm) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::transpose_", "")
                       .typed<at::Tensor&(at::Tensor&, c10::string_view)>();
  return op.call(self, algorithm);
}

at::Tensor& aos_to_soa_(at::Tensor& self) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::aos_to_soa_", "")
                       .typed<at::Tensor&(at::Tensor&)>();
  return op.call(self);
}

at::Tensor& soa_to_aos_(at::Tensor& self) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("inplace::soa_to_aos_", "")
                       .typed<at::Tensor&(at::Tensor&)>();
  return op.call(self);
}

TransposePlan plan_transpose(c10::IntArrayRef shape, at::ScalarType dtype, c10::Device device,
                             c10::string_view algorithm) {
  auto [name, scratch, why] = plan_transpose_named(shape, dtype, device, algorithm, "torch_inplace::plan_transpose");
  return TransposePlan{std::move(name), scratch, std::move(why)};
}

bool built_with_gpu() { return has_gpu_kernels(); }

at::Tensor empty_transposable(c10::IntArrayRef size, at::TensorOptions options) {
  const char* op = "empty_transposable";
  TORCH_CHECK(options.layout() == at::kStrided, op, ": expected a strided layout, got ", options.layout());
  TORCH_CHECK(!options.pinned_memory(), op, ": expected pinned_memory=false (pinned storage with slack is not "
              "supported), got pinned_memory=true");
  TORCH_CHECK(!options.has_memory_format() || *options.memory_format_opt() == at::MemoryFormat::Contiguous, op,
              ": expected the contiguous memory format, got ", *options.memory_format_opt());
  at::Tensor out =
      empty_transposable_op(size, c10::optTypeMetaToScalarType(options.dtype_opt()), options.device_opt());
  if (options.requires_grad()) out.set_requires_grad(true);
  return out;
}

TORCH_LIBRARY_FRAGMENT(inplace, m) {
  m.def("_transpose_data_(Tensor(a!) self, str algorithm='auto') -> ()");
  m.def("transpose_(Tensor(a!) self, *, str algorithm='auto') -> Tensor(a!)");
  m.def("aos_to_soa_(Tensor(a!) self) -> Tensor(a!)");
  m.def("soa_to_aos_(Tensor(a!) self) -> Tensor(a!)");
  m.def("_plan_transpose(int[] shape, ScalarType dtype, Device device, str algorithm='auto') -> (str, int, str)",
        &plan_transpose_op);
  m.def("_built_with_gpu() -> bool", &has_gpu_kernels);
  m.def("_workspace_limit() -> int", &workspace_limit_op);
  m.def("_set_workspace_limit(int bytes) -> ()", &set_workspace_limit_op);
  m.def("_new_workspace_scope() -> int", &new_workspace_scope_op);
  m.def("_enter_workspace_limit(int bytes, int scope) -> ()", &enter_workspace_limit_op);
  m.def("_exit_workspace_limit(int scope, bool must_exist=True) -> ()", &exit_workspace_limit_op);
  m.def("_workspace_stats() -> int[]", &workspace_stats_op);
  m.def("_reset_workspace_stats() -> ()", &reset_workspace_stats_op);
  m.def("_clear_plan_cache() -> ()", &clear_plan_cache_op);
  m.def("empty_transposable(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
}

// Explicit (not a catch-all): under torch.compile the op is not decomposed into its set_() of a fresh storage,
// which fake tensors refuse; torch_inplace registers its fake implementation (a plain empty tensor).
TORCH_LIBRARY_IMPL(inplace, CompositeExplicitAutograd, m) { m.impl("empty_transposable", &empty_transposable_op); }

// Under vmap the ops would otherwise run per sample on views of the batched storage (functorch's fallback), and be
// refused as views; a batched tensor is refused up front, naming the transform (check_transposable).
TORCH_LIBRARY_IMPL(inplace, FuncTorchBatched, m) {
  m.impl("transpose_", &transpose_composite);
  m.impl("aos_to_soa_", &aos_to_soa_composite);
  m.impl("soa_to_aos_", &soa_to_aos_composite);
}

TORCH_LIBRARY_IMPL(inplace, CompositeImplicitAutograd, m) {
  m.impl("transpose_", &transpose_composite);
  m.impl("aos_to_soa_", &aos_to_soa_composite);
  m.impl("soa_to_aos_", &soa_to_aos_composite);
}

// Conjugate and negative views: moving elements commutes with both bits, so the ops permute the view's storage in
// place, bits and all (their keys fall through to the backends). PyTorch's math-bit fallback would run them on a
// resolved copy as large as the tensor, and for _transpose_data_ (no returns) it wrote past the end of the stack.
namespace {
void fall_through_math_bits(torch::Library& m) {
  for (const char* op : {"_transpose_data_", "transpose_", "aos_to_soa_", "soa_to_aos_"}) {
    m.impl(op, torch::CppFunction::makeFallthrough());
  }
}
}  // namespace
// Sparse, quantized, nested and MKL-DNN tensors reaching the data op (a direct call of it; transpose_ and the others
// refuse them first): refused as the backends refuse other tensors, not by the dispatcher's "Could not run".
namespace {
void refuse_transpose_data(at::Tensor& self, c10::string_view) {
  check_transposable(self, "transpose_", CheckLevel::kPublic);  // cannot pass on such a tensor
  TORCH_CHECK(false, "transpose_: expected a dense strided tensor, got one with dispatch keys ", self.key_set());
}
}  // namespace
#define TI_REFUSE_ON(key) \
  TORCH_LIBRARY_IMPL(inplace, key, m) { m.impl("_transpose_data_", &refuse_transpose_data); }
TORCH_INPLACE_FOR_EACH_NON_DENSE_KEY(TI_REFUSE_ON)
#undef TI_REFUSE_ON
TORCH_LIBRARY_IMPL(inplace, Conjugate, m) { fall_through_math_bits(m); }
TORCH_LIBRARY_IMPL(inplace, Negative, m) { fall_through_math_bits(m); }

}  // namespace torch_inplace
