"""tools/linalg_log_to_json.py: a bench_linalg.py log back into its JSON rows (no GPU needed)."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import linalg_log_to_json as L  # noqa: E402

LOG = """# NVIDIA H100 80GB HBM3: copy bandwidth 2913 GB/s; cupy: True
float32    n= 1 B=1048576 inv 0.032 ms (263 GB/s, 9%; queued 0.005 ms, 59%) torch 0.91 cupy 0.21 -> x28.7 (best x6.7) | lu 0.039 torch 0.09 x2.3 | fb x15.0 ok=True
float64    n=24 B= 262144 inv 1.630 ms (1482 GB/s, 50%; queued 1.619 ms, 50%) torch 16.00 cupy 12.22 -> x9.8 (best x7.5) | lu 1.136 torch 2.68 x2.4 | fb xnan ok=False
## float64: speedup_inv_vs_torch: min 9.8 median 9.8
"""


def test_rows_and_recomputed_ratios(tmp_path):
    log = tmp_path / "b.log"
    log.write_text(LOG)
    r = L.parse(str(log))
    assert r["device"] == "NVIDIA H100 80GB HBM3" and r["copy_GBps"] == 2913 and r["parsed_from"] == str(log)
    a, b = r["rows"]
    assert (a["dtype"], a["n"], a["batch"], a["ok"]) == ("float32", 1, 1048576, True)
    assert (b["dtype"], b["n"], b["batch"], b["ok"]) == ("float64", 24, 262144, False)
    assert b["ours_inv_queued_ms"] == 1.619 and b["ours_inv_queued_roofline_frac"] == 0.5
    assert b["speedup_inv_vs_torch"] == pytest.approx(16.00 / 1.630)        # from the times, not the rounded x9.8
    assert b["speedup_inv_vs_best"] == pytest.approx(12.22 / 1.630)        # CuPy was the faster baseline
    assert a["speedup_inv_vs_best"] == pytest.approx(0.21 / 0.032)
    assert b["speedup_lu_vs_torch"] == pytest.approx(2.68 / 1.136)
    assert b["speedup_fb_vs_torch"] != b["speedup_fb_vs_torch"]             # nan: no backward in that run


def test_cli_refuses_a_log_without_rows(tmp_path):
    log, out = tmp_path / "b.log", tmp_path / "b.json"
    log.write_text("# nothing here\n")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "linalg_log_to_json.py"), str(log), str(out)],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "no result lines" in p.stderr and not out.exists()
    log.write_text(LOG)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "linalg_log_to_json.py"), str(log), str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0 and len(json.loads(out.read_text())["rows"]) == 2
