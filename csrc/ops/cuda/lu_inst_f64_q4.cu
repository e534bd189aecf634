// Explicit instantiations of the small LU / inverse launchers for one dtype and a quarter of n = 1..32 (real
// types build kernels for 1 to 4 rows per lane; split so that parallel builds compile them on several cores).
#define TI_LU_DEFINE_LAUNCHERS
#include "ops/cuda/lu_launch.cuh"

TI_LU_INST_Q4(double)
