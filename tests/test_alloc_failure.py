"""Host memory running out in the middle of a CPU call: the in-place ops allocate everything they need before their
first write, so a call that fails for want of memory leaves its tensor as it was (data, shape and version), and a
call that returns has done all of its work.

A shared library preloaded into a subprocess makes the k-th host allocation of at least `min_size` bytes fail
(malloc returns NULL, so operator new throws std::bad_alloc; posix_memalign, ATen's CPU allocator, returns ENOMEM),
for k = 1, 2, ... until a call makes fewer allocations than k and succeeds. Linux with glibc and a C compiler only
(CI's machine).

Before the fix, among the forced plans below, a failure inside the tiled path's block-grid cycles, the cut path's
row moves or the skinny path's cycle leaders left the tensor half permuted, and one in the shape change left the
data transposed under the old shape; `inverse_` allocated each task's scratch inside its parallel loop.
"""
import json
import os
import platform
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import PY, python_subprocess_env

CC = shutil.which("cc") or shutil.which("gcc")

# The shim stands in for glibc's malloc / posix_memalign (it calls __libc_malloc / __libc_memalign), so it needs
# glibc, and no other allocator preloaded (jemalloc, tcmalloc: their free would get glibc's blocks).
pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc" or CC is None
    or bool(os.environ.get("LD_PRELOAD")),
    reason="needs Linux with glibc (LD_PRELOAD of a malloc shim), a C compiler and no other preloaded library")

SHIM = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
extern void *__libc_malloc(size_t);
extern void *__libc_memalign(size_t, size_t);
static atomic_long countdown = 0;  /* > 0: armed; the allocation that brings it to 0 fails */
static size_t min_size = 0;
static atomic_long failed = 0;
void fi_arm(long n, size_t mins) { min_size = mins; failed = 0; atomic_store(&countdown, n); }
long fi_disarm(void) { atomic_store(&countdown, 0); return failed; }
static int fail_now(size_t size) {
  if (size >= min_size && atomic_load(&countdown) > 0 && atomic_fetch_sub(&countdown, 1) == 1) {
    failed = 1;
    return 1;
  }
  return 0;
}
void *malloc(size_t size) {
  if (fail_now(size)) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_malloc(size);
}
/* ATen's CPU allocator (tensors, the ops' scratch) */
int posix_memalign(void **out, size_t alignment, size_t size) {
  if (fail_now(size)) return ENOMEM;
  void *p = __libc_memalign(alignment, size);
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}
"""

# Runs in the subprocess: for each case and min_size, arm the k-th allocation to fail for k = 1, 2, ... and record
# what the call left. Prints one JSON list.
DRIVER = r"""
import ctypes, json, sys
import torch, torch_inplace as ti
fi = ctypes.CDLL(sys.argv[1])
fi.fi_arm.argtypes = [ctypes.c_long, ctypes.c_size_t]
torch.set_num_threads(2)
# Warm-up outside the armed windows: the thread pool, and the threads' first touch of the library's thread_local
# data (glibc aborts where it cannot allocate that, which no library can handle).
torch.randn(512, 512).t().contiguous().sum()
for s in [(8, 64, 48), (4, 300, 200), (3001, 7), (7, 3001)]:
    ti.transpose_(torch.zeros(s))
ti.inverse_(torch.eye(3).expand(64, 3, 3).clone())

def transpose_case(shape, alg):
    def make():
        return (torch.arange(torch.Size(shape).numel()) % 100003).to(torch.int32).reshape(shape)
    def call(x):
        return ti.transpose_(x, alg)
    def done(x, x0):
        return tuple(x.shape) == tuple(x0.mT.shape) and torch.equal(x, x0.mT)
    return make, call, done

def lu_case(name, batch, n):
    def make():
        g = torch.Generator().manual_seed(0)
        return torch.randn(batch, n, n, dtype=torch.float64, generator=g) + 4 * torch.eye(n, dtype=torch.float64)
    want = {}
    def call(x):
        return getattr(ti, name)(x)
    def done(x, x0):
        if "w" not in want:
            w = x0.clone(); getattr(ti, name)(w); want["w"] = w
        return torch.equal(x, want["w"])
    return make, call, done

CASES = {
    "skinny to SoA": transpose_case((100003, 5), "skinny"),
    "skinny to AoS": transpose_case((5, 100003), "skinny"),
    "skinny batched": transpose_case((2, 30011, 6), "skinny"),
    "tiled": transpose_case((1536, 2048), "tiled32"),
    "tiled batched": transpose_case((3, 320, 448), "tiled32"),
    "cut": transpose_case((2049, 3073), "cut"),
    "c2r": transpose_case((1501, 1100), "c2r"),
    "square": transpose_case((700, 700), "square"),
    "onchip": transpose_case((300, 40, 36), "onchip"),
    "inverse_": lu_case("inverse_", 4096, 8),
    "lu_factor_": lu_case("lu_factor_", 4096, 8),
}
out = []
for label, (make, call, done) in CASES.items():
    for min_size in (0, 64):
        for k in range(1, 200):
            x0 = make(); x = x0.clone(); v = x._version
            fi.fi_arm(k, min_size)
            try:
                call(x); err = None
            except BaseException as e:  # MemoryError, or a RuntimeError from ATen's allocator
                err = type(e).__name__
            failed = bool(fi.fi_disarm())
            unchanged = tuple(x.shape) == tuple(x0.shape) and torch.equal(x, x0) and x._version == v
            out.append(dict(case=label, min_size=min_size, k=k, failed=failed, error=err, unchanged=unchanged,
                            done=bool(done(x, x0))))
            if not failed:
                break
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    d = tmp_path_factory.mktemp("alloc_failure")
    src = d / "fail_alloc.c"
    src.write_text(SHIM)
    lib = d / "fail_alloc.so"
    subprocess.run([CC, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True, capture_output=True)
    return str(lib)


def test_a_call_that_runs_out_of_host_memory_leaves_the_tensor_as_it_was(shim, tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    env = python_subprocess_env()
    env["LD_PRELOAD"] = shim + (os.pathsep + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["OMP_NUM_THREADS"] = "2"
    r = subprocess.run([PY, str(script), shim], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    cases = {row["case"] for row in rows}
    assert len(cases) == 11
    bad = []
    for case in sorted(cases):
        for min_size in (0, 64):
            runs = [row for row in rows if row["case"] == case and row["min_size"] == min_size]
            # Each sweep ends with a call that made fewer allocations than armed, and that call did its work.
            assert runs and not runs[-1]["failed"] and runs[-1]["error"] is None and runs[-1]["done"], (case, runs[-1])
            # Allocations failed before that (with the plan cached, some calls make none of 64 bytes or more), and
            # every such call raised with the tensor untouched.
            assert len(runs) > 1 or min_size > 0, (case, min_size)
            for row in runs[:-1]:
                if not (row["failed"] and row["error"] is not None and row["unchanged"]):
                    bad.append("%s (min %d B, allocation %d): error %s, tensor %s" % (
                        case, min_size, row["k"], row["error"], "as it was" if row["unchanged"] else
                        "done" if row["done"] else "CHANGED"))
    assert not bad, bad
