"""numpy parity of every forced plan variant on every OpenCL device.

Cases come from the ``variant_cases`` marker (conftest.py): device x variant x shape x
dtype x op, sampled by default and exhaustive with ``--slow``. Each case also checks that
the plan that ran is the variant asked for, so a planner fallback cannot hide a kernel path.
Tolerances: conftest.TOLERANCE / assert_reduction.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import clreduce
from clreduce.backends import opencl
from clreduce.plan import Force, Problem

OPS = ("sum", "mean", "max", "min")
MAIN_DTYPES = ("float32", "float16", "int32")
EXTRA_DTYPES = ("int8", "uint8", "int64", "float64", "bool")  # int16/uint16/uint32/uint64: test_api


def main_shapes(sg: int) -> list[tuple[str, tuple[int, int]]]:
    """(id, (M, K)) covering the kernel's branches; ``sg`` is the variant's sub-group width."""
    return [
        ("M7-K1", (7, 1)),  # K=1: one element per row; lanes == 1, no team reduce at all
        ("M1-K1", (1, 1)),  # M=1, K=1: a single element, one task, most teams idle
        ("M7-K3", (7, 3)),  # K=3 < VEC: the vector loop never runs, scalar tail only
        ("M10-Ksg-1", (10, max(1, sg - 1))),  # K = sub-group width - 1: the last lane/slot holds the identity
        ("M10-Ksg", (10, sg)),  # K = sub-group width exactly: no tail at all
        ("M10-Ksg+1", (10, sg + 1)),  # one past the width: one element left for the tail loop
        ("M7-K127", (7, 127)),  # prime K: vector body plus a tail of 127 % VEC
        ("M33-K257", (33, 257)),  # rows not a multiple of teams per group; 257 = 256 + 1 tail
        ("M3-K4099", (3, 4099)),  # K > work-group: many trips per lane, 4096 + 3 tail; wg_per_row partials
        ("M10000-K5", (10000, 5)),  # M=10000: more tasks than groups -> grid-stride loop, idle teams at the end
        ("M2-K70001", (2, 70001)),  # few long rows: auto split_k (K >= 2**15), last chunk short
        ("M1-K1000000", (1, 10**6)),  # K=10**6, M=1: split_k with two passes through partials
    ]


def extra_shapes(sg: int) -> list[tuple[str, tuple[int, int]]]:
    return [
        ("M7-K1", (7, 1)),  # K=1: VEC 1 for every dtype (scalar paths of 64-bit types)
        ("M7-K3", (7, 3)),  # tail only
        ("M10-Ksg+1", (10, sg + 1)),  # one past the sub-group width
        ("M7-K127", (7, 127)),  # vector body + tail
        ("M3-K4099", (3, 4099)),  # long rows, wg_per_row partials
        ("M2-K70001", (2, 70001)),  # split_k partials in the accumulator type (int64/uint64/double)
    ]


def nan_shapes(sg: int) -> list[tuple[str, tuple[int, int]]]:
    return [
        ("M8-K37", (8, 37)),  # one special value per row at several lane / tail positions
        ("M8-Ksg+1", (8, sg + 1)),  # the special value in the one-past-the-width element
        ("M8-K70001", (8, 70001)),  # split_k: NaN / inf must survive the partials pass
    ]


def _check_plan_is_variant(device, problem, variant):
    """The plan that runs is the one forced (a builtin request may become a shuffle for
    teams narrower than a sub-group; that is the planner's documented rule)."""
    if variant.force is None:
        return
    launch_plan, _ = opencl.plan_for(opencl.queue_for(device), problem, variant.force)
    f = variant.force
    assert launch_plan.strategy == f.strategy, launch_plan
    if f.sg_mode is None:
        pass  # the planner's mode (cpu_blocks: none)
    elif f.sg_mode == "local":
        assert launch_plan.sg_mode == "local", launch_plan
    elif f.sg_mode == "builtin":
        assert launch_plan.sg_mode == "builtin" or (launch_plan.sg_mode.startswith("shuffle")
                                                    and launch_plan.lanes < launch_plan.sg_size), launch_plan
    else:
        assert launch_plan.sg_mode.startswith("shuffle"), launch_plan
    if f.sg_size is not None:
        assert launch_plan.sg_size == f.sg_size, launch_plan
    if f.vec is not None:
        assert launch_plan.vec == f.vec, launch_plan
    if f.wg_size is not None:
        assert launch_plan.wg_size == f.wg_size, launch_plan


def _run(cl_device, variant, x, op):
    return getattr(clreduce, op)(x, axis=-1, device=cl_device, force=variant.force)


def _parity(cl_device, variant, shape, dtype, op, assert_reduction, make_data, request):
    rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
    kinds = ("random", "exact") if np.dtype(dtype).kind == "f" else ("random",)
    _check_plan_is_variant(cl_device, Problem(rows=shape[0], row_len=shape[1], dtype=dtype, op=op), variant)
    for kind in kinds:
        x = make_data(rng, shape, dtype, kind)
        before = x.copy()
        got = _run(cl_device, variant, x, op)
        np.testing.assert_array_equal(x, before)
        assert_reduction(got, x, op, axis=-1, exact=(kind == "exact"), context=f"{kind} data, {variant.id}")


@pytest.mark.variant_cases(shapes=main_shapes, dtypes=MAIN_DTYPES, ops=OPS, forced_cells=6, auto_cells=24)
def test_variant_matches_numpy(cl_device, variant, shape, dtype, op, assert_reduction, make_data, request):
    _parity(cl_device, variant, shape, dtype, op, assert_reduction, make_data, request)


@pytest.mark.variant_cases(shapes=extra_shapes, dtypes=EXTRA_DTYPES, ops=OPS)
def test_variant_matches_numpy_more_dtypes(cl_device, variant, shape, dtype, op, assert_reduction, make_data,
                                           request):
    _parity(cl_device, variant, shape, dtype, op, assert_reduction, make_data, request)


def _specials(shape, dtype, rng):
    """Rows: NaN first / NaN last (tail) / NaN middle / +inf / -inf / +inf and -inf /
    NaN and inf / clean."""
    m, k = shape
    x = rng.standard_normal(size=(m, k)).astype(dtype)
    last, mid = k - 1, k // 2
    x[0, 0] = np.nan
    x[1, last] = np.nan
    x[2, mid] = np.nan
    x[3, mid] = np.inf
    x[4, last] = -np.inf
    x[5, 0] = np.inf
    x[5, last] = -np.inf
    x[6, last] = np.nan
    x[6, 0] = np.inf
    return x


@pytest.mark.variant_cases(shapes=nan_shapes, dtypes=("float32", "float16"), ops=OPS)
def test_variant_nan_and_inf(cl_device, variant, shape, dtype, op, assert_reduction, request):
    rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
    x = _specials(shape, dtype, rng)
    got = _run(cl_device, variant, x, op)
    # Written out for the reader; assert_reduction checks the same against numpy.
    assert np.isnan(got[:3]).all() and np.isnan(got[6]), got
    if op in ("sum", "mean"):
        assert got[3] == np.inf and got[4] == -np.inf and np.isnan(got[5]), got
    elif op == "max":
        assert got[3] == np.inf and got[5] == np.inf and np.isfinite(got[4]), got
    else:
        assert got[4] == -np.inf and got[5] == -np.inf and np.isfinite(got[3]), got
    assert np.isfinite(got[7]), got
    assert_reduction(got, x, op, axis=-1, context=variant.id)


# ---- the strided axis: reduce_cols (inner > 1) -----------------------------------------------


def column_shapes(_sg: int) -> list[tuple[str, tuple[int, int, int]]]:
    """(id, (outer, K, inner)); the middle axis is reduced, work-items run along inner."""
    return [
        ("O3-K1-I5", (3, 1, 5)),  # K=1: every column a single element
        ("O1-K7-I2", (1, 7, 2)),  # inner=2 < VEC: only the per-column tail loop runs
        ("O4-K33-I17", (4, 33, 17)),  # inner=17: full VEC blocks plus a one-column tail
        ("O2-K5-I64", (2, 5, 64)),  # inner a multiple of 16: vector blocks only
        ("O500-K7-I33", (500, 7, 33)),  # many items: grid-stride over (outer, tile)
        ("O2-K9-I1500", (2, 9, 1500)),  # inner wider than a CPU tile (NBLK * VEC): full + partial tiles
        ("O1-K4099-I3", (1, 4099, 3)),  # few items, long K: auto split over K, short last chunk
        ("O1-K100000-I2", (1, 10**5, 2)),  # split over K into many chunks, partials pass
    ]


def column_extra_shapes(_sg: int) -> list[tuple[str, tuple[int, int, int]]]:
    return [
        ("O3-K1-I5", (3, 1, 5)),  # K=1
        ("O4-K33-I17", (4, 33, 17)),  # vector blocks plus a tail column
        ("O1-K4099-I3", (1, 4099, 3)),  # split over K: partials in the accumulator type
    ]


@pytest.mark.variant_cases(shapes=column_shapes, dtypes=MAIN_DTYPES, ops=OPS, variants="columns",
                           forced_cells=3, auto_cells=12)
def test_columns_match_numpy(cl_device, variant, shape, dtype, op, assert_reduction, make_data, request):
    _columns(cl_device, variant, shape, dtype, op, assert_reduction, make_data, request)


@pytest.mark.variant_cases(shapes=column_extra_shapes, dtypes=EXTRA_DTYPES, ops=OPS, variants="columns",
                           forced_cells=2)
def test_columns_match_numpy_more_dtypes(cl_device, variant, shape, dtype, op, assert_reduction, make_data,
                                         request):
    _columns(cl_device, variant, shape, dtype, op, assert_reduction, make_data, request)


def _columns(cl_device, variant, shape, dtype, op, assert_reduction, make_data, request):
    rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
    outer, k, inner = shape
    if variant.force is not None:
        launch_plan, _ = opencl.plan_for(opencl.queue_for(cl_device),
                                         Problem(rows=outer, row_len=k, inner=inner, dtype=dtype, op=op),
                                         variant.force)
        assert launch_plan.strategy.startswith("columns"), launch_plan
        if variant.force.vec:
            assert launch_plan.vec == variant.force.vec
        if variant.force.strategy == "split_k" and k >= 2:
            assert launch_plan.split >= 2
    kinds = ("random", "exact") if np.dtype(dtype).kind == "f" else ("random",)
    for kind in kinds:
        x = make_data(rng, shape, dtype, kind)
        got = getattr(clreduce, op)(x, axis=1, device=cl_device, force=variant.force)
        assert_reduction(got, x, op, axis=1, exact=(kind == "exact"), context=f"{kind} data, {variant.id}")
        # the same through a (K, inner)-last 2-D view when outer == 1: axis=0 of a 2-D array
        if outer == 1:
            got2 = getattr(clreduce, op)(x[0], axis=0, device=cl_device, force=variant.force)
            np.testing.assert_array_equal(got2, got[0])


@pytest.mark.parametrize("split", [1, 2, 7, 64, 4099])
@pytest.mark.parametrize("op", ["sum", "max", "var", "argmin"])
def test_columns_forced_split_counts(cl_device, split, op, assert_reduction):
    """Force(split=N) cuts K into N chunks for columns too (GPUs choose ~sqrt(K) chunks,
    plan.gpu_column_split, which no CPU runtime here plans by itself): every count, from none
    to one row a chunk, gives numpy's answer."""
    rng = np.random.default_rng(split)
    x = rng.standard_normal((4099, 19)).astype(np.float32) + 100
    launch_plan, _ = opencl.plan_for(opencl.queue_for(cl_device),
                                     Problem(rows=1, row_len=4099, inner=19, dtype="float32", op=op), Force(split=split))
    # llvmpipe's loop limiter (rusticl): the planner raises the count until each walk fits
    assert launch_plan.split == split or ("rusticl" in cl_device.platform.name and launch_plan.split > split), launch_plan.split
    got = getattr(clreduce, op)(x, axis=0, device=cl_device, force=Force(split=split))
    assert_reduction(got, x, op, axis=0, context=f"split {split}")


_CRASH_REPRO = """
import numpy as np, clreduce
from clreduce.backends import opencl
device = [d for d in opencl.all_devices() if "Portable Computing Language" in d.platform.name][0]
x = np.ones((4, 3, 4096), np.int8)
got = clreduce.sum(x, axis=1, device=device, force={"wg_size": 256})
assert got.dtype == np.int64 and (got == 3).all(), got
x = np.ones((2, 9, 1500), np.int32)
got = clreduce.sum(x, axis=1, device=device, force={"wg_size": 1024})
assert (got == 9).all(), got
print("ok")
"""


def test_columns_forced_big_work_group_does_not_crash(found_devices):
    """Runs in a subprocess: the failure mode is a segmentation fault of the whole process.

    reduce_cols keeps NBLK vector accumulators per work-item; NBLK was once sized from the
    input itemsize, so int8/int32 sums (64-bit accumulators) took 12-32 KB of private memory
    per work-item and PoCL crashed with a forced 256/1024-item group."""
    if not any(d.id == "pocl" for d in found_devices):
        pytest.skip("PoCL not found")
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    result = subprocess.run([sys.executable, "-c", _CRASH_REPRO], cwd=root, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0 and "ok" in result.stdout, (result.returncode, result.stderr[-2000:])
