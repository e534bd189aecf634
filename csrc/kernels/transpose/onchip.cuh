// In-place transposition of a whole (batch, m, n) tensor that fits in the GPU's shared memory: one cooperative
// kernel reads every element once into shared memory, waits at a grid-wide barrier, and writes every element
// once to its transposed position. Nothing is read after the barrier, so no write can clobber an unread element;
// no scratch in global memory, one launch, one read and one write of each element (the copy's traffic).
//
// The tensor is cut into TR x TC tiles (tiles of a matrix never straddle matrices); block b holds the tiles
// [b * per_block, (b + 1) * per_block). A tile is staged row-major with an odd row stride S in elements, so the
// write phase's column reads spread over the banks. Each thread walks its elements by a mixed-radix counter
// (tile, row, col) advanced by the block size, so the loops need no division.
//
// A batch too large for the shared memory whose matrices fit one by one goes in waves of whole matrices: each wave
// is staged, meets the grid barrier and is written back as above. Waves touch disjoint matrices, so a block may
// stage the next wave while others still write the current one, and the grid meets once per wave.
//
// Launch: cooperatively (cudaLaunchAttributeCooperative / hipLaunchCooperativeKernel), grid = number of blocks
// that hold all tiles of a wave (at most one block per SM), kOnChipThreads threads, dynamic shared memory
// onchip_smem_bytes(...). Device code only; plain types.
#pragma once

#include <cstdint>

#include "kernels/common.cuh"
#include "kernels/transpose/divmod.cuh"

#if TI_HIP
#include <hip/hip_cooperative_groups.h>
#else
#include <cooperative_groups.h>
#endif

namespace torch_inplace {
namespace kernels {

constexpr int kOnChipThreads = 1024;
// Elements in flight per thread and pass of a phase's loop, for every element size. H200, GPU time of one call
// (benchmarks/onchip_harness.cu, which sweeps it): 4 against the 16 (1-4 bytes) or 64 / size (8, 16 bytes) of
// before is 1.2-1.4x faster on tensors of 16-64 KB per block (4-byte (22391, 23): 9.15 -> 7.01 us; 8-byte
// (55522, 5): 7.33 -> 6.69 us), 1.1-1.2x at 71-200 KB per block, within 2% at the smallest and largest 1-, 2-byte
// cases. The blocks run each phase's loop once or a few times: shorter unrolled code wins over more loads in flight.
template <typename T>
constexpr int onchip_unroll() {
  return 4;
}

// Geometry of an on-chip transposition (built on the host by the launcher from the plan).
struct OnChipGeo {
  uint32_t m = 0, n = 0;             // each matrix is m x n, becomes n x m
  uint32_t tr = 1, tc = 1, s = 1;    // tile rows / cols, smem row stride (elements, odd)
  uint32_t tiles = 0;                // tiles in a wave (the whole tensor where there is one wave)
  uint32_t per_block = 0;            // tiles a block holds
  DivMod<uint32_t> tiles_j, tiles_i; // tiles per row of tiles, per matrix (tiles_i = tiles_j * row tiles)
  uint32_t waves = 1;                // waves of whole matrices
  uint32_t last_tiles = 0;           // tiles in the last wave (<= tiles)
  int64_t wave_elems = 0;            // elements of a full wave (the next wave starts that far on)
  uint32_t stash_tiles = 0;          // the stash kernels: the first of a block's tiles, which wait in registers
                                     // across the grid barrier (onchip_wave, onchip_skinny_wave)
};

// The geometry of `batch` m x n matrices cut into tr x tc tiles staged with row stride s, per_block tiles a block
// (the plan's oc_* fields), in waves of `wave` matrices (0: one wave), the first `stash_tiles` of each block's tiles in
// registers (the stash kernels; 0: none).
inline OnChipGeo onchip_geo(int64_t batch, int64_t m, int64_t n, int64_t tr, int64_t tc, int64_t s, int64_t per_block,
                            int64_t wave = 0, int64_t stash_tiles = 0) {
  OnChipGeo geo;
  geo.m = static_cast<uint32_t>(m);
  geo.n = static_cast<uint32_t>(n);
  geo.tr = static_cast<uint32_t>(tr);
  geo.tc = static_cast<uint32_t>(tc);
  geo.s = static_cast<uint32_t>(s);
  const int64_t tj = (n + tc - 1) / tc, ti = (m + tr - 1) / tr;
  const int64_t w = wave > 0 && wave < batch ? wave : batch;
  const int64_t waves = (batch + w - 1) / w;
  geo.tiles = static_cast<uint32_t>(w * ti * tj);
  geo.per_block = static_cast<uint32_t>(per_block);
  geo.tiles_j = DivMod<uint32_t>(static_cast<uint32_t>(tj));
  geo.tiles_i = DivMod<uint32_t>(static_cast<uint32_t>(ti * tj));
  geo.waves = static_cast<uint32_t>(waves);
  geo.last_tiles = static_cast<uint32_t>((batch - (waves - 1) * w) * ti * tj);
  geo.wave_elems = w * m * n;
  geo.stash_tiles = static_cast<uint32_t>(stash_tiles);
  return geo;
}

struct OnChipTile {
  uint32_t src, dst, rows, cols;     // element offsets of the tile's corner, in the source and the result
};

// Bytes of dynamic shared memory: the tile table, then the tiles (16-byte aligned).
TI_HOST_DEVICE uint32_t onchip_table_bytes(uint32_t per_block) {
  return (per_block * static_cast<uint32_t>(sizeof(OnChipTile)) + 15u) / 16u * 16u;
}

// Phase 1 of a wave: the block's `count` tiles of the wave at `data` (table offsets from there) into shared memory
// (tile k at tiles + k * tr * s), walking (tile, i, j) in the source's order.
template <typename T, int U>
TI_DEVICE void onchip_stage(const T* __restrict__ data, const OnChipGeo& geo, const OnChipTile* table, T* tiles,
                            uint32_t count) {
  const uint32_t tile_elems = geo.tr * geo.tc;
  const uint32_t tile_smem = geo.tr * geo.s;
  const uint32_t total = count * tile_elems;
  const uint32_t step = blockDim.x;
  const uint32_t stride = U * step;
  const uint32_t dt = step / tile_elems, dr = step % tile_elems, di = dr / geo.tc, dj = dr % geo.tc;
  uint32_t tl = threadIdx.x / tile_elems, w = threadIdx.x % tile_elems;
  uint32_t i = w / geo.tc, j = w % geo.tc;
  for (uint32_t e0 = threadIdx.x; e0 < total; e0 += stride) {
    T v[U];
    uint32_t at[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      at[u] = ~0u;
      if (e0 + u * step < total) {
        const OnChipTile t = table[tl];
        if (i < t.rows && j < t.cols) {
          v[u] = data[t.src + i * geo.n + j];
          at[u] = tl * tile_smem + i * geo.s + j;
        }
      }
      advance3(tl, i, j, dt, di, dj, geo.tr, geo.tc);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (at[u] != ~0u) tiles[at[u]] = v[u];
    }
  }
}

// Phase 2 of a wave: the staged tiles to their transposed places, walking (tile, j, i) in the result's order.
template <typename T, int U>
TI_DEVICE void onchip_write(T* __restrict__ data, const OnChipGeo& geo, const OnChipTile* table, const T* tiles,
                            uint32_t count) {
  const uint32_t tile_elems = geo.tr * geo.tc;
  const uint32_t tile_smem = geo.tr * geo.s;
  const uint32_t total = count * tile_elems;
  const uint32_t step = blockDim.x;
  const uint32_t stride = U * step;
  const uint32_t dt = step / tile_elems, dr = step % tile_elems, dj = dr / geo.tr, di = dr % geo.tr;
  uint32_t tl = threadIdx.x / tile_elems, w = threadIdx.x % tile_elems;
  uint32_t j = w / geo.tr, i = w % geo.tr;
  for (uint32_t e0 = threadIdx.x; e0 < total; e0 += stride) {
    T v[U];
    uint32_t at[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      at[u] = ~0u;
      if (e0 + u * step < total) {
        const OnChipTile t = table[tl];
        if (i < t.rows && j < t.cols) {
          v[u] = tiles[tl * tile_smem + i * geo.s + j];
          at[u] = t.dst + j * geo.m + i;
        }
      }
      advance3(tl, j, i, dt, dj, di, geo.tc, geo.tr);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (at[u] != ~0u) data[at[u]] = v[u];
    }
  }
}

// A block's register stash (kStash 16-byte chunks a thread; thread t holds chunks t, t + blockDim, ...): the first
// `chunks` 16-byte chunks of shared memory at `sm` copied in (kIn) or back out. Callers sync the block around it.
template <int kStash, bool kIn>
TI_DEVICE void stash_copy(uint4 (&stash)[kStash], void* sm, uint32_t chunks) {
  uint4* sm4 = reinterpret_cast<uint4*>(sm);
#pragma unroll
  for (int k = 0; k < kStash; ++k) {
    const uint32_t c = threadIdx.x + k * blockDim.x;
    if (c < chunks) {
      if (kIn) {
        stash[k] = sm4[c];
      } else {
        sm4[c] = stash[k];
      }
    }
  }
}

// One wave: the block's `count` tiles staged, the grid barrier, the tiles written back transposed. Every block of
// the grid calls it for every wave (the barrier needs them all). kStash > 0 (onchip_transpose_stash_kernel): the
// first geo.stash_tiles of them are staged first and wait in registers across the barrier (their shared-memory image
// copied as it lies), the rest take the shared memory; after the barrier the rest go out, the stash comes back into
// shared memory, and its tiles go out.
template <typename T, int U, int kStash = 0>
TI_DEVICE void onchip_wave(T* __restrict__ data, const OnChipGeo geo, const OnChipTile* table, T* tiles,
                           uint32_t count) {
  if constexpr (kStash == 0) {
    onchip_stage<T, U>(data, geo, table, tiles, count);
    // Every element of the wave is on chip once every block is here.
    __syncthreads();
    cooperative_groups::this_grid().sync();
    onchip_write<T, U>(data, geo, table, tiles, count);
  } else {
    const uint32_t cs = count < geo.stash_tiles ? count : geo.stash_tiles;
    const uint32_t chunks = (cs * geo.tr * geo.s * static_cast<uint32_t>(sizeof(T)) + 15u) / 16u;
    uint4 stash[kStash];
    onchip_stage<T, U>(data, geo, table, tiles, cs);
    __syncthreads();
    stash_copy<kStash, true>(stash, tiles, chunks);
    __syncthreads();
    onchip_stage<T, U>(data, geo, table + cs, tiles, count - cs);
    __syncthreads();
    cooperative_groups::this_grid().sync();
    onchip_write<T, U>(data, geo, table + cs, tiles, count - cs);
    __syncthreads();
    stash_copy<kStash, false>(stash, tiles, chunks);
    __syncthreads();
    onchip_write<T, U>(data, geo, table, tiles, cs);
  }
}

// The block's tiles of a full wave: [first, first + count), count returned (0 for a block past the tiles).
TI_DEVICE uint32_t onchip_block_tiles(const OnChipGeo& geo, uint32_t& first) {
  first = blockIdx.x * geo.per_block;
  return first < geo.tiles ? (geo.tiles - first < geo.per_block ? geo.tiles - first : geo.per_block) : 0;
}

// Runs wave(data, count) for each wave of the batch (kWaves; else once for the whole tensor): data the wave's first
// element, count the block's tiles in that wave (from `first`; the last wave may hold fewer). Between waves the
// block's shared memory is free again once the block is past its writes (no other block writes it).
template <bool kWaves, typename T, typename WaveFn>
TI_DEVICE void onchip_for_each_wave(T* base, const OnChipGeo& geo, uint32_t first, uint32_t full, WaveFn&& wave) {
  if constexpr (!kWaves) {
    wave(base, full);
  } else {
    T* data = base;
    for (uint32_t wv = 0; wv < geo.waves; ++wv) {
      const uint32_t wave_tiles = wv + 1 == geo.waves ? geo.last_tiles : geo.tiles;
      const uint32_t count = first < wave_tiles ? (wave_tiles - first < full ? wave_tiles - first : full) : 0;
      if (wv > 0) __syncthreads();
      wave(data, count);
      data += geo.wave_elems;
    }
  }
}

// The kernels' body: the block's tile table (offsets from a wave's first element: every wave's matrices are laid
// out alike, so one table serves them all; the last wave, with fewer matrices, takes its first tiles), then the waves.
template <typename T, int U, bool kWaves, int kStash>
TI_DEVICE void onchip_body(T* __restrict__ base, const OnChipGeo& geo) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  OnChipTile* table = reinterpret_cast<OnChipTile*>(smem_raw);
  T* tiles = reinterpret_cast<T*>(smem_raw + onchip_table_bytes(geo.per_block));
  uint32_t first;
  const uint32_t full = onchip_block_tiles(geo, first);
  const uint32_t mn = geo.m * geo.n;
  for (uint32_t k = threadIdx.x; k < full; k += blockDim.x) {
    uint32_t rest, tj;
    const uint32_t b = geo.tiles_i.div(first + k, &rest);
    const uint32_t ti = geo.tiles_j.div(rest, &tj);
    const uint32_t r0 = ti * geo.tr, c0 = tj * geo.tc;
    OnChipTile t;
    t.src = b * mn + r0 * geo.n + c0;
    t.dst = b * mn + c0 * geo.m + r0;
    t.rows = geo.m - r0 < geo.tr ? geo.m - r0 : geo.tr;
    t.cols = geo.n - c0 < geo.tc ? geo.n - c0 : geo.tc;
    table[k] = t;
  }
  __syncthreads();
  onchip_for_each_wave<kWaves>(base, geo, first, full, [&](T* data, uint32_t count) {
    onchip_wave<T, U, kStash>(data, geo, table, tiles, count);
  });
}

// U: elements in flight per thread (onchip_unroll; other values for benchmarks/onchip_harness.cu). kWaves: the
// batch in geo.waves waves (an instantiation of its own: with the wave loop in it, the one-wave kernel ran 12%
// slower on an H200, its 64-bit wave offsets rebuilt for every element's address).
template <typename T, int U = onchip_unroll<T>(), bool kWaves = false>
__global__ void __launch_bounds__(kOnChipThreads, 1) onchip_transpose_kernel(T* __restrict__ base, OnChipGeo geo) {
  onchip_body<T, U, kWaves, 0>(base, geo);
}

// With a register stash (tensors just past the shared memory): kOnChipStashThreads threads, each holding
// kOnChipStashChunks 16-byte chunks, so a block holds kOnChipStashBytes more (128 KiB: 16.5 MiB on an H100 / H200);
// geo.stash_tiles > 0 tiles a block whose image (stash_tiles * tr * s elements) fits them.
constexpr int kOnChipStashThreads = 512;
constexpr int kOnChipStashChunks = 16;
constexpr int64_t kOnChipStashBytes = int64_t{kOnChipStashThreads} * kOnChipStashChunks * 16;

template <typename T, bool kWaves = false>
__global__ void __launch_bounds__(kOnChipStashThreads, 1) onchip_transpose_stash_kernel(T* __restrict__ base,
                                                                                       OnChipGeo geo) {
  onchip_body<T, onchip_unroll<T>(), kWaves, kOnChipStashChunks>(base, geo);
}

}  // namespace kernels
}  // namespace torch_inplace

#ifdef TORCH_INPLACE_HIP_CHECK
namespace torch_inplace {
namespace kernels {
template __global__ void onchip_transpose_kernel<uint8_t>(uint8_t*, OnChipGeo);
template __global__ void onchip_transpose_kernel<uint16_t>(uint16_t*, OnChipGeo);
template __global__ void onchip_transpose_kernel<uint32_t>(uint32_t*, OnChipGeo);
template __global__ void onchip_transpose_kernel<uint64_t>(uint64_t*, OnChipGeo);
template __global__ void onchip_transpose_kernel<Bytes16>(Bytes16*, OnChipGeo);
template __global__ void onchip_transpose_kernel<uint8_t, 4, true>(uint8_t*, OnChipGeo);
template __global__ void onchip_transpose_kernel<Bytes16, 4, true>(Bytes16*, OnChipGeo);
template __global__ void onchip_transpose_stash_kernel<uint16_t>(uint16_t*, OnChipGeo);
template __global__ void onchip_transpose_stash_kernel<uint64_t, true>(uint64_t*, OnChipGeo);
}  // namespace kernels
}  // namespace torch_inplace
#endif
