"""torch.func over the small LU / inverse ops against the same transforms over torch.linalg (GPU).

Per (dtype, n), B = 2^16 matrices (2^14 for n > 16), same inputs, lone calls (CUDA events, median of 9 after warm-up,
host cost included: the transforms' Python layers are part of what a user pays):
- direct:      torch_inplace.batched_inverse(A)                     (no transform, the reference for vmap's cost)
- vmap_inv:    vmap(batched_inverse)(A)        vs vmap(torch.linalg.inv)(A)
- vmap_lu:     vmap(lu_factor)(A)              vs vmap(torch.linalg.lu_factor)(A)
- per_sample:  vmap(grad(loss))(A)             vs the same with torch.linalg.inv; loss(a) = (inv(a) * W).sum()
- jvp_inv:     jvp(batched_inverse, A, T)      vs jvp(torch.linalg.inv, A, T)     (forward mode)
- jvp_lu:      jvp(lu_factor.LU, A, T)         vs jvp(torch.linalg.lu_factor.LU, A, T)
Every result is checked matrix by matrix against the same transform of torch.linalg in float64: ours within
tol * n of it, or no farther than 16x torch's own result (bench_linalg.close_to_reference). Ratios are torch's time
over ours.
Then the host's cost per call of the vmapped ops on 256 matrices of 4 x 4 (the GPU keeps up, so the host is the bound:
what the batching rules cost), against the direct calls and vmap over torch.linalg.

    python benchmarks/bench_func.py [--n 4,8,16,32] [--dtypes float32,float64] [--name bench_func]
"""
import argparse
import json
import os
import statistics

import torch
from torch.func import grad, jvp, vmap

from bench_linalg import bench, close_to_reference, make_inputs  # same directory (and it puts the repo on sys.path)
from bench_overhead import host_us  # same directory: microseconds per enqueued call

import torch_inplace as TL  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="4,8,16,32")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--name", default="bench_func")
    args = ap.parse_args()
    dev = torch.cuda.get_device_name()
    rows = []
    for dname in args.dtypes.split(","):
        dtype = getattr(torch, dname)
        tol = 1e-3 if dtype == torch.float32 else 1e-9
        for n in (int(v) for v in args.n.split(",")):
            B = 1 << 16 if n <= 16 else 1 << 14
            A, T = make_inputs(B, n, dtype, seed=n), make_inputs(B, n, dtype, seed=100 + n)
            W = torch.randn(n, n, device="cuda", dtype=dtype)
            wide = torch.complex128 if dtype.is_complex else torch.float64
            Aw, Tw, Ww = A.to(wide), T.to(wide), W.to(wide)

            def theirs_of(A, T, W):
                def loss_torch(a):
                    return (torch.linalg.inv(a) * W).sum()

                return {"vmap_inv": lambda: vmap(torch.linalg.inv)(A),
                        "vmap_lu": lambda: vmap(torch.linalg.lu_factor)(A).LU,
                        "per_sample": lambda: vmap(grad(loss_torch))(A),
                        "jvp_inv": lambda: jvp(torch.linalg.inv, (A,), (T,))[1],
                        "jvp_lu": lambda: jvp(lambda a: torch.linalg.lu_factor(a).LU, (A,), (T,))[1]}

            def loss_ours(a):
                return (TL.batched_inverse(a) * W).sum()

            ours_cases = {
                "vmap_inv": lambda: vmap(TL.batched_inverse)(A),
                "vmap_lu": lambda: vmap(TL.lu_factor)(A).LU,
                "per_sample": lambda: vmap(grad(loss_ours))(A),
                "jvp_inv": lambda: jvp(TL.batched_inverse, (A,), (T,))[1],
                "jvp_lu": lambda: jvp(lambda a: TL.lu_factor(a).LU, (A,), (T,))[1],
            }
            theirs_cases, reference = theirs_of(A, T, W), theirs_of(Aw, Tw, Ww)
            cases = {k: (ours_cases[k], theirs_cases[k], reference[k]) for k in ours_cases}
            reps = 9

            direct_ms = bench(lambda: TL.batched_inverse(A), reps, warmup=3)
            for name, (ours, theirs, ref) in cases.items():
                err, torch_err, ok = close_to_reference(ours(), theirs(), ref(), tol * n)
                ours_ms, torch_ms = bench(ours, reps, warmup=3), bench(theirs, reps, warmup=3)
                row = dict(dtype=dname, n=n, batch=B, case=name, ours_ms=ours_ms, torch_ms=torch_ms,
                           speedup=torch_ms / ours_ms, rel_err=err, torch_rel_err=torch_err, ok=ok,
                           direct_inverse_ms=direct_ms)
                rows.append(row)
                print(f"{dname} n={n:2d} B={B} {name:10s} ours {ours_ms:8.3f} ms torch {torch_ms:8.3f} ms "
                      f"x{torch_ms / ours_ms:6.2f} err {err:.1e} {'ok' if ok else 'WRONG'} "
                      f"(direct inverse {direct_ms:.3f} ms)", flush=True)
    by_case = {}
    for r in rows:
        by_case.setdefault(r["case"], []).append(r["speedup"])
    for case, s in by_case.items():
        print(f"## {case}: median x{statistics.median(s):.2f}, min x{min(s):.2f} over {len(s)} (dtype, n)")
    print(f"## all results ok: {all(r['ok'] for r in rows)}")
    host = host_costs()
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", dev.replace(" ", "_"))
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, args.name + ".json"), "w") as f:
        json.dump(dict(device=dev, torch=torch.__version__, command="python benchmarks/bench_func.py "
                       f"--n {args.n} --dtypes {args.dtypes} --name {args.name}", rows=rows, host_us=host), f, indent=1)


def host_costs(calls=3000):
    """Microseconds of host time per call, 256 float32 4 x 4 matrices."""
    A = torch.randn(256, 4, 4, device="cuda") + 4 * torch.eye(4, device="cuda")
    ops = torch.ops.inplace
    cases = [("TL.batched_inverse", lambda: TL.batched_inverse(A)),
             ("vmap(TL.batched_inverse)", lambda: vmap(TL.batched_inverse)(A)),
             ("vmap(ops.batched_inverse)", lambda: vmap(ops.batched_inverse)(A)),
             ("vmap(torch.linalg.inv)", lambda: vmap(torch.linalg.inv)(A)),
             ("TL.lu_factor", lambda: TL.lu_factor(A)),
             ("vmap(TL.lu_factor)", lambda: vmap(TL.lu_factor)(A)),
             ("vmap(ops.lu_factor)", lambda: vmap(ops.lu_factor)(A)),
             ("vmap(torch.linalg.lu_factor)", lambda: vmap(torch.linalg.lu_factor)(A)),
             ("vmap(torch.neg)", lambda: vmap(torch.neg)(A))]
    out = {}
    for name, fn in cases:
        out[name] = host_us(fn, calls)
        print(f"host per call, 256 x (4 x 4) float32: {name:30s} {out[name]:7.1f} us", flush=True)
    return out


if __name__ == "__main__":
    main()
