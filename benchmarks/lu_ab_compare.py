"""Compares two builds of benchmarks/small_lu_harness.cu (tools/lu_ab.sh): per (kernel, dtype, n), the best time
over the (warps, rows) configurations of each build (the better of two runs each), their ratio (> 1: the new build
is faster), the same-configuration ratios, and whether the output hashes agree (factors or inverse, pivots, infos:
the two builds must give the same bits).

    python3 benchmarks/lu_ab_compare.py DIR [NEW_NAME]   # DIR/old{1,2}.txt against DIR/NEW_NAME{1,2}.txt
"""
import re, sys, collections
def parse(p):
    d = {}
    for line in open(p):
        m = re.match(r"(\w+)\s+(\w+) n=\s*(\d+) w(\d+) r(-?\d+)\s+([\d.]+) ms\s+(\d+) GB/s roofline\s+([\d.]+)% hash (\w+)", line)
        if m:
            k = (m[1], m[2], int(m[3]), int(m[4]), int(m[5]))
            d[k] = (float(m[6]), float(m[8]), m[9])
    return d
out = sys.argv[1]
newname = sys.argv[2] if len(sys.argv) > 2 else "new"
old = [parse(f"{out}/old{r}.txt") for r in (1, 2)]
new = [parse(f"{out}/{newname}{r}.txt") for r in (1, 2)]
best = collections.defaultdict(dict)
bad = 0
for k in sorted(old[0]):
    if k not in new[0]:
        continue
    o = min(x[k][0] for x in old); n = min(x[k][0] for x in new)
    same = old[0][k][2] == new[0][k][2]
    bad += not same
    kind, dt, nn, w, r = k
    best[(kind, dt, nn)][(w, r)] = (o, n, max(x[k][1] for x in new), same)
for key, cfg in sorted(best.items()):
    bo = min(v[0] for v in cfg.values()); bn = min(v[1] for v in cfg.values())
    wr_o = min(cfg, key=lambda c: cfg[c][0]); wr_n = min(cfg, key=lambda c: cfg[c][1])
    print(f"{key[0]:7s} {key[1]} n={key[2]:2d} best old {bo:.4f} ms (w{wr_o[0]} r{wr_o[1]}) new {bn:.4f} ms (w{wr_n[0]} r{wr_n[1]}) "
          f"ratio {bo/bn:.3f} new roofline {cfg[wr_n][2]:.1f}% same-config ratios "
          + " ".join(f"w{c[0]}r{c[1]}:{v[0]/v[1]:.2f}" for c, v in sorted(cfg.items())))
print("hash mismatches:", bad)
