// CUDA (and HIP) launcher of _transpose_data_: runs a plan's kernels (csrc/kernels/transpose) on a stream and
// reads the device's capabilities for the planner. The ATen side (validation, planning, scratch, dispatch
// registration) lives in transpose_cuda.cpp: this translation unit includes no ATen/c10 header, because nvcc's
// host pass on the GPU machine instantiates libstdc++ stream templates that clash with the host compiler's
// (a local std::ostream::_M_insert<long> in the .so crashed every message built with an ostringstream).
//
// Stream-ordered: every step is a kernel (or a memset, or a device-to-device copy) on the given stream; scratch is
// passed in; there is no synchronisation and no host round trip, so every plan (on chip, square, skinny, the tiled
// sequences, padded, cut, c2r, r2c, with any column engine) can be captured in a CUDA graph.
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/transpose/catanzaro.cuh"
#include "kernels/transpose/cluster_columns.cuh"
#include "kernels/transpose/grid_columns.cuh"
#include "kernels/transpose/onchip.cuh"
#include "kernels/transpose/onchip_skinny.cuh"
#include "kernels/transpose/skinny.cuh"
#include "kernels/transpose/square.cuh"
#include "kernels/transpose/tiles.cuh"
#include "ops/cuda/transpose_launch.h"
#include "plan/tiled.h"

#define TI_CHECK(expr)                      \
  do {                                      \
    const cudaError_t ti_err_ = (expr);     \
    if (ti_err_ != cudaSuccess) return ti_err_; \
  } while (0)
// After every <<<...>>> launch (the role of C10_CUDA_KERNEL_LAUNCH_CHECK in this ATen-free file).
#define TI_LAUNCH_CHECK() TI_CHECK(cudaGetLastError())
// Error codes that torch's hipify does not translate or that HIP lacks (a misaligned address).
#if TI_HIP
#define TI_ERR_COOPERATIVE_TOO_LARGE hipErrorCooperativeLaunchTooLarge
#define TI_ERR_MISALIGNED hipErrorInvalidValue
#else
#define TI_ERR_COOPERATIVE_TOO_LARGE cudaErrorCooperativeLaunchTooLarge
#define TI_ERR_MISALIGNED cudaErrorMisalignedAddress
#endif

namespace torch_inplace {
namespace gpu {

using namespace kernels;

static_assert(plan::kGpuSuperMaxBytes == kSuperMaxBytes, "the planner's and the kernel's super-element width");

int kernel_warp_size() { return kWarpSize; }

cudaError_t query_caps(int device, plan::DeviceCaps* out) {
  cudaDeviceProp prop;
  TI_CHECK(cudaGetDeviceProperties(&prop, device));
  plan::DeviceCaps c;
  c.backend = plan::Backend::CUDA;
  c.num_sms = prop.multiProcessorCount;
#if TI_HIP
  c.smem_per_block = static_cast<int64_t>(prop.sharedMemPerBlock);  // AMD: the LDS a block may take, no opt-in
#else
  c.smem_per_block = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
#endif
  c.warp_size = prop.warpSize;
  c.l2_bytes = prop.l2CacheSize;
  c.cc_major = prop.major;
#if TI_HIP
  c.max_cluster = 1;
#else
  c.max_cluster = prop.major >= 9 ? 16 : 1;  // clusters with distributed shared memory (> 8: non-portable)
#endif
  *out = c;
  return cudaSuccess;
}

namespace {

int grid_for(int64_t work, int threads, const plan::DeviceCaps& caps, int per_sm = 8) {
  const int64_t want = (work + threads - 1) / threads;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(want, int64_t{caps.num_sms} * per_sm)));
}

// Raises a kernel's dynamic shared memory limit to `bytes` (needed past 48 KiB) once per (kernel, device): the
// attribute is sticky, so later launches with as much or less need no driver call.
template <typename K>
cudaError_t allow_smem(K kernel, int64_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, int64_t> done;
  int dev = 0;
  TI_CHECK(cudaGetDevice(&dev));
  const auto key = std::make_pair(reinterpret_cast<const void*>(kernel), dev);
  std::lock_guard<std::mutex> lock(mu);
  auto it = done.find(key);
  if (it != done.end() && it->second >= bytes) return cudaSuccess;
  TI_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(bytes)));
  done[key] = bytes;
  return cudaSuccess;
}

template <typename X>
struct NonDeduced {
  using type = X;
};

// Launches `kernel` cooperatively -- every block resident at once, so the kernel may sync the whole grid -- as
// `blocks` blocks of `threads` threads with `smem` bytes of dynamic shared memory each.
template <typename... P>
cudaError_t launch_cooperative(void (*kernel)(P...), int64_t blocks, int threads, int64_t smem, cudaStream_t stream,
                               typename NonDeduced<P>::type... args) {
  TI_CHECK(allow_smem(kernel, smem));
#if TI_HIP
  void* ptrs[] = {static_cast<void*>(&args)...};
  TI_CHECK(hipLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), dim3(static_cast<unsigned>(blocks)),
                                      dim3(threads), ptrs, static_cast<unsigned>(smem), stream));
#else
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(blocks));
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = static_cast<size_t>(smem);
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeCooperative;
  attr[0].val.cooperative = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  TI_CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
#endif
  TI_LAUNCH_CHECK();
  return cudaSuccess;
}

// Blocks of `threads` threads and `smem` bytes that one SM holds at once, cached per (kernel, device, size).
int max_active_blocks(const void* kernel, int threads, int64_t smem) {
  static std::mutex mu;
  static std::map<std::tuple<const void*, int, int, int64_t>, int> cache;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  const auto key = std::make_tuple(kernel, dev, threads, smem);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, static_cast<size_t>(smem)) != cudaSuccess) {
    (void)cudaGetLastError();
    n = 0;
  }
  cache[key] = n;
  return n;
}

#if !TI_HIP
// cudaOccupancyMaxActiveClusters, cached per (kernel, device, cluster size, shared memory).
int max_active_clusters(const void* kernel, const cudaLaunchConfig_t& cfg) {
  static std::mutex mu;
  static std::map<std::tuple<const void*, int, unsigned, size_t>, int> cache;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  const auto key = std::make_tuple(kernel, dev, cfg.attrs[0].val.clusterDim.x, cfg.dynamicSmemBytes);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    n = 0;
  }
  cache[key] = n;
  return n;
}

// Launches `kernel` as `clusters` clusters of `cs` blocks of kColThreads threads with `smem` bytes each.
template <typename... P, typename... A>
cudaError_t launch_cluster_impl(void (*kernel)(P...), int64_t clusters, int cs, int64_t smem, cudaStream_t stream,
                                A&&... args) {
  if (cs > 8) {
    TI_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                  cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  }
  TI_CHECK(allow_smem(kernel, smem));
  cudaLaunchConfig_t cfg = {};
  cfg.blockDim = dim3(kColThreads);
  cfg.dynamicSmemBytes = static_cast<size_t>(smem);
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cs;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  // No more clusters than can be resident at once: the kernels loop over their work, and a second wave of
  // clusters would start only when the first finished all of theirs (measured: up to 2x slower).
  cfg.gridDim = dim3(static_cast<unsigned>(cs));
  const int resident = max_active_clusters(reinterpret_cast<const void*>(kernel), cfg);
  clusters = std::min<int64_t>(clusters, resident > 0 ? resident : 16);
  cfg.gridDim = dim3(static_cast<unsigned>(clusters * cs));
  TI_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...));
  TI_LAUNCH_CHECK();
  return cudaSuccess;
}
#define launch_cluster(k, clusters, cs, smem, ...) launch_cluster_impl(k, clusters, cs, smem, stream, __VA_ARGS__)
#endif

template <typename T, typename U>
struct Engine {
  const LaunchPlan& pl;
  const plan::DeviceCaps& caps;
  T* data;
  uint8_t* scratch;
  cudaStream_t stream;
  int64_t batch;

  cudaError_t square() { return squares(data, pl.rows, batch); }

  // nb consecutive n x n matrices at A, each transposed by tile-pair swaps.
  // Tiles of kSqTile * sq_cols<T>() a side (or kSqTile with the plan's sq_narrow, a measurement knob).
  cudaError_t squares(T* A, int64_t n, int64_t nb) {
    if (pl.steps.sq_narrow != 0) return squares_as<1>(A, n, nb);
    return squares_as<sq_cols<T>()>(A, n, nb);
  }

  template <int C>
  cudaError_t squares_as(T* A, int64_t n, int64_t nb) {
    const int64_t W = int64_t{kSqTile} * C;
    const int64_t nt = (n + W - 1) / W;
    const int64_t pairs = nt * (nt + 1) / 2;
    const int grid = static_cast<int>(std::min<int64_t>(pairs * nb, int64_t{caps.num_sms} * 16));
    square_swap_kernel<T, U, C><<<grid, dim3(kSqTile, kSqRows), 0, stream>>>(A, static_cast<U>(n), nt, pairs, nb);
    TI_LAUNCH_CHECK();
    return cudaSuccess;
  }

  // ---- tiled sequences (plan/tiled.h): each elementary transposition of nb matrices at A ------------------------
  // On chip (010! / 0010!): tiles through shared memory, or square tiles swapped in place by tile pairs -- every
  // square one with `squares_in_place` (sequences 2.1 / 2.2), else those over plan::kGpuTileBytes (3.1 / 3.2; the
  // planner keeps the others within it). Cycle following (100! / 0100!): the super-elements with flag bits in `bits`
  // (cleared by each step). Matrices and problems are contiguous, so the batch multiplies count.
  cudaError_t run_step(const tiled::Step& s, T* A, int64_t nb, unsigned* bits, bool squares_in_place) {
    if (s.trivial()) return cudaSuccess;
    const int64_t count = nb * s.count;
    if (s.on_chip()) {
      const bool in_place =
          s.X == s.Y && (squares_in_place || !plan::gpu_tile_in_smem(s.X, s.Y, static_cast<int64_t>(sizeof(T))));
      return in_place ? squares(A, s.X, count) : group_tiles(A, count, s.X, s.Y);
    }
    return super_cycles(A, count, s.X, s.Y, s.Z, bits);
  }

  cudaError_t run_sequence(const tiled::Sequence& seq, T* A, int64_t nb, unsigned* bits, bool squares_in_place) {
    for (int i = 0; i < seq.num_steps; ++i) TI_CHECK(run_step(seq.steps[i], A, nb, bits, squares_in_place));
    return cudaSuccess;
  }

  // Tiled21 / Tiled22 where the short side g divides the long one (gpu_plan.cpp plan_tiled); the batch folds into
  // both kernels.
  cudaError_t tiled() {
    const int64_t g = std::min<int64_t>(pl.rows, pl.cols), q = std::max<int64_t>(pl.rows, pl.cols) / g;
    unsigned* bits = reinterpret_cast<unsigned*>(scratch + pl.steps.sk_bits_off);
    return run_sequence(tiled::seq_divisor(pl.rows > pl.cols, q, g), data, batch, bits, true);
  }

  // Tiled31 / Tiled32 (gpu_plan.cpp plan_tiled3): rows = Mp * m, cols = Np * n.
  cudaError_t tiled3() {
    const int64_t m = pl.tile_m, n = pl.tile_n;
    if (m <= 0 || n <= 0 || pl.rows % m != 0 || pl.cols % n != 0) return cudaErrorInvalidValue;
    const bool seq31 = static_cast<plan::Algo>(pl.algo) == plan::Algo::Tiled31;
    const auto seq = tiled::seq_tiles3(seq31, pl.rows, pl.cols, m, n);
    return run_sequence(seq, data, batch, reinterpret_cast<unsigned*>(scratch + pl.steps.sk_bits_off), false);
  }

  // ---- padded (gpu_plan.cpp plan_padded): the long side L padded to Lp = q * g in the storage's slack ----------
  // Tall: sequence 2.1 on (Lp, g) -- the padded rows are the slack after the elements -- then the g rows of Lp packed
  // into rows of L. Wide: the g rows of L spread to Lp, then sequence 2.2 on (g, Lp); its first L rows are the result.
  cudaError_t padded() {
    const int64_t g = std::min<int64_t>(pl.rows, pl.cols), L = std::max<int64_t>(pl.rows, pl.cols);
    const int64_t q = (L + g - 1) / g, r = q * g - L;
    const bool tall = pl.rows > pl.cols;
    unsigned* bits = reinterpret_cast<unsigned*>(scratch + pl.steps.sk_bits_off);
    unsigned* cflags = reinterpret_cast<unsigned*>(scratch + pl.steps.sk_chunk_off);
    if (tall) {
      TI_CHECK(run_sequence(tiled::seq_divisor(true, q, g), data, 1, bits, true));
      return shift_rows<false>(data, g, L, r, cflags);
    }
    TI_CHECK(shift_rows<true>(data, g, L, r, cflags));
    return run_sequence(tiled::seq_divisor(false, q, g), data, 1, bits, true);
  }

  // ---- cut (gpu_plan.cpp plan_cut): the long side L cut by x = L mod g, the q g x g tiles of the rest by sequence
  // 2.1 / 2.2 (a square when q == 1), the cut rows / columns re-inserted around it (around_cut) ----------------------
  cudaError_t cut() {
    const int64_t g = std::min<int64_t>(pl.rows, pl.cols), L = std::max<int64_t>(pl.rows, pl.cols);
    if (g < 2) return cudaErrorInvalidValue;
    const int64_t x = L % g;
    const bool tall = pl.rows > pl.cols;
    const auto seq = tiled::seq_divisor(tall, (L - x) / g, g);
    unsigned* bits = reinterpret_cast<unsigned*>(scratch + pl.steps.sk_bits_off);
    if (x == 0) return run_sequence(seq, data, batch, bits, true);
    T* rem = reinterpret_cast<T*>(scratch + pl.steps.sk_rem_off);
    unsigned* cflags = reinterpret_cast<unsigned*>(scratch + pl.steps.sk_chunk_off);
    for (int64_t b = 0; b < batch; ++b) {
      TI_CHECK(around_cut(data + b * L * g, L, g, L - x, tall, rem, cflags,
                          [&](T* H) { return run_sequence(seq, H, 1, bits, true); }));
    }
    return cudaSuccess;
  }

  cudaError_t row_shuffle(const CatIdx<U>& P, bool c2r) {
    const auto& g = pl.steps;
    const int64_t rows = pl.c2r.m * batch;
#if !TI_HIP
    if (g.row_cluster > 0) {
      auto k = c2r ? row_shuffle_cluster_kernel<T, U, true> : row_shuffle_cluster_kernel<T, U, false>;
      const int cs = static_cast<int>(g.row_cluster);
      const int64_t clusters = std::max<int64_t>(1, rows);
      TI_CHECK(launch_cluster(k, clusters, cs, g.row_smem, data, P, rows, static_cast<uint32_t>(g.row_part),
                              DivMod<uint32_t>(static_cast<uint32_t>(g.row_part))));
      return cudaSuccess;
    }
#endif
    if (g.fuse_head > 0) {
      // Rotation fused into the row shuffle: every block resident (neighbours wait on each other's flags).
      int threads = 2 * g.fuse_smem > caps.smem_per_block ? kRowThreadsWide : kRowThreads;
      if (c2r) threads = walk_threads(threads);
      auto k = with_row_bounds(threads, g.fuse_smem, [&](auto mb) {
        constexpr int M = decltype(mb)::value;
        return c2r ? row_rotate_fused_kernel<T, U, true, M> : row_rotate_fused_kernel<T, U, false, M>;
      });
      TI_CHECK(allow_smem(k, g.fuse_smem));
      const int per_sm = max_active_blocks(reinterpret_cast<const void*>(k), threads, g.fuse_smem);
      if (per_sm <= 0) return TI_ERR_COOPERATIVE_TOO_LARGE;
      const int64_t blocks = std::min<int64_t>({pl.c2r.m / g.fuse_head, int64_t{per_sm} * caps.num_sms,
                                                g.fuse_flags_bytes / 4});
      unsigned* flags = reinterpret_cast<unsigned*>(scratch + g.fuse_flags_off);
      TI_CHECK(cudaMemsetAsync(flags, 0, static_cast<size_t>(blocks) * 4, stream));
      CatIdx<U> Pw = P;
      if (threads != kRowThreads) Pw.set_row_step(pl.c2r, threads);
      return launch_cooperative(k, blocks, threads, g.fuse_smem, stream, data, Pw,
                                static_cast<uint32_t>(g.fuse_head), static_cast<uint32_t>(g.fuse_rows),
                                static_cast<uint32_t>(g.fuse_bufs), flags, g.fuse_runs != 0);
    }
    if (g.row_block > 0) {
      const int64_t blocks = (rows + g.row_block - 1) / g.row_block;
      const int grid = static_cast<int>(std::min<int64_t>(blocks, int64_t{caps.num_sms} * 32));
      const bool c1 = pl.c2r.c == 1;
      // One block per SM when a block's rows take more than half of an SM's shared memory: then 1024 threads.
      int threads = 2 * g.row_smem > caps.smem_per_block ? kRowThreadsWide : kRowThreads;
      if (c2r) threads = walk_threads(threads);
      auto k = with_row_bounds(threads, g.row_smem, [&](auto mb) {
        constexpr int M = decltype(mb)::value;
        return c2r ? (c1 ? row_shuffle_smem_kernel<T, U, true, true, M> : row_shuffle_smem_kernel<T, U, true, false, M>)
                   : (c1 ? row_shuffle_smem_kernel<T, U, false, true, M> : row_shuffle_smem_kernel<T, U, false, false, M>);
      });
      TI_CHECK(allow_smem(k, g.row_smem));
      CatIdx<U> Pw = P;
      if (threads != kRowThreads) Pw.set_row_step(pl.c2r, threads);
      k<<<grid, threads, g.row_smem, stream>>>(data, Pw, rows, static_cast<int>(g.row_block));
      TI_LAUNCH_CHECK();
    } else {
      T* slots = reinterpret_cast<T*>(scratch + g.slots_off);
      auto k = c2r ? row_shuffle_gmem_kernel<T, U, true> : row_shuffle_gmem_kernel<T, U, false>;
      k<<<static_cast<int>(g.row_slots), kSlotThreads, 0, stream>>>(data, slots, P, rows);
      TI_LAUNCH_CHECK();
    }
    return cudaSuccess;
  }

  // The row kernel f(std::integral_constant<int, M>) for `threads` threads and `smem` bytes: M = the plan's
  // row_min_blocks (TI_ROW_BOUNDS(M); c2r::row_bound_variant) where the plan forces it on blocks of at most kRowThreads
  // threads, or, by the planner's rule, on blocks of exactly kRowThreads where that variant fits more blocks per SM
  // than the wide bound (M = 0); else the wide bound.
  template <typename F>
  auto with_row_bounds(int threads, int64_t smem, F&& f) const {
    const auto& g = pl.steps;
    auto wide = f(std::integral_constant<int, 0>{});
    if constexpr (c2r::row_bound_variant(3, sizeof(T))) {  // the variants exist for this element size
      const bool denser = g.row_bounds_denser != 0;
      if (c2r::row_bound_variant(g.row_min_blocks, sizeof(T)) && threads <= kRowThreads &&
          (!denser || threads == kRowThreads)) {
        auto bound = g.row_min_blocks == 3 ? f(std::integral_constant<int, 3>{}) : f(std::integral_constant<int, 4>{});
        if (!denser) return bound;
        if (allow_smem(wide, smem) != cudaSuccess || allow_smem(bound, smem) != cudaSuccess) return wide;
        const int per_sm = max_active_blocks(reinterpret_cast<const void*>(bound), threads, smem);
        return per_sm > max_active_blocks(reinterpret_cast<const void*>(wide), threads, smem) ? bound : wide;
      }
    }
    return wide;
  }

  int64_t nk() const { return pl.c2r.n * pl.steps.super; }  // elements per row of the c2r view

  cudaError_t tiles(int64_t r, int64_t c) {
    const int64_t count = batch * pl.c2r.m;
    const int64_t smem = r * (c + 1) * static_cast<int64_t>(sizeof(T));
    auto k = small_tiles_kernel<T>;
    TI_CHECK(allow_smem(k, smem));
    const int grid = static_cast<int>(std::min<int64_t>(count, int64_t{caps.num_sms} * 8));
    k<<<grid, kTileThreads, smem, stream>>>(data, count, static_cast<uint32_t>(r), static_cast<uint32_t>(c),
                                             DivMod<uint32_t>(static_cast<uint32_t>(r)),
                                             DivMod<uint32_t>(static_cast<uint32_t>(c)));
    TI_LAUNCH_CHECK();
    return cudaSuccess;
  }

  cudaError_t reflect(const CatIdx<U>& P, int step, bool about_zero) {
    const int64_t total = pl.c2r.m * nk() * batch;
    reflect_kernel<T, U><<<grid_for(total, 256, caps, 16), 256, 0, stream>>>(data, P, step, about_zero, batch);
    TI_LAUNCH_CHECK();
    return cudaSuccess;
  }

  // Threads per block of a C2R row kernel: c2r_walk_threads' block size that c divides, where the plan allows it
  // and the rows are longer than the block (the walk that drops the c terms runs only there), else B.
  int walk_threads(int B) const {
    if (pl.c2r.c <= 1 || !pl.steps.row_walk_fit || pl.steps.super != 1) return B;
    const int64_t t = c2r::c2r_walk_threads(B, pl.c2r.c, kWarpSize);
    return t != B && nk() > t ? static_cast<int>(t) : B;
  }

  cudaError_t q_permute(const CatIdx<U>& P, bool gather) {
    const auto& g = pl.steps;
    uint32_t* bitmap = reinterpret_cast<uint32_t*>(scratch + g.bitmap_off);
    TI_CHECK(cudaMemsetAsync(bitmap, 0, g.bitmap_bytes, stream));
    q_leaders_kernel<U><<<grid_for(pl.c2r.m, kLeaderThreads, caps, 8), kLeaderThreads, 0, stream>>>(P, bitmap);
    TI_LAUNCH_CHECK();
    const int64_t words = (pl.c2r.m + 31) / 32;
    const int threads = static_cast<int>(std::min<int64_t>(256, (nk() + 31) / 32 * 32));
    const int64_t segs = (nk() + threads - 1) / threads;
    const int grid = static_cast<int>(std::min<int64_t>(words * segs * batch, int64_t{caps.num_sms} * 16));
    auto k = gather ? q_cycles_kernel<T, U, true> : q_cycles_kernel<T, U, false>;
    k<<<grid, threads, 0, stream>>>(data, P, bitmap, words, batch);
    TI_LAUNCH_CHECK();
    return cudaSuccess;
  }

  // One column step. With a cluster plan: one pass through distributed shared memory. Otherwise:
  //   rotations (pre/post) = reflection about the amount, then about 0;
  //   column shuffle (C2R)  = rotate left by j, then gather rows by q;
  //   inverse (R2C)         = scatter rows by q, then rotate right by j.
  cudaError_t col_step(const CatIdx<U>& P, int step) {
    const auto& g = pl.steps;
    if (g.grid_width > 0) {
      const int64_t panels = (nk() + g.grid_width - 1) / g.grid_width;
      const int64_t total = panels * batch;
      const bool rotation = step == kPreRotate || step == kPostRotate;
      if (g.grid_split > 1 && (rotation || g.grid_linear == 0)) return cudaErrorInvalidValue;  // the planner's rule
      // A block's runs: min(rows, the panel width of one block).
      const int64_t run = std::min<int64_t>(g.grid_rows, g.grid_width / g.grid_split);
      int lanes = grid_row_lanes<T>(step, run, kWarpSize);
      if (g.grid_row_lanes > 0) lanes = static_cast<int>(std::min<int64_t>(g.grid_row_lanes, kWarpSize));
      auto k = g.grid_async != 0 ? col_grid_kernel<T, U, true> : col_grid_kernel<T, U, false>;
      return launch_cooperative(k, g.grid_blocks, kGridColThreads, g.grid_smem, stream, data, P, step,
                                static_cast<uint32_t>(g.grid_width), static_cast<uint32_t>(g.grid_rows), panels,
                                total, static_cast<int>(g.grid_buffers), lanes, static_cast<int>(g.grid_linear),
                                static_cast<int>(g.grid_split));
    }
    if (g.col_cluster > 0) {
#if !TI_HIP
      int w_log2 = 0;
      while ((int64_t{1} << w_log2) < g.col_width) ++w_log2;
      const int64_t panels = (nk() + g.col_width - 1) / g.col_width;
      const int64_t total = panels * batch;
      const int cs = static_cast<int>(g.col_cluster);
      auto k = col_cluster_kernel<T, U>;
      const int64_t clusters = std::max<int64_t>(1, total);
      return launch_cluster(k, clusters, cs, g.col_smem, data, P, step, w_log2, static_cast<uint32_t>(g.col_rows),
                            DivMod<uint32_t>(static_cast<uint32_t>(g.col_rows)), panels, total);
#endif
    }
    switch (step) {
      case kPreRotate:
      case kPostRotate:
        TI_CHECK(reflect(P, step, false));
        return reflect(P, step, true);
      case kColShuffle:
        TI_CHECK(reflect(P, kColShuffle, false));
        TI_CHECK(reflect(P, kColShuffle, true));
        return q_permute(P, /*gather=*/true);
      case kInvColShuffle:
        TI_CHECK(q_permute(P, /*gather=*/false));
        TI_CHECK(reflect(P, kNegColumn, false));
        return reflect(P, kNegColumn, true);
    }
    return cudaErrorInvalidValue;
  }

  cudaError_t catanzaro() {
    CatIdx<U> P(pl.c2r, pl.steps.super);
    P.walk_c0 = pl.steps.row_walk_c0 != 0;  // the row kernels' C2R walks (TORCH_INPLACE_GPU_ROW_WALK=general: off)
    const int64_t k = pl.steps.super, F = pl.c2r.n;
    if (!pl.r2c) {
      if (k > 1) TI_CHECK(tiles(k, F));  // (N/k, k, F) -> (N/k, F, k)
      if (pl.c2r.c > 1 && pl.steps.fuse_head == 0) TI_CHECK(col_step(P, kPreRotate));
      TI_CHECK(row_shuffle(P, true));
      return col_step(P, kColShuffle);
    }
    TI_CHECK(col_step(P, kInvColShuffle));
    TI_CHECK(row_shuffle(P, false));
    if (pl.c2r.c > 1 && pl.steps.fuse_head == 0) TI_CHECK(col_step(P, kPostRotate));
    if (k > 1) TI_CHECK(tiles(F, k));  // (N/k, F, k) -> (N/k, k, F)
    return cudaSuccess;
  }


  // ---- skinny: sequence 2.1 (010! tiles, 100! super-elements) with a Karlsson cut ---------------------------
  // to_soa (N x F -> F x N): the first body = Mp*k rows are (Mp, k, F); tiles make them (Mp, F, k), the cycles
  // (F, Mp, k); the r x F remainder, saved first, then goes to the row tails after each row j moved right by j*r.
  // to_aos runs the inverse steps in reverse order. With r == 0 the batch is folded into the kernels; with r > 0
  // the matrices run one after another, sharing the scratch (remainder, flags).
  cudaError_t group_tiles(T* A, int64_t tiles, int64_t R, int64_t C) {
    if (tiles <= 0) return cudaSuccess;
    const int64_t S = C | 1;  // odd stride: the write phase's column reads hit distinct banks
    const int64_t tile_bytes = R * S * static_cast<int64_t>(sizeof(T));
    const int64_t G = std::max<int64_t>(1, std::min<int64_t>(tiles, pl.steps.sk_group_bytes / tile_bytes));
    const int64_t smem = G * tile_bytes;
    const int64_t groups = (tiles + G - 1) / G;
    const int grid = static_cast<int>(std::min<int64_t>(groups, int64_t{caps.num_sms} * 16));
    // 16-byte global accesses where the element type is narrower and every group starts 16-byte aligned: the hybrid
    // kernel where its gather is (nearly) free of bank conflicts (sk_tile_vec 1), else the vec kernel.
    const bool vec = sizeof(T) < 16 && pl.steps.sk_tile_vec != 0 &&
                     (R * C * static_cast<int64_t>(sizeof(T))) % 16 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0;
    if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
      if (vec && pl.steps.sk_tile_vec == 1 && hybrid_tiles<T>(C)) {
        auto k = group_tiles_hybrid_kernel<T>;
        const int64_t smem_h = G * R * C * static_cast<int64_t>(sizeof(T));  // unpadded
        TI_CHECK(allow_smem(k, smem_h));
        k<<<grid, kGroupThreads, smem_h, stream>>>(A, tiles, static_cast<uint32_t>(G), static_cast<uint32_t>(R),
                                                   static_cast<uint32_t>(C),
                                                   DivMod<uint32_t>(static_cast<uint32_t>(R * C)),
                                                   DivMod<uint32_t>(static_cast<uint32_t>(R)));
        TI_LAUNCH_CHECK();
        return cudaSuccess;
      }
    }
    auto k = vec ? group_tiles_vec_kernel<T, uint4> : group_tiles_kernel<T>;
    TI_CHECK(allow_smem(k, smem));
    k<<<grid, kGroupThreads, smem, stream>>>(A, tiles, static_cast<uint32_t>(G), static_cast<uint32_t>(R),
                                             static_cast<uint32_t>(C), static_cast<uint32_t>(S),
                                             DivMod<uint32_t>(static_cast<uint32_t>(R * C)),
                                             DivMod<uint32_t>(static_cast<uint32_t>(C)),
                                             DivMod<uint32_t>(static_cast<uint32_t>(R)));
    TI_LAUNCH_CHECK();
    return cudaSuccess;
  }

  // Z units per super-element, moved as ceil(Z / W) slices of at most W units (W <= rpl lanes' worth).
  template <typename V, int rpl = super_rpl<V>()>
  cudaError_t super_cycles_as(V* A, int64_t nb, int64_t P, int64_t Q, int64_t Z, int64_t chunks, unsigned* bits) {
    const int64_t W = (Z + chunks - 1) / chunks;  // even slices (the last may be shorter)
    if (W > int64_t{rpl} * kWarpSize) return cudaErrorInvalidValue;
    auto k = super_cycles_kernel<V, rpl>;
    const int64_t warps = kCycleThreads / kWarpSize;
    const int grid = static_cast<int>(std::min<int64_t>(int64_t{caps.num_sms} * (2048 / kCycleThreads),
                                                        (nb * P * Q * chunks + warps - 1) / warps));
    k<<<grid, kCycleThreads, 0, stream>>>(A, nb, P, Q, static_cast<int>(W), Z, chunks, bits,
                                          DivMod<uint64_t>(static_cast<uint64_t>(P * Q)),
                                          DivMod<uint64_t>(static_cast<uint64_t>(Q)),
                                          DivMod<uint64_t>(static_cast<uint64_t>(chunks)));
    TI_LAUNCH_CHECK();
    return cudaSuccess;
  }

  // (P, Q, k) -> (Q, P, k) for nb matrices; 16-byte units when the super-elements and the base allow it. Super-
  // elements over kSuperMaxBytes move as plan::gpu_super_slices slices, one flag bit each (plan::gpu_super_bits_bytes).
  cudaError_t super_cycles(T* A, int64_t nb, int64_t P, int64_t Q, int64_t k, unsigned* bits) {
    if (P <= 1 || Q <= 1) return cudaSuccess;
    const int64_t bytes = k * static_cast<int64_t>(sizeof(T));
    const int64_t chunks = plan::gpu_super_slices(bytes);
    TI_CHECK(cudaMemsetAsync(bits, 0, static_cast<size_t>(plan::gpu_super_bits_bytes(nb * P * Q, bytes)), stream));
    if (bytes % 16 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0) {
      auto* A16 = reinterpret_cast<uint4*>(A);
      // Fewest registers per lane that hold a super-element (occupancy: more chains in flight).
      if (bytes / 16 <= kWarpSize) return super_cycles_as<uint4, 1>(A16, nb, P, Q, bytes / 16, chunks, bits);
      if (bytes / 16 <= 2 * kWarpSize) return super_cycles_as<uint4, 2>(A16, nb, P, Q, bytes / 16, chunks, bits);
      return super_cycles_as(A16, nb, P, Q, bytes / 16, chunks, bits);
    }
    return super_cycles_as(A, nb, P, Q, k, chunks, bits);
  }

  template <bool kRight>
  cudaError_t shift_rows(T* A, int64_t F, int64_t body, int64_t r, unsigned* cflags) {
    if (body <= 0 || F <= 1 || r <= 0) return cudaSuccess;
    constexpr int E = shift_elems<T>();
    const int64_t C = int64_t{E} * kShiftThreads;
    const int64_t nchunks = (F * body + C - 1) / C;
    TI_CHECK(cudaMemsetAsync(cflags, 0, static_cast<size_t>((nchunks + 1) * 4), stream));
    const int grid = static_cast<int>(std::min<int64_t>(nchunks, int64_t{caps.num_sms} * 8));
    ordered_shift_kernel<T, E, kRight><<<grid, kShiftThreads, 0, stream>>>(A, F, body, r, cflags, nchunks,
                                                                           DivMod<uint64_t>(static_cast<uint64_t>(body)));
    TI_LAUNCH_CHECK();
    return cudaSuccess;
  }

  template <bool kGather>
  cudaError_t tails(T* A, T* rem, int64_t F, int64_t N, int64_t body, int64_t r) {
    if (r <= 0) return cudaSuccess;
    const auto grid = grid_for(F * r, kTailThreads, caps, 4);
    remainder_tails_kernel<T, kGather><<<grid, kTailThreads, 0, stream>>>(A, rem, F, N, body, r);
    TI_LAUNCH_CHECK();
    return cudaSuccess;
  }

  // The Karlsson cut around an in-place transposition of the head (skinny, cut): one matrix of N rows of F
  // (to_soa: N x F -> F x N; else F x N -> N x F) whose first `body` of the N are transposed by head(A) while the
  // other r = N - body wait in rem (r x F). to_soa saves them first; after the head made (F, body) the F rows
  // spread to N and the saved block goes to the row tails. Else the tails are gathered, the rows packed to body, the
  // head transposed and the block appended as the last r rows. cflags: the shift's chunk flags and ticket.
  template <typename Head>
  cudaError_t around_cut(T* A, int64_t N, int64_t F, int64_t body, bool to_soa, T* rem, unsigned* cflags,
                         Head&& head) {
    const int64_t r = N - body;
    const size_t rem_bytes = static_cast<size_t>(r * F) * sizeof(T);
    if (to_soa) {
      if (r > 0) TI_CHECK(cudaMemcpyAsync(rem, A + body * F, rem_bytes, cudaMemcpyDeviceToDevice, stream));
      TI_CHECK(head(A));
      TI_CHECK(shift_rows<true>(A, F, body, r, cflags));
      return tails<false>(A, rem, F, N, body, r);
    }
    TI_CHECK(tails<true>(A, rem, F, N, body, r));
    TI_CHECK(shift_rows<false>(A, F, body, r, cflags));
    TI_CHECK(head(A));
    if (r > 0) TI_CHECK(cudaMemcpyAsync(A + body * F, rem, rem_bytes, cudaMemcpyDeviceToDevice, stream));
    return cudaSuccess;
  }

  cudaError_t skinny_matrices(T* A, int64_t nb, bool to_soa) {
    const auto& g = pl.steps;
    const int64_t N = std::max<int64_t>(pl.rows, pl.cols), F = std::min<int64_t>(pl.rows, pl.cols), k = g.sk_k;
    const int64_t Mp = N / k;
    unsigned* bits = reinterpret_cast<unsigned*>(scratch + g.sk_bits_off);
    return around_cut(A, N, F, Mp * k, to_soa, reinterpret_cast<T*>(scratch + g.sk_rem_off),
                      reinterpret_cast<unsigned*>(scratch + g.sk_chunk_off), [&](T* H) -> cudaError_t {
                        if (to_soa) {
                          TI_CHECK(group_tiles(H, nb * Mp, k, F));
                          return super_cycles(H, nb, Mp, F, k, bits);
                        }
                        TI_CHECK(super_cycles(H, nb, F, Mp, k, bits));
                        return group_tiles(H, nb * Mp, F, k);
                      });
  }

  cudaError_t skinny21() {
    const bool to_soa = pl.rows > pl.cols;
    const int64_t N = std::max<int64_t>(pl.rows, pl.cols), F = std::min<int64_t>(pl.rows, pl.cols);
    if (N % pl.steps.sk_k == 0) return skinny_matrices(data, batch, to_soa);
    for (int64_t b = 0; b < batch; ++b) TI_CHECK(skinny_matrices(data + b * N * F, 1, to_soa));
    return cudaSuccess;
  }

  // ---- on chip: one cooperative kernel (kernels/transpose/onchip.cuh) ------------------------------------------
  cudaError_t onchip() {
    const auto& g = pl.steps;
    const OnChipGeo geo =
        onchip_geo(batch, pl.rows, pl.cols, g.oc_tr, g.oc_tc, g.oc_s, g.oc_per_block, g.oc_wave, g.oc_stash);
    // The skinny kernel's 16-byte chunks start at the 16-byte boundary before the tensor: its address must be a
    // multiple of the element size (PyTorch's storages are) for the chunks to hold whole elements.
    const bool whole_elements = reinterpret_cast<uintptr_t>(data) % sizeof(T) == 0;
    if (g.oc_stash > 0 && g.oc_skinny == 0) {  // the element kernel with a register stash
      auto* k = geo.waves > 1 ? onchip_transpose_stash_kernel<T, true> : onchip_transpose_stash_kernel<T, false>;
      return launch_cooperative(k, g.oc_grid, kOnChipStashThreads, g.oc_smem, stream, data, geo);
    }
    if (g.oc_stash > 0) {  // the skinny kernel's stash: past the shared memory, no element-kernel fallback fits
      if (!whole_elements) return TI_ERR_MISALIGNED;
      auto* sk = geo.waves > 1 ? onchip_skinny_stash_kernel<T, true> : onchip_skinny_stash_kernel<T, false>;
      return launch_cooperative(sk, g.oc_grid, kOnChipStashThreads, g.oc_skinny, stream, data, geo);
    }
    if (g.oc_skinny > 0 && whole_elements) {
      auto* sk = geo.waves > 1 ? onchip_skinny_kernel<T, true> : onchip_skinny_kernel<T, false>;
      return launch_cooperative(sk, g.oc_grid, kOnChipThreads, g.oc_skinny, stream, data, geo);
    }
    auto* kernel = geo.waves > 1 ? onchip_transpose_kernel<T, onchip_unroll<T>(), true> : onchip_transpose_kernel<T>;
    return launch_cooperative(kernel, g.oc_grid, kOnChipThreads, g.oc_smem, stream, data, geo);
  }

  cudaError_t run() {
    switch (static_cast<plan::Algo>(pl.algo)) {
      case plan::Algo::Square: return square();
      case plan::Algo::C2R:
      case plan::Algo::R2C: return catanzaro();
      case plan::Algo::Skinny: return pl.steps.sk_k > 0 ? skinny21() : catanzaro();
      case plan::Algo::OnChip: return onchip();
      case plan::Algo::Tiled21:
      case plan::Algo::Tiled22: return tiled();
      case plan::Algo::Tiled31:
      case plan::Algo::Tiled32: return tiled3();
      case plan::Algo::Padded: return padded();
      case plan::Algo::Cut: return cut();
      default: return cudaErrorNotSupported;
    }
  }
};

template <typename T>
cudaError_t run_plan(const LaunchPlan& pl, const plan::DeviceCaps& caps, void* data, uint8_t* scratch,
                     cudaStream_t stream) {
  const int64_t m = pl.c2r.m, n = pl.c2r.n * pl.steps.super;
  // 32-bit indices inside a matrix when every intermediate (at most m*n + m + n) fits.
  const bool small = std::max<int64_t>(m * n + m + n, pl.rows * pl.cols + pl.rows + pl.cols) < (int64_t{1} << 31);
  if (small) return Engine<T, uint32_t>{pl, caps, static_cast<T*>(data), scratch, stream, pl.batch}.run();
  return Engine<T, uint64_t>{pl, caps, static_cast<T*>(data), scratch, stream, pl.batch}.run();
}

}  // namespace

cudaError_t launch_transpose(const LaunchPlan& lp, const plan::DeviceCaps& caps, void* data, uint8_t* scratch,
                             cudaStream_t stream) {
  switch (lp.esize) {
    case 1: return run_plan<ElemOf<1>::type>(lp, caps, data, scratch, stream);
    case 2: return run_plan<ElemOf<2>::type>(lp, caps, data, scratch, stream);
    case 4: return run_plan<ElemOf<4>::type>(lp, caps, data, scratch, stream);
    case 8: return run_plan<ElemOf<8>::type>(lp, caps, data, scratch, stream);
    case 16: return run_plan<ElemOf<16>::type>(lp, caps, data, scratch, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace gpu
}  // namespace torch_inplace
