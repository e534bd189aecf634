// Explicit instantiations of the small LU / inverse launchers for one dtype and half of n = 1..32 (split so
// that parallel builds compile the 256 kernels on several cores).
#define TI_LU_DEFINE_LAUNCHERS
#include "ops/cuda/lu_launch.cuh"

TI_LU_INST_HI(torch_inplace::kernels::lu::Cplx<float>)
