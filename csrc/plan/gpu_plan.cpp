// GPU planner (CUDA and HIP). Owned by the GPU engine; see transpose_plan.h for the contract.
//
// Candidates, best first:
//   onchip  (fits on chip)      one cooperative kernel: every tile into shared memory, grid barrier, write back;
//   square  (rows == cols)      tile-pair swaps, one pass, no scratch;
//   skinny  (short side 2..64)  sequence 2.1 (k x F tiles on chip, then k-element super-elements by cycle
//                               following) with a Karlsson cut of the N mod k rows (plan_skinny21);
//                               TORCH_INPLACE_GPU_SKINNY=catanzaro / plain keep the older Catanzaro variants;
//   tiled21/22 (short | long)   sequence 2.1 (tall) / 2.2 (wide) with the g x g tiles swapped in place and the
//                               super-elements of the short side g by cycle following: two passes (plan_tiled);
//   tiled31/32 (gcd-rich)       sequences 3.1 / 3.2: super-elements by cycle following, m x n tiles on chip or
//                               swapped in place, super-elements again (plan_tiled3; tiles by paper 000's
//                               Algorithm 2); auto where the tile is a square of a large common divisor;
//   c2r/r2c                     Catanzaro (paper 003), the direction whose row shuffle runs on the short side
//                               first (or the one with full column panels); the other direction as a fallback;
//   cut (near-square)           the long side cut to a multiple of the short one, the rest tiled (a square: one
//                               pass), the cut rows / columns re-inserted after an ordered shift (plan_cut);
//   padded (storage slack)      the long side padded to a multiple of the short one in the slack of a tensor from
//                               empty_transposable, then tiled (plan_padded): first only ahead of narrow panels.
// Each Catanzaro plan picks its column-step engine (panels through the shared memory of the whole GPU, one
// cooperative kernel per step, where a block's share of the rows is long enough; else one pass through a
// cluster's distributed shared memory when a panel of the columns fits; else the universal reflection +
// cycle-following kernels) and its row-shuffle
// engine (shared memory when a row fits, else global row slots), and sizes its scratch exactly.
// Thresholds (panel widths, cluster sizes, row block sizes) come from benchmarks/tune_transpose.py; its tables
// are benchmarks/results/NVIDIA_H200/tune_transpose*.json. Measured there: 128-byte panels with clusters of up
// to 8 blocks were best or within 5% on every large shape (16/32-byte panels lost up to 3x on 17085 x 15453;
// clusters capped at 2 or 4 lost up to 3x), row-block size did not matter (+-5%), and sizing cluster grids by
// cudaOccupancyMaxActiveClusters plus power-of-two clusters gained up to 2x. The rules added since (the whole-GPU
// panels, the tiled, cut, padded, on-chip and skinny rules, Catanzaro's direction) were set from the same-run A/B
// measurements each cites below (results/NVIDIA_H200/history_*.log and compare_*.py), so the default plans that
// tune_transpose.json records for its shapes may predate them.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "plan/tiled.h"
#include "plan/transpose_plan.h"

namespace torch_inplace {
namespace plan {

namespace {

// Test/benchmark knobs: environment variables read when a plan is made. Plans are cached per shape, so clear the
// cache (torch.ops.inplace._clear_plan_cache()) after changing one. Unset, each keeps the planner's choice; every
// engine stays reachable for tests and comparisons. All TORCH_INPLACE_GPU_*:
//   COLUMNS=universal|cluster|grid    the column engine: universal kernels, clusters, or whole-GPU panels wherever
//                                     they fit (GRID_BUFFERS=1|2: panels held at once)
//   GRID_ASYNC=0|1, GRID_GATHER=general, GRID_ROW_LANES=<pow2>, GRID_SPLIT=<k>   the panels' cp.async gather, general
//                                     (not linearly stepped) gather, lanes per row, and split into k column groups
//   PANEL_BYTES, ROW_BLOCK_BYTES, MAX_CLUSTER   sizes of column panels, row blocks and the largest thread-block cluster
//   DIRECTION=short                   Catanzaro's direction on the row shuffle's short side (for every shape with
//                                     DIRECTION_GRID=0 too, which keeps it where only the other gets full panels)
//   ROWS=global                       the global row slots; ROW_WALK=general|power2 the general C2R row walk / the
//                                     power-of-two blocks; ROW_MIN_BLOCKS=0|3|4 the row kernels' register bound
//   FUSE_ROTATION=0, FUSE_BUFFERS=1|2, FUSE_STAGE=elements   the rotation fused into the row shuffle: off, its band
//                                     buffers, staging element by element
//   ONCHIP=0 (on-chip plans out of auto plans), ONCHIP_WAVES=0 (only its batched waves), ONCHIP_SKINNY=0|1 (the
//                                     skinny on-chip kernel never / wherever it applies), ONCHIP_STASH=0 (no register
//                                     stash)
//   TILED=0 (every tiled sequence out of auto plans), TILED3=0|1 (sequences 3.1 / 3.2 never / wherever they apply),
//                                     TILED3_SQUARE_BYTES (their square tiles' limit)
//   SQUARE_TILE=32                    tile-pair swaps at 32 x 32 tiles for every element size
//   SKINNY=cut|catanzaro|plain        skinny by sequence 2.1 with a cut always; for short sides <= 64, the older
//                                     Catanzaro-based engines (with / without super-elements); SKINNY_BYTES its
//                                     super-element size, SKINNY_TILEVEC=0|vec its tile pass's vector moves,
//                                     SKINNY_MAX_BYTES the auto skinny range past 64 fields, SKINNY_OFF_GRID=0 skinny
//                                     behind Catanzaro where its column panels are narrow
//   CUT=0|1, PADDED=0                 Karlsson's cut never / wherever it applies; the padded plan out of auto plans
// The CPU planner reads TORCH_INPLACE_CPU_TILED_BYTES (transpose_plan.cpp).
bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}

int64_t env_int(const char* name, int64_t dflt) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == 0) return dflt;
  return std::strtoll(v, nullptr, 10);
}

int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Bytes of shared memory a block may use (leave 1 KiB for the runtime's reservation).
int64_t smem_budget(const DeviceCaps& caps) {
  return std::max<int64_t>(48 * 1024, caps.smem_per_block > 0 ? caps.smem_per_block - 1024 : 48 * 1024);
}

// Tuned defaults (benchmarks/tune_transpose.py; TORCH_INPLACE_GPU_PANEL_BYTES / _MAX_CLUSTER / _ROW_BLOCK_BYTES
// override them for tuning runs).
constexpr int64_t kPanelBytes = 128;      // widest column panel in bytes (one 128-byte line per row)
// Target bytes of short rows per shared-memory row-shuffle block (whole rows, at least one; the fused rotations'
// bands too): 48 KiB. Same-run A/B on an H200 against 16 KiB, GPU time per shape of the general and prime groups
// (benchmarks/results/NVIDIA_H200/history_row_block_bytes.log): rows under 16 KiB 1.06-1.29x median by group for
// fp64, bf16 and fp32 with gcd > 1, fp32 gcd 1 1.00x, u8 1.02-1.05x; fp32 gcd > 1 rows of 16-32 KiB 1.04x; worst
// shape 0.98x. Rows past 24 KiB keep one row a block (64 KiB: two fused rows of 26-33 KiB ran 0.94-0.98x).
constexpr int64_t kRowBlockBytes = 49152;
// Whole-GPU column panels where a block's runs are at least this long (the shortest measured; shorter runs, from
// 1- and 2-byte elements, keep the cluster engine).
constexpr int64_t kGridColumnRunBytes = 96;
// Catanzaro's direction for one matrix of 4-byte elements with coprime sides (gpu_candidates): R2C only for tall
// matrices whose short side is under this many elements; only where the long side is within the measured range
// (beyond it, e.g. 183377 x 183383 fp32, C2R's long rows no longer fit in shared memory and it ran 1.23x slower).
constexpr int64_t kTallR2CShortMax = 6000;
// The fused C2R pre-rotation stages its rows by runs of b columns where a run is at least this many bytes (a few
// 16-byte copies) and elements are at most 4 bytes; shorter runs and 8- / 16-byte elements go element by element.
// H200, benchmarks/compare_fused_rotation.py (general shapes with gcd > 1 whose plan stages by runs, runs against
// elements in the same run): fp32 median 1.028x (0.99-1.09x, 18 shapes), fp64 0.995x (0.95-1.03x, 13 shapes).
constexpr int64_t kFuseRunBytes = 128;
constexpr int64_t kFuseRunMaxElementBytes = 4;
constexpr int64_t kDirectionMeasuredMax = 20000;
// The shared-memory row kernels (blocks of 512 threads) compiled for kRowBoundBlocks blocks per SM (__launch_bounds__
// (512, 3): 40 registers a thread, against 41-60 with the wide bound, which left 2 blocks per SM) where rows are at
// most kRowBoundRowBytes and that fits more blocks per SM. Measured on an H200 (history_row_bounds.log, GPU time per
// shape against the wide bound in the same run). Forced on every shape: fp32 rows up to 45 KiB 1.02-1.05x median by
// group, longer rows 0.95-1.03x (the gcd 1 rows of 57-76 KB 0.95-0.99x); blocks of 480 / 448 threads
// (c2r_walk_threads) 0.97-1.00x, so 512 only; fp64 kernels already at 3 blocks per SM 0.96-1.00x (the occupancy
// comparison leaves them out); bound 4 (32 registers, spills) 0.92-0.97x for gcd 1. This rule: fp32 gcd 1 short rows
// 1.047x / 1.039x (C2R / R2C, min 1.004), fused C2R 1.020x, every other group 1.000-1.002x (min 0.978).
constexpr int64_t kRowBoundRowBytes = 45 * 1024;
constexpr int64_t kRowBoundBlocks = 3;
// Panels in shared memory at once. Two (write one back while gathering the next, at half the width) measured
// 0-12% slower than one on an H200 (benchmarks/compare_column_engines.py), so one.
constexpr int64_t kGridColumnBuffers = 1;
// The gather's global -> shared copies through cp.async (no register round trip, every copy of a lane in flight)
// where a block's runs are at least kGridAsyncRunBytes long (R elements of es bytes; TORCH_INPLACE_GPU_GRID_ASYNC=0|1
// forces it off / on). Measured on an H200 (benchmarks/bench_transpose.py, general and prime shapes, GPU time per
// shape against the register gather, history_grid_async_experiment.log): with runs of 584 bytes and more the
// plans ran 0.997-1.15x (medians 1.02-1.14x by dtype and direction), with shorter fp64 runs 0.91-1.01x, shorter
// fp32 R2C runs 0.99-1.13x (median 1.005); fp32 C2R 13441 x 9721 (408-byte runs) 0.95x per kernel. In the sixth
// session, with slower row kernels around it, it had moved no median.
constexpr int64_t kGridAsyncRunBytes = 600;
// Whole-GPU panels in column parts (the split below) where a block's gather runs, ceil(m / SMs) elements, are
// shorter than kGridSplitBelowBytes: q parts, q the smallest of 2..4 that makes them kGridSplitRunBytes or longer
// (else 4). Measured on an H200 (history_grid_split.log: q = 1..4 forced on every general shape, same run): GPU time
// per shape with fp32 runs of 96-300 bytes 1.00-1.08x median by q (0.94-1.22x), 300-500 bytes 0.97-0.99x, so only
// the short ones split (55 of the 200 fp32 shapes, 1.055x median; the general fp32 median 1177 -> 1224 GB/s). fp64
// runs of 300-600 bytes gained 1.01-1.06x too; not taken yet (one threshold in bytes). 4- and 8-byte elements only:
// bf16 lost 4-11% with every q (median 645-695 against 725 GB/s unsplit, two runs), u8 up to 9% with q = 4
// (history_grid_split.log).
constexpr int64_t kGridSplitBelowBytes = 300;
constexpr int64_t kGridSplitMinElementBytes = 4, kGridSplitMaxElementBytes = 8;
constexpr int64_t kGridSplitRunBytes = 400;
constexpr int64_t kGridSplitMax = 4;

void plan_catanzaro(Plan& plan, const DeviceCaps& caps, int64_t super = 1, bool fuse_rotation = true) {
  const Problem& p = plan.problem;
  const int64_t m = plan.c2r.m, n = plan.c2r.n * super, es = p.esize;  // n: elements per row
  const int64_t budget = smem_budget(caps);
  const int64_t panel_bytes = env_int("TORCH_INPLACE_GPU_PANEL_BYTES", kPanelBytes);
  const int64_t max_cluster = std::min<int64_t>(caps.max_cluster, env_int("TORCH_INPLACE_GPU_MAX_CLUSTER", 8));
  const int64_t row_block_bytes = env_int("TORCH_INPLACE_GPU_ROW_BLOCK_BYTES", kRowBlockBytes);
  Plan::GpuSteps g;
  int64_t off = 0;
  // Row shuffle.
  const int64_t row_bytes = n * es;
  const bool rows_global = env_is("TORCH_INPLACE_GPU_ROWS", "global");
  // c2r::staged_bytes: the rows are staged with 16-byte copies, up to 31 bytes more than the rows themselves.
  if (c2r::staged_bytes(row_bytes) <= budget && !rows_global) {
    g.row_block = std::max<int64_t>(1, std::min<int64_t>(row_block_bytes / row_bytes, m * p.batch));
    g.row_block = std::min<int64_t>(g.row_block, std::max<int64_t>(1, (budget - 31) / row_bytes));
    g.row_smem = c2r::staged_bytes(g.row_block * row_bytes);
  } else if (!rows_global && max_cluster > 1 && ceil_div(row_bytes, budget) <= max_cluster) {
    // A row too long for one block: split over a cluster's distributed shared memory, still one pass.
    g.row_cluster = ceil_div(row_bytes, budget);
    g.row_part = ceil_div(n, g.row_cluster);
    g.row_smem = g.row_part * es;
  } else {
    g.row_block = 0;
    // Global row slots, as many as the memory target allows (0.1% of the tensor + 1 MiB), at least one.
    const int64_t allowed = (p.batch * p.rows * p.cols * es) / 1000 + (int64_t{1} << 20);
    const int64_t fit = std::max<int64_t>(1, allowed / align64(row_bytes));
    g.row_slots = std::min<int64_t>({m * p.batch, int64_t{2} * std::max(1, caps.num_sms), fit});
    g.slots_off = off;
    off += g.row_slots * align64(row_bytes);
  }
  // The panels' gather through cp.async where a block's runs are kGridAsyncRunBytes or longer
  // (TORCH_INPLACE_GPU_GRID_ASYNC=0|1 decides for comparisons); 4-, 8- and 16-byte elements.
  auto grid_async_for = [&](int64_t run) -> int64_t {
    return env_int("TORCH_INPLACE_GPU_GRID_ASYNC", run * es >= kGridAsyncRunBytes ? 1 : 0) != 0 &&
           (es == 4 || es == 8 || es == 16);
  };
  // Column steps, first choice: panels through the shared memory of the whole GPU (one block per SM holds
  // R = ceil(m / SMs) rows of the result), as wide as that memory allows -- runs of kilobytes per row instead of
  // one 128-byte line. Needs no super-elements and a panel no wider than m. A block gathers its rows from runs of
  // about R elements (the fine shift spreads each result row over W source rows). Earlier sessions measured the
  // cluster engine ahead below 256 (C2R) / 400 (R2C) bytes; the sixteenth session's H200 runs
  // (benchmarks/compare_short_runs.py: every general shape of two seeds that those thresholds gave to the cluster
  // engine, history_grid_short_runs.log) found the whole-GPU panels ahead at every run length from 96 bytes:
  // fp32 C2R 1.27-1.47x, fp32 R2C 1.06-1.39x, fp64 C2R 1.07-1.28x, fp64 R2C 0.95-1.14x (median 1.04).
  if (super == 1 && caps.num_sms > 0 && !env_is("TORCH_INPLACE_GPU_COLUMNS", "universal") &&
      !env_is("TORCH_INPLACE_GPU_COLUMNS", "cluster")) {
    const int64_t R = ceil_div(m, caps.num_sms);
    const int64_t nbuf = std::min<int64_t>(2, std::max<int64_t>(1, env_int("TORCH_INPLACE_GPU_GRID_BUFFERS",
                                                                           kGridColumnBuffers)));
    int64_t W = std::min({n, m, budget / (nbuf * R * es)});
    W -= W % 2;  // even: the gather's diagonal writes to shared memory hit distinct banks
    const bool forced_grid = env_is("TORCH_INPLACE_GPU_COLUMNS", "grid");
    if (W * es >= 256 && W >= 2 && (R * es >= kGridColumnRunBytes || forced_grid)) {
      g.grid_width = W;
      g.grid_rows = R;
      g.grid_blocks = ceil_div(m, R);
      g.grid_smem = nbuf * R * W * es;
      g.grid_buffers = nbuf;
      g.grid_row_lanes = env_int("TORCH_INPLACE_GPU_GRID_ROW_LANES", 0);  // tuning knob: a power of two
      g.grid_async = grid_async_for(R);
      // The column shuffles' gather with its indices stepped linearly (grid_gather_shuffle);
      // TORCH_INPLACE_GPU_GRID_GATHER=general keeps the general gather (comparisons).
      g.grid_linear = env_is("TORCH_INPLACE_GPU_GRID_GATHER", "general") ? 0 : 1;
    }
  }
  // Else the widest panel (<= kPanelBytes, a power of two in elements, no wider than needed) whose m rows fit in
  // the distributed shared memory of one cluster.
  if (g.grid_width == 0 && max_cluster > 1 && !env_is("TORCH_INPLACE_GPU_COLUMNS", "universal")) {
    int64_t npow = 1;
    while (npow < n) npow *= 2;
    for (int64_t W = std::min(std::max<int64_t>(1, panel_bytes / es), npow); W >= 1; W /= 2) {
      const int64_t panel = m * W * es;
      // Power-of-two clusters pack the GPCs (a cluster of 5 left 22 of 132 SMs idle on an H200).
      int64_t cs = 1;
      while (cs < ceil_div(panel, budget)) cs *= 2;
      if (cs > max_cluster) continue;
      const int64_t R = ceil_div(m, cs);
      g.col_width = W;
      g.col_cluster = cs;
      g.col_rows = R;
      g.col_smem = R * W * es;
      break;
    }
  }
  // C2R row walks with c > 1 drop their c terms where c divides the row kernel's block size (shuffle_staged_rows'
  // kStepC0); TORCH_INPLACE_GPU_ROW_WALK=general keeps the general walk (comparisons).
  g.row_walk_c0 = env_is("TORCH_INPLACE_GPU_ROW_WALK", "general") ? 0 : 1;
  // Where c does not divide the block size, the C2R row kernels take one that it divides if that keeps 7/8 of the
  // threads (c2r_walk_threads: 480 / 960 for c = 3, 5, 6; 448 / 896 for c = 7); TORCH_INPLACE_GPU_ROW_WALK=power2
  // keeps the power-of-two blocks (comparisons).
  g.row_walk_fit = g.row_walk_c0 != 0 && !env_is("TORCH_INPLACE_GPU_ROW_WALK", "power2") ? 1 : 0;
  // The shared-memory row kernels on blocks of 512 threads compiled for kRowBoundBlocks blocks per SM (40 registers a
  // thread) where rows are at most kRowBoundRowBytes, 4- and 8-byte elements, and where that fits more blocks per SM
  // than the wide bound (the launcher decides). TORCH_INPLACE_GPU_ROW_MIN_BLOCKS=0|3|4 forces the bound on every
  // block of at most 512 threads (comparisons, tests).
  // Only the bounds the launcher has a variant for (c2r::row_bound_variant).
  const int64_t forced_bound = env_int("TORCH_INPLACE_GPU_ROW_MIN_BLOCKS", -1);
  if (forced_bound >= 0) {
    g.row_min_blocks = c2r::row_bound_variant(forced_bound, es) ? forced_bound : 0;
    g.row_bounds_denser = 0;
  } else if (c2r::row_bound_variant(kRowBoundBlocks, es) && row_bytes <= kRowBoundRowBytes) {
    g.row_min_blocks = kRowBoundBlocks;
  }
  // The C2R pre-rotation / R2C post-rotation (c > 1) fused into the row shuffle: a block's chunk of rows starts
  // with a head of at least c - 1 rows (a band's rotated rows reach that far past it), held in shared memory
  // beside the band in work.
  if (fuse_rotation && plan.c2r.c > 1 && super == 1 && p.batch == 1 && g.row_block > 0 &&
      !env_is("TORCH_INPLACE_GPU_FUSE_ROTATION", "0")) {
    const int64_t head = std::max(g.row_block, plan.c2r.c - 1);
    const int64_t head_smem = c2r::staged_bytes(head * row_bytes);
    const int64_t band_smem = c2r::staged_bytes(g.row_block * row_bytes);
    if (head <= m && head < (int64_t{1} << 31) && head_smem + band_smem <= budget) {
      g.fuse_head = head;
      g.fuse_rows = g.row_block;
      // Two band buffers where one block per SM would run anyway (head and band over half an SM's shared memory:
      // nothing else overlaps the block's staging) and they fit; TORCH_INPLACE_GPU_FUSE_BUFFERS=1|2 chooses.
      const int64_t want = env_int("TORCH_INPLACE_GPU_FUSE_BUFFERS", 0);
      const bool fits2 = head_smem + 2 * band_smem <= budget;
      const bool alone = 2 * (head_smem + band_smem) > caps.smem_per_block;
      g.fuse_bufs = fits2 && (want == 2 || (want != 1 && alone)) ? 2 : 1;
      g.fuse_smem = head_smem + g.fuse_bufs * band_smem;
      // C2R stages its rotated rows by runs of b columns (16-byte copies where a run's shared and global addresses
      // agree mod 16) where a run is at least kFuseRunBytes long and elements at most kFuseRunMaxElementBytes, else
      // element by element; TORCH_INPLACE_GPU_FUSE_STAGE=elements keeps the elements (comparisons).
      g.fuse_runs = plan.variant != 1 && es <= kFuseRunMaxElementBytes && plan.c2r.b * es >= kFuseRunBytes &&
                    !env_is("TORCH_INPLACE_GPU_FUSE_STAGE", "elements");
      g.fuse_flags_off = off;
      g.fuse_flags_bytes = align64(4 * std::min<int64_t>(m / head, int64_t{32} * std::max(1, caps.num_sms)));
      off += g.fuse_flags_bytes;
    }
  }
  // Whole-GPU panels in q column parts (col_grid_kernel's split): slot groups of R = ceil(m / (SMs / q)) rows, each
  // panel's W columns in q parts of W / q, one block per (group, part). A block's gather runs are min(R, W / q)
  // elements instead of ceil(m / SMs): a taller, narrower tile in the same shared memory. Column shuffles with the
  // linear gather only, so not where a rotation takes a column step of its own (c > 1 unfused).
  // q from the run lengths (kGridSplitBelowBytes, kGridSplitRunBytes); TORCH_INPLACE_GPU_GRID_SPLIT=q picks q
  // (1: no split; comparisons).
  const bool grid_rotations = plan.c2r.c > 1 && g.fuse_head == 0;
  int64_t want_split = 1;
  if (g.grid_width > 0 && g.grid_rows * es < kGridSplitBelowBytes && caps.num_sms > 0 &&
      es >= kGridSplitMinElementBytes && es <= kGridSplitMaxElementBytes) {
    want_split = 2;
    while (want_split < kGridSplitMax && ceil_div(m, caps.num_sms / want_split) * es < kGridSplitRunBytes) {
      ++want_split;
    }
  }
  const int64_t split = env_int("TORCH_INPLACE_GPU_GRID_SPLIT", want_split);
  if (g.grid_width > 0 && g.grid_linear != 0 && !grid_rotations && split > 1 && caps.num_sms >= 2 * split) {
    const int64_t R = ceil_div(m, caps.num_sms / split);
    int64_t Wq = std::min(budget / (g.grid_buffers * R * es), std::min(n, m) / split);
    Wq -= Wq % 2;
    if (Wq * es >= 128) {
      g.grid_split = split;
      g.grid_rows = R;
      g.grid_width = split * Wq;
      g.grid_blocks = ceil_div(m, R) * split;
      g.grid_smem = g.grid_buffers * R * Wq * es;
      g.grid_async = grid_async_for(std::min(R, Wq));
    }
  }
  if (g.col_cluster == 0 && g.grid_width == 0) {
    g.bitmap_off = off;
    g.bitmap_bytes = align64(ceil_div(m, 32) * 4);
    off += g.bitmap_bytes;
  }
  g.super = super;
  plan.gpu = g;
  plan.scratch_bytes = off;
  if (g.grid_width > 0) {
    plan.reason += "; columns in panels of " + std::to_string(g.grid_width) +
                   " through the shared memory of the whole GPU (one cooperative kernel, " +
                   counted(g.grid_blocks, "block") + " of " + counted(g.grid_rows, "row") +
                   (g.grid_split > 1 ? " and 1/" + std::to_string(g.grid_split) + " of the panel's columns" : "") +
                   (g.grid_async ? ", gathered with cp.async)" : ")");
  } else if (g.col_cluster > 0) {
    plan.reason += "; columns in one pass through a cluster of " + counted(g.col_cluster, "block") + " (panels of " +
                   counted(g.col_width, "column") + ")";
  } else {
    plan.reason += "; columns by reflections and cycle following (leaders found on the device)";
  }
  if (g.fuse_head > 0) {
    plan.reason += std::string("; the ") + (plan.variant == 1 ? "post" : "pre") + "-rotation (gcd " +
                   std::to_string(plan.c2r.c) + ") fused into the row shuffle (one cooperative kernel; chunks of rows " +
                   "with a head of " + std::to_string(g.fuse_head) + ", bands of " + std::to_string(g.fuse_rows) +
                   (g.fuse_bufs > 1 ? ", two band buffers" : "") +
                   (g.fuse_runs ? ", rows staged by runs of " + std::to_string(plan.c2r.b) + " columns" : "") + ")";
  }
  const std::string per_block =
      g.row_block > 1 && g.fuse_head == 0 ? ", " + counted(g.row_block, "row") + " per block" : "";
  plan.reason += g.row_block > 0 && g.row_min_blocks > 0
                     ? "; rows shuffled in shared memory" + per_block + " (512-thread blocks compiled for " +
                           std::to_string(g.row_min_blocks) + " per SM" +
                           (g.row_bounds_denser ? " where that fits more of them)" : ")")
                 : g.row_block > 0   ? "; rows shuffled in shared memory" + per_block
                 : g.row_cluster > 0 ? "; rows shuffled in a cluster's distributed shared memory"
                                     : "; rows shuffled through global row slots";
}


// Skinny by sequence 2.1 with a Karlsson cut (kernels/transpose/skinny.cuh). k: the super-element, k*esize a
// multiple of 16 bytes in [256, 2048] (every 100! move is whole 128-byte lines) whose k x F tile fits 96 KiB of
// shared memory; among the divisors of N the one closest to kSkinnySuperBytes, else kSkinnySuperBytes itself
// and the N mod k remainder rows are cut (one more pass over the tensor: the rows' in-place shift).
// TORCH_INPLACE_GPU_SKINNY_BYTES overrides the target, TORCH_INPLACE_GPU_SKINNY=cut skips the divisor search.
// Measured on an H200 (benchmarks/bench_transpose.py --only skinny, first 16 shapes, median ratio to
// y.copy_(x.mT) fp32/fp64): target 512 B 0.33/0.32, 1024 B 0.34/0.35, 2048 B 0.35/0.34 -- within noise; larger
// super-elements shorten the cycle-following pass (fewer, longer moves) but enlarge the tiles, so 1024.
constexpr int64_t kSkinnySuperBytes = 1024;
constexpr int64_t kSkinnyMaxSuperBytes = kGpuSuperMaxBytes;  // one warp's registers (kernels::kSuperMaxBytes)
constexpr int64_t kSkinnyTileBytes = 96 * 1024;  // one k x F tile (padded) in a block's shared memory
constexpr int64_t kSkinnyGroupBytes = 32 * 1024;  // shared memory per tile block (several short tiles)
constexpr int64_t kSkinnyShiftChunkBytes = 64 * 256;  // ordered_shift_kernel: 64 bytes x 256 threads

// Scratch of the ordered in-place shift of F rows of `body` elements (ordered_shift_kernel): one flag per chunk of
// kSkinnyShiftChunkBytes, plus the ticket.
int64_t shift_flags_bytes(int64_t F, int64_t body, int64_t es) {
  return align64((ceil_div(F * body, std::max<int64_t>(1, kSkinnyShiftChunkBytes / es)) + 1) * 4);
}

// Short sides F the GPU skinny path takes: forced up to kGpuSkinnyForcedMax (a k x F tile of at least 16 bytes a row
// still fits); in auto plans up to kSkinnyMax, and past it while F * esize <= kGpuSkinnyAutoBytes
// (TORCH_INPLACE_GPU_SKINNY_MAX_BYTES overrides it, for measurements). Measured on an H200 against Catanzaro, the
// long side not a multiple of F (benchmarks/compare_plans.py, history_skinny_short_sides.log): F = 65-100 ran
// 100-350x faster (Catanzaro 42-152 ms on 200 MB: a pathological case of its column steps), 150-400 fp32 and 200 fp64
// 1.8-4.5x; 512 fp32 (2 KiB rows) 0.71-0.82x, 400 fp64 0.66-0.69x, 700-1000 0.33-0.60x. On divisor shapes skinny
// also ran ahead of the tiled sequences up to 1600 bytes (1.0-2.2x) and behind them from 2 KiB (0.48-0.55x).
constexpr int64_t kGpuSkinnyForcedMax = 1024;
constexpr int64_t kGpuSkinnyAutoBytes = 1600;

bool skinny_range(const Problem& p, Algo forced) {
  const int64_t lo = std::min(p.rows, p.cols), hi = std::max(p.rows, p.cols);
  if (lo < 2 || hi <= lo || lo > kGpuSkinnyForcedMax) return false;
  if (forced == Algo::Skinny || lo <= kSkinnyMax) return true;
  return lo * p.esize <= env_int("TORCH_INPLACE_GPU_SKINNY_MAX_BYTES", kGpuSkinnyAutoBytes);
}

Plan plan_skinny21(const Problem& p, const DeviceCaps& caps, bool to_aos) {
  (void)caps;
  Plan plan;
  plan.algo = Algo::Skinny;
  plan.problem = p;
  plan.variant = 2;
  const int64_t N = std::max(p.rows, p.cols), F = std::min(p.rows, p.cols), es = p.esize;
  const int64_t target_bytes = std::min<int64_t>(
      kSkinnyMaxSuperBytes, std::max<int64_t>(256, env_int("TORCH_INPLACE_GPU_SKINNY_BYTES", kSkinnySuperBytes)));
  const int64_t step = std::max<int64_t>(1, 16 / es);
  auto fits = [&](int64_t k) { return k * es % 16 == 0 && (F + 1) * (k + 1) * es <= kSkinnyTileBytes; };
  int64_t k = 0;
  double best = 1e30;
  if (!env_is("TORCH_INPLACE_GPU_SKINNY", "cut")) {
    for (int64_t d = 256 / es; d * es <= kSkinnyMaxSuperBytes; d += step) {
      if (N % d != 0 || !fits(d)) continue;
      const double score = std::abs(std::log2(static_cast<double>(d * es) / static_cast<double>(target_bytes)));
      if (score < best) best = score, k = d;
    }
  }
  const bool cut = k == 0;
  if (cut) {
    k = target_bytes / es / step * step;
    while (k > step && !fits(k)) k -= step;
  }
  const int64_t Mp = N / k, r = N % k;
  Plan::GpuSteps g;
  g.sk_k = k;
  g.sk_group_bytes = kSkinnyGroupBytes;
  g.sk_tile_vec = env_is("TORCH_INPLACE_GPU_SKINNY_TILEVEC", "0")     ? 0
                  : env_is("TORCH_INPLACE_GPU_SKINNY_TILEVEC", "vec") ? 2
                                                                      : 1;
  int64_t off = 0;
  const int64_t nb = r == 0 ? p.batch : 1;  // with a cut the matrices run one at a time, sharing the scratch
  g.sk_bits_off = off;
  off += gpu_super_bits_bytes(nb * Mp * F, k * es);
  if (r > 0) {
    g.sk_rem_off = off;
    off += align64(r * F * es);
    g.sk_chunk_off = off;
    off += shift_flags_bytes(F, Mp * k, es);
  }
  plan.gpu = g;
  plan.scratch_bytes = off;
  const std::string ks = std::to_string(k), Fs = std::to_string(F);
  plan.reason = "short side " + Fs + " (" + std::string(to_aos ? "SoA -> AoS" : "AoS -> SoA") +
                "): sequence 2.1: " + ks + " x " + Fs + " tiles transposed on chip (010!), then the (" +
                std::to_string(Mp) + ", " + Fs + ") super-elements of " + counted(k * es, "byte") +
                " by cycle following with flag bits (100!)" +
                (cut ? "; no divisor of " + std::to_string(N) + " in range: the " + counted(r, "remainder row") +
                           " cut (Karlsson) and spread by an ordered in-place shift"
                     : "; k divides N, two passes");
  if (to_aos) plan.reason += " (steps inverted)";
  return plan;
}

// Tiled sequences 2.1 / 2.2 (paper 000) where the short side g divides the long one, q = long / g: the matrix is q
// g x g tiles. Tall: 010! -- each tile transposed in place by tile-pair swaps (a tile this large does not fit on
// chip) -- then 100! of the (q, g) super-elements of g elements by cycle following with flag bits (the skinny
// path's kernel; super-elements over 2 KiB move as slices). Wide: the 100! first, then the tiles. Two passes, where
// Catanzaro needs three for these shapes (gcd = the short side: its column rotation cannot be fused into the row
// shuffle). Scratch: the flag bits. Auto above the skinny range when a super-element holds at least
// kTiledMinSuperBytes (shorter ones make the cycle-following pass slow); TORCH_INPLACE_GPU_TILED=0 keeps it out of
// auto plans.
constexpr int64_t kTiledMinSuperBytes = 256;

// Flag scratch of a sequence's cycle-following steps over `batch` matrices (the steps share it, one at a time).
int64_t sequence_bits_bytes(const tiled::Sequence& s, int64_t batch, int64_t es) {
  int64_t most = 0;
  for (int i = 0; i < s.num_steps; ++i) {
    const tiled::Step& st = s.steps[i];
    if (st.on_chip() || st.trivial()) continue;
    most = std::max(most, gpu_super_bits_bytes(batch * st.count * st.super_elems(), st.Z * es));
  }
  return most;
}

bool tiled_applies(const Problem& p) {
  const int64_t lo = std::min(p.rows, p.cols), hi = std::max(p.rows, p.cols);
  return lo >= 2 && hi > lo && hi % lo == 0;
}

bool tiled_auto(const Problem& p) {
  const int64_t lo = std::min(p.rows, p.cols);
  return tiled_applies(p) && lo > kSkinnyMax && lo * p.esize >= kTiledMinSuperBytes &&
         !env_is("TORCH_INPLACE_GPU_TILED", "0");
}

Plan plan_tiled(const Problem& p) {
  Plan plan;
  const bool tall = p.rows > p.cols;
  plan.algo = tall ? Algo::Tiled21 : Algo::Tiled22;
  plan.problem = p;
  const int64_t g = std::min(p.rows, p.cols), q = std::max(p.rows, p.cols) / g, es = p.esize;
  plan.tile_m = plan.tile_n = g;
  plan.gpu.sk_bits_off = 0;
  plan.scratch_bytes = sequence_bits_bytes(tiled::seq_divisor(tall, q, g), p.batch, es);
  const int64_t slices = gpu_super_slices(g * es);
  const std::string gs = std::to_string(g), qs = std::to_string(q);
  const std::string tiles = qs + " tiles of " + gs + " x " + gs + " transposed in place by tile-pair swaps (010!)";
  const std::string cycles = "the (" + (tall ? qs + ", " + gs : gs + ", " + qs) + ") super-elements of " +
                             std::to_string(g * es) + " bytes by cycle following with flag bits (100!" +
                             (slices > 1 ? ", each moved as " + std::to_string(slices) + " slices" : "") + ")";
  plan.reason = "the short side " + gs + " divides the long side: sequence " + (tall ? "2.1: " : "2.2: ") +
                (tall ? tiles + ", then " + cycles : cycles + ", then " + tiles) +
                "; two passes (Catanzaro needs three when the gcd is the short side)";
  return plan;
}

// Tiled sequences 3.1 / 3.2 (paper 000, Table 2) for rows = Mp * m and cols = Np * n: 3.1 moves the (rows, Np)
// super-elements of n elements by cycle following (100!), transposes the m x n tiles on chip (0010!), then moves
// the (Mp, n) super-elements of m elements within each of the Np groups (0100!); 3.2 runs 0100! (super-elements of
// n), the tiles, then 100! (super-elements of m). Three passes, the cycle-following ones with flag bits (the
// skinny path's kernel). The tile follows paper 000's Algorithm 2 -- factors of both sides in range, the pair that
// makes the most of the on-chip memory -- with the cycle-following passes in mind: among divisors m of rows and n
// of cols whose tile goes through shared memory (gpu_tile_in_smem), and square tiles of a common divisor of up to
// kGpuSquareTileMaxBytes a side (swapped in place by tile pairs, as in sequences 2.1 / 2.2), the largest shorter
// super-element min(m, n) first, then the largest tile. Algorithm 3's choice of sequence: 3.1 where m < n (its 100!
// moves the longer super-elements), else 3.2.
// Measured on an H200 against Catanzaro (GPU time): with shared-memory tiles (super-elements of 150-630 bytes) the
// better sequence took 1.05-2.7x Catanzaro's time on 16 fp32 and 12 fp64 shapes of the general set
// (history_tiled3_vs_catanzaro.log): three passes against two. With square tiles of a common divisor it ran
// 1.04-1.55x faster than Catanzaro's better direction on 12 shapes with 4000-4096-byte sides
// (history_tiled3_square_tiles.log), 1.0-1.5x on 14 with 1-4 KiB sides, and 1.07x / 0.97x with 512-byte sides
// (history_tiled3_threshold.log), where Catanzaro needs its column rotation; 8 KiB sides ran as fast as 4 KiB ones.
// So auto plans take it where the tile is such a square of at least kTiled3AutoBytes a side;
// TORCH_INPLACE_GPU_TILED3=0 (or TORCH_INPLACE_GPU_TILED=0) never, =1 wherever both super-elements hold
// kTiledMinSuperBytes (measurements); TORCH_INPLACE_GPU_TILED3_SQUARE_BYTES overrides kGpuSquareTileMaxBytes
// (measurements).
constexpr int64_t kTiled3AutoBytes = 1024;

// Divisors of x up to `most`, ascending.
std::vector<int64_t> divisors_upto(int64_t x, int64_t most) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= std::min(x, most); ++d) {
    if (x % d == 0) out.push_back(d);
  }
  return out;
}

struct Tile3 {
  int64_t m = 1, n = 1;
};

Tile3 tiled3_tile(const Problem& p) {
  const int64_t es = p.esize, most = kGpuTileBytes / es;
  Tile3 best;
  auto consider = [&](int64_t m, int64_t n) {
    const int64_t lo = std::min(m, n), best_lo = std::min(best.m, best.n);
    if (lo > best_lo || (lo == best_lo && m * n > best.m * best.n)) best = Tile3{m, n};
  };
  for (int64_t m : divisors_upto(p.rows, most)) {
    for (int64_t n : divisors_upto(p.cols, most)) {
      if (!gpu_tile_in_smem(m, n, es)) break;
      consider(m, n);
    }
  }
  const int64_t square_most = env_int("TORCH_INPLACE_GPU_TILED3_SQUARE_BYTES", kGpuSquareTileMaxBytes) / es;
  for (int64_t d : divisors_upto(std::gcd(p.rows, p.cols), square_most)) consider(d, d);
  return best;
}

// Whether auto plans take sequence 3.1 / 3.2 for p, and with which tile (the rule above).
bool tiled3_auto(const Problem& p, Tile3* t) {
  if (p.rows == p.cols || p.rows < 2 || p.cols < 2 || env_is("TORCH_INPLACE_GPU_TILED3", "0") ||
      env_is("TORCH_INPLACE_GPU_TILED", "0")) {
    return false;
  }
  const bool measuring = env_is("TORCH_INPLACE_GPU_TILED3", "1");
  // The square comes from the gcd, and shared-memory tiles never have a side this long: skip the divisor search.
  if (!measuring && std::gcd(p.rows, p.cols) * p.esize < kTiled3AutoBytes) return false;
  *t = tiled3_tile(p);
  if (t->m >= p.rows || t->n >= p.cols) return false;
  if (measuring) return std::min(t->m, t->n) * p.esize >= kTiledMinSuperBytes;
  return t->m == t->n && !gpu_tile_in_smem(t->m, t->n, p.esize) && t->m * p.esize >= kTiled3AutoBytes;
}

Plan plan_tiled3(const Problem& p, Tile3 t, bool seq31) {
  Plan plan;
  plan.algo = seq31 ? Algo::Tiled31 : Algo::Tiled32;
  plan.problem = p;
  plan.tile_m = t.m;
  plan.tile_n = t.n;
  plan.gpu.sk_bits_off = 0;
  plan.gpu.sk_group_bytes = kSkinnyGroupBytes;  // several small tiles per block
  const int64_t es = p.esize, Mp = p.rows / t.m, Np = p.cols / t.n;
  plan.scratch_bytes = sequence_bits_bytes(tiled::seq_tiles3(seq31, p.rows, p.cols, t.m, t.n), p.batch, es);
  const std::string ms = std::to_string(t.m), ns = std::to_string(t.n);
  auto supers = [&](const std::string& shape, int64_t elems, const char* kind) {
    return "the " + shape + " super-elements of " + counted(elems * es, "byte") + " by cycle following (" +
           kind + ")";
  };
  const std::string tiles = "the " + ms + " x " + ns +
                            (gpu_tile_in_smem(t.m, t.n, es) ? " tiles transposed on chip (0010!)"
                                                            : " tiles swapped in place by tile pairs (0010!)");
  const std::string head = "rows " + std::to_string(p.rows) + " = " + std::to_string(Mp) + " x " + ms + ", cols " +
                           std::to_string(p.cols) + " = " + std::to_string(Np) + " x " + ns + ": sequence ";
  plan.reason = seq31 ? head + "3.1: " + supers("(" + std::to_string(p.rows) + ", " + std::to_string(Np) + ")", t.n,
                                                "100!") +
                            ", " + tiles + ", then " +
                            supers(std::to_string(Np) + " x (" + std::to_string(Mp) + ", " + ns + ")", t.m, "0100!")
                      : head + "3.2: " + supers(std::to_string(Mp) + " x (" + ms + ", " + std::to_string(Np) + ")",
                                                t.n, "0100!") +
                            ", " + tiles + ", then " +
                            supers("(" + std::to_string(Mp) + ", " + std::to_string(p.cols) + ")", t.m, "100!");
  plan.reason += "; three passes";
  return plan;
}

// Padded (paper 000 sec. 6.2): one matrix whose storage has slack past its elements (torch_inplace.empty_transposable)
// is padded along its long side L to Lp = ceil(L / g) * g, a multiple of the short side g, and transposed by the
// tiled sequences above; the padding is garbage in the slack. Tall (L x g): the padded rows come for free at the end,
// sequence 2.1 makes (g, Lp), and an ordered in-place shift packs the g rows of Lp into rows of L (the skinny cut's
// kernel). Wide (g x L): the shift first spreads the g rows to Lp, sequence 2.2 makes (Lp, g), whose first L rows
// are the result. Three passes; only where the padding is at most 1/kPadMaxFraction of the tensor.
constexpr int64_t kPadMaxFraction = 32;

int64_t padding_bytes(const Problem& p) {
  const int64_t g = std::min(p.rows, p.cols), L = std::max(p.rows, p.cols);
  if (p.batch != 1 || g < 2 || L <= g || L % g == 0) return 0;
  const int64_t r = ceil_div(L, g) * g - L;
  return r * kPadMaxFraction <= L ? r * g * p.esize : 0;
}

Plan plan_padded(const Problem& p) {
  Plan plan;
  plan.algo = Algo::Padded;
  plan.problem = p;
  const int64_t g = std::min(p.rows, p.cols), L = std::max(p.rows, p.cols), es = p.esize;
  const int64_t Lp = ceil_div(L, g) * g, q = Lp / g, r = Lp - L;
  const bool tall = p.rows > p.cols;
  (tall ? plan.pad_rows : plan.pad_cols) = r;
  plan.tile_m = plan.tile_n = g;
  Plan::GpuSteps gs;
  gs.sk_bits_off = 0;
  int64_t off = sequence_bits_bytes(tiled::seq_divisor(tall, q, g), 1, es);
  gs.sk_chunk_off = off;
  off += shift_flags_bytes(g, L, es);
  plan.gpu = gs;
  plan.scratch_bytes = off;
  const std::string Ls = std::to_string(L), Lps = std::to_string(Lp), g_s = std::to_string(g);
  plan.reason = "padded: the long side " + Ls + " padded to " + Lps + " = " + std::to_string(q) + " x " + g_s +
                " in the storage's slack (" + std::to_string(r * g * es) + " bytes), then " +
                (tall ? "sequence 2.1 (tiles swapped in place, super-elements by cycle following) and the " + g_s +
                            " rows packed from " + Lps + " to " + Ls + " by an ordered in-place shift"
                      : "the " + g_s + " rows spread from " + Ls + " to " + Lps +
                            " by an ordered in-place shift and sequence 2.2 (super-elements by cycle following, "
                            "tiles swapped in place)") +
                "; three passes";
  return plan;
}

// Cut (Karlsson, paper 004 sec. 3.1.3): the long side L of one matrix is cut by x = L mod g (g the short side) so
// that the rest is q = L / g g x g tiles, transposed by sequence 2.1 / 2.2 (plan_tiled: tiles swapped in place,
// super-elements of g by cycle following; q == 1 is a single square, one pass). No slack needed: the cut elements
// wait in scratch (x * g elements). Tall (L x g): the last x rows are saved, the (L - x) x g head transposed, its g
// rows of L - x spread to rows of L by the ordered in-place shift (the skinny cut's kernel), and the saved rows
// written into the row tails. Wide (g x L): the row tails gathered into scratch, the rows packed to L - x, the head
// transposed, the saved block appended as the last x rows. Matrices of a batch run one after another (shared
// scratch). One pass more than the tiled sequence: the shift.
// Auto for a near-square matrix (q == 1: the square's one pass plus the shift's) of 4-, 8- or 16-byte elements, at
// least kCutAutoMinBytes, whose sides have a common divisor and whose scratch stays within the memory target (0.1%
// of the matrix + 1 MiB). Measured on an H200 against Catanzaro's better direction (GPU time, history_cut.log):
// gcd > 1 (Catanzaro's rotation pass), 4 to 16 bytes: 1.0-1.7x faster on 14 shapes (fp32 8200 x 8192 0.62 -> 0.37
// ms, 10000 x 10010 0.95 -> 0.59, fp64 16000 x 16020 4.29 -> 2.83, c128 5000 x 5012 0.78 -> 0.50); 1 and 2 bytes
// 0.58-2.1x (u8 13000 x 13013 0.67 -> 1.15 ms, bf16 7002 x 7000 0.82x: the shift moves them one by one); coprime
// sides 0.69-1.05x (fp32 10007 x 10000 0.55 -> 0.59 ms). Catanzaro keeps those; q > 1 (three passes) ran
// 0.58-0.98x, forced only. TORCH_INPLACE_GPU_CUT=0 keeps it out of auto plans, =1 lets it in wherever it applies
// (measurements).
constexpr int64_t kCutAutoMinBytes = 4 << 20;

Plan plan_cut(const Problem& p) {
  Plan plan;
  plan.algo = Algo::Cut;
  plan.problem = p;
  const int64_t g = std::min(p.rows, p.cols), L = std::max(p.rows, p.cols), es = p.esize;
  const int64_t x = L % g, q = L / g;
  const bool tall = p.rows > p.cols;
  (tall ? plan.cut_rows : plan.cut_cols) = x;
  plan.tile_m = plan.tile_n = g;
  Plan::GpuSteps gs;
  gs.sk_bits_off = 0;
  int64_t off = sequence_bits_bytes(tiled::seq_divisor(tall, q, g), x > 0 ? 1 : p.batch, es);
  if (x > 0) {
    gs.sk_rem_off = off;
    off += align64(x * g * es);
    gs.sk_chunk_off = off;
    off += shift_flags_bytes(g, L - x, es);
  }
  plan.gpu = gs;
  plan.scratch_bytes = off;
  const std::string gs_ = std::to_string(g), hs = std::to_string(L - x);
  const std::string head =
      q == 1 ? "the " + gs_ + " x " + gs_ + " square swapped in place by tile pairs"
             : std::string("sequence ") + (tall ? "2.1" : "2.2") + " on the " + std::to_string(q) + " tiles of " +
                   gs_ + " x " + gs_ + " (swapped in place by tile pairs; super-elements of " + gs_ +
                   " by cycle following)";
  if (x == 0) {
    plan.reason = "cut: " + gs_ + " divides " + std::to_string(L) + ", nothing to cut: " + head;
    return plan;
  }
  plan.reason = "cut (Karlsson): the last " + counted(x, tall ? "row" : "column") + " of " + std::to_string(L) +
                " set aside in scratch (" + std::to_string(x * g * es) + " bytes), " + head + ", " +
                (tall ? "its " + gs_ + " rows spread from " + hs + " to " + std::to_string(L) +
                            " by an ordered in-place shift and the cut rows written into the row tails"
                      : "after its " + gs_ + " rows were packed from " + std::to_string(L) + " to " + hs +
                            " by an ordered in-place shift; the cut columns appended as the last rows") +
                "; " + (q == 1 ? "two passes" : "three passes");
  return plan;
}

bool cut_auto(const Problem& p, const Plan& cut) {
  const int64_t g = std::min(p.rows, p.cols), L = std::max(p.rows, p.cols);
  if (env_is("TORCH_INPLACE_GPU_CUT", "0") || g <= kSkinnyMax || L == g) return false;
  if (env_is("TORCH_INPLACE_GPU_CUT", "1")) return true;
  const int64_t bytes = L * g * p.esize;
  return L < 2 * g && p.esize >= 4 && std::gcd(L, g) > 1 && bytes >= kCutAutoMinBytes &&
         cut.scratch_bytes <= bytes / 1000 + (1 << 20);
}

// On chip (kernels/transpose/onchip.cuh): when every tile of the tensor fits in the shared memory of one block
// per SM, one cooperative kernel reads everything, syncs the grid, and writes everything transposed -- the traffic
// of a copy, one launch, no scratch. Tiles: side x side (a balanced split of each dim, so edge tiles waste little),
// or the whole short side by a long run of the other (AoS <-> SoA: whole rows in, long runs out). The row stride
// makes a column read hit distinct banks: s * esize / 4 odd (esize <= 4), s odd (esize >= 8).
constexpr int64_t kOnChipTileRecord = 16; // sizeof(kernels::OnChipTile)

// Bytes of a block's tiles the stash kernel keeps in registers (kernels::kOnChipStashBytes: 512 threads x 16
// 16-byte chunks).
constexpr int64_t kStashBytes = 512 * 16 * 16;

int64_t onchip_side(int64_t es) { return es == 1 ? 128 : es <= 4 ? 64 : 32; }

// Balanced split of `len` into pieces of at most `most`: the piece length.
int64_t balanced(int64_t len, int64_t most) {
  const int64_t pieces = ceil_div(len, std::max<int64_t>(1, most));
  return ceil_div(len, pieces);
}

// Where the skinny on-chip kernel goes first: F fields, L records a matrix, `bytes` in the tensor. H200 GPU time
// against onchip_transpose_kernel on the same plan (benchmarks/onchip_skinny_harness.cu,
// results/NVIDIA_H200/history_onchip_skinny_harness.log, final run): 1-byte 1.48-3.62x on every skinny shape (a
// 1080p RGB image 24.5 -> 11.4 us); 2-byte 1.00-2.22x; 4-byte 1.18-1.61x from 4 MB on (F = 3 images 1.42-1.61x,
// F = 11..17 1.18-1.38x), 0.91-1.17x at 1-2.3 MB; 8-byte 0.95-1.02x (77 MB included); 16-byte 0.98-1.03x; tiles of
// whole tiny matrices (runs of 8-48 records) 0.2-0.7x. Past 32 fields (`onchip_skinny_harness wide`): 40-64 fields
// 1-byte 1.84-2.36x, 2-byte 1.44-2.08x, 4-byte 1.08-1.36x (15-51 MB); 100 fields (1-byte) 0.83-0.90x.
bool onchip_skinny_rule(int64_t es, int64_t F, int64_t L, int64_t bytes) {
  if (F > kSkinnyMax || L < 1024) return false;
  return es <= 2 || (es == 4 && bytes >= (int64_t{4} << 20));
}

int64_t onchip_stride(int64_t tc, int64_t es) {
  int64_t s = tc;
  if (es >= 8) return s | 1;
  while ((s * es) % 4 != 0 || ((s * es) / 4) % 2 == 0) ++s;
  return s;
}

// The skinny on-chip kernel (kernels/transpose/onchip_skinny.cuh): where tiles are whole rows (tc == n) or whole
// columns (tr == m), both sides of the transposition move in 16-byte chunks. Whether it runs for this problem
// (onchip_skinny_rule; TORCH_INPLACE_GPU_ONCHIP_SKINNY=0 / 1: never / wherever it applies, for measurements).
bool onchip_skinny_wanted(const Problem& p, int64_t tr, int64_t tc) {
  const int64_t m = p.rows, n = p.cols;
  if ((tc != n && tr != m) || env_is("TORCH_INPLACE_GPU_ONCHIP_SKINNY", "0")) return false;
  if (env_is("TORCH_INPLACE_GPU_ONCHIP_SKINNY", "1")) return true;
  return onchip_skinny_rule(p.esize, tc == n ? n : m, tc == n ? m : n, p.batch * m * n * p.esize);
}

// Its shared memory per block, as onchip_skinny_smem_bytes there: the tiles' elements unpadded, plus two chunks per
// run of each matrix the block's tiles touch.
int64_t onchip_skinny_smem(const Problem& p, int64_t tr, int64_t tc, int64_t per_block, int64_t per_matrix) {
  const int64_t F = tc == p.cols ? p.cols : p.rows, Lt = tc == p.cols ? tr : tc;
  const int64_t segments = std::min(per_block, ceil_div(per_block, per_matrix) + 1);
  return per_block * Lt * F * p.esize + segments * F * 32 + 16;
}

bool plan_onchip(const Problem& p, const DeviceCaps& caps, Plan& plan) {
  const int64_t m = p.rows, n = p.cols, es = p.esize;
  const int64_t side = onchip_side(es), elems = side * side;
  int64_t tr, tc;
  if (n < side && m > side) {
    tc = n;
    tr = balanced(m, std::max(side, elems / n));
  } else if (m < side && n > side) {
    tr = m;
    tc = balanced(n, std::max(side, elems / m));
  } else {
    tr = balanced(m, side);
    tc = balanced(n, side);
  }
  int64_t s = onchip_stride(tc, es);
  int64_t per_matrix = ceil_div(m, tr) * ceil_div(n, tc);
  // Tiles a block holds when the grid (one block per SM) takes `mats` matrices at once, and its shared memory.
  auto per_block_for = [&](int64_t mats) { return ceil_div(mats * per_matrix, std::max(1, caps.num_sms)); };
  // That shared memory (the skinny kernel's where it runs: unpadded, so more fits), or -1 past the budget or past
  // 32-bit offsets inside the matrices.
  const bool skinny = onchip_skinny_wanted(p, tr, tc);
  // The element kernel's: the tile table, then the tiles at row stride s.
  auto element_smem = [&](int64_t per_block) {
    return align64(per_block * kOnChipTileRecord) + per_block * tr * s * es;
  };
  auto smem_for = [&](int64_t mats) -> int64_t {
    if (caps.num_sms <= 0 || mats * m * n >= (int64_t{1} << 31) || mats * per_matrix >= (int64_t{1} << 31)) return -1;
    const int64_t per_block = per_block_for(mats);
    const int64_t smem = skinny ? onchip_skinny_smem(p, tr, tc, per_block, per_matrix) : element_smem(per_block);
    return smem <= smem_budget(caps) ? smem : -1;
  };
  // The register stash: a tensor that does not fit the shared memory alone, but does with 512-thread blocks that
  // keep their first `stash` tiles in registers across the grid barrier (their shared-memory image at most
  // kStashBytes; as few as let the rest fit the shared memory, as the stashed tiles cross it twice more).
  // TORCH_INPLACE_GPU_ONCHIP_STASH=0 turns it off (comparisons). stash_for(mats, &smem): the stashed tiles a block,
  // or -1 where the tensor does not fit.
  //  * Tiles of whole rows or columns of up to 64 fields (whatever the element size): the skinny kernel
  //    (onchip_skinny_stash_kernel), on tiles of about 2 KiB so that a block's share splits finely (it moves a
  //    block's tiles of one matrix as one range of records, whatever their size).
  //  * Other tiles: the element kernel (onchip_transpose_stash_kernel) on the same tiles as without the stash, except
  //    for squares and where one side divides the other: there the tile-pair swaps and the tiled sequences 2.1 / 2.2
  //    ran faster (H200, GPU time: 3000 x 3000 fp32 0.025 against 0.050 ms, 5800 x 5800 uint8 0.050 against 0.166;
  //    2048 x 4096 fp32 0.043 against 0.046, 9 of them 0.348 against 0.443), where elsewhere the stash ran 1.1-1.8x
  //    faster than the best other plan (results/NVIDIA_H200/stash_checks.log).
  const bool rows_tiles = tc == n;
  const int64_t F = rows_tiles ? n : m, L = rows_tiles ? m : n;
  const bool stash_skinny = (tc == n || tr == m) && F <= kSkinnyMax && L >= 1024 &&
                            !env_is("TORCH_INPLACE_GPU_ONCHIP_SKINNY", "0");
  const bool stash_on = !env_is("TORCH_INPLACE_GPU_ONCHIP_STASH", "0") &&
                        (stash_skinny || (m != n && std::max(m, n) % std::min(m, n) != 0));
  const int64_t fine = balanced(L, std::max<int64_t>(16, 2048 / (F * es)));
  const int64_t str = stash_skinny ? (rows_tiles ? fine : m) : tr, stc = stash_skinny ? (rows_tiles ? n : fine) : tc;
  const int64_t stash_per_matrix = ceil_div(m, str) * ceil_div(n, stc);
  auto stash_for = [&](int64_t mats, int64_t* smem_out) -> int64_t {
    if (!stash_on || caps.num_sms <= 0 || mats * m * n >= (int64_t{1} << 31) ||
        mats * stash_per_matrix >= (int64_t{1} << 31)) {
      return -1;
    }
    const int64_t per_block = ceil_div(mats * stash_per_matrix, std::max(1, caps.num_sms));
    // Shared memory of `k` tiles' image, and of the whole block with `k` tiles in shared memory at a time.
    auto image = [&](int64_t k) {
      return stash_skinny ? onchip_skinny_smem(p, str, stc, k, stash_per_matrix) : k * str * s * es;
    };
    auto block = [&](int64_t k) {
      return stash_skinny ? image(k) : align64(per_block * kOnChipTileRecord) + image(k);
    };
    int64_t stash = 1;
    while (stash < per_block && block(per_block - stash) > smem_budget(caps)) ++stash;
    if (image(stash) > kStashBytes) return -1;
    const int64_t smem = block(std::max(stash, per_block - stash));
    if (smem > smem_budget(caps)) return -1;
    if (smem_out != nullptr) *smem_out = smem;
    return stash;
  };
  int64_t wave = p.batch;
  bool use_stash = false;
  const bool waves_ok = p.batch >= 2 && !env_is("TORCH_INPLACE_GPU_ONCHIP_WAVES", "0");
  if (smem_for(p.batch) < 0 && !(waves_ok && smem_for(1) >= 0) && stash_for(p.batch, nullptr) >= 0) {
    // The whole tensor at once with the stash, where its matrices do not fit the shared memory one by one. Where
    // they do, waves without the stash measured faster (H200, GPU time: 256 224x224 RGB uint8 images 0.039 against
    // 0.046 ms, 64 such fp32 images 0.031 against 0.038 ms; results/NVIDIA_H200/stash_checks.log).
    use_stash = true;
  } else if (smem_for(p.batch) < 0) {
    // Waves of whole matrices: matrices are disjoint, so a wave's writes never meet another wave's reads and the
    // grid meets once per wave. As many matrices as fit (with the stash where one does not fit without it), then
    // the waves evened out. TORCH_INPLACE_GPU_ONCHIP_WAVES=0 keeps batches that do not fit at once off chip
    // (comparisons).
    if (!waves_ok) return false;
    if (smem_for(1) < 0) {
      if (stash_for(1, nullptr) < 0) return false;
      use_stash = true;
    }
    auto fits = [&](int64_t mats) { return use_stash ? stash_for(mats, nullptr) >= 0 : smem_for(mats) >= 0; };
    int64_t lo = 1, hi = p.batch - 1;  // the largest count that fits (the shared memory grows with it)
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (fits(mid)) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    wave = ceil_div(p.batch, ceil_div(p.batch, lo));
  }
  int64_t smem = 0;
  const int64_t stash = use_stash ? stash_for(wave, &smem) : 0;
  const bool skinny_kernel = use_stash ? stash_skinny : skinny;
  if (use_stash && stash_skinny) {  // the stash's finer tiles
    tr = str;
    tc = stc;
    s = onchip_stride(tc, es);
    per_matrix = stash_per_matrix;
  } else if (!use_stash) {
    smem = smem_for(wave);
  }
  const int64_t tiles = wave * per_matrix;
  const int64_t per_block = per_block_for(wave);
  Plan::GpuSteps g;
  g.oc_skinny = skinny_kernel ? smem : 0;
  g.oc_stash = stash;
  g.oc_tr = tr;
  g.oc_tc = tc;
  g.oc_s = s;
  g.oc_per_block = per_block;
  g.oc_grid = ceil_div(tiles, per_block);
  g.oc_smem = skinny_kernel ? element_smem(per_block) : smem;
  g.oc_wave = wave < p.batch ? wave : 0;
  plan.algo = Algo::OnChip;
  plan.problem = p;
  plan.gpu = g;
  plan.scratch_bytes = 0;
  const std::string skinny_note =
      (g.oc_skinny > 0 ? std::string("; whole ") + (tc == n ? "rows" : "columns") +
                             " of few fields: both sides move in 16-byte chunks (skinny kernel)"
                       : std::string()) +
      (stash > 0 ? "; " + std::to_string(stash) + " of each block's " + counted(per_block, "tile") +
                       (stash == 1 ? " waits" : " wait") + " in registers across the barrier (register stash)"
                 : std::string());
  if (g.oc_wave > 0) {
    const int64_t waves = ceil_div(p.batch, wave);
    plan.reason = std::string("each matrix fits in shared memory") + (stash > 0 ? " and registers" : "") +
                  ": one cooperative kernel takes the batch in " +
                  counted(waves, "wave") + " of " + counted(wave, "matrix", "matrices") + " (" +
                  counted(g.oc_grid, "block") + " of " + std::to_string(smem) + " B); each wave stages its " +
                  counted(tiles, "tile") + " of " + std::to_string(tr) + " x " + std::to_string(tc) +
                  ", syncs the grid and writes them transposed (one read and one write per element)" + skinny_note;
    return true;
  }
  plan.reason = std::string("the tensor fits in shared memory") + (stash > 0 ? " and registers" : "") + " (" +
                counted(g.oc_grid, "block") + " of " +
                std::to_string(smem) + " B): one cooperative kernel stages " + counted(tiles, "tile") + " of " +
                std::to_string(tr) + " x " + std::to_string(tc) +
                ", syncs the grid and writes them transposed (one read and one write per element)" + skinny_note;
  return true;
}

}  // namespace

namespace {

// Skinny by Catanzaro: with `super`, the largest divisor k of the long side N whose k x F tile fits a block's
// shared memory (64 KiB, several blocks per SM) makes k-element super-elements, so a tile pass plus Catanzaro on
// the (N/k) x F matrix replaces Catanzaro on N-row columns; without one (or without `super`), plain Catanzaro
// with the short side as the on-chip row.
Plan plan_skinny_catanzaro(Plan sk, const DeviceCaps& caps, bool super) {
  const Problem& p = sk.problem;
  const int64_t N = std::max(p.rows, p.cols), F = std::min(p.rows, p.cols), es = p.esize;
  const int64_t kmax = std::min<int64_t>(N / 2, (64 * 1024) / ((F + 1) * es));
  int64_t k = 1;
  for (int64_t d = kmax; super && d >= 2; --d) {
    if (N % d == 0) {
      k = d;
      break;
    }
  }
  if (k > 1) {
    sk.c2r = c2r::Params(N / k, F);
    sk.reason = "short side <= 64 (AoS <-> SoA): " + std::to_string(k) + " x " + std::to_string(F) +
                " tiles transposed on chip, then Catanzaro on the " + std::to_string(N / k) + " x " +
                std::to_string(F) + " matrix of " + std::to_string(k) + "-element super-elements";
    plan_catanzaro(sk, caps, k);
  } else {
    sk.reason = "short side <= 64 (AoS <-> SoA): Catanzaro with the short side as the on-chip row";
    plan_catanzaro(sk, caps);
  }
  return sk;
}

}  // namespace

std::vector<Plan> gpu_candidates(const Problem& p, const DeviceCaps& caps, Algo forced) {
  std::vector<Plan> out;
  auto want = [&](Algo a) { return forced == Algo::Auto || forced == a; };
  auto make = [&](Algo a, bool r2c, std::string why) {
    Plan plan;
    plan.algo = a;
    plan.problem = p;
    plan.reason = std::move(why);
    plan.c2r = c2r::Params(r2c ? p.cols : p.rows, r2c ? p.rows : p.cols);
    plan.variant = r2c ? 1 : 0;
    return plan;
  };
  const int64_t lo = std::min(p.rows, p.cols), hi = std::max(p.rows, p.cols);
  const bool tall = p.rows > p.cols;
  // On chip first wherever it fits (TORCH_INPLACE_GPU_ONCHIP=0 keeps it out of auto plans, for tests).
  // A batch on chip in waves comes after the square tile-pair swaps (one pass as well, and no grid barriers).
  Plan oc;
  const bool onchip = (forced == Algo::OnChip || (forced == Algo::Auto && !env_is("TORCH_INPLACE_GPU_ONCHIP", "0"))) &&
                      plan_onchip(p, caps, oc);
  if (onchip && oc.gpu.oc_wave == 0) out.push_back(oc);
  if (want(Algo::Square) && p.rows == p.cols) {
    Plan sq = make(Algo::Square, false, "rows == cols: swap tile pairs across the diagonal, one pass, no scratch");
    sq.scratch_bytes = 0;
    out.push_back(sq);
  }
  if (onchip && oc.gpu.oc_wave > 0) out.push_back(oc);
  if (want(Algo::Skinny) && skinny_range(p, forced)) {
    // Sequence 2.1 (tiles on chip, then super-elements by cycle following, a cut for N mod k); the older
    // Catanzaro-based variants stay reachable through TORCH_INPLACE_GPU_SKINNY=catanzaro|plain for tests.
    if (lo > kSkinnyMax ||
        (!env_is("TORCH_INPLACE_GPU_SKINNY", "plain") && !env_is("TORCH_INPLACE_GPU_SKINNY", "catanzaro"))) {
      out.push_back(plan_skinny21(p, caps, !tall));
    } else {
      out.push_back(plan_skinny_catanzaro(make(Algo::Skinny, !tall, ""), caps,
                                          /*super=*/!env_is("TORCH_INPLACE_GPU_SKINNY", "plain")));
    }
  }
  const Algo tiled_algo = tall ? Algo::Tiled21 : Algo::Tiled22;
  if ((forced == Algo::Auto && tiled_auto(p)) || (forced == tiled_algo && tiled_applies(p))) {
    out.push_back(plan_tiled(p));
  }
  if (forced == Algo::Cut && lo >= 2) {
    out.push_back(plan_cut(p));
  } else if (forced == Algo::Auto && lo >= 2) {
    Plan cut = plan_cut(p);
    if (cut_auto(p, cut)) out.push_back(cut);
  }
  Tile3 t3;
  if (forced == Algo::Tiled31 || forced == Algo::Tiled32) {
    out.push_back(plan_tiled3(p, tiled3_tile(p), forced == Algo::Tiled31));
  } else if (forced == Algo::Auto && tiled3_auto(p, &t3)) {
    out.push_back(plan_tiled3(p, t3, t3.m < t3.n));
  }
  // The direction: the row shuffle on the short side (C2R for tall matrices, R2C on the cols x rows view for wide
  // ones), except for one matrix of 4-byte elements with coprime sides up to kDirectionMeasuredMax, where C2R ran
  // faster than R2C for wide matrices too and R2C only for tall ones with a short side under kTallR2CShortMax (H200,
  // both directions on every general shape of two seeds, benchmarks/compare_directions.py,
  // history_grid_short_runs.log).
  bool c2r_first = tall;
  std::string why_first = tall ? "rows > cols: C2R, so the row shuffle runs on the short side"
                               : "rows <= cols: R2C on the cols x rows view, so the row shuffle runs on the short side";
  if (p.esize == 4 && p.batch == 1 && hi <= kDirectionMeasuredMax && std::gcd(p.rows, p.cols) == 1 &&
      !env_is("TORCH_INPLACE_GPU_DIRECTION", "short")) {
    c2r_first = !(tall && lo < kTallR2CShortMax);
    if (c2r_first && !tall) {
      why_first = "rows <= cols, 4-byte elements, coprime sides: C2R (measured ahead of R2C for such shapes)";
    } else if (!c2r_first) {
      why_first = "rows > cols with fewer than " + std::to_string(kTallR2CShortMax) +
                  " cols, 4-byte elements, coprime sides: R2C on the cols x rows view (measured ahead of C2R for such "
                  "shapes)";
    }
  }
  const Algo first = c2r_first ? Algo::C2R : Algo::R2C, second = c2r_first ? Algo::R2C : Algo::C2R;
  // Each direction with the rotation fused into the row shuffle where it can be (its flags take a little
  // scratch), then without (no scratch with the whole-GPU column panels), for tight workspace limits.
  auto add_catanzaro = [&](Plan pl) {
    Plan unfused = pl;
    plan_catanzaro(pl, caps);
    out.push_back(pl);
    if (pl.gpu.fuse_head > 0) {
      plan_catanzaro(unfused, caps, 1, /*fuse_rotation=*/false);
      out.push_back(unfused);
    }
  };
  if (want(first)) add_catanzaro(make(first, first == Algo::R2C, why_first));
  if (want(second)) {
    add_catanzaro(make(second, second == Algo::R2C, "forced or fallback: the other Catanzaro direction"));
  }
  // Where the first direction's columns are too long for full column panels (the whole-GPU panels take about 120k
  // rows, a cluster's 128-byte panels about 14k) and the other direction's panels are full, with its
  // rows in shared memory or a cluster's (not global slots), the other goes first: H200, fp32 300007 x 1500 C2R
  // (4-byte cluster panels) 20.5 ms, R2C 6.4 ms; tall shapes with 65-795 columns and 125k-770k rows ran R2C 1.2-3.0x
  // faster too, while 1000000 x 512 and 2000000 x 300, whose R2C rows need global slots, ran it 1.5-2.7x slower
  // (history_skinny_short_sides.log). TORCH_INPLACE_GPU_DIRECTION_GRID=0 keeps the order above.
  auto panel_bytes_of = [&](const Plan& c) {
    return c.gpu.grid_width > 0 ? c.gpu.grid_width * p.esize : c.gpu.col_cluster > 0 ? c.gpu.col_width * p.esize : 0;
  };
  // The first candidate is Catanzaro with column panels narrower than kPanelBytes (or, with `row_cluster_max`, rows
  // split over more cluster blocks than that).
  auto catanzaro_first_narrow = [&](int64_t row_cluster_max) {
    if (out.empty() || (out.front().algo != Algo::C2R && out.front().algo != Algo::R2C)) return false;
    return panel_bytes_of(out.front()) < kPanelBytes || out.front().gpu.row_cluster > row_cluster_max;
  };
  if (forced == Algo::Auto && !env_is("TORCH_INPLACE_GPU_DIRECTION_GRID", "0")) {
    auto a = std::find_if(out.begin(), out.end(), [&](const Plan& c) { return c.algo == first; });
    auto b = std::find_if(out.begin(), out.end(), [&](const Plan& c) { return c.algo == second; });
    if (a != out.end() && b != out.end() && panel_bytes_of(*a) < kPanelBytes &&
        panel_bytes_of(*b) >= kPanelBytes && b->gpu.row_slots == 0) {
      const std::string why = "; ahead of " + std::string(algo_name(first)) + ", whose column panels would be narrower";
      for (auto it = b; it != out.end(); ++it) {
        if (it->algo == second) it->reason = "the other Catanzaro direction" + why;
      }
      std::stable_partition(a, out.end(), [&](const Plan& c) { return c.algo == second; });
    }
  }
  // Where Catanzaro's columns (in the direction chosen above) still only get panels narrower than 128 bytes, the
  // cluster or universal column engines ran 2-350x slower than sequence 2.1 wherever that applies (short sides up to
  // 1024; H200, history_skinny_short_sides.log: fp32 1000000 x 512 184 -> 5.3 ms, 500000 x 700 96 -> 3.0 ms): there
  // the skinny plan goes first. Against full column panels it depended on the rows: split over a cluster of 3 blocks
  // (fp32 167726 x 795, 150001 x 1024) Catanzaro ran 1.0-1.3x faster, over 5 or 8 (fp64 125001 x 400, fp32
  // 460000 x 700) skinny ran 1.14x and 2.2x faster.
  constexpr int64_t kSkinnyRowClusterMax = 4;
  if (forced == Algo::Auto && lo > kSkinnyMax && lo <= kGpuSkinnyForcedMax && hi > lo && !skinny_range(p, forced) &&
      !env_is("TORCH_INPLACE_GPU_SKINNY_OFF_GRID", "0")) {
    if (catanzaro_first_narrow(kSkinnyRowClusterMax)) {
      Plan sk = plan_skinny21(p, caps, !tall);
      sk.reason += "; ahead of Catanzaro, whose column panels would be narrower than " + std::to_string(kPanelBytes) +
                   " bytes or its rows split over more than " + std::to_string(kSkinnyRowClusterMax) + " blocks";
      out.insert(out.begin(), sk);
    }
  }
  // Padded: forced, or in auto plans where the storage has the slack and the first plan is still Catanzaro with
  // column panels narrower than 128 bytes (TORCH_INPLACE_GPU_PADDED=0: never in auto plans). Measured on an H200
  // (history_padded.log, fp32): 1000003 x 1100 34 ms against 242 (C2R, universal columns) and 1096 (R2C); but 1.6-9x
  // slower than Catanzaro with full panels (300007 x 1500 24.5 ms against R2C's 6.4; 60001 x 1500 4.9 against 0.56):
  // its ordered shift moves each of g rows by up to g * r elements, and a chunk waited for every chunk within reach,
  // polled one at a time. Polled by the whole block (history_padded_polling.log): 300007 x 1500 4.3 ms (R2C 6.4),
  // 60001 x 1500 0.86 (C2R 0.61); the rule stays (two shapes, one either way).
  const int64_t pad = padding_bytes(p);
  if (pad > 0 && p.slack_bytes >= pad) {
    if (forced == Algo::Padded) {
      out.push_back(plan_padded(p));
    } else if (forced == Algo::Auto && !env_is("TORCH_INPLACE_GPU_PADDED", "0") &&
               catanzaro_first_narrow(std::numeric_limits<int64_t>::max())) {
      out.insert(out.begin(), plan_padded(p));
    }
  } else if (forced == Algo::Padded) {
    const std::string got = "got a " + std::to_string(p.batch) + " x (" + std::to_string(p.rows) + " x " +
                            std::to_string(p.cols) + ") tensor";
    throw PlanError{pad == 0 ? "algorithm 'padded' applies to one matrix whose long side is at most 1/" +
                                   std::to_string(kPadMaxFraction) + " short of a multiple of its short side; " + got
                             : "algorithm 'padded' needs " + std::to_string(pad) +
                                   " bytes of storage slack past the elements (torch_inplace.empty_transposable); " +
                                   got + " with " + std::to_string(p.slack_bytes)};
  }
  if (env_is("TORCH_INPLACE_GPU_SQUARE_TILE", "32")) {
    for (Plan& c : out) c.gpu.sq_narrow = 1;
  }
  return out;
}

int64_t padding_slack_bytes(const Problem& p) { return padding_bytes(p); }  // the same either way round

}  // namespace plan
}  // namespace torch_inplace
