"""CPU data point (`make bench-cpu`): transpose_ against y.copy_(x.mT) on a few shapes, per ../BENCHMARKS.md.

Median of repeats; inputs refilled with fresh random data outside the timed region; every result checked.
Writes benchmarks/results/cpu-<threads>t/bench_transpose_cpu.json.
"""
import json
import os
import platform
import statistics
import time

import torch

import torch_inplace

# Squares, factor-poor general shapes (a few rows / columns cut, the rest by the three stages), AoS <-> SoA, and
# shapes whose sides have divisors of a good block size (Karlsson's three stages: powers of two, multiples of 100,
# batches). Rows of the tiled and cut plans also time the Catanzaro plan they replaced.
SHAPES = [(4096, 4096), (4001, 6007), (6007, 4001), (3001, 2999), (1000003, 4), (4, 1000003), (200000, 31),
          (16, 1024, 768), (1024, 768), (2048, 1536), (8192, 2048), (4000, 6000), (1000, 3000), (64, 256, 192)]
REPS = 5




def bench(shape, dtype):
    x = torch.randn(shape).to(dtype)
    nbytes = x.numel() * x.element_size()
    y = torch.empty(*shape[:-2], shape[-1], shape[-2], dtype=dtype)
    t_in, t_out, ok = [], [], True
    for r in range(REPS + 1):
        x = torch.randn(shape).to(dtype)
        ref = x.mT.contiguous() if r == 0 else None
        t0 = time.perf_counter()
        torch_inplace.transpose_(x)
        t1 = time.perf_counter()
        if ref is not None:
            ok = ok and torch.equal(x, ref)
            continue  # the first call is the warm-up
        t_in.append(t1 - t0)
        x = torch.randn(shape).to(dtype)
        t0 = time.perf_counter()
        y.copy_(x.mT)
        t_out.append(time.perf_counter() - t0)
    ti, to = statistics.median(t_in), statistics.median(t_out)
    plan = torch_inplace.plan(shape, dtype)
    row = {"shape": list(shape), "dtype": str(dtype).replace("torch.", ""), "ms": ti * 1e3,
           "GB/s": 2 * nbytes / ti / 1e9, "baseline": "y.copy_(x.mT)", "baseline_ms": to * 1e3,
           "ratio": to / ti, "plan": plan.algorithm, "scratch_bytes": plan.scratch_bytes, "ok": ok}
    if plan.algorithm in ("tiled32", "cut"):
        # The plan it replaced, in the same run: Catanzaro in the direction the planner takes first where its row
        # buffers fit (the row shuffle on the long side: R2C where rows >= 2 cols, else C2R).
        alt = "r2c" if shape[-2] >= 2 * shape[-1] else "c2r"
        t_alt = []
        for r in range(REPS + 1):
            x = torch.randn(shape).to(dtype)
            ref = x.mT.contiguous() if r == 0 else None
            t0 = time.perf_counter()
            torch_inplace.transpose_(x, algorithm=alt)
            t1 = time.perf_counter()
            if ref is not None:
                row["ok"] = row["ok"] and torch.equal(x, ref)
                continue
            t_alt.append(t1 - t0)
        row.update(alt_plan=alt, alt_ms=statistics.median(t_alt) * 1e3, speedup_vs_alt=statistics.median(t_alt) / ti)
    return row


def main():
    rows = []
    for dtype in (torch.float32, torch.float64):
        for shape in SHAPES:
            row = bench(shape, dtype)
            rows.append(row)
            print(f"{str(tuple(row['shape'])):>20s} {row['dtype']:8s} {row['plan']:7s} {row['ms']:9.2f} ms "
                  f"{row['GB/s']:7.2f} GB/s  copy_(x.mT) {row['baseline_ms']:8.2f} ms  ratio {row['ratio']:.2f} "
                  f"{'ok' if row['ok'] else 'WRONG'}" +
                  (f"  ({row['alt_plan']} {row['alt_ms']:.2f} ms: {row['speedup_vs_alt']:.2f}x faster)"
                   if "alt_ms" in row else ""))
    ratios = sorted(r["ratio"] for r in rows)
    print(f"median ratio (transpose_ speed / y.copy_(x.mT) speed): {statistics.median(ratios):.2f}")
    out = os.path.join(os.path.dirname(__file__), "results", f"cpu-{torch.get_num_threads()}t")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "bench_transpose_cpu.json"), "w") as f:
        json.dump({"device": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
                   "torch": torch.__version__, "command": "make bench-cpu", "rows": rows,
                   "median_ratio": statistics.median(ratios)}, f, indent=1)
    if not all(r["ok"] for r in rows):
        raise SystemExit("a result did not match x.mT.contiguous()")


if __name__ == "__main__":
    main()
