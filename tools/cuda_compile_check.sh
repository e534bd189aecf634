#!/usr/bin/env bash
# Compiles every CUDA source (csrc/**/*.cu) for sm_90 with nvcc and torch's headers, object files discarded, so a
# kernel that does not compile fails CI before it reaches a GPU. Where the package build already compiled them
# (torch's CUDA major == nvcc's), that build is the check and only the LU switch variants below are compiled.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$NVCC" ]; then echo "cuda_compile_check: nvcc not found: FAILED"; exit 1; fi

mapfile -t sources < <(find csrc -name '*.cu' | sort)
if [ ${#sources[@]} -eq 0 ]; then echo "cuda_compile_check: no CUDA sources"; exit 0; fi

built=$("$PYTHON" -c 'import torch_inplace; print("yes" if torch_inplace.built_with_gpu() else "no")') || built=no

inc=$("$PYTHON" -c 'from torch.utils.cpp_extension import include_paths; print(" ".join("-I"+p for p in include_paths()))')
py_inc=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
failed=0
compile() {  # compile FILE [FLAGS...]: one translation unit for sm_90, the object discarded
  local f=$1; shift
  # shellcheck disable=SC2086
  if "$NVCC" -std=c++17 -gencode=arch=compute_90,code=sm_90 --expt-relaxed-constexpr -DTORCH_INPLACE_WITH_CUDA \
      "$@" -Icsrc $inc -I"$py_inc" -D_GLIBCXX_USE_CXX11_ABI=1 -Xcompiler -fPIC -c "$f" -o /dev/null; then
    echo "  ok  $f${*:+ ($*)}"
  else
    echo "  FAILED $f${*:+ ($*)}"; failed=1
  fi
}
if [ "$built" = yes ]; then
  echo "cuda_compile_check: the package build compiled ${#sources[@]} CUDA sources for sm_90 (torch CUDA == nvcc)"
else
  for f in "${sources[@]}"; do compile "$f"; done
fi
# The small LU / inverse kernels' measurement switches (csrc/kernels/lu/small_lu.cuh: TI_LU_SHFL_BCAST,
# TI_LU_F64_SMEM_CHUNKS, TI_LU_INV_ONE_KEY, TI_LU_PERM_AT_END, TI_LU_SLOT_STORES, TI_LU_BOUND_SWEEP) select code that
# the default build leaves out; tools/lu_ab.sh builds them by hand. Two settings, each branch's "everywhere" and
# "nowhere" side, compiled for the last quarter of n of both real types (each quarter instantiates 1-4 rows per lane),
# so that a switch's other side cannot rot unseen. LU_VARIANTS=0 skips them.
variants=("-DTI_LU_SHFL_BCAST=1 -DTI_LU_F64_SMEM_CHUNKS=0 -DTI_LU_INV_ONE_KEY=1 -DTI_LU_PERM_AT_END=1 -DTI_LU_SLOT_STORES=1 -DTI_LU_BOUND_SWEEP=64"
          "-DTI_LU_SHFL_BCAST=0 -DTI_LU_F64_SMEM_CHUNKS=2 -DTI_LU_INV_ONE_KEY=0 -DTI_LU_PERM_AT_END=0 -DTI_LU_SLOT_STORES=0")
n_variants=0
if [ "${LU_VARIANTS:-1}" != 0 ]; then
  for v in "${variants[@]}"; do
    for f in csrc/ops/cuda/lu_inst_f32_q4.cu csrc/ops/cuda/lu_inst_f64_q4.cu; do
      # shellcheck disable=SC2086
      compile "$f" $v
      n_variants=$((n_variants + 1))
    done
  done
fi
if [ $failed -ne 0 ]; then echo "cuda_compile_check: FAILED"; exit 1; fi
echo "cuda_compile_check: ${#sources[@]} CUDA sources compile for sm_90 (and ${n_variants} with the LU switches set)"
