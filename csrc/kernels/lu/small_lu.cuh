// Batched LU factorization and inversion of small matrices (n <= 32), rows in registers (paper 001, secs. 4-6).
//
// Layout (paper 001 sec. 4, "1-D configuration"): a group of G = next_pow2(n) lanes owns one matrix, lane i
// holds row i in registers; kWarpSize / G matrices share a warp and a block holds `warps` warps, so the
// paper's nFTB (matrices per thread block) is warps * kWarpSize / G and is chosen per (n, dtype) by the host.
// Warps never wait for each other: there is no block barrier, only warp-level syncs.
//
// Per warp: the warp's matrices (contiguous in memory) are loaded with coalesced loads into a shared tile
// (row stride an odd number of elements or, for even n, of vector units, so that row-per-lane reads are free of
// bank conflicts; Geometry),
// moved into registers, factorized, written back to the tile at their final places and stored coalesced.
// Each matrix is read once and written once; in == out is allowed (a warp reads all its data before it writes).
//
// Pivot search: a group-wide maximum of packed (|a_ik|, position) keys, ties going to the smaller LAPACK row
// position so that pivots equal LAPACK's getrf (i?amax takes the first maximum; complex uses |re| + |im| like
// icamax). On CUDA sm_80+ it is one redux.sync per group; elsewhere the butterfly of paper 001 sec. 4 (Fig. 2)
// with xor shuffles of width G, which is right for 32-wide warps and 64-wide wavefronts alike.
//
// Lazy swaps (paper 001 sec. 5): rows never move during the factorization. Each lane tracks the position its
// row would have in LAPACK's swapped matrix (needed for ipiv and for tie-breaking); a row is written to its
// final position at the end.
//
// Inverse (paper 001 sec. 6): the LU of [A | I] without row interchanges fused with the upper solve, done in
// Gauss-Jordan form: column k of A's storage is reused for the column p_k of the right-hand side that becomes
// non-zero at step k, every row is eliminated at every step, and the final column interchanges happen while
// the rows go back to the tile. Pivot rows are left unscaled until the end (one multiply per element instead
// of one per step), and the pivot's reciprocal is computed once by the pivot lane.
#pragma once

#include <type_traits>

#include "kernels/common.cuh"

// How the inverse kernel hands each step's pivot row to the other rows of its matrix: through shared memory (the
// pivot lane writes it, every lane reads it), or by warp shuffles from the pivot lane (one per entry, the lane found
// by a ballot). -1 (default): shuffles for float with 4 rows per lane and n >= 20, where they measured faster;
// 0: never; 1: for float wherever several lanes share a matrix (measurements). H200, small_lu_harness.cu through
// tools/lu_ab.sh, the same bits (history_lu_shfl_bcast_ab.log): float inverse with 4 rows per lane 1.05-1.10x at
// n = 20, 21, 23, 24 (1.00x at 22, 0.95-1.03x at 17-19), the one-row kernel at n = 25-32 0.92-1.07x, n <= 16
// 0.82-1.06x (mostly slower). In the library's tuned launches (bench_linalg.py, GPU time, against the previous
// run): n = 24 1.07x, n = 20-23 1.00-1.01x (n = 20, 21 launch 8 warps, which the harness's 48 KiB cap left out).
// A shuffle costs the shared-memory pipe about what the broadcast it replaces does; with 4 rows per lane it also
// drops the pivot lane's row writes and the per-step warp sync.
#ifndef TI_LU_SHFL_BCAST
#define TI_LU_SHFL_BCAST -1
#endif
// Float64 inverse with a row per lane (one matrix per warp): how many 16-byte chunks of each step's pivot row go
// through shared memory, the rest by warp shuffles from the pivot lane (inverse_smem_chunks). -1 (default): 2 chunks
// at n = 20..27, all of them elsewhere; 0: all of them everywhere; M > 0: M wherever the row has more (measurements).
#ifndef TI_LU_F64_SMEM_CHUNKS
#define TI_LU_F64_SMEM_CHUNKS -1
#endif
// The float64 inverse kernels' pivot search (inverse_one_key): -1 (default) one 32-bit key (pivot_search_one_key) at
// the n where that measured faster, both words of the magnitude (as the LU) elsewhere; 0: both words everywhere;
// 1: one key everywhere (measurements).
#ifndef TI_LU_INV_ONE_KEY
#define TI_LU_INV_ONE_KEY -1
#endif
// small_inverse_kernel's column permutation (which row was pivoted at each step) with several lanes per matrix
// (inverse_perm_at_end): -1 (default) written once at the end, each row at its pivot step, and read back 16 bytes at
// a time, but for three (dtype, n, rows per lane) where that measured slower; 0: the pivot lane writes entry k at
// step k and every lane reads the n entries one by one, everywhere; 1: at the end everywhere (measurements).
#ifndef TI_LU_PERM_AT_END
#define TI_LU_PERM_AT_END -1
#endif

// How the pivot lane of a kernel with several rows per lane writes each step's pivot row to shared memory
// (write_pivot_row, slot_stores): -1 (default) each slot stores its own row where it holds the pivot, wherever that
// measured faster; 0: the pivot slot's entries chosen by selects first (pick_slot), one store a chunk; 1: slot
// stores wherever there are several rows per lane (measurements).
#ifndef TI_LU_SLOT_STORES
#define TI_LU_SLOT_STORES -1
#endif

namespace torch_inplace {
namespace kernels {
namespace lu {

// Complex numbers with c10::complex's layout (re, im) and alignment.
template <typename R>
struct alignas(2 * sizeof(R)) Cplx {
  R re, im;
};

TI_DEVICE float zero_of(float) { return 0.f; }
TI_DEVICE double zero_of(double) { return 0.0; }
template <typename R>
TI_DEVICE Cplx<R> zero_of(Cplx<R>) { return Cplx<R>{R(0), R(0)}; }

TI_DEVICE float one_of(float) { return 1.f; }
TI_DEVICE double one_of(double) { return 1.0; }
template <typename R>
TI_DEVICE Cplx<R> one_of(Cplx<R>) { return Cplx<R>{R(1), R(0)}; }

TI_DEVICE float mul(float a, float b) { return a * b; }
TI_DEVICE double mul(double a, double b) { return a * b; }
template <typename R>
TI_DEVICE Cplx<R> mul(Cplx<R> a, Cplx<R> b) {
  return Cplx<R>{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}

TI_DEVICE float neg(float a) { return -a; }
TI_DEVICE double neg(double a) { return -a; }
template <typename R>
TI_DEVICE Cplx<R> neg(Cplx<R> a) { return Cplx<R>{-a.re, -a.im}; }

TI_DEVICE float fma_r(float a, float b, float c) { return fmaf(a, b, c); }
TI_DEVICE double fma_r(double a, double b, double c) { return fma(a, b, c); }
TI_DEVICE float fabs_r(float a) { return fabsf(a); }
TI_DEVICE double fabs_r(double a) { return fabs(a); }

// acc - a * b
TI_DEVICE float fnms(float acc, float a, float b) { return fmaf(-a, b, acc); }
TI_DEVICE double fnms(double acc, double a, double b) { return fma(-a, b, acc); }
template <typename R>
TI_DEVICE Cplx<R> fnms(Cplx<R> acc, Cplx<R> a, Cplx<R> b) {
  return Cplx<R>{fma_r(-a.re, b.re, fma_r(a.im, b.im, acc.re)), fma_r(-a.re, b.im, fma_r(-a.im, b.re, acc.im))};
}

TI_DEVICE float recip(float a) { return 1.f / a; }
TI_DEVICE double recip(double a) { return 1.0 / a; }
// The largest finite value of the argument's type.
TI_DEVICE float finite_max(float) { return 3.40282347e+38f; }
TI_DEVICE double finite_max(double) { return 1.7976931348623157e+308; }

// Smith's algorithm: 1 / (c + di) = (1 - i r) / den with r = d / c and den = c + d r = c (1 + r^2), |c| >= |d| (or
// the same with the parts' roles swapped). den overflows where |c| + |d| |r| passes the largest finite value (both
// parts above about half of it), and the reciprocal came out 0: the LU's multipliers of that column 0, info 0. There
// it is formed with 1 / c factored out instead, (1 - i r) (1 / c) / (1 + r^2), which stays finite (1 / c is subnormal
// there, as the true reciprocal is). Elsewhere (den finite, or NaN from non-finite input, which the other form gives
// alike) the results are Smith's, bit for bit.
template <typename R>
TI_DEVICE Cplx<R> recip(Cplx<R> a) {
  if (fabs_r(a.re) >= fabs_r(a.im)) {
    const R r = a.im / a.re, d = a.re + a.im * r;
    if (!(fabs_r(d) > finite_max(R{}))) return Cplx<R>{R(1) / d, -r / d};
    const R q = (R(1) / a.re) / (R(1) + r * r);
    return Cplx<R>{q, -r * q};
  }
  const R r = a.re / a.im, d = a.re * r + a.im;
  if (!(fabs_r(d) > finite_max(R{}))) return Cplx<R>{r / d, R(-1) / d};
  const R q = (R(1) / a.im) / (R(1) + r * r);
  return Cplx<R>{r * q, -q};
}

// LAPACK's pivot measure: |x| for reals, |re| + |im| for complex (i?amax / cabs1).
TI_DEVICE float abs1(float a) { return fabsf(a); }
TI_DEVICE double abs1(double a) { return fabs(a); }
template <typename R>
TI_DEVICE R abs1(Cplx<R> a) { return fabs_r(a.re) + fabs_r(a.im); }

TI_DEVICE uint32_t shfl_xor_u32(uint32_t v, int mask, int width) {
  return static_cast<uint32_t>(shfl_xor(static_cast<int>(v), mask, width));
}

// Maximum of a 32-bit key over each group of G lanes (G a power of two <= 32, groups aligned in the warp).
// CUDA sm_80+ with G >= 16: one redux.sync per group (the group's lanes as member mask, as cooperative_groups
// does for tiles); otherwise (HIP's 64-wide wavefronts included) a butterfly of xor shuffles of width G.
template <int G>
TI_DEVICE uint32_t group_max_u32(uint32_t key) {
#if !TI_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // Measured on an H200: redux.sync pays off for one or two groups per warp (n > 8); with many small groups
  // per warp (several member masks in one instruction) the shuffle butterfly is faster.
  if constexpr (G >= 16) {
    const unsigned lane = threadIdx.x % 32u;
    const unsigned mask = G >= 32 ? 0xffffffffu : (((1u << (G % 32)) - 1u) << (lane & ~static_cast<unsigned>(G - 1)));
    return __reduce_max_sync(mask, key);
  } else
#endif
  {
#pragma unroll
    for (int m = G / 2; m > 0; m >>= 1) {
      const uint32_t o = shfl_xor_u32(key, m, G);
      key = o > key ? o : key;
    }
    return key;
  }
}

// A pivot key (pivot_key): the low 6 bits hold 63 - pos (32..63 for LAPACK positions 0..31, larger for a smaller
// position, so ties go to the first row as in i?amax); the bits above hold the magnitude's IEEE bits (non-negative
// floats order as integers; NaN is largest, so it propagates). A non-zero magnitude whose bits are all below bit 6 (a
// denormal below 64 ulp) is lifted to bit 6 so that "key < 64" means exactly zero. Magnitudes differing only in those
// 6 low bits (relative 2^-17 in float, 2^-46 in double) count as ties.
// mag_field: the magnitude's part, lifted(bits) & ~63 with lifted = max(bits, min(bits << 6, 64)) (where bits << 6
// wraps, bits >= 2^26 wins the max anyway), as `hi = bits & ~63; hi ? hi : (bits ? 64 : 0)` in fewer instructions.
// Session 40 (H200, tools/lu_ab.sh against the keys before, every (warps, rows), the same bits;
// history_s40_pivot_keys.log): this key and the kernels' unconditional multipliers took 5-8% of an LU kernel's
// instructions (SASS; about 10 of the ~80 of a step's fixed work at float32 n = 16) and sped the LU kernels up
// 0.98-1.16x (best configuration against best; float32 1.01-1.14x) and the inverse kernels 0.94-1.15x (float32
// n <= 24 1.02-1.15x, n >= 26 0.97-1.00x; float64 0.94-1.09x, the 0.94x at n = 24, where the table runs the
// tensor-core kernel instead).
TI_DEVICE uint32_t lifted(uint32_t bits) { return max(bits, min(bits << 6, 64u)); }
TI_DEVICE uint32_t mag_field(uint32_t bits) { return lifted(bits) & ~63u; }
TI_DEVICE int pos_of(uint32_t key) { return static_cast<int>(~key & 63u); }
TI_DEVICE uint32_t pivot_key(uint32_t bits, int pos) {
  const uint32_t m = lifted(bits);
#if !TI_HIP && defined(__CUDA_ARCH__)
  uint32_t key;  // (m & ~63) | (~pos & 63) as one bit select (LOP3 0x74: b ? ~c : a); ptxas emits two otherwise
  asm("lop3.b32 %0, %1, 63, %2, 0x74;" : "=r"(key) : "r"(m), "r"(static_cast<uint32_t>(pos)));
  return key;
#else
  return (m & ~63u) | (~static_cast<uint32_t>(pos) & 63u);
#endif
}

// Arg-max over the group's candidate rows (`valid`; R rows per lane): largest |value|, ties to the smallest
// `pos`. Returns the winner's pos (the same in every lane of the group); `is_zero` tells whether the winning
// magnitude is zero. Each lane first reduces its own R rows, then the group reduces across lanes.
// The arg-max on one 32-bit key per row: bits_of(s), row s's magnitude bits that order as integers (zero only for
// zero; a magnitude's sign bit is clear, NaN included), through pivot_key.
template <int G, int R, typename BitsOf>
TI_DEVICE int pivot_search_bits(BitsOf bits_of, const bool (&valid)[R], const int (&pos)[R], bool& is_zero) {
  uint32_t key = 0u;
#pragma unroll
  for (int s = 0; s < R; ++s) {
    const uint32_t k = valid[s] ? pivot_key(bits_of(s), pos[s]) : 0u;
    key = k > key ? k : key;
  }
  const uint32_t best = group_max_u32<G>(key);
  is_zero = best < 64u;
  return pos_of(best);
}

template <int G, int R>
TI_DEVICE int pivot_search(const float (&mag)[R], const bool (&valid)[R], const int (&pos)[R], bool& is_zero) {
  return pivot_search_bits<G, R>([&](int s) { return __float_as_uint(mag[s]); }, valid, pos, is_zero);
}

// Doubles: the high word first, then the (truncated) low word among the rows that hold the maximal high word.
template <int G, int R>
TI_DEVICE int pivot_search(const double (&mag)[R], const bool (&valid)[R], const int (&pos)[R], bool& is_zero) {
  uint32_t hi[R], hi_max = 0u;
#pragma unroll
  for (int s = 0; s < R; ++s) {
    const uint64_t bits = static_cast<uint64_t>(__double_as_longlong(mag[s])) & 0x7fffffffffffffffull;
    hi[s] = valid[s] ? static_cast<uint32_t>(bits >> 32) : 0u;
    hi_max = hi[s] > hi_max ? hi[s] : hi_max;
  }
  const uint32_t best_hi = group_max_u32<G>(hi_max);
  uint32_t lo_max = 0u;
#pragma unroll
  for (int s = 0; s < R; ++s) {
    const uint32_t lo_bits = static_cast<uint32_t>(__double_as_longlong(mag[s]));
    const uint32_t lo = (valid[s] && hi[s] == best_hi) ? pivot_key(lo_bits, pos[s]) : 0u;
    lo_max = lo > lo_max ? lo : lo_max;
  }
  const uint32_t best_lo = group_max_u32<G>(lo_max);
  is_zero = best_hi == 0u && best_lo < 64u;
  return pos_of(best_lo);
}

// The float64 inverse's arg-max at the n of inverse_one_key: one reduction of a 32-bit key, the magnitude's bits
// 31..62 (exponent and 21 mantissa bits) through mag_field, so that magnitudes within about 2^-15 relative count as
// ties (to the smallest position, as always; "key < 64" still means exactly zero). A pivot that close to the
// column's largest is as good a pivot (multipliers of at most 1 + 2^-15), and the inverse shows no pivots; the LU
// keeps pivot_search's choice, which its pivots show.
template <int G, int R>
TI_DEVICE int pivot_search_one_key(const double (&mag)[R], const bool (&valid)[R], const int (&pos)[R],
                                   bool& is_zero) {
  const auto top = [&](int s) {
    const uint64_t bits = static_cast<uint64_t>(__double_as_longlong(mag[s])) & 0x7fffffffffffffffull;
    return static_cast<uint32_t>(bits >> 31) | (bits != 0u ? 1u : 0u);  // zero only for zero
  };
  return pivot_search_bits<G, R>(top, valid, pos, is_zero);
}
// Whether the inverse kernels at this n (every variant alike, so that they agree bit for bit) search pivots with
// pivot_search_one_key: float64 at n = 13..28 but 24. One reduction a step instead of two. H100, small_lu_harness.cu
// through tools/lu_ab.sh against pivot_search everywhere, best configuration each, TI_LU_INV_ONE_KEY=1
// (history_s33_one_key_ab.log): n = 13-19 1.03-1.09x, 21 / 22 / 26 1.023 / 1.017 / 1.016x, 20, 23, 25, 27
// 1.00-1.01x; the one-row kernel at n = 24 / 28 / 32 0.966 / 0.924 / 0.979x (ptxas allocates differently: 72
// registers at n = 24, 80 before), n <= 12 0.99-1.01x. The split-rows kernel (split_inverse_harness.cu, 8 warps,
// both builds twice): n = 28 1.055x, which puts it ahead of the one-row kernel there (2.24 ms against 2.38;
// lu_tuning.h), n = 29 / 30 / 31 / 32 0.977 / 0.998 / 0.985 / 0.99x.
template <typename T, int N>
constexpr bool inverse_one_key() {
  if (!std::is_same<T, double>::value || TI_LU_INV_ONE_KEY == 0) return false;
  return TI_LU_INV_ONE_KEY == 1 || (N >= 13 && N <= 28 && N != 24);
}

// The pivot search of a kernel: pivot_search_one_key where kOneKey (inverse_one_key) holds, pivot_search elsewhere.
template <bool kOneKey, int G, int R, typename M>
TI_DEVICE int pivot_search_as(const M (&mag)[R], const bool (&valid)[R], const int (&pos)[R], bool& is_zero) {
  if constexpr (kOneKey) {
    return pivot_search_one_key<G, R>(mag, valid, pos, is_zero);
  } else {
    return pivot_search<G, R>(mag, valid, pos, is_zero);
  }
}

constexpr int next_pow2(int n) { return n <= 1 ? 1 : 2 * next_pow2((n + 1) / 2); }
constexpr int round_up(int a, int b) { return (a + b - 1) / b * b; }

// 16-byte chunks between the broadcast rows of consecutive groups: at least `chunks`, and such that the groups of
// a half warp (`groups`) read a chunk each from distinct 4-bank quads (chunk index mod 8), so a 16-byte broadcast
// read costs the one wavefront per half warp of a single row. With an even stride (the rows' own size: 2 RowPad)
// up to 8 groups landed on the same banks: 2-4x the wavefronts (fp32 n = 12: 8 groups, 4 per half warp, 4-way).
constexpr bool bcast_conflict_free(int chunks, int groups) {
  for (int g = 1; g < (groups < 8 ? groups : 8); ++g) {
    if ((g * chunks) % 8 == 0) return false;
  }
  return true;
}
constexpr int bcast_stride_chunks(int chunks, int groups) {
  return bcast_conflict_free(chunks, groups) ? chunks : bcast_stride_chunks(chunks + 1, groups);
}

// The largest power of two that divides n, at most `cap` (a power of two).
constexpr int pow2_divisor(int n, int cap) { return (n % 2 == 0 && cap > 1) ? 2 * pow2_divisor(n / 2, cap / 2) : 1; }

// Worst bank conflict of load_rows' unit reads in a unit tile (Geometry::kUnitTile): lane (g, i) = (lane / G,
// lane % G) reads unit g * gsu + i * su of the tile (plus an offset common to all lanes) when i < n. A wavefront
// serves 128 bytes, so lanes go `phase` = 128 / unit bytes at a time and a unit's bank group is its index mod phase.
constexpr int unit_read_conflicts(int gsu, int su, int n, int G, int groups, int phase) {
  int worst = 0;
  for (int p0 = 0; p0 < kWarpSize; p0 += phase) {
    int count[32] = {};
    for (int lane = p0; lane < p0 + phase && lane < kWarpSize; ++lane) {
      if (lane / G < groups && lane % G < n) ++count[(lane / G * gsu + lane % G * su) % phase];
    }
    for (int b = 0; b < phase; ++b) worst = count[b] > worst ? count[b] : worst;
  }
  return worst;
}
// Units between a unit tile's matrices: at least n * su, a multiple of `step` (whole 16-byte chunks), the fewest
// conflicts of unit_read_conflicts (the smallest such stride).
constexpr int unit_tile_stride(int n, int su, int G, int groups, int phase, int step) {
  int best = n * su, fewest = unit_read_conflicts(n * su, su, n, G, groups, phase);
  for (int gsu = n * su + step; gsu < n * su + phase * step; gsu += step) {
    const int c = unit_read_conflicts(gsu, su, n, G, groups, phase);
    if (c < fewest) {
      fewest = c;
      best = gsu;
    }
  }
  return best;
}

// Compile-time geometry of one warp's work for matrices of n x n elements of type T, R rows per lane (lane i
// of a group holds rows i, i + G, ..., i + (R - 1) G).
// The matrices of one warp: `groups` consecutive ones from m0, every warp of every block in turn; nmat of them
// exist (the batch's last warp may get fewer, a warp past its end none: nmat <= 0, and the warp returns whole,
// so the shuffles of a working warp always see every lane).
struct WarpMatrices {
  int64_t m0;
  int nmat;
};

TI_DEVICE WarpMatrices warp_matrices(int64_t batch, int groups) {
  const int warp = threadIdx.x / kWarpSize;
  const int64_t m0 = (static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarpSize) + warp) * groups;
  const int64_t left = batch - m0;
  return {m0, static_cast<int>(left <= 0 ? 0 : (left < groups ? left : groups))};
}

template <typename T, int N, int R = 1>
struct Geometry {
  static_assert(N >= 1 && N <= 32, "small LU kernels cover 1 <= n <= 32");
  static_assert((R >= 1 && R <= 4) || R == N, "1 to 4 rows per lane, or the whole matrix");
  static constexpr int G = next_pow2((N + R - 1) / R); // lanes per matrix
  static constexpr int kGroups = kWarpSize / G;        // matrices per warp
  static constexpr int S = (N % 2) ? N : N + 1;        // odd tile row stride: conflict-free row reads
  static constexpr int kV = 16 / static_cast<int>(sizeof(T)) > 0 ? 16 / static_cast<int>(sizeof(T)) : 1;
  // Broadcast row: the pivot row's N entries and the pivot's reciprocal, in the padding after entry N - 1 where the
  // last chunk has some, else in place of entry k at step k (entry k is known to the readers: 1 in the inverse, the
  // pivot itself in the LU), so that the reciprocal takes no chunk of its own (float n = 16: 4 chunks, not 5) and is
  // read from a chunk that the update reads anyway (RcSlot). H200, small_lu_harness.cu against a separate entry N
  // read on its own, the same bits: n <= 16 inverse 1.00-1.11x, LU 0.96-1.07x (history_rc_slot_ab.log); one matrix
  // per warp (n > 16, a row per lane; the inverse takes the reciprocal's chunk first there, small_inverse_kernel)
  // float64 inverse 0.99-1.05x, float32 0.96-1.10x, LU 0.95-1.09x (history_rc_slot_n17_ab.log).
  static constexpr int RowPad = round_up(N, kV);
  static constexpr bool kRcInPad = N % kV != 0;
  // Elements between the groups' pairs of broadcast rows (double buffer), padded against bank conflicts.
  static constexpr int kBcastStride = bcast_stride_chunks(2 * RowPad / kV, G >= 16 ? 1 : 16 / G) * kV;
  static constexpr int kElems = kGroups * N * N;       // elements a warp loads and stores
  static constexpr int kLoadIters = (kElems + kWarpSize - 1) / kWarpSize;
  // Unit tile (n <= 16, G > 1; float, double, complex<float>; past 16 see below): a row is Nu units of U elements, U
  // the largest power of two dividing n (at most a 16-byte chunk) where that leaves an odd unit count (TS = n), else,
  // for float n = 8, half a chunk with rows padded by one unit to an odd count (TS = 10). A row per lane then reads
  // whole units free of bank conflicts, and the rows of a group keep distinct banks in the inverse's column scatter.
  // Matrices lie GS apart in whole chunks, padded against the conflicts of groups that share a wavefront
  // (unit_tile_stride). The staging moves one 16-byte chunk per global access and one unit per shared access
  // (UnitStaging), load_rows reads units and the LU writes its rows back in units, where the element tile (S odd)
  // moves single elements. H200, bench_linalg.py against the element tile on one machine (queued, row-permuted
  // input): float inverse n = 8 / 10 / 12 / 14 1.05 / 1.02 / 1.06 / 1.03x, LU 1.02-1.19x; double n = 10 / 14
  // 1.04-1.13x. Float n = 16 with rows padded to 18 ran 0.96x (inverse) and 0.98x (LU), rows of whole chunks padded
  // to an odd count up to 14% slower (small_lu_harness.cu): those keep the element tile, as do double and
  // complex<float> with 4 | n.
  // Past n = 16 (float, and double with several rows per lane): an element tile of even n has rows padded to n + 1,
  // so its staging stores and loads single elements at scattered places, where the unit tile moves whole units.
  // H200, against the element tile, the same bits (history_s31_unit_tile_ab.log): bench_linalg.py in GPU time, float
  // LU n = 18 / 20 / 22 / 28 1.07 / 1.12 / 1.15 / 1.05x (n = 26 / 30 1.00 / 0.98x), inverse n = 18 / 20 / 22 / 26 /
  // 30 1.03-1.07x (n = 28 1.00x), double inverse n = 18 (4 rows per lane) 1.07x. Double with one row per lane ran
  // 0.93-1.04x in small_lu_harness.cu (inverse n = 26 0.93x, LU n = 30 0.95x) and keeps the element tile.
  static constexpr int kUFull = pow2_divisor(N, kV);
  static constexpr int U = kUFull > 1 && (N / kUFull) % 2 == 0 ? kUFull / 2 : kUFull;
  static constexpr int Nu = N / U;
  static constexpr bool kPastSixteen = std::is_same<T, float>::value || (std::is_same<T, double>::value && R > 1);
  static constexpr bool kUnitTile =
      (N <= 16 || kPastSixteen) && G > 1 && U > 1 && sizeof(T) * kV == 16 && (Nu % 2 == 1 || N <= 8);
  // The tile's row stride: S (element tile) or the unit tile's.
  static constexpr int TS = !kUnitTile ? S : (Nu % 2 ? N : N + U);
  static constexpr int RC = N / kV;  // 16-byte chunks per row where rows are padded (N % kV == 0 there)
  // Elements between the tile's matrices. Element tile: N * S, made odd with one lane per matrix (G == 1), where
  // lane g reads matrix g's rows (an even stride put lanes on shared banks: n = 4, 8 up to 8-way).
  static constexpr int GS =
      kUnitTile ? U * unit_tile_stride(N, TS / U, G, kGroups, 128 / (U * static_cast<int>(sizeof(T))), kV / U)
                : ((G == 1 && (N * S) % 2 == 0) ? N * S + 1 : N * S);
  static constexpr int kTileBytes = round_up(kGroups * GS * static_cast<int>(sizeof(T)), 16);
  // With G == 1 the pivot row and the column permutation stay in the lane's registers: no broadcast rows, no perm.
  static constexpr int kBcastBytes = G == 1 ? 0 : kGroups * kBcastStride * static_cast<int>(sizeof(T));
  static constexpr int kPermBytes = G == 1 ? 0 : round_up(kGroups * N * 4, 16);
  static constexpr int kWarpSmemBytes = kTileBytes + kBcastBytes + kPermBytes;
};

// Everything a warp sees in shared memory: its tile, broadcast rows and column permutation, laid out by `Geo`'s
// kTileBytes and kBcastBytes (Geometry, or SplitGeometry for split_inverse_kernel).
template <typename T, int N, int R = 1, typename Geo = Geometry<T, N, R>>
struct WarpSmem {
  T* tile;
  T* bcast;
  int* perm;
  TI_DEVICE explicit WarpSmem(unsigned char* base) {
    tile = reinterpret_cast<T*>(base);
    bcast = reinterpret_cast<T*>(base + Geo::kTileBytes);
    perm = reinterpret_cast<int*>(base + Geo::kTileBytes + Geo::kBcastBytes);
  }
};

// 16-byte chunk of a broadcast row (vector shared-memory accesses).
template <typename T>
struct alignas(16) Chunk {
  T v[Geometry<T, 1>::kV];
};

// K elements moved as one vector access (a unit of a unit tile's row).
template <typename T, int K>
struct alignas(K * sizeof(T)) Units {
  T v[K];
};

// Element e of the warp's contiguous matrices (matrix m, row r, column c) sits at tile[m * GS + r * S + c]: rows
// padded to S elements, matrices GS elements apart. With the default GS = N * S that is e + (S - N) * (e / N).
template <int N, int S, int GS = N * S>
TI_DEVICE int tile_index(int e) {
  if (GS == N * S) return S == N ? e : e + (S - N) * (e / N);
  const int m = e / (N * N), rem = e - m * (N * N), r = rem / N;
  return m * GS + r * S + (rem - r * N);
}

// A warp's kChunks 16-byte chunks of contiguous data, chunk it * kWarpSize + lane in v[it] of each lane.
constexpr int chunk_iters(int chunks) { return (chunks + kWarpSize - 1) / kWarpSize; }

template <typename T, int kChunks>
TI_DEVICE void fetch_chunks(const T* src, Chunk<T> (&v)[chunk_iters(kChunks)], int lane) {
#pragma unroll
  for (int it = 0; it < chunk_iters(kChunks); ++it) {
    const int c = it * kWarpSize + lane;
    if (kChunks % kWarpSize == 0 || c < kChunks) v[it] = reinterpret_cast<const Chunk<T>*>(src)[c];
  }
}

// The chunks of fetch_chunks into a padded tile (rows SS, matrices GS elements apart; see tile_index).
template <typename T, int N, int SS, int GS, int kChunks>
TI_DEVICE void put_chunks(T* tile, const Chunk<T> (&v)[chunk_iters(kChunks)], int lane) {
  constexpr int kV = Geometry<T, 1>::kV;
#pragma unroll
  for (int it = 0; it < chunk_iters(kChunks); ++it) {
    const int c = it * kWarpSize + lane;
    if (kChunks % kWarpSize == 0 || c < kChunks) {
#pragma unroll
      for (int u = 0; u < kV; ++u) tile[tile_index<N, SS, GS>(c * kV + u)] = v[it].v[u];
    }
  }
}

// Coalesced copy of the warp's `valid` elements (whole matrices, contiguous in memory) into the padded tile
// (matrices GS elements apart). A full warp whose data is 16-byte aligned moves 16-byte chunks without bounds
// checks; the last warp of the grid (or unaligned data), or every warp with `kByElements`, moves single elements:
// one global access per element, but consecutive lanes then store consecutive tile entries, where a chunk's
// elements go to the tile one store each with lanes 16 bytes apart (2-4x the shared-memory wavefronts).
// `Groups`: matrices per warp (Geometry's count for R rows per lane unless given); `SS`: the tile's row stride.
template <typename T, int N, int GS = N * Geometry<T, N>::S, int R = 1, int Groups = Geometry<T, N, R>::kGroups,
          int SS = Geometry<T, N>::S, bool kByElements = false>
TI_DEVICE void load_tile(const T* src, T* tile, int valid, int lane) {
  using Geo = Geometry<T, N, R>;
  constexpr int kV = Geo::kV;
  constexpr int kElems = Groups * N * N, kLoadIters = (kElems + kWarpSize - 1) / kWarpSize;
  constexpr bool kChunked = !kByElements && (kElems * static_cast<int>(sizeof(T))) % 16 == 0 && sizeof(T) * kV == 16;
  if (kChunked && valid == kElems && (reinterpret_cast<uintptr_t>(src) & 15u) == 0) {
    constexpr int kChunks = kElems / kV;
    Chunk<T> v[chunk_iters(kChunks)];
    fetch_chunks<T, kChunks>(src, v, lane);
    put_chunks<T, N, SS, GS, kChunks>(tile, v, lane);
    return;
  }
  T v[kLoadIters];
#pragma unroll
  for (int it = 0; it < kLoadIters; ++it) {
    const int e = it * kWarpSize + lane;
    if (e < valid) v[it] = src[e];
  }
#pragma unroll
  for (int it = 0; it < kLoadIters; ++it) {
    const int e = it * kWarpSize + lane;
    if (e < valid) tile[tile_index<N, SS, GS>(e)] = v[it];
  }
}

template <typename T, int N, int GS = N * Geometry<T, N>::S, int R = 1, int Groups = Geometry<T, N, R>::kGroups,
          int SS = Geometry<T, N>::S, bool kByElements = false>
TI_DEVICE void store_tile(T* dst, const T* tile, int valid, int lane) {
  using Geo = Geometry<T, N, R>;
  constexpr int kV = Geo::kV;
  constexpr int kElems = Groups * N * N, kLoadIters = (kElems + kWarpSize - 1) / kWarpSize;
  constexpr bool kChunked = !kByElements && (kElems * static_cast<int>(sizeof(T))) % 16 == 0 && sizeof(T) * kV == 16;
  if (kChunked && valid == kElems && (reinterpret_cast<uintptr_t>(dst) & 15u) == 0) {
    constexpr int kChunks = kElems / kV;
    constexpr int kIters = (kChunks + kWarpSize - 1) / kWarpSize;
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int c = it * kWarpSize + lane;
      if (kChunks % kWarpSize == 0 || c < kChunks) {
        Chunk<T> v;
#pragma unroll
        for (int u = 0; u < kV; ++u) v.v[u] = tile[tile_index<N, SS, GS>(c * kV + u)];
        reinterpret_cast<Chunk<T>*>(dst)[c] = v;
      }
    }
    return;
  }
#pragma unroll
  for (int it = 0; it < kLoadIters; ++it) {
    const int e = it * kWarpSize + lane;
    if (e < valid) dst[e] = tile[tile_index<N, SS, GS>(e)];
  }
}

// Unit tile (Geometry::kUnitTile): the element offset in the tile of chunk q of the warp's contiguous matrices
// (a chunk never straddles a matrix, nor a row where rows are padded).
template <typename Geo, int N>
TI_DEVICE int unit_tile_chunk(int q) {
  constexpr int kV = Geo::kV, kMatrixChunks = N * N / kV;
  const int m = q / kMatrixChunks, rem = q - m * kMatrixChunks;
  if constexpr (Geo::TS == N) {
    return m * Geo::GS + rem * kV;
  } else {
    const int r = rem / Geo::RC;
    return m * Geo::GS + r * Geo::TS + (rem - r * Geo::RC) * kV;
  }
}
// Staging of a unit tile: the chunks of fetch_chunks (one vector access per chunk in global memory) go to the tile
// one unit (kV / U per chunk) per shared access.
template <typename T, int N, int R>
struct UnitStaging {
  using Geo = Geometry<T, N, R>;
  using Unit = Units<T, Geo::U>;
  static constexpr int kChunks = Geo::kElems / Geo::kV;
  static constexpr int kIters = chunk_iters(kChunks);
  static constexpr int kPer = Geo::kV / Geo::U;  // units per chunk

  TI_DEVICE static bool aligned(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }
  TI_DEVICE static void put(T* tile, const Chunk<T> (&v)[kIters], int lane) {
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int c = it * kWarpSize + lane;
      if (kChunks % kWarpSize == 0 || c < kChunks) {
        Unit* dst = reinterpret_cast<Unit*>(tile + unit_tile_chunk<Geo, N>(c));
#pragma unroll
        for (int h = 0; h < kPer; ++h) {
          Unit u;
#pragma unroll
          for (int e = 0; e < Geo::U; ++e) u.v[e] = v[it].v[h * Geo::U + e];
          dst[h] = u;
        }
      }
    }
  }
  // load_tile / store_tile for a unit tile: chunks where the tile is whole and the data 16-byte aligned, else
  // load_tile / store_tile's element path (tile_index with the unit tile's strides).
  TI_DEVICE static void load(const T* src, T* tile, int valid, int lane) {
    if (valid == Geo::kElems && aligned(src)) {
      Chunk<T> v[kIters];
      fetch_chunks<T, kChunks>(src, v, lane);
      put(tile, v, lane);
      return;
    }
    load_tile<T, N, Geo::GS, R, Geo::kGroups, Geo::TS>(src, tile, valid, lane);
  }
  TI_DEVICE static void store(T* dst, const T* tile, int valid, int lane) {
    if (valid == Geo::kElems && aligned(dst)) {
#pragma unroll
      for (int it = 0; it < kIters; ++it) {
        const int c = it * kWarpSize + lane;
        if (kChunks % kWarpSize == 0 || c < kChunks) {
          const Unit* src = reinterpret_cast<const Unit*>(tile + unit_tile_chunk<Geo, N>(c));
          Chunk<T> ch;
#pragma unroll
          for (int h = 0; h < kPer; ++h) {
            const Unit u = src[h];
#pragma unroll
            for (int e = 0; e < Geo::U; ++e) ch.v[h * Geo::U + e] = u.v[e];
          }
          reinterpret_cast<Chunk<T>*>(dst)[c] = ch;
        }
      }
      return;
    }
    store_tile<T, N, Geo::GS, R, Geo::kGroups, Geo::TS>(dst, tile, valid, lane);
  }
};

// The warp's matrices into its tile and back, in the tile's layout (unit or element tile).
template <typename T, int N, int R>
TI_DEVICE void stage_in(const T* src, T* tile, int valid, int lane) {
  using Geo = Geometry<T, N, R>;
  if constexpr (Geo::kUnitTile) {
    UnitStaging<T, N, R>::load(src, tile, valid, lane);
  } else {
    load_tile<T, N, Geo::GS, R>(src, tile, valid, lane);
  }
}
template <typename T, int N, int R>
TI_DEVICE void stage_out(T* dst, const T* tile, int valid, int lane) {
  using Geo = Geometry<T, N, R>;
  if constexpr (Geo::kUnitTile) {
    UnitStaging<T, N, R>::store(dst, tile, valid, lane);
  } else {
    store_tile<T, N, Geo::GS, R>(dst, tile, valid, lane);
  }
}

// The next tile of a warp, fetched into registers while the warp works on the current one (persistent launch):
// a whole, 16-byte aligned tile of at most kMaxChunks 16-byte chunks per lane (80 bytes of registers); otherwise
// `full` stays false and the tile is loaded when its turn comes (load_tile).
template <typename T, int N, int R>
struct TilePrefetch {
  using Geo = Geometry<T, N, R>;
  static constexpr int kMaxChunks = 5;
  static constexpr int kElems = Geo::kElems;
  static constexpr int kChunks = kElems / Geo::kV;
  static constexpr bool kEnabled = (kElems * static_cast<int>(sizeof(T))) % 16 == 0 && sizeof(T) * Geo::kV == 16 &&
                                   chunk_iters(kChunks) <= kMaxChunks;
  Chunk<T> v[chunk_iters(kChunks)];  // constructed only by the persistent kernels (kEnabled)
  bool full = false;

  TI_DEVICE void fetch(const T* src, int valid, int lane) {
    full = false;
    if constexpr (kEnabled) {
      if (valid != kElems || (reinterpret_cast<uintptr_t>(src) & 15u) != 0) return;
      fetch_chunks<T, kChunks>(src, v, lane);
      full = true;
    }
  }
  // Into the tile, as stage_in's chunked path.
  TI_DEVICE void put(T* tile, int lane) const {
    if constexpr (kEnabled && Geo::kUnitTile) {
      UnitStaging<T, N, R>::put(tile, v, lane);
    } else if constexpr (kEnabled) {
      put_chunks<T, N, Geo::S, Geo::GS, kChunks>(tile, v, lane);
    }
  }
};

// A warp's turns over the batch's tiles (kGroups consecutive matrices each): tiles warp, warp + W, ... where W is
// the grid's warp count. With one warp per tile (the grid covers the batch) each warp takes one turn; a persistent
// grid (the launcher caps it at what is resident at once) loops, and prefetches the next tile during the current.
struct TileTurn {
  int64_t t, stride, tiles;
  TI_DEVICE TileTurn(int64_t batch, int groups) {
    const int wpb = blockDim.x / kWarpSize;
    t = static_cast<int64_t>(blockIdx.x) * wpb + threadIdx.x / kWarpSize;
    stride = static_cast<int64_t>(gridDim.x) * wpb;
    tiles = (batch + groups - 1) / groups;
  }
  // Matrices of tile u (whole groups but for the batch's last tile).
  TI_DEVICE static int count(int64_t u, int64_t batch, int groups) {
    const int64_t left = batch - u * groups;
    return static_cast<int>(left < groups ? left : groups);
  }
};

// The pivot row's entries for the broadcast: with R rows per lane, the row of the slot that won (at most one
// slot of one lane per group wins a step).
template <typename T, int N, int R>
TI_DEVICE T pick_slot(const T (&a)[R][N], const bool (&is_piv)[R], int j) {
  T v = a[0][j];
#pragma unroll
  for (int s = 1; s < R; ++s) v = is_piv[s] ? a[s][j] : v;
  return v;
}

// Whether the LU kernel (Kind 0) computes each step's multipliers, or the inverse kernel (Kind 1) its Gauss-Jordan
// factors, for every row of a lane, the pivot row's included (unused there), rather than under a branch: no select then
// keeps a stale register, fewer instructions. It also changes ptxas' register allocation, which for the complex
// kernels (up to 178 registers) swings either way. Unconditional but where that measured 0.985x or less of the branch
// (H200, the same bits; history_s40_pivot_keys.log): complex kernels at the table's warps
// (benchmarks/small_lu_complex_harness.cu), complex128 LU n = 9 / 24 / 32 0.90 / 0.83 / 0.92x, inverse n = 4, 8, 12,
// 15, 24, 25, 30 0.80-0.98x (n = 24 0.80x), complex64 LU n = 2, 17, 18, 20, 22, 24-26, 28, 30, 32 0.96-0.98x, inverse
// n = 25 / 31 0.97 / 0.91x; float32 inverse n = 29 with a row per lane 0.96x (tools/lu_ab.sh). Elsewhere 0.98-1.25x
// (1.10-1.25x at complex64 LU n = 10, 19, 31, inverse n = 7, 9, 10; complex128 LU n = 10, 12, 22, inverse n = 10,
// 29, 31; complex128 LU n = 13 / 14 at 0.984 / 0.981x stay unconditional, within 1% of the code before session 40).
template <typename T, int N, int R, int Kind>
constexpr bool uncond_multipliers() {
  if (std::is_same<T, double>::value) return true;
  if (std::is_same<T, float>::value) return !(Kind == 1 && N == 29 && R == 1);
  if (std::is_same<T, Cplx<float>>::value) {
    return Kind == 0 ? !(N == 2 || N == 17 || N == 18 || N == 20 || N == 22 || N == 24 || N == 25 || N == 26 ||
                         N == 28 || N == 30 || N == 32)
                     : !(N == 25 || N == 31);
  }
  return Kind == 0 ? !(N == 9 || N == 24 || N == 32)
                   : !(N == 4 || N == 8 || N == 12 || N == 15 || N == 24 || N == 25 || N == 30);
}

// Gauss-Jordan step k: every other row, pivoted or not, eliminates column k with the multiplier f = a[s][k] * rc.
// Entry k of the pivot row is 1; where the shared-memory broadcast row holds the reciprocal there instead, entry k
// becomes 0 - f * 1 without reading it.
template <typename T, int N, int R>
TI_DEVICE void gj_multipliers(T (&a)[R][N], const bool (&is_piv)[R], int k, T rc, T (&f)[R]) {
#pragma unroll
  for (int s = 0; s < R; ++s) {
    if constexpr (uncond_multipliers<T, N, R, 1>()) {
      f[s] = mul(a[s][k], rc);  // unused in the pivot slot
      if (!is_piv[s]) a[s][k] = fnms(zero_of(T{}), f[s], one_of(T{}));
    } else if (!is_piv[s]) {
      f[s] = mul(a[s][k], rc);
      a[s][k] = fnms(zero_of(T{}), f[s], one_of(T{}));
    }
  }
}

// The lane of group g (G lanes, aligned in the warp) whose `pred` holds, for a group where exactly one lane's does.
template <int G>
TI_DEVICE int group_lane_of(bool pred, int g) {
#if TI_HIP
  const unsigned long long b = __ballot(pred);
  const unsigned long long bits = (b >> (g * G)) & (G >= 64 ? ~0ull : ((1ull << (G % 64)) - 1ull));
  return g * G + __ffsll(static_cast<long long>(bits)) - 1;
#else
  const unsigned b = __ballot_sync(~0u, pred);
  const unsigned bits = (b >> (g * G)) & (G >= 32 ? ~0u : ((1u << (G % 32)) - 1u));
  return g * G + __ffs(static_cast<int>(bits)) - 1;
#endif
}

// Rows i, i + G, ... of matrix g of the tile into registers; padding rows (>= n) are zero, count as already
// pivoted (never chosen) and hold no position.
// (Unit tile: a padding row reads row n - 1, one unit at a time, and then takes zeros.)
template <typename T, int N, int R>
TI_DEVICE void load_rows(const T* tile, int g, int i, T (&a)[R][N], bool (&pivoted)[R], int (&pos)[R]) {
  using Geo = Geometry<T, N, R>;
#pragma unroll
  for (int s = 0; s < R; ++s) {
    const int r = s * Geo::G + i;
    if constexpr (Geo::kUnitTile) {
      const T* src = tile + g * Geo::GS + (r < N ? r : N - 1) * Geo::TS;
      const Units<T, Geo::U>* row = reinterpret_cast<const Units<T, Geo::U>*>(src);
#pragma unroll
      for (int c = 0; c < Geo::Nu; ++c) {
        const Units<T, Geo::U> u = row[c];
#pragma unroll
        for (int v = 0; v < Geo::U; ++v) a[s][c * Geo::U + v] = r < N ? u.v[v] : zero_of(T{});
      }
    } else {
#pragma unroll
      for (int j = 0; j < N; ++j) a[s][j] = r < N ? tile[g * Geo::GS + r * Geo::S + j] : zero_of(T{});
    }
    pivoted[s] = r >= N;
    pos[s] = r;
  }
}

// Step k's pivot: LAPACK's position `pr` of the group's largest candidate in column k (the same in every lane of
// the group; kOneKey (inverse_one_key): by pivot_search_one_key); `is_piv[s]` marks the one slot (of one lane) that holds it,
// `zero` a zero pivot column.
template <typename T, int N, int R, bool kOneKey = false>
TI_DEVICE int find_pivot(const T (&a)[R][N], const bool (&pivoted)[R], const int (&pos)[R], int k, bool& zero,
                         bool (&is_piv)[R], bool& any_piv) {
  decltype(abs1(T{})) mag[R];
  bool cand[R];
#pragma unroll
  for (int s = 0; s < R; ++s) {
    mag[s] = abs1(a[s][k]);
    cand[s] = !pivoted[s];
  }
  const int pr = pivot_search_as<kOneKey, Geometry<T, N, R>::G, R>(mag, cand, pos, zero);
  any_piv = false;
#pragma unroll
  for (int s = 0; s < R; ++s) {
    is_piv[s] = !pivoted[s] && pos[s] == pr;
    any_piv = any_piv || is_piv[s];
  }
  return pr;
}

// Where step k's broadcast row holds the pivot's reciprocal (Geometry::RowPad): entry `j` of chunk `c`.
template <typename T, int N, int R>
struct RcSlot {
  using Geo = Geometry<T, N, R>;
  int j, c, v;
  TI_DEVICE constexpr explicit RcSlot(int k) : j(Geo::kRcInPad ? N : k), c(j / Geo::kV), v(j % Geo::kV) {}
};

// Entry j of step k's broadcast row: the pivot row's entry `x` (its entry j), the pivot's reciprocal `rc` at RcSlot,
// zeros past N.
template <typename T, int N, int R>
TI_DEVICE T pivot_entry(T x, T rc, int k, int j) {
  return j == RcSlot<T, N, R>(k).j ? rc : (j < N ? x : zero_of(T{}));
}

// Chunk c of step k's broadcast row, the pivot row's entry j (j < N) from entry(j).
template <typename T, int N, int R, typename Entry>
TI_DEVICE Chunk<T> pivot_chunk_from(Entry&& entry, T rc, int k, int c) {
  using Geo = Geometry<T, N, R>;
  Chunk<T> ch;
#pragma unroll
  for (int v = 0; v < Geo::kV; ++v) {
    const int j = c * Geo::kV + v;
    ch.v[v] = pivot_entry<T, N, R>(entry(j < N ? j : 0), rc, k, j);
  }
  return ch;
}

// Chunk c of step k's broadcast row, from the pivot slot's registers.
template <typename T, int N, int R>
TI_DEVICE Chunk<T> own_pivot_chunk(const T (&a)[R][N], const bool (&is_piv)[R], T rc, int k, int c) {
  return pivot_chunk_from<T, N, R>([&](int j) { return pick_slot<T, N, R>(a, is_piv, j); }, rc, k, c);
}

// Chunk c of step k's broadcast row from one slot's row `r` (the pivot's): as own_pivot_chunk without the choice.
template <typename T, int N, int R>
TI_DEVICE Chunk<T> slot_pivot_chunk(const T (&r)[N], T rc, int k, int c) {
  return pivot_chunk_from<T, N, R>([&](int j) { return r[j]; }, rc, k, c);
}

// Whether write_pivot_row stores from each slot (TI_LU_SLOT_STORES) in the LU (kInverse false) or the inverse kernel.
// By default where that measured faster, H200, against selects everywhere, the same bits
// (history_s36_slot_stores.log):
// - small_lu_harness.cu through tools/lu_ab.sh: the float LU with 3-4 rows per lane at n = 18-24 1.01-1.10x at 1-4
//   warps, the float64 inverse at n = 14, 16, 17 1.02-1.13x; elsewhere 0.87-1.00x (more store instructions through
//   the shared-memory pipe, which is busier at small n);
// - the library's tuned launches (bench_linalg.py, GPU time, against the two runs before): the float LU at n = 20,
//   21, 24 (1 warp a block) 1.11 / 1.03 / 1.03x, but n = 18, 19, 22, 23 (8 warps) 1.01 / 0.91 / 1.00 / 0.98x, so
//   only the former; the float64 inverse at n = 14, 16, 17 1.07 / 1.06 / 1.20x.
template <typename T, int N, int R, bool kInverse>
constexpr bool slot_stores() {
  if (R == 1 || TI_LU_SLOT_STORES == 0) return false;
  if (TI_LU_SLOT_STORES == 1) return true;
  if (kInverse) return std::is_same<T, double>::value && (N == 14 || N == 16 || N == 17);
  return std::is_same<T, float>::value && R >= 3 && (N == 20 || N == 21 || N == 24);
}

// Step k's broadcast row from 16-byte chunk `c0` on, and the reciprocal (on its own where its chunk comes before
// c0): the row every lane of the group reads after the next warp sync. kFromRc > 0: only that many chunks, from the
// reciprocal's on in the order of small_inverse_kernel's update (one matrix per warp; inverse_smem_chunks).
template <typename T, int N, int R, int kFromRc = 0, bool kInverse = false>
TI_DEVICE void write_pivot_row(T* row, const T (&a)[R][N], const bool (&is_piv)[R], T rc, int k, int c0) {
  using Geo = Geometry<T, N, R>;
  constexpr int kChunks = Geo::RowPad / Geo::kV;
  const RcSlot<T, N, R> rs(k);
  if constexpr (kFromRc > 0) {
#pragma unroll
    for (int q = 0; q < kFromRc; ++q) {
      const int c = (rs.c + q) % kChunks;
      reinterpret_cast<Chunk<T>*>(row)[c] = own_pivot_chunk<T, N, R>(a, is_piv, rc, k, c);
    }
    return;
  }
  if (rs.c < c0) row[rs.j] = rc;
  if constexpr (slot_stores<T, N, R, kInverse>()) {
    // Each slot stores its own row where it holds the pivot (one slot of one lane a group): R stores a chunk,
    // where choosing the pivot slot's entries first (pick_slot) takes R - 1 selects an entry.
#pragma unroll
    for (int s = 0; s < R; ++s) {
      if (is_piv[s]) {
#pragma unroll
        for (int c = c0; c < kChunks; ++c) {
          reinterpret_cast<Chunk<T>*>(row)[c] = slot_pivot_chunk<T, N, R>(a[s], rc, k, c);
        }
      }
    }
  } else {
#pragma unroll
    for (int c = c0; c < kChunks; ++c) {
      reinterpret_cast<Chunk<T>*>(row)[c] = own_pivot_chunk<T, N, R>(a, is_piv, rc, k, c);
    }
  }
}

// Chunk c of step k's broadcast row as the other rows read it: from the group's broadcast row in shared memory or,
// with one lane per matrix (G == 1), straight from the lane's own registers, with no shared-memory round trip and no
// warp sync. kFromRc > 0 (write_pivot_row's): the chunks past the first kFromRc from the reciprocal's come by
// shuffles from the pivot lane `src` instead (inverse_smem_chunks). Same values every way.
template <typename T, int N, int R, int kFromRc = 0>
TI_DEVICE Chunk<T> pivot_chunk(const T* row, int c, const T (&a)[R][N], const bool (&is_piv)[R], T rc, int k,
                               int src = 0) {
  using Geo = Geometry<T, N, R>;
  constexpr int kChunks = Geo::RowPad / Geo::kV;
  if constexpr (Geo::G == 1) {
    return own_pivot_chunk<T, N, R>(a, is_piv, rc, k, c);
  } else {
    if constexpr (kFromRc > 0) {
      if ((c - RcSlot<T, N, R>(k).c + kChunks) % kChunks >= kFromRc) {
        Chunk<T> ch;
#pragma unroll
        for (int v = 0; v < Geo::kV; ++v) {
          const int j = c * Geo::kV + v;
          ch.v[v] = j < N ? shfl(pick_slot<T, N, R>(a, is_piv, j < N ? j : 0), src) : zero_of(T{});
        }
        return ch;
      }
    }
    return reinterpret_cast<const Chunk<T>*>(row)[c];
  }
}

// LAPACK's interchange at step k, tracked lazily: the pivot row takes position k, the row at k takes pr.
template <int R>
TI_DEVICE void swap_positions(const bool (&is_piv)[R], int (&pos)[R], int k, int pr) {
#pragma unroll
  for (int s = 0; s < R; ++s) {
    if (is_piv[s]) {
      pos[s] = k;
    } else if (pos[s] == k) {
      pos[s] = pr;
    }
  }
}

// Several rows per lane only for real types (the issue's targets; complex keeps one row per lane to bound build
// time), with the rows' registers within 512 bytes per lane (576 for four rows: float64 n = 17, 18) and fewer than
// half the slots padding: R < 2n. With R >= n (n <= 4) one lane holds a whole matrix (G = 1): the pivot row stays in
// its registers. Three or four rows per lane put four float64 matrices of n = 17..21 in a warp (groups of 8 lanes),
// where two rows leave two (groups of 16): H200, GPU time (tune_lu.py), inverse n = 17 / 18 / 19 / 21 1.19 / 1.09 /
// 1.05 / 1.12x the best one- or two-row configuration; n = 20 0.97x (198 registers a lane: 10 warps per SM). H100,
// the tuned table against the previous one in one run (lu_table_ab.py, GPU time, the same bits): float64 inverse
// n = 17..21 1.17 / 1.07 / 1.03 / 1.02 / 1.09x, LU n = 17 1.10x.
// Tried and not kept: three rows within 576 bytes (float64 n = 22..24; no spills, 216 / 255 registers for the
// inverse of n = 23 / 24). H100, tune_lu.py: the inverse 2.1 / 2.3 / 2.9x slower than one row at n = 22 / 23 / 24
// (3.13 / 3.67 / 4.91 ms against 1.49 / 1.62 / 1.67); the fully unrolled kernel grows from 133 KB of code (n = 21)
// to 155 / 182 KB (n = 23 / 24), likely past what the SM's instruction caches hold. LU n = 23 0.99x in the same-run
// A/B. (benchmarks/results/NVIDIA_H100_80GB_HBM3/history_rows3_576.log)
// The launcher (ops/cuda/lu_launch.cuh) and benchmarks/small_lu_harness.cu launch exactly these.
#define TI_LU_ROWS_SUPPORTED 1  // rows_supported exists (small_lu_harness.cu builds against older versions too)
template <typename T, int N, int R>
constexpr bool rows_supported() {
  return R == 1 || (std::is_floating_point<T>::value && R < 2 * N &&
                    R * N * static_cast<int>(sizeof(T)) <= (R == 4 ? 576 : 512));
}

// Registers a lane of small_lu_kernel (Kind 0) or small_inverse_kernel (Kind 1) may take (0: no bound but the
// 256-thread one), as CUDA launch bounds: 96 = 5 blocks of 128 threads per SM, 80 = 3 blocks of 256, 72 = 7 of 128,
// 64 = 8 of 128, 56 = 9 of 128 (blocks of at most 4 warps but at 80: lu_bound_threads, which the launcher's
// clamp_warps honours).
// - Float64 with a row per lane, one matrix per warp, where ptxas otherwise takes 66-102 registers: fewer registers
//   let more warps share an SM (at 81-88 registers two blocks of 8 warps fit, at 80 three, and the inverse's 8-warp
//   blocks run fastest there), at the cost of a few spills at most (LU n = 31: 280 bytes). Each bound was picked from
//   A/B runs of 80, 72 and 64 registers against none; the table against HEAD's unbounded kernels (H100,
//   small_lu_harness.cu through tools/lu_ab.sh, the same bits, best warp count against best; history_s30_lu_ab.log):
//   inverse n = 23 / 25 1.036 / 1.046x, LU n = 17-20 1.04-1.12x, 22 / 23 1.05 / 1.07x, 25 1.15x, 27 / 29 / 31 1.09 /
//   1.16 / 1.10x, the other kernels 0.99-1.01x. The bounds ran slower elsewhere (the inverse at 72 registers from
//   n = 24 on, 0.85-0.99x; at 64 0.40-0.97x).
// - The LU kernels of lu_tuning.h's float32 n = 13, 17, 18, 26, 27 and float64 n = 14 entries of session 39 (session
//   40's retune moved float32 n = 13 to 4 rows a lane, which has no bound). A sweep of 80, 64 and 56 registers over
//   every kernel without a bound (TI_LU_BOUND_SWEEP; H200, small_lu_harness.cu through tools/lu_ab.sh, two interleaved
//   runs each, the same bits; history_s39_lu_bound_sweep.log), best configuration against best: float32 LU n = 13 at 80
//   1.050x (ptxas takes 55 registers for 60: 36 warps an SM for 32), n = 17 / 18 at 80 1.089 / 1.117x (3 or 4 rows per
//   lane: 80 registers with spills, 8- and 4-warp blocks), n = 26 at 64 1.061x, n = 27 at 56 1.060x; float64 LU n = 14
//   at 80 1.031x (56 bytes of spills). Everywhere else the bounds measured 0.97-1.02x or slower (down to 0.17x where a
//   bound spills rows), the inverse included.
#define TI_LU_REG_BOUNDS 1  // lu_reg_bound exists (benchmarks/small_lu_harness.cu builds against older versions too)
#ifndef TI_LU_BOUND_SWEEP  // measurements (tools/lu_ab.sh variants): this bound on every kernel that has none below
#define TI_LU_BOUND_SWEEP 0
#endif
static_assert(TI_LU_BOUND_SWEEP == 0 || TI_LU_BOUND_SWEEP == 96 || TI_LU_BOUND_SWEEP == 80 || TI_LU_BOUND_SWEEP == 72 ||
                  TI_LU_BOUND_SWEEP == 64 || TI_LU_BOUND_SWEEP == 56,
              "TI_LU_BOUND_SWEEP: a bound that lu_bound_blocks knows (96, 80, 72, 64, 56) or 0");
template <typename T, int N, int R, int Kind>
constexpr int lu_reg_bound_table() {
  constexpr bool kF32 = std::is_same<T, float>::value, kF64 = std::is_same<T, double>::value;
  if (kF32 && Kind == 0) {
    if ((N == 13 && (R == 2 || R == 3)) || ((N == 17 || N == 18) && (R == 3 || R == 4))) return 80;
    if (R == 1 && (N == 26 || N == 27)) return N == 26 ? 64 : 56;
    return 0;
  }
  if (!kF64) return 0;
  if (Kind == 0 && N == 14 && (R == 2 || R == 3)) return 80;
  if (R != 1) return 0;
  if (Kind == 1) return (N == 23 || N == 25) ? 80 : 0;
  if (N >= 17 && N <= 20) return 64;
  if (N == 22 || N == 23 || N == 25) return 72;
  return (N == 27 || N == 29 || N == 31) ? 80 : 0;
}
template <typename T, int N, int R, int Kind>
constexpr int lu_reg_bound() {
  if (TI_HIP) return 0;  // CUDA measurements: none on HIP
  constexpr int kTable = lu_reg_bound_table<T, N, R, Kind>();
  return kTable == 0 && std::is_floating_point<T>::value ? TI_LU_BOUND_SWEEP : kTable;
}
// How many 16-byte chunks of each step's pivot row small_inverse_kernel passes through shared memory where it hands
// the rest over by warp shuffles (one per 4-byte word, from the pivot lane found by a ballot; 0: the whole row through
// shared memory, no shuffles): float64 with a row per lane (one matrix per warp) at n = 20..27, the first two of the
// update's order (the reciprocal's chunk and the next). That kernel waits on the shared-memory pipe (H100, Nsight
// Compute at n = 23: its wavefronts 63% busy, the largest stalls short scoreboard and MIO throttle; by the SASS, 276
// of the 339 shared stores and 253 of the 339 shared loads per matrix carry the pivot row); shuffles take part of
// that load. H100, small_lu_harness.cu through
// tools/lu_ab.sh, the same bits, best configuration each (history_s32_f64_shfl_chunks_ab.log): two chunks in shared
// memory n = 20 / 22 / 23 / 24 / 25 / 26 / 27 1.02 / 1.01 / 1.05 / 1.03 / 1.05 / 1.04 / 1.06x, n = 28 0.95x (three or
// four chunks: 0.94-1.06x); every chunk by shuffles (no shared-memory row, no warp sync) 0.89-1.04x (n = 24 0.89x).
// Same values either way.
template <typename T, int N, int R>
constexpr int inverse_smem_chunks() {
  using Geo = Geometry<T, N, R>;
  if (!std::is_same<T, double>::value || R != 1 || Geo::kGroups != 1 || TI_LU_F64_SMEM_CHUNKS == 0) return 0;
  const int keep = TI_LU_F64_SMEM_CHUNKS > 0 ? TI_LU_F64_SMEM_CHUNKS : (N >= 20 && N <= 27 ? 2 : 0);
  return keep < Geo::RowPad / Geo::kV ? keep : 0;
}
// Whether small_inverse_kernel writes its column permutation at the end (perm[my_step] = row, one store a row, then
// 16-byte reads, perm_quad) rather than the pivot lane writing perm[k] at each step and every lane reading the n
// entries one by one: 2n shared-memory instructions fewer per matrix where these kernels wait on that pipe. H100,
// small_lu_harness.cu through tools/lu_ab.sh, the same bits, best configuration each (history_s34_perm_at_end_ab.log):
// float32 inverse n = 7-32 1.00-1.10x (n = 14 / 16 / 18 / 19 / 22 / 27 / 31 1.076 / 1.073 / 1.090 / 1.075 / 1.057 /
// 1.061 / 1.099x), n = 2-6 0.99-1.01x; float64 n = 18-20 1.06-1.10x, 22-32 1.01-1.03x (n = 24 1.019x), n <= 17
// 0.99-1.02x. Three of lu_tuning.h's picks ran slower in the same run and keep the old way: float64 n = 21 with 3
// rows per lane 0.95-0.97x, float64 n = 16 with 2 rows 0.97-0.98x, float32 n = 23 with 4 rows 0.95-0.98x (every
// warp count). The split-rows kernel, given the same change, ran 0.71-1.00x (n = 28 / 29 0.90 / 0.71x) and keeps it
// too.
template <typename T, int N, int R>
constexpr bool inverse_perm_at_end() {
  if (Geometry<T, N, R>::G == 1 || TI_LU_PERM_AT_END == 0) return false;
  constexpr bool kF64 = std::is_same<T, double>::value, kF32 = std::is_same<T, float>::value;
  const bool slower = (kF64 && N == 21 && R == 3) || (kF64 && N == 16 && R == 2) || (kF32 && N == 23 && R == 4);
  return TI_LU_PERM_AT_END == 1 || !slower;
}
constexpr int lu_bound_threads(int regs) { return regs == 80 || regs == 0 ? 256 : 128; }
constexpr int lu_bound_blocks(int regs) {
  return regs == 96 ? 5 : regs == 80 ? 3 : regs == 72 ? 7 : regs == 64 ? 8 : regs == 56 ? 9 : 0;
}
#define TI_LU_BOUNDS(regs) TI_LAUNCH_BOUNDS(lu_bound_threads(regs), lu_bound_blocks(regs))

// Launch of the two kernels below: blockDim.x = warps * kWarpSize, dynamic shared memory
// warps * Geometry<T, N, R>::kWarpSmemBytes. Warp w of the grid takes the batch's tiles (kGroups consecutive
// matrices each) w, w + W, ... (W: the grid's warps). Where a tile fits TilePrefetch's registers (small n:
// lu_persistent) the launcher may cap the grid at the blocks resident at once and a warp fetches its next tile while
// it works on the current one (`prefetch`), so that loads of the next tile overlap the arithmetic of this one;
// elsewhere (the arithmetic dominates) the grid covers the batch, one tile per warp
// (ceil(batch / (warps * kGroups)) blocks), and the kernel is straight-line code.
template <typename T, int N, int R>
constexpr bool lu_persistent() {
  return TilePrefetch<T, N, R>::kEnabled;
}

// Runs `tile_fn(m0, nmat, lane)` on the warp's tiles, the tile staged in sm.tile. Turns are warp-uniform: a warp
// past the batch's end does nothing, a working one has every lane for the shuffles.
template <typename T, int N, int R, typename TileFn>
TI_DEVICE void for_each_tile(const T* in, int64_t batch, const WarpSmem<T, N, R>& sm, int lane, bool prefetch,
                             TileFn&& tile_fn) {
  using Geo = Geometry<T, N, R>;
  TileTurn turn(batch, Geo::kGroups);
  if constexpr (!lu_persistent<T, N, R>()) {
    if (turn.t >= turn.tiles) return;
    const int64_t m0 = turn.t * Geo::kGroups;
    const int nmat = TileTurn::count(turn.t, batch, Geo::kGroups);
    stage_in<T, N, R>(in + m0 * (N * N), sm.tile, nmat * N * N, lane);
    warp_sync();
    tile_fn(m0, nmat, lane);
  } else {
    TilePrefetch<T, N, R> next;
    if (prefetch && turn.t < turn.tiles) {
      next.fetch(in + turn.t * Geo::kGroups * (N * N), TileTurn::count(turn.t, batch, Geo::kGroups) * N * N, lane);
    }
#pragma unroll 1
    for (; turn.t < turn.tiles; turn.t += turn.stride) {
      // Lane-dependent addresses recomputed each turn rather than held in registers across the loop.
      const int ln = opaque(lane);
      const int64_t m0 = turn.t * Geo::kGroups;
      const int nmat = TileTurn::count(turn.t, batch, Geo::kGroups);
      if (next.full) {
        next.put(sm.tile, ln);
      } else {
        stage_in<T, N, R>(in + m0 * (N * N), sm.tile, nmat * N * N, ln);
      }
      warp_sync();
      if (prefetch && turn.t + turn.stride < turn.tiles) {
        const int64_t u = turn.t + turn.stride;
        next.fetch(in + u * Geo::kGroups * (N * N), TileTurn::count(u, batch, Geo::kGroups) * N * N, ln);
      } else {
        next.full = false;
      }
      tile_fn(m0, nmat, ln);
      warp_sync();  // every lane has read the tile before the next turn overwrites it
    }
  }
}

// LU factorization with partial pivoting (LAPACK getrf semantics: A = P L U, ipiv 1-based, info = first zero
// pivot). `in` may equal `lu`. R rows per lane (R > 1 amortizes the broadcast row reads and the per-step pivot
// work over more rows: fewer instructions per matrix). Launch: see lu_persistent.
template <typename T, int N, int R = 1>
__global__ void TI_LU_BOUNDS((lu_reg_bound<T, N, R, 0>()))
    small_lu_kernel(const T* in, T* lu, int32_t* ipiv, int32_t* info, int64_t batch, bool prefetch) {
  using Geo = Geometry<T, N, R>;
  constexpr int G = Geo::G, TS = Geo::TS;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const WarpSmem<T, N, R> sm(smem_raw + warp * Geo::kWarpSmemBytes);
  for_each_tile<T, N, R>(in, batch, sm, lane, prefetch, [&](int64_t m0, int nmat, int ln) {
    const int valid = nmat * N * N;
    const int g = ln / G, i = ln % G;
    T a[R][N];
    bool pivoted[R];  // rows already pivoted (and padding rows) do nothing more
    int pos[R];       // each row's position in LAPACK's (swapped) matrix
    int my_ipiv[R] = {};
    load_rows<T, N, R>(sm.tile, g, i, a, pivoted, pos);
    int my_info = 0;
    T* bcast = sm.bcast + g * Geo::kBcastStride;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      bool zero, is_piv[R], any_piv;
      const int pr = find_pivot<T, N, R>(a, pivoted, pos, k, zero, is_piv, any_piv);
      if (zero && my_info == 0) my_info = k + 1;
#pragma unroll
      for (int s = 0; s < R; ++s) {
        if (s * G + i == k) my_ipiv[s] = pr + 1;
      }
      T* row = bcast + (k & 1) * Geo::RowPad;  // double buffer: one sync per step
      T rc = zero_of(T{});
      if (any_piv) {
        rc = recip(pick_slot<T, N, R>(a, is_piv, k));
        // The pivot row broadcasts its entries right of the diagonal and the pivot's reciprocal.
        if constexpr (G > 1) write_pivot_row<T, N, R>(row, a, is_piv, rc, k, (k + 1) / Geo::kV);
      }
#pragma unroll
      for (int s = 0; s < R; ++s) pivoted[s] = pivoted[s] || is_piv[s];
      swap_positions<R>(is_piv, pos, k, pr);
      // The reciprocal: from the chunk that the update reads anyway where it is one of them, else on its own.
      constexpr int kV = Geo::kV;
      const RcSlot<T, N, R> rs(k);
      Chunk<T> ck{};
      if constexpr (G > 1) {
        warp_sync();
        if (rs.c >= (k + 1) / kV) {
          ck = reinterpret_cast<const Chunk<T>*>(row)[rs.c];
          rc = ck.v[rs.v];
        } else {
          rc = row[rs.j];
        }
      }
      if (!zero) {  // lazy swaps: rows already pivoted do nothing
        T l[R];
#pragma unroll
        for (int s = 0; s < R; ++s) {
          if constexpr (uncond_multipliers<T, N, R, 0>()) {
            l[s] = mul(a[s][k], rc);  // unused where pivoted
            if (!pivoted[s]) a[s][k] = l[s];
          } else if (!pivoted[s]) {
            l[s] = mul(a[s][k], rc);
            a[s][k] = l[s];
          }
        }
#pragma unroll
        for (int c = (k + 1) / kV; c < Geo::RowPad / kV; ++c) {
          const Chunk<T> ch = (G > 1 && c == rs.c) ? ck : pivot_chunk<T, N, R>(row, c, a, is_piv, rc, k);
#pragma unroll
          for (int s = 0; s < R; ++s) {
            if (!pivoted[s]) {
#pragma unroll
              for (int v = 0; v < Geo::kV; ++v) {
                const int j = c * Geo::kV + v;
                if (j > k && j < N) a[s][j] = fnms(a[s][j], l[s], ch.v[v]);
              }
            }
          }
        }
      }
    }
    // Every row goes to its final position (its pivot step).
#pragma unroll
    for (int s = 0; s < R; ++s) {
      if (s * G + i < N) {
        T* dst = sm.tile + g * Geo::GS + pos[s] * TS;
        if constexpr (Geo::kUnitTile) {
#pragma unroll
          for (int c = 0; c < Geo::Nu; ++c) {
            Units<T, Geo::U> u;
#pragma unroll
            for (int v = 0; v < Geo::U; ++v) u.v[v] = a[s][c * Geo::U + v];
            reinterpret_cast<Units<T, Geo::U>*>(dst)[c] = u;
          }
        } else {
#pragma unroll
          for (int j = 0; j < N; ++j) dst[j] = a[s][j];
        }
      }
    }
    warp_sync();
    stage_out<T, N, R>(lu + m0 * (N * N), sm.tile, valid, ln);
    if (g < nmat) {
#pragma unroll
      for (int s = 0; s < R; ++s) {
        if (s * G + i < N) ipiv[(m0 + g) * N + s * G + i] = my_ipiv[s];
      }
      if (i == 0) info[m0 + g] = my_info;
    }
  });
}

// Entries 4q..4q+3 (those below n) of an inverse's column permutation (entry k: the row pivoted at step k) from
// shared memory, as one 16-byte load where the group's entries start 16-byte aligned (n % 4 == 0, or one group per
// warp), else one by one. Read a quad at a time where they are used, so that the entries do not all hold registers.
template <int N, int kGroups>
TI_DEVICE void perm_quad(const int* perm, int q, int (&p)[4]) {
  if constexpr (N % 4 == 0 || kGroups == 1) {
    if (4 * q + 4 <= N) {
      const int4 v = reinterpret_cast<const int4*>(perm)[q];
      p[0] = v.x;
      p[1] = v.y;
      p[2] = v.z;
      p[3] = v.w;
      return;
    }
  }
#pragma unroll
  for (int v = 0; v < 4; ++v) p[v] = 4 * q + v < N ? perm[4 * q + v] : 0;
}

// Inverse (getrf + getri semantics; info as getrf's, or not written where `info` is null: batched_inverse and
// inverse_ return none). `in` may equal `out`. Same launch as small_lu_kernel.
template <typename T, int N, int R = 1>
__global__ void TI_LU_BOUNDS((lu_reg_bound<T, N, R, 1>()))
    small_inverse_kernel(const T* in, T* out, int32_t* info, int64_t batch, bool prefetch) {
  using Geo = Geometry<T, N, R>;
  constexpr int G = Geo::G, TS = Geo::TS;
  // The pivot row by shuffles from the pivot lane rather than through shared memory (TI_LU_SHFL_BCAST).
  constexpr bool kShfl = std::is_same<T, float>::value && G > 1 &&
                         (TI_LU_SHFL_BCAST == 1 || (TI_LU_SHFL_BCAST == -1 && R == 4 && N >= 20));
  // Float64 with a row per lane: only the first kSmemChunks chunks of the pivot row (in the update's order) through
  // shared memory, the rest by shuffles (0: the whole row through shared memory).
  constexpr int kSmemChunks = inverse_smem_chunks<T, N, R>();
  constexpr bool kPermAtEnd = inverse_perm_at_end<T, N, R>();
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const WarpSmem<T, N, R> sm(smem_raw + warp * Geo::kWarpSmemBytes);
  for_each_tile<T, N, R>(in, batch, sm, lane, prefetch, [&](int64_t m0, int nmat, int ln) {
    const int valid = nmat * N * N;
    const int g = ln / G, i = ln % G;
    T a[R][N];
    bool pivoted[R];
    int pos[R], my_step[R] = {};
    T my_recip[R];
    load_rows<T, N, R>(sm.tile, g, i, a, pivoted, pos);
#pragma unroll
    for (int s = 0; s < R; ++s) my_recip[s] = one_of(T{});
    int my_info = 0;
    T* bcast = sm.bcast + g * Geo::kBcastStride;
    int* perm = sm.perm + g * N;
    int own_perm[G == 1 ? N : 1] = {};  // G == 1: the column permutation in registers
#pragma unroll
    for (int k = 0; k < N; ++k) {
      bool zero, is_piv[R], any_piv;
      const int pr = find_pivot<T, N, R, inverse_one_key<T, N>()>(a, pivoted, pos, k, zero, is_piv, any_piv);
      if (zero && my_info == 0) my_info = k + 1;
      T* row = bcast + (k & 1) * Geo::RowPad;
      T rc = zero_of(T{});
      if (any_piv) {
        // Slot k now holds column p_k of [A | I]'s right half; in the unscaled pivot row that entry is 1
        // (scaled by 1/pivot at the end, like the rest of the row).
        rc = recip(pick_slot<T, N, R>(a, is_piv, k));
        int slot = 0;
#pragma unroll
        for (int s = 0; s < R; ++s) {
          if (is_piv[s]) {
            my_recip[s] = rc;
            a[s][k] = one_of(T{});
            pivoted[s] = true;
            my_step[s] = k;
            slot = s;
          }
        }
        if constexpr (G > 1) {
          if constexpr (!kShfl) write_pivot_row<T, N, R, kSmemChunks, true>(row, a, is_piv, rc, k, 0);
          if constexpr (!kPermAtEnd) perm[k] = slot * G + i;
        } else {
          own_perm[k] = slot;
        }
      }
      swap_positions<R>(is_piv, pos, k, pr);
      if constexpr (kShfl) {
        // The same values as the shared-memory broadcast below, so the same bits.
        const int src = group_lane_of<G>(any_piv, g);
        rc = shfl(rc, src);
        T f[R];
        gj_multipliers<T, N, R>(a, is_piv, k, rc, f);
#pragma unroll
        for (int j = 0; j < N; ++j) {
          if (j == k) continue;
          const T p = shfl(pick_slot<T, N, R>(a, is_piv, j), src);
#pragma unroll
          for (int s = 0; s < R; ++s) {
            if (!is_piv[s]) a[s][j] = fnms(a[s][j], f[s], p);
          }
        }
        continue;
      }
      constexpr int kV = Geo::kV;
      int src = 0;  // the pivot lane, for the chunks that come by shuffles
      if constexpr (kSmemChunks > 0) src = group_lane_of<G>(any_piv, g);
      if constexpr (G > 1) warp_sync();
      // The reciprocal, from its chunk, which the update reads anyway.
      const RcSlot<T, N, R> rs(k);
      const Chunk<T> ck = pivot_chunk<T, N, R>(row, rs.c, a, is_piv, rc, k);
      rc = ck.v[rs.v];
      T f[R];
      gj_multipliers<T, N, R>(a, is_piv, k, rc, f);
      // With one matrix per warp the update starts at the reciprocal's chunk, so that it is not held in registers
      // across the others (ptxas, float64 n = 18 / 20 / 24: 80 / 81 / 83 registers in order, 76 / 78 / 80 rotated).
      constexpr int kChunks = Geo::RowPad / kV;
#pragma unroll
      for (int q = 0; q < kChunks; ++q) {
        const int c = Geo::kGroups == 1 ? (rs.c + q) % kChunks : q;
        const Chunk<T> ch = c == rs.c ? ck : pivot_chunk<T, N, R, kSmemChunks>(row, c, a, is_piv, rc, k, src);
#pragma unroll
        for (int s = 0; s < R; ++s) {
          if (!is_piv[s]) {
#pragma unroll
            for (int v = 0; v < kV; ++v) {
              const int j = c * kV + v;
              if (j < N && j != k) a[s][j] = fnms(a[s][j], f[s], ch.v[v]);
            }
          }
        }
      }
    }
    if constexpr (kPermAtEnd) {
      // perm[k]: the row pivoted at step k, written by that row (one store a row instead of one a step, MIO).
#pragma unroll
      for (int s = 0; s < R; ++s) {
        if (s * G + i < N) perm[my_step[s]] = s * G + i;
      }
      warp_sync();
    } else if constexpr (kShfl) {
      warp_sync();  // perm was written lane by lane at each step
    }
    // Row pivoted at step k is row k of the inverse; its slot j holds column perm[j] (column interchanges).
#pragma unroll
    for (int s = 0; s < R; ++s) {
      if (s * G + i < N) {
        if constexpr (kPermAtEnd) {
          // (kPermAtEnd implies G > 1; the G tests below keep the form that was measured: ptxas allocated the
          // several-rows kernels differently without them, the same instructions in another order.)
#pragma unroll
          for (int q = 0; q < (N + 3) / 4; ++q) {
            int p4[4] = {};
            if constexpr (G > 1) perm_quad<N, Geo::kGroups>(perm, q, p4);
#pragma unroll
            for (int v = 0; v < 4; ++v) {
              const int j = 4 * q + v;
              if (j < N) {
                const int pj = G == 1 ? own_perm[j] : p4[v];
                sm.tile[g * Geo::GS + my_step[s] * TS + pj] = mul(a[s][j], my_recip[s]);
              }
            }
          }
        } else {
#pragma unroll
          for (int j = 0; j < N; ++j) {
            int pj;
            if constexpr (G == 1) {
              pj = own_perm[j];
            } else {
              pj = perm[j];
            }
            sm.tile[g * Geo::GS + my_step[s] * TS + pj] = mul(a[s][j], my_recip[s]);
          }
        }
      }
    }
    warp_sync();
    stage_out<T, N, R>(out + m0 * (N * N), sm.tile, valid, ln);
    if (info != nullptr && g < nmat && i == 0) info[m0 + g] = my_info;
  });
}

// K int32 values moved as one vector access (the infos and pivots of a chunk of 1 x 1 matrices).
template <int K>
struct alignas(4 * K) Int32s {
  int32_t v[K];
};

// n = 1, elementwise (a lane per 16-byte chunk of the batch, kV matrices, grid-stride): the kernels above would spend
// a warp turn on 32 matrices of 4 or 8 bytes. Kind 0 (LU): the factor is a itself, pivot 1; Kind 1 (inverse):
// 1 * recip(a), the very operations of small_inverse_kernel at n = 1 (the pivot slot set to one, then scaled by the
// pivot's reciprocal), so the results are the same bit for bit. info = 1 where the pivot is exactly zero: the
// pivot key of pivot_search is below 64 exactly when abs1(a) == 0 (a NaN is no zero pivot).
// Launch: any grid of whole warps; `out` may equal `in`; `ipiv` only for Kind 0; `info` may be null for Kind 1 (not
// written).
template <typename T, int Kind>
__global__ void __launch_bounds__(256) one_by_one_kernel(const T* in, T* out, int32_t* ipiv, int32_t* info,
                                                         int64_t batch) {
  constexpr int kV = Geometry<T, 1>::kV;
  using Ints = Int32s<kV>;
  const auto one = [](T a, T& x, int32_t& f) {
    f = abs1(a) == decltype(abs1(a))(0) ? 1 : 0;
    x = Kind == 0 ? a : mul(one_of(T{}), recip(a));
  };
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  // Vector accesses (a 16-byte chunk of matrices, their kV infos and pivots at once) where every pointer allows.
  const uintptr_t ints = reinterpret_cast<uintptr_t>(info) | (Kind == 0 ? reinterpret_cast<uintptr_t>(ipiv) : 0u);
  const bool aligned = ((reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(out)) & 15u) == 0 &&
                       (ints & (sizeof(Ints) - 1)) == 0;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t * kV < batch; t += stride) {
    const int64_t e0 = t * kV;
    if (aligned && e0 + kV <= batch) {
      const Chunk<T> a = reinterpret_cast<const Chunk<T>*>(in)[t];
      Chunk<T> x;
      Ints f, p;
#pragma unroll
      for (int v = 0; v < kV; ++v) {
        one(a.v[v], x.v[v], f.v[v]);
        p.v[v] = 1;
      }
      reinterpret_cast<Chunk<T>*>(out)[t] = x;
      if (info != nullptr) reinterpret_cast<Ints*>(info)[t] = f;
      if (Kind == 0) reinterpret_cast<Ints*>(ipiv)[t] = p;
    } else {
      for (int64_t e = e0; e < e0 + kV && e < batch; ++e) {
        T x;
        int32_t f;
        one(in[e], x, f);
        out[e] = x;
        if (info != nullptr) info[e] = f;
        if (Kind == 0) ipiv[e] = 1;
      }
    }
  }
}

// Split rows (real types, n past half a warp): the lanes of a warp form H column parts of G = kWarpSize / H lanes;
// lane h * G + i holds columns [h W, h W + W) (W = ceil(n / H)) of rows i, i + G, ... (R rows per lane), one
// matrix per warp. Each lane then reads only its part of the pivot row at every step (W entries instead of n):
// a matrix costs about 1 / H of the one-row kernel's broadcast reads (on an H200 each 16-byte broadcast read takes
// two shared-memory wavefronts), and each of the pivot row's H lanes writes 1 / H of it, with about the registers of
// one row per lane. The multipliers come from the part that holds column k (R shuffles per step, issued while the
// pivot is searched); the pivot search runs in that part. Every entry goes through the same operations as in
// small_inverse_kernel, so the results are the same bit for bit. The matrix is staged by elements (load_tile's
// kByElements; H200, split_inverse_harness.cu, float64 n = 32 at 4 and 8 warps per block: 1.04x against 16-byte
// chunks, the same bits; history_rc_slot_n17_ab.log). CUDA only in practice: with 64-wide wavefronts one row per
// lane already covers n <= 32 (kSupported is false).
template <typename T, int N, int H>
struct SplitGeometry {
  static_assert(H == 2 || H == 4, "2 or 4 column parts");
  static constexpr int G = kWarpSize / H;        // lanes per column part
  static constexpr int R = (N + G - 1) / G;      // rows per lane
  static constexpr int W = (N + H - 1) / H;      // columns per part
  static constexpr int S = Geometry<T, N>::S;    // the tile's odd row stride
  static constexpr int kV = Geometry<T, N>::kV;
  static constexpr int SegPad = round_up(W, kV); // one part of the broadcast row, in whole 16-byte chunks
  static constexpr int RowPad = H * SegPad + kV; // the parts, then the pivot's reciprocal in a chunk of its own
  static constexpr int kTileBytes = round_up(N * S * static_cast<int>(sizeof(T)), 16);
  static constexpr int kBcastBytes = 2 * RowPad * static_cast<int>(sizeof(T));
  static constexpr int kPermBytes = round_up(N * 4, 16);
  static constexpr int kWarpSmemBytes = kTileBytes + kBcastBytes + kPermBytes;
  static constexpr bool kSupported = std::is_floating_point<T>::value && N > G && R <= 4;
};

// Inverse with split rows (see SplitGeometry); same semantics and arguments as small_inverse_kernel. Launch:
// blockDim.x = warps * kWarpSize, ceil(batch / warps) blocks, warps * SplitGeometry::kWarpSmemBytes of shared
// memory; warp w of the grid inverts matrix w.
template <typename T, int N, int H>
__global__ void __launch_bounds__(256) split_inverse_kernel(const T* in, T* out, int32_t* info, int64_t batch) {
  using SG = SplitGeometry<T, N, H>;
  constexpr int G = SG::G, R = SG::R, W = SG::W, S = SG::S, kV = SG::kV;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const WarpSmem<T, N, 1, SG> sm(smem_raw + warp * SG::kWarpSmemBytes);
  const int64_t m = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarpSize) + warp;
  if (m >= batch) return;  // warp-uniform: a working warp has every lane for the shuffles
  load_tile<T, N, N * S, 1, 1, S, true>(in + m * (N * N), sm.tile, N * N, lane);
  warp_sync();
  const int h = lane / G, i = lane % G;
  T a[R][W];
  bool pivoted[R];
  int pos[R], my_step[R] = {};
  T my_recip[R];
#pragma unroll
  for (int s = 0; s < R; ++s) {
    const int r = s * G + i;
#pragma unroll
    for (int jj = 0; jj < W; ++jj) {
      const int c = h * W + jj;
      a[s][jj] = (r < N && c < N) ? sm.tile[r * S + c] : zero_of(T{});
    }
    pivoted[s] = r >= N;
    pos[s] = r;
    my_recip[s] = one_of(T{});
  }
  int my_info = 0;
#pragma unroll
  for (int k = 0; k < N; ++k) {
    const int hk = k / W, kk = k - hk * W;  // column k: entry kk of part hk
    const bool owner = h == hk;
    // The multipliers' column from its part (not on the pivot search's path).
    T x[R];
#pragma unroll
    for (int s = 0; s < R; ++s) x[s] = shfl(a[s][kk], hk * G + i);
    decltype(abs1(T{})) mag[R];
    bool cand[R];
#pragma unroll
    for (int s = 0; s < R; ++s) {
      mag[s] = abs1(a[s][kk]);
      cand[s] = owner && !pivoted[s];
    }
    bool zero;
    const int pr = pivot_search_as<inverse_one_key<T, N>(), kWarpSize, R>(mag, cand, pos, zero);
    if (zero && my_info == 0) my_info = k + 1;
    bool is_piv[R], any_piv = false;
#pragma unroll
    for (int s = 0; s < R; ++s) {
      is_piv[s] = !pivoted[s] && pos[s] == pr;
      any_piv = any_piv || is_piv[s];
    }
    T* row = sm.bcast + (k & 1) * SG::RowPad;
    if (any_piv) {
      int slot = 0;
#pragma unroll
      for (int s = 0; s < R; ++s) {
        if (is_piv[s]) {
          pivoted[s] = true;
          my_step[s] = k;
          slot = s;
        }
      }
      if (owner) {
        // As small_inverse_kernel: slot k now holds column p_k of [A | I]'s right half, 1 in the unscaled row.
        const T rc = recip(pick_slot<T, W, R>(a, is_piv, kk));
#pragma unroll
        for (int s = 0; s < R; ++s) {
          if (is_piv[s]) a[s][kk] = one_of(T{});
        }
        row[H * SG::SegPad] = rc;
        sm.perm[k] = slot * G + i;
      }
      T* seg = row + h * SG::SegPad;
#pragma unroll
      for (int s = 0; s < R; ++s) {
        if (is_piv[s]) {
#pragma unroll
          for (int c = 0; c < SG::SegPad / kV; ++c) {
            Chunk<T> ch;
#pragma unroll
            for (int v = 0; v < kV; ++v) {
              const int jj = c * kV + v;
              ch.v[v] = jj < W ? a[s][jj < W ? jj : 0] : zero_of(T{});
            }
            reinterpret_cast<Chunk<T>*>(seg)[c] = ch;
          }
        }
      }
    }
    swap_positions<R>(is_piv, pos, k, pr);
    warp_sync();
    const T rc = row[H * SG::SegPad];
    T f[R];
#pragma unroll
    for (int s = 0; s < R; ++s) {
      if (is_piv[s]) {
        my_recip[s] = rc;
      } else {
        f[s] = mul(x[s], rc);
        if (owner) a[s][kk] = zero_of(T{});
      }
    }
    const T* seg = row + h * SG::SegPad;
#pragma unroll
    for (int c = 0; c < SG::SegPad / kV; ++c) {
      const Chunk<T> ch = reinterpret_cast<const Chunk<T>*>(seg)[c];
#pragma unroll
      for (int s = 0; s < R; ++s) {
        if (!is_piv[s]) {
#pragma unroll
          for (int v = 0; v < kV; ++v) {
            const int jj = c * kV + v;
            if (jj < W) a[s][jj] = fnms(a[s][jj], f[s], ch.v[v]);
          }
        }
      }
    }
  }
  // Row pivoted at step k is row k of the inverse; its entry c holds column perm[c] (column interchanges).
#pragma unroll
  for (int s = 0; s < R; ++s) {
    if (s * G + i < N) {
#pragma unroll
      for (int jj = 0; jj < W; ++jj) {
        const int c = h * W + jj;
        if (c < N) sm.tile[my_step[s] * S + sm.perm[c]] = mul(a[s][jj], my_recip[s]);
      }
    }
  }
  warp_sync();
  store_tile<T, N, N * S, 1, 1, S, true>(out + m * (N * N), sm.tile, N * N, lane);
  if (info != nullptr && lane == 0) info[m] = my_info;
}


}  // namespace lu
}  // namespace kernels
}  // namespace torch_inplace

#ifdef TORCH_INPLACE_HIP_CHECK
// CI compiles each header alone with hipcc for gfx90a: instantiate the kernels for every dtype and a few n.
namespace torch_inplace {
namespace kernels {
namespace lu {
#define TI_LU_INSTANTIATE(T, N)                                                                          \
  template __global__ void small_lu_kernel<T, N>(const T*, T*, int32_t*, int32_t*, int64_t, bool);       \
  template __global__ void small_inverse_kernel<T, N>(const T*, T*, int32_t*, int64_t, bool);
#define TI_LU_INSTANTIATE_ALL(N)             \
  TI_LU_INSTANTIATE(float, N)                \
  TI_LU_INSTANTIATE(double, N)               \
  TI_LU_INSTANTIATE(Cplx<float>, N)          \
  TI_LU_INSTANTIATE(Cplx<double>, N)
TI_LU_INSTANTIATE_ALL(1)
TI_LU_INSTANTIATE_ALL(3)
TI_LU_INSTANTIATE_ALL(8)
TI_LU_INSTANTIATE_ALL(17)
TI_LU_INSTANTIATE_ALL(32)
#define TI_LU_INSTANTIATE_ROWS(T, N, R)                                                                   \
  template __global__ void small_lu_kernel<T, N, R>(const T*, T*, int32_t*, int32_t*, int64_t, bool);    \
  template __global__ void small_inverse_kernel<T, N, R>(const T*, T*, int32_t*, int64_t, bool);
TI_LU_INSTANTIATE_ROWS(float, 13, 2)
TI_LU_INSTANTIATE_ROWS(float, 32, 4)
TI_LU_INSTANTIATE_ROWS(double, 9, 4)
TI_LU_INSTANTIATE_ROWS(double, 24, 2)
TI_LU_INSTANTIATE_ROWS(double, 20, 3)
TI_LU_INSTANTIATE_ROWS(float, 20, 3)   // unit tiles past n = 16
TI_LU_INSTANTIATE_ROWS(double, 18, 2)
TI_LU_INSTANTIATE_ROWS(float, 11, 3)
template __global__ void split_inverse_kernel<double, 32, 2>(const double*, double*, int32_t*, int64_t);
template __global__ void split_inverse_kernel<float, 25, 2>(const float*, float*, int32_t*, int64_t);
template __global__ void one_by_one_kernel<float, 1>(const float*, float*, int32_t*, int32_t*, int64_t);
template __global__ void one_by_one_kernel<Cplx<double>, 0>(const Cplx<double>*, Cplx<double>*, int32_t*, int32_t*,
                                                            int64_t);
TI_LU_INSTANTIATE_ROWS(float, 4, 4)
TI_LU_INSTANTIATE_ROWS(double, 2, 2)
TI_LU_INSTANTIATE_ROWS(float, 6, 6)
TI_LU_INSTANTIATE_ROWS(double, 8, 8)
#undef TI_LU_INSTANTIATE_ROWS
#undef TI_LU_INSTANTIATE_ALL
#undef TI_LU_INSTANTIATE
}  // namespace lu
}  // namespace kernels
}  // namespace torch_inplace
#endif
