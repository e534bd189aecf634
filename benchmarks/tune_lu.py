"""Tunes the small LU / inverse kernels for every (n, dtype) on the current GPU: warps per block (hence matrices
per block, paper 001's nFTB) and, for float32 / float64, rows per lane (1 to 4: several rows per lane spend
fewer instructions per matrix on the broadcast row and the pivot search; -3 for n <= 8: a lane per matrix, the pivot
row in its registers; for the inverse with n > 16 also -2, rows split into two column parts: each lane reads half
the broadcast row; for the float64 inverse with n >= 9 also -4, the fp64 tensor-core kernel of
kernels/lu/dmma_inverse.cuh, where the GPU has them). Writes csrc/ops/cuda/lu_tuning.h (the
tables the kernels use) plus benchmarks/results/<gpu>/tune_lu.json. Rebuild the extension afterwards (or pass
the JSON to bench_linalg.py --tuning to apply it without a rebuild).

    python benchmarks/tune_lu.py [--quick] [--dtypes float32,float64] [--n 1-12]

Dtypes and n left out keep the committed header's values; such a partial run keeps the header's provenance comment
and adds a line for itself.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import torch_inplace.linalg as TL  # noqa: E402
from bench_linalg import bench  # noqa: E402  (this script's folder is on sys.path)

DTYPES = [("float32", torch.float32), ("float64", torch.float64), ("complex64", torch.complex64),
          ("complex128", torch.complex128)]
WARPS = [1, 2, 4, 8]
SPLIT = -2  # lu::kSplitRows: split_inverse_kernel
LANE = -3   # lu::kLaneRows: a lane per matrix (every row in one lane)
TC = -4     # lu::kTensorCoreRows: the float64 inverse on the fp64 tensor cores (dmma_inverse_kernel)
ROWS = {"float32": [1, 2, 3, 4, LANE, SPLIT], "float64": [1, 2, 3, 4, LANE, SPLIT, TC], "complex64": [1],
        "complex128": [1]}
ROW_ORDER = {1: 0, 2: 1, 3: 2, 4: 3, LANE: 4, SPLIT: 5, TC: 6}  # preference among near-equal times
# The float64 inverse's best pick without the tensor cores, for GPUs that lack them (lu_kernel.cu falls back to it).
FALLBACK = ("kInvWarpsNoTensorCores", "kInvRowsNoTensorCores")
TABLES = (("lu", "kLuWarps", "kLuRows"), ("inverse", "kInvWarps", "kInvRows"))


def rows_supported(dname, n, r, kind):
    """Mirror of small_lu.cuh's rows_supported (real types, r < 2n, r * n * sizeof <= 512 bytes, 576 for r = 4) and of
    SplitGeometry::kSupported (the inverse of real types with n > 16 on 32-lane warps)."""
    size = {"float32": 4, "float64": 8}.get(dname)
    if r == SPLIT:
        return kind == "inverse" and size is not None and n > 16
    if r == TC:  # DmmaInverseGeometry::kSupported, on a GPU with fp64 tensor cores
        return (kind == "inverse" and dname == "float64" and 9 <= n <= 32 and torch.version.hip is None
                and torch.cuda.get_device_capability()[0] >= 8)
    if r == LANE:  # lane_supported
        return size is not None and 2 <= n <= 8
    return r == 1 or (size is not None and r < 2 * n and r * n * size <= (576 if r == 4 else 512))


def time_ms(fn, reps):
    """Median ms of fn(), queued behind a sleep kernel (bench_linalg.bench): the events bracket the GPU's work alone,
    not the host's cost of issuing the call (the same for every configuration and, at the smallest n, longer than
    the kernel)."""
    return bench(fn, reps, queued=True)


def read_header(path):
    """The committed tables, {name: [[...33] * 4]}, so dtypes not tuned in this run keep their values."""
    text = open(path).read() if os.path.exists(path) else ""
    out = {}
    for _, wname, rname in TABLES:
        for name, default in ((wname, 4), (rname, 1)):
            m = re.search(name + r"\[4\]\[33\] = \{(.*?)\};", text, re.S)
            rows = re.findall(r"\{([^{}]*)\}", m.group(1)) if m else []
            out[name] = ([[int(v) for v in r.split(",")] for r in rows] if len(rows) == 4
                         else [[default] * 33 for _ in range(4)])
    for name, table in zip(FALLBACK, ("kInvWarps", "kInvRows")):
        m = re.search(name + r"\[33\] = \{([^{}]*)\};", text)
        out[name] = [int(v) for v in m.group(1).split(",")] if m else list(out[table][1])
    return out


def header_comment(path):
    """The committed header's leading comment lines (its provenance), [] if there is none."""
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path).read().splitlines():
        if not line.startswith("//"):
            break
        out.append(line)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="fewer repeats")
    p.add_argument("--dtypes", default=",".join(d for d, _ in DTYPES))
    p.add_argument("--header", default=os.path.join(ROOT, "csrc", "ops", "cuda", "lu_tuning.h"))
    p.add_argument("--n", default="1-32", help="n values to tune: a range a-b or a comma-separated list")
    p.add_argument("--copy-out", default=os.environ.get("OUT"))
    args = p.parse_args()
    reps = 3 if args.quick else 7
    if "-" in args.n:
        lo, hi = (int(v) for v in args.n.split("-"))
        ns = [n for n in range(lo, hi + 1) if 1 <= n <= 32]
    else:
        ns = [int(v) for v in args.n.split(",") if 1 <= int(v) <= 32]
    dev = torch.cuda.get_device_name()
    wanted = args.dtypes.split(",")
    tables = read_header(args.header)
    rows_out = []
    for di, (dname, dtype) in enumerate(DTYPES):
        if dname not in wanted:
            continue
        for n in ns:
            B = (1 << 20) if n <= 16 else (1 << 18)
            A = torch.randn(B, n, n, device="cuda", dtype=dtype) + n * torch.eye(n, device="cuda", dtype=dtype)
            for kind, wname, rname in TABLES:
                fn = (lambda: TL.lu_factor(A)) if kind == "lu" else (lambda: TL.batched_inverse(A))
                times = {}
                for r in ROWS[dname]:
                    if not rows_supported(dname, n, r, kind):
                        continue
                    for w in WARPS:
                        torch.ops.inplace._small_lu_tuning(kind, dtype, n, w, r)
                        times[(w, r)] = time_ms(fn, reps)
                torch.ops.inplace._small_lu_tuning(kind, dtype, n, 0, 0)
                fastest = min(times.values())
                # Prefer fewer rows per lane (split rows last), then fewer warps, unless another choice is clearly
                # (> 2%) faster.
                best = next(c for c in sorted(times, key=lambda c: (ROW_ORDER[c[1]], c[0]))
                            if times[c] <= 1.02 * fastest)
                tables[wname][di][n], tables[rname][di][n] = best
                if kind == "inverse" and dname == "float64":
                    plain = {c: t for c, t in times.items() if c[1] != TC}
                    fast = min(plain.values())
                    fb = next(c for c in sorted(plain, key=lambda c: (ROW_ORDER[c[1]], c[0]))
                              if plain[c] <= 1.02 * fast)
                    tables[FALLBACK[0]][n], tables[FALLBACK[1]][n] = fb
                rows_out.append({"kind": kind, "dtype": dname, "n": n, "batch": B,
                                 "ms": {f"w{w}r{r}": t for (w, r), t in times.items()},
                                 "best_warps": best[0], "best_rows": best[1]})
                print(f"{kind:8s} {dname:10s} n={n:2d} " + " ".join(f"w{w}r{r}:{t:.3f}" for (w, r), t in times.items())
                      + f" -> w{best[0]} r{best[1]}", flush=True)
            del A
    old_comment = header_comment(args.header)
    if old_comment and (set(wanted) != {d for d, _ in DTYPES} or ns != list(range(1, 33))):
        # A partial run: the header's provenance stays, with a line for this run.
        comment = old_comment + [f"// Retuned on {dev} ({datetime.date.today().isoformat()}): {', '.join(wanted)}, "
                                 f"n = {args.n}."]
    else:
        comment = [
            "// Warps per thread block and rows per lane of the small LU / inverse kernels, per (dtype, n); the "
            "matrices",
            "// per block (paper 001's nFTB) are warps * warp_size / next_pow2(ceil(n / rows)). Generated by",
            f"// benchmarks/tune_lu.py on {dev} (2^20 matrices for n <= 16, 2^18 above; warps {WARPS}, rows",
            "// 1-4 for float32 / float64, -3 for n <= 8: a lane per matrix, and, for the inverse with n > 16, -2: "
            "rows",
            "// split into two column parts, one matrix per warp; for the float64 inverse with n >= 9, -4: the fp64 "
            "tensor",
            "// cores). Do not edit by hand.",
        ]
    lines = comment + [
        "#pragma once", "", "#include <cstdint>", "", "namespace torch_inplace {", "namespace lu_cuda {", "",
        "// [dtype: float32, float64, complex64, complex128][n: 0..32]",
    ]
    for _, wname, rname in TABLES:
        for name in (wname, rname):
            lines.append(f"constexpr int8_t {name}[4][33] = {{")
            for di in range(4):
                lines.append("    {" + ", ".join(str(v) for v in tables[name][di]) + "},")
            lines.append("};")
    lines += ["",
              "// The float64 inverse's picks where its table entry is the tensor-core kernel (-4) but that kernel "
              "cannot run",
              "// (compute capability below 8.0, HIP, TORCH_INPLACE_LU_DMMA_INVERSE=0): the best of the other kernels.",
              ]
    for name in FALLBACK:
        lines += [f"constexpr int8_t {name}[33] = {{", "    " + ", ".join(str(v) for v in tables[name]) + "};"]
    lines += ["", "}  // namespace lu_cuda", "}  // namespace torch_inplace", ""]
    with open(args.header, "w") as f:
        f.write("\n".join(lines))
    out_dir = os.path.join(ROOT, "benchmarks", "results", dev.replace(" ", "_"))
    os.makedirs(out_dir, exist_ok=True)
    json_path = os.path.join(out_dir, "tune_lu.json")
    if os.path.exists(json_path):  # keep the earlier results of the (kind, dtype, n) not tuned in this run
        with open(json_path) as f:
            old = json.load(f).get("results", [])
        done = {(r["kind"], r["dtype"], r["n"]) for r in rows_out}
        rows_out = [r for r in old if (r["kind"], r["dtype"], r["n"]) not in done] + rows_out
        rows_out.sort(key=lambda r: ([d for d, _ in DTYPES].index(r["dtype"]), r["n"], r["kind"] != "lu"))
    with open(json_path, "w") as f:
        json.dump({"device": dev, "warps": WARPS, "rows": ROWS, "results": rows_out}, f, indent=1)
    if args.copy_out:
        import shutil
        os.makedirs(args.copy_out, exist_ok=True)
        if os.path.abspath(os.path.dirname(args.header)) != os.path.abspath(args.copy_out):  # not onto itself
            shutil.copy(args.header, args.copy_out)
        shutil.copy(os.path.join(out_dir, "tune_lu.json"), args.copy_out)
    print("wrote", args.header)


if __name__ == "__main__":
    main()
