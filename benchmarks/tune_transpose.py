"""Tuning sweep for three of the GPU planner's thresholds: its table set the constants kPanelBytes, the cluster cap
and the row-block bytes in gpu_plan.cpp (constants: nothing reads the table at run time). The planner's later rules
come from the same-run A/B measurements that gpu_plan.cpp cites beside each, so the default plans this table records
for its shapes may predate them.

For representative shapes and element sizes it times transpose_ (median of --reps, input refilled outside the
timed region, result checked) under planner knobs set through the environment:
  TORCH_INPLACE_GPU_PANEL_BYTES   widest column panel in bytes (32, 64, 128, 256)
  TORCH_INPLACE_GPU_MAX_CLUSTER   largest cluster for the column / long-row steps (2, 4, 8, 16)
  TORCH_INPLACE_GPU_ROW_BLOCK_BYTES  bytes of short rows per row-shuffle block (16, 32, 64 KiB around the default;
                                     its 48 KiB came from a wider A/B: tools/grid_ab.sh over the general and prime
                                     benchmark groups, results/NVIDIA_H200/history_row_block_bytes.log)
and records a per-kernel time breakdown (torch.profiler) of the default plan. Writes
benchmarks/results/<gpu>/tune_transpose.json.

  python3 benchmarks/tune_transpose.py [--quick]
"""
import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch_inplace  # noqa: E402

DT = {1: torch.uint8, 4: torch.float32, 8: torch.float64, 16: torch.complex128}


def time_once(shape, esize, reps):
    src = torch.randint(0, 256, (torch.Size(shape).numel() * esize,), dtype=torch.uint8, device="cuda")
    src = src.view(DT[esize]).view(shape)
    x = torch.empty_like(src)
    want = src.mT.contiguous()
    ts = []
    for r in range(reps + 1):
        x.copy_(src)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.ops.inplace._transpose_data_(x)
        e.record()
        e.synchronize()
        if r == 0:
            ok = torch.equal(x.view(want.shape).view(torch.uint8), want.view(torch.uint8))
        else:
            ts.append(s.elapsed_time(e))
    return statistics.median(ts), ok


def breakdown(shape, esize):
    src = torch.randint(0, 256, (torch.Size(shape).numel() * esize,), dtype=torch.uint8, device="cuda")
    x = src.view(DT[esize]).view(shape)
    torch.ops.inplace._transpose_data_(x)
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            torch.ops.inplace._transpose_data_(x)
        torch.cuda.synchronize()
    out = {}
    for ev in prof.key_averages():
        if ev.device_type.name == "CUDA" or getattr(ev, "device_time_total", 0) > 0:
            t = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0)
            if t > 0:
                out[ev.key[:90]] = round(t / 3 / 1000, 4)  # ms per call
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    shapes = [((13441, 9721), 4), ((17085, 15453), 4), ((17085, 15453), 8), ((9721, 13441), 4), ((4903, 11468), 8), ((15734, 1376), 4),
              ((17466, 17771), 16), ((188942, 27), 4), ((27, 188942), 8)]
    if args.quick:
        shapes = shapes[:3]
    configs = [{}]
    for pb in (16, 32, 64, 256):
        configs.append({"TORCH_INPLACE_GPU_PANEL_BYTES": str(pb)})
    for mc in (2, 4, 16):
        configs.append({"TORCH_INPLACE_GPU_MAX_CLUSTER": str(mc)})
    for rb in (16384, 32768, 65536):
        configs.append({"TORCH_INPLACE_GPU_ROW_BLOCK_BYTES": str(rb)})
    rows = []
    for shape, es in shapes:
        base = None
        for cfg in configs:
            for k in ("TORCH_INPLACE_GPU_PANEL_BYTES", "TORCH_INPLACE_GPU_MAX_CLUSTER",
                      "TORCH_INPLACE_GPU_ROW_BLOCK_BYTES"):
                os.environ.pop(k, None)
            os.environ.update(cfg)
            torch.ops.inplace._clear_plan_cache()  # plans are cached per shape; knobs apply to new plans
            try:
                ms, ok = time_once(shape, es, args.reps)
                expl = torch_inplace.plan(shape, DT[es], "cuda").explanation
            except RuntimeError as e:  # noqa: BLE001
                ms, ok, expl = float("nan"), False, str(e)[:200]
            if not cfg:
                base = ms
            gbs = 2 * torch.Size(shape).numel() * es / (ms * 1e-3) / 1e9
            row = dict(shape=list(shape), esize=es, config=cfg, ms=ms, gbs=gbs, ok=bool(ok), plan=expl)
            if not cfg:
                row["kernels_ms"] = breakdown(shape, es)
            rows.append(row)
            print(f"{str(shape):16s} {es:2d}B {json.dumps(cfg):45s} {ms:8.3f} ms {gbs:7.1f} GB/s "
                  f"x{base / ms if base else 1:5.2f} ok={ok}", flush=True)
            if not cfg:
                for k, v in row["kernels_ms"].items():
                    print(f"      {v:8.3f} ms  {k}", flush=True)
    for k in ("TORCH_INPLACE_GPU_PANEL_BYTES", "TORCH_INPLACE_GPU_MAX_CLUSTER", "TORCH_INPLACE_GPU_ROW_BLOCK_BYTES"):
        os.environ.pop(k, None)
    name = torch.cuda.get_device_name().replace(" ", "_")
    outdir = os.environ.get("TUNE_OUT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", name)
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "tune_transpose.json")
    with open(path, "w") as f:
        json.dump(dict(device=torch.cuda.get_device_name(), rows=rows), f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
