"""Row ops (softmax, norms, absmax-scale, int8 quantisation) on every OpenCL device against
numpy references computed in float64 from the same input.

Default run: main shapes, adversarial rows, a sample of the planner's forced variants.
``--slow`` / ``CLREDUCE_SLOW=1``: every forced variant and the big shapes in every dtype.
"""

from __future__ import annotations

import dataclasses
import random
import warnings
import zlib

import numpy as np
import pytest
from conftest import slow_enabled

from rowops_refs import (ADVERSARIAL, HALF_ROWS, LOG_TOL, NORM_TOL, TOL, U32, _assert_cumsum_bound, _close,
                         assert_scan_past_the_range, check_backward_write_walk, far_first_rows, flat_write_rows,
                         ref_layer_norm,
                         wild_rows, noncanonical_bools, ref_norms_past_the_range, ref_log_softmax, ref_quantize,
                         ref_rms_norm, ref_softmax, rows_past_the_range)

from clreduce import rowops
from clreduce.backends import opencl_rowops
from clreduce.backends.opencl_probe import probe_device
from clreduce.plan import Force, UnsupportedOnDevice
from clreduce.plan_rowops import RowForce, RowProblem, llvmpipe_loop_limited, plan_row, row_variants
from clreduce.plan_scan import WALK_SEG_LLVMPIPE

try:
    from numpy.exceptions import AxisError
except ImportError:  # numpy < 1.25
    from numpy import AxisError

def _rng(*parts) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def _dtypes(device):
    caps = probe_device(device)
    return ("float32", "float16") + (("float64",) if caps.fp64 else ())


# The issue's odd row lengths K = 1, 7, 4097, 10**6 (rows: a few, so teams have padding).
ODD_SHAPES = [(5, 1), (9, 7), (3, 4097), (1, 10**6)]


def _odd_marks(shape, dtype):
    # float32 on every shape, the other dtypes on K=4097 by default (each op is a program
    # build per dtype and shape); every pair with --slow
    return () if dtype == "float32" or shape == (3, 4097) else (pytest.mark.slow,)


@pytest.mark.parametrize("shape, dtype", [pytest.param(s, d, marks=_odd_marks(s, d), id=f"{s[0]}x{s[1]}-{d}")
                                          for s in ODD_SHAPES for d in ("float32", "float16", "float64")])
def test_every_op_matches_numpy(cl_device, shape, dtype):
    """All eleven row ops on one input, against numpy references in float64."""
    if dtype not in _dtypes(cl_device):
        pytest.skip("no fp64 on this device")
    rng = _rng("odd", shape, dtype)
    x = (rng.standard_normal(shape) * 3 + 0.5).astype(dtype)
    before = x.copy()
    w = rng.standard_normal(shape[-1]).astype(np.float32)
    b = rng.standard_normal(shape[-1]).astype(np.float32)
    what = f"{shape} {dtype}"
    got = rowops.softmax(x, device=cl_device)
    _close(got, ref_softmax(x), dtype, TOL, f"softmax {what}")
    # float16: each output's rounding to half is up to 2**-25 absolute (half subnormal spacing
    # 2**-24 / 2); at K = 10**6 the outputs are ~1e-6, subnormal, and those roundings add up
    # (0.0026 seen), so the sum is held to K * 2**-25 beside the relative bound
    np.testing.assert_allclose(got.astype(np.float64).sum(-1), 1.0, rtol=1e-4 + 2e-3 * (dtype == "float16"),
                               atol=shape[-1] * 2.0**-25 * (dtype == "float16"))
    _close(rowops.log_softmax(x, device=cl_device), ref_log_softmax(x), dtype, LOG_TOL, f"log_softmax {what}")
    _close(rowops.rms_norm(x, w, eps=1e-3, device=cl_device), ref_rms_norm(x, w, 1e-3), dtype, NORM_TOL, f"rms {what}")
    _close(rowops.layer_norm(x, w, b, device=cl_device), ref_layer_norm(x, w, b), dtype, NORM_TOL, f"ln {what}")
    mean, var = rowops.moments(x, device=cl_device)
    _close(mean, x.astype(np.float64).mean(-1), dtype, NORM_TOL, f"mean {what}")
    _close(var, x.astype(np.float64).var(-1), dtype, NORM_TOL, f"var {what}")
    y, amax = rowops.absmax_scale(x, device=cl_device)
    np.testing.assert_array_equal(amax, np.abs(x).max(-1), err_msg=what)
    _close(y, x.astype(np.float64) / np.abs(x.astype(np.float64)).max(-1, keepdims=True), dtype, TOL, f"absmax {what}")
    q, s = rowops.quantize_int8(x, device=cl_device)
    q_ref, yq, s_ref = ref_quantize(x)
    near_tie = np.abs(np.abs(yq - np.floor(yq)) - 0.5) < 1e-4  # OpenCL's divide: up to 2.5 ulp
    assert not ((q != q_ref) & ~near_tie).any(), f"quantize {what}"
    np.testing.assert_allclose(s, s_ref.astype(np.float32), rtol=1e-7)
    if dtype == "float64":
        np.testing.assert_allclose(rowops.cumsum(x, axis=-1, device=cl_device), np.cumsum(x, -1), rtol=1e-9, atol=1e-9)
    else:
        _assert_cumsum_bound(rowops.cumsum(x, axis=-1, device=cl_device), x, -1, f"cumsum {what}")
    p = np.exp(0.001 * rng.standard_normal(shape)).astype(dtype)  # products stay near 1 over 10**6 terms
    n = np.arange(1, shape[-1] + 1)
    rel = np.abs(rowops.cumprod(p, axis=-1, device=cl_device) / np.cumprod(p.astype(np.float64), -1) - 1)
    assert np.all(rel <= (n + 1) * U32 * 1.01 + 2.0 ** -11 * (dtype == "float16")), f"cumprod {what}"
    with np.errstate(invalid="ignore"):
        want = np.logaddexp.accumulate(x.astype(np.float64), axis=-1)
    tol = 2e-3 if dtype == "float16" else 2e-5
    np.testing.assert_allclose(rowops.logcumsumexp(x, axis=-1, device=cl_device).astype(np.float64), want,
                               rtol=tol, atol=tol, err_msg=f"logcumsumexp {what}")
    np.testing.assert_array_equal(x, before, err_msg="input modified")


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_inf_nan_follow_scipy(cl_device, op):
    """NaN and +inf rows give NaN, all -inf rows NaN, -inf elements 0 (softmax) -- scipy's
    formulas, evaluated in float64 on the same rows; the uncached, local and split variants
    agree (a split chunk of only -inf, or holding the row's +inf, keeps the rules)."""
    fn, ref = getattr(rowops, op), (ref_softmax if op == "softmax" else ref_log_softmax)
    tol = TOL if op == "softmax" else LOG_TOL
    for dtype, rows in (("float32", ADVERSARIAL), ("float16", {**HALF_ROWS, **{k: v for k, v in ADVERSARIAL.items()
                                                                             if "1e" not in str(v)}})):
        x = np.array(list(rows.values()), dtype=dtype) if dtype == "float32" else \
            np.array([r for r in rows.values() if np.all(np.abs(np.array(r)[np.isfinite(r)]) < 65505)], dtype=dtype)
        want = ref(x)
        forces = (None, RowForce(cache="none"), RowForce(cache="none", split=2), RowForce(cache="local", lanes=1)) \
            if dtype == "float32" \
            else (None,)  # float16 is storage only: the math is float32's, checked above
        for force in forces:
            got = fn(x, device=cl_device, force=force)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op} {dtype} {force} NaN positions")
            _close(got, want, dtype, tol, f"{op} {dtype} {force}")
    assert np.isnan(rowops.softmax(np.full((2, 5), -np.inf, np.float32), device=cl_device)).all()


def _long_special_rows(k: int) -> dict[str, np.ndarray]:
    """Rows of k elements with the specials inside vector runs and in the scalar tail."""
    rows = {name: np.resize(np.array(r, np.float64), k) for name, r in ADVERSARIAL.items()}
    rows["rising (max moves every run)"] = np.linspace(-60.0, 60.0, k)
    rows["-inf prefix"] = np.where(np.arange(k) < 40, -np.inf, np.linspace(-3.0, 3.0, k))
    rows["+inf in the tail"] = np.where(np.arange(k) == k - 1, np.inf, np.linspace(-3.0, 3.0, k))
    rows["nan in the tail"] = np.where(np.arange(k) == k - 2, np.nan, np.linspace(-3.0, 3.0, k))
    return rows


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_specials_in_runs_of_long_rows(cl_device, op):
    """Rows read from memory go run by run through vector exp on CPU runtimes (softmax.cl,
    WALK_RUNS): the specials must keep scipy's rules when they sit inside a run (K = 139: 8
    runs of 16 and a tail of 11 on CPUs; 34 runs of 4 and a tail of 3 on GPUs), when the max
    moves in every run, and in split rows."""
    fn, ref = getattr(rowops, op), (ref_softmax if op == "softmax" else ref_log_softmax)
    tol = TOL if op == "softmax" else LOG_TOL
    rows = _long_special_rows(139)
    for dtype in ("float32", "float16"):
        x = np.array([r for r in rows.values() if dtype == "float32" or np.all(np.abs(r[np.isfinite(r)]) < 65505)],
                     dtype=dtype)
        want = ref(x)
        for force in (None, RowForce(cache="none"), RowForce(cache="none", split=2)):
            got = fn(x, device=cl_device, force=force)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op} {dtype} {force} NaN positions")
            _close(got, want, dtype, tol, f"{op} {dtype} {force}")


# K: 1 (no vector run, the tail alone), 13 (one or two runs and a tail; Intel: its register
# rows), 129 (runs, a tail of 1), 4096 (REG_FLOATS_CPU: the longest rows in groups of 16), 9000
# (past it: a row a group)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("k", [1, 13, 129, 4096, 9000])
def test_softmax_rows_walked_three_times_on_cpus(cl_device, cl_queue, op, k):
    """softmax.cl CPU_PASSES (CPU runtimes' default for softmax rows): the max, then the exp
    terms summed (float32 / float64 softmax: stored), then the write, each a walk of the row in
    vectors. Rows with specials and a 1e4 offset (float16: 6e4), the array one element past
    an aligned address (and rows of 13 and 129 start anywhere): unaligned vector loads. Every
    device runs the rows; the CPU runtimes that vectorise must plan them with CPU_PASSES."""
    caps = opencl_rowops.runnable_caps(cl_queue)
    fn, ref, tol = ((rowops.softmax, ref_softmax, TOL) if op == "softmax" else
                    (rowops.log_softmax, ref_log_softmax, LOG_TOL))
    for dtype in ("float32", "float16") + (("float64",) if caps.fp64 else ()):
        rows = 24
        x = _rng("passes", op, k, dtype).standard_normal((rows, k)) * 4
        x[1::2] += 1e4 if dtype != "float16" else 6e4  # float16: near 65504
        specials = [r for r in (ADVERSARIAL if dtype != "float16" else {**ADVERSARIAL, **HALF_ROWS}).values()
                    if k >= len(r) and (dtype != "float16" or np.all(np.abs(np.asarray(r)[np.isfinite(r)]) < 65505))]
        for i, r in enumerate(specials[:rows - 4]):
            x[4 + i, :len(r)] = r
        x[2, :] = -np.inf
        x[3, k // 2] = np.nan
        storage = np.empty(rows * k + 1, dtype)
        xs = storage[1:].reshape(rows, k)  # one element past numpy's aligned allocation
        xs[...] = x
        if caps.device_type == "cpu" and not llvmpipe_loop_limited(caps) and k >= 129:
            plan = plan_row(caps, RowProblem(op, rows, k, dtype))
            assert dict(plan.defines).get("CPU_PASSES") == "1", plan.defines
        got = fn(xs, device=cl_device)
        want = ref(xs)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op} {dtype} K={k} NaN positions")
        _close(got, want, dtype, tol, f"{op} {dtype} K={k}")


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_split_rows_walked_on_cpus(cl_device, cl_queue, op):
    """A row or two too long for one work-item and too few for the cores: CPU_PASSES splits
    them (PHASE 1: each chunk's max, then its sum; PHASE 2: the fold and a vector write). A NaN,
    an inf and a row of -inf each in its own chunk, a hot element per chunk; a row of 70001
    leaves a short last chunk and a tail past the runs."""
    caps = opencl_rowops.runnable_caps(cl_queue)
    fn, ref, tol = ((rowops.softmax, ref_softmax, TOL) if op == "softmax" else
                    (rowops.log_softmax, ref_log_softmax, LOG_TOL))
    for dtype, rows, k in (("float32", 1, 200_003), ("float32", 3, 70_001), ("float16", 3, 70_001)):
        x = _rng("split passes", op, rows, k).standard_normal((rows, k)).astype(dtype) * 4
        x[0, ::9973] += 30
        if rows == 3:
            x[0, 69_999] = np.nan
            x[1, 5] = np.inf
            x[2, :] = -np.inf
        if caps.device_type == "cpu" and not llvmpipe_loop_limited(caps):
            plan = plan_row(caps, RowProblem(op, rows, k, dtype))
            assert plan.split > 1 and dict(plan.defines).get("CPU_PASSES") == "1", plan.defines
        got = fn(x, device=cl_device)
        want = ref(x)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op} {dtype} {rows}x{k} NaN positions")
        _close(got, want, dtype, tol, f"{op} {dtype} {rows}x{k}")


def _check_norms(x, w, b, got_rms, got_layer, got_moments, dtype, what):
    """rms_norm, layer_norm and moments of rows x against numpy's float64 formulas: NaN where
    numpy's are, values within NORM_TOL; a mean's error relative to the row's mean of |x| (a
    sum's), the variance relative to itself, both on rows without an inf or NaN"""
    with np.errstate(all="ignore"):
        want_rms, want_layer = ref_rms_norm(x, w), ref_layer_norm(x, w, b)
        x64 = x.astype(np.float64)
        # finite rows whose squares pass even float64's range (float64 rows near 1e153): SCALED's
        # result, not numpy's x / inf
        past = np.isfinite(x64).all(-1) & ~np.isfinite(x64.var(-1) + (x64 * x64).sum(-1))
        if past.any():
            want_layer[past], want_rms[past] = ref_norms_past_the_range(x[past], w, b)
        for got, want, name in ((got_rms, want_rms, "rms_norm"), (got_layer, want_layer, "layer_norm")):
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{name} {what} NaN positions")
            _close(got, want, dtype, NORM_TOL, f"{name} {what}")
        mean, var = got_moments
        np.testing.assert_array_equal(np.isnan(var), np.isnan(x64.var(-1)), err_msg=f"moments {what} NaN positions")
        fin = np.isfinite(x64).all(-1)
        tol = NORM_TOL[dtype]["rtol"]
        assert (np.abs(mean[fin] - x64[fin].mean(-1)) <= tol * np.abs(x64[fin]).mean(-1)).all(), (what, mean)
        want_var = x64[fin].var(-1).astype(var.dtype).astype(np.float64)  # past the range: inf, as stored
        np.testing.assert_allclose(var[fin], want_var, rtol=tol, err_msg=f"moments {what}")


# K: 1 (no vector run, the tail alone), 13 (a run or two and a tail), 129 (runs, a tail of 1),
# 4096 (REG_FLOATS_CPU: the longest rows in groups of 16), 9000 (past it: a row a group)
@pytest.mark.parametrize("k", [1, 13, 129, 4096, 9000])
def test_norms_rows_walked_in_vectors_on_cpus(cl_device, cl_queue, k):
    """row_norm.cl CPU_PASSES (CPU runtimes' default for norm rows): the statistics, then the
    write, each a walk of the row in vectors, and RESCUE, WILD and SCALED between them as in
    every plan. Rows far from their first element, rows with a 1e4 offset (float16: 6e4),
    the adversarial rows (inf, NaN, squares past the range, float16 near 65504), a weight and
    a bias, the array one element past an aligned address. The CPU runtimes that vectorise must
    plan the rows with CPU_PASSES."""
    caps = opencl_rowops.runnable_caps(cl_queue)
    for dtype in _dtypes(cl_device):
        rows = 24
        rng = _rng("norm passes", k, dtype)
        x = rng.standard_normal((rows, k)) * 4
        x[1::2] += 1e4 if dtype != "float16" else 6e4
        if dtype != "float16" and k > 1:
            x[:4] = far_first_rows(k, dtype, rng)
        if dtype == "float16":
            x[2] = rng.integers(-1023, 1024, k) * 2.0**-24  # subnormal halves (their loads widen them)
        specials = [r for r in (ADVERSARIAL if dtype != "float16" else {**ADVERSARIAL, **HALF_ROWS}).values()
                    if k >= len(r) and (dtype != "float16" or np.all(np.abs(np.asarray(r)[np.isfinite(r)]) < 65505))]
        for i, r in enumerate(specials[:rows - 4]):
            x[4 + i, :len(r)] = r
        storage = np.empty(rows * k + 1, dtype)
        xs = storage[1:].reshape(rows, k)  # one element past numpy's aligned allocation
        xs[...] = x
        w = rng.uniform(0.5, 1.5, k).astype(dtype)
        b = rng.uniform(-1, 1, k).astype(dtype)
        if caps.device_type == "cpu" and not llvmpipe_loop_limited(caps) and k >= 129:
            for op in ("rms_norm", "layer_norm", "moments"):
                plan = plan_row(caps, RowProblem(op, rows, k, dtype, weight=op != "moments", bias=op == "layer_norm"))
                assert dict(plan.defines).get("CPU_PASSES") == "1", (op, plan.defines)
        _check_norms(xs, w, b, rowops.rms_norm(xs, w, device=cl_device), rowops.layer_norm(xs, w, b, device=cl_device),
                     rowops.moments(xs, device=cl_device), dtype, f"{dtype} K={k}")


def test_norms_split_rows_walked_on_cpus(cl_device, cl_queue):
    """A row or three too long for one work-item and too few for the cores: CPU_PASSES splits
    them (PHASE 1: each chunk's statistics in vectors, RESCUE'd around its own first element;
    PHASE 2: Chan's merge and a vector write). A NaN and an inf in chunks of their own rows, a
    first element of 1e7 (float16: 6e4) far from its row's mean, a row near 1e4, a short last
    chunk and a tail past the runs."""
    caps = opencl_rowops.runnable_caps(cl_queue)
    for dtype, rows, k in (("float32", 1, 200_003), ("float32", 3, 70_001), ("float16", 3, 70_001)):
        rng = _rng("norm split passes", rows, k, dtype)
        x = rng.standard_normal((rows, k)) * 4
        x[0, 0] = 1e7 if dtype != "float16" else 6e4
        if rows == 3:
            x[1] += 1e4 if dtype != "float16" else 6e4
            x[2, 69_999] = np.nan
            x[2, 5] = np.inf
        x = x.astype(dtype)
        w = rng.uniform(0.5, 1.5, k).astype(dtype)
        b = rng.uniform(-1, 1, k).astype(dtype)
        if caps.device_type == "cpu" and not llvmpipe_loop_limited(caps):
            for op in ("rms_norm", "layer_norm", "moments"):
                plan = plan_row(caps, RowProblem(op, rows, k, dtype, weight=op != "moments", bias=op == "layer_norm"))
                assert plan.split > 1 and dict(plan.defines).get("CPU_PASSES") == "1", (op, plan.defines)
        _check_norms(x, w, b, rowops.rms_norm(x, w, device=cl_device), rowops.layer_norm(x, w, b, device=cl_device),
                     rowops.moments(x, device=cl_device), dtype, f"{dtype} {rows}x{k}")


def test_row_variants_that_fail_to_build_fall_back(cl_device, cl_queue, monkeypatch):
    """A driver that refuses a row kernel's variant (an old Adreno compiler crashes on
    sub_group_reduce_*): a sub-group mode moves down the chain and is marked bad for the device
    (SubgroupModeFallbackWarning), an unforced CPU_PASSES plan runs with a forced cache
    (RowVariantFallbackWarning); both give numpy's rows. A refused forced mode, and a device
    that builds nothing, raise KernelBuildError."""
    from clreduce.backends import cl_fallback, opencl
    from clreduce.plan import _SG_MODE_MACRO

    caps = opencl.caps_of(cl_device)
    x = _rng("refused", 37, 300).standard_normal((37, 300)).astype(np.float32) * 4 + 100
    w = np.linspace(0.5, 1.5, 300).astype(np.float32)
    real = opencl_rowops._cached_kernel
    refused = set()

    def refusing(ctx, device, kernel_file, entry, options):
        if any(flag in " ".join(options) for flag in refused):
            raise opencl.KernelBuildError(f"refused by the test: {sorted(refused)}", log="error: refused")
        return real(ctx, device, kernel_file, entry, options)

    monkeypatch.setattr(opencl_rowops, "_cached_kernel", refusing)
    checked = set()
    try:
        # the default plans (CPU runtimes: CPU_PASSES), and teams of 4 lanes (a sub-group mode
        # where the device has sub-groups: Intel's runtime)
        for op, force in (("softmax", None), ("rms_norm", None), ("softmax", RowForce(lanes=4))):
            problem = RowProblem(op, 37, 300, "float32", weight=op == "rms_norm")
            refused.clear()
            opencl_rowops.clear_caches()
            cl_fallback.forget(caps)
            try:
                plan = opencl_rowops.plan_for(cl_queue, problem, force)[0]
            except UnsupportedOnDevice:
                continue  # teams of 4 on llvmpipe's groups
            if dict(plan.defines).get("CPU_PASSES") == "1":
                refused.add("-DCPU_PASSES=1")
                warning = opencl_rowops.RowVariantFallbackWarning
            elif cl_fallback.can_fall_back(plan.sg_mode):
                refused.add(f"-DSG_MODE={_SG_MODE_MACRO[plan.sg_mode]}")
                warning = cl_fallback.SubgroupModeFallbackWarning
            else:
                continue  # local memory, no vector walk (llvmpipe): nothing to fall back from
            opencl_rowops.clear_caches()
            fn = getattr(rowops, op)
            with pytest.warns(warning):
                got = fn(x, device=cl_device, force=force) if op == "softmax" else fn(x, w, device=cl_device)
            want = ref_softmax(x) if op == "softmax" else ref_rms_norm(x, w)
            _close(got, want, "float32", TOL if op == "softmax" else NORM_TOL, f"{op} {force} after {refused}")
            with warnings.catch_warnings():  # cl_queue's context: its own plan, its own warning
                warnings.simplefilter("ignore", warning)
                fallback_plan = opencl_rowops.plan_for(cl_queue, problem, force)[0]
            assert not any(flag in " ".join(fallback_plan.options) for flag in refused), fallback_plan.options
            checked.add(warning)
            if warning is cl_fallback.SubgroupModeFallbackWarning:
                with pytest.raises(opencl.KernelBuildError):  # a forced mode is the caller's
                    # (NVIDIA's OpenCL: the default plan's own mode, shuffle_ptx, forced)
                    opencl_rowops.plan_for(cl_queue, problem,
                                           dataclasses.replace(force or RowForce(), sg_mode=plan.sg_mode))
        refused.add("-D")  # every build fails
        opencl_rowops.clear_caches()
        with pytest.raises(opencl.KernelBuildError), warnings.catch_warnings():
            warnings.simplefilter("ignore", opencl_rowops.RowVariantFallbackWarning)
            rowops.softmax(x, device=cl_device)
    finally:
        opencl_rowops.clear_caches()
        cl_fallback.forget(caps)
    if caps.device_type == "cpu" and not llvmpipe_loop_limited(caps):
        assert opencl_rowops.RowVariantFallbackWarning in checked  # the CPU runtimes' vector walks
    if caps.implementation == "intel":
        assert cl_fallback.SubgroupModeFallbackWarning in checked  # its sub-groups


@pytest.mark.parametrize("axis", [0, 1, -3])
def test_softmax_any_axis(cl_device, axis):
    x = _rng("axis", axis).standard_normal((4, 5, 6)).astype(np.float32)
    _close(rowops.softmax(x, axis=axis, device=cl_device), ref_softmax(x, axis=axis), "float32", TOL, f"axis {axis}")
    _close(rowops.log_softmax(x, axis=axis, device=cl_device), ref_log_softmax(x, axis=axis), "float32", LOG_TOL,
           f"log axis {axis}")


def _sample(items, n, seed, request):
    if slow_enabled(request.config) or len(items) <= n:
        return items
    return random.Random(seed).sample(items, n)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "rms_norm", "layer_norm", "absmax_scale", "moments"])
def test_every_forced_variant(cl_device, cl_queue, op, request):
    """Each variant the planner can produce for this device (cache x sub-group mode x width x
    lanes x split), on a short row (K=7: teams inside a sub-group, padding lanes) and a long
    one (K=4097: not a multiple of any width). Sampled by default, all with --slow."""
    caps = opencl_rowops.runnable_caps(cl_queue)
    for k in (7, 4097):
        x = _rng(op, k).standard_normal((37, k)).astype(np.float32) * 3
        variants = row_variants(caps, RowProblem(op, 37, k, "float32"))
        for force in _sample(variants, 1, zlib.crc32(f"{op}{k}".encode()), request):
            what = f"{op} K={k} {force}"
            if op in ("softmax", "log_softmax"):
                ref = ref_softmax(x) if op == "softmax" else ref_log_softmax(x)
                _close(getattr(rowops, op)(x, device=cl_device, force=force), ref, "float32",
                       TOL if op == "softmax" else LOG_TOL, what)
            elif op == "rms_norm":
                _close(rowops.rms_norm(x, device=cl_device, force=force), ref_rms_norm(x), "float32", NORM_TOL, what)
            elif op == "layer_norm":
                _close(rowops.layer_norm(x, device=cl_device, force=force), ref_layer_norm(x), "float32", NORM_TOL, what)
            elif op == "moments":
                mean, var = rowops.moments(x, device=cl_device, force=force)
                _close(mean, x.astype(np.float64).mean(-1), "float32", NORM_TOL, what)
                _close(var, x.astype(np.float64).var(-1), "float32", NORM_TOL, what)
            else:
                y, amax = rowops.absmax_scale(x, device=cl_device, force=force)
                np.testing.assert_array_equal(amax, np.abs(x).max(-1), err_msg=what)
                _close(y, x / np.abs(x).max(-1, keepdims=True), "float32", TOL, what)


def test_write_walk_backwards_gives_the_same_rows(cl_device, monkeypatch):
    """WALK_BACK (row_common.h): the write walk of rows read from memory taken last run first,
    which the planner chooses only for CUDA rows whose working set passes the L2; forced here
    so that every OpenCL device checks the walk (rowops_refs.check_backward_write_walk)."""
    check_backward_write_walk(monkeypatch, opencl_rowops,
                              lambda op, x, force: getattr(rowops, op)(x, device=cl_device, force=force))


# ---- norms ---------------------------------------------------------------------------------------
def test_large_mean_float32_statistics_stay_accurate(cl_device):
    """Rows of 1e4 + N(0, 1) in float32: E[x^2] - E[x]^2 without a shift loses every digit
    (1e8 +- 6 in float32); the first-element shift and compensated sums keep var to 1e-5."""
    x = (1e4 + _rng("offset").standard_normal((16, 100_003))).astype(np.float32)
    x64 = x.astype(np.float64)
    for force in (None, RowForce(cache="none", lanes=1)):
        mean, var = rowops.moments(x, device=cl_device, force=force)
        np.testing.assert_allclose(var, x64.var(-1), rtol=1e-5)
        np.testing.assert_allclose(mean, x64.mean(-1), rtol=1e-7)
        _close(rowops.layer_norm(x, device=cl_device, force=force), ref_layer_norm(x), "float32",
               {"float32": dict(rtol=1e-4, atol=2e-4)}, "layer_norm offset 1e4")  # x itself has ulp 1e-3


def test_moments_any_axis_and_pyopencl(cl_device, cl_queue):
    import pyopencl.array as cla

    x = _rng("mom").standard_normal((6, 7, 8)).astype(np.float32)
    for axis in (0, 1, 2, -2):
        mean, var = rowops.moments(x, axis=axis, device=cl_device)
        np.testing.assert_allclose(mean, x.astype(np.float64).mean(axis), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(var, x.astype(np.float64).var(axis), rtol=1e-5, atol=1e-6)
    xd = cla.to_device(cl_queue, x)
    mean, var = rowops.moments(xd, axis=1)
    assert isinstance(mean, cla.Array) and mean.queue is cl_queue
    np.testing.assert_allclose(var.get(), x.astype(np.float64).var(1), rtol=1e-5, atol=1e-6)


def test_pyopencl_input_with_device_is_refused_as_the_reductions_refuse_it(cl_device, cl_queue):
    import pyopencl.array as cla

    x = cla.to_device(cl_queue, np.ones((2, 8), np.float32))
    for call in (lambda: rowops.softmax(x, device=cl_device), lambda: rowops.cumsum(x, axis=-1, device=cl_device)):
        with pytest.raises(ValueError, match="device= cannot move a pyopencl array"):
            call()
    with pytest.raises(ValueError, match="device= cannot move a pyopencl array"):
        import clreduce

        clreduce.sum(x, device=cl_device)


def test_pyopencl_in_pyopencl_out(cl_device, cl_queue):
    import pyopencl.array as cla

    x = _rng("cl").standard_normal((5, 6, 33)).astype(np.float32)
    w = _rng("clw").standard_normal(33).astype(np.float32)
    xd = cla.to_device(cl_queue, x)
    for got, want, tol in (
        (rowops.softmax(xd), ref_softmax(x), TOL),
        (rowops.softmax(xd, axis=1), ref_softmax(x, axis=1), TOL),
        (rowops.rms_norm(xd, cla.to_device(cl_queue, w)), ref_rms_norm(x, w), NORM_TOL),
        (rowops.layer_norm(xd, w), ref_layer_norm(x, w), NORM_TOL),
        (rowops.absmax_scale(xd, axis=0)[0], x / np.abs(x).max(0, keepdims=True), TOL),
    ):
        assert isinstance(got, cla.Array) and got.queue is cl_queue
        _close(got.get(), want, "float32", tol, "pyopencl")
    np.testing.assert_array_equal(xd.get(), x)
    # a float16 pyopencl weight with numpy input: read in the math type, not reinterpreted
    w16 = w.astype(np.float16)
    _close(rowops.rms_norm(x, cla.to_device(cl_queue, w16), device=cl_device), ref_rms_norm(x, w16), "float32",
           NORM_TOL, "float16 device weight")
    y16 = rowops.softmax(cla.to_device(cl_queue, x.astype(np.float16)))
    assert isinstance(y16, cla.Array) and y16.dtype == np.float16


# ---- absmax scale and int8 -------------------------------------------------------------------------
# K = 64 and 4100: rows walked from memory on CPU runtimes (row_scale.cl's vector maxima
# across runs), the NaN at a run's first, inner and last lane and in the unaligned tail
@pytest.mark.parametrize("k", [64, 4100])
def test_quantize_int8_rows_with_nan_or_inf_anywhere(cl_device, k):
    """A NaN anywhere in a row makes its scale NaN and its values 0; an inf its scale inf and
    its values 0 (x / inf, inf / inf); the other rows quantize as numpy's formula."""
    x = (_rng("qnan", k).standard_normal((12, k)) * 3).astype(np.float32)
    for row, col in enumerate((0, 1, 5, 7, 8, 15, 16, 33, k - 1, k - 2)):
        x[row, col] = np.nan
    x[10, k // 2] = np.inf
    q, s = rowops.quantize_int8(x, device=cl_device)
    q_ref, _, s_ref = ref_quantize(x)
    np.testing.assert_array_equal(np.isnan(s), np.isnan(s_ref))
    assert np.isnan(s[:10]).all() and s[10] == np.inf and np.isfinite(s[11])
    np.testing.assert_array_equal(q[:11], 0)
    np.testing.assert_allclose(s[11], s_ref[11], rtol=2.5 * 2.0 ** -23)  # OpenCL's divide: as below
    assert (np.abs(q[11].astype(int) - q_ref[11]) <= 1).all()


@pytest.mark.parametrize("shape, axis", [((9, 7), -1), pytest.param((33, 128), 0, marks=pytest.mark.slow),
                                         ((7, 4097), 0)])
def test_quantize_int8_round_half_even(cl_device, shape, axis):
    rng = _rng("q", shape)
    for dtype in _dtypes(cl_device):
        x = (rng.standard_normal(shape) * 3).astype(dtype)
        q, s = rowops.quantize_int8(x, axis=axis, device=cl_device)
        q_ref, y, s_ref = ref_quantize(x, axis)
        assert q.dtype == np.int8 and s.dtype == np.float32 and q.shape == x.shape and s.shape == s_ref.shape
        # scale = amax / 127: OpenCL C allows its float divide 2.5 ulp (NVIDIA's OpenCL driver
        # uses that latitude: 1 scale of 4097 was off by more than 1e-7 on an H100), so the
        # bound is 2.5 ulp of float32, relative; the CPU runtimes and CUDA divide exactly
        np.testing.assert_allclose(s, s_ref.astype(np.float32), rtol=2.5 * 2.0 ** -23)
        # OpenCL's float divide may be off by 2.5 ulp: only values within 1e-4 of a .5 tie
        # may round the other way
        near_tie = np.abs(np.abs(y - np.floor(y)) - 0.5) < 1e-4
        bad = (q != q_ref) & ~near_tie
        assert not bad.any(), f"{dtype}: {np.argwhere(bad)[:5]}"
        assert np.abs(q.astype(int) - q_ref.astype(int)).max() <= 1
        back = rowops.dequantize(q, s, axis=axis)
        assert np.all(np.abs(back - x.astype(np.float32)) <= np.expand_dims(s, axis) * 0.5001 + 1e-3 * (dtype == "float16"))


def test_quantize_int8_float64_scales_past_float32(cl_device):
    """float64 rows whose amax / 127 passes float32's range or falls below its least
    subnormal: the float32 scale returned is inf or 0, and q, from that scale, 0. q had come
    from the unrounded float64 scale, 127 beside a scale of inf, which dequantize could not
    give back (an outside fuzz run, 2026-11-29). A scale inside the range: q as numpy's
    formula gives it from the float32 scale."""
    if "float64" not in _dtypes(cl_device):
        pytest.skip("no fp64 on this device")
    x = np.array([[1e300, -3e299, 5.0, 0.0],     # 1e300 / 127: past float32's max
                  [1e-300, 3e-301, 0.0, -1e-301],  # below float32's least subnormal
                  [1e38, -5e37, 1e37, 3.3e36]])     # 7.9e35: inside the range
    q, s = rowops.quantize_int8(x, device=cl_device)
    assert s.dtype == np.float32 and s[0] == np.inf and s[1] == 0
    np.testing.assert_array_equal(q[:2], 0)
    s2 = np.float32(1e38 / 127)
    np.testing.assert_allclose(s[2], s2, rtol=2.5 * 2.0 ** -23)  # OpenCL's divide, as above
    np.testing.assert_array_equal(q[2], np.rint(x[2] / np.float64(s[2])).astype(np.int8))
    assert np.isfinite(rowops.dequantize(q[2:], s[2:])).all()


def test_norm_eps_is_checked_in_the_math_type(cl_device):
    """eps must be a normal number of the norm's math type: float64 input takes 1e-300 (zero
    rows stay 0), float32 input refuses it (0 in float32: zero rows would be NaN)."""
    if "float64" in _dtypes(cl_device):
        for op in (rowops.rms_norm, rowops.layer_norm):
            np.testing.assert_array_equal(op(np.zeros((2, 5)), eps=1e-300, device=cl_device), 0)
    with pytest.raises(ValueError, match="smallest normal float32"):
        rowops.rms_norm(np.zeros((2, 5), np.float32), eps=1e-300, device=cl_device)


def test_exact_ties_round_to_even(cl_device):
    # amax 127 -> scale exactly 1: x / 1 is exact and rint must pick the even neighbour
    x = np.array([[127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49]], np.float32)
    q, s = rowops.quantize_int8(x, device=cl_device)
    assert s[0] == 1.0
    np.testing.assert_array_equal(q, [[127, 0, 2, 2, 0, -2, -2, 3]])


def test_scale_specials_in_runs_of_long_rows(cl_device):
    """Rows read from memory go run by run through vector fabs / rint on CPU runtimes
    (row_scale.cl, WALK_RUNS): NaN and inf inside a run or in the tail, a zero row and exact
    ties (scale 1) give ref_quantize's values and x / amax, whole and split (K = 139)."""
    rows = _long_special_rows(139)
    rows["zeros"] = np.zeros(139)
    rows["ties"] = np.resize([127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49], 139)
    x = np.array(list(rows.values()), np.float32)
    want_q, _, want_s = ref_quantize(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        amax = np.abs(x).max(-1, keepdims=True)
        want_y = np.where(amax == 0, 0, x / amax)
    for force in (None, RowForce(cache="none"), RowForce(cache="none", split=2)):
        q, sc = rowops.quantize_int8(x, device=cl_device, force=force)
        np.testing.assert_array_equal(q, want_q, err_msg=f"quantize {force}")
        np.testing.assert_array_equal(sc, want_s, err_msg=f"scales {force}")
        y, am = rowops.absmax_scale(x, device=cl_device, force=force)
        np.testing.assert_array_equal(am, amax[:, 0], err_msg=f"absmax {force}")
        np.testing.assert_array_equal(np.isnan(y), np.isnan(want_y), err_msg=f"absmax_scale {force} NaN positions")
        _close(y, want_y, "float32", TOL, f"absmax_scale {force}")  # OpenCL's x / amax: 2.5 ulp


def test_norm_specials_in_runs_of_long_rows(cl_device):
    """Rows read from memory add their moments run by run on CPU runtimes (row_norm.cl,
    WALK_RUNS): NaN, +-inf inside a run or in the tail, a rising row and a 1e4 offset give
    numpy's formulas (K = 139: 8 runs of 16 and a tail of 11 on CPUs), whole and split."""
    rows = _long_special_rows(139)
    rows = {name: r for name, r in rows.items() if np.all(np.abs(r[np.isfinite(r)]) < 1e20)}
    rows["offset 1e4"] = 1e4 + np.cos(np.arange(139.0))
    x = np.array(list(rows.values()), np.float32)
    w = np.linspace(0.5, 1.5, 139).astype(np.float32)
    for force in (None, RowForce(cache="none"), RowForce(cache="none", split=2)):
        with np.errstate(invalid="ignore", over="ignore"):
            for got, want, what in ((rowops.rms_norm(x, w, device=cl_device, force=force), ref_rms_norm(x, w), "rms"),
                                    (rowops.layer_norm(x, w, device=cl_device, force=force), ref_layer_norm(x, w),
                                     "layer")):
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what} {force} NaN positions")
                _close(got, want, "float32", {"float32": dict(rtol=1e-4, atol=2e-4)}, f"{what} {force}")
            mean, var = rowops.moments(x, device=cl_device, force=force)
            x64 = x.astype(np.float64)
            np.testing.assert_array_equal(np.isnan(var), np.isnan(x64.var(-1)), err_msg=f"moments {force}")
            fin = np.isfinite(x64).all(-1)
            np.testing.assert_allclose(var[fin], x64.var(-1)[fin], rtol=1e-5, err_msg=f"moments {force}")
            # the rising row's mean is 0: each row's error is measured against its magnitude
            bound = 1e-6 * np.abs(x64[fin]).max(-1)
            assert (np.abs(mean[fin] - x64[fin].mean(-1)) <= bound).all(), f"moments {force}: {mean[fin]}"


def test_zero_rows_and_nonfinite_rows(cl_device):
    x = np.array([[0.0] * 5, [1.0, -2.0, 0.0, 4.0, 0.5], [1.0, np.nan, 0.0, 2.0, 3.0],
                  [1.0, np.inf, 0.0, -2.0, 3.0]], np.float32)
    y, amax = rowops.absmax_scale(x, device=cl_device)
    np.testing.assert_array_equal(y[0], 0.0)  # scale 0 -> values 0, no NaN
    np.testing.assert_array_equal(amax[:2], [0.0, 4.0])
    assert np.isnan(amax[2]) and np.isinf(amax[3])
    np.testing.assert_allclose(y[1], x[1] / 4)
    assert np.isnan(y[2]).all()
    np.testing.assert_array_equal(y[3], [0.0, np.nan, 0.0, -0.0, 0.0])
    q, s = rowops.quantize_int8(x, device=cl_device)
    np.testing.assert_array_equal(q[0], 0)
    assert s[0] == 0.0
    np.testing.assert_array_equal(q[2], 0)  # NaN scale: no finite quotient
    np.testing.assert_array_equal(q[3], 0)  # inf scale: x/inf = 0, inf/inf = NaN -> 0


# _FORCED_BUILD_LIMIT: a forced variant the device's compiler builds with a smaller work-group
# limit than the variant needs (Intel's CPU runtime: float64 moments with sub-groups of 64 build
# with a limit of 1) is refused with UnsupportedOnDevice, as the planner promises; the sweep
# goes on with the next variant (only --slow, which runs every variant, reached one).
def _forced_moments(x, device, force):
    """moments(x) under ``force`` -- two passes over registers, or the row read from memory
    (a local-cache variant runs uncached: moments has none) -- or None where the device
    refuses that forced variant (_FORCED_BUILD_LIMIT); the default plan must run."""
    try:
        return rowops.moments(x, device=device, force=force if force is None or force.cache != "local"
                              else dataclasses.replace(force, cache="none"))
    except UnsupportedOnDevice:
        if force is None:
            raise
        return None


# K = 100: rows in registers (two passes: nothing to rescue), the rescue's read of a row read
# from memory or of local memory; K = 5000: read from memory, whole and split (each chunk
# rescued by itself, Chan's merge in the write pass)
@pytest.mark.parametrize("k", [100, 5000])
def test_statistics_of_rows_far_from_their_first_element(cl_device, cl_queue, k, request):
    """row_norm.cl RESCUE: moments and layer_norm of rows whose shifted sums overflow or cancel
    give numpy's two-pass float64 statistics, on sampled forced variants (an outside fuzz run
    found an inf variance where numpy's float32 var is 1.0e36)."""
    caps = opencl_rowops.runnable_caps(cl_queue)
    # float16 squares add in float32: no overflow, and its cancellation stays under float16
    # rounding at these k
    for dtype in [d for d in _dtypes(cl_device) if d != "float16"]:
        x = far_first_rows(k, dtype, _rng("far", k, dtype))
        x64 = x.astype(np.float64)
        # one sampled variant beside the fixed ones (--slow: all): each forced build costs
        # seconds on llvmpipe and PoCL, and these two tests were CI's slowest
        forces = [None, RowForce(cache="none", split=3)] + _sample(
            row_variants(caps, RowProblem("layer_norm", 4, k, dtype)), 1, zlib.crc32(f"far{k}{dtype}".encode()), request)
        for force in forces:
            what = f"{dtype} K={k} {force}"
            stats = _forced_moments(x, cl_device, force)
            if stats is None:
                continue
            mean, var = stats
            np.testing.assert_allclose(var, x64.var(-1), rtol=NORM_TOL[dtype]["rtol"], err_msg=what)
            # a sum's error: relative to the mean of |x| (row 3's mean cancels)
            assert (np.abs(mean - x64.mean(-1)) <= NORM_TOL[dtype]["rtol"] * np.abs(x64).mean(-1)).all(), (what, mean)
            _close(rowops.layer_norm(x, device=cl_device, force=force), ref_layer_norm(x), dtype, NORM_TOL, what)


def test_layer_norm_of_rows_with_a_large_mean(cl_device, cl_queue, request):
    """Rows near 1e4 and 1e6 with a spread of 1: register rows centre on x0 + mean_reg as an
    unrounded pair (row_norm.cl m_hi + m_lo). Rounded to one float that centre is off by up to
    half an ulp of the mean (5e-4 at 1e4, 0.03 at 1e6), which y shows at once (8.6e-4 seen);
    (x - x0) - mean_reg, the older centring, lost bits where x0 lies far from the row instead
    (test_statistics_of_rows_far_from_their_first_element). 4.5e-7 seen; held to 2e-6."""
    caps = opencl_rowops.runnable_caps(cl_queue)
    rng = _rng("large-mean")
    for k in (100, 1000):
        x = (np.array([[1e4], [1e6], [-3e5], [7.0]]) + rng.standard_normal((4, k))).astype(np.float32)
        want = ref_layer_norm(x)
        registers = [v for v in row_variants(caps, RowProblem("layer_norm", 4, k, "float32")) if v.cache == "registers"]
        for force in [None] + _sample(registers, 2, zlib.crc32(f"large-mean{k}".encode()), request):
            try:
                y = rowops.layer_norm(x, device=cl_device, force=force)
            except UnsupportedOnDevice:
                if force is None:
                    raise
                continue  # see _FORCED_BUILD_LIMIT
            err = np.abs(y.astype(np.float64) - want).max()
            assert err <= 2e-6, (k, force, err)


# K = 6: whole rows in registers or read from memory, split in three; K = 100 and 5000 as
# above (the rescue's walk, registers' scaled second pass, split chunks' marked partials)
@pytest.mark.parametrize("k", [6, 100, 5000])
def test_statistics_of_rows_past_the_range(cl_device, cl_queue, k, request):
    """row_norm.cl WILD: a row holding an inf or NaN, or whose deviations from its first element
    overflow, gives numpy's mean and a NaN or inf variance (an inf first element gave a NaN
    mean, ±3e38 values a NaN variance), as does a row whose squares overflow (it gave NaN
    where split); layer_norm then writes NaN where the row holds an inf or NaN, and SCALED
    (row_norm.cl) normalises the finite rows past the range (they had given b, x / inf * w + b);
    rms_norm too (it had written 0)."""
    caps = opencl_rowops.runnable_caps(cl_queue)
    for dtype in [d for d in _dtypes(cl_device) if d != "float16"]:
        x, want_mean, want_var = wild_rows(k, dtype, _rng("wild", k, dtype))
        w = np.linspace(0.5, 1.5, k).astype(dtype)
        b = np.linspace(-1.0, 1.0, k).astype(dtype)
        forces = [None, RowForce(cache="none"), RowForce(cache="none", split=3)] + _sample(
            row_variants(caps, RowProblem("layer_norm", 9, k, dtype)), 1, zlib.crc32(f"wild{k}{dtype}".encode()), request)
        mean_abs = np.abs(x[5:].astype(np.float64)).mean(-1)
        with np.errstate(all="ignore"):
            want_y = ref_layer_norm(x[8:], w, b)
            want_rms = ref_rms_norm(x[:5], w)  # x / inf: 0, and NaN at the inf or NaN
        big_y, big_rms = ref_norms_past_the_range(x[5:8], w, b)
        for force in forces:
            what = f"{dtype} K={k} {force}"
            stats = _forced_moments(x, cl_device, force)
            if stats is None:
                continue
            mean, var = stats
            np.testing.assert_array_equal(mean[:5], want_mean[:5], err_msg=what)
            # row 5 cancels: its mean's error is relative to the mean of |x|, as a sum's
            assert (np.abs(mean[5:] - want_mean[5:]) <= NORM_TOL[dtype]["rtol"] * mean_abs).all(), (what, mean)
            np.testing.assert_array_equal(var[:8], want_var[:8], err_msg=what)
            np.testing.assert_allclose(var[8], want_var[8], rtol=NORM_TOL[dtype]["rtol"], err_msg=what)
            y = rowops.layer_norm(x, w, b, device=cl_device, force=force)
            assert np.isnan(y[:5]).all(), (what, y[:5])
            _close(y[5:8], big_y, dtype, NORM_TOL, what)
            _close(y[8:], want_y, dtype, NORM_TOL, what)
            r = rowops.rms_norm(x, w, device=cl_device, force=force)
            np.testing.assert_array_equal(r[:5], want_rms, err_msg=what)
            _close(r[5:8], big_rms, dtype, NORM_TOL, what)


# K = 48: chunks of 12, so work-items of the flat write cover runs of several chunks; K = 4000:
# chunks of 1000. Both multiples of every device's VEC (Intel's runtime: 16).
@pytest.mark.parametrize("k", [48, 4000])
def test_flat_write_gives_the_walked_writes_bits(cl_device, k):
    """row_norm.cl FLAT_WRITE (CUDA's default for split norms, forced here): PHASE 2 folds the
    chunks into each row's write constants and PHASE 3 writes the rows flat; the walked split
    write (PHASE 2 alone) gives the same bits, on adversarial rows (WILD, SCALED, RESCUE,
    all-equal, float16 near 65504), with and without weight and bias."""
    walked, flat = RowForce(cache="none", split=4, flat_write=False), RowForce(cache="none", split=4, flat_write=True)
    for dtype in _dtypes(cl_device):
        x = flat_write_rows(k, dtype, _rng("flat", k, dtype))
        w = np.linspace(0.5, 1.5, k).astype(dtype)
        b = np.linspace(-1.0, 1.0, k).astype(dtype)
        for op, params in (("rms_norm", ()), ("rms_norm", (w,)), ("layer_norm", ()), ("layer_norm", (w, b))):
            what = f"{op} {dtype} K={k} params {len(params)}"
            fn = getattr(rowops, op)
            with np.errstate(all="ignore"):
                want = fn(x, *params, device=cl_device, force=walked)
                got = fn(x, *params, device=cl_device, force=flat)
            np.testing.assert_array_equal(got, want, err_msg=what)
            # the plain last row, against numpy (the walked write's own tests cover the rest)
            ref = ref_rms_norm(x[-1:], *params) if op == "rms_norm" else ref_layer_norm(x[-1:], *params)
            _close(got[-1:], ref, dtype, NORM_TOL, what)


def test_flat_write_forced_where_it_cannot_run_raises(cl_device, cl_queue):
    """flat_write=True on a plan without split rows, on softmax, or on rows that are no
    multiple of the run: UnsupportedOnDevice, never another plan."""
    x = np.ones((2, 4000), np.float32)
    for op, force in (("rms_norm", RowForce(split=1, flat_write=True)),
                      ("softmax", RowForce(cache="none", split=4, flat_write=True))):
        with pytest.raises(UnsupportedOnDevice, match="flat_write"):
            getattr(rowops, op)(x, device=cl_device, force=force)
    odd = RowProblem("layer_norm", 2, 4001, "float32")
    if plan_row(opencl_rowops.runnable_caps(cl_queue), odd, RowForce(cache="none", split=4)).vec > 1:
        # (llvmpipe reads element by element: VEC 1 divides every row)
        with pytest.raises(UnsupportedOnDevice, match="flat_write"):
            rowops.layer_norm(np.ones((2, 4001), np.float32), device=cl_device,
                              force=RowForce(cache="none", split=4, flat_write=True))


def test_split_rows_of_one_value(cl_device):
    """All-equal rows: variance 0, mean the value, layer_norm 0, whole and split (a merge around
    the chunks' weighted mean had given -1e19 x K a variance of 4e9 and layer_norm -1, 3e38 an
    inf variance: the weights' rounding; a re-run of the outside fuzzer)."""
    values = [-1e19, 1e30, 1e10, 3e38, 1e4 + 0.25, -2.5]
    x = np.repeat(np.array(values, np.float32)[:, None], 5000, axis=1)
    for force in (None, RowForce(cache="none"), RowForce(cache="none", split=3), RowForce(cache="none", split=16)):
        try:
            mean, var = rowops.moments(x, device=cl_device, force=force)
            y = rowops.layer_norm(x, device=cl_device, force=force)
        except UnsupportedOnDevice:
            continue  # split 3 under llvmpipe's loop limit
        np.testing.assert_array_equal(mean, x[:, 0], err_msg=f"{force}")
        np.testing.assert_array_equal(var, 0, err_msg=f"{force}")
        np.testing.assert_array_equal(y, 0, err_msg=f"{force}")


# K = 10: one lane's walk of a row read from memory (CPUs) or two passes over registers; K =
# 1000: the same, and split in three (each chunk's own walk, then the merge)
@pytest.mark.parametrize("k", [10, 1000])
def test_statistics_when_the_running_deviations_overflow(cl_device, k):
    """Every value finite and near the maximum, the first between the rest: the deviations
    from the mean sum to ~0, but their running sum in row order passes the range (an outside
    fuzz run: [2e38, 1.5e38 x4, 3e38 x5] gave moments (-inf, NaN) on every device). The mean
    is still the row's and the variance inf, as numpy's float32 two passes give; layer_norm
    normalises the row all the same (row_norm.cl SCALED; it had written b, x / inf * w + b)."""
    x = np.full((2, k), 1.5e38, np.float32)
    x[:, 0] = 2e38
    x[:, 1 + (k - 1) * 4 // 9:] = 3e38
    x[1] = x[1, ::-1]
    want_mean = x.astype(np.float64).mean(-1)
    w = np.linspace(0.5, 1.5, k).astype(np.float32)
    b = np.linspace(-1.0, 1.0, k).astype(np.float32)
    want_y, _ = ref_norms_past_the_range(x, w, b)
    for force in (None, RowForce(cache="none"), RowForce(cache="registers"), RowForce(cache="none", split=3)):
        try:
            mean, var = rowops.moments(x, device=cl_device, force=force)
            y = rowops.layer_norm(x, w, b, device=cl_device, force=force)
        except UnsupportedOnDevice:
            continue  # registers for K = 1000 on a GPU plan, split 3 under llvmpipe's loop limit
        np.testing.assert_allclose(mean, want_mean, rtol=NORM_TOL["float32"]["rtol"], err_msg=f"{force}")
        np.testing.assert_array_equal(var, np.inf, err_msg=f"{force}")
        _close(y, want_y, "float32", NORM_TOL, f"{force}")


# K = 7: registers (CPU plans) or a warp's lanes; 4097: local memory or memory; split in three
@pytest.mark.parametrize("k", [7, 4097])
def test_norms_of_rows_whose_squares_overflow(cl_device, cl_queue, k, request):
    """row_norm.cl SCALED: float32 rows of N(0, 1) * 1e30 (squares of 1e60) and of 1e30 with
    a 1e24 spread normalise to the float64 result; rms_norm had written 0 and layer_norm b
    (x / inf), as numpy's and torch's float32 formulas do. Every forced variant, sampled."""
    rng = _rng("squares", k, "float32")
    x = np.stack([rng.standard_normal(k) * 1e30, 1e30 + 1e24 * rng.standard_normal(k),
                  rng.standard_normal(k)]).astype(np.float32)  # the last row: an ordinary one
    w = rng.standard_normal(k).astype(np.float32)
    b = rng.standard_normal(k).astype(np.float32)
    want_y, want_rms = ref_norms_past_the_range(x[:2], w, b)
    caps = opencl_rowops.runnable_caps(cl_queue)
    forces = [None, RowForce(cache="none", split=3)] + _sample(
        row_variants(caps, RowProblem("layer_norm", 3, k, "float32")), 3, zlib.crc32(f"squares{k}".encode()), request)
    for force in forces:
        try:
            y = rowops.layer_norm(x, w, b, device=cl_device, force=force)
            r = rowops.rms_norm(x, w, device=cl_device, force=force)
        except UnsupportedOnDevice:
            continue  # split 3 of K = 7 under llvmpipe's loop limit, ...
        _close(y[:2], want_y, "float32", NORM_TOL, f"layer_norm {force}")
        _close(r[:2], want_rms, "float32", NORM_TOL, f"rms_norm {force}")
        _close(y[2:], ref_layer_norm(x[2:], w, b), "float32", NORM_TOL, f"layer_norm {force}")
        _close(r[2:], ref_rms_norm(x[2:], w), "float32", NORM_TOL, f"rms_norm {force}")


def test_absmax_scale_float16_near_max(cl_device):
    x = np.array([[65504.0, -65504.0, 1.0, 0.0], [60000.0, 30000.0, -15000.0, 1e-4]], np.float16)
    y, amax = rowops.absmax_scale(x, device=cl_device)
    assert y.dtype == np.float16 and amax.dtype == np.float16
    np.testing.assert_array_equal(amax, [65504.0, 60000.0])
    _close(y, x.astype(np.float64) / np.array([[65504.0], [60000.0]]), "float16", TOL, "half absmax")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("k", [7, 1003, 40000])
def test_scale_rows_of_zeros_at_odd_offsets(cl_device, dtype, k):
    """Rows of zeros (+0 and -0) among others, each row starting at an odd element offset
    (k odd): absmax_scale writes +0 there, quantize_int8 0, both scales 0. On Debian's PoCL a
    float16 zero row written from a constant vector killed the process (row_scale.cl
    CPU_PASSES, an aligned store at 2006 bytes); 40000 splits rows on the CPU plans."""
    if dtype not in _dtypes(cl_device):
        pytest.skip("no fp64 on this device")
    rng = _rng("zero-rows", k, dtype)
    x = (rng.standard_normal((5, k)) * 30).astype(dtype)
    x[1] = 0
    x[3] = -0.0
    x[3, ::2] = 0.0
    y, amax = rowops.absmax_scale(x, device=cl_device)
    ref = np.abs(x.astype(np.float64)).max(-1)
    np.testing.assert_array_equal(amax, ref.astype(dtype))
    assert not np.signbit(y[[1, 3]]).any() and (y[[1, 3]] == 0).all()
    tol = 1e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(y[[0, 2, 4]].astype(np.float64), x[[0, 2, 4]].astype(np.float64) / ref[[0, 2, 4], None],
                               rtol=tol, atol=tol)
    q, scales = rowops.quantize_int8(x, device=cl_device)
    assert (q[[1, 3]] == 0).all() and (scales[[1, 3]] == 0).all()
    assert np.abs(q[[0, 2, 4]]).max(-1).tolist() == [127, 127, 127]


# ---- empty and bad input ---------------------------------------------------------------------------
def test_empty_inputs(cl_device):
    for shape in ((0, 5), (3, 0)):
        x = np.zeros(shape, np.float32)
        assert rowops.softmax(x, device=cl_device).shape == shape
        assert rowops.layer_norm(x, device=cl_device).shape == shape
        q, s = rowops.quantize_int8(x, device=cl_device)
        assert q.shape == shape and s.shape == shape[:1] and q.dtype == np.int8
    mean, var = rowops.moments(np.zeros((3, 0), np.float32), device=cl_device)
    assert np.isnan(mean).all() and np.isnan(var).all() and mean.shape == (3,)


@pytest.mark.parametrize("call, error, match", [
    (lambda d: rowops.softmax(np.arange(6).reshape(2, 3), device=d), TypeError, "float"),
    (lambda d: rowops.log_softmax(np.ones((2, 3), bool), device=d), TypeError, "float"),
    (lambda d: rowops.rms_norm(np.ones((2, 3), np.int32), device=d), TypeError, "float"),
    (lambda d: rowops.layer_norm(np.ones((2, 3), np.float32), weight=np.ones(4, np.float32), device=d),
     ValueError, "shape"),
    (lambda d: rowops.layer_norm(np.ones((2, 3), np.float32), bias=np.ones((1, 3), np.float32), device=d),
     ValueError, "shape"),
    (lambda d: rowops.rms_norm(np.ones((2, 3), np.float32), weight=np.ones(3, np.int64), device=d),
     TypeError, "weight"),
    (lambda d: rowops.rms_norm(np.ones((2, 3), np.float32), eps=0, device=d), ValueError, "eps"),
    (lambda d: rowops.layer_norm(np.ones((2, 3), np.float32), eps=-1e-5, device=d), ValueError, "eps"),
    (lambda d: rowops.layer_norm(np.ones((2, 3), np.float32), eps=float("nan"), device=d), ValueError, "eps"),
    # > 0 but 0 (or flushed) in the math type, float32 for float16/32 input: zero rows gave NaN
    (lambda d: rowops.rms_norm(np.zeros((2, 3), np.float32), eps=1e-50, device=d), ValueError, "smallest normal"),
    (lambda d: rowops.layer_norm(np.zeros((2, 3), np.float16), eps=1e-40, device=d), ValueError, "smallest normal"),
    # the mirror: inf in the math type, every row 0; a Python int past float64 (OverflowError
    # before; both from an outside fuzz run, 2026-11-30)
    (lambda d: rowops.rms_norm(np.ones((2, 3), np.float32), eps=1e39, device=d), ValueError, "largest float32"),
    (lambda d: rowops.layer_norm(np.ones((2, 3), np.float16), eps=1e39, device=d), ValueError, "largest float32"),
    (lambda d: rowops.rms_norm(np.ones((2, 3), np.float32), eps=10**400, device=d), ValueError, "finite"),
    (lambda d: rowops.softmax(np.ones((2, 3), np.float32), force=RowForce(lookback=True), device=d),
     UnsupportedOnDevice, "scan plan"),
    # float() accepts both; neither is an epsilon (they ran silently until 2026-11-27)
    (lambda d: rowops.rms_norm(np.ones((2, 3), np.float32), eps="1e-5", device=d), TypeError, "eps"),
    (lambda d: rowops.layer_norm(np.ones((2, 3), np.float32), eps=True, device=d), TypeError, "eps"),
    (lambda d: rowops.softmax(np.ones((2, 3), np.float32), axis=2, device=d), AxisError, None),
    (lambda d: rowops.moments(np.ones((2, 3), np.float32), axis=-3, device=d), AxisError, None),
    (lambda d: rowops.softmax(np.float32(1.0), device=d), AxisError, None),
    (lambda d: rowops.rms_norm(np.float32(1.0), device=d), AxisError, None),
    (lambda d: rowops.softmax(np.ones((2, 3), np.float32), axis=(0, 1), device=d), TypeError, "one axis"),
    # numpy's rule (axis=True had run as axis 1); a queue= of another type (it raised AttributeError)
    (lambda d: rowops.softmax(np.ones((2, 3), np.float32), axis=True, device=d), TypeError, "bool"),
    (lambda d: rowops.cumsum(np.ones((2, 3), np.float32), axis=np.bool_(False), device=d), TypeError, "bool"),
    (lambda d: rowops.rms_norm(np.ones((2, 3), np.float32), queue="q"), TypeError, "CommandQueue"),
    (lambda d: rowops.quantize_int8(np.ones((2, 3), np.int8), device=d), TypeError, "float"),
    (lambda d: rowops.dequantize(np.ones((2, 3), np.int32), np.ones(2, np.float32)), TypeError, "int8"),
    (lambda d: rowops.dequantize(np.ones((2, 3), np.int8), np.ones(3, np.float32)), ValueError, "shape"),
    # force=: a RowForce or a dict of its fields; the reductions' Force, a typo'd key or a
    # value the planner would have read as "its choice" are refused by name
    (lambda d: rowops.softmax(np.ones((2, 3), np.float32), force={"lane": 2}, device=d), TypeError,
     "softmax: unknown force key.*'lane'"),
    (lambda d: rowops.cumsum(np.ones((2, 3), np.float32), force="registers", device=d), TypeError,
     "cumsum: force must be"),
    (lambda d: rowops.rms_norm(np.ones((2, 3), np.float32), force=Force(lanes=2), device=d), TypeError,
     "RowForce"),
    (lambda d: rowops.layer_norm(np.ones((2, 3), np.float32), force={"lanes": 0}, device=d), ValueError,
     "lanes=0"),
    (lambda d: rowops.softmax(np.ones((2, 3), np.float32), force={"lanes": 2.0}, device=d), TypeError,
     "lanes must be an int"),
    (lambda d: rowops.moments(np.ones((2, 3), np.float32), force={"cache": "reg"}, device=d), ValueError,
     "unknown cache"),
    (lambda d: rowops.cumsum(np.ones((2, 3), np.float32), force={"lookback": 1}, device=d), TypeError,
     "lookback"),
])
def test_bad_input(cl_device, call, error, match):
    with pytest.raises(error, match=match):
        call(cl_device)


@pytest.mark.parametrize("op", ["softmax", "layer_norm", "cumsum"])
def test_force_dict_is_the_row_force(cl_device, op):
    """force={...} plans as RowForce(...) does (the reductions take a dict of Force's fields):
    the same forced variant, so the same bits; {} is the planner's own choice."""
    x = _rng("force-dict", op).standard_normal((6, 40)).astype(np.float32)
    fn = getattr(rowops, op)
    kwargs = {"axis": -1} if op == "cumsum" else {}
    forced = fn(x, device=cl_device, force=RowForce(lanes=1, sg_mode="local"), **kwargs)
    np.testing.assert_array_equal(fn(x, device=cl_device, force={"lanes": 1, "sg_mode": "local"}, **kwargs), forced)
    np.testing.assert_array_equal(fn(x, device=cl_device, force={}, **kwargs), fn(x, device=cl_device, **kwargs))


# ---- scans -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["bool", pytest.param("int8", marks=pytest.mark.slow), "uint8",
                                   pytest.param("int32", marks=pytest.mark.slow), "uint32", "int64"])
def test_integer_cumsum_cumprod_exact_like_numpy(cl_device, dtype):
    rng = _rng("icum", dtype)
    info = np.iinfo(dtype) if dtype != "bool" else None
    shape = (7, 1001)
    if dtype == "bool":
        x = noncanonical_bools(rng, shape)  # bytes 0-255: 0xff had added 255 (IN_BOOL)
    else:
        x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    if dtype == "int64":
        x[0, :3] = np.iinfo(np.int64).max  # the sum wraps around, as numpy's does
    # bool: one team's tiles and split chunks (the scan's load paths: vector runs, elements)
    forces = (None, RowForce(split=3)) if dtype == "bool" else (None,)
    for axis in (-1, 0, None):
        for op in ("cumsum", "cumprod"):
            for force in forces:
                try:
                    got = getattr(rowops, op)(x, axis=axis, device=cl_device, force=force)
                except UnsupportedOnDevice:
                    continue  # split 3 under llvmpipe's loop limit
                want = getattr(np, op)(x, axis=axis)
                assert got.dtype == want.dtype and got.shape == want.shape, (op, dtype, axis)
                np.testing.assert_array_equal(got, want, err_msg=f"{op} {dtype} axis={axis} {force}")


def test_float16_cumsum_long_rows_rounds_once(cl_device):
    """float16 cumsum adds in float32 and rounds each output once: within the stated bound
    (float32 error + half a float16 ulp of the result) on rows of 4096+, where numpy's own
    float16 cumsum, which adds in float16 (every partial sum rounded to half), is not."""
    rng = _rng("cum16")
    x = (rng.standard_normal((3, 4099)) + 0.25).astype(np.float16)  # sums drift to ~1000: ulp 0.5-1
    got = rowops.cumsum(x, axis=-1, device=cl_device)
    assert got.dtype == np.float16
    _assert_cumsum_bound(got, x, -1, "float16 cumsum, rows of 4099")
    # the same values as float32 accumulation rounded to float16, up to one float16 ulp (the
    # float32 sums of a blocked order and of numpy's sequential order round either way)
    f32 = np.cumsum(x.astype(np.float32), -1).astype(np.float16)
    assert np.all(np.abs(got.astype(np.float64) - f32) <= np.spacing(np.abs(f32)).astype(np.float64)), \
        "float16 cumsum differs from float32-accumulated-then-rounded by more than one ulp"
    with pytest.raises(AssertionError):  # numpy accumulates float16 in float16: outside the bound
        _assert_cumsum_bound(np.cumsum(x, -1), x, -1, "numpy's float16 cumsum")


def _half_ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in float16 ulps of want (subnormal ulp 2**-24), want a float64 array"""
    ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / ulp


# float16 softmax rows, by the branch each takes on the CPU runtimes (softmax.cl CPU_PASSES):
ROUND_ONCE_SHAPES = [
    (300, 7),        # a row shorter than a vector: every term in the scalar tail
    (200, 1000),     # CPU_HALF_TERMS 1024: whole runs kept, a tail of 8 taken again
    (20, 4096),      # the array exactly full (the last size of groups of 16 rows)
    (3, 40000),      # CPU_HALF_TERMS 65536: the largest array, 256 KB a work-item
    (2, 70000),      # past CPU_HALF_TERMS_MAX: each exp taken twice, in the sum and the write
]


@pytest.mark.parametrize("rows,k", ROUND_ONCE_SHAPES)
def test_float16_softmax_rounds_once(cl_device, rows, k):
    """float16 softmax is its float32 result rounded to half once: within half a float16 ulp
    (and float32's few ulp) of float64's softmax. A term stored to the output as a half and
    scaled there would be rounded twice, up to an ulp off; thousands of outputs per shape
    show that."""
    rng = _rng("sm16once", k)
    x = (rng.standard_normal((rows, k)) * 3).astype(np.float16)
    got = rowops.softmax(x, axis=-1, device=cl_device)
    assert got.dtype == np.float16
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)
    worst = float(_half_ulps(got, want).max())
    assert worst <= 0.51, f"float16 softmax {rows}x{k}: {worst:.3f} float16 ulps from float64's"


@pytest.mark.parametrize("dtype", ["float16", pytest.param("float32", marks=pytest.mark.slow)])
def test_vector_runs_forced(cl_device, dtype, request):
    """VEC > 1 (GPU plans' 16-byte runs; CPUs plan VEC 1) forced on any device: the runs
    tile the row, padding and team reduces stay exact."""
    rng = _rng("vec", dtype)
    slow = slow_enabled(request.config)
    cases = ((128, 8, None), (40, 8, 4), (1000, 8, 32), (16, 16, 1)) if slow else ((128, 8, None), (24, 4, 2))
    for k, vec, lanes in cases:
        x = (rng.standard_normal((37, k)) * 3 + 1).astype(dtype)
        w, b = rng.standard_normal(k).astype(np.float32), rng.standard_normal(k).astype(np.float32)
        force = RowForce(vec=vec, cache="registers", lanes=lanes)
        try:
            got = rowops.softmax(x, device=cl_device, force=force)
        except UnsupportedOnDevice:
            continue  # the row does not fit the device's register budget at these lanes
        what = f"{dtype} K={k} vec={vec} lanes={lanes}"
        _close(got, ref_softmax(x), dtype, TOL, f"softmax {what}")
        _close(rowops.log_softmax(x, device=cl_device, force=force), ref_log_softmax(x), dtype, LOG_TOL, what)
        _close(rowops.rms_norm(x, w, eps=1e-3, device=cl_device, force=force), ref_rms_norm(x, w, 1e-3), dtype,
               NORM_TOL, f"rms_norm {what}")
        _close(rowops.layer_norm(x, w, b, device=cl_device, force=force), ref_layer_norm(x, w, b), dtype, NORM_TOL,
               f"layer_norm {what}")


def test_logcumsumexp_matches_logaddexp_accumulate(cl_device):
    rng = _rng("lcse")
    x = (rng.standard_normal((8, 4097)) * 10).astype(np.float32)
    x[6] = np.arange(4097) * 7.0 - 14000  # steep: a lane's first elements underflow exp(x - max),
    #                                       the linear-domain lanes fall back (row_scan.cl LSE_TINY)
    x[7, ::37] = 200.0        # spikes: prefixes far above the lanes between them
    x[1, :100] = -np.inf     # -inf is neutral; a prefix of -inf stays -inf
    x[2, 50] = np.nan        # NaN propagates from there on
    x[3, 70] = np.inf        # +inf wins
    x[4, :] = -np.inf
    with np.errstate(invalid="ignore"):  # inf - inf inside numpy's logaddexp
        want = np.logaddexp.accumulate(x.astype(np.float64), axis=1)
    got = rowops.logcumsumexp(x, axis=1, device=cl_device)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    # each step adds a few ulp of |value| (log1p/exp are not correctly rounded)
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=2e-5, atol=2e-5)
    x16 = x[:, :300].astype(np.float16)
    got16 = rowops.logcumsumexp(x16, axis=1, device=cl_device)
    assert got16.dtype == np.float16
    with np.errstate(invalid="ignore"):
        want16 = np.logaddexp.accumulate(x16.astype(np.float64), 1).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(got16.astype(np.float64), want16, rtol=2e-3, atol=2e-3)


def _lse_adversarial_rows(k: int) -> np.ndarray:
    """float32 rows of k that take each turn of a linear-domain lane (row_scan.cl LSE_LINEAR,
    and its CPU_OWN_EXP vectors on PoCL): offsets near the float range, -inf runs inside and
    between lanes, NaN and +inf first in a lane and inside it, steep rises (exp(x - max) below
    the normals: the LSE_TINY fallback) and falls (the lane far below its prefix), spikes, ties,
    subnormal inputs."""
    rng = _rng("lcse-adv", k)
    base = rng.standard_normal(k).astype(np.float32)
    i = np.arange(k, dtype=np.float32)
    rows = [
        base + np.float32(3e38),          # lanes and prefix at the top of the range
        base - np.float32(1e30),          # far below 0: r + log(v) with |r| huge
        base * np.float32(1e4),           # terms of one lane 1e4 apart
        i * np.float32(11.0) - np.float32(5e3),   # steep rise: a lane's first terms underflow
        -i * np.float32(11.0),            # steep fall: each lane far below its prefix
        np.where(i % 9 < 4, -np.inf, base).astype(np.float32),   # -inf runs inside lanes
        np.where((i // 16) % 2 == 1, -np.inf, base).astype(np.float32),   # whole lanes of -inf
        np.where(i % 8 == 0, np.float32(90.0), base - np.float32(95.0)).astype(np.float32),  # exp(-95): subnormal terms
        np.full(k, np.float32(2.5)),      # ties: every term the lane's max
        np.full(k, np.float32(1e-40)),    # subnormal inputs
        i * np.float32(0.3),              # a rise of ~38 over a tile of 32 lanes of 4: their
        #                                   run totals summed in the linear domain (LSE_TEAM_LINEAR)
        #                                   down to exp(-38), above LSE_TINY
        (i % 128) * np.float32(0.36) - np.float32(20.0),   # ~46 over such a tile: its first
        #                                   lanes below LSE_TINY, the team's logaddexp fallback
    ]
    for at, value in ((k // 3, np.nan), (0, np.nan), (k // 2, np.inf), (k // 5 * 4 + 1, -np.inf)):
        r = base.copy()
        r[at % k] = value
        rows.append(r)
    r = base.copy()
    r[k // 4] = np.inf   # +inf, then NaN: NaN (k 1: NaN alone)
    r[k // 2] = np.nan
    rows.append(r)
    return np.stack(rows)


@pytest.mark.parametrize("k", [1, 5, 8, 16, 37, 128, 1000, 4099, 40000])
def test_logcumsumexp_adversarial_rows(cl_device, k):
    """Every output against float64 np.logaddexp.accumulate: NaN, +inf and -inf exactly where
    numpy has them, finite values within 2e-5 (rtol and atol, as the other logcumsumexp tests).
    40000 is split over work-groups on CPUs (PHASE 1, the carries' scan, PHASE 0)."""
    x = _lse_adversarial_rows(k)
    with np.errstate(invalid="ignore", over="ignore"):
        want = np.logaddexp.accumulate(x.astype(np.float64), axis=1)
    got = rowops.logcumsumexp(x, axis=1, device=cl_device)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"NaN positions, K={k}")
    want = np.where(np.abs(want) > np.finfo(np.float32).max, want, want.astype(np.float32))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=f"K={k}")
    # float16 in and out (float accumulators; PoCL loads the halves as bits): the rows clipped
    # to the half range, infinities kept
    x16 = np.where(np.isinf(x), x, np.clip(x, -6e4, 6e4)).astype(np.float16)
    with np.errstate(invalid="ignore", over="ignore"):
        want16 = np.logaddexp.accumulate(x16.astype(np.float64), axis=1).astype(np.float16).astype(np.float64)
    got16 = rowops.logcumsumexp(x16, axis=1, device=cl_device)
    assert got16.dtype == np.float16
    np.testing.assert_allclose(got16.astype(np.float64), want16, rtol=2e-3, atol=2e-3, err_msg=f"float16 K={k}")


@pytest.mark.parametrize("k", [37, 4099])
def test_logcumsumexp_adversarial_rows_in_teams(cl_device, cl_queue, k, request):
    """The adversarial rows through forced plans whose teams have lanes in sub-groups (CPU plans
    take one lane a row): their run totals go through run_prefix, linear-domain sums or, where a
    row's totals are non-finite or far apart, the team's logaddexp butterfly (LSE_TEAM_LINEAR).
    On Intel's CPU runtime those are its shuffle variants, sub-groups of 4-64 (sampled; all with
    --slow); devices without such plans skip."""
    caps = opencl_rowops.runnable_caps(cl_queue)
    x = _lse_adversarial_rows(k)
    teams = [f for f in row_variants(caps, RowProblem("logcumsumexp", x.shape[0], k, "float32"))
             if f.lanes is not None and f.lanes > 1 and f.sg_mode not in (None, "local")]
    if not teams:
        pytest.skip("no forced plan with lanes in sub-groups here")
    with np.errstate(invalid="ignore", over="ignore"):
        want = np.logaddexp.accumulate(x.astype(np.float64), axis=1)
    want = np.where(np.abs(want) > np.finfo(np.float32).max, want, want.astype(np.float32))
    for force in _sample(teams, 3, zlib.crc32(f"lse-teams{k}".encode()), request):
        got = rowops.logcumsumexp(x, axis=1, device=cl_device, force=force)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"NaN positions, K={k} {force}")
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=f"K={k} {force}")


def test_scans_any_axis_and_pyopencl(cl_device, cl_queue):
    import pyopencl.array as cla

    x = _rng("scan-axis").integers(-50, 50, (4, 5, 6)).astype(np.int32)
    for axis in (0, 1, 2, None):
        np.testing.assert_array_equal(rowops.cumsum(x, axis=axis, device=cl_device), np.cumsum(x, axis=axis))
    xd = cla.to_device(cl_queue, x)
    got = rowops.cumsum(xd, axis=1)
    assert isinstance(got, cla.Array) and got.queue is cl_queue and got.dtype == np.int64
    np.testing.assert_array_equal(got.get(), np.cumsum(x, axis=1))
    np.testing.assert_array_equal(xd.get(), x)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp"])
def test_every_forced_scan_variant(cl_device, cl_queue, op, request):
    caps = opencl_rowops.runnable_caps(cl_queue)
    for k in (7, 4097):
        rng = _rng(op, k, "v")
        x = (1 + 0.01 * rng.standard_normal((37, k))).astype(np.float32) if op == "cumprod" else \
            rng.standard_normal((37, k)).astype(np.float32)
        xi = rng.integers(-1000, 1000, (37, k)).astype(np.int32)
        variants = row_variants(caps, RowProblem(op, 37, k, "float32"))
        assert variants
        for force in _sample(variants, 1, zlib.crc32(f"{op}{k}".encode()), request):
            what = f"{op} K={k} {force}"
            got = getattr(rowops, op)(x, axis=-1, device=cl_device, force=force)
            if op == "cumsum":
                _assert_cumsum_bound(got, x, -1, what)
                np.testing.assert_array_equal(rowops.cumsum(xi, axis=-1, device=cl_device, force=force),
                                              np.cumsum(xi, -1), err_msg=what)
            elif op == "cumprod":
                np.testing.assert_allclose(got, np.cumprod(x.astype(np.float64), -1), rtol=(k + 1) * U32 * 1.01,
                                           err_msg=what)
            else:
                np.testing.assert_allclose(got, np.logaddexp.accumulate(x.astype(np.float64), -1), rtol=2e-5,
                                           atol=2e-5, err_msg=what)


def test_logcumsumexp_long_rows_keep_their_increments(cl_device, cl_queue, request):
    """Late in a long row each tile adds ~tile / position to a carry of magnitude |x|: at 1e4
    that is under one float32 ulp, which a one-float carry rounded away every tile (a row of
    10**6 values of 1e4 + N(0, 1): 1.2e-5 to 3.2e-5 relative). The compensated carry
    (row_scan.cl logaddexp_carry) keeps it to a few ulp: 1e-6 here, on the default plan and on
    forced variants (split rows among them)."""
    rng = _rng("lcse-long")
    x = (1e4 + rng.standard_normal((1, 10**6))).astype(np.float32)
    want = np.logaddexp.accumulate(x.astype(np.float64), axis=1)
    np.testing.assert_allclose(rowops.logcumsumexp(x, axis=1, device=cl_device), want, rtol=1e-6, atol=0,
                               err_msg="default plan, K=10**6")
    x = x[:, :2**17].reshape(2, 2**16)
    want = np.logaddexp.accumulate(x.astype(np.float64), axis=1)
    caps = opencl_rowops.runnable_caps(cl_queue)
    variants = row_variants(caps, RowProblem("logcumsumexp", 2, 2**16, "float32"))
    for force in _sample(variants, 2, 1729, request):
        np.testing.assert_allclose(rowops.logcumsumexp(x, axis=1, device=cl_device, force=force), want, rtol=1e-6,
                                   atol=0, err_msg=f"K=2**16 {force}")


def test_logcumsumexp_long_rows_of_small_increments(cl_device):
    """A row of 4 * 10**6 values of N(0, 1): late in it each tile adds log1p(exp(-12)) ~ 6e-6 to
    a carry of ~16, so the increment's own rounding adds up over 250000-500000 tiles. Max error
    relative to max(|value|, 1): 1.1-1.6e-7 on the four CPU runtimes (2026-11-29); a log1p
    taken as log(1 + y) (PoCL's CPU_OWN_EXP carry without Goldberg's correction) gave
    6.8-7.7e-7. The bound is 3.5e-7."""
    x = _rng("lcse-small-inc").standard_normal((1, 4 * 10**6)).astype(np.float32)
    want = np.logaddexp.accumulate(x.astype(np.float64), axis=1)
    got = rowops.logcumsumexp(x, axis=1, device=cl_device).astype(np.float64)
    err = np.abs(got - want) / np.maximum(np.abs(want), 1.0)
    worst = int(np.argmax(err))
    assert err[0, worst] <= 3.5e-7, f"element {worst}: {got[0, worst]!r}, want {want[0, worst]!r}"


@pytest.mark.parametrize("call, error", [
    (lambda d: rowops.logcumsumexp(np.arange(5), device=d), TypeError),
    (lambda d: rowops.cumsum(np.ones(3, np.complex64), device=d), TypeError),
    (lambda d: rowops.cumsum(np.ones((2, 3), np.float32), axis=2, device=d), AxisError),
    (lambda d: rowops.cumprod(np.ones((2, 3), np.float32), axis=(0, 1), device=d), TypeError),
    (lambda d: rowops.cumsum(np.ones((2, 3), np.float32), axis=-1, device=d, force=RowForce(cache="local")),
     TypeError),  # UnsupportedOnDevice is a TypeError: scans cache nothing
])
def test_scan_bad_input(cl_device, call, error):
    with pytest.raises(error):
        call(cl_device)


def test_scan_empty(cl_device):
    assert rowops.cumsum(np.zeros((3, 0), np.int32), axis=1, device=cl_device).dtype == np.int64
    assert rowops.cumsum(np.zeros((0,), np.float32), device=cl_device).shape == (0,)


def test_long_row_reduce_then_scan_exact(cl_device):
    """One long row is cut into chunks (chunk totals, their scan, the chunks from their
    carries): integer results stay exact across the chunk seams."""
    x = _rng("split").integers(-2**31, 2**31, (2, 200_003)).astype(np.int32)
    llvmpipe = llvmpipe_loop_limited(probe_device(cl_device))
    for force in (None, RowForce(split=7), RowForce(split=40)):
        try:
            got = rowops.cumsum(x, axis=1, device=cl_device, force=force)
        except UnsupportedOnDevice:
            assert llvmpipe and force.split < 40, force  # chunks too long for llvmpipe's loop limit
            continue
        np.testing.assert_array_equal(got, np.cumsum(x, axis=1), err_msg=str(force))
    y = _rng("split-f").standard_normal((1, 200_003)).astype(np.float32)
    split = 40 if llvmpipe else 9
    _assert_cumsum_bound(rowops.cumsum(y, axis=1, device=cl_device, force=RowForce(split=split)), y, 1, f"split {split}")


def test_float16_norms_near_65504_do_not_overflow(cl_device):
    """Squares of 65504 overflow float16 (the mobile engines' failure); math runs in float32."""
    x = np.array([[65504.0, -65504.0, 60000.0, 1.0, 0.0, -30000.0, 65504.0]] * 3, np.float16)
    _close(rowops.rms_norm(x, device=cl_device), ref_rms_norm(x), "float16", NORM_TOL, "rms f16 max")
    _close(rowops.layer_norm(x, device=cl_device), ref_layer_norm(x), "float16", NORM_TOL, "ln f16 max")
    mean, var = rowops.moments(x, device=cl_device)
    assert np.isfinite(mean).all() and np.isinf(var).all()  # var ~2.7e9 does not fit float16, as numpy's


# A row whose first element is its only outlier has mean(d)^2 / var = K - 1, the most there is
# for sums shifted by that element. K = 16 and 32: short rows (CUDA's and Intel's teams, a CPU
# work-item's row); K = 200: more runs than lanes.
@pytest.mark.parametrize("k", [16, 32, 200])
def test_float16_layer_norm_rows_far_from_their_first_element(cl_device, cl_queue, k):
    """float16 layer_norm rows in registers whose first element (the sums' shift) is far from the
    rest, near float16's largest values, tiny, constant but for the first, or all equal match
    the float64 reference (test_statistics_of_rows_far_from_their_first_element leaves float16
    out; the register rows' second pass carries these rows, and a one-pass variance with a
    cancellation check, tried on an H200, was slower: benchmarks/rowops_h200_wide_stores_2026-11-28)."""
    caps = opencl_rowops.runnable_caps(cl_queue)
    problem = RowProblem("layer_norm", 8, k, "float16", weight=True, bias=True)
    if plan_row(caps, problem).cache != "registers":
        pytest.skip(f"float16 layer_norm rows of {k} are not planned in registers on {cl_device.name}")
    rng = _rng("ln16-far", k)
    x = np.empty((8, k), np.float64)
    x[0] = 1000 + 0.5 * rng.integers(-4, 5, k)
    x[0, 0] = -1000                                            # an outlier first: ratio ~ k - 1
    x[1] = -60000 + 32 * rng.integers(-3, 4, k)
    x[1, 0] = 60000                                            # near float16's largest, both signs
    x[2] = 5 + 0.01 * rng.standard_normal(k)
    x[2, 0] = 5.5                                              # 50 sigma out
    x[3] = 7.0
    x[3, 0] = 8.0                                              # all alike but the first
    x[4] = rng.standard_normal(k) * 100 + 30000
    x[4, 0] = -30000
    x[5] = 0.0
    x[5, 0] = 1e-3                                             # tiny values: the ratio still k - 1
    x[6] = rng.standard_normal(k)                              # an ordinary row
    x[7] = 3.0                                                 # all equal: variance 0
    x = x.astype(np.float16)
    w = (rng.standard_normal(k) + 1.5).astype(np.float16)
    b = rng.standard_normal(k).astype(np.float16)
    got = rowops.layer_norm(x, w, b, device=cl_device)
    _close(got, ref_layer_norm(x, w, b), "float16", NORM_TOL, f"float16 layer_norm far rows K={k}")


# ---- out= and array kinds ---------------------------------------------------------------------------
def test_out_writes_in_place_and_checks_kind_shape_dtype(cl_device, cl_queue):
    import pyopencl.array as cla

    x = _rng("out").standard_normal((4, 5, 9)).astype(np.float32)
    dst = np.full(x.shape, np.nan, np.float32)
    assert rowops.softmax(x, axis=1, out=dst, device=cl_device) is dst
    _close(dst, ref_softmax(x, axis=1), "float32", TOL, "numpy out=")
    q, s = np.empty(x.shape, np.int8), np.empty(x.shape[:-1], np.float32)
    assert rowops.quantize_int8(x, out=(q, s), device=cl_device) == (q, s)
    np.testing.assert_array_equal(q, ref_quantize(x)[0])
    mean = np.empty((4, 9), np.float32)
    got_mean, got_var = rowops.moments(x, axis=1, out=(mean, None), device=cl_device)
    assert got_mean is mean and got_var.shape == (4, 9)
    np.testing.assert_allclose(mean, x.astype(np.float64).mean(1), rtol=1e-5, atol=1e-6)
    c = np.empty(x.size, np.float32)
    assert rowops.cumsum(x, out=c, device=cl_device) is c
    _assert_cumsum_bound(c, x.ravel(), 0, "cumsum out= flattened")
    back = np.empty(x.shape, np.float32)
    assert rowops.dequantize(q, s, out=back) is back
    # pyopencl in, pyopencl out= (a strided axis: the result goes through a gather first)
    xd = cla.to_device(cl_queue, x)
    dd = cla.empty(cl_queue, x.shape, np.float32)
    assert rowops.layer_norm(xd, out=dd) is dd
    _close(dd.get(), ref_layer_norm(x), "float32", NORM_TOL, "pyopencl out=")
    assert rowops.log_softmax(xd, axis=0, out=dd) is dd
    _close(dd.get(), ref_log_softmax(x, axis=0), "float32", LOG_TOL, "pyopencl out= axis 0")
    # float16 pyopencl out= (pyopencl's own copy has no half type: it raised ValueError)
    hd = cla.to_device(cl_queue, x[0].astype(np.float16))
    hout = cla.empty_like(hd)
    assert rowops.softmax(hd, out=hout) is hout
    np.testing.assert_array_equal(hout.get(), rowops.softmax(x[0].astype(np.float16), device=cl_device))
    hm = (cla.empty(cl_queue, (5,), np.float16), cla.empty(cl_queue, (5,), np.float16))
    assert rowops.moments(hd, out=hm) == hm
    np.testing.assert_array_equal(hm[1].get(), rowops.moments(x[0].astype(np.float16), device=cl_device)[1])
    # refused: a strided pyopencl out= (as the reductions'), another dtype, shape or kind; a
    # single array for a two-result op
    with pytest.raises(ValueError, match="C-contiguous"):
        rowops.softmax(hd, out=cla.empty(cl_queue, (5, 18), np.float16)[:, ::2])
    with pytest.raises(TypeError, match="dtype"):
        rowops.softmax(x, out=np.empty(x.shape, np.float64), device=cl_device)
    with pytest.raises(ValueError, match="shape"):
        rowops.rms_norm(x, out=np.empty((4, 5), np.float32), device=cl_device)
    with pytest.raises(TypeError, match="pyopencl"):
        rowops.softmax(xd, out=np.empty(x.shape, np.float32))
    with pytest.raises(TypeError, match="tuple of two"):
        rowops.absmax_scale(x, out=np.empty(x.shape, np.float32), device=cl_device)
    np.testing.assert_array_equal(xd.get(), x)


def test_array_likes_and_cpu_tensors_come_back_as_numpy(cl_device, cl_caps):
    rows = [[1.0, 2.0, 3.0], [0.0, -1.0, 5.0]]
    if cl_caps.fp64:  # a list of Python floats is float64, as numpy.asarray makes it
        got = rowops.softmax(rows, device=cl_device)
        assert isinstance(got, np.ndarray) and got.dtype == np.float64
        _close(got, ref_softmax(np.asarray(rows)), "float64", TOL, "list")
    else:
        with pytest.raises(UnsupportedOnDevice, match="fp64"):
            rowops.softmax(rows, device=cl_device)

    class HostArray:  # what a CPU torch tensor offers numpy (importing torch here costs seconds)
        def __array__(self, dtype=None, copy=None):
            return np.asarray(rows, np.float32)

    got = rowops.layer_norm(HostArray(), device=cl_device)
    assert isinstance(got, np.ndarray)
    _close(got, ref_layer_norm(np.asarray(rows, np.float32)), "float32", NORM_TOL, "__array__ object")


def test_cuda_backend_without_cupy_says_what_is_missing(monkeypatch):
    import sys

    from clreduce.backends import get_backend

    if get_backend("cuda").unavailable_reason() is None:
        # Where CuPy works, the backend has imported it already (another test in this worker):
        # hiding the module now changes nothing. Machines without CuPy (CI) run this.
        pytest.skip("CuPy and a GPU are present: the missing-CuPy error is checked where CuPy is absent")
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(RuntimeError, match="cupy"):
        rowops.softmax(np.ones((2, 3), np.float32), backend="cuda")


@pytest.mark.parametrize("shape", [
    (64, 128),    # registers cache, several rows per team
    (7, 4097),    # local-memory cache (or registers on wide CPU plans)
    (3, 70000),   # uncached; split on devices with many compute units
    (1000, 7),    # short rows
], ids=lambda s: f"{s[0]}x{s[1]}")
def test_float16_weights_read_as_they_are(cl_device, cl_queue, shape):
    """A float16 input with float16 weight / bias binds them as they are (row_norm.cl
    PARAM_HALF) instead of converting them per call: within the norms' bound of float64
    numpy, and at most one float16 rounding from float32 copies of the same weights (the
    kernel widens each exactly; Intel's compiler may vectorise the two builds differently),
    through the full path, the fast path and pyopencl arrays."""
    import pyopencl.array as cla

    rng = np.random.default_rng(zlib.crc32(repr(shape).encode()))
    x = rng.standard_normal(shape).astype(np.float16)
    w = (rng.standard_normal(shape[1]) * 3).astype(np.float16)
    b = rng.standard_normal(shape[1]).astype(np.float16)
    w64, b64 = w.astype(np.float64), b.astype(np.float64)
    wide = w.astype(np.float32), b.astype(np.float32)

    def check(got, want, ref, what):
        _close(got, ref, "float16", NORM_TOL, what)
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2.0 ** -10, atol=2.0 ** -14,
                                   err_msg=what)

    opencl_rowops.clear_caches()
    for _ in range(3):  # the third call is served by the fast path
        check(rowops.rms_norm(x, w, device=cl_device), rowops.rms_norm(x, wide[0], device=cl_device),
              ref_rms_norm(x, w64), "rms_norm")
        check(rowops.layer_norm(x, w, b, device=cl_device), rowops.layer_norm(x, *wide, device=cl_device),
              ref_layer_norm(x, w64, b64), "layer_norm")
        check(rowops.layer_norm(x, None, b, device=cl_device), rowops.layer_norm(x, None, wide[1], device=cl_device),
              ref_layer_norm(x, None, b64), "layer_norm, bias only")
    assert any(key[2].params_half for key, _ in opencl_rowops._plans.items()), "float16 path not taken"
    xd, wd, bd = (cla.to_device(cl_queue, a) for a in (x, w, b))
    for _ in range(3):
        check(rowops.layer_norm(xd, wd, bd).get(), rowops.layer_norm(x, *wide, device=cl_device),
              ref_layer_norm(x, w64, b64), "pyopencl")
    # a float16 weight beside a float32 bias: both converted to float32, the same bits
    np.testing.assert_array_equal(rowops.layer_norm(x, w, wide[1], device=cl_device),
                                  rowops.layer_norm(x, *wide, device=cl_device))


@pytest.mark.parametrize("k", [1000, 4096])  # CPUs: one work-item caches the whole row (NPER up to 4096)
def test_long_register_rows_stay_accurate(cl_device, k):
    """Rows of 1000 and 4096 float32, which CPU runtimes now keep whole in one work-item's
    registers and sum run by run with compensation across runs (row_common.h RUN_SUM_ADD):
    softmax sums of thousands of terms, rms_norm of a large offset and layer_norm of
    1e4 + N(0, 1) within the stated bounds against float64 numpy; an alternating-magnitude
    row keeps softmax's normaliser."""
    rng = _rng("long-reg", k)
    x = (rng.standard_normal((24, k)) * 4).astype(np.float32)
    _close(rowops.softmax(x, device=cl_device), ref_softmax(x), "float32", TOL, "softmax")
    _close(rowops.log_softmax(x, device=cl_device), ref_log_softmax(x), "float32", LOG_TOL, "log_softmax")
    big = (1e4 + rng.standard_normal((24, k))).astype(np.float32)
    _close(rowops.rms_norm(big, device=cl_device), ref_rms_norm(big), "float32", NORM_TOL, "rms_norm 1e4")
    _close(rowops.layer_norm(big, device=cl_device), ref_layer_norm(big), "float32",
           {"float32": dict(rtol=1e-4, atol=2e-4)}, "layer_norm offset 1e4")  # x itself has ulp 1e-3
    # one term of 1 and k - 1 terms of ~1e-4: each addition to a sum near 1 rounds away part
    # of the small term; a float32 sum element by element is off by 3.7e-5 at k = 4096
    # (emulated), outside softmax's rtol 1e-5; run sums (6.5e-6) with compensation across
    # the runs keep it to an ulp
    tail = np.full((4, k), -9.2103, np.float32)
    tail[:, 0] = 0
    _close(rowops.softmax(tail, device=cl_device), ref_softmax(tail), "float32", TOL, "softmax 1 + small terms")
    mean, var = rowops.moments(big, device=cl_device)
    np.testing.assert_allclose(var, big.astype(np.float64).var(-1), rtol=1e-5)


# Rows from an outside fuzz run (2026-11-30) where a team's lane prefix (the carry times or
# plus the lanes before it) left the float range while carry and lanes stayed inside: the
# outputs came back into the range, but no partial the scan checked was bad, so nothing was
# walked. Last prefixes: 2**-125 (normal), 2.3e38 (finite), -1.48e-34 (after exact prefixes
# below float32's least subnormal: a walk's prefixes are rounded once, and come back).
_PAST_RANGE_POWERS = [-64, -77, 51, 63, 70, -54, 46, -54, -29, -70, 59, -26, -33, 52, -41, -78, 0, 60]
_PAST_RANGE_SUMS = [2e38, -1.3e38, -1.8e38, 1.1e38, 9e37, -1e37, 8e37, -4e37, -1e37, 1.4e38, -1.9e38, -2e37,
                    1.1e38, 1e37, 1e38, 3e37, -5e37, -4e37, 2.2e38, -1.5e38, -3e37, 2.2e38, 6e37, -1e38, 2.1e38,
                    -1.8e38, -2.2e38]
_PAST_RANGE_PRODUCTS = [6.0818013e-05, -2.3821373e-08, -232552.84, -0.34888703, 3.4352476e-07, -138.74043,
                        0.015539768, 0.100859255, -165.86226, 2.0510036e-08, -11006.153, 160214.48, 295.14752,
                        -1.3913694e-07, -1.7375232e-05, -4.122645e-05, -0.008401288, -666.35034, 2.728041e-06,
                        -6.092657e-07, -13546.715, -67862.195, 3.941098e-05, 0.00013356595, 2.393686e-05,
                        -3.9614377e-05, 7.480921, 0.0005579599, 4393.794, 1037.7764, 1.1205964e-06, 48531.195,
                        -2.5979213e-07, 0.02867281, 3.0304665e-07, 1.8129335e-06, 271122.7, 0.067273535, 3291.99,
                        29904048.0, -1475290.8, 199839.81]


@pytest.mark.parametrize("case", ["powers", "sums", "products"])
def test_team_prefixes_past_the_range_are_walked(cl_device, case):
    """Every forced team width and split gives the last prefix within 1e-5 of the exact one
    (the inline check of a lane's whole prefix, row_scan.cl `lane_pre`); before, forced
    teams of 2-4 lanes gave 0 or inf there on every runtime."""
    op, values = {"powers": ("cumprod", [2.0**e for e in _PAST_RANGE_POWERS]), "sums": ("cumsum", _PAST_RANGE_SUMS),
                  "products": ("cumprod", _PAST_RANGE_PRODUCTS)}[case]
    x = np.array(values, np.float32)
    exact = getattr(np, op)(x.astype(np.float64))[-1]
    for force in (None, RowForce(lanes=2, split=1), RowForce(lanes=4, split=1), RowForce(lanes=2, split=2),
                  RowForce(lanes=4, split=2), RowForce(lanes=4, split=3), RowForce(lanes=1, split=2)):
        got = getattr(rowops, op)(x, device=cl_device, force=force)[-1]
        assert np.isfinite(got) and got != 0 and abs(got - exact) <= 1e-5 * abs(exact), (force, got, exact)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scans_of_rows_past_the_float_range(cl_device, cl_queue, op, request):
    """Rows whose partials (a lane's run, a team prefix, a chunk's total) leave the float range
    while every prefix stays inside: before the rescue, -inf + inf gave NaN (and a product's
    inf * 0 gave NaN, its 0 gave 0) where numpy's sequential scan gives the prefix. Rows of 7
    (one tile), 4097 (tiles, padding; the forced variants, sampled) and 70001 (chunks on
    most devices: the two flag sets); float64 on 4097."""
    caps = opencl_rowops.runnable_caps(cl_queue)
    for dtype in ("float32",) + (("float64",) if caps.fp64 else ()):
        for k in (7, 4097, 70001) if dtype == "float32" else (4097,):
            x, want = rows_past_the_range(op, dtype, k)
            forces = [None]
            if k == 4097 and dtype == "float32":  # each variant is a program build: sampled, all with --slow
                forces += _sample(row_variants(caps, RowProblem(op, 3, k, dtype)), 2,
                                  zlib.crc32(f"{op}{dtype}{k}".encode()), request)
            for force in forces:
                what = f"{op} {dtype} K={k} {force}"
                got = getattr(rowops, op)(x, axis=-1, device=cl_device, force=force)
                assert_scan_past_the_range(op, dtype, k, got, x, want, what)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scans_whose_teams_walk_their_own_rows(cl_device, cl_queue, op, monkeypatch, request):
    """row_scan.cl SCAN_WALK_INLINE, which the planner takes on GPUs only (no GPU in CI): here
    on every device, the planner's plan and sampled forced whole-row variants (teams inside a
    sub-group, across a work-group). 3001 rows, so a team takes several (one bit a task) on
    most devices: rows past the range at the first, a middle and the last task; the team
    walks exactly those rows again."""
    from clreduce import plan_scan
    from clreduce.backends import opencl

    monkeypatch.setattr(plan_scan, "walks_inline", lambda caps: True)
    opencl.clear_caches()  # no plan made without the patch
    try:
        caps = opencl_rowops.runnable_caps(cl_queue)
        rows = 3001
        for k in (7, 1001):  # rows_past_the_range's K: 1 mod 4 (its reversed product stays in range)
            x3, want3 = rows_past_the_range(op, "float32", k)
            flagged = {0: 0, rows // 2: 2, rows - 1: 0}  # row -> row of x3 past the range
            x = np.tile(x3[1], (rows, 1))
            want = np.tile(want3[1], (rows, 1))
            for row, src in flagged.items():
                x[row], want[row] = x3[src], want3[src]
            problem = RowProblem(op, rows, k, "float32")
            whole_rows = [f for f in row_variants(caps, problem) if f.split in (None, 1)]
            for force in [None] + _sample(whole_rows, 2, zlib.crc32(f"inline{op}{k}".encode()), request):
                p = plan_row(caps, problem, force)
                if p.split > 1:
                    continue  # llvmpipe's loop limit splits some forced plans' rows
                assert dict(p.passes[0].defines).get("SCAN_WALK_INLINE") == "1" and len(p.passes) == 1
                teams = p.passes[0].global_size // p.lanes
                assert -(-rows // teams) <= plan_scan.WALK_INLINE_TASKS
                got = getattr(rowops, op)(x, axis=-1, device=cl_device, force=force)
                what = f"{op} K={k} {force}: {teams} teams"
                assert np.isfinite(got).all(), what  # unwalked, the flagged rows hold inf / NaN
                # the bounds of assert_scan_past_the_range: cumsum's flagged rows (prefixes of
                # -1, 0, 1 units) exact, the rest within (k + 1) float32 half-ulps relative
                np.testing.assert_allclose(got, want, rtol=(k + 1) * 2.0 ** -24, atol=0, err_msg=what)
    finally:
        monkeypatch.undo()
        opencl.clear_caches()


def test_scans_past_the_range_keep_numpy_infinities(cl_device):
    """A row walked again gives the exact prefix rounded once: inf only where the prefix
    itself passes the range (as float64 arithmetic gives it; numpy's float32 scan stays inf
    from its first overflow on, e.g. 1e30, 1e30, 1e-30 gives inf, inf where the prefix is
    back at 1e30), and IEEE's rules for inf and NaN in the row."""
    big = np.float32(3e38)
    rows = np.array([[-big] * 4 + [big] * 2 + [1, 2],           # -inf from the second prefix on
                     [1, np.inf, 2, -np.inf, 3, 4, 5, 6],        # inf, then NaN
                     [1, 2, np.nan, 3, big, big, 4, 5],          # NaN from the third on
                     [big, big, -big, -np.inf, 1, 2, 3, 4]], np.float32)
    got = rowops.cumsum(rows, axis=-1, device=cl_device)
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.cumsum(rows.astype(np.float64), -1).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    # products: 1e30 * 1e30 passes the range, 1e-30 twice brings it back, 0 * inf is NaN
    p = np.array([[1e30, 1e30, 1e-30, 1e-30, 2, 0, 3, np.inf]], np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.cumprod(p.astype(np.float64), -1).astype(np.float32)
    np.testing.assert_allclose(rowops.cumprod(p, axis=-1, device=cl_device), want, rtol=8 * 2.0 ** -24)


def test_float16_products_past_the_float32_range(cl_device):
    """float16 cumprod multiplies in float32: 60000^9 passes even float32's range, and the
    prefixes come back (60000^-1 nine times). Each output is the exact prefix rounded to
    float16 (inf where it passes 65504); numpy's float16 cumprod is inf from the second on."""
    x = np.array([[60000] * 9 + [1 / 60000] * 9], np.float16)
    got = rowops.cumprod(x, axis=-1, device=cl_device)
    with np.errstate(over="ignore"):
        want = np.cumprod(x.astype(np.float64), -1).astype(np.float16)
    assert np.isfinite(want[0, -1])
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))


def test_long_rows_past_the_range_walk_in_segments(cl_device, cl_queue):
    """A flagged row longer than one PHASE 4 launch walks on llvmpipe (WALK_SEG_LLVMPIPE
    elements, its loop limiter): several launches, the walk's state carried between them;
    one launch elsewhere. The sum pattern's prefixes are exact in any order."""
    k = WALK_SEG_LLVMPIPE + 4099
    caps = opencl_rowops.runnable_caps(cl_queue)
    walks = [p for p in plan_row(caps, RowProblem("cumsum", 1, k, "float32")).passes
             if dict(p.defines)["PHASE"] == "4"]
    assert len(walks) == (2 if llvmpipe_loop_limited(caps) else 1)
    if not llvmpipe_loop_limited(caps):
        return  # one walk launch: the other tests run it
    x, want = rows_past_the_range("cumsum", "float32", k)
    x, want = x[:1], want[:1]
    got = rowops.cumsum(x, axis=-1, device=cl_device)
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_products_that_decay_to_zero(cl_device):
    """Products of terms within 1 in magnitude only shrink: a partial that underflows to 0
    leaves every later prefix below the smallest subnormal, so the fast scan's 0 is right and
    the row is not walked again (row_scan.cl SCAN_BAD: it took an H100 4000x longer). Values
    match float64's prefixes to the product bound, subnormals to their spacing."""
    rng = _rng("decay")
    x = rng.uniform(-1.0, 1.0, (5, 5000)).astype(np.float32)
    x[1, 2500] = 0  # an exact 0 in the row
    got = rowops.cumprod(x, axis=-1, device=cl_device)
    want = np.cumprod(x.astype(np.float64), -1)
    assert (got[:, -1] == 0).all() and (np.abs(want[:, 200]) < 2.0 ** -149).all()  # every row decays past float32
    np.testing.assert_allclose(got, want, rtol=5001 * 2.0 ** -24, atol=2.0 ** -140)
