"""transpose_, aos_to_soa_, soa_to_aos_: correctness on every element size and shape class, and refusals."""
import random

import pytest
import torch

import torch_inplace
from conftest import ALL_DTYPES, DTYPE_BY_SIZE, devices, num_threads, rand, ref_transpose

OPS = {
    "transpose_": torch.ops.inplace.transpose_,
    "aos_to_soa_": torch.ops.inplace.aos_to_soa_,
    "soa_to_aos_": torch.ops.inplace.soa_to_aos_,
}


def check_inplace(x, op=torch.ops.inplace.transpose_, **kw):
    ref = ref_transpose(x)
    ptr, storage = x.data_ptr(), x.untyped_storage().nbytes()
    out = op(x, **kw)
    assert out is x
    assert x.data_ptr() == ptr and x.untyped_storage().nbytes() == storage
    assert x.is_contiguous() and x.shape == ref.shape
    torch.testing.assert_close(x, ref, rtol=0, atol=0, equal_nan=True)


def test_issue_example():
    t = torch.arange(6.0).reshape(2, 3)
    p = t.data_ptr()
    torch.ops.inplace.transpose_(t)
    assert t.shape == (3, 2) and t.data_ptr() == p and t.is_contiguous() and t.tolist() == [[0, 3], [1, 4], [2, 5]]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("esize", sorted(DTYPE_BY_SIZE))
def test_every_shape_up_to_64(esize, device):
    dtype = DTYPE_BY_SIZE[esize]
    g = torch.Generator().manual_seed(esize)
    for m in range(1, 65):
        for n in range(1, 65):
            check_inplace(rand((m, n), dtype, device, g))


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("algorithm", ["c2r", "r2c", "square", "skinny"])
def test_forced_algorithms_small(algorithm, device):
    # Catanzaro (either direction) takes every shape, the square path the squares, the skinny path every
    # non-square (both sides here are within its field limit); the planner refuses exactly the rest.
    takes = {"c2r": lambda m, n: True, "r2c": lambda m, n: True, "square": lambda m, n: m == n,
             "skinny": lambda m, n: m != n}[algorithm]
    g = torch.Generator().manual_seed(7)
    ran = 0
    for m in range(2, 41):
        for n in range(2, 41):
            if not takes(m, n):
                want = rf"^torch_inplace\.plan: algorithm '{algorithm}' cannot transpose a {m} x {n} "
                with pytest.raises(RuntimeError, match=want):
                    torch_inplace.plan((m, n), torch.float32, device, algorithm=algorithm)
                continue
            assert torch_inplace.plan((m, n), torch.float32, device, algorithm=algorithm).algorithm == algorithm
            check_inplace(rand((m, n), torch.float32, device, g), algorithm=algorithm)
            ran += 1
    assert ran == sum(takes(m, n) for m in range(2, 41) for n in range(2, 41))


def test_cpu_tiled_forced_small():
    """The CPU three-stage tiled path (Karlsson; plan 'tiled32') forced on every small shape it takes: blocks of
    m x n with m | rows, n | cols, so the grids, bands and block cycles of many geometries run (M' or N' = 1
    included), on several element sizes."""
    g = torch.Generator().manual_seed(11)
    sizes = sorted(DTYPE_BY_SIZE)
    ran = 0
    for m in range(2, 97):
        for n in range(2, 97):
            es = sizes[(m + n) % len(sizes)]
            try:
                p = torch_inplace.plan((m, n), DTYPE_BY_SIZE[es], "cpu", algorithm="tiled32")
            except RuntimeError as e:
                assert "cannot" in str(e)
                continue
            assert p.algorithm == "tiled32"
            check_inplace(rand((m, n), DTYPE_BY_SIZE[es], "cpu", g), algorithm="tiled32")
            ran += 1
    assert ran > 1000


def test_cpu_cut_forced_small():
    """The CPU cut path (a few rows and / or columns set aside around the tiled path) forced on the small shapes
    it takes, every element size: rows only, columns only, both."""
    g = torch.Generator().manual_seed(13)
    sizes = sorted(DTYPE_BY_SIZE)
    ran = {"rows": 0, "cols": 0, "both": 0}
    for m in range(2, 140):
        for n in range(2, 140, 3):
            es = sizes[(m * 7 + n) % len(sizes)]
            try:
                p = torch_inplace.plan((m, n), DTYPE_BY_SIZE[es], "cpu", algorithm="cut")
            except RuntimeError as e:
                assert "cannot" in str(e)
                continue
            kind = "both" if "of either side" in p.explanation else ("rows" if "of the rows" in p.explanation else "cols")
            assert kind != "cols" or "of the columns" in p.explanation, p.explanation
            ran[kind] += 1
            check_inplace(rand((m, n), DTYPE_BY_SIZE[es], "cpu", g), algorithm="cut")
    assert min(ran.values()) > 20, ran


CPU_ALGORITHMS = ["square", "c2r", "r2c", "skinny", "tiled32", "cut", "onchip"]


@pytest.mark.parametrize("threads", [3, 8])
def test_cpu_every_algorithm_on_several_threads(threads):
    """Every CPU plan, forced, on random shapes (single matrices and batches, every element size) with more threads
    than the machine may have: each worker's scratch region, the shared bitmaps and the cycle leaders split across
    tasks must give the same bytes as one thread (the kernels' at::parallel_for runs on torch's OpenMP threads)."""
    with num_threads(threads):
        assert torch.get_num_threads() == threads
        rng = random.Random(100 + threads)
        g = torch.Generator().manual_seed(threads)
        sizes = sorted(DTYPE_BY_SIZE)
        ran = {a: 0 for a in CPU_ALGORITHMS}
        for i in range(90):
            es = sizes[i % len(sizes)]
            kind = i % 3
            if kind == 0:  # skinny-ish
                m, n = rng.randint(2, 64), rng.randint(200, 20000)
            elif kind == 1:  # general
                m, n = rng.randint(65, 1500), rng.randint(65, 1500)
            else:  # tiny
                m, n = rng.randint(2, 12), rng.randint(2, 12)
            if rng.random() < 0.5:
                m, n = n, m
            if i % 9 == 4:
                n = m  # squares
            batch = rng.choice([1, 1, 2, 5, 64]) if m * n < 50000 else 1
            shape = (batch, m, n) if batch > 1 else (m, n)
            if m * n * batch * es > (8 << 20):
                continue
            dtype = DTYPE_BY_SIZE[es]
            x = rand(shape, dtype, "cpu", g)
            for algo in CPU_ALGORITHMS:
                try:
                    torch_inplace.plan(shape, dtype, "cpu", algorithm=algo)
                except RuntimeError as e:
                    assert "cannot" in str(e)
                    continue
                check_inplace(x.clone(), algorithm=algo)
                ran[algo] += 1
        assert min(ran.values()) >= 5, ran


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_cpu_onchip_forced_random_batches(threads):
    """The CPU in-cache path (plan 'onchip': runs of whole matrices through a thread's buffer and a shared index
    table) forced on random batches of every element size: matrices from 2 x 2 to its limits (4096 elements,
    32 KiB), batches of one matrix, of one run, one more or one less than a run, and of many runs (a short last
    run), with 1-3 threads."""
    with num_threads(threads):
        rng = random.Random(threads)
        g = torch.Generator().manual_seed(threads)
        sizes = sorted(DTYPE_BY_SIZE)
        ran = 0
        for i in range(60):
            es = sizes[i % len(sizes)]
            while True:
                m, n = rng.randint(2, 90), rng.randint(2, 90)
                if m * n <= 4096 and m * n * es <= 32768:
                    break
            run = max(1, min(4096, 16384 // es) // (m * n))
            batch = rng.choice([1, 2, run - 1, run, run + 1, 3 * run + rng.randint(1, run), rng.randint(2, 20000)])
            batch = max(1, min(batch, (1 << 22) // (m * n * es)))
            p = torch_inplace.plan((batch, m, n), DTYPE_BY_SIZE[es], "cpu", algorithm="onchip")
            assert p.algorithm == "onchip" and "whole matrices" in p.explanation, p
            check_inplace(rand((batch, m, n), DTYPE_BY_SIZE[es], "cpu", g), algorithm="onchip")
            ran += 1
        # The limits: 4096 elements, 32 KiB; one more refused before anything is written.
        for shape, dtype in [((3, 64, 64), torch.float64), ((3, 64, 32), torch.complex128), ((5, 1, 4096), torch.uint8)]:
            check_inplace(rand(shape, dtype, "cpu", g), algorithm="onchip")
        for shape, dtype in [((3, 65, 64), torch.uint8), ((3, 64, 33), torch.complex128)]:
            x = rand(shape, dtype, "cpu", g)
            keep = x.clone()
            with pytest.raises(RuntimeError, match="^transpose_: algorithm 'onchip' cannot transpose"):
                torch.ops.inplace.transpose_(x, algorithm="onchip")
            assert torch.equal(x, keep) and x.shape == keep.shape
        assert ran == 60


@pytest.mark.parametrize("esize", sorted(DTYPE_BY_SIZE))
def test_cpu_onchip_auto_for_batches_of_tiny_matrices(esize):
    """Batches of matrices of at most 64 elements and 512 B take the in-cache path by default (the square and
    skinny plans' loops per matrix cost more there); larger ones and single matrices keep the other plans. The
    public ops (transpose_, aos_to_soa_ / soa_to_aos_ on batched records) give the same bytes either way."""
    dtype = DTYPE_BY_SIZE[esize]
    g = torch.Generator().manual_seed(esize)
    for m, n in [(2, 2), (3, 3), (2, 3), (4, 2), (4, 4), (8, 4), (2, 16)]:
        p = torch_inplace.plan((1000, m, n), dtype, "cpu")
        assert p.algorithm == "onchip", p
        check_inplace(rand((1000, m, n), dtype, "cpu", g))
        check_inplace(rand((777, m, n), dtype, "cpu", g), op=torch.ops.inplace.aos_to_soa_)
        check_inplace(rand((777, m, n), dtype, "cpu", g), op=torch.ops.inplace.soa_to_aos_)
        assert torch_inplace.plan((m, n), dtype, "cpu").algorithm != "onchip"
    assert torch_inplace.plan((10, 9, 9), dtype, "cpu").algorithm == "square"  # 81 elements
    assert torch_inplace.plan((10, 5, 13), dtype, "cpu").algorithm == "skinny"  # 65 elements


@pytest.mark.parametrize("threads", [2, 3, 5, 16])
def test_cpu_tiled_long_cycles_on_several_threads(threads):
    """The tiled path's block stage cuts the grid's long cycles into segments, one per thread region, each with its
    first block saved before any runs, in rounds where the cycles need more segments than there are regions: shapes
    whose block grids have a few long cycles (2048 x 1536 float32: 192 blocks in 4 cycles, the longest of 95), a
    cycle as long as the grid, fixed points, and the cut plan around it, against x.mT."""
    g = torch.Generator().manual_seed(threads)
    cases = [((2048, 1536), torch.float32, "tiled32"), ((1024, 768), torch.float64, "tiled32"),
             ((1000, 3000), torch.float32, "tiled32"), ((4000, 6000), torch.int16, "tiled32"),
             ((640, 1280), torch.uint8, "tiled32"), ((3, 1000, 3000), torch.float32, "tiled32"),
             ((3001, 2999), torch.float32, "cut"), ((1308, 2200), torch.complex128, "tiled32")]
    with num_threads(threads):
        for shape, dtype, algo in cases:
            assert torch_inplace.plan(shape, dtype, "cpu", algorithm=algo).algorithm == algo
            check_inplace(rand(shape, dtype, "cpu", g), algorithm=algo)


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_cpu_row_moves_on_several_threads(threads):
    """The cut plan's row compaction and spreading, and the skinny plan's moves of its remainder, run across the
    threads from 1 MiB moved on (move_rows in csrc/ops/cpu/transpose_kernel.cpp): in waves over the destination that
    copy straight across where the rows have moved far enough, through a buffer where not, with gaps between the
    spread rows. Forced on random shapes of 1-12 MB (every element size, both directions), against x.mT; a wave one
    element too long fails here."""
    with num_threads(threads):
        rng = random.Random(200 + threads)
        g = torch.Generator().manual_seed(threads)
        ran = {"cut": 0, "skinny": 0}
        while min(ran.values()) < 8:
            es = rng.choice(sorted(DTYPE_BY_SIZE))
            if ran["cut"] <= ran["skinny"]:
                algo, m, n = "cut", rng.randint(300, 3000), rng.randint(300, 3000)
            else:
                algo, m, n = "skinny", rng.randint(2, 64), rng.randint(20000, 400000)
            if rng.random() < 0.5:
                m, n = n, m
            if not (1 << 20) <= m * n * es <= (12 << 20):
                continue
            try:
                torch_inplace.plan((m, n), DTYPE_BY_SIZE[es], "cpu", algorithm=algo)
            except RuntimeError as e:
                assert "cannot" in str(e)
                continue
            check_inplace(rand((m, n), DTYPE_BY_SIZE[es], "cpu", g), algorithm=algo)
            ran[algo] += 1


@pytest.mark.parametrize("shape", [(3001, 2003), (2003, 3001), (1031, 300), (300, 1031), (3, 257, 509),
                                   (4001, 96), (96, 4001)])
@pytest.mark.parametrize("esize", sorted(DTYPE_BY_SIZE))
@pytest.mark.parametrize("threads", [2, 16])
def test_cpu_cut_auto(shape, esize, threads):
    """Factor-poor shapes take the cut plan (or tiled where a prime side is short enough to be a block side); from 16
    threads on, Catanzaro's plans go first for 8-byte and larger elements (measured faster there)."""
    dtype = DTYPE_BY_SIZE[esize]
    with num_threads(threads):
        p = torch_inplace.plan(shape, dtype, "cpu")
        cut = torch_inplace.plan(shape, dtype, "cpu", algorithm="cut") if p.algorithm != "tiled32" else None
        if threads >= 16 and esize >= 8 and cut is not None:
            assert p.algorithm in ("c2r", "r2c") and "ahead of the cut plan" in p.explanation, p
        else:
            assert p.algorithm in ("cut", "tiled32"), p
        check_inplace(rand(shape, dtype, "cpu", torch.Generator().manual_seed(esize)))


@pytest.mark.parametrize("esize", sorted(DTYPE_BY_SIZE))
@pytest.mark.parametrize("shape", [(1024, 768), (768, 1024), (1000, 3000), (3072, 1024), (200, 3000), (65, 4096),
                                   (4, 256, 192), (3, 96, 1000)])
@pytest.mark.parametrize("threads", [1, 2])
def test_cpu_tiled_auto(shape, esize, threads):
    """Shapes whose sides both have a divisor of a good block size take the tiled path on the CPU (batches a matrix
    per task when there are as many matrices as threads, else each matrix across the threads)."""
    dtype = DTYPE_BY_SIZE[esize]
    with num_threads(threads):
        p = torch_inplace.plan(shape, dtype, "cpu")
        assert p.algorithm == "tiled32" and "Karlsson" in p.explanation, p
        check_inplace(rand(shape, dtype, "cpu", torch.Generator().manual_seed(esize)))


@pytest.mark.parametrize("algorithm", ["tiled32", "c2r", "r2c"])
@pytest.mark.parametrize("threads", [2, 4])
def test_cpu_batches_a_matrix_per_task(algorithm, threads):
    """Batches of at least as many matrices as threads run a matrix per task, each in its own worker's scratch
    region (ATen reports thread 0 inside nested loops, so the engine must not look its region up there)."""
    with num_threads(threads):
        g = torch.Generator().manual_seed(threads)
        for shape in [(24, 256, 192), (40, 100, 300), (8, 512, 384)]:
            for _ in range(3):
                check_inplace(rand(shape, torch.float32, "cpu", g), algorithm=algorithm)


@pytest.mark.parametrize("device", devices())
def test_random_shapes(device):
    """>= 200 random shapes up to 3000 x 3000 (both-prime, skinny, squares included), every element size."""
    rng = random.Random(1234)
    g = torch.Generator().manual_seed(1234)
    primes = [p for p in range(2, 3000) if all(p % d for d in range(2, int(p**0.5) + 1))]
    shapes = []
    for i in range(210):
        kind = i % 6
        if kind == 0:
            shapes.append((rng.choice(primes), rng.choice(primes)))
        elif kind == 1:
            s = rng.randint(1, 3000)
            shapes.append((s, s))
        elif kind == 2:
            shapes.append((rng.randint(1000, 60000), rng.randint(2, 64)))
        elif kind == 3:
            shapes.append((rng.randint(2, 64), rng.randint(1000, 60000)))
        else:
            # log-uniform so that most shapes stay quick on a 2-core CI machine
            shapes.append((int(10 ** rng.uniform(0, 3.48)), int(10 ** rng.uniform(0, 3.48))))
    sizes = sorted(DTYPE_BY_SIZE)
    for i, (m, n) in enumerate(shapes):
        check_inplace(rand((m, n), DTYPE_BY_SIZE[sizes[i % len(sizes)]], device, g))


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 7, 11), (5, 1, 9), (4, 9, 1), (2, 6, 6), (6, 100, 3),
                                   (1, 1, 1), (3, 128, 129)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.complex128, torch.uint8])
def test_batched(shape, dtype, device):
    check_inplace(rand(shape, dtype, device))


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0), (2, 0, 3), (0, 3, 4), (3, 4, 0)])
@pytest.mark.parametrize("op", list(OPS))
def test_empty(shape, op, device):
    x = torch.empty(shape, device=device)
    OPS[op](x)
    assert x.shape == (*shape[:-2], shape[-1], shape[-2]) and x.is_contiguous()


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype(dtype, device):
    for shape in [(37, 53), (64, 64), (1000, 3), (2, 17, 19)]:
        check_inplace(rand(shape, dtype, device))


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("fields", [2, 3, 4, 7, 16, 31, 64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_aos_soa_roundtrip(fields, dtype, device):
    aos = rand((3, 10007, fields), dtype, device)
    orig = aos.clone()
    check_inplace(aos, torch.ops.inplace.aos_to_soa_)
    assert aos.shape == (3, fields, 10007)
    torch.testing.assert_close(aos, orig.mT, rtol=0, atol=0)
    check_inplace(aos, torch.ops.inplace.soa_to_aos_)
    torch.testing.assert_close(aos, orig, rtol=0, atol=0)


def test_twice_is_identity():
    x = rand((123, 457), torch.float64)
    orig = x.clone()
    torch_inplace.transpose_(torch_inplace.transpose_(x))
    torch.testing.assert_close(x, orig, rtol=0, atol=0)


@pytest.mark.slow
def test_more_than_2_to_the_31_elements():
    """uint8, 32771 x 65537 = 2,147,713,027 elements (> 2^31): 64-bit indexing end to end."""
    m, n = 32771, 65537
    assert m * n > 2**31
    x = torch.empty((m, n), dtype=torch.uint8)
    # cheap non-constant fill: a byte pattern no transpose maps onto itself
    x.view(-1)[: 2**20].copy_(torch.randint(0, 256, (2**20,), dtype=torch.uint8))
    flat = x.view(-1)
    step = 2**20
    for off in range(step, flat.numel(), step):
        k = min(step, flat.numel() - off)
        torch.add(flat[off - step: off - step + k], 37 + off // step, out=flat[off: off + k])
    del flat  # a live view would (rightly) make transpose_ refuse
    ref = ref_transpose(x)
    torch_inplace.transpose_(x)
    assert x.shape == (n, m)
    assert torch.equal(x, ref)


# ---- refusals: each leaves the tensor exactly as it was --------------------------------------------------------


def _refusals(device):
    def base(shape=(4, 6), dtype=torch.float32):
        return rand(shape, dtype, device)

    cases = []
    cases.append(("1-D", lambda: base((6,)), "at least 2 dims"))
    cases.append(("0-D", lambda: base(()), "at least 2 dims"))
    cases.append(("non-contiguous", lambda: base((6, 4)).mT, "contiguous"))

    def offset_view():
        b = base((5, 6))
        return b, b[1:]
    cases.append(("storage offset", offset_view, "storage offset"))

    def part_view():
        b = base((8, 6))
        return b, b[:4]
    cases.append(("part of a larger tensor", part_view, "owns its whole storage"))

    def aliased():
        b = base((4, 6))
        return b, b.view(6, 4)
    cases.append(("shared with a view", aliased, "no other tensor shares"))

    def detached():
        b = base((4, 6))
        return b, b.detach()
    cases.append(("shared with an alias", detached, "no other tensor shares"))
    cases.append(("leaf requiring grad", lambda: base((4, 6), torch.float64).requires_grad_(),
                  "a leaf Variable that requires grad is being used in an in-place operation"))

    def view_of_leaf():  # the base lives only through the view, so autograd's own check is the one that fires
        return base((4, 6), torch.float64).requires_grad_().view(6, 4)
    cases.append(("view of a leaf requiring grad", view_of_leaf, "view of a leaf Variable that requires grad"))

    def view_of_view_leaf():  # the leaf is a view of a tensor without grad: the view's base is that tensor, no grad
        leaf = base((1, 4, 6), torch.float64)[0].requires_grad_()
        return leaf, leaf.view(4, 6)
    cases.append(("view of a leaf made from a view", view_of_view_leaf, "view of a leaf Variable that requires grad"))

    def empty_view_of_view_leaf():  # no bytes to move: refused all the same, before the version bump
        leaf = base((1, 0, 6), torch.float64)[0].requires_grad_()
        return leaf, leaf.view(0, 6)
    cases.append(("empty view of a leaf made from a view", empty_view_of_view_leaf,
                  "view of a leaf Variable that requires grad"))
    if device == "cpu":
        cases.append(("sparse", lambda: base((4, 6)).to_sparse(), "dense"))
    return cases


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op", list(OPS))
def test_refusals_leave_tensor_unchanged(op, device):
    for name, make, match in _refusals(device):
        made = make()
        keep, t = made if isinstance(made, tuple) else (None, made)
        before = t.detach().clone() if t.layout == torch.strided else t.to_dense().clone()
        shape, stride = tuple(t.shape), (t.stride() if t.layout == torch.strided else None)
        version = t._version if t.layout == torch.strided else None
        with pytest.raises(RuntimeError, match=match) as info:
            OPS[op](t)
        assert str(info.value).startswith(op + ":"), (name, str(info.value))  # autograd's leaf messages too
        assert tuple(t.shape) == shape, name
        if stride is not None:
            assert t.stride() == stride, name
            assert torch.equal(t.detach(), before), name
            assert t._version == version, name
        del keep


@pytest.mark.parametrize("device", devices())
def test_bad_algorithm_names_and_inapplicable_plans(device):
    x = rand((5, 7), torch.float32, device)
    before = x.clone()
    with pytest.raises(RuntimeError, match=r"transpose_: expected algorithm to be one of .*got 'fastest'"):
        torch.ops.inplace.transpose_(x, algorithm="fastest")
    with pytest.raises(RuntimeError, match="transpose_: algorithm 'square' cannot transpose a 5 x 7"):
        torch.ops.inplace.transpose_(x, algorithm="square")
    assert x.shape == (5, 7) and torch.equal(x, before)


def test_resized_sole_owner_is_accepted():
    """Storage past the elements that no other tensor can reach is not a reason to refuse."""
    x = torch.randn(100)
    x.resize_(6, 7)
    check_inplace(x)


def test_view_whose_base_is_only_held_by_it():
    x = torch.randn(42).reshape(6, 7)  # a view; its base lives only through it
    assert x._is_view()
    check_inplace(x)


@pytest.mark.parametrize("device", devices())
def test_images_hwc_to_chw_idiom(device):
    """The README's HWC -> CHW idiom: rebinding the name to the (B, H W, C) view leaves the view as the storage's only
    holder, so the op takes it; the view of an image batch still held is refused, the batch unchanged."""
    b, h, w = 3, 17, 29
    imgs = torch.randint(0, 256, (b, h, w, 3), dtype=torch.uint8, device=device)
    want = imgs.permute(0, 3, 1, 2).contiguous()
    imgs = imgs.view(b, h * w, 3)
    torch_inplace.aos_to_soa_(imgs)
    imgs = imgs.view(b, 3, h, w)
    assert torch.equal(imgs, want)
    imgs = imgs.view(b, 3, h * w)
    torch_inplace.soa_to_aos_(imgs)
    assert torch.equal(imgs.view(b, h, w, 3), want.permute(0, 2, 3, 1))
    kept = torch.randint(0, 256, (b, h, w, 3), dtype=torch.uint8, device=device)
    before = kept.clone()
    with pytest.raises(RuntimeError, match="aos_to_soa_: expected a tensor whose storage no other tensor shares"):
        torch_inplace.aos_to_soa_(kept.view(b, h * w, 3))
    assert torch.equal(kept, before)


def test_version_counter_bumps():
    x = torch.randn(4, 6)
    v = x._version
    torch_inplace.transpose_(x)
    assert x._version > v


def test_python_wrapper_is_the_op():
    x = rand((9, 4), torch.float32)
    ref = ref_transpose(x)
    assert torch_inplace.transpose_(x) is x
    torch.testing.assert_close(x, ref, rtol=0, atol=0)


def test_wrapper_keywords():
    """empty_transposable takes requires_grad as torch.empty."""
    x = torch.randn(3, 5)
    torch_inplace.transpose_(x, algorithm="c2r")
    assert x.shape == (5, 3)
    t = torch_inplace.empty_transposable(4, 6, dtype=torch.float64, requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.shape == (4, 6) and t.dtype == torch.float64
    assert not torch_inplace.empty_transposable((4, 6)).requires_grad


def test_library_loaded_by_path_then_imported():
    """get_library_path() for torch.ops.load_library, then `import torch_inplace` in the same process."""
    import subprocess
    import sys
    code = ("import torch, importlib.util\n"
            "spec = importlib.util.find_spec('torch_inplace._C')\n"
            "torch.ops.load_library(spec.origin)\n"
            "x = torch.randn(3, 4); torch.ops.inplace.transpose_(x); assert x.shape == (4, 3)\n"
            "import torch_inplace\n"
            "y = torch.randn(2, 5); torch_inplace.transpose_(y); assert y.shape == (5, 2)\n"
            "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=dict(__import__("os").environ, PYTHONPATH=":".join(p for p in sys.path if p)))
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]
