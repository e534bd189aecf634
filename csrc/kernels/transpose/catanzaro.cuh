// Catanzaro-Keller-Garland decomposition on the GPU (paper 003): the index functions with strength-reduced
// division, the row shuffle (on chip in shared memory, or through a global row slot when a row is too long),
// and the universal column steps (rotations as two reflections, the row permutation q by cycle following from
// leaders found on the device). Pure device code: raw pointers and sizes only.
//
// Every kernel works on a batch of row-major m x n matrices (the plan's c2r view) at `base`, matrix k at
// base + k*m*n. U is the index type inside one matrix (uint32_t when m*n + m + n < 2^31, else uint64_t).
#pragma once

#include <cstdint>

#include "kernels/common.cuh"
#include "kernels/transpose/divmod.cuh"

namespace torch_inplace {
namespace kernels {

// (x * y) mod m for x, y < m < 2^63 by doubling (no 128-bit division, which AMD GPUs lack); only for b >= 2^32.
TI_HOST_DEVICE uint64_t mulmod_u64(uint64_t x, uint64_t y, uint64_t m) {
  uint64_t r = 0;
  while (y != 0) {
    if (y & 1) r = r >= m - x ? r - (m - x) : r + x;
    y >>= 1;
    x = x >= m - x ? x - (m - x) : x + x;
  }
  return r;
}

// (x + y) mod m for x, y < m.
template <typename U>
TI_HOST_DEVICE U add_mod(U x, U y, U m) {
  const U s = x + y;
  return s >= m ? s - m : s;
}

// Threads per block of the shared-memory row shuffle (kRowThreadsWide where one block's rows fill an SM's shared
// memory, so that an SM still runs 32 warps); its index walk steps by this many elements.
constexpr int kRowThreads = 512;
constexpr int kRowThreadsWide = 1024;

// Launch bounds of the shared-memory row kernels (row_shuffle_smem_kernel, row_rotate_fused_kernel). kMinBlocks == 0:
// blocks of up to kRowThreadsWide threads (one block per SM may take 64 registers a thread). kMinBlocks > 0: blocks of
// at most kRowThreads threads, registers few enough that kMinBlocks of them share an SM (TI_LAUNCH_BOUNDS).
#define TI_ROW_BOUNDS(kMin) TI_LAUNCH_BOUNDS(((kMin) == 0 ? kRowThreadsWide : kRowThreads), (kMin))

// Index math of one m x n decomposition (c2r.h's Params, strength-reduced). Built on the host.
template <typename U>
struct CatIdx {
  U m, n, c, a, b, ainv, binv;
  U k, nk;                   // super-element width (elements) and elements per row, n * k
  bool wide_b;               // b >= 2^32: ainv * t needs a 128-bit product
  bool small_b;              // b < 2^16: ainv * t fits 32 bits
  bool small_a;              // a < 2^16 - 1: binv * x (x <= a) fits 32 bits
  DivMod<U> dm_m, dm_n, dm_c, dm_a, dm_b;
  DivMod<uint64_t> dm_b64;
  DivMod<uint32_t> dm_b32;
  DivMod<uint64_t> dm_a64;
  DivMod<uint32_t> dm_a32;
  DivMod<U> dm_k, dm_nk;
  // Increments that walk row_gather / row_scatter2 along a row in steps of kRowThreads elements with adds and
  // compares instead of divisions (row_walk_*): the step mod c; (ainv * ((step / c) mod b)) mod b; the step
  // mod b; (step / b) mod m; (step * m) mod n.
  U rs_c = 0, rs_s = 0, rs_b = 0, rs_x = 0, rs_y = 0;
  U rs_step = 0;  // the step those increments are for (the row shuffle's block size)
  bool walk_c0 = true;  // C2R gather walks drop their c terms where c divides the step (kStepC0; false: never)
  TI_HOST_DEVICE bool step_c0() const { return walk_c0 && rs_c == 0; }

  CatIdx() = default;
  explicit CatIdx(const c2r::Params& p, int64_t super = 1)
      : m(static_cast<U>(p.m)), n(static_cast<U>(p.n)), c(static_cast<U>(p.c)), a(static_cast<U>(p.a)),
        b(static_cast<U>(p.b)), ainv(static_cast<U>(p.ainv)),
        binv(static_cast<U>(p.a > 1 ? c2r::mmi(p.b % p.a, p.a) : 0)), wide_b(p.b >= (int64_t{1} << 32)),
        small_b(p.b < (int64_t{1} << 16)),
        dm_m(static_cast<U>(p.m)), dm_n(static_cast<U>(p.n)), dm_c(static_cast<U>(p.c)),
        dm_a(static_cast<U>(p.a)), dm_b(static_cast<U>(p.b)), dm_b64(static_cast<uint64_t>(p.b)),
        dm_b32(static_cast<uint32_t>(p.b < (int64_t{1} << 32) ? p.b : 1)), dm_a64(static_cast<uint64_t>(p.a)) {
    small_a = p.a < (int64_t{1} << 16) - 1;
    dm_a32 = DivMod<uint32_t>(static_cast<uint32_t>(small_a ? p.a : 1));
    k = static_cast<U>(super);
    nk = static_cast<U>(p.n * super);
    dm_k = DivMod<U>(k);
    dm_nk = DivMod<U>(nk);
    set_row_step(p, kRowThreads);
  }

  // The row walks' increments for steps of B elements (host).
  void set_row_step(const c2r::Params& p, int64_t B) {
    rs_step = static_cast<U>(B);
    rs_c = static_cast<U>(B % p.c);
    rs_s = static_cast<U>(c2r::mulmod(p.ainv, (B / p.c) % p.b, p.b));
    rs_b = static_cast<U>(B % p.b);
    rs_x = static_cast<U>((B / p.b) % p.m);
    rs_y = static_cast<U>(c2r::mulmod(B % p.n, p.m % p.n, p.n));
  }

  // (ainv * (x mod b)) mod b.
  TI_HOST_DEVICE U ainv_mod_b(U x) const {
    const U t = dm_b.mod(x);
    if (small_b) return static_cast<U>(dm_b32.mod(static_cast<uint32_t>(ainv) * static_cast<uint32_t>(t)));
    if (!wide_b) return static_cast<U>(dm_b64.mod(static_cast<uint64_t>(ainv) * static_cast<uint64_t>(t)));
    return static_cast<U>(mulmod_u64(static_cast<uint64_t>(ainv), static_cast<uint64_t>(t), static_cast<uint64_t>(b)));
  }

  // Row walks (k == 1, rows longer than kRowThreads): the state at (i, j), the source column it gives, and the
  // state kRowThreads columns further along the same row. C2R (row_gather) is walked only below the last c - 1
  // rows (i + c <= m), where eq. 31's correction term never applies: there f = j + i (n - 1) grows with j.
  struct GatherWalk {
    U fr, s;  // f mod c, (ainv * ((f / c) mod b)) mod b
  };
  TI_HOST_DEVICE GatherWalk gather_walk_at(U i, U j) const {
    GatherWalk w;
    const U fc = dm_c.div(j + i * (n - 1), &w.fr);
    w.s = ainv_mod_b(fc);
    return w;
  }
  TI_HOST_DEVICE U gather_walk_src(const GatherWalk& w) const { return w.s + w.fr * b; }
  // c == 1: f mod c is always 0 and f / c never carries, so the walk is one modular add (the source is w.s).
  TI_HOST_DEVICE void gather_walk_next_c1(GatherWalk& w) const { w.s = add_mod(w.s, rs_s, b); }
  TI_HOST_DEVICE void gather_walk_next(GatherWalk& w) const {
    const bool carry = w.fr + rs_c >= c;  // f / c steps once more
    w.fr = add_mod(w.fr, rs_c, c);
    w.s = add_mod(w.s, rs_s, b);
    if (carry) w.s = add_mod(w.s, ainv, b);
  }
  struct ScatterWalk {
    U jr, x, y;  // j mod b, (i + j / b) mod m, (j m) mod n
  };
  TI_HOST_DEVICE ScatterWalk scatter_walk_at(U i, U j) const {
    ScatterWalk w;
    w.x = add_mod(i, dm_b.div(j, &w.jr), m);
    w.y = dm_n.mod(j * m);
    return w;
  }
  TI_HOST_DEVICE U scatter_walk_src(const ScatterWalk& w) const { return dm_n.mod(w.x + w.y); }
  // c == 1 (b == n): j / b == 0 along a row, so x stays i; kept here reduced mod n, the source is an add mod n.
  TI_HOST_DEVICE ScatterWalk scatter_walk_at_c1(U i, U j) const {
    ScatterWalk w;
    w.jr = j;
    w.x = dm_n.mod(i);
    w.y = dm_n.mod(j * m);
    return w;
  }
  TI_HOST_DEVICE U scatter_walk_src_c1(const ScatterWalk& w) const { return add_mod(w.x, w.y, n); }
  TI_HOST_DEVICE void scatter_walk_next_c1(ScatterWalk& w) const { w.y = add_mod(w.y, rs_y, n); }
  TI_HOST_DEVICE void scatter_walk_next(ScatterWalk& w) const {
    const bool carry = w.jr + rs_b >= b;  // j / b steps once more
    w.jr = add_mod(w.jr, rs_b, b);
    w.x = add_mod(w.x, rs_x, m);
    if (carry) w.x = add_mod(w.x, U(1), m);
    w.y = add_mod(w.y, rs_y, n);
  }

  // C2R step 2, gather form d'^-1_i(j) (eq. 31).
  TI_HOST_DEVICE U row_gather(U i, U j) const {
    U jr;
    dm_c.div(j, &jr);
    U f = j + i * (n - 1);
    if (i + c > m + jr) f += m;
    U fr;
    const U fc = dm_c.div(f, &fr);
    return ainv_mod_b(fc) + fr * b;
  }
  // R2C step 2 (inverse row shuffle), gather with d'_i(j) = ((i + j/b) mod m + j*m) mod n (eq. 24).
  TI_HOST_DEVICE U row_scatter2(U i, U j) const {
    U r;
    U x = i + dm_b.div(j, &r);
    if (x >= m) x -= m;
    const U y = dm_n.mod(j * m);
    return dm_n.mod(x + y);
  }
  // q^-1(k) = (b^-1 * floor((c - 1 + k) / c)) mod a + (((c - 1) k) mod c) * a   (eq. 34; b^-1 = mmi(b, a)).
  TI_HOST_DEVICE U q_inv(U k) const {
    if (c == 1) return mod_a(binv, k);
    U r;
    const U x = dm_c.div(c - 1 + k, &r);
    dm_c.div(k, &r);
    return mod_a(binv, x) + (r == 0 ? U(0) : c - r) * a;
  }
  // (x * y) mod a for x < a, y <= a: a 32-bit product and division where a < 2^16.
  TI_HOST_DEVICE U mod_a(U x, U y) const {
    if (small_a) return static_cast<U>(dm_a32.mod(static_cast<uint32_t>(x) * static_cast<uint32_t>(y)));
    return static_cast<U>(dm_a64.mod(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)));
  }
  // q(i) = (i*n - i/a) mod m (eq. 26 without the column term); i/a < c <= m.
  TI_HOST_DEVICE U q(U i) const {
    U r;
    const U ia = dm_a.div(i, &r);
    const U v = dm_m.mod(i * n);
    return v >= ia ? v - ia : v + m - ia;
  }
};

// ---- column maps of the four column steps (row index of the source, or of the destination for scatter) ----
// A column map is evaluated per (row i, column j) with per-column data prepared by `column(j)`.
enum ColStep : int {
  kPreRotate = 0,    // C2R step 1, gather: src = (i + j/b) mod m                       (eq. 23)
  kColShuffle = 1,   // C2R step 3, gather: src = (q(i) + j) mod m                      (eq. 26)
  kInvColShuffle = 2,// R2C step 1, scatter: dst = (q(i) + j) mod m
  kPostRotate = 3,   // R2C step 4, gather: src = (i - j/b) mod m                       (eq. 36)
  kNegColumn = 4,    // universal engine only: the amount (-j) mod m (a right rotation by j)
};

template <typename U>
TI_DEVICE U col_amount(const CatIdx<U>& P, int step, U j) {
  // The per-column term, already reduced mod m.
  U r;
  if (step == kPreRotate) return P.dm_b.div(j, &r);                 // j/b < c <= m
  if (step == kPostRotate) {
    const U s = P.dm_b.div(j, &r);
    return s == 0 ? U(0) : P.m - s;
  }
  const U jm = P.dm_m.mod(j);
  if (step == kNegColumn) return jm == 0 ? U(0) : P.m - jm;
  return jm;
}

// ---- row shuffle in shared memory: rows_per_block whole rows per block ----------------------------------
// Gather out(i, j) = in(i, src(i, j)) with src = row_gather (C2R) or row_scatter2 (R2C).
constexpr int kSlotThreads = 1024;
constexpr int kColThreads = 1024;

// Shuffles cnt elements of whole rows staged in sm (row stride nk; the first is matrix row i0) and writes each
// result: kRotOut == false to out[t], t its flat index in the staged rows (out: the rows in place); kRotOut (R2C,
// one matrix, k == 1) row i, column j to out[((i + j / b) mod m) * nk + j], the R2C post-rotation fused in (out:
// the matrix). kC1: the caller knows c == gcd(m, n) == 1, and the row walks drop their c terms. kStepC0 (C2R, c > 1):
// the caller knows that c divides the walk's step (P.step_c0(), e.g. gcd 2, 4, 8 with 512 or 1024 threads): along a
// row a thread's f mod c never changes and f / c never carries, so the gather walk is kC1's one modular add plus
// the thread's fixed (f mod c) * b. Nsight Compute on an H200 (12154 x 3938 fp32, gcd 2, fused C2R): 2.7
// instructions per element with the general walk against 1.4 in the gcd 1 kernel, bound by instruction issue.
template <typename T, typename U, bool kC2R, bool kC1 = false, bool kRotOut = false, bool kStepC0 = false>
TI_DEVICE void shuffle_staged_rows(const T* sm, const CatIdx<U>& P, U i0, U cnt, T* __restrict__ out) {
  static_assert(!(kC2R && kRotOut), "the rotated store is R2C's post-rotation");
  static_assert(!kStepC0 || (kC2R && !kC1), "kStepC0: the C2R gather walk with c > 1");
  constexpr int K = sizeof(T) <= 4 ? 8 : static_cast<int>(32 / sizeof(T));  // 32 bytes in flight per thread
  const U nk = P.nk, m = P.m;
  if (P.k == 1 && nk > static_cast<U>(blockDim.x) && blockDim.x == P.rs_step) {
    // Rows longer than the block: thread x visits columns x, x + B, ... of row 0, then of row 1, ...; within a
    // row the source column follows by row_walk increments, and a new row restarts the walk.
    U r = 0, j = threadIdx.x, i = i0;
    const U B = static_cast<U>(blockDim.x);
    bool tail = kC2R && !kC1 && i + P.c > m;  // c == 1: i + 1 <= m always
    typename CatIdx<U>::GatherWalk gw{};
    typename CatIdx<U>::ScatterWalk sw{};
    U frb = 0;  // kStepC0: (f mod c) * b, fixed along the row
    if (kC2R) {
      if (!tail) {
        gw = P.gather_walk_at(i, j);
        if (kStepC0) frb = gw.fr * P.b;
      }
    } else {
      sw = kC1 ? P.scatter_walk_at_c1(i, j) : P.scatter_walk_at(i, j);
    }
    for (U t0 = threadIdx.x; t0 < cnt; t0 += blockDim.x * K) {
      T v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const U t = t0 + static_cast<U>(s) * blockDim.x;
        if (t < cnt) {
          U src;
          if (kC2R) {
            src = kC1 ? gw.s : (tail ? P.row_gather(i, j) : (kStepC0 ? gw.s + frb : P.gather_walk_src(gw)));
          } else {
            src = kC1 ? P.scatter_walk_src_c1(sw) : P.scatter_walk_src(sw);
          }
          v[s] = sm[r * nk + src];
          // The rotated store goes at once: holding its offsets for the store loop below spilled registers.
          if constexpr (kRotOut) out[(kC1 ? i : sw.x) * nk + j] = v[s];
        }
        j += B;
        if (j >= nk) {  // next row (B < nk: exactly one)
          j -= nk;
          ++r;
          if (++i == m) i = 0;
          if (kC2R) {
            tail = !kC1 && i + P.c > m;
            if (!tail) {
              gw = P.gather_walk_at(i, j);
              if (kStepC0) frb = gw.fr * P.b;
            }
          } else {
            sw = kC1 ? P.scatter_walk_at_c1(i, j) : P.scatter_walk_at(i, j);
          }
        } else if (kC2R) {
          if (kC1 || kStepC0) {
            P.gather_walk_next_c1(gw);  // kStepC0: gather_walk_next with rs_c == 0 (no carry, f mod c fixed)
          } else if (!tail) {
            P.gather_walk_next(gw);
          }
        } else if (kC1) {
          P.scatter_walk_next_c1(sw);
        } else {
          P.scatter_walk_next(sw);
        }
      }
      if constexpr (!kRotOut) {
#pragma unroll
        for (int s = 0; s < K; ++s) {
          const U t = t0 + static_cast<U>(s) * blockDim.x;
          if (t < cnt) out[t] = v[s];
        }
      }
    }
    return;
  }
  for (U t0 = threadIdx.x; t0 < cnt; t0 += blockDim.x * K) {
    T v[K];
#pragma unroll
    for (int s = 0; s < K; ++s) {
      const U t = t0 + static_cast<U>(s) * blockDim.x;
      if (t < cnt) {
        U e, sub;
        const U r = P.dm_nk.div(t, &e);
        const U j = P.dm_k.div(e, &sub);
        U i = i0 + r;
        while (i >= m) i -= m;  // a block's rows span at most a few matrices
        const U src = kC2R ? P.row_gather(i, j) : P.row_scatter2(i, j);
        v[s] = sm[r * nk + src * P.k + sub];
        if constexpr (kRotOut) {
          U rem;
          const U x = i + P.dm_b.div(j, &rem);  // < 2m
          out[(x >= m ? x - m : x) * nk + j] = v[s];
        }
      }
    }
    if constexpr (!kRotOut) {
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const U t = t0 + static_cast<U>(s) * blockDim.x;
        if (t < cnt) out[t] = v[s];
      }
    }
  }
}

// The C2R shuffle of shuffle_staged_rows with c > 1, its gather walk without the c terms where c divides the walk's
// step (kStepC0), else the general walk.
template <typename T, typename U>
TI_DEVICE void shuffle_staged_rows_c2r(const T* sm, const CatIdx<U>& P, U i0, U cnt, T* __restrict__ out) {
  if (P.step_c0()) {
    shuffle_staged_rows<T, U, true, false, false, true>(sm, P, i0, cnt, out);
  } else {
    shuffle_staged_rows<T, U, true>(sm, P, i0, cnt, out);
  }
}

// Stages rows r0, r0 + 1, ... of one matrix (cnt elements, whole rows) into sm rotated: sm[t] = row
// (r0 + t / nk + j / b) mod m, column j = t mod nk (the C2R pre-rotation, eq. 23). Copies through copy_async:
// copy_async_wait() and a block barrier before sm is read.
template <typename T, typename U>
TI_DEVICE void stage_rows_rotated(T* sm, const T* __restrict__ base, const CatIdx<U>& P, U r0, U cnt) {
  const U nk = P.nk, m = P.m;
  if (nk >= static_cast<U>(blockDim.x)) {
    // Rows at least a block long: row by row, thread x takes columns x, x + B, ...; the source row
    // r0 + r + j / b moves on by whole groups of b columns, followed with adds instead of the two divisions per
    // element below.
    const U B = static_cast<U>(blockDim.x), b = P.b;
    U jr0, step_r;
    const U g0 = P.dm_b.div(static_cast<U>(threadIdx.x), &jr0);
    const U step_g = P.dm_b.div(B, &step_r);
    for (U r = 0, t = 0; t < cnt; ++r, t += nk) {
      U g = g0, jr = jr0;
      for (U j = threadIdx.x; j < nk; j += B) {
        const U i = r0 + r + g;  // < 2m
        copy_async(sm + t + j, base + static_cast<int64_t>(i >= m ? i - m : i) * nk + j);
        jr += step_r;  // g, jr: (j + B) / b and (j + B) mod b
        g += step_g;
        if (jr >= b) {
          jr -= b;
          ++g;
        }
      }
    }
    return;
  }
  for (U t = threadIdx.x; t < cnt; t += blockDim.x) {
    U j, rem;
    const U r = P.dm_nk.div(t, &j);
    const U i = r0 + r + P.dm_b.div(j, &rem);  // < 2m
    copy_async(sm + t, base + static_cast<int64_t>(i >= m ? i - m : i) * nk + j);
  }
}

// Copies len contiguous elements src[0, len) to dst[0, len) (shared memory) with copy_async, as thread `tid` of
// `nt` (nt >= 16): V-sized copies (dst and src agree mod sizeof(V), the caller checked), the elements before the
// first whole V and after the last one by one.
template <typename V, typename T, typename U>
TI_DEVICE void copy_run_units(T* dst, const T* __restrict__ src, U len, U tid, U nt) {
  constexpr U A = static_cast<U>(sizeof(V) / sizeof(T));
  const U mis = static_cast<U>((reinterpret_cast<uintptr_t>(src) / sizeof(T)) % A);
  const U head = (A - mis) % A < len ? (A - mis) % A : len;
  const U nvec = (len - head) / A;
  const U tail = head + nvec * A;
  if (tid < head) copy_async(dst + tid, src + tid);
  if (tid < len - tail) copy_async(dst + tail + tid, src + tail + tid);
  const V* sv = reinterpret_cast<const V*>(src + head);
  V* dv = reinterpret_cast<V*>(dst + head);
  for (U x = tid; x < nvec; x += nt) copy_async(dv + x, sv + x);
}

// copy_run_units with the widest copy the run's addresses allow: 16 bytes where dst and src agree mod 16, else 8
// or 4 bytes where they agree mod those, else single elements.
template <typename T, typename U>
TI_DEVICE void copy_run_async(T* dst, const T* __restrict__ src, U len, U tid, U nt) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(dst) ^ reinterpret_cast<uintptr_t>(src);
  if constexpr (sizeof(T) < 16) {
    if ((x & 15u) == 0) return copy_run_units<uint4, T, U>(dst, src, len, tid, nt);
  }
  if constexpr (sizeof(T) < 8) {
    if ((x & 7u) == 0) return copy_run_units<uint2, T, U>(dst, src, len, tid, nt);
  }
  if constexpr (sizeof(T) < 4) {
    if ((x & 3u) == 0) return copy_run_units<uint32_t, T, U>(dst, src, len, tid, nt);
  }
  for (U t = tid; t < len; t += nt) copy_async(dst + t, src + t);
}

// stage_rows_rotated by runs: staged row r is c runs of b columns, run g a copy of row (r0 + r + g) mod m's
// columns [g b, (g + 1) b). Each run goes to a group of warps (W / runs warps where the block's W warps outnumber
// the runs, else one, taking runs in turn) and moves with copy_run_async: 16-byte copies where the run's shared and
// global addresses agree mod 16 (every run where n * sizeof(T) is a multiple of 16), else 8 or 4 bytes, instead of
// one copy per element. Same layout as stage_rows_rotated; copy_async_wait() and a block barrier before sm is read.
template <typename T, typename U>
TI_DEVICE void stage_rows_rotated_runs(T* sm, const T* __restrict__ base, const CatIdx<U>& P, U r0, U cnt) {
  const U nk = P.nk, m = P.m, b = P.b, c = P.c;
  U rem;
  const U runs = P.dm_nk.div(cnt, &rem) * c;
  const U W = static_cast<U>(blockDim.x) / kWarpSize, w = static_cast<U>(threadIdx.x) / kWarpSize;
  const U per = W > runs ? W / runs : 1;  // warps per run
  const U groups = W / per;
  const U grp = w / per;
  if (grp >= groups) return;
  const U tid = (w - grp * per) * kWarpSize + static_cast<U>(threadIdx.x) % kWarpSize;
  for (U q = grp; q < runs; q += groups) {
    U g;
    const U r = P.dm_c.div(q, &g);
    U i = r0 + r + g;  // < 2m
    if (i >= m) i -= m;
    copy_run_async<T, U>(sm + r * nk + g * b, base + static_cast<int64_t>(i) * nk + g * b, b, tid, per * kWarpSize);
  }
}

// Stages cnt contiguous elements g[0, cnt) into shared memory with 16-byte copies: the copy starts at
// sm + (address of g mod 16) / sizeof(T), so that each element keeps its global address mod 16, and a few
// single elements go at either end (copy_run_units). sm is 16-byte aligned with c2r::staged_bytes(cnt * sizeof(T))
// bytes. Returns where the copy starts. Copies through copy_async: copy_async_wait() and a block barrier before it
// is read.
// The fp32 row shuffle was bound by instruction issue (Nsight Compute on an H200: SM throughput 76%, DRAM 37%),
// and element copies took about a third of its instructions.
template <typename T, typename U>
TI_DEVICE T* stage_contiguous(T* sm, const T* __restrict__ g, U cnt) {
  constexpr int A = sizeof(T) >= 16 ? 1 : static_cast<int>(16 / sizeof(T));  // elements per 16 bytes
  T* s = sm + (reinterpret_cast<uintptr_t>(g) / sizeof(T)) % A;
  copy_run_units<uint4, T, U>(s, g, cnt, static_cast<U>(threadIdx.x), static_cast<U>(blockDim.x));
  return s;
}

// kC1: c == 1 (the launcher's choice; the shuffle's row walks get simpler).
template <typename T, typename U, bool kC2R, bool kC1, int kMinBlocks = 0>
__global__ void TI_ROW_BOUNDS(kMinBlocks) row_shuffle_smem_kernel(T* __restrict__ base, CatIdx<U> P,
                                                                       int64_t total_rows, int rows_per_block) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  const U nk = P.nk;
  for (int64_t row0 = static_cast<int64_t>(blockIdx.x) * rows_per_block; row0 < total_rows;
       row0 += static_cast<int64_t>(gridDim.x) * rows_per_block) {
    const int rows = static_cast<int>(total_rows - row0 < rows_per_block ? total_rows - row0 : rows_per_block);
    const U cnt = static_cast<U>(rows) * nk;
    T* g = base + row0 * static_cast<int64_t>(nk);  // the block's rows are contiguous
    const T* staged = stage_contiguous<T, U>(sm, g, cnt);
    copy_async_wait();
    __syncthreads();
    const int64_t mat0 = row0 / static_cast<int64_t>(P.m);
    const U i0 = static_cast<U>(row0 - mat0 * static_cast<int64_t>(P.m));
    if constexpr (kC2R && !kC1) {
      shuffle_staged_rows_c2r<T, U>(staged, P, i0, cnt, g);
    } else {
      shuffle_staged_rows<T, U, kC2R, kC1>(staged, P, i0, cnt, g);
    }
    __syncthreads();
  }
}

// ---- row shuffle fused with the C2R pre-rotation or the R2C post-rotation (c > 1, one matrix) -------------
// C2R: a band of rows is staged already rotated (row i of the band holds in((i + j/b) mod m, j)) and shuffled
// as usual. R2C: the band is staged as is, and each shuffled element of row i, column j goes to row
// (i + j/b) mod m. Either way the rotation costs no pass of its own, but a band reaches up to c - 1 rows past
// its end (C2R reads them, R2C writes them), so the order of the bands matters. Block k of G owns the chunk of
// rows [k m / G, (k+1) m / G): a head of head_rows >= c - 1 rows, then bands of band_rows rows. It stages its
// head first, into a buffer of its own, then
//   C2R: runs the other bands in increasing order (a band's extra rows come after it, not yet written); once
//     the last band is staged (it read the next chunk's head rows) it sets flags[k]; it writes the head after
//     flags[k - 1] (the previous chunk has read the head's rows);
//   R2C: sets flags[k] (its head is staged), runs the other bands in decreasing order (a band's extra rows come
//     after it, already staged); before writing its last band (into the next chunk's head) it waits for
//     flags[k + 1]; the head goes last.
// Chunks wrap around (the matrix's last rows reach rows 0..c-2). Every block must be resident (cooperative
// launch): a block may wait for its neighbour. flags: G words, zero before the launch; G <= m / head_rows. The
// schedule is checked as a Python model on random interleavings (tests/test_fused_rotation_schedule.py).
TI_DEVICE void chunk_flag_set(unsigned* flag) {
  __syncthreads();  // every read this block's flag vouches for has returned
  if (threadIdx.x == 0) {
    __threadfence();
    atomicExch(flag, 1u);
  }
}

TI_DEVICE void chunk_flag_wait(unsigned* flag) {
  if (threadIdx.x == 0) {
    while (atomicAdd(flag, 0u) == 0u) {
    }
    __threadfence();
  }
  __syncthreads();
}

// stage_runs (the plan's fuse_runs): C2R stages by runs (stage_rows_rotated_runs), else element by element. R2C
// ignores it.
// band_bufs == 2: two band buffers; the next band's copies (copy_async) are in flight while the block shuffles
// the current one. Where a block's head and band fill more than half an SM's shared memory, one block runs per SM
// and, with one buffer, nothing else overlaps its staging. The next band's rows are disjoint from the rows the
// current band writes (C2R: the band's own rows, and the next band starts past them; R2C: the band's rows and
// the c - 1 after it, and the next band comes before it), so the schedule above holds.
template <typename T, typename U, bool kC2R, int kMinBlocks = 0>
__global__ void TI_ROW_BOUNDS(kMinBlocks) row_rotate_fused_kernel(T* __restrict__ base, CatIdx<U> P,
                                                                         uint32_t head_rows, uint32_t band_rows,
                                                                         uint32_t band_bufs,
                                                                         unsigned* __restrict__ flags,
                                                                         bool stage_runs) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Each buffer 16-byte aligned with room for stage_contiguous.
  T* head = reinterpret_cast<T*>(smem_raw);
  T* work[2];
  work[0] = head + c2r::staged_bytes(static_cast<int64_t>(head_rows) * P.nk * sizeof(T)) / sizeof(T);
  work[1] = work[0] + c2r::staged_bytes(static_cast<int64_t>(band_rows) * P.nk * sizeof(T)) / sizeof(T);
  const bool two = band_bufs > 1;
  const U m = P.m, nk = P.nk;
  const uint32_t G = gridDim.x, k = blockIdx.x;
  const U r_lo = static_cast<U>(static_cast<uint64_t>(k) * m / G);
  const U r_hi = static_cast<U>(static_cast<uint64_t>(k + 1) * m / G);
  const U h1 = r_lo + head_rows;  // <= r_hi
  const U nbands = (r_hi - h1 + band_rows - 1) / band_rows;
  auto rows_at = [&](U r0) { return base + static_cast<int64_t>(r0) * nk; };
  auto band_r0 = [&](U bi) { return h1 + bi * band_rows; };
  auto band_cnt = [&](U bi) { return (r_hi - band_r0(bi) < band_rows ? r_hi - band_r0(bi) : band_rows) * nk; };
  const U hcnt = static_cast<U>(head_rows) * nk;
  // C2R stages rows rotated (by runs of b columns where stage_runs, else element by element), R2C as they are
  // (16-byte copies).
  auto stage = [&](T* sm, U r0, U cnt) {
    if (stage_runs) {
      stage_rows_rotated_runs<T, U>(sm, base, P, r0, cnt);
    } else {
      stage_rows_rotated<T, U>(sm, base, P, r0, cnt);
    }
  };
  auto shuffle_c2r = [&](const T* sm, U r0, U cnt) { shuffle_staged_rows_c2r<T, U>(sm, P, r0, cnt, rows_at(r0)); };
  if (kC2R) {
    stage(head, r_lo, hcnt);
    if (two && nbands > 0) stage(work[0], band_r0(0), band_cnt(0));
    if (nbands == 0) {
      copy_async_wait();
      chunk_flag_set(flags + k);
    }
    for (U bi = 0; bi < nbands; ++bi) {
      T* w = work[two ? (bi & 1) : 0];
      if (!two) {
        __syncthreads();  // the previous band's shuffle is done with the buffer
        stage(w, band_r0(bi), band_cnt(bi));
      }
      copy_async_wait();
      __syncthreads();  // band bi (and the head) staged; two: every thread is done with band bi - 1's buffer
      if (bi + 1 == nbands) chunk_flag_set(flags + k);
      if (two && bi + 1 < nbands) {
        stage(work[(bi + 1) & 1], band_r0(bi + 1), band_cnt(bi + 1));
      }
      shuffle_c2r(w, band_r0(bi), band_cnt(bi));
    }
    chunk_flag_wait(flags + (k == 0 ? G - 1 : k - 1));
    shuffle_c2r(head, r_lo, hcnt);
  } else {
    const T* hs = stage_contiguous<T, U>(head, rows_at(r_lo), hcnt);
    copy_async_wait();
    chunk_flag_set(flags + k);
    const T* next = nullptr;
    if (two && nbands > 0) {
      next = stage_contiguous<T, U>(work[(nbands - 1) & 1], rows_at(band_r0(nbands - 1)), band_cnt(nbands - 1));
    }
    for (U bi = nbands; bi-- > 0;) {
      const T* ws = next;
      if (!two) {
        __syncthreads();  // the previous band's shuffle is done with the buffer
        ws = stage_contiguous<T, U>(work[0], rows_at(band_r0(bi)), band_cnt(bi));
      }
      copy_async_wait();
      __syncthreads();  // band bi staged; two: every thread is done with band bi + 1's buffer
      if (two && bi > 0) {
        next = stage_contiguous<T, U>(work[(bi - 1) & 1], rows_at(band_r0(bi - 1)), band_cnt(bi - 1));
      }
      if (bi + 1 == nbands) chunk_flag_wait(flags + (k + 1 == G ? 0 : k + 1));
      shuffle_staged_rows<T, U, false, false, true>(ws, P, band_r0(bi), band_cnt(bi), base);
    }
    if (nbands == 0) chunk_flag_wait(flags + (k + 1 == G ? 0 : k + 1));
    shuffle_staged_rows<T, U, false, false, true>(hs, P, r_lo, hcnt, base);
  }
}

// ---- row shuffle through a global slot per block (rows longer than shared memory) ------------------------
template <typename T, typename U, bool kC2R>
__global__ void __launch_bounds__(kSlotThreads) row_shuffle_gmem_kernel(T* __restrict__ base, T* __restrict__ slots,
                                                                        CatIdx<U> P, int64_t total_rows) {
  const U nk = P.nk, m = P.m;
  T* slot = slots + static_cast<int64_t>(blockIdx.x) * nk;
  for (int64_t row = blockIdx.x; row < total_rows; row += gridDim.x) {
    T* g = base + row * static_cast<int64_t>(nk);
    for (U e = threadIdx.x; e < nk; e += blockDim.x) slot[e] = g[e];
    __syncthreads();
    const U i = static_cast<U>(row % static_cast<int64_t>(m));
    for (U e = threadIdx.x; e < nk; e += blockDim.x) {
      U sub;
      const U j = P.dm_k.div(e, &sub);
      const U src = kC2R ? P.row_gather(i, j) : P.row_scatter2(i, j);
      g[e] = slot[src * P.k + sub];
    }
    __syncthreads();
  }
}

// ---- universal column rotation: two reflections ---------------------------------------------------------
// Reflecting column j about C_j (row i <-> (C_j - i) mod m) is an involution, so every pair is swapped by the
// one thread that owns its smaller row: fully parallel, in place, no scratch. A left rotation by s_j
// (out(i) = in(i + s_j)) is the reflection about s_j followed by the reflection about 0.
// amount_mode: 0 = about 0; else the column's rotation amount for `step`.
template <typename T, typename U>
__global__ void __launch_bounds__(256) reflect_kernel(T* __restrict__ base, CatIdx<U> P, int step, bool about_zero, int64_t batch) {
  const U m = P.m, n = P.nk;  // element columns
  const int64_t mn = static_cast<int64_t>(m) * n;
  const int64_t total = mn * batch;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t k = e / mn;
    const U off = static_cast<U>(e - k * mn);
    U j;
    const U i = P.dm_nk.div(off, &j);
    U sub;
    const U C = about_zero ? U(0) : col_amount(P, step, P.dm_k.div(j, &sub));
    const U p = C >= i ? C - i : C + m - i;
    if (i < p) {
      T* A = base + k * mn;
      const T x = A[static_cast<int64_t>(i) * n + j];
      const T y = A[static_cast<int64_t>(p) * n + j];
      A[static_cast<int64_t>(i) * n + j] = y;
      A[static_cast<int64_t>(p) * n + j] = x;
    }
  }
}

// ---- cycle leaders of q, on the device ------------------------------------------------------------------
// i leads its cycle when it is the smallest index on it: walk from i until the walk returns (leader) or meets a
// smaller index (not). Expected total work O(m log m); no host round trip. bitmap must be zeroed first.
constexpr int kLeaderThreads = 256;  // its launch size; no bound: one changes codegen (see square_swap_kernel)
template <typename U>
__global__ void q_leaders_kernel(CatIdx<U> P, uint32_t* __restrict__ bitmap) {
  for (U i = blockIdx.x * blockDim.x + threadIdx.x; i < P.m; i += gridDim.x * blockDim.x) {
    U j = P.q(i);
    if (j == i) continue;
    while (j > i) j = P.q(j);
    if (j == i) atomicOr(bitmap + (i >> 5), 1u << (i & 31));
  }
}

// ---- row permutation by q on row segments, following cycles from the leader bitmap -----------------------
// gather (C2R): out[i] = in[q(i)]; scatter (R2C): out[q(i)] = in[i]. A block owns (leader word, column segment,
// matrix) tasks; each thread one column of the segment. Loads along the cycle are issued K at a time, so the
// chain costs one memory latency per K steps.
template <typename T, typename U, bool kGather>
__global__ void __launch_bounds__(256) q_cycles_kernel(T* __restrict__ base, CatIdx<U> P, const uint32_t* __restrict__ bitmap,
                                int64_t words, int64_t batch) {
  const U m = P.m, n = P.nk;  // whole rows of n * k elements move
  const int64_t segs = (static_cast<int64_t>(n) + blockDim.x - 1) / blockDim.x;
  const int64_t tasks = words * segs * batch;
  constexpr int K = 8;
  for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
    const int64_t word = t % words;
    const int64_t rest = t / words;
    const int64_t seg = rest % segs;
    const int64_t k = rest / segs;
    const U j = static_cast<U>(seg * blockDim.x + threadIdx.x);
    const bool active = j < n;
    T* A = base + k * static_cast<int64_t>(m) * n + (active ? j : 0);
    for (uint32_t bits = bitmap[word]; bits != 0; bits &= bits - 1) {
      const U L = static_cast<U>(word * 32 + __ffs(static_cast<int>(bits)) - 1);
      // Walk the cycle L, q(L), q(q(L)), ... K rows at a time.
      U cur = L;
      T carry = active ? A[static_cast<int64_t>(L) * n] : T{};
      bool done = false;
      while (!done) {
        U idx[K];
        T val[K];
        int cnt = 0;
        U x = cur;
#pragma unroll
        for (int s = 0; s < K; ++s) {
          if (!done) {
            x = P.q(x);
            if (x == L) {
              done = true;
            } else {
              idx[s] = x;
              cnt = s + 1;
            }
          }
        }
#pragma unroll
        for (int s = 0; s < K; ++s) {
          if (s < cnt && active) val[s] = A[static_cast<int64_t>(idx[s]) * n];
        }
        if (kGather) {
          // out[cur] = in[idx0], out[idx0] = in[idx1], ...
#pragma unroll
          for (int s = 0; s < K; ++s) {
            if (s < cnt && active) A[static_cast<int64_t>(s == 0 ? cur : idx[s - 1]) * n] = val[s];
          }
          if (cnt > 0) cur = idx[cnt - 1];
          if (done && active) A[static_cast<int64_t>(cur) * n] = carry;  // the leader's old row closes the cycle
        } else {
          // out[idx0] = in[cur] (carried), out[idx1] = in[idx0], ...
#pragma unroll
          for (int s = 0; s < K; ++s) {
            if (s < cnt && active) {
              A[static_cast<int64_t>(idx[s]) * n] = carry;
              carry = val[s];
            }
          }
          if (cnt > 0) cur = idx[cnt - 1];
          if (done && active) A[static_cast<int64_t>(L) * n] = carry;
        }
      }
    }
  }
}

}  // namespace kernels
}  // namespace torch_inplace

#ifdef TORCH_INPLACE_HIP_CHECK
namespace torch_inplace {
namespace kernels {
#define TI_INST_CAT(T, U)                                                                              \
  template __global__ void row_shuffle_smem_kernel<T, U, true, false>(T*, CatIdx<U>, int64_t, int);    \
  template __global__ void row_shuffle_smem_kernel<T, U, false, false>(T*, CatIdx<U>, int64_t, int);   \
  template __global__ void row_shuffle_smem_kernel<T, U, true, true>(T*, CatIdx<U>, int64_t, int);     \
  template __global__ void row_shuffle_smem_kernel<T, U, false, true>(T*, CatIdx<U>, int64_t, int);    \
  template __global__ void row_rotate_fused_kernel<T, U, true>(T*, CatIdx<U>, uint32_t, uint32_t,     \
                                                                uint32_t, unsigned*, bool);            \
  template __global__ void row_rotate_fused_kernel<T, U, false>(T*, CatIdx<U>, uint32_t, uint32_t,    \
                                                                 uint32_t, unsigned*, bool);           \
  template __global__ void row_shuffle_gmem_kernel<T, U, true>(T*, T*, CatIdx<U>, int64_t);            \
  template __global__ void row_shuffle_gmem_kernel<T, U, false>(T*, T*, CatIdx<U>, int64_t);           \
  template __global__ void reflect_kernel<T, U>(T*, CatIdx<U>, int, bool, int64_t);                    \
  template __global__ void q_cycles_kernel<T, U, true>(T*, CatIdx<U>, const uint32_t*, int64_t, int64_t); \
  template __global__ void q_cycles_kernel<T, U, false>(T*, CatIdx<U>, const uint32_t*, int64_t, int64_t);
#define TI_INST_CAT_U(T) TI_INST_CAT(T, uint32_t) TI_INST_CAT(T, uint64_t)
TI_INST_CAT_U(uint8_t)
TI_INST_CAT_U(uint16_t)
TI_INST_CAT_U(uint32_t)
TI_INST_CAT_U(uint64_t)
TI_INST_CAT_U(Bytes16)
template __global__ void q_leaders_kernel<uint32_t>(CatIdx<uint32_t>, uint32_t*);
template __global__ void q_leaders_kernel<uint64_t>(CatIdx<uint64_t>, uint32_t*);
#undef TI_INST_CAT_U
#undef TI_INST_CAT
}  // namespace kernels
}  // namespace torch_inplace
#endif
