#!/usr/bin/env bash
# A/B run of the small LU / inverse kernels on a GPU machine: benchmarks/small_lu_harness.cu built against an old
# copy of kernels/lu/small_lu.cuh (OLD/kernels/lu/small_lu.cuh, default abtest/old, which git ignores: pass it to
# the device with carry) and against the working tree, per range of n in parallel; both run twice, interleaved, and
# benchmarks/lu_ab_compare.py prints the ratios and checks that the output bits agree.
#   mkdir -p abtest/old/kernels/lu && git show REF:csrc/kernels/lu/small_lu.cuh > abtest/old/kernels/lu/small_lu.cuh
#   bash tools/lu_ab.sh          (on the GPU machine; OUT gets compare_<variant>.txt and old1.txt)
# BUILD=1 also builds the extension alongside (8 jobs).
# VARIANTS="name:flags ..." builds the working tree once per variant with extra nvcc flags, commas between several
# (default "new:", one build without any); each is compared with the old build (compare_<name>.txt).
set -u
FINAL=${OUT:-/tmp/ab_out}; OUT=/tmp/ab; mkdir -p "$OUT" "$FINAL"
OLD=${OLD:-abtest/old}
RANGES=${RANGES:-"2:5 6:9 10:13 14:16"}  # e.g. "17:20 21:24 25:28 29:32" for n > 16
VARIANTS=${VARIANTS:-"new:"}
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
  for v in $VARIANTS; do name=${v%%:*}; flags=${v#*:}
    nvcc $F ${flags//,/ } -I csrc benchmarks/small_lu_harness.cu -o /tmp/slh_${name}_$a -Xptxas -v \
      > "$OUT/build_${name}_$a.log" 2>&1 &
    pids+=($!)
  done
done
wait "${pids[@]}"
echo "harness built in $((SECONDS - t0)) s"
cat "$OUT"/build_*.log | grep -E "error|spill" | grep -v " 0 bytes spill" | head
names=""; for v in $VARIANTS; do names="$names ${v%%:*}"; done
for rep in 1 2; do
  for x in old $names; do : > "$OUT/$x$rep.txt"; done
  for r in $RANGES; do a=${r%:*}
    for x in old $names; do /tmp/slh_${x}_$a >> "$OUT/$x$rep.txt" 2>&1; done
  done
done
echo "ran in $((SECONDS - t0)) s"
for x in $names; do
  python3 benchmarks/lu_ab_compare.py "$OUT" "$x" > "$OUT/compare_$x.txt"; echo "$x: $(tail -1 "$OUT/compare_$x.txt")"
  cp "$OUT/compare_$x.txt" "$FINAL/"
done
wait
cp "$OUT/old1.txt" "$FINAL/" 2>/dev/null
cp "$OUT/ext_build.log" "$FINAL/" 2>/dev/null || true
