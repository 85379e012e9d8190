"""Inputs beyond one device allocation (CLREDUCE_MAX_ALLOC_BYTES lowers the probed
CL_DEVICE_MAX_MEM_ALLOC_SIZE so CI can test it on small arrays) run in row chunks."""

from __future__ import annotations

import numpy as np
import pytest

import clreduce

cl = pytest.importorskip("pyopencl")
from clreduce.backends import cl_host  # noqa: E402

LIMIT = 64 * 1024


@pytest.fixture
def small_alloc(monkeypatch):
    monkeypatch.setenv("CLREDUCE_MAX_ALLOC_BYTES", str(LIMIT))
    calls = []
    real = cl_host.reduce_host

    def counting(queue, src, problem, force, run_once):
        def once(*args):
            calls.append(args[1].nbytes)
            return run_once(*args)
        return real(queue, src, problem, force, once)

    monkeypatch.setattr(cl_host, "reduce_host", counting)
    return calls


@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax", "argmin", "prod", "count_nonzero"])
def test_integer_rows_in_chunks_equal_unchunked_exactly(cl_device, small_alloc, monkeypatch, op):
    x = np.random.default_rng(5).integers(-9, 10, size=(1000, 300), dtype=np.int32)  # 1.2 MB
    fn = getattr(clreduce, op)
    chunked = fn(x, axis=-1, device=cl_device)
    assert len(small_alloc) > 10 and max(small_alloc) <= LIMIT
    monkeypatch.delenv("CLREDUCE_MAX_ALLOC_BYTES")
    whole = fn(x, axis=-1, device=cl_device)
    np.testing.assert_array_equal(chunked, whole)
    np.testing.assert_array_equal(chunked, getattr(np, op)(x, axis=-1))


def test_float_ops_and_leading_axes_in_chunks(cl_device, cl_caps, small_alloc):
    x = np.random.default_rng(6).standard_normal((30, 40, 257)).astype(np.float32)  # 1.2 MB
    np.testing.assert_allclose(clreduce.mean(x, axis=-1, device=cl_device), x.mean(axis=-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(clreduce.var(x, axis=2, device=cl_device), x.var(axis=2), rtol=1e-4)
    # a middle axis: rows are the leading axis, inner the trailing one
    np.testing.assert_allclose(clreduce.max(x, axis=1, device=cl_device), x.max(axis=1))
    assert len(small_alloc) > 3 and max(small_alloc) <= LIMIT


def test_what_cannot_be_chunked_is_a_clear_memory_error(cl_device, small_alloc):
    x = np.ones(LIMIT, np.float32)  # one row of 256 KB
    with pytest.raises(MemoryError, match="exceeds one allocation.*CLREDUCE_MAX_ALLOC_BYTES"):
        clreduce.norm(x, device=cl_device)  # norm2: a sum of squares scaled on the device
    # the leading axis of a big array: one strided "row" (inner > 1) is not split yet
    with pytest.raises(cl_host.InputTooLarge, match=r"op sum"):
        clreduce.sum(np.ones((1024, 64), np.float32), axis=0, device=cl_device)


@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax", "argmin", "count_nonzero", "mean", "any", "all"])
def test_rows_longer_than_one_allocation_merge_exactly_for_integers(cl_device, small_alloc, op):
    x = np.random.default_rng(8).integers(-5, 6, size=100_003, dtype=np.int32)  # 400 KB, axis=None
    x[77_777] = 50  # a unique max/min far from the first piece
    x[12] = -50
    fn = getattr(clreduce, op)
    got = fn(x, device=cl_device)
    assert len(small_alloc) > 5 and max(small_alloc) <= LIMIT
    assert got == getattr(np, op)(x)  # exact, integer data
    two_rows = x[:100_000].reshape(2, 50_000)
    np.testing.assert_array_equal(fn(two_rows, axis=-1, device=cl_device), getattr(np, op)(two_rows, axis=-1))


def test_long_float_rows_merge_within_tolerance(cl_device, small_alloc):
    x = np.random.default_rng(9).standard_normal(70_001).astype(np.float32)
    x[50_000] = np.nan
    assert np.isnan(clreduce.max(x, device=cl_device)) and clreduce.argmax(x, device=cl_device) == 50_000
    y = np.abs(x[:50_000])
    np.testing.assert_allclose(clreduce.mean(y, device=cl_device), y.mean(), rtol=1e-5)
    np.testing.assert_allclose(clreduce.logsumexp(y, device=cl_device),
                               np.log(np.exp(y.astype(np.float64)).sum()), rtol=1e-5)
    # var/std: Chan's merge of per-piece (count, mean, M2)
    z = (x[:60_000] + 1000).reshape(2, 30_000)  # a large mean: the naive sum-of-squares would cancel
    np.testing.assert_allclose(clreduce.var(z, axis=-1, device=cl_device), z.var(axis=-1), rtol=1e-4)
    np.testing.assert_allclose(clreduce.std(z[0], ddof=1, device=cl_device), z[0].std(ddof=1), rtol=1e-4)
    np.testing.assert_allclose(clreduce.nanmean(x, device=cl_device), np.nanmean(x), rtol=1e-4, atol=1e-6)
    with pytest.raises(MemoryError, match="cannot merge yet"):
        clreduce.norm(y, device=cl_device)
