#!/usr/bin/env bash
# Configures (Ninja), builds and runs the C++ side of torch_inplace for the CPU: libtorch_inplace.so against the
# torch of $PYTHON, the GoogleTest suite (tests/cpp) and the C++ TorchScript example (examples/cpp), all under
# CTest. Idempotent: re-running reuses the build folder and rebuilds what changed.
#
#   tools/cpp_test.sh                      PYTHON defaults to .venv/bin/python
#   PYTHON=/path/to/python BUILD_DIR=build/cmake-cpu JOBS=2 tools/cpp_test.sh
#
# Needs (Debian 12): apt-get install -y cmake ninja-build g++ libgtest-dev ; and a python with torch.
# No network: GoogleTest comes from libgtest-dev (find_package(GTest)), LibTorch from the python's torch.
# Extra CMake arguments may be passed: tools/cpp_test.sh -DTORCH_INPLACE_FIND_TORCH=IMPORTED
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-.venv/bin/python}"
BUILD_DIR="${BUILD_DIR:-build/cmake-cpu}"
JOBS="${JOBS:-2}"

for tool in cmake ninja; do
  command -v "$tool" >/dev/null 2>&1 || { echo "cpp_test: $tool not found (apt-get install -y cmake ninja-build)" >&2; exit 2; }
done
[ -x "$PYTHON" ] || command -v "$PYTHON" >/dev/null 2>&1 || { echo "cpp_test: python '$PYTHON' not found (set PYTHON)" >&2; exit 2; }
PYTHON_ABS="$(command -v "$PYTHON" 2>/dev/null || true)"
[ -n "$PYTHON_ABS" ] || PYTHON_ABS="$PYTHON"
case "$PYTHON_ABS" in /*) ;; *) PYTHON_ABS="$ROOT/$PYTHON_ABS" ;; esac
TORCH_PREFIX="$("$PYTHON_ABS" -c 'import torch; print(torch.utils.cmake_prefix_path)')"

start=$(date +%s)
echo "cpp_test: configuring $BUILD_DIR (torch from $PYTHON_ABS)"
cmake -S . -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" \
  -DTORCH_INPLACE_WITH_CUDA=OFF \
  -DBUILD_TESTING=ON -DTORCH_INPLACE_BUILD_TESTS=ON \
  -DTORCH_INPLACE_BUILD_EXAMPLES=ON \
  -DTORCH_INPLACE_PYTHON="$PYTHON_ABS" \
  "$@"
echo "cpp_test: building with -j$JOBS"
cmake --build "$BUILD_DIR" -j "$JOBS"
echo "cpp_test: running ctest"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"
echo "cpp_test: done in $(( $(date +%s) - start ))s"
