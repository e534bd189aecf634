#!/usr/bin/env bash
# A/B of the whole-GPU column kernel's gather / write-back variants on a GPU machine, in one call: build, the
# column-engine GPU tests, benchmarks/compare_column_engines.py, per-kernel times, and the general benchmark groups
# once per configuration. Logs under $OUT:
#   OUT=/tmp/o CONFIGS="base: async:TORCH_INPLACE_GPU_GRID_ASYNC=1 ..." GROUPS_=general_fp32 bash tools/grid_ab.sh
# CONFIGS: name:VAR=VALUE,VAR=VALUE entries separated by spaces (an empty list after the colon: the defaults).
# TEST_K: the GPU tests to run (pytest -k; default the column engines'); CONFIG_TEST_K: tests run again under each
# configuration's variables (default none); COMPARE=0 skips compare_column_engines.py; PROFILE_SHAPES (MxN:ES,...)
# replaces profile_transpose_kernels.py's shapes.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${OUT:-out}")
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
CONFIGS=${CONFIGS:-"base: async:TORCH_INPLACE_GPU_GRID_ASYNC=1"}
GROUPS_=${GROUPS_:-general_fp32,general_fp64}
STAGES=build bash tools/gpu_run.sh > "$OUT/ab.log" 2>&1 || { cat "$OUT/ab.log"; exit 1; }
cat "$OUT/summary.txt"
{
  t0=$SECONDS
  $PY -m pytest tests/test_transpose_gpu.py -q -x -p no:cacheprovider -k "${TEST_K:-column_engines}" 2>&1 | tail -5
  echo "tests $((SECONDS - t0))s"
  if [ "${COMPARE:-1}" != 0 ]; then
    t0=$SECONDS
    (cd benchmarks && $PY compare_column_engines.py) 2>&1
    echo "compare $((SECONDS - t0))s"
  fi
  for cfg in $CONFIGS; do
    name=${cfg%%:*}
    vars=${cfg#*:}
    t0=$SECONDS
    echo "=== config $name ($vars)"
    (IFS=,; for kv in $vars; do export "$kv"; done
     unset IFS
     if [ -n "${CONFIG_TEST_K:-}" ]; then
       $PY -m pytest tests/test_transpose_gpu.py -q -x -p no:cacheprovider -k "$CONFIG_TEST_K" 2>&1 | tail -3
     fi
     $PY benchmarks/bench_transpose.py --only "$GROUPS_" --no-largest --out "$OUT/bench_$name" 2>&1 | grep SUMMARY
     cp "$OUT/bench_$name"/*.json "$OUT/bench_$name.json"; rm -rf "$OUT/bench_$name"
     $PY benchmarks/profile_transpose_kernels.py ${PROFILE_SHAPES:+--shapes "$PROFILE_SHAPES"} 2>&1 |
       grep -E "^\(|${PROFILE_GREP:-col_grid|row_}" | cut -c1-160 > "$OUT/profile_$name.log")
    echo "config $name $((SECONDS - t0))s"
  done
} 2>&1 | tee -a "$OUT/ab.log"
