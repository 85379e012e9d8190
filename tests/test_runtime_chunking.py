"""Numpy inputs in pieces (clreduce/backends/cl_chunks.py): beyond one device allocation
(CLREDUCE_MAX_ALLOC_BYTES lowers the probed CL_DEVICE_MAX_MEM_ALLOC_SIZE so CI can test it on
small arrays), and strided views gathered piece by piece. Integer results must equal the
unchunked ones exactly; at most two pieces are resident at a time."""

from __future__ import annotations

import numpy as np
import pytest

import clreduce

cl = pytest.importorskip("pyopencl")
from clreduce.backends import cl_chunks, cl_host, opencl  # noqa: E402

LIMIT = 64 * 1024


class _Pieces:
    """What reached the device: the byte size of every piece, and the most resident at once."""

    def __init__(self):
        self.sizes, self.live, self.most, self.arrays = [], {}, 0, []

    def __len__(self):
        return len(self.sizes)


@pytest.fixture
def pieces(monkeypatch):
    seen = _Pieces()
    real = opencl._start_host

    class Handle:
        def __init__(self, inner, key):
            self.inner, self.key = inner, key

        def result(self):
            return self.inner.result()

        def release(self):
            self.inner.release()
            seen.live[self.key] -= 1
            if not seen.live[self.key]:
                del seen.live[self.key]

    def counting(queue, src, problem, force):
        assert src.flags.c_contiguous
        seen.sizes.append(src.nbytes)
        seen.arrays.append(src)
        seen.live[id(src)] = seen.live.get(id(src), 0) + 1
        seen.most = max(seen.most, len(seen.live))
        return Handle(real(queue, src, problem, force), id(src))

    monkeypatch.setattr(opencl, "_start_host", counting)
    return seen


@pytest.fixture
def small_alloc(monkeypatch, pieces):
    monkeypatch.setenv("CLREDUCE_MAX_ALLOC_BYTES", str(LIMIT))
    return pieces


def _within_limit(seen):
    assert seen.most <= 2, f"{seen.most} pieces resident at once"
    assert max(seen.sizes) <= LIMIT


@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax", "argmin", "prod", "count_nonzero"])
def test_integer_rows_in_chunks_equal_unchunked_exactly(cl_device, small_alloc, monkeypatch, op):
    x = np.random.default_rng(5).integers(-9, 10, size=(1000, 300), dtype=np.int32)  # 1.2 MB
    fn = getattr(clreduce, op)
    chunked = fn(x, axis=-1, device=cl_device)
    assert len(small_alloc) > 10
    _within_limit(small_alloc)
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
    assert len(small_alloc) > 3
    _within_limit(small_alloc)


@pytest.mark.parametrize("op", ["sum", "max", "argmax", "argmin", "count_nonzero", "mean", "any", "all"])
def test_leading_axis_of_a_big_array_splits_k_exactly(cl_device, small_alloc, monkeypatch, op):
    """axis=0 of a 2-D array beyond one allocation: one strided 'row' (K x inner) split along K."""
    x = np.random.default_rng(10).integers(-5, 6, size=(1001, 96), dtype=np.int32)  # 384 KB
    x[777, 5] = 50
    x[3, 7] = -50
    fn = getattr(clreduce, op)
    got = fn(x, axis=0, device=cl_device)
    assert len(small_alloc) > 5
    _within_limit(small_alloc)
    np.testing.assert_array_equal(got, getattr(np, op)(x, axis=0))
    monkeypatch.delenv("CLREDUCE_MAX_ALLOC_BYTES")
    np.testing.assert_array_equal(got, fn(x, axis=0, device=cl_device))


def test_one_reduced_step_beyond_an_allocation_runs_in_column_tiles(cl_device, small_alloc):
    """Even one step of the reduced axis (a whole trailing row) is larger than an allocation."""
    x = np.random.default_rng(11).integers(-100, 100, size=(300, 2 * LIMIT // 4 + 3), dtype=np.int32)
    np.testing.assert_array_equal(clreduce.sum(x, axis=0, device=cl_device), x.sum(axis=0))
    _within_limit(small_alloc)
    np.testing.assert_array_equal(clreduce.argmin(x, axis=0, device=cl_device), x.argmin(axis=0))
    f = x[:40].astype(np.float32) / 7
    np.testing.assert_allclose(clreduce.var(f, axis=0, device=cl_device), f.var(axis=0), rtol=1e-4)
    # a strided view whose one reduced step is too big cannot be tiled without a full copy
    with pytest.raises(cl_host.InputTooLarge, match="strided view"):
        clreduce.sum(x[:, ::2][:, :LIMIT // 4 + 1], axis=0, device=cl_device)


@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax", "argmin", "count_nonzero", "mean", "any", "all"])
def test_rows_longer_than_one_allocation_merge_exactly_for_integers(cl_device, small_alloc, op):
    x = np.random.default_rng(8).integers(-5, 6, size=100_003, dtype=np.int32)  # 400 KB, axis=None
    x[77_777] = 50  # a unique max/min far from the first piece
    x[12] = -50
    fn = getattr(clreduce, op)
    got = fn(x, device=cl_device)
    assert len(small_alloc) > 5
    _within_limit(small_alloc)
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
    # norm 2: pieces give sqrt(sum of squares), merged after scaling by the largest
    np.testing.assert_allclose(clreduce.norm(y, device=cl_device), np.linalg.norm(y.astype(np.float64)), rtol=1e-5)
    big = y * np.float32(1e18)  # the float32 sum of squares overflows, in a piece as in numpy
    assert np.isinf(clreduce.norm(big, device=cl_device)) and np.isinf(np.linalg.norm(big))
    y[123] = np.nan
    assert np.isnan(clreduce.norm(y, device=cl_device))


def test_integer_var_of_long_rows(cl_device, small_alloc):
    """var/std of integer rows split along K: piece means come from exact sums."""
    x = np.random.default_rng(12).integers(0, 1000, size=(2, 40_000), dtype=np.int32)
    np.testing.assert_allclose(clreduce.var(x, axis=-1, device=cl_device), x.var(axis=-1), rtol=1e-6)
    _within_limit(small_alloc)


@pytest.mark.parametrize("axes", [(0, 2), (1,), (0,)])
def test_strided_views_are_gathered_in_bounded_pieces(cl_device, pieces, monkeypatch, axes):
    """A transposed / sliced input is copied into C order piece by piece, never whole."""
    monkeypatch.setattr(cl_chunks, "GATHER_MIN_BYTES", 16 * 1024)
    base = np.random.default_rng(13).integers(-1000, 1000, size=(40, 64, 70), dtype=np.int32)
    view = base.transpose(1, 0, 2)[:, :, 3:]  # 64 x 40 x 67, not contiguous
    for op in ("sum", "max", "argmin"):
        fn = getattr(clreduce, op)
        axis = axes if op != "argmin" else axes[-1]
        got = fn(view, axis=axis, device=cl_device)
        np.testing.assert_array_equal(got, getattr(np, op)(view, axis=axis))
    assert len(pieces) > 3 and pieces.most <= 2
    assert max(pieces.sizes) <= max(16 * 1024, view.nbytes // cl_chunks.GATHER_FRACTION) * 2
    np.testing.assert_allclose(clreduce.mean(view.astype(np.float32), axis=axes, device=cl_device),
                               view.mean(axis=axes), rtol=1e-5)
    assert np.array_equal(base, np.random.default_rng(13).integers(-1000, 1000, size=(40, 64, 70), dtype=np.int32))


def test_float64_converted_piece_by_piece_when_asked(cl_device, pieces, monkeypatch):
    """dtype=float32 on float64 input (the opt-in on devices without fp64) stays correct in pieces."""
    monkeypatch.setattr(cl_chunks, "GATHER_MIN_BYTES", 16 * 1024)
    x = np.random.default_rng(14).standard_normal((300, 200))
    got = clreduce.sum(x, axis=-1, dtype=np.float32, device=cl_device)
    np.testing.assert_allclose(got, x.sum(axis=-1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, perm, axis, op, in_place", [
    ((300, 200), (1, 0), -1, "sum", True), ((300, 200), (1, 0), 0, "argmax", True),
    ((6, 50, 70), (1, 2, 0), 2, "max", True), ((6, 50, 70), (1, 2, 0), (0, 1), "min", True),
    # the kept axes would come out in another order: gathered (correct, one copy)
    ((6, 50, 70), (2, 0, 1), 1, "max", False), ((3, 4, 50, 60), (3, 2, 1, 0), (1, 2), "count_nonzero", False)])
def test_transposed_inputs_are_read_in_place(cl_device, pieces, shape, perm, axis, op, in_place):
    """A transpose of a C-contiguous array (x.T, 2-D Fortran order) whose kept axes keep
    their order is reduced from the array itself in its own axis order: no host copy (numpy
    copied x.T of a (1024, 8192) float32 array at ~0.01 GB/s)."""
    base = np.random.default_rng(15).integers(-100, 100, size=shape, dtype=np.int32)
    x = base.transpose(perm)
    got = getattr(clreduce, op)(x, axis=axis, device=cl_device)
    np.testing.assert_array_equal(got, getattr(np, op)(x, axis=axis))
    assert len(pieces) == 1 and np.shares_memory(pieces.arrays[0], base) == in_place
