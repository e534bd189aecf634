// Catanzaro index math (csrc/plan/c2r.h) against the executable specification
// shared/reference/c2r_reference.py: the C2R and R2C gather steps, driven only by c2r::Params, must produce the
// transpose (and its inverse) on every shape; plus the number theory helpers and 64-bit safety.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "plan/c2r.h"

namespace {

using torch_inplace::c2r::c2r_walk_threads;
using torch_inplace::c2r::gcd64;
using torch_inplace::c2r::mmi;
using torch_inplace::c2r::mulmod;
using torch_inplace::c2r::Params;
using Buf = std::vector<int64_t>;

int64_t pymod(int64_t x, int64_t m) {  // Python's % (non-negative for m > 0)
  const int64_t r = x % m;
  return r < 0 ? r + m : r;
}

// Steps of the reference, each permuting whole columns or rows out of place through a temporary vector, with
// every index taken from Params. buf is the row-major m x n matrix A(i, j) = buf[i * n + j].
void c2r_steps(Buf& buf, const Params& p) {
  const int64_t m = p.m, n = p.n;
  std::vector<int64_t> tmp(std::max(m, n));
  if (p.c > 1) {  // 1. column pre-rotation r_j(i) = (i + j / b) mod m (eq. 23)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t r = p.prerotate_amount(j);
      for (int64_t i = 0; i < m; ++i) tmp[i] = buf[((i + r) % m) * n + j];
      for (int64_t i = 0; i < m; ++i) buf[i * n + j] = tmp[i];
    }
  }
  for (int64_t i = 0; i < m; ++i) {  // 2. row shuffle, gather d'^-1_i(j) (eq. 31)
    for (int64_t j = 0; j < n; ++j) tmp[j] = buf[i * n + p.row_gather(i, j)];
    for (int64_t j = 0; j < n; ++j) buf[i * n + j] = tmp[j];
  }
  for (int64_t j = 0; j < n; ++j) {  // 3. column shuffle s'_j(i) (eq. 26)
    for (int64_t i = 0; i < m; ++i) tmp[i] = buf[p.col_gather(i, j) * n + j];
    for (int64_t i = 0; i < m; ++i) buf[i * n + j] = tmp[i];
  }
}

void r2c_steps(Buf& buf, const Params& p) {
  const int64_t m = p.m, n = p.n;
  std::vector<int64_t> tmp(std::max(m, n));
  for (int64_t j = 0; j < n; ++j) {  // inverse of step 3: scatter with s'_j
    for (int64_t i = 0; i < m; ++i) tmp[p.col_gather(i, j)] = buf[i * n + j];
    for (int64_t i = 0; i < m; ++i) buf[i * n + j] = tmp[i];
  }
  for (int64_t i = 0; i < m; ++i) {  // inverse of step 2: gather with d'_i (eq. 24)
    for (int64_t j = 0; j < n; ++j) tmp[j] = buf[i * n + p.row_scatter(i, j)];
    for (int64_t j = 0; j < n; ++j) buf[i * n + j] = tmp[j];
  }
  if (p.c > 1) {  // inverse of step 1: gather r^-1_j(i) = (i - j / b) mod m (eq. 36)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t r = p.prerotate_amount(j);
      for (int64_t i = 0; i < m; ++i) tmp[i] = buf[pymod(i - r, m) * n + j];
      for (int64_t i = 0; i < m; ++i) buf[i * n + j] = tmp[i];
    }
  }
}

Buf iota(int64_t len) {
  Buf v(len);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

Buf transposed(const Buf& src, int64_t rows, int64_t cols) {  // rows x cols -> cols x rows, row-major
  Buf out(src.size());
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) out[j * rows + i] = src[i * cols + j];
  return out;
}

// Paper, Theorem 2: C2R on (rows, cols) or R2C on (cols, rows), picked so the row shuffle is on the short side.
void transpose_row_major(Buf& buf, int64_t rows, int64_t cols) {
  if (rows > cols)
    c2r_steps(buf, Params(rows, cols));
  else
    r2c_steps(buf, Params(cols, rows));
}

void check_shape(int64_t m, int64_t n) {
  const Buf src = iota(m * n);
  const Buf want = transposed(src, m, n);
  Buf buf = src;
  transpose_row_major(buf, m, n);
  ASSERT_EQ(buf, want) << "transpose_row_major " << m << " x " << n;
  Buf buf2 = src;
  c2r_steps(buf2, Params(m, n));
  ASSERT_EQ(buf2, want) << "c2r " << m << " x " << n;
  r2c_steps(buf2, Params(m, n));
  ASSERT_EQ(buf2, src) << "r2c inverts c2r " << m << " x " << n;
}

TEST(C2R, WalkThreadsAreMultiplesOfC) {
  // C2R row kernels with gcd c > 1 take a block size that c divides where it keeps 7/8 of the default.
  EXPECT_EQ(c2r_walk_threads(512, 1, 32), 512);
  EXPECT_EQ(c2r_walk_threads(512, 2, 32), 512);
  EXPECT_EQ(c2r_walk_threads(1024, 64, 32), 1024);
  EXPECT_EQ(c2r_walk_threads(512, 3, 32), 480);
  EXPECT_EQ(c2r_walk_threads(1024, 3, 32), 960);
  EXPECT_EQ(c2r_walk_threads(512, 5, 32), 480);
  EXPECT_EQ(c2r_walk_threads(512, 6, 32), 480);
  EXPECT_EQ(c2r_walk_threads(1024, 7, 32), 896);
  EXPECT_EQ(c2r_walk_threads(512, 9, 32), 512);    // 288: too few
  EXPECT_EQ(c2r_walk_threads(1024, 13, 32), 1024);  // 832: too few
  EXPECT_EQ(c2r_walk_threads(1024, 15, 32), 960);
  EXPECT_EQ(c2r_walk_threads(1024, 3, 64), 960);  // 64-wide wavefronts
  EXPECT_EQ(c2r_walk_threads(1024, 1000, 32), 1024);
  for (int64_t c = 2; c < 200; ++c) {
    for (int64_t B : {512, 1024}) {
      const int64_t t = c2r_walk_threads(B, c, 32);
      EXPECT_TRUE(t == B || (t % c == 0 && t % 32 == 0 && t * 8 >= B * 7 && t <= B)) << B << " " << c;
    }
  }
}

TEST(C2R, EveryShapeUpTo40) {
  for (int64_t m = 1; m <= 40; ++m)
    for (int64_t n = 1; n <= 40; ++n) check_shape(m, n);
}

TEST(C2R, LargerSweep) {
  // Every shape with one side up to 8 and the other up to 700 (skinny shapes: the AoS <-> SoA case), then a
  // stride through 41..160 (gcds of every size).
  for (int64_t lo = 1; lo <= 8; ++lo)
    for (int64_t hi = 1; hi <= 700; ++hi) {
      check_shape(lo, hi);
      check_shape(hi, lo);
    }
  for (int64_t m = 41; m <= 160; m += 3)
    for (int64_t n = 41; n <= 160; n += 5) check_shape(m, n);
}

TEST(C2R, RowStepGatherAndScatterAreInverse) {
  // row_gather is d'^-1_i (eq. 31) and row_scatter is d'_i (eq. 24): inverse permutations of every row.
  for (int64_t m = 1; m <= 40; ++m)
    for (int64_t n = 1; n <= 40; ++n) {
      const Params p(m, n);
      for (int64_t i = 0; i < m; ++i) {
        std::vector<char> seen(n, 0);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t g = p.row_gather(i, j);
          ASSERT_GE(g, 0);
          ASSERT_LT(g, n);
          ASSERT_FALSE(seen[g]) << m << "x" << n << " row " << i << " is not a permutation";
          seen[g] = 1;
          ASSERT_EQ(p.row_scatter(i, g), j) << m << "x" << n << " i=" << i << " j=" << j;
        }
      }
    }
}

TEST(C2R, ColumnStepIsRotationAfterSharedRowPermutation) {
  // s'_j(i) = (j + i*n - i/a) mod m (eq. 26) = (q(i) + j) mod m, q a permutation of 0..m-1.
  for (int64_t m = 1; m <= 40; ++m)
    for (int64_t n = 1; n <= 40; ++n) {
      const Params p(m, n);
      std::vector<char> seen(m, 0);
      for (int64_t i = 0; i < m; ++i) {
        const int64_t q = p.q(i);
        ASSERT_GE(q, 0);
        ASSERT_LT(q, m);
        ASSERT_FALSE(seen[q]) << "q is not a permutation for " << m << "x" << n;
        seen[q] = 1;
        for (int64_t j = 0; j < n; ++j)
          ASSERT_EQ(p.col_gather(i, j), pymod(j + i * n - i / p.a, m)) << m << "x" << n << " " << i << "," << j;
      }
    }
}

TEST(C2R, ParamsMatchTheReference) {
  for (int64_t m = 1; m <= 60; ++m)
    for (int64_t n = 1; n <= 60; ++n) {
      const Params p(m, n);
      EXPECT_EQ(p.c, std::gcd(m, n));
      EXPECT_EQ(p.a * p.c, m);
      EXPECT_EQ(p.b * p.c, n);
      if (p.b > 1) EXPECT_EQ((p.a * p.ainv) % p.b, 1) << m << "x" << n;
      else EXPECT_EQ(p.ainv, 0);
    }
}

TEST(NumberTheory, GcdMmiMulmod) {
  std::mt19937_64 rng(12345);
  for (int64_t x = 0; x <= 200; ++x)
    for (int64_t y = 0; y <= 200; ++y) ASSERT_EQ(gcd64(x, y), std::gcd(x, y)) << x << "," << y;
  EXPECT_EQ(mmi(7, 1), 0);
  EXPECT_EQ(mmi(0, 1), 0);
  for (int64_t y = 2; y <= 300; ++y)
    for (int64_t x = 1; x < 3 * y; ++x) {
      if (std::gcd(x, y) != 1) continue;
      const int64_t inv = mmi(x, y);
      ASSERT_GE(inv, 0);
      ASSERT_LT(inv, y);
      ASSERT_EQ((x % y) * inv % y, 1) << x << " mod " << y;
    }
  // Large moduli: the inverse must still be exact (checked with a 128-bit product).
  for (int k = 0; k < 2000; ++k) {
    const int64_t y = static_cast<int64_t>(rng() >> 2) | 1;  // up to 2^62
    int64_t x = static_cast<int64_t>(rng() % static_cast<uint64_t>(y));
    if (x == 0 || std::gcd(x, y) != 1) continue;
    const int64_t inv = mmi(x, y);
    const unsigned __int128 prod = static_cast<unsigned __int128>(x) * static_cast<unsigned __int128>(inv);
    ASSERT_EQ(static_cast<int64_t>(prod % static_cast<unsigned __int128>(y)), 1) << x << " mod " << y;
  }
  // mulmod: small operands (fast path) and operands past 2^31 (128-bit path) against a 128-bit reference.
  for (int k = 0; k < 20000; ++k) {
    const int shift = 1 + static_cast<int>(rng() % 62);
    const int64_t mod = static_cast<int64_t>((rng() >> (64 - shift)) | 1);
    const int64_t x = static_cast<int64_t>(rng() % static_cast<uint64_t>(mod));
    const int64_t y = static_cast<int64_t>(rng() % static_cast<uint64_t>(mod));
    const unsigned __int128 want = static_cast<unsigned __int128>(x) * static_cast<unsigned __int128>(y) %
                                   static_cast<unsigned __int128>(mod);
    ASSERT_EQ(mulmod(x, y, mod), static_cast<int64_t>(want)) << x << "*" << y << " mod " << mod;
  }
  EXPECT_EQ(mulmod((int64_t{1} << 62) - 1, (int64_t{1} << 62) - 2, (int64_t{1} << 62) - 3), 2);
}

// ---- 64-bit safety --------------------------------------------------------------------------------------------
// The reference formulas evaluated in 128-bit arithmetic, exactly as c2r_reference.py writes them (Python ints).
using i128 = __int128;
int64_t mod128(i128 x, i128 m) {
  i128 r = x % m;
  if (r < 0) r += m;
  return static_cast<int64_t>(r);
}
int64_t ref_row_gather(const Params& p, int64_t i, int64_t j) {  // eq. 31
  const i128 m = p.m, n = p.n, c = p.c, b = p.b;
  const i128 f = (i - (j % c) + c <= m) ? j + static_cast<i128>(i) * (n - 1) : j + static_cast<i128>(i) * (n - 1) + m;
  return static_cast<int64_t>(mod128(static_cast<i128>(p.ainv) * (f / c), b) + (f % c) * b);
}
int64_t ref_row_scatter(const Params& p, int64_t i, int64_t j) {  // eq. 24
  return mod128(mod128(static_cast<i128>(i) + j / p.b, p.m) + static_cast<i128>(j) * p.m, p.n);
}
int64_t ref_col_gather(const Params& p, int64_t i, int64_t j) {  // eq. 26
  return mod128(static_cast<i128>(j) + static_cast<i128>(i) * p.n - i / p.a, p.m);
}

TEST(C2R, SixtyFourBitShapesSpotChecks) {
  // Shapes past 2^31 elements (and sides past 2^31), both orientations, every gcd structure: c == 1, c == a
  // small side, c large.
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {(int64_t{1} << 31) + 11, 3},  {3, (int64_t{1} << 31) + 11}, {46341, 46343},       {65536, 65536 + 2},
      {(int64_t{1} << 33), 6},       {6, (int64_t{1} << 33)},      {1000003, 999983 * 3}, {(int64_t{1} << 20) * 3, (int64_t{1} << 20) * 5},
      {(int64_t{1} << 40) + 1, 2},   {2, (int64_t{1} << 40) + 1},  {123456789, 987654},   {(int64_t{1} << 16), (int64_t{1} << 31)},
  };
  std::mt19937_64 rng(7);
  for (const auto& [m, n] : shapes) {
    const Params p(m, n);
    ASSERT_EQ(p.c, std::gcd(m, n));
    if (p.b > 1) {
      const unsigned __int128 prod = static_cast<unsigned __int128>(p.a % p.b) * static_cast<unsigned __int128>(p.ainv);
      ASSERT_EQ(static_cast<int64_t>(prod % static_cast<unsigned __int128>(p.b)), 1);
    }
    auto sample = [&](int64_t len, int k) -> int64_t {
      if (k == 0) return 0;
      if (k == 1) return len - 1;
      if (k == 2) return len / 2;
      return static_cast<int64_t>(rng() % static_cast<uint64_t>(len));
    };
    for (int ki = 0; ki < 24; ++ki)
      for (int kj = 0; kj < 24; ++kj) {
        const int64_t i = sample(m, ki), j = sample(n, kj);
        const int64_t g = p.row_gather(i, j);
        ASSERT_EQ(g, ref_row_gather(p, i, j)) << m << "x" << n << " i=" << i << " j=" << j;
        ASSERT_GE(g, 0);
        ASSERT_LT(g, n);
        ASSERT_EQ(p.row_scatter(i, g), j) << m << "x" << n << " i=" << i << " j=" << j;
        ASSERT_EQ(p.row_scatter(i, j), ref_row_scatter(p, i, j)) << m << "x" << n;
        ASSERT_EQ(p.col_gather(i, j), ref_col_gather(p, i, j)) << m << "x" << n << " i=" << i << " j=" << j;
        ASSERT_EQ(p.prerotate_amount(j), mod128(j / p.b, m));
      }
  }
}

TEST(C2R, ComposedGathersOnLargeShapes) {
  // Running all of C2R on millions of elements is too slow here: instead, sampled destinations of large C2R
  // problems (c == 1 and c > 1, both orientations) are traced back through the three gathers composed, and
  // each must come from the element the transpose puts there.
  for (const auto& [m, n] : std::vector<std::pair<int64_t, int64_t>>{
           {3, 5000003}, {4, 6000000}, {6000000, 4}, {3, (int64_t{1} << 31) + 11}, {(int64_t{1} << 31) + 12, 6}}) {
    const Params p(m, n);
    // Compose the three gather steps for destination (i, j): out(i,j) = s3 <- s2 <- s1 <- original.
    // The final n x m transpose stores original (r, s) at flat s * m + r.
    for (int k = 0; k < 200000; ++k) {
      const int64_t flat = (static_cast<int64_t>(k) * 2654435761LL) % (m * n);
      const int64_t i = flat / n, j = flat % n;
      const int64_t i2 = p.col_gather(i, j), j2 = j;                    // step 3
      const int64_t i1 = i2, j1 = p.row_gather(i2, j2);                 // step 2
      const int64_t i0 = p.c > 1 ? (i1 + p.prerotate_amount(j1)) % m : i1, j0 = j1;  // step 1
      // out is the row-major n x m transpose: flat = s * m + r holds A(r, s).
      ASSERT_EQ(j0 * m + i0, flat) << m << "x" << n << " at " << flat;
    }
  }
}

}  // namespace
