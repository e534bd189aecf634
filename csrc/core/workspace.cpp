#include "core/workspace.h"

#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

namespace torch_inplace {

namespace {
// The process-wide default (set_workspace_limit), and the calling thread's open scopes (WorkspaceLimitGuard,
// Python's `with workspace_limit(...)`), the latest open one overriding it. Scopes are per thread so that
// overlapping scopes on different threads cannot leave a stale limit behind, as a single global that both saved and
// restored could. A thread's scopes form a list rather than a saved value each: Python generators and asyncio tasks
// that hold a `with workspace_limit(...)` across a yield or an await close their scopes on the thread out of order,
// and restoring saved values then put back the limit of a scope already closed, which stayed on the thread after
// every scope had ended. Closing a scope removes it alone.
struct Scope {
  int64_t id;
  int64_t bytes;
};
std::atomic<int64_t> g_limit{-1};
thread_local std::vector<Scope> t_scopes;
thread_local int64_t t_last_scope_id = 0;
std::mutex g_stats_mutex;
WorkspaceStats g_stats;

void check_limit(int64_t bytes, const char* fn) {
  TORCH_CHECK(bytes >= -1, fn, ": expected a byte count >= 0 (or -1 for no limit), got ", bytes);
}
}  // namespace

int64_t workspace_limit() {
  const std::vector<Scope>& scopes = t_scopes;
  return scopes.empty() ? g_limit.load() : scopes.back().bytes;
}

void set_workspace_limit(int64_t bytes) {
  check_limit(bytes, "set_workspace_limit");
  g_limit.store(bytes);
}

namespace detail {
int64_t new_workspace_limit_scope_id() noexcept { return ++t_last_scope_id; }

void enter_workspace_limit_scope_as(int64_t bytes, int64_t scope) {
  check_limit(bytes, "workspace_limit");
  TORCH_CHECK(scope > 0 && scope <= t_last_scope_id,
              "workspace_limit: expected a scope id from new_workspace_limit_scope_id on this thread, got ", scope);
  for (const Scope& open : t_scopes) {
    TORCH_CHECK(open.id != scope, "workspace_limit: scope ", scope, " is open already on this thread");
  }
  t_scopes.push_back({scope, bytes});
}

int64_t enter_workspace_limit_scope(int64_t bytes) {
  check_limit(bytes, "workspace_limit");  // before an id is taken
  const int64_t scope = new_workspace_limit_scope_id();
  enter_workspace_limit_scope_as(bytes, scope);
  return scope;
}

bool exit_workspace_limit_scope(int64_t scope) noexcept {
  std::vector<Scope>& scopes = t_scopes;
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    if (it->id == scope) {
      scopes.erase(std::next(it).base());
      return true;
    }
  }
  return false;
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

at::Tensor allocate_workspace(int64_t bytes, int64_t limit, c10::Device device, const char* op) {
  TORCH_CHECK(bytes >= 0, op, ": internal error: negative workspace request ", bytes);
  TORCH_CHECK(limit < 0 || bytes <= limit, op, ": needs ", bytes, " bytes of workspace, over the limit of ", limit,
              " bytes set by the workspace limit (torch_inplace.workspace_limit / set_workspace_limit)");
  if (bytes == 0) {
    record_workspace(0);
    return at::Tensor();
  }
  // at::empty goes through the device's allocator: the caching allocator on the current stream for GPUs. Recorded
  // once it succeeded (a failed allocation raises, and the call moved nothing).
  at::Tensor scratch = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
  record_workspace(bytes);
  return scratch;
}

}  // namespace torch_inplace
