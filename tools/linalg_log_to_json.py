"""Rebuilds a bench_linalg.py result JSON from its printed log, for a run whose JSON did not come back (the log holds
one line per (dtype, n) with the figures rounded as printed). The JSON says so ("parsed_from") and carries only the
keys the log has; ratios are recomputed from the printed times.

    python3 tools/linalg_log_to_json.py LOG OUT.json
"""
import json
import re
import sys

ROW = re.compile(
    r"^(?P<dtype>\w+)\s+n=\s*(?P<n>\d+) B=\s*(?P<batch>\d+) inv (?P<ours_inv_ms>[\d.]+) ms "
    r"\((?P<ours_inv_GBps>[\d.]+) GB/s, (?P<roof>[\d.]+)%; queued (?P<ours_inv_queued_ms>[\d.]+) ms, (?P<qroof>[\d.]+)%\) "
    r"torch (?P<torch_inv_ms>[\d.]+) cupy (?P<cupy_inv_ms>[\d.]+|nan) -> x(?P<inv_x>[\d.]+) \(best x(?P<best_x>[\d.]+)\) "
    r"\| lu (?P<ours_lu_ms>[\d.]+) torch (?P<torch_lu_ms>[\d.]+) x(?P<lu_x>[\d.]+) \| fb x(?P<fb_x>[\d.]+|nan) "
    r"ok=(?P<ok>True|False)$")
HEAD = re.compile(r"^# (?P<device>.+): copy bandwidth (?P<bw>\d+) GB/s")


def parse(path):
    device, bw, rows = None, None, []
    for line in open(path):
        line = line.rstrip("\n")
        m = HEAD.match(line)
        if m:
            device, bw = m["device"], float(m["bw"])
            continue
        m = ROW.match(line)
        if not m:
            continue
        f = {k: float(v) for k, v in m.groupdict().items() if k not in ("dtype", "ok")}
        best = min(f["torch_inv_ms"], f["cupy_inv_ms"]) if f["cupy_inv_ms"] == f["cupy_inv_ms"] else f["torch_inv_ms"]
        rows.append({
            "dtype": m["dtype"], "n": int(f["n"]), "batch": int(f["batch"]),
            "ours_inv_ms": f["ours_inv_ms"], "ours_inv_queued_ms": f["ours_inv_queued_ms"],
            "ours_inv_GBps": f["ours_inv_GBps"], "ours_inv_roofline_frac": f["roof"] / 100,
            "ours_inv_queued_roofline_frac": f["qroof"] / 100, "torch_inv_ms": f["torch_inv_ms"],
            "cupy_inv_ms": f["cupy_inv_ms"], "ours_lu_ms": f["ours_lu_ms"], "torch_lu_ms": f["torch_lu_ms"],
            "speedup_inv_vs_torch": f["torch_inv_ms"] / f["ours_inv_ms"],
            "speedup_inv_vs_best": best / f["ours_inv_ms"],
            "speedup_lu_vs_torch": f["torch_lu_ms"] / f["ours_lu_ms"],
            "speedup_fb_vs_torch": f["fb_x"], "ok": m["ok"] == "True"})
    return {"device": device, "copy_GBps": bw, "parsed_from": path, "rows": rows}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    result = parse(sys.argv[1])
    if not result["rows"]:
        sys.exit(f"no result lines in {sys.argv[1]}")
    with open(sys.argv[2], "w") as out:
        json.dump(result, out, indent=1)
    print(f"{len(result['rows'])} rows -> {sys.argv[2]}")
