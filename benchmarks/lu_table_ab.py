"""Same-run A/B of two tuning tables of the small LU / inverse kernels (csrc/ops/cuda/lu_tuning.h), with one build:
for every (kind, dtype, n) whose (warps, rows) differ between the tables, both configurations are forced through the
private op inplace._small_lu_tuning and timed in alternating rounds on the same input (GPU time, queued behind a
sleep kernel as in tune_lu.py), and their outputs must agree bit for bit (a configuration only changes which lane
holds which row, never the arithmetic of an entry). Prints old / new time ratios (> 1: the new table is faster)
and writes benchmarks/results/<gpu>/lu_table_ab.json.

    git show HEAD:csrc/ops/cuda/lu_tuning.h > /tmp/old_tuning.h
    python benchmarks/lu_table_ab.py --old /tmp/old_tuning.h [--new csrc/ops/cuda/lu_tuning.h] [--dtypes float64]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import torch_inplace.linalg as TL  # noqa: E402
from bench_linalg import bench, make_inputs  # noqa: E402  (this script's folder is on sys.path)
from tune_lu import DTYPES, TABLES, read_header  # noqa: E402


def same_bits(a, b):
    """Bitwise equality, NaN and inf included."""
    if a.is_floating_point():
        return torch.equal(a.view(torch.int32 if a.element_size() == 4 else torch.int64),
                           b.view(torch.int32 if b.element_size() == 4 else torch.int64))
    return torch.equal(a, b)


def run_config(kind, dtype, n, cfg, fn):
    torch.ops.inplace._small_lu_tuning(kind, dtype, n, cfg[0], cfg[1])
    try:
        return fn()
    finally:
        torch.ops.inplace._small_lu_tuning(kind, dtype, n, 0, 0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--old", required=True, help="the tuning header to compare against (e.g. from git show)")
    p.add_argument("--new", default=os.path.join(ROOT, "csrc", "ops", "cuda", "lu_tuning.h"))
    p.add_argument("--dtypes", default="float32,float64")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (old, new) per entry")
    p.add_argument("--copy-out", default=os.environ.get("OUT"))
    args = p.parse_args()
    old, new = read_header(args.old), read_header(args.new)
    dev = torch.cuda.get_device_name()
    rows, bad = [], 0
    for di, (dname, dtype) in enumerate(DTYPES):
        if dname not in args.dtypes.split(","):
            continue
        for n in range(1, 33):
            diffs = [(kind, (old[w][di][n], old[r][di][n]), (new[w][di][n], new[r][di][n]))
                     for kind, w, r in TABLES if (old[w][di][n], old[r][di][n]) != (new[w][di][n], new[r][di][n])]
            if not diffs:
                continue
            B = (1 << 20) if n <= 16 else (1 << 18)
            A = make_inputs(B, n, dtype, seed=1000 + n)
            for kind, c_old, c_new in diffs:
                fn = (lambda: TL.lu_factor_ex(A)) if kind == "lu" else (lambda: TL.batched_inverse_ex(A))
                outs = [run_config(kind, dtype, n, c, fn) for c in (c_old, c_new)]
                ok = all(same_bits(a, b) for a, b in zip(outs[0], outs[1]))
                bad += not ok
                del outs
                times = {c_old: [], c_new: []}
                for _ in range(args.rounds):
                    for c in (c_old, c_new):
                        times[c].append(run_config(kind, dtype, n, c, lambda: bench(fn, args.reps, queued=True)))
                t_old, t_new = statistics.median(times[c_old]), statistics.median(times[c_new])
                rows.append({"kind": kind, "dtype": dname, "n": n, "batch": B, "old": list(c_old), "new": list(c_new),
                             "old_ms": t_old, "new_ms": t_new, "ratio": t_old / t_new, "same_bits": ok})
                print(f"{kind:8s} {dname:8s} n={n:2d} old w{c_old[0]} r{c_old[1]:<2d} {t_old:.4f} ms  "
                      f"new w{c_new[0]} r{c_new[1]:<2d} {t_new:.4f} ms  ratio {t_old / t_new:.3f}"
                      f"{'' if ok else '  BITS DIFFER'}", flush=True)
            del A
    for kind in ("lu", "inverse"):
        for dname, _ in DTYPES:
            rs = [r["ratio"] for r in rows if r["kind"] == kind and r["dtype"] == dname]
            if rs:
                print(f"## {kind} {dname}: {len(rs)} entries differ, old/new ratio median {statistics.median(rs):.3f}"
                      f" min {min(rs):.3f} max {max(rs):.3f}")
    print(f"## bit mismatches: {bad}")
    out_dir = os.path.join(ROOT, "benchmarks", "results", dev.replace(" ", "_"))
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "lu_table_ab.json")
    with open(path, "w") as f:
        json.dump({"device": dev, "old": args.old, "new": args.new, "reps": args.reps, "rounds": args.rounds,
                   "command": " ".join(sys.argv), "rows": rows}, f, indent=1)
    if args.copy_out:
        os.makedirs(args.copy_out, exist_ok=True)
        shutil.copy(path, args.copy_out)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
