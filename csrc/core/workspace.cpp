#include "core/workspace.h"

#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <mutex>

namespace torch_inplace {

namespace {
// The process-wide default (set_workspace_limit), and the calling thread's scoped limit (WorkspaceLimitGuard,
// Python's `with workspace_limit(...)`), which overrides it while set. Scoped limits are per thread so that
// overlapping scopes on different threads cannot leave a stale limit behind (one thread restoring its previous
// value while another's scope is open), as a single global that both saved and restored could.
constexpr int64_t kNoScopedLimit = -2;
std::atomic<int64_t> g_limit{-1};
thread_local int64_t t_scoped_limit = kNoScopedLimit;
std::mutex g_stats_mutex;
WorkspaceStats g_stats;

void check_limit(int64_t bytes, const char* fn) {
  TORCH_CHECK(bytes >= -1, fn, ": expected a byte count >= 0 (or -1 for no limit), got ", bytes);
}
}  // namespace

int64_t workspace_limit() {
  const int64_t scoped = t_scoped_limit;
  return scoped != kNoScopedLimit ? scoped : g_limit.load();
}

void set_workspace_limit(int64_t bytes) {
  check_limit(bytes, "set_workspace_limit");
  g_limit.store(bytes);
}

namespace detail {
int64_t enter_workspace_limit_scope(int64_t bytes) {
  check_limit(bytes, "workspace_limit");
  const int64_t previous = t_scoped_limit;
  t_scoped_limit = bytes;
  return previous;
}

void exit_workspace_limit_scope(int64_t previous) {
  TORCH_CHECK(previous >= kNoScopedLimit, "workspace_limit: internal error: restoring a scope of ", previous);
  t_scoped_limit = previous;
}
}  // namespace detail

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
              " bytes set by the workspace limit (torch_inplace.workspace_limit / set_workspace_limit)");
  record_workspace(bytes);
  if (bytes == 0) return at::Tensor();
  // at::empty goes through the device's allocator: the caching allocator on the current stream for GPUs.
  return at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
}

}  // namespace torch_inplace
