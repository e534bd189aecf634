// Tiled in-place transposition index math (csrc/plan/tiled.h) against the executable specification
// shared/reference/tiled_reference.py: sequences 3.1, 3.2, 2.1 and 2.2, every M, N < 25 and every divisor tiling.
// This is the reference for the GPU tiled kernels: they must move elements exactly as these Steps say.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "plan/tiled.h"

namespace {

using namespace torch_inplace::tiled;
using Buf = std::vector<int64_t>;

// In place by cycle following with a visited bitmap, carrying one super-element (as PTTWAC does), using only
// Step::dest: the reference's transpose_super for each of the step's `count` problems.
void apply_cycles(Buf& buf, const Step& s) {
  if (s.trivial()) return;
  const int64_t L = s.super_elems();
  for (int64_t k = 0; k < s.count; ++k) {
    std::vector<char> seen(L, 0);
    for (int64_t start = 0; start < L; ++start) {
      if (seen[start]) continue;
      int64_t p = start;
      std::vector<int64_t> carry(s.Z), next(s.Z);
      for (int64_t e = 0; e < s.Z; ++e) carry[e] = buf[s.offset(k, p, e)];
      do {
        const int64_t q = s.dest(p);
        seen[p] = 1;
        for (int64_t e = 0; e < s.Z; ++e) {
          next[e] = buf[s.offset(k, q, e)];
          buf[s.offset(k, q, e)] = carry[e];
        }
        std::swap(carry, next);
        p = q;
      } while (p != start);
    }
  }
}

// Out of place with the gather form Step::src (how an on-chip tile kernel reads its tile).
void apply_gather(Buf& buf, const Step& s) {
  const Buf in = buf;
  const int64_t L = s.super_elems();
  for (int64_t k = 0; k < s.count; ++k)
    for (int64_t q = 0; q < L; ++q)
      for (int64_t e = 0; e < s.Z; ++e) buf[s.offset(k, q, e)] = in[s.offset(k, s.src(q), e)];
}

std::vector<int64_t> divisors(int64_t x) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= x; ++i)
    if (x % i == 0) d.push_back(i);
  return d;
}

Buf iota(int64_t len) {
  Buf v(len);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

Buf transposed(const Buf& src, int64_t M, int64_t N) {
  Buf out(src.size());
  for (int64_t j = 0; j < N; ++j)
    for (int64_t i = 0; i < M; ++i) out[j * M + i] = src[i * N + j];
  return out;
}

// Runs a sequence both ways (cycle following and gathers) and checks the result is the transpose.
void expect_transposes(const Sequence& seq, int64_t M, int64_t N, const char* name, int64_t m, int64_t n) {
  const Buf src = iota(M * N), want = transposed(src, M, N);
  Buf a = src, b = src;
  int64_t elems = 0;
  for (int i = 0; i < seq.num_steps; ++i) {
    const Step& s = seq.steps[i];
    elems = s.count * s.problem_elems();
    ASSERT_EQ(elems, M * N) << name << ": step " << i << " does not cover the matrix";
    apply_cycles(a, s);
    apply_gather(b, s);
  }
  ASSERT_EQ(a, want) << name << " (cycles) M=" << M << " N=" << N << " m=" << m << " n=" << n;
  ASSERT_EQ(b, want) << name << " (gathers) M=" << M << " N=" << N << " m=" << m << " n=" << n;
}

TEST(Tiled, ThreeStageSequencesAllTilings) {
  int64_t cases = 0;
  for (int64_t M = 1; M < 25; ++M)
    for (int64_t N = 1; N < 25; ++N)
      for (int64_t m : divisors(M))
        for (int64_t n : divisors(N)) {
          expect_transposes(seq_3_1(M / m, m, N / n, n), M, N, "3.1", m, n);
          expect_transposes(seq_3_2(M / m, m, N / n, n), M, N, "3.2", m, n);
          cases += 2;
        }
  EXPECT_GT(cases, 10000);
}

TEST(Tiled, TwoStageSequencesAllTilings) {
  for (int64_t M = 1; M < 25; ++M)
    for (int64_t N = 1; N < 25; ++N) {
      for (int64_t m : divisors(M)) expect_transposes(seq_2_1(M / m, m, N), M, N, "2.1", m, N);
      for (int64_t n : divisors(N)) expect_transposes(seq_2_2(M, N / n, n), M, N, "2.2", M, n);
    }
}

TEST(Tiled, StepKinds) {
  // The factorial notation of paper 000, Table 2, as batches of super-element transposes.
  const Step a = t100(3, 5, 7), b = t010(3, 5, 7), c = t0100(2, 3, 5, 7), d = t0010(2, 3, 5, 7);
  EXPECT_EQ(a.count, 1);  EXPECT_EQ(a.X, 3); EXPECT_EQ(a.Y, 5); EXPECT_EQ(a.Z, 7); EXPECT_FALSE(a.on_chip());
  EXPECT_EQ(b.count, 3);  EXPECT_EQ(b.X, 5); EXPECT_EQ(b.Y, 7); EXPECT_EQ(b.Z, 1); EXPECT_TRUE(b.on_chip());
  EXPECT_EQ(c.count, 2);  EXPECT_EQ(c.X, 3); EXPECT_EQ(c.Y, 5); EXPECT_EQ(c.Z, 7); EXPECT_FALSE(c.on_chip());
  EXPECT_EQ(d.count, 6);  EXPECT_EQ(d.X, 5); EXPECT_EQ(d.Y, 7); EXPECT_EQ(d.Z, 1); EXPECT_TRUE(d.on_chip());
  EXPECT_TRUE(t100(1, 9, 2).trivial());
  EXPECT_TRUE(t100(9, 1, 2).trivial());
  EXPECT_EQ(seq_3_1(2, 3, 4, 5).num_steps, 3);
  EXPECT_EQ(seq_2_2(2, 3, 4).num_steps, 2);
}

TEST(Tiled, TheGpuPlansSequencesTranspose) {
  // seq_divisor / seq_tiles3, the sequences the GPU planner sizes and the launcher runs, on every shape they take.
  for (int64_t g = 2; g < 13; ++g)
    for (int64_t q = 2; q < 13; ++q) {
      expect_transposes(seq_divisor(true, q, g), q * g, g, "2.1 divisor", g, g);
      expect_transposes(seq_divisor(false, q, g), g, q * g, "2.2 divisor", g, g);
    }
  for (int64_t M = 1; M < 25; ++M)
    for (int64_t N = 1; N < 25; ++N)
      for (int64_t m : divisors(M))
        for (int64_t n : divisors(N)) {
          expect_transposes(seq_tiles3(true, M, N, m, n), M, N, "3.1 tiles", m, n);
          expect_transposes(seq_tiles3(false, M, N, m, n), M, N, "3.2 tiles", m, n);
        }
}

TEST(Tiled, DestSrcAndClosedFormAgree) {
  // dest and src are inverse permutations; dest equals PTTWAC's p * X mod (XY - 1).
  for (int64_t X = 1; X <= 40; ++X)
    for (int64_t Y = 1; Y <= 40; ++Y) {
      const Step s = t100(X, Y, 1);
      std::vector<char> seen(X * Y, 0);
      for (int64_t p = 0; p < X * Y; ++p) {
        const int64_t q = s.dest(p);
        ASSERT_GE(q, 0);
        ASSERT_LT(q, X * Y);
        ASSERT_FALSE(seen[q]);
        seen[q] = 1;
        ASSERT_EQ(s.src(q), p);
        ASSERT_EQ(s.dest_mod(p), q) << X << "x" << Y << " p=" << p;
      }
    }
}

TEST(Tiled, SixtyFourBitIndices) {
  // Super-element counts past 2^31: dest/src/dest_mod stay exact (dest_mod goes through the 128-bit mulmod).
  const int64_t X = (int64_t{1} << 31) + 11, Y = 6;
  const Step s = t100(X, Y, 2);
  for (int64_t p : {int64_t{0}, int64_t{1}, X * Y / 2 + 3, X * Y - 2, X * Y - 1, int64_t{5000000007}}) {
    const int64_t q = s.dest(p);
    EXPECT_EQ(q, (p % Y) * X + p / Y);
    EXPECT_EQ(s.src(q), p);
    EXPECT_EQ(s.dest_mod(p), q);
  }
  EXPECT_EQ(s.offset(0, X * Y - 1, 1), 2 * X * Y - 1);
}

}  // namespace
