// Launchers of the shared-memory LU / inverse kernels (kernels/lu/medium_lu.cuh): 32 < n <= 64 in the ops, any
// 2 <= n <= 64 under lu::kMediumRows. One matrix per block of kMediumThreads threads; the grid is capped at 32 blocks
// per SM and its blocks loop over the batch. No ATen header (lu_launch.cuh says why).
#include <algorithm>
#include <atomic>

#include "kernels/lu/medium_lu.cuh"
#define TI_LU_DEFINE_LAUNCHERS  // allow_block_smem
#include "ops/cuda/lu_launch.cuh"

namespace torch_inplace {
namespace lu_cuda {
namespace {

int64_t medium_blocks(int64_t batch) {
  const int sms = device_sms(current_device());
  return std::min<int64_t>(batch, int64_t{32} * std::max<int64_t>(1, sms));
}

}  // namespace

template <typename T>
void launch_medium_lu(const T* in, T* lu, int32_t* ipiv, int32_t* info, int64_t batch, int n, ti_stream_t stream) {
  if (n < 2 || n > kernels::lu::kMediumMaxN) {
    internal_error("lu_factor: internal error: medium kernel for n outside 2..64");
  }
  if (batch <= 0) return;
  static SmemLimitRaised raised;  // complex128 from n = 49
  const int smem = kernels::lu::medium_smem_bytes<T>(n);
  allow_block_smem(reinterpret_cast<const void*>(kernels::lu::medium_lu_kernel<T>), raised, smem,
                   kernels::lu::medium_smem_bytes<T>(kernels::lu::kMediumMaxN));
  const unsigned grid = static_cast<unsigned>(medium_blocks(batch)), threads = kernels::lu::kMediumThreads;
  kernels::lu::medium_lu_kernel<T><<<grid, threads, smem, stream>>>(in, lu, ipiv, info, batch, n);
  TI_LU_LAUNCH_CHECK();
}

template <typename T>
void launch_medium_inverse(const T* in, T* out, int32_t* info, int64_t batch, int n, ti_stream_t stream) {
  if (n < 2 || n > kernels::lu::kMediumMaxN) {
    internal_error("batched_inverse: internal error: medium kernel for n outside 2..64");
  }
  if (batch <= 0) return;
  static SmemLimitRaised raised;
  const int smem = kernels::lu::medium_smem_bytes<T>(n);
  allow_block_smem(reinterpret_cast<const void*>(kernels::lu::medium_inverse_kernel<T>), raised, smem,
                   kernels::lu::medium_smem_bytes<T>(kernels::lu::kMediumMaxN));
  const unsigned grid = static_cast<unsigned>(medium_blocks(batch)), threads = kernels::lu::kMediumThreads;
  kernels::lu::medium_inverse_kernel<T><<<grid, threads, smem, stream>>>(in, out, info, batch, n);
  TI_LU_LAUNCH_CHECK();
}

#define TI_MEDIUM_INST(T)                                                                                       \
  template void launch_medium_lu<T>(const T*, T*, int32_t*, int32_t*, int64_t, int, ti_stream_t);              \
  template void launch_medium_inverse<T>(const T*, T*, int32_t*, int64_t, int, ti_stream_t);
TI_MEDIUM_INST(float)
TI_MEDIUM_INST(double)
TI_MEDIUM_INST(kernels::lu::Cplx<float>)
TI_MEDIUM_INST(kernels::lu::Cplx<double>)
#undef TI_MEDIUM_INST

}  // namespace lu_cuda
}  // namespace torch_inplace
