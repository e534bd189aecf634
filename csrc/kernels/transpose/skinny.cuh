// Skinny AoS <-> SoA path on the GPU: Gomez-Luna/Sung sequence 2.1 (paper 000, sec. 4-5) with a Karlsson cut
// (paper 004, sec. 3.1.3) for the N mod k remainder rows. The same structure as the CPU engine's skinny()
// (csrc/ops/cpu/transpose_kernel.cpp):
//   group_tiles_kernel     010!: count contiguous R x C tiles, each transposed through shared memory (a block
//                          takes G tiles at once so that short tiles still fill it); _vec_ and _hybrid_ variants
//                          with 16-byte global accesses;
//   super_cycles_kernel    100!: (P, Q, W) -> (Q, P, W) of W-unit super-elements by PTTWAC-style cycle following,
//                          one warp per chain, one flag bit per super-element (protocol below);
//   ordered_shift_kernel   the cut's row spreading / gathering: an in-place memmove of F rows by different
//                          amounts, chunks taken in address order through a ticket, each chunk writing only once
//                          the chunks its destination overlaps have loaded theirs (paper 000 sec. 6.2, Fig. 8,
//                          without the chain: a chunk signals right after its own load);
//   remainder_tails_kernel the remainder's r x F block <-> the tails of the F rows.
#pragma once

#include <cstdint>

#include "kernels/common.cuh"
#include "kernels/transpose/divmod.cuh"

namespace torch_inplace {
namespace kernels {

constexpr int kGroupThreads = 512;
constexpr int kGroupUnroll = 8;

// G consecutive R x C tiles (row-major, contiguous) -> C x R each. Input element (g, i, j) is staged at
// g * R * S + i * S + j with S odd (>= C), so the column reads of the write phase hit distinct banks.
template <typename T>
__global__ void __launch_bounds__(kGroupThreads)
    group_tiles_kernel(T* __restrict__ base, int64_t tiles, uint32_t G, uint32_t R, uint32_t C, uint32_t S,
                       DivMod<uint32_t> dm_tile, DivMod<uint32_t> dm_c, DivMod<uint32_t> dm_r) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  const uint32_t rc = R * C;
  const int64_t groups = (tiles + G - 1) / G;
  constexpr int K = kGroupUnroll;
  for (int64_t grp = blockIdx.x; grp < groups; grp += gridDim.x) {
    const int64_t t0 = grp * G;
    const uint32_t ng = static_cast<uint32_t>(tiles - t0 < G ? tiles - t0 : G);
    const uint32_t total = ng * rc;
    T* g = base + t0 * static_cast<int64_t>(rc);
    for (uint32_t u0 = threadIdx.x; u0 < total; u0 += blockDim.x * K) {
      T v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t u = u0 + s * blockDim.x;
        if (u < total) v[s] = g[u];
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t u = u0 + s * blockDim.x;
        if (u < total) {
          uint32_t o, j;
          const uint32_t tg = dm_tile.div(u, &o);
          const uint32_t i = dm_c.div(o, &j);
          sm[tg * R * S + i * S + j] = v[s];
        }
      }
    }
    __syncthreads();
    for (uint32_t u0 = threadIdx.x; u0 < total; u0 += blockDim.x * K) {
      T v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t u = u0 + s * blockDim.x;
        if (u < total) {
          uint32_t o, i;
          const uint32_t tg = dm_tile.div(u, &o);
          const uint32_t j = dm_r.div(o, &i);  // output (j, i) of the C x R result
          v[s] = sm[tg * R * S + i * S + j];
        }
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t u = u0 + s * blockDim.x;
        if (u < total) g[u] = v[s];
      }
    }
    __syncthreads();
  }
}

// The same with 16-byte global accesses (V = uint4 holding VEC = 16 / sizeof(T) elements): for 1/2/4/8-byte
// elements when each group's bytes and the base are 16-byte aligned (R*C*sizeof(T) % 16 == 0). Same staging. Each
// thread steps its elements' (tile, row, column) without divisions (advance3 from vector to vector, +1 within
// one): with two divisions per element, the fp32 tiles ran 1.11-1.19x slower on an H200
// (history_tiles_harness.log, twenty-fifth session).
template <typename T, typename V>
__global__ void __launch_bounds__(kGroupThreads)
    group_tiles_vec_kernel(T* __restrict__ base, int64_t tiles, uint32_t G, uint32_t R, uint32_t C, uint32_t S,
                           DivMod<uint32_t> dm_tile, DivMod<uint32_t> dm_c, DivMod<uint32_t> dm_r) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  constexpr int VEC = static_cast<int>(sizeof(V) / sizeof(T));
  constexpr int K = 4;
  union Pack {
    V v;
    T e[VEC];
  };
  const uint32_t rc = R * C;
  const int64_t groups = (tiles + G - 1) / G;
  for (int64_t grp = blockIdx.x; grp < groups; grp += gridDim.x) {
    const int64_t t0 = grp * G;
    const uint32_t ng = static_cast<uint32_t>(tiles - t0 < G ? tiles - t0 : G);
    const uint32_t total_v = ng * rc / VEC;
    V* g = reinterpret_cast<V*>(base + t0 * static_cast<int64_t>(rc));
    // (tile, i, j) of the thread's vector's first element in the source's order, stepped from vector to vector
    // (VEC * blockDim elements) and from element to element without divisions.
    const uint32_t step = VEC * blockDim.x, dt = step / rc, dr = step % rc;
    const uint32_t di_src = dr / C, dj_src = dr % C, dj_res = dr / R, di_res = dr % R;
    uint32_t o, tv, iv, jv;
    tv = dm_tile.div(threadIdx.x * VEC, &o);
    iv = dm_c.div(o, &jv);
    for (uint32_t w0 = threadIdx.x; w0 < total_v; w0 += blockDim.x * K) {
      Pack pk[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t w = w0 + s * blockDim.x;
        if (w < total_v) pk[s].v = g[w];
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t w = w0 + s * blockDim.x;
        if (w < total_v) {
          uint32_t tg = tv, i = iv, j = jv;
#pragma unroll
          for (int q = 0; q < VEC; ++q) {
            sm[tg * R * S + i * S + j] = pk[s].e[q];
            next3(tg, i, j, R, C);
          }
        }
        advance3(tv, iv, jv, dt, di_src, dj_src, R, C);
      }
    }
    __syncthreads();
    // The same for the result's order: output (j, i) of tile tg's C x R result.
    tv = dm_tile.div(threadIdx.x * VEC, &o);
    jv = dm_r.div(o, &iv);
    for (uint32_t w0 = threadIdx.x; w0 < total_v; w0 += blockDim.x * K) {
      Pack pk[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t w = w0 + s * blockDim.x;
        if (w < total_v) {
          uint32_t tg = tv, i = iv, j = jv;
#pragma unroll
          for (int q = 0; q < VEC; ++q) {
            pk[s].e[q] = sm[tg * R * S + i * S + j];
            next3(tg, j, i, C, R);
          }
        }
        advance3(tv, jv, iv, dt, dj_res, di_res, C, R);
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t w = w0 + s * blockDim.x;
        if (w < total_v) g[w] = pk[s].v;
      }
    }
    __syncthreads();
  }
}

// The same R x C tiles with 16-byte loads staged unpadded through 16-byte shared stores (conflict-free: tile g's
// element (i, j) at g*R*C + i*C + j), then one element per thread and step gathered at stride C from shared memory
// and stored: no bank conflicts where C words is odd, two-way where it is 2 mod 4. 4- and 8-byte elements, aligned
// as for group_tiles_vec_kernel. Measured on an H200 (benchmarks/tiles_harness.cu, history_tiles_harness.log):
// 1.06-1.18x faster than group_tiles_vec_kernel on AoS -> SoA tiles (C = the fields), slower where C words is a
// multiple of 8 (the SoA -> AoS tiles, C = k): the launcher picks it by that (hybrid_tiles).
template <typename T>
__global__ void __launch_bounds__(kGroupThreads)
    group_tiles_hybrid_kernel(T* __restrict__ base, int64_t tiles, uint32_t G, uint32_t R, uint32_t C,
                              DivMod<uint32_t> dm_tile, DivMod<uint32_t> dm_r) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  constexpr int VEC = static_cast<int>(16 / sizeof(T));
  constexpr int K = 4, K2 = 8;
  const uint32_t rc = R * C;
  const int64_t groups = (tiles + G - 1) / G;
  for (int64_t grp = blockIdx.x; grp < groups; grp += gridDim.x) {
    const int64_t t0 = grp * G;
    const uint32_t ng = static_cast<uint32_t>(tiles - t0 < G ? tiles - t0 : G);
    const uint32_t total = ng * rc, total_v = total / VEC;
    T* g = base + t0 * static_cast<int64_t>(rc);
    const uint4* gv = reinterpret_cast<const uint4*>(g);
    uint4* sv = reinterpret_cast<uint4*>(sm);
    for (uint32_t w0 = threadIdx.x; w0 < total_v; w0 += blockDim.x * K) {
      uint4 v[K];
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t w = w0 + s * blockDim.x;
        if (w < total_v) v[s] = gv[w];
      }
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const uint32_t w = w0 + s * blockDim.x;
        if (w < total_v) sv[w] = v[s];
      }
    }
    __syncthreads();
    // Output element u is (j, i) of tile tg's C x R result: a counter from the thread's first u, stepped by the
    // block size without divisions.
    const uint32_t step = blockDim.x, dt = step / rc, dr = step % rc, dj = dr / R, di = dr % R;
    uint32_t o, i;
    uint32_t tg = dm_tile.div(threadIdx.x, &o);
    uint32_t j = dm_r.div(o, &i);
    for (uint32_t u0 = threadIdx.x; u0 < total; u0 += blockDim.x * K2) {
      T v[K2];
#pragma unroll
      for (int s = 0; s < K2; ++s) {
        const uint32_t u = u0 + s * blockDim.x;
        if (u < total) v[s] = sm[tg * rc + i * C + j];
        advance3(tg, j, i, dt, dj, di, C, R);
      }
#pragma unroll
      for (int s = 0; s < K2; ++s) {
        const uint32_t u = u0 + s * blockDim.x;
        if (u < total) g[u] = v[s];
      }
    }
    __syncthreads();
  }
}

// Whether R x C tiles of T take group_tiles_hybrid_kernel: 4- or 8-byte elements whose rows of C are not a multiple
// of 8 words (the gather's stride in shared memory).
template <typename T>
TI_HOST_DEVICE bool hybrid_tiles(int64_t C) {
  return (sizeof(T) == 4 || sizeof(T) == 8) && (C * static_cast<int64_t>(sizeof(T)) / 4) % 8 != 0;
}

constexpr int kCycleThreads = 256;

// 100!: batch x (P, Q) super-elements of Z units of U -> batch x (Q, P); position p = a*Q + b moves to
// b*P + a. A super-element wider than a warp's registers is moved as `chunks` slices of at most W units (slice c:
// units [c*W, min(Z, (c+1)*W))), each slice by its own chains: the slices follow the same cycles and touch disjoint
// bytes. flags: one bit per slice, index y * chunks + c over the batch's super-elements y, zero on entry.
//
// Protocol (bit x set = "the original content of x has been taken by some warp, which will carry it on"):
//   start at s:  read A[s]; fence; test-and-set bit s. Already set: drop the read and stop. Else carry A[s].
//   step to y:   read A[y] and test-and-set bit y together. Was clear: write the carried value to y, carry the
//                value read on. Was set: fence, write the carried value to y and stop.
// Every original is taken exactly once (the first test-and-set of its bit), so each position has exactly one
// writer: the warp that holds its predecessor's original. Hence a warp that takes y is y's only writer and its
// read of y (even issued before the test-and-set) returns the original. A writer that finds y taken writes
// after its fence, after the taker's test-and-set, which the taker issued after its fence and its own read of y
// (read -> fence -> atomic -> atomic -> fence -> write). A start read that sees a value already written to s
// is dropped: that write follows the writer's test-and-set of s, which precedes the start's own. Stale L1
// lines can only return originals (each position is written once, after every valid read of it). Every
// position gets a start, so every cycle is moved; no warp ever waits for another.
template <typename U, int RPL>
__global__ void __launch_bounds__(kCycleThreads)
    super_cycles_kernel(U* __restrict__ base, int64_t batch, int64_t P, int64_t Q, int W, int64_t Z,
                        int64_t chunks, unsigned* flags, DivMod<uint64_t> dm_L, DivMod<uint64_t> dm_Q,
                        DivMod<uint64_t> dm_chunks) {
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  const int64_t warps_per_block = blockDim.x / kWarpSize;
  const int64_t gw = blockIdx.x * warps_per_block + threadIdx.x / kWarpSize;
  const int64_t nw = gridDim.x * warps_per_block;
  const int64_t L = P * Q, total = batch * L * chunks;
  for (int64_t s = gw; s < total; s += nw) {
    unsigned seen = 0;
    if (lane == 0) seen = (*reinterpret_cast<volatile unsigned*>(flags + (s >> 5)) >> (s & 31)) & 1u;
    seen = shfl(seen, 0);
    if (seen) continue;  // cheap early-out: already taken (a stale 0 only costs the read below)
    uint64_t c = 0;
    const uint64_t y0 = chunks == 1 ? static_cast<uint64_t>(s) : dm_chunks.div(static_cast<uint64_t>(s), &c);
    const int64_t off = static_cast<int64_t>(c) * W;  // the slice's first unit within its super-element
    const int w = static_cast<int>(Z - off < W ? Z - off : W);
    U v[RPL];
    const U* src = base + static_cast<int64_t>(y0) * Z + off;
#pragma unroll
    for (int q = 0; q < RPL; ++q) {
      const int u = lane + q * kWarpSize;
      if (u < w) v[q] = src[u];
    }
    __threadfence();
    warp_sync();
    unsigned old = 0;
    if (lane == 0) old = atomicOr(flags + (s >> 5), 1u << (s & 31)) & (1u << (s & 31));
    old = shfl(old, 0);
    if (old) continue;
    uint64_t cur = y0;
    while (true) {
      uint64_t p, bq;
      const uint64_t b = dm_L.div(cur, &p);
      const uint64_t a = dm_Q.div(p, &bq);
      const uint64_t y = b * static_cast<uint64_t>(L) + bq * static_cast<uint64_t>(P) + a;
      const uint64_t fy = y * static_cast<uint64_t>(chunks) + c;  // the flag bit of the slice at y
      U* dst = base + static_cast<int64_t>(y) * Z + off;
      U t[RPL];
#pragma unroll
      for (int q = 0; q < RPL; ++q) {
        const int u = lane + q * kWarpSize;
        if (u < w) t[q] = dst[u];
      }
      unsigned taken = 0;
      if (lane == 0) taken = atomicOr(flags + (fy >> 5), 1u << (fy & 31)) & (1u << (fy & 31));
      taken = shfl(taken, 0);
      if (!taken) {
#pragma unroll
        for (int q = 0; q < RPL; ++q) {
          const int u = lane + q * kWarpSize;
          if (u < w) {
            dst[u] = v[q];
            v[q] = t[q];
          }
        }
        cur = y;
      } else {
        __threadfence();
#pragma unroll
        for (int q = 0; q < RPL; ++q) {
          const int u = lane + q * kWarpSize;
          if (u < w) dst[u] = v[q];
        }
        break;
      }
    }
  }
}

constexpr int kShiftThreads = 256;
constexpr int kShiftBytesPerThread = 64;

// The cut's in-place row moves over the first F rows of a matrix (elements, 64-bit offsets):
//   right (to_soa): element x of the packed rows (row x / body) moves to x + (x / body) * r;
//   left  (to_aos): element y of the packed destination comes from y + (y / body) * r.
// Packed range [0, F*body) cut into chunks of E*threads elements, taken in the safe order through a ticket
// (descending addresses for right moves, ascending for left). A chunk loads its elements into registers, signals
// its flag, then waits (every thread polling a share) for every chunk within reach of its destination (at most
// (F-1)*r elements away, all of which hold earlier tickets and signal without waiting), and writes. flags: nchunks
// words + the ticket word, zero on entry.
template <typename T, int E, bool kRight>
__global__ void __launch_bounds__(kShiftThreads)
    ordered_shift_kernel(T* __restrict__ A, int64_t F, int64_t body, int64_t r, unsigned* flags, int64_t nchunks,
                         DivMod<uint64_t> dm_body) {
  __shared__ int64_t s_chunk;
  const int64_t C = static_cast<int64_t>(E) * blockDim.x;
  const int64_t X = F * body;
  const int64_t reach = ((F - 1) * r + C - 1) / C + 1;  // chunks that a chunk's destination can overlap
  unsigned* ticket = flags + nchunks;
  while (true) {
    if (threadIdx.x == 0) {
      const int64_t t = atomicAdd(ticket, 1u);
      s_chunk = t < nchunks ? (kRight ? nchunks - 1 - t : t) : -1;
    }
    __syncthreads();
    const int64_t i = s_chunk;
    __syncthreads();
    if (i < 0) return;
    T v[E];
    // The packed index x is x + (x / body) * r unpacked; x / body by a strength-reduced division (a 64-bit division
    // per element made the kernel instruction-bound, 1- and 2-byte elements most). Each element's offset is computed
    // on its own: a row index carried from element to element gave wrong results with 8 elements a thread (sm_90,
    // nvcc 13.0: values loaded for one chunk stored at another's addresses; with the values staged in shared memory
    // it was right, so most likely a miscompile; benchmarks/shift_harness.cu, DIAG=1).
    auto unpacked = [&](int64_t x) {
      uint64_t rem;
      return x + static_cast<int64_t>(dm_body.div(static_cast<uint64_t>(x), &rem)) * r;
    };
    const int64_t x0 = i * C + threadIdx.x;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int64_t x = x0 + e * static_cast<int64_t>(blockDim.x);
      if (x < X) v[e] = kRight ? A[x] : A[unpacked(x)];
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) atomicExch(flags + i, 1u);
    // The chunks within reach, polled by the whole block at once (one flag per thread and round): one thread
    // polling them in turn paid a memory round trip per chunk, which long shifts (large F * r) made the bottleneck.
    const int64_t first = kRight ? i + 1 : (i - reach > 0 ? i - reach : 0);
    const int64_t last = kRight ? (i + reach < nchunks - 1 ? i + reach : nchunks - 1) : i - 1;
    for (int64_t j = first + threadIdx.x; j <= last; j += blockDim.x) {
      while (*reinterpret_cast<volatile unsigned*>(flags + j) == 0) {
      }
    }
    __threadfence();
    __syncthreads();
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int64_t x = x0 + e * static_cast<int64_t>(blockDim.x);
      if (x < X) {
        if (kRight) {
          A[unpacked(x)] = v[e];
        } else {
          A[x] = v[e];
        }
      }
    }
  }
}

// to_aos: rem[i*F + j] = A[j*N + body + i]; else A[j*N + body + i] = rem[i*F + j] (i < r, j < F).
constexpr int kTailThreads = 256;  // its launch size; no bound: one changes codegen (see square_swap_kernel)
template <typename T, bool kGather>
__global__ void remainder_tails_kernel(T* __restrict__ A, T* __restrict__ rem, int64_t F, int64_t N, int64_t body,
                                       int64_t r) {
  const int64_t total = F * r;
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = t / r, i = t - j * r;
    if (kGather) {
      rem[i * F + j] = A[j * N + body + i];
    } else {
      A[j * N + body + i] = rem[i * F + j];
    }
  }
}

// Units per lane for super-elements of at most kSuperMaxBytes bytes.
constexpr int kSuperMaxBytes = 2048;
template <typename U>
constexpr int super_rpl() {
  return (kSuperMaxBytes / static_cast<int>(sizeof(U)) + kWarpSize - 1) / kWarpSize;
}
template <typename T>
constexpr int shift_elems() {
  return kShiftBytesPerThread / static_cast<int>(sizeof(T)) > 0 ? kShiftBytesPerThread / static_cast<int>(sizeof(T))
                                                                 : 1;
}

}  // namespace kernels
}  // namespace torch_inplace

#ifdef TORCH_INPLACE_HIP_CHECK
namespace torch_inplace {
namespace kernels {
#define TI_INST_SKINNY(T)                                                                                          \
  template __global__ void group_tiles_kernel<T>(T*, int64_t, uint32_t, uint32_t, uint32_t, uint32_t,             \
                                                 DivMod<uint32_t>, DivMod<uint32_t>, DivMod<uint32_t>);           \
  template __global__ void super_cycles_kernel<T, super_rpl<T>()>(T*, int64_t, int64_t, int64_t, int, int64_t,   \
                                                                  int64_t, unsigned*, DivMod<uint64_t>,          \
                                                                  DivMod<uint64_t>, DivMod<uint64_t>);           \
  template __global__ void ordered_shift_kernel<T, shift_elems<T>(), true>(T*, int64_t, int64_t, int64_t,          \
                                                                         unsigned*, int64_t, DivMod<uint64_t>);  \
  template __global__ void ordered_shift_kernel<T, shift_elems<T>(), false>(T*, int64_t, int64_t, int64_t,         \
                                                                          unsigned*, int64_t, DivMod<uint64_t>); \
  template __global__ void remainder_tails_kernel<T, true>(T*, T*, int64_t, int64_t, int64_t, int64_t);            \
  template __global__ void remainder_tails_kernel<T, false>(T*, T*, int64_t, int64_t, int64_t, int64_t);
#define TI_INST_TILES_VEC(T)                                                                                   \
  template __global__ void group_tiles_vec_kernel<T, uint4>(T*, int64_t, uint32_t, uint32_t, uint32_t, uint32_t, \
                                                            DivMod<uint32_t>, DivMod<uint32_t>, DivMod<uint32_t>);
template __global__ void group_tiles_hybrid_kernel<uint32_t>(uint32_t*, int64_t, uint32_t, uint32_t, uint32_t,
                                                             DivMod<uint32_t>, DivMod<uint32_t>);
template __global__ void group_tiles_hybrid_kernel<uint64_t>(uint64_t*, int64_t, uint32_t, uint32_t, uint32_t,
                                                             DivMod<uint32_t>, DivMod<uint32_t>);
TI_INST_TILES_VEC(uint8_t)
TI_INST_TILES_VEC(uint16_t)
TI_INST_TILES_VEC(uint32_t)
TI_INST_TILES_VEC(uint64_t)
#undef TI_INST_TILES_VEC
TI_INST_SKINNY(uint8_t)
TI_INST_SKINNY(uint16_t)
TI_INST_SKINNY(uint32_t)
TI_INST_SKINNY(uint64_t)
TI_INST_SKINNY(Bytes16)
#define TI_INST_CYCLES_VEC(R)                                                                                  \
  template __global__ void super_cycles_kernel<uint4, R>(uint4*, int64_t, int64_t, int64_t, int, int64_t, int64_t, \
                                                         unsigned*, DivMod<uint64_t>, DivMod<uint64_t>,           \
                                                         DivMod<uint64_t>);
TI_INST_CYCLES_VEC(1)
TI_INST_CYCLES_VEC(2)
TI_INST_CYCLES_VEC(4)
#undef TI_INST_CYCLES_VEC
#undef TI_INST_SKINNY
}  // namespace kernels
}  // namespace torch_inplace
#endif
