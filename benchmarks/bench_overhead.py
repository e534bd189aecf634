"""Per-call cost of small transposes on the GPU: host time to enqueue one call, and the time of one call as
bench_transpose.py measures it (CUDA events around a single call, the GPU idle before it), for the in-place op
and for `y.copy_(x.mT)`. Small tensors are bound by these costs, not by memory bandwidth.

"ours" is the data-only op `_transpose_data_` that bench_transpose.py times (it permutes the bytes and leaves
the shape alone, so the input can be refilled between timed calls); "public" is what users call,
`torch_inplace.transpose_` (validation, the same data op, then the O(1) shape change), timed on a tensor that
flips between (m, n) and (n, m).

    python3 benchmarks/bench_overhead.py [--calls 2000]
"""
import argparse
import statistics
import time

import torch

import torch_inplace

SHAPES = [((87905, 6), torch.float32), ((6, 87905), torch.float32), ((22391, 23), torch.float64),
          ((1000, 1000), torch.float32), ((3000, 2000), torch.float32), ((305097, 11), torch.float32)]


def host_us(fn, calls):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def single_call_us(fn, reps=50):
    ts = []
    for _ in range(reps):
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) * 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    print(f"device {torch.cuda.get_device_name()}")
    for shape, dtype in SHAPES:
        x = torch.randn(shape, device="cuda").to(dtype)
        y = torch.empty(shape[::-1], device="cuda", dtype=dtype)
        ours = lambda: torch.ops.inplace._transpose_data_(x)  # noqa: E731
        base = lambda: y.copy_(x.mT)  # noqa: E731
        x0 = x.clone()
        p = x0.clone()
        public = lambda: torch_inplace.transpose_(p)  # noqa: E731
        h_o, h_b, h_p = host_us(ours, args.calls), host_us(base, args.calls), host_us(public, args.calls)
        s_o, s_b, s_p = single_call_us(ours), single_call_us(base), single_call_us(public)
        z = x.clone()
        want = z.mT.contiguous()
        torch.ops.inplace._transpose_data_(z)
        ok = torch.equal(z.view(want.shape), want)
        flips = (args.calls + 1) + 50  # the public op's calls above: each one transposes p
        ok = ok and torch.equal(p, x0 if flips % 2 == 0 else x0.mT.contiguous())
        plan = torch_inplace.plan(shape, dtype, "cuda")
        print(f"{str(shape):14s} {str(dtype).replace('torch.', ''):8s} {plan.algorithm:7s} host/call ours "
              f"{h_o:6.1f} us copy {h_b:6.1f} us | one call ours {s_o:7.1f} us copy {s_b:7.1f} us "
              f"ratio {s_b / s_o:5.2f} | public host {h_p:6.1f} us one call {s_p:7.1f} us ratio {s_b / s_p:5.2f} "
              f"ok={ok}", flush=True)


if __name__ == "__main__":
    main()
