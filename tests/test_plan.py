"""The pure planner on published device profiles: no device, no pyopencl.

Every plan is checked against what the device can do (work-group and local-memory limits,
sub-group widths, which extensions the build options rely on) and against the kernel's
launch contract (required macros, LANES dividing WG_SIZE, sorted options).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clreduce.caps import DeviceCaps
from clreduce.kernels import build_options, read_source
from clreduce.plan import ALL_STRATEGIES, STRATEGIES, Force, LaunchPlan, Problem, UnsupportedOnDevice, cpu_blocks_default, plan

ROOT = Path(__file__).resolve().parent.parent
PROFILES_PATH = Path(__file__).parent / "data" / "mobile_gpus.json"
RAW_PROFILES = json.loads(PROFILES_PATH.read_text(encoding="utf-8"))
PROFILES = {e["name"]: DeviceCaps.from_profile(e) for e in RAW_PROFILES}

# Devices the profiles do not cover, written as their probes report them.
INTEL_CPU = DeviceCaps(
    vendor="intel", name="Intel(R) Xeon(R) Processor (synthetic)", device_type="cpu",
    opencl_c_versions=("1.2", "3.0"), subgroups=True, subgroup_sizes=(4, 8, 16, 32, 64),
    extensions=("cl_intel_required_subgroup_size", "cl_intel_subgroups", "cl_khr_fp16", "cl_khr_fp64",
                "cl_khr_subgroup_shuffle", "cl_khr_subgroups"),
    max_work_group_size=8192, local_mem_size=262144, compute_units=2, fp16=True, fp64=True)
INTEL_GPU = dataclasses.replace(INTEL_CPU, name="Intel GPU (synthetic)", device_type="gpu",
                                subgroup_sizes=(8, 16, 32), max_work_group_size=1024, local_mem_size=65536,
                                compute_units=96)
POCL = DeviceCaps(vendor="pocl", name="pthread CPU (synthetic PoCL)", device_type="cpu",
                  opencl_c_versions=("1.2", "3.0"), max_work_group_size=4096, local_mem_size=2 << 20,
                  compute_units=2, fp64=True)
NVIDIA = DeviceCaps(vendor="nvidia", name="NVIDIA (synthetic OpenCL)", device_type="gpu",
                    max_work_group_size=1024, local_mem_size=49152, compute_units=132, warp_size=32, fp64=True)
SYNTHETIC = {c.name: c for c in (INTEL_CPU, INTEL_GPU, POCL, NVIDIA)}
ALL_CAPS = {**PROFILES, **SYNTHETIC}

OPS = ("sum", "mean", "max", "min")
DTYPES = ("float32", "float16", "int32")
SHAPES = [(4096, 768), (1, 10**6), (10**6, 4), (7, 3), (442368, 128), (3, 1), (1, 1), (33, 70001)]

_REQUIRED_RE = re.compile(r"^#ifndef\s+(\w+)\s*\n#error", re.MULTILINE)


_DEFINED_RE = re.compile(r"^\s*#\s*define\s+(\w+)", re.MULTILINE)


def required_macros(kernel_file: str) -> set[str]:
    """Macros the kernel refuses to build without (``#ifndef X`` + ``#error``), less those the
    file defines itself for a header it includes (row_scan.cl's VEC, ITEMS, for cpu_vec.h)."""
    source = read_source(kernel_file)
    return set(_REQUIRED_RE.findall(source)) - set(_DEFINED_RE.findall(source))


def _sg_mode_macro(plan_: LaunchPlan) -> int:
    return {"local": 0, "none": 0, "builtin": 1, "shuffle_khr": 2, "shuffle_qcom": 3}[plan_.sg_mode]


def _scalars(launch) -> dict:
    return {name: value for name, _, value in launch.scalars}


def check_plan(caps: DeviceCaps, problem: Problem, p: LaunchPlan, force: Force | None = None) -> None:
    """Everything a plan must satisfy on ``caps``; see the module docstring."""
    where = f"{caps.name} {problem} {force}"
    columns = problem.inner > 1
    wg = p.wg_size
    assert wg & (wg - 1) == 0 and 1 <= wg <= caps.max_work_group_size, where
    assert p.local_mem_bytes <= caps.local_mem_size, where
    assert p.vec in (1, 2, 4, 8, 16), where
    assert p.lanes >= 1 and p.lanes & (p.lanes - 1) == 0 and wg % p.lanes == 0, where
    if columns:
        assert p.strategy in ("columns", "columns_split_k") and p.sg_mode == "none" and p.lanes == 1, where
    else:
        assert p.strategy in ALL_STRATEGIES, where
    if p.strategy == "cpu_blocks":
        assert p.sg_mode == "local" and p.lanes == 1 and p.local_mem_bytes == 0, where
        assert all(launch.entry == "reduce_rows_cpu" and dict(launch.defines)["CPU_BLOCKS"] == "1"
                   or launch.entry == "reduce_rows_state_cpu" and dict(launch.defines)["ENTRY"] == "3"
                   for launch in p.passes), where
    if p.sg_mode in ("local", "none"):
        assert p.sg_size is None and p.reqd_sg == "none", where
    else:
        assert caps.subgroups and p.sg_size in caps.subgroup_sizes, where
        assert wg % p.sg_size == 0, where
    if p.sg_mode == "builtin":
        assert caps.subgroup_reduce_builtins, where
        assert p.lanes == 1 or p.lanes >= p.sg_size, f"builtin reduce with a partial team: {where}"
    if p.sg_mode == "shuffle_khr":
        assert caps.has("cl_khr_subgroup_shuffle"), where
    if p.sg_mode == "shuffle_qcom":
        assert caps.has("cl_qcom_subgroup_shuffle"), where
    np_out = getattr(np, problem.op)(np.zeros(1, problem.dtype)).dtype
    assert np.dtype(p.out_dtype) == np_out, where

    for launch in p.passes:
        defines = dict(launch.defines)
        missing = required_macros(launch.kernel_file) - set(defines)
        assert not missing, f"plan lacks macros {launch.kernel_file} requires: {sorted(missing)} ({where})"
        assert sum(k.startswith("OP_") for k in defines) == 1, where
        assert launch.local_size == wg and launch.global_size % wg == 0 and launch.global_size >= wg, where
        assert int(defines["WG_SIZE"]) == wg, where
        lanes = int(defines.get("LANES", 1))
        assert lanes & (lanes - 1) == 0 and wg % lanes == 0, where
        sg_mode = int(defines.get("SG_MODE", 0))
        reqd = int(defines.get("REQD_SG", 0))
        assert sg_mode == _sg_mode_macro(p), where
        # Extensions the options rely on are listed by the device.
        if sg_mode == 1:
            assert caps.subgroup_reduce_builtins, where
            assert lanes == 1 or lanes >= p.sg_size, where
        if sg_mode == 2:
            assert caps.has("cl_khr_subgroup_shuffle"), f"KHR shuffle without cl_khr_subgroup_shuffle: {where}"
        if sg_mode == 3:
            assert caps.has("cl_qcom_subgroup_shuffle"), where
        if reqd == 1:
            assert caps.has("cl_intel_required_subgroup_size"), where
        if reqd in (2, 3):
            assert caps.has("cl_qcom_reqd_sub_group_size"), where
        if sg_mode == 0:
            assert reqd == 0, where
        else:
            assert int(defines["SG_SIZE"]) == p.sg_size and wg % p.sg_size == 0, where
        # Options: -D sorted by name, then -cl-std (only a version the compiler accepts).
        names = [o[2:].split("=", 1)[0] for o in launch.options if o.startswith("-D")]
        assert names == sorted(names) and len(names) == len(set(names)), where
        stds = [o for o in launch.options if o.startswith("-cl-std=")]
        assert launch.options[: len(names)] == tuple(o for o in launch.options if o.startswith("-D")), where
        assert len(stds) <= 1 and (not stds or launch.options[-1] == stds[0]), where
        if stds:
            assert stds[0][len("-cl-std=CL"):] in caps.opencl_c_versions, where
        if sg_mode != 0 and caps.cl_std:
            assert stds == [f"-cl-std={caps.cl_std}"], where
        assert launch.options == build_options(launch.defines, stds[0].split("=")[1] if stds else None), where

    first, last = p.passes[0], p.passes[-1]
    assert first.reads == "input" and last.writes == "output", where
    if p.split > 1:
        assert len(p.passes) == 2, where
    if len(p.passes) == 2:
        # (a forced split_k on a row shorter than two vector chunks may end with split == 1:
        # still two passes, the second one copying; correct, only wasteful)
        assert p.strategy in ("split_k", "columns_split_k", "cpu_blocks"), where
        assert (first.writes, last.reads) == ("partials", "partials"), where
        assert p.partials_bytes > 0, where
    else:
        assert len(p.passes) == 1 and p.partials_bytes == 0, where
    s1, s2 = _scalars(first), _scalars(last)
    if columns:
        assert (s1["outer"], s1["k_len"], s1["inner"]) == (problem.rows, problem.row_len, problem.inner), where
        length, chunk = problem.row_len, s1["chunk_len"]
        if len(p.passes) == 2:
            assert s2["k_len"] == p.split, where
    else:
        assert (s1["n_rows"], s1["row_len"]) == (problem.rows, problem.row_len), where
        length, chunk = problem.row_len, s1["chunk_len"]
        if len(p.passes) == 2:
            assert s2["row_len"] == p.split and chunk % p.vec == 0, where
    assert chunk * p.split >= length > chunk * (p.split - 1), where


# ---- imports ----------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [
    "import clreduce.plan, sys; assert 'pyopencl' not in sys.modules, 'pyopencl imported'",
    "import clreduce, sys; bad = {'pyopencl', 'cupy', 'torch'} & set(sys.modules); assert not bad, bad",
    "import clreduce.caps, clreduce.ops, clreduce.kernels, clreduce.config, clreduce.backends, sys; "
    "bad = {'pyopencl', 'cupy'} & set(sys.modules); assert not bad, bad",
])
def test_imports_do_not_pull_gpu_libraries(code):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr


# ---- invariants over profiles ----------------------------------------------------------------------

@pytest.mark.parametrize("name", list(ALL_CAPS))
def test_default_plans_fit_the_device(name):
    caps = ALL_CAPS[name]
    for (rows, k), dtype, op in ((s, d, o) for s in SHAPES for d in DTYPES for o in OPS):
        problem = Problem(rows=rows, row_len=k, dtype=dtype, op=op)
        p = plan(caps, problem)
        check_plan(caps, problem, p)
        assert plan(caps, problem) == p, "plan is not deterministic"
        assert plan(caps, problem, Force()) == p


COLUMN_SHAPES = [(1, 1000, 768), (64, 3, 5), (1, 10**6, 2), (10**4, 7, 33), (2, 512, 3), (1, 1, 17)]


@pytest.mark.parametrize("name", list(ALL_CAPS))
def test_column_plans_fit_the_device(name):
    """inner > 1 (a non-last axis): work-items along inner, optional split over K."""
    caps = ALL_CAPS[name]
    forces = [None, Force(strategy="split_k"), Force(vec=1), Force(vec=16), Force(wg_size=64)]
    for (outer, k, inner), dtype, op, force in ((s, d, o, f) for s in COLUMN_SHAPES for d in DTYPES
                                                for o in OPS for f in forces):
        problem = Problem(rows=outer, row_len=k, inner=inner, dtype=dtype, op=op)
        p = plan(caps, problem, force)
        check_plan(caps, problem, p, force)
        if force and force.vec:
            assert p.vec == force.vec
        if force and force.strategy == "split_k" and k >= 2:
            assert p.split >= 2 and len(p.passes) == 2


def test_gpu_column_splits_balance_the_two_walks():
    """GPUs split K about sqrt(K) ways (plan.gpu_column_split): the first pass walks K / split rows
    per work-item and the merge pass `split` partials per column, both one after another. The
    rule before (16384 chunks of 64 rows for 1048576 x 32) made the merge's walk 16384 steps:
    10x slower on an H200. CPUs keep their rule; Force(split=) is honoured for columns."""
    from clreduce.plan import gpu_column_split

    assert [gpu_column_split(k) for k in (255, 256, 1024, 4096, 65536, 1048576)] == [1, 2, 8, 32, 256, 1024]
    # products, and max/min of 1-2-byte types, fold slower: 4x the chunks (chunks of 32 rows)
    assert [gpu_column_split(k, True) for k in (31, 255, 4096, 65536, 1048576)] == [1, 7, 128, 1024, 4096]
    for caps in (INTEL_GPU, *PROFILES.values()):
        for k, inner, want in ((1048576, 32, 1024), (262144, 128, 512), (65536, 1024, 256), (4096, 16384, 32)):
            p = plan(caps, Problem(rows=1, row_len=k, inner=inner, dtype="float32", op="sum"))
            assert p.split <= want, (caps.name, k, inner, p.split)
            if inner <= 128:  # too few columns to fill any GPU: split, then merged in a second pass
                assert p.strategy == "columns_split_k" and len(p.passes) == 2, (caps.name, k, inner)
                assert str(dict(p.passes[-1].defines)["SPLIT"]) == "1"
        # outer rows enough to fill the device: no split at all, as before
        p = plan(caps, Problem(rows=4096, row_len=1024, inner=4096, dtype="float32", op="sum"))
        assert p.split == 1 and p.strategy == "columns"
    wide = Problem(rows=1, row_len=65536, inner=1024, dtype="float32", op="prod")
    assert plan(INTEL_GPU, wide).split > 256 == plan(INTEL_GPU, dataclasses.replace(wide, op="sum")).split
    narrow = Problem(rows=1, row_len=1048576, inner=32, dtype="float32", op="sum")
    assert plan(INTEL_GPU, narrow).split == 1024
    assert plan(INTEL_CPU, narrow).split == 128  # CPUs keep theirs: 2 cores x 16 x 4 work-items
    for force, split in ((Force(split=37), 37), (Force(split=1), 1), (Force(split=4096), 4096)):
        p = plan(INTEL_GPU, narrow, force)
        assert p.split == split and p.strategy == ("columns" if split == 1 else "columns_split_k")
    with pytest.raises(ValueError, match="contradicts"):
        plan(INTEL_GPU, narrow, Force(strategy="split_k", split=1))


@pytest.mark.parametrize("name", list(ALL_CAPS))
def test_every_forced_variant_fits_the_device(name, forced_variants):
    caps = ALL_CAPS[name]
    variants = forced_variants(caps)
    assert variants[0].id == "auto"
    assert {v.force.strategy for v in variants[1:]} == set(ALL_STRATEGIES)
    for v in variants[1:]:
        for rows, k in ((7, 3), (4096, 768), (1, 10**6)):
            for dtype, op in (("float32", "sum"), ("float16", "max"), ("int32", "mean")):
                problem = Problem(rows=rows, row_len=k, dtype=dtype, op=op)
                p = plan(caps, problem, v.force)
                check_plan(caps, problem, p, v.force)
                assert p.strategy == v.force.strategy, (name, v.id, p)
                if v.force.sg_size and p.sg_mode != "local":
                    assert p.sg_size == v.force.sg_size
                if v.force.wg_size:
                    assert p.wg_size == v.force.wg_size
                if v.force.vec:
                    assert p.vec == v.force.vec


@pytest.mark.parametrize("name", list(ALL_CAPS))
def test_cpu_blocks_only_by_default_on_intel_and_pocl_cpus(name):
    """The CPU-block kernel is the default on CPU runtimes that vectorise across work-items
    (Intel's, PoCL); GPU profiles (mobile_gpus.json) and rusticl keep the team kernels."""
    caps = ALL_CAPS[name]
    expect = caps.device_type == "cpu" and caps.implementation in ("intel", "pocl")
    for (rows, k), op in ((s, o) for s in SHAPES for o in ("sum", "mean", "max", "nansum", "argmax", "var",
                                                            "logsumexp")):
        p = plan(caps, Problem(rows=rows, row_len=k, dtype="float32", op=op))
        assert (p.strategy == "cpu_blocks") == (expect and op != "logsumexp"), (name, rows, k, op, p.strategy)


def test_variant_list_covers_the_issue_grid(forced_variants):
    """builtin/shuffle x every width x every strategy on a sub-group device; local x
    strategies without sub-groups."""
    ids = {v.id for v in forced_variants(INTEL_CPU)}
    for mode in ("builtin", "shuffle"):
        for size in INTEL_CPU.subgroup_sizes:
            for strategy in STRATEGIES:
                assert f"{mode}-sg{size}-{strategy}" in ids
    for strategy in STRATEGIES:
        assert f"local-{strategy}" in ids
    pocl_ids = {v.id for v in forced_variants(POCL)}
    assert {f"local-{s}" for s in STRATEGIES} <= pocl_ids
    assert not any(i.startswith(("builtin", "shuffle")) for i in pocl_ids)


def test_plan_survives_caps_json_round_trip():
    for caps in ALL_CAPS.values():
        again = DeviceCaps.from_json(caps.to_json())
        problem = Problem(rows=4096, row_len=768, dtype="float32", op="mean")
        assert plan(again, problem) == plan(caps, problem)
        json.dumps(plan(caps, problem).to_dict())  # JSON-able


# ---- device-specific rules ------------------------------------------------------------------------------

def _all_plans(caps, forces=(None,)):
    for force in forces:
        for (rows, k), dtype, op in ((s, d, o) for s in SHAPES for d in DTYPES for o in OPS):
            problem = Problem(rows=rows, row_len=k, dtype=dtype, op=op)
            try:
                yield problem, plan(caps, problem, force)
            except UnsupportedOnDevice:
                if force is None:
                    raise


def _profile(prefix: str) -> DeviceCaps:
    hits = [c for n, c in PROFILES.items() if n.startswith(prefix)]
    assert len(hits) == 1, prefix
    return hits[0]


def test_mali_g71_gets_local_memory():
    caps = _profile("Mali-G71 ")
    for problem, p in _all_plans(caps):
        assert p.sg_mode == "local"
        assert all(dict(launch.defines)["SG_MODE"] == "0" for launch in p.passes)
        assert p.wg_size <= 256  # 384 reported, work items capped at 256
    for mode in ("builtin", "shuffle"):
        with pytest.raises(UnsupportedOnDevice):
            plan(caps, Problem(rows=4, row_len=256, dtype="float32", op="sum"), Force(sg_mode=mode))


@pytest.mark.parametrize("name", [n for n, c in PROFILES.items() if c.vendor == "qualcomm"])
def test_adreno_never_khr_shuffle(name):
    caps = PROFILES[name]
    assert not caps.has("cl_khr_subgroup_shuffle")
    forces = [None, Force(sg_mode="shuffle"), Force(sg_mode="local")] + [
        Force(sg_mode="shuffle", strategy=s) for s in STRATEGIES]
    for _, p in _all_plans(caps, forces):
        assert p.sg_mode != "shuffle_khr"
        assert all(dict(launch.defines)["SG_MODE"] != "2" for launch in p.passes)
    with pytest.raises(UnsupportedOnDevice):
        plan(caps, Problem(rows=4, row_len=256, dtype="float32", op="sum"), Force(sg_mode="shuffle_khr"))


def _adreno_with(driver: str | None) -> DeviceCaps:
    return dataclasses.replace(_profile("Adreno 650"), driver_version=driver or "")


@pytest.mark.parametrize("driver", [None, "OpenCL 2.0 QUALCOMM build", "OpenCL 2.0 Compiler E031.37.12.01",
                                    "OpenCL 2.0 Compiler E031.38.10.99"])
def test_adreno_old_or_unknown_compiler_never_gets_builtin_reduce(driver):
    caps = _adreno_with(driver)
    assert caps.subgroups and not caps.subgroup_reduce_builtins
    forces = [None] + [Force(sg_mode="shuffle", strategy=s) for s in STRATEGIES] + [Force(sg_mode="local")]
    for _, p in _all_plans(caps, forces):
        assert p.sg_mode != "builtin"
        assert all(dict(launch.defines)["SG_MODE"] != "1" for launch in p.passes)
    with pytest.raises(UnsupportedOnDevice, match="builtin"):
        plan(caps, Problem(rows=4, row_len=256, dtype="float32", op="sum"), Force(sg_mode="builtin"))


def test_adreno_new_compiler_may_use_builtin_and_qcom_width_request():
    caps = _adreno_with("OpenCL 3.0 QUALCOMM build: 0676.73 Compiler E031.41.03.62")
    assert caps.subgroup_reduce_builtins
    p = plan(caps, Problem(rows=64, row_len=4096, dtype="float32", op="sum"))
    assert p.sg_mode == "builtin" and p.reqd_sg in ("qcom_half", "qcom_full")
    full = plan(caps, Problem(rows=64, row_len=4096, dtype="float32", op="sum"), Force(sg_size=128))
    assert full.reqd_sg == "qcom_full" and dict(full.passes[0].defines)["REQD_SG"] == "3"


@pytest.mark.parametrize("name", [n for n, c in ALL_CAPS.items() if c.device_type == "gpu"])
def test_split_k_for_one_huge_row_on_gpus(name):
    caps = ALL_CAPS[name]
    for dtype, op in (("float32", "sum"), ("float16", "mean"), ("int32", "max")):
        problem = Problem(rows=1, row_len=10**7, dtype=dtype, op=op)
        p = plan(caps, problem)
        assert p.strategy == "split_k" and p.split >= 2 and len(p.passes) == 2, (name, p)
        check_plan(caps, problem, p)


@pytest.mark.parametrize("name", [n for n, c in ALL_CAPS.items()
                                  if c.subgroups and c.subgroup_sizes and not cpu_blocks_default(c)])
def test_rows_per_sg_for_short_rows_on_subgroup_devices(name):
    caps = ALL_CAPS[name]
    problem = Problem(rows=100000, row_len=8, dtype="float32", op="sum")
    p = plan(caps, problem)
    assert p.sg_mode != "local" and p.strategy == "rows_per_sg" and p.lanes < p.sg_size, (name, p)
    check_plan(caps, problem, p)


def test_intel_width_request_only_with_intel_extension():
    p = plan(INTEL_CPU, Problem(rows=64, row_len=4096, dtype="float32", op="sum"), Force(sg_size=32))
    assert p.reqd_sg == "intel" and dict(p.passes[0].defines)["REQD_SG"] == "1"
    without = dataclasses.replace(INTEL_CPU, extensions=tuple(e for e in INTEL_CPU.extensions
                                                              if e != "cl_intel_required_subgroup_size"),
                                  subgroup_sizes=(16,))
    q = plan(without, Problem(rows=64, row_len=4096, dtype="float32", op="sum"))
    assert q.reqd_sg == "none" and dict(q.passes[0].defines)["REQD_SG"] == "0"


def test_build_options_are_sorted_and_order_independent():
    defines = {"WG_SIZE": 64, "ACC_T": "float", "OP_SUM": 1, "LANES": 8}
    shuffled = dict(reversed(list(defines.items())))
    a = build_options(defines, "CL3.0")
    assert a == build_options(shuffled, "CL3.0")
    assert a == ("-DACC_T=float", "-DLANES=8", "-DOP_SUM=1", "-DWG_SIZE=64", "-cl-std=CL3.0")
    assert build_options(tuple(defines.items())) == a[:-1]


# ---- Force validation ----------------------------------------------------------------------------------

G52 = _profile("Mali-G52 ")  # sub-groups of fixed width 8, KHR shuffle, no width request


@pytest.mark.parametrize("caps, force, error, match", [
    (INTEL_CPU, dict(strategy="fastest"), ValueError, "strategy"),
    (INTEL_CPU, dict(sg_mode="warp"), ValueError, "sg_mode"),
    (INTEL_CPU, dict(wg_size=96), ValueError, "power of two"),
    (INTEL_CPU, dict(wg_size=16384), ValueError, "wg_size"),
    (INTEL_CPU, dict(sg_size=32, wg_size=16), ValueError, "multiple"),
    (INTEL_CPU, dict(vec=3), ValueError, "vec"),
    (INTEL_CPU, dict(sg_size=128), UnsupportedOnDevice, "128"),
    (G52, dict(sg_size=16), UnsupportedOnDevice, "16"),
    (G52, dict(sg_mode="shuffle_qcom"), UnsupportedOnDevice, "shuffle_qcom"),
    (POCL, dict(sg_mode="builtin"), UnsupportedOnDevice, "builtin"),
    (POCL, dict(sg_mode="shuffle"), UnsupportedOnDevice, "shuffle"),
    (_profile("Mali-G71 "), dict(sg_mode="builtin"), UnsupportedOnDevice, "builtin"),
])
def test_force_validation(caps, force, error, match):
    # values alone (strategy, sg_mode, power of two, vec) fail when the Force is built
    with pytest.raises(error, match=match):
        plan(caps, Problem(rows=8, row_len=1000, dtype="float32", op="sum"), Force(**force))


def test_force_merged_prefers_own_fields():
    a = Force(sg_mode="local", vec=4)
    b = Force(sg_mode="builtin", strategy="split_k", vec=8)
    assert a.merged(b) == Force(sg_mode="local", strategy="split_k", vec=4)


# ---- profiles nobody has seen ----------------------------------------------------------------------------

@pytest.mark.parametrize("entry", [
    {"name": "Mystery GPU"},
    {"name": "Mystery Mali", "vendor": "ARM", "opencl_version": "OpenCL 2.0"},
    {"name": "Mystery Adreno", "vendor": "Qualcomm", "extensions": ["cl_khr_subgroups", "cl_qcom_subgroup_shuffle"],
     "subgroup_sizes": [64]},
    {"name": "tiny", "max_work_group_size": 8, "local_mem_size": 1024, "compute_units": 1},
], ids=["bare", "opencl2-no-ext", "adreno-unknown-compiler", "tiny-wg"])
def test_synthetic_unseen_profiles(entry):
    caps = DeviceCaps.from_profile(entry)
    for problem, p in _all_plans(caps):
        check_plan(caps, problem, p)
        if not caps.subgroups:
            assert p.sg_mode == "local"
        if caps.vendor == "qualcomm":
            assert p.sg_mode != "builtin"


def test_subgroups_listed_without_widths_falls_back_to_local():
    caps = DeviceCaps.from_profile({"name": "Mali, widths unknown", "vendor": "ARM",
                                    "extensions": ["cl_khr_subgroups", "cl_khr_subgroup_shuffle"]})
    assert caps.subgroups and caps.subgroup_sizes == ()
    problem = Problem(rows=100, row_len=1000, dtype="float32", op="sum")
    p = plan(caps, problem)
    assert p.sg_mode == "local"
    check_plan(caps, problem, p)


# ---- vectors no wider than the compile target's registers (DeviceCaps.vector_bytes_limit) ----
def _pocl_on(target: str) -> DeviceCaps:
    return dataclasses.replace(POCL, device_version=f"OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-{target}")


@pytest.mark.parametrize("target, limit", [
    ("znver3", 32),          # pip's PoCL 3.0 on an AVX-512 Zen 4 host: the case that broke
    ("haswell", 32),
    ("skylake-avx512", None),  # Debian's PoCL 3.1 on the same host
    ("znver4", None),
    ("sapphirerapids", None),
])
def test_pocl_vector_limit_follows_its_compile_target(target, limit):
    assert _pocl_on(target).vector_bytes_limit == limit
    # other runtimes never report one, whatever their version string says
    assert dataclasses.replace(INTEL_CPU, device_version=f"HSTR: {target}").vector_bytes_limit is None


@pytest.mark.parametrize("dtype, op", [("float32", "min"), ("float64", "sum"), ("int32", "max"), ("int8", "sum"),
                                       ("float16", "mean"), ("float32", "var"), ("float32", "argmax")])
# rows of 4096 and 375 (rows and split rows), columns: min over axis 0 of (1, 375) (the
# kernel that aborted in LLVM) and of (40, 3000)
@pytest.mark.parametrize("rows, row_len, inner", [(64, 4096, 1), (1, 375, 1), (1, 1, 375), (1, 40, 3000)])
def test_plans_keep_vectors_within_the_device_limit(dtype, op, rows, row_len, inner):
    import numpy as np

    p = plan(_pocl_on("znver3"), Problem(rows=rows, row_len=row_len, dtype=dtype, op=op, inner=inner))
    for launch in p.passes:
        widest = max(np.dtype(dtype).itemsize, np.dtype(launch.acc_dtype).itemsize)
        assert p.vec * widest <= 32, (p.vec, launch.acc_dtype)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "uint32", "bool"])
@pytest.mark.parametrize("acc", ["float32", "float16"])
@pytest.mark.parametrize("rows, row_len, inner", [(64, 4096, 1), (1, 70, 1), (1, 40, 3000)])
def test_integer_var_counts_its_64_bit_differences_against_the_limit(dtype, acc, rows, row_len, inner):
    """var/std of integers subtract the pilot in 64 bits (reduce_state.cl SHIFT_MODE 1) before
    the accumulator's type: int32 with dtype=float32 planned vec 8 (long8, 64 bytes) and
    pip's PoCL aborted in LLVM (an outside fuzz run)."""
    p = plan(_pocl_on("znver3"), Problem(rows=rows, row_len=row_len, dtype=dtype, op="var", inner=inner,
                                         acc_dtype=acc))
    assert p.vec * 8 <= 32, p.vec


def test_forced_vectors_past_the_device_limit_are_refused():
    caps = _pocl_on("znver3")
    with pytest.raises(UnsupportedOnDevice, match="vector_bytes_limit"):
        plan(caps, Problem(rows=64, row_len=4096, dtype="float32", op="min"), Force(vec=16))
    assert plan(caps, Problem(rows=64, row_len=4096, dtype="float32", op="min"), Force(vec=8)).vec == 8
    # without the limit the same force is a plan
    assert plan(POCL, Problem(rows=64, row_len=4096, dtype="float32", op="min"), Force(vec=16)).vec == 16


# llvmpipe as rusticl reports it: the device whose loop limiter counts every trip of a work-item
LLVMPIPE = DeviceCaps(vendor="mesa", name="llvmpipe (synthetic rusticl)", device_type="cpu", implementation="rusticl",
                      opencl_c_versions=("1.2", "3.0"), max_work_group_size=1024, local_mem_size=65536,
                      compute_units=2)


@pytest.mark.parametrize("caps", [LLVMPIPE, POCL, INTEL_CPU, NVIDIA], ids=lambda c: c.name)
@pytest.mark.parametrize("op", ["sum", "mean", "nansum", "norm1", "max"])
def test_sum_rescue_walk_fits_llvmpipe(caps, op):
    """Float sums of signed terms sum a task again where it came out inf or NaN (reduce_rows.cl
    RESCUE_SUM). On llvmpipe that walk takes 256 elements a loop trip (RESCUE_BLOCK: a chunk
    of at most RUSTICL_LOOP_TRIPS * 16 elements then costs at most 1/16 of the limiter's
    trips) and rows get one task per team (no grid stride adding walks up); elsewhere the
    kernel's default of 32 and the usual grid. Terms that cannot cancel (|x|) and max walk
    nothing."""
    from clreduce.plan import RUSTICL_RESCUE_BLOCK

    signed = op in ("sum", "mean", "nansum")
    llvmpipe = caps is LLVMPIPE
    for rows, k, inner in ((10**6, 32, 1), (4096, 70001, 1), (3, 10**6, 1), (2001, 9, 7)):
        p = plan(caps, Problem(rows=rows, row_len=k, dtype="float32", op=op, inner=inner))
        for launch in p.passes:
            defines = dict(launch.defines)
            walks = signed or launch.reads == "partials"
            want = str(RUSTICL_RESCUE_BLOCK) if (walks and llvmpipe and op != "max") else None
            assert defines.get("RESCUE_BLOCK") == want, (caps.name, op, rows, k, launch.entry, defines)
            if launch.entry == "reduce_rows" and want:
                teams = launch.local_size // int(defines["LANES"])
                tasks = int(defines["SPLIT"]) * rows
                assert launch.global_size // launch.local_size * teams >= tasks, (op, rows, k, launch)


@pytest.mark.parametrize("acc", ["float32", "float64"])
@pytest.mark.parametrize("count", [1, 3, 7, 16, 1000, 2001, 4097, (1 << 24) + 1, 3 ** 30, (1 << 64) - 1])
def test_mean_reciprocal_is_one_over_the_kernels_count_correctly_rounded(acc, count):
    """reduce_rows.cl mean_div's premise: mean_inv is 1 / n correctly rounded for the n the
    kernel divides by, ``(ACC_T)mean_count`` (counts past 2^24 round in float32 first)."""
    from fractions import Fraction

    from clreduce.plan import reciprocal

    dtype = np.dtype(acc)
    n = dtype.type(count)  # the kernel's conversion: round to nearest
    inv = dtype.type(reciprocal(acc, count))
    exact = 1 / Fraction(float(n))
    neighbours = [np.nextafter(inv, dtype.type(0)), inv, np.nextafter(inv, dtype.type(2))]
    errors = [abs(Fraction(float(v)) - exact) for v in neighbours]
    assert errors[1] <= min(errors), f"{acc} 1/{count}: {inv!r} is not the nearest"
    assert errors[1] <= Fraction(float(np.spacing(inv))) / 2


def test_mean_reciprocal_is_zero_for_integer_accumulators():
    from clreduce.plan import reciprocal

    assert reciprocal("int64", 7) == 0 and reciprocal("uint64", 3) == 0 and reciprocal("float32", 0) == 0
