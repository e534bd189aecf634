"""benchmarks/ceilings.py: the ceilings it derives from a benchmark's JSON (no GPU needed)."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import ceilings  # noqa: E402


def _row(dtype, n, torch_ms, ours_ms, queued_ms, copy_gbps=4000.0):
    nbytes = 2 * 1000 * n * n * (4 if dtype == "float32" else 8)
    return {"dtype": dtype, "n": n, "bytes": nbytes, "copy_GBps": copy_gbps,
            "torch_lu_ms": torch_ms, "ours_lu_ms": ours_ms, "ours_lu_queued_ms": queued_ms,
            "speedup_lu_vs_torch": torch_ms / ours_ms,
            "torch_inv_ms": torch_ms, "ours_inv_ms": ours_ms, "ours_inv_queued_ms": queued_ms,
            "speedup_inv_vs_torch": torch_ms / ours_ms}


def test_linalg_ceiling_math():
    # n = 10 float64: 1.6 MB, 0.4 us at 4000 GB/s. torch 1.6 us: at most 4x for any kernel.
    r = _row("float64", 10, torch_ms=0.0016, ours_ms=0.0010, queued_ms=0.0006)
    out = ceilings.linalg_ceilings({"copy_GBps": 4000.0, "rows": [r]})
    lu = next(o for o in out if o["target"].startswith("lu_factor"))
    assert lu["gpu_ceiling"] == pytest.approx(4.0)
    assert lu["call_ceiling"] == pytest.approx(0.0016 / (0.0004 + 0.0004))
    assert lu["needed_roofline_frac"] == pytest.approx(5.0 / 4.0)
    assert lu["ours_queued_roofline_frac"] == pytest.approx(0.0004 / 0.0006)
    assert lu["ratio"] == pytest.approx(1.6)
    # complex dtypes are not among the targets' dtypes
    assert not ceilings.linalg_ceilings({"copy_GBps": 4000.0, "rows": [dict(r, dtype="complex64")]})


def test_ranges():
    assert ceilings.ranges([]) == "none"
    assert ceilings.ranges([3, 1, 2, 5, 7, 8]) == "1-3, 5, 7-8"


def test_skinny_breakdown_splits_by_direction_and_size():
    def row(shape, direction, ratio):
        return {"shape": shape, "esize": 4, "direction": direction, "ratio": ratio, "queued_ratio": ratio / 2,
                "ms": 0.02, "baseline_ms": 0.02 * ratio, "queued_ms": 0.01, "queued_baseline_ms": 0.005 * ratio}
    data = {"rows": {"skinny_fp32": [row([1000, 8], "aos_to_soa", 1.0), row([10 ** 7, 8], "aos_to_soa", 2.0),
                                     row([8, 10 ** 7], "soa_to_aos", 0.5)],
                     "general_fp32": [row([1000, 1000], "transpose", 0.8)]}}
    out = ceilings.skinny_breakdown(data)
    assert list(out) == ["skinny_fp32"]
    s = out["skinny_fp32"]
    assert s["median"] == 1.0 and s["count"] == 3
    assert s["groups"]["aos_to_soa small"]["median"] == 1.0
    assert s["groups"]["aos_to_soa large"]["median"] == 2.0
    assert s["groups"]["soa_to_aos large"]["median_queued"] == 0.25
    assert s["groups"]["aos_to_soa large"]["base_us"] == pytest.approx(40.0)


def test_committed_results_report(tmp_path):
    """The script runs on the committed H200 results; our measured GPU time never beats the copy roofline by more
    than the copy measurement's run-to-run spread, so the GPU-time ceiling bounds every measured ratio."""
    d = ceilings.DEFAULT_DIR
    if not os.path.exists(os.path.join(d, "bench_linalg.json")):
        pytest.skip("no committed bench_linalg.json")
    with open(os.path.join(d, "bench_linalg.json")) as f:
        rows = ceilings.linalg_ceilings(json.load(f))
    assert rows
    for r in rows:
        assert r["ratio"] <= 1.1 * r["gpu_ceiling"], r
        assert r["call_ceiling"] <= r["gpu_ceiling"] + 1e-9
    out = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "ceilings.py")], capture_output=True,
                         text=True, check=True).stdout
    assert "lu_factor vs torch.linalg.lu_factor >= 5x, float64" in out
    empty = tmp_path / "none"
    empty.mkdir()
    bad = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "ceilings.py"), "--dir", str(empty)],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "found neither" in bad.stderr
