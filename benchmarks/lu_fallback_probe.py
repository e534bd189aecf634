"""What the LU / inverse ops inherit from torch.linalg where they hand a call to it (n > 64, or where the
shared-memory kernels' tile does not fit a block): does the call synchronize the host, and can it be captured in
a CUDA graph? Probed per op, n and batch on the GPU at hand, next to n = 64 (our kernels) as the control; every
captured result is replayed on new matrices and checked against an eager call (bit for bit).

Limits: torch's sync debug mode sees the synchronizations that go through c10's CUDA wrappers, not those inside
MAGMA, so `syncs: false` is only what it saw; a capture that fails is the stronger sign. Once a capture had failed,
every later capture in its process failed too (H200, PyTorch 2.11), which need not be their own failure: so each
(n, batch) runs in its own process, and the cases after a failed capture are marked `clean: false`.
`capture_error` names the call that broke the capture where the exception carries it (since 2026-11-29, after the
run in results/NVIDIA_H200/lu_fallback_probe.json, whose errors give capture_end's message only).

    python3 benchmarks/lu_fallback_probe.py [--out DIR]    # prints one line per case, writes lu_fallback_probe.json
"""
import argparse
import json
import os
import subprocess
import sys
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch_inplace.linalg as TL  # noqa: E402


def matrices(batch, n, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(batch, n, n, generator=g, dtype=torch.float64) + (2.0 * n) ** 0.5 * torch.eye(n, dtype=torch.float64)
    return A.to(dtype).cuda()


OPS = {
    "lu_factor": lambda A: tuple(TL.lu_factor(A)),
    "lu_factor_ex": lambda A: tuple(TL.lu_factor_ex(A)),
    "batched_inverse": lambda A: (TL.batched_inverse(A),),
    "batched_inverse_ex": lambda A: tuple(TL.batched_inverse_ex(A)),
    "inverse_": lambda A: (TL.inverse_(A),),
    "lu_factor_": lambda A: (TL.lu_factor_(A), A),
}


def syncs(fn, A):
    """Whether fn(A) synchronizes the host (torch's sync debug mode raises on a synchronizing call)."""
    fn(A.clone())
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        fn(A.clone())
        return False
    except RuntimeError as e:
        if "synchroniz" not in str(e):
            raise
        return True
    finally:
        torch.cuda.set_sync_debug_mode("default")
        torch.cuda.synchronize()


def captures(fn, A, B):
    """Whether fn can be captured in a CUDA graph, and whether its replay on B equals an eager call on B."""
    static = A.clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn(static.clone())
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            outs = fn(static)
    except RuntimeError as e:
        torch.cuda.synchronize()
        cause = e.__context__ or e.__cause__  # capture_end's error hides the call that broke the capture
        return False, None, (str(e).splitlines()[0][:200] +
                             (" (from: " + str(cause).splitlines()[0][:200] + ")" if cause else ""))
    static.copy_(B)
    g.replay()
    torch.cuda.synchronize()
    want = fn(B.clone())
    same = all(torch.equal(o, w) for o, w in zip(outs, want))
    return True, same, None


def probe(n, batch):
    failed = False
    for dtype in (torch.float32, torch.float64):
        A, B = matrices(batch, n, dtype, 1), matrices(batch, n, dtype, 2)
        for name, fn in OPS.items():
            row = dict(n=n, batch=batch, dtype=str(dtype).replace("torch.", ""), op=name)
            row["syncs"] = syncs(fn, A)
            row["clean"] = not failed
            row["captured"], row["replay_equal"], row["capture_error"] = captures(fn, A, B)
            failed = failed or not row["captured"]
            print(json.dumps(row), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--case", default=None, help="n,batch: probe this case only (in this process)")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if args.case is not None:
        probe(*map(int, args.case.split(",")))
        return
    rows = []
    # one process each: a failed capture must not leak into the next case
    for n, batch in [(n, b) for n in (64, 65, 80, 128) for b in (1, 64, 4096)]:
        try:
            res = subprocess.run([sys.executable, os.path.abspath(__file__), "--case", f"{n},{batch}"],
                                 capture_output=True, text=True, check=False, timeout=600)
            out, err, rc = res.stdout, res.stderr, res.returncode
        except subprocess.TimeoutExpired as e:  # a hung case: what it printed counts, and the rest is an error
            out, err, rc = e.stdout or "", "timed out after 600 s", -1
            out, err = (s.decode() if isinstance(s, bytes) else s for s in (out, err))
        got = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        print(out, end="", flush=True)
        if rc != 0:
            print(f"n = {n}, batch {batch}: the probe process exited with {rc}: {err[-800:]}", flush=True)
            got.append(dict(n=n, batch=batch, error=err[-800:]))
        rows += got
    summary = {}
    for r in rows:
        key = "n <= 64 (ours)" if r["n"] <= 64 else "n > 64 (torch.linalg)"
        s = summary.setdefault(key, dict(cases=0, syncs=0, not_captured=0, not_captured_clean=0, replay_differs=0,
                                         errors=0))
        s["cases"] += 1
        if "error" in r:
            s["errors"] += 1
            continue
        s["syncs"] += r["syncs"]
        s["not_captured"] += not r["captured"]
        s["not_captured_clean"] += not r["captured"] and r["clean"]
        s["replay_differs"] += r["captured"] and not r["replay_equal"]
    print("SUMMARY", torch.cuda.get_device_name(), "torch", torch.__version__, json.dumps(summary), flush=True)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "lu_fallback_probe.json"), "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, summary=summary, rows=rows),
                      f, indent=1)


if __name__ == "__main__":
    main()
