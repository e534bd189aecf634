// Input validation shared by the transposition ops: everything is checked before the first byte moves.
#pragma once

#include <ATen/core/Tensor.h>

#include "plan/transpose_plan.h"

namespace torch_inplace {

// Throws (TORCH_CHECK, naming `op`) unless `self` can be transposed in place: a dense strided contiguous tensor
// of >= 2 dims and 1/2/4/8/16-byte elements that starts its storage and owns all of it (or whose storage came
// from torch_inplace.empty_transposable, whose slack is the op's). With `check_aliases`, also refuses a tensor
// whose storage another live tensor shares (a view or alias, or a tensor saved for backward), since that
// tensor would silently change.
void check_transposable(const at::Tensor& self, const char* op, bool check_aliases);

// Bytes of storage past the tensor's elements that belong to it (slack from empty_transposable), else 0.
int64_t storage_slack_bytes(const at::Tensor& self);

// Registers a storage made by empty_transposable (its slack may be used for padding).
void register_transposable_storage(const c10::Storage& storage);

// The (batch, rows, cols, esize, slack) problem of a validated tensor.
plan::Problem transpose_problem(const at::Tensor& self);

// Device capabilities for the planner. GPU builds register a provider at load time.
plan::DeviceCaps device_caps(const c10::Device& device);
using DeviceCapsProvider = plan::DeviceCaps (*)(int device_index);
bool register_gpu_caps_provider(DeviceCapsProvider provider);

// Parses an algorithm name, naming `op` in the error.
plan::Algo parse_algorithm(const std::string& name, const char* op);

// make_plan with the op's workspace limit; PlanError becomes a TORCH_CHECK failure naming `op`.
plan::Plan plan_or_throw(const plan::Problem& p, const c10::Device& device, plan::Algo forced, const char* op);

}  // namespace torch_inplace
