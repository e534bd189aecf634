// CPU engine of _transpose_data_: Catanzaro's decomposition (paper 003 sec. 5.1) parallelised with
// at::parallel_for, Karlsson's three-stage tiled algorithm where both sides have divisors of a good block size (after
// a cut of a few rows or columns where they have none), a skinny variant for AoS <-> SoA shapes, and tile-pair swaps
// for squares.
//
// The decomposition works on an m x n row-major view (plan.c2r). Rows are shuffled through a per-thread buffer
// of n elements. Column steps are rotations (column j moves up by s_j rows) and one row permutation q shared by
// all columns. Both handle columns in panels of `plan.panel` columns so that every memory access touches
// whole cache lines: a rotation is a coarse rotation of the panel (juggling, one pass) plus a fine sweep of
// small per-column amounts (one pass, the first rows saved); q is applied to whole row segments by cycle
// following from precomputed cycle leaders. The skinny path (AoS <-> SoA) is the tiled sequence 2.1 of
// Gomez-Luna/Sung with a Karlsson cut for the remainder (see plan::CpuSkinnyLayout). The cut's and the skinny path's
// ordered row moves run across the threads in waves (move_rows), and the tiled block stage splits long cycles into
// segments (block_transpose).
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/checks.h"
#include "core/workspace.h"

namespace torch_inplace {
namespace {

// 8-byte aligned (its members'), not 16: numpy's complex128 arrays, which torch.from_numpy shares, are only
// 8-byte aligned, and a 16-byte alignment would let the compiler use aligned 16-byte moves on them.
struct Bytes16 {
  uint64_t lo, hi;
};

template <int S>
struct ElemOf;
template <> struct ElemOf<1> { using type = uint8_t; };
template <> struct ElemOf<2> { using type = uint16_t; };
template <> struct ElemOf<4> { using type = uint32_t; };
template <> struct ElemOf<8> { using type = uint64_t; };
template <> struct ElemOf<16> { using type = Bytes16; };

// The scratch region of the running thread. Inside a parallel region ATen runs a nested at::parallel_for inline and
// reports thread number 0 within it (ThreadIdGuard(0)), so a batch task that runs a whole matrix, nested loops
// included, records its own worker's number here first (BatchSlot) and every scratch lookup honours it.
thread_local int tls_batch_slot = -1;
inline int64_t scratch_slot() { return tls_batch_slot >= 0 ? tls_batch_slot : at::get_thread_num(); }

// Marks the current thread as running one batch task in scratch region `slot` until the guard ends.
class BatchSlot {
 public:
  explicit BatchSlot(int slot) : old_(tls_batch_slot) { tls_batch_slot = slot; }
  ~BatchSlot() { tls_batch_slot = old_; }
  BatchSlot(const BatchSlot&) = delete;
  BatchSlot& operator=(const BatchSlot&) = delete;

 private:
  int old_;
};

// move_rows: moves under kParallelMoveBytes, or with a buffer under kMoveBufferBytes, stay on one thread.
constexpr int64_t kParallelMoveBytes = int64_t{1} << 20, kMoveBufferBytes = int64_t{16} << 10;

inline bool bit_get(const uint64_t* w, int64_t i) { return (w[i >> 6] >> (i & 63)) & 1u; }
inline void bit_set(uint64_t* w, int64_t i) { w[i >> 6] |= uint64_t{1} << (i & 63); }

template <typename T>
class CpuTranspose {
 public:
  CpuTranspose(const plan::Plan& plan, uint8_t* scratch)
      : plan_(plan), p_(plan.c2r), m_(plan.c2r.m), n_(plan.c2r.n), scratch_(scratch) {
    if (plan.algo == plan::Algo::Square || plan.algo == plan::Algo::Noop) return;
    if (plan.algo == plan::Algo::OnChip) {
      const plan::Problem& pr = plan.problem;
      oc_ = plan::cpu_onchip_layout(pr.batch, pr.rows, pr.cols, sizeof(T), plan.threads);
      return;
    }
    if (plan.algo == plan::Algo::Tiled32) {
      const plan::Problem& pr = plan.problem;
      tl_ = plan::cpu_tiled_layout(pr.rows, pr.cols, plan.tile_m, plan.tile_n, sizeof(T), plan.threads);
      prepare_block_cycles();
      return;
    }
    if (plan.algo == plan::Algo::Cut) {
      const plan::Problem& pr = plan.problem;
      cut_ = plan::cpu_cut_layout(pr.rows, pr.cols, plan.cut_rows, plan.cut_cols, plan.tile_m, plan.tile_n, sizeof(T),
                                  plan.threads);
      tl_ = cut_.tiled;
      prepare_block_cycles();
      move_chunks_.resize(at::get_num_threads());
      return;
    }
    if (plan.algo == plan::Algo::Skinny) {
      const plan::Problem& pr = plan.problem;
      sk_ = plan::cpu_skinny_layout(std::max(pr.rows, pr.cols), std::min(pr.rows, pr.cols), sizeof(T), plan.threads,
                                    plan.tile_m);
      if (pr.rows > pr.cols) {
        find_super_leaders(sk_.Mp, sk_.F);
      } else {
        find_super_leaders(sk_.F, sk_.Mp);
      }
      move_chunks_.resize(at::get_num_threads());
      return;
    }
    layout_ = plan::cpu_scratch_layout(m_, n_, sizeof(T), plan.threads, plan.panel);
    visited_ = reinterpret_cast<uint64_t*>(scratch_ + layout_.visited_off);
    leaders_ = reinterpret_cast<uint64_t*>(scratch_ + layout_.leaders_off);
    find_cycle_leaders();
  }

  // move_rows: one thread's chunk of a wave, destination [c0, c1), its halo [h0, h1) at buf + off.
  struct Chunk {
    int64_t c0, c1, h0, h1, off;
  };
  // block_transpose: steps [k0, k1) of the cycle from leader, in thread region `slot`; p0 = its position k0.
  struct Segment {
    int64_t leader, k0, k1, slot, next, p0;
  };

  // Whether matrices of a batch may run concurrently (each then runs its steps on one thread): not for the
  // skinny path, whose visited bitmap and remainder block are shared.
  bool batch_parallel_ok() const { return plan_.algo != plan::Algo::Skinny && plan_.algo != plan::Algo::Cut; }
  // Whether a batch of at least as many matrices as threads runs a matrix per task whatever their size: the tiled
  // path's scratch is all per thread, and a matrix per thread keeps its three passes in that core's caches.
  bool batch_parallel_any_size() const { return plan_.algo == plan::Algo::Tiled32; }

  void run(T* A) const {
    switch (plan_.algo) {
      case plan::Algo::Square: return square(A, plan_.problem.rows);
      case plan::Algo::C2R: return c2r(A);
      case plan::Algo::R2C: return r2c(A);
      case plan::Algo::Skinny: return skinny(A, plan_.problem.rows > plan_.problem.cols);
      case plan::Algo::Tiled32: return tiled(A);
      case plan::Algo::Cut: return cut(A);
      default: TORCH_CHECK(false, "transpose_: CPU engine got unsupported plan ", plan::algo_name(plan_.algo));
    }
  }

  // ---- small matrices in cache: the whole batch at once ----------------------------------------------------
  // The batch goes in runs of per_chunk whole matrices (contiguous in memory): a worker copies a run into its
  // buffer and writes it back transposed in destination order, each element through the shared index table.
  void onchip(T* A) const {
    const plan::Problem& pr = plan_.problem;
    const int64_t m = pr.rows, n = pr.cols, mn = m * n, K = oc_.per_chunk, batch = pr.batch;
    auto* table = reinterpret_cast<int32_t*>(scratch_ + oc_.table_off);
    // Destination element (k, j, i) of the run, at k*mn + j*m + i, is source element (k, i, j), at k*mn + i*n + j.
    for (int64_t k = 0, d = 0; k < K; ++k) {
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < m; ++i) table[d++] = static_cast<int32_t>(k * mn + i * n + j);
      }
    }
    const int64_t runs = (batch + K - 1) / K;
    // Tasks of at least 32K elements: a tiny batch stays on the calling thread.
    at::parallel_for(0, runs, std::max<int64_t>(1, (int64_t{1} << 15) / oc_.chunk_elems), [&](int64_t lo, int64_t hi) {
      T* __restrict buf = reinterpret_cast<T*>(scratch_ + oc_.buffers_off + scratch_slot() * oc_.thread_bytes);
      const int32_t* __restrict idx = table;
      for (int64_t r = lo; r < hi; ++r) {
        T* __restrict a = A + r * oc_.chunk_elems;
        const int64_t e = std::min(K, batch - r * K) * mn;
        std::memcpy(buf, a, e * sizeof(T));
        // The buffer, the table and the run do not overlap: __restrict lets the compiler keep the loop's loads
        // ahead of its stores (1.1-1.4x faster for 1- and 4-byte elements in a standalone loop).
        for (int64_t d = 0; d < e; ++d) a[d] = buf[idx[d]];
      }
    });
  }

 private:
  // ---- Catanzaro, in gather form (../shared/reference/c2r_reference.py) -------------------------------------
  void c2r(T* A) const {
    if (p_.c > 1) rotate_columns(A, [&](int64_t j) { return j / p_.b; }, +1);  // eq. 23
    shuffle_rows(A, /*c2r=*/true);                                               // eq. 31
    rotate_columns(A, [&](int64_t j) { return j; }, +1);                          // eq. 26: rotation by j ...
    permute_rows(A, /*gather=*/true);                                            // ... then out[i] = in[q(i)]
  }

  void r2c(T* A) const {
    permute_rows(A, /*gather=*/false);                                           // out[q(i)] = in[i]
    rotate_columns(A, [&](int64_t j) { return j; }, -1);                         // column j down by j
    shuffle_rows(A, /*c2r=*/false);                                              // eq. 24
    if (p_.c > 1) rotate_columns(A, [&](int64_t j) { return j / p_.b; }, -1);   // eq. 36
  }

  T* thread_buf() const {
    const int64_t stride = (layout_.thread_elems * static_cast<int64_t>(sizeof(T)) + 63) / 64 * 64;
    return reinterpret_cast<T*>(scratch_ + layout_.threads_off + scratch_slot() * stride);
  }
  // Row shuffle: out(i, j) = in(i, src(i, j)) for every row, through the thread's buffer. The source indices
  // of eq. 31 (C2R) and eq. 24 (R2C) are generated incrementally along the row (no division per element);
  // c2r::Params::row_gather / row_scatter are the specification (and the C2R path for the last c rows, where
  // eq. 31 adds m for some j).
  void shuffle_rows(T* A, bool c2r) const {
    const int64_t m = m_, n = n_, c = p_.c, b = p_.b, ainv = p_.ainv;
    at::parallel_for(0, m, std::max<int64_t>(1, 16384 / n), [&](int64_t lo, int64_t hi) {
      T* tmp = thread_buf();
      for (int64_t i = lo; i < hi; ++i) {
        T* row = A + i * n;
        if (c2r && i + c > m) {
          for (int64_t j = 0; j < n; ++j) tmp[j] = row[p_.row_gather(i, j)];
        } else if (c2r) {
          // f = j + i (n - 1); src = (ainv * (f / c) mod b) + (f mod c) * b
          const int64_t f = i * (n - 1);
          int64_t r = f % c, t = c2r::mulmod(ainv, (f / c) % b, b);
          for (int64_t j = 0; j < n; ++j) {
            tmp[j] = row[t + r * b];
            if (++r == c) {
              r = 0;
              t += ainv;
              if (t >= b) t -= b;
            }
          }
        } else {
          // src = ((i + j / b) mod m + j m) mod n, with x = (i + j / b) mod m, xm = x mod n, y = j m mod n
          int64_t x = i, xm = i % n, y = 0, jr = 0;
          const int64_t mn = m % n;
          for (int64_t j = 0; j < n; ++j) {
            int64_t src = xm + y;
            if (src >= n) src -= n;
            tmp[j] = row[src];
            y += mn;
            if (y >= n) y -= n;
            if (++jr == b) {
              jr = 0;
              ++x;
              if (++xm == n) xm = 0;
              if (x == m) x = xm = 0;
            }
          }
        }
        std::memcpy(row, tmp, n * sizeof(T));
      }
    });
  }

  // Column rotation: out(i, j) = in((i + sign * s(j)) mod m, j).
  template <typename Shift>
  void rotate_columns(T* A, Shift shift, int sign) const {
    const int64_t m = m_, n = n_;
    auto left = [&](int64_t j) {  // the rotation as a left (upward) amount in [0, m)
      const int64_t s = shift(j) % m;
      return sign > 0 ? s : (m - s) % m;
    };
    const int64_t W = plan_.panel;
    const int64_t panels = (n + W - 1) / W;
    at::parallel_for(0, panels, 1, [&](int64_t lo, int64_t hi) {
      T* buf = thread_buf();  // W*W saved rows + one W-element segment
      int64_t fine[256];
      for (int64_t pnl = lo; pnl < hi; ++pnl) {
        const int64_t j0 = pnl * W, w = std::min(W, n - j0);
        // Coarse amount: the first or the last column's, whichever leaves the smaller fine amounts
        // (increasing shifts take the first, decreasing the last).
        int64_t best_k = 0, best_F = m;
        for (int64_t ref : {j0, j0 + w - 1}) {
          const int64_t k = left(ref);
          int64_t F = 0;
          for (int64_t jj = 0; jj < w; ++jj) F = std::max(F, (left(j0 + jj) - k + m) % m);
          if (F < best_F) best_F = F, best_k = k;
        }
        TORCH_INTERNAL_ASSERT(best_F <= W, "transpose_: fine rotation ", best_F, " exceeds panel ", W);
        for (int64_t jj = 0; jj < w; ++jj) fine[jj] = (left(j0 + jj) - best_k + m) % m;
        if (best_k != 0) coarse_rotate(A + j0, w, best_k, buf + W * W);
        if (best_F != 0) fine_sweep(A + j0, w, fine, best_F, buf);
      }
    });
  }

  // Rotates the w-wide panel starting at P up by k rows (juggling: gcd(m, k) cycles, each row moved once).
  void coarse_rotate(T* P, int64_t w, int64_t k, T* seg) const {
    const int64_t m = m_, n = n_;
    const int64_t g = c2r::gcd64(m, k);
    const size_t bytes = w * sizeof(T);
    for (int64_t s = 0; s < g; ++s) {
      std::memcpy(seg, P + s * n, bytes);
      int64_t i = s;
      while (true) {
        int64_t nxt = i + k;
        if (nxt >= m) nxt -= m;
        if (nxt == s) break;
        std::memcpy(P + i * n, P + nxt * n, bytes);
        i = nxt;
      }
      std::memcpy(P + i * n, seg, bytes);
    }
  }

  // out(i, j) = in((i + f[j]) mod m, j) for a panel, with f[j] <= F: one downward sweep, rows 0..F-1 saved.
  void fine_sweep(T* P, int64_t w, const int64_t* f, int64_t F, T* saved) const {
    const int64_t m = m_, n = n_;
    for (int64_t r = 0; r < F; ++r) std::memcpy(saved + r * w, P + r * n, w * sizeof(T));
    const int64_t body = std::max<int64_t>(0, m - F);  // rows whose sources all lie below them, unwritten
    for (int64_t i = 0; i < body; ++i) {
      T* row = P + i * n;
      for (int64_t jj = 0; jj < w; ++jj) row[jj] = P[(i + f[jj]) * n + jj];
    }
    for (int64_t i = body; i < m; ++i) {
      T* row = P + i * n;
      for (int64_t jj = 0; jj < w; ++jj) {
        const int64_t s = i + f[jj];
        row[jj] = s < m ? P[s * n + jj] : saved[(s - m) * w + jj];
      }
    }
  }

  // Cycle leaders of q (the smallest index of each cycle longer than 1), once per call.
  void find_cycle_leaders() {
    std::memset(visited_, 0, layout_.bitmap_words * 8);
    std::memset(leaders_, 0, layout_.bitmap_words * 8);
    for (int64_t i = 0; i < m_; ++i) {
      if (bit_get(visited_, i)) continue;
      bit_set(visited_, i);
      int64_t j = p_.q(i);
      if (j == i) continue;
      bit_set(leaders_, i);
      while (j != i) {
        bit_set(visited_, j);
        j = p_.q(j);
      }
    }
  }

  // Row permutation by q on whole row segments: gather out[i] = in[q(i)], or scatter out[q(i)] = in[i].
  void permute_rows(T* A, bool gather) const {
    const int64_t n = n_;
    auto follow = [&](int64_t L, T* P, int64_t w, T* tmp) {
      const size_t bytes = w * sizeof(T);
      std::memcpy(tmp, P + L * n, bytes);
      int64_t i = L;
      if (gather) {
        while (true) {
          const int64_t s = p_.q(i);
          if (s == L) break;
          std::memcpy(P + i * n, P + s * n, bytes);
          i = s;
        }
        std::memcpy(P + i * n, tmp, bytes);
      } else {
        T* carry = tmp;
        T* other = tmp + w;
        while (true) {
          const int64_t d = p_.q(i);
          std::memcpy(other, P + d * n, bytes);
          std::memcpy(P + d * n, carry, bytes);
          std::swap(carry, other);
          i = d;
          if (d == L) break;
        }
      }
    };
    const int64_t words = layout_.bitmap_words;
    // Each cycle step is a dependent random access: move wide row segments so that there are few steps, while
    // keeping a few panels per thread.
    const int64_t W = plan::cpu_permute_panel_width(n, sizeof(T), plan_.threads, plan_.panel);
    const int64_t panels = (n + W - 1) / W;
    at::parallel_for(0, panels, 1, [&](int64_t lo, int64_t hi) {
      T* tmp = thread_buf();
      for (int64_t pnl = lo; pnl < hi; ++pnl) {
        const int64_t j0 = pnl * W, w = std::min(W, n - j0);
        for (int64_t wd = 0; wd < words; ++wd) {
          for (uint64_t bits = leaders_[wd]; bits; bits &= bits - 1) {
            follow(wd * 64 + __builtin_ctzll(bits), A + j0, w, tmp);
          }
        }
      }
    });
  }

  // ---- skinny (AoS <-> SoA): sequence 2.1 with a cut ----------------------------------------------------------
  // to_soa: N x F -> F x N. The first Mp*k rows form (Mp, k, F): 010! makes it (Mp, F, k), 100! makes it
  // (F, Mp, k); then row j (Mp*k elements) moves to j*N and the saved remainder column j fills its tail.
  // Otherwise (F x N -> N x F) the same steps run inverted, in reverse order.
  void skinny(T* A, bool to_soa) const {
    const int64_t N = sk_.N, F = sk_.F, k = sk_.k, Mp = sk_.Mp, r = sk_.r, body = Mp * k;
    T* rem = reinterpret_cast<T*>(scratch_ + sk_.remainder_off);  // r x F, row-major (AoS order)
    if (to_soa) {
      tile_transposes(A, Mp, k, F);
      super_transpose(A, Mp, F, k);
      if (r == 0) return;
      std::memcpy(rem, A + body * F, r * F * sizeof(T));
      move_rows(A, F, body, body, N, skinny_bufs());  // row j from j * body to j * N
      for (int64_t j = 0; j < F; ++j) {  // the tails: r * F elements, less than a tile
        T* tail = A + j * N + body;
        for (int64_t i = 0; i < r; ++i) tail[i] = rem[i * F + j];
      }
    } else {
      if (r > 0) {
        for (int64_t j = 0; j < F; ++j) {
          const T* tail = A + j * N + body;
          for (int64_t i = 0; i < r; ++i) rem[i * F + j] = tail[i];
        }
        move_rows(A, F, body, N, body, skinny_bufs());  // row j from j * N to j * body
      }
      super_transpose(A, F, Mp, k);
      tile_transposes(A, Mp, F, k);
      if (r > 0) std::memcpy(A + body * F, rem, r * F * sizeof(T));
    }
  }

  // count independent rows x cols tiles, stored one after another, each transposed in place (010!).
  void tile_transposes(T* A, int64_t count, int64_t rows, int64_t cols) const {
    const int64_t sz = rows * cols;
    at::parallel_for(0, count, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, sz)), [&](int64_t lo, int64_t hi) {
      T* buf = skinny_thread_buf();
      for (int64_t t = lo; t < hi; ++t) {
        T* tile = A + t * sz;
        std::memcpy(buf, tile, sz * sizeof(T));
        for (int64_t c = 0; c < cols; ++c) {
          T* out = tile + c * rows;
          for (int64_t r = 0; r < rows; ++r) out[r] = buf[r * cols + c];
        }
      }
    });
  }

  // The leaders of (P, Q, k) -> (Q, P, k)'s cycles that move (super_transpose), found once per call in the
  // constructor, before anything is written (the visited bitmap is the skinny layout's): the call's host memory is all
  // allocated before its first write, so that running out of it leaves the tensor as it was.
  void find_super_leaders(int64_t P, int64_t Q) {
    if (P <= 1 || Q <= 1) return;
    const int64_t L = P * Q;
    auto* visited = reinterpret_cast<uint64_t*>(scratch_ + sk_.visited_off);
    std::memset(visited, 0, ((L + 63) / 64) * 8);
    auto dest = [&](int64_t p) { return (p % Q) * P + p / Q; };
    for (int64_t s = 0; s < L; ++s) {
      if (bit_get(visited, s)) continue;
      int64_t p = s;
      do {
        bit_set(visited, p);
        p = dest(p);
      } while (p != s);
      if (dest(s) != s) super_leaders_.push_back(s);
    }
  }

  // (P, Q, k) -> (Q, P, k) in place (100!): the element at p = a*Q + b goes to b*P + a; cycles followed with
  // k-element super-elements from the leaders of find_super_leaders, cycles run in parallel.
  void super_transpose(T* A, int64_t P, int64_t Q, int64_t k) const {
    if (P <= 1 || Q <= 1) return;
    auto dest = [&](int64_t p) { return (p % Q) * P + p / Q; };
    const std::vector<int64_t>& leaders = super_leaders_;
    const size_t bytes = k * sizeof(T);
    at::parallel_for(0, static_cast<int64_t>(leaders.size()), 1, [&](int64_t lo, int64_t hi) {
      T* carry = skinny_thread_buf();
      T* other = carry + k;
      for (int64_t c = lo; c < hi; ++c) {
        const int64_t s = leaders[c];
        std::memcpy(carry, A + s * k, bytes);
        int64_t p = s;
        T *cur = carry, *nxt = other;
        do {
          const int64_t d = dest(p);
          std::memcpy(nxt, A + d * k, bytes);
          std::memcpy(A + d * k, cur, bytes);
          std::swap(cur, nxt);
          p = d;
        } while (p != s);
      }
    });
  }

  // The threads' buffers as one region (free outside the tile and cycle steps).
  std::pair<T*, int64_t> skinny_bufs() const {
    return {reinterpret_cast<T*>(scratch_ + sk_.threads_off),
            (sk_.remainder_off - sk_.threads_off) / static_cast<int64_t>(sizeof(T))};
  }

  T* skinny_thread_buf() const {
    const int64_t stride = (sk_.thread_elems * static_cast<int64_t>(sizeof(T)) + 63) / 64 * 64;
    return reinterpret_cast<T*>(scratch_ + sk_.threads_off + scratch_slot() * stride);
  }

  // ---- tiled: Karlsson's three stages (plan::CpuTiledLayout) ---------------------------------------------------
  struct TiledScratch {
    uint64_t* visited;  // M' * N' bits (prepare_block_cycles)
    uint64_t* leaders;  // M' * N' bits
    uint64_t* band;     // a band problem's visited bits
    T* block;           // one m x n block
  };
  TiledScratch tiled_scratch() const {
    uint8_t* base = scratch_ + scratch_slot() * tl_.thread_bytes;
    return {reinterpret_cast<uint64_t*>(base + tl_.visited_off), reinterpret_cast<uint64_t*>(base + tl_.leaders_off),
            reinterpret_cast<uint64_t*>(base + tl_.band_off), reinterpret_cast<T*>(base + tl_.block_off)};
  }

  void tiled(T* A) const {
    const int64_t m = tl_.m, n = tl_.n, Mp = tl_.Mp, Np = tl_.Np, rows = Mp * m, cols = Np * n;
    // 1. Each row band (m, N', n) -> (N', m, n).
    if (m > 1 && Np > 1) {
      at::parallel_for(0, Mp, 1, [&](int64_t lo, int64_t hi) {
        const TiledScratch ts = tiled_scratch();
        for (int64_t I = lo; I < hi; ++I) band_transpose(A + I * m * cols, m, Np, n, ts.band, ts.block);
      });
    }
    // 2. The (M', N') blocks of m x n -> (N', M') blocks of n x m.
    block_transpose(A, Mp, Np, m, n);
    // 3. Each column band (M', n, m) -> (n, M', m).
    if (Mp > 1 && n > 1) {
      at::parallel_for(0, Np, 1, [&](int64_t lo, int64_t hi) {
        const TiledScratch ts = tiled_scratch();
        for (int64_t J = lo; J < hi; ++J) band_transpose(A + J * n * rows, Mp, n, m, ts.band, ts.block);
      });
    }
  }

  // ---- cut: the last c columns and r rows set aside around the tiled path (plan::CpuCutLayout) ----------------
  void cut(T* A) const {
    const int64_t rows = plan_.problem.rows, cols = plan_.problem.cols, r = plan_.cut_rows, c = plan_.cut_cols;
    const int64_t R = rows - r, C = cols - c;
    T* saved_cols = reinterpret_cast<T*>(scratch_ + cut_.cols_off);  // rows x c
    T* saved_rows = reinterpret_cast<T*>(scratch_ + cut_.rows_off);  // r x C
    if (c > 0) {
      at::parallel_for(0, rows, 1024, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) std::memcpy(saved_cols + i * c, A + i * cols + C, c * sizeof(T));
      });
      move_rows(A, rows, C, cols, C, tiled_bufs());  // row i down to i * C
    }
    if (r > 0) std::memcpy(saved_rows, A + R * C, r * C * sizeof(T));
    tiled(A);  // R x C -> C x R
    if (r > 0) {
      move_rows(A, C, R, R, rows, tiled_bufs());  // row j of the C x R result up to j * rows
      at::parallel_for(0, C, 1024, [&](int64_t lo, int64_t hi) {
        for (int64_t j = lo; j < hi; ++j) {
          for (int64_t t = 0; t < r; ++t) A[j * rows + R + t] = saved_rows[t * C + j];
        }
      });
    }
    if (c > 0) {
      // The saved columns become the last c rows.
      at::parallel_for(0, c, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t t = lo; t < hi; ++t) {
          T* out = A + (C + t) * rows;
          for (int64_t i = 0; i < rows; ++i) out[i] = saved_cols[i * c + t];
        }
      });
    }
  }

  // The tiled path's scratch as one buffer (free before and after the three stages).
  std::pair<T*, int64_t> tiled_bufs() const {
    return {reinterpret_cast<T*>(scratch_), tl_.total / static_cast<int64_t>(sizeof(T))};
  }

  // Rows i = 1 .. count - 1 of len elements move from A + i * ss to A + i * ds (row 0 stays; ss, ds >= len), as
  // memmoves in order would do it: ascending where ds < ss (compaction), descending where ds > ss (spreading).
  //
  // On several threads the destination is swept in waves, in that order, each split into one chunk per thread. A
  // thread moves its chunk's rows in the serial order; its sources lie in its own chunk, outside the wave, or in the
  // chunks that other threads write (the next ones when compacting, the previous ones when spreading). That last
  // part, the halo, is copied to the buffer by all threads before any thread writes. Row i moves by i * |ss - ds|
  // elements, so a halo is about that long: a wave is as long as its halos fit the buffer (one wave for the skinny
  // path's remainder and most cuts), and where the rows have moved further than a wave is long, it has no halo.
  void move_rows(T* A, int64_t count, int64_t len, int64_t ss, int64_t ds, std::pair<T*, int64_t> buffer) const {
    if (count <= 1 || len == 0 || ss == ds) return;
    T* const buf = buffer.first;
    const int64_t buf_elems = buffer.second, es = sizeof(T);
    const bool compact = ds < ss;
    const int64_t K = at::get_num_threads();
    if (K == 1 || at::in_parallel_region() || (count - 1) * len * es < kParallelMoveBytes ||
        buf_elems * es < kMoveBufferBytes ||
        K > static_cast<int64_t>(move_chunks_.size())) {  // threads raised since the constructor: serial, as right
      if (compact) {
        for (int64_t i = 1; i < count; ++i) std::memmove(A + i * ds, A + i * ss, len * es);
      } else {
        for (int64_t i = count - 1; i >= 1; --i) std::memmove(A + i * ds, A + i * ss, len * es);
      }
      return;
    }
    auto src = [&](int64_t d) { return d + (d / ds) * (ss - ds); };  // d within a row's destination
    // The first and last destination element in [c0, c1) (the rows' destinations may have gaps between them).
    auto first_in = [&](int64_t c0) { return c0 - (c0 / ds) * ds >= len ? (c0 / ds + 1) * ds : c0; };
    auto last_in = [&](int64_t c1) {
      const int64_t p = c1 - 1, i = p / ds;
      return p - i * ds >= len ? i * ds + len - 1 : p;
    };
    std::vector<Chunk>& chunks = move_chunks_;  // sized in the constructor (no allocation past the first write)
    // Chunks and halos of the wave [a, b); false where the halos exceed the buffer.
    auto plan_wave = [&](int64_t a, int64_t b) {
      int64_t off = 0;
      for (int64_t t = 0; t < K; ++t) {
        Chunk& ch = chunks[t];
        ch.c0 = a + (b - a) * t / K, ch.c1 = a + (b - a) * (t + 1) / K, ch.h0 = ch.h1 = 0, ch.off = off;
        if (ch.c0 == ch.c1) continue;
        const int64_t f = first_in(ch.c0), l = last_in(ch.c1);
        if (f > l) continue;
        const int64_t s0 = src(f), s1 = src(l) + 1;
        ch.h0 = compact ? std::max(ch.c1, s0) : std::max(a, s0);
        ch.h1 = compact ? std::min(b, s1) : std::min(ch.c0, s1);
        if (ch.h1 <= ch.h0) ch.h0 = ch.h1 = 0;
        off += ch.h1 - ch.h0;
      }
      return off <= buf_elems;
    };
    // One chunk's rows in the serial order, each row's part [d0, d1) split by where its sources are.
    auto move_chunk = [&](int64_t a, int64_t b, const Chunk& ch) {
      if (ch.c0 == ch.c1) return;
      const T* halo = buf + ch.off;
      auto piece = [&](int64_t d0, int64_t d1) {
        const int64_t s0 = src(d0), e = d1 - d0;
        auto part = [&](int64_t lo, int64_t hi, const T* from, bool overlap) {  // sources [lo, hi)
          lo = std::max(lo, s0), hi = std::min(hi, s0 + e);
          if (lo >= hi) return;
          T* to = A + d0 + (lo - s0);
          if (overlap) {
            std::memmove(to, from, (hi - lo) * es);
          } else {
            std::memcpy(to, from, (hi - lo) * es);
          }
        };
        auto at_ = [&](int64_t lo) { return A + std::max(lo, s0); };
        auto in_halo = [&](int64_t lo) { return halo + (std::max(lo, s0) - ch.h0); };
        const int64_t inf = std::numeric_limits<int64_t>::max();
        if (compact) {  // own chunk, then the halo, then past the wave
          part(0, ch.c1, at_(0), true);
          part(ch.c1, b, in_halo(ch.c1), false);
          part(b, inf, at_(b), false);
        } else {  // own chunk, then the halo, then before the wave
          part(ch.c0, inf, at_(ch.c0), true);
          part(a, ch.c0, in_halo(a), false);
          part(0, a, at_(0), false);
        }
      };
      const int64_t r0 = ch.c0 / ds, r1 = (ch.c1 - 1) / ds;
      for (int64_t k = 0; k <= r1 - r0; ++k) {
        const int64_t i = compact ? r0 + k : r1 - k;
        const int64_t d0 = std::max(ch.c0, i * ds), d1 = std::min(ch.c1, i * ds + len);
        if (d0 < d1) piece(d0, d1);
      }
    };
    const int64_t first = ds, end = (count - 1) * ds + len;  // row 1 onwards
    for (int64_t done = 0; done < end - first;) {
      // The longest wave whose halos fit (one element always does: a single chunk has none).
      const int64_t left = end - first - done;
      int64_t lo = 1, hi = left;
      auto bounds = [&](int64_t L) {
        return compact ? std::make_pair(first + done, first + done + L) : std::make_pair(end - done - L, end - done);
      };
      while (lo < hi) {
        const int64_t mid = hi - (hi - lo) / 2;
        const auto ab = bounds(mid);
        if (plan_wave(ab.first, ab.second)) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      const auto [a, b] = bounds(lo);
      plan_wave(a, b);
      at::parallel_for(0, K, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const Chunk& ch = chunks[t];
          if (ch.h1 > ch.h0) std::memcpy(buf + ch.off, A + ch.h0, (ch.h1 - ch.h0) * es);
        }
      });
      at::parallel_for(0, K, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) move_chunk(a, b, chunks[t]);
      });
      done += lo;
    }
  }

  // (X, Y, Z) -> (Y, X, Z) in place at P, on one thread: gather-form cycle following (position q receives the
  // super-element at (q mod X) * Y + q / X), one carry of Z elements, `bits` marking the positions done. (The skinny
  // path's super_transpose is the same step spread over the threads by cycles; here the bands are.)
  static void band_transpose(T* P, int64_t X, int64_t Y, int64_t Z, uint64_t* bits, T* carry) {
    const int64_t L = X * Y;
    const size_t bytes = Z * sizeof(T);
    std::memset(bits, 0, ((L + 63) / 64) * 8);
    auto src = [&](int64_t q) { return (q % X) * Y + q / X; };
    for (int64_t s = 1; s + 1 < L; ++s) {  // positions 0 and L - 1 stay
      if (bit_get(bits, s)) continue;
      int64_t p = s, q = src(s);
      if (q == s) continue;
      std::memcpy(carry, P + s * Z, bytes);
      while (true) {
        bit_set(bits, p);
        if (q == s) break;
        std::memcpy(P + p * Z, P + q * Z, bytes);
        p = q;
        q = src(p);
      }
      std::memcpy(P + p * Z, carry, bytes);
    }
  }

  // dst (n x m) = the transpose of src (m x n), both row-major: 16 x 16 (1-byte), 8 x 8 (2-byte), 4 x 4 (4-byte) or
  // 2 x 2 (8-byte) tiles through SSE2 registers (integer shuffles: the bits move unchanged), elsewhere and at the edges element by element in
  // 8 x 8 sub-blocks.
  static void transpose_block(const T* src, T* dst, int64_t m, int64_t n) {
    int64_t mv = 0, nv = 0;  // the part done in vector tiles
#if defined(__SSE2__)
    if constexpr (sizeof(T) <= 8) {
      constexpr int64_t V = 16 / sizeof(T);
      mv = m / V * V;
      nv = n / V * V;
      for (int64_t i0 = 0; i0 < mv; i0 += V) {
        for (int64_t j0 = 0; j0 < nv; j0 += V) {
          const T* s0 = src + i0 * n + j0;
          T* d0 = dst + j0 * m + i0;
          auto ld = [&](int64_t r) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0 + r * n)); };
          auto st = [&](int64_t r, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(d0 + r * m), v); };
          if constexpr (sizeof(T) == 1) {
            // Four rounds of interleaves (bytes, pairs, quads, halves) turn 16 rows into 16 columns.
            __m128i t[16], u[16], v[16];
            for (int k = 0; k < 8; ++k) {
              const __m128i a = ld(2 * k), b = ld(2 * k + 1);
              t[2 * k] = _mm_unpacklo_epi8(a, b);
              t[2 * k + 1] = _mm_unpackhi_epi8(a, b);
            }
            for (int b = 0; b < 16; b += 4) {
              u[b] = _mm_unpacklo_epi16(t[b], t[b + 2]);
              u[b + 1] = _mm_unpackhi_epi16(t[b], t[b + 2]);
              u[b + 2] = _mm_unpacklo_epi16(t[b + 1], t[b + 3]);
              u[b + 3] = _mm_unpackhi_epi16(t[b + 1], t[b + 3]);
            }
            for (int b = 0; b < 16; b += 8) {
              for (int q = 0; q < 4; ++q) {
                v[b + 2 * q] = _mm_unpacklo_epi32(u[b + q], u[b + q + 4]);
                v[b + 2 * q + 1] = _mm_unpackhi_epi32(u[b + q], u[b + q + 4]);
              }
            }
            for (int q = 0; q < 8; ++q) {
              st(2 * q, _mm_unpacklo_epi64(v[q], v[q + 8]));
              st(2 * q + 1, _mm_unpackhi_epi64(v[q], v[q + 8]));
            }
          } else if constexpr (sizeof(T) == 2) {
            const __m128i t0 = _mm_unpacklo_epi16(ld(0), ld(1)), t1 = _mm_unpackhi_epi16(ld(0), ld(1));
            const __m128i t2 = _mm_unpacklo_epi16(ld(2), ld(3)), t3 = _mm_unpackhi_epi16(ld(2), ld(3));
            const __m128i t4 = _mm_unpacklo_epi16(ld(4), ld(5)), t5 = _mm_unpackhi_epi16(ld(4), ld(5));
            const __m128i t6 = _mm_unpacklo_epi16(ld(6), ld(7)), t7 = _mm_unpackhi_epi16(ld(6), ld(7));
            const __m128i u0 = _mm_unpacklo_epi32(t0, t2), u1 = _mm_unpackhi_epi32(t0, t2);
            const __m128i u2 = _mm_unpacklo_epi32(t1, t3), u3 = _mm_unpackhi_epi32(t1, t3);
            const __m128i u4 = _mm_unpacklo_epi32(t4, t6), u5 = _mm_unpackhi_epi32(t4, t6);
            const __m128i u6 = _mm_unpacklo_epi32(t5, t7), u7 = _mm_unpackhi_epi32(t5, t7);
            st(0, _mm_unpacklo_epi64(u0, u4));
            st(1, _mm_unpackhi_epi64(u0, u4));
            st(2, _mm_unpacklo_epi64(u1, u5));
            st(3, _mm_unpackhi_epi64(u1, u5));
            st(4, _mm_unpacklo_epi64(u2, u6));
            st(5, _mm_unpackhi_epi64(u2, u6));
            st(6, _mm_unpacklo_epi64(u3, u7));
            st(7, _mm_unpackhi_epi64(u3, u7));
          } else if constexpr (sizeof(T) == 4) {
            const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0));
            const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0 + n));
            const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0 + 2 * n));
            const __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0 + 3 * n));
            const __m128i t0 = _mm_unpacklo_epi32(r0, r1), t1 = _mm_unpacklo_epi32(r2, r3);
            const __m128i t2 = _mm_unpackhi_epi32(r0, r1), t3 = _mm_unpackhi_epi32(r2, r3);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d0), _mm_unpacklo_epi64(t0, t1));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d0 + m), _mm_unpackhi_epi64(t0, t1));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d0 + 2 * m), _mm_unpacklo_epi64(t2, t3));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d0 + 3 * m), _mm_unpackhi_epi64(t2, t3));
          } else {
            const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0));
            const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0 + n));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d0), _mm_unpacklo_epi64(r0, r1));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d0 + m), _mm_unpackhi_epi64(r0, r1));
          }
        }
      }
    }
#endif
    // The rest: columns past nv of every row, then rows past mv of the first nv columns.
    auto scalar = [&](int64_t ia, int64_t ib, int64_t ja, int64_t jb) {
      constexpr int64_t S = 8;
      for (int64_t i0 = ia; i0 < ib; i0 += S) {
        const int64_t ie = std::min(ib, i0 + S);
        for (int64_t j0 = ja; j0 < jb; j0 += S) {
          const int64_t je = std::min(jb, j0 + S);
          for (int64_t j = j0; j < je; ++j) {
            for (int64_t i = i0; i < ie; ++i) dst[j * m + i] = src[i * n + j];
          }
        }
      }
    };
    scalar(0, m, nv, n);
    scalar(mv, m, 0, nv);
  }

  // The cycles of block_transpose's (Mp, Np) grid, and room for its rounds of segments, once per call in the
  // constructor, before anything is written: the call's host memory is all allocated before its first write, so
  // that running out of it leaves the tensor as it was. (The visited bitmap is the calling thread's region's.)
  void prepare_block_cycles() {
    const int64_t Mp = tl_.Mp, Np = tl_.Np, L = Mp * Np;
    uint64_t* visited = tiled_scratch().visited;
    std::memset(visited, 0, ((L + 63) / 64) * 8);
    auto src = [&](int64_t q) { return (q % Mp) * Np + q / Mp; };
    for (int64_t s = 0; s < L; ++s) {  // every cycle, fixed points included: their blocks change shape
      if (bit_get(visited, s)) continue;
      int64_t len = 0;
      for (int64_t p = s; !bit_get(visited, p); p = src(p), ++len) bit_set(visited, p);
      block_cycles_.emplace_back(s, len);
    }
    block_round_.reserve(std::max<int64_t>(1, plan_.threads));
  }

  // The (Mp, Np) grid of m x n blocks -> the (Np, Mp) grid of n x m blocks, each block transposed. Position p of
  // the grid receives block src(p), so a cycle p_0 -> p_1 = src(p_0) -> ... is followed with the first block saved
  // (leaders found on the calling thread). The grid's cycles are few and uneven (4096 x 3072 fp32: 768 blocks in 6
  // cycles, the longest of 348), so on several threads a long cycle is cut into segments, each as long as the grid
  // over the threads: every segment's first block is saved (in a thread region's block buffer) before any segment
  // runs, and a segment's last step reads the next segment's saved block. Cycles are taken in rounds whose segments
  // fit the regions. Where every cycle is that short already, or nested in a batch task, whole cycles run in
  // parallel through the thread's own buffer.
  void block_transpose(T* A, int64_t Mp, int64_t Np, int64_t m, int64_t n) const {
    const int64_t L = Mp * Np, B = m * n, words = (L + 63) / 64;
    const TiledScratch own = tiled_scratch();
    std::memset(own.leaders, 0, words * 8);
    auto src = [&](int64_t q) { return (q % Mp) * Np + q / Mp; };
    const std::vector<std::pair<int64_t, int64_t>>& cycles = block_cycles_;  // (leader, length)
    for (const auto& c : cycles) bit_set(own.leaders, c.first);
    if (cycles.empty()) return;
    const int64_t regions = std::max<int64_t>(1, plan_.threads);  // the tiled layout's thread regions
    const int64_t P = at::in_parallel_region() ? 1 : std::min<int64_t>(regions, at::get_num_threads());
    const int64_t target = (L + P - 1) / P;  // blocks per segment
    int64_t longest = 0;
    for (const auto& c : cycles) longest = std::max(longest, c.second);
    if (P <= 1 || longest <= target) {
      const uint64_t* leaders = own.leaders;
      at::parallel_for(0, words, 1, [&](int64_t lo, int64_t hi) {
        T* buf = tiled_scratch().block;
        for (int64_t wd = lo; wd < hi; ++wd) {
          for (uint64_t w = leaders[wd]; w; w &= w - 1) {
            const int64_t s = wd * 64 + __builtin_ctzll(w);
            std::memcpy(buf, A + s * B, B * sizeof(T));
            int64_t p = s;
            for (int64_t q = src(p); q != s; p = q, q = src(p)) transpose_block(A + q * B, A + p * B, m, n);
            transpose_block(buf, A + p * B, m, n);
          }
        }
      });
      return;
    }
    auto saved = [&](int64_t slot) {
      return reinterpret_cast<T*>(scratch_ + slot * tl_.thread_bytes + tl_.block_off);
    };
    // Reserved for P segments in the constructor (P <= plan_.threads); this path runs outside parallel regions only,
    // so one call at a time uses it.
    std::vector<Segment>& round = block_round_;
    round.clear();
    auto run_round = [&]() {
      at::parallel_for(0, static_cast<int64_t>(round.size()), 1, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          Segment& sg = round[i];
          sg.p0 = sg.leader;
          for (int64_t k = 0; k < sg.k0; ++k) sg.p0 = src(sg.p0);
          std::memcpy(saved(sg.slot), A + sg.p0 * B, B * sizeof(T));
        }
      });
      at::parallel_for(0, static_cast<int64_t>(round.size()), 1, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          const Segment& sg = round[i];
          int64_t p = sg.p0;
          for (int64_t k = sg.k0; k + 1 < sg.k1; ++k) {
            const int64_t q = src(p);
            transpose_block(A + q * B, A + p * B, m, n);
            p = q;
          }
          transpose_block(saved(sg.next), A + p * B, m, n);
        }
      });
      round.clear();
    };
    for (const auto& [leader, len] : cycles) {
      const int64_t pieces = std::min(P, (len + target - 1) / target);
      if (static_cast<int64_t>(round.size()) + pieces > P) run_round();
      const int64_t base = static_cast<int64_t>(round.size());
      for (int64_t j = 0; j < pieces; ++j) {
        round.push_back({leader, len * j / pieces, len * (j + 1) / pieces, base + j, base + (j + 1) % pieces, 0});
      }
    }
    run_round();
  }

  // ---- squares: swap tile (bi, bj) with the transpose of tile (bj, bi) ----------------------------------------
  // Both tiles are read into local buffers (row-wise, cache-line friendly) and written back transposed.
  static void square(T* A, int64_t n) {
    constexpr int64_t B = 32;
    const int64_t nb = (n + B - 1) / B;
    // Tile pairs (bi, bj), bj >= bi, enumerated row by row; split evenly across threads.
    at::parallel_for(0, nb * (nb + 1) / 2, 8, [&](int64_t lo, int64_t hi) {
      T a[B * B], b[B * B];
      int64_t bi = 0, k = lo;
      while (k >= nb - bi) k -= nb - bi++;
      int64_t bj = bi + k;
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t i0 = bi * B, ih = std::min(B, n - i0);
        const int64_t j0 = bj * B, jw = std::min(B, n - j0);
        for (int64_t r = 0; r < ih; ++r) std::memcpy(a + r * B, A + (i0 + r) * n + j0, jw * sizeof(T));
        if (bi == bj) {
          for (int64_t r = 0; r < ih; ++r)
            for (int64_t q = 0; q < jw; ++q) A[(i0 + r) * n + j0 + q] = a[q * B + r];
        } else {
          for (int64_t r = 0; r < jw; ++r) std::memcpy(b + r * B, A + (j0 + r) * n + i0, ih * sizeof(T));
          for (int64_t r = 0; r < ih; ++r)
            for (int64_t q = 0; q < jw; ++q) A[(i0 + r) * n + j0 + q] = b[q * B + r];
          for (int64_t r = 0; r < jw; ++r)
            for (int64_t q = 0; q < ih; ++q) A[(j0 + r) * n + i0 + q] = a[q * B + r];
        }
        if (++bj == nb) bj = ++bi;
      }
    });
  }

  const plan::Plan& plan_;
  const c2r::Params& p_;
  const int64_t m_, n_;
  uint8_t* scratch_;
  plan::CpuScratchLayout layout_;
  plan::CpuSkinnyLayout sk_;
  plan::CpuTiledLayout tl_;
  plan::CpuCutLayout cut_;
  plan::CpuOnchipLayout oc_;
  uint64_t* visited_ = nullptr;
  uint64_t* leaders_ = nullptr;
  // Host memory of the skinny, tiled and cut paths, allocated in the constructor (before the first write; see
  // find_super_leaders, prepare_block_cycles): the moving cycles' leaders of the skinny path's super_transpose, the
  // cycles of the tiled path's block grid (leader, length), and what the calling thread's passes fill in each time
  // (a round of block_transpose's segments; move_rows' chunks, one per thread).
  std::vector<int64_t> super_leaders_;
  std::vector<std::pair<int64_t, int64_t>> block_cycles_;
  mutable std::vector<Segment> block_round_;
  mutable std::vector<Chunk> move_chunks_;
};

template <typename T>
void run_plan(const plan::Plan& plan, uint8_t* data, uint8_t* scratch) {
  const CpuTranspose<T> engine(plan, scratch);
  T* base = reinterpret_cast<T*>(data);
  if (plan.algo == plan::Algo::OnChip) return engine.onchip(base);  // the whole batch in one pass
  const int64_t batch = plan.problem.batch, mn = plan.problem.rows * plan.problem.cols;
  if (batch > 1 && engine.batch_parallel_ok() &&
      (mn < (int64_t{1} << 16) || (engine.batch_parallel_any_size() && batch >= at::get_num_threads()))) {
    // Small matrices: one matrix per task (nested parallel_for calls run inline).
    at::parallel_for(0, batch, std::max<int64_t>(1, (int64_t{1} << 16) / mn), [&](int64_t lo, int64_t hi) {
      const BatchSlot slot(at::get_thread_num());  // nested loops below report thread 0: keep this worker's region
      for (int64_t b = lo; b < hi; ++b) engine.run(base + b * mn);
    });
  } else {
    for (int64_t b = 0; b < batch; ++b) engine.run(base + b * mn);
  }
}

void transpose_data_cpu(at::Tensor& self, c10::string_view algorithm) {
  const char* op = "transpose_";
  check_transposable(self, op, CheckLevel::kMemory);
  const plan::Problem problem = transpose_problem(self);
  const std::shared_ptr<const plan::Plan> cached =
      plan_cached(problem, self.device(), parse_algorithm(std::string(algorithm), op), op);
  const plan::Plan& pl = *cached;
  // Plans with scratch keep a region per thread of their parallel regions (device_caps reads the count those run).
  TORCH_INTERNAL_ASSERT(pl.scratch_bytes == 0 || at::in_parallel_region() || at::get_num_threads() <= pl.threads, op,
                        ": a plan for ", pl.threads, " threads about to run on ", at::get_num_threads());
  if (pl.algo == plan::Algo::Noop) {
    record_workspace(0);
    return;
  }
  const at::Tensor scratch = allocate_workspace(pl.scratch_bytes, pl.workspace_limit, self.device(), op);
  uint8_t* scratch_ptr = workspace_ptr(scratch);
  auto* data = static_cast<uint8_t*>(self.data_ptr());
  switch (problem.esize) {
    case 1: return run_plan<ElemOf<1>::type>(pl, data, scratch_ptr);
    case 2: return run_plan<ElemOf<2>::type>(pl, data, scratch_ptr);
    case 4: return run_plan<ElemOf<4>::type>(pl, data, scratch_ptr);
    case 8: return run_plan<ElemOf<8>::type>(pl, data, scratch_ptr);
    case 16: return run_plan<ElemOf<16>::type>(pl, data, scratch_ptr);
    default: TORCH_CHECK(false, op, ": unsupported element size ", problem.esize);
  }
}

}  // namespace

TORCH_LIBRARY_IMPL(inplace, CPU, m) { m.impl("_transpose_data_", &transpose_data_cpu); }

}  // namespace torch_inplace
