// Index math of tiled in-place transposition as a sequence of elementary transpositions (Gomez-Luna, Sung et
// al., TPDS'16, paper 000, Table 2; Karlsson, paper 004), shared by the GPU tiled kernels and the tests.
// Plain C++ (host and device), no framework types. ../shared/reference/tiled_reference.py is the executable
// specification; tests/cpp/test_tiled.cpp checks these functions against it on every shape up to 24 x 24.
//
// A row-major M x N matrix with M = M' * m and N = N' * n is the 4-D array (M', m, N', n); its transpose is
// (N', n, M', m). Each elementary transposition swaps two adjacent dimensions, and every one of them is a batch
// of independent "super-element" transposes: `count` problems, each an X x Y matrix of super-elements of Z
// contiguous values, (X, Y, Z) -> (Y, X, Z):
//   100!  (A, B, C)    -> (B, A, C)    count 1,     X = A, Y = B, Z = C   (PTTWAC cycle following)
//   010!  (A, B, C)    -> (A, C, B)    count A,     X = B, Y = C, Z = 1   (tiles on chip)
//   0100! (A, B, C, D) -> (A, C, B, D) count A,     X = B, Y = C, Z = D   (PTTWAC, one problem per group)
//   0010! (A, B, C, D) -> (A, B, D, C) count A * B, X = C, Y = D, Z = 1   (tiles on chip)
#pragma once

#include <cstdint>

#include "plan/c2r.h"  // TI_HOST_DEVICE

namespace torch_inplace {
namespace tiled {

enum class Kind : int { T100 = 0, T010, T0100, T0010 };

// One elementary transposition: `count` independent X x Y transposes of Z-element super-elements, the k-th
// starting at element k * X * Y * Z.
struct Step {
  Kind kind = Kind::T100;
  int64_t count = 1, X = 1, Y = 1, Z = 1;

  // On-chip (barrier-synchronised tile) steps move single elements; the others move super-elements by cycle
  // following (PTTWAC).
  TI_HOST_DEVICE bool on_chip() const { return kind == Kind::T010 || kind == Kind::T0010; }
  TI_HOST_DEVICE int64_t problem_elems() const { return X * Y * Z; }
  TI_HOST_DEVICE int64_t super_elems() const { return X * Y; }  // super-elements per problem
  // Nothing moves when X == 1 or Y == 1.
  TI_HOST_DEVICE bool trivial() const { return X == 1 || Y == 1; }

  // Scatter: the super-element at position p = x * Y + y of a problem goes to y * X + x.
  TI_HOST_DEVICE int64_t dest(int64_t p) const { return (p % Y) * X + p / Y; }
  // Gather (the inverse): position q = y * X + x receives the super-element from x * Y + y.
  TI_HOST_DEVICE int64_t src(int64_t q) const { return (q % X) * Y + q / X; }
  // The classical closed form of dest for cycle following: p * X mod (X * Y - 1), the last position fixed
  // (Gomez-Luna et al. 2016, eq. 1, with L = X * Y - 1 and M = X).
  TI_HOST_DEVICE int64_t dest_mod(int64_t p) const {
    const int64_t L = X * Y;
    return p == L - 1 ? p : c2r::mulmod(p, X % (L - 1), L - 1);
  }
  // Flat element offset (within the whole array) of element e of super-element p of problem k.
  TI_HOST_DEVICE int64_t offset(int64_t k, int64_t p, int64_t e) const { return (k * X * Y + p) * Z + e; }
};

TI_HOST_DEVICE Step t100(int64_t A, int64_t B, int64_t C) { return Step{Kind::T100, 1, A, B, C}; }
TI_HOST_DEVICE Step t010(int64_t A, int64_t B, int64_t C) { return Step{Kind::T010, A, B, C, 1}; }
TI_HOST_DEVICE Step t0100(int64_t A, int64_t B, int64_t C, int64_t D) { return Step{Kind::T0100, A, B, C, D}; }
TI_HOST_DEVICE Step t0010(int64_t A, int64_t B, int64_t C, int64_t D) { return Step{Kind::T0010, A * B, C, D, 1}; }

// A whole transposition: two or three steps applied in order.
struct Sequence {
  int num_steps = 0;
  Step steps[3];
};

// Sequence 3.1 (M = Mp * m rows, N = Np * n cols): 100! (super-elements of n), 0010! (m x n tiles on chip),
// 0100! (super-elements of m).
TI_HOST_DEVICE Sequence seq_3_1(int64_t Mp, int64_t m, int64_t Np, int64_t n) {
  Sequence s;
  s.num_steps = 3;
  s.steps[0] = t100(Mp * m, Np, n);    // (M, N', n)     -> (N', M, n)
  s.steps[1] = t0010(Np, Mp, m, n);    // (N', M', m, n) -> (N', M', n, m)
  s.steps[2] = t0100(Np, Mp, n, m);    // (N', M', n, m) -> (N', n, M', m)
  return s;
}

// Sequence 3.2: 0100! (super-elements of n), 0010! (tiles on chip), 100! (super-elements of m).
TI_HOST_DEVICE Sequence seq_3_2(int64_t Mp, int64_t m, int64_t Np, int64_t n) {
  Sequence s;
  s.num_steps = 3;
  s.steps[0] = t0100(Mp, m, Np, n);    // (M', m, N', n) -> (M', N', m, n)
  s.steps[1] = t0010(Mp, Np, m, n);    // (M', N', m, n) -> (M', N', n, m)
  s.steps[2] = t100(Mp, Np * n, m);    // (M', N, m)     -> (N, M', m)
  return s;
}

// Sequence 2.1 (N << M): 010! (m x N tiles on chip), 100!.
TI_HOST_DEVICE Sequence seq_2_1(int64_t Mp, int64_t m, int64_t N) {
  Sequence s;
  s.num_steps = 2;
  s.steps[0] = t010(Mp, m, N);         // (M', m, N) -> (M', N, m)
  s.steps[1] = t100(Mp, N, m);         // (M', N, m) -> (N, M', m)
  return s;
}

// Sequence 2.2 (M << N): 100!, 010! (M x n tiles on chip).
TI_HOST_DEVICE Sequence seq_2_2(int64_t M, int64_t Np, int64_t n) {
  Sequence s;
  s.num_steps = 2;
  s.steps[0] = t100(M, Np, n);         // (M, N', n) -> (N', M, n)
  s.steps[1] = t010(Np, M, n);         // (N', M, n) -> (N', n, M)
  return s;
}

// The sequences the GPU plans run (gpu_plan.cpp sizes their scratch, transpose_kernel.cu launches them):
// a tall (q*g) x g matrix by 2.1 with g x g tiles, a wide g x (q*g) one by 2.2 (the short side g divides the long).
TI_HOST_DEVICE Sequence seq_divisor(bool tall, int64_t q, int64_t g) {
  return tall ? seq_2_1(q, g, g) : seq_2_2(g, q, g);
}

// A rows x cols matrix by 3.1 (or 3.2) with m x n tiles (m divides rows, n divides cols).
TI_HOST_DEVICE Sequence seq_tiles3(bool seq31, int64_t rows, int64_t cols, int64_t m, int64_t n) {
  return seq31 ? seq_3_1(rows / m, m, cols / n, n) : seq_3_2(rows / m, m, cols / n, n);
}

}  // namespace tiled
}  // namespace torch_inplace
