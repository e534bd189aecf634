"""Benchmark of torch_inplace.transpose_ on the GPU (protocol: ../shared/BENCHMARKS.md, issue 3).

Workloads (fixed seed): general m, n uniform in [1000, 20000) (fp32 and fp64, plus a sample of 1-, 2- and
16-byte types), a prime x prime slice, skinny AoS <-> SoA (rows in [1e4, 1e7), fields in [2, 32), both
directions, fp32 and fp64); beside those (not target groups of the issue), AoS <-> SoA with the common 2, 3 and 4
fields (fewfields: pairs, xyz, rgba; the random draw of the target group may hold none), batched (B, m, n) matrices as models
hold them (fp32 and bf16), AoS <-> SoA with 65-1024 fields, shapes with one side a multiple of the other or a large
common divisor (fp32), near-square shapes (fp32, fp64) and images between HWC and CHW (uint8, fp32).

The prime x prime group: 24 shapes whose sides are drawn uniformly from the primes in the general workload's range
[1000, 20000) (a slice of 200 general shapes would hold about 2), plus the general shapes that are prime x prime.

Baselines in the same run: y.copy_(x.mT) into a preallocated y (the ratio and the targets), x.mT.contiguous()
(which also allocates its result: contig_ratio), and copy bandwidth (2*bytes/t of a 1 GiB copy_, as a lone call and
queued). Our side is the public function a user calls (torch_inplace.transpose_, or
aos_to_soa_ / soa_to_aos_ for the rows labelled with a direction).

Each shape: CUDA events around each call, median of --reps (>= 5) after a warm-up, twice: with the GPU idle before
the call on both sides (ratio: includes the host's cost of issuing the call, which bounds small tensors; our refill
is synchronized before the start event) and queued behind a sleep kernel (queued_ratio: the GPU's time alone, as
triton's do_bench measures). Input refilled from a random source outside the timed region; our result and the
baseline's checked against x.mT (the baseline's destination cleared first); the extra device memory measured
(max_memory_allocated - the tensor). Writes benchmarks/results/<gpu>/bench_transpose.json (with the commit
measured: $TORCH_INPLACE_GIT_SHA, else git's HEAD) and PNG histograms (matplotlib where available).

  python3 benchmarks/bench_transpose.py [--quick] [--reps 5] [--out DIR]
"""
import argparse
import json
import math
import os
import random
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch_inplace  # noqa: E402
from bench_linalg import source_revision  # noqa: E402  (same directory)

DT = {1: torch.uint8, 2: torch.bfloat16, 4: torch.float32, 8: torch.float64, 16: torch.complex128}


def is_prime(p):
    return p > 1 and all(p % d for d in range(2, int(p ** 0.5) + 1))


def fill_random(t):
    if t.dtype == torch.uint8:
        t.random_(0, 256)
    elif t.is_complex():
        torch.view_as_real(t).uniform_(-1, 1)
    else:
        t.uniform_(-1, 1)
    return t


# GPU cycles of the torch.cuda._sleep that keeps the GPU busy ahead of a "queued" timing (~0.1 ms on an H100/H200,
# far longer than the host needs to enqueue the events and the call).
QUEUE_CYCLES = 200_000


def timed(fn, before, reps, queued=False):
    """Median ms of fn() between two CUDA events. queued=False: the GPU is idle when the start event is recorded,
    so the time includes the host's cost of issuing the call (what a lone call on an idle GPU takes). queued=True:
    a sleep kernel is enqueued first, so the events bracket only the GPU's work (as triton's do_bench measures;
    what the call costs inside a stream of work)."""
    ts = []
    for r in range(reps + 1):
        before()
        if not queued:
            # Both sides start on an idle GPU: without this, our call (after its refill) would be issued while the
            # refill still ran, hiding part of its host cost, while the baseline (no refill) paid all of its own.
            torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if queued:
            torch.cuda._sleep(QUEUE_CYCLES)
        s.record()
        fn()
        e.record()
        e.synchronize()
        if r > 0:  # the first is the warm-up
            ts.append(s.elapsed_time(e))
    return statistics.median(ts)


def copy_bandwidth(reps, queued=False):
    """GB/s of a 1 GiB device copy_, timed as a lone call (what the per-call GB/s compare with) or queued."""
    n = (1 << 30) // 4
    a = torch.empty(n, device="cuda").uniform_()
    b = torch.empty_like(a)
    ms = timed(lambda: b.copy_(a), lambda: None, reps, queued=queued)
    del a, b
    return 2 * (1 << 30) / (ms * 1e-3) / 1e9


# The public op a user calls for each direction label: the timed call is the whole public path (the Python function,
# the op's checks, its plan lookup, the kernels and the shape change).
PUBLIC_OPS = {None: torch_inplace.transpose_, "aos_to_soa": torch_inplace.aos_to_soa_,
              "soa_to_aos": torch_inplace.soa_to_aos_}


def bench_shape(shape, esize, reps, direction=None):
    dtype = DT[esize]
    src = fill_random(torch.empty(shape, dtype=dtype, device="cuda"))
    x = torch.empty_like(src)
    storage = x.untyped_storage()
    nbytes = src.numel() * esize
    want = src.mT.contiguous()
    plan = torch_inplace.plan(shape, dtype, "cuda")
    op = PUBLIC_OPS[direction]

    def ours():
        op(x)

    def refill():
        # Back to the input's shape (the op left x transposed), then fresh data; outside the timed region.
        x.set_(storage, 0, shape)
        x.copy_(src)

    # correctness + extra memory, once
    refill()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    ours()
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - base
    ok = bool(torch.equal(x.view(want.shape).view(torch.uint8), want.view(torch.uint8)))
    t_ours = timed(ours, refill, reps)
    t_ours_q = timed(ours, refill, reps, queued=True)
    ok = ok and bool(torch.equal(x.view(want.shape).view(torch.uint8), want.view(torch.uint8)))
    want_shape = want.shape
    y = want  # reuse as the out-of-place destination, cleared so that the check below sees the baseline's writes
    y.zero_()
    t_base = timed(lambda: y.copy_(src.mT), lambda: None, reps)
    t_base_q = timed(lambda: y.copy_(src.mT), lambda: None, reps, queued=True)
    ok = ok and bool(torch.equal(y.view(torch.uint8), src.mT.contiguous().view(torch.uint8)))
    del y, want  # the same tensor: freed before the second baseline allocates its own
    t_contig = timed(lambda: src.mT.contiguous(), lambda: None, reps)
    t_contig_q = timed(lambda: src.mT.contiguous(), lambda: None, reps, queued=True)
    c = src.mT.contiguous()  # the second baseline's result, against ours (checked against x.mT above)
    ok = ok and bool(torch.equal(c.view(torch.uint8), x.view(want_shape).view(torch.uint8)))
    del src, x, c
    return dict(shape=list(shape), esize=esize, dtype=str(dtype).replace("torch.", ""), direction=direction,
                algorithm=plan.algorithm, scratch_bytes=plan.scratch_bytes, ms=t_ours,
                gbs=2 * nbytes / (t_ours * 1e-3) / 1e9, baseline_ms=t_base,
                baseline_gbs=2 * nbytes / (t_base * 1e-3) / 1e9, ratio=t_base / t_ours, ok=ok,
                queued_ms=t_ours_q, queued_baseline_ms=t_base_q, queued_ratio=t_base_q / t_ours_q,
                queued_gbs=2 * nbytes / (t_ours_q * 1e-3) / 1e9,
                contig_ms=t_contig, contig_gbs=2 * nbytes / (t_contig * 1e-3) / 1e9,
                contig_ratio=t_contig / t_ours, queued_contig_ms=t_contig_q,
                queued_contig_ratio=t_contig_q / t_ours_q,
                extra_bytes=int(extra), extra_limit=int(nbytes // 1000 + (1 << 20)),
                extra_ok=extra <= nbytes // 1000 + (1 << 20))


def _prime_by_rest(elems):
    """(m, n) with m the largest prime <= sqrt(elems) and m * n <= elems: a general shape with no common divisor."""
    m = int(math.isqrt(elems))
    while not is_prime(m):
        m -= 1
    return m, elems // m


def _sampled(x):
    idx_i = torch.randint(0, x.shape[0], (4096,), device="cuda")
    idx_j = torch.randint(0, x.shape[1], (4096,), device="cuda")
    return idx_i, idx_j, x[idx_i, idx_j].clone()


def _inplace_at(free, frac):
    """An fp32 (m, n) tensor of ~frac of free memory transposed in place, checked on 4096 sampled elements."""
    m, n = _prime_by_rest(int(free * frac) // 4)
    out = dict(frac=frac, shape=[m, n], bytes=m * n * 4)

    def attempt():
        x = torch.empty((m, n), device="cuda")
        x.uniform_(generator=torch.Generator(device="cuda").manual_seed(5))
        i, j, vals = _sampled(x)
        torch.cuda.synchronize()
        t0 = time.time()
        torch_inplace.transpose_(x)
        torch.cuda.synchronize()
        out["seconds"] = time.time() - t0
        out["ok"] = bool(torch.equal(x[j, i], vals))
        out["algorithm"] = torch_inplace.plan((m, n), torch.float32, "cuda").algorithm

    try:
        attempt()
    except RuntimeError as e:  # out of memory included; the tensor is freed with attempt's frame
        out["ok"] = False
        out["error"] = str(e)[:300]
    torch.cuda.empty_cache()
    return out


def _outofplace_fits(elems):
    """Whether x.mT.contiguous() of an fp32 (m, n) tensor of elems elements runs (checked on samples)."""
    m, n = _prime_by_rest(elems)

    def attempt():
        x = torch.empty((m, n), device="cuda").uniform_()
        i, j, vals = _sampled(x)
        return bool(torch.equal(x.mT.contiguous()[j, i], vals))

    try:
        ok = attempt()
    except torch.OutOfMemoryError:
        ok = False
    torch.cuda.empty_cache()
    return ok


def largest_inplace(fracs=(0.9, 0.95, 0.98, 0.99)):
    """The largest fp32 tensor transposed in place, tried at growing fractions of free memory (from the issue's 90%),
    vs the largest that x.mT.contiguous() takes, found by bisection (to 1/256 of free memory)."""
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    tries = []
    for frac in fracs:
        tries.append(_inplace_at(free, frac))
        if not tries[-1]["ok"]:
            break
    first = tries[0]
    best = max((t for t in tries if t["ok"]), key=lambda t: t["bytes"], default=None)
    lo, hi = 0, free // 4  # elements: lo fits out of place (0 trivially), hi does not (x and y need 2 x hi x 4 > free)
    while hi - lo > free // 4 // 256:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _outofplace_fits(mid) else (lo, mid)
    oop = _prime_by_rest(lo) if lo >= 4 else (0, 0)
    return dict(free_bytes=free, shape=first["shape"], bytes=first["bytes"], seconds=first.get("seconds"),
                ok=first["ok"], algorithm=first.get("algorithm"), error=first.get("error"), tries=tries,
                inplace_max_bytes=best["bytes"] if best else 0, inplace_max_shape=best["shape"] if best else None,
                outofplace_max_bytes=oop[0] * oop[1] * 4, outofplace_max_shape=list(oop),
                outofplace_measured=True)


def general_shapes(rng, count):
    """The general workload: m, n uniform in [1000, 20000) (BENCHMARKS.md), drawn from rng."""
    return [(rng.randrange(1000, 20000), rng.randrange(1000, 20000)) for _ in range(count)]


def batched_shapes(rng, count):
    """Batched (B, m, n) matrices as models hold them (not one of the issue's target groups, reported beside them):
    half with power-of-two sides (64 .. 4096), half with sides log-uniform in [32, 4096); B log-uniform in [2, 256],
    at most 2^27 elements a tensor."""
    out = []
    for i in range(count):
        while True:
            if i % 2 == 0:
                m, n = (1 << rng.randrange(6, 13)), (1 << rng.randrange(6, 13))
            else:
                m, n = int(2 ** rng.uniform(5, 12)), int(2 ** rng.uniform(5, 12))
            b = int(2 ** rng.uniform(1, 8))
            if b * m * n <= (1 << 27) and m != n:
                out.append((b, m, n))
                break
    return out


def medium_shapes(rng, count):
    """Beside the issue's groups: AoS <-> SoA with more fields than the skinny workload, fields log-uniform in
    [65, 1024], rows log-uniform in [1e4, 1e6) (at most 2^27 elements), both directions."""
    out = []
    while len(out) < 2 * count:
        f = int(2 ** rng.uniform(math.log2(65), 10))
        rows = int(10 ** rng.uniform(4, 6))
        if rows * f <= (1 << 27) and rows > f:
            out += [((rows, f), "aos_to_soa"), ((f, rows), "soa_to_aos")]
    return out


def divisor_shapes(rng, count):
    """Beside the issue's groups: one side a multiple of the other (q g x g tiles), g a power of two in [64, 4096]
    for half of them and uniform in [65, 4096) for the rest, q in [2, 16], at most 2^27 elements, tall or wide."""
    out = []
    while len(out) < count:
        g = (1 << rng.randrange(6, 13)) if len(out) % 2 == 0 else rng.randrange(65, 4096)
        q = rng.randrange(2, 17)
        if q * g * g <= (1 << 27):
            out.append((q * g, g) if rng.random() < 0.5 else (g, q * g))
    return out


def gcd_shapes(rng, count):
    """Beside the issue's groups: sides a * g and b * g with a large common divisor g (a multiple of 128 in
    [512, 4096)) and coprime a != b in [2, 12] (neither side divides the other), at most 2^27 elements: the shapes of
    layer sizes (3072 x 5120, 7680 x 4320), where sequences 3.1 / 3.2 tile with g-sized squares."""
    out = []
    while len(out) < count:
        g = 128 * rng.randrange(4, 32)
        a, b = rng.randrange(2, 13), rng.randrange(2, 13)
        if a != b and math.gcd(a, b) == 1 and a * b * g * g <= (1 << 27):
            out.append((a * g, b * g))
    return out


def near_square_shapes(rng, count):
    """Beside the issue's groups: one side m uniform in [1000, 20000), the other m + d with d in [1, 32] (sign at
    random): matrices a few rows or columns off a square (padded layer sizes, an extra bias row), where Karlsson's cut
    leaves a square."""
    out = []
    for _ in range(count):
        m = rng.randrange(1000, 20000)
        d = rng.randrange(1, 33)
        out.append((m + d, m) if rng.random() < 0.5 else (m, m + d))
    return out


def image_shapes():
    """Beside the issue's groups: batches of images between HWC and CHW (the layout change of image pipelines:
    decoders give HWC, models take CHW), as (B, H W, C) -> (B, C, H W) and back; a lone image is 2-D."""
    out = []
    for (h, w), batches, chans in [((224, 224), (1, 64, 256), (3,)), ((512, 512), (1, 32), (3, 4)),
                                   ((1080, 1920), (1, 8), (3, 4)), ((2160, 3840), (1,), (3,))]:
        for b in batches:
            for c in chans:
                hwc = (h * w, c) if b == 1 else (b, h * w, c)
                out += [(hwc, "aos_to_soa"), (hwc[:-2] + (c, h * w), "soa_to_aos")]
    return out


def summarize(rows, key="ratio"):
    vals = [r[key] for r in rows]
    return dict(count=len(rows), median_ratio=statistics.median(vals) if vals else None,
                median_gbs=statistics.median([r["gbs"] for r in rows]) if rows else None,
                min_ratio=min(vals) if vals else None, all_ok=all(r["ok"] for r in rows),
                median_queued_ratio=statistics.median([r["queued_ratio"] for r in rows]) if rows else None,
                median_queued_gbs=statistics.median([r["queued_gbs"] for r in rows]) if rows else None,
                median_contig_ratio=statistics.median([r["contig_ratio"] for r in rows]) if rows else None,
                median_queued_contig_ratio=(statistics.median([r["queued_contig_ratio"] for r in rows])
                                            if rows else None),
                max_extra_bytes=max((r["extra_bytes"] for r in rows), default=0),
                all_extra_ok=all(r["extra_ok"] for r in rows))


def plots(results, outdir, copy_gbs, suffix=""):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    made = []
    groups = [("general_fp32", "general fp32"), ("general_fp64", "general fp64"), ("prime_fp32", "prime x prime fp32"),
              ("prime_fp64", "prime x prime fp64"), ("skinny_fp32", "skinny fp32"), ("skinny_fp64", "skinny fp64"),
              ("fewfields_fp32", "AoS <-> SoA 2-4 fields fp32"), ("fewfields_fp64", "AoS <-> SoA 2-4 fields fp64"),
              ("batched_fp32", "batched (B, m, n) fp32"), ("batched_bf16", "batched (B, m, n) bf16"),
              ("medium_fp32", "AoS <-> SoA 65-1024 fields fp32"), ("divisor_fp32", "one side a multiple, fp32"),
              ("gcd_fp32", "a large common divisor, fp32"), ("nearsq_fp32", "near-square fp32"),
              ("nearsq_fp64", "near-square fp64"), ("image_u8", "images HWC <-> CHW uint8"),
              ("image_fp32", "images HWC <-> CHW fp32")]
    fig, axes = plt.subplots(6, 3, figsize=(15, 24))
    for ax in axes.flat[len(groups):]:
        ax.axis("off")
    for ax, (k, title) in zip(axes.flat, groups):
        rows = results.get(k, [])
        if not rows:
            ax.axis("off")
            continue
        ours = [r["gbs"] for r in rows]
        base = [r["baseline_gbs"] for r in rows]
        ax.hist(base, bins=30, alpha=0.5, label="y.copy_(x.mT)")
        if "contig_gbs" in rows[0]:
            ax.hist([r["contig_gbs"] for r in rows], bins=30, alpha=0.35, label="x.mT.contiguous()")
        ax.hist(ours, bins=30, alpha=0.6, label="transpose_ (in place)")
        ax.axvline(statistics.median(ours), color="C1", ls="--")
        ax.axvline(statistics.median(base), color="C0", ls="--")
        ax.set_title(f"{title}: median {statistics.median(ours):.0f} vs {statistics.median(base):.0f} GB/s")
        ax.set_xlabel("GB/s (2*bytes/t)")
        ax.legend(fontsize=7)
    fig.suptitle(f"{torch.cuda.get_device_name()}: in-place transpose throughput (copy {copy_gbs:.0f} GB/s)")
    fig.tight_layout()
    p = os.path.join(outdir, "bench_transpose" + suffix + ".png")
    fig.savefig(p, dpi=90)
    made.append(p)
    return made


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--out", default=None)
    ap.add_argument("--general", type=int, default=200)
    ap.add_argument("--skinny", type=int, default=24)
    ap.add_argument("--primes", type=int, default=24)
    ap.add_argument("--batched", type=int, default=24)
    ap.add_argument("--medium", type=int, default=12)
    ap.add_argument("--divisor", type=int, default=16)
    ap.add_argument("--gcd", type=int, default=16)
    ap.add_argument("--nearsq", type=int, default=16)
    ap.add_argument("--no-largest", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated groups or group prefixes to run (e.g. skinny, "
                    "skinny_fp32,prime_fp64)")
    args = ap.parse_args()
    reps = max(5, args.reps)
    name = torch.cuda.get_device_name().replace(" ", "_")
    outdir = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", name)
    os.makedirs(outdir, exist_ok=True)
    rng = random.Random(args.seed)
    n_gen = 12 if args.quick else args.general
    n_sk = 6 if args.quick else args.skinny
    n_pr = 6 if args.quick else args.primes
    general = general_shapes(rng, n_gen)
    primes = [p for p in range(1000, 20000) if is_prime(p)]
    prime_set = [(rng.choice(primes), rng.choice(primes)) for _ in range(n_pr)]
    prime_set += [s for s in general if is_prime(s[0]) and is_prime(s[1])]
    skinny = []
    for _ in range(n_sk):
        rows = int(10 ** rng.uniform(4, 7))
        f = rng.randrange(2, 32)
        skinny.append(((rows, f), "aos_to_soa"))
        skinny.append(((f, rows), "soa_to_aos"))
    # Its own generators, so that the groups above keep the shapes of earlier runs.
    few_rng = random.Random(args.seed + 6)
    fewfields = []
    for k in range(3 if args.quick else 12):
        rows, f = int(10 ** few_rng.uniform(4, 7)), 2 + k % 3
        fewfields += [((rows, f), "aos_to_soa"), ((f, rows), "soa_to_aos")]
    batched = batched_shapes(random.Random(args.seed + 1), 6 if args.quick else args.batched)
    medium = medium_shapes(random.Random(args.seed + 2), 3 if args.quick else args.medium)
    divisor = divisor_shapes(random.Random(args.seed + 3), 4 if args.quick else args.divisor)
    gcd_set = gcd_shapes(random.Random(args.seed + 4), 4 if args.quick else args.gcd)
    nearsq = near_square_shapes(random.Random(args.seed + 5), 4 if args.quick else args.nearsq)
    t0 = time.time()
    copy_gbs = copy_bandwidth(reps)
    copy_gbs_queued = copy_bandwidth(reps, queued=True)
    print(f"device {torch.cuda.get_device_name()}; copy bandwidth {copy_gbs:.0f} GB/s per call, "
          f"{copy_gbs_queued:.0f} GB/s queued", flush=True)
    results = {}

    only = set(filter(None, args.only.split(",")))

    def run(key, shapes, esize, direction=None):
        if only and not any(key == o or key.startswith(o + "_") for o in only):
            return
        rows = results.setdefault(key, [])
        for s in shapes:
            sh, d = (s if isinstance(s[1], str) else (s, direction))
            r = bench_shape(sh, esize, reps, d)
            rows.append(r)
            print(f"{key:14s} {str(tuple(sh)):20s} {r['algorithm']:7s} {r['ms']:8.3f} ms {r['gbs']:7.1f} GB/s  "
                  f"base {r['baseline_gbs']:7.1f} GB/s  ratio {r['ratio']:5.2f} (queued {r['queued_ratio']:5.2f})  "
                  f"ok={r['ok']} "
                  f"extra={r['extra_bytes']}", flush=True)

    run("general_fp32", general, 4)
    run("general_fp64", general, 8)
    sample = general[: max(3, len(general) // 20)]
    run("general_u8", sample, 1)
    run("general_bf16", sample, 2)
    run("general_c128", sample, 16)
    run("prime_fp32", prime_set, 4)
    run("prime_fp64", prime_set, 8)
    run("skinny_fp32", skinny, 4)
    run("skinny_fp64", skinny, 8)
    run("fewfields_fp32", fewfields, 4)
    run("fewfields_fp64", fewfields, 8)
    run("batched_fp32", batched, 4)
    run("batched_bf16", batched, 2)
    run("medium_fp32", medium, 4)
    run("divisor_fp32", divisor, 4)
    run("gcd_fp32", gcd_set, 4)
    run("nearsq_fp32", nearsq, 4)
    run("nearsq_fp64", nearsq, 8)
    run("image_u8", image_shapes(), 1)
    run("image_fp32", image_shapes(), 4)
    summary = {k: summarize(v) for k, v in results.items()}
    for k, v in summary.items():
        print(f"SUMMARY {k:14s} n={v['count']:4d} median ratio {v['median_ratio']:.3f} (queued "
              f"{v['median_queued_ratio']:.3f}) median {v['median_gbs']:.0f} "
              f"GB/s  min ratio {v['min_ratio']:.3f} vs x.mT.contiguous() {v['median_contig_ratio']:.3f} "
              f"all_ok={v['all_ok']} max_extra={v['max_extra_bytes']} "
              f"extra_ok={v['all_extra_ok']}", flush=True)
    try:
        largest = None if args.no_largest else largest_inplace()
    except RuntimeError as e:  # recorded: the groups' results above still get written
        largest = dict(ok=False, error=str(e)[:300])
    if largest:
        print("LARGEST", json.dumps(largest), flush=True)
    doc = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, revision=source_revision(),
               copy_gbs=copy_gbs, copy_gbs_queued=copy_gbs_queued, reps=reps,
               seed=args.seed, quick=args.quick, command=" ".join(sys.argv), seconds=time.time() - t0,
               summary=summary, largest=largest, rows=results)
    suffix = ("_quick" if args.quick else "") + ("_" + "_".join(sorted(only)) if only else "")
    path = os.path.join(outdir, "bench_transpose" + suffix + ".json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print("wrote", path, *plots(results, outdir, copy_gbs, suffix), flush=True)


if __name__ == "__main__":
    main()
