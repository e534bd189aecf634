"""Shapes whose sides share a factor (gcd c > 1) with Catanzaro's rotation fused into the row shuffle (the
planner's default), fused with the C2R rows staged element by element (TORCH_INPLACE_GPU_FUSE_STAGE=elements; the
default stages them by runs of b columns where a run is long enough, "[runs]"), and as a column step of its own
(TORCH_INPLACE_GPU_FUSE_ROTATION=0), against `y.copy_(x.mT)` in the same run. The shapes are the general
benchmark's (bench_transpose.py, same seed) with gcd > 1; each cell is the median ms and, in brackets, the speed
relative to the copy. Every result is checked. R2C plans ignore the staging knob (a control: about 1.00x).
"walk": fused, with the C2R row walk's general form (TORCH_INPLACE_GPU_ROW_WALK=general) where c divides the row
kernel's block size (512 or 1024 threads) and the default drops the walk's c terms (summarized over C2R plans with
c | 512).

    python3 benchmarks/compare_fused_rotation.py [--count 40]
"""
import argparse
import math
import os
import random
import statistics

import torch

from bench_transpose import fill_random, general_shapes, timed  # same directory; also puts the repository on sys.path for torch_inplace


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--esizes", default="4,8", help="element sizes in bytes, of 1, 2, 4, 8")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    general = general_shapes(rng, 200)
    shapes = [s for s in general if math.gcd(*s) > 1][: args.count]
    print(f"device {torch.cuda.get_device_name()}; {len(shapes)} general shapes with gcd > 1; cells: ms (ratio to "
          "y.copy_(x.mT)), fused (rows staged by runs where [runs]) / fused with rows staged by elements / separate "
          "rotation / fused with the general C2R walk", flush=True)
    configs = (("fused", {}), ("elements", {"TORCH_INPLACE_GPU_FUSE_STAGE": "elements"}),
               ("separate", {"TORCH_INPLACE_GPU_FUSE_ROTATION": "0"}),
               ("walk", {"TORCH_INPLACE_GPU_ROW_WALK": "general"}))
    knobs = {k for _, kv in configs for k in kv}
    esizes = [int(v) for v in args.esizes.split(",")]
    gains = {es: [] for es in esizes}
    runs_gains = {es: [] for es in esizes}  # fused by runs / fused by elements, where the default plan stages by runs
    walk_gains = {es: [] for es in esizes}  # c-free walk / general walk, C2R plans with c | 512
    ratios = {(es, name): [] for es in esizes for name, _ in configs}
    for es in esizes:
        dt = {1: torch.uint8, 2: torch.bfloat16, 4: torch.float32, 8: torch.float64}[es]
        for shape in shapes:
            src = fill_random(torch.empty(shape, device="cuda", dtype=dt))
            x = torch.empty_like(src)
            y = torch.empty(src.mT.shape, device="cuda", dtype=dt)
            want = src.mT.contiguous()
            base = timed(lambda: y.copy_(src.mT), lambda: None, args.reps)
            cells, ms_by, by_runs, c2r = [], {}, False, False
            for name, kv in configs:
                for k in knobs:
                    os.environ.pop(k, None)
                os.environ.update(kv)
                torch.ops.inplace._clear_plan_cache()
                plan = torch.ops.inplace._plan_transpose(list(shape), dt, torch.device("cuda"), "auto")[2]
                x.copy_(src)
                torch.ops.inplace._transpose_data_(x)
                assert torch.equal(x.view(want.shape), want), (shape, es, name)
                ms = timed(lambda: torch.ops.inplace._transpose_data_(x), lambda: x.copy_(src), args.reps)
                ms_by[name] = ms
                ratios[(es, name)].append(base / ms)
                runs = "staged by runs" in plan
                by_runs = by_runs or (name == "fused" and runs)
                c2r = c2r or (name == "fused" and plan.startswith("c2r"))
                cells.append(f"{name} {ms:.3f} ({base / ms:.2f})" + (" [fused]" if "fused" in plan else "") +
                             (" [runs]" if runs else ""))
            for k in knobs:
                os.environ.pop(k, None)
            torch.ops.inplace._clear_plan_cache()
            gains[es].append(ms_by["separate"] / ms_by["fused"])
            if by_runs:
                runs_gains[es].append(ms_by["elements"] / ms_by["fused"])
            if c2r and 512 % math.gcd(*shape) == 0:
                walk_gains[es].append(ms_by["walk"] / ms_by["fused"])
            print(f"{str(shape):16s} gcd {math.gcd(*shape):5d} {str(dt)[6:]} base {base:.3f}  " + "  ".join(cells),
                  flush=True)
            del src, x, y, want
    for es in esizes:
        print(f"SUMMARY {es}-byte: fused / separate speedup median {statistics.median(gains[es]):.3f} "
              f"(min {min(gains[es]):.3f}, max {max(gains[es]):.3f}); median ratio to the copy fused "
              f"{statistics.median(ratios[(es, 'fused')]):.3f}, elements "
              f"{statistics.median(ratios[(es, 'elements')]):.3f}, separate "
              f"{statistics.median(ratios[(es, 'separate')]):.3f}", flush=True)
        for what, g in (("rows staged by runs / by elements", runs_gains[es]),
                        ("C2R walk without its c terms / general walk", walk_gains[es])):
            if g:
                print(f"SUMMARY {es}-byte: {what}, {len(g)} shapes: median {statistics.median(g):.3f} "
                      f"(min {min(g):.3f}, max {max(g):.3f})", flush=True)


if __name__ == "__main__":
    main()
