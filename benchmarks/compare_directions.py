"""Catanzaro's two directions on the general benchmark shapes: the planner's choice against the other direction
forced, in GPU time (queued behind a sleep kernel, as bench_transpose.py's queued figures), every result checked.
Tells whether the planner's rule (gpu_plan.cpp: the row shuffle on the short side, except for fp32 matrices with
coprime sides) leaves time on the table for some class of shapes; TORCH_INPLACE_GPU_DIRECTION=short times the
short-side rule alone.

    python3 benchmarks/compare_directions.py [--general 200] [--out DIR]
"""
import json
import math
import os
import statistics

import torch

from catanzaro_study import catanzaro_cases, checked_gpu_ms, study_args  # same directory


def main():
    args, general = study_args(__doc__)
    rows = []
    for es, shape, auto, other, src, want, x in catanzaro_cases(general):
        t = {algo: checked_gpu_ms(x, src, want, algo, args.reps, (shape, es, algo)) for algo in (auto, other)}
        r = dict(shape=list(shape), esize=es, auto=auto, gcd=math.gcd(*shape), auto_ms=t[auto],
                 other_ms=t[other], other_speedup=t[auto] / t[other])
        rows.append(r)
        print(f"{str(shape):16s} fp{8 * es} gcd {r['gcd']:5d} {auto} {t[auto]:.3f} ms, {other} {t[other]:.3f} ms "
              f"({r['other_speedup']:.3f}x)", flush=True)
    for es in (4, 8):
        for auto in ("c2r", "r2c"):
            s = [r["other_speedup"] for r in rows if r["esize"] == es and r["auto"] == auto]
            if s:
                print(f"SUMMARY fp{8 * es} planner {auto}: n={len(s)} the other direction median {statistics.median(s):.3f}x,"
                      f" faster on {sum(v > 1.02 for v in s)} by more than 2%, max {max(s):.3f}x", flush=True)
    with open(os.path.join(args.out, "compare_directions.json"), "w") as f:
        json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
