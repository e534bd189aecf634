"""How far each speed target of the benchmarks can go at all: the measured ratios next to the ceilings that the
memory system and the per-call costs put on them, read from a run's JSON (no GPU needed).

Small batched inverse / LU (bench_linalg.json). An op that reads each matrix once and writes it once cannot finish
before the copy roofline t_min = 2 B n^2 sizeof(T) / (the run's copy bandwidth: the queued copy's, GPU time alone,
where the run measured it). So no kernel can run more than
torch_ms / t_min times faster than torch: the *GPU-time ceiling* of a ratio target. The ratios are measured per
call (one call on an idle GPU, as for torch), and our call also pays the host's cost of issuing it, measured in the
same run as ours_ms - ours_queued_ms; torch_ms / (t_min + that cost) is the *per-call ceiling* with this host path.
For each target the table gives, per (dtype, n), the fraction of the copy roofline our kernel would need to reach it
(5 t_min / torch_ms for `lu_factor >= 5x`); above 100% the target is out of reach of any kernel at that size.

AoS <-> SoA (bench_transpose.json, skinny_* and fewfields_*): the median over both directions and every size, split by direction
and by size, with the median times per call and of GPU work alone. Tensors under 8 MB take a few microseconds of
GPU time, less than the host's cost of issuing a call: there a per-call ratio is set by the two host paths.

    python benchmarks/ceilings.py                                  # the committed H200 results
    python benchmarks/ceilings.py --dir benchmarks/results/NVIDIA_H100_80GB_HBM3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DIR = os.path.join(HERE, "results", "NVIDIA_H200")

# (name, measured ratio key, torch time key, our per-call key, our queued key, target, dtypes)
LINALG_TARGETS = (
    ("lu_factor vs torch.linalg.lu_factor", "speedup_lu_vs_torch", "torch_lu_ms", "ours_lu_ms",
     "ours_lu_queued_ms", 5.0, ("float32", "float64")),
    ("batched_inverse vs torch.linalg.inv", "speedup_inv_vs_torch", "torch_inv_ms", "ours_inv_ms",
     "ours_inv_queued_ms", 10.0, ("float32", "float64")),
)


def roofline_ms(row, copy_gbps):
    """Copy-roofline time of one read and one write of the batch (ms)."""
    return row["bytes"] / (copy_gbps * 1e9) * 1e3


def linalg_ceilings(data):
    """One dict per (target, dtype, n): measured ratio, GPU-time and per-call ceilings, needed roofline fraction."""
    # The queued copy (GPU time alone) where the run measured it: the device's roofline, as our queued times are.
    bw = data.get("copy_GBps_queued", data["copy_GBps"])
    out = []
    for name, key, torch_key, ours_key, queued_key, target, dtypes in LINALG_TARGETS:
        for r in data["rows"]:
            if r["dtype"] not in dtypes or key not in r:
                continue
            t_min = roofline_ms(r, r.get("copy_GBps_queued", r.get("copy_GBps", bw)))
            host = max(0.0, r[ours_key] - r[queued_key])
            out.append({
                "target": name, "goal": target, "dtype": r["dtype"], "n": r["n"], "ratio": r[key],
                "gpu_ceiling": r[torch_key] / t_min,
                "call_ceiling": r[torch_key] / (t_min + host),
                "needed_roofline_frac": target * t_min / r[torch_key],
                "ours_queued_roofline_frac": t_min / r[queued_key],
            })
    return out


def ranges(ns):
    """[1, 2, 3, 5] -> '1-3, 5'."""
    ns = sorted(ns)
    parts, start = [], None
    for i, v in enumerate(ns):
        if start is None:
            start = v
        if i + 1 == len(ns) or ns[i + 1] != v + 1:
            parts.append(str(start) if start == v else f"{start}-{v}")
            start = None
    return ", ".join(parts) if parts else "none"


def report_linalg(data):
    rows = linalg_ceilings(data)
    print(f"# small inverse / LU: {data['device']}, copy {data.get('copy_GBps_queued', data['copy_GBps']):.0f} GB/s"
          + (" (queued)" if "copy_GBps_queued" in data else ""))
    for name, *_, target, dtypes in LINALG_TARGETS:
        for d in dtypes:
            rs = sorted((r for r in rows if r["target"] == name and r["dtype"] == d), key=lambda r: r["n"])
            if not rs:
                continue
            met = [r["n"] for r in rs if r["ratio"] >= target]
            beyond_gpu = [r["n"] for r in rs if r["gpu_ceiling"] < target]
            beyond_call = [r["n"] for r in rs if r["call_ceiling"] < target and r["gpu_ceiling"] >= target]
            print(f"## {name} >= {target:g}x, {d}: met at n = {ranges(met)}; out of reach of any kernel (GPU-time "
                  f"ceiling below {target:g}x) at n = {ranges(beyond_gpu)}; out of reach with this host path only at "
                  f"n = {ranges(beyond_call)}")
            print("   n  ratio  ceiling(GPU)  ceiling(call)  needed roofline  ours (queued)")
            for r in rs:
                print(f"  {r['n']:2d} {r['ratio']:6.2f} {r['gpu_ceiling']:13.2f} {r['call_ceiling']:14.2f} "
                      f"{100 * r['needed_roofline_frac']:15.0f}% {100 * r['ours_queued_roofline_frac']:13.0f}%")
    return rows


# Tensors below this many bytes take a few microseconds of GPU time: per-call costs decide their ratios.
SMALL_BYTES = 8 << 20


def skinny_breakdown(data):
    """Per AoS <-> SoA set (skinny_*, and fewfields_* with 2-4 fields): overall median ratio, and the median per
    (direction, size class)."""
    out = {}
    for key, rows in data["rows"].items():
        if not key.startswith(("skinny", "fewfields")):
            continue
        groups = {}
        for r in rows:
            nbytes = r["esize"]
            for s in r["shape"]:
                nbytes *= s
            size = "small" if nbytes < SMALL_BYTES else "large"
            groups.setdefault((r["direction"], size), []).append(r)
        out[key] = {
            "median": statistics.median(r["ratio"] for r in rows),
            "count": len(rows),
            "groups": {f"{d} {s}": {"count": len(g), "median": statistics.median(r["ratio"] for r in g),
                                    "median_queued": statistics.median(r["queued_ratio"] for r in g),
                                    "ours_us": 1e3 * statistics.median(r["ms"] for r in g),
                                    "base_us": 1e3 * statistics.median(r["baseline_ms"] for r in g),
                                    "ours_queued_us": 1e3 * statistics.median(r["queued_ms"] for r in g),
                                    "base_queued_us": 1e3 * statistics.median(r["queued_baseline_ms"] for r in g)}
                       for (d, s), g in sorted(groups.items())},
        }
    return out


def report_transpose(data):
    out = skinny_breakdown(data)
    print(f"# AoS <-> SoA: {data['device']}, copy {data.get('copy_gbs', float('nan')):.0f} GB/s; small = under "
          f"{SMALL_BYTES >> 20} MB")
    for key, s in out.items():
        print(f"## {key}: median {s['median']:.3f} over {s['count']} shapes")
        for g, v in s["groups"].items():
            print(f"   {g:18s} {v['count']:3d} shapes  median {v['median']:.3f}  (GPU time alone {v['median_queued']:.3f}); "
                  f"median per call {v['ours_us']:.1f} us vs {v['base_us']:.1f} us, GPU time {v['ours_queued_us']:.1f} "
                  f"vs {v['base_queued_us']:.1f} us")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=DEFAULT_DIR, help="a results folder with bench_linalg.json / bench_transpose.json")
    args = ap.parse_args()
    found = False
    for name, report in (("bench_linalg.json", report_linalg), ("bench_transpose.json", report_transpose)):
        path = os.path.join(args.dir, name)
        if os.path.exists(path):
            with open(path) as f:
                report(json.load(f))
            found = True
    if not found:
        raise SystemExit(f"ceilings.py: expected bench_linalg.json or bench_transpose.json in {args.dir}, found neither")


if __name__ == "__main__":
    main()
