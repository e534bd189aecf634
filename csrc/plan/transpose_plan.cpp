#include "plan/transpose_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace torch_inplace {
namespace plan {

namespace {
const char* const kNames[] = {"auto",    "noop",    "square",  "c2r",     "r2c",    "skinny",
                              "tiled31", "tiled32", "tiled21", "tiled22", "padded", "cut",
                              "onchip"};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(Algo::kCount), "algo names");

int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }
}  // namespace

const char* algo_name(Algo a) {
  const int i = static_cast<int>(a);
  return (i >= 0 && i < static_cast<int>(Algo::kCount)) ? kNames[i] : "?";
}

bool algo_from_name(const std::string& name, Algo* out) {
  for (int i = 0; i < static_cast<int>(Algo::kCount); ++i) {
    if (name == kNames[i]) {
      *out = static_cast<Algo>(i);
      return true;
    }
  }
  return false;
}

std::vector<std::string> algo_names() { return {std::begin(kNames), std::end(kNames)}; }

std::string Plan::explain() const {
  std::ostringstream os;
  os << algo_name(algo) << " for " << problem.batch << " x (" << problem.rows << " x " << problem.cols << ") of "
     << problem.esize << "-byte elements: " << reason << "; scratch " << scratch_bytes << " B";
  return os.str();
}

int64_t cpu_panel_width(int64_t esize) { return std::max<int64_t>(1, kCpuPanelBytes / esize); }

int64_t cpu_permute_panel_width(int64_t n, int64_t esize, int64_t threads, int64_t panel) {
  const int64_t widest = std::max<int64_t>(panel, 4096 / esize);
  const int64_t per_thread = (n + 4 * threads - 1) / (4 * threads);
  return std::min(n, std::max(panel, std::min(widest, per_thread)));
}

CpuScratchLayout cpu_scratch_layout(int64_t m, int64_t n, int64_t esize, int64_t threads, int64_t panel) {
  CpuScratchLayout l;
  l.bitmap_words = (m + 63) / 64;
  l.visited_off = 0;
  l.leaders_off = align64(l.bitmap_words * 8);
  // A thread gathers one row (n elements) in the row shuffle, one panel's saved rows plus one row segment in the
  // column rotations, or two row segments in the row permutation.
  l.thread_elems =
      std::max<int64_t>({n, panel * panel + panel, 2 * cpu_permute_panel_width(n, esize, threads, panel)});
  l.threads_off = l.leaders_off + align64(l.bitmap_words * 8);
  l.total = l.threads_off + threads * align64(l.thread_elems * esize);
  return l;
}

int64_t cpu_skinny_tile(int64_t N, int64_t F, int64_t esize) {
  // A k x F tile of about 32 KB stays in cache while it is transposed; super-elements of k elements make each
  // cycle-following step a long contiguous copy.
  const int64_t k = std::max<int64_t>(16, (int64_t{32} << 10) / std::max<int64_t>(1, F * esize));
  return std::max<int64_t>(1, std::min(N, k));
}

CpuSkinnyLayout cpu_skinny_layout(int64_t N, int64_t F, int64_t esize, int64_t threads, int64_t k) {
  CpuSkinnyLayout l;
  l.N = N, l.F = F, l.k = k, l.Mp = N / k, l.r = N % k;
  l.bitmap_words = (l.Mp * F + 63) / 64;
  l.visited_off = 0;
  l.thread_elems = std::max(k * F, 2 * k);
  l.threads_off = align64(l.bitmap_words * 8);
  l.remainder_off = l.threads_off + threads * align64(l.thread_elems * esize);
  l.total = l.remainder_off + align64(l.r * F * esize);
  return l;
}

int64_t cpu_tiled_side(int64_t x, int64_t esize) {
  // TORCH_INPLACE_CPU_TILED_BYTES moves the preferred super-element size (measurements).
  const char* env = std::getenv("TORCH_INPLACE_CPU_TILED_BYTES");
  const int64_t target = env != nullptr && std::atoll(env) > 0 ? std::atoll(env) : kCpuTiledBytes;
  int64_t best = 0;
  double best_dist = 0;
  for (int64_t d = std::max<int64_t>(1, kCpuTiledMinBytes / esize); d * esize <= kCpuTiledMaxBytes && d <= x; ++d) {
    if (x % d != 0 || d * esize < kCpuTiledMinBytes) continue;
    const double dist = std::abs(std::log(static_cast<double>(d * esize) / target));
    if (best == 0 || dist <= best_dist) best = d, best_dist = dist;
  }
  return best;
}

bool cpu_tiled_blocks(int64_t rows, int64_t cols, int64_t esize, int64_t* mp, int64_t* np) {
  int64_t m = cpu_tiled_side(rows, esize), n = cpu_tiled_side(cols, esize);
  if (m == 0 || n == 0) return false;
  // The longer side shrinks to its next divisor in range while the block is too large.
  auto shrink = [&](int64_t x, int64_t side) {
    for (int64_t d = side - 1; d * esize >= kCpuTiledMinBytes; --d) {
      if (x % d == 0) return d;
    }
    return int64_t{0};
  };
  while (m * n * esize > kCpuTiledMaxBlockBytes) {
    if (m >= n) {
      m = shrink(rows, m);
    } else {
      n = shrink(cols, n);
    }
    if (m == 0 || n == 0) return false;
  }
  *mp = m;
  *np = n;
  return true;
}

CpuCutLayout cpu_cut_layout(int64_t rows, int64_t cols, int64_t r, int64_t c, int64_t m, int64_t n, int64_t esize,
                            int64_t threads) {
  CpuCutLayout l;
  l.tiled = cpu_tiled_layout(rows - r, cols - c, m, n, esize, threads);
  l.cols_off = align64(l.tiled.total);
  l.rows_off = l.cols_off + align64(rows * c * esize);
  l.total = l.rows_off + align64(r * (cols - c) * esize);
  return l;
}

CpuTiledLayout cpu_tiled_layout(int64_t rows, int64_t cols, int64_t m, int64_t n, int64_t esize, int64_t threads) {
  CpuTiledLayout l;
  l.m = m, l.n = n, l.Mp = rows / m, l.Np = cols / n;
  l.block_words = (l.Mp * l.Np + 63) / 64;
  l.band_words = (std::max(m * l.Np, l.Mp * n) + 63) / 64;
  l.visited_off = 0;
  l.leaders_off = align64(l.block_words * 8);
  l.band_off = l.leaders_off + align64(l.block_words * 8);
  l.block_off = l.band_off + align64(l.band_words * 8);
  l.thread_bytes = l.block_off + align64(m * n * esize);
  l.total = threads * l.thread_bytes;
  return l;
}

bool cpu_onchip_fits(int64_t rows, int64_t cols, int64_t esize) {
  return rows * cols <= kCpuOnchipMaxElems && rows * cols * esize <= kCpuOnchipMaxBytes;
}

CpuOnchipLayout cpu_onchip_layout(int64_t batch, int64_t rows, int64_t cols, int64_t esize, int64_t threads) {
  CpuOnchipLayout l;
  const int64_t mn = std::max<int64_t>(1, rows * cols);
  const int64_t run = std::min(kCpuOnchipChunkElems, kCpuOnchipChunkBytes / esize);
  l.per_chunk = std::max<int64_t>(1, std::min(std::max<int64_t>(1, batch), run / mn));
  l.chunk_elems = l.per_chunk * mn;
  l.table_off = 0;
  l.buffers_off = align64(l.chunk_elems * 4);
  l.thread_bytes = align64(l.chunk_elems * esize);
  l.total = l.buffers_off + threads * l.thread_bytes;
  return l;
}

namespace {

Plan base_plan(const Problem& p, Algo a, std::string why) {
  Plan plan;
  plan.algo = a;
  plan.problem = p;
  plan.reason = std::move(why);
  return plan;
}

Plan cpu_catanzaro(const Problem& p, const DeviceCaps& caps, Algo a, std::string why) {
  Plan plan = base_plan(p, a, std::move(why));
  const bool r2c = a == Algo::R2C;
  // C2R works on (m, n) = (rows, cols); R2C on the (cols, rows) view. Either way the row shuffle runs on
  // rows of length n, the columns have length m.
  const int64_t m = r2c ? p.cols : p.rows;
  const int64_t n = r2c ? p.rows : p.cols;
  plan.c2r = c2r::Params(m, n);
  plan.threads = std::max(1, caps.num_threads);
  plan.panel = std::min(n, cpu_panel_width(p.esize));
  plan.scratch_bytes = cpu_scratch_layout(m, n, p.esize, plan.threads, plan.panel).total;
  return plan;
}

Plan cpu_skinny(const Problem& p, const DeviceCaps& caps) {
  Plan plan = base_plan(p, Algo::Skinny,
                        "short side <= 64: tiles of the long side transposed in cache, then their super-elements "
                        "by cycle following (sequence 2.1), the remainder rows cut and spread");
  const int64_t N = std::max(p.rows, p.cols), F = std::min(p.rows, p.cols);
  plan.threads = std::max(1, caps.num_threads);
  plan.tile_m = cpu_skinny_tile(N, F, p.esize);
  plan.scratch_bytes = cpu_skinny_layout(N, F, p.esize, plan.threads, plan.tile_m).total;
  return plan;
}

// The three-stage tiled path where both sides have a block side in range (cpu_tiled_side): false elsewhere.
bool cpu_tiled(const Problem& p, const DeviceCaps& caps, Plan* out) {
  int64_t m = 0, n = 0;
  if (!cpu_tiled_blocks(p.rows, p.cols, p.esize, &m, &n)) return false;
  const int64_t Mp = p.rows / m, Np = p.cols / n, es = p.esize;
  Plan plan = base_plan(
      p, Algo::Tiled32,
      "rows " + std::to_string(p.rows) + " = " + std::to_string(Mp) + " x " + std::to_string(m) + ", cols " +
          std::to_string(p.cols) + " = " + std::to_string(Np) + " x " + std::to_string(n) +
          ": Karlsson's three stages (sequence 3.2 with its last step split): in each row band the (" +
          std::to_string(m) + ", " + std::to_string(Np) + ") super-elements of " + counted(n * es, "byte") +
          " by cycle following (0100!), the (" + std::to_string(Mp) + ", " + std::to_string(Np) +
          ") blocks of " + std::to_string(m) + " x " + std::to_string(n) +
          " by cycle following, each transposed on the way (100! + 0010!), then in each column band the (" +
          std::to_string(Mp) + ", " + std::to_string(n) + ") super-elements of " + counted(m * es, "byte") +
          " (0100!); three passes");
  plan.threads = std::max(1, caps.num_threads);
  plan.tile_m = m;
  plan.tile_n = n;
  plan.scratch_bytes = cpu_tiled_layout(p.rows, p.cols, m, n, es, plan.threads).total;
  *out = std::move(plan);
  return true;
}

// The extra memory the CPU planner lets a plan take by choice (the cut path's saved rows and columns, Catanzaro's
// long-row buffers): 1 MiB plus 0.1% of a matrix.
int64_t cpu_extra_budget(const Problem& p) { return (int64_t{1} << 20) + p.rows * p.cols * p.esize / 1000; }

// The cut path where the tiled path finds no blocks but a few rows / columns less does (the fewest elements saved),
// and the saved rows and columns fit 1 MiB plus 0.1% of the tensor: false elsewhere.
bool cpu_cut(const Problem& p, const DeviceCaps& caps, Plan* out) {
  // The first few cuts of each side that leave a block side, then the pair whose blocks fit (cpu_tiled_blocks) and
  // that saves the fewest elements.
  auto first_cuts = [&](int64_t x) {
    std::vector<int64_t> out;
    for (int64_t r = 0; r <= kCpuMaxCut && x - r >= 2 && out.size() < 4; ++r) {
      if (cpu_tiled_side(x - r, p.esize) != 0) out.push_back(r);
    }
    return out;
  };
  const int64_t es = p.esize;
  int64_t r = -1, c = -1, m = 0, n = 0;
  if (cpu_tiled_blocks(p.rows, p.cols, es, &m, &n)) return false;  // nothing to cut
  for (int64_t rr : first_cuts(p.rows)) {
    for (int64_t cc : first_cuts(p.cols)) {
      int64_t mm = 0, nn = 0;
      if (rr + cc == 0 || !cpu_tiled_blocks(p.rows - rr, p.cols - cc, es, &mm, &nn)) continue;
      if (r < 0 || p.rows * cc + rr * (p.cols - cc) < p.rows * c + r * (p.cols - c)) r = rr, c = cc, m = mm, n = nn;
    }
  }
  if (r < 0) return false;
  const int64_t R = p.rows - r, C = p.cols - c;
  if ((p.rows * c + r * C) * es > cpu_extra_budget(p)) return false;
  Plan plan = base_plan(
      p, Algo::Cut,
      "no block-sized divisors of " + std::string(r > 0 && c > 0 ? "either side" : (r > 0 ? "the rows" : "the columns")) +
          ": Karlsson's cut of " +
          (r > 0 && c > 0 ? counted(r, "row") + " and " + counted(c, "column")
                          : (r > 0 ? counted(r, "row") : counted(c, "column"))) +
          " (saved, then spread back), the " + std::to_string(R) + " x " + std::to_string(C) +
          " rest by the three stages in blocks of " + std::to_string(m) + " x " + std::to_string(n) + "; " +
          std::to_string(3 + (r > 0) + (c > 0)) + " passes");
  plan.threads = std::max(1, caps.num_threads);
  plan.tile_m = m;
  plan.tile_n = n;
  plan.cut_rows = r;
  plan.cut_cols = c;
  plan.scratch_bytes = cpu_cut_layout(p.rows, p.cols, r, c, m, n, es, plan.threads).total;
  *out = std::move(plan);
  return true;
}

// The in-cache path for small matrices (cpu_onchip_layout); false where a matrix is too large or the scratch exceeds
// cpu_extra_budget (many threads).
bool cpu_onchip(const Problem& p, const DeviceCaps& caps, Plan* out) {
  if (!cpu_onchip_fits(p.rows, p.cols, p.esize)) return false;
  const int64_t threads = std::max(1, caps.num_threads);
  const CpuOnchipLayout l = cpu_onchip_layout(p.batch, p.rows, p.cols, p.esize, threads);
  if (l.total > cpu_extra_budget(p)) return false;
  Plan plan = base_plan(p, Algo::OnChip,
                        "matrices of " + std::to_string(p.rows * p.cols * p.esize) +
                            " B: runs of " + std::to_string(l.per_chunk) +
                            " whole matrices copied into a thread's buffer (in cache), then written back "
                            "transposed through a shared index table; one pass");
  plan.threads = threads;
  plan.scratch_bytes = l.total;
  *out = std::move(plan);
  return true;
}

}  // namespace

std::vector<Plan> cpu_candidates(const Problem& p, const DeviceCaps& caps, Algo forced) {
  std::vector<Plan> out;
  const int64_t lo = std::min(p.rows, p.cols), hi = std::max(p.rows, p.cols);
  auto want = [&](Algo a) { return forced == Algo::Auto || forced == a; };
  // The in-cache path goes first for batches of matrices of at most 64 elements and 512 B (2 x 2 .. 8 x 8, 16 x 4,
  // 2 x 32): there it ran 1.3-16x faster than the best of the square and skinny plans (median 3.7x, 2 threads),
  // whose loops per matrix (or tiles of 32 x 32 on a 2 x 2 matrix) cost more than the moves. On larger matrices the
  // plans traded places (median 1.0x; the skinny plan's long moves up to 2.7x faster)
  // (benchmarks/cpu_onchip_rule.py, benchmarks/results/cpu-2t/cpu_onchip_rule.log). Elsewhere it is a forced plan,
  // or a fallback under a workspace limit.
  Plan onchip;
  const bool has_onchip = want(Algo::OnChip) && lo >= 2 && cpu_onchip(p, caps, &onchip);
  const bool onchip_first = p.batch >= 2 && p.rows * p.cols <= kCpuOnchipFirstElems &&
                            p.rows * p.cols * p.esize <= kCpuOnchipFirstBytes;
  if (has_onchip && onchip_first) out.push_back(onchip);
  if (want(Algo::Square) && p.rows == p.cols) {
    out.push_back(base_plan(p, Algo::Square, "rows == cols: swap tile pairs across the diagonal, no scratch"));
  }
  if (want(Algo::Skinny) && lo <= kSkinnyMax && lo >= 2 && hi > lo) {
    out.push_back(cpu_skinny(p, caps));
  }
  Plan tiled;
  if (want(Algo::Tiled32) && p.rows != p.cols && lo >= 2 && cpu_tiled(p, caps, &tiled)) out.push_back(tiled);
  Plan cut;
  const bool has_cut = want(Algo::Cut) && p.rows != p.cols && lo >= 2 && cpu_cut(p, caps, &cut);
  // The cut against Catanzaro's faster direction, on 56 random shapes the cut takes (benchmarks/cpu_cut_rule.py,
  // seeds 1 and 2; benchmarks/results/cpu-16t/cpu_cut_rule*.log), in median time ratio: with 16 threads 0.22x for
  // 1-byte elements, 0.46-0.56x for 2-byte ones, 1.07x for 4-byte ones (0.39-1.47x, even) and 1.56x for 8-byte ones
  // (0.52-3.37x); with 8 threads 0.25x / 0.54x / 0.91x / 1.03x. So from 16 threads on, Catanzaro goes first for
  // elements of 8 bytes or more and the cut follows it.
  const bool cut_after = has_cut && caps.num_threads >= kCpuCutSecondThreads && p.esize >= kCpuCutSecondEsize;
  if (has_cut && !cut_after) out.push_back(cut);
  // Every return below goes through finish(), which appends the cut behind Catanzaro's plans where it goes second.
  auto finish = [&]() {
    if (!cut_after) return out;
    const auto first = std::find_if(out.begin(), out.end(),
                                    [](const Plan& c) { return c.algo == Algo::C2R || c.algo == Algo::R2C; });
    if (first != out.end()) {  // not where the cut is forced
      first->reason += "; ahead of the cut plan with " + std::to_string(caps.num_threads) +
                       " threads (where it measured faster than the cut)";
      cut.reason = "with " + std::to_string(caps.num_threads) + " threads after Catanzaro's: " + cut.reason;
    }
    out.push_back(cut);
    return out;
  };
  // Catanzaro's direction. C2R shuffles whole rows of `cols` elements, one buffer per thread; R2C (on the cols x rows
  // view) whole rows of `rows` elements. The direction whose row shuffle takes the long side ran faster, and more so
  // with more threads (benchmarks/cpu_catanzaro_direction.py, 80 random shapes; median R2C / C2R time by aspect ratio,
  // wide ones then tall ones from an aspect of 2): 2 threads 1.09-1.46x and 0.81-0.95x, 4 threads 1.08-1.85x and
  // 0.70-0.84x, 16 threads 1.05-4.3x and 0.30-0.75x (benchmarks/results/cpu-2t/ and cpu-16t/
  // cpu_catanzaro_direction*.log). Tall ones under an aspect of 2 ran C2R faster (1.06-1.13x, two shapes), though its
  // row shuffle takes the short side there. So R2C comes first where rows >= 2 cols, C2R elsewhere, where its row
  // buffers fit the cut path's budget (1 MiB + 0.1% of the tensor); where they do not, the other direction comes
  // first if its buffers are smaller.
  if (has_onchip && !onchip_first) {
    onchip.reason = "forced or fallback: " + onchip.reason;
    out.push_back(onchip);
  }
  if (!want(Algo::C2R) && !want(Algo::R2C)) return finish();
  const bool r2c_first = p.rows >= 2 * p.cols;
  Plan first = cpu_catanzaro(p, caps, r2c_first ? Algo::R2C : Algo::C2R, "");
  Plan second = cpu_catanzaro(p, caps, r2c_first ? Algo::C2R : Algo::R2C, "");
  auto name = [](const Plan& c) { return c.algo == Algo::R2C ? "R2C on the cols x rows view" : "C2R"; };
  auto shuffle = [&](const Plan& c) {  // the side its row shuffle runs on (rows of c2r.n elements)
    return std::string(c.c2r.n > c.c2r.m ? "the long side" : (c.c2r.n < c.c2r.m ? "the short side" : "a side"));
  };
  const std::string rule = r2c_first ? "rows >= 2 cols: " : "rows < 2 cols: ";
  const bool fits = first.scratch_bytes <= cpu_extra_budget(p);
  if (fits || second.scratch_bytes >= first.scratch_bytes) {
    first.reason = rule + name(first) + ", its row shuffle on " + shuffle(first) +
                   " (measured faster on the CPU), its row buffers (" + std::to_string(first.scratch_bytes) + " B) " +
                   (fits ? "within 1 MiB + 0.1% of the tensor" : "no more than the other direction's");
    second.reason = "forced or fallback: the other Catanzaro direction";
  } else {
    second.reason = rule + name(second) + ", its row shuffle on " + shuffle(second) + " (" + name(first) +
                    "'s row buffers, " + std::to_string(first.scratch_bytes) + " B, exceed 1 MiB + 0.1% of the tensor)";
    first.reason = "forced or fallback: the other Catanzaro direction";
    std::swap(first, second);
  }
  for (Plan* c : {&first, &second}) {
    if (want(c->algo)) out.push_back(std::move(*c));
  }
  return finish();
}

Plan make_plan(const Problem& p, const DeviceCaps& caps, Algo forced, int64_t workspace_limit) {
  if (p.batch == 0 || p.rows == 0 || p.cols == 0 || p.rows == 1 || p.cols == 1) {
    // The bytes of a vector or an empty tensor already are their transpose; every forced algorithm agrees.
    return base_plan(p, Algo::Noop, p.batch == 0 || p.rows == 0 || p.cols == 0
                                         ? "empty tensor: nothing to move"
                                         : "a single row or column: the bytes already are the transpose");
  }
  if (forced == Algo::Noop) throw PlanError{"algorithm 'noop' only applies to empty tensors and vectors"};
  std::vector<Plan> cands =
      caps.backend == Backend::CPU ? cpu_candidates(p, caps, forced) : gpu_candidates(p, caps, forced);
  if (cands.empty()) {
    std::ostringstream os;
    os << "algorithm '" << algo_name(forced) << "' cannot transpose a " << p.rows << " x " << p.cols
       << " matrix on " << (caps.backend == Backend::CPU ? "CPU" : "GPU");
    throw PlanError{os.str()};
  }
  if (workspace_limit < 0) return cands.front();
  for (const Plan& c : cands) {
    if (c.scratch_bytes <= workspace_limit) {
      Plan chosen = c;
      if (&c != &cands.front()) {
        chosen.reason += " (the workspace limit of " + std::to_string(workspace_limit) + " B excluded " +
                         algo_name(cands.front().algo) + ", which needs " +
                         std::to_string(cands.front().scratch_bytes) + " B)";
      }
      return chosen;
    }
  }
  const Plan* smallest = &cands.front();
  for (const Plan& c : cands) {
    if (c.scratch_bytes < smallest->scratch_bytes) smallest = &c;
  }
  std::ostringstream os;
  os << "no algorithm fits the workspace limit of " << workspace_limit << " B for a " << p.batch << " x ("
     << p.rows << " x " << p.cols << ") tensor of " << p.esize << "-byte elements; the smallest, "
     << algo_name(smallest->algo) << ", needs " << smallest->scratch_bytes << " B";
  throw PlanError{os.str()};
}

}  // namespace plan
}  // namespace torch_inplace
