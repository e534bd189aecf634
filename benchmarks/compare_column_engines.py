"""The GPU column-step engines side by side on a few general shapes: the planner's choice (whole-GPU panels where
a block's runs are long enough), the cluster engine forced with TORCH_INPLACE_GPU_COLUMNS=cluster, and the
whole-GPU panels with one and with two shared-memory buffers (TORCH_INPLACE_GPU_GRID_BUFFERS=1|2), with the
gather through registers or cp.async (TORCH_INPLACE_GPU_GRID_ASYNC=0|1). Each cell
is the median ms of the in-place transpose and, in brackets, its speed relative to `y.copy_(x.mT)` in the same
run.

    python3 benchmarks/compare_column_engines.py
"""
import os

import torch

from bench_transpose import timed  # same directory; also puts the repository on sys.path for torch_inplace

SHAPES = [((13441, 9721), 4), ((17085, 15453), 4), ((10572, 10424), 4), ((17085, 15453), 8), ((4903, 11468), 8),
          ((3000, 17000), 4), ((19999, 2000), 8), ((2, 5000, 3001), 4)]
CONFIGS = [{}, {"TORCH_INPLACE_GPU_COLUMNS": "cluster"}, {"TORCH_INPLACE_GPU_GRID_BUFFERS": "1"},
           {"TORCH_INPLACE_GPU_GRID_BUFFERS": "2"}, {"TORCH_INPLACE_GPU_GRID_ASYNC": "0"},
           {"TORCH_INPLACE_GPU_GRID_ASYNC": "1"}, {"TORCH_INPLACE_GPU_GRID_ASYNC": "1", "TORCH_INPLACE_GPU_GRID_ROW_LANES": "32"},
           {"TORCH_INPLACE_GPU_GRID_ASYNC": "1", "TORCH_INPLACE_GPU_GRID_BUFFERS": "2"}]
KNOBS = sorted({k for cfg in CONFIGS for k in cfg})
REPS = 6


def main():
    print(f"device {torch.cuda.get_device_name()}; columns, one cell per configuration: "
          + " | ".join(str(c or "planner's choice") for c in CONFIGS))
    for shape, es in SHAPES:
        dt = {4: torch.float32, 8: torch.float64}[es]
        x = torch.randn(shape, device="cuda").to(dt)
        y = torch.empty(x.mT.shape, device="cuda", dtype=dt)
        base = timed(lambda: y.copy_(x.mT), lambda: None, REPS)
        cells = []
        for cfg in CONFIGS:
            for k in KNOBS:
                os.environ.pop(k, None)
            os.environ.update(cfg)
            torch.ops.inplace._clear_plan_cache()
            z = x.clone()  # x itself is transposed back and forth by the timing: check on a fresh copy
            want = z.mT.contiguous()
            torch.ops.inplace._transpose_data_(z)
            assert torch.equal(z.view(want.shape), want), (shape, cfg)
            ms = timed(lambda: torch.ops.inplace._transpose_data_(x), lambda: None, REPS)
            cells.append(f"{ms:.3f}({base / ms:.2f})")
        for k in KNOBS:
            os.environ.pop(k, None)
        torch.ops.inplace._clear_plan_cache()
        print(shape, es, f"base {base:.3f}", " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
