"""Bounded caches: thousands of distinct shapes keep the program/plan caches within
CLREDUCE_CACHE_SIZE and RSS flat, and a context the user dropped is released."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import weakref

import numpy as np
import pytest

import clreduce

cl = pytest.importorskip("pyopencl")
from clreduce.backends import opencl  # noqa: E402

BOUND = 16
CALLS = 3000
WARM = 500
# RSS may still rise a little after warm-up: the malloc arena settles and up to BOUND
# programs are rebuilt as the LRU turns over (a few MB each on the Intel runtime). Before the
# bound, 10 000 calls grew RSS by 2.1 GB (issue 7); 64 MB is far below that and above noise.
RSS_GROWTH_MB = 64

_PROGRAM = r"""
import json, os, sys
import numpy as np
import clreduce
from clreduce.backends import opencl

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

device, calls, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
worst = {"programs": 0, "plans": 0}
wrong = 0
for i in range(calls):
    x = rng.random((1 + i % 7, 1 + (i * 37) % 5000), dtype=np.float32)  # distinct shapes
    op = ("sum", "max", "mean")[i % 3]
    got = getattr(clreduce, op)(x, axis=-1, device=device)
    wrong += not np.allclose(got, getattr(np, op)(x, axis=-1), rtol=1e-4, atol=1e-3)
    sizes = opencl.cache_sizes()
    for k in worst:
        worst[k] = max(worst[k], sizes[k])
    if i == warm:
        warm_rss = rss_mb()
print(json.dumps({"worst": worst, "bound": opencl.cache_sizes()["bound"], "wrong": wrong,
                  "growth_mb": rss_mb() - warm_rss}))
"""


def _linux_only():
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("RSS read from /proc")


def test_cache_sizes_and_rss_stay_bounded(cl_device, cl_caps):
    _linux_only()
    env = dict(os.environ, CLREDUCE_CACHE_SIZE=str(BOUND))
    selector = cl_caps.platform_name  # a substring clreduce's device selector accepts
    out = subprocess.run([sys.executable, "-c", _PROGRAM, selector, str(CALLS), str(WARM)], env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["wrong"] == 0
    assert report["bound"] == BOUND
    assert report["worst"]["programs"] <= BOUND
    assert report["worst"]["plans"] <= 4 * BOUND
    assert report["growth_mb"] < RSS_GROWTH_MB, report


def test_lru_evicts_least_recently_used_and_drops_plans_of_evicted_programs(cl_device, monkeypatch):
    monkeypatch.setenv("CLREDUCE_CACHE_SIZE", "2")
    opencl.clear_caches()
    x = np.ones((4, 100), np.float32)
    for op in ("sum", "max", "min", "prod", "mean"):
        assert getattr(clreduce, op)(x, axis=-1, device=cl_device).tolist() == getattr(np, op)(x, axis=-1).tolist()
        assert len(opencl._kernel_cache) <= 2
        live = {id(c) for _, c in opencl._kernel_cache.items()}
        for _, (_, kernels) in opencl._plan_cache.items():
            assert all(id(c) in live for c in kernels), "a plan keeps an evicted program alive"
    opencl.clear_caches()


def test_row_op_plans_drop_with_their_evicted_programs(cl_device, monkeypatch):
    """The row ops' plan cache holds kernels too: bounded, and no plan outlives its program
    (a plain dict there kept up to 512 plans, with their programs and contexts)."""
    from clreduce.backends import opencl_rowops

    monkeypatch.setenv("CLREDUCE_CACHE_SIZE", "2")
    monkeypatch.setenv("CLREDUCE_FAST_PATH", "0")  # the full path: plan_for on every call
    opencl.clear_caches()
    opencl_rowops.clear_caches()
    x = np.linspace(-2, 2, 4 * 100, dtype=np.float32).reshape(4, 100)
    calls = [("softmax", lambda: clreduce.softmax(x, device=cl_device)),
             ("log_softmax", lambda: clreduce.log_softmax(x, device=cl_device)),
             ("rms_norm", lambda: clreduce.rms_norm(x, device=cl_device)),
             ("cumsum", lambda: clreduce.cumsum(x, axis=-1, device=cl_device))]
    for _ in range(2):
        for name, call in calls:
            assert np.all(np.isfinite(call())), name
            assert len(opencl_rowops._plans) <= 8
            live = {id(c) for _, c in opencl._kernel_cache.items()}
            for _, (_, kernels) in opencl_rowops._plans.items():
                assert all(id(c) in live for c in kernels), f"a row plan keeps an evicted program alive ({name})"
    np.testing.assert_allclose(clreduce.cumsum(x, axis=-1, device=cl_device), np.cumsum(x, axis=-1), rtol=1e-5,
                               atol=1e-5)
    opencl.clear_caches()
    opencl_rowops.clear_caches()


def test_a_dropped_user_context_is_released(cl_device):
    # On Mesa rusticl this held only once the launchers unbind their buffers after each
    # enqueue (cl_args): its kernels retain the buffers last bound, and those the context.
    opencl.clear_caches()
    context = cl.Context([cl_device])
    queue = cl.CommandQueue(context)
    x = np.arange(1000, dtype=np.int32).reshape(10, 100)
    np.testing.assert_array_equal(clreduce.sum(x, axis=-1, queue=queue), x.sum(axis=-1))
    ptr = context.int_ptr
    assert any(k[0] == ptr for k, _ in opencl._kernel_cache.items())
    assert opencl.release_unused_contexts() == 0  # still held by the user: kept
    assert any(k[0] == ptr for k, _ in opencl._kernel_cache.items())
    ref = weakref.ref(context)
    del queue, context
    gc.collect()
    assert ref() is None
    opencl.release_unused_contexts()
    assert not any(k[0] == ptr for k, _ in opencl._kernel_cache.items())
    assert not any(k[0] == ptr for k, _ in opencl._plan_cache.items())
    assert ptr not in opencl._holds
    # the library's own contexts are never released and keep working
    np.testing.assert_array_equal(clreduce.sum(x, axis=-1, device=cl_device), x.sum(axis=-1))


@pytest.mark.parametrize("path", [
    "reduce_learned",      # cl_launch: the fast path's own per-thread kernels
    "reduce_full",         # PreparedReduction on the shared cached kernels (fast path off)
    "reduce_strided",      # a non-contiguous device array: gather.cl first
    "row_learned",         # cl_row_launch
    "row_full",            # opencl_rowops.run (fast path off)
])
def test_kernels_keep_no_buffer_of_the_caller(cl_device, path, monkeypatch):
    # Mesa rusticl's kernels retain the buffers last bound to them (cl_args): without the
    # unbind after each enqueue a dropped device array lived on inside the kernel cache, and
    # there this test fails (reference count 2). Elsewhere it holds trivially.
    import pyopencl as cl
    import pyopencl.array as cla

    if path.endswith("_full"):
        monkeypatch.setenv("CLREDUCE_FAST_PATH", "0")
    ctx = cl.Context([cl_device])
    queue = cl.CommandQueue(ctx)
    x = np.arange(6 * 40, dtype=np.float32).reshape(6, 40) / 7
    d = cla.to_device(queue, x)
    d.finish()  # drops the upload's event, which holds the buffer on rusticl
    for _ in range(3):  # the fast path learns on the first calls
        if path.startswith("reduce"):
            arg = d[:, ::2] if path == "reduce_strided" else d
            r = clreduce.sum(arg, axis=1)
            np.testing.assert_allclose(r.get(), x[:, ::2].sum(axis=1) if path == "reduce_strided"
                                       else x.sum(axis=1), rtol=1e-6)
        else:
            r = clreduce.softmax(d, axis=-1)
            e = np.exp(x - x.max(axis=1, keepdims=True))
            np.testing.assert_allclose(r.get(), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    queue.finish()
    out = r.base_data
    del r
    gc.collect()
    assert d.base_data.reference_count == 1, "a kernel still holds the caller's input"
    assert out.reference_count == 1, "a kernel still holds the returned result"
    del out, d, queue, ctx
    gc.collect()
    opencl.clear_caches()
