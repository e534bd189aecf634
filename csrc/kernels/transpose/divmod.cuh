// Strength-reduced division (paper 003 sec. 4.4): a reciprocal computed once per launch turns each x / d and
// x % d into a high multiply, a multiply and at most one correction. Host and device, no framework types.
#pragma once

#include <cstdint>

#include "kernels/common.cuh"

namespace torch_inplace {
namespace kernels {

TI_HOST_DEVICE uint64_t umulhi64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __umul64hi(a, b);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

TI_HOST_DEVICE uint32_t umulhi32(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

// x / d and x % d for any unsigned x of the type and any d >= 1. With M = floor((2^w - 1) / d) the estimate
// floor(x * M / 2^w) is floor(x / d) or one less, so one conditional correction makes it exact.
template <typename U>
struct DivMod;

template <>
struct DivMod<uint64_t> {
  uint64_t d = 1, M = ~uint64_t{0};
  DivMod() = default;
  explicit DivMod(uint64_t d_) : d(d_), M(~uint64_t{0} / d_) {}
  TI_HOST_DEVICE uint64_t div(uint64_t x, uint64_t* r) const {
    uint64_t q = umulhi64(x, M);
    uint64_t rem = x - q * d;
    if (rem >= d) {
      rem -= d;
      ++q;
    }
    *r = rem;
    return q;
  }
  TI_HOST_DEVICE uint64_t mod(uint64_t x) const {
    uint64_t r;
    div(x, &r);
    return r;
  }
};

template <>
struct DivMod<uint32_t> {
  uint32_t d = 1, M = ~uint32_t{0};
  DivMod() = default;
  TI_HOST_DEVICE explicit DivMod(uint32_t d_) : d(d_), M(~uint32_t{0} / d_) {}
  TI_HOST_DEVICE uint32_t div(uint32_t x, uint32_t* r) const {
    uint32_t q = umulhi32(x, M);
    uint32_t rem = x - q * d;
    if (rem >= d) {
      rem -= d;
      ++q;
    }
    *r = rem;
    return q;
  }
  TI_HOST_DEVICE uint32_t mod(uint32_t x) const {
    uint32_t r;
    div(x, &r);
    return r;
  }
};

// (t, a, b) += (dt, da, db) in the mixed radix (*, A, B), with da < A and db < B: a counter of (tile, row,
// column) stepped by a fixed distance without divisions.
TI_DEVICE void advance3(uint32_t& t, uint32_t& a, uint32_t& b, uint32_t dt, uint32_t da, uint32_t db, uint32_t A,
                        uint32_t B) {
  b += db;
  if (b >= B) {
    b -= B;
    ++a;
  }
  a += da;
  if (a >= A) {
    a -= A;
    ++t;
  }
  t += dt;
}

// (t, a, b) one step on in the mixed radix (*, A, B): b wraps at B into a, a wraps at A into t.
TI_DEVICE void next3(uint32_t& t, uint32_t& a, uint32_t& b, uint32_t A, uint32_t B) {
  if (++b == B) {
    b = 0;
    if (++a == A) {
      a = 0;
      ++t;
    }
  }
}

}  // namespace kernels
}  // namespace torch_inplace
