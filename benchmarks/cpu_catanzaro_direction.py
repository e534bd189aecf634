"""Which Catanzaro direction the CPU planner should take first (csrc/plan/transpose_plan.cpp, cpu_candidates): C2R
(row shuffle over rows of `cols` elements) against R2C (on the cols x rows view) on random 2-D shapes, both forced.

Shapes: 4-64 MB, aspect ratio log-uniform in [1, 1000], tall or wide at random, element sizes 1, 2, 4, 8, 16 bytes.
Each pair is timed 5 times, alternating which runs first; every result checked against x.mT.contiguous(). Prints
one line per shape and the median ratio r2c / c2r by orientation and aspect ratio (> 1: C2R faster).

    python benchmarks/cpu_catanzaro_direction.py --threads 2 --seed 1 --shapes 80
"""
import argparse
import math
import random
import statistics
import time

import torch

import torch_inplace

DTYPES = {1: torch.uint8, 2: torch.float16, 4: torch.float32, 8: torch.float64, 16: torch.complex128}
AS_BYTES = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64, 16: torch.int64}


def random_shape(rng):
    es = rng.choice(list(DTYPES))
    nbytes = math.exp(rng.uniform(math.log(4 << 20), math.log(64 << 20)))
    aspect = math.exp(rng.uniform(0, math.log(1000)))
    short = max(2, int(math.sqrt(nbytes / es / aspect)))
    long = max(short + 1, int(nbytes / es / short))
    tall = rng.random() < 0.5
    return ((long, short) if tall else (short, long)), es, tall


def time_pair(x, reps=5):
    want = x.mT.contiguous().view(AS_BYTES[x.element_size()])
    times = {"c2r": [], "r2c": []}
    for rep in range(reps):
        for algo in (("c2r", "r2c") if rep % 2 == 0 else ("r2c", "c2r")):
            y = x.clone()
            t0 = time.perf_counter()
            torch_inplace.transpose_(y, algorithm=algo)
            times[algo].append(time.perf_counter() - t0)
            assert torch.equal(y.view(AS_BYTES[x.element_size()]), want), (tuple(x.shape), algo)
    return statistics.median(times["c2r"]), statistics.median(times["r2c"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shapes", type=int, default=80)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    rows = []
    print(f"threads {args.threads}, seed {args.seed}, torch {torch.__version__}")
    for _ in range(args.shapes):
        shape, es, tall = random_shape(rng)
        x = torch.empty(shape, dtype=DTYPES[es])
        x.view(torch.uint8).random_()
        c2r, r2c = time_pair(x)
        aspect = max(shape) / min(shape)
        plan = torch_inplace.plan(shape, x.dtype, "cpu").algorithm
        rows.append((tall, aspect, min(shape), r2c / c2r))
        print(f"{es:2d} B {str(shape):18s} {'tall' if tall else 'wide'} aspect {aspect:7.1f}  c2r {c2r * 1e3:7.1f} ms"
              f"  r2c {r2c * 1e3:7.1f} ms  r2c/c2r {r2c / c2r:5.2f}  (plan: {plan})", flush=True)
    print("median r2c / c2r (> 1: C2R faster), short side > 64 (the skinny path takes the others):")
    for tall in (True, False):
        for lo, hi in ((1, 2), (2, 16), (16, 100), (100, 2000)):
            g = [r for t, a, s, r in rows if t == tall and lo <= a < hi and s > 64]
            if g:
                print(f"  {'tall' if tall else 'wide'} aspect [{lo}, {hi}): {len(g):3d} shapes, median "
                      f"{statistics.median(g):.2f} (min {min(g):.2f}, max {max(g):.2f})")


if __name__ == "__main__":
    main()
