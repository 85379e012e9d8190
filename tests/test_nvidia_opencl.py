"""NVIDIA's OpenCL driver: warp shuffles in inline PTX (SG_MODE 4), aligned vector loads, and
the launch shapes measured on NVIDIA GPUs, which both backends share.

Planner rules run on the probe of an H100 (``tests/data/nvidia_h100_opencl.json``) with no
GPU. The OpenCL C that only NVIDIA's path uses but any device can compile (ALIGNED_VLOAD's
vector-pointer loads, UNROLL in the state kernel, forced launch shapes) runs here on the CPU
devices against numpy. The PTX itself runs only on NVIDIA: the suite's OpenCL tests on the GPU
machine (``CLREDUCE_REQUIRE_DEVICES=nvidia``) cover it, and ``opencl_probe`` checks it before
the planner may use it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from clreduce.backends import cl_fallback
from clreduce.backends.cuda import probe as cuda_probe
from clreduce.backends.cuda.tune import cuda_plan
from clreduce.caps import DeviceCaps
from clreduce.plan import Force, Problem, UnsupportedOnDevice, plan

DATA = Path(__file__).parent / "data"
NV_CL = DeviceCaps.from_json((DATA / "nvidia_h100_opencl.json").read_text())
NV_CL_NO_PTX = dataclasses.replace(NV_CL, ptx_shuffle=False, subgroup_sizes=())
H100_CUDA = cuda_probe.caps_from_properties(cuda_probe.H100_SXM_PROPERTIES)
BENCH_SHAPES = [(442368, 128), (1048576, 32), (16777216, 16), (65536, 4096), (8192, 1000),
                (4096, 65536), (64, 4194304), (1, 268435456), (4194304, 64)]


def _defines(launch) -> dict:
    return dict(launch.defines)


# ---- planner, no device --------------------------------------------------------------------

def test_the_probe_json_says_nvidia_with_ptx_warps():
    assert NV_CL.implementation == "nvidia" and NV_CL.vendor == "nvidia" and NV_CL.ptx_shuffle
    assert not NV_CL.subgroups and NV_CL.subgroup_sizes == (32,) and NV_CL.warp_size == 32
    assert not NV_CL.khr_shuffle and not NV_CL.subgroup_reduce_builtins
    assert DeviceCaps.from_json(NV_CL.to_json()) == NV_CL
    legacy = {k: v for k, v in json.loads(NV_CL.to_json()).items() if k != "ptx_shuffle"}
    assert DeviceCaps.from_dict(legacy).ptx_shuffle is False  # JSON from before the field


@pytest.mark.parametrize("op", ["sum", "mean", "max", "argmax", "var", "logsumexp", "prod", "nanmax"])
@pytest.mark.parametrize("rows,k", [(4096, 16), (4096, 100), (512, 1000), (64, 4096), (2, 1 << 20)])
def test_nvidia_opencl_plans_use_ptx_warp_shuffles(op, rows, k):
    p = plan(NV_CL, Problem(rows, k, "float32", op))
    first = _defines(p.passes[0])
    assert p.sg_mode == "shuffle_ptx" and first["SG_MODE"] == "4" and first["SG_SIZE"] == "32"
    assert p.reqd_sg == "none" and p.wg_size % 32 == 0
    for launch in p.passes:
        d = _defines(launch)
        assert d["ALIGNED_VLOAD"] == "1"
        # inline PTX needs no sub-group built-ins: the driver's default OpenCL C, no -cl-std
        assert not any(o.startswith("-cl-std") for o in launch.options), launch.options
    assert "UNROLL" in first


def test_without_a_passing_ptx_probe_nvidia_opencl_stays_on_local_memory():
    p = plan(NV_CL_NO_PTX, Problem(4096, 100, "float32", "max"))
    assert p.sg_mode == "local" and _defines(p.passes[0])["SG_MODE"] == "0"
    with pytest.raises(UnsupportedOnDevice):
        plan(NV_CL_NO_PTX, Problem(4096, 100, "float32", "max"), Force(sg_mode="shuffle"))


def test_forced_modes_and_widths_on_nvidia_opencl():
    problem = Problem(4096, 100, "float32", "sum")
    assert plan(NV_CL, problem, Force(sg_mode="shuffle")).sg_mode == "shuffle_ptx"
    assert plan(NV_CL, problem, Force(sg_mode="shuffle_ptx", sg_size=32)).sg_size == 32
    assert plan(NV_CL, problem, Force(sg_mode="local")).sg_mode == "local"
    for bad in (Force(sg_mode="shuffle_khr"), Force(sg_mode="builtin"), Force(sg_size=16)):
        with pytest.raises(UnsupportedOnDevice):
            plan(NV_CL, problem, bad)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("op", ["mean", "max", "argmax", "var"])
@pytest.mark.parametrize("rows,k", BENCH_SHAPES)
def test_both_nvidia_backends_get_the_same_launch_shape(rows, k, dtype, op):
    """The measured NVIDIA rules belong to the hardware: CUDA and NVIDIA OpenCL plans agree on
    teams, loads in flight, split and grid of the pass that reads the input (a split's second
    pass may differ: CUDA's built-in warp reduce takes whole warps, the PTX butterfly any team)."""
    problem = Problem(rows, k, dtype, op)
    a, b = plan(NV_CL, problem), cuda_plan(H100_CUDA, problem)
    assert (a.strategy, a.lanes, a.split, a.wg_size, a.vec) == (b.strategy, b.lanes, b.split, b.wg_size, b.vec)
    assert len(a.passes) == len(b.passes)
    la, lb = a.passes[0], b.passes[0]
    assert (la.global_size, la.local_size) == (lb.global_size, lb.local_size)
    assert _defines(la).get("UNROLL") == _defines(lb).get("UNROLL")


# lanes per row for 8192 x K, mean: float16 rows of 1-6 KB take half the lanes of the older
# rule since the H100 sweep (plan_nvidia.vectors_per_lane); float32 and float16 rows of
# 8 KB (the H200 sweep's 65536x4096) keep theirs
MID_ROW_TEAMS = {
    "float16": {768: 4, 1000: 8, 1024: 8, 1536: 8, 2000: 16, 3000: 16, 4096: 64},
    "float32": {768: 8, 1000: 16, 1024: 16, 1536: 16, 2000: 32, 3000: 128},
}


@pytest.mark.parametrize("dtype,k,lanes", [(d, k, n) for d, teams in MID_ROW_TEAMS.items() for k, n in teams.items()])
def test_mid_rows_get_the_teams_measured_on_nvidia(dtype, k, lanes):
    for p in (plan(NV_CL, Problem(8192, k, dtype, "mean")), cuda_plan(H100_CUDA, Problem(8192, k, dtype, "mean"))):
        assert p.lanes == lanes, (dtype, k, p.strategy, p.lanes)
        loads = -(-k // (p.vec * p.lanes))  # vector loads per lane
        assert _defines(p.passes[0])["UNROLL"] == str(min(4, 1 << (loads.bit_length() - 1)))
        if lanes < 32:
            assert p.strategy == "rows_per_sg"


def test_launch_shape_knobs_are_validated_and_honoured():
    problem = Problem(1 << 16, 256, "float32", "argmax")
    p = plan(NV_CL, problem, Force(lanes=16, unroll=2))
    assert p.lanes == 16 and p.strategy == "rows_per_sg" and _defines(p.passes[0])["UNROLL"] == "2"
    s = plan(NV_CL, Problem(4, 1 << 22, "float32", "var"), Force(split=40))
    assert s.strategy == "split_k" and s.split == 40 and len(s.passes) == 2
    assert plan(NV_CL, Problem(4, 1 << 22, "float32", "var"), Force(split=1)).split == 1
    for bad in (dict(lanes=3), dict(unroll=9), dict(unroll=0), dict(split=0), dict(lanes=True)):
        with pytest.raises((ValueError, TypeError)):
            Force(**bad)
    with pytest.raises(ValueError, match="exceeds the work-group"):
        plan(NV_CL, problem, Force(lanes=512, wg_size=256))
    with pytest.raises(ValueError, match="cannot be combined"):
        plan(NV_CL, problem, Force(lanes=4, strategy="wg_per_row"))
    with pytest.raises(ValueError, match="contradicts"):
        plan(NV_CL, problem, Force(split=1, strategy="split_k"))
    with pytest.raises(ValueError, match="needs strategy split_k"):
        plan(NV_CL, problem, Force(split=4, strategy="rows_per_sg"))


def test_a_failed_ptx_build_falls_back_to_local_memory():
    problem = Problem(4096, 100, "float32", "max")
    assert cl_fallback.can_fall_back("shuffle_ptx")
    try:
        with pytest.warns(cl_fallback.SubgroupModeFallbackWarning, match="shuffle_ptx"):
            cl_fallback.mark_bad(NV_CL, "shuffle_ptx", "ptxas fatal: Unresolved extern", "build failed")
        force = cl_fallback.avoid_bad_modes(NV_CL, problem, Force(), user_forced=False)
        assert plan(NV_CL, problem, force).sg_mode == "local"
    finally:
        cl_fallback.forget(NV_CL)


def test_kernels_spell_the_ptx_mode_only_through_the_dialect():
    from clreduce.kernels import read_source

    cl_text = read_source("reduce_rows.cl")
    assert "shfl.sync.bfly.b32" in cl_text and "word_shuffle_xor" in cl_text
    for name in ("reduce_rows.cl", "reduce_state.cl"):
        body = (Path(__file__).parent.parent / "cl_kernels" / name).read_text()
        assert "asm" not in body.split() and "asm(" not in body  # the PTX lives in cl_dialect_opencl.h
    cuda_text = read_source("reduce_rows.cl", "cuda")
    assert "#define HAS_WORD_SHUFFLE 0" in cuda_text


# ---- the same OpenCL C on the CPU devices ---------------------------------------------------

@pytest.fixture
def as_nvidia_implementation(monkeypatch):
    """Plan CPU devices as if NVIDIA's driver ran them: ALIGNED_VLOAD=1 builds (any OpenCL
    compiler takes those loads), every other rule stays the CPU's."""
    from clreduce.backends import opencl

    real = opencl.caps_of
    monkeypatch.setattr(opencl, "caps_of", lambda device: dataclasses.replace(real(device), implementation="nvidia"))
    opencl.clear_caches()
    yield
    opencl.clear_caches()


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "float64"])
@pytest.mark.parametrize("op", ["sum", "max", "argmax", "argmin", "var"])
def test_aligned_vector_loads_with_heads_and_tails(cl_device, as_nvidia_implementation, op, dtype):
    import clreduce
    from clreduce.backends import opencl

    if (dtype == "float64" or (dtype == "int32" and op == "var")) and not opencl.caps_of(cl_device).fp64:
        pytest.skip("needs fp64, which this device lacks")
    queue = opencl.queue_for(cl_device)
    rng = np.random.default_rng(11)
    base = rng.standard_normal(3 + 37 * 203).astype(dtype)
    for start in (0, 1, 3):  # row starts off every vector boundary: scalar heads of 0..VEC-1 elements
        x = base[start:start + 37 * 203].reshape(37, 203)
        got = getattr(clreduce, op)(x, axis=-1, queue=queue)
        want = getattr(np, op)(x.astype(np.float64) if op in ("sum", "var") and dtype != "int32" else x, axis=-1)
        if op in ("argmax", "argmin", "max"):
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=3e-3 if dtype == "float16" else 1e-5,
                                       atol=1e-2 if dtype == "float16" else 1e-5)
    plan_used, _ = opencl.plan_for(queue, Problem(37, 203, dtype, op))
    assert _defines(plan_used.passes[0])["ALIGNED_VLOAD"] == "1"


UNROLLED_FORCES = {"u4l1": Force(unroll=4, lanes=1), "u2l4": Force(unroll=2, lanes=4),
                   "u8l2": Force(unroll=8, lanes=2), "u3l8s3": Force(unroll=3, lanes=8, split=3)}
# Without --slow each op takes two of the four launch shapes, so that every shape meets an
# index op (argmax / argmin) and a var op on every device: llvmpipe took 15-26 s to build each
# unrolled argmin / argmax (2-core host), half of this test's time in CI.
UNROLLED_SAMPLE = {"argmax": ("u4l1", "u2l4"), "argmin": ("u8l2", "u3l8s3"), "var": ("u4l1", "u8l2"),
                   "std": ("u2l4", "u3l8s3"), "max": ("u4l1", "u3l8s3")}


@pytest.mark.parametrize("op", ["argmax", "argmin", "var", "std", "max"])
def test_unrolled_state_kernels_match_numpy(cl_device, op, request):
    """UNROLL > 1 in reduce_state.cl (NVIDIA plans) on any device: ties keep the first index,
    NaN wins, all -inf rows give index 0, and var is exact to float32 rounding."""
    from clreduce.backends import opencl
    from conftest import slow_enabled

    names = UNROLLED_FORCES if slow_enabled(request.config) else UNROLLED_SAMPLE[op]
    for name in names:
        _unrolled_state_kernel_matches_numpy(opencl.queue_for(cl_device), op, UNROLLED_FORCES[name], name)


def _unrolled_state_kernel_matches_numpy(queue, op, force, name):
    import clreduce

    rng = np.random.default_rng(5)
    x = rng.integers(-3, 4, size=(41, 1000)).astype(np.float32)  # many ties
    x[3] = -np.inf
    x[7, 500] = np.nan
    x[9, 998:] = np.nan
    x[11, 17] = 50.0
    x[11, 900] = 50.0
    for k in (1000, 999, 37):
        v = np.ascontiguousarray(x[:, :k])
        got = getattr(clreduce, op)(v, axis=-1, queue=queue, force=force)
        with np.errstate(invalid="ignore"):
            want = getattr(np, op)(v.astype(np.float64) if op in ("var", "std") else v, axis=-1)
        what = f"{op} {name} K={k}"
        if op in ("argmax", "argmin", "max"):
            np.testing.assert_array_equal(got, want, err_msg=what)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)


# ---- one tuning mechanism for both NVIDIA backends (no GPU) -------------------------------

@pytest.fixture
def tune_dir(tmp_path, monkeypatch):
    from clreduce import tuning

    monkeypatch.setenv("CLREDUCE_TUNE_DIR", str(tmp_path))
    monkeypatch.delenv("CLREDUCE_TUNE", raising=False)
    tuning._forget()
    yield tmp_path
    tuning._forget()


def test_the_cuda_backend_plans_with_a_stored_winner(tune_dir, monkeypatch):
    """A winner `clreduce tune --backend cuda` stored for the bucket replaces the planner's
    launch shape in the CUDA backend; CLREDUCE_TUNE=0 and a forced plan ignore it."""
    from clreduce import tuning
    from clreduce.backends import cuda

    monkeypatch.setattr(cuda, "probe_device", lambda device_id: H100_CUDA)
    monkeypatch.setattr(cuda, "_kernels_for", lambda device_id, launch_plan: [])
    cuda._prepared.clear()
    problem = Problem(1 << 20, 32, "float32", "argmax")
    default = cuda_plan(H100_CUDA, problem)
    winner = Force(lanes=8, unroll=1)
    cache = tuning.TuneCache(H100_CUDA)
    cache.put(problem, winner, gbps=1.0, default_gbps=0.5, plan="x")
    cache.save()
    tuned, _ = cuda._plan_and_kernels(0, problem, Force())
    assert (tuned.lanes, _defines(tuned.passes[0])["UNROLL"]) == (8, "1") != (default.lanes, None)
    assert cuda._plan_and_kernels(0, problem, Force(vec=4))[0].lanes == default.lanes  # forced: no winner
    monkeypatch.setenv("CLREDUCE_TUNE", "0")
    cuda._prepared.clear()
    assert cuda._plan_and_kernels(0, problem, Force())[0].lanes == default.lanes
    cuda._prepared.clear()


def test_a_stale_cuda_winner_falls_back_with_a_warning(tune_dir, monkeypatch):
    from clreduce import tuning
    from clreduce.backends import cuda

    monkeypatch.setattr(cuda, "probe_device", lambda device_id: H100_CUDA)
    monkeypatch.setattr(cuda, "_kernels_for", lambda device_id, launch_plan: [])
    cuda._prepared.clear()
    problem = Problem(4096, 100, "float32", "max")
    cache = tuning.TuneCache(H100_CUDA)
    cache.put(problem, Force(sg_size=16))  # no warp of 16 on CUDA
    cache.save()
    with pytest.warns(RuntimeWarning, match="tune --backend cuda"):
        got, _ = cuda._plan_and_kernels(0, problem, Force())
    assert got == cuda_plan(H100_CUDA, problem)
    cuda._prepared.clear()


def test_gpu_tuning_searches_the_launch_shape():
    from clreduce import tuner

    rows = tuner.knob_values(NV_CL, Problem(4096, 1000, "float32", "argmax"))
    assert ("shuffle", 32) in rows["sg"] and rows["unroll"] == [1, 2, 4, 8] and 256 in rows["lanes"]
    assert "split" not in rows
    assert tuner.knob_values(NV_CL, Problem(2, 1 << 20, "float32", "sum"))["split"][0] == 1
    cpu = dataclasses.replace(NV_CL, device_type="cpu")
    assert "lanes" not in tuner.knob_values(cpu, Problem(4096, 1000, "float32", "sum"))  # CI's CPU tuning stays small
    f = tuner._with(Force(strategy="wg_per_row"), "lanes", 8)
    assert f.lanes == 8 and f.strategy is None
    f = tuner._with(Force(strategy="split_k", lanes=64), "split", 1)
    assert f.split == 1 and f.strategy is None and f.lanes is None  # a split's lanes do not fit one pass
    for knob in ("lanes", "unroll", "split"):
        for value in tuner.knob_values(NV_CL, Problem(2, 1 << 20, "float32", "var")).get(knob, []):
            plan(NV_CL, Problem(2, 1 << 20, "float32", "var"), tuner._with(Force(), knob, value))  # all plan


def test_cpu_blocks_is_refused_on_cuda_and_not_tuned_there():
    # reduce_rows_cpu uses OpenCL vector halves (.lo/.hi): NVRTC cannot build it, so a forced
    # cpu_blocks on CUDA must be a typed refusal, and the CUDA tuner must not offer it
    from clreduce import tuner

    problem = Problem(1000, 1000, "float32", "min")
    with pytest.raises(UnsupportedOnDevice, match="cpu_blocks"):
        cuda_plan(H100_CUDA, problem, Force(strategy="cpu_blocks"))
    assert "cpu_blocks" not in tuner.knob_values(H100_CUDA, problem)["strategy"]
    assert "cpu_blocks" in tuner.knob_values(NV_CL, problem)["strategy"]  # OpenCL still runs it when asked
    plan(NV_CL, problem, Force(strategy="cpu_blocks"))


def test_cli_tune_for_cuda_says_why_it_cannot_run(monkeypatch, capsys):
    import sys

    from clreduce import cli

    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy -> ImportError
    assert cli.main(["tune", "--backend", "cuda", "--shapes", "4,64"]) == 1
    assert "CUDA backend cannot run here" in capsys.readouterr().err
