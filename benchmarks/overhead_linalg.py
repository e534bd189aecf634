"""Host cost per call of the small LU / inverse ops on the GPU (what a lone call pays before its kernel starts):
microseconds to enqueue one call on a small batch (the GPU keeps up, so the host is the bound), through each layer
(the Python wrappers, the public ops, the `_ex` ops), against torch.linalg; then the CPU-side profile of one layer.

    python3 benchmarks/overhead_linalg.py [--calls 3000]
"""
import argparse

import torch
from torch.profiler import ProfilerActivity, profile

import torch_inplace.linalg as TL
from bench_overhead import host_us  # same directory: microseconds per enqueued call


def one_call_us(fn, queued, reps=30):
    ts = []
    for _ in range(reps):
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if queued:
            torch.cuda._sleep(200_000)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) * 1e3)
    return sorted(ts)[len(ts) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=3000)
    args = ap.parse_args()
    print(f"device {torch.cuda.get_device_name()}")
    ops = torch.ops.inplace
    for n, dt in [(1, torch.float32), (4, torch.float32), (16, torch.float64)]:
        A = torch.randn(256, n, n, device="cuda", dtype=dt) + 4 * torch.eye(n, device="cuda", dtype=dt)
        B = A.clone()
        cases = [("TL.lu_factor", lambda: TL.lu_factor(A)), ("ops.lu_factor", lambda: ops.lu_factor(A)),
                 ("ops.lu_factor_ex", lambda: ops.lu_factor_ex(A)),
                 ("TL.batched_inverse", lambda: TL.batched_inverse(A)),
                 ("ops.batched_inverse", lambda: ops.batched_inverse(A)),
                 ("ops.batched_inverse_ex", lambda: ops.batched_inverse_ex(A)),
                 ("TL.inverse_", lambda: TL.inverse_(B)),
                 ("torch.linalg.lu_factor", lambda: torch.linalg.lu_factor(A)),
                 ("torch.linalg.lu_factor_ex", lambda: torch.linalg.lu_factor_ex(A)),
                 ("torch.linalg.inv", lambda: torch.linalg.inv(A)),
                 ("torch.empty x3", lambda: (torch.empty_like(A), torch.empty(256, n, device="cuda", dtype=torch.int32),
                                             torch.empty(256, device="cuda", dtype=torch.int32))),
                 ("A.neg()", lambda: A.neg())]
        for name, fn in cases:
            us = host_us(fn, args.calls)
            with torch.no_grad():
                us_ng = host_us(fn, args.calls)
            with torch.inference_mode():
                us_inf = host_us(fn, args.calls)
            print(f"n={n:2d} {str(dt)[6:]:8s} {name:26s} host {us:6.1f} us  no_grad {us_ng:6.1f}  inference_mode {us_inf:6.1f}",
                  flush=True)
        # one lone call on 2^20 matrices (the GPU idle before it; bench_linalg.py's ours_*_ms) and the same call queued
        # behind a sleep kernel (GPU time only)
        big = torch.randn(1 << 20, n, n, device="cuda", dtype=dt) + 4 * torch.eye(n, device="cuda", dtype=dt)
        for name, fn in [("TL.lu_factor", lambda: TL.lu_factor(big)), ("TL.batched_inverse", lambda: TL.batched_inverse(big)),
                         ("torch.linalg.lu_factor", lambda: torch.linalg.lu_factor(big)),
                         ("big.neg()", lambda: big.neg())]:
            lone, queued = one_call_us(fn, False), one_call_us(fn, True)
            print(f"n={n:2d} {str(dt)[6:]:8s} 2^20 {name:24s} lone {lone:7.1f} us  queued {queued:7.1f} us", flush=True)
        if n == 1:
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(200):
                    TL.lu_factor(A)
                    TL.batched_inverse(A)
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=60))


if __name__ == "__main__":
    main()
