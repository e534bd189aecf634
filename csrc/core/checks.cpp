#include "core/checks.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/autograd/variable.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "core/workspace.h"

namespace torch_inplace {

namespace {

std::mutex g_registry_mutex;
// StorageImpl* -> weak reference. Holding the weak reference keeps the StorageImpl's memory (not its data)
// alive, so its address cannot be reused by another storage while the entry exists: a hit is unambiguous.
std::unordered_map<const c10::StorageImpl*, c10::weak_intrusive_ptr<c10::StorageImpl>> g_registry;

bool is_registered(const c10::Storage& storage) {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  auto it = g_registry.find(storage.unsafeGetStorageImpl());
  if (it == g_registry.end()) return false;
  if (it->second.expired()) {
    g_registry.erase(it);
    return false;
  }
  return true;
}

DeviceCapsProvider g_gpu_caps = nullptr;

// References to a storage other than its own Python object's: a Python storage object (x.untyped_storage(),
// torch.save) holds a counted reference for its lifetime, but it is raw bytes, not a tensor that could be
// silently wrong.
// (GCC 12 at -O2 reports a false -Wstringop-overflow in the atomic load that PyObjectSlot::load_pyobj inlines here,
// "writing 8 bytes into a region of size 0": it loses track of the slot's object. Silenced for this function only.)
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
int64_t tensor_holders(const c10::Storage& storage) {
  const auto* impl = storage.unsafeGetStorageImpl();
  return static_cast<int64_t>(storage.use_count()) - (impl->pyobj_slot()->load_pyobj() != nullptr ? 1 : 0);
}
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic pop
#endif

// Whether a tensor's storage is real memory (not meta, not the data-less storage of a wrapper subclass), read
// without the storage accessors that raise (wrapper subclasses) or warn (fake tensors).
bool holds_memory(const at::Tensor& t) {
  const c10::Storage& storage = t.unsafeGetTensorImpl()->unsafe_storage();
  if (!storage) return false;
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  return impl->device_type() != c10::DeviceType::Meta && impl->_mutable_data_ptr_no_checks().get() != nullptr;
}

// Whether t carries a forward-mode AD tangent (at any level), its own or its forward view's base's. Read from the
// autograd metadata: Tensor::_fw_grad answers "none" wherever forward AD is off, inside torch.inference_mode() too,
// which let a dual tensor through there (its tangent kept the old shape).
bool has_tangent(const at::TensorBase& t) {
  auto has = [](const at::TensorBase& x) {
    const auto* meta = x.defined() ? torch::autograd::impl::get_autograd_meta(x) : nullptr;
    return meta != nullptr && meta->fw_grad_ && !meta->fw_grad_->empty();
  };
  if (has(t)) return true;
  const auto* view_meta = torch::autograd::impl::get_view_autograd_meta(t);
  return view_meta != nullptr && view_meta->has_fw_view() && has(view_meta->get_forward_view().base_);
}

std::string shape_str(const at::TensorBase& t) {
  std::ostringstream os;
  os << t.sym_sizes();
  return os.str();
}

// A view whose base the caller can still reach is refused: Python code still references the base (its PyObject has
// more than the one reference the C++ side keeps), or, where the base has no PyObject (C++ and TorchScript callers,
// or one Python let go of), anything holds the base's TensorImpl beyond this view's own reference to it. Returns
// whether `self` is a view whose base it keeps alive alone (one more holder of the storage).
bool check_not_view_of_live_tensor(const at::Tensor& self, const char* op) {
  if (!self.is_view()) return false;
  const at::TensorBase& base = self._base();
  if (!base.defined() || !base.has_storage() || !base.storage().is_alias_of(self.storage())) return false;
  const auto* slot = base.unsafeGetTensorImpl()->pyobj_slot();
  const bool only_this_view = slot->load_pyobj() != nullptr ? slot->has_unique_reference() : base.use_count() == 1;
  TORCH_CHECK(only_this_view, op,
              ": expected a tensor whose storage no other tensor shares, got a view of a live tensor of shape ",
              shape_str(base), " (transposing in place would silently change it; call .clone() first)");
  return true;
}

// A conj() or negative view taken of another view replays through a chained view function whose reverse keeps
// that other view alive inside autograd's view metadata, where no check can tell it from a view the caller still
// holds: its storage has one more holder, and the check refuses it. The refusal then says why.
std::string replayed_view_hint(const at::Tensor& self) {
  if (!self.is_view()) return "";
  const auto* meta = torch::autograd::impl::get_view_autograd_meta(self);
  if (meta == nullptr || !meta->has_bw_view() || !meta->get_backward_view().has_view_fn()) return "";
  // conj() and _neg_view() save no sizes: a function with some is chained after the other view's as_strided.
  if (meta->get_backward_view().view_fn().num_symints() == 0) return "";
  return ". This tensor is a conj() or negative view taken of another view: PyTorch keeps that view alive for "
         "autograd even after the caller drops it, so it counts as another tensor; take conj() before view() / "
         "reshape() instead";
}

}  // namespace

bool misaligned_memory(const at::Tensor& t) { return holds_memory(t) && element_misalignment(t) != 0; }

void register_transposable_storage(const c10::Storage& storage) {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  // Drop expired entries now and then so the map does not grow without bound: once it has doubled since the last
  // sweep (a sweep at every call past a fixed size took each call through every live entry, under the lock).
  static size_t sweep_at = 1024;
  if (g_registry.size() >= sweep_at) {
    for (auto it = g_registry.begin(); it != g_registry.end();) {
      it = it->second.expired() ? g_registry.erase(it) : std::next(it);
    }
    sweep_at = std::max<size_t>(1024, 2 * g_registry.size());
  }
  g_registry.insert_or_assign(storage.unsafeGetStorageImpl(),
                              c10::weak_intrusive_ptr<c10::StorageImpl>(storage.getWeakStorageImpl()));
}

int64_t storage_slack_bytes(const at::Tensor& self) {
  if (!self.has_storage()) return 0;
  const auto& storage = self.storage();
  const int64_t used = self.numel() * static_cast<int64_t>(self.element_size());
  const int64_t have = static_cast<int64_t>(storage.nbytes());
  if (have <= used || self.storage_offset() != 0 || !is_registered(storage)) return 0;
  return have - used;
}

void check_transposable_dtype(at::ScalarType dtype, const char* op, const char* what) {
  TORCH_CHECK(!c10::isQIntType(dtype), op, ": expected a non-quantized ", what, ", got dtype ", dtype);
  const int64_t es = static_cast<int64_t>(c10::elementSize(dtype));
  TORCH_CHECK(es == 1 || es == 2 || es == 4 || es == 8 || es == 16, op,
              ": expected elements of 1, 2, 4, 8 or 16 bytes, got dtype ", dtype, " (", es, " bytes)");
}

void check_transposable(const at::Tensor& self, const char* op, CheckLevel level) {
  TORCH_CHECK(self.defined(), op, ": expected a tensor, got an undefined tensor");
  // torch.func's wrappers (vmap's batched tensors, grad / jvp's tensor wrappers) have no storage of their own and
  // cache their sizes, which an in-place change of shape would leave stale.
  TORCH_CHECK(!self.key_set().has_any(c10::DispatchKeySet(
                  {c10::DispatchKey::FuncTorchBatched, c10::DispatchKey::FuncTorchGradWrapper})),
              op, ": expected a plain tensor, got a torch.func transform's tensor (vmap, grad, jvp, jacrev, ...); the "
              "op changes the tensor's shape in place, which those transforms cannot follow: use x.mT.contiguous() "
              "inside transformed functions");
  // PyTorch's refusals of leaves that require grad (and views of them), under the op's name, before the checks below
  // (which would refuse a view of a leaf too: autograd holds the leaf).
  if (level == CheckLevel::kPublic) check_inplace_autograd(self, op);
  check_not_inference_outside_mode(self, op);
  // The tangent of forward-mode AD (torch.autograd.forward_ad) would keep the old shape: refused, as under torch.func.
  TORCH_CHECK(!has_tangent(self), op,
              ": expected a tensor without a forward-mode AD tangent, got a dual tensor (torch.autograd.forward_ad); "
              "the op changes the tensor's shape in place, which its tangent cannot follow: use x.mT.contiguous()");
  TORCH_CHECK(self.layout() == at::kStrided, op, ": expected a dense (strided) tensor, got layout ", self.layout());
  TORCH_CHECK(!self.is_nested(), op, ": expected a regular tensor, got a nested tensor");
  check_transposable_dtype(self.scalar_type(), op, "tensor");
  TORCH_CHECK(self.dim() >= 2, op, ": expected a tensor with at least 2 dims (..., m, n), got a ", self.dim(),
              "-D tensor of shape ", self.sym_sizes());
  const int64_t es = static_cast<int64_t>(self.element_size());
  const bool symbolic = self.unsafeGetTensorImpl()->has_symbolic_sizes_strides();
  // Ownership and aliasing are about tensors a user can see. Framework tensors (fake and meta tensors, functional
  // and other subclasses) come with copies and shallow aliases of their own, so their storage's holders say nothing;
  // the kernels only ever touch the tensor's own elements, so skipping those checks there is memory-safe. One check
  // still holds for them: torch.compile traces with fake tensors that mirror the caller's views, and a view of a
  // tensor that Python code still holds is refused there as in eager mode (the compiled graph would otherwise write
  // the permuted bytes back into that tensor, its shape unchanged). Plain tensors under a dispatch mode
  // (FlopCounterMode, opcheck's schema check) are the caller's own: they get every check below.
  // A subclass tensor with memory of its own (torch.Tensor._make_subclass of a real tensor, dispatching to the op
  // with itself) is the caller's, and checked as a plain one: fake tensors have meta storage, wrapper subclasses
  // (functional tensors, TwoTensor, DTensor) none with data.
  const bool framework = self.is_meta() || (self.key_set().has(c10::DispatchKey::Python) && !holds_memory(self));
  if (framework && level == CheckLevel::kPublic && (symbolic || self.numel() != 0)) {
    check_not_view_of_live_tensor(self, op);
  }
  // Tracing with symbolic shapes (torch.compile dynamic=True): the eager checks ran, or will run, on real
  // tensors; nothing here can be decided without guarding on sizes.
  if (symbolic) return;
  TORCH_CHECK(self.is_contiguous(), op, ": expected a contiguous tensor, got shape ", shape_str(self),
              " with strides ", self.strides(), " (call .contiguous() first; the result would not be in place)");
  if (self.numel() == 0) return;  // nothing moves: only the shape changes
  // The offset is known on framework tensors too (meta and fake tensors keep the caller's views' offsets): refused
  // there as on real ones, rather than reset to 0 by as_strided_.
  TORCH_CHECK(self.storage_offset() == 0, op,
              ": expected a tensor that owns its whole storage, got a storage offset of ", self.storage_offset(),
              " elements (a view into a larger tensor; call .clone() first)");
  if (framework) return;
  TORCH_CHECK(self.has_storage(), op, ": expected a tensor with storage, got one without (", self.toString(), ")");
  const int64_t used = self.numel() * es;
  const int64_t have = static_cast<int64_t>(self.storage().nbytes());
  TORCH_CHECK(have >= used, op, ": expected a storage of at least ", used, " bytes, got ", have, " bytes");
  if (level == CheckLevel::kMemory) return;
  // Storage past the elements is harmless when nobody else can reach it: the tensor is not a view and is the
  // storage's only holder (e.g. after resize_ to fewer elements), or the slack came from empty_transposable.
  const bool sole_holder = !self.is_view() && tensor_holders(self.storage()) == 1;
  TORCH_CHECK(have == used || (have > used && (sole_holder || is_registered(self.storage()))), op,
              ": expected a tensor that owns its whole storage, got ", used, " bytes of elements in a storage of ",
              have, " bytes that another tensor can reach (a view of part of a larger tensor; call .clone() first)");
  // Tensors that share this storage: the tensor itself, and the base it is a view of (which shares its version
  // counter, so autograd uses of the base are invalidated as for any in-place op on a view). Any other holder
  // (another view, an alias, a tensor saved for backward) would silently see permuted bytes.
  const int64_t expected = check_not_view_of_live_tensor(self, op) ? 2 : 1;
  const int64_t users = tensor_holders(self.storage());
  TORCH_CHECK(users <= expected, op,
              ": expected a tensor whose storage no other tensor shares, got a storage shared with ",
              users - expected,
              " other tensor(s) (a view or alias of it, or a tensor saved for backward); transposing in place "
              "would silently change them (call .clone() first)", replayed_view_hint(self));
}

void check_not_inference_outside_mode(const at::Tensor& self, const char* op) {
  TORCH_CHECK(!self.is_inference() || c10::InferenceMode::is_enabled(), op,
              ": expected a tensor that may be updated in place, got an inference tensor outside "
              "torch.inference_mode() (PyTorch allows in-place updates of inference tensors only inside it; clone it "
              "first)");
}

void check_inplace_autograd(const at::Tensor& self, const char* op) {
  if (!at::GradMode::is_enabled() || !self.requires_grad()) return;
  // Views that autograd forbids writing (outputs of unbind / split / chunk, views made under no_grad or returned by a
  // custom Function): PyTorch's own message, before anything is written (mark_dirty would raise only after the kernel).
  auto* view_meta = torch::autograd::impl::get_view_autograd_meta(self);
  if (view_meta && view_meta->has_bw_view() &&
      view_meta->get_creation_meta() != torch::autograd::CreationMeta::DEFAULT) {
    try {
      torch::autograd::handle_view_on_rebase(view_meta);
    } catch (const c10::Error& e) {
      TORCH_CHECK(false, op, ": ", e.msg());
    }
  }
  TORCH_CHECK(!self.is_leaf(), op, ": a leaf Variable that requires grad is being used in an in-place operation.");
  // As PyTorch's check_inplace: a view that requires grad of any leaf, including one that does not (a leaf made by
  // requires_grad_() on a view of such a tensor shares its base: the views of it are that base's views).
  TORCH_CHECK(!(self.is_view() && self._base().is_leaf()), op,
              ": a view of a leaf Variable that requires grad is being used in an in-place operation.");
}

bool records_autograd(const at::Tensor& t) {
  return (at::GradMode::is_enabled() && t.requires_grad()) || t._fw_grad(/*level=*/0).defined();
}

plan::Problem transpose_problem(const at::Tensor& self) {
  plan::Problem p;
  const int64_t d = self.dim();
  p.rows = self.size(d - 2);
  p.cols = self.size(d - 1);
  p.batch = 1;
  for (int64_t i = 0; i < d - 2; ++i) p.batch *= self.size(i);
  p.esize = static_cast<int64_t>(self.element_size());
  p.slack_bytes = storage_slack_bytes(self);
  return p;
}

bool has_gpu_kernels() { return g_gpu_caps != nullptr; }

bool register_gpu_caps_provider(DeviceCapsProvider provider) {
  g_gpu_caps = provider;
  return true;
}

void init_parallel_thread() {
  thread_local bool done = false;
  if (done) return;
  const int threads = at::get_num_threads();  // libtorch's own initialisation of this thread (if not done yet)
  at::internal::lazy_init_num_threads();       // this library's: may set the process-wide count
#ifdef _OPENMP
  if (at::get_num_threads() != threads) omp_set_num_threads(threads);
#endif
  done = true;
}

plan::DeviceCaps device_caps(const c10::Device& device, const char* op) {
  if (device.is_cpu()) {
    plan::DeviceCaps caps;
    caps.backend = plan::Backend::CPU;
    // The CPU plans size their scratch by thread count, one region per thread of the parallel regions: the count
    // those regions will use, read after the first region's initialisation.
    init_parallel_thread();
    caps.num_threads = at::get_num_threads();
    return caps;
  }
  TORCH_CHECK(device.is_cuda(), op, ": expected a CPU or CUDA/ROCm device, got ", device);
  TORCH_CHECK(g_gpu_caps != nullptr, op,
              ": this build of torch_inplace has no GPU kernels (built CPU-only); rebuild it with CUDA or ROCm to use ",
              device);
  return g_gpu_caps(device.has_index() ? device.index() : -1, op);
}

plan::Algo parse_algorithm(const std::string& name, const char* op) {
  plan::Algo a;
  if (plan::algo_from_name(name, &a)) return a;
  std::ostringstream os;
  for (const auto& n : plan::algo_names()) os << (os.tellp() > 0 ? ", " : "") << "'" << n << "'";
  TORCH_CHECK(false, op, ": expected algorithm to be one of ", os.str(), ", got '", name, "'");
}

namespace {

struct PlanKey {
  int64_t batch, rows, cols, esize, slack, limit;
  int forced, device_type, device_index, threads;
  bool operator==(const PlanKey& o) const {
    return batch == o.batch && rows == o.rows && cols == o.cols && esize == o.esize && slack == o.slack &&
           limit == o.limit && forced == o.forced && device_type == o.device_type &&
           device_index == o.device_index && threads == o.threads;
  }
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : {k.batch, k.rows, k.cols, k.esize, k.slack, k.limit, int64_t{k.forced}, int64_t{k.device_type},
                      int64_t{k.device_index}, int64_t{k.threads}}) {
      h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    }
    return static_cast<size_t>(h);
  }
};

// The planner under the caps and limit the caller read once (a cached plan must be the one its key describes: the
// process-wide limit may change between two reads).
plan::Plan make_or_throw(const plan::Problem& p, const plan::DeviceCaps& caps, plan::Algo forced, int64_t limit,
                         const char* op) {
  try {
    plan::Plan pl = plan::make_plan(p, caps, forced, limit);
    pl.workspace_limit = limit;
    return pl;
  } catch (const plan::PlanError& e) {
    TORCH_CHECK(false, op, ": ", e.message);
  }
}

std::mutex g_plan_mutex;
std::unordered_map<PlanKey, std::shared_ptr<const plan::Plan>, PlanKeyHash> g_plans;
constexpr size_t kMaxCachedPlans = 4096;

}  // namespace

std::shared_ptr<const plan::Plan> plan_cached(const plan::Problem& p, const c10::Device& device, plan::Algo forced,
                                              const char* op) {
  const plan::DeviceCaps caps = device_caps(device, op);
  const int64_t limit = workspace_limit();
  const PlanKey key{p.batch,
                    p.rows,
                    p.cols,
                    p.esize,
                    p.slack_bytes,
                    limit,
                    static_cast<int>(forced),
                    static_cast<int>(device.type()),
                    device.has_index() ? device.index() : -1,
                    caps.num_threads};
  {
    std::lock_guard<std::mutex> lock(g_plan_mutex);
    auto it = g_plans.find(key);
    if (it != g_plans.end()) return it->second;
  }
  auto made = std::make_shared<const plan::Plan>(make_or_throw(p, caps, forced, limit, op));
  std::lock_guard<std::mutex> lock(g_plan_mutex);
  if (g_plans.size() >= kMaxCachedPlans) g_plans.clear();
  g_plans.emplace(key, made);
  return made;
}

void clear_plan_cache() {
  std::lock_guard<std::mutex> lock(g_plan_mutex);
  g_plans.clear();
}

plan::Plan plan_or_throw(const plan::Problem& p, const c10::Device& device, plan::Algo forced, const char* op) {
  return make_or_throw(p, device_caps(device, op), forced, workspace_limit(), op);
}

}  // namespace torch_inplace
