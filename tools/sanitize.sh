#!/bin/bash
# compute-sanitizer memcheck and racecheck over a representative set of GPU transposition plans: square,
# C2R / R2C / skinny with the whole-GPU and cluster column engines and with the universal engine (reflections + cycle
# following), shared-memory and global-slot row shuffles, the on-chip cooperative kernel (in waves too), 1/2/4/8/16-byte
# elements, batches, > 1 cluster block, the tiled sequences 2.1 / 2.2 / 3.1 / 3.2, padded, cut; then the small LU / inverse kernels (every
# rows-per-lane variant) and the fused inverse backward.
# Usage (on a GPU machine, after building in place): tools/sanitize.sh [memcheck|racecheck|all]
# (TI_SANITIZE_PARTS=transpose: the transposition cases only; =tiled: only the tiled sequences, square tile-pair
# swaps, skinny past 64 fields, cut and padded; =onchip: only the skinny on-chip kernel and the register stash;
# =lu: only the small LU / inverse kernels; TI_SANITIZE_LU_ROWS=3,4: of those, only the one-row kernel and the
# rows-per-lane variants listed; TI_SANITIZE_LU_CASES=float64:23,24: only those dtypes and n.)
set -u
cd "$(dirname "$0")/.."
which="${1:-all}"
cat > /tmp/ti_sanitize_cases.py <<'PY'
import os, sys, torch
sys.path.insert(0, os.getcwd())
import torch_inplace
cases = [((96, 96), 4, "square"), ((3, 65, 65), 8, "square"), ((300, 7), 4, "skinny"), ((5, 301), 16, "skinny"),
         ((240, 180), 4, "c2r"), ((180, 240), 8, "r2c"), ((181, 239), 1, "auto"), ((2, 97, 60), 4, "auto"),
         ((6000, 40), 4, "c2r"),
         # skinny sequence 2.1: k | N (two passes, batched) and the Karlsson cut (ordered shift), both directions
         ((1001, 5), 4, "skinny"), ((5, 1001), 4, "skinny"), ((3, 9, 2000), 8, "skinny"), ((2, 517, 31), 2, "skinny"),
         ((20011, 13), 4, "skinny"), ((13, 20011), 1, "skinny"), ((4096, 64), 16, "skinny"),
         # on chip: one cooperative kernel, grid barrier between the reads and the writes
         ((300, 7), 4, "onchip"), ((3, 65, 67), 8, "onchip"), ((1000, 999), 1, "onchip"), ((5, 301), 16, "onchip"),
         ((4000, 20), 2, "onchip"), ((2000, 1999), 4, "onchip"),
         # gcd > 1: the rotation fused into the row shuffle (chunks, heads, neighbour flags), both directions
         ((1002, 1500), 4, "auto"), ((1500, 1002), 8, "auto"), ((12, 18), 2, "r2c"),
         # C2R staged by runs of b columns: 16- / 8-byte copies in turn (gcd 2, b = 511), 4-byte ones, a warp per run
         ((4100, 1022), 4, "c2r"), ((4100, 1022), 2, "c2r"), ((11216, 1024), 4, "c2r"),
         # gcd 1 row walks over rows starting at every offset mod 16 bytes (16-byte staging)
         ((1031, 300), 4, "c2r"), ((300, 1031), 2, "r2c"),
         # gcd 3 and 7: C2R row kernels on blocks of 480 and 448 threads (a multiple of c)
         ((1203, 603), 4, "c2r"), ((1407, 707), 2, "c2r")]
knobs = [{}, {"TORCH_INPLACE_GPU_COLUMNS": "universal", "TORCH_INPLACE_GPU_ONCHIP": "0"},
         {"TORCH_INPLACE_GPU_COLUMNS": "cluster", "TORCH_INPLACE_GPU_ONCHIP": "0"},
         {"TORCH_INPLACE_GPU_COLUMNS": "grid", "TORCH_INPLACE_GPU_GRID_BUFFERS": "1", "TORCH_INPLACE_GPU_ONCHIP": "0"},
         {"TORCH_INPLACE_GPU_COLUMNS": "grid", "TORCH_INPLACE_GPU_GRID_BUFFERS": "2", "TORCH_INPLACE_GPU_GRID_ASYNC": "1",
          "TORCH_INPLACE_GPU_ONCHIP": "0"},
         {"TORCH_INPLACE_GPU_COLUMNS": "grid", "TORCH_INPLACE_GPU_GRID_ASYNC": "0", "TORCH_INPLACE_GPU_ONCHIP": "0"},
         {"TORCH_INPLACE_GPU_COLUMNS": "grid", "TORCH_INPLACE_GPU_GRID_BUFFERS": "1", "TORCH_INPLACE_GPU_GRID_ASYNC": "1",
          "TORCH_INPLACE_GPU_ONCHIP": "0"},
         {"TORCH_INPLACE_GPU_ROWS": "global", "TORCH_INPLACE_GPU_ONCHIP": "0"},
         {"TORCH_INPLACE_GPU_ROW_BLOCK_BYTES": "1", "TORCH_INPLACE_GPU_GRID_ROW_LANES": "4",
          "TORCH_INPLACE_GPU_ONCHIP": "0"},
         # the panels split into column parts (two buffers with three parts)
         {"TORCH_INPLACE_GPU_COLUMNS": "grid", "TORCH_INPLACE_GPU_GRID_SPLIT": "2", "TORCH_INPLACE_GPU_ONCHIP": "0"},
         {"TORCH_INPLACE_GPU_COLUMNS": "grid", "TORCH_INPLACE_GPU_GRID_SPLIT": "3", "TORCH_INPLACE_GPU_GRID_BUFFERS": "2",
          "TORCH_INPLACE_GPU_ONCHIP": "0"},
         # the panels' general gather (the column shuffles step their indices linearly by default)
         {"TORCH_INPLACE_GPU_COLUMNS": "grid", "TORCH_INPLACE_GPU_GRID_GATHER": "general",
          "TORCH_INPLACE_GPU_ONCHIP": "0"},
         {"TORCH_INPLACE_GPU_FUSE_ROTATION": "0", "TORCH_INPLACE_GPU_ONCHIP": "0"},
         # the fused rotation with two band buffers (the next band's copies in flight during a shuffle)
         {"TORCH_INPLACE_GPU_FUSE_BUFFERS": "2", "TORCH_INPLACE_GPU_ROW_BLOCK_BYTES": "1",
          "TORCH_INPLACE_GPU_ONCHIP": "0"},
         # the row kernels compiled for 3 and 4 blocks per SM (fewer registers, spills), forced on every 4- / 8-byte plan
         {"TORCH_INPLACE_GPU_ROW_MIN_BLOCKS": "3", "TORCH_INPLACE_GPU_ONCHIP": "0"},
         {"TORCH_INPLACE_GPU_ROW_MIN_BLOCKS": "4", "TORCH_INPLACE_GPU_ROW_BLOCK_BYTES": "1",
          "TORCH_INPLACE_GPU_ONCHIP": "0"}]
dt = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64, 16: torch.complex128}
bad = 0


def set_knobs(kv):
    """Only the planner knobs in kv (every other TORCH_INPLACE_GPU_ variable unset); plans are cached per shape, so
    the cache is cleared for the knobs to apply."""
    for k in list(os.environ):
        if k.startswith("TORCH_INPLACE_GPU_"):
            os.environ.pop(k)
    os.environ.update(kv)
    torch.ops.inplace._clear_plan_cache()


def transposed_ok(shape, es, algo):
    x = torch.randint(0, 255, (torch.Size(shape).numel() * es,), dtype=torch.uint8, device="cuda").view(dt[es]).view(shape)
    want = x.mT.clone(memory_format=torch.contiguous_format)
    torch_inplace.transpose_(x, algorithm=algo)
    return torch.equal(x.reshape(-1).view(torch.uint8), want.reshape(-1).view(torch.uint8))


parts = os.environ.get("TI_SANITIZE_PARTS", "all")
if parts in ("tiled", "onchip", "lu"):  # tiled: only the tiled sequences, skinny past 64 fields and padded (the last
    knobs = []                     # transposition cases); onchip: only the skinny on-chip kernel
for kv in knobs:
    set_knobs(kv)
    for shape, es, algo in cases:
        ok = transposed_ok(shape, es, algo)
        bad += not ok
        print(kv, shape, es, algo, "ok" if ok else "WRONG", flush=True)
# On chip in waves (a batch over the GPU's shared memory, each matrix within it; a partial last wave): once, with the
# planner's defaults, as the waves are large for the sanitizer.
set_knobs({})
for shape, es in (() if parts in ("tiled", "onchip", "lu") else (((5, 1500, 1001), 4), ((7, 1200, 1001), 4),
                                                           ((9, 2000, 1999), 1))):
    expl = torch_inplace.plan(shape, dt[es], "cuda").explanation
    ok = transposed_ok(shape, es, "onchip") and "waves" in expl
    bad += not ok
    print({"onchip_waves": shape, "esize": es}, "ok" if ok else "WRONG " + expl[:100], flush=True)
# The skinny on-chip kernel (both sides in 16-byte chunks), forced wherever it applies: whole rows and whole columns,
# blocks over several matrices, run ends off the chunk boundaries, every element size, in waves; once.
set_knobs({"TORCH_INPLACE_GPU_ONCHIP_SKINNY": "1"})
skinny_cases = (((3001, 3), 1), ((3, 3001), 1), ((7, 1001, 5), 2), ((5, 7, 1003), 4), ((4000, 17), 8), ((9, 300), 16),
                ((40, 50176, 3), 1), ((256, 50176, 3), 1))
for shape, es in (() if parts in ("tiled", "lu") else skinny_cases):
    expl = torch_inplace.plan(shape, dt[es], "cuda", algorithm="onchip").explanation
    ok = transposed_ok(shape, es, "onchip") and "skinny kernel" in expl
    bad += not ok
    print({"onchip_skinny": shape, "esize": es}, "ok" if ok else "WRONG " + expl[:100], flush=True)
set_knobs({})
# The register stash (tensors just past the GPU's shared memory, as planned on an H100 / H200): the skinny kernel's
# (AoS -> SoA, SoA -> AoS at an odd length, a batch in waves) and the element kernel's (a tall matrix, a batch of
# near-squares in waves, 16-byte elements); once.
for shape, es in (() if parts in ("tiled", "lu") else (((876267, 13), 4), ((4, 1920 * 1080 + 3), 4),
                                              ((2, 4, 1920 * 1080 + 5), 4), ((8862, 1083), 4),
                                              ((2, 3080, 3072), 4), ((1201, 1600), 16))):
    expl = torch_inplace.plan(shape, dt[es], "cuda").explanation
    if "register stash" not in expl:
        print({"onchip_stash": shape, "esize": es}, "not planned here:", expl[:80], flush=True)
        continue
    ok = transposed_ok(shape, es, "auto")
    bad += not ok
    print({"onchip_stash": shape, "esize": es}, "ok" if ok else "WRONG", flush=True)
if parts == "onchip":
    sys.exit(1 if bad else 0)
# Tiled sequences 2.1 / 2.2 (the short side divides the long one: tiles swapped in place, super-elements by cycle
# following): one slice and several (the last one shorter), 16-byte units and elements, batches; and the skinny path
# past 64 fields; once, with defaults.
tiled_cases = (((3, 200, 100), 4, "tiled21"), ((2, 100, 300), 8, "tiled22"), ((777 * 3, 777), 8, "tiled21"),
               ((129, 129 * 4), 16, "tiled22"), ((65 * 5, 65), 1, "tiled21"), ((512, 2048), 4, "tiled22"),
               # skinny past 64 fields: a cut and k | N, both directions
               ((3001, 100), 4, "skinny"), ((100, 256 * 12), 8, "skinny"), ((700, 5003), 2, "skinny"),
               # sequences 3.1 / 3.2: shared-memory and square tiles, slices, one-element super-elements
               ((600, 800), 4, "tiled31"), ((2, 360, 240), 8, "tiled32"), ((96, 96 * 3), 16, "tiled31"),
               ((3, 120, 90), 1, "tiled32"), ((1009, 240), 4, "tiled31"), ((240, 1009), 2, "tiled32"),
               ((1280, 1536), 4, "tiled32"),
               # tile-pair swaps of 128 x 128 (1-byte), 64 x 64 (2-, 4-byte) and 32 x 32 tiles, partial edges
               ((130, 130), 1, "square"), ((2, 70, 70), 2, "square"), ((200, 200), 4, "square"),
               ((3, 40, 40), 16, "square"),
               # Karlsson's cut: near-square (a square and the shift), q > 1 (sequence 2.1 / 2.2), batches
               ((260, 256), 4, "cut"), ((2, 256, 263), 8, "cut"), ((1000, 333), 1, "cut"),
               ((97, 500), 16, "cut"), ((3, 150, 149), 2, "cut"))
for shape, es, algo in (() if parts == "lu" else tiled_cases):
    ok = transposed_ok(shape, es, algo)
    bad += not ok
    print({"tiled": shape, "esize": es, "algo": algo}, "ok" if ok else "WRONG", flush=True)
# The padded plan (tensors from empty_transposable: the padding in the storage's slack), tall and wide, there and back.
padded_cases = (((3001, 97), 4), ((97, 3001), 8), ((2049, 2), 16), ((64 * 40 + 5, 64), 1))
for shape, es in (() if parts == "lu" else padded_cases):
    t = torch_inplace.empty_transposable(shape, dtype=dt[es], device="cuda")
    src = torch.randint(0, 255, (torch.Size(shape).numel() * es,), dtype=torch.uint8, device="cuda").view(dt[es]).view(shape)
    t.copy_(src)
    torch_inplace.transpose_(t, algorithm="padded")
    ok = torch.equal(t.reshape(-1).view(torch.uint8), src.mT.contiguous().reshape(-1).view(torch.uint8))
    torch_inplace.transpose_(t, algorithm="padded")
    ok = ok and torch.equal(t.reshape(-1).view(torch.uint8), src.reshape(-1).view(torch.uint8))
    bad += not ok
    print({"padded": shape, "esize": es}, "ok" if ok else "WRONG", flush=True)
if parts in ("transpose", "tiled"):
    sys.exit(1 if bad else 0)
# Small LU / inverse kernels (and the fused inverse backward): every rows-per-lane variant (and the inverse's split
# rows, float32 / float64 n = 17, 24, 32), one and eight warps,
# batches that end in a partial warp, in place and out of place; results checked against the one-row kernel.
import torch_inplace.linalg as TL
# (float32 n = 4, 8, 12, 14, 18, 20, 26, float64 n = 2, 6, 14, 18 (rows 2-4) and complex64 n = 6: the unit tile;
# float32 n = 13, 17, 18, 26, 27 and float64 n = 14: LU kernels under a register bound, lu_reg_bound_table.)
lu_cases = [(torch.float32, n) for n in (1, 3, 4, 5, 8, 9, 12, 13, 14, 16, 17, 18, 20, 24, 26, 27, 32)] + \
           [(torch.float64, n) for n in (1, 2, 6, 7, 9, 14, 16, 17, 18, 19, 21, 23, 24, 27, 28, 32)] + \
           [(torch.complex64, 11), (torch.complex128, 19), (torch.complex64, 1), (torch.complex64, 6)]
# (float64 n = 23, 24, 27: the one-row inverse hands most of its pivot row over by shuffles, inverse_smem_chunks;
# n = 28: the inverse's split rows at 8 warps in the table, with the one-key pivot search.)
# TI_SANITIZE_LU_CASES=float64:23,24: only those (dtype, n) cases.
if os.environ.get("TI_SANITIZE_LU_CASES"):
    dname, ns = os.environ["TI_SANITIZE_LU_CASES"].split(":")
    lu_cases = [(getattr(torch, dname), int(v)) for v in ns.split(",")]
# TI_SANITIZE_LU_ROWS=3,4: only those rows-per-lane variants, after the one-row kernel they are checked against.
lu_configs = [(1, 1), (8, 1), (1, 2), (8, 2), (1, 3), (8, 3), (1, 4), (8, 4), (1, -2), (8, -2), (1, -3), (8, -3)]
if os.environ.get("TI_SANITIZE_LU_ROWS"):
    keep = {int(v) for v in os.environ["TI_SANITIZE_LU_ROWS"].split(",")}
    lu_configs = [(1, 1)] + [(w, r) for w, r in lu_configs if r in keep and (w, r) != (1, 1)]
for dtype, n in lu_cases:
    A = torch.randn(77, n, n, dtype=dtype, device="cuda") + n * torch.eye(n, dtype=dtype, device="cuda")
    ref = None
    for warps, rows in lu_configs:
        # -2: split rows, -3: a lane per matrix
        for kind in ("lu", "inverse"):
            torch.ops.inplace._small_lu_tuning(kind, dtype, n, warps, 1 if (kind == "lu" and rows == -2) else rows)
        LU, piv = TL.lu_factor(A)
        X = TL.batched_inverse(A)
        B = A.clone()
        TL.inverse_(B)
        got = (LU, piv, X, B)
        for kind in ("lu", "inverse"):
            torch.ops.inplace._small_lu_tuning(kind, dtype, n, 0, 0)
        ref = ref or got
        ok = all(torch.equal(a, b) for a, b in zip(ref, got)) and torch.equal(B, X)
        bad += not ok
        print({"lu": str(dtype), "n": n, "warps": warps, "rows": rows}, "ok" if ok else "WRONG", flush=True)
    A.requires_grad_(True)
    X = TL.batched_inverse(A)
    (torch.view_as_real(X) if X.is_complex() else X).sum().backward()
    ok = bool(torch.isfinite(A.grad).all())
    bad += not ok
    print({"inverse_backward": str(dtype), "n": n}, "ok" if ok else "WRONG", flush=True)
# The float64 inverse on the fp64 tensor cores (dmma_inverse.cuh; -4, compute capability 8.0 and up): one and eight
# warps (76 KB of shared memory per block at n = 32), a batch ending mid-block; against torch.linalg, in place equal
# to out of place.
if torch.cuda.get_device_capability()[0] >= 8:
    for n in (9, 17, 20, 24, 25, 31, 32):
        if os.environ.get("TI_SANITIZE_LU_CASES") and (torch.float64, n) not in lu_cases:
            continue
        A = torch.randn(77, n, n, dtype=torch.float64, device="cuda") + n * torch.eye(n, dtype=torch.float64,
                                                                                     device="cuda")
        A = A[:, torch.randperm(n, device="cuda")].contiguous()
        for warps in (1, 8):
            torch.ops.inplace._small_lu_tuning("inverse", torch.float64, n, warps, -4)
            X, info = TL.batched_inverse_ex(A)
            B = A.clone()
            TL.inverse_(B)
            torch.ops.inplace._small_lu_tuning("inverse", torch.float64, n, 0, 0)
            ok = (torch.equal(B, X) and int(info.abs().sum()) == 0
                  and torch.allclose(X, torch.linalg.inv(A), rtol=1e-9, atol=1e-9))
            bad += not ok
            print({"tensor_core_inverse": n, "warps": warps}, "ok" if ok else "WRONG", flush=True)
# Shared-memory kernels of 32 < n <= 64 (medium_lu.cuh; -5 forces them at n <= 32): against torch.linalg, in place
# equal to out of place; complex128 n = 64 takes more than 48 KiB of shared memory per block.
for dtype, n in ((torch.float32, 33), (torch.float64, 64), (torch.complex64, 40), (torch.complex128, 64),
                 (torch.float32, 5), (torch.float64, 17)):
    A = torch.randn(77, n, n, dtype=dtype, device="cuda") + n * torch.eye(n, dtype=dtype, device="cuda")
    A = A[:, torch.randperm(n, device="cuda")].contiguous()
    if n <= 32:
        for kind in ("lu", "inverse"):
            torch.ops.inplace._small_lu_tuning(kind, dtype, n, 1, -5)
    LU, piv = TL.lu_factor(A)
    X = TL.batched_inverse(A)
    B, C = A.clone(), A.clone()
    TL.inverse_(B)
    cpiv = TL.lu_factor_(C)
    if n <= 32:
        for kind in ("lu", "inverse"):
            torch.ops.inplace._small_lu_tuning(kind, dtype, n, 0, 0)
    P, L, U = torch.lu_unpack(LU, piv)
    t = 1e-3 if dtype in (torch.float32, torch.complex64) else 1e-9
    ok = (torch.equal(B, X) and torch.equal(C, LU) and torch.equal(cpiv, piv)
          and torch.allclose(P @ L @ U, A, rtol=t, atol=t * n) and torch.allclose(X, torch.linalg.inv(A), rtol=t, atol=t))
    bad += not ok
    print({"medium": str(dtype), "n": n}, "ok" if ok else "WRONG", flush=True)
# Persistent small-tile kernels: two blocks loop over every tile (many turns per warp, the next tile fetched during
# the current one, a partial last tile), and unaligned data (no fetch); against one warp per tile.
for dtype, n, rows in ((torch.float32, 2, 1), (torch.float32, 4, 1), (torch.float32, 7, 2), (torch.float32, 5, 4),
                       (torch.float64, 3, 1), (torch.float64, 6, 1), (torch.float32, 4, 4), (torch.float64, 2, 2),
                       (torch.float32, 1, 1), (torch.float32, 6, -3), (torch.float64, 8, -3), (torch.float32, 6, 3),
                       (torch.float64, 5, 3)):
    # G = 1 (a lane per matrix: rows >= n, or -3); n = 1: the elementwise kernel
    store = torch.empty(1001 * n * n + 1, dtype=dtype, device="cuda")
    A = store[1:].view(1001, n, n)
    A.copy_(torch.randn(1001, n, n, dtype=dtype, device="cuda") + n * torch.eye(n, dtype=dtype, device="cuda"))
    outs = []
    for env in ({"TORCH_INPLACE_LU_PERSIST": "0"}, {"TORCH_INPLACE_LU_GRID_CAP": "2"}):
        os.environ.update(env)
        for kind in ("lu", "inverse"):
            torch.ops.inplace._small_lu_tuning(kind, dtype, n, 1, rows)
        outs.append([TL.lu_factor(A.clone())[0], TL.batched_inverse(A.clone()), TL.lu_factor(A)[0], TL.batched_inverse(A)])
        for kind in ("lu", "inverse"):
            torch.ops.inplace._small_lu_tuning(kind, dtype, n, 0, 0)
        for k in env:
            os.environ.pop(k)
    ok = all(torch.equal(a, b) for a, b in zip(outs[0], outs[1])) and torch.equal(outs[1][0], outs[1][2])
    bad += not ok
    print({"lu_persistent": str(dtype), "n": n, "rows": rows}, "ok" if ok else "WRONG", flush=True)
sys.exit(1 if bad else 0)
PY
rc=0
for tool in memcheck racecheck; do
  if [ "$which" = all ] || [ "$which" = "$tool" ]; then
    echo "== compute-sanitizer --tool $tool"
    log=/tmp/ti_sanitize_$tool.log
    compute-sanitizer --tool "$tool" --error-exitcode 3 python3 /tmp/ti_sanitize_cases.py > "$log" 2>&1
    r=$?
    # Cases, then each distinct report (kernel and source line, addresses stripped) with its count.
    grep -E "^\{" "$log" | grep -c " ok$" | sed 's/^/cases ok: /'
    grep -E "WRONG" "$log"
    grep -E "Error|Race reported|Invalid|and (Read|Write) access| at .*\.cuh?:[0-9]+|in void" "$log" \
      | sed -E 's/0x[0-9a-f]+//g; s/\(.*\)//' | sort | uniq -c | sort -rn | head -30
    grep -E "SUMMARY" "$log"
    echo "== $tool exit $r"
    [ "$r" -ne 0 ] && rc=$r
  fi
done
exit $rc
