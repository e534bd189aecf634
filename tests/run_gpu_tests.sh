#!/bin/bash
# Runs the GPU-marked LU / inverse tests; if the process crashes (e.g. a segfault), names the test that was
# running, deselects it and runs the rest again (at most 3 times). Usage: tests/run_gpu_tests.sh [LOGDIR]
LOG=${1:-/tmp}
export PYTHONUNBUFFERED=1
desel=()
for round in 1 2 3 4; do
  python3 -X faulthandler -m pytest -v -m gpu tests/test_lu.py tests/test_inverse.py "${desel[@]}" \
    > "$LOG/gpu_tests_round.log" 2>&1
  rc=$?
  cat "$LOG/gpu_tests_round.log" >> "$LOG/gpu_tests.log"; grep -E "PASSED|FAILED|ERROR|passed|failed" "$LOG/gpu_tests_round.log" | grep -vE "PASSED" | tail -15
  if [ $rc -le 1 ]; then break; fi
  crashed=$(grep -oE "^tests/[a-z_]+\.py::[^ ]+" "$LOG/gpu_tests_round.log" | tail -1)
  echo "CRASH rc=$rc in $crashed"
  grep -B2 -A12 "Fatal Python error" "$LOG/gpu_tests_round.log" | head -30
  [ -z "$crashed" ] && break
  desel+=(--deselect "$crashed")
done
rm -f "$LOG/gpu_tests_round.log"
