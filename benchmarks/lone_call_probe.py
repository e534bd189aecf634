"""How much a lone call adds to the GPU time of the same work, and how that grows with the GPU's idle time before it.

bench_linalg.py times each op per call on an idle GPU (CUDA events around one call, the host synchronized before
it), and also queued behind a sleep kernel (the GPU's work alone). For our float64 inverse at n = 23 the per-call
figure sits 40-60 us above the queued one. This probe splits that gap: for our `batched_inverse`, our in-place
`inverse_` (no output allocation), a device copy of about the same GPU time, a copy of the same bytes and
`torch.linalg.inv`, it prints the queued time, the host time of one call (the GPU idle, after a 2 ms pause), and the
lone-call time minus the queued time after the GPU idled 0, 0.2, 1, 10 and 50 ms. Work that only the GPU does (a
copy_) pays the same growing penalty: it is the GPU's and the host's wake-up from idle, not the op's.

    python benchmarks/lone_call_probe.py                 # float64, n = 23 and 24, 2^18 matrices
    python benchmarks/lone_call_probe.py --n 20 --dtype float32
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_inplace.linalg as TL  # noqa: E402
from bench_linalg import DTYPES, bench, make_inputs, rel_err  # noqa: E402

IDLE_S = (0.0, 0.0002, 0.001, 0.01, 0.05)


def lone_ms(fn, reps, idle_s, setup=None):
    """Median of one call between CUDA events, the host synchronized and the GPU idle for idle_s before each."""
    def before():
        if setup:
            setup()
        torch.cuda.synchronize()
        if idle_s:
            time.sleep(idle_s)
    return bench(fn, reps, setup=before)


def queued_ms(fn, reps, setup=None):
    """Median of one call queued behind a sleep kernel: the GPU's work alone."""
    return bench(fn, reps, setup=setup, queued=True)


def host_us(fn, reps):
    """Median host time of one call issued to an idle GPU, after a 2 ms pause."""
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        time.sleep(0.002)
        t0 = time.perf_counter()
        r = fn()
        out.append((time.perf_counter() - t0) * 1e6)
        del r
    torch.cuda.synchronize()
    return statistics.median(out)


def probe(n, dtype, batch, reps):
    A = make_inputs(batch, n, dtype, seed=n)
    X = TL.batched_inverse(A)
    err = rel_err(X, torch.linalg.inv(A))
    del X
    W = torch.empty_like(A)
    Y = torch.empty_like(A)
    t_inv = queued_ms(lambda: TL.batched_inverse(A), reps)
    # a plain device copy of about the same GPU time as our inverse (the copy moves 2 * 4 * numel bytes)
    bw_probe = torch.empty(1 << 26, device="cuda").uniform_()
    bw_out = torch.empty_like(bw_probe)
    per_elem_ms = queued_ms(lambda: bw_out.copy_(bw_probe), reps) / bw_probe.numel()
    del bw_probe, bw_out
    numel = max(1 << 20, int(t_inv / per_elem_ms))
    x = torch.empty(numel, device="cuda").uniform_()
    y = torch.empty_like(x)
    cases = (
        ("ours batched_inverse", lambda: TL.batched_inverse(A), None, True),
        ("ours inverse_ (no allocation)", lambda: TL.inverse_(W), lambda: W.copy_(A), False),
        (f"copy_ of {2 * 4 * numel / 1e9:.2f} GB", lambda: y.copy_(x), None, True),
        (f"copy_ of the batch ({2 * A.nbytes / 1e9:.2f} GB)", lambda: Y.copy_(A), None, True),
        ("torch.linalg.inv", lambda: torch.linalg.inv(A), None, True),
    )
    print(f"{str(dtype).split('.')[-1]} n={n} batch={batch}: rel. error vs torch.linalg.inv {err:.1e}", flush=True)
    for name, fn, setup, host in cases:
        q = queued_ms(fn, reps, setup)
        row = [f"  {name:34s} queued {q:8.4f} ms"]
        row.append(f"host {host_us(fn, reps):7.1f} us" if host else f"host {'-':>7s}   ")
        for idle in IDLE_S:
            row.append(f"idle {idle * 1e3:4.1f} ms: {(lone_ms(fn, reps, idle, setup) - q) * 1e3:+7.1f} us")
        print(" | ".join(row), flush=True)
    del A, W, Y, x, y
    torch.cuda.empty_cache()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", default="23,24", help="comma-separated matrix sizes")
    p.add_argument("--dtype", default="float64", choices=sorted(DTYPES))
    p.add_argument("--batch", type=int, default=1 << 18)
    p.add_argument("--reps", type=int, default=9)
    args = p.parse_args()
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}; lone-call time minus queued time, per idle "
          f"time before the call (median of {args.reps})", flush=True)
    for n in (int(v) for v in args.n.split(",")):
        probe(n, DTYPES[args.dtype], args.batch, args.reps)


if __name__ == "__main__":
    main()
