"""Row ops on the CUDA backend: the same cl_kernels row families behind cl_dialect_cuda.h.

Without CuPy or a CUDA device (CI), the GPU tests skip with the backend's reason; what runs
everywhere: CUDA plans of every row op (published H100 / T4 caps) and, when nvcc is on PATH,
one PTX build per row family from the exact text the backend hands NVRTC.

On a GPU (run by the lead: ``python -m pytest -q tests/test_cuda_rowops.py``, ``--slow``
for every forced variant): numpy parity of every op on K = 1, 7, 4097, 10**6 in float32,
float16 and float64, adversarial rows, sampled forced variants (cache x sub-group mode x
lanes x split), cupy and torch inputs (results of the input's kind and device), ``out=``,
and the bad-input table.
"""

from __future__ import annotations

import dataclasses
import random
import shutil
import subprocess
import zlib

import numpy as np
import pytest
from conftest import slow_enabled
from test_plan import PROFILES
from rowops_refs import (ADVERSARIAL, LOG_TOL, NORM_TOL, TOL, U32, _assert_cumsum_bound, _close,
                         assert_scan_past_the_range, check_backward_write_walk, far_first_rows, flat_write_rows,
                         ref_layer_norm,
                         ref_log_softmax, ref_quantize, ref_rms_norm, ref_softmax, rows_past_the_range, wild_rows,
                         noncanonical_bools, ref_norms_past_the_range)

from clreduce import rowops
from clreduce.backends import get_backend
from clreduce.backends.cuda import probe as cuda_probe
from clreduce.backends.cuda.launch import cuda_source, nvrtc_options
from clreduce.plan import UnsupportedOnDevice
from clreduce.backends import row_args
from clreduce.plan_rowops import FAMILIES, GPU_GROUPS_PER_CU, SCAN_OPS, RowForce, RowProblem, plan_row, row_variants
from clreduce.plan_scan import LOOKBACK_ACC_BYTES, lookback_workspace

try:
    from numpy.exceptions import AxisError
except ImportError:  # numpy < 1.25
    from numpy import AxisError

H100 = cuda_probe.caps_from_properties(cuda_probe.H100_SXM_PROPERTIES)
T4 = cuda_probe.caps_from_properties(cuda_probe.T4_PROPERTIES)
H200 = cuda_probe.caps_from_properties(cuda_probe.H200_PROPERTIES)
REASON = get_backend("cuda").unavailable_reason()
gpu = pytest.mark.skipif(REASON is not None, reason=f"CUDA backend unavailable: {REASON}")


# ==== no GPU needed ===========================================================================
@pytest.mark.parametrize("caps", [H100, T4], ids=["H100", "T4"])
@pytest.mark.parametrize("op", sorted(FAMILIES))
def test_cuda_row_plans_use_warps(caps, op):
    """Every row op plans for CUDA: warp-wide sub-groups, no width request, and the shapes
    of the benchmark (short rows in registers, few long rows split)."""
    for rows, k, dtype in ((648_720, 128, "float16"), (4096, 65536, "float32"), (1, 1 << 24, "float32"),
                           (8192, 1000, "float32"), (7, 3, "float64")):
        p = plan_row(caps, RowProblem(op, rows, k, dtype))
        for launch in p.passes:
            d = dict(launch.defines)
            assert d["REQD_SG"] == "0" and d["SG_MODE"] in ("0", "1", "2")
            assert d["SG_MODE"] == "0" or d["SG_SIZE"] == "32"
            assert launch.local_size <= 1024 and launch.global_size % launch.local_size == 0
        if k == 1 << 24:
            # few long rows: scans take the one-pass look-back, the other families split
            assert p.lookback_tile > 0 and p.split == 1 if op in SCAN_OPS else p.split > 1
        if k == 128 and op not in SCAN_OPS and op != "moments":
            assert p.cache == "registers" and p.lanes <= 32


def test_lookback_scan_plans_are_cuda_only():
    """Few long rows scan with the look-back on CUDA: a pass that clears the workspace's flags,
    then one block per tile; the workspace the launchers allocate is the one row_scan.cl lays
    out. OpenCL promises no progress between work-groups: a forced look-back is refused there."""
    for dtype, items in (("float16", 8), ("float32", 4), ("int32", 4), ("float64", 2), ("int8", 16)):
        problem = RowProblem("cumsum", 3, 5_000_001, dtype)
        p = plan_row(H100, problem)
        clear, scan, *walk = p.passes
        assert (dict(clear.defines)["PHASE"], dict(scan.defines)["PHASE"]) == ("3", "2")
        # rows past the float range walked again (PHASE 4): float32/64 sums (float16's
        # float32 sums cannot pass the range)
        assert [dict(w.defines)["PHASE"] for w in walk] == (["4"] if dtype in ("float32", "float64") else [])
        rounds = int(dict(scan.defines)["ROUNDS"])
        assert p.lookback_tile == rounds * p.wg_size * items and p.split == 1
        tiles = 3 * -(-problem.row_len // p.lookback_tile)
        ahead = dict(scan.defines).get("LB_AHEAD") == "1"
        if dtype in ("float16", "float32"):
            # LB_AHEAD (cp.async): as many blocks as the SMs hold, each taking tile after tile;
            # the tile and the next one in shared memory, none in registers
            assert ahead and 2 * p.lookback_tile * np.dtype(dtype).itemsize < p.local_mem_bytes <= H100.local_mem_size
            blocks = H100.compute_units * int(dict(scan.defines).get("MIN_BLOCKS", 1))
            assert scan.global_size == min(tiles, blocks) * scan.local_size < tiles * scan.local_size
        else:
            assert rounds * items * np.dtype(p.acc_dtype).itemsize <= LOOKBACK_ACC_BYTES  # registers per thread
            assert not ahead and scan.global_size == tiles * scan.local_size  # a block per tile
        words, nbytes = lookback_workspace(3, problem.row_len, p.lookback_tile, np.dtype(p.acc_dtype).itemsize)
        assert clear.row_len == words and row_args.buffer_bytes(p, problem)["partials"] == nbytes
        assert row_args.kernel_args(p, problem)[1][-1] == "partials"  # the workspace, as `carries`
        off = plan_row(H100, problem, RowForce(lookback=False))
        assert off.lookback_tile == 0 and off.split > 1  # reduce-then-scan, as OpenCL devices run it
    pascal = cuda_probe.caps_from_properties(dict(cuda_probe.H100_SXM_PROPERTIES, major=6, minor=0))
    assert plan_row(pascal, RowProblem("cumsum", 1, 1 << 24, "float32")).lookback_tile == 0  # no ld.acquire
    volta = cuda_probe.caps_from_properties(dict(cuda_probe.H100_SXM_PROPERTIES, major=7, minor=0))
    scan = plan_row(volta, RowProblem("cumsum", 1, 1 << 24, "float32")).passes[1]
    assert "LB_AHEAD" not in dict(scan.defines)  # no cp.async before sm_80: a block per tile
    opencl_caps = dataclasses.replace(H100, backend="opencl")
    assert plan_row(opencl_caps, RowProblem("cumsum", 1, 1 << 24, "float32")).lookback_tile == 0
    with pytest.raises(UnsupportedOnDevice, match="no progress between work-groups"):
        plan_row(opencl_caps, RowProblem("cumsum", 1, 1 << 24, "float32"), RowForce(lookback=True))
    with pytest.raises(ValueError, match="exclude each other"):
        plan_row(H100, RowProblem("cumsum", 1, 1 << 24, "float32"), RowForce(lookback=True, split=4))


@pytest.mark.slow  # CI step 5 (tools/compile_cuda_ptx.py) compiles every planned row-op variant
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_each_row_family_compiles_to_ptx(tmp_path):
    """One variant per family (whole-row and split phases) through nvcc -Werror: the text
    the backend gives NVRTC. tools/compile_cuda_ptx.py compiles every planned variant."""
    cases = [RowProblem("softmax", 1000, 7, "float16"), RowProblem("layer_norm", 4, 200_000, "float32", True, True),
             RowProblem("quantize_int8", 64, 4097, "float32"), RowProblem("cumsum", 4, 200_000, "int32")]
    for problem in cases:
        p = plan_row(H100, problem)
        src = tmp_path / f"{problem.op}.cu"
        src.write_text(cuda_source(p.kernel_file))
        for launch in p.passes:
            opts = [o for o in nvrtc_options(launch.defines) if not o.startswith("--std")]
            proc = subprocess.run(["nvcc", "--ptx", "-arch=sm_80", "-std=c++17", *opts, "-Werror", "all-warnings",
                                   str(src), "-o", str(tmp_path / "out.ptx")], capture_output=True, text=True)
            assert proc.returncode == 0, f"{problem} {launch.defines}:\n{proc.stderr[-3000:]}"


# ==== on a GPU ================================================================================
def _cp():
    import cupy

    return cupy


def _rng(*parts):
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


SHAPES = [(1, 1), (5, 1), (9, 7), (33, 128), (3, 4097), (2, 10**6), (4096, 1000)]


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_op_matches_numpy(shape, dtype):
    cp = _cp()
    rng = _rng("cuda", shape, dtype)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    xd = cp.asarray(x)
    w = rng.standard_normal(shape[-1]).astype(np.float32)
    b = rng.standard_normal(shape[-1]).astype(np.float32)
    what = f"{shape} {dtype}"
    _close(rowops.softmax(xd).get(), ref_softmax(x), dtype, TOL, f"softmax {what}")
    _close(rowops.log_softmax(xd).get(), ref_log_softmax(x), dtype, LOG_TOL, f"log_softmax {what}")
    _close(rowops.rms_norm(xd, w).get(), ref_rms_norm(x, w), dtype, NORM_TOL, f"rms_norm {what}")
    _close(rowops.layer_norm(xd, w, b).get(), ref_layer_norm(x, w, b), dtype, NORM_TOL, f"layer_norm {what}")
    if shape[-1] > 1:
        mean, var = rowops.moments(xd)
        _close(mean.get(), x.astype(np.float64).mean(-1), dtype, NORM_TOL, f"mean {what}")
        _close(var.get(), x.astype(np.float64).var(-1), dtype, NORM_TOL, f"var {what}")
    y, amax = rowops.absmax_scale(xd)
    np.testing.assert_array_equal(amax.get(), np.abs(x).max(-1), err_msg=what)
    _close(y.get(), x.astype(np.float64) / np.abs(x.astype(np.float64)).max(-1, keepdims=True), dtype, TOL, what)
    q, s = rowops.quantize_int8(xd)
    q_ref, yq, s_ref = ref_quantize(x)
    near_tie = np.abs(np.abs(yq - np.floor(yq)) - 0.5) < 1e-4
    assert not ((q.get() != q_ref) & ~near_tie).any(), what
    np.testing.assert_allclose(s.get(), s_ref.astype(np.float32), rtol=1e-7)
    if dtype != "float64":
        _assert_cumsum_bound(rowops.cumsum(xd, axis=-1).get(), x, -1, f"cumsum {what}")
    with np.errstate(invalid="ignore"):
        want = np.logaddexp.accumulate(x.astype(np.float64), axis=-1)
    tol = 2e-3 if dtype == "float16" else 2e-5
    np.testing.assert_allclose(rowops.logcumsumexp(xd, axis=-1).get().astype(np.float64), want, rtol=tol, atol=tol)


@gpu
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "uint32", "int64"])
def test_integer_scans_exact(dtype):
    cp = _cp()
    rng = _rng("icum", dtype)
    x = noncanonical_bools(rng, (7, 100_003)) if dtype == "bool" else \
        rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (7, 100_003), dtype=dtype, endpoint=True)
    for op in ("cumsum", "cumprod"):
        for axis in (-1, 0):
            got = getattr(rowops, op)(cp.asarray(x), axis=axis).get()
            np.testing.assert_array_equal(got, getattr(np, op)(x, axis=axis), err_msg=f"{op} {dtype} {axis}")


@gpu
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scans_of_rows_past_the_float_range(op):
    """CUDA forms of test_rowops' test of the same name: rows whose partials leave the float
    range while their prefixes stay inside, scanned by one team (the team walks the row), in
    split chunks (flags, PHASE 4) and by the look-back (flags in its workspace, PHASE 4).
    float64: CuPy's NVRTC builds flush float32 subnormals (README), products' walk included."""
    cp = _cp()
    caps = cuda_probe.probe_device(cp.cuda.Device().id)
    for dtype in ("float32", "float64"):
        for k, force in ((7, None), (4097, None), (4097, RowForce(split=3)), (70001, RowForce(split=5)),
                         (1_500_001, None)):
            x, want = rows_past_the_range(op, dtype, k)
            plan = plan_row(caps, RowProblem(op, 3, k, dtype), force)
            if k == 1_500_001:
                assert plan.lookback_tile > 0, "the look-back's flags were not tested"
            what = f"{op} {dtype} K={k} {force}"
            got = getattr(rowops, op)(cp.asarray(x), axis=-1, force=force).get()
            assert_scan_past_the_range(op, dtype, k, got, x, want, what)


@gpu
@pytest.mark.parametrize("dtype", ["int32", "float32", "float16"])
def test_lookback_scans_of_long_rows(dtype):
    """The planner's look-back on few long rows: exact for integers (a wrong prefix anywhere
    shows), within the stated bound for floats, and the same bits on every run (the fold
    order is fixed, whichever tiles had published). 9000017 elements are more than 32 groups
    of tiles (the window moves along the row) with a ragged last tile; 3 rows of 1500001
    keep each row's chain to itself (float16 rows have mean 0: their sums stay below 65504);
    both are float plans whose blocks take tile after tile (LB_AHEAD), 600001 a float
    plan of a block per tile (too few tiles to stage). The same rows one element off a
    16-byte boundary load element by element (no 16-byte copies) and must give the same
    bits. The second call takes the learned launcher."""
    cp = _cp()
    caps = cuda_probe.probe_device(cp.cuda.Device().id)
    for rows, k in ((1, 9_000_017), (3, 1_500_001), (1, 600_001)):
        plan = plan_row(caps, RowProblem("cumsum", rows, k, dtype))
        assert plan.lookback_tile > 0
        staged = "LB_AHEAD" in dict(plan.passes[1].defines)
        assert staged == (dtype != "int32" and k > 600_001), f"{dtype} {rows}x{k}: staged {staged}"
        rng = _rng("lookback", dtype, rows, k)
        x = rng.integers(-(2**31), 2**31, (rows, k), dtype=np.int32) if dtype == "int32" else \
            (rng.standard_normal((rows, k)) + (0.25 if dtype == "float32" else 0)).astype(dtype)
        xd = cp.asarray(x)
        first = rowops.cumsum(xd, axis=-1).get()
        for _ in range(3):
            again = rowops.cumsum(xd, axis=-1).get()
            assert first.tobytes() == again.tobytes(), f"{dtype} {rows}x{k}: runs differ"
        shifted = cp.concatenate([cp.zeros(1, xd.dtype), xd.ravel()])[1:].reshape(rows, k)
        assert shifted.data.ptr % 16 != 0
        got = rowops.cumsum(shifted, axis=-1).get()
        assert got.tobytes() == first.tobytes(), f"{dtype} {rows}x{k}: misaligned rows differ"
        if dtype == "int32":
            np.testing.assert_array_equal(first, np.cumsum(x, axis=-1))
        else:
            _assert_cumsum_bound(first, x, -1, f"look-back cumsum {dtype} {rows}x{k}")
        if dtype != "int32" and k > 600_001:
            # a forced block size: LB_AHEAD blocks as many as threads and shared memory allow
            wide = rowops.cumsum(xd, axis=-1, force=RowForce(lookback=True, wg_size=256)).get()
            _assert_cumsum_bound(wide, x, -1, f"look-back cumsum {dtype} {rows}x{k}, 256 threads")
        if dtype == "float32":
            near_one = (1 + 1e-7 * rng.standard_normal((rows, k))).astype(np.float32)
            got = rowops.cumprod(cp.asarray(near_one), axis=-1, force=RowForce(lookback=True)).get()
            np.testing.assert_allclose(got, np.cumprod(near_one.astype(np.float64), -1), rtol=(k + 1) * U32,
                                       err_msg=f"look-back cumprod {rows}x{k}")
            got = rowops.logcumsumexp(xd, axis=-1, force=RowForce(lookback=True)).get()
            want = np.logaddexp.accumulate(x.astype(np.float64), -1)
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=f"look-back logcumsumexp {rows}x{k}")


@gpu
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_adversarial_rows(op):
    cp = _cp()
    x = np.array(list(ADVERSARIAL.values()), np.float32)
    ref = ref_softmax(x) if op == "softmax" else ref_log_softmax(x)
    for force in (None, RowForce(cache="none"), RowForce(cache="local", lanes=1), RowForce(cache="none", split=3)):
        got = getattr(rowops, op)(cp.asarray(x), force=force).get()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg=f"{op} {force}")
        _close(got, ref, "float32", TOL if op == "softmax" else LOG_TOL, f"{op} {force}")
    z = np.zeros((3, 9), np.float32)
    q, s = rowops.quantize_int8(cp.asarray(z))
    assert not q.get().any() and not s.get().any()
    h = np.array([[65504.0, -65504.0, 60000.0, 1.0, 0.0, -30000.0, 65504.0]] * 3, np.float16)
    _close(rowops.rms_norm(cp.asarray(h)).get(), ref_rms_norm(h), "float16", NORM_TOL, "rms f16 max")


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("k", [32, 128])  # 2 and 4 runs a lane of float16 (16: float32), teams of 4 or 8
def test_two_runs_a_lane_follow_numpy(k, dtype):
    """Register rows of two 16-byte runs a lane (the H200's plan, forced here on any GPU; small
    launches keep one run): ADVERSARIAL softmax rows, tiled to the row length, and norm rows
    far from zero, with a weight and a bias, against the references."""
    cp = _cp()
    vec = 16 // np.dtype(dtype).itemsize
    force = RowForce(lanes=k // vec // 2)
    x = np.tile(np.array(list(ADVERSARIAL.values())), (1, -(-k // 6)))[:, :k]
    if dtype == "float16":
        x = np.where(np.abs(x) > 6e4, np.sign(x) * np.inf, x)
    x = x.astype(dtype)
    for op, ref, tol in (("softmax", ref_softmax, TOL), ("log_softmax", ref_log_softmax, LOG_TOL)):
        plan = plan_row(cuda_probe.probe_device(cp.cuda.Device().id), RowProblem(op, *x.shape, dtype), force)
        assert (plan.cache, plan.nper) == ("registers", 2 * vec)
        with np.errstate(invalid="ignore", over="ignore"):
            want = ref(x)
        got = getattr(rowops, op)(cp.asarray(x), force=force).get()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op} {k} {dtype}")
        _close(got, want, dtype, tol, f"{op} {k} {dtype}")
    rng = _rng("two-runs", k, dtype)
    y = (rng.standard_normal((40, k)) + rng.choice([0.0, 30.0, -200.0], (40, 1))).astype(dtype)
    w = rng.standard_normal(k).astype(dtype)
    b = rng.standard_normal(k).astype(dtype)
    _close(rowops.rms_norm(cp.asarray(y), cp.asarray(w), force=force).get(), ref_rms_norm(y, w), dtype, NORM_TOL,
           f"rms_norm {k} {dtype}")
    _close(rowops.layer_norm(cp.asarray(y), cp.asarray(w), cp.asarray(b), force=force).get(),
           ref_layer_norm(y, w, b), dtype, NORM_TOL, f"layer_norm {k} {dtype}")


@gpu
@pytest.mark.parametrize("k", [6, 40_000])  # a row in a warp's lanes; rows read from memory (blocks of 1024)
@pytest.mark.parametrize("force", [None, RowForce(split=2, cache="none")], ids=["whole", "split"])
def test_moments_of_nonfinite_rows_follow_numpy(k, force):
    """CUDA form of test_rowops.py's past-the-range test at K = 40 000 too: a row holding +-inf
    or NaN wherever it sits gives numpy's mean (+-inf, or NaN) and a NaN variance (row_norm.cl
    took x0 + mean(x - x0): NaN where the inf sat first; then NaN for both, by rule)."""
    cp = _cp()
    x = np.tile(np.array([1.0, -2.0, 2.0, 3.0, 0.5, 4.0], np.float32), (6, -(-k // 6)))[:, :k].copy()
    for row, (col, value) in enumerate([(1, np.inf), (0, np.inf), (2, -np.inf), (k - 1, np.inf), (1, np.nan)]):
        x[row, col] = value
    mean, var = (a.get() for a in rowops.moments(cp.asarray(x), force=force))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(mean[:5], x[:5].astype(np.float64).mean(-1))
    assert np.isnan(var[:5]).all(), var
    np.testing.assert_allclose(mean[5], x[5].astype(np.float64).mean(), rtol=1e-6)
    np.testing.assert_allclose(var[5], x[5].astype(np.float64).var(), rtol=1e-5)


def _sample(items, n, seed, request):
    if slow_enabled(request.config) or len(items) <= n:
        return items
    return random.Random(seed).sample(items, n)


@gpu
@pytest.mark.parametrize("k", [100, 5000])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_statistics_of_rows_far_from_their_first_element(k, dtype):
    """row_norm.cl RESCUE on CUDA (test_rowops.py's OpenCL form): moments and layer_norm of rows
    whose sum of (x - x0)^2 overflows give numpy's float64 statistics -- whole rows (blocks of
    a row, teams of a warp, teams of 8 lanes that reduce with the rest of their warp), local
    memory rows, split rows."""
    cp = _cp()
    x = far_first_rows(k, dtype, _rng("far", k, dtype))  # overflow, overflow, cancellation (~k * eps), far x0
    x64 = x.astype(np.float64)
    xd = cp.asarray(x)
    # short rows also in registers (two passes) and local memory (48 KiB of it)
    cached = (RowForce(cache="registers"), RowForce(cache="local", lanes=8)) if k <= 1000 else ()
    for force in (None, RowForce(cache="none", lanes=8), RowForce(cache="none", lanes=32),
                  RowForce(cache="none", lanes=128), *cached, RowForce(cache="none", split=3)):
        what = f"{dtype} K={k} {force}"
        if force is None or force.cache != "local":  # moments: registers or memory
            mean, var = rowops.moments(xd, force=force)
            np.testing.assert_allclose(var.get(), x64.var(-1), rtol=NORM_TOL[dtype]["rtol"], err_msg=what)
            # a sum's error: relative to the mean of |x| (row 3's mean cancels)
            assert (np.abs(mean.get() - x64.mean(-1)) <= NORM_TOL[dtype]["rtol"] * np.abs(x64).mean(-1)).all(), \
                (what, mean)
        _close(rowops.layer_norm(xd, force=force).get(), ref_layer_norm(x), dtype, NORM_TOL, what)


@gpu
@pytest.mark.parametrize("k", [6, 100, 5000])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_statistics_of_rows_past_the_range(k, dtype):
    """row_norm.cl WILD on CUDA (test_rowops.py's OpenCL form): rows holding an inf or NaN, or
    whose deviations from their first element overflow, give numpy's mean and a NaN or inf
    variance; layer_norm writes NaN where the row holds an inf or NaN, and layer_norm and
    rms_norm normalise the finite rows past the range (SCALED) -- the forced forms of the test
    above."""
    cp = _cp()
    x, want_mean, want_var = wild_rows(k, dtype, _rng("wild", k, dtype))
    w = np.linspace(0.5, 1.5, k).astype(dtype)
    b = np.linspace(-1.0, 1.0, k).astype(dtype)
    xd, wd, bd = cp.asarray(x), cp.asarray(w), cp.asarray(b)
    mean_abs = np.abs(x[5:].astype(np.float64)).mean(-1)
    with np.errstate(all="ignore"):
        want_y = ref_layer_norm(x[8:], w, b)
        want_rms = ref_rms_norm(x[:5], w)  # x / inf: 0, and NaN at the inf or NaN
    big_y, big_rms = ref_norms_past_the_range(x[5:8], w, b)
    cached = (RowForce(cache="registers"), RowForce(cache="local", lanes=8)) if k <= 1000 else ()
    for force in (None, RowForce(cache="none", lanes=8), RowForce(cache="none", lanes=32),
                  RowForce(cache="none", lanes=128), *cached, RowForce(cache="none", split=3)):
        what = f"{dtype} K={k} {force}"
        if force is None or force.cache != "local":  # moments: registers or memory
            mean, var = (a.get() for a in rowops.moments(xd, force=force))
            np.testing.assert_array_equal(mean[:5], want_mean[:5], err_msg=what)
            assert (np.abs(mean[5:] - want_mean[5:]) <= NORM_TOL[dtype]["rtol"] * mean_abs).all(), (what, mean)
            np.testing.assert_array_equal(var[:8], want_var[:8], err_msg=what)
            np.testing.assert_allclose(var[8], want_var[8], rtol=NORM_TOL[dtype]["rtol"], err_msg=what)
        y = rowops.layer_norm(xd, wd, bd, force=force).get()
        assert np.isnan(y[:5]).all(), (what, y[:5])
        _close(y[5:8], big_y, dtype, NORM_TOL, what)
        _close(y[8:], want_y, dtype, NORM_TOL, what)
        r = rowops.rms_norm(xd, wd, force=force).get()
        np.testing.assert_array_equal(r[:5], want_rms, err_msg=what)
        _close(r[5:8], big_rms, dtype, NORM_TOL, what)


@gpu
@pytest.mark.parametrize("k", [48, 4000, 1 << 20])  # chunks of 12, 1000 and 2^18 (one 16-byte run: 4 or 8)
def test_flat_write_gives_the_walked_writes_bits(k):
    """CUDA form of test_rowops.py's: the fold and flat write (the default for split norms
    here) against the walked split write, bit for bit, on adversarial rows, cupy input."""
    cp = _cp()
    walked, flat = RowForce(cache="none", split=4, flat_write=False), RowForce(cache="none", split=4, flat_write=True)
    for dtype in ("float32", "float16", "float64"):
        x = flat_write_rows(k, dtype, np.random.default_rng(k))
        xd = cp.asarray(x)
        w = cp.asarray(np.linspace(0.5, 1.5, k).astype(dtype))
        b = cp.asarray(np.linspace(-1.0, 1.0, k).astype(dtype))
        for op, params in (("rms_norm", ()), ("rms_norm", (w,)), ("layer_norm", ()), ("layer_norm", (w, b))):
            what = f"{op} {dtype} K={k} params {len(params)}"
            fn = getattr(rowops, op)
            want = fn(xd, *params, force=walked).get()
            got = fn(xd, *params, force=flat).get()
            np.testing.assert_array_equal(got, want, err_msg=what)
            host = [p.get() for p in params]
            ref = ref_rms_norm(x[-1:], *host) if op == "rms_norm" else ref_layer_norm(x[-1:], *host)
            _close(got[-1:], ref, dtype, NORM_TOL, what)


@gpu
def test_split_rows_of_one_value():
    """CUDA form of test_rowops.py's: all-equal rows keep variance 0, mean the value and
    layer_norm 0, whole and split (PHASE 2's merge around the first chunk's shift)."""
    cp = _cp()
    values = [-1e19, 1e30, 1e10, 3e38, 1e4 + 0.25, -2.5]
    x = np.repeat(np.array(values, np.float32)[:, None], 5000, axis=1)
    xd = cp.asarray(x)
    for force in (None, RowForce(cache="none"), RowForce(cache="none", split=3), RowForce(cache="none", split=16)):
        mean, var = (a.get() for a in rowops.moments(xd, force=force))
        np.testing.assert_array_equal(mean, x[:, 0], err_msg=f"{force}")
        np.testing.assert_array_equal(var, 0, err_msg=f"{force}")
        np.testing.assert_array_equal(rowops.layer_norm(xd, force=force).get(), 0, err_msg=f"{force}")


@gpu
@pytest.mark.parametrize("k", [10, 1000])  # a warp's lanes or registers; blocks, and split in three
def test_statistics_when_the_running_deviations_overflow(k):
    """CUDA form of test_rowops.py's: finite values near the maximum whose running deviations
    pass the range give the row's mean and an inf variance; layer_norm normalises the row."""
    cp = _cp()
    x = np.full((2, k), 1.5e38, np.float32)
    x[:, 0] = 2e38
    x[:, 1 + (k - 1) * 4 // 9:] = 3e38
    x[1] = x[1, ::-1]
    w = np.linspace(0.5, 1.5, k).astype(np.float32)
    b = np.linspace(-1.0, 1.0, k).astype(np.float32)
    xd, wd, bd = cp.asarray(x), cp.asarray(w), cp.asarray(b)
    want_y, _ = ref_norms_past_the_range(x, w, b)
    for force in (None, RowForce(cache="none"), RowForce(cache="registers"), RowForce(cache="none", split=3)):
        try:
            mean, var = (a.get() for a in rowops.moments(xd, force=force))
            y = rowops.layer_norm(xd, wd, bd, force=force).get()
        except UnsupportedOnDevice:
            continue  # registers for K = 1000
        np.testing.assert_allclose(mean, x.astype(np.float64).mean(-1), rtol=NORM_TOL["float32"]["rtol"],
                                   err_msg=f"{force}")
        np.testing.assert_array_equal(var, np.inf, err_msg=f"{force}")
        _close(y, want_y, "float32", NORM_TOL, f"{force}")


@gpu
@pytest.mark.parametrize("op", sorted(FAMILIES))
def test_forced_variants(op, request):
    cp = _cp()
    caps = cuda_probe.probe_device(cp.cuda.Device().id)
    for k in (7, 4097):
        rng = _rng(op, k)
        x = (1 + 0.01 * rng.standard_normal((37, k))).astype(np.float32) if op == "cumprod" else \
            rng.standard_normal((37, k)).astype(np.float32)
        xd = cp.asarray(x)
        for force in _sample(row_variants(caps, RowProblem(op, 37, k, "float32")), 6, zlib.crc32(f"{op}{k}".encode()),
                             request):
            what = f"{op} K={k} {force}"
            fn = getattr(rowops, op)
            if op in ("softmax", "log_softmax"):
                ref = ref_softmax(x) if op == "softmax" else ref_log_softmax(x)
                _close(fn(xd, force=force).get(), ref, "float32", TOL if op == "softmax" else LOG_TOL, what)
            elif op == "rms_norm":
                _close(fn(xd, force=force).get(), ref_rms_norm(x), "float32", NORM_TOL, what)
            elif op == "layer_norm":
                _close(fn(xd, force=force).get(), ref_layer_norm(x), "float32", NORM_TOL, what)
            elif op == "moments":
                mean, var = fn(xd, force=force)
                _close(var.get(), x.astype(np.float64).var(-1), "float32", NORM_TOL, what)
            elif op in ("absmax_scale", "quantize_int8"):
                y, s = fn(xd, force=force)
                np.testing.assert_allclose(s.get() * (127 if op == "quantize_int8" else 1), np.abs(x).max(-1),
                                           rtol=1e-6, err_msg=what)
            elif op == "cumsum":
                _assert_cumsum_bound(fn(xd, axis=-1, force=force).get(), x, -1, what)
            elif op == "cumprod":
                np.testing.assert_allclose(fn(xd, axis=-1, force=force).get(), np.cumprod(x.astype(np.float64), -1),
                                           rtol=(k + 1) * U32 * 1.01, err_msg=what)
            else:
                np.testing.assert_allclose(fn(xd, axis=-1, force=force).get(),
                                           np.logaddexp.accumulate(x.astype(np.float64), -1), rtol=2e-5, atol=2e-5,
                                           err_msg=what)


@gpu
# teams of 16 and of 4 lanes in a warp, and of a whole block (row_norm.cl TEAM_FIRST_X0 1 and 2)
@pytest.mark.parametrize("k", [128, 32, 4096])
def test_layer_norm_rows_far_from_zero(k):
    """layer_norm of float32 rows whose means lie 1e4 apart, row to row: each team shifts its
    rows by their first element, passed from the team's lane 0 by one shuffle or through
    local memory (TEAM_FIRST_X0). An element of a neighbouring row (another team's lane 0)
    would leave the sums of the shifted row at ~1e4 per element and the result ~1e-3 off."""
    cp = _cp()
    rng = _rng("far", k)
    rows = 4096 if k < 4096 else 512
    offsets = 1e4 * (np.arange(rows) % 7 - 3.0)
    x = (offsets[:, None] + rng.standard_normal((rows, k))).astype(np.float32)
    w = rng.standard_normal(k).astype(np.float32)
    b = rng.standard_normal(k).astype(np.float32)
    got = rowops.layer_norm(cp.asarray(x), cp.asarray(w), cp.asarray(b)).get()
    _close(got, ref_layer_norm(x, w, b), "float32", NORM_TOL, f"layer_norm rows 1e4 apart, K={k}")
    mean, var = rowops.moments(cp.asarray(x))
    _close(var.get(), x.astype(np.float64).var(-1), "float32", NORM_TOL, f"var rows 1e4 apart, K={k}")


@gpu
def test_the_benchmark_rms_norm_shape():
    """648720 x 128 float16 (the issue's QuACK shape): registers cache, one warp per row."""
    cp = _cp()
    x = (_rng("quack").standard_normal((648_720, 128))).astype(np.float16)
    w = _rng("quack-w").standard_normal(128).astype(np.float16)
    got = rowops.rms_norm(cp.asarray(x), cp.asarray(w)).get()
    _close(got[::97], ref_rms_norm(x[::97], w.astype(np.float64)), "float16", NORM_TOL, "rms_norm 648720x128")


@gpu
def test_kinds_out_and_streams():
    """cupy in -> cupy out on the input's device; numpy with backend='cuda' -> numpy; torch
    (when installed) -> torch on its device; out= of the result's kind, shape and dtype."""
    cp = _cp()
    x = _rng("kinds").standard_normal((5, 6, 33)).astype(np.float32)
    xd = cp.asarray(x)
    y = rowops.softmax(xd, axis=1)
    assert isinstance(y, cp.ndarray) and y.device.id == xd.device.id
    _close(y.get(), ref_softmax(x, axis=1), "float32", TOL, "cupy axis 1")
    host = rowops.layer_norm(x, backend="cuda")
    assert isinstance(host, np.ndarray)
    _close(host, ref_layer_norm(x), "float32", NORM_TOL, "numpy via cuda")
    dst = cp.empty_like(xd)
    assert rowops.softmax(xd, out=dst) is dst
    _close(dst.get(), ref_softmax(x), "float32", TOL, "out=")
    q, s = cp.empty(x.shape, cp.int8), cp.empty(x.shape[:-1], cp.float32)
    assert rowops.quantize_int8(xd, out=(q, s)) == (q, s)
    np.testing.assert_array_equal(q.get(), ref_quantize(x)[0])
    with pytest.raises(TypeError, match="dtype"):
        rowops.softmax(xd, out=cp.empty(x.shape, cp.float64))
    with pytest.raises(TypeError, match="kind|array like"):
        rowops.softmax(xd, out=np.empty(x.shape, np.float32))
    with pytest.raises(ValueError, match="shape"):
        rowops.softmax(xd, out=cp.empty((5, 6), cp.float32))
    np.testing.assert_array_equal(xd.get(), x)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    t = torch.as_tensor(x, device="cuda")
    with torch.cuda.stream(torch.cuda.Stream()):
        r = rowops.rms_norm(t, torch.ones(33, device="cuda"))
    assert isinstance(r, torch.Tensor) and r.is_cuda
    _close(r.cpu().numpy(), ref_rms_norm(x), "float32", NORM_TOL, "torch")
    c = rowops.cumsum(torch.as_tensor(x[0, 0], device="cuda"), axis=0)
    _assert_cumsum_bound(c.cpu().numpy(), x[0, 0], 0, "torch cumsum")
    q8, sc = rowops.quantize_int8(t)
    back = rowops.dequantize(q8, sc)
    assert isinstance(back, torch.Tensor)
    assert np.all(np.abs(back.cpu().numpy() - x) <= sc.cpu().numpy()[..., None] * 0.5001)


@gpu
@pytest.mark.parametrize("call, error", [
    (lambda cp: rowops.softmax(cp.arange(6).reshape(2, 3)), TypeError),
    (lambda cp: rowops.rms_norm(cp.ones((2, 3), cp.int32)), TypeError),
    (lambda cp: rowops.layer_norm(cp.ones((2, 3), cp.float32), weight=cp.ones(4, cp.float32)), ValueError),
    (lambda cp: rowops.rms_norm(cp.ones((2, 3), cp.float32), eps=0), ValueError),
    (lambda cp: rowops.softmax(cp.ones((2, 3), cp.float32), axis=2), AxisError),
    (lambda cp: rowops.logcumsumexp(cp.arange(5)), TypeError),
    (lambda cp: rowops.softmax(cp.ones((2, 3), cp.float32), device="pocl"), TypeError),
])
def test_bad_input(call, error):
    with pytest.raises(error):
        call(_cp())


def test_unsupported_forced_variant_is_refused_not_replaced():
    with pytest.raises(UnsupportedOnDevice):
        plan_row(H100, RowProblem("softmax", 4, 100_000, "float32"), RowForce(cache="registers"))


def test_mid_length_rows_plan_vector_runs():
    """K = 128 float16 on an H100: 16 lanes of one 16-byte run each (two rows per warp), the
    row in registers; odd rows keep element loads."""
    p = plan_row(H100, RowProblem("rms_norm", 648_720, 128, "float16"))
    assert (p.cache, p.vec, p.lanes, p.nper) == ("registers", 8, 16, 8)
    p = plan_row(H100, RowProblem("softmax", 442_368, 128, "float32"))
    assert (p.vec, p.lanes) == (4, 32)
    assert plan_row(H100, RowProblem("softmax", 100, 33, "float16")).vec == 1


# An H200 whose probe found no memory clock: its DRAM bandwidth unknown, it plans as the H100
UNKNOWN_BANDWIDTH = cuda_probe.caps_from_properties({k: v for k, v in cuda_probe.H200_PROPERTIES.items()
                                                     if k != "memoryClockRate"})


def _fast_memory_problem(op, dtype, shape, bias=False):
    """The bandwidth rules' problems: norms with a weight (float16 read as it is)."""
    w = op.endswith("norm")
    return RowProblem(op, *shape, dtype, weight=w, bias=bias and w, params_half=w and dtype == "float16")


# (op, dtype, shape) -> (lanes, NPER) on an H100 and on an H200 (CUDA_TWO_RUNS_GBPS_PER_SM)
TWO_RUN_CASES = [
    ("rms_norm", "float32", (1_048_576, 32), (8, 4), (4, 8)),        # H200: two 16-byte runs a lane
    ("rms_norm", "float16", (442_368, 128), (16, 8), (8, 16)),
    ("softmax", "float32", (16_777_216, 16), (4, 4), (2, 8)),        # a row of 4 runs: two lanes
    ("layer_norm", "float16", (4_194_304, 64), (8, 8), (4, 16)),     # its 8 elements a lane: one run
    ("layer_norm", "float32", (442_368, 128), (16, 8), (16, 8)),     # 8 elements a lane: two runs on both
    ("softmax", "float16", (16_777_216, 16), (2, 8), (2, 8)),        # a row of 2 runs keeps a lane for each
    ("log_softmax", "float16", (8192, 1000), (64, 16), (64, 16)),    # 1.9 waves of threads with two runs:
                                                                     #   one (CUDA_TWO_RUNS_MIN_WAVES)
    ("softmax", "float32", (8192, 1000), (128, 8), (64, 16)),        # 3.8 waves: two
    ("rms_norm", "float32", (65_536, 4096), (256, 16), (256, 16)),   # a group a row either way
]


@pytest.mark.parametrize("op,dtype,shape,h100,h200", TWO_RUN_CASES)
def test_fast_memory_gives_each_lane_two_runs(op, dtype, shape, h100, h200):
    """A GPU whose DRAM outruns its SMs (H200: 36 GB/s an SM, the H100 25) plans register rows
    of two 16-byte runs a lane where the row has four or more and the launch fills the GPU
    twice; the H100 keeps one; a GPU whose bandwidth is unknown plans as the H100."""
    problem = _fast_memory_problem(op, dtype, shape)
    for caps, want in ((H100, h100), (H200, h200), (UNKNOWN_BANDWIDTH, h100)):
        p = plan_row(caps, problem)
        assert (p.cache, p.lanes, p.nper) == ("registers", *want), caps.name


# (op, dtype, shape, bias) -> ROW_WIDE_STORES on an H200 (None: the kernel file's own choice)
WIDE_STORE_CASES = [
    ("layer_norm", "float16", (16_777_216, 16), False, "1"),   # 2 runs a row: 16-byte stores
    ("layer_norm", "float16", (1_048_576, 32), True, "1"),     # 4 runs (CUDA_WIDE_STORE_LAYER_NORM_RUNS)
    ("layer_norm", "float16", (4_194_304, 64), False, None),   # 8 runs: level on the H200, keeps its stores
    ("layer_norm", "float32", (16_777_216, 16), False, None),  # float32: mixed on the H200
    ("layer_norm", "float16", (1000, 14), False, None),        # element runs (VEC 1): nothing to widen
    ("rms_norm", "float16", (16_777_216, 16), False, None),    # rms_norm stores wide in every plan
]


@pytest.mark.parametrize("op,dtype,shape,bias,h200", WIDE_STORE_CASES)
def test_fast_memory_layer_norm_stores_short_float16_rows_wide(op, dtype, shape, bias, h200):
    """float16 layer_norm rows of at most 4 runs on an H200 store a run with one 16-byte
    instruction; the H100 (it lost 6 % with them on rows of 128), a GPU of unknown bandwidth
    and OpenCL devices keep the kernel file's choice."""
    problem = _fast_memory_problem(op, dtype, shape, bias)
    for caps, want in ((H200, h200), (H100, None), (UNKNOWN_BANDWIDTH, None)):
        assert dict(plan_row(caps, problem).defines).get("ROW_WIDE_STORES") == want, caps.name
    for name, profile in PROFILES.items():  # mobile GPUs and CPUs (OpenCL)
        try:
            plan = plan_row(profile, problem)
        except UnsupportedOnDevice:  # a device without float16 row plans for this shape
            continue
        assert "ROW_WIDE_STORES" not in dict(plan.defines), name


# (op, dtype, shape) -> whether the plan builds the row length in (ROW_RUNS_EXACT)
EXACT_RUN_CASES = [
    ("layer_norm", "float16", (16_777_216, 16), True),    # lanes 2 x NPER 8: 0.88 -> 0.97 of torch.compile
    ("layer_norm", "float16", (442_368, 128), True),
    ("layer_norm", "float16", (65_536, 4096), True),      # a group's lanes fill the row
    ("layer_norm", "float16", (8_192, 1000), False),      # 32 lanes x 32 > 1000: a lane's last run is short
    ("layer_norm", "float32", (16_777_216, 16), False),   # float32 lost 2-5 % with the change
    ("rms_norm", "float16", (16_777_216, 16), False),     # layer_norm's loop only
    ("layer_norm", "float16", (64, 4_194_304), False),    # split rows read from memory
]


@pytest.mark.parametrize("op,dtype,shape,exact", EXACT_RUN_CASES)
def test_float16_layer_norm_rows_that_fill_their_runs_build_the_length_in(op, dtype, shape, exact):
    """CUDA float16 layer_norm register rows with lanes * NPER == K get ROW_RUNS_EXACT (no
    clamp or padding of the runs, K a constant); other rows, dtypes, ops and OpenCL plans do
    not (the kernel refuses it but for register rows)."""
    problem = _fast_memory_problem(op, dtype, shape, bias=True)
    for caps in (H200, H100):
        p = plan_row(caps, problem)
        assert (dict(p.defines).get("ROW_RUNS_EXACT") == "1") == exact, (caps.name, p.defines)
        if exact:
            assert p.cache == "registers" and p.lanes * p.nper == shape[1]
    for name, profile in PROFILES.items():
        try:
            plan = plan_row(profile, problem)
        except UnsupportedOnDevice:
            continue
        assert "ROW_RUNS_EXACT" not in dict(plan.defines), name


@gpu
# K = 16, 32, 128: teams of 2, 2 and 8 lanes inside a warp; 4096: a group's lanes; rows not a
# multiple of the teams a group (the last group's spare teams read row 0's runs)
@pytest.mark.parametrize("rows,k", [(1003, 16), (517, 32), (259, 128), (7, 4096)])
def test_float16_layer_norm_rows_with_exact_runs(rows, k):
    """ROW_RUNS_EXACT rows (the second pass's deviations kept for the write; a power-of-two
    row length's reciprocal): numpy's formulas on rows with an inf, a NaN, rows of +-65504,
    rows of one value, rows 6e4 off zero and tiny rows, with a float16 weight and bias."""
    cp = _cp()
    rng = _rng("exact runs", rows, k)
    x = rng.standard_normal((rows, k)) * 3
    x[1, k // 2] = np.inf
    x[2, 0] = np.nan
    x[3, ::2], x[3, 1::2] = 65504.0, -65504.0
    x[4] = 1234.5
    x[5::7] += 6e4 * np.sign(rng.standard_normal((len(x[5::7]), 1)))
    x[6] *= 1e-6
    x = np.clip(x, -65504, 65504, where=np.isfinite(x), out=x).astype(np.float16)
    w = rng.uniform(0.5, 1.5, k).astype(np.float16)
    b = rng.uniform(-1, 1, k).astype(np.float16)
    problem = RowProblem("layer_norm", rows, k, "float16", weight=True, bias=True, params_half=True)
    from clreduce.backends.cuda.rowops import plan_for
    assert dict(plan_for(0, problem, None)[0].defines).get("ROW_RUNS_EXACT") == "1"
    got = rowops.layer_norm(cp.asarray(x), cp.asarray(w), cp.asarray(b)).get()
    with np.errstate(all="ignore"):
        want = ref_layer_norm(x, w, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"K={k} NaN positions")
    _close(got, want, "float16", NORM_TOL, f"layer_norm float16 {rows}x{k}")


# (op, dtype, shape) -> one trip a team on an H200 (a group for every TEAMS rows), else 64 groups an SM
ONE_TRIP_CASES = [
    ("softmax", "float32", (16_777_216, 16), True),     # 1 GB of float32 rows in registers
    ("rms_norm", "float32", (4_194_304, 64), True),
    ("layer_norm", "float32", (65_536, 4096), True),    # a group a row: 65536 groups
    ("layer_norm", "float32", (1_048_576, 32), False),  # 128 MB (under CUDA_ONE_TRIP_MIN_BYTES): lost 3 %
    ("softmax", "float16", (16_777_216, 16), False),    # float16 lanes of one run: lost, keep the cap
    ("rms_norm", "float16", (4_194_304, 64), True),     # float16 lanes of two runs (512 MB): won
    ("softmax", "float16", (65_536, 4096), True),
    ("layer_norm", "float16", (4_194_304, 64), False),  # float16 layer_norm: lost 7 %
    ("log_softmax", "float32", (16_777_216, 16), False),  # not measured
    ("softmax", "float32", (64, 4_194_304), False),     # split rows read from memory
]


@pytest.mark.parametrize("op,dtype,shape,h200", ONE_TRIP_CASES)
def test_fast_memory_register_rows_take_one_trip(op, dtype, shape, h200):
    """Large launches of float32 register rows (float16: rms_norm and softmax lanes of two runs)
    on an H200 give every team one trip (no grid stride); the H100 and a GPU of unknown
    bandwidth keep GPU_GROUPS_PER_CU groups an SM."""
    problem = _fast_memory_problem(op, dtype, shape)
    for caps, one in ((H200, h200), (H100, False), (UNKNOWN_BANDWIDTH, False)):
        p = plan_row(caps, problem)
        teams = p.wg_size // p.lanes
        groups = p.passes[0].global_size // p.wg_size
        want = -(-shape[0] * p.split // teams) if one else min(-(-shape[0] * p.split // teams),
                                                               caps.compute_units * GPU_GROUPS_PER_CU)
        assert groups == want, (caps.name, groups, want)
        assert (groups > caps.compute_units * GPU_GROUPS_PER_CU) == one, caps.name


# (op, dtype, shape) -> (lanes, NPER, MIN_BLOCKS or None), planned for an H100
REGISTER_CAP_CASES = [
    ("softmax", "float16", (648_720, 128), (16, 8, "8")),       # NPER <= 8: every thread resident (32 registers)
    ("softmax", "float16", (65_536, 4096), (256, 16, "8")),     # NPER 16, softmax: still all
    ("rms_norm", "float16", (65_536, 4096), (256, 16, "6")),    # NPER 16, rms_norm: three quarters (all:
                                                                #   it spilled, 2468 -> 2142-2183 GB/s)
    ("softmax", "float16", (8192, 32_768), (512, 64, None)),    # 64 elements a lane: no cap
    ("layer_norm", "float16", (65_536, 4096), (256, 16, "6")),  # NPER 16, layer_norm: three quarters (40)
    ("layer_norm", "float16", (648_720, 128), (16, 8, "8")),    # 8 elements a lane, not two runs of 8
    ("layer_norm", "float32", (442_368, 128), (16, 8, None)),   # float32: nvcc's own register count
    ("layer_norm", "float16", (8192, 1000), (32, 32, None)),    # one warp a row (64 lanes would need a
                                                                #   barrier per reduce); NPER 32: no cap
    ("softmax", "float16", (4096, 65_536), (512, 1, None)),     # rows read from memory: no cap (a block
                                                                #   of 512 a row: CUDA_UNCACHED_HALF_SOFTMAX_WG)
]


@pytest.mark.parametrize("op,dtype,shape,want", REGISTER_CAP_CASES)
def test_float16_register_rows_ask_for_resident_threads(op, dtype, shape, want):
    """CUDA_RESIDENT: float16 softmax / norm rows in registers cap nvcc's registers through
    MIN_BLOCKS (launch bounds) so more of the SM's threads stay resident; on a T4 (1024
    threads per SM) the same share asks for half as many groups; OpenCL plans never carry it."""
    w = op != "softmax"
    problem = RowProblem(op, *shape, dtype, weight=w, bias=op == "layer_norm", params_half=w and dtype == "float16")
    p = plan_row(H100, problem)
    assert (p.lanes, p.nper, dict(p.defines).get("MIN_BLOCKS")) == want
    if want[2] is not None:
        t4 = dict(plan_row(T4, problem).defines)
        assert int(t4["MIN_BLOCKS"]) * p.wg_size <= 1024
        opencl = dataclasses.replace(H100, backend="opencl", implementation="nvidia")
        assert "MIN_BLOCKS" not in dict(plan_row(opencl, problem).defines)


# (op, dtype, shape) -> (work-group size = lanes, split, WALK_RUNS), planned for an H100
UNCACHED_CASES = [
    ("rms_norm", "float16", (4096, 65_536), (1024, 1, "1")),   # whole rows read twice: a block of 1024
    ("softmax", "float32", (4096, 65_536), (1024, 1, "1")),
    ("layer_norm", "float32", (64, 20_000), (1024, 1, "1")),   # 5000 runs: >= 4 a thread at 1024
    ("softmax", "float16", (64, 20_000), (256, 1, "1")),       # 2500 runs: < 8 a thread at 512, keeps 256
    ("softmax", "float16", (500, 32_768), (512, 1, "1")),      # 4096 runs, 8 a thread (1024: 1609 -> 2197 GB/s);
                                                               #   528 rows and more are cached (512 x 64)
    ("rms_norm", "float16", (16_384, 16_384), (512, 1, "1")),  # 2048 runs, 4 a thread (256: 2418 -> 2947)
    ("softmax", "float32", (64, 16_384), (512, 1, "1")),       # too few rows to cache a row a group
    ("rms_norm", "float16", (64, 4_194_304), (256, 8, "1")),   # split rows: 256 was as fast; 8 chunks: 512 tasks, one wave
    ("moments", "float16", (4096, 65_536), (256, 1, "1")),     # one read: nothing comes back from L2
    ("absmax_scale", "float16", (4096, 65_536), (256, 1, "0")),  # row_scale.cl: vector-only runs
]


@pytest.mark.parametrize("op,dtype,shape,want", UNCACHED_CASES)
def test_uncached_rows_take_wide_blocks_and_runs(op, dtype, shape, want):
    """CUDA_UNCACHED_WG and CUDA_WALK_RUNS: the shapes measured on an H100; a forced launch
    shape is kept, and NVIDIA's OpenCL plans neither."""
    problem = RowProblem(op, *shape, dtype)
    p = plan_row(H100, problem)
    assert (p.cache, p.wg_size, p.lanes, p.split, dict(p.defines)["WALK_RUNS"]) == ("none", want[0], want[0],
                                                                                     want[1], want[2])
    forced = plan_row(H100, problem, RowForce(lanes=256))
    assert (forced.lanes, forced.wg_size) == (256, 256)
    opencl = plan_row(dataclasses.replace(H100, backend="opencl", implementation="nvidia"), problem)
    assert opencl.wg_size <= 256 and dict(opencl.defines)["WALK_RUNS"] == "0"


# (op, dtype, shape) -> MIN_BLOCKS of both launches, planned for an H100 (2048 threads an SM)
SPLIT_BOUNDS_CASES = [
    ("layer_norm", "float32", (1, 1 << 28), "4"),    # 528 chunks in groups of 256: 4 an SM (nvcc
                                                      #   gave the write launch 71 registers: 3)
    ("rms_norm", "float16", (64, 4_194_304), "4"),   # 8 chunks a row, 512 tasks
    ("softmax", "float32", (263, 32_768), "4"),      # split: too few rows for the SMs
    ("softmax", "float32", (4096, 65_536), None),    # whole rows read twice: no split, no cap
]


@pytest.mark.parametrize("op,dtype,shape,want", SPLIT_BOUNDS_CASES)
def test_split_rows_ask_for_the_planned_wave(op, dtype, shape, want):
    """cuda_split_min_blocks: a split launch asks nvcc for registers that let the split's wave
    (GPU_SPLIT_GROUPS_PER_CU groups an SM) stay resident; as many as fit on a T4 (1024 threads
    an SM); no OpenCL plan carries it."""
    from clreduce.plan_rowops import GPU_SPLIT_GROUPS_PER_CU

    problem = RowProblem(op, *shape, dtype, weight=op != "softmax")
    p = plan_row(H100, problem)
    assert (p.split > 1) == (want is not None)
    for ps in p.passes:
        defines = dict(ps.defines)
        if defines.get("FLAT_WRITE") == "1" and defines["PHASE"] == "3":
            # the flat write: one run a thread, every thread an SM holds (CUDA_FLAT_WRITE_SHARE)
            assert int(defines["MIN_BLOCKS"]) * p.wg_size == 2048, defines
        else:
            assert defines.get("MIN_BLOCKS") == want, defines
    if want is not None:
        assert int(want) == GPU_SPLIT_GROUPS_PER_CU and int(want) * p.wg_size <= 2048
        t4 = plan_row(T4, problem)
        if t4.split > 1:
            assert all(int(dict(ps.defines)["MIN_BLOCKS"]) * t4.wg_size <= 1024 for ps in t4.passes)
    opencl = plan_row(dataclasses.replace(H100, backend="opencl", implementation="nvidia"), problem)
    assert all("MIN_BLOCKS" not in dict(ps.defines) for ps in opencl.passes)


# (op, dtype, shape, weight, phases) -> the phases of the launches planned for an H100
FLAT_WRITE_CASES = [
    ("rms_norm", "float16", (1, 1 << 28), True, (1, 2, 3)),      # split: statistics, fold, flat write
    ("layer_norm", "float32", (1, 1 << 28), True, (1, 2, 3)),
    ("rms_norm", "float16", (64, 4_194_304), True, (1, 2)),      # several rows: the chunk walk keeps
    ("layer_norm", "float32", (64, 4_194_304), True, (1, 2)),    #   the weight in L2 (flat: 20 % slower)
    ("layer_norm", "float32", (1, 1 << 28), False, (1, 2, 3)),   # no weight or bias: the same launches
    ("rms_norm", "float32", (3, 1_000_003), True, (1, 2)),       # no multiple of VEC: the chunk walk writes
    ("moments", "float32", (1, 1 << 28), False, (1, 2)),         # no rows to write
    ("softmax", "float32", (263, 32_768), False, (1, 2)),        # not a norm
    ("rms_norm", "float16", (65_536, 4096), True, (0,)),         # whole rows
]


@pytest.mark.parametrize("op,dtype,shape,weight,phases", FLAT_WRITE_CASES)
def test_split_norms_write_flat_on_cuda(op, dtype, shape, weight, phases):
    """plan_rowops.FLAT_WRITE_OPS: CUDA's split norms of one row fold in PHASE 2 and write in
    PHASE 3, a group per tile of WG_SIZE runs of the row; several rows and OpenCL plans keep
    the chunk walk unless forced."""
    problem = RowProblem(op, *shape, dtype, weight=weight)
    p = plan_row(H100, problem)
    assert tuple(int(dict(ps.defines)["PHASE"]) for ps in p.passes) == phases
    assert p.flat_write == (3 in phases)
    if p.flat_write:
        assert [dict(ps.defines).get("FLAT_WRITE") for ps in p.passes] == [None, "1", "1"]
        assert [(ps.reads, ps.writes) for ps in p.passes][1:] == [("input", "partials"), ("input", "output")]
        runs = shape[1] // p.vec
        assert p.passes[2].global_size == shape[0] * -(-runs // p.wg_size) * p.wg_size
        from clreduce.backends import row_args
        assert row_args.buffer_bytes(p, problem)["partials"] == shape[0] * (p.split + 1) * 4 * 4
    opencl = plan_row(dataclasses.replace(H100, backend="opencl", implementation="nvidia"), problem)
    assert not opencl.flat_write and all(int(dict(ps.defines)["PHASE"]) < 3 for ps in opencl.passes)


@pytest.mark.parametrize("caps,threads", [(H200, 2048), (H100, 2048), (T4, 1024)])
@pytest.mark.parametrize("op", ["rms_norm", "layer_norm"])
def test_flat_write_asks_for_every_thread_an_sm_holds(caps, threads, op):
    """plan_rowops.CUDA_FLAT_WRITE_SHARE: the flat write (PHASE 3, one run a thread) asks nvcc
    for registers that keep every thread of an SM resident, where the statistics launch keeps
    the split's wave (GPU_SPLIT_GROUPS_PER_CU). With the wave's bound nvcc gave the float16
    write with a weight 40 registers (60 % of warps active under ncu); with this one 32: float16
    rms_norm 1 x 2^28 on an H200 1984 -> 2130-2150 GB/s, layer_norm 1963-1983 -> 2109-2126."""
    from clreduce.plan_rowops import GPU_SPLIT_GROUPS_PER_CU

    problem = RowProblem(op, 1, 1 << 28, "float16", weight=True, bias=op == "layer_norm", params_half=True)
    p = plan_row(caps, problem)
    assert p.flat_write
    blocks = [int(dict(ps.defines).get("MIN_BLOCKS", 1)) for ps in p.passes]
    assert blocks[2] * p.wg_size == threads, blocks
    assert blocks[0] == min(GPU_SPLIT_GROUPS_PER_CU, threads // p.wg_size), blocks


# (op, dtype, shape) -> whether the write walk goes backwards (WALK_BACK), planned for an H100
# (132 SMs of 2048 threads, 50 MB L2): rows in flight x row bytes against the L2
WALK_BACK_CASES = [
    ("softmax", "float32", (4096, 65_536), True),       # 264 rows of 256 KB: 69 MB (1875 -> 1957+ GB/s)
    ("log_softmax", "float32", (4096, 65_536), True),
    ("rms_norm", "float32", (4096, 65_536), True),      # 2043 -> 2138
    ("layer_norm", "float32", (4096, 65_536), True),    # 2001 -> 2204
    ("rms_norm", "float16", (2048, 262_144), True),     # 264 rows of 512 KB
    ("rms_norm", "float16", (4096, 65_536), False),     # 34 MB fit: backwards lost 1-2 %
    ("softmax", "float16", (8192, 32_768), False),      # 528 rows of 64 KB (blocks of 512): 34 MB
    ("rms_norm", "float32", (8192, 32_768), False),     # cached in registers: read once
    ("rms_norm", "float32", (263, 32_768), False),      # split: the second walk is another launch
    ("softmax", "float32", (8192, 32_768), False),      # cached in registers: read once
    ("rms_norm", "float32", (250, 65_536), False),      # split rows: the second walk is another launch
    ("moments", "float32", (4096, 65_536), False),      # one read, no write walk
    ("softmax", "float16", (4096, 65_536), True),       # blocks of 512 (not 1024): 528 rows of 128 KB
    ("log_softmax", "float16", (4096, 65_536), True),
]


# (op, dtype, shape) -> block width of whole rows read twice from memory on an H200
# (plan_rowops._cuda_uncached_wg: CUDA_UNCACHED_RUNS runs a thread, CUDA_UNCACHED_WG at most)
UNCACHED_WG_CASES = [
    ("softmax", "float16", (4096, 65_536), 512),        # 8192 runs: float16 softmax stops at 512
    ("log_softmax", "float16", (2048, 131_072), 512),
    ("softmax", "float32", (4096, 65_536), 1024),       # 16384 runs: 1024
    ("rms_norm", "float16", (4096, 65_536), 1024),      # the norms: 1024 (4 runs a thread)
    ("softmax", "float16", (16_384, 16_384), 512),      # cached in registers (a wider budget): not this rule
]


@pytest.mark.parametrize("op,dtype,shape,wg", UNCACHED_WG_CASES)
def test_uncached_rows_block_width(op, dtype, shape, wg):
    p = plan_row(H200, RowProblem(op, *shape, dtype))
    assert (p.wg_size, p.lanes) == (wg, wg)


@pytest.mark.parametrize("op,dtype,shape,back", WALK_BACK_CASES)
def test_rows_past_the_l2_write_backwards(op, dtype, shape, back):
    """CUDA walk_back: only where an uncached launch's rows in flight pass the L2; never on
    NVIDIA's OpenCL (unmeasured there), whatever the shape. softmax's backward walks also
    stream (STREAM_WRITE: evict-first loads and stores in the write walk); the norms' do not."""
    problem = RowProblem(op, *shape, dtype)
    defines = dict(plan_row(H100, problem).defines)
    assert defines.get("WALK_BACK") == ("1" if back else None)
    stream = back and op in ("softmax", "log_softmax")
    assert defines.get("STREAM_WRITE") == ("1" if stream else None), defines
    opencl = plan_row(dataclasses.replace(H100, backend="opencl", implementation="nvidia"), problem)
    assert "WALK_BACK" not in dict(opencl.defines) and "STREAM_WRITE" not in dict(opencl.defines)


@gpu
def test_write_walk_backwards_gives_the_same_rows(monkeypatch):
    """The backward write walk forced on small rows on the GPU (the planner takes it only for
    rows of ~256 KB and more; rowops_refs.check_backward_write_walk)."""
    from clreduce.backends.cuda import rowops as cuda_rowops

    cp = _cp()
    check_backward_write_walk(monkeypatch, cuda_rowops,
                              lambda op, x, force: getattr(rowops, op)(cp.asarray(x), force=force).get())


# (op, dtype, shape) -> (cache, lanes = work-group size, NPER), planned for an H100
WIDE_REGISTER_CASES = [
    ("softmax", "float32", (16_384, 16_384), ("registers", 512, 32)),   # 1779 -> 2959 GB/s
    ("log_softmax", "float32", (8192, 32_768), ("registers", 1024, 32)),
    ("softmax", "float32", (8192, 32_768), ("registers", 1024, 32)),    # 2210 -> 2957
    ("softmax", "float32", (4096, 65_536), ("none", 1024, 1)),          # past 1024 x 32: read twice
    ("softmax", "float32", (132, 32_768), ("none", 256, 1)),            # fewer rows than a wave: split
    ("softmax", "float16", (16_384, 16_384), ("registers", 512, 32)),   # 2209-2250 -> 2918-2988
    ("log_softmax", "float16", (8192, 32_768), ("registers", 512, 64)), # 1024 x 32 ran level: 512 x 64
    ("softmax", "float16", (8192, 32_768), ("registers", 512, 64)),     # 2321-2382 -> 2725-2733
    ("softmax", "float16", (4096, 65_536), ("none", 512, 1)),           # past 512 x 64: read twice, by 512
    ("softmax", "float16", (264, 16_384), ("none", 256, 1)),            # fewer rows than a wave of 512s
    ("rms_norm", "float32", (8192, 32_768), ("registers", 1024, 32)),   # 2786-2822 -> 2957-2966
    ("layer_norm", "float32", (16_384, 16_384), ("registers", 512, 32)),  # 2545-2578 -> 2922-2932
    ("layer_norm", "float16", (8192, 32_768), ("registers", 512, 64)),    # 2522 -> 2601-2641
    ("rms_norm", "float16", (16_384, 16_384), ("none", 512, 1)),        # float16 norms, 32 a thread: slower
]


@pytest.mark.parametrize("op,dtype,shape,want", WIDE_REGISTER_CASES)
def test_softmax_rows_cached_by_wide_groups(op, dtype, shape, want):
    """CUDA_WIDE_REGISTER_ROWS: softmax rows of up to 1024 x 32 float32 or 512 x 64 float16
    elements are cached in registers by a group of 512 or 1024 where the rows fill a wave; a
    forced shape, NVIDIA's OpenCL and the other ops keep the planner's usual choice."""
    problem = RowProblem(op, *shape, dtype)
    p = plan_row(H100, problem)
    assert (p.cache, p.lanes, p.nper) == want and p.wg_size == p.lanes
    forced = plan_row(H100, problem, RowForce(wg_size=256))
    assert forced.wg_size == 256
    opencl = plan_row(dataclasses.replace(H100, backend="opencl", implementation="nvidia"), problem)
    assert opencl.wg_size <= 256


@pytest.mark.parametrize("rows,k,want", [
    (64, 4_194_304, 8),     # 528 slots: 9 chunks made 576 tasks, a second wave of 48; 8 make 512
    (1, 1 << 28, 528),      # one row: exactly the slots
    (300, 65_536, 5),       # 2 would be 600 tasks (a wave and 72); 5 are 1500 of 1584 (95 %)
    (2, 40_000, 4),         # chunks of at least ROW_SPLIT_MIN_CHUNK allow no full wave: the old rule
])
def test_split_rows_fill_whole_waves(rows, k, want):
    """_whole_wave_split: on GPUs a split row's tasks fill whole waves of the planner's 4 groups
    a compute unit (132 SMs: 528) to SPLIT_WAVE_FILL; CPU devices keep the plain rule."""
    p = plan_row(H100, RowProblem("softmax", rows, k, "float16"))
    assert p.split == want
    tasks = rows * p.split
    assert tasks / (-(-tasks // 528) * 528) >= 0.9 or k // 8192 == want
    cpu = dataclasses.replace(H100, backend="opencl", implementation="pocl", device_type="cpu", compute_units=2)
    cpu_plan = plan_row(cpu, RowProblem("softmax", 64, 4_194_304, "float32"))
    assert cpu_plan.split == max(1, min(-(-2 * 2 * cpu_plan.wg_size // cpu_plan.lanes // 64), 4_194_304 // 8192))


@pytest.mark.parametrize("op,shape,weight,bias,want", [
    ("rms_norm", (64, 4_194_304), True, False, 1),     # split rows: PHASE 2's write
    ("layer_norm", (4096, 65_536), True, True, 1),     # whole rows read from memory
    ("layer_norm", (442_368, 128), False, True, 1),    # rows in registers, a bias alone
    ("rms_norm", (442_368, 128), False, False, 0),     # nothing to load
    ("moments", (4096, 65_536), False, False, 0),      # writes no row
])
def test_param_runs_on_cuda_only(op, shape, weight, bias, want):
    """PARAM_RUNS: the norms read weight and bias in runs on CUDA; OpenCL plans keep element
    loads (NVIDIA's OpenCL aligned loads read IN_T vectors)."""
    problem = RowProblem(op, *shape, "float16", weight=weight, bias=bias)
    assert int(dict(plan_row(H100, problem).defines).get("PARAM_RUNS", 0)) == want
    opencl = plan_row(dataclasses.replace(H100, backend="opencl", implementation="nvidia"), problem)
    assert "PARAM_RUNS" not in dict(opencl.defines)


def _wide_rows(rng, rows: int, k: int, dtype: str, row3: float, neg_inf_row4: bool) -> np.ndarray:
    """(rows, k) standard normal values of `dtype` with specials for the wide-group tests: a NaN
    in row 1, +inf in row 2, row 3 all `row3`, -inf at 500 random places of row 4 (where
    asked), row 5 offset (1e4; float16 100) and row 6 ending in three 50s."""
    x = rng.standard_normal((rows, k)).astype(np.float32)
    x[1, 12_345] = np.nan
    x[2, 3_001] = np.inf
    x[3, :] = row3
    if neg_inf_row4:
        x[4, rng.integers(0, k, 500)] = -np.inf
    x[5] += 1e4 if dtype == "float32" else 100.0
    x[6, -3:] = 50.0
    return x.astype(dtype)


@gpu
@pytest.mark.parametrize("dtype,rows,k,lanes", [
    ("float32", 528, 16_384, 512),    # a wave of groups of 512, NPER 32
    ("float32", 264, 32_768, 1024),   # a wave of groups of 1024, NPER 32
    ("float16", 528, 16_384, 512),    # NPER 32
    ("float16", 528, 32_768, 512),    # NPER 64
])
def test_softmax_rows_in_wide_group_registers(dtype, rows, k, lanes):
    """CUDA_WIDE_REGISTER_ROWS on the GPU: rows cached in registers by a group of 512 or 1024:
    NaN, +inf, all -inf and offset rows follow the reference, like the rows read from memory
    (forced cache="none") of the same data."""
    cp = _cp()
    x = _wide_rows(_rng("wide-register-rows", dtype, str(k)), rows, k, dtype, -np.inf, neg_inf_row4=True)
    plan = plan_row(H100, RowProblem("softmax", rows, k, dtype))
    assert (plan.cache, plan.lanes, plan.nper) == ("registers", lanes, k // lanes)
    src = cp.asarray(x)
    for op, ref, tol in (("softmax", ref_softmax, TOL), ("log_softmax", ref_log_softmax, LOG_TOL)):
        want = ref(x)
        for force in (None, RowForce(cache="none")):
            got = getattr(rowops, op)(src, force=force).get()
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op} {force}")
            _close(got, want, dtype, tol, f"{op} {force}")


@gpu
@pytest.mark.parametrize("dtype,rows,k,lanes", [
    ("float32", 528, 16_384, 512),    # NPER 32
    ("float32", 264, 32_768, 1024),   # NPER 32
    ("float16", 528, 32_768, 512),    # NPER 64
])
def test_norm_rows_in_wide_group_registers(dtype, rows, k, lanes):
    """CUDA_WIDE_REGISTER_OPS' norms on the GPU: rms_norm and layer_norm rows cached in registers
    by a group of 512 or 1024, with a weight and a bias: NaN, inf, constant and offset rows
    follow the reference, like the rows read from memory (forced cache="none")."""
    cp = _cp()
    rng = _rng("wide-register-norms", dtype, str(k))
    x = _wide_rows(rng, rows, k, dtype, 7.0, neg_inf_row4=False)
    w = rng.standard_normal(k).astype(dtype)
    b = rng.standard_normal(k).astype(dtype)
    for op in ("rms_norm", "layer_norm"):
        plan = plan_row(H100, RowProblem(op, rows, k, dtype, weight=True, bias=op == "layer_norm",
                                         params_half=dtype == "float16"))
        assert (plan.cache, plan.lanes, plan.nper) == ("registers", lanes, k // lanes)
    src, wd, bd = cp.asarray(x), cp.asarray(w), cp.asarray(b)
    for force in (None, RowForce(cache="none")):
        for got, want, op in ((rowops.rms_norm(src, wd, force=force).get(), ref_rms_norm(x, w), "rms_norm"),
                              (rowops.layer_norm(src, wd, bd, force=force).get(), ref_layer_norm(x, w, b),
                               "layer_norm")):
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op} {force}")
            _close(got, want, dtype, NORM_TOL, f"{op} {force}")


@gpu
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_long_uncached_rows_with_specials(dtype):
    """Rows read from memory run by run (WALK_RUNS) by blocks wider than 256 (1024 for float32,
    512 for float16: CUDA_UNCACHED_RUNS): NaN, +inf, -inf and
    all -inf rows follow scipy's rules, a large offset stays accurate, weights and biases
    come in runs (PARAM_RUNS), and the head / tail elements outside whole runs (rows one
    element off 16 bytes) are covered too."""
    cp = _cp()
    k = 40_000
    rng = _rng("uncached-specials", dtype)
    x = rng.standard_normal((7, k + 1)).astype(np.float32)
    x[1, 12_345] = np.nan
    x[2, 30_001] = np.inf
    x[3, :] = -np.inf
    x[4, rng.integers(0, k, 500)] = -np.inf
    x[5] += 1e4 if dtype == "float32" else 100.0
    x[6, -3:] = 50.0
    x = x.astype(dtype)
    # 7 rows are split (PHASE 1 / 2 runs); split=1 gives the whole-row plan of many such rows
    whole = RowForce(split=1)
    assert plan_row(H100, RowProblem("softmax", 7, k, dtype), whole).wg_size == (1024 if dtype == "float32" else 512)
    for h in (np.ascontiguousarray(x[:, :k]), x):  # rows of 40000, then of 40001 (rows 1.. start off
        # 16 bytes: a head and a tail outside the runs)
        src = cp.asarray(h)
        finite = h[[0, 5, 6]]
        for force in (None, whole):
            what = f"{dtype} {h.shape} {force}"
            for op, ref, tol in (("softmax", ref_softmax, TOL), ("log_softmax", ref_log_softmax, LOG_TOL)):
                got = getattr(rowops, op)(src, force=force).get()
                want = ref(h)
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op} {what}")
                _close(got, want, dtype, tol, f"{op} {what}")
            src_f = cp.asarray(finite)
            _close(rowops.rms_norm(src_f, force=force).get(), ref_rms_norm(finite), dtype, NORM_TOL, f"rms {what}")
            _close(rowops.layer_norm(src_f, force=force).get(), ref_layer_norm(finite), dtype, NORM_TOL,
                   f"layer_norm {what}")
            # with a weight and bias (PARAM_RUNS: read in runs beside the row's; row 0's runs
            # align them, rows 1.. of 40001 do not), float16 ones read as they are
            for pdt in ("float32", dtype):
                wt = rng.standard_normal(h.shape[1]).astype(pdt)
                bs = rng.standard_normal(h.shape[1]).astype(pdt)
                _close(rowops.rms_norm(src_f, cp.asarray(wt), force=force).get(), ref_rms_norm(finite, wt), dtype,
                       NORM_TOL, f"rms weight {pdt} {what}")
                _close(rowops.layer_norm(src_f, cp.asarray(wt), cp.asarray(bs), force=force).get(),
                       ref_layer_norm(finite, wt, bs), dtype, NORM_TOL, f"layer_norm weight {pdt} {what}")
            mean, var = rowops.moments(src_f, force=force)
            _close(mean.get(), finite.astype(np.float64).mean(-1), dtype, NORM_TOL, f"mean {what}")
            _close(var.get(), finite.astype(np.float64).var(-1), dtype, NORM_TOL, f"var {what}")


@gpu
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_vector_runs_aligned_and_not(dtype):
    """Vector runs on aligned inputs, element loads of the same runs on inputs one element
    off alignment (cupy views and torch tensors with a storage offset), both through the
    general path (cupy) and the direct torch path."""
    cp = _cp()
    rng = _rng("vecruns", dtype)
    for k in (128, 64, 1000):
        x = (rng.standard_normal((37, k)) * 2 + 0.5).astype(dtype)
        w = (rng.standard_normal(k) * 0.5 + 1).astype(np.float32)
        b = rng.standard_normal(k).astype(np.float32)
        inputs = {"cupy aligned": cp.asarray(x), "cupy off by one": _off_by_one(cp, x.ravel()).reshape(x.shape)}
        torch = None
        try:
            import torch
        except ImportError:
            pass
        if torch is not None and torch.cuda.is_available():
            base = torch.empty(x.size + 1, dtype=getattr(torch, dtype), device="cuda")
            base[1:] = torch.as_tensor(x.ravel(), device="cuda")
            inputs["torch aligned"] = torch.as_tensor(x, device="cuda")
            inputs["torch off by one"] = base[1:].view(x.shape)
        for what, xd in inputs.items():
            is_torch = type(xd).__module__ == "torch"
            wd = torch.as_tensor(w, device="cuda") if is_torch else cp.asarray(w)
            bd = torch.as_tensor(b, device="cuda") if is_torch else cp.asarray(b)
            host = (lambda r: r.cpu().numpy()) if is_torch else (lambda r: r.get())
            label = f"{what} {dtype} K={k}"
            _close(host(rowops.softmax(xd)), ref_softmax(x), dtype, TOL, f"softmax {label}")
            _close(host(rowops.log_softmax(xd)), ref_log_softmax(x), dtype, LOG_TOL, f"log_softmax {label}")
            _close(host(rowops.rms_norm(xd, wd, eps=1e-3)), ref_rms_norm(x, w, 1e-3), dtype, NORM_TOL, f"rms {label}")
            _close(host(rowops.layer_norm(xd, wd, bd)), ref_layer_norm(x, w, b), dtype, NORM_TOL, f"ln {label}")
            if not is_torch:
                # weight and bias one element off 16 bytes (PARAM_RUNS: element loads of their
                # runs), float32 and float16 ones (read as they are beside a float16 row)
                for pdt in {"float32", dtype}:
                    wo, bo = (_off_by_one(cp, a.astype(pdt)) for a in (w, b))
                    _close(host(rowops.rms_norm(xd, wo)), ref_rms_norm(x, w.astype(pdt)), dtype, NORM_TOL,
                           f"rms, weight off by one {pdt} {label}")
                    _close(host(rowops.layer_norm(xd, wo, bo)), ref_layer_norm(x, w.astype(pdt), b.astype(pdt)),
                           dtype, NORM_TOL, f"ln, weight and bias off by one {pdt} {label}")


def _off_by_one(cp, a):
    """A cupy copy of 1-d `a` that starts one element past an allocation's start."""
    flat = cp.empty(a.size + 1, a.dtype)
    flat[1:] = cp.asarray(a)
    return flat[1:]


@gpu
@pytest.mark.parametrize("shape", [(64, 128), (8192, 1000), (3, 70000)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_float16_weights_read_as_they_are(shape):
    """float16 rows with float16 weight / bias (a float16 model's own): bound as they are
    (row_norm.cl PARAM_HALF), not converted per call; within the bound of float64 numpy and
    at most one float16 rounding from float32 copies of the weights; cupy and torch, full
    and fast path."""
    cp = _cp()
    rng = _rng("f16-weights", shape)
    x = rng.standard_normal(shape).astype(np.float16)
    w = (rng.standard_normal(shape[1]) * 3).astype(np.float16)
    b = rng.standard_normal(shape[1]).astype(np.float16)
    ref = ref_layer_norm(x, w.astype(np.float64), b.astype(np.float64))
    want = rowops.layer_norm(cp.asarray(x), cp.asarray(w, np.float32), cp.asarray(b, np.float32)).get()
    kinds = [("cupy", cp.asarray, lambda r: r.get())]
    torch = None
    try:
        import torch
    except ImportError:
        pass
    if torch is not None and torch.cuda.is_available():
        kinds.append(("torch", lambda a: torch.as_tensor(a, device="cuda"), lambda r: r.cpu().numpy()))
    for name, to, back in kinds:
        xd, wd, bd = to(x), to(w), to(b)
        for _ in range(3):  # the fast path takes over after the first calls
            got = back(rowops.layer_norm(xd, wd, bd))
            _close(got, ref, "float16", NORM_TOL, name)
            np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2.0 ** -10,
                                       atol=2.0 ** -14, err_msg=name)
        got = back(rowops.rms_norm(xd, wd))
        _close(got, ref_rms_norm(x, w.astype(np.float64)), "float16", NORM_TOL, name + " rms_norm")
