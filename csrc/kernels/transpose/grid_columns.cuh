// One column step of the Catanzaro decomposition with the whole GPU as the buffer: a cooperative kernel (one
// block per SM) takes the columns in panels of W; for each panel every block gathers the R rows of the result it
// owns into its shared memory, the grid meets at a barrier (every read of the panel done), and every block writes
// its rows back. Reads and writes are runs of up to W elements (kilobytes, where the cluster kernel of
// cluster_columns.cuh moves 128-byte runs), and panels touch disjoint columns, so one barrier per panel suffices.
// k == 1 only (no super-elements).
//
// With the coarse + fine split of cluster_columns.cuh (row permutation pi shared by the panel, fine shift f_j < W
// rows): block b owns slots [s0, s1) = [b R, b R + R) of the panel.
//   fine then permute (pre-rotate, column shuffle: slot = x - f_j; post-rotate: slot = x + f_j): the block
//     gathers slot s, column j from source row s + f_j (resp. s - f_j) and writes slot s to row pi(s);
//   permute then fine (inverse column shuffle): row i, column j comes from slot i - f_j, whose source row is
//     pi(i - f_j) (pi is q^-1 there, see PanelStep); the block gathers its rows i and writes them in place.
// Either way the block reads the band of source rows y in [s0 - fmax, s1 + fmax), each row y contributing the
// columns whose f_j puts it in [s0, s1): a contiguous run, since f_j does not decrease with j.
#pragma once

#include "kernels/transpose/cluster_columns.cuh"

#if TI_HIP
#include <hip/hip_cooperative_groups.h>
#else
#include <cooperative_groups.h>
#endif

namespace torch_inplace {
namespace kernels {

constexpr int kGridColThreads = 1024;

// One panel of a column step: its columns [j0, j0 + w) of matrix `A` (already offset by j0), the coarse/fine split,
// and the largest fine shift of its columns.
template <typename T, typename U>
struct GridPanel {
  T* A;
  U j0, w, fmax;
  PanelStep<U> ps;
  U shift = 0;  // a column part of a split panel (grid_panel_part): its columns' fine shifts start here
};

template <typename T, typename U>
TI_DEVICE GridPanel<T, U> grid_panel(T* base, const CatIdx<U>& P, int step, uint32_t W, int64_t panels,
                                     int64_t pnl) {
  GridPanel<T, U> g;
  const U m = P.m, n = P.nk;
  const int64_t mat = pnl / panels;
  g.j0 = static_cast<U>((pnl - mat * panels) * W);
  g.w = n - g.j0 < W ? n - g.j0 : W;
  g.A = base + mat * static_cast<int64_t>(m) * n + g.j0;
  g.ps.P = &P;
  g.ps.step = step;
  g.ps.unit = true;
  U r0;
  g.ps.j0s = g.j0;
  g.ps.j0m = P.dm_m.mod(g.j0);
  g.ps.c0 = P.dm_b.div(g.j0, &r0);
  // f_j = jj for the shuffles, j / b - c0 for the rotations; fmax = f of the panel's last column.
  const bool rotation = step == kPreRotate || step == kPostRotate;
  g.fmax = rotation ? P.dm_b.div(g.j0 + g.w - 1, &r0) - g.ps.c0 : g.w - 1;
  return g;
}

// Column part h of `split` (each Wq = W / split columns wide) of panel g, for the column shuffles: its columns
// [h Wq, h Wq + w) of the panel, whose fine shifts f_j = jj start at h Wq. w == 0 where the part lies past a last
// panel narrower than W (the block then only meets the grid barriers).
template <typename T, typename U>
TI_DEVICE void grid_panel_part(GridPanel<T, U>& g, int h, uint32_t Wq) {
  const U jb = static_cast<U>(h) * Wq;
  const U w = g.w > jb ? (g.w - jb < Wq ? g.w - jb : static_cast<U>(Wq)) : U{0};
  g.A += jb;
  g.shift = jb;
  g.w = w;
  g.fmax = w > 0 ? w - 1 : 0;
}

// Loads in flight per lane in grid_panel_load: 8 elements (64 bytes for 16-byte ones: 4).
template <typename T>
TI_HOST_DEVICE constexpr int grid_load_depth() {
  return sizeof(T) >= 16 ? 4 : 8;
}

// Lanes per band row in grid_panel_load (a power of two, 4 up to the warp). In the column shuffles a row's run
// is about R elements (hundreds of bytes), and one row per warp left most of the warp's K-deep load batch idle:
// the gather ran at ~40% of the copy's bandwidth with too few bytes in flight. About R / K lanes per row (the
// smallest power of two >= R / (1.125 K)) let a warp gather several rows at once with each lane's K loads in the
// run.
// Measured on an H200 (benchmarks/profile_transpose_kernels.py, TORCH_INPLACE_GPU_GRID_ROW_LANES=4..32, R = 93..130
// rows): 16 lanes was best or within 2% on every shape, fp32 and fp64 (fp32 13441 x 9721: 620 -> 494 us; 4 lanes
// 618 us, 8 lanes 520 us, 32 lanes -- one row per warp -- 633 us). Rotations (runs of whole groups of columns, up to a panel
// wide) keep one row per warp.
template <typename T>
int grid_row_lanes(int step, int64_t R, int warp) {
  if (step == kPreRotate || step == kPostRotate) return warp;
  const double want = static_cast<double>(R) / grid_load_depth<T>();
  int L = 4;
  while (L < warp && want > 1.125 * L) L *= 2;
  return L < warp ? L : warp;
}

// The gather of the column shuffles (kColShuffle, kInvColShuffle: f_j = jj) with its index arithmetic
// strength-reduced. Band row `by` of the block is source row yu = lo_y + by (mod m), and its column jj lands in
// row slot - s0 of sm:
//   kColShuffle (minus): slot = yu - jj, yu = s0 + by, sm index (by - jj) W + jj = by W - jj (W - 1);
//   kInvColShuffle (plus): slot = yu - m + jj, yu = s0 + m - fmax + by,
//                          sm index (by - fmax + jj) W + jj = (by - fmax) W + jj (W + 1);
// so a lane's shared-memory index moves by a constant per element, and its run is [jlo, jhi) with
//   minus: jlo = by - (s1 - s0) + 1, jhi = by + 1;   plus: jlo = fmax - by, jhi = fmax - by + (s1 - s0);
// clipped to [0, fmax]. The general gather (grid_panel_load) computed the slot per element, with both steps' and
// the rotations' arithmetic behind run-time branches. L (lanes per row, a power of two) is a template parameter
// so that a lane's K loads from its row take immediate offsets. Indices fit an int: R W es <= the shared memory
// of a block, R es >= kGridColumnRunBytes and W <= m, n. With a split panel (grid_panel_part) jj counts from the
// part's first column and the fine shift is g.shift + jj: the band moves on by g.shift rows (minus) or back (plus).
template <int L, typename T, typename U>
TI_DEVICE void grid_gather_shuffle(const GridPanel<T, U>& g, const CatIdx<U>& P, int step, T* sm, uint32_t W, U s0,
                                   U s1, bool async_copy) {
  constexpr int K = grid_load_depth<T>();
  constexpr int kRowsPerWarp = kWarpSize / L;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % L;
  const int sub = (threadIdx.x % kWarpSize) / L;
  const int nwarps = blockDim.x / kWarpSize;
  const bool minus = step == kColShuffle;
  const U m = P.m, n = P.nk;
  const int fmax = static_cast<int>(g.fmax), rows = static_cast<int>(s1 - s0), w = static_cast<int>(W);
  const int band = rows + fmax;
  // A column part (g.shift > 0) is the same gather with the source rows moved on by its first column's shift.
  const U lo_y = minus ? s0 + g.shift : s0 + m - g.shift - g.fmax;
  const int d = minus ? 1 - w : w + 1;  // shared-memory index step per column
  const SharedArray<T> sa(sm);
  for (int by = warp * kRowsPerWarp + sub; by < band; by += nwarps * kRowsPerWarp) {
    int jlo = minus ? by - rows + 1 : fmax - by;
    int jhi = minus ? by + 1 : fmax - by + rows;
    if (jlo < 0) jlo = 0;
    if (jhi > fmax + 1) jhi = fmax + 1;
    if (jlo >= jhi) continue;
    U row = lo_y + static_cast<U>(by);  // < 2m + W
    while (row >= m) row -= m;
    const U src_row = minus ? row : g.ps.pi(row);
    const T* src = g.A + static_cast<int64_t>(src_row) * n;
    const int j0 = jlo + lane;
    int idx = (minus ? by : by - fmax) * w + j0 * d;
    if (async_copy) {
      for (int j = j0; j < jhi; j += L, idx += L * d) sa.copy_async_from(idx, src + j);
      continue;
    }
    for (int j = j0; j < jhi; j += L * K, idx += L * K * d) {
      // Loads past the run re-read its last element (the same sector) instead of being predicated off: with a
      // predicate per load ptxas ran out of predicate registers and put the first stores, which wait for their
      // loads, before the last loads were issued.
      const T* p = src + j;
      const int last = jhi - 1 - j;
      T v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) v[s] = p[static_cast<uint32_t>(s * L < last ? s * L : last)];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        if (j + s * L < jhi) sa.store(idx + s * L * d, v[s]);
      }
    }
  }
}

// Gathers the block's slots [s0, s1) of panel g into sm (row stride W): band rows, L lanes per row (kWarpSize / L
// rows per warp), those lanes along the row's run of columns. With async_copy the copies are only issued: the
// caller waits for them (copy_async_wait) before its block barrier. `linear`: the column shuffles take
// grid_gather_shuffle (L a power of two from 4 to the warp); the rotations, and every step with linear false
// (TORCH_INPLACE_GPU_GRID_GATHER=general, for comparisons), the general code below.
template <typename T, typename U>
TI_DEVICE void grid_panel_load(const GridPanel<T, U>& g, const CatIdx<U>& P, int step, T* sm, uint32_t W, U s0,
                               U s1, int L, bool async_copy, bool linear) {
  if (linear && (step == kColShuffle || step == kInvColShuffle) && s0 < s1) {
    switch (L) {
      case 4: return grid_gather_shuffle<4>(g, P, step, sm, W, s0, s1, async_copy);
      case 8: return grid_gather_shuffle<8>(g, P, step, sm, W, s0, s1, async_copy);
      case 16: return grid_gather_shuffle<16>(g, P, step, sm, W, s0, s1, async_copy);
      case 32: return grid_gather_shuffle<32>(g, P, step, sm, W, s0, s1, async_copy);
      default:
        if constexpr (kWarpSize > 32) {  // 64-wide wavefronts
          if (L == kWarpSize) return grid_gather_shuffle<kWarpSize>(g, P, step, sm, W, s0, s1, async_copy);
        }
        break;
    }
  }
  constexpr int K = grid_load_depth<T>();
  const int rows_per_warp = kWarpSize / L;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % L;
  const int nwarps = blockDim.x / kWarpSize;
  const int sub = (threadIdx.x % kWarpSize) / L;  // which of the warp's rows
  const U m = P.m, n = P.nk, fmax = g.fmax, w = g.w, j0 = g.j0;
  const bool rotation = step == kPreRotate || step == kPostRotate;
  const bool minus = step == kPreRotate || step == kColShuffle;  // slot = x - f (else x + f, or i - f)
  const bool permute_first = step == kInvColShuffle;
  if (s0 >= s1) return;
  const U lo_y = minus ? s0 : s0 + m - fmax;  // unwrapped band start (mod m), band of (s1 - s0) + fmax rows
  const U band = (s1 - s0) + fmax;
  U r0;
  for (U by = static_cast<U>(warp * rows_per_warp + sub); by < band; by += static_cast<U>(nwarps * rows_per_warp)) {
    const U yu = lo_y + by;  // < 2m + W
    // f range that lands this row in [s0, s1): minus: f in (yu - s1, yu - s0]; plus: f in [s0 - y, s1 - y) with
    // y = yu - m. f_lo, f_hi inclusive.
    int64_t flo, fhi;
    if (minus) {
      flo = static_cast<int64_t>(yu) - static_cast<int64_t>(s1) + 1;
      fhi = static_cast<int64_t>(yu) - static_cast<int64_t>(s0);
    } else {
      const int64_t y = static_cast<int64_t>(yu) - static_cast<int64_t>(m);
      flo = static_cast<int64_t>(s0) - y;
      fhi = static_cast<int64_t>(s1) - 1 - y;
    }
    if (flo < 0) flo = 0;
    if (fhi > static_cast<int64_t>(fmax)) fhi = fmax;
    if (flo > fhi) continue;
    U jlo, jhi;  // column run [jlo, jhi) of the panel
    if (rotation) {
      const int64_t b = P.b;
      const int64_t a0 = (static_cast<int64_t>(g.ps.c0) + flo) * b - static_cast<int64_t>(j0);
      const int64_t a1 = (static_cast<int64_t>(g.ps.c0) + fhi + 1) * b - static_cast<int64_t>(j0);
      jlo = static_cast<U>(a0 < 0 ? 0 : a0);
      jhi = static_cast<U>(a1 > static_cast<int64_t>(w) ? static_cast<int64_t>(w) : a1);
    } else {
      jlo = static_cast<U>(flo);
      jhi = static_cast<U>(fhi + 1);
    }
    U row = yu;
    while (row >= m) row -= m;
    const U src_row = permute_first ? g.ps.pi(row) : row;
    const T* src = g.A + static_cast<int64_t>(src_row) * n;
    // Where column jj of this row goes: its slot (unwrapped: minus: yu - f; plus / permute-first: (yu - m) + f),
    // row slot - s0 of sm.
    auto sm_index = [&](U jj) {
      const U f = rotation ? P.dm_b.div(j0 + jj, &r0) - g.ps.c0 : jj;
      const U slot = minus ? yu - f : yu + f - m;
      return static_cast<int64_t>(slot - s0) * W + jj;
    };
    if (async_copy) {
      for (U j = jlo + lane; j < jhi; j += L) copy_async(sm + sm_index(j), src + j);
      continue;
    }
    for (U j = jlo + lane; j < jhi; j += L * K) {
      T v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const U jj = j + s * L;
        if (jj < jhi) v[s] = src[jj];
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const U jj = j + s * L;
        if (jj < jhi) sm[sm_index(jj)] = v[s];
      }
    }
  }
}

// Writes the block's slots [s0, s1) of panel g from sm to their rows: one warp per row, whole runs of w columns.
template <typename T, typename U>
TI_DEVICE void grid_panel_store(const GridPanel<T, U>& g, const CatIdx<U>& P, int step, const T* sm, uint32_t W,
                                U s0, U s1) {
  constexpr int K = sizeof(T) <= 4 ? 8 : static_cast<int>(32 / sizeof(T));
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int nwarps = blockDim.x / kWarpSize;
  const U n = P.nk, w = g.w;
  const bool permute_first = step == kInvColShuffle;
  for (U r = warp; r < s1 - s0; r += nwarps) {
    const U dst_row = permute_first ? s0 + r : g.ps.pi(s0 + r);
    T* dst = g.A + static_cast<int64_t>(dst_row) * n;
    const T* srow = sm + static_cast<int64_t>(r) * W;
    for (U j = lane; j < w; j += kWarpSize * K) {
      T v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const U jj = j + s * kWarpSize;
        if (jj < w) v[s] = srow[jj];
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const U jj = j + s * kWarpSize;
        if (jj < w) dst[jj] = v[s];
      }
    }
  }
}

// nbuf == 1: per panel, gather, grid barrier, write back. nbuf == 2: two buffers of R x W; while a block writes
// panel p - 1 back from one buffer it gathers panel p into the other (disjoint columns), then the grid barrier --
// reads and writes overlap and there is still one barrier per panel.
// kAsyncGather: the gather copies through cp.async (an instantiation of its own, so that the register gather's
// code stays as it is).
// split > 1 (column shuffles with the linear gather only): block b owns slots [s0, s0 + R) of slot group b / split
// and the column part b % split (W / split columns) of every panel. A block's gather runs are min(R, W / split)
// elements long instead of R (= m / blocks with one part): for the same shared memory, a taller, narrower tile.
template <typename T, typename U, bool kAsyncGather>
__global__ void __launch_bounds__(kGridColThreads, 1)
    col_grid_kernel(T* __restrict__ base, CatIdx<U> P, int step, uint32_t W, uint32_t R, int64_t panels,
                    int64_t total, int nbuf, int row_lanes, int linear, int split) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  const U m = P.m;
  const int part = static_cast<int>(blockIdx.x % static_cast<unsigned>(split));
  const uint32_t Wq = W / static_cast<uint32_t>(split);  // the panel width of one block (its smem row stride)
  const U s0 = static_cast<U>(blockIdx.x / static_cast<unsigned>(split)) * R;
  const U s1 = s0 >= m ? s0 : (m - s0 < R ? m : s0 + R);
  auto panel = [&](int64_t pnl) {
    GridPanel<T, U> g = grid_panel<T, U>(base, P, step, W, panels, pnl);
    if (split > 1) grid_panel_part(g, part, Wq);
    return g;
  };
  if (nbuf == 1) {
    for (int64_t pnl = 0; pnl < total; ++pnl) {
      const GridPanel<T, U> g = panel(pnl);
      if (g.w > 0) grid_panel_load(g, P, step, sm, Wq, s0, s1, row_lanes, kAsyncGather, linear != 0);
      if (kAsyncGather) copy_async_wait();
      __syncthreads();
      cooperative_groups::this_grid().sync();  // every read of this panel's columns is done
      grid_panel_store(g, P, step, sm, Wq, s0, s1);
      __syncthreads();  // the block's shared memory is free for the next panel (which reads other columns)
    }
    return;
  }
  // With async copies the gather of panel p is issued first and lands while the block writes panel p - 1 back.
  // The buffers by offset from sm rather than from an array of pointers: the array lived in local memory and the
  // accesses through it were generic ones, not shared-memory ones.
  auto buf = [&](int64_t i) { return sm + (i & 1) * (static_cast<int64_t>(R) * Wq); };
  for (int64_t it = 0; it <= total; ++it) {
    if (kAsyncGather && it < total) {
      const GridPanel<T, U> g = panel(it);
      if (g.w > 0) grid_panel_load(g, P, step, buf(it), Wq, s0, s1, row_lanes, true, linear != 0);
    }
    if (it > 0) {
      const GridPanel<T, U> g = panel(it - 1);
      grid_panel_store(g, P, step, buf(it - 1), Wq, s0, s1);
    }
    if (!kAsyncGather && it < total) {
      const GridPanel<T, U> g = panel(it);
      if (g.w > 0) grid_panel_load(g, P, step, buf(it), Wq, s0, s1, row_lanes, false, linear != 0);
    }
    if (kAsyncGather) copy_async_wait();
    __syncthreads();
    if (it < total) cooperative_groups::this_grid().sync();  // every read of panel `it` is done
  }
}

}  // namespace kernels
}  // namespace torch_inplace

#ifdef TORCH_INPLACE_HIP_CHECK
namespace torch_inplace {
namespace kernels {
#define TI_INST_GRIDCOL_A(T, A)                                                                                 \
  template __global__ void col_grid_kernel<T, uint32_t, A>(T*, CatIdx<uint32_t>, int, uint32_t, uint32_t,       \
                                                           int64_t, int64_t, int, int, int, int);               \
  template __global__ void col_grid_kernel<T, uint64_t, A>(T*, CatIdx<uint64_t>, int, uint32_t, uint32_t,       \
                                                           int64_t, int64_t, int, int, int, int);
#define TI_INST_GRIDCOL(T) TI_INST_GRIDCOL_A(T, false) TI_INST_GRIDCOL_A(T, true)
TI_INST_GRIDCOL(uint8_t)
TI_INST_GRIDCOL(uint16_t)
TI_INST_GRIDCOL(uint32_t)
TI_INST_GRIDCOL(uint64_t)
TI_INST_GRIDCOL(Bytes16)
#undef TI_INST_GRIDCOL
#undef TI_INST_GRIDCOL_A
}  // namespace kernels
}  // namespace torch_inplace
#endif
