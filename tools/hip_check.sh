#!/usr/bin/env bash
# Compiles the GPU sources with hipcc for an AMD GPU (default gfx90a) as a ROCm build of the extension compiles
# them, so that code that would not build for ROCm fails CI without a ROCm machine or a ROCm PyTorch:
#  1. csrc/ is copied to a scratch directory and hipified there by torch's hipify with the arguments that
#     torch.utils.cpp_extension.CUDAExtension uses on a ROCm PyTorch (tools/hipify_copy.py);
#  2. every kernel header (csrc/kernels/**/*.cuh), hipified, is compiled; each ends with an
#       #ifdef TORCH_INPLACE_HIP_CHECK ... explicit instantiations ... #endif
#     block, so its templates are really compiled;
#  3. every CUDA translation unit that includes no ATen, c10 or torch header (the launchers: transpose_kernel.cu,
#     lu_inst_*.cu, lu_medium.cu), hipified, is compiled whole, with the flags a ROCm build adds.
# The GPU files that include ATen (lu_kernel.cu; transpose_cuda.cpp, a .cpp, is not collected) need a ROCm
# PyTorch's headers: listed, not compiled. Without torch's hipify (PYTHON cannot import torch) or with
# HIP_CHECK_HIPIFY=0, the kernel headers are compiled as they are and the launchers are skipped. Debian's hipcc
# (ROCm 5.2) is enough: apt-get install -y hipcc.
#
#   tools/hip_check.sh                      everything above
#   tools/hip_check.sh path/a.cuh b.cu ...  just these (paths under csrc/)
# Environment: HIPCC (default hipcc), HIP_ARCH (default gfx90a), HIPCC_FLAGS (extra flags), PYTHON (default
# .venv/bin/python, else python3), JOBS (parallel compiles, default nproc), HIP_CHECK_HIPIFY (0: no hipify).
# Prints one line per file and a summary line; fails if any file fails.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
HIPCC="${HIPCC:-hipcc}"
HIP_ARCH="${HIP_ARCH:-gfx90a}"
JOBS="${JOBS:-$(nproc)}"
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi

if ! command -v "$HIPCC" >/dev/null 2>&1; then
  echo "hip_check: $HIPCC not found (Debian: apt-get install -y hipcc)" >&2
  exit 2
fi

if [ "$#" -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <({ find csrc/kernels -name '*.cuh'; find csrc -name '*.cu'; } | LC_ALL=C sort)
fi
if [ "${#files[@]}" -eq 0 ]; then
  echo "hip_check: no GPU sources under csrc" >&2
  exit 1
fi

start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

hipify=0
if [ "${HIP_CHECK_HIPIFY:-1}" != 0 ] && "$PYTHON" -c 'import torch.utils.hipify.hipify_python' >/dev/null 2>&1; then
  "$PYTHON" tools/hipify_copy.py "$work" > "$work/map.txt" 2> "$work/hipify.log" || {
    cat "$work/hipify.log" >&2
    echo "hip_check: FAILED: torch's hipify" >&2
    exit 1
  }
  hipify=1
  # The flags torch.utils.cpp_extension adds to hipcc on ROCm (COMMON_HIP_FLAGS + COMMON_HIPCC_FLAGS).
  read -r -a rocm_flags < <("$PYTHON" -c 'from torch.utils import cpp_extension as c
print(" ".join(f for f in c.COMMON_HIP_FLAGS + c.COMMON_HIPCC_FLAGS if f != "-fPIC"))' 2>/dev/null)
else
  echo "hip_check: without torch's hipify ($PYTHON cannot import torch, or HIP_CHECK_HIPIFY=0): the kernel headers as they are, no launchers"
  rocm_flags=()
fi

# The file that a ROCm build compiles for source $1 (hipified copy, or the source itself).
hip_path() {
  local f=$1 h
  if [ "$hipify" = 1 ]; then
    h=$(awk -v f="$f" '$1 == f { print $2 }' "$work/map.txt")
    if [ -n "$h" ]; then echo "$work/$h"; else echo "$work/$f"; fi
  else
    echo "$f"
  fi
}

jobs_list=()  # "kind<TAB>source<TAB>compiled file"
skipped=()
for f in "${files[@]}"; do
  case "$f" in
    *.cuh) jobs_list+=("header	$f	$(hip_path "$f")") ;;
    *.cu)
      if grep -Eq '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(ATen|c10|torch)/' "$f"; then
        skipped+=("$f")
      elif [ "$hipify" = 1 ]; then
        jobs_list+=("unit	$f	$(hip_path "$f")")
      else
        skipped+=("$f")
      fi
      ;;
    *) echo "hip_check: not a .cuh or .cu file: $f" >&2; exit 1 ;;
  esac
done

if [ "$hipify" = 1 ]; then inc="$work/csrc"; else inc="csrc"; fi

# The files that include ATen (lu_kernel.cu) include the kernel headers after ATen's macros, which on ROCm define
# C10_WARP_SIZE as a run-time call (torch >= 2.7), not a constant. Without a ROCm PyTorch those files cannot be
# compiled here, but this probe can: torch's own c10/macros (the installed torch's headers, USE_ROCM defined as a
# ROCm build defines it) followed by every hipified kernel header that was asked for.
torch_inc=""
if [ "$hipify" = 1 ]; then
  torch_inc=$("$PYTHON" -c 'from torch.utils.cpp_extension import include_paths; print(include_paths()[0])' 2>/dev/null)
  probe="$work/aten_macros_probe.hip"
  {
    echo '#include <c10/macros/Macros.h>'
    for f in "${files[@]}"; do
      case "$f" in *.cuh) echo "#include \"${f#csrc/}\"" ;; esac
    done
    echo '__global__ void ti_warp_probe(int* out) { out[threadIdx.x] = torch_inplace::kernels::kWarpSize; }'
  } > "$probe"
  if grep -q '"kernels/' "$probe"; then  # some kernel header was asked for
    jobs_list+=("probe	kernel headers after ATen's ROCm macros	$probe")
  fi
fi
export torch_inc
compile_one() {  # kind source compiled-file
  local kind=$1 src=$2 file=$3 log t0
  log="$work/$(echo "$src" | tr '/ ' '__').log"
  t0=$(date +%s)
  local defs=()
  if [ "$kind" = header ]; then defs=(-DTORCH_INPLACE_HIP_CHECK); fi
  if [ "$kind" = probe ]; then defs=(-DUSE_ROCM=1 -I "$torch_inc"); fi
  # -x hip compiles the file as a HIP translation unit; -fsyntax-only would skip device code generation.
  # shellcheck disable=SC2086
  if "$HIPCC" -x hip --offload-arch="$HIP_ARCH" -std=c++17 "${defs[@]}" -DTORCH_INPLACE_WITH_CUDA \
       "${rocm_flags[@]}" -Wno-pragma-once-outside-header -I "$inc" ${HIPCC_FLAGS:-} -c "$file" -o /dev/null \
       > "$log" 2>&1; then
    echo "hip_check: ok $src ($kind, $(( $(date +%s) - t0 ))s)"
  else
    cat "$log"
    echo "hip_check: FAILED $src ($kind)"
    return 1
  fi
}
export -f compile_one
export HIPCC HIP_ARCH HIPCC_FLAGS work inc
export rocm_flags_str="${rocm_flags[*]}"

failed=0
results=$(printf '%s\n' "${jobs_list[@]}" | xargs -P "$JOBS" -d '\n' -I{} bash -c '
  IFS=$'"'"'\t'"'"' read -r kind src file <<< "$1"
  read -r -a rocm_flags <<< "$rocm_flags_str"
  compile_one "$kind" "$src" "$file"' _ {}) || failed=1
echo "$results"
n_ok=$(grep -c '^hip_check: ok ' <<< "$results" || true)
n_bad=$(grep -c '^hip_check: FAILED ' <<< "$results" || true)
for f in "${skipped[@]}"; do
  echo "hip_check: not compiled here: $f (includes ATen / c10 / torch headers: needs a ROCm PyTorch)"
done
mode=$([ "$hipify" = 1 ] && echo "hipified as a ROCm build of the extension does" || echo "not hipified")
echo "hip_check: ${n_ok} passed, ${n_bad} failed, ${#skipped[@]} not compiled here (${#jobs_list[@]} files $mode," \
  "compiled with $HIPCC for $HIP_ARCH in $(( $(date +%s) - start ))s)"
if [ "$failed" -ne 0 ] || [ "$n_bad" -ne 0 ]; then exit 1; fi
