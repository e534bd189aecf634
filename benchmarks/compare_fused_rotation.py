"""Shapes whose sides share a factor (gcd c > 1) with Catanzaro's rotation fused into the row shuffle (the
planner's default) and as a column step of its own (TORCH_INPLACE_GPU_FUSE_ROTATION=0), against
`y.copy_(x.mT)` in the same run. The shapes are the general benchmark's (bench_transpose.py, same seed) with
gcd > 1; each cell is the median ms and, in brackets, the speed relative to the copy. Every result is checked.

    python3 benchmarks/compare_fused_rotation.py [--count 40]
"""
import argparse
import math
import os
import random
import statistics

import torch

from bench_transpose import timed  # same directory; also puts the repository on sys.path for torch_inplace


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    general = [(rng.randrange(1000, 20000), rng.randrange(1000, 20000)) for _ in range(200)]
    shapes = [s for s in general if math.gcd(*s) > 1][: args.count]
    print(f"device {torch.cuda.get_device_name()}; {len(shapes)} general shapes with gcd > 1; cells: ms (ratio to "
          "y.copy_(x.mT)), fused / separate rotation", flush=True)
    gains = {4: [], 8: []}
    ratios = {(4, "fused"): [], (4, "separate"): [], (8, "fused"): [], (8, "separate"): []}
    for es in (4, 8):
        dt = {4: torch.float32, 8: torch.float64}[es]
        for shape in shapes:
            src = torch.empty(shape, device="cuda", dtype=dt).uniform_(-1, 1)
            x = torch.empty_like(src)
            y = torch.empty(src.mT.shape, device="cuda", dtype=dt)
            want = src.mT.contiguous()
            base = timed(lambda: y.copy_(src.mT), lambda: None, args.reps)
            cells, ms_by = [], {}
            for name, cfg in (("fused", None), ("separate", "0")):
                if cfg is None:
                    os.environ.pop("TORCH_INPLACE_GPU_FUSE_ROTATION", None)
                else:
                    os.environ["TORCH_INPLACE_GPU_FUSE_ROTATION"] = cfg
                torch.ops.inplace._clear_plan_cache()
                plan = torch.ops.inplace._plan_transpose(list(shape), dt, torch.device("cuda"), "auto")[2]
                x.copy_(src)
                torch.ops.inplace._transpose_data_(x)
                assert torch.equal(x.view(want.shape), want), (shape, es, name)
                ms = timed(lambda: torch.ops.inplace._transpose_data_(x), lambda: x.copy_(src), args.reps)
                ms_by[name] = ms
                ratios[(es, name)].append(base / ms)
                cells.append(f"{name} {ms:.3f} ({base / ms:.2f})" + (" [fused]" if "fused" in plan else ""))
            os.environ.pop("TORCH_INPLACE_GPU_FUSE_ROTATION", None)
            torch.ops.inplace._clear_plan_cache()
            gains[es].append(ms_by["separate"] / ms_by["fused"])
            print(f"{str(shape):16s} gcd {math.gcd(*shape):5d} fp{8 * es} base {base:.3f}  " + "  ".join(cells),
                  flush=True)
            del src, x, y, want
    for es in (4, 8):
        print(f"SUMMARY fp{8 * es}: fused / separate speedup median {statistics.median(gains[es]):.3f} "
              f"(min {min(gains[es]):.3f}, max {max(gains[es]):.3f}); median ratio to the copy fused "
              f"{statistics.median(ratios[(es, 'fused')]):.3f}, separate {statistics.median(ratios[(es, 'separate')]):.3f}",
              flush=True)


if __name__ == "__main__":
    main()
