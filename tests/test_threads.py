"""The ops called from several threads at once (a server's or a data pipeline's worker threads): the plan cache,
the workspace counters and the device caches are shared, and the ops run without the GIL. Every result is checked."""
import random
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

import torch_inplace
import torch_inplace.linalg as TL
from conftest import devices, num_threads, well_conditioned

SHAPES = [(64, 64), (1000, 7), (7, 1000), (97, 89), (3, 40, 60), (256, 96), (331, 1), (2, 5, 1200),
          (5000, 3, 4)]


def _worker(seed, device, iters, clear_cache):
    rng = random.Random(seed)
    for it in range(iters):
        kind = rng.randrange(3)
        if kind == 0:
            shape = rng.choice(SHAPES)
            x = torch.randn(*shape, device=device)
            want = x.mT.contiguous()
            got = torch_inplace.transpose_(x.clone())
            assert torch.equal(got, want), ("transpose_", shape)
        elif kind == 1:
            n = rng.choice([2, 5, 16, 33])
            A = well_conditioned((rng.randrange(1, 40),), n, torch.float64, device, seed=seed * 1000 + it)
            torch.testing.assert_close(TL.batched_inverse(A), torch.linalg.inv(A))
            LU, piv = TL.lu_factor(A)
            want_LU, want_piv = torch.linalg.lu_factor(A)
            assert torch.equal(piv, want_piv)
            torch.testing.assert_close(LU, want_LU)
        else:
            A = well_conditioned((8,), 6, torch.float64, device, seed=seed).requires_grad_()
            TL.batched_inverse(A).sum().backward()
            X = torch.linalg.inv(A.detach())
            torch.testing.assert_close(A.grad, -(X.mT @ torch.ones_like(X) @ X.mT))
        if clear_cache and it % 5 == 0:
            torch.ops.inplace._clear_plan_cache()
    return iters


@pytest.mark.parametrize("device", devices())
def test_ops_from_several_threads(device):
    torch_inplace.reset_workspace_stats()
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(_worker, seed, device, 100, seed == 0) for seed in range(4)]
        assert sum(f.result() for f in futures) == 400
    stats = torch_inplace.workspace_stats()
    assert stats.calls > 0 and stats.peak_bytes >= stats.last_bytes >= 0


def _forked_child(q):
    torch.set_num_threads(1)  # as DataLoader workers run: GNU libgomp cannot start a team in a forked child
    x = torch.randn(3001, 2003)
    want = x.mT.contiguous()
    torch_inplace.transpose_(x)
    A = well_conditioned((64,), 5, torch.float64, "cpu", seed=1)
    q.put(bool(torch.equal(x, want)) and bool(torch.allclose(TL.batched_inverse(A), torch.linalg.inv(A))))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_forked_child_on_one_thread():
    """A process forked after the ops ran on several threads (a DataLoader worker, whose threads torch sets to one)
    runs them too. (With more threads it hangs in its first parallel region, as torch's own CPU ops do: GNU libgomp.)"""
    import multiprocessing as mp

    x = torch.randn(3001, 2003)
    torch_inplace.transpose_(x)  # the parent's OpenMP team exists now
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_forked_child, args=(q,))
    p.start()
    p.join(60)
    if p.exitcode is None:
        p.kill()
    assert p.exitcode == 0
    assert q.get(timeout=5)


_THREAD_COUNT_SCRIPT = r"""
import threading, torch, torch_inplace
ready, go, ok, scratch = threading.Event(), threading.Event(), [], []
shapes = [(400000, 3), (1001, 999), (2048, 1536), (1000003, 7), (4, 300, 200)]
def worker():
    torch.get_num_threads()  # torch's own lazy initialisation of this thread (done: a flag in libtorch)
    torch.set_num_threads(1)  # this thread's count, which the calls below must keep
    ready.set(); go.wait()
    for shape in shapes:
        x = torch.randn(shape)
        want = x.mT.contiguous()
        ok.append(torch.equal(torch_inplace.transpose_(x), want))
        scratch.append(torch_inplace.workspace_stats().last_bytes)
    # the scratch each call took against the plans for the threads this thread's parallel regions run (its own 1)
    scratch.append([torch_inplace.plan(s).scratch_bytes for s in shapes])
    counts.append(torch.get_num_threads())  # the count torch's own ops on this thread run with now
def lu_worker():  # the same through the LU ops, which plan nothing
    torch.get_num_threads()
    torch.set_num_threads(1)
    lu_ready.set(); go.wait()
    A = torch.randn(64, 6, 6, dtype=torch.float64) + 6 * torch.eye(6, dtype=torch.float64)
    ok.append(torch.allclose(torch_inplace.linalg.batched_inverse(A), torch.linalg.inv(A)))
    counts.append(torch.get_num_threads())
counts, lu_ready = [], threading.Event()
t, u = threading.Thread(target=worker), threading.Thread(target=lu_worker); t.start(); u.start()
ready.wait(); lu_ready.wait(); torch.set_num_threads(8); go.set(); t.join(); u.join()
print(len(ok), all(ok), scratch[:-1] == scratch[-1], torch.get_num_threads(), *sorted(counts))
"""


def test_thread_count_changed_by_another_thread():
    """The CPU plans keep a scratch region per thread. A thread that set its own count (1) after torch had
    initialised it, then made its first call after another thread set the process-wide count (8), ran its parallel
    regions on 8 threads with scratch for one (a heap overflow; it crashed the interpreter): ATen's
    lazy_init_num_threads keeps its flag per shared library, and this library's first parallel_for on a thread
    reset the team size after the planner had read it. The planner then initialised first, so every call's scratch
    was the plan's for 8 threads, but the thread was left on 8 threads for torch's own ops too. Now the library's
    initialisation keeps the thread's count: every call's scratch is the plan's for its 1 thread, and the thread
    stays on 1 after the calls (the main thread on its 8); so does a thread whose first calls are the LU ops'. In a
    subprocess."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _THREAD_COUNT_SCRIPT], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split()[-6:] == ["6", "True", "True", "8", "1", "1"], r.stdout


def test_plan_cache_keys_the_thread_count():
    """A CPU plan's scratch has a region per thread, so the cache must not hand a plan made for one thread count to
    a call at another (an internal assert, or a heap overflow without it). The same shapes at 1, 2, 4 and again 1
    threads, in one process without clearing the cache; every result checked and every call's scratch the plan's
    for its thread count."""
    shapes = [(300, 200), (1000, 3000), (3001, 1999), (1000003, 4)]
    torch.ops.inplace._clear_plan_cache()
    for threads in (1, 2, 4, 1):
        with num_threads(threads):
            for shape in shapes:
                x = torch.randn(shape)
                want = x.mT.contiguous()
                need = torch_inplace.plan(shape, torch.float32).scratch_bytes
                torch_inplace.reset_workspace_stats()
                torch_inplace.transpose_(x)
                assert torch.equal(x, want), (threads, shape)
                assert torch_inplace.workspace_stats().last_bytes == need, (threads, shape)


def test_plan_cache_under_a_changing_limit():
    """A cached plan is the one its key describes: the planner ran under a second read of the workspace limit, so
    while another thread toggled the process-wide limit between 0 and none, plans that need scratch were cached
    under the key of limit 0, and later calls under that limit were refused although a plan without scratch (the
    square path) fits. After such a run every shape must transpose under limit 0 (a race: a few percent of the
    shapes failed before). The calls during the toggling must all succeed too: a plan fits either limit, and the op
    allocates its scratch against the limit its plan was made under (it read the limit again before, and now and
    then refused a plan made under none: "needs 49152 bytes of workspace, over the limit of 0 bytes")."""
    import threading

    stop = threading.Event()

    def toggle():
        while not stop.is_set():
            torch_inplace.set_workspace_limit(0)
            torch_inplace.set_workspace_limit(None)

    batches = range(2, 1202)
    torch.ops.inplace._clear_plan_cache()
    t = threading.Thread(target=toggle)
    t.start()
    try:
        for b in batches:
            x = torch.randn(b, 4, 4)
            want = x.mT.contiguous()
            assert torch.equal(torch_inplace.transpose_(x), want), b
    finally:
        stop.set()
        t.join()
        torch_inplace.set_workspace_limit(None)
    refused = []
    with torch_inplace.workspace_limit(0):
        for b in batches:
            x = torch.randn(b, 4, 4)
            want = x.mT.contiguous()
            try:
                assert torch.equal(torch_inplace.transpose_(x), want)
            except RuntimeError as e:
                refused.append((b, str(e)[:100]))
    assert not refused, f"{len(refused)} of {len(batches)}: {refused[:2]}"
