#!/usr/bin/env bash
# One call on a GPU machine (H100/H200): build for sm_90 with 16 jobs, run the GPU test suite, compute-sanitizer
# memcheck/racecheck on a representative set, and the benchmarks; everything lands under $OUT:
#   $OUT/summary.txt  one line per stage (ok / FAILED, seconds)   $OUT/gpu.txt   nvidia-smi, torch's view
#   $OUT/build.log  $OUT/pytest.log  $OUT/sanitize.log  $OUT/cmake.log  $OUT/bench.log
#   $OUT/results.tgz  benchmarks/results/<gpu>/ (JSON + PNG) as produced by this run
#   $OUT/profile.log  per-kernel times (benchmarks/profile_transpose_kernels.py)
#   $OUT/compare_fused_rotation.log  gcd > 1 shapes, rotation fused vs separate
# STAGES=build,test,sanitize,cmake,bench (default all) picks stages; BENCH_ARGS / LINALG_ARGS go to the benchmarks.
# The cmake stage builds the LibTorch library with -DTORCH_INPLACE_WITH_CUDA=ON and runs CTest on the GPU (the C++
# API's CUDA tests included); GoogleTest comes from the system, or is built first from GTEST_SRC (a googletest
# source tree, e.g. Debian's /usr/src/googletest carried along) where the GPU image has none.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${OUT:-out}")
mkdir -p "$OUT"
export MAX_JOBS=${MAX_JOBS:-16} TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} PYTHONUNBUFFERED=1
# The GPU image's default CC/CXX (/opt/gcc wrappers) build an extension that crashes when it formats numbers
# into messages; the system compilers build a working one (seen on H200 machines, 2026-11-21).
if [ -x /usr/bin/gcc ] && [ -x /usr/bin/g++ ]; then export CC=${TI_CC:-/usr/bin/gcc} CXX=${TI_CXX:-/usr/bin/g++}; fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
STAGES=${STAGES:-build,test,sanitize,cmake,bench}
status=0

stage() {  # stage NAME LOG command...
  local name=$1 log=$2; shift 2
  case ",$STAGES," in *",$name,"*) ;; *) return 0 ;; esac
  local t0=$SECONDS
  echo "=== $name: $*"
  if "$@" > "$OUT/$log" 2>&1; then
    echo "$name ok $((SECONDS - t0))s" | tee -a "$OUT/summary.txt"
  else
    echo "$name FAILED $((SECONDS - t0))s (see $log)" | tee -a "$OUT/summary.txt"
    tail -40 "$OUT/$log"
    status=1
  fi
}

{ nvidia-smi; $PY -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(),
  torch.cuda.get_device_properties(0))'; } > "$OUT/gpu.txt" 2>&1
head -20 "$OUT/gpu.txt"

stage build build.log $PY setup.py build_ext --inplace
if [ $status -ne 0 ]; then exit 1; fi
stage test pytest.log $PY -X faulthandler -m pytest tests -q -m gpu -p no:cacheprovider --durations=15
if [ -f tools/sanitize.sh ]; then stage sanitize sanitize.log bash tools/sanitize.sh; fi
cmake_cuda() {
  local torch_prefix prefix build=build/cmake-cuda
  torch_prefix=$($PY -c 'import torch; print(torch.utils.cmake_prefix_path)') || return 1
  prefix=$torch_prefix
  if [ -n "${GTEST_SRC:-}" ]; then
    cmake -S "$GTEST_SRC" -B /tmp/ti-gtest-build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=OFF \
      -DCMAKE_INSTALL_PREFIX=/tmp/ti-gtest && cmake --build /tmp/ti-gtest-build -j "$MAX_JOBS" \
      && cmake --install /tmp/ti-gtest-build > /dev/null || return 1
    prefix="/tmp/ti-gtest;$torch_prefix"
  fi
  cmake -S . -B "$build" -G Ninja -DTORCH_INPLACE_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_CUDA_HOST_COMPILER="${CXX:-g++}" -DCMAKE_PREFIX_PATH="$prefix" \
    -DTORCH_INPLACE_PYTHON="$(command -v "$PY")" || return 1
  cmake --build "$build" -j "$MAX_JOBS" || return 1
  ctest --test-dir "$build" --output-on-failure -j 4
}
stage cmake cmake.log cmake_cuda
bench() {
  local rc=0
  if [ -f benchmarks/bench_transpose.py ]; then $PY benchmarks/bench_transpose.py ${BENCH_ARGS:-} || rc=1; fi
  if [ -f benchmarks/bench_linalg.py ]; then $PY benchmarks/bench_linalg.py ${LINALG_ARGS:-} || rc=1; fi
  if [ -f benchmarks/bench_func.py ]; then $PY benchmarks/bench_func.py || rc=1; fi
  $PY benchmarks/demo.py || rc=1
  # where the transpose time goes (per kernel), and the fused rotation against its separate step
  $PY benchmarks/profile_transpose_kernels.py > "$OUT/profile.log" 2>&1 || rc=1
  (cd benchmarks && $PY compare_fused_rotation.py > "$OUT/compare_fused_rotation.log" 2>&1) || rc=1
  return $rc
}
stage bench bench.log bench
tar czf "$OUT/results.tgz" benchmarks/results 2>/dev/null
echo "=== summary"; cat "$OUT/summary.txt"
grep -hE "passed|failed|median|target|TARGET" "$OUT/pytest.log" "$OUT/cmake.log" "$OUT/bench.log" 2>/dev/null | tail -40
exit $status
