"""Catanzaro's two directions on the general benchmark shapes: the planner's choice against the other direction
forced, in GPU time (queued behind a sleep kernel, as bench_transpose.py's queued figures), every result checked.
Tells whether the planner's rule (gpu_plan.cpp: the row shuffle on the short side, except for fp32 matrices with
coprime sides) leaves time on the table for some class of shapes; TORCH_INPLACE_GPU_DIRECTION=short times the
short-side rule alone.

    python3 benchmarks/compare_directions.py [--general 200] [--out DIR]
"""
import argparse
import json
import math
import os
import random
import statistics

import torch

from bench_transpose import fill_random, general_shapes, timed  # same directory; puts the repository on sys.path

DT = {4: torch.float32, 8: torch.float64}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--general", type=int, default=200)
    ap.add_argument("--seed", type=int, default=2026)  # bench_transpose.py's shapes
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    general = general_shapes(random.Random(args.seed), args.general)
    rows = []
    for es in (4, 8):
        for shape in general:
            auto = torch.ops.inplace._plan_transpose(list(shape), DT[es], torch.device("cuda"), "auto")[0]
            if auto not in ("c2r", "r2c"):
                continue
            other = "r2c" if auto == "c2r" else "c2r"
            src = fill_random(torch.empty(shape, dtype=DT[es], device="cuda"))
            want = src.mT.contiguous()
            x = torch.empty_like(src)
            t = {}
            for algo in (auto, other):
                x.copy_(src)
                torch.ops.inplace._transpose_data_(x, algo)
                assert torch.equal(x.view(want.shape), want), (shape, es, algo)
                t[algo] = timed(lambda: torch.ops.inplace._transpose_data_(x, algo), lambda: x.copy_(src), args.reps,
                                queued=True)
            r = dict(shape=list(shape), esize=es, auto=auto, gcd=math.gcd(*shape), auto_ms=t[auto],
                     other_ms=t[other], other_speedup=t[auto] / t[other])
            rows.append(r)
            print(f"{str(shape):16s} fp{8 * es} gcd {r['gcd']:5d} {auto} {t[auto]:.3f} ms, {other} {t[other]:.3f} ms "
                  f"({r['other_speedup']:.3f}x)", flush=True)
            del src, want, x
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
