// Scratch memory for every op: one helper that takes it from PyTorch's allocator (the caching allocator on
// GPUs, on the current stream), enforces the workspace limit and records the bytes.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

#include "torch_inplace.h"  // the public part: workspace_limit, set_workspace_limit, WorkspaceStats, ...

namespace torch_inplace {

// Records an op call's scratch (0 included) without allocating.
void record_workspace(int64_t bytes);

// Allocates `bytes` of scratch (a uint8 tensor, at least 64-byte aligned) on `device`, after checking them against
// `limit` (-1: none), and records the call; for 0 bytes it records and returns an undefined tensor. `op` names the
// caller in the error. `limit` is the one the call's plan was made under (plan::Plan::workspace_limit): reading the
// limit again could see another thread's set_workspace_limit since, and refuse a plan that fit.
at::Tensor allocate_workspace(int64_t bytes, int64_t limit, c10::Device device, const char* op);

// The scratch pointer of allocate_workspace's result (nullptr for none).
inline uint8_t* workspace_ptr(const at::Tensor& scratch) {
  return scratch.defined() ? static_cast<uint8_t*>(scratch.data_ptr()) : nullptr;
}

}  // namespace torch_inplace
