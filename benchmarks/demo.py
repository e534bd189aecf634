"""The demo (`make demo`): transpose a large tensor in place and compare with x.mT.contiguous().

Prints time, throughput (2 * bytes / time) and the memory each way needs, on the GPU when there is one, else on
the CPU. Results are checked against the out-of-place transpose.
"""
import argparse
import time

import torch

import torch_inplace


def timed(fn, device, reps):
    times = []
    for _ in range(reps):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--cols", type=int, default=None)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    gpu = torch.cuda.is_available() and torch_inplace.built_with_gpu()
    device = torch.device("cuda" if gpu else "cpu")
    rows = args.rows or (30011 if gpu else 6007)
    cols = args.cols or (20011 if gpu else 4001)
    dtype = getattr(torch, args.dtype)
    nbytes = rows * cols * torch.empty((), dtype=dtype).element_size()
    name = torch.cuda.get_device_name() if gpu else f"CPU ({torch.get_num_threads()} threads)"
    print(f"torch_inplace {torch_inplace.__version__} on {name}: {rows} x {cols} {args.dtype} "
          f"({nbytes / 2**20:.0f} MiB)")
    plan = torch_inplace.plan((rows, cols), dtype, device)
    print(f"plan: {plan.explanation}")

    x = torch.randn(rows, cols, device=device).to(dtype)
    ref = x.mT.contiguous()

    # in place: x goes back and forth (rows x cols <-> cols x rows); refill is not needed for correctness checks
    def inplace():
        torch_inplace.transpose_(x)

    if gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    inplace()  # warm-up; its peak memory is read before the check (torch.equal allocates a temporary)
    if gpu:
        torch.cuda.synchronize()
        extra_inplace = torch.cuda.max_memory_allocated() - base
    else:
        extra_inplace = torch_inplace.workspace_stats().last_bytes
    ok = torch.equal(x, ref)
    del ref
    t_in = timed(inplace, device, args.reps)

    y = torch.empty(cols, rows, device=device, dtype=dtype)
    t_copy = timed(lambda: y.copy_(x.mT) if x.shape == (rows, cols) else y.mT.copy_(x), device, args.reps)
    extra_out = nbytes  # x.mT.contiguous() allocates a second tensor of the same size
    del y

    gbps = lambda t: 2 * nbytes / t / 1e9  # noqa: E731
    print(f"check against x.mT.contiguous(): {'OK' if ok else 'MISMATCH'}")
    print(f"{'':28s}{'time':>10s}{'throughput':>14s}{'extra memory':>16s}")
    print(f"{'transpose_ (in place)':28s}{t_in * 1e3:8.2f} ms{gbps(t_in):10.1f} GB/s{extra_inplace / 2**20:13.2f} MiB")
    print(f"{'y.copy_(x.mT) (out of place)':28s}{t_copy * 1e3:8.2f} ms{gbps(t_copy):10.1f} GB/s"
          f"{extra_out / 2**20:13.2f} MiB")
    print(f"memory saved: {(extra_out - extra_inplace) / 2**20:.1f} MiB "
          f"({100 * (1 - extra_inplace / extra_out):.2f}% of the out-of-place transpose's extra memory)")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
