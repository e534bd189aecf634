"""The small batched LU and inverse on the CPU against torch.linalg (LAPACK), same process and inputs.

Per (dtype, n): B matrices (2^14 for n <= 16, 2^11 above), well-conditioned random inputs (bench_linalg's), every
result checked matrix by matrix (the inverse against a double-precision one, at least as close as torch's; the
factors against torch's where the pivots agree, else P L U against A); ours and torch's calls alternate, and the
figure is the median over the repeats of torch's time / ours (so that a slow moment of a shared machine hits both
sides of a ratio alike).

    python benchmarks/bench_linalg_cpu.py [--n 1-32] [--dtypes float32,float64] [--reps 15] [--name bench_linalg_cpu]

Writes benchmarks/results/cpu-<threads>t/<name>.json.
"""
import argparse
import json
import os
import statistics
import time

import torch

from bench_linalg import make_inputs, rel_err  # same directory (and it puts the repo on sys.path)

import torch_inplace.linalg as TL  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def parse_n(spec):
    out = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="1-32")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--name", default="bench_linalg_cpu")
    args = ap.parse_args()
    threads = torch.get_num_threads()
    rows = []
    for dname in args.dtypes.split(","):
        dtype = getattr(torch, dname)
        tol = (1e-4 if dtype in (torch.float32, torch.complex64) else 1e-12)
        for n in parse_n(args.n):
            B = 1 << 14 if n <= 16 else 1 << 11
            A = make_inputs(B, n, dtype, seed=n, device="cpu")
            X, (LU, piv) = TL.batched_inverse(A), TL.lu_factor(A)
            Xt, (LUt, pivt) = torch.linalg.inv(A), torch.linalg.lu_factor(A)
            # The inverse is judged against a double-precision one: ours must be within tol * n of it, or at least
            # as close as torch's (LAPACK's own single-precision inverse can be the farther one on an
            # ill-conditioned matrix of the batch: MKL on a Xeon at float32 n = 10, 1.5e-3 against our 8.5e-6).
            X64 = torch.linalg.inv(A.to(torch.complex128 if dtype.is_complex else torch.float64))
            inv_err, torch_inv_err = rel_err(X.to(X64.dtype), X64), rel_err(Xt.to(X64.dtype), X64)
            piv_equal = torch.equal(piv, pivt)
            if piv_equal:
                lu_err = rel_err(LU, LUt)
            else:  # a near-tie decided the other way: check the factorization itself
                P, L_, U_ = torch.lu_unpack(LU, piv)
                lu_err = rel_err(P @ L_ @ U_, A)
            ok = inv_err <= max(tol * n, torch_inv_err) and lu_err <= tol * n
            pairs = {"inv": (lambda: TL.batched_inverse(A), lambda: torch.linalg.inv(A)),
                     "lu": (lambda: TL.lu_factor(A), lambda: torch.linalg.lu_factor(A))}
            row = dict(dtype=dname, n=n, batch=B, threads=threads, inv_rel_err=inv_err, torch_inv_rel_err=torch_inv_err,
                       lu_piv_equal=piv_equal,
                       lu_rel_err=lu_err, ok=ok)
            for name, (ours, theirs) in pairs.items():
                ours(), theirs()
                t_ours, t_torch = [], []
                for _ in range(args.reps):
                    t_ours.append(timed(ours))
                    t_torch.append(timed(theirs))
                row[f"ours_{name}_ms"] = statistics.median(t_ours) * 1e3
                row[f"torch_{name}_ms"] = statistics.median(t_torch) * 1e3
                row[f"speedup_{name}"] = statistics.median(b / a for a, b in zip(t_ours, t_torch))
            rows.append(row)
            print(f"{dname:8s} n={n:2d} B={B:5d} inv {row['ours_inv_ms']:8.3f} ms torch {row['torch_inv_ms']:8.3f} "
                  f"x{row['speedup_inv']:5.2f} | lu {row['ours_lu_ms']:8.3f} torch {row['torch_lu_ms']:8.3f} "
                  f"x{row['speedup_lu']:5.2f} | {'ok' if ok else 'WRONG'}", flush=True)
    for dname in args.dtypes.split(","):
        sel = [r for r in rows if r["dtype"] == dname]
        for name in ("inv", "lu"):
            s = [r[f"speedup_{name}"] for r in sel]
            slow = [r["n"] for r in sel if r[f"speedup_{name}"] < 1.0]
            print(f"## {dname} {name}: median x{statistics.median(s):.2f}, min x{min(s):.2f}; below 1x at n = {slow}")
    print(f"## all results ok: {all(r['ok'] for r in rows)}")
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", f"cpu-{threads}t")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, args.name + ".json"), "w") as f:
        json.dump(dict(torch=torch.__version__, threads=threads, command="python benchmarks/bench_linalg_cpu.py "
                       f"--n {args.n} --dtypes {args.dtypes} --reps {args.reps} --name {args.name}", rows=rows),
                  f, indent=1)


if __name__ == "__main__":
    main()
