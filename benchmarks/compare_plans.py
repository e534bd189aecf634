"""GPU time of transpose_ under forced algorithms against the planner's choice, shape by shape (where a planner
rule is decided between two engines that both apply; e.g. a batch of squares: tile-pair swaps or on chip in waves).

For each shape: the result of every algorithm is checked against x.mT; times are medians of --reps calls queued
behind a sleep kernel (the GPU's time alone, bench_transpose.timed), the input refilled outside the timed region.

    python3 benchmarks/compare_plans.py [--reps 9] [--shapes 40x1024x1024:4,...] [--algorithms onchip,square]
                                        [--transposable]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch_inplace  # noqa: E402
from bench_transpose import DT, fill_random, timed  # noqa: E402

# Batches of squares (tile-pair swaps vs on chip in waves).
SHAPES = [((40, 1024, 1024), 4), ((100, 512, 512), 4), ((16, 2048, 2048), 2), ((300, 256, 256), 4),
          ((12, 1536, 1536), 8), ((64, 1024, 1024), 2)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--shapes", default="", help="BxMxN:ES,... instead of the built-in list")
    ap.add_argument("--algorithms", default="onchip,square")
    ap.add_argument("--transposable", action="store_true",
                    help="tensors from torch_inplace.empty_transposable (storage slack for the padded plan)")
    args = ap.parse_args()
    shapes = SHAPES
    if args.shapes:
        shapes = [(tuple(int(v) for v in s.split(":")[0].split("x")), int(s.split(":")[1]))
                  for s in args.shapes.split(",")]
    algos = ["auto"] + [a for a in args.algorithms.split(",") if a]
    print(f"device {torch.cuda.get_device_name()}; GPU time in ms (ratio to the planner's choice)", flush=True)
    for shape, es in shapes:
        dt = DT[es]
        src = fill_random(torch.empty(shape, dtype=dt, device="cuda"))
        want = src.mT.contiguous()
        x = (torch_inplace.empty_transposable(shape, dtype=dt, device="cuda") if args.transposable
             else torch.empty_like(src))
        cells = []
        base = None
        for a in algos:
            try:
                if args.transposable:  # the plan depends on the storage's slack: ask with the tensor itself
                    x.copy_(src)
                    torch.ops.inplace._transpose_data_(x, a)
                else:
                    torch_inplace.plan(shape, dt, "cuda", algorithm=a)
            except RuntimeError:
                cells.append(f"{a}: n/a")
                continue

            def run(a=a):
                torch.ops.inplace._transpose_data_(x, a)  # the bytes only; the shape stays the input's

            def refill():
                x.copy_(src)

            refill()
            run()
            ok = torch.equal(x.view(want.shape).view(torch.uint8), want.view(torch.uint8))
            ms = timed(run, refill, args.reps, queued=True)
            base = base or ms
            cells.append(f"{a}: {ms:.3f} ({base / ms:.2f}){'' if ok else ' WRONG'}")
        expl = torch_inplace.plan(shape, dt, "cuda").explanation
        label = "auto without slack" if args.transposable else "auto"
        print(f"{str(shape):20s} {es:2d}B  " + "  ".join(cells) + f"  | {label}: {expl[:90]}", flush=True)
        src = want = x = None
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
