// The transposition planner (csrc/plan/transpose_plan.h): CPU choices by shape, scratch sizes, forced
// algorithms, workspace limits and explain(); the GPU candidates only loosely (the GPU planner evolves).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "plan/tiled.h"
#include "plan/transpose_plan.h"

namespace {

using namespace torch_inplace::plan;

Problem prob(int64_t batch, int64_t rows, int64_t cols, int64_t esize = 4) {
  Problem p;
  p.batch = batch;
  p.rows = rows;
  p.cols = cols;
  p.esize = esize;
  return p;
}

DeviceCaps cpu(int threads = 4) {
  DeviceCaps c;
  c.backend = Backend::CPU;
  c.num_threads = threads;
  return c;
}

DeviceCaps fake_gpu() {
  DeviceCaps c;
  c.backend = Backend::CUDA;
  c.num_sms = 132;
  c.smem_per_block = 227 * 1024;
  c.warp_size = 32;
  c.l2_bytes = 50 * 1024 * 1024;
  return c;
}

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

// make_plan with the planner knob `name` set to `value` (unset again afterwards).
Plan plan_with_knob(const char* name, const char* value, const Problem& pr, const DeviceCaps& caps, Algo algo) {
  setenv(name, value, 1);
  Plan pl = make_plan(pr, caps, algo);
  unsetenv(name);
  return pl;
}

// The scratch a CPU Catanzaro-family plan must report: cpu_scratch_layout of its own parameters.
int64_t expected_cpu_scratch(const Plan& pl) {
  if (pl.algo == Algo::Skinny) {
    const int64_t N = std::max(pl.problem.rows, pl.problem.cols), F = std::min(pl.problem.rows, pl.problem.cols);
    return cpu_skinny_layout(N, F, pl.problem.esize, pl.threads, pl.tile_m).total;
  }
  if (pl.algo == Algo::Tiled32) {
    return cpu_tiled_layout(pl.problem.rows, pl.problem.cols, pl.tile_m, pl.tile_n, pl.problem.esize, pl.threads)
        .total;
  }
  return cpu_scratch_layout(pl.c2r.m, pl.c2r.n, pl.problem.esize, pl.threads, pl.panel).total;
}

TEST(Names, RoundTrip) {
  const auto names = algo_names();
  ASSERT_EQ(names.size(), static_cast<size_t>(Algo::kCount));
  for (int i = 0; i < static_cast<int>(Algo::kCount); ++i) {
    Algo a;
    ASSERT_TRUE(algo_from_name(names[i], &a)) << names[i];
    EXPECT_EQ(static_cast<int>(a), i);
    EXPECT_EQ(std::string(algo_name(a)), names[i]);
  }
  Algo a;
  EXPECT_FALSE(algo_from_name("nonsense", &a));
  EXPECT_FALSE(algo_from_name("C2R", &a));  // names are lower case
}

TEST(CpuPlan, NoopForEmptyAndVectors) {
  for (const Problem& p : {prob(0, 5, 7), prob(3, 0, 7), prob(3, 7, 0), prob(2, 1, 1000), prob(2, 1000, 1),
                           prob(1, 1, 1)}) {
    const Plan pl = make_plan(p, cpu());
    EXPECT_EQ(pl.algo, Algo::Noop) << p.batch << " x " << p.rows << " x " << p.cols;
    EXPECT_EQ(pl.scratch_bytes, 0);
    // Every forced algorithm agrees that nothing moves (even with no workspace at all).
    for (Algo f : {Algo::C2R, Algo::R2C, Algo::Square, Algo::Skinny, Algo::Noop})
      EXPECT_EQ(make_plan(p, cpu(), f, 0).algo, Algo::Noop);
  }
  EXPECT_TRUE(contains(make_plan(prob(0, 5, 7), cpu()).reason, "empty"));
}

TEST(CpuPlan, SquareNeedsNoScratch) {
  for (int64_t s : {2, 3, 17, 64, 65, 1000}) {
    // (A batch of small squares goes in cache: CpuPlan.OnChipForBatchesOfSmallMatrices.)
    const Plan pl = make_plan(prob(s <= 8 ? 1 : 3, s, s, 8), cpu());
    EXPECT_EQ(pl.algo, Algo::Square) << s;
    EXPECT_EQ(pl.scratch_bytes, 0);
    EXPECT_EQ(make_plan(prob(3, s, s, 8), cpu(), Algo::Square).scratch_bytes, 0);
  }
}

TEST(CpuPlan, OnChipForBatchesOfSmallMatrices) {
  // First for batches of matrices of at most 64 elements and 512 B, whatever their shape.
  for (auto [r, c, es] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {2, 2, 1}, {2, 2, 16}, {4, 4, 16}, {3, 5, 4}, {8, 8, 8}, {8, 8, 1}, {7, 2, 2}, {2, 32, 8}, {16, 4, 4}}) {
    const Plan pl = make_plan(prob(1000, r, c, es), cpu(4));
    ASSERT_EQ(pl.algo, Algo::OnChip) << r << "x" << c << " es " << es << ": " << pl.reason;
    const CpuOnchipLayout l = cpu_onchip_layout(1000, r, c, es, 4);
    EXPECT_EQ(pl.scratch_bytes, l.total);
    EXPECT_EQ(pl.threads, 4);
    // A run of whole matrices, as many as fit the smaller of 4096 elements and 16 KiB (at least one), and no
    // more than the batch; the table (int32) first, then a 64-byte aligned buffer of a run per thread.
    const int64_t run = std::min<int64_t>(kCpuOnchipChunkElems, kCpuOnchipChunkBytes / es);
    EXPECT_EQ(l.per_chunk, std::max<int64_t>(1, std::min<int64_t>(1000, run / (r * c))));
    EXPECT_EQ(l.chunk_elems, l.per_chunk * r * c);
    EXPECT_EQ(l.buffers_off % 64, 0);
    EXPECT_GE(l.buffers_off, l.chunk_elems * 4);
    EXPECT_EQ(l.thread_bytes % 64, 0);
    EXPECT_GE(l.thread_bytes, l.chunk_elems * es);
    EXPECT_EQ(l.total, l.buffers_off + 4 * l.thread_bytes);
    EXPECT_TRUE(contains(pl.reason, "runs of " + std::to_string(l.per_chunk) + " whole matrices")) << pl.reason;
    EXPECT_EQ(cpu_onchip_layout(3, r, c, es, 4).per_chunk, std::min<int64_t>(3, l.per_chunk));
  }
  // Past 64 elements or 512 B a matrix, or a single matrix: the other plans first, onchip still forcible.
  for (const Problem& p : {prob(1000, 9, 8, 1), prob(1000, 5, 7, 16), prob(1000, 33, 32, 2), prob(1, 3, 5, 4),
                           prob(1, 4, 4, 4)}) {
    const Plan pl = make_plan(p, cpu(4));
    EXPECT_NE(pl.algo, Algo::OnChip) << p.rows << "x" << p.cols;
    const Plan forced = make_plan(p, cpu(4), Algo::OnChip);
    EXPECT_EQ(forced.algo, Algo::OnChip);
    EXPECT_TRUE(contains(forced.reason, "forced or fallback")) << forced.reason;
  }
  // Beyond 4096 elements or 32 KiB a matrix it does not apply.
  EXPECT_THROW(make_plan(prob(10, 65, 64, 1), cpu(4), Algo::OnChip), PlanError);  // 4160 elements
  EXPECT_THROW(make_plan(prob(10, 64, 33, 16), cpu(4), Algo::OnChip), PlanError);  // 33792 B
  EXPECT_EQ(make_plan(prob(10, 64, 32, 16), cpu(4), Algo::OnChip).algo, Algo::OnChip);  // 32 KiB exactly
  EXPECT_EQ(make_plan(prob(10, 64, 64, 8), cpu(4), Algo::OnChip).algo, Algo::OnChip);
  // Nor where its buffers exceed 1 MiB + 0.1% of a matrix (many threads): 32 KiB buffers on 64 threads.
  EXPECT_THROW(make_plan(prob(10, 64, 64, 8), cpu(64), Algo::OnChip), PlanError);
  EXPECT_NE(make_plan(prob(1000, 8, 8, 1), cpu(512)).algo, Algo::OnChip);  // 512 x 4 KiB buffers
  EXPECT_EQ(make_plan(prob(1000, 8, 8, 1), cpu(64)).algo, Algo::OnChip);
}

TEST(CpuPlan, SkinnyForAShortSide) {
  for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{{100000, 3}, {3, 100000}, {5000, 64}, {64, 5000},
                                                              {2, 3}, {1000, 2}}) {
    const Plan pl = make_plan(prob(1, r, c), cpu());
    EXPECT_EQ(pl.algo, Algo::Skinny) << r << "x" << c;
    // Tiles of k rows of the long side (k x F tiles of about 32 KB, at most the long side), the rest cut.
    const int64_t N = std::max(r, c), F = std::min(r, c);
    EXPECT_GE(pl.tile_m, 1);
    EXPECT_LE(pl.tile_m, N);
    EXPECT_EQ(pl.tile_m, cpu_skinny_tile(N, F, 4));
    const CpuSkinnyLayout l = cpu_skinny_layout(N, F, 4, pl.threads, pl.tile_m);
    EXPECT_EQ(l.Mp * l.k + l.r, N);
    EXPECT_LT(l.r, l.k);
    EXPECT_EQ(pl.scratch_bytes, expected_cpu_scratch(pl));
  }
}

// The first Catanzaro plan among the CPU candidates (behind the tiled and cut paths where those apply).
Plan first_catanzaro(const Problem& p) {
  for (const Plan& c : cpu_candidates(p, cpu(), Algo::Auto)) {
    if (c.algo == Algo::C2R || c.algo == Algo::R2C) return c;
  }
  ADD_FAILURE() << "no Catanzaro candidate";
  return Plan{};
}

TEST(CpuPlan, CatanzaroByOrientation) {
  // Factor-poor sides (701 and 307 are prime; with 2-byte or larger elements 701 is also longer than a block
  // side): the cut path first, then Catanzaro, the direction by orientation.
  for (int64_t esize : {2, 4, 8, 16}) {
    EXPECT_EQ(make_plan(prob(2, 701, 307, esize), cpu()).algo, Algo::Cut);
    // Tall from an aspect of 2: R2C on the cols x rows view, its row shuffle on the long side (rows of 701).
    const Plan tall = first_catanzaro(prob(2, 701, 307, esize));
    EXPECT_EQ(tall.algo, Algo::R2C);
    EXPECT_EQ(tall.c2r.m, 307);
    EXPECT_EQ(tall.c2r.n, 701);
    EXPECT_EQ(tall.panel, std::min<int64_t>(701, cpu_panel_width(esize)));
    EXPECT_EQ(tall.scratch_bytes, expected_cpu_scratch(tall));
    EXPECT_GT(tall.scratch_bytes, 0);
    EXPECT_TRUE(contains(tall.reason, "rows >= 2 cols: R2C")) << tall.reason;

    // Tall under an aspect of 2: C2R, its row shuffle on the short side there.
    const Plan squarish = first_catanzaro(prob(2, 701, 401, esize));
    EXPECT_EQ(squarish.algo, Algo::C2R);
    EXPECT_EQ(squarish.c2r.m, 701);
    EXPECT_EQ(squarish.c2r.n, 401);
    EXPECT_TRUE(contains(squarish.reason, "rows < 2 cols: C2R, its row shuffle on the short side")) << squarish.reason;

    // Wide: C2R, its row shuffle on the long side, where its buffers fit 1 MiB + 0.1% of the tensor.
    const Plan wide = first_catanzaro(prob(2, 307, 701, esize));
    EXPECT_EQ(wide.algo, Algo::C2R);
    EXPECT_EQ(wide.c2r.m, 307);
    EXPECT_EQ(wide.c2r.n, 701);
    EXPECT_EQ(wide.scratch_bytes, expected_cpu_scratch(wide));
    EXPECT_TRUE(contains(wide.reason, "long side")) << wide.reason;

    // Tall with columns too long for that budget: C2R, its row buffers on the short side.
    const Plan taller = first_catanzaro(prob(1, 400009, 101, esize));
    EXPECT_EQ(taller.algo, Algo::C2R);
    EXPECT_EQ(taller.c2r.m, 400009);
    EXPECT_EQ(taller.c2r.n, 101);
    EXPECT_TRUE(contains(taller.reason, "exceed 1 MiB + 0.1%")) << taller.reason;

    // Rows too long for that budget: R2C on the cols x rows view, its row buffers on the short side.
    const Plan longer = first_catanzaro(prob(1, 101, 400009, esize));
    EXPECT_EQ(longer.algo, Algo::R2C);
    EXPECT_EQ(longer.c2r.m, 400009);  // R2C works on the cols x rows view
    EXPECT_EQ(longer.c2r.n, 101);
    EXPECT_EQ(longer.scratch_bytes, expected_cpu_scratch(longer));
    EXPECT_LE(longer.scratch_bytes, (int64_t{1} << 20) + 101 * 400009 * esize / 1000);
    EXPECT_TRUE(contains(longer.reason, "exceed 1 MiB + 0.1%")) << longer.reason;

    // Forced on a shape the tiled path would take: the decomposition's parameters (gcd 100).
    const Plan forced = make_plan(prob(2, 700, 300, esize), cpu(), Algo::C2R);
    EXPECT_EQ(forced.c2r.c, 100);
    EXPECT_EQ(forced.scratch_bytes, expected_cpu_scratch(forced));
  }
}

TEST(CpuPlan, CatanzaroFallbackKeepsTheSmallerBuffers) {
  // Tall under an aspect of 2 with C2R's buffers over the budget: R2C's (rows of the long side) would be larger, so
  // C2R stays first (a user review found R2C there, 14.56 MB against C2R's 14.04 MB with 64 threads).
  const Problem p = prob(1, 28421, 27407, 8);
  const auto cands = cpu_candidates(p, cpu(64), Algo::Auto);
  const auto first = std::find_if(cands.begin(), cands.end(),
                                  [](const Plan& c) { return c.algo == Algo::C2R || c.algo == Algo::R2C; });
  ASSERT_NE(first, cands.end());
  EXPECT_EQ(first->algo, Algo::C2R) << first->reason;
  EXPECT_TRUE(contains(first->reason, "no more than the other direction's")) << first->reason;
  EXPECT_LT(first->scratch_bytes, make_plan(p, cpu(64), Algo::R2C).scratch_bytes);
}

TEST(CpuPlan, CatanzaroAheadOfTheCutFromSixteenThreads) {
  for (int64_t esize : {8, 16}) {
    const Problem p = prob(1, 701, 307, esize);
    ASSERT_EQ(make_plan(p, cpu(8)).algo, Algo::Cut) << esize;
    const auto cands = cpu_candidates(p, cpu(16), Algo::Auto);
    ASSERT_GE(cands.size(), 2u);
    EXPECT_EQ(cands.front().algo, Algo::R2C) << esize;  // rows >= 2 cols
    EXPECT_TRUE(contains(cands.front().reason, "ahead of the cut plan with 16 threads")) << cands.front().reason;
    EXPECT_EQ(cands.back().algo, Algo::Cut);
    EXPECT_TRUE(contains(cands.back().reason, "with 16 threads after Catanzaro's")) << cands.back().reason;
    EXPECT_EQ(make_plan(p, cpu(64)).algo, Algo::R2C);
    const Plan wide = make_plan(prob(1, 307, 701, esize), cpu(16));  // C2R where its row buffers fit, else R2C
    EXPECT_TRUE(wide.algo == Algo::C2R || wide.algo == Algo::R2C) << wide.reason;
    EXPECT_TRUE(contains(wide.reason, "ahead of the cut plan")) << wide.reason;
    // Still forcible (with no word of an order there), and the fallback under a workspace limit that Catanzaro's
    // buffers exceed.
    const Plan forced = make_plan(p, cpu(16), Algo::Cut);
    EXPECT_EQ(forced.algo, Algo::Cut);
    EXPECT_FALSE(contains(forced.reason, "after Catanzaro's")) << forced.reason;
    if (forced.scratch_bytes < cands.front().scratch_bytes && forced.scratch_bytes < cands[1].scratch_bytes) {
      EXPECT_EQ(make_plan(p, cpu(16), Algo::Auto, forced.scratch_bytes).algo, Algo::Cut);
    }
  }
  // 1- to 4-byte elements keep the cut first (median 0.22x / 0.46-0.56x / 1.07x of Catanzaro's time with 16 threads).
  for (int64_t esize : {1, 2, 4}) {
    const Problem small = prob(1, 1031, 3001, esize);
    ASSERT_EQ(make_plan(small, cpu(4)).algo, Algo::Cut) << esize;
    EXPECT_EQ(make_plan(small, cpu(16)).algo, Algo::Cut) << esize;
    EXPECT_EQ(make_plan(small, cpu(64)).algo, Algo::Cut) << esize;
  }
}

TEST(CpuPlan, TiledWhereBothSidesHaveABlockSide) {
  // cpu_tiled_side: the divisor whose bytes lie in [64, 1024], closest to 512 (in ratio).
  EXPECT_EQ(cpu_tiled_side(1024, 4), 128);
  EXPECT_EQ(cpu_tiled_side(768, 4), 128);
  EXPECT_EQ(cpu_tiled_side(300, 4), 150);   // 600 B (100: 400 B is further in ratio)
  EXPECT_EQ(cpu_tiled_side(1024, 1), 512);
  EXPECT_EQ(cpu_tiled_side(1024, 16), 32);
  EXPECT_EQ(cpu_tiled_side(16, 4), 16);     // the whole side (64 B)
  EXPECT_EQ(cpu_tiled_side(15, 4), 0);      // 60 B: shorter than a cache line
  EXPECT_EQ(cpu_tiled_side(701, 4), 0);     // prime, longer than 1024 B
  EXPECT_EQ(cpu_tiled_side(2 * 701, 4), 0); // divisors 2 (8 B) and 701 (2804 B): none in range
  for (int64_t esize : {1, 2, 4, 8, 16}) {
    for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{{700, 300}, {300, 700}, {1024, 768}, {96, 100000}}) {
      const Plan pl = make_plan(prob(3, r, c, esize), cpu(4));
      ASSERT_EQ(pl.algo, Algo::Tiled32) << r << "x" << c << " " << esize;
      EXPECT_LE(pl.tile_m, cpu_tiled_side(r, esize));
      EXPECT_LE(pl.tile_n, cpu_tiled_side(c, esize));
      EXPECT_LE(pl.tile_m * pl.tile_n * esize, kCpuTiledMaxBlockBytes);
      EXPECT_GE(pl.tile_m * esize, kCpuTiledMinBytes);
      EXPECT_GE(pl.tile_n * esize, kCpuTiledMinBytes);
      EXPECT_EQ(r % pl.tile_m, 0);
      EXPECT_EQ(c % pl.tile_n, 0);
      EXPECT_EQ(pl.threads, 4);
      EXPECT_EQ(pl.scratch_bytes, expected_cpu_scratch(pl));
      EXPECT_TRUE(contains(pl.reason, "Karlsson")) << pl.reason;
      // Layout: 64-byte aligned regions per thread, each big enough for what it holds.
      const CpuTiledLayout l = cpu_tiled_layout(r, c, pl.tile_m, pl.tile_n, esize, 4);
      EXPECT_EQ(l.Mp * l.m, r);
      EXPECT_EQ(l.Np * l.n, c);
      for (int64_t off : {l.visited_off, l.leaders_off, l.band_off, l.block_off, l.thread_bytes}) {
        EXPECT_EQ(off % 64, 0);
      }
      EXPECT_GE(l.leaders_off - l.visited_off, (l.Mp * l.Np + 7) / 8);
      EXPECT_GE(l.band_off - l.leaders_off, (l.Mp * l.Np + 7) / 8);
      EXPECT_GE(l.block_off - l.band_off, (std::max(l.m * l.Np, l.Mp * l.n) + 7) / 8);
      EXPECT_GE(l.thread_bytes - l.block_off, l.m * l.n * esize);
      EXPECT_EQ(l.total, 4 * l.thread_bytes);
      // A block and a few bitmaps per thread.
      EXPECT_LT(pl.scratch_bytes, 4 * (kCpuTiledMaxBlockBytes + 4096 + r * c / 512));
    }
  }
  // 1024 x 768 fp32: 128 x 128 blocks of 64 KiB; 1-byte elements: 512 x 384 would be 192 KiB, so 256 x 256.
  EXPECT_EQ(make_plan(prob(1, 1024, 768), cpu()).tile_m, 128);
  EXPECT_EQ(make_plan(prob(1, 1024, 768, 1), cpu()).tile_m * make_plan(prob(1, 1024, 768, 1), cpu()).tile_n,
            256 * 256);
  // A factor-poor side takes the cut path; forcing the tiled path there is refused.
  EXPECT_EQ(make_plan(prob(1, 700, 307), cpu()).algo, Algo::Cut);
  EXPECT_THROW(make_plan(prob(1, 700, 307), cpu(), Algo::Tiled32), PlanError);
  EXPECT_THROW(make_plan(prob(1, 700, 300), cpu(), Algo::Tiled31), PlanError);  // the CPU runs 3.2 only
  // Squares and skinny shapes keep their own paths.
  EXPECT_EQ(make_plan(prob(1, 1024, 1024), cpu()).algo, Algo::Square);
  EXPECT_EQ(make_plan(prob(1, 1024, 32), cpu()).algo, Algo::Skinny);
}

TEST(CpuPlan, CutWhereASideLacksABlockDivisor) {
  // 701 = 700 + 1 and 307 = 306 + 1 (fp32: 700 and 306 have block sides); the fewest rows / columns are cut.
  const Plan both = make_plan(prob(1, 701, 307), cpu(4));
  ASSERT_EQ(both.algo, Algo::Cut);
  EXPECT_EQ(both.cut_rows, 1);
  EXPECT_EQ(both.cut_cols, 1);
  int64_t m = 0, n = 0;
  ASSERT_TRUE(cpu_tiled_blocks(700, 306, 4, &m, &n));
  EXPECT_EQ(both.tile_m, m);
  EXPECT_EQ(both.tile_n, n);
  EXPECT_EQ(both.scratch_bytes, cpu_cut_layout(701, 307, 1, 1, m, n, 4, 4).total);
  EXPECT_TRUE(contains(both.reason, "cut of 1 row and 1 column (")) << both.reason;
  const CpuCutLayout l = cpu_cut_layout(701, 307, 1, 1, m, n, 4, 4);
  EXPECT_EQ(l.cols_off % 64, 0);
  EXPECT_EQ(l.rows_off % 64, 0);
  EXPECT_GE(l.cols_off, l.tiled.total);
  EXPECT_GE(l.rows_off - l.cols_off, 701 * 1 * 4);
  EXPECT_GE(l.total - l.rows_off, 1 * 306 * 4);
  // One side cut only.
  const Plan rows_only = make_plan(prob(1, 701, 300), cpu());
  EXPECT_EQ(rows_only.algo, Algo::Cut);
  EXPECT_EQ(rows_only.cut_rows, 1);
  EXPECT_EQ(rows_only.cut_cols, 0);
  // Divisible shapes take the tiled path and refuse a forced cut (nothing to cut).
  EXPECT_EQ(make_plan(prob(1, 700, 300), cpu()).algo, Algo::Tiled32);
  EXPECT_THROW(make_plan(prob(1, 700, 300), cpu(), Algo::Cut), PlanError);
  // The saved rows and columns stay within 1 MiB plus 0.1% of the tensor, or the plan falls back to Catanzaro:
  // 2-byte elements, 5003 x 100003 (both prime, cut 3 and 3): 5003*3 + 3*100000 elements, 0.6 MB: a cut.
  EXPECT_EQ(make_plan(prob(1, 5003, 100003, 2), cpu()).algo, Algo::Cut);
}

TEST(CpuPlan, ScratchScalesWithThreadsAndMatchesLayout) {
  const Plan one = make_plan(prob(1, 3000, 2000), cpu(1), Algo::C2R);
  const Plan eight = make_plan(prob(1, 3000, 2000), cpu(8), Algo::C2R);
  EXPECT_EQ(one.threads, 1);
  EXPECT_EQ(eight.threads, 8);
  EXPECT_GT(eight.scratch_bytes, one.scratch_bytes);
  const CpuScratchLayout l = cpu_scratch_layout(3000, 2000, 4, 8, eight.panel);
  EXPECT_EQ(l.total, eight.scratch_bytes);
  // Layout invariants: 64-byte aligned regions in order, each big enough for what it holds.
  EXPECT_EQ(l.bitmap_words, (3000 + 63) / 64);
  for (int64_t off : {l.visited_off, l.leaders_off, l.threads_off}) EXPECT_EQ(off % 64, 0);
  EXPECT_GE(l.leaders_off - l.visited_off, l.bitmap_words * 8);
  EXPECT_GE(l.threads_off - l.leaders_off, l.bitmap_words * 8);
  EXPECT_GE(l.thread_elems, 2000);  // a whole row of the row shuffle
  EXPECT_GE(l.total - l.threads_off, 8 * l.thread_elems * 4);
  // O(max(m, n)) per thread: far below the matrix itself.
  EXPECT_LT(eight.scratch_bytes, 3000 * 2000 * 4 / 20);
}

TEST(CpuPlan, ForcedAlgorithms) {
  const Problem wide = prob(1, 300, 700);
  const Plan c2r = make_plan(wide, cpu(), Algo::C2R);
  EXPECT_EQ(c2r.algo, Algo::C2R);
  EXPECT_EQ(c2r.c2r.m, 300);  // C2R on (rows, cols) even though R2C would be the natural choice
  EXPECT_EQ(c2r.c2r.n, 700);
  EXPECT_EQ(c2r.scratch_bytes, expected_cpu_scratch(c2r));
  const Plan r2c = make_plan(prob(1, 700, 300), cpu(), Algo::R2C);
  EXPECT_EQ(r2c.algo, Algo::R2C);
  EXPECT_EQ(r2c.c2r.m, 300);
  EXPECT_EQ(make_plan(prob(1, 50, 50), cpu(), Algo::C2R).algo, Algo::C2R);  // square may be forced elsewhere
  EXPECT_EQ(make_plan(prob(1, 5000, 7), cpu(), Algo::R2C).algo, Algo::R2C);
  EXPECT_THROW(make_plan(prob(1, 300, 700), cpu(), Algo::Square), PlanError);
  EXPECT_THROW(make_plan(prob(1, 300, 700), cpu(), Algo::Skinny), PlanError);
  EXPECT_THROW(make_plan(prob(1, 30, 70), cpu(), Algo::Noop), PlanError);
  try {
    make_plan(prob(1, 300, 700), cpu(), Algo::Square);
  } catch (const PlanError& e) {
    EXPECT_TRUE(contains(e.message, "square")) << e.message;
    EXPECT_TRUE(contains(e.message, "300 x 700")) << e.message;
  }
}

TEST(CpuPlan, WorkspaceLimits) {
  const Problem p = prob(1, 5000, 40);  // skinny first, then C2R, then R2C
  const Plan best = make_plan(p, cpu());
  ASSERT_EQ(best.algo, Algo::Skinny);
  const auto cands = cpu_candidates(p, cpu(), Algo::Auto);
  ASSERT_GE(cands.size(), 2u);
  EXPECT_EQ(cands.front().algo, Algo::Skinny);

  // A limit the best plan fits: unchanged.
  const Plan fits = make_plan(p, cpu(), Algo::Auto, best.scratch_bytes);
  EXPECT_EQ(fits.algo, best.algo);
  EXPECT_EQ(fits.reason, best.reason);

  // Between the smallest and the best: the best is excluded and the reason says so.
  int64_t smallest = best.scratch_bytes;
  for (const Plan& c : cands) smallest = std::min(smallest, c.scratch_bytes);
  if (smallest < best.scratch_bytes) {
    const Plan limited = make_plan(p, cpu(), Algo::Auto, best.scratch_bytes - 1);
    EXPECT_NE(limited.algo, best.algo);
    EXPECT_LE(limited.scratch_bytes, best.scratch_bytes - 1);
    EXPECT_TRUE(contains(limited.reason, "workspace limit")) << limited.reason;
  }

  // Nothing fits: PlanError naming the limit and the smallest candidate.
  try {
    make_plan(p, cpu(), Algo::Auto, 0);
    FAIL() << "expected PlanError";
  } catch (const PlanError& e) {
    EXPECT_TRUE(contains(e.message, "workspace limit of 0 B")) << e.message;
    EXPECT_TRUE(contains(e.message, std::to_string(smallest) + " B")) << e.message;
  }
  // A forced algorithm that does not fit is refused too.
  const Plan forced = make_plan(p, cpu(), Algo::R2C);
  EXPECT_THROW(make_plan(p, cpu(), Algo::R2C, forced.scratch_bytes - 1), PlanError);
  EXPECT_EQ(make_plan(p, cpu(), Algo::R2C, forced.scratch_bytes).algo, Algo::R2C);
  // Square needs nothing, so any limit fits.
  EXPECT_EQ(make_plan(prob(1, 64, 64), cpu(), Algo::Auto, 0).algo, Algo::Square);
}

TEST(CpuPlan, Explain) {
  const Plan pl = make_plan(prob(3, 700, 300, 8), cpu(2), Algo::C2R);
  const std::string s = pl.explain();
  EXPECT_TRUE(contains(s, "c2r")) << s;
  EXPECT_TRUE(contains(s, "3 x (700 x 300)")) << s;
  EXPECT_TRUE(contains(s, "8-byte")) << s;
  EXPECT_TRUE(contains(s, "scratch " + std::to_string(pl.scratch_bytes) + " B")) << s;
  EXPECT_TRUE(contains(s, pl.reason)) << s;
  EXPECT_TRUE(contains(make_plan(prob(1, 9, 9), cpu()).explain(), "square")) << s;
}

TEST(GpuPlan, CandidatesLoosely) {
  // The GPU planner is being rewritten: only check that it answers, and honours a forced Catanzaro or square.
  const DeviceCaps g = fake_gpu();
  for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{{700, 300}, {300, 700}, {4096, 3}, {1000, 1000}}) {
    EXPECT_FALSE(gpu_candidates(prob(1, r, c), g, Algo::Auto).empty()) << r << "x" << c;
    const Plan pl = make_plan(prob(1, r, c), g);
    EXPECT_NE(pl.algo, Algo::Noop);
  }
  for (Algo a : {Algo::C2R, Algo::R2C}) {
    const auto cands = gpu_candidates(prob(2, 700, 300), g, a);
    ASSERT_FALSE(cands.empty()) << algo_name(a);
    EXPECT_EQ(cands.front().algo, a);
    EXPECT_EQ(make_plan(prob(2, 700, 300), g, a).algo, a);
  }
  const auto sq = gpu_candidates(prob(2, 512, 512), g, Algo::Square);
  ASSERT_FALSE(sq.empty());
  EXPECT_EQ(sq.front().algo, Algo::Square);
  EXPECT_EQ(make_plan(prob(0, 512, 512), g).algo, Algo::Noop);
}

TEST(GpuPlan, FusedRotationStagesLongRunsByRuns) {
  // C2R with gcd > 1: the pre-rotation fused into the row shuffle stages each row as c runs of b columns, by
  // vector copies where a run is at least 128 bytes of elements of at most 4 bytes (4100 x 1022: gcd 2, b = 511),
  // element by element where the runs are shorter (1200 x 120: gcd 120, b = 1), the elements 8 bytes, or
  // TORCH_INPLACE_GPU_FUSE_STAGE=elements. R2C stages its rows unrotated: no runs.
  const DeviceCaps g = fake_gpu();
  const Plan c2r = make_plan(prob(1, 4100, 1022), g, Algo::C2R);
  ASSERT_GT(c2r.gpu.fuse_head, 0) << c2r.reason;
  EXPECT_EQ(c2r.gpu.fuse_runs, 1);
  EXPECT_TRUE(contains(c2r.reason, "rows staged by runs of 511 columns")) << c2r.reason;
  const Plan shortruns = make_plan(prob(1, 1200, 120), g, Algo::C2R);
  ASSERT_GT(shortruns.gpu.fuse_head, 0) << shortruns.reason;
  EXPECT_EQ(shortruns.gpu.fuse_runs, 0);
  EXPECT_FALSE(contains(shortruns.reason, "staged by runs")) << shortruns.reason;
  const Plan fp64 = make_plan(prob(1, 4100, 1022, 8), g, Algo::C2R);
  ASSERT_GT(fp64.gpu.fuse_head, 0) << fp64.reason;
  EXPECT_EQ(fp64.gpu.fuse_runs, 0);
  const Plan bytes2 = make_plan(prob(1, 4100, 1022, 2), g, Algo::C2R);
  ASSERT_GT(bytes2.gpu.fuse_head, 0) << bytes2.reason;
  EXPECT_EQ(bytes2.gpu.fuse_runs, 1);
  const Plan r2c = make_plan(prob(1, 1022, 4100), g, Algo::R2C);
  ASSERT_GT(r2c.gpu.fuse_head, 0) << r2c.reason;
  EXPECT_EQ(r2c.gpu.fuse_runs, 0);
  const Plan elements = plan_with_knob("TORCH_INPLACE_GPU_FUSE_STAGE", "elements", prob(1, 4100, 1022), g, Algo::C2R);
  ASSERT_GT(elements.gpu.fuse_head, 0);
  EXPECT_EQ(elements.gpu.fuse_runs, 0);
}

TEST(GpuPlan, RowBlockBytes) {
  // The shared-memory row shuffle takes whole rows up to 48 KiB a block (kRowBlockBytes), at least one row, and the
  // explanation says how many where there are several. C2R rows are the short side: 4-byte rows of 2048, 5000 and
  // 7500 elements (8000, 20000, 30000 bytes; gcd 1) give 6, 2 and 1 rows.
  const DeviceCaps g = fake_gpu();
  const Plan p6 = make_plan(prob(1, 12001, 2048), g, Algo::C2R);
  EXPECT_EQ(p6.gpu.row_block, 6) << p6.reason;
  EXPECT_TRUE(contains(p6.reason, "rows shuffled in shared memory, 6 rows per block")) << p6.reason;
  const Plan p2 = make_plan(prob(1, 12001, 5000), g, Algo::C2R);
  EXPECT_EQ(p2.gpu.row_block, 2) << p2.reason;
  const Plan p1 = make_plan(prob(1, 12001, 7500), g, Algo::C2R);
  EXPECT_EQ(p1.gpu.row_block, 1) << p1.reason;
  EXPECT_FALSE(contains(p1.reason, "rows per block")) << p1.reason;
  // The knob still overrides the target (tuning runs).
  const Plan knob = plan_with_knob("TORCH_INPLACE_GPU_ROW_BLOCK_BYTES", "16384", prob(1, 12001, 2048), g, Algo::C2R);
  EXPECT_EQ(knob.gpu.row_block, 2) << knob.reason;
  // Fused rotations (gcd > 1) take bands of the same rows: 4100 x 1022 fp32 (gcd 2) has rows of 4088 bytes.
  const Plan fused = make_plan(prob(1, 4100, 1022), g, Algo::C2R);
  ASSERT_GT(fused.gpu.fuse_head, 0) << fused.reason;
  EXPECT_EQ(fused.gpu.fuse_rows, 12) << fused.reason;
  EXPECT_TRUE(contains(fused.reason, "bands of 12")) << fused.reason;
}

TEST(GpuPlan, OnChipWavesForBatchesOfSmallMatrices) {
  // A batch too large for the GPU's shared memory whose matrices fit one at a time goes on chip in waves of whole
  // matrices: as many as fit, the waves evened out; every wave's tiles fit a block per SM.
  const DeviceCaps g = fake_gpu();
  const Problem p = prob(41, 768, 1497);  // 4.6 MB a matrix, 189 MB in all (fp32)
  const Plan pl = make_plan(p, g);
  ASSERT_EQ(pl.algo, Algo::OnChip) << pl.reason;
  const int64_t w = pl.gpu.oc_wave;
  ASSERT_GT(w, 1);
  ASSERT_LT(w, 41);
  const int64_t waves = (41 + w - 1) / w;
  EXPECT_EQ(w, (41 + waves - 1) / waves) << "evened out";
  EXPECT_TRUE(contains(pl.reason, "in " + std::to_string(waves) + " waves of " + std::to_string(w) + " matrices"))
      << pl.reason;
  EXPECT_EQ(pl.scratch_bytes, 0);
  EXPECT_LE(pl.gpu.oc_smem, g.smem_per_block - 1024);
  EXPECT_LE(pl.gpu.oc_grid, g.num_sms);
  const int64_t tiles = w * ((768 + pl.gpu.oc_tr - 1) / pl.gpu.oc_tr) * ((1497 + pl.gpu.oc_tc - 1) / pl.gpu.oc_tc);
  EXPECT_GE(pl.gpu.oc_grid * pl.gpu.oc_per_block, tiles);
  // One more matrix per wave would not fit: the count before evening out was the largest.
  const int64_t per_matrix = tiles / w;
  const int64_t wmax = (41 + waves - 2) / (waves - 1);  // the fewest matrices per wave with one wave fewer
  const int64_t per_block = (wmax * per_matrix + g.num_sms - 1) / g.num_sms;
  EXPECT_GT((per_block * 16 + 63) / 64 * 64 + per_block * pl.gpu.oc_tr * pl.gpu.oc_s * 4, g.smem_per_block - 1024);
  // A whole tensor that fits stays one wave; a matrix too large for the GPU keeps the multi-pass engines; square
  // batches keep the tile-pair swaps; the knob keeps batches off chip; over 2^31 elements in all is fine (offsets
  // inside a wave are 32-bit, the waves' 64-bit).
  EXPECT_EQ(make_plan(prob(3, 1000, 999), g).gpu.oc_wave, 0);
  EXPECT_NE(make_plan(prob(4, 4000, 3001), g).algo, Algo::OnChip);
  EXPECT_EQ(make_plan(prob(64, 1024, 1024), g).algo, Algo::Square);
  EXPECT_EQ(make_plan(prob(64, 1024, 1024), g, Algo::OnChip).algo, Algo::OnChip);
  EXPECT_NE(plan_with_knob("TORCH_INPLACE_GPU_ONCHIP_WAVES", "0", p, g, Algo::Auto).algo, Algo::OnChip);
  const Plan big = make_plan(prob(3000, 800, 901, 1), g);
  ASSERT_EQ(big.algo, Algo::OnChip) << big.reason;
  EXPECT_GT(big.gpu.oc_wave, 1);
}

TEST(GpuPlan, OnChipStashForSkinnyTensorsJustPastTheSharedMemory) {
  // Whole rows or columns of up to 64 fields that do not fit the shared memory alone go on chip with the register
  // stash: the first oc_stash of a block's tiles (their shared-memory image at most 128 KiB) in registers, the rest in
  // shared memory; the skinny kernel's bytes for both within the budget. One pass, no scratch.
  const DeviceCaps g = fake_gpu();
  const int64_t budget = g.smem_per_block - 1024;
  for (const Problem& p : {prob(1, 876267, 13), prob(1, 13, 876267), prob(1, 1920 * 1080, 4), prob(1, 600000, 9, 8),
                           prob(1, 4, 3840 * 2160, 1)}) {
    const Plan pl = make_plan(p, g);
    ASSERT_EQ(pl.algo, Algo::OnChip) << p.rows << "x" << p.cols << ": " << pl.reason;
    ASSERT_GT(pl.gpu.oc_stash, 0) << pl.reason;
    EXPECT_LE(pl.gpu.oc_stash, pl.gpu.oc_per_block);
    EXPECT_EQ(pl.gpu.oc_wave, 0);
    EXPECT_LE(pl.gpu.oc_skinny, budget);
    EXPECT_LE(pl.gpu.oc_grid, g.num_sms);
    EXPECT_EQ(pl.scratch_bytes, 0);
    EXPECT_TRUE(contains(pl.reason, "register stash")) << pl.reason;
    EXPECT_TRUE(contains(pl.reason, "shared memory and registers")) << pl.reason;
    const bool rows = pl.gpu.oc_tc == p.cols;
    const int64_t F = rows ? p.cols : p.rows, L = rows ? p.rows : p.cols, Lt = rows ? pl.gpu.oc_tr : pl.gpu.oc_tc;
    // The stashed tiles' image (onchip_skinny_smem_bytes: at most two matrices' runs) fits 512 threads x 16 chunks.
    EXPECT_LE(pl.gpu.oc_stash * Lt * F * p.esize + 2 * F * 32 + 16, 512 * 16 * 16);
    EXPECT_GE(pl.gpu.oc_grid * pl.gpu.oc_per_block * Lt, L);
    // Without the stash it does not fit: the multi-pass engines (or the knob's choice) instead.
    EXPECT_NE(plan_with_knob("TORCH_INPLACE_GPU_ONCHIP_STASH", "0", p, g, Algo::Auto).algo, Algo::OnChip);
    // Without the skinny kernel: the element kernel (with its own stash where that fits), or off chip.
    const Plan no_skinny = plan_with_knob("TORCH_INPLACE_GPU_ONCHIP_SKINNY", "0", p, g, Algo::Auto);
    EXPECT_TRUE(no_skinny.algo != Algo::OnChip || no_skinny.gpu.oc_skinny == 0) << no_skinny.reason;
  }
  // Tensors that fit the shared memory alone keep the plain kernels; past shared memory and registers, off chip.
  EXPECT_EQ(make_plan(prob(1, 264937, 17), g).gpu.oc_stash, 0);
  EXPECT_NE(make_plan(prob(1, 1123575, 16), g).algo, Algo::OnChip);
  // Other tiles (here 100 fields) take the element kernel's stash on its usual tiles: the table and the tiles a block
  // keeps in shared memory within the budget, the stashed tiles' image within 128 KiB.
  for (const Problem& p : {prob(1, 90001, 100), prob(1, 8862, 1083), prob(1, 1160, 4051, 8), prob(1, 4363, 8316, 1)}) {
    const Plan el = make_plan(p, g);
    ASSERT_EQ(el.algo, Algo::OnChip) << el.reason;
    EXPECT_GT(el.gpu.oc_stash, 0) << el.reason;
    EXPECT_EQ(el.gpu.oc_skinny, 0) << el.reason;
    EXPECT_TRUE(contains(el.reason, "register stash")) << el.reason;
    const int64_t per_block = el.gpu.oc_per_block, stash = el.gpu.oc_stash;
    const int64_t tile = el.gpu.oc_tr * el.gpu.oc_s * p.esize, table = (per_block * 16 + 63) / 64 * 64;
    EXPECT_LE(stash * tile, 512 * 16 * 16);
    EXPECT_EQ(el.gpu.oc_smem, table + std::max(stash, per_block - stash) * tile);
    EXPECT_LE(el.gpu.oc_smem, budget);
    // As few stashed tiles as let the rest fit.
    EXPECT_GT(table + (per_block - stash + 1) * tile, budget);
    EXPECT_NE(plan_with_knob("TORCH_INPLACE_GPU_ONCHIP_STASH", "0", p, g, Algo::Auto).algo, Algo::OnChip);
  }
  // Past shared memory and registers: off chip.
  EXPECT_NE(make_plan(prob(1, 5227, 2601), g).algo, Algo::OnChip);
  // A batch whose matrices fit only with the stash goes in waves of them.
  const Plan waves = make_plan(prob(3, 1920 * 1080, 4), g);
  ASSERT_EQ(waves.algo, Algo::OnChip) << waves.reason;
  EXPECT_GT(waves.gpu.oc_stash, 0);
  EXPECT_EQ(waves.gpu.oc_wave, 1);
  EXPECT_TRUE(contains(waves.reason, "3 waves of 1 matrix (")) << waves.reason;
}

TEST(GpuPlan, TiledWhereTheShortSideDividesTheLongOne) {
  // q g x g tiles: tall matrices take sequence 2.1 (tiles swapped in place, then the (q, g) super-elements of g
  // elements by cycle following), wide ones 2.2 (the same steps the other way round); auto above the skinny range
  // for super-elements of at least 256 bytes and outside the on-chip plan; the scratch is one flag bit per slice of
  // at most 2 KiB of a super-element; TORCH_INPLACE_GPU_TILED=0 keeps it out of auto plans.
  const DeviceCaps g = fake_gpu();
  const Plan tall = make_plan(prob(1, 8192, 2048), g);
  ASSERT_EQ(tall.algo, Algo::Tiled21) << tall.reason;
  EXPECT_EQ(tall.scratch_bytes, gpu_super_bits_bytes(4 * 2048, 2048 * 4));
  EXPECT_EQ(gpu_super_slices(2048 * 4), 4);
  EXPECT_EQ(gpu_super_bits_bytes(4 * 2048, 2048 * 4), 4 * 2048 * 4 / 8);
  EXPECT_TRUE(contains(tall.reason, "sequence 2.1: 4 tiles of 2048 x 2048")) << tall.reason;
  EXPECT_TRUE(contains(tall.reason, "each moved as 4 slices")) << tall.reason;
  const Plan wide = make_plan(prob(9, 2048, 4096), g);
  ASSERT_EQ(wide.algo, Algo::Tiled22) << wide.reason;
  EXPECT_EQ(wide.scratch_bytes, gpu_super_bits_bytes(9 * 2 * 2048, 2048 * 4));
  EXPECT_TRUE(contains(wide.reason, "sequence 2.2: the (2048, 2) super-elements")) << wide.reason;
  // Not a divisor, the skinny range, short super-elements, on chip, squares: other plans.
  EXPECT_NE(make_plan(prob(1, 8192, 3000), g).algo, Algo::Tiled21);
  EXPECT_EQ(make_plan(prob(1, 640000, 64), g).algo, Algo::Skinny);
  EXPECT_NE(make_plan(prob(1, 10000 * 50, 50 * 1, 1), g).algo, Algo::Tiled21);
  EXPECT_NE(make_plan(prob(1, 65 * 10000, 65, 1), g).algo, Algo::Tiled21);  // 65-byte super-elements
  EXPECT_EQ(make_plan(prob(1, 300, 100), g).algo, Algo::OnChip);
  EXPECT_EQ(make_plan(prob(1, 4096, 4096), g).algo, Algo::Square);
  EXPECT_NE(plan_with_knob("TORCH_INPLACE_GPU_TILED", "0", prob(1, 8192, 2048), g, Algo::Auto).algo, Algo::Tiled21);
  // Forced: any divisor shape of the right orientation, the skinny range and one-byte elements included.
  EXPECT_EQ(make_plan(prob(2, 300, 100), g, Algo::Tiled21).algo, Algo::Tiled21);
  EXPECT_EQ(make_plan(prob(1, 3, 600, 1), g, Algo::Tiled22).algo, Algo::Tiled22);
  EXPECT_THROW(make_plan(prob(1, 100, 300), g, Algo::Tiled21), PlanError);  // wide: that is 2.2
  EXPECT_THROW(make_plan(prob(1, 300, 101), g, Algo::Tiled21), PlanError);  // 101 does not divide 300
  EXPECT_THROW(make_plan(prob(1, 64, 64), g, Algo::Tiled22), PlanError);
}

TEST(GpuPlan, TiledSequences31And32) {
  // Forced 3.1 / 3.2 on any shape: the tile is a divisor pair m | rows, n | cols whose tile (row stride n | 1)
  // fits 48 KiB of shared memory, or a square of a common divisor up to 4 KiB a side (swapped in place), the larger
  // shorter side first, then the larger tile; the flag scratch is the larger of the two cycle-following steps'. Not
  // in auto plans unless TORCH_INPLACE_GPU_TILED3=1 (measurements).
  const DeviceCaps g = fake_gpu();
  const Plan p31 = make_plan(prob(1, 6000, 8001), g, Algo::Tiled31);
  ASSERT_EQ(p31.algo, Algo::Tiled31);
  // fp32, gcd 3: divisor pairs of 6000 / 8001 (= 9 * 7 * 127) with m * (n | 1) <= 12288 elements; 80 x 127 is the
  // first whose shorter side reaches 80 (none reaches more: 96 does not divide 6000, 100 x 127 is too large).
  EXPECT_EQ(p31.tile_m, 80);
  EXPECT_EQ(p31.tile_n, 127);
  const auto s31 = torch_inplace::tiled::seq_3_1(75, 80, 63, 127);
  EXPECT_EQ(p31.scratch_bytes,
            std::max(gpu_super_bits_bytes(6000 * 63, 127 * 4), gpu_super_bits_bytes(63 * 75 * 127, 80 * 4)));
  EXPECT_EQ(s31.steps[0].X * s31.steps[0].Y, 6000 * 63);
  EXPECT_EQ(s31.steps[2].count * s31.steps[2].X * s31.steps[2].Y, 63 * 75 * 127);
  EXPECT_TRUE(contains(p31.reason, "rows 6000 = 75 x 80, cols 8001 = 63 x 127: sequence 3.1")) << p31.reason;
  EXPECT_TRUE(contains(p31.reason, "the 80 x 127 tiles transposed on chip (0010!)")) << p31.reason;
  // A large common divisor: square tiles of up to 1024 fp32 elements a side (gcd 2000: 1000 x 1000).
  const Plan sq = make_plan(prob(1, 6000, 8000), g, Algo::Tiled31);
  EXPECT_EQ(sq.tile_m, 1000);
  EXPECT_EQ(sq.tile_n, 1000);
  EXPECT_FALSE(gpu_tile_in_smem(1000, 1000, 4));
  EXPECT_TRUE(contains(sq.reason, "the 1000 x 1000 tiles swapped in place by tile pairs (0010!)")) << sq.reason;
  EXPECT_EQ(make_plan(prob(1, 8192, 6144, 8), g, Algo::Tiled32).tile_m, 512);
  const Plan p32 = make_plan(prob(3, 6000, 8001, 8), g, Algo::Tiled32);
  ASSERT_EQ(p32.algo, Algo::Tiled32);
  EXPECT_LE(p32.tile_m * (p32.tile_n | 1) * 8, 48 * 1024);
  EXPECT_EQ(6000 % p32.tile_m, 0);
  EXPECT_EQ(8001 % p32.tile_n, 0);
  EXPECT_TRUE(contains(p32.reason, "sequence 3.2")) << p32.reason;
  const auto s32 = torch_inplace::tiled::seq_3_2(6000 / p32.tile_m, p32.tile_m, 8001 / p32.tile_n, p32.tile_n);
  EXPECT_EQ(p32.scratch_bytes,
            std::max(gpu_super_bits_bytes(3 * s32.steps[0].count * s32.steps[0].super_elems(), p32.tile_n * 8),
                     gpu_super_bits_bytes(3 * s32.steps[2].count * s32.steps[2].super_elems(), p32.tile_m * 8)));
  // Prime sides: 1 x cols tiles (the tiles and one cycle-following step are trivial, the other moves single
  // elements: slow but right); squares too.
  const Plan prime = make_plan(prob(1, 4903, 6007), g, Algo::Tiled31);
  EXPECT_EQ(prime.tile_m, 1);
  EXPECT_EQ(prime.tile_n, 6007);
  EXPECT_EQ(make_plan(prob(2, 64, 64), g, Algo::Tiled32).algo, Algo::Tiled32);
  EXPECT_EQ(make_plan(prob(1, 1, 64), g, Algo::Tiled32).algo, Algo::Noop);
  // A side over the tile budget takes its largest divisor within it: 1-byte 100000 x 3 -> m <= 49152 / 3.
  const Plan u8 = make_plan(prob(1, 100000, 3, 1), g, Algo::Tiled31);
  EXPECT_EQ(u8.tile_m, 12500);
  EXPECT_EQ(u8.tile_n, 3);
  // Auto where the tile is a square of a common divisor of at least 1 KiB a side (not on chip, not square
  // matrices): fp32 6000 x 8000 (1000 x 1000 tiles, m == n: Algorithm 3 takes 3.2), fp64 and fp32 4096 x 11008
  // (gcd 256: 2 and 1 KiB); not bf16 4096 x 11008 (512 bytes), nor shared-memory tiles (gcd 3);
  // TORCH_INPLACE_GPU_TILED3=0 or TORCH_INPLACE_GPU_TILED=0: never; =1 (measurements): wherever both super-elements
  // hold 256 bytes.
  const Plan a = make_plan(prob(1, 6000, 8000), g);
  EXPECT_EQ(a.algo, Algo::Tiled32) << a.reason;
  EXPECT_EQ(a.tile_m, 1000);
  EXPECT_EQ(make_plan(prob(2, 4096, 11008, 8), g).algo, Algo::Tiled32);
  EXPECT_EQ(make_plan(prob(1, 4096, 11008 * 2, 4), g).algo, Algo::Tiled32);  // gcd 4096
  EXPECT_EQ(make_plan(prob(1, 4096, 11008), g).algo, Algo::Tiled32);
  EXPECT_NE(make_plan(prob(1, 4096, 11008, 2), g).algo, Algo::Tiled32);
  EXPECT_NE(make_plan(prob(1, 4096, 11008, 2), g).algo, Algo::Tiled31);
  EXPECT_NE(make_plan(prob(1, 6000, 8001), g).algo, Algo::Tiled31);
  EXPECT_NE(make_plan(prob(1, 6000, 8001), g).algo, Algo::Tiled32);
  EXPECT_EQ(make_plan(prob(1, 8192, 2048), g).algo, Algo::Tiled21);  // the short side divides: two passes first
  EXPECT_EQ(make_plan(prob(1, 4096, 4096), g).algo, Algo::Square);
  for (const char* knob : {"TORCH_INPLACE_GPU_TILED3", "TORCH_INPLACE_GPU_TILED"}) {
    const Algo off = plan_with_knob(knob, "0", prob(1, 6000, 8000), g, Algo::Auto).algo;
    EXPECT_TRUE(off == Algo::C2R || off == Algo::R2C) << knob;
  }
  const Plan knob = plan_with_knob("TORCH_INPLACE_GPU_TILED3", "1", prob(1, 6000, 8001), g, Algo::Auto);
  EXPECT_EQ(knob.algo, Algo::Tiled31) << knob.reason;  // 80 x 127: m < n
  EXPECT_NE(plan_with_knob("TORCH_INPLACE_GPU_TILED3", "1", prob(1, 4903, 6007), g, Algo::Auto).algo, Algo::Tiled31);
  EXPECT_EQ(plan_with_knob("TORCH_INPLACE_GPU_TILED3_SQUARE_BYTES", "8192", prob(1, 6000, 8000), g, Algo::Auto).tile_m,
            2000);
}

TEST(GpuPlan, SkinnyShortSidesOver64) {
  // Sequence 2.1 takes short sides up to 1024 when forced, each k x F tile within 96 KiB of shared memory with rows
  // of whole 16-byte multiples.
  const DeviceCaps g = fake_gpu();
  for (int64_t F : {65, 200, 512, 1024}) {
    for (int64_t es : {1, 4, 16}) {
      const Plan pl = make_plan(prob(1, 100003, F, es), g, Algo::Skinny);
      ASSERT_EQ(pl.algo, Algo::Skinny) << F;
      const int64_t k = pl.gpu.sk_k;
      EXPECT_GT(k, 0);
      EXPECT_EQ(k * es % 16, 0) << F << " " << es;
      EXPECT_LE((F + 1) * (k + 1) * es, 96 * 1024) << F << " " << es;
      EXPECT_TRUE(contains(pl.reason, "short side " + std::to_string(F) + " (AoS -> SoA)")) << pl.reason;
    }
  }
  EXPECT_THROW(make_plan(prob(1, 100003, 1025), g, Algo::Skinny), PlanError);
  // Auto past 64 while a row of F elements holds at most 1600 bytes (divisor shapes included, ahead of tiled).
  EXPECT_EQ(make_plan(prob(1, 100003, 400), g).algo, Algo::Skinny);
  EXPECT_EQ(make_plan(prob(1, 200, 100003, 8), g).algo, Algo::Skinny);
  EXPECT_EQ(make_plan(prob(1, 200 * 1000, 200), g).algo, Algo::Skinny);
  EXPECT_NE(make_plan(prob(1, 100003, 512), g).algo, Algo::Skinny);
  EXPECT_NE(make_plan(prob(1, 400, 100003, 8), g).algo, Algo::Skinny);
  EXPECT_EQ(make_plan(prob(1, 512 * 400, 512), g).algo, Algo::Tiled21);
  EXPECT_EQ(plan_with_knob("TORCH_INPLACE_GPU_SKINNY_MAX_BYTES", "4096", prob(1, 100003, 1000), g, Algo::Auto).algo,
            Algo::Skinny);
  // Past 1600 bytes, ahead of Catanzaro where its columns are too long for the whole-GPU panels (the cluster or
  // universal column engines), behind it where they fit; not past 1024 elements.
  // (Where the other direction's columns fit the panels and its rows a block or a cluster, that direction goes first
  // instead: GpuPlan.CatanzaroDirectionOffTheGrid.)
  const Plan off_grid = make_plan(prob(1, 460000, 700), g);
  EXPECT_EQ(off_grid.algo, Algo::Skinny) << off_grid.reason;
  EXPECT_TRUE(contains(off_grid.reason, "ahead of Catanzaro")) << off_grid.reason;
  EXPECT_EQ(make_plan(prob(1, 700, 460000), g).algo, Algo::Skinny);
  EXPECT_EQ(make_plan(prob(1, 1000000, 512), g).algo, Algo::Skinny);
  EXPECT_EQ(make_plan(prob(1, 300007, 250, 8), g).algo, Algo::Skinny);
  const Plan on_grid = make_plan(prob(1, 66520, 519), g);
  ASSERT_EQ(on_grid.algo, Algo::C2R) << on_grid.reason;
  EXPECT_GT(on_grid.gpu.grid_width, 0);
  EXPECT_NE(make_plan(prob(1, 300007, 1500), g).algo, Algo::Skinny);
  EXPECT_NE(plan_with_knob("TORCH_INPLACE_GPU_SKINNY_OFF_GRID", "0", prob(1, 460000, 700), g, Algo::Auto).algo,
            Algo::Skinny);
}

TEST(GpuPlan, CatanzaroDirectionOffTheGrid) {
  // The first direction's columns too long for full column panels, the other's panels full with its rows in a
  // cluster's shared memory: the other direction goes first (fused and unfused variants alike), saying why.
  DeviceCaps g = fake_gpu();
  g.max_cluster = 16;  // as an H200
  const Plan c2r = make_plan(prob(1, 300007, 1500), g, Algo::C2R);
  EXPECT_EQ(c2r.gpu.grid_width, 0);
  EXPECT_LT(c2r.gpu.col_width * 4, 128);
  const Plan tall = make_plan(prob(1, 300007, 1500), g);
  ASSERT_EQ(tall.algo, Algo::R2C) << tall.reason;
  EXPECT_GE(std::max(tall.gpu.grid_width, tall.gpu.col_width) * 4, 128);
  EXPECT_GT(tall.gpu.row_cluster, 0);
  EXPECT_TRUE(contains(tall.reason, "ahead of c2r")) << tall.reason;
  EXPECT_EQ(make_plan(prob(1, 1500, 300007), g).algo, Algo::C2R);
  // Skinny goes ahead only of narrow panels: against the other direction's full cluster panels, Catanzaro stays.
  EXPECT_EQ(make_plan(prob(1, 167726, 795), g).algo, Algo::R2C);
  EXPECT_EQ(make_plan(prob(1, 150001, 1024), g).algo, Algo::R2C);
  EXPECT_EQ(make_plan(prob(1, 500000, 700), g).algo, Algo::Skinny);
  // ... unless the other direction's rows would be split over more than 4 blocks of a cluster.
  const Plan long_rows = make_plan(prob(1, 460000, 700), g);
  ASSERT_EQ(long_rows.algo, Algo::Skinny) << long_rows.reason;
  EXPECT_TRUE(contains(long_rows.reason, "rows split over more than 4 blocks")) << long_rows.reason;
  EXPECT_GT(make_plan(prob(1, 460000, 700), g, Algo::R2C).gpu.row_cluster, 4);
  EXPECT_EQ(make_plan(prob(1, 125001, 400, 8), g).algo, Algo::Skinny);
  EXPECT_EQ(gpu_candidates(prob(1, 300007, 1500), g, Algo::Auto).back().algo, Algo::C2R);
  // Not where both fit the panels, not where the other direction's rows need global slots, not when forced.
  EXPECT_EQ(make_plan(prob(1, 20011, 3001), g).algo, Algo::C2R);
  EXPECT_EQ(make_plan(prob(1, 2000003, 1500), g).algo, Algo::C2R);
  EXPECT_EQ(make_plan(prob(1, 300007, 1500), g, Algo::C2R).algo, Algo::C2R);
  EXPECT_EQ(plan_with_knob("TORCH_INPLACE_GPU_DIRECTION_GRID", "0", prob(1, 300007, 1500), g, Algo::Auto).algo,
            Algo::C2R);
}

TEST(GpuPlan, PaddedIntoTheStoragesSlack) {
  // One matrix whose long side is at most 1/32 short of a multiple of the short side: padding_slack_bytes is the
  // padding (the same either way round), a tensor with that much slack can be forced onto the padded plan, whose
  // scratch holds the flag bits and the shift's chunk flags; without the slack, for batches or well-padded shapes it
  // is refused with the reason.
  const DeviceCaps g = fake_gpu();
  Problem p = prob(1, 40013, 300);  // Lp = 134 * 300 = 40200: 187 rows of padding
  EXPECT_EQ(padding_slack_bytes(p), 187 * 300 * 4);
  EXPECT_EQ(padding_slack_bytes(prob(1, 300, 40013)), 187 * 300 * 4);
  EXPECT_EQ(padding_slack_bytes(prob(2, 40013, 300)), 0);
  EXPECT_EQ(padding_slack_bytes(prob(1, 1009, 1013)), 0);  // 1005 of 1013 columns of padding
  EXPECT_EQ(padding_slack_bytes(prob(1, 40200, 300)), 0);   // already a multiple
  try {
    make_plan(p, g, Algo::Padded);
    ADD_FAILURE() << "no slack";
  } catch (const PlanError& e) {
    EXPECT_TRUE(contains(e.message, "224400 bytes of storage slack")) << e.message;
  }
  EXPECT_THROW(make_plan(prob(1, 1009, 1013), g, Algo::Padded), PlanError);
  p.slack_bytes = padding_slack_bytes(p);
  const Plan pl = make_plan(p, g, Algo::Padded);
  ASSERT_EQ(pl.algo, Algo::Padded);
  EXPECT_EQ(pl.pad_rows, 187);
  EXPECT_EQ(pl.gpu.sk_chunk_off, gpu_super_bits_bytes(134 * 300, 300 * 4));
  EXPECT_GT(pl.scratch_bytes, pl.gpu.sk_chunk_off);
  EXPECT_TRUE(contains(pl.reason, "padded to 40200 = 134 x 300")) << pl.reason;
  Problem w = prob(1, 300, 40013);
  w.slack_bytes = padding_slack_bytes(w);
  EXPECT_EQ(make_plan(w, g, Algo::Padded).pad_cols, 187);
  // Auto: first only ahead of Catanzaro with narrow column panels (here the skinny range takes the shape first;
  // 300007 x 1500 has R2C with full cluster panels, 1000003 x 1100 only 4-byte ones either way).
  EXPECT_NE(make_plan(p, g).algo, Algo::Padded);
  DeviceCaps h = g;
  h.max_cluster = 16;
  Problem full = prob(1, 300007, 1500);
  full.slack_bytes = padding_slack_bytes(full);
  ASSERT_GT(full.slack_bytes, 0);
  EXPECT_EQ(make_plan(full, h).algo, Algo::R2C);
  Problem narrow = prob(1, 1000003, 1100);
  narrow.slack_bytes = padding_slack_bytes(narrow);
  ASSERT_GT(narrow.slack_bytes, 0);
  const Plan np = make_plan(narrow, h);
  EXPECT_EQ(np.algo, Algo::Padded) << np.reason;
  EXPECT_NE(plan_with_knob("TORCH_INPLACE_GPU_PADDED", "0", narrow, h, Algo::Auto).algo, Algo::Padded);
}

TEST(GpuPlan, CutTheLongSideToAMultipleOfTheShortOne) {
  // Karlsson's cut: x = L mod g rows (tall) or columns (wide) set aside in scratch, the rest q g x g tiles. Scratch:
  // the sequence's flag bits (none for a square), the x * g cut elements, the shift's chunk flags (one per 16 KiB
  // and the ticket). Auto for near-square matrices of 4- to 16-byte elements, at least 4 MiB, with a common divisor, whose scratch
  // stays within 0.1% + 1 MiB.
  const DeviceCaps g = fake_gpu();
  auto flags = [](int64_t elems, int64_t es) { return (((elems + 16384 / es - 1) / (16384 / es) + 1) * 4 + 63) / 64 * 64; };
  const Plan tall = make_plan(prob(1, 4100, 4096), g);
  ASSERT_EQ(tall.algo, Algo::Cut) << tall.reason;
  EXPECT_EQ(tall.cut_rows, 4);
  EXPECT_EQ(tall.cut_cols, 0);
  EXPECT_EQ(tall.gpu.sk_rem_off, 0);
  EXPECT_EQ(tall.gpu.sk_chunk_off, 4 * 4096 * 4);
  EXPECT_EQ(tall.scratch_bytes, 4 * 4096 * 4 + flags(4096 * 4096, 4));
  EXPECT_TRUE(contains(tall.reason, "the last 4 rows of 4100")) << tall.reason;
  EXPECT_TRUE(contains(tall.reason, "4096 x 4096 square")) << tall.reason;
  const Plan wide = make_plan(prob(1, 4096, 4100, 8), g);
  ASSERT_EQ(wide.algo, Algo::Cut) << wide.reason;
  EXPECT_EQ(wide.cut_cols, 4);
  EXPECT_EQ(wide.scratch_bytes, 4 * 4096 * 8 + flags(4096 * 4096, 8));
  EXPECT_TRUE(contains(wide.reason, "packed from 4100 to 4096")) << wide.reason;
  // Not in auto plans: the knob, small matrices, cuts whose scratch passes the memory target, tight workspace limits.
  EXPECT_NE(plan_with_knob("TORCH_INPLACE_GPU_CUT", "0", prob(1, 4100, 4096), g, Algo::Auto).algo, Algo::Cut);
  EXPECT_NE(make_plan(prob(1, 503, 500), g).algo, Algo::Cut);
  EXPECT_NE(make_plan(prob(1, 10007, 10000), g).algo, Algo::Cut);  // coprime: Catanzaro needs no rotation
  EXPECT_NE(make_plan(prob(1, 4100, 4096, 2), g).algo, Algo::Cut);  // 2-byte elements: the shift is slow
  EXPECT_NE(make_plan(prob(1, 4096, 6000), g).algo, Algo::Cut);  // 1904 columns: 31 MB of scratch
  EXPECT_NE(make_plan(prob(1, 4100, 4096), g, Algo::Auto, 1024).algo, Algo::Cut);
  EXPECT_EQ(plan_with_knob("TORCH_INPLACE_GPU_CUT", "1", prob(1, 4096, 6000), g, Algo::Auto).algo, Algo::Cut);
  // Forced: anywhere, with the sequence 2.1 / 2.2 flag bits for q > 1 (the 100! step's (q, g) super-elements), one
  // matrix's scratch for a batch, and nothing cut where g divides L.
  const Plan q10 = make_plan(prob(3, 20000, 1999), g, Algo::Cut);
  ASSERT_EQ(q10.algo, Algo::Cut);
  EXPECT_EQ(q10.cut_rows, 10);
  const int64_t bits = gpu_super_bits_bytes(10 * 1999, 1999 * 4);
  EXPECT_EQ(q10.gpu.sk_rem_off, bits);
  EXPECT_EQ(q10.scratch_bytes, bits + (10 * 1999 * 4 + 63) / 64 * 64 + flags(1999 * 19990, 4));
  EXPECT_TRUE(contains(q10.reason, "sequence 2.1 on the 10 tiles of 1999 x 1999")) << q10.reason;
  EXPECT_TRUE(contains(q10.reason, "three passes")) << q10.reason;
  const Plan none = make_plan(prob(2, 2000, 4000), g, Algo::Cut);
  EXPECT_EQ(none.cut_cols, 0);
  EXPECT_EQ(none.scratch_bytes, gpu_super_bits_bytes(2 * 2000 * 2, 2000 * 4));
  EXPECT_TRUE(contains(none.reason, "nothing to cut")) << none.reason;
  EXPECT_EQ(make_plan(prob(1, 300, 300), g, Algo::Cut).scratch_bytes, 0);
  EXPECT_THROW(make_plan(prob(1, 4100, 4096), cpu(), Algo::Cut), PlanError);
}

TEST(GpuPlan, C2RWalkBlockSizeKnob) {
  // C2R row kernels with c > 1 may take a block size that c divides (the launcher, c2r_walk_threads) unless
  // TORCH_INPLACE_GPU_ROW_WALK is power2 or general.
  const DeviceCaps g = fake_gpu();
  EXPECT_EQ(make_plan(prob(1, 5015, 3505), g, Algo::C2R).gpu.row_walk_fit, 1);
  for (const char* v : {"power2", "general"}) {
    const Plan p = plan_with_knob("TORCH_INPLACE_GPU_ROW_WALK", v, prob(1, 5015, 3505), g, Algo::C2R);
    EXPECT_EQ(p.gpu.row_walk_fit, 0) << v;
  }
}

TEST(GpuPlan, RowKernelRegisterBound) {
  // The row kernels' bound of 3 blocks per SM (left to the launcher's occupancy comparison) for rows of at most
  // 45 KiB of 4- or 8-byte elements; TORCH_INPLACE_GPU_ROW_MIN_BLOCKS forces a bound everywhere (or none).
  const DeviceCaps g = fake_gpu();
  const Plan short_rows = make_plan(prob(1, 13441, 9721), g, Algo::C2R);  // C2R rows of 9721 fp32: 38884 B
  EXPECT_EQ(short_rows.gpu.row_min_blocks, 3);
  EXPECT_EQ(short_rows.gpu.row_bounds_denser, 1);
  EXPECT_NE(short_rows.reason.find("compiled for 3 per SM where that fits more"), std::string::npos) << short_rows.reason;
  EXPECT_EQ(make_plan(prob(1, 5666, 16797), g, Algo::C2R).gpu.row_min_blocks, 0);  // rows of 67188 B
  EXPECT_EQ(make_plan(prob(1, 13441, 9721, 2), g, Algo::C2R).gpu.row_min_blocks, 0);  // 2-byte elements
  const Plan forced = plan_with_knob("TORCH_INPLACE_GPU_ROW_MIN_BLOCKS", "4", prob(1, 5666, 16797), g, Algo::C2R);
  EXPECT_EQ(forced.gpu.row_min_blocks, 4);
  EXPECT_EQ(forced.gpu.row_bounds_denser, 0);
  const Plan off = plan_with_knob("TORCH_INPLACE_GPU_ROW_MIN_BLOCKS", "0", prob(1, 13441, 9721), g, Algo::C2R);
  EXPECT_EQ(off.gpu.row_min_blocks, 0);
  EXPECT_EQ(off.reason.find("per SM"), std::string::npos) << off.reason;
  // bounds the launcher has no variant for (2; 2-byte elements) are not planned, so the explanation never names them
  EXPECT_EQ(plan_with_knob("TORCH_INPLACE_GPU_ROW_MIN_BLOCKS", "2", prob(1, 13441, 9721), g, Algo::C2R).gpu.row_min_blocks, 0);
  EXPECT_EQ(plan_with_knob("TORCH_INPLACE_GPU_ROW_MIN_BLOCKS", "3", prob(1, 13441, 9721, 2), g, Algo::C2R).gpu.row_min_blocks,
            0);
}

TEST(GpuPlan, WholeGpuPanelsSplitIntoColumnParts) {
  // Split panels: slot groups of ceil(m / (SMs / q)) rows, each panel in q column parts of
  // W / q, one block per (group, part), the shared memory within the budget. Not where a rotation takes a column
  // step of its own (gcd > 1, a batch: no fusion).
  const DeviceCaps g = fake_gpu();
  const Plan split = plan_with_knob("TORCH_INPLACE_GPU_GRID_SPLIT", "2", prob(1, 13441, 9721), g, Algo::C2R);
  const Plan rot = plan_with_knob("TORCH_INPLACE_GPU_GRID_SPLIT", "2", prob(2, 6000, 4000), g, Algo::C2R);
  const Plan one = make_plan(prob(1, 13441, 9721), g, Algo::C2R);
  ASSERT_GT(one.gpu.grid_width, 0) << one.reason;
  EXPECT_EQ(one.gpu.grid_split, 1);
  ASSERT_EQ(split.gpu.grid_split, 2) << split.reason;
  const int64_t m = split.c2r.m;
  EXPECT_EQ(split.gpu.grid_rows, (m + g.num_sms / 2 - 1) / (g.num_sms / 2));
  EXPECT_EQ(split.gpu.grid_width % 2, 0);
  EXPECT_EQ(split.gpu.grid_blocks, (m + split.gpu.grid_rows - 1) / split.gpu.grid_rows * 2);
  EXPECT_LE(split.gpu.grid_blocks, g.num_sms);
  EXPECT_EQ(split.gpu.grid_smem, split.gpu.grid_rows * (split.gpu.grid_width / 2) * 4);
  EXPECT_LE(split.gpu.grid_smem, g.smem_per_block);
  EXPECT_TRUE(contains(split.reason, "1/2 of the panel's columns")) << split.reason;
  ASSERT_GT(rot.c2r.c, 1);
  EXPECT_EQ(rot.gpu.fuse_head, 0) << rot.reason;
  EXPECT_EQ(rot.gpu.grid_split, 1) << rot.reason;
  // By default where a block's runs are under 300 bytes: 4160 x 8707 fp32 has runs of ceil(4160 / SMs) elements
  // (128 bytes with 132 SMs); q = the smallest of 2..4 with runs of 400 bytes or more, else 4.
  const Plan short_runs = make_plan(prob(1, 4160, 8707), g, Algo::C2R);
  ASSERT_GT(short_runs.gpu.grid_width, 0) << short_runs.reason;
  int64_t q = 2;
  while (q < 4 && (4160 + g.num_sms / q - 1) / (g.num_sms / q) * 4 < 400) ++q;
  EXPECT_EQ(short_runs.gpu.grid_split, q) << short_runs.reason;
  EXPECT_GT(short_runs.gpu.grid_split, 1);
  const Plan no_split = plan_with_knob("TORCH_INPLACE_GPU_GRID_SPLIT", "1", prob(1, 4160, 8707), g, Algo::C2R);
  EXPECT_EQ(no_split.gpu.grid_split, 1);
  EXPECT_EQ(no_split.gpu.grid_rows, (4160 + g.num_sms - 1) / g.num_sms);
  // 2-byte elements keep whole panels (bf16 lost with every q on an H200).
  const Plan bf16 = make_plan(prob(1, 13441, 9721, 2), g, Algo::C2R);  // runs of 204 bytes
  ASSERT_GT(bf16.gpu.grid_width, 0) << bf16.reason;
  EXPECT_EQ(bf16.gpu.grid_split, 1) << bf16.reason;
}

TEST(GpuPlan, WholeGpuPanelsGatherLinearly) {
  // The whole-GPU column panels gather the column shuffles with linearly stepped indices unless
  // TORCH_INPLACE_GPU_GRID_GATHER=general asks for the general gather; the panels themselves do not change.
  const DeviceCaps g = fake_gpu();
  const Plan linear = make_plan(prob(1, 13441, 9721), g, Algo::C2R);
  ASSERT_GT(linear.gpu.grid_width, 0) << linear.reason;
  EXPECT_EQ(linear.gpu.grid_linear, 1);
  const Plan general = plan_with_knob("TORCH_INPLACE_GPU_GRID_GATHER", "general", prob(1, 13441, 9721), g, Algo::C2R);
  EXPECT_EQ(general.gpu.grid_linear, 0);
  EXPECT_EQ(general.gpu.grid_width, linear.gpu.grid_width);
  EXPECT_EQ(general.gpu.grid_rows, linear.gpu.grid_rows);
}

}  // namespace
