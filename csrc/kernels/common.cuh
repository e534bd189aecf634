// Portability layer for the pure device code in csrc/kernels: the same headers compile with nvcc (CUDA) and
// hipcc (HIP, including Debian's ROCm 5.2 hipcc for gfx90a without ATen). No framework types here.
#pragma once

#include <cstdint>

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define TI_HIP 1
#else
#include <cuda_runtime.h>
#define TI_HIP 0
#endif

#include "plan/c2r.h"  // TI_HOST_DEVICE and the Catanzaro index math

// Warp (wavefront) width, a compile-time constant of the kernels and of their launchers (host code, which sizes blocks
// and grids with it). CUDA: 32 (ATen's C10_WARP_SIZE). HIP: 64, the wavefront of the gfx9 GPUs (CDNA: gfx90a, gfx942,
// ...) the HIP build targets. ATen's C10_WARP_SIZE cannot serve there: on ROCm it is a run-time call in host code
// (at::cuda::warp_size()), no constant, and its device value depends on the target. A device pass for a target with
// 32-wide wavefronts (RDNA, gfx10 / gfx11) is refused here, since host code compiled once for every target sizes the
// launches for 64; the ops also refuse a device whose warpSize differs at run time (transpose_cuda.cpp,
// lu_kernel.cu).
#if TI_HIP
#define TI_WARP_SIZE 64
#if defined(__HIP_DEVICE_COMPILE__) && defined(__AMDGCN_WAVEFRONT_SIZE) && __AMDGCN_WAVEFRONT_SIZE != 64
#error "torch_inplace: HIP kernels need 64-wide wavefronts (gfx9 / CDNA, e.g. gfx90a); this target's are 32-wide"
#endif
#elif defined(C10_WARP_SIZE)
#define TI_WARP_SIZE C10_WARP_SIZE
#else
#define TI_WARP_SIZE 32
#endif

#define TI_DEVICE __device__ __forceinline__

// Launch bounds with a minimum of resident blocks per SM (CUDA's second bound; 0 asks for none). HIP, whose second
// bound means waves per execution unit, gets the thread bound only.
#if TI_HIP
#define TI_LAUNCH_BOUNDS(threads, min_blocks) __launch_bounds__(threads)
#else
#define TI_LAUNCH_BOUNDS(threads, min_blocks) __launch_bounds__(threads, min_blocks)
#endif

namespace torch_inplace {
namespace kernels {

constexpr int kWarpSize = TI_WARP_SIZE;

// Butterfly shuffles over the whole warp/wavefront, with no hard-coded 32-lane mask.
template <typename T>
TI_DEVICE T shfl_xor(T v, int lane_mask, int width = kWarpSize) {
#if TI_HIP
  return __shfl_xor(v, lane_mask, width);
#else
  // CUDA warps are 32 lanes: the full-warp mask is all ones, which __activemask-free code needs here.
  return __shfl_xor_sync(static_cast<unsigned>(~0u), v, lane_mask, width);
#endif
}

template <typename T>
TI_DEVICE T shfl(T v, int src_lane, int width = kWarpSize) {
#if TI_HIP
  return __shfl(v, src_lane, width);
#else
  return __shfl_sync(static_cast<unsigned>(~0u), v, src_lane, width);
#endif
}

// Orders the shared-memory accesses of a warp (wavefront) and reconverges it. HIP (ROCm 5.2) has no
// __syncwarp: a wavefront runs in lockstep, so a wavefront-scope fence around a scheduling barrier suffices.
TI_DEVICE void warp_sync() {
#if TI_HIP
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#else
  __syncwarp();
#endif
}

// One element global -> shared without a register round trip (cp.async, sm_80 and up; 4, 8 or 16 bytes): a thread
// can have every copy of its share in flight at once; copy_async_wait() then the block barrier before the data is
// read. Elsewhere (HIP, other sizes) a plain load and store, and copy_async_wait() does nothing.
#if !TI_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// cp.async of one T (4, 8 or 16 bytes) to the shared-window address s.
template <typename T>
TI_DEVICE void copy_async_to(uint32_t s, const T* gsrc) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(gsrc), "n"(sizeof(T)) : "memory");
}
#endif

template <typename T>
TI_DEVICE void copy_async(T* sdst, const T* gsrc) {
#if !TI_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16) {
    copy_async_to(static_cast<uint32_t>(__cvta_generic_to_shared(sdst)), gsrc);
    return;
  }
#endif
  *sdst = *gsrc;
}

// A shared-memory array addressed by element index through its 32-bit shared-window address. On sm_90 the compiler
// rebuilds the window's base (S2R SR_CgaCtaId, LEA) for each predicated access to dynamic shared memory through a
// generic pointer, five instructions per element in a gather; st.shared / cp.async from `s` take one. Elsewhere
// (HIP, other element sizes) plain accesses through `p`.
template <typename T>
struct SharedArray {
  T* p;
  uint32_t s;
  TI_DEVICE explicit SharedArray(T* ptr) : p(ptr) {
#if !TI_HIP && defined(__CUDA_ARCH__)
    s = static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
#else
    s = 0;
#endif
  }
  TI_DEVICE void store(int idx, const T& v) const {
#if !TI_HIP && defined(__CUDA_ARCH__)
    const uint32_t a = s + static_cast<uint32_t>(idx) * static_cast<uint32_t>(sizeof(T));
    if constexpr (sizeof(T) == 4) {
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(*reinterpret_cast<const uint32_t*>(&v)) : "memory");
      return;
    } else if constexpr (sizeof(T) == 8) {
      asm volatile("st.shared.b64 [%0], %1;\n" ::"r"(a), "l"(*reinterpret_cast<const unsigned long long*>(&v))
                   : "memory");
      return;
    } else if constexpr (sizeof(T) == 16) {
      const uint4 u = *reinterpret_cast<const uint4*>(&v);
      asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(a), "r"(u.x), "r"(u.y), "r"(u.z), "r"(u.w)
                   : "memory");
      return;
    }
#endif
    p[idx] = v;
  }
  // copy_async into element idx.
  TI_DEVICE void copy_async_from(int idx, const T* gsrc) const {
#if !TI_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16) {
      copy_async_to(s + static_cast<uint32_t>(idx) * static_cast<uint32_t>(sizeof(T)), gsrc);
      return;
    }
#endif
    p[idx] = *gsrc;
  }
};

// Waits for this thread's copy_async copies.
TI_DEVICE void copy_async_wait() {
#if !TI_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// The value unchanged, but opaque to the optimizer: values computed from it inside a loop are not hoisted out of
// the loop as invariants (which for lane-dependent shared-memory addresses costs a register per address).
TI_DEVICE int opaque(int v) {
#if TI_HIP
  __asm__ volatile("" : "+v"(v));
#else
  asm volatile("" : "+r"(v));
#endif
  return v;
}

// Bytes moved as one element: transposition only moves bytes, so kernels are instantiated per element size.
struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};
template <int S> struct ElemOf;
template <> struct ElemOf<1> { using type = uint8_t; };
template <> struct ElemOf<2> { using type = uint16_t; };
template <> struct ElemOf<4> { using type = uint32_t; };
template <> struct ElemOf<8> { using type = uint64_t; };
template <> struct ElemOf<16> { using type = Bytes16; };

}  // namespace kernels
}  // namespace torch_inplace
