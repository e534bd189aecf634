// The on-chip transposition (onchip.cuh) of skinny matrices -- AoS <-> SoA, HWC <-> CHW images -- with every
// global access a 16-byte vector. Where the planner's tiles hold whole rows of an m x n matrix with few columns
// (tc == n: AoS -> SoA, records along m, F = n fields) or whole columns of one with few rows (tr == m: SoA -> AoS,
// F = m), a block's tiles of one matrix are records [l0, l1) of it: one contiguous range of l1 - l0 records of F
// fields on the AoS side, and F runs of l1 - l0 elements on the SoA side (field f's run starts at f L + l0 of the
// matrix, L records per matrix). onchip_transpose_kernel moves each element with a load and a store of its own
// size; a 1-byte AoS -> SoA of a 1080p image (6 MB) then ran at 0.56 TB/s on an H200, its blocks waiting on one
// byte per thread and load. Here both sides move in aligned 16-byte chunks:
//   * the SoA side: each run staged in shared memory at the same offset modulo 16 bytes as in the tensor, so a
//     chunk is one 16-byte global access and one 16-byte shared access;
//   * the AoS side: a chunk's elements scattered to (load) or gathered from (store) their runs in shared memory.
// A run's unaligned ends, and the AoS range's, go element by element. The grid barrier between the phases is the
// one of onchip.cuh (nothing is written before every element is on chip), and batches go in the same waves.
//
// Shared memory: a block's tiles of one matrix form a segment; segment k holds F runs of Sp_k = roundup(n_k + V - 1,
// V) elements (n_k its records, V = 16 / sizeof(T)), back to back: at most per_block * Lt * F elements plus 2 V F
// per segment (onchip_skinny_smem_bytes).
//
// Launch: as onchip_transpose_kernel (cooperatively, the planner's grid, kOnChipThreads threads), with
// onchip_skinny_smem_bytes(...) of dynamic shared memory. Device code only; plain types.
#pragma once

#include <cstdint>

#include "kernels/transpose/onchip.cuh"

namespace torch_inplace {
namespace kernels {

// Dynamic shared memory of onchip_skinny_kernel: per_block tiles of Lt records of F fields of es bytes, in at most
// `segments` segments (matrices a block's tiles touch).
TI_HOST_DEVICE int64_t onchip_skinny_smem_bytes(int64_t per_block, int64_t Lt, int64_t F, int64_t es,
                                                int64_t segments) {
  return per_block * Lt * F * es + segments * F * 32 + 16;
}

// 16-byte chunks a thread loads at once in the phase that reads global memory, and chunks it gathers from shared
// memory at once before storing them. H200 (benchmarks/onchip_skinny_harness.cu's sweep,
// history_onchip_skinny_harness.log): one chunk at a time was fastest or within 3% everywhere: against 4, 1.03-1.15x
// (the SoA side's loads 1.05-1.25x), 8 was slower still, and gathering 2 or 4 at once made no difference. As in
// onchip.cuh, the blocks run each loop a few times: shorter code wins over more loads in flight.
constexpr int kOnChipSkinnyDepth = 1;
constexpr int kOnChipSkinnyGather = 1;

template <typename T>
union Chunk16 {
  uint4 v;
  T e[16 / sizeof(T)];
};

// One segment of a block: records [l0, l0 + cnt) of matrix `mat` (element offsets from the wave's first element),
// its runs in shared memory from element `sbase` on, Sp apart.
struct SkinnySegment {
  uint32_t mat_off = 0;  // first element of the matrix
  uint32_t l0 = 0, cnt = 0;
  uint32_t sbase = 0, Sp = 0;
};

// The AoS side of a segment: records [l0, l0 + cnt) of F fields at `aos` (virtual element index from the aligned
// origin abase), record r field f <-> shared element sbase + f Sp + h_f + r, h_f = (run start of field f) mod V.
// kLoad: global -> shared (chunks loaded kOnChipSkinnyDepth at a time, then scattered); else shared -> global.
template <bool kLoad, int kLD, int kGD, typename T>
TI_DEVICE void skinny_aos_side(T* abase, T* sm, uint32_t aos, uint32_t run0, uint32_t L, const SkinnySegment& s,
                               const DivMod<uint32_t>& dmF) {
  constexpr uint32_t V = 16 / sizeof(T);
  const uint32_t F = dmF.d;
  const uint32_t end = aos + s.cnt * F;       // virtual index past the range
  const uint32_t c_lo = aos / V, c_hi = (end + V - 1) / V;  // chunks touching the range
  const uint32_t nch = c_hi - c_lo;
  // Shared index of the element at AoS offset o (record-major from the range's start).
  auto sidx = [&](uint32_t r, uint32_t f) { return s.sbase + f * s.Sp + ((run0 + f * L) & (V - 1)) + r; };
  constexpr int D = kLoad ? kLD : kGD;
  for (uint32_t u0 = threadIdx.x; u0 < nch; u0 += D * blockDim.x) {
    Chunk16<T> x[D];
    bool fullc[D];
#pragma unroll
    for (int d = 0; d < D; ++d) {
      const uint32_t u = u0 + d * blockDim.x;
      const uint32_t c = c_lo + u;
      fullc[d] = u < nch && c * V >= aos && c * V + V <= end;
      if (kLoad && fullc[d]) x[d].v = reinterpret_cast<const uint4*>(abase)[c];
    }
#pragma unroll
    for (int d = 0; d < D; ++d) {
      const uint32_t u = u0 + d * blockDim.x;
      if (u >= nch) continue;
      const uint32_t c = c_lo + u;
      const uint32_t v0 = c * V < aos ? aos - c * V : 0;  // the chunk's elements [v0, v1) lie in the range
      const uint32_t v1 = c * V + V > end ? end - c * V : V;
      uint32_t f;
      uint32_t r = dmF.div(c * V + v0 - aos, &f);
      if (fullc[d]) {
#pragma unroll
        for (uint32_t v = 0; v < V; ++v) {
          if (kLoad) {
            sm[sidx(r, f)] = x[d].e[v];
          } else {
            x[d].e[v] = sm[sidx(r, f)];
          }
          if (++f == F) {
            f = 0;
            ++r;
          }
        }
        if (!kLoad) reinterpret_cast<uint4*>(abase)[c] = x[d].v;
      } else {
        for (uint32_t v = v0; v < v1; ++v) {
          if (kLoad) {
            sm[sidx(r, f)] = abase[c * V + v];
          } else {
            abase[c * V + v] = sm[sidx(r, f)];
          }
          if (++f == F) {
            f = 0;
            ++r;
          }
        }
      }
    }
  }
}

// The SoA side of a segment: field f's run of cnt elements at virtual index run0 + f L <-> shared elements
// [sbase + f Sp + h_f, + cnt). Chunk-aligned on both sides; a run's partial end chunks element by element.
template <bool kLoad, int kLD, typename T>
TI_DEVICE void skinny_soa_side(T* abase, T* sm, uint32_t run0, uint32_t L, const SkinnySegment& s, uint32_t F) {
  constexpr uint32_t V = 16 / sizeof(T);
  const uint32_t C = (s.cnt + V - 1) / V + 1;  // chunks a run touches, at most
  const DivMod<uint32_t> dmC(C);
  const uint32_t units = F * C;
  constexpr int D = kLoad ? kLD : 1;
  for (uint32_t u0 = threadIdx.x; u0 < units; u0 += D * blockDim.x) {
    Chunk16<T> x[D];
    bool fullc[D];
    uint32_t cc[D], sb[D], lo[D], hi[D];
#pragma unroll
    for (int d = 0; d < D; ++d) {
      const uint32_t u = u0 + d * blockDim.x;
      uint32_t k;
      const uint32_t f = dmC.div(u < units ? u : 0, &k);
      const uint32_t start = run0 + f * L, end = start + s.cnt;
      const uint32_t c = start / V + k;
      cc[d] = c;
      lo[d] = start;
      hi[d] = u < units ? end : 0;
      // the run's chunk c in shared memory: element c V - (start rounded down to V) of the run's slot
      sb[d] = s.sbase + f * s.Sp + (c * V - start / V * V);
      fullc[d] = u < units && c * V >= start && c * V + V <= end;
      if (kLoad && fullc[d]) x[d].v = reinterpret_cast<const uint4*>(abase)[c];
    }
#pragma unroll
    for (int d = 0; d < D; ++d) {
      const uint32_t c = cc[d];
      if (fullc[d]) {
        if (kLoad) {
          reinterpret_cast<uint4*>(sm + sb[d])[0] = x[d].v;
        } else {
          reinterpret_cast<uint4*>(abase)[c] = reinterpret_cast<const uint4*>(sm + sb[d])[0];
        }
      } else {
        for (uint32_t v = 0; v < V; ++v) {
          const uint32_t e = c * V + v;
          if (e < lo[d] || e >= hi[d]) continue;
          if (kLoad) {
            sm[sb[d] + v] = abase[e];
          } else {
            abase[e] = sm[sb[d] + v];
          }
        }
      }
    }
  }
}

// The block's segments of one wave: tiles [first, first + count) of the wave, P tiles per matrix, Lt records a
// tile, L records a matrix. Calls fn(segment) for each, in order; returns the elements of shared memory they span.
template <typename Fn>
TI_DEVICE uint32_t skinny_segments(uint32_t first, uint32_t count, uint32_t P, uint32_t Lt, uint32_t L, uint32_t F,
                                   uint32_t mn, uint32_t V, Fn&& fn) {
  if (count == 0) return 0;
  const uint32_t last = first + count - 1;
  uint32_t sbase = 0;
  for (uint32_t mat = first / P; mat <= last / P; ++mat) {
    const uint32_t t0 = mat * P > first ? 0 : first - mat * P;
    const uint32_t t1 = (mat + 1) * P - 1 < last ? P - 1 : last - mat * P;  // inclusive
    SkinnySegment s;
    s.mat_off = mat * mn;
    s.l0 = t0 * Lt;
    const uint32_t l1 = (t1 + 1) * Lt < L ? (t1 + 1) * Lt : L;
    s.cnt = l1 - s.l0;
    s.sbase = sbase;
    s.Sp = (s.cnt + V - 1 + V - 1) / V * V;
    sbase += F * s.Sp;
    fn(s);
  }
  return sbase;
}

// The register stash (kStash > 0): a tensor just past the shared memory keeps part of each block's tiles in
// registers across the grid barrier. Those tiles are staged in shared memory as usual, copied as they lie there into
// kStash 16-byte registers per thread (stash_copy in onchip.cuh), and the shared memory takes the rest of the
// block's tiles; after the barrier the rest is written back, the stash returns to shared memory, and its tiles are
// written back in turn. One read and one write of each element in global memory, as without it; the stashed tiles
// cross shared memory twice more. The stash kernel runs kOnChipStashThreads threads with up to 128 registers each
// (kOnChipStashChunks of them 16-byte chunks: kOnChipStashBytes = 128 KiB a block, 16.5 MiB more on an H100 / H200).

// One wave: the block's segments staged, the grid barrier, written back transposed. With the stash, the first
// geo.stash_tiles of the block's tiles wait in registers.
template <typename T, int kLD, int kGD, int kStash>
TI_DEVICE void onchip_skinny_wave(T* data, const OnChipGeo& geo, T* sm, uint32_t first, uint32_t count) {
  constexpr uint32_t V = 16 / sizeof(T);
  const bool to_soa = geo.tc == geo.n;  // whole rows (records along m); else whole columns (records along n)
  const uint32_t F = to_soa ? geo.n : geo.m, L = to_soa ? geo.m : geo.n, Lt = to_soa ? geo.tr : geo.tc;
  const uint32_t P = geo.tiles_i.d, mn = geo.m * geo.n;
  const uint32_t e0 = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(data) & 15u) / sizeof(T);
  T* abase = data - e0;  // 16-byte aligned; virtual index e0 + i is element i of the wave
  const DivMod<uint32_t> dmF(F);
  // Tiles [t0, t0 + cnt): the AoS side or the runs, staged (load) or written back (store). Returns the shared
  // elements they span.
  auto side = [&](bool aos, bool load, uint32_t t0, uint32_t cnt) {
    return skinny_segments(t0, cnt, P, Lt, L, F, mn, V, [&](const SkinnySegment& s) {
      const uint32_t aos0 = e0 + s.mat_off + s.l0 * F, run0 = e0 + s.mat_off + s.l0;
      if (aos) {
        if (load) {
          skinny_aos_side<true, kLD, kGD>(abase, sm, aos0, run0, L, s, dmF);
        } else {
          skinny_aos_side<false, kLD, kGD>(abase, sm, aos0, run0, L, s, dmF);
        }
      } else {
        if (load) {
          skinny_soa_side<true, kLD>(abase, sm, run0, L, s, F);
        } else {
          skinny_soa_side<false, kLD>(abase, sm, run0, L, s, F);
        }
      }
    });
  };
  if constexpr (kStash == 0) {
    side(to_soa, true, first, count);  // the source side: AoS for AoS -> SoA, the runs for SoA -> AoS
    __syncthreads();
    cooperative_groups::this_grid().sync();
    side(!to_soa, false, first, count);
  } else {
    const uint32_t cs = count < geo.stash_tiles ? count : geo.stash_tiles;
    uint4 stash[kStash];
    const uint32_t chunks = (side(to_soa, true, first, cs) * static_cast<uint32_t>(sizeof(T)) + 15u) / 16u;
    __syncthreads();
    stash_copy<kStash, true>(stash, sm, chunks);
    __syncthreads();
    side(to_soa, true, first + cs, count - cs);
    __syncthreads();
    cooperative_groups::this_grid().sync();
    side(!to_soa, false, first + cs, count - cs);
    __syncthreads();
    stash_copy<kStash, false>(stash, sm, chunks);
    __syncthreads();
    side(!to_soa, false, first, cs);
  }
}

template <typename T, bool kWaves, int kLD, int kGD, int kStash>
TI_DEVICE void onchip_skinny_body(T* __restrict__ base, const OnChipGeo& geo) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  uint32_t first;
  const uint32_t full = onchip_block_tiles(geo, first);
  onchip_for_each_wave<kWaves>(base, geo, first, full, [&](T* data, uint32_t count) {
    onchip_skinny_wave<T, kLD, kGD, kStash>(data, geo, sm, first, count);
  });
}

// kLD / kGD: chunks in flight (kOnChipSkinnyDepth, kOnChipSkinnyGather; other values for the harness's sweep).
template <typename T, bool kWaves = false, int kLD = kOnChipSkinnyDepth, int kGD = kOnChipSkinnyGather>
__global__ void __launch_bounds__(kOnChipThreads, 1) onchip_skinny_kernel(T* __restrict__ base, OnChipGeo geo) {
  onchip_skinny_body<T, kWaves, kLD, kGD, 0>(base, geo);
}

// The same with the register stash: kOnChipStashThreads threads, geo.stash_tiles > 0, at most kOnChipStashBytes of
// the block's shared-memory image of those tiles (onchip_skinny_smem_bytes of them).
template <typename T, bool kWaves = false, int kStash = kOnChipStashChunks>
__global__ void __launch_bounds__(kOnChipStashThreads, 1) onchip_skinny_stash_kernel(T* __restrict__ base,
                                                                                    OnChipGeo geo) {
  onchip_skinny_body<T, kWaves, kOnChipSkinnyDepth, kOnChipSkinnyGather, kStash>(base, geo);
}

}  // namespace kernels
}  // namespace torch_inplace

#ifdef TORCH_INPLACE_HIP_CHECK
namespace torch_inplace {
namespace kernels {
template __global__ void onchip_skinny_kernel<uint8_t>(uint8_t*, OnChipGeo);
template __global__ void onchip_skinny_kernel<uint16_t, true>(uint16_t*, OnChipGeo);
template __global__ void onchip_skinny_kernel<uint32_t>(uint32_t*, OnChipGeo);
template __global__ void onchip_skinny_kernel<uint64_t, true>(uint64_t*, OnChipGeo);
template __global__ void onchip_skinny_kernel<Bytes16>(Bytes16*, OnChipGeo);
template __global__ void onchip_skinny_stash_kernel<uint8_t>(uint8_t*, OnChipGeo);
template __global__ void onchip_skinny_stash_kernel<uint32_t, true>(uint32_t*, OnChipGeo);
template __global__ void onchip_skinny_stash_kernel<Bytes16>(Bytes16*, OnChipGeo);
}  // namespace kernels
}  // namespace torch_inplace
#endif
