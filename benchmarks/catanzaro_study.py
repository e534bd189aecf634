"""Shared by compare_directions.py and compare_short_runs.py: their command line, the Catanzaro-planned general
shapes they study, and a checked GPU-time measurement of one forced algorithm."""
import argparse
import random

import torch

from bench_transpose import fill_random, general_shapes, timed  # same directory; puts the repository on sys.path

DT = {4: torch.float32, 8: torch.float64}
DEVICE = "cuda"


def study_args(doc):
    """--general / --seed (2026: bench_transpose.py's shapes) / --reps / --out, and the general shapes they give."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--general", type=int, default=200)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    return args, general_shapes(random.Random(args.seed), args.general)


def catanzaro_cases(shapes, keep=lambda why: True):
    """(esize, shape, planner's direction, the other one, src, want, x) for every fp32 and fp64 shape that the
    planner gives to Catanzaro (and `keep` accepts, given the plan's explanation): src random, want its transpose,
    x a buffer of src's shape."""
    for es in (4, 8):
        for shape in shapes:
            auto, _, why = torch.ops.inplace._plan_transpose(list(shape), DT[es], torch.device(DEVICE), "auto")
            if auto not in ("c2r", "r2c") or not keep(why):
                continue
            src = fill_random(torch.empty(shape, dtype=DT[es], device=DEVICE))
            yield es, shape, auto, ("r2c" if auto == "c2r" else "c2r"), src, src.mT.contiguous(), torch.empty_like(src)


def checked_gpu_ms(x, src, want, algo, reps, label):
    """Median GPU time (queued behind a sleep kernel) of the in-place data permutation with `algo` forced, x refilled
    from src outside the timed region; the result checked against want first."""
    x.copy_(src)
    torch.ops.inplace._transpose_data_(x, algo)
    assert torch.equal(x.view(want.shape), want), label
    return timed(lambda: torch.ops.inplace._transpose_data_(x, algo), lambda: x.copy_(src), reps, queued=True)
