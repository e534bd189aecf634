// Scratch memory for every op: one helper that takes it from PyTorch's allocator (the caching allocator on
// GPUs, on the current stream), enforces the workspace limit and records the bytes.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

namespace torch_inplace {

// Process-wide limit on the scratch bytes one op call may take; -1 means no limit.
int64_t workspace_limit();
void set_workspace_limit(int64_t bytes);

struct WorkspaceStats {
  int64_t last_bytes = 0;    // scratch of the most recent op call
  int64_t peak_bytes = 0;    // largest scratch of one call since the last reset
  int64_t total_bytes = 0;   // sum over calls since the last reset
  int64_t calls = 0;         // op calls that took scratch (or were planned with none) since the last reset
};
WorkspaceStats workspace_stats();
void reset_workspace_stats();

// Records an op call's scratch (0 included) without allocating.
void record_workspace(int64_t bytes);

// Allocates `bytes` of scratch (a uint8 tensor, at least 64-byte aligned) on `device`, after checking the
// limit, and records the call; for 0 bytes it records and returns an undefined tensor. `op` names the caller in
// the error.
at::Tensor allocate_workspace(int64_t bytes, c10::Device device, const char* op);

// The scratch pointer of allocate_workspace's result (nullptr for none).
inline uint8_t* workspace_ptr(const at::Tensor& scratch) {
  return scratch.defined() ? static_cast<uint8_t*>(scratch.data_ptr()) : nullptr;
}

}  // namespace torch_inplace
