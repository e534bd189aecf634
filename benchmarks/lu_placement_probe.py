"""Diagnostic: is the occasional slow out-of-place small inverse tied to where its output lands?

Twice in the twenty-ninth session a bench_linalg.py run measured one float32 configuration 2.8-7.9x slower than every
other run (n = 2 in one run, n = 6 in another; the in-place inverse_ of the same n, same process, moments later, at
its usual time). This script allocates fresh memory at random offsets each trial (empty_cache, random pads) and times
the out-of-place inverse, the in-place one, a plain copy A -> Y and lu_factor, GPU time queued behind a sleep.

    PYTHONPATH=$PWD python benchmarks/lu_placement_probe.py      (TRIALS=24 SEED=0 by default)
"""
import os, random, statistics, sys, torch
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch_inplace.linalg as TL
from bench_linalg import bench  # this script's folder is on sys.path


def t(fn, reps=5):
    """Median us of fn(), GPU time queued behind a sleep kernel."""
    return bench(fn, reps, queued=True) * 1000

rng = random.Random(int(os.environ.get("SEED", "0")))
for dtype, n, B in [(torch.float32, 6, 1 << 20), (torch.float32, 2, 1 << 20), (torch.float32, 16, 1 << 20),
                    (torch.float64, 23, 1 << 18)]:
    res = []
    for trial in range(int(os.environ.get("TRIALS", "24"))):
        torch.cuda.empty_cache()
        pad = torch.empty(rng.randrange(0, 200) * (1 << 21) + (1 << 21), dtype=torch.uint8, device="cuda")
        A = torch.randn(B, n, n, dtype=dtype, device="cuda") + n * torch.eye(n, dtype=dtype, device="cuda")
        pad2 = torch.empty(rng.randrange(0, 200) * (1 << 21) + (1 << 21), dtype=torch.uint8, device="cuda")
        X = TL.batched_inverse(A); xp = X.data_ptr(); del X
        ti = t(lambda: TL.batched_inverse(A))
        X = TL.batched_inverse(A); same = X.data_ptr() == xp
        ok = bool(torch.allclose(X[:256] @ A[:256], torch.eye(n, dtype=dtype, device="cuda").expand(256, n, n), atol=1e-3))
        del X
        W = A.clone()
        tip = t(lambda: TL.inverse_(W))
        Y = torch.empty_like(A)
        tc = t(lambda: Y.copy_(A))
        tl = t(lambda: TL.lu_factor(A))
        res.append((ti, tip, tc, tl))
        print(f"{str(dtype)[6:]:8s} n={n:2d} trial {trial:2d} A%2M={A.data_ptr() % (1 << 21):8d} X-A={(xp - A.data_ptr()) // (1 << 20):7d} MiB "
              f"Y-A={(Y.data_ptr() - A.data_ptr()) // (1 << 20):7d} MiB inv {ti:7.1f} us (same ptr {same}, ok {ok}) "
              f"inverse_ {tip:7.1f} copy {tc:7.1f} lu {tl:7.1f}", flush=True)
        del A, W, Y, pad, pad2
    for k, name in enumerate(("inv", "inverse_", "copy", "lu")):
        v = [r[k] for r in res]
        print(f"## {str(dtype)[6:]} n={n} {name}: min {min(v):.1f} median {statistics.median(v):.1f} max {max(v):.1f} us", flush=True)
