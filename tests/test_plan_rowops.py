"""The row-op planner on published device profiles (tests/data/mobile_gpus.json) and the
synthetic CPU/NVIDIA caps of test_plan.py: no device, no pyopencl."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from test_plan import ALL_CAPS, LLVMPIPE, PROFILES, required_macros

from clreduce.backends.cuda import probe as cuda_probe
from clreduce.kernels import read_source
from clreduce.plan import UnsupportedOnDevice, llvmpipe_loop_limited
from clreduce.plan_rowops import (FAMILIES, LOCAL_CAP, SCAN_OPS, STATS_ONLY, RowForce, RowProblem, local_budget, plan_row,
                                  reg_budget, row_variants)
from clreduce.plan_scan import WALK_INLINE_TASKS, scan_rescues, walks_inline

OPS = tuple(FAMILIES)
ROW_LENS = (1, 7, 64, 128, 1000, 4097, 8192, 20000, 10**6)
DTYPES = ("float32", "float16")


def _profile(prefix: str):
    return next(c for name, c in PROFILES.items() if name.startswith(prefix))


def check(caps, problem, p) -> None:
    """Every invariant the kernels and the device rely on."""
    assert p.wg_size & (p.wg_size - 1) == 0 and p.wg_size <= caps.max_work_group_size
    assert p.lanes & (p.lanes - 1) == 0 and p.wg_size % p.lanes == 0
    assert p.local_mem_bytes <= caps.local_mem_size
    if p.sg_mode == "local":
        assert p.sg_size is None
    else:
        assert caps.subgroups and p.sg_size in caps.subgroup_sizes and p.wg_size % p.sg_size == 0
    if p.sg_mode == "builtin":
        assert caps.subgroup_reduce_builtins and not 1 < p.lanes < p.sg_size
    if p.sg_mode == "shuffle_khr":
        assert caps.khr_shuffle
    if p.sg_mode == "shuffle_qcom":
        assert caps.qcom_shuffle
    acc_bytes = 8 if problem.dtype == "float64" else 4
    if p.cache == "registers":
        assert p.nper * p.lanes >= problem.row_len and p.nper <= reg_budget(caps, acc_bytes, p.wg_size)
    if p.cache == "local":
        assert p.local_len >= problem.row_len
        assert (p.wg_size // p.lanes) * p.local_len * acc_bytes <= caps.local_mem_size
    if problem.op in SCAN_OPS:
        assert p.cache == "none"
    if problem.op in STATS_ONLY:
        assert p.cache != "local"  # nothing written: two passes over registers, or one read
    if problem.op in SCAN_OPS:
        # PHASE 4 (last): rows past the float range walked again (float sums and products)
        walks = [x for x in p.passes if dict(x.defines)["PHASE"] == "4"]
        scans = p.passes[:len(p.passes) - len(walks)]
        assert p.passes[len(scans):] == tuple(walks)
        # ... or, on GPU whole-row scans, by the scanning team itself (SCAN_WALK_INLINE)
        inline = dict(p.passes[0].defines).get("SCAN_WALK_INLINE") == "1"
        assert not (walks and inline)
        assert bool(walks or inline) == scan_rescues(problem.op, problem.dtype)
        assert inline == (scan_rescues(problem.op, problem.dtype) and p.split == 1 and not p.lookback_tile
                          and caps.device_type != "cpu" and not llvmpipe_loop_limited(caps))
        assert walks_inline(caps) == (caps.device_type != "cpu" and not llvmpipe_loop_limited(caps))
        if inline:  # one bit a task of a team
            teams = p.passes[0].global_size // p.lanes
            assert -(-problem.rows // teams) <= WALK_INLINE_TASKS
        assert all(x.reads == "input" and x.writes == "output" for x in walks)
        assert scans and scans[-1].reads == "input" and scans[-1].writes == "output"
        chunk = scans[-1].chunk_len
        if not p.lookback_tile:
            assert chunk * p.split >= problem.row_len > chunk * (p.split - 1)  # no empty chunk
            assert len(scans) == (1 if p.split == 1 else 3)
        for launch in p.passes:
            assert launch.global_size % launch.local_size == 0 and launch.local_size == p.wg_size
            assert all(o.startswith("-D") or o.startswith("-cl-std=") for o in launch.options)
    if problem.op in SCAN_OPS and p.sg_mode != "local":
        assert p.lanes <= p.sg_size  # shuffle/built-in prefixes stay inside one sub-group
        if p.sg_mode == "builtin":
            assert problem.op == "cumsum" and p.lanes == p.sg_size
    defined = {name for name, _ in p.defines}
    assert required_macros(p.kernel_file) <= defined, required_macros(p.kernel_file) - defined
    options = [o for o in p.options if o.startswith("-D")]
    assert options == sorted(options)
    assert p.global_size % p.local_size == 0 and p.local_size == p.wg_size
    stds = [o for o in p.options if o.startswith("-cl-std=")]
    if p.sg_mode != "local" and caps.cl_std:
        assert stds == [f"-cl-std={caps.cl_std}"]  # sub-group built-ins need CL2.0+
    if p.sg_mode == "local":
        assert stds == []


@pytest.mark.parametrize("name", sorted(ALL_CAPS))
def test_default_plans_fit_every_device(name):
    caps = ALL_CAPS[name]
    for op in OPS:
        for k in ROW_LENS:
            for dtype in DTYPES:
                problem = RowProblem(op=op, rows=max(1, 10**6 // k), row_len=k, dtype=dtype)
                check(caps, problem, plan_row(caps, problem))


@pytest.mark.parametrize("name", sorted(ALL_CAPS))
def test_every_forced_variant_fits_every_device(name):
    caps = ALL_CAPS[name]
    for op in ("softmax", "layer_norm", "moments", "cumsum", "logcumsumexp"):
        for k in (7, 4097):
            problem = RowProblem(op=op, rows=33, row_len=k, dtype="float32")
            variants = row_variants(caps, problem)
            assert variants, "every device can run some variant"
            for force in variants:
                p = plan_row(caps, problem, force)
                check(caps, problem, p)
                assert p.cache == force.cache and p.lanes == force.lanes


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_gpu_caches_by_row_length(name):
    """Short rows stay in registers, medium rows in local memory where it fits, huge rows
    are read again; the choice never grows with shrinking budgets."""
    caps = PROFILES[name]
    short = plan_row(caps, RowProblem("softmax", 4096, 64, "float32"))
    assert short.cache == "registers"
    huge = plan_row(caps, RowProblem("softmax", 2, 10**6, "float32"))
    assert huge.cache == "none"
    for k in ROW_LENS:
        p = plan_row(caps, RowProblem("softmax", 64, k, "float32"))
        if p.cache == "local":
            assert p.local_mem_bytes <= local_budget(caps) <= LOCAL_CAP


def test_mali_register_budget_is_smaller():
    mali = _profile("Mali-G52")
    adreno = _profile("Adreno 650")
    assert reg_budget(mali, 4) < reg_budget(adreno, 4)
    k = 128 * reg_budget(mali, 4) * 2  # twice what a Mali work-group of 128 can hold in registers
    p = plan_row(mali, RowProblem("layer_norm", 64, k, "float32"))
    assert p.cache != "registers"
    assert p.local_mem_bytes <= 16 << 10  # half of Mali's 32 KiB


def test_mali_g71_uses_local_memory_reduce():
    p = plan_row(_profile("Mali-G71 "), RowProblem("softmax", 1000, 4097, "float32"))
    assert p.sg_mode == "local"


def test_short_rows_share_a_subgroup():
    caps = ALL_CAPS["Intel GPU (synthetic)"]
    p = plan_row(caps, RowProblem("softmax", 10**5, 7, "float32"))
    assert 1 < p.lanes < p.sg_size and p.sg_mode == "shuffle_khr" and p.cache == "registers"


def test_cpu_without_subgroups_gives_each_row_one_work_item():
    p = plan_row(ALL_CAPS["pthread CPU (synthetic PoCL)"], RowProblem("rms_norm", 100, 4097, "float32"))
    assert p.lanes == 1 and p.cache == "none"


# (device, op, K) -> the cache of a default plan: CPU_WALKED_SCALE_OPS (2-core AMD EPYC VM,
# float32 device arrays, ms a call, register plan / walk)
SCALE_WALK_CASES = [
    ("pthread CPU (synthetic PoCL)", "quantize_int8", 128, "none"),  # pip PoCL 193-211 / 52-57
    ("pthread CPU (synthetic PoCL)", "quantize_int8", 32, "none"),   # 226-239 / 68-74
    ("pthread CPU (synthetic PoCL)", "absmax_scale", 64, "none"),    # 83-112 / 38-54
    ("Intel(R) Xeon(R) Processor (synthetic)", "quantize_int8", 64, "none"),     # 68-76 / 33-35
    ("Intel(R) Xeon(R) Processor (synthetic)", "absmax_scale", 32, "registers"),  # its register runs: 22-29 / 42-44
    ("llvmpipe (synthetic rusticl)", "absmax_scale", 32, "registers"),          # 97-99 / 158-190
    ("llvmpipe (synthetic rusticl)", "absmax_scale", 64, "none"),               # 254-276 / 162-169
    ("llvmpipe (synthetic rusticl)", "quantize_int8", 32, "none"),              # 236-269 / 157-168
    ("pthread CPU (synthetic PoCL)", "softmax", 128, "none"),        # softmax: CPU_PASSES walks (below)
    ("pthread CPU (synthetic PoCL)", "rms_norm", 128, "none"),       # norms too: CPU_PASSES
    ("Intel(R) Xeon(R) Processor (synthetic)", "rms_norm", 32, "none"),  # Intel's short rows too
    ("Mali-G610 (Rockchip RK3588, libmali g13p0)", "quantize_int8", 128, "registers"),  # GPUs unchanged
]


@pytest.mark.parametrize("name,op,k,want", SCALE_WALK_CASES)
def test_cpu_scale_rows_are_walked_not_cached(name, op, k, want):
    """CPU runtimes that vectorise across work-items read short scale rows twice from memory
    (the core's cache) instead of caching them a row a work-item; a forced register cache is
    still honoured."""
    from test_plan import LLVMPIPE

    caps = LLVMPIPE if name == LLVMPIPE.name else ALL_CAPS[name]
    problem = RowProblem(op, 10**5, k, "float32")
    assert plan_row(caps, problem).cache == want
    assert plan_row(caps, problem, RowForce(cache="registers")).cache == "registers"


@pytest.mark.parametrize("name,op,k,force,want", [
    ("pthread CPU (synthetic PoCL)", "softmax", 128, RowForce(cache="registers"), 1),  # a row a work-item
    ("Intel(R) Xeon(R) Processor (synthetic)", "log_softmax", 1000, RowForce(cache="registers"), 1),
    ("Intel(R) Xeon(R) Processor (synthetic)", "softmax", 32, RowForce(cache="registers"), 1),  # rows of 32
    ("pthread CPU (synthetic PoCL)", "softmax", 128, None, 0),              # CPU_PASSES: a select of its own
    ("pthread CPU (synthetic PoCL)", "softmax", 100_000, None, 0),          # read from memory: no register max
    ("pthread CPU (synthetic PoCL)", "rms_norm", 128, None, 0),             # no max in a norm
    ("Mali-G610 (Rockchip RK3588, libmali g13p0)", "softmax", 128, None, 0),  # GPUs keep fmax (one instruction)
])
def test_cpu_softmax_rows_take_their_max_by_select(name, op, k, force, want):
    """SELECT_MAX: CPU softmax rows in registers take their max by compare and select
    (pip PoCL calls fmax out of line); other plans leave the define out (softmax.cl: fmax)."""
    for dtype in ("float32", "float16"):
        p = plan_row(ALL_CAPS[name], RowProblem(op, 10**5, k, dtype), force)
        assert int(dict(p.defines).get("SELECT_MAX", 0)) == want, dtype


PASSES_CPU = "pthread CPU (synthetic PoCL)"
PASSES_INTEL = "Intel(R) Xeon(R) Processor (synthetic)"


# (device, op, rows, K, dtype, force) -> softmax.cl CPU_PASSES's (work-group size, split), or
# None: another plan (benchmarks/softmax_cpu_passes_2026-11-28/)
@pytest.mark.parametrize("name,op,rows,k,dtype,force,want", [
    (PASSES_CPU, "softmax", 10**5, 128, "float32", None, (16, 1)),     # pip PoCL 62500x128: 16-20 -> 10-11 ms
    (PASSES_INTEL, "log_softmax", 10**5, 1000, "float32", None, (16, 1)),
    (PASSES_CPU, "softmax", 10**5, 7, "float64", None, (16, 1)),       # float64: vectors of double
    (PASSES_CPU, "softmax", 10**5, 4096, "float32", None, (16, 1)),    # REG_FLOATS_CPU: registers' groups
    (PASSES_CPU, "softmax", 10**5, 8192, "float32", None, (1, 1)),     # past it: a row a group (was online)
    (PASSES_INTEL, "softmax", 122, 65536, "float32", None, (1, 1)),    # 24-25 -> 6-8 ms
    (PASSES_CPU, "softmax", 1, 4194304, "float32", None, (1, 64)),     # one row: chunks of CPU_PASSES_CHUNK
    (PASSES_CPU, "log_softmax", 1, 40000, "float32", None, (1, 4)),    # two tasks a core (of 2)
    (PASSES_INTEL, "softmax", 10**5, 32, "float32", None, (16, 1)),    # Intel's rows of 32, one trip: 8.5-9.3 -> 7.1-7.9
    (PASSES_CPU, "softmax", 10**5, 32, "float32", None, (16, 1)),      # PoCL: 39-41 -> 26-28
    (PASSES_CPU, "softmax", 10**5, 128, "float16", None, (16, 1)),     # float16: each exp taken twice, no
                                                                       #   stored half term (rounded once)
    (PASSES_CPU, "softmax", 10**5, 128, "float32", RowForce(cache="registers"), None),  # forced variants stay
    (PASSES_CPU, "softmax", 10**5, 128, "float32", RowForce(cache="none"), None),
    (PASSES_CPU, "softmax", 10**5, 8192, "float32", RowForce(cache="none"), None),
    (PASSES_CPU, "softmax", 1, 4194304, "float32", RowForce(split=4), None),
    (PASSES_CPU, "rms_norm", 10**5, 128, "float32", None, (16, 1)),    # row_norm.cl too: 18-26 -> 9-16 ms
    (PASSES_CPU, "layer_norm", 10**5, 1000, "float16", None, (16, 1)),  # 52-61 -> 12-13 (half loads as bits)
    (PASSES_CPU, "moments", 10**5, 128, "float32", None, (16, 1)),     # read once already: 8-10 -> 3-5
    (PASSES_INTEL, "layer_norm", 122, 65536, "float32", None, (1, 1)),  # 26-30 -> 5-8
    (PASSES_CPU, "rms_norm", 1, 4194304, "float32", None, (1, 64)),    # chunks: PHASE 1 statistics, PHASE 2 write
    (PASSES_INTEL, "rms_norm", 10**5, 32, "float32", None, (16, 1)),   # 9.4-11.5 -> 4.2-5.9
    (PASSES_CPU, "layer_norm", 10**5, 128, "float32", RowForce(cache="none"), None),  # forced variants stay
    ("Mali-G610 (Rockchip RK3588, libmali g13p0)", "softmax", 10**5, 128, "float32", None, None),  # GPUs: never
])
def test_cpu_softmax_rows_walk_three_times(name, op, rows, k, dtype, force, want):
    """CPU runtimes that vectorise across work-items walk float32 / float64 softmax rows from
    the core's caches in vectors (softmax.cl CPU_PASSES): rows that fit a work-item in groups
    of CPU_ROW_WG, longer rows one a group, and where there are fewer rows than two a core,
    chunks of at most CPU_PASSES_CHUNK; a forced cache or split keeps its own variant."""
    p = plan_row(ALL_CAPS[name], RowProblem(op, rows, k, dtype), force)
    assert (dict(p.defines).get("CPU_PASSES") == "1") == (want is not None), p.defines
    if want is not None:
        assert (p.cache, p.lanes, p.wg_size, p.split) == ("none", 1, *want)
        assert all(dict(ps.defines).get("CPU_PASSES") == "1" for ps in p.passes)


# (device, op, dtype) -> CPU_OWN_EXP: softmax.cl's CPU_PASSES walks take cpu_vec.h's cpu_exp on
# PoCL (pip's PoCL calls exp out of line); Intel's runtime keeps its exp; float64 keeps exp
@pytest.mark.parametrize("name,op,dtype,want", [
    (PASSES_CPU, "softmax", "float32", True),
    (PASSES_CPU, "log_softmax", "float16", True),
    (PASSES_CPU, "softmax", "float64", False),    # cpu_exp is float's
    (PASSES_CPU, "rms_norm", "float32", False),     # no exp
    (PASSES_INTEL, "softmax", "float32", False),
])
def test_cpu_passes_take_their_own_exp_on_pocl(name, op, dtype, want):
    for rows, k in ((10**5, 128), (1, 4194304)):  # whole rows; split rows (PHASE 1 and 2)
        p = plan_row(ALL_CAPS[name], RowProblem(op, rows, k, dtype))
        assert all(dict(ps.defines).get("CPU_PASSES") == "1" for ps in p.passes), p.defines
        assert all((dict(ps.defines).get("CPU_OWN_EXP") == "1") == want for ps in p.passes), p.defines


# (device, op, dtype) -> CPU_OWN_MATH (cpu_own_math.h): the norms' and softmax's CPU_PASSES
# walks take isfinite, rsqrt and the rest by operators on PoCL (pip's PoCL calls them out of
# line), float64 too; Intel's runtime, GPUs and CUDA keep the built-ins
@pytest.mark.parametrize("name,op,dtype,want", [
    (PASSES_CPU, "rms_norm", "float32", True),
    (PASSES_CPU, "layer_norm", "float16", True),
    (PASSES_CPU, "moments", "float64", True),
    (PASSES_CPU, "softmax", "float32", True),
    (PASSES_CPU, "log_softmax", "float64", True),
    (PASSES_INTEL, "softmax", "float32", False),
    (PASSES_INTEL, "layer_norm", "float32", False),
    ("Mali-G610 (Rockchip RK3588, libmali g13p0)", "rms_norm", "float32", False),
    ("NVIDIA H100 (CUDA)", "layer_norm", "float32", False),
])
def test_cpu_passes_take_operator_math_on_pocl(name, op, dtype, want):
    caps = cuda_probe.caps_from_properties(cuda_probe.H100_SXM_PROPERTIES) if "CUDA" in name else ALL_CAPS[name]
    for rows, k in ((10**5, 128), (1, 4194304)):  # whole rows; split rows (every pass)
        p = plan_row(caps, RowProblem(op, rows, k, dtype))
        assert all((dict(ps.defines).get("CPU_OWN_MATH") == "1") == want for ps in p.passes), p.passes


# (device, op, rows, k, dtype) -> (work-group size, split) of row_scale.cl CPU_PASSES on PoCL, nothing forced: a work-item a
# row, short rows in groups of CPU_ROW_WG one trip each, long rows one a group (split where
# there are few), VEC > 1; Intel's runtime, llvmpipe, GPUs and forced plans keep theirs
@pytest.mark.parametrize("name,op,rows,k,dtype,want", [
    (PASSES_CPU, "absmax_scale", 250000, 32, "float32", (16, False)),
    (PASSES_CPU, "quantize_int8", 8000, 1000, "float16", (16, False)),
    (PASSES_CPU, "absmax_scale", 122, 65536, "float64", (1, False)),
    (PASSES_CPU, "quantize_int8", 1, 4194304, "float32", (1, True)),
    (PASSES_INTEL, "absmax_scale", 62500, 128, "float32", None),
    (PASSES_INTEL, "quantize_int8", 62500, 128, "float32", None),
    ("llvmpipe (synthetic rusticl)", "quantize_int8", 62500, 128, "float32", None),
    ("Mali-G610 (Rockchip RK3588, libmali g13p0)", "absmax_scale", 62500, 128, "float32", None),
])
def test_scale_rows_walked_in_vectors_on_pocl(name, op, rows, k, dtype, want):
    caps = LLVMPIPE if name.startswith("llvmpipe") else ALL_CAPS[name]
    p = plan_row(caps, RowProblem(op, rows, k, dtype))
    passes = [dict(ps.defines).get("CPU_PASSES") == "1" for ps in p.passes]
    assert all(passes) if want else not any(passes), p.passes
    if want:
        wg, split = want
        assert (p.cache, p.lanes, p.wg_size) == ("none", 1, wg) and p.vec > 1
        assert (p.split > 1) == split, p.split
        assert all(dict(ps.defines).get("CPU_OWN_MATH") == "1" for ps in p.passes)
        # a forced plan keeps its own variant
        forced = plan_row(caps, RowProblem(op, rows, k, dtype), RowForce(cache="none"))
        assert not any(dict(ps.defines).get("CPU_PASSES") == "1" for ps in forced.passes)


def _scan_test_caps(name: str):
    """A profile of ALL_CAPS by name, or one of the scan tests' devices that it lacks."""
    more = {"NVIDIA H100 (CUDA)": lambda: cuda_probe.caps_from_properties(cuda_probe.H100_SXM_PROPERTIES),
            "llvmpipe (synthetic rusticl)": lambda: LLVMPIPE, "pip PoCL (znver3)": lambda: _POCL_ZNVER3}
    return more[name]() if name in more else ALL_CAPS[name]


# (device, dtype) -> row_scan.cl CPU_OWN_EXP: logcumsumexp's float32 lanes take cpu_vec.h's
# cpu_exp and cpu_log on PoCL (pip's PoCL calls exp and log out of line) and on rusticl's
# llvmpipe, every pass of a split row included; Intel's runtime, GPUs, CUDA and float64 keep
# the built-ins
@pytest.mark.parametrize("name,dtype,want", [
    (PASSES_CPU, "float32", True),
    (PASSES_CPU, "float16", True),     # float accumulators
    ("pip PoCL (znver3)", "float32", True),   # ITEMS 8: 32-byte vectors
    (PASSES_CPU, "float64", False),    # cpu_exp / cpu_log are float's
    (PASSES_INTEL, "float32", False),
    ("llvmpipe (synthetic rusticl)", "float32", True),
    ("Mali-G610 (Rockchip RK3588, libmali g13p0)", "float32", False),
    ("NVIDIA H100 (CUDA)", "float32", False),
])
def test_logcumsumexp_lanes_take_their_own_exp_and_log_on_pocl_and_llvmpipe(name, dtype, want):
    caps = _scan_test_caps(name)
    for rows, k in ((10**5, 128), (1, 4194304)):  # whole rows; split rows (PHASE 1, carries, PHASE 0)
        p = plan_row(caps, RowProblem("logcumsumexp", rows, k, dtype))
        assert all((dict(ps.defines).get("CPU_OWN_EXP") == "1") == want for ps in p.passes), p.passes
    # cumsum / cumprod have no exp or log
    for op in ("cumsum", "cumprod"):
        assert "CPU_OWN_EXP" not in dict(plan_row(caps, RowProblem(op, 100, 128, "float32")).defines)


# (device, op, dtype) -> row_scan.cl SCAN_OWN_ACCESS: the lanes' float and integer accesses as
# element loops on PoCL (vloadn / vstoren are calls there), every pass; not where CPU_OWN_EXP
# already spells them so, nor on other runtimes
@pytest.mark.parametrize("name,op,dtype,want", [
    (PASSES_CPU, "cumsum", "float32", True),
    ("pip PoCL (znver3)", "cumsum", "int32", True),
    (PASSES_CPU, "cumprod", "float64", True),
    (PASSES_CPU, "cumsum", "float16", True),           # the macro is set; the kernel keeps vload_halfn
    (PASSES_CPU, "logcumsumexp", "float32", False),    # CPU_OWN_EXP instead
    (PASSES_CPU, "logcumsumexp", "float64", True),     # no CPU_OWN_EXP for float64
    (PASSES_INTEL, "cumsum", "float32", False),
    ("llvmpipe (synthetic rusticl)", "cumsum", "float32", False),
    ("NVIDIA H100 (CUDA)", "cumsum", "float32", False),
])
def test_pocl_scans_spell_their_accesses_as_loops(name, op, dtype, want):
    caps = _scan_test_caps(name)
    for rows, k in ((10**5, 128), (1, 4194304)):  # whole rows; split rows (PHASE 1, carries, PHASE 0, walk)
        p = plan_row(caps, RowProblem(op, rows, k, dtype))
        assert all((dict(ps.defines).get("SCAN_OWN_ACCESS") == "1") == want for ps in p.passes), p.passes


# (device, op, dtype) -> row_scan.cl SCAN_UNROLL and the lane's elements: a lane's loops
# unrolled by pragma on PoCL, in runs of at most 32 bytes (both PoCLs kept them as loops over a
# stack array: float32 cumsum 2-2.5x slower; Debian's 64-byte runs unrolled became one 16-long
# chain, slower than the loop), every pass; other runtimes keep their loops and widths
@pytest.mark.parametrize("name,op,dtype,want,items", [
    ("pip PoCL (znver3)", "cumsum", "float32", True, 8),
    (PASSES_CPU, "cumsum", "float32", True, 8),        # 64-byte vectors (Debian's skylake-avx512): 32
    (PASSES_CPU, "cumprod", "int64", True, 4),
    (PASSES_CPU, "cumsum", "int32", True, 4),          # int64 sums
    (PASSES_CPU, "cumsum", "float16", True, 8),        # float accumulators
    (PASSES_CPU, "logcumsumexp", "float64", False, 8),   # an exp and a log an element: 30 % slower so
    (PASSES_CPU, "logcumsumexp", "float32", False, 16),  # CPU_OWN_EXP's vectors instead, full width
    (PASSES_INTEL, "cumsum", "float32", False, 16),
    ("llvmpipe (synthetic rusticl)", "cumsum", "float32", False, None),
    ("NVIDIA H100 (CUDA)", "cumsum", "float32", False, None),
])
def test_pocl_scans_unroll_their_lanes(name, op, dtype, want, items):
    caps = _scan_test_caps(name)
    for rows, k in ((10**5, 128), (1, 4194304)):  # whole rows; split rows (PHASE 1, carries, PHASE 0, walk)
        p = plan_row(caps, RowProblem(op, rows, k, dtype))
        assert all((dict(ps.defines).get("SCAN_UNROLL") == "1") == want for ps in p.passes), p.passes
        if items is not None:
            assert int(dict(p.passes[0].defines)["ITEMS"]) == items, p.passes[0].defines


# (device, op, dtype) -> row_scan.cl INTEL_VEC_LEN_1: Intel's CPU runtime (where it lists
# cl_intel_vec_len_hint) keeps its vectoriser off one-lane sums and products, every pass;
# logcumsumexp (its exp and log gain from it) and other runtimes keep theirs
@pytest.mark.parametrize("name,op,dtype,hint,want", [
    (PASSES_INTEL, "cumsum", "float32", True, True),
    (PASSES_INTEL, "cumprod", "float64", True, True),
    (PASSES_INTEL, "cumsum", "int8", True, True),
    (PASSES_INTEL, "logcumsumexp", "float32", True, False),
    (PASSES_INTEL, "cumsum", "float32", False, False),      # the extension not listed
    (PASSES_CPU, "cumsum", "float32", True, False),         # PoCL
])
def test_intel_scans_ask_not_to_be_vectorised_across_work_items(name, op, dtype, hint, want):
    caps = ALL_CAPS[name]
    exts = tuple(e for e in caps.extensions if e != "cl_intel_vec_len_hint")
    caps = dataclasses.replace(caps, extensions=exts + (("cl_intel_vec_len_hint",) if hint else ()))
    for rows, k in ((10**5, 128), (1, 4194304)):  # whole rows; split rows
        p = plan_row(caps, RowProblem(op, rows, k, dtype))
        assert all((dict(ps.defines).get("INTEL_VEC_LEN_1") == "1") == want for ps in p.passes), p.passes


def test_intel_scans_keep_the_vectoriser_where_the_hint_would_not_build(monkeypatch):
    """Intel's runtime refuses intel_vec_len_hint beside intel_reqd_sub_group_size (forced
    sub-group plans) and under CL_CONFIG_CPU_VECTORIZER_MODE=4/8/16 (the caller's width)."""
    caps = ALL_CAPS[PASSES_INTEL]
    caps = dataclasses.replace(caps, extensions=caps.extensions + ("cl_intel_vec_len_hint",))
    problem = RowProblem("cumsum", 1000, 128, "float32")
    assert dict(plan_row(caps, problem).defines).get("INTEL_VEC_LEN_1") == "1"
    forced = plan_row(caps, problem, RowForce(sg_mode="shuffle", sg_size=caps.subgroup_sizes[0]))
    assert "INTEL_VEC_LEN_1" not in dict(forced.defines)
    for mode, hint in (("8", False), ("16", False), ("1", True), ("0", True)):
        monkeypatch.setenv("CL_CONFIG_CPU_VECTORIZER_MODE", mode)
        assert (dict(plan_row(caps, problem).defines).get("INTEL_VEC_LEN_1") == "1") == hint, mode


# (device, op, rows, K, dtype) -> groups of the launch: one trip a work-item (a group for every
# CPU_ROW_WG rows) where CPU_PASSES walks whole rows of at most CPU_ONE_TRIP_ROW_BYTES, else
# plan.py's cap of 32 groups a core and a grid stride
@pytest.mark.parametrize("name,op,rows,k,dtype,groups", [
    (PASSES_CPU, "softmax", 250_000, 32, "float32", 15_625),    # pip PoCL: 26-30 -> 9 ms
    (PASSES_CPU, "rms_norm", 62_500, 128, "float32", 3_907),    # 6-7 -> 3-4
    (PASSES_CPU, "layer_norm", 1_000, 2048, "float16", 63),      # 4 KB rows: still one trip
    (PASSES_CPU, "softmax", 1_953, 4096, "float32", None),       # 16 KB rows: level to 10 % slower
    (PASSES_CPU, "softmax", 1, 4_194_304, "float32", None),      # split rows
    (PASSES_INTEL, "softmax", 250_000, 32, "float32", 15_625),   # Intel's rows of 32 too
    (PASSES_INTEL, "moments", 62_500, 128, "float32", 3_907),
    # scans (plan_scan.SCAN_CPU_ONE_TRIP_LEN): one-lane rows of up to 1024 elements
    (PASSES_CPU, "cumsum", 250_000, 32, "float32", 15_625),     # pip PoCL 15-16 -> 5 ms
    (PASSES_INTEL, "cumsum", 125_000, 64, "int32", 7_813),      # Intel 14-15 -> 8 (64 -> 7.8)
    (PASSES_CPU, "logcumsumexp", 8_000, 1000, "float32", 500),
    (PASSES_CPU, "cumprod", 2_000, 4096, "float32", None),       # rows of 4096: level, the stride kept
])
def test_cpu_short_walked_rows_take_one_trip(name, op, rows, k, dtype, groups):
    caps = ALL_CAPS[name]
    p = plan_row(caps, RowProblem(op, rows, k, dtype))
    capped = min(-(-rows * p.split // (p.wg_size // p.lanes)), caps.compute_units * 32)
    assert p.passes[0].global_size // p.wg_size == (capped if groups is None else groups), p


def test_cpu_passes_only_where_the_kernel_takes_them():
    """softmax.cl and row_norm.cl refuse CPU_PASSES (#error) unless LANES 1, CACHE 2, VEC > 1
    and the output's dtype the input's (row_norm.cl: and neither FLAT_WRITE nor PARAM_RUNS);
    every default plan on every profile keeps to that, and llvmpipe, GPUs and CUDA never get
    the define (it uses OpenCL vector types)."""
    from test_plan import LLVMPIPE

    from clreduce.backends.cuda import probe as cuda_probe

    cuda = {name: cuda_probe.caps_from_properties(getattr(cuda_probe, name))
            for name in ("H100_SXM_PROPERTIES", "H200_PROPERTIES", "T4_PROPERTIES")}
    seen = 0
    for name, caps in {**ALL_CAPS, LLVMPIPE.name: LLVMPIPE, **cuda}.items():
        problems = [(op, {}) for op in ("softmax", "log_softmax", "moments")] + [
            (op, dict(weight=True, bias=op == "layer_norm", params_half=half))
            for op in ("rms_norm", "layer_norm") for half in (False, True)]
        for op, params in problems:
            for k in ROW_LENS:
                for dtype in ("float32", "float16", "float64"):
                    try:
                        p = plan_row(caps, RowProblem(op, 1000, k, dtype, **{
                            key: value and (key != "params_half" or dtype == "float16") for key, value in
                            params.items()}))
                    except UnsupportedOnDevice:
                        continue
                    for defines in map(dict, (ps.defines for ps in p.passes)):
                        if defines.get("CPU_PASSES") == "1":
                            seen += 1
                            assert "FLAT_WRITE" not in defines and "PARAM_RUNS" not in defines, (name, op, k)
                    defines = dict(p.defines)
                    if defines.get("CPU_PASSES") != "1":
                        continue
                    assert caps.device_type == "cpu" and caps.backend == "opencl", name
                    assert not llvmpipe_loop_limited(caps), name
                    assert (defines["LANES"], defines["CACHE"]) == ("1", "2"), (name, op, k, dtype)
                    assert defines["IN_HALF"] == defines["OUT_HALF"], (name, op, k, dtype)
                    assert int(defines["VEC"]) > 1
    assert seen > 0


@pytest.mark.parametrize("fields, match", [
    ({"cache": "registers"}, "registers"),  # the planner: a row of 10**6 fits no registers
    ({"cache": "bogus"}, "unknown cache"),  # the rest: RowForce itself, when built
    ({"lanes": 3}, "power of two"),
    ({"wg_size": 0}, "power of two"),
    ({"split": 0}, "positive int"),
    ({"vec": 32}, "1, 2, 4, 8 or 16"),
    ({"sg_mode": "warp"}, "unknown sg_mode"),
])
def test_impossible_forces_raise(fields, match):
    caps = _profile("Mali-G52")
    with pytest.raises((UnsupportedOnDevice, ValueError), match=match):
        plan_row(caps, RowProblem("softmax", 4, 10**6, "float32"), RowForce(**fields))


@pytest.mark.parametrize("fields", [{"lanes": 2.0}, {"sg_size": True}, {"lookback": "yes"}])
def test_row_force_field_types(fields):
    with pytest.raises(TypeError):
        RowForce(**fields)


def test_moments_keep_short_rows_in_gpu_registers_never_in_local_memory():
    """moments of rows that fit a GPU's registers take two passes over them (exact:
    sum((d - mean)^2)); CPUs and longer rows read the row once; local memory would only add a
    copy."""
    caps = ALL_CAPS["Intel GPU (synthetic)"]
    assert plan_row(caps, RowProblem("moments", 4, 100, "float32")).cache == "registers"
    cpu = ALL_CAPS[next(n for n in ALL_CAPS if ALL_CAPS[n].device_type == "cpu")]
    assert plan_row(cpu, RowProblem("moments", 4, 100, "float32")).cache == "none"  # CPUs: vector runs, read once
    assert plan_row(caps, RowProblem("moments", 4, 10**6, "float32")).cache == "none"
    with pytest.raises(UnsupportedOnDevice, match="writes no row"):
        plan_row(caps, RowProblem("moments", 4, 100, "float32"), RowForce(cache="local"))


def test_float64_needs_fp64():
    caps = dataclasses.replace(ALL_CAPS["Intel GPU (synthetic)"], fp64=False)
    with pytest.raises(UnsupportedOnDevice, match="fp64"):
        plan_row(caps, RowProblem("softmax", 4, 100, "float64"))


def test_non_float_problem_is_a_type_error():
    with pytest.raises(TypeError):
        RowProblem("softmax", 4, 100, "int32")


def test_kernel_files_share_one_copy_of_the_row_machinery(tmp_path):
    """softmax.cl, row_norm.cl and row_scale.cl include row_common.h: one team reduce, spliced
    into each program's text, so the source hash follows the shared file."""
    import shutil

    from clreduce.kernels import _read, _read_source, kernel_dirs, source_hash

    common = read_source("row_common.h")
    assert "inline ACC_T team_reduce(" in common
    for name in ("softmax.cl", "row_norm.cl", "row_scale.cl"):
        raw = kernel_dirs()[-1].joinpath(name).read_text()
        assert '#include "row_common.h"' in raw and "team_reduce(ACC_T v" not in raw, name
        text = read_source(name)
        assert text.count("inline ACC_T team_reduce(") == 1 and not re.search(r"^\s*#\s*include", text, re.M), name
        assert read_source(name, "cuda").count("inline ACC_T team_reduce(") == 1, name
    # a copy of the folder with a changed row_common.h gives another program text and hash
    copy = tmp_path / "cl_kernels"
    shutil.copytree(kernel_dirs()[-1], copy)
    (copy / "row_common.h").write_text((copy / "row_common.h").read_text() + "\n/* changed */\n")
    before = _read_source("softmax.cl", "opencl", tuple(kernel_dirs()))
    after = _read_source("softmax.cl", "opencl", (copy,))
    assert "/* changed */" in after and source_hash(after) != source_hash(before)
    _read.cache_clear()
    _read_source.cache_clear()


def test_kernel_include_cycle_is_an_error(tmp_path):
    from clreduce.kernels import _read, _read_source

    (tmp_path / "a.cl").write_text('#include "b.h"\n')
    (tmp_path / "b.h").write_text('#include "a.cl"\n')
    (tmp_path / "cl_dialect_opencl.h").write_text("")
    with pytest.raises(ValueError, match="cycle"):
        _read_source("a.cl", "opencl", (tmp_path,))
    _read.cache_clear()
    _read_source.cache_clear()


def test_scan_dtypes_follow_numpy():
    from clreduce.plan_rowops import out_dtype_of

    import numpy as np

    for dtype in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32"):
        assert out_dtype_of("cumsum", dtype) == np.cumsum(np.zeros(2, dtype)).dtype.name
        assert out_dtype_of("cumprod", dtype) == np.cumprod(np.zeros(2, dtype)).dtype.name
    with pytest.raises(TypeError):
        RowProblem("logcumsumexp", 2, 2, "int32")


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_gpu_scans_use_subgroups_where_present(name):
    caps = PROFILES[name]
    p = plan_row(caps, RowProblem("cumsum", 1000, 4096, "int32"))
    assert p.acc_dtype == "int64" and p.out_dtype == "int64"
    if caps.subgroups and caps.subgroup_sizes and (caps.khr_shuffle or caps.qcom_shuffle or caps.subgroup_reduce_builtins):
        assert p.sg_mode != "local" and p.lanes <= p.sg_size
    else:
        assert p.sg_mode == "local"


@pytest.mark.parametrize("name", sorted(ALL_CAPS))
def test_few_long_rows_scan_over_several_groups(name):
    caps = ALL_CAPS[name]
    p = plan_row(caps, RowProblem("cumsum", 1, 10**6, "float32"))
    # chunk totals, their scan, the chunks; then the flagged rows walked (float sums)
    assert p.split > 1 and [x.writes for x in p.passes] == ["partials", "carries", "output", "output"]
    assert [dict(x.defines)["PHASE"] for x in p.passes] == ["1", "0", "0", "4"]
    many = plan_row(caps, RowProblem("cumsum", 10**5, 100, "float32"))
    assert many.split == 1


@pytest.mark.parametrize("name", sorted(ALL_CAPS))
@pytest.mark.parametrize("op", ["softmax", "layer_norm", "moments", "quantize_int8"])
def test_few_long_rows_split_into_two_launches(name, op):
    """(2, 10**6): chunk partials, then the rows from them; many short rows stay one launch."""
    caps = ALL_CAPS[name]
    p = plan_row(caps, RowProblem(op, 2, 10**6, "float32"))
    assert p.split > 1 and p.cache == "none" and [x.writes for x in p.passes] == ["partials", "output"]
    assert [dict(pa.options and [o[2:].split("=") for o in pa.options if o.startswith("-D")])["PHASE"]
            for pa in p.passes] == ["1", "2"]
    chunk = p.scalars[2][2]
    assert (p.split - 1) * chunk < 10**6 <= p.split * chunk  # no empty chunk
    assert plan_row(caps, RowProblem(op, 10**5, 100, "float32")).split == 1


def test_forced_split_needs_an_uncached_row():
    caps = ALL_CAPS["Intel GPU (synthetic)"]
    p = plan_row(caps, RowProblem("softmax", 4, 100, "float32"), RowForce(split=3, cache="none"))
    assert p.split == 3 and p.scalars[2][2] == 34
    with pytest.raises(UnsupportedOnDevice, match="split"):
        plan_row(caps, RowProblem("softmax", 4, 100, "float32"), RowForce(split=2, cache="registers"))
    with pytest.raises(ValueError, match="split"):
        plan_row(caps, RowProblem("softmax", 4, 100, "float32"), RowForce(split=101))


# ---- vectors no wider than the compile target's registers (DeviceCaps.vector_bytes_limit) ----
# pip's PoCL 3.0 compiles for "znver3" on an AVX-512 Zen 4 host: 512-bit vectors through its
# builtins abort in LLVM or come back from PoCL's kernel cache as a program without kernels.
_POCL_ZNVER3 = dataclasses.replace(
    ALL_CAPS["pthread CPU (synthetic PoCL)"],
    device_version="OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3")


@pytest.mark.parametrize("op", ["softmax", "rms_norm", "layer_norm", "moments", "absmax_scale", "cumsum",
                                "logcumsumexp"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("k", [64, 1000, 65536])  # register rows (CPU_ROW_OPS), walked rows, long rows
def test_row_plans_keep_vectors_within_the_device_limit(op, dtype, k):
    from clreduce.plan_scan import plan_scan

    problem = RowProblem(op=op, rows=64, row_len=k, dtype=dtype)
    planner = plan_scan if op in SCAN_OPS else plan_row
    p = planner(_POCL_ZNVER3, problem)
    math_bytes = max(np.dtype(dtype).itemsize, 4)  # row math runs in float32 or wider
    width = p.nper if op in SCAN_OPS else p.vec  # a scan lane loads ITEMS (nper) at once
    assert width * math_bytes <= 32, (op, dtype, k, width)
    # the same problem without the limit may use 64-byte vectors: the limit is what narrows them
    unlimited = planner(dataclasses.replace(_POCL_ZNVER3, device_version="OpenCL 3.0 PoCL"), problem)
    assert (unlimited.nper if op in SCAN_OPS else unlimited.vec) >= width


def test_forced_row_vectors_past_the_device_limit_are_refused():
    with pytest.raises(UnsupportedOnDevice, match="vector_bytes_limit"):
        plan_row(_POCL_ZNVER3, RowProblem("softmax", 64, 1024, "float32"), RowForce(cache="none", vec=16))
    # 8 float32 elements (32 bytes) fit
    assert plan_row(_POCL_ZNVER3, RowProblem("softmax", 64, 1024, "float32"), RowForce(cache="none", vec=8)).vec == 8


# (caps, op, rows, k, dtype) -> row_scan.cl SCAN_PREFETCH: CUDA row scans whose task runs at
# least SCAN_PREFETCH_MIN_TILES tiles load the next tile while they scan (a warp a row of 65536:
# 512 tiles); rows of a few tiles, the look-back and OpenCL plans do not
@pytest.mark.parametrize("name,op,rows,k,dtype,want", [
    ("NVIDIA H200 (CUDA)", "cumsum", 4096, 65536, "float32", True),
    ("NVIDIA H200 (CUDA)", "logcumsumexp", 4096, 65536, "float16", True),
    ("NVIDIA H100 (CUDA)", "cumprod", 4096, 65536, "float32", True),
    ("NVIDIA H200 (CUDA)", "cumsum", 65536, 4096, "float32", False),    # 32 tiles a row
    ("NVIDIA H200 (CUDA)", "cumsum", 442368, 128, "float32", False),    # one tile a row
    ("NVIDIA H200 (CUDA)", "cumsum", 1, 268435456, "float32", False),   # the look-back
    (PASSES_INTEL, "cumsum", 4096, 65536, "float32", False),
])
def test_long_cuda_row_scans_load_the_next_tile_ahead(name, op, rows, k, dtype, want):
    props = {"NVIDIA H200 (CUDA)": cuda_probe.H200_PROPERTIES, "NVIDIA H100 (CUDA)": cuda_probe.H100_SXM_PROPERTIES}
    caps = cuda_probe.caps_from_properties(props[name]) if name in props else ALL_CAPS[name]
    p = plan_row(caps, RowProblem(op, rows, k, dtype))
    assert any(dict(ps.defines).get("SCAN_PREFETCH") == "1" for ps in p.passes) == want, p.passes
