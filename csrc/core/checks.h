// Input validation shared by the transposition ops: everything is checked before the first byte moves.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

#include "plan/transpose_plan.h"

// The dispatch keys of tensors without dense strided storage (sparse, sparse CSR, quantized, nested, MKL-DNN). The
// autograd kernels refuse such tensors, but with autograd off (torch.inference_mode) the dispatcher goes on to these
// keys, where lu.cpp and transpose.cpp register kernels that refuse them as the backends refuse other tensors.
#define TORCH_INPLACE_FOR_EACH_NON_DENSE_KEY(X)                                                          \
  X(SparseCPU) X(SparseCUDA) X(SparseCsrCPU) X(SparseCsrCUDA) X(QuantizedCPU) X(QuantizedCUDA) \
  X(NestedTensorCPU) X(NestedTensorCUDA) X(MkldnnCPU)

namespace torch_inplace {

// How much check_transposable enforces.
enum class CheckLevel {
  // What memory safety needs (the private data-only op's kernels): a dense strided contiguous tensor of >= 2
  // dims and 1/2/4/8/16-byte elements, at storage offset 0, whose storage holds all its elements.
  kMemory,
  // The public contract (transpose_, aos_to_soa_, soa_to_aos_): also that the tensor owns its whole storage (no
  // other tensor can reach storage past its elements, unless the slack came from empty_transposable) and that
  // no other live tensor shares the storage (a view or alias, or a tensor saved for backward), since such a
  // tensor would silently change. For framework tensors (fake/meta tensors, subclasses) only the view rule: a view
  // of a tensor that Python code still holds is refused.
  kPublic,
};

// Bytes past the last multiple of its element size at which `t`'s data starts. 0 for PyTorch's own allocations;
// memory that numpy (8-byte aligned complex128), torch.frombuffer or DLPack hand over can start anywhere, and the
// kernels' element types (a complex128 element is 16-byte aligned) need 0.
inline int64_t element_misalignment(const at::Tensor& t) {
  return static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.const_data_ptr()) %
                              static_cast<uintptr_t>(t.element_size()));
}

// Whether `t` holds real memory (not meta, fake or a wrapper subclass's) whose data is not element-aligned. Safe on
// any tensor (element_misalignment reads the data pointer, which raises for tensors without storage).
bool misaligned_memory(const at::Tensor& t);

// The dtypes the transposition ops take: not quantized, elements of 1, 2, 4, 8 or 16 bytes. Throws naming `op`;
// `what` ("tensor", "dtype") is what the message says was expected.
void check_transposable_dtype(at::ScalarType dtype, const char* op, const char* what);

// Throws (TORCH_CHECK, naming `op`) unless `self` passes `level`; everything is checked before a byte moves.
void check_transposable(const at::Tensor& self, const char* op, CheckLevel level);

// PyTorch's refusal of an in-place update of an inference tensor outside InferenceMode, made before any byte moves
// (such tensors skip the autograd kernels, whose version bump would raise only after the kernel ran).
void check_not_inference_outside_mode(const at::Tensor& self, const char* op);

// PyTorch's own refusals for an in-place op under autograd (a leaf that requires grad, or a view of one), made
// before any byte moves: torch::autograd::Function's mark_dirty would only raise after the kernel ran.
void check_inplace_autograd(const at::Tensor& self, const char* op);

// Whether a call on `t` must go through the op's torch::autograd::Function: grad mode on and `t` requiring grad,
// or a forward-mode gradient on it (which never gets there: the transposition ops refuse it in check_transposable, the
// LU ops hand it to torch.linalg). Otherwise the autograd kernels call the
// backend directly, without a graph node, saved variables or output wrapping (about a microsecond per call);
// in-place ops then bump the version counter themselves, as mark_dirty would.
bool records_autograd(const at::Tensor& t);
//
// Mutation under grad mode: torch::autograd::Function::apply runs forward with grad mode off, but the in-place
// Functions (which run only where records_autograd holds, so grad mode was on) call their backend with it back on.
// Functionalization (torch.compile, torch.export) takes a mutation made with grad mode off for one autograd does not
// see, and replays it on a graph input outside the graph: the compiled function lost the op's gradient.

// Bytes of storage past the tensor's elements that belong to it (slack from empty_transposable), else 0.
int64_t storage_slack_bytes(const at::Tensor& self);

// Registers a storage made by empty_transposable (its slack may be used for padding).
void register_transposable_storage(const c10::Storage& storage);

// The (batch, rows, cols, esize, slack) problem of a validated tensor.
plan::Problem transpose_problem(const at::Tensor& self);

// Device capabilities for the planner. GPU builds register a provider at load time. `op` names the caller in errors.
plan::DeviceCaps device_caps(const c10::Device& device, const char* op);

// Before this library's first at::parallel_for on the calling thread: leaves the thread's OpenMP team size as it is.
// ATen's lazy_init_num_threads (run by every at::parallel_for) keeps its "done" flag per shared library, and its first
// run in this library on a thread set that thread's team size to the process-wide count, over a count the thread had
// chosen itself (torch.set_num_threads on it), for torch's own ops on the thread afterwards too. device_caps (CPU)
// calls it, and so do the CPU ops that plan nothing.
void init_parallel_thread();
using DeviceCapsProvider = plan::DeviceCaps (*)(int device_index, const char* op);
bool register_gpu_caps_provider(DeviceCapsProvider provider);
// Whether this build carries GPU (CUDA or HIP) kernels.
bool has_gpu_kernels();

// Parses an algorithm name, naming `op` in the error.
plan::Algo parse_algorithm(const std::string& name, const char* op);

// make_plan with the op's workspace limit; PlanError becomes a TORCH_CHECK failure naming `op`.
plan::Plan plan_or_throw(const plan::Problem& p, const c10::Device& device, plan::Algo forced, const char* op);

// plan_or_throw through a per-process cache keyed by the problem, device, forced algorithm, workspace limit and
// the device's capabilities: a repeated shape costs one hash lookup instead of a planning pass (the planner
// builds every candidate and its explanation). Errors are not cached. The planner's test knobs
// (TORCH_INPLACE_GPU_* and TORCH_INPLACE_CPU_TILED_BYTES) are read when a plan is made: clear_plan_cache() after
// changing them.
std::shared_ptr<const plan::Plan> plan_cached(const plan::Problem& p, const c10::Device& device, plan::Algo forced,
                                              const char* op);
void clear_plan_cache();

}  // namespace torch_inplace
