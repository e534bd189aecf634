"""Per-kernel GPU time of the in-place transpose on a few general shapes (torch.profiler): which step of a plan
(row shuffle, column panels, rotation, ...) takes the time, in microseconds and in copy-equivalent TB/s
(2 * bytes / t, the rate a copy would need to match that one kernel). The input is refilled between calls
(the refill kernels are listed apart) and every result is checked.

    python3 benchmarks/profile_transpose_kernels.py [--reps 5] [--shapes 9241x12392:4,...]
"""
import argparse
import math
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch_inplace  # noqa: E402

SHAPES = [((12154, 3938), 8), ((12154, 3938), 4), ((13441, 9721), 4), ((13441, 9721), 8), ((17085, 15453), 4),
          ((17085, 15453), 8), ((4903, 11468), 8), ((18850, 2579), 8), ((12686, 13332), 8), ((17090, 14046), 4),
          ((1810, 13086), 8), ((15070, 16402), 8), ((10412, 4212), 8), ((7888, 14016), 4)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--shapes", default="", help="instead of the built-in list: MxN:ES,... (e.g. 9241x12392:4)")
    args = ap.parse_args()
    shapes = SHAPES
    if args.shapes:
        shapes = [(tuple(int(v) for v in s.split(":")[0].split("x")), int(s.split(":")[1]))
                  for s in args.shapes.split(",")]
    print(f"device {torch.cuda.get_device_name()}", flush=True)
    for shape, es in shapes:
        dt = {1: torch.uint8, 2: torch.bfloat16, 4: torch.float32, 8: torch.float64, 16: torch.complex128}[es]
        src = torch.empty(shape, device="cuda", dtype=dt)
        if dt == torch.uint8:
            src.random_(0, 256)
        elif dt.is_complex:
            torch.view_as_real(src).uniform_()
        else:
            src.uniform_()
        x = torch.empty_like(src)
        want = src.mT.contiguous()
        plan = torch_inplace.plan(shape, dt, "cuda")
        x.copy_(src)
        torch.ops.inplace._transpose_data_(x)
        assert torch.equal(x.view(want.shape), want), shape
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.reps):
                x.copy_(src)
                torch.ops.inplace._transpose_data_(x)
            torch.cuda.synchronize()
        gb = 2 * math.prod(shape) * es / 1e9
        mat = shape[-2:]
        total = 0.0
        lines = []
        for ev in prof.key_averages():
            t = ev.device_time_total / max(1, ev.count) if hasattr(ev, "device_time_total") else ev.cuda_time_total
            if t <= 0:
                continue
            refill = "copy" in ev.key.lower() or "elementwise" in ev.key.lower() or "memcpy" in ev.key.lower()
            if not refill:
                total += t * ev.count / args.reps
            lines.append(f"    {t:9.1f} us x{ev.count // args.reps:<2d} {gb / (t * 1e-6) / 1e3:6.2f} TB/s  "
                         f"{'(refill) ' if refill else ''}{ev.key[:90]}")
        print(f"{shape} {str(dt).replace('torch.', '')} gcd {math.gcd(*mat)} {plan.algorithm}: our kernels {total:.1f} us "
              f"({gb / (total * 1e-6) / 1e3:.2f} TB/s-equivalent); {plan.explanation}", flush=True)
        print("\n".join(lines), flush=True)
        del src, x, want


if __name__ == "__main__":
    main()
