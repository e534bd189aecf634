"""A/B runs of the CPU plans with parallel steps beyond a loop over rows: the tiled plan (Karlsson's three stages,
whose block stage follows the grid's cycles), the cut plan (the same with rows compacted before and spread after:
move_rows in csrc/ops/cpu/transpose_kernel.cpp) and the skinny plan with remainder rows (AoS <-> SoA), each forced,
with `y.copy_(x.mT)` into a preallocated `y` in the same run. Run it under each build's PYTHONPATH with `--json`,
then `--compare old.json new.json`.

Shapes (`--seed`): tiled shapes (sides with a divisor of a good block size: the bench's and random multiples of
8-128 in [1000, 8000)), cut shapes with sides uniform in [1000, 8000) (those the cut plan takes, as in cpu_cut_rule.py)
and skinny shapes of 1e5-3e6 rows and 2-32 fields, both directions; with `--bands N`, N tiled shapes whose grid has
fewer row or column bands than threads (4-96 MB; the band stages cut those into column slices). Element sizes 1-16
bytes (1-8 for skinny), tensors up to 96 MB. Every result is checked against x.mT.contiguous().

    python benchmarks/cpu_plans_ab.py --threads 16 --json new.json
    python benchmarks/cpu_plans_ab.py --compare old.json new.json
"""
import argparse
import json
import random
import re
import statistics

import torch

import torch_inplace
from cpu_cut_rule import cut_shapes
from cpu_onchip_rule import DTYPES, time_shape


def tiled_shapes(rng, count):
    out = [(s, es) for s in ((1024, 768), (2048, 1536), (4000, 6000), (1000, 3000)) for es in (4, 8)]
    while len(out) < count:
        es = rng.choice(list(DTYPES))
        unit = rng.choice([8, 16, 32, 64, 100, 128])
        shape = (unit * rng.randrange(1000 // unit + 1, 8000 // unit), unit * rng.randrange(1000 // unit + 1, 8000 // unit))
        if shape[0] * shape[1] * es > (96 << 20):
            continue
        try:
            torch_inplace.plan(shape, DTYPES[es], "cpu", algorithm="tiled32")
        except RuntimeError:
            continue
        out.append((shape, es))
    return out[:count]


def band_counts(shape, es):
    """(M', N') of the tiled plan's block grid, from its explanation ("rows 4000 = 32 x 125, cols ...")."""
    why = torch_inplace.plan(shape, DTYPES[es], "cpu", algorithm="tiled32").explanation
    m = re.search(r"rows \d+ = (\d+) x \d+, cols \d+ = (\d+) x \d+", why)
    return int(m.group(1)), int(m.group(2))


def few_band_shapes(rng, count, threads):
    """Tiled shapes whose grid has fewer row or column bands than threads (the band stages cut them into column
    slices): one side 1 .. threads - 1 blocks of 64-128, the other 2000-30000, either orientation."""
    out = []
    while len(out) < count:
        es = rng.choice(list(DTYPES))
        unit = rng.choice([64, 100, 128])
        short, long_ = unit * rng.randrange(1, max(2, threads)), unit * rng.randrange(2000 // unit, 30000 // unit)
        shape = (short, long_) if rng.random() < 0.5 else (long_, short)
        if shape[0] == shape[1] or shape[0] * shape[1] * es > (96 << 20) or shape[0] * shape[1] * es < (4 << 20):
            continue
        try:
            if min(band_counts(shape, es)) >= threads:
                continue
        except RuntimeError:
            continue
        out.append((shape, es))
    return out


def shapes(seed, tiled, cuts, skinnies, bands=0, threads=16):
    rng = random.Random(seed)
    out = [(s, es, "tiled32") for s, es in tiled_shapes(rng, tiled)]
    out += [(s, es, "tiled32") for s, es in few_band_shapes(random.Random(seed + 1), bands, threads)]
    out += [(s, es, "cut") for s, es in cut_shapes(rng, cuts)]
    while len(out) < tiled + cuts + skinnies:
        es = rng.choice([1, 2, 4, 8])
        n_rows, fields = rng.randrange(100_000, 3_000_000), rng.randrange(2, 33)
        if n_rows * fields * es > (96 << 20):
            continue
        out.append(((n_rows, fields) if len(out) % 2 == 0 else (fields, n_rows), es, "skinny"))
    return out


def compare(old_path, new_path):
    old, new = json.load(open(old_path)), json.load(open(new_path))
    print(f"{old_path} -> {new_path}: threads {old['threads']} / {new['threads']}")
    ratios = {}
    for key, (t_old, copy_old) in old["times"].items():
        t_new, copy_new = new["times"][key]
        ratios.setdefault(key.split()[-1], []).append(t_old / t_new)
        print(f"{key:32s} {t_old * 1e3:8.2f} -> {t_new * 1e3:8.2f} ms  {t_old / t_new:5.2f}x faster  "
              f"copy {copy_old * 1e3:7.2f} / {copy_new * 1e3:7.2f} ms  vs copy {copy_new / t_new:5.2f}x")
    for algo, r in ratios.items():
        print(f"{algo}: median {statistics.median(r):.2f}x faster ({min(r):.2f}-{max(r):.2f}x, {len(r)} shapes)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--tiled", type=int, default=14)
    ap.add_argument("--cuts", type=int, default=12)
    ap.add_argument("--skinnies", type=int, default=10)
    ap.add_argument("--bands", type=int, default=0, help="tiled shapes with fewer bands than threads")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"))
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    torch.set_num_threads(args.threads)
    times = {}
    print(f"threads {args.threads}, seed {args.seed}, torch {torch.__version__}")
    for shape, es, algo in shapes(args.seed, args.tiled, args.cuts, args.skinnies, args.bands, args.threads):
        x = torch.empty(shape, dtype=DTYPES[es])
        x.view(torch.uint8).random_()
        t = time_shape(x, [algo], args.reps)
        key = f"{shape} {es} B {algo}"
        times[key] = (t[algo], t["copy"])
        print(f"{key:32s} {t[algo] * 1e3:8.2f} ms  copy {t['copy'] * 1e3:8.2f} ms  vs copy {t['copy'] / t[algo]:5.2f}x",
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": args.threads, "seed": args.seed, "times": times}, f, indent=1)


if __name__ == "__main__":
    main()
