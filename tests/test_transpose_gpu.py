"""GPU tests of transpose_ / aos_to_soa_ / soa_to_aos_ (the CUDA engine of _transpose_data_).

Every result is compared byte for byte with ``x.mT.contiguous()`` (cloned) on random bytes (never zeros).
Engines that the planner would not pick on this GPU are reached through the test knobs of gpu_plan.cpp:
TORCH_INPLACE_GPU_COLUMNS=universal (reflections + cycle following instead of shared memory) or =cluster (a
thread-block cluster's distributed shared memory instead of the whole GPU's),
TORCH_INPLACE_GPU_ROWS=global (global row slots instead of shared memory) and TORCH_INPLACE_GPU_ONCHIP=0 (keeps
the on-chip plan, which takes every tensor that fits in shared memory, out of auto plans so that small shapes
still reach the multi-pass engines).
"""
import contextlib
import math
import os
import random

import pytest
import torch

import torch_inplace
from conftest import graphed

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA/ROCm GPU"),
]

DTYPES = {1: torch.uint8, 2: torch.int16, 4: torch.float32, 8: torch.float64, 16: torch.complex128}


def rand_tensor(shape, esize, gen=None):
    """Random bytes viewed as the dtype of `esize` bytes (floats may hold NaN payloads: compare bytes)."""
    numel = math.prod(shape)
    raw = torch.randint(0, 256, (numel * esize,), dtype=torch.uint8, device="cuda", generator=gen)
    return raw.view(DTYPES[esize]).view(shape)


def as_bytes(a):
    return a.contiguous().reshape(-1).view(torch.uint8)


def same_bytes(a, b):
    return a.shape == b.shape and torch.equal(as_bytes(a), as_bytes(b))


@contextlib.contextmanager
def env(**kv):
    """Sets planner knobs; plans are cached per shape, so the cache is cleared on the way in and out."""
    old = {k: os.environ.get(k) for k in kv}
    os.environ.update({k: v for k, v in kv.items()})
    torch.ops.inplace._clear_plan_cache()
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        torch.ops.inplace._clear_plan_cache()


NO_ONCHIP = dict(TORCH_INPLACE_GPU_ONCHIP="0")


def check(shape, esize, algorithm="auto"):
    x = rand_tensor(shape, esize)
    want = x.mT.clone(memory_format=torch.contiguous_format)
    ptr = x.data_ptr()
    torch_inplace.transpose_(x, algorithm=algorithm)
    assert x.data_ptr() == ptr
    assert same_bytes(x, want), (shape, esize, algorithm)


def random_shapes(rng, count):
    out = []
    primes = [p for p in range(2, 800) if all(p % d for d in range(2, int(p ** 0.5) + 1))]
    for k in range(count):
        kind = k % 8
        if kind == 0:
            out.append((rng.choice(primes), rng.choice(primes)))
        elif kind == 1:
            out.append((1, rng.randint(1, 3000)))
        elif kind == 2:
            out.append((rng.randint(1, 3000), 1))
        elif kind == 3:
            s = rng.randint(2, 700)
            out.append((s, s))
        elif kind == 4:
            f = rng.randint(2, 64)
            nrow = rng.randint(65, 20000)
            out.append((nrow, f) if rng.random() < 0.5 else (f, nrow))
        elif kind == 5:
            b = rng.randint(2, 5)
            out.append((b, rng.randint(2, 200), rng.randint(2, 200)))
        elif kind == 6:
            out.append((rng.randint(2, 1500), rng.randint(2, 1500)))
        else:
            g = rng.choice([2, 3, 4, 6, 8, 12, 16, 32])
            out.append((g * rng.randint(1, 60), g * rng.randint(1, 60)))
    return out


@pytest.mark.parametrize("knobs", [{}, NO_ONCHIP])
@pytest.mark.parametrize("esize", [1, 2, 4, 8, 16])
def test_random_shapes_auto(esize, knobs):
    rng = random.Random(1000 + esize)
    with env(**knobs):
        for shape in random_shapes(rng, 220):
            check(shape, esize)


@pytest.mark.parametrize("esize", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("algorithm", ["c2r", "r2c", "square", "skinny"])
def test_forced_algorithms(esize, algorithm):
    rng = random.Random(7 * esize + len(algorithm))
    shapes = random_shapes(rng, 48)
    ran = 0
    for shape in shapes:
        rows, cols = shape[-2], shape[-1]
        applies = {
            "c2r": True, "r2c": True, "square": rows == cols,
            "skinny": 2 <= min(rows, cols) <= 1024 and max(rows, cols) > min(rows, cols),
        }[algorithm] or rows == 1 or cols == 1
        if not applies:
            with pytest.raises(RuntimeError, match=f"(?s)^transpose_: .*{algorithm}"):
                x = rand_tensor(shape, esize)
                before = x.clone()
                try:
                    torch_inplace.transpose_(x, algorithm=algorithm)
                finally:
                    assert same_bytes(x, before)
            continue
        check(shape, esize, algorithm)
        ran += 1
    if algorithm == "square":
        # around the tile sides: 32 x 32 (8-, 16-byte elements), 64 x 64 (2-, 4-byte), 128 x 128 (1-byte)
        for s in (2, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 257):
            check((s, s), esize, "square")
            check((3, s, s), esize, "square")
            ran += 1
    assert ran > 0


@pytest.mark.parametrize("knobs", [dict(TORCH_INPLACE_GPU_COLUMNS="universal"),
                                   dict(TORCH_INPLACE_GPU_COLUMNS="cluster"),
                                   dict(TORCH_INPLACE_GPU_ROWS="global"),
                                   dict(TORCH_INPLACE_GPU_COLUMNS="universal", TORCH_INPLACE_GPU_ROWS="global")])
@pytest.mark.parametrize("esize", [1, 2, 4, 8, 16])
def test_engines(knobs, esize):
    rng = random.Random(99 + esize)
    with env(**knobs):
        for shape in random_shapes(rng, 40) + [(6, 4), (4, 6), (12, 18), (18, 12), (97, 89), (1024, 768)]:
            for algorithm in ("c2r", "r2c"):
                check(shape, esize, algorithm)


@pytest.mark.parametrize("knobs", [{}, NO_ONCHIP, dict(TORCH_INPLACE_GPU_SKINNY="plain", **NO_ONCHIP),
                                   dict(TORCH_INPLACE_GPU_SKINNY="catanzaro", **NO_ONCHIP),
                                   dict(TORCH_INPLACE_GPU_SKINNY="cut", **NO_ONCHIP)])
def test_aos_soa_roundtrip(knobs):
    with env(**knobs):
        _aos_soa_roundtrip()


def _aos_soa_roundtrip():
    for n, f in [(10000, 3), (12345, 17), (4096, 64), (99991, 2), (7, 5), (1000000, 7), (3 * 1024 * 9, 31),
                 (2 * 65537, 12)]:
        for esize in (1, 4, 8, 16):
            x = rand_tensor((n, f), esize)
            orig = x.clone()
            torch_inplace.aos_to_soa_(x)
            assert x.shape == (f, n) and same_bytes(x, orig.mT)
            torch_inplace.soa_to_aos_(x)
            assert x.shape == (n, f) and same_bytes(x, orig)


def test_large_shapes():
    for shape in [(20000, 3), (3, 20000), (1000000, 5), (7, 1000003), (4099, 4093), (8192, 4096), (2, 3001, 2999)]:
        check(shape, 4)


def test_over_2_31_elements():
    # > 2^31 elements in one matrix (64-bit indices) and in a batch of small matrices (on chip in waves, whose
    # offsets past the first wave are 64-bit, and through the multi-pass engines).
    for shape, knobs in [((40009, 53681), {}), ((3000, 800, 901), {}),
                         ((3000, 800, 901), dict(TORCH_INPLACE_GPU_ONCHIP_WAVES="0"))]:
        with env(**knobs):
            x = rand_tensor(shape, 1)
            want = x.mT.contiguous()
            torch_inplace.transpose_(x)
            assert torch.equal(x, want), (shape, knobs)
            del x, want
            torch.cuda.empty_cache()


def _fits_on_gpu(nbytes, copies):
    torch.cuda.empty_cache()
    free = torch.cuda.mem_get_info()[0]
    if free < copies * nbytes + (2 << 30):
        pytest.skip(f"needs {copies} x {nbytes / 2**30:.1f} GiB of free GPU memory, {free / 2**30:.1f} GiB free")


@pytest.mark.parametrize("shape, esize, algorithm, planned", [
    ((65537, 65539), 4, "c2r", "c2r"), ((65537, 65539), 4, "r2c", "r2c"), ((65539, 65537), 4, "auto", "c2r"),
    ((65537, 65537), 4, "auto", "square"), ((65539, 65536), 4, "cut", "cut"),
    ((9 * 24576, 24576), 4, "tiled21", "tiled21"), ((24576, 9 * 24576), 4, "tiled22", "tiled22"),
    ((65536, 65600), 4, "tiled31", "tiled31"), ((65600, 65536), 4, "tiled32", "tiled32"),
    ((1073742, 4001), 4, "padded", None), ((2, 46349, 46351), 4, "auto", "r2c"),
    ((5961, 800, 901), 4, "auto", "onchip"), ((65537, 65539), 8, "auto", "r2c")])
def test_over_2_32_elements(shape, esize, algorithm, planned):
    # More than 2^32 elements of 4 bytes (byte offsets past 2^34), and one tensor of 8 bytes: an index or an offset
    # truncated to 32 bits anywhere in the 64-bit engines moves elements to wrong places. Every algorithm but the
    # skinny one (next test): Catanzaro's two directions (prime sides), a square, a cut, sequences 2.1 / 2.2 / 3.1 /
    # 3.2, the padded plan in the factory's slack, a batch of two large matrices and one of small matrices on chip in
    # waves. The auto cases assert their plan, so that a planner change cannot quietly drop an engine from the test.
    assert math.prod(shape) > 1 << 32
    nbytes = math.prod(shape) * esize
    _fits_on_gpu(nbytes, 3)  # x, the expected result, and torch.equal's one bool per byte
    if planned is None:  # the padded plan depends on the storage's slack, which plan() does not see
        x = torch_inplace.empty_transposable(shape, dtype=DTYPES[esize], device="cuda")
        x.copy_(rand_tensor(shape, esize))
    else:
        assert torch_inplace.plan(shape, DTYPES[esize], "cuda", algorithm=algorithm).algorithm == planned
        x = rand_tensor(shape, esize)
    want = x.mT.contiguous()
    torch_inplace.transpose_(x, algorithm=algorithm)
    assert same_bytes(x, want), (shape, esize, algorithm)
    del x, want
    torch.cuda.empty_cache()


def test_skinny_over_2_32_elements():
    f = 7
    n = (1 << 32) // f + 4099
    _fits_on_gpu(n * f * 4, 4)  # x, its copy, the copy's transpose and torch.equal's bools for the comparison
    x = rand_tensor((n, f), 4)
    orig = x.clone()
    torch_inplace.aos_to_soa_(x)
    assert same_bytes(x, orig.mT)
    torch_inplace.soa_to_aos_(x)
    assert same_bytes(x, orig)
    del x, orig
    torch.cuda.empty_cache()


def test_extra_memory():
    for shape, esize in [((5000, 7001), 4), ((7919, 7907), 8), ((1000000, 7), 4), ((9, 300000), 8), ((4096, 4096), 4)]:
        x = rand_tensor(shape, esize)
        want = x.mT.clone(memory_format=torch.contiguous_format)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        torch_inplace.transpose_(x)
        torch.cuda.synchronize()
        extra = torch.cuda.max_memory_allocated() - base
        nbytes = x.numel() * esize
        assert extra <= nbytes // 1000 + (1 << 20), (shape, esize, extra)
        assert same_bytes(x, want)


def test_workspace_limit():
    shape = (3001, 2999)
    with env(TORCH_INPLACE_GPU_COLUMNS="universal", TORCH_INPLACE_GPU_CUT="0", **NO_ONCHIP):
        p = torch_inplace.plan(shape, torch.float32, "cuda")
        assert p.scratch_bytes > 0
        x = rand_tensor(shape, 4)
        before = x.clone()
        with torch_inplace.workspace_limit(0):
            with pytest.raises(RuntimeError, match="^transpose_: no algorithm fits the workspace limit"):
                torch_inplace.transpose_(x)
        assert same_bytes(x, before)
        with torch_inplace.workspace_limit(p.scratch_bytes):
            torch_inplace.transpose_(x)
        assert same_bytes(x, before.mT)
    # Under a zero limit the planner picks a plan without scratch where one exists.
    with torch_inplace.workspace_limit(0):
        p0 = torch_inplace.plan(shape, torch.float32, "cuda")
        if p0.scratch_bytes == 0:
            check(shape, 4)


def test_empty_and_vectors():
    for shape in [(0, 5), (5, 0), (0, 0), (3, 0, 4), (1, 1), (1, 17), (17, 1), (4, 1, 9)]:
        x = rand_tensor(shape, 4) if math.prod(shape) else torch.empty(shape, device="cuda")
        want = x.mT.clone(memory_format=torch.contiguous_format)
        torch_inplace.transpose_(x)
        assert x.shape == want.shape and same_bytes(x, want)


def test_empty_transposable():
    for shape in [(1009, 1013), (64, 3000), (2, 499, 503)]:
        t = torch_inplace.empty_transposable(shape, dtype=torch.float32, device="cuda")
        t.copy_(rand_tensor(shape, 4))
        want = t.mT.clone(memory_format=torch.contiguous_format)
        torch_inplace.transpose_(t)
        assert same_bytes(t, want)
    with pytest.raises(RuntimeError, match="(?s)^transpose_: .*padded"):
        t = torch_inplace.empty_transposable((1009, 1013), dtype=torch.float32, device="cuda")
        torch_inplace.transpose_(t, algorithm="padded")


def _storage_bytes(t):
    return t.untyped_storage().nbytes()


@pytest.mark.parametrize("esize", [1, 2, 4, 8, 16])
def test_padded_with_empty_transposable(esize):
    # The padded path (the long side padded to a multiple of the short one inside the factory's slack, the tiled
    # sequences, an ordered shift) forced on tall and wide matrices and back: every byte as x.mT, the slack only
    # what padding_slack_bytes gives, a plain tensor of the same shape refused and untouched.
    for shape in [(40013, 300), (300, 40013), (3001, 97), (97, 3001), (64 * 40 + 5, 64), (2049, 2)]:
        t = torch_inplace.empty_transposable(shape, dtype=DTYPES[esize], device="cuda")
        nbytes = math.prod(shape) * esize
        assert 0 < _storage_bytes(t) - nbytes <= nbytes // 32 + esize, (shape, _storage_bytes(t))
        src = rand_tensor(shape, esize)
        t.copy_(src)
        torch_inplace.transpose_(t, algorithm="padded")
        assert same_bytes(t, src.mT), (shape, esize)
        torch_inplace.transpose_(t, algorithm="padded")
        assert same_bytes(t, src), (shape, esize)
        x = src.clone()
        with pytest.raises(RuntimeError, match="(?s)^transpose_: .*slack"):
            torch_inplace.transpose_(x, algorithm="padded")
        assert same_bytes(x, src)
    with pytest.raises(RuntimeError, match="(?s)^transpose_: .*padded"):  # batches: no slack, no padded plan
        torch_inplace.transpose_(torch_inplace.empty_transposable((2, 4001, 97), dtype=DTYPES[esize], device="cuda"),
                                 algorithm="padded")


def test_unimplemented_algorithms_raise_cleanly():
    # Not on the GPU: padding only into a storage's slack
    # (test_padded_with_empty_transposable); 2.1 / 2.2 only where the short side divides the long one, 2.1 for tall
    # and 2.2 for wide matrices (test_tiled_*).
    for algorithm, shape in [("padded", (64, 96)),
                             ("tiled21", (64, 96)), ("tiled22", (64, 96)), ("tiled21", (96, 64)),
                             ("tiled21", (100, 300)), ("tiled22", (300, 100)), ("tiled22", (64, 64))]:
        x = rand_tensor(shape, 4)
        before = x.clone()
        with pytest.raises(RuntimeError, match=f"(?s)^transpose_: .*{algorithm}"):
            torch_inplace.transpose_(x, algorithm=algorithm)
        assert same_bytes(x, before)


def tiled_shapes(rng, count):
    """(batch..., rows, cols) with the short side g dividing the long side: q g x g tiles, tall or wide."""
    out = []
    for k in range(count):
        g = rng.choice([2, 3, 7, 16, 31, 64, 65, 100, 128, 129, 257, 300, 512, 640])
        q = rng.randint(2, 12)
        shape = (q * g, g) if k % 2 == 0 else (g, q * g)
        if k % 3 == 0:
            shape = (rng.randint(2, 3),) + shape
        out.append(shape)
    return out


@pytest.mark.parametrize("esize", [1, 2, 4, 8, 16])
def test_tiled_forced_random_shapes(esize):
    # Sequences 2.1 / 2.2 forced on random divisor shapes of every element size: super-elements from 2 to 10240
    # bytes, 16-byte units or elements, one slice or several (the last shorter), batches folded into the kernels.
    rng = random.Random(4242 + esize)
    for shape in tiled_shapes(rng, 30):
        algorithm = "tiled21" if shape[-2] > shape[-1] else "tiled22"
        check(shape, esize, algorithm)


def test_tiled_is_auto_and_explains():
    # Auto where the short side (past the skinny range, a super-element of at least 256 bytes) divides the long one
    # and the tensor is too large for the on-chip plan; the explanation names the steps; TORCH_INPLACE_GPU_TILED=0
    # gives those shapes to Catanzaro, with the same bytes.
    for shape, esize, algorithm in [((8192, 2048), 4, "tiled21"), ((2048, 8192), 4, "tiled22"),
                                    ((3, 2048, 4096), 4, "tiled22"), ((12000, 4000), 4, "tiled21"),
                                    ((777, 777 * 9), 8, "tiled22"), ((1000 * 40, 1000), 2, "tiled21"),
                                    ((600, 600 * 60), 16, "tiled22"), ((512, 512 * 300), 4, "tiled22")]:
        p = torch_inplace.plan(shape, DTYPES[esize], "cuda")
        assert p.algorithm == algorithm, (shape, esize, p.explanation)
        assert "tile-pair swaps" in p.explanation and "cycle following" in p.explanation, p.explanation
        assert 0 < p.scratch_bytes <= math.prod(shape) * esize // 1000 + (1 << 20)
        check(shape, esize)
    with env(TORCH_INPLACE_GPU_TILED="0"):
        assert torch_inplace.plan((8192, 2048), torch.float32, "cuda").algorithm in ("c2r", "r2c")
        check((8192, 2048), 4)
    assert torch_inplace.plan((2048, 8192), torch.float32, "cuda", algorithm="c2r").algorithm == "c2r"


def tiled3_shapes(rng, count):
    """(batch..., rows, cols) with factors of every kind: smooth sides (tiles up to the 48 KiB budget), one prime
    side (1-wide tiles on that side), both prime, squares, short sides, a whole side as one tile."""
    primes = [p for p in range(2, 3000) if all(p % d for d in range(2, int(p ** 0.5) + 1))]
    out = []
    for k in range(count):
        kind = k % 6
        if kind == 0:
            shape = (rng.randint(2, 40) * rng.choice([8, 12, 30, 64, 100]), rng.randint(2, 40) * rng.choice([6, 16, 50, 96]))
        elif kind == 1:
            shape = (rng.choice(primes), rng.randint(2, 60) * 24)
        elif kind == 2:
            shape = (rng.choice(primes), rng.choice(primes))
        elif kind == 3:
            n = rng.randint(2, 50) * rng.choice([4, 6, 10])
            shape = (n, n)
        elif kind == 4:
            shape = (rng.randint(2, 9), rng.randint(2, 4000))
        else:
            shape = (rng.randint(100, 3000), rng.randint(2, 200))
        if rng.random() < 0.5:
            shape = shape[::-1]
        if k % 4 == 0:
            shape = (rng.randint(2, 3),) + shape
        out.append(shape)
    return out


@pytest.mark.parametrize("esize", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("algorithm", ["tiled31", "tiled32"])
def test_tiled3_forced_random_shapes(esize, algorithm):
    # Sequences 3.1 / 3.2 forced on 24 random shapes per element size: every tile the planner picks (square tiles
    # swapped in place, others through shared memory, trivial steps skipped), super-elements of one element to
    # several 2 KiB slices, batches folded into the kernels.
    rng = random.Random(3131 + esize + (0 if algorithm == "tiled31" else 100))
    for shape in tiled3_shapes(rng, 24):
        p = torch_inplace.plan(shape, DTYPES[esize], "cuda", algorithm=algorithm)
        assert p.algorithm == algorithm and ("sequence 3.1" if algorithm == "tiled31" else "sequence 3.2") in \
            p.explanation, (shape, p.explanation)
        check(shape, esize, algorithm)


def test_tiled3_large_and_auto():
    # Matrices of the benchmark's size range, both sequences, fp32 and fp64, a batch. Auto where the tile is a
    # square of a common divisor of at least 1 KiB a side (swapped in place): fp32 6000 x 8000 (1000 x 1000 tiles),
    # fp64 8000 x 6000 (500 x 500), a batch of fp32 3072 x 5120 (1024 x 1024), fp32 4096 x 11008 (256 x 256); not
    # bf16 4096 x 11008 (512 bytes a side), with gcd 8 or a divisor side (2.1);
    # TORCH_INPLACE_GPU_TILED3=0 gives them to Catanzaro, =1 (measurements) takes shared-memory tiles too.
    for shape, esize, auto in [((6000, 8000), 4, True), ((8000, 6000), 8, True), ((2, 3072, 5120), 4, True),
                               ((4096, 11008), 4, True), ((4096, 11008), 2, False), ((2, 3000, 4096), 4, False),
                               ((19200, 1200), 4, False)]:
        for algorithm in ("tiled31", "tiled32"):
            check(shape, esize, algorithm)
        p = torch_inplace.plan(shape, DTYPES[esize], "cuda")
        assert (p.algorithm in ("tiled31", "tiled32")) == auto, (shape, esize, p.explanation)
        if auto:
            assert "swapped in place by tile pairs" in p.explanation, p.explanation
            assert 0 < p.scratch_bytes <= math.prod(shape) * esize // 1000 + (1 << 20)
            check(shape, esize)
    with env(TORCH_INPLACE_GPU_TILED3="0"):
        assert torch_inplace.plan((6000, 8000), torch.float32, "cuda").algorithm in ("c2r", "r2c")
    with env(TORCH_INPLACE_GPU_TILED3="1"):
        p = torch_inplace.plan((6000, 8001), torch.float32, "cuda")
        assert p.algorithm == "tiled31" and "80 x 127 tiles transposed on chip" in p.explanation, p.explanation
        check((6000, 8001), 4)


def cut_shapes(rng, count):
    """(batch..., rows, cols): near-square (q = 1, a few rows or columns cut), q > 1 with a remainder, g dividing L
    (nothing cut), short sides from 2, squares; tall and wide."""
    out = []
    for k in range(count):
        kind = k % 5
        g = rng.randint(2, 700)
        if kind == 0:
            shape = (g + rng.randint(1, 40), g)
        elif kind == 1:
            shape = (g * rng.randint(2, 9) + rng.randint(1, g - 1 if g > 2 else 1), g)
        elif kind == 2:
            shape = (g * rng.randint(1, 9), g)
        elif kind == 3:
            g = rng.randint(2, 9)
            shape = (rng.randint(10, 5000), g)
        else:
            shape = (g, g)
        if rng.random() < 0.5:
            shape = shape[::-1]
        if k % 4 == 1:
            shape = (rng.randint(2, 3),) + shape
        out.append(shape)
    return out


@pytest.mark.parametrize("esize", [1, 2, 4, 8, 16])
def test_cut_forced_random_shapes(esize):
    # Karlsson's cut forced on 30 random shapes per element size: x = L mod g rows (tall) or columns (wide) set
    # aside, the rest transposed as a square or by sequence 2.1 / 2.2, the shift and the cut block around it;
    # batches one matrix at a time; nothing cut where g divides L.
    rng = random.Random(5150 + esize)
    for shape in cut_shapes(rng, 30):
        rows, cols = shape[-2], shape[-1]
        p = torch_inplace.plan(shape, DTYPES[esize], "cuda", algorithm="cut")
        assert p.algorithm == "cut", (shape, p.explanation)
        x = max(rows, cols) % min(rows, cols)
        assert (f"the last {x} " in p.explanation) if x else ("nothing to cut" in p.explanation), p.explanation
        check(shape, esize, "cut")


def test_cut_is_auto_for_near_square_and_explains():
    # Auto for near-square matrices of 4- to 16-byte elements, at least 4 MiB, with a common divisor (where Catanzaro
    # needs its rotation), whose scratch (the cut block, the shift's flags) stays within 0.1% + 1 MiB; measured extra
    # memory within it; TORCH_INPLACE_GPU_CUT=0 gives them to Catanzaro.
    # (Near-squares of up to ~46 MB go on chip with the register stash: test_onchip_stash_for_general_shapes.)
    for shape, esize in [((4100, 4096), 4), ((4096, 4100), 8), ((2, 4100, 4096), 4), ((6000, 6009), 4),
                         ((20010, 19995), 4), ((2048, 2052), 16)]:
        p = torch_inplace.plan(shape, DTYPES[esize], "cuda")
        assert p.algorithm == "cut" and "cut (Karlsson)" in p.explanation and "square" in p.explanation, \
            (shape, esize, p.explanation)
        nbytes = math.prod(shape) * esize
        assert 0 < p.scratch_bytes <= nbytes // (1000 * math.prod(shape[:-2])) + (1 << 20)
        x = rand_tensor(shape, esize)
        want = x.mT.clone(memory_format=torch.contiguous_format)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        torch_inplace.transpose_(x)
        torch.cuda.synchronize()
        assert torch.cuda.max_memory_allocated() - base <= nbytes // 1000 + (1 << 20)
        assert same_bytes(x, want), (shape, esize)
    # a cut of 1904 columns; coprime sides; 2-byte elements; small enough for the on-chip plan
    for shape, esize in [((4096, 6000), 4), ((10007, 10000), 4), ((7002, 7000), 2), ((1030, 1024), 4)]:
        assert torch_inplace.plan(shape, DTYPES[esize], "cuda").algorithm != "cut", (shape, esize)
    with env(TORCH_INPLACE_GPU_CUT="0"):
        assert torch_inplace.plan((4100, 4096), torch.float32, "cuda").algorithm in ("c2r", "r2c")
        check((4100, 4096), 4)


def test_cut_over_2_31_elements():
    # 64-bit offsets in the square swaps, the shift and the tails: 46344 x 46341 bytes (2.15e9), 3 rows cut.
    shape = (46344, 46341)
    x = rand_tensor(shape, 1)
    want = x.mT.contiguous()
    torch_inplace.transpose_(x, algorithm="cut")
    assert torch.equal(x, want)
    del x, want
    torch.cuda.empty_cache()


def test_tiled_over_2_31_elements():
    # 64-bit offsets in both kernels: 2.4e9 one-byte elements, 16 KiB super-elements in 8 slices.
    for shape in [(9 * 16384, 16384), (16384, 9 * 16384)]:
        assert torch_inplace.plan(shape, torch.uint8, "cuda").algorithm in ("tiled21", "tiled22")
        x = rand_tensor(shape, 1)
        want = x.mT.contiguous()
        torch_inplace.transpose_(x)
        assert torch.equal(x, want), shape
        del x, want
        torch.cuda.empty_cache()


def _check_replays(g, x, shape, esize, replays=3):
    """Replays g on fresh data in x (the captured op transposes x's (..., m, n) bytes) against x.mT."""
    for _ in range(replays):
        src = rand_tensor(shape, esize)
        x.copy_(src)
        g.replay()
        want = src.mT.contiguous()
        assert same_bytes(x.view(want.shape), want), (shape, esize)


@pytest.mark.parametrize("knobs", [{}, dict(TORCH_INPLACE_GPU_COLUMNS="universal", TORCH_INPLACE_GPU_ROWS="global"),
                                   NO_ONCHIP, dict(TORCH_INPLACE_GPU_COLUMNS="cluster", **NO_ONCHIP)])
@pytest.mark.parametrize("shape", [(1000, 3000), (512, 512), (100000, 6), (2, 257, 129), (100003, 7), (7, 100003),
                                   (3, 4096, 33), (2, 33, 5001), (4096, 1024), (2, 512, 2560), (3072, 5120),
                                   (3080, 3072), (2, 3072, 3100)])
def test_cuda_graph(knobs, shape):
    with env(**knobs):
        x = rand_tensor(shape, 4)
        _check_replays(graphed(lambda: torch.ops.inplace._transpose_data_(x))[0], x, shape, 4)


@pytest.mark.parametrize("esize", [1, 4, 16])
@pytest.mark.parametrize("algorithm, shape", [
    ("c2r", (3001, 2999)), ("r2c", (2999, 3001)), ("c2r", (3, 257, 129)), ("square", (1000, 1000)),
    ("skinny", (100003, 7)), ("skinny", (7, 100003)), ("tiled21", (2048, 512)), ("tiled22", (512, 2048)),
    ("tiled31", (6000, 8000)), ("tiled32", (2, 600, 800)), ("cut", (3001, 2999)), ("cut", (2113, 700)),
    ("padded", (3001, 97)), ("padded", (97, 3001)), ("onchip", (300, 200))])
def test_cuda_graph_forced_algorithms(algorithm, shape, esize):
    # Every algorithm forced, captured and replayed on fresh data: the padded plan on a storage with the factory's
    # slack (its plan depends on the storage), the others on plain tensors.
    padded = algorithm == "padded"
    if padded:
        x = torch_inplace.empty_transposable(shape, dtype=DTYPES[esize], device="cuda")
    else:
        assert torch_inplace.plan(shape, DTYPES[esize], "cuda", algorithm=algorithm).algorithm == algorithm
        x = rand_tensor(shape, esize)
    _check_replays(graphed(lambda: torch.ops.inplace._transpose_data_(x, algorithm))[0], x, shape, esize)


# ---- skinny path: sequence 2.1 (tiles + super-element cycles) with the Karlsson cut (gpu_plan.cpp) ----------


def _aos_soa_check(shape, esize):
    x = rand_tensor(shape, esize)
    orig = x.clone()
    torch_inplace.aos_to_soa_(x)
    assert x.shape == orig.mT.shape and same_bytes(x, orig.mT), (shape, esize)
    torch_inplace.soa_to_aos_(x)
    assert x.shape == orig.shape and same_bytes(x, orig), (shape, esize)
    # and the SoA -> AoS direction from a fresh SoA tensor
    y = rand_tensor(orig.mT.shape, esize)
    want = y.mT.clone(memory_format=torch.contiguous_format)
    torch_inplace.soa_to_aos_(y)
    assert same_bytes(y, want), (tuple(orig.mT.shape), esize)


@pytest.mark.parametrize("knobs", [{}, NO_ONCHIP])
@pytest.mark.parametrize("esize", [1, 2, 4, 8, 16])
def test_skinny_every_field_count(esize, knobs):
    # Every F in 2..64; N divisible by the planner's k (4096 * 3), not divisible, prime, and below one tile.
    with env(**knobs):
        for f in range(2, 65):
            for n in (12288, 12288 + 5 * f + 1, 10007, 131 + f, 7):
                if n <= f:
                    continue
                _aos_soa_check((n, f), esize)


@pytest.mark.parametrize("knobs", [{}, NO_ONCHIP, dict(TORCH_INPLACE_GPU_SKINNY="cut", **NO_ONCHIP),
                                   dict(TORCH_INPLACE_GPU_SKINNY_BYTES="256", **NO_ONCHIP),
                                   dict(TORCH_INPLACE_GPU_SKINNY_BYTES="2048", **NO_ONCHIP),
                                   dict(TORCH_INPLACE_GPU_SKINNY_TILEVEC="0", **NO_ONCHIP),
                                   dict(TORCH_INPLACE_GPU_SKINNY_TILEVEC="vec", **NO_ONCHIP)])
def test_skinny_batched_and_knobs(knobs):
    # The tile pass: the hybrid kernel by default where a tile row of C fields is not a multiple of 8 words (4- and
    # 8-byte elements), the vec kernel with TILEVEC=vec (and for the other rows), element accesses with TILEVEC=0.
    rng = random.Random(7)
    with env(**knobs):
        for esize in (1, 2, 4, 8, 16):
            for shape in [(3, 4096, 5), (2, 12289, 64), (4, 1000, 3), (2, 99991, 2), (5, 517, 31), (1, 2, 8191, 17)]:
                _aos_soa_check(shape, esize)
            for _ in range(6):
                shape = (rng.randrange(1, 4), rng.randrange(65, 300000), rng.randrange(2, 65))
                _aos_soa_check(shape, esize)


def test_skinny_plan_explains():
    p = torch_inplace.plan((3000017, 7), torch.float32, "cuda")
    assert p.algorithm == "skinny" and "cut" in p.explanation, p.explanation
    with env(**NO_ONCHIP):
        p = torch_inplace.plan((4096 * 25, 7), torch.float32, "cuda")
    assert p.algorithm == "skinny" and "two passes" in p.explanation, p.explanation


@pytest.mark.parametrize("esize", [1, 2, 4, 8, 16])
def test_skinny_forced_short_sides_over_64(esize):
    # Sequence 2.1 forced for short sides 65..1024 (auto while a row holds <= 1600 bytes): narrower k x F tiles,
    # super-elements over 2 KiB in slices where k divides N, the cut where it does not, both directions, batches.
    rng = random.Random(77 + esize)
    for F in (65, 100, 129, 200, 333, 512, 1024):
        N = rng.randint(F + 1, 6000)
        for shape in ((N, F), (F, N), (2, N, F)):
            check(shape, esize, "skinny")
    for F in (65, 97):
        check((F * 256 * 3, F), esize, "skinny")  # k | N
    with pytest.raises(RuntimeError, match=r"(?s)^torch_inplace\.plan: .*skinny"):
        torch_inplace.plan((3000, 1025), DTYPES[esize], "cuda", algorithm="skinny")
    with env(TORCH_INPLACE_GPU_SKINNY_MAX_BYTES="100000", **NO_ONCHIP):
        p = torch_inplace.plan((300, 100003), DTYPES[esize], "cuda")
        assert p.algorithm == "skinny" and "short side 300 (SoA -> AoS)" in p.explanation, p.explanation
        check((200, 20011), esize)
    # auto past 64 elements while a row of the short side holds at most 1600 bytes
    F = 1600 // esize if esize > 1 else 1000
    assert torch_inplace.plan((100003, F), DTYPES[esize], "cuda").algorithm == "skinny"
    assert torch_inplace.plan((100003, 2048 // esize + 1), DTYPES[esize], "cuda").algorithm != "skinny"


def test_skinny_ahead_of_catanzaro_off_the_grid():
    # Short sides past 1600 bytes (up to 1024 elements) take sequence 2.1 where Catanzaro's column panels would be
    # narrower than 128 bytes in either direction that keeps its rows in shared memory; where they are full,
    # Catanzaro stays; TORCH_INPLACE_GPU_SKINNY_OFF_GRID=0 turns it off.
    for shape in [(460000, 700), (700, 460000)]:
        p = torch_inplace.plan(shape, torch.float32, "cuda")
        assert p.algorithm == "skinny" and "ahead of Catanzaro" in p.explanation, p.explanation
        check(shape, 4)
    assert torch_inplace.plan((66520, 519), torch.float32, "cuda").algorithm in ("c2r", "r2c")
    with env(TORCH_INPLACE_GPU_SKINNY_OFF_GRID="0"):
        assert torch_inplace.plan((460000, 700), torch.float32, "cuda").algorithm in ("c2r", "r2c")


def test_catanzaro_direction_off_the_grid():
    # The first direction's columns too long for full column panels, the other's panels full with its rows in a
    # cluster: the other direction goes first; TORCH_INPLACE_GPU_DIRECTION_GRID=0 keeps the short-side order.
    for shape, algorithm in [((300007, 1500), "r2c"), ((1500, 300007), "c2r"), ((167726, 795), "r2c")]:
        p = torch_inplace.plan(shape, torch.float32, "cuda")
        assert p.algorithm == algorithm and "column panels would be narrower" in p.explanation, (shape, p.explanation)
        check(shape, 4)
    with env(TORCH_INPLACE_GPU_DIRECTION_GRID="0"):
        assert torch_inplace.plan((300007, 1500), torch.float32, "cuda").algorithm == "c2r"


def test_skinny_over_2_31_elements():
    f = 37
    n = (1 << 31) // f + 4099
    x = rand_tensor((n, f), 1)
    orig = x.clone()
    torch_inplace.aos_to_soa_(x)
    assert torch.equal(x, orig.mT.contiguous())
    torch_inplace.soa_to_aos_(x)
    assert torch.equal(x, orig)
    del x, orig
    torch.cuda.empty_cache()


# ---- on chip: tensors that fit in shared memory, one cooperative kernel (kernels/transpose/onchip.cuh) ---------


def _onchip_fits(shape, esize):
    try:
        return torch_inplace.plan(shape, DTYPES[esize], "cuda", algorithm="onchip").algorithm == "onchip"
    except RuntimeError:
        return False


@pytest.mark.parametrize("esize", [1, 2, 4, 8, 16])
def test_onchip_forced_random_shapes(esize):
    rng = random.Random(500 + esize)
    ran = 0
    for shape in random_shapes(rng, 160) + [(2, 2), (3, 1000, 7), (1000, 3, 5), (4000, 64), (64, 4000), (65, 129),
                                            (4099, 2), (2, 4099), (97, 89), (5, 3, 130, 67)]:
        if _onchip_fits(shape, esize):
            check(shape, esize, "onchip")
            ran += 1
    assert ran > 100


def test_onchip_is_auto_for_small_tensors_and_explains():
    for shape in [(87905, 6), (6, 87905), (1000, 1000), (3, 999, 1001), (20998, 28)]:
        p = torch_inplace.plan(shape, torch.float32, "cuda")
        assert p.algorithm == "onchip" and p.scratch_bytes == 0, p.explanation
        assert "shared memory" in p.explanation and "cooperative" in p.explanation
    # Past the GPU's shared memory the multi-pass engines take over.
    p = torch_inplace.plan((10007, 10009), torch.float32, "cuda")
    assert p.algorithm != "onchip"
    with env(**NO_ONCHIP):
        assert torch_inplace.plan((1000, 1000), torch.float32, "cuda").algorithm == "square"


def test_onchip_capacity_edge():
    # The largest square fp32 tensor the planner puts on chip, and the next size up, both transposed right.
    lo, hi = 64, 8192
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _onchip_fits((mid, mid + 1), 4) else (lo, mid)
    assert lo > 1000, lo  # about 28 MB of shared memory on an H100/H200
    for s in (lo, hi):
        check((s, s + 1), 4)
    assert torch_inplace.plan((lo, lo + 1), torch.float32, "cuda").algorithm == "onchip"
    assert torch_inplace.plan((hi, hi + 1), torch.float32, "cuda").algorithm != "onchip"


def test_onchip_refuses_what_does_not_fit():
    x = rand_tensor((10007, 10009), 4)
    before = x.clone()
    with pytest.raises(RuntimeError, match="(?s)^transpose_: .*onchip"):
        torch_inplace.transpose_(x, algorithm="onchip")
    assert same_bytes(x, before)


def test_onchip_many_small_matrices_and_streams():
    # A batch of tiny matrices (many tiles per block), and two streams each running on-chip plans.
    for shape in [(20000, 3, 5), (4096, 8, 8), (300, 31, 33), (7, 1, 5, 9)]:
        for esize in (1, 4, 16):
            check(shape, esize)
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    xs = [rand_tensor((700, 900), 4) for _ in range(4)]
    wants = [x.mT.contiguous() for x in xs]
    torch.cuda.synchronize()
    for k, x in enumerate(xs):
        with torch.cuda.stream(s1 if k % 2 else s2):
            torch.ops.inplace._transpose_data_(x)
    torch.cuda.synchronize()
    for x, w in zip(xs, wants):
        assert same_bytes(x.view(w.shape), w)


def test_onchip_waves_for_batches_of_small_matrices():
    # A batch over the GPU's shared memory whose matrices fit one at a time: on chip in waves of whole matrices
    # (the waves evened out, the last one partial where the batch does not divide), for every element size; the
    # same bytes as the multi-pass engines (TORCH_INPLACE_GPU_ONCHIP_WAVES=0). Square batches keep the tile-pair
    # swaps unless on chip is forced.
    for shape, esize in [((41, 768, 1497), 4), ((7, 1200, 1001), 4), ((5, 1500, 1001), 4), ((9, 2000, 1999), 1),
                         ((3, 7, 1000, 1001), 2), ((13, 1000, 997), 8), ((40, 300, 301), 16), ((5000, 31, 67), 4),
                         ((300, 20, 2000), 4), ((201, 40, 1000), 8)]:
        p = torch_inplace.plan(shape, DTYPES[esize], "cuda")
        assert p.algorithm == "onchip" and "waves of" in p.explanation and p.scratch_bytes == 0, (shape, p.explanation)
        check(shape, esize)
    with env(TORCH_INPLACE_GPU_ONCHIP_WAVES="0"):
        p = torch_inplace.plan((41, 768, 1497), torch.float32, "cuda")
        assert p.algorithm != "onchip", p.explanation
        check((7, 1200, 1001), 4)
    assert torch_inplace.plan((64, 1024, 1024), torch.float32, "cuda").algorithm == "square"
    check((40, 1024, 1024), 4, "onchip")


def test_column_engines_explain_and_agree():
    # Large shapes take the whole-GPU column panels; the cluster engine stays reachable and gives the same bytes.
    # The panels' gather for the column shuffles steps its indices linearly, one instantiation per lanes-per-row
    # count (4, 8, 16, 32; TORCH_INPLACE_GPU_GRID_ROW_LANES), with and without cp.async;
    # TORCH_INPLACE_GPU_GRID_GATHER=general keeps the general gather. TORCH_INPLACE_GPU_GRID_SPLIT=q gives each block
    # 1/q of a panel's columns and q times the rows (column shuffles only: plans with a rotation step keep q = 1).
    p = torch_inplace.plan((13441, 9721), torch.float32, "cuda")
    assert p.algorithm == "c2r" and "whole GPU" in p.explanation, p.explanation
    with env(TORCH_INPLACE_GPU_GRID_SPLIT="2"):
        p = torch_inplace.plan((13441, 9721), torch.float32, "cuda")
        assert "1/2 of the panel's columns" in p.explanation, p.explanation
    for shape, esize in [((4099, 4093), 4), ((3001, 5000), 8), ((2, 3000, 1999), 2), ((6001, 1200), 16),
                         ((1200, 6000), 1), ((20011, 997), 4)]:
        for knobs in ({}, dict(TORCH_INPLACE_GPU_COLUMNS="cluster"), dict(TORCH_INPLACE_GPU_COLUMNS="grid"),
                      dict(TORCH_INPLACE_GPU_COLUMNS="grid", TORCH_INPLACE_GPU_GRID_BUFFERS="1"),
                      dict(TORCH_INPLACE_GPU_COLUMNS="grid", TORCH_INPLACE_GPU_GRID_BUFFERS="2"),
                      dict(TORCH_INPLACE_GPU_COLUMNS="grid", TORCH_INPLACE_GPU_GRID_ASYNC="1"),
                      dict(TORCH_INPLACE_GPU_COLUMNS="grid", TORCH_INPLACE_GPU_GRID_ASYNC="0"),
                      dict(TORCH_INPLACE_GPU_COLUMNS="grid", TORCH_INPLACE_GPU_GRID_GATHER="general"),
                      dict(TORCH_INPLACE_GPU_COLUMNS="grid", TORCH_INPLACE_GPU_GRID_GATHER="general",
                           TORCH_INPLACE_GPU_GRID_ASYNC="1"),
                      dict(TORCH_INPLACE_GPU_COLUMNS="grid", TORCH_INPLACE_GPU_GRID_ROW_LANES="4"),
                      dict(TORCH_INPLACE_GPU_COLUMNS="grid", TORCH_INPLACE_GPU_GRID_ROW_LANES="8",
                           TORCH_INPLACE_GPU_GRID_ASYNC="1"),
                      dict(TORCH_INPLACE_GPU_COLUMNS="grid", TORCH_INPLACE_GPU_GRID_ROW_LANES="32"),
                      dict(TORCH_INPLACE_GPU_COLUMNS="grid", TORCH_INPLACE_GPU_GRID_ROW_LANES="16",
                           TORCH_INPLACE_GPU_GRID_BUFFERS="2", TORCH_INPLACE_GPU_GRID_ASYNC="0"),
                      dict(TORCH_INPLACE_GPU_COLUMNS="grid", TORCH_INPLACE_GPU_GRID_SPLIT="2"),
                      dict(TORCH_INPLACE_GPU_COLUMNS="grid", TORCH_INPLACE_GPU_GRID_SPLIT="3",
                           TORCH_INPLACE_GPU_GRID_ASYNC="1"),
                      dict(TORCH_INPLACE_GPU_COLUMNS="grid", TORCH_INPLACE_GPU_GRID_SPLIT="2",
                           TORCH_INPLACE_GPU_GRID_ASYNC="0", TORCH_INPLACE_GPU_GRID_BUFFERS="2"),
                      dict(TORCH_INPLACE_GPU_COLUMNS="grid", TORCH_INPLACE_GPU_GRID_SPLIT="4",
                           TORCH_INPLACE_GPU_GRID_ASYNC="1", TORCH_INPLACE_GPU_GRID_BUFFERS="2")):
            with env(**knobs, **NO_ONCHIP):
                for algorithm in ("c2r", "r2c"):
                    check(shape, esize, algorithm)


def test_catanzaro_direction_by_measurement():
    # One fp32 matrix with coprime sides up to 20000: C2R unless tall with a short side under 6000 (measured on an
    # H200); otherwise, and with TORCH_INPLACE_GPU_DIRECTION=short, the row shuffle's short side decides.
    with env(**NO_ONCHIP):
        assert torch_inplace.plan((9241, 12392), torch.float32, "cuda").algorithm == "c2r"
        assert torch_inplace.plan((13441, 9721), torch.float32, "cuda").algorithm == "c2r"
        p = torch_inplace.plan((12391, 5003), torch.float32, "cuda")
        assert p.algorithm == "r2c" and "fewer than 6000 cols" in p.explanation, p.explanation
        assert torch_inplace.plan((9241, 12392), torch.float64, "cuda").algorithm == "r2c"
        assert torch_inplace.plan((9240, 12392), torch.float32, "cuda").algorithm == "r2c"  # gcd 8
        assert torch_inplace.plan((183377, 183383), torch.float32, "cuda").algorithm == "r2c"  # beyond the measured
    with env(TORCH_INPLACE_GPU_DIRECTION="short", **NO_ONCHIP):
        assert torch_inplace.plan((9241, 12392), torch.float32, "cuda").algorithm == "r2c"
        assert torch_inplace.plan((12391, 5003), torch.float32, "cuda").algorithm == "c2r"
    for shape in [(1201, 1999), (2003, 1201), (1999, 1201)]:
        with env(**NO_ONCHIP):
            check(shape, 4)


FUSED_SHAPES = [(6, 4), (4, 6), (12, 18), (18, 12), (1002, 1500), (1500, 1002), (3000, 4998), (4998, 3000),
                (2048, 1536), (8198, 8186), (4099 * 3, 2050 * 3), (1000, 3000),
                # C2R staged by runs: runs of 511 columns whose addresses agree mod 16 bytes in every other run (4100 x
                # 1022), and 16 runs of 64 columns per row (11216 x 1024: a warp per run)
                (4100, 1022), (1022, 4100), (11216, 1024),
                # gcd 5 and 7: C2R row kernels on blocks of 480 / 448 threads (960 / 896 with 1024), which c divides
                (5015, 3505), (8407, 4200)]


@pytest.mark.parametrize("esize", [1, 2, 4, 8, 16])
def test_rotation_fused_into_row_shuffle(esize):
    # gcd(m, n) > 1: the C2R pre-rotation (R2C post-rotation) runs inside the row shuffle; bands of one row
    # (TORCH_INPLACE_GPU_ROW_BLOCK_BYTES=1) give many chunks and blocks waiting on their neighbours. The unfused
    # steps (TORCH_INPLACE_GPU_FUSE_ROTATION=0) stay reachable and agree. Two band buffers (the next band staged
    # while the current one is shuffled) are forced on and off (TORCH_INPLACE_GPU_FUSE_BUFFERS). C2R stages its rows
    # by runs of b columns (vector copies) where they are long, and element by element with
    # TORCH_INPLACE_GPU_FUSE_STAGE=elements. Where c divides the row kernel's block size (gcd 2, 16, 512 here) the C2R
    # gather walk drops its c terms; TORCH_INPLACE_GPU_ROW_WALK=general keeps the general walk, fused and unfused.
    # Where c does not divide it (gcd 3, 5, 6, 7 here) the C2R row kernels take a block size that c divides;
    # TORCH_INPLACE_GPU_ROW_WALK=power2 keeps the power-of-two blocks.
    for knobs in ({}, dict(TORCH_INPLACE_GPU_ROW_BLOCK_BYTES="1"), dict(TORCH_INPLACE_GPU_FUSE_ROTATION="0"),
                  dict(TORCH_INPLACE_GPU_FUSE_BUFFERS="2"), dict(TORCH_INPLACE_GPU_FUSE_BUFFERS="1"),
                  dict(TORCH_INPLACE_GPU_FUSE_BUFFERS="2", TORCH_INPLACE_GPU_ROW_BLOCK_BYTES="1"),
                  dict(TORCH_INPLACE_GPU_FUSE_STAGE="elements"),
                  dict(TORCH_INPLACE_GPU_FUSE_STAGE="elements", TORCH_INPLACE_GPU_ROW_BLOCK_BYTES="1"),
                  dict(TORCH_INPLACE_GPU_ROW_WALK="general"),
                  dict(TORCH_INPLACE_GPU_ROW_WALK="general", TORCH_INPLACE_GPU_FUSE_ROTATION="0"),
                  dict(TORCH_INPLACE_GPU_ROW_WALK="power2"),
                  dict(TORCH_INPLACE_GPU_ROW_WALK="power2", TORCH_INPLACE_GPU_FUSE_ROTATION="0")):
        with env(**knobs, **NO_ONCHIP):
            for shape in FUSED_SHAPES:
                if math.prod(shape) * esize > (1 << 28):
                    continue
                for algorithm in ("c2r", "r2c"):
                    check(shape, esize, algorithm)


def test_rotation_fused_explains_and_wide_rows():
    with env(TORCH_INPLACE_GPU_CUT="0"):  # near-square shapes with gcd > 1: Karlsson's cut would take them
        _rotation_fused_explains_and_wide_rows()


def _rotation_fused_explains_and_wide_rows():
    with env(**NO_ONCHIP):
        p = torch_inplace.plan((8198, 8186), torch.float32, "cuda")
        assert "pre-rotation (gcd 2) fused" in p.explanation, p.explanation
        p = torch_inplace.plan((8186, 8198), torch.float32, "cuda")
        assert "post-rotation (gcd 2) fused" in p.explanation, p.explanation
        # rows of 64 KB: head and band take more than half an SM's shared memory, so two band buffers
        p = torch_inplace.plan((8198, 8186), torch.float64, "cuda")
        assert "two band buffers" in p.explanation, p.explanation
        assert "two band buffers" not in torch_inplace.plan((8198, 2050), torch.float32, "cuda").explanation
        # batched, or c - 1 rows that do not fit twice in shared memory: the rotation keeps its own step
        for shape in [(2, 1002, 1500), (3000, 1000)]:
            p = torch_inplace.plan(shape, torch.float32, "cuda")
            assert "fused" not in p.explanation, (shape, p.explanation)
    with env(TORCH_INPLACE_GPU_FUSE_ROTATION="0", **NO_ONCHIP):
        assert "fused" not in torch_inplace.plan((8198, 8186), torch.float32, "cuda").explanation
    # the fused kernel's flags take scratch; under a zero workspace limit the planner falls back to the separate
    # rotation (no scratch with the whole-GPU column panels)
    fused = torch_inplace.plan((8198, 8186), torch.float32, "cuda")
    assert fused.scratch_bytes > 0
    with torch_inplace.workspace_limit(0):
        p0 = torch_inplace.plan((8198, 8186), torch.float32, "cuda")
        assert p0.scratch_bytes == 0 and "fused" not in p0.explanation, p0.explanation
        check((8198, 8186), 4)
    # rows of 64 KB: two bands fill more than half of an SM's shared memory, so 1024 threads per block
    for shape, esize in [((20000, 8002), 8), ((20000, 16002), 4)]:
        with env(**NO_ONCHIP):
            assert "fused" in torch_inplace.plan(shape, DTYPES[esize], "cuda").explanation
            check(shape, esize)
            check(shape[::-1], esize)


@pytest.mark.parametrize("esize", [1, 2, 4, 8, 16])
def test_row_shuffle_unaligned_rows(esize):
    # The shared-memory row shuffle stages a block's rows with 16-byte copies from wherever they start
    # (stage_contiguous in kernels/transpose/catanzaro.cuh): with rows of an odd length and one row per block
    # (TORCH_INPLACE_GPU_ROW_BLOCK_BYTES=1) the blocks' first rows start at every offset mod 16 bytes. gcd 1 (the
    # c == 1 row walks), gcd > 1 (the R2C post-rotation fused into the row shuffle stages that way too), rows
    # longer and shorter than a block, one and several rows per block.
    shapes = [(300, 1031), (1031, 300), (1200, 1030), (1030, 1200), (389, 211), (211, 389), (64 * 9, 66 * 5),
              (1001, 1003), (1003, 1001)]
    for knobs in ({}, dict(TORCH_INPLACE_GPU_ROW_BLOCK_BYTES="1")):
        with env(**knobs, **NO_ONCHIP):
            for shape in shapes:
                for algorithm in ("c2r", "r2c"):
                    check(shape, esize, algorithm)


@pytest.mark.parametrize("min_blocks", ["3", "4"])
@pytest.mark.parametrize("esize", [4, 8])
def test_row_kernels_register_bound(esize, min_blocks):
    # TORCH_INPLACE_GPU_ROW_MIN_BLOCKS: the shared-memory row kernels (gcd 1, fused rotations, the unfused c > 1
    # shuffles, blocks of 512 / 480 / 448 threads) compiled for 3 or 4 blocks per SM (fewer registers, spills where
    # the kernel needs more); 1024-thread blocks keep the wide bound. Every result against the reference.
    shapes = FUSED_SHAPES + [(1201, 1999), (1999, 1201), (300, 1031), (1031, 300), (4903, 11468), (11468, 4903)]
    for knobs in ({}, dict(TORCH_INPLACE_GPU_FUSE_ROTATION="0"), dict(TORCH_INPLACE_GPU_ROW_BLOCK_BYTES="1")):
        with env(TORCH_INPLACE_GPU_ROW_MIN_BLOCKS=min_blocks, **knobs, **NO_ONCHIP):
            for shape in shapes:
                if math.prod(shape) * esize > (1 << 28):
                    continue
                for algorithm in ("c2r", "r2c"):
                    check(shape, esize, algorithm)


# ---- on chip, skinny kernel: whole rows / columns in 16-byte chunks (kernels/transpose/onchip_skinny.cuh) --------


@pytest.mark.parametrize("esize", [1, 2, 4, 8, 16])
def test_onchip_skinny_forced_random_shapes(esize):
    # Every shape whose on-chip tiles are whole rows or whole columns, through the skinny kernel (forced wherever it
    # applies): 1-64 fields, runs that start and end anywhere in a 16-byte chunk, blocks over several matrices,
    # AoS -> SoA and SoA -> AoS.
    rng = random.Random(900 + esize)
    shapes = []
    for k in range(120):
        f = rng.randint(1, 64)
        length = rng.randint(1, 30000) if k % 3 else rng.randint(1, 300)
        b = rng.choice([1, 1, 2, 3, 7, 64])
        sh = (length, f) if k % 2 else (f, length)
        shapes.append(sh if b == 1 else (b,) + sh)
    shapes += [(2073600, 3), (3, 2073600), (8, 50176, 3), (8, 3, 50176), (1, 17), (17, 1), (16, 16), (5, 1, 9)]
    ran = 0
    with env(TORCH_INPLACE_GPU_ONCHIP_SKINNY="1"):
        for shape in shapes:
            if not _onchip_fits(shape, esize):
                continue
            p = torch_inplace.plan(shape, DTYPES[esize], "cuda", algorithm="onchip")
            if "skinny kernel" not in p.explanation:
                continue
            check(shape, esize, "onchip")
            ran += 1
    assert ran > 60, ran


def test_onchip_skinny_is_auto_for_images_and_explains():
    # HWC <-> CHW images (and batches of them, in waves past the shared memory) take the skinny kernel; the same
    # bytes as the element kernel (TORCH_INPLACE_GPU_ONCHIP_SKINNY=0).
    for shape, esize in [((1080 * 1920, 3), 1), ((3, 1080 * 1920), 1), ((256, 224 * 224, 3), 1), ((64, 3, 224 * 224), 2),
                         ((1080 * 1920, 3), 4), ((4, 1000 * 1000), 4)]:
        p = torch_inplace.plan(shape, DTYPES[esize], "cuda")
        assert p.algorithm == "onchip" and "16-byte chunks" in p.explanation, (shape, p.explanation)
        check(shape, esize)
        with env(TORCH_INPLACE_GPU_ONCHIP_SKINNY="0"):
            assert "16-byte chunks" not in torch_inplace.plan(shape, DTYPES[esize], "cuda").explanation
            check(shape, esize)
    assert "waves of" in torch_inplace.plan((1024, 224 * 224, 3), torch.uint8, "cuda").explanation
    # Where the element kernel is as fast or faster: small 4-byte tensors, tiles of whole tiny matrices, 16 bytes.
    for shape, esize in [((55522, 5), 4), ((4096, 8, 8), 4), ((10000, 3), 16)]:
        p = torch_inplace.plan(shape, DTYPES[esize], "cuda")
        assert p.algorithm == "onchip" and "16-byte chunks" not in p.explanation, (shape, p.explanation)


def test_onchip_skinny_public_ops_roundtrip():
    # aos_to_soa_ / soa_to_aos_ on a batch of RGB images, there and back, through the skinny kernel.
    x = torch.randint(0, 256, (16, 240 * 320, 3), dtype=torch.uint8, device="cuda")
    want = x.mT.contiguous()
    y = x.clone()
    torch_inplace.aos_to_soa_(y)
    assert y.shape == (16, 3, 240 * 320) and torch.equal(y, want)
    torch_inplace.soa_to_aos_(y)
    assert torch.equal(y, x)


def _stash_range():
    """Tensor bytes just past this GPU's shared memory and within it plus the register stash (128 KiB a block, one
    block per SM): about 31-46 MB on an H100 / H200."""
    props = torch.cuda.get_device_properties(0)
    smem = props.multi_processor_count * (props.shared_memory_per_block_optin - 1024)
    return 1.03 * smem, smem + 0.97 * props.multi_processor_count * 128 * 1024


def _stash_plan(shape, esize):
    p = torch_inplace.plan(shape, DTYPES[esize], "cuda")
    return p.algorithm == "onchip" and "register stash" in p.explanation


def test_onchip_stash_auto_shapes():
    # Skinny tensors just past the shared memory (about 30 MB on an H100 / H200) go on chip with the register stash:
    # AoS <-> SoA, 1080p RGBA fp32 and 4K RGBA uint8 images, fp64 records, a batch in waves; both directions.
    shapes = [((876267, 13), 4), ((13, 876267), 4), ((1920 * 1080, 4), 4), ((4, 1920 * 1080), 4),
              ((600000, 9), 8), ((9, 600000), 8), ((3840 * 2160, 4), 1), ((4, 3840 * 2160), 1),
              ((3, 1920 * 1080, 4), 4), ((2, 4, 1920 * 1080 + 5), 4), ((10000000, 2), 2), ((2, 10000000), 2),
              ((700001, 3), 16), ((3, 700001), 16)]
    ran = 0
    for shape, esize in shapes:
        if not _stash_plan(shape, esize):  # a GPU with another shared memory / SM count
            continue
        check(shape, esize)
        ran += 1
    props = torch.cuda.get_device_properties(0)
    if props.multi_processor_count >= 132 and props.shared_memory_per_block_optin >= 227 * 1024:
        assert ran == len(shapes), ran
    # Without it (the knob) the same tensors take the multi-pass engines.
    with env(TORCH_INPLACE_GPU_ONCHIP_STASH="0"):
        p = torch_inplace.plan((876267, 13), torch.float32, "cuda")
        assert "register stash" not in p.explanation


def test_onchip_stash_random_shapes():
    # Random skinny shapes of 31-46 MB on an H100 / H200 (_stash_range; 1-64 fields, every element size, both
    # directions, batches): every one that plans the stash is checked against x.mT.
    rng = random.Random(4242)
    lo, hi = _stash_range()
    ran = 0
    for k in range(40):
        esize = rng.choice([1, 2, 4, 4, 8, 16])
        f = rng.randint(1, 64)
        b = rng.choice([1, 1, 1, 2])
        target = rng.uniform(lo, hi) / b
        length = max(1024, int(target / (f * esize)))
        sh = (length, f) if k % 2 else (f, length)
        shape = sh if b == 1 else (b,) + sh
        if not _stash_plan(shape, esize):
            continue
        check(shape, esize)
        ran += 1
    assert ran >= 10, ran


def test_onchip_stash_for_general_shapes():
    # Matrices that are not skinny, just past the shared memory, go on chip through the element kernel's register
    # stash (every element size, batches in waves, near-squares); squares and shapes where one side divides the other
    # keep the tile-pair swaps and the tiled sequences, which ran faster there.
    shapes = [((8862, 1083), 4), ((1083, 8862), 4), ((1160, 4051), 8), ((4363, 8316), 1), ((3645, 4628), 2),
              ((2, 3080, 3072), 4), ((2853, 2835), 4), ((67854, 122), 4), ((1201, 1600), 16), ((4096, 2500), 4)]
    ran = 0
    for shape, esize in shapes:
        p = torch_inplace.plan(shape, DTYPES[esize], "cuda")
        if not (p.algorithm == "onchip" and "register stash" in p.explanation):
            continue
        assert "16-byte chunks" not in p.explanation, p.explanation
        check(shape, esize)
        ran += 1
    props = torch.cuda.get_device_properties(0)
    if props.multi_processor_count >= 132 and props.shared_memory_per_block_optin >= 227 * 1024:
        assert ran == len(shapes), ran
    for shape in [(3000, 3000), (2048, 4096), (3, 2048, 4096)]:
        assert "register stash" not in torch_inplace.plan(shape, torch.float32, "cuda").explanation
    rng = random.Random(777)
    lo, hi = _stash_range()
    ran = 0
    for k in range(30):
        esize = rng.choice([1, 2, 4, 8, 16])
        nbytes = rng.uniform(lo, hi)
        m = rng.randint(300, 20000)
        n = max(65, int(nbytes / (m * esize)))
        shape = (m, n)
        p = torch_inplace.plan(shape, DTYPES[esize], "cuda")
        if p.algorithm == "onchip" and "register stash" in p.explanation:
            check(shape, esize)
            ran += 1
    assert ran >= 8, ran


def test_onchip_stash_public_ops_and_graph():
    # aos_to_soa_ / soa_to_aos_ there and back on a 1080p RGBA fp32 image, then the same plan captured in a CUDA graph.
    shape = (1920 * 1080, 4)
    if not _stash_plan(shape, 4):
        pytest.skip("this GPU holds the image in shared memory alone, or not on chip at all")
    x = torch.randn(shape, device="cuda")
    y = x.clone()
    torch_inplace.aos_to_soa_(y)
    assert torch.equal(y, x.mT.contiguous())
    torch_inplace.soa_to_aos_(y)
    assert torch.equal(y, x)
    g, _ = graphed(lambda: torch.ops.inplace._transpose_data_(y), warmups=1)
    for _ in range(2):
        src = torch.randn(shape, device="cuda")
        y.copy_(src)
        g.replay()
        assert torch.equal(y.view(4, -1), src.mT)


@pytest.mark.parametrize("shape, esize", [((1080 * 1920, 3), 1), ((3, 1080 * 1920), 1), ((1000000, 4), 4)])
def test_onchip_skinny_cuda_graph(shape, esize):
    # The skinny on-chip kernel is a cooperative launch like the element kernel: captured once, replayed on fresh data.
    assert "16-byte chunks" in torch_inplace.plan(shape, DTYPES[esize], "cuda").explanation
    x = rand_tensor(shape, esize)
    _check_replays(graphed(lambda: torch.ops.inplace._transpose_data_(x))[0], x, shape, esize, replays=2)
