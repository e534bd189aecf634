#include "core/workspace.h"

#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <mutex>

namespace torch_inplace {

namespace {
std::atomic<int64_t> g_limit{-1};
std::mutex g_stats_mutex;
WorkspaceStats g_stats;
}  // namespace

int64_t workspace_limit() { return g_limit.load(); }

void set_workspace_limit(int64_t bytes) {
  TORCH_CHECK(bytes >= -1, "torch_inplace.workspace_limit: expected a byte count >= 0 (or -1 for no limit), got ",
              bytes);
  g_limit.store(bytes);
}

WorkspaceStats workspace_stats() {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  return g_stats;
}

void reset_workspace_stats() {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  g_stats = WorkspaceStats{};
}

void record_workspace(int64_t bytes) {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  g_stats.last_bytes = bytes;
  g_stats.peak_bytes = std::max(g_stats.peak_bytes, bytes);
  g_stats.total_bytes += bytes;
  g_stats.calls += 1;
}

at::Tensor allocate_workspace(int64_t bytes, c10::Device device, const char* op) {
  TORCH_CHECK(bytes >= 0, op, ": internal error: negative workspace request ", bytes);
  const int64_t limit = workspace_limit();
  TORCH_CHECK(limit < 0 || bytes <= limit, op, ": needs ", bytes, " bytes of workspace, over the limit of ", limit,
              " bytes set by torch_inplace.workspace_limit");
  record_workspace(bytes);
  if (bytes == 0) return at::Tensor();
  // at::empty goes through the device's allocator: the caching allocator on the current stream for GPUs.
  return at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
}

}  // namespace torch_inplace
