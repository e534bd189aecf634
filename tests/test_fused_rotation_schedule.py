"""The schedule of the GPU kernel that fuses Catanzaro's column rotation into the row shuffle
(row_rotate_fused_kernel in csrc/kernels/transpose/catanzaro.cuh), as a Python model run on random
interleavings of the blocks' steps: a chunk of rows per block, starting with a head of at least c - 1 rows
that is staged first, then bands of any size, and the neighbour flags. A band's rotated rows reach past its
end, so a wrong order or a missing wait corrupts the result; the model must give the transpose on every
shape. The kernel itself is checked on the GPU (tests/test_transpose_gpu.py::test_rotation_fused_into_row_shuffle).
"""
import math
import os
import random
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
for _root in (os.path.join(_HERE, "..", ".."), os.path.join(_HERE, "..")):  # ../shared beside the checkout, or in it
    sys.path.insert(0, os.path.join(_root, "shared", "reference"))
c2r_reference = pytest.importorskip("c2r_reference")


def _params(m, n):
    c = math.gcd(m, n)
    a, b = m // c, n // c
    return c, a, b, c2r_reference.mmi(a, b)


def _row_gather(m, n, c, b, ainv, i, j):  # eq. 31
    f = j + i * (n - 1) if i - (j % c) + c <= m else j + i * (n - 1) + m
    return (ainv * (f // c)) % b + (f % c) * b


def _row_scatter2(m, n, b, i, j):  # eq. 24
    return ((i + j // b) % m + j * m) % n


def _column_shuffle(buf, m, n, inverse):
    _, a, _, _ = _params(m, n)
    for j in range(n):
        rows = [(j + i * n - i // a) % m for i in range(m)]
        if inverse:
            tmp = [None] * m
            for i in range(m):
                tmp[rows[i]] = buf[i * n + j]
        else:
            tmp = [buf[rows[i] * n + j] for i in range(m)]
        for i in range(m):
            buf[i * n + j] = tmp[i]


def _fused(buf, m, n, blocks, head_rows, band_rows, c2r, rng, waits=True):
    """The kernel's schedule: each block a generator that yields between band steps; flags as in the kernel."""
    c, _, b, ainv = _params(m, n)
    flags = [0] * blocks

    def stage(r0, r1, rotated):
        return [[buf[((i + (j // b if rotated else 0)) % m) * n + j] for j in range(n)] for i in range(r0, r1)]

    def shuffle(staged, r0, rotated):
        for t, row in enumerate(staged):
            i = r0 + t
            for j in range(n):
                v = row[_row_gather(m, n, c, b, ainv, i, j) if c2r else _row_scatter2(m, n, b, i, j)]
                buf[((i + (j // b if rotated else 0)) % m) * n + j] = v

    def block(k):
        r_lo, r_hi = k * m // blocks, (k + 1) * m // blocks
        h1 = r_lo + head_rows
        assert h1 <= r_hi
        bands = [(r0, min(r0 + band_rows, r_hi)) for r0 in range(h1, r_hi, band_rows)]
        prev, nxt = (k - 1) % blocks, (k + 1) % blocks
        head = stage(r_lo, h1, c2r)
        yield
        if c2r:
            if not bands:
                flags[k] = 1
            for bi, (r0, r1) in enumerate(bands):
                work = stage(r0, r1, True)
                yield
                if bi == len(bands) - 1:
                    flags[k] = 1
                shuffle(work, r0, False)
                yield
            while waits and not flags[prev]:
                yield
            shuffle(head, r_lo, False)
        else:
            flags[k] = 1
            for bi in reversed(range(len(bands))):
                r0, r1 = bands[bi]
                work = stage(r0, r1, False)
                yield
                if bi == len(bands) - 1:
                    while waits and not flags[nxt]:
                        yield
                shuffle(work, r0, True)
                yield
            if not bands:
                while waits and not flags[nxt]:
                    yield
            shuffle(head, r_lo, True)

    gens = {k: block(k) for k in range(blocks)}
    steps = 0
    while gens:
        k = rng.choice(sorted(gens))
        try:
            next(gens[k])
        except StopIteration:
            del gens[k]
        steps += 1
        assert steps < 100000, "the blocks wait on each other forever"


def _c2r_then_r2c_fails(m, n, blocks, head_rows, band_rows, rng, waits=True):
    x = list(range(m * n))
    buf = list(x)
    _fused(buf, m, n, blocks, head_rows, band_rows, True, rng, waits)
    _column_shuffle(buf, m, n, inverse=False)
    want_t = [x[i * n + j] for j in range(n) for i in range(m)]
    bad = buf != want_t
    buf = list(want_t)
    _column_shuffle(buf, m, n, inverse=True)
    _fused(buf, m, n, blocks, head_rows, band_rows, False, rng, waits)
    return bad or buf != x


def test_fused_rotation_schedule_on_every_small_shape():
    # The planner's rule: heads of at least c - 1 rows (here c - 1 and one more), bands of any size, at most
    # m / head blocks.
    rng = random.Random(7)
    cases = 0
    for m in range(2, 25):
        for n in range(2, 25):
            c = math.gcd(m, n)
            if c == 1:
                continue
            for head_rows in {max(1, c - 1), c}:
                if head_rows > m:
                    continue
                for band_rows in (1, 2, 5):
                    for blocks in sorted({1, 2, 3, m // head_rows}):
                        if blocks > m // head_rows:
                            continue
                        assert not _c2r_then_r2c_fails(m, n, blocks, head_rows, band_rows, rng), \
                            (m, n, blocks, head_rows, band_rows)
                        cases += 1
    assert cases > 1000


def test_schedule_model_fails_without_its_rules():
    # The model is sharp: drop the neighbour waits, or make heads thinner than c - 1 rows, and some
    # interleaving corrupts the result.
    rng = random.Random(3)
    m, n = 12, 18  # c = 6
    assert any(_c2r_then_r2c_fails(m, n, 2, 5, 1, rng, waits=False) for _ in range(300))
    assert any(_c2r_then_r2c_fails(m, n, 6, 2, 1, rng) for _ in range(300))
    assert not any(_c2r_then_r2c_fails(m, n, 2, 5, 1, rng) for _ in range(50))
