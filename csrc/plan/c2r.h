// Index math of Catanzaro, Keller and Garland's in-place transposition (PPoPP'14, paper 003), shared by the
// CPU engine, the GPU kernels and the tests. Plain C++ (host and device), no framework types.
//
// A is a row-major m x n matrix (A(i, j) = buf[i*n + j]); c = gcd(m, n), a = m / c, b = n / c.
// C2R turns it into the row-major n x m transpose; R2C is the inverse map. ../shared/reference/c2r_reference.py
// is the executable specification these functions follow, equation by equation.
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define TI_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TI_HOST_DEVICE inline
#endif

namespace torch_inplace {
namespace c2r {

// Bytes of shared memory that hold `bytes` of contiguous rows staged with 16-byte copies (the GPU row shuffle's
// stage_contiguous): the copy starts up to 15 bytes into its buffer, so that shared and global addresses agree
// mod 16, and the next buffer starts 16-byte aligned.
TI_HOST_DEVICE int64_t staged_bytes(int64_t bytes) { return (bytes + 15) / 16 * 16 + 16; }

// (x * y) mod m for 0 <= x, y < m without overflow (128-bit product only when the operands are large).
TI_HOST_DEVICE int64_t mulmod(int64_t x, int64_t y, int64_t m) {
  if (((x | y) >> 31) == 0) return (x * y) % m;
  return static_cast<int64_t>((static_cast<unsigned __int128>(x) * static_cast<unsigned __int128>(y)) %
                              static_cast<unsigned __int128>(m));
}

TI_HOST_DEVICE int64_t gcd64(int64_t x, int64_t y) {
  while (y != 0) {
    const int64_t t = x % y;
    x = y;
    y = t;
  }
  return x;
}

// The row kernels' bounded variants (catanzaro.cuh, TI_ROW_BOUNDS) that the launcher has: `blocks` = 3 or 4 blocks of
// 512 threads per SM, for 4- and 8-byte elements. The planner plans no other.
TI_HOST_DEVICE constexpr bool row_bound_variant(int64_t blocks, int64_t esize) {
  return (blocks == 3 || blocks == 4) && (esize == 4 || esize == 8);
}

// Threads per block for a C2R row kernel with c = gcd(m, n) > 1 whose default block size B (a multiple of the warp
// width) c does not divide: the largest multiple of lcm(warp, c) up to B where that keeps at least 7/8 of B, else B.
// With c dividing the block size the row walk drops its c terms (catanzaro.cuh, shuffle_staged_rows' kStepC0).
TI_HOST_DEVICE int64_t c2r_walk_threads(int64_t B, int64_t c, int64_t warp) {
  if (c <= 1 || B % c == 0) return B;
  const int64_t l = warp / gcd64(warp, c) * c;  // lcm(warp, c)
  const int64_t fit = B / l * l;
  return fit * 8 >= B * 7 ? fit : B;
}

// Modular multiplicative inverse of x mod y (x, y coprime); mmi(x, 1) == 0 (reference: mmi).
TI_HOST_DEVICE int64_t mmi(int64_t x, int64_t y) {
  if (y <= 1) return 0;
  // extended Euclid on (x mod y, y)
  int64_t r0 = y, r1 = x % y, t0 = 0, t1 = 1;
  while (r1 != 0) {
    const int64_t q = r0 / r1;
    int64_t tmp = r0 - q * r1;
    r0 = r1;
    r1 = tmp;
    tmp = t0 - q * t1;
    t0 = t1;
    t1 = tmp;
  }
  return t0 < 0 ? t0 + y : t0;
}

// Parameters of one m x n decomposition. All index functions below are pure and take 64-bit indices;
// every intermediate product stays below m*n + m (mulmod covers ainv * x) so tensors past 2^31 elements are safe.
struct Params {
  int64_t m = 1, n = 1, c = 1, a = 1, b = 1, ainv = 0;

  Params() = default;
  TI_HOST_DEVICE Params(int64_t m_, int64_t n_) : m(m_), n(n_) {
    c = gcd64(m, n);
    a = m / c;
    b = n / c;
    ainv = mmi(a % b, b);
  }

  // ---- C2R, gather forms ----------------------------------------------------------------------------
  // Step 1 (only when c > 1): column pre-rotation r_j(i) = (i + j / b) mod m (eq. 23): out(i, j) = in(r, j).
  TI_HOST_DEVICE int64_t prerotate_amount(int64_t j) const { return (j / b) % m; }
  // Step 2: row shuffle, gather form d'^-1_i(j) (eq. 31): out(i, j) = in(i, row_gather(i, j)).
  TI_HOST_DEVICE int64_t row_gather(int64_t i, int64_t j) const {
    int64_t f = j + i * (n - 1);
    if (i - (j % c) + c > m) f += m;
    const int64_t fc = f / c;
    return mulmod(ainv, fc % b, b) + (f % c) * b;
  }
  // Step 3: column shuffle s'_j(i) = (j + i*n - i/a) mod m (eq. 26) = (q(i) + j) mod m:
  // a rotation of column j by j followed by the row permutation q shared by all columns.
  TI_HOST_DEVICE int64_t q(int64_t i) const {
    const int64_t v = ((i * n) % m) - ((i / a) % m);
    return v < 0 ? v + m : v;
  }
  TI_HOST_DEVICE int64_t col_gather(int64_t i, int64_t j) const { return (q(i) + j) % m; }

  // ---- R2C (inverse), gather forms ------------------------------------------------------------------
  // Inverse of step 2: gather with d'_i(j) = ((i + j/b) mod m + j*m) mod n (eq. 24).
  TI_HOST_DEVICE int64_t row_scatter(int64_t i, int64_t j) const {
    return (((i + j / b) % m) + j * m) % n;
  }
};

}  // namespace c2r
}  // namespace torch_inplace
