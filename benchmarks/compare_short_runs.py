"""The general benchmark shapes whose column step the planner gives to the cluster engine (a block's runs of the
whole-GPU panels would be short), timed four ways in GPU time (queued behind a sleep kernel), every result
checked: the planner's choice; the whole-GPU panels forced (TORCH_INPLACE_GPU_COLUMNS=grid) with the register and
with the cp.async gather (TORCH_INPLACE_GPU_GRID_ASYNC=0|1); and the other Catanzaro direction. Set the planner's
run-length threshold for the whole-GPU panels (gpu_plan.cpp's kGridColumnRunBytes): run on d72f234, whose
thresholds (256 / 400 bytes) gave 45 of the 200 fp32 and 10 of the fp64 general shapes to the cluster engine,
history_grid_short_runs.log; on later code few shapes are left to it.

    python3 benchmarks/compare_short_runs.py [--seed 2026] [--general 200] [--out DIR]
"""
import json
import math
import os
import statistics

import torch

from catanzaro_study import catanzaro_cases, checked_gpu_ms, study_args  # same directory

KNOBS = ("TORCH_INPLACE_GPU_COLUMNS", "TORCH_INPLACE_GPU_GRID_ASYNC")


def with_env(env):
    for k in KNOBS:
        os.environ.pop(k, None)
    os.environ.update(env)
    torch.ops.inplace._clear_plan_cache()


def main():
    args, general = study_args(__doc__)
    rows = []
    with_env({})  # the planner's choice with its defaults; each shape's configurations restore them
    for es, shape, auto, other, src, want, x in catanzaro_cases(general, keep=lambda why: "cluster of" in why):
        configs = {"auto": (auto, {}), "grid_sync": (auto, {"TORCH_INPLACE_GPU_COLUMNS": "grid",
                                                            "TORCH_INPLACE_GPU_GRID_ASYNC": "0"}),
                   "grid_async": (auto, {"TORCH_INPLACE_GPU_COLUMNS": "grid", "TORCH_INPLACE_GPU_GRID_ASYNC": "1"}),
                   "other": (other, {})}
        t = {}
        for name, (algo, env) in configs.items():
            with_env(env)
            t[name] = checked_gpu_ms(x, src, want, algo, args.reps, (shape, es, name))
        with_env({})
        m, n = shape
        col_len = m if auto == "c2r" else n  # the column step's columns (the long side)
        r = dict(shape=list(shape), esize=es, auto=auto, gcd=math.gcd(m, n), run_bytes=math.ceil(col_len / 132) * es,
                 ms=t)
        rows.append(r)
        print(f"{str(shape):16s} fp{8 * es} {auto} run {r['run_bytes']:4d} B  " +
              "  ".join(f"{k} {v:.3f}" for k, v in t.items()), flush=True)
    for es in (4, 8):
        for auto in ("c2r", "r2c"):
            sel = [r for r in rows if r["esize"] == es and r["auto"] == auto]
            if not sel:
                continue
            for name in ("grid_sync", "grid_async", "other"):
                s = [r["ms"]["auto"] / r["ms"][name] for r in sel]
                print(f"SUMMARY fp{8 * es} {auto} n={len(sel)} {name}: median {statistics.median(s):.3f}x "
                      f"min {min(s):.3f} max {max(s):.3f}", flush=True)
    with open(os.path.join(args.out, f"compare_short_runs_{args.seed}.json"), "w") as f:
        json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
