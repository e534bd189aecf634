"""Whether the CPU planner should take the cut plan (Karlsson's cut around the three stages, with its rows compacted
before them and spread after them) or Catanzaro's decomposition on factor-poor shapes, by thread count: both forced,
on random shapes that the cut plan takes.

Shapes: sides uniform in [1000, 8000) (BENCHMARKS.md's general workload, smaller), element sizes 1, 2, 4, 8, 16
bytes, kept where the cut plan applies (a side without a block-sized divisor). Per thread count, each plan (cut, c2r,
r2c) is timed `--reps` times in rotating order on fresh copies (the copy outside the timed region), every result
checked against x.mT.contiguous(). Prints one line per shape and thread count (time of the cut / of the faster
Catanzaro direction), then medians by thread count and element size (> 1: Catanzaro faster).

    python benchmarks/cpu_cut_rule.py --threads 1,2,4,8,16 --shapes 24
"""
import argparse
import random
import statistics

import torch

import torch_inplace
from cpu_onchip_rule import DTYPES, time_shape


def cut_shapes(rng, count):
    out = []
    while len(out) < count:
        es = rng.choice(list(DTYPES))
        shape = (rng.randrange(1000, 8000), rng.randrange(1000, 8000))
        if shape[0] * shape[1] * es > (96 << 20):
            continue
        try:
            torch_inplace.plan(shape, DTYPES[es], "cpu", algorithm="cut")
        except RuntimeError:
            continue
        out.append((shape, es))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", default="1,2,4,8,16")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shapes", type=int, default=24)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    rng = random.Random(args.seed)
    shapes = cut_shapes(rng, args.shapes)
    print(f"threads {threads}, seed {args.seed}, torch {torch.__version__}, {len(shapes)} shapes")
    rows = []
    for shape, es in shapes:
        x = torch.empty(shape, dtype=DTYPES[es])
        x.view(torch.uint8).random_()
        for th in threads:
            torch.set_num_threads(th)
            t = time_shape(x, ["cut", "c2r", "r2c"], args.reps)
            cat = min(("c2r", "r2c"), key=t.get)
            auto = torch_inplace.plan(shape, DTYPES[es], "cpu").algorithm
            rows.append(dict(threads=th, es=es, ratio=t["cut"] / t[cat]))
            print(f"{str(shape):>14} {es:2d} B {th:2d} threads: auto {auto:4s} cut {t['cut'] * 1e3:8.2f} ms  {cat} "
                  f"{t[cat] * 1e3:8.2f} ms  cut / it {t['cut'] / t[cat]:5.2f}  copy {t['copy'] * 1e3:8.2f} ms",
                  flush=True)
    print()
    for th in threads:
        sel = [r for r in rows if r["threads"] == th]
        line = f"{th:2d} threads: cut / Catanzaro median {statistics.median(r['ratio'] for r in sel):5.2f}"
        for es in DTYPES:
            s = [r["ratio"] for r in sel if r["es"] == es]
            if s:
                line += f"  |  {es:2d} B: {statistics.median(s):5.2f} ({len(s)})"
        print(line)


if __name__ == "__main__":
    main()
