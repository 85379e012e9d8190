"""CUDA backend: numpy parity on an NVIDIA GPU, plus the parts that need no GPU.

Without CuPy or a CUDA device (CI), every GPU test skips with the reason
``unavailable_reason()`` gives (e.g. "cupy not installed: pip install 'clreduce[cuda]'");
what still runs everywhere: import hygiene, the registry, CUDA caps -> planner decisions,
plan consistency for every op and dtype, and (when nvcc is on PATH) PTX builds of kernel
variants including one that must fail.

On a GPU: every public op and every scalar kernel op x every dtype x shapes that reach
each kernel branch (several rows per warp, warp per row, block per row, split-K, tails,
unaligned row starts) x forced plan variants, cupy / torch / numpy inputs (results of the
input's kind, device and stream), and the bad-input table.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest

import clreduce
from clreduce.backends import REGISTRY, get_backend
from clreduce.backends.cuda import probe as cuda_probe
from clreduce.backends.cuda.launch import cuda_source, nvrtc_options
from clreduce.kernels import kernel_path
from clreduce.backends.cuda.tune import cuda_plan, custom_plan, defines_of, scalar
from clreduce.ops import OPS
from clreduce.plan import Force, Problem, UnsupportedOnDevice

ROOT = Path(__file__).resolve().parent.parent
H100 = cuda_probe.caps_from_properties(cuda_probe.H100_SXM_PROPERTIES)
T4 = cuda_probe.caps_from_properties(cuda_probe.T4_PROPERTIES)

BACKEND = get_backend("cuda")
REASON = BACKEND.unavailable_reason()
gpu = pytest.mark.skipif(REASON is not None, reason=f"CUDA backend unavailable: {REASON}")

DTYPES = ("float32", "float16", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
          "int64", "uint64", "bool")
PUBLIC_OPS = ("sum", "mean", "max", "min")
SCALAR_OPS = tuple(name for name, op in OPS.items() if getattr(op, "kind", "scalar") == "scalar")


# ==== no GPU needed ===========================================================================

def test_registered_and_named_in_errors():
    assert REGISTRY["cuda"] == "clreduce.backends.cuda"
    with pytest.raises(ValueError, match="registered: cuda, opencl"):
        get_backend("cdua")


def test_import_loads_no_gpu_library():
    code = textwrap.dedent("""
        import sys, clreduce
        from clreduce.backends import get_backend
        b = get_backend("cuda")
        b.owns(object())
        from clreduce.backends.cuda import tune, probe, launch
        bad = [m for m in sys.modules if m.split(".")[0] in ("cupy", "torch", "pyopencl", "cupy_backends")]
        assert not bad, bad
    """)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_unavailable_reason_names_the_missing_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy -> ImportError
    # and forget a CuPy an earlier test found ready (the backend checks once per process):
    # on a GPU host, after test_accuracy.py, the call below had run on the cached CuPy
    import clreduce.backends.cuda as cuda_backend
    monkeypatch.setattr(cuda_backend, "_READY", {})
    reason = BACKEND.unavailable_reason()
    assert "cupy not installed" in reason and "pip install 'clreduce[cuda]'" in reason
    with pytest.raises(RuntimeError, match="cupy not installed"):
        clreduce.mean(np.ones((2, 3), np.float32), axis=-1, backend="cuda")


def test_caps_map_the_warp_to_a_subgroup():
    c = H100
    assert (c.backend, c.vendor, c.device_type) == ("cuda", "nvidia", "gpu")
    assert c.subgroups and c.subgroup_sizes == (32,) and c.warp_size == 32
    assert c.khr_shuffle and c.subgroup_reduce_builtins and c.subgroup_size_control == "none"
    assert c.compute_units == 132 and c.max_work_group_size == 1024 and c.fp16 and c.fp64
    assert cuda_probe.device_extras(c)["threads_per_sm"] == 2048
    # JSON round trip keeps the per-SM facts (they live in notes)
    again = type(c).from_json(c.to_json())
    assert again == c and cuda_probe.device_extras(again) == cuda_probe.device_extras(c)


def test_caps_know_the_dram_bandwidth():
    """Peak DRAM GB/s = 2 x memory clock x bus width (the planner's CUDA_TWO_RUNS_GBPS_PER_SM);
    0 where the properties lack either (CUDA 13 dropped the clock: probe_device reads it as
    an attribute)."""
    h200 = cuda_probe.caps_from_properties(cuda_probe.H200_PROPERTIES)
    assert cuda_probe.device_extras(H100)["dram_gbps"] == 3352
    assert cuda_probe.device_extras(h200)["dram_gbps"] == 4814
    bare = {k: v for k, v in cuda_probe.H100_SXM_PROPERTIES.items() if k != "memoryBusWidth"}
    assert cuda_probe.device_extras(cuda_probe.caps_from_properties(bare))["dram_gbps"] == 0


@pytest.mark.parametrize("rows,k,strategy", [
    (16777216, 16, "rows_per_sg"), (1048576, 32, "rows_per_sg"), (4194304, 64, "rows_per_sg"),
    (442368, 128, "rows_per_sg"), (8192, 1000, "rows_per_sg"), (65536, 4096, "wg_per_row"),
    (64, 4194304, "split_k"), (1, 268435456, "split_k"),
])
def test_bench_shapes_get_sensible_plans(rows, k, strategy):
    p = cuda_plan(H100, Problem(rows, k, "float32", "mean"))
    assert p.strategy == strategy, p
    d = defines_of(p.passes[0])
    assert int(d["VEC"]) * 4 == 16 or k < 4  # 16-byte loads
    if 1 < p.lanes < 32:
        assert d["SG_MODE"] == "2"  # several rows per warp: __shfl_xor_sync butterfly
    assert p.passes[0].local_size % 32 == 0


def _check_launch(launch, problem):
    d = defines_of(launch)
    wg = int(d["WG_SIZE"])
    assert launch.local_size == wg and launch.global_size % wg == 0 and launch.global_size >= wg
    assert launch.global_size // wg < 2**31
    assert launch.options == nvrtc_options(launch.defines)
    assert launch.kernel_file.endswith(".cl") and kernel_path(launch.kernel_file).is_file()
    if launch.entry in ("reduce_rows", "reduce_rows_state"):
        lanes = int(d["LANES"])
        assert lanes & (lanes - 1) == 0 and wg % lanes == 0
        assert not (d["SG_MODE"] == "1" and 1 < lanes < 32)
        assert d["SG_MODE"] in ("0", "1", "2") and d["SG_SIZE"] in ("0", "32")


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_plans_are_consistent(op, dtype):
    for rows, k, inner in ((1, 1, 1), (7, 3, 1), (1000, 33, 1), (64, 4096, 1), (3, 100_003, 1), (1, 1 << 22, 1),
                           (5, 1000, 7), (1, 70001, 3), (100, 10, 1000)):
        for force in (None, Force(sg_mode="local"), Force(strategy="split_k"), Force(wg_size=1024, vec=1)):
            problem = Problem(rows, k, dtype, op, inner=inner)
            try:
                p = cuda_plan(H100, problem, force)
            except (UnsupportedOnDevice, ValueError):
                continue
            for launch in p.passes:
                _check_launch(launch, problem)
            if len(p.passes) == 2 and p.passes[0].entry == "reduce_rows":
                first, second = p.passes
                split = int(defines_of(first)["SPLIT"])
                assert split == p.split and scalar(second, "row_len") == split
                assert (split - 1) * scalar(first, "chunk_len") < k <= split * scalar(first, "chunk_len")


def test_forced_subgroup_width_other_than_32_is_refused():
    with pytest.raises(UnsupportedOnDevice):
        cuda_plan(H100, Problem(64, 64, "float32", "sum"), Force(sg_size=16))


def test_custom_plans_recut_consistently():
    problem = Problem(64, 4_194_304, "float32", "mean")
    p = custom_plan(H100, problem, lanes=512, wg=512, split=33, UNROLL=8)
    first, second = p.passes
    assert p.split == 33 and defines_of(first)["UNROLL"] == "8"
    assert first.global_size // first.local_size == 64 * 33
    # each chunk leaves its sum twice, plainly and times 2^-64 (reduce_rows.cl SUM_SIDES)
    assert scalar(second, "row_len") == 33 and p.partials_bytes == 64 * 33 * 4 * 2
    q = custom_plan(H100, Problem(1 << 20, 32, "float32", "sum"), lanes=8, UNROLL=1)
    assert q.strategy == "rows_per_sg" and defines_of(q.passes[0])["LANES"] == "8"


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@needs_nvcc
def test_ptx_builds_and_a_bad_variant_fails(tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import compile_cuda_ptx as tool
    finally:
        sys.path.pop(0)
    good = cuda_plan(H100, Problem(1000, 33, "float16", "mean")).passes[0]
    bad_defines = tuple((k, "3" if k == "VEC" else v) for k, v in good.defines)
    results = {}
    src = tmp_path / "reduce_rows.cu"
    src.write_text(cuda_source("reduce_rows.cl"))  # what NVRTC gets: the dialect header, then the .cl file
    for label, defines in (("good", good.defines), ("bad", bad_defines)):
        cmd = tool.nvcc_command("nvcc", "sm_80", src, nvrtc_options(defines), tmp_path / f"{label}.ptx")
        results[label] = subprocess.run(cmd, capture_output=True, text=True)
    assert results["good"].returncode == 0, results["good"].stderr
    assert results["bad"].returncode != 0 and "VEC must be" in results["bad"].stderr
    # a batch holding several variants compiles as one unit
    variants = [(i, nvrtc_options(cuda_plan(H100, Problem(r, k, "float32", "max")).passes[0].defines))
                for i, (r, k) in enumerate(((7, 3), (10, 33), (3, 4099)))]
    src = tmp_path / "batch.cu"
    src.write_text(tool.batch_source("reduce_rows.cl", variants))
    proc = subprocess.run(tool.nvcc_command("nvcc", "sm_80", src, (), tmp_path / "batch.ptx"),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    ptx = (tmp_path / "batch.ptx").read_text()
    assert all(f".entry reduce_rows_v{i}(" in ptx for i in range(3))


# ==== GPU =======================================================================================

def _cupy():
    import cupy

    return cupy


def _host(result):
    """A cupy result as numpy would return it (scalar for 0-d)."""
    cp = _cupy()
    if isinstance(result, cp.ndarray):
        host = result.get()
        return host[()] if host.ndim == 0 else host
    return result


ROW_SHAPES = [
    (7, 1), (1, 1), (7, 3), (10, 31), (10, 32), (10, 33), (7, 127), (33, 257), (3, 4099),
    (10000, 5), (2, 70001), (1, 1_000_000), (5000, 16), (3000, 64),
]


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", PUBLIC_OPS)
def test_public_ops_match_numpy(op, dtype, make_data, assert_reduction):
    cp = _cupy()
    rng = np.random.default_rng(zlib.crc32(f"{op}-{dtype}".encode()))
    for rows, k in ROW_SHAPES:
        x = make_data(rng, (rows, k), dtype)
        got = getattr(clreduce, op)(cp.asarray(x), axis=-1)
        assert isinstance(got, cp.ndarray)
        assert_reduction(_host(got), x, op, axis=-1, context=f"{rows}x{k}")
        if dtype in ("float32", "float16"):
            xe = make_data(rng, (rows, k), dtype, kind="exact")
            assert_reduction(_host(getattr(clreduce, op)(cp.asarray(xe), axis=-1)), xe, op, axis=-1,
                             exact=True, context=f"exact {rows}x{k}")


VARIANTS = [
    Force(sg_mode="builtin", strategy="sg_per_row"), Force(sg_mode="builtin", strategy="wg_per_row"),
    Force(sg_mode="builtin", strategy="split_k"), Force(sg_mode="shuffle", strategy="rows_per_sg"),
    Force(sg_mode="shuffle", strategy="sg_per_row"), Force(sg_mode="shuffle", strategy="wg_per_row"),
    Force(sg_mode="shuffle", strategy="split_k"), Force(sg_mode="local", strategy="rows_per_sg"),
    Force(sg_mode="local", strategy="sg_per_row"), Force(sg_mode="local", strategy="wg_per_row"),
    Force(sg_mode="local", strategy="split_k"), Force(vec=1), Force(vec=2, strategy="wg_per_row"),
    Force(vec=16, strategy="rows_per_sg"), Force(wg_size=32), Force(wg_size=1024, strategy="wg_per_row"),
    Force(wg_size=64, sg_mode="local", strategy="split_k"),
]


@gpu
@pytest.mark.parametrize("force", VARIANTS, ids=lambda f: "-".join(f"{k}={v}" for k, v in dataclasses.asdict(f).items() if v))
@pytest.mark.parametrize("dtype,op", [("float32", "sum"), ("float16", "mean"), ("int32", "max"),
                                      ("int64", "sum"), ("float64", "min"), ("uint8", "mean")])
def test_forced_variants_match_numpy(force, dtype, op, make_data, assert_reduction):
    cp = _cupy()
    rng = np.random.default_rng(7)
    for rows, k in ((7, 3), (10, 33), (7, 127), (3, 4099), (2, 70001), (999, 40)):
        x = make_data(rng, (rows, k), dtype)
        got = getattr(clreduce, op)(cp.asarray(x), axis=-1, force=force)
        assert_reduction(_host(got), x, op, axis=-1, context=f"{force} {rows}x{k}")


def _scalar_op_reference(op, x):
    """numpy's answer for one kernel op over axis 1 (float64 where the op is float)."""
    xf = x.astype(np.float64) if x.dtype.kind == "f" else x
    with np.errstate(all="ignore"):
        table = {
            "sum": lambda: np.sum(x, axis=1), "mean": lambda: np.mean(x, axis=1),
            "prod": lambda: np.prod(xf, axis=1), "max": lambda: np.max(x, axis=1), "min": lambda: np.min(x, axis=1),
            "nansum": lambda: np.nansum(xf, axis=1), "nanmax": lambda: np.nanmax(x, axis=1),
            "nanmin": lambda: np.nanmin(x, axis=1),
            "count_notnan": lambda: np.sum(~np.isnan(xf) if x.dtype.kind == "f" else np.ones_like(x, bool), axis=1),
            "count_nonzero": lambda: np.count_nonzero(x, axis=1), "any": lambda: np.any(x, axis=1),
            "all": lambda: np.all(x, axis=1), "norm1": lambda: np.sum(np.abs(x.astype(np.float64)), axis=1),
            "norm2": lambda: np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=1)),
            "norminf": lambda: np.max(np.abs(x.astype(np.float64)), axis=1),
            "normneginf": lambda: np.min(np.abs(x.astype(np.float64)), axis=1),
        }
        if op not in table:
            pytest.skip(f"no reference for {op}")
        return np.asarray(table[op]())


@gpu
@pytest.mark.parametrize("dtype", ("float32", "float16", "float64", "int8", "uint16", "int64", "bool"))
@pytest.mark.parametrize("op", [o for o in SCALAR_OPS if o not in PUBLIC_OPS])
def test_kernel_ops_match_numpy(op, dtype):
    """Ops the API may not expose yet, through the backend directly (MAP, FINALIZE, OP_*)."""
    cp = _cupy()
    rng = np.random.default_rng(11)
    for rows, k in ((7, 3), (10, 33), (33, 257), (3, 4099), (2, 70001), (999, 16)):
        if dtype == "bool":
            x = rng.random((rows, k)) < 0.7
        elif np.dtype(dtype).kind == "f":
            x = ((1.0 + 0.01 * rng.standard_normal((rows, k))) * rng.choice([-1, 1], (rows, k))).astype(dtype)
            x[0, k // 2] = np.nan
            if rows > 2:
                x[2, :] = 0
        else:
            info = np.iinfo(dtype)
            x = rng.integers(max(info.min, -3), min(info.max, 3), (rows, k), endpoint=True).astype(dtype)
        if op == "prod" and np.dtype(dtype).kind in "iu" and k > 40:
            continue  # wraps differently nowhere, but keep the reference readable
        try:
            problem = Problem(rows, k, dtype, op)
            out = BACKEND.reduce(cp.asarray(x), problem, force=None)
        except UnsupportedOnDevice:
            continue
        got = out.get()
        ref = _scalar_op_reference(op, x)
        if ref.dtype == bool or got.dtype == bool:
            np.testing.assert_array_equal(got.astype(bool), ref.astype(bool), err_msg=f"{op} {dtype} {rows}x{k}")
        elif got.dtype.kind in "iu" and ref.dtype.kind in "iu":
            np.testing.assert_array_equal(got.astype(np.int64), ref.astype(np.int64), err_msg=f"{op} {rows}x{k}")
        else:
            rtol = {"float16": 2e-3, "float32": 1e-4}.get(dtype, 1e-9 if dtype == "float64" else 1e-6)
            with np.errstate(over="ignore"):
                ref = ref.astype(got.dtype)  # the result's own precision (float16 overflows to inf)
            np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=rtol,
                                       equal_nan=True, err_msg=f"{op} {dtype} {rows}x{k}")


def _logsumexp(x, axis=None, keepdims=False):
    x = np.asarray(x, np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        r = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis)


API_REFERENCES = {
    "prod": np.prod, "any": np.any, "all": np.all, "count_nonzero": np.count_nonzero,
    "nansum": np.nansum, "nanmax": np.nanmax, "nanmin": np.nanmin, "nanmean": np.nanmean,
    "var": np.var, "std": np.std, "argmax": np.argmax, "argmin": np.argmin, "logsumexp": _logsumexp,
    "norm": lambda x, axis=None: np.linalg.norm(x.astype(np.float64) if x.dtype.kind != "f" else x, axis=axis),
}
API_AXES = [((37, 53), 1), ((37, 53), 0), ((4, 5, 66), (1, 2)), ((4, 5, 66), (0, 1)), ((4, 5, 66), (0, 2)),
            ((3, 70001), 1), ((1000,), None)]


@gpu
@pytest.mark.parametrize("name", sorted(API_REFERENCES))
@pytest.mark.parametrize("dtype", ("float32", "float16", "int32", "uint8", "float64"))
def test_more_public_functions_match_numpy(name, dtype):
    """Every public reduction on cupy input: rows (inner == 1), the strided case (inner > 1,
    reduce_cols in place), a non-adjacent pair of axes (copied), and axis=None."""
    cp = _cupy()
    fn = getattr(clreduce, name, None)
    if fn is None:
        pytest.skip(f"clreduce.{name} is not public")
    rng = np.random.default_rng(zlib.crc32(f"{name}-{dtype}".encode()))
    for shape, axis in API_AXES:
        if name in ("argmax", "argmin") and isinstance(axis, tuple):
            continue
        if name == "norm" and isinstance(axis, tuple):
            continue
        if np.dtype(dtype).kind == "f":
            x = (rng.standard_normal(shape) * (0.02 if name == "prod" else 1) + (1 if name == "prod" else 0)).astype(dtype)
            if name.startswith("nan") or name in ("argmax", "argmin"):
                x.reshape(-1)[:: 97] = np.nan
            if name == "any":
                x[x > 0.5] = 0
        else:
            hi = 3 if name == "prod" else 100
            x = rng.integers(0, hi, shape).astype(dtype)
        try:
            got = fn(cp.asarray(x), axis=axis)
        except clreduce.UnsupportedOnDevice:
            continue
        # float16 accumulates in float32 here (numpy's float16 var/std/prod can overflow on the
        # way): references are computed in float64 and rounded to the result's dtype
        ref_in = x.astype(np.float64) if x.dtype == np.float16 and name in ("var", "std", "prod", "nansum", "norm") else x
        with np.errstate(all="ignore"), __import__("warnings").catch_warnings():
            __import__("warnings").simplefilter("ignore")
            want = np.asarray(API_REFERENCES[name](ref_in, axis=axis))
        got_h = np.asarray(_host(got))
        where = f"{name} {dtype} {shape} axis={axis}"
        assert got_h.shape == want.shape, where
        if ref_in is not x and got_h.dtype == np.float16:
            want = want.astype(np.float16)
        if want.dtype.kind in "biu" or name in ("argmax", "argmin", "any", "all", "count_nonzero"):
            np.testing.assert_array_equal(got_h.astype(np.int64), want.astype(np.int64), err_msg=where)
            continue
        rtol = {"float16": 3e-3, "float32": 2e-4}.get(str(got_h.dtype), 1e-9)
        if name == "logsumexp" or name in ("var", "std") and dtype in ("float16", "float32"):
            rtol = max(rtol, 1e-3)
        with np.errstate(over="ignore"):
            want_c = want.astype(got_h.dtype).astype(np.float64) if got_h.dtype.kind == "f" else want
        np.testing.assert_allclose(got_h.astype(np.float64), want_c, rtol=rtol, atol=rtol, equal_nan=True,
                                   err_msg=where)


@gpu
def test_out_argument_and_device_checks():
    cp = _cupy()
    x = cp.asarray(np.arange(60, dtype=np.float32).reshape(6, 10))
    out = cp.empty(6, cp.float64)
    assert clreduce.sum(x, axis=1, out=out) is out
    np.testing.assert_allclose(out.get(), x.get().sum(1))
    host_out = np.empty(10, np.float32)
    clreduce.max(x, axis=0, out=host_out)
    np.testing.assert_array_equal(host_out, x.get().max(0))
    if cp.cuda.runtime.getDeviceCount() > 1:
        with cp.cuda.Device(1):
            far = cp.empty(6, cp.float32)
        with pytest.raises(ValueError, match="device"):
            clreduce.sum(x, axis=1, out=far)


@gpu
def test_unaligned_row_starts_and_odd_lengths(assert_reduction):
    cp = _cupy()
    rng = np.random.default_rng(3)
    for dtype in ("float32", "float16", "int8", "float64"):
        for offset in (1, 2, 3, 5):
            for rows, k in ((9, 37), (4, 1001), (3, 5000), (2, 70001)):
                flat = cp.asarray(rng.standard_normal(rows * k + offset).astype(dtype) if dtype != "int8"
                                  else rng.integers(-100, 100, rows * k + offset).astype(dtype))
                x = flat[offset:].reshape(rows, k)  # contiguous, starts off the 16-byte grid
                for op in ("sum", "max"):
                    got = getattr(clreduce, op)(x, axis=-1)
                    assert_reduction(_host(got), x.get(), op, axis=-1, context=f"{dtype} +{offset} {rows}x{k}")


@gpu
def test_axes_keepdims_and_strided_input(assert_reduction):
    cp = _cupy()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 50, 7)).astype(np.float32)
    xd = cp.asarray(x)
    for axis in (None, 0, 1, 2, -1, (0, 2), (1, 2)):
        for keepdims in (False, True):
            got = clreduce.sum(xd, axis=axis, keepdims=keepdims)
            assert_reduction(_host(got), x, "sum", axis=axis, keepdims=keepdims, context=f"axis={axis}")
    strided = xd[:, ::3, 1:]
    assert_reduction(_host(clreduce.max(strided, axis=1)), strided.get(), "max", axis=1)


@gpu
def test_specials_nan_inf_and_half_overflow():
    cp = _cupy()
    x = np.ones((4, 100), np.float32)
    x[0, 50] = np.nan
    x[1, 99] = np.inf
    x[2, 0] = -np.inf
    for op in ("max", "min", "sum", "mean"):
        got = getattr(clreduce, op)(cp.asarray(x), axis=-1).get()
        np.testing.assert_array_equal(got, getattr(np, op)(x, axis=-1))
    big = np.full((3, 4096), 1000, np.float16)  # an fp16 accumulator would overflow at 65504
    assert np.all(clreduce.mean(cp.asarray(big), axis=-1).get() == np.float16(1000))
    assert np.all(np.isinf(clreduce.sum(cp.asarray(big), axis=-1).get()))  # as numpy: the sum is > 65504


_NAN_IN_ONE_LANE = textwrap.dedent("""
    import sys
    import numpy as np, cupy as cp
    from clreduce.backends import get_backend
    from clreduce.plan import Force, Problem
    backend = get_backend("cuda")
    for op in ("norm1", "norm2", "sum", "mean"):
        for strategy in ("sg_per_row", "wg_per_row"):
            for rows, k in ((3, 4099), (5, 64)):
                x = np.ones((rows, k), np.float32)
                x[0, k // 2] = np.nan   # one lane's partial is NaN, its warp partners' are 1s
                got = backend.reduce(cp.asarray(x), Problem(rows, k, "float32", op),
                                     force=Force(sg_mode="builtin", strategy=strategy)).get()
                want = {"norm1": k, "norm2": np.sqrt(k), "sum": k, "mean": 1}[op]
                assert np.isnan(got[0]) and np.allclose(got[1:], want), (op, strategy, rows, k, got)
    print("ok")
""")


@gpu
def test_a_nan_in_one_lane_keeps_the_warp_together():
    """The compensated built-in step branches on the warp's max |s|; the dialect's butterfly
    max gave lanes different answers when one held a NaN, the warp split around
    __shfl_xor_sync and the kernel never ended (norm1 of a 3 x 4099 row). A child process,
    so that a hang fails here instead of stalling the suite."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH", "")]))
    try:
        proc = subprocess.run([sys.executable, "-c", _NAN_IN_ONE_LANE], capture_output=True, text=True,
                              timeout=240, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("a float sum over rows holding a NaN did not finish in 240 s (a split warp?)")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


@gpu
def test_integer_sums_are_exact():
    cp = _cupy()
    x = np.full((3, 70001), (1 << 40) + 7, np.int64)
    assert np.array_equal(clreduce.sum(cp.asarray(x), axis=-1).get(), x.sum(axis=-1))
    u = np.full((2, 5000), 255, np.uint8)
    got = clreduce.sum(cp.asarray(u), axis=-1)
    assert got.dtype == np.uint64 and np.all(got.get() == 255 * 5000)


@gpu
def test_numpy_input_with_backend_cuda_returns_numpy(assert_reduction):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    got = clreduce.mean(x, axis=1, backend="cuda")
    assert type(got) is np.ndarray
    assert_reduction(got, x, "mean", axis=1)
    whole = clreduce.sum(x, backend="cuda")
    assert isinstance(whole, np.float32) and whole == x.sum()


@gpu
def test_env_backend_for_numpy(monkeypatch):
    monkeypatch.setenv("CLREDUCE_BACKEND", "cuda")
    assert type(clreduce.max(np.ones((2, 2), np.int16), axis=0)) is np.ndarray


@gpu
def test_empty_reductions_keep_the_kind():
    cp = _cupy()
    with pytest.warns(RuntimeWarning):
        got = clreduce.mean(cp.zeros((3, 0), cp.float32), axis=-1)
    assert isinstance(got, cp.ndarray) and got.shape == (3,) and bool(cp.all(cp.isnan(got)))
    assert clreduce.sum(cp.zeros((0, 4), cp.int32), axis=-1).shape == (0,)
    with pytest.raises(ValueError, match="zero-size"):
        clreduce.max(cp.zeros((2, 0), cp.float32), axis=-1)
    lse = clreduce.logsumexp(cp.zeros((2, 0), cp.float16), axis=-1)  # the log of an empty sum
    assert isinstance(lse, cp.ndarray) and lse.dtype == cp.float16 and bool(cp.all(lse == -cp.inf))


try:
    import torch
except ImportError:  # torch is optional: its tests skip
    torch = None


@gpu
def test_torch_tensors_in_place_and_back():
    if torch is None or not torch.cuda.is_available():
        pytest.skip("torch with CUDA not available")
    t = torch.randn(300, 77, device="cuda", requires_grad=True)
    got = clreduce.mean(t, axis=-1)
    assert isinstance(got, torch.Tensor) and got.device == t.device and got.dtype == torch.float32
    torch.testing.assert_close(got, t.detach().mean(-1), rtol=1e-5, atol=1e-6)
    h = torch.randn(64, 1000, device="cuda").half()
    torch.testing.assert_close(clreduce.sum(h, axis=1).float(), h.float().sum(1), rtol=2e-3, atol=0.1)
    b = torch.rand(10, 33, device="cuda") < 0.5
    assert torch.equal(clreduce.max(b, axis=1), b.any(1))
    i = torch.randint(-5, 5, (10, 33), device="cuda", dtype=torch.int32)
    got_i = clreduce.mean(i, axis=1)
    assert got_i.dtype == torch.float64
    torch.testing.assert_close(got_i, i.double().mean(1))
    noncontig = torch.randn(50, 40, device="cuda").t()
    torch.testing.assert_close(clreduce.sum(noncontig, axis=1), noncontig.sum(1), rtol=1e-5, atol=1e-5)
    cpu = torch.randn(5, 6)
    got_cpu = clreduce.max(cpu, axis=1, backend="cuda")
    assert isinstance(got_cpu, torch.Tensor) and got_cpu.device.type == "cpu"
    assert torch.equal(got_cpu, cpu.max(1).values)


def test_cubin_cache_round_trip_and_torn_files(tmp_path, monkeypatch):
    """launch.py's on-disk cubins: what is written is read back; a torn, foreign or corrupt
    file is None (rebuilt), never loaded; an unwritable folder is skipped."""
    from clreduce.backends.cuda import launch

    monkeypatch.setenv("CLREDUCE_CUDA_CACHE_DIR", str(tmp_path / "cuda"))
    path = launch._cache_path("src", "entry", ("-DX=1", "-arch=sm_90"), (12, 8))
    assert path.parent == tmp_path / "cuda"
    assert path != launch._cache_path("src", "entry", ("-DX=2", "-arch=sm_90"), (12, 8))
    assert launch._read_cached(path) is None
    launch._write_cached(path, b"\x7fELF cubin bytes")
    assert launch._read_cached(path) == b"\x7fELF cubin bytes"
    data = path.read_bytes()
    path.write_bytes(data[:-3])  # torn
    assert launch._read_cached(path) is None
    path.write_bytes(data[:-1] + b"!")  # corrupt
    assert launch._read_cached(path) is None
    path.write_bytes(b"\x7fELF cubin bytes")  # no header
    assert launch._read_cached(path) is None
    blocked = tmp_path / "file"
    blocked.write_text("")
    launch._write_cached(blocked / "x.cubin", b"data")  # its folder cannot exist: skipped
    assert not (blocked / "x.cubin").exists()


def test_cubin_cache_stays_within_its_bound(tmp_path, monkeypatch):
    """CLREDUCE_CUDA_CACHE_MB bounds the folder: writing past it deletes the least recently
    written cubins, never the one just written; a bound below 1 MB is a ValueError."""
    import os

    from clreduce.backends.cuda import launch

    monkeypatch.setenv("CLREDUCE_CUDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CLREDUCE_CUDA_CACHE_MB", "1")
    blob = b"\0" * (300 << 10)  # 300 KB: three fit in 1 MB, a fourth does not
    paths = [launch._cache_path(f"src{i}", "e", (), (12, 8)) for i in range(5)]
    for i, path in enumerate(paths[:3]):
        launch._write_cached(path, blob)
        os.utime(path, (1000 + i, 1000 + i))  # written in order, oldest first
    assert all(launch._read_cached(p) == blob for p in paths[:3])
    launch._write_cached(paths[3], blob)
    assert not paths[0].exists() and all(p.exists() for p in paths[1:4])
    monkeypatch.setenv("CLREDUCE_CUDA_CACHE_MB", "0")
    with pytest.raises(ValueError, match="CLREDUCE_CUDA_CACHE_MB"):
        launch._write_cached(paths[4], blob)
    monkeypatch.setenv("CLREDUCE_CUDA_CACHE_MB", "1")
    big = b"\0" * (2 << 20)  # alone past the bound: kept (the one just written), the rest go
    launch._write_cached(paths[4], big)
    assert launch._read_cached(paths[4]) == big and not any(p.exists() for p in paths[:4])


@gpu
def test_float32_subnormals_are_values_not_zeros():
    """CuPy appends -ftz=true to its NVRTC builds (cupy/cupy#9576): float32 subnormals were 0 in
    every kernel, so all / count_nonzero of them said False / 0 and argmax / max / nanmax
    answered index 0 or 0.0 (an outside fuzz run). launch.py builds without it."""
    cp = _cupy()
    tiny = np.float32(np.finfo(np.float32).smallest_normal)
    x = (np.arange(1, 129, dtype=np.float32) * tiny / 256).reshape(2, 64)  # all subnormal, distinct
    x[1] = -x[1]
    xd = cp.asarray(x)
    assert bool(np.all(x != 0)) and np.all(np.abs(x) < tiny)
    np.testing.assert_array_equal(clreduce.all(xd, axis=1).get(), [True, True])
    np.testing.assert_array_equal(clreduce.count_nonzero(xd, axis=1).get(), [64, 64])
    np.testing.assert_array_equal(clreduce.argmax(xd, axis=1).get(), np.argmax(x, axis=1))
    np.testing.assert_array_equal(clreduce.argmin(xd, axis=1).get(), np.argmin(x, axis=1))
    np.testing.assert_array_equal(clreduce.max(xd, axis=1).get(), x.max(1))
    np.testing.assert_array_equal(clreduce.nanmin(xd, axis=1).get(), x.min(1))
    np.testing.assert_array_equal(clreduce.sum(xd, axis=1).get(), x.astype(np.float64).sum(1).astype(np.float32))


@gpu
def test_torch_norm():
    """clreduce.norm of torch tensors (CUDA and CPU): it raised TypeError (np.dtype of a torch
    dtype) before any work, where every other reduction took them (an outside fuzz run)."""
    if torch is None or not torch.cuda.is_available():
        pytest.skip("torch with CUDA not available")
    t = torch.randn(30, 77, device="cuda")
    for ord_ in (None, 1, float("inf"), 0):
        got = clreduce.norm(t, ord=ord_, axis=1)
        want = torch.linalg.vector_norm(t, ord=2 if ord_ is None else ord_, dim=1)
        assert isinstance(got, torch.Tensor) and got.dtype == torch.float32, (ord_, got)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    h = t.half()
    torch.testing.assert_close(clreduce.norm(h, axis=1).float(), h.float().norm(dim=1), rtol=2e-3, atol=1e-2)
    i = torch.randint(-5, 5, (10, 33), device="cuda", dtype=torch.int32)
    got_i = clreduce.norm(i, axis=1)
    assert got_i.dtype == torch.float64  # numpy.linalg.norm of integers: float64
    torch.testing.assert_close(got_i, i.double().norm(dim=1))
    assert clreduce.norm(i, ord=0, axis=1).dtype == torch.float64
    cpu = torch.randn(5, 6)
    torch.testing.assert_close(clreduce.norm(cpu, axis=1, backend="cuda"), cpu.norm(dim=1), rtol=1e-5, atol=1e-5)


@gpu
def test_torch_side_stream_orders_the_work():
    if torch is None or not torch.cuda.is_available():
        pytest.skip("torch with CUDA not available")
    s = torch.cuda.Stream()
    x = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        y = x * 2  # queued on s; the reduction must come after it on s
        got = clreduce.sum(torch.matmul(y, y) * 0 + y, axis=1)
        ints = clreduce.mean(torch.ones(8, 9, dtype=torch.int32, device="cuda"), axis=1)
    s.synchronize()
    torch.testing.assert_close(got, (x * 2).sum(1), rtol=1e-4, atol=1e-3)
    assert torch.all(ints == 1)
    cp = _cupy()
    assert cp.cuda.get_current_stream().ptr == 0  # the caller's CuPy stream is left as it was


@gpu
def test_explicit_stream_option():
    cp = _cupy()
    x = cp.arange(1000, dtype=cp.float32).reshape(10, 100)
    s = cp.cuda.Stream(non_blocking=True)
    got = clreduce.sum(x, axis=1, stream=s)
    s.synchronize()
    np.testing.assert_allclose(got.get(), x.get().sum(1))


@gpu
def test_bad_input_table():
    cp = _cupy()
    x = cp.ones((4, 8), cp.float32)
    # Refused before pyopencl is imported, so the same message whether or not it is installed
    # (the old test expected the generic "another device" text and failed where it was).
    with pytest.raises(TypeError, match="is a CUDA array and backend='opencl'"):
        clreduce.sum(x, axis=-1, backend="opencl")
    with pytest.raises(ValueError, match="device"):
        clreduce.sum(x, axis=-1, device=x.device.id + 1)
    with pytest.raises(TypeError, match="unexpected (options|keyword argument)"):
        clreduce.sum(x, axis=-1, queue=None)
    with pytest.raises(TypeError, match="not support"):
        clreduce.sum(cp.ones((2, 2), cp.complex64), axis=-1)
    if torch is not None and torch.cuda.is_available():
        with pytest.raises(TypeError, match="bfloat16"):
            clreduce.sum(torch.ones(2, 2, device="cuda", dtype=torch.bfloat16), axis=-1)
    if cp.cuda.runtime.getDeviceCount() > 1:
        with cp.cuda.Device(1):
            other = cp.ones((3, 5), cp.float32)
            s1 = cp.cuda.Stream()
        got = clreduce.sum(other, axis=1)
        assert got.device.id == 1 and bool(cp.all(got == 5))
        with pytest.raises(ValueError, match="device"):
            clreduce.sum(x, axis=1, stream=s1)


@gpu
def test_caps_probe_of_the_real_device():
    caps = BACKEND.caps()
    assert caps.backend == "cuda" and caps.subgroup_sizes == (32,) and caps.compute_units >= 1
    assert caps.max_work_group_size >= 1024 and caps.local_mem_size >= 48 * 1024
