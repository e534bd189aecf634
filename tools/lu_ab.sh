#!/usr/bin/env bash
# A/B run of the small LU / inverse kernels on a GPU machine: benchmarks/small_lu_harness.cu built against an old
# copy of kernels/lu/small_lu.cuh (OLD/kernels/lu/small_lu.cuh, default abtest/old, which git ignores: pass it to
# the device with carry) and against the working tree, per range of n in parallel; both run twice, interleaved, and
# benchmarks/lu_ab_compare.py prints the ratios and checks that the output bits agree.
#   mkdir -p abtest/old/kernels/lu && git show REF:csrc/kernels/lu/small_lu.cuh > abtest/old/kernels/lu/small_lu.cuh
#   bash tools/lu_ab.sh          (on the GPU machine; OUT gets compare.txt, old1.txt, new1.txt)
# BUILD=1 also builds the extension alongside (8 jobs).
set -u
FINAL=${OUT:-/tmp/ab_out}; OUT=/tmp/ab; mkdir -p "$OUT" "$FINAL"
OLD=${OLD:-abtest/old}
RANGES=${RANGES:-"2:5 6:9 10:13 14:16"}  # e.g. "17:20 21:24 25:28 29:32" for n > 16
t0=$SECONDS
if [ "${BUILD:-0}" = 1 ]; then
  # gpu_run.sh's build stage (its compiler choice and arch list), with 8 jobs: the harness builds take the rest
  (MAX_JOBS=8 OUT="$OUT/ext" STAGES=build bash tools/gpu_run.sh > "$OUT/ext_build.log" 2>&1
   echo "ext build rc $? at $((SECONDS - t0)) s" >> "$OUT/ext_build.log") &
fi
pids=()
for r in $RANGES; do
  a=${r%:*}; b=${r#*:}
  F="-std=c++17 -arch=sm_90 -O3 --expt-relaxed-constexpr -DSLH_N_MIN=$a -DSLH_N_MAX=$b"
  nvcc $F -I "$OLD" -I csrc benchmarks/small_lu_harness.cu -o /tmp/slh_old_$a > "$OUT/build_old_$a.log" 2>&1 &
  pids+=($!)
  nvcc $F -I csrc benchmarks/small_lu_harness.cu -o /tmp/slh_new_$a -Xptxas -v > "$OUT/build_new_$a.log" 2>&1 &
  pids+=($!)
done
wait "${pids[@]}"
echo "harness built in $((SECONDS - t0)) s"
cat "$OUT"/build_*.log | grep -E "error|spill" | grep -v " 0 bytes spill" | head
for rep in 1 2; do
  : > "$OUT/old$rep.txt"; : > "$OUT/new$rep.txt"
  for r in $RANGES; do a=${r%:*}
    /tmp/slh_old_$a >> "$OUT/old$rep.txt" 2>&1
    /tmp/slh_new_$a >> "$OUT/new$rep.txt" 2>&1
  done
done
echo "ran in $((SECONDS - t0)) s"
python3 benchmarks/lu_ab_compare.py "$OUT" | tee "$OUT/compare.txt" | tail -1
wait
cp "$OUT/compare.txt" "$OUT/old1.txt" "$OUT/new1.txt" "$FINAL/" 2>/dev/null
cp "$OUT/ext_build.log" "$FINAL/" 2>/dev/null || true
