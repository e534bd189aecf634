"""Where the CPU planner should take the in-cache path (plan "onchip", csrc/plan/transpose_plan.cpp: runs of whole
small matrices copied into a thread's buffer and written back transposed): every algorithm the planner offers for a
shape, forced, against `y.copy_(x.mT)` into a preallocated `y` (PyTorch's own path) in the same run.

Shapes: matrices of 2 x 2 up to the path's limit (4096 elements, 32 KiB), sides drawn log-uniform in [2, 100] (one
shape in four square), element sizes 1, 2, 4, 8, 16 bytes, batches that make the tensor 1-64 MB (log-uniform; one
shape in eight a single matrix). Each algorithm is timed `--reps` times in rotating order on fresh copies of the data
(the copy outside the timed region), every result checked against x.mT.contiguous(). Prints one line per shape,
then the median over shapes of (best other algorithm's time / onchip's time) and of (copy's time / onchip's time)
where the planner picks onchip and where it does not, by element size and by matrix size (> 1: onchip faster).

    python benchmarks/cpu_onchip_rule.py --threads 2 --seed 1 --shapes 120
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
ALGOS = ("onchip", "square", "skinny", "tiled32", "cut", "c2r", "r2c")


def random_shape(rng):
    while True:
        es = rng.choice(list(DTYPES))
        m = int(math.exp(rng.uniform(math.log(2), math.log(100))))
        n = m if rng.random() < 0.25 else int(math.exp(rng.uniform(math.log(2), math.log(100))))
        if m * n <= 4096 and m * n * es <= 32 * 1024:
            break
    if rng.random() < 0.125:
        return (m, n), es
    nbytes = math.exp(rng.uniform(math.log(1 << 20), math.log(64 << 20)))
    return (max(2, int(nbytes / (m * n * es))), m, n), es


def applicable(shape, dtype):
    out = []
    for algo in ALGOS:
        try:
            torch_inplace.plan(shape, dtype, "cpu", algorithm=algo)
            out.append(algo)
        except RuntimeError:
            pass
    return out


def time_shape(x, algos, reps):
    """Median seconds per algorithm (forced) and of y.copy_(x.mT); every result checked."""
    ab = AS_BYTES[x.element_size()]
    want = x.mT.contiguous().view(ab)
    times = {a: [] for a in algos + ["copy"]}
    y = torch.empty_like(want).view(x.dtype)
    for rep in range(reps):
        order = algos[rep % len(algos):] + algos[:rep % len(algos)]
        for algo in order + ["copy"]:
            z = x.clone()
            t0 = time.perf_counter()
            if algo == "copy":
                y.copy_(x.mT)
            else:
                torch_inplace.transpose_(z, algorithm=algo)
            times[algo].append(time.perf_counter() - t0)
            got = y if algo == "copy" else z
            assert torch.equal(got.view(ab), want), (tuple(x.shape), x.dtype, algo)
    return {a: statistics.median(t) for a, t in times.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shapes", type=int, default=120)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    print(f"threads {args.threads}, seed {args.seed}, torch {torch.__version__}")
    rows = []
    for _ in range(args.shapes):
        shape, es = random_shape(rng)
        dtype = DTYPES[es]
        x = torch.empty(shape, dtype=dtype)
        x.view(torch.uint8).random_()
        algos = applicable(shape, dtype)
        if "onchip" not in algos or len(algos) < 2:
            continue
        t = time_shape(x, algos, args.reps)
        others = {a: v for a, v in t.items() if a not in ("onchip", "copy")}
        best = min(others, key=others.get)
        auto = torch_inplace.plan(shape, dtype, "cpu").algorithm
        mn_bytes = shape[-1] * shape[-2] * es
        rows.append(dict(es=es, mn_bytes=mn_bytes, batch=len(shape) == 3, vs_best=t[best] / t["onchip"],
                         vs_copy=t["copy"] / t["onchip"], auto=auto))
        print(f"{str(tuple(shape)):>22} {es:2d} B  auto {auto:8s} onchip {t['onchip'] * 1e3:8.3f} ms  best other "
              f"{best:8s} {t[best] * 1e3:8.3f} ms ({t[best] / t['onchip']:5.2f}x)  copy {t['copy'] * 1e3:8.3f} ms "
              f"({t['copy'] / t['onchip']:5.2f}x)", flush=True)

    def summary(label, sel):
        if sel:
            print(f"{label:>28}: {len(sel):3d} shapes, best other / onchip median {statistics.median(r['vs_best'] for r in sel):5.2f}x "
                  f"(min {min(r['vs_best'] for r in sel):5.2f}x), copy / onchip median "
                  f"{statistics.median(r['vs_copy'] for r in sel):5.2f}x (min {min(r['vs_copy'] for r in sel):5.2f}x)")

    print()
    summary("all", rows)
    summary("where the planner picks it", [r for r in rows if r["auto"] == "onchip"])
    summary("where it does not", [r for r in rows if r["auto"] != "onchip"])
    summary("batched", [r for r in rows if r["batch"]])
    summary("single matrix", [r for r in rows if not r["batch"]])
    for es in DTYPES:
        summary(f"{es}-byte elements", [r for r in rows if r["es"] == es])
    for lo, hi in ((0, 256), (256, 2048), (2048, 8192), (8192, 32 * 1024 + 1)):
        summary(f"matrix of [{lo}, {hi}) B", [r for r in rows if lo <= r["mn_bytes"] < hi])


if __name__ == "__main__":
    main()
