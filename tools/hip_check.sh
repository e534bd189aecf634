#!/usr/bin/env bash
# Compiles every pure device header csrc/kernels/**/*.cuh with hipcc for an AMD GPU (default gfx90a), so that
# device code that would not build for ROCm fails CI without a ROCm machine. Each kernel header ends with an
#   #ifdef TORCH_INPLACE_HIP_CHECK ... explicit instantiations ... #endif
# block, so its templates are really compiled. Debian's hipcc (ROCm 5.2) is enough: apt-get install -y hipcc.
#
#   tools/hip_check.sh                      all headers under csrc/kernels
#   tools/hip_check.sh path/a.cuh ...       just these
# Environment: HIPCC (default hipcc), HIP_ARCH (default gfx90a), HIPCC_FLAGS (extra flags).
# Stops at the first header that fails; prints one summary line.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
HIPCC="${HIPCC:-hipcc}"
HIP_ARCH="${HIP_ARCH:-gfx90a}"

if ! command -v "$HIPCC" >/dev/null 2>&1; then
  echo "hip_check: $HIPCC not found (Debian: apt-get install -y hipcc)" >&2
  exit 2
fi

if [ "$#" -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(find csrc/kernels -name '*.cuh' | LC_ALL=C sort)
fi
if [ "${#files[@]}" -eq 0 ]; then
  echo "hip_check: no .cuh files under csrc/kernels" >&2
  exit 1
fi

n=0
start=$(date +%s)
for f in "${files[@]}"; do
  # -x hip compiles the header as a HIP translation unit; -fsyntax-only would skip device code generation.
  # shellcheck disable=SC2086
  if ! "$HIPCC" -x hip --offload-arch="$HIP_ARCH" -std=c++17 -DTORCH_INPLACE_HIP_CHECK -Wno-pragma-once-outside-header -I csrc \
       ${HIPCC_FLAGS:-} -c "$f" -o /dev/null; then
    echo "hip_check: FAILED on $f ($n of ${#files[@]} compiled before it, $HIP_ARCH)" >&2
    exit 1
  fi
  n=$((n + 1))
  echo "hip_check: ok $f"
done
echo "hip_check: ${n} passed, 0 failed (${#files[@]} headers compiled with $HIPCC for $HIP_ARCH in $(( $(date +%s) - start ))s)"
