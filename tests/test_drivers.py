"""Regressions for OpenCL driver bugs the planner works around (README, Supported devices).

Each driver test runs in a fresh process: the bugs show on the first launch after a kernel is
compiled, which an earlier test in this process would already have spent.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clreduce.caps import DeviceCaps
from clreduce.plan import Force, Problem, UnsupportedOnDevice, plan

ROOT = Path(__file__).resolve().parents[1]

# Mesa rusticl on llvmpipe, as `clreduce probe --json` reports it (Debian 12, Mesa 22.3.6).
RUSTICL_LLVMPIPE = DeviceCaps(
    vendor="other", name="llvmpipe (LLVM 15.0.6, 256 bits)", vendor_string="Mesa/X.org", platform_name="rusticl",
    device_type="cpu", device_version="OpenCL 3.0 ", driver_version="22.3.6", opencl_c_versions=("1.2", "3.0"),
    max_work_group_size=1024, local_mem_size=32768, compute_units=8, fp16=False, fp64=False)

# The first launch of reduce_state.cl's reduce_cols with VEC > 1 lost the argmax/argmin identity
# in the first 8 work-items of each llvmpipe thread: index 0 for all-negative (argmax) or
# all-positive (argmin) columns. Default plan there: wg 16, vec 16. The same data through a
# 3-D array (the middle axis) and with a K long enough for the split-over-K partials pass.
_FIRST_LAUNCH = """
import sys
import numpy as np
import clreduce
from clreduce.backends import opencl
device = opencl.all_devices()[int(sys.argv[1])]
rng = np.random.default_rng(7)
cases = [("argmax", -np.abs(rng.standard_normal((3, 70000))), 0),
         ("argmin", np.abs(rng.standard_normal((3, 70000))) + 1, 0),
         ("argmax", -np.abs(rng.standard_normal((2, 5, 4099))), 1),
         ("argmin", np.abs(rng.standard_normal((1, 4099, 40))) + 1, 1)]
bad = []
for op, x, axis in cases:
    x = x.astype(np.float32)
    got = getattr(clreduce, op)(x, axis=axis, device=device)
    wrong = int(np.sum(got != getattr(np, op)(x, axis=axis)))
    if wrong:
        bad.append(f"{op} axis={axis} of {x.shape}: {wrong} wrong indices")
print("; ".join(bad) or "ok")
"""


def test_rusticl_state_columns_run_at_vec_1():
    for op in ("argmax", "argmin", "var", "logsumexp"):
        p = plan(RUSTICL_LLVMPIPE, Problem(rows=3, row_len=3, inner=70000, dtype="float32", op=op))
        assert p.strategy.startswith("columns") and p.vec == 1 and all("-DVEC=1" in k.options for k in p.passes)
        with pytest.raises(UnsupportedOnDevice, match="rusticl"):
            plan(RUSTICL_LLVMPIPE, Problem(rows=3, row_len=3, inner=70000, dtype="float32", op=op), Force(vec=16))
    # single-value ops (reduce_rows.cl's vector accumulators) and rows are not affected
    assert plan(RUSTICL_LLVMPIPE, Problem(rows=3, row_len=3, inner=70000, dtype="float32", op="max")).vec > 1
    assert plan(RUSTICL_LLVMPIPE, Problem(rows=3, row_len=70000, dtype="float32", op="argmax")).vec > 1
    # other implementations keep their vectors
    pocl = DeviceCaps(vendor="amd", name="pthread-AMD EPYC", platform_name="Portable Computing Language",
                      device_type="cpu", compute_units=2)
    assert plan(pocl, Problem(rows=3, row_len=3, inner=70000, dtype="float32", op="argmax")).vec > 1


def test_argmax_columns_on_first_launch(found_devices):
    """On every device, in a fresh process: the first launch must be right too."""
    failures = []
    for found, proc in _fresh_process_per_device(found_devices, _FIRST_LAUNCH, 300):
        out = proc.stdout.strip().splitlines()[-1:] or [""]
        if proc.returncode != 0 or out != ["ok"]:
            failures.append(f"{found.id}: exit {proc.returncode}: {out[0] or proc.stderr[-1500:]}")
    assert not failures, "\n".join(failures)


def _fresh_process_per_device(found_devices, script: str, timeout: int, **env_extra):
    """(found device, completed process) for `script` run in a fresh interpreter per device,
    given the device's index in opencl.all_devices() as argv[1]; skips without devices."""
    from clreduce.backends import opencl

    all_devices = opencl.all_devices()
    if not found_devices:
        pytest.skip("!!! no OpenCL device")
    env = dict(os.environ, **env_extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    for found in found_devices:
        index = next(i for i, d in enumerate(all_devices) if d.int_ptr == found.device.int_ptr)
        yield found, subprocess.run([sys.executable, "-c", script, str(index)], cwd=ROOT, env=env,
                                    capture_output=True, text=True, timeout=timeout)


# Mesa's llvmpipe cuts every loop of a kernel once the back-edges of all its loops add up to
# 65535 per work-item batch (gallivm's loop limiter; clreduce/plan_rowops.py,
# LLVMPIPE_LOOP_LIMIT). Row ops on rusticl gave softmax rows of [1, 0, 0, ...] before the
# planner kept every work-item under LLVMPIPE_TRIP_BUDGET.
_TWO_LOOPS = """
__kernel void two_loops(__global const float *in, __global uint *out, const uint n) {
    float m = -INFINITY;
    uint a = 0, b = 0;
    for (uint i = 0; i < n; ++i) { m = fmax(m, in[i]); a++; }
    for (uint i = 0; i < n; ++i) { m = fmax(m, in[n - 1 - i]); b++; }
    out[get_global_id(0)] = a + b + (m > 2.0f ? 1u : 0u);
}
"""


def test_llvmpipe_runs_at_least_the_trip_budget(cl_device, cl_caps):
    """The planner's model of the driver: two loops of 40000 trips each. llvmpipe stops them
    past 65535 back-edges in all (the bug), but must run the budget the plans rely on;
    every other implementation runs all 80000."""
    import numpy as np
    import pyopencl as cl

    from clreduce.plan_rowops import LLVMPIPE_TRIP_BUDGET, llvmpipe_loop_limited

    n = 40000
    ctx = cl.Context([cl_device])
    queue = cl.CommandQueue(ctx)
    data = np.random.default_rng(1).random(n).astype(np.float32)
    src = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
    out = np.zeros(8, np.uint32)
    dst = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, out.nbytes)
    cl.Program(ctx, _TWO_LOOPS).build().two_loops(queue, (8,), (8,), src, dst, np.uint32(n))
    cl.enqueue_copy(queue, out, dst)
    if llvmpipe_loop_limited(cl_caps):
        assert np.all(out >= LLVMPIPE_TRIP_BUDGET), out
        assert np.all(out < 2 * n), f"llvmpipe ran all {2 * n} trips: its loop limiter is gone, " \
                                    "LLVMPIPE_LOOP_LIMIT's workaround may be lifted"
    else:
        assert np.all(out == 2 * n), out


def test_llvmpipe_row_plans_stay_under_the_trip_budget():
    """Every launch of every row-op plan on llvmpipe (as probed, and with the 32 work-items
    its built kernels allow): tasks per work-item x loop trips per task <= the budget."""
    import dataclasses
    import math

    from clreduce.plan_rowops import (FAMILIES, LLVMPIPE_TRIP_BUDGET, SCAN_OPS, RowForce, RowProblem, plan_row,
                                      row_trips)
    from clreduce.plan_scan import scan_tile_trips

    shapes = [(2, 100_000), (2, 10**6), (1, 10**7), (5000, 100_000), (300_000, 1000), (10**7, 7), (64, 4097)]
    for caps in (RUSTICL_LLVMPIPE, dataclasses.replace(RUSTICL_LLVMPIPE, max_work_group_size=32)):
        for op in FAMILIES:
            for rows, k in shapes:
                for force in (None, RowForce(lanes=1), RowForce(lanes=2, cache="none")):
                    p = plan_row(caps, RowProblem(op, rows, k, "float32"), force)
                    for launch in p.passes:
                        macros = dict(o[2:].split("=") for o in launch.options if o.startswith("-D"))
                        lanes = int(macros["LANES"])
                        items = p.nper if op in SCAN_OPS else 1
                        teams = launch.local_size // lanes
                        split = launch.chunk_len and -(-launch.row_len // launch.chunk_len)
                        tasks = launch.n_rows * split
                        if op in SCAN_OPS and macros["PHASE"] == "4":
                            # the walk of flagged rows: one row a work-item, SCAN_WALK_SEG
                            # elements of it a launch (chunk_len: where they start), 32 a trip
                            assert macros.get("SCAN_WALK_ROWS") == "1"
                            seg = int(macros.get("SCAN_WALK_SEG", 0)) or launch.row_len
                            tasks, teams = launch.n_rows, launch.local_size
                            trips = math.ceil(seg / 32) + 4
                        elif op in SCAN_OPS:
                            trips = math.ceil(launch.chunk_len / (lanes * items)) * scan_tile_trips(items, lanes) + 2
                        else:
                            phase = 0 if p.split == 1 else (1 if launch.writes == "partials" else 2)
                            trips = row_trips(op, p.cache, lanes, p.nper, launch.chunk_len, p.split, phase, p.sg_size)
                        per_item = math.ceil(tasks / (launch.global_size // launch.local_size * teams))
                        assert per_item * trips <= LLVMPIPE_TRIP_BUDGET, (op, rows, k, force, launch)
    # a forced split that leaves chunks too long is refused there, and runs elsewhere
    with pytest.raises(UnsupportedOnDevice, match="loop limit"):
        plan_row(RUSTICL_LLVMPIPE, RowProblem("softmax", 2, 10**6, "float32"), RowForce(split=2, lanes=1))
    pocl = DeviceCaps(vendor="amd", name="pthread-AMD EPYC", platform_name="Portable Computing Language",
                      device_type="cpu", compute_units=2)
    assert plan_row(pocl, RowProblem("softmax", 2, 10**6, "float32"), RowForce(split=2, lanes=1)).split == 2
    assert plan_row(pocl, RowProblem("softmax", 5000, 100_000, "float32")).split == 1
    assert plan_row(RUSTICL_LLVMPIPE, RowProblem("softmax", 5000, 100_000, "float32")).split > 1


def test_long_rows_past_the_llvmpipe_loop_limit(cl_device, cl_caps):
    """The rusticl failure itself, on every device: launches whose work-items would pass 65535
    loop trips unless planned around llvmpipe -- long rows with one lane each (one team per
    group, so the few rows are not split for parallelism) and many short rows per work-item
    (the grid stride) -- for one op of each family."""
    import numpy as np

    from clreduce import rowops
    from clreduce.plan_rowops import RowForce, llvmpipe_loop_limited

    rng = np.random.default_rng(10)

    def check(x, force, all_families=True):
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(1, keepdims=True))
        np.testing.assert_allclose(rowops.softmax(x, device=cl_device, force=force), e / e.sum(1, keepdims=True),
                                   rtol=1e-5, atol=1e-12, err_msg=f"softmax {x.shape} {force}")
        if not all_families:
            return
        ln = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
        np.testing.assert_allclose(rowops.layer_norm(x, device=cl_device, force=force), ln, rtol=1e-5, atol=1e-5,
                                   err_msg=f"layer_norm {x.shape} {force}")
        y, amax = rowops.absmax_scale(x, device=cl_device, force=force)
        np.testing.assert_array_equal(amax, np.abs(x).max(1), err_msg=f"absmax {x.shape} {force}")
        np.testing.assert_allclose(y, x / np.abs(x).max(1, keepdims=True), rtol=1e-6, err_msg=f"absmax {force}")

    check(rng.standard_normal((2, 100_000)).astype(np.float32), None)
    if not llvmpipe_loop_limited(cl_caps):
        return  # the narrow-group cases below are slow elsewhere and test nothing new there
    for lanes in (1, 2):
        check(rng.standard_normal((16, 40_000)).astype(np.float32),
              RowForce(lanes=lanes, cache="none", wg_size=lanes, sg_mode="local"))
    check(rng.standard_normal((700_000, 7)).astype(np.float32), RowForce(lanes=1, wg_size=1, sg_mode="local"),
          all_families=False)
    xi = rng.integers(-1000, 1000, (16, 40_000)).astype(np.int32)
    np.testing.assert_array_equal(
        rowops.cumsum(xi, axis=1, device=cl_device, force=RowForce(lanes=1, wg_size=1, sg_mode="local")),
        np.cumsum(xi, axis=1))


@pytest.mark.parametrize("op", ["softmax", "layer_norm", "moments", "quantize_int8", "cumsum", "logcumsumexp"])
def test_forced_row_variants_on_long_rows(cl_device, cl_queue, op, request):
    """Every forced variant the planner offers for rows of 70000 (past llvmpipe's loop limit
    with one or two lanes): one sampled per op by default, all with --slow."""
    import random

    import numpy as np
    from conftest import slow_enabled

    from clreduce import rowops
    from clreduce.backends import opencl_rowops
    from clreduce.plan_rowops import RowProblem, row_variants

    x = np.random.default_rng(11).standard_normal((3, 70_000)).astype(np.float32)
    x64 = x.astype(np.float64)
    variants = row_variants(opencl_rowops.runnable_caps(cl_queue), RowProblem(op, 3, 70_000, "float32"))
    assert variants
    if not slow_enabled(request.config):
        variants = random.Random(op).sample(variants, 1)
    for force in variants:
        kwargs = {} if op == "layer_norm" else {"axis": -1}
        got = getattr(rowops, op)(x, device=cl_device, force=force, **kwargs)
        if op == "softmax":
            e = np.exp(x64 - x64.max(1, keepdims=True))
            np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-12, err_msg=str(force))
        elif op == "layer_norm":
            ln = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
            np.testing.assert_allclose(got, ln, rtol=1e-5, atol=1e-5, err_msg=str(force))
        elif op == "moments":
            np.testing.assert_allclose(got[1], x64.var(1), rtol=1e-5, err_msg=str(force))
        elif op == "quantize_int8":
            np.testing.assert_allclose(got[1], np.abs(x).max(1) / 127, rtol=1e-6, err_msg=str(force))
            assert np.abs(got[0].astype(int) - np.rint(x / got[1][:, None])).max() <= 1, force
        elif op == "cumsum":
            exact = np.cumsum(x64, 1)
            bound = (np.arange(2, x.shape[1] + 2) * 2.0 ** -24) * np.cumsum(np.abs(x64), 1)
            assert np.all(np.abs(got - exact) <= bound), force
        else:
            np.testing.assert_allclose(got, np.logaddexp.accumulate(x64, 1), rtol=2e-5, atol=2e-5, err_msg=str(force))


# PoCL's clang printed "4 warnings generated." (AVX ABI notes from its own float16 builtins,
# on a host without AVX-512) to the process's stderr on the first build of a float32 cumsum:
# a user saw compiler chatter on the terminal. The build passes -w there (opencl._quiet_options).
_FIRST_BUILDS = """
import sys
import numpy as np
import clreduce
from clreduce.backends import opencl
device = opencl.all_devices()[int(sys.argv[1])]
x = np.linspace(-3, 3, 40 * 4096, dtype=np.float32).reshape(40, 4096)
np.testing.assert_allclose(clreduce.cumsum(x, axis=-1, device=device), np.cumsum(x, axis=-1), rtol=1e-4, atol=1e-3)
clreduce.softmax(x, device=device); clreduce.rms_norm(x, device=device); clreduce.mean(x, axis=0, device=device)
print("ok")
"""


def test_first_builds_print_nothing(found_devices, tmp_path):
    """A fresh process with an empty compiler cache writes nothing to stderr, on every device."""
    failures = []
    for found, proc in _fresh_process_per_device(found_devices, _FIRST_BUILDS, 600, XDG_CACHE_HOME=str(tmp_path),
                                                 PYOPENCL_NO_CACHE="1"):
        if proc.returncode != 0 or proc.stdout.strip() != "ok" or proc.stderr.strip():
            failures.append(f"{found.id}: exit {proc.returncode}, stderr: {proc.stderr[-800:]!r}")
    assert not failures, "\n".join(failures)


def test_llvmpipe_column_plans_stay_under_the_loop_limit():
    """Reductions along a strided axis on llvmpipe: every work-item's walk of K (its chunk,
    and the merge pass's partials) x the measured trips per step stays under the limit, with
    the planner's choice and with forced strategies (which did not split before)."""
    from clreduce.plan import RUSTICL_COL_NBLK, RUSTICL_LOOP_TRIPS, Force, Problem, _rusticl_col_trips, plan

    forces = [Force(), Force(strategy="cpu_blocks"), Force(strategy="rows_per_sg", sg_mode="local", vec=1),
              Force(strategy="wg_per_row"), Force(vec=16)]
    for op in ("sum", "max", "argmax", "var", "any"):
        for rows, k, inner in ((1, 20_000, 2), (300, 40_000, 2), (1, 40_000, 300), (1, 4_000_000, 2), (1, 8192, 64)):
            for force in forces:
                try:
                    p = plan(RUSTICL_LLVMPIPE, Problem(rows, k, "float32", op, inner=inner), force)
                except UnsupportedOnDevice as refused:  # vec=16 of a state op: miscompiled there
                    assert force.vec == 16 and op in ("argmax", "var"), refused
                    continue
                for launch in p.passes:
                    d = dict(launch.defines)
                    chunk = dict((name, value) for name, _, value in launch.scalars)["chunk_len"]
                    if "NBLK" in d:
                        assert int(d["NBLK"]) <= RUSTICL_COL_NBLK
                        trips = _rusticl_col_trips(type("op", (), {"kind": "scalar"}), int(d["NBLK"]), int(d["VEC"]))
                        assert chunk * trips <= RUSTICL_LOOP_TRIPS, (op, rows, k, inner, force, launch.scalars)
                    else:
                        assert chunk <= RUSTICL_LOOP_TRIPS, (op, rows, k, inner, force)


def test_long_columns_past_the_llvmpipe_loop_limit(cl_device, cl_caps):
    """The rusticl failure itself, on every device: sums of small integers (exact in float32)
    along a strided axis -- 40000 long with enough outer rows that the planner split it for
    parallelism into at most 2 chunks (rusticl, 8 compute units: (300, 40000, 2) of ones came
    back 32328 a column before the fix) -- and 17000 long under forced strategies (never split
    before; wrong from K ~ 16200)."""
    import numpy as np

    import clreduce

    rows = max(300, 32 * cl_caps.compute_units)  # parallelism asks for <= 2 chunks of 40000
    x = (np.arange(rows * 40_000 * 2) % 7).reshape(rows, 40_000, 2).astype(np.float32)
    np.testing.assert_array_equal(clreduce.sum(x, axis=1, device=cl_device), x.sum(1))
    y = (np.arange(17_000 * 64) % 5).reshape(17_000, 64).astype(np.float32)
    for force in ({"strategy": "cpu_blocks"}, {"strategy": "rows_per_sg", "sg_mode": "local", "vec": 1},
                  {"strategy": "wg_per_row"}):
        np.testing.assert_array_equal(clreduce.sum(y, axis=0, device=cl_device, force=force), y.sum(0),
                                      err_msg=str(force))
        np.testing.assert_array_equal(clreduce.max(y, axis=0, device=cl_device, force=force), y.max(0),
                                      err_msg=str(force))


def test_pocl_float16_selecting_rows_never_run_vec8(cl_device, cl_caps):
    """PoCL 3.1 segfaulted running float16 rows at vec 8 in the ops that test or select per
    element: any / all / count_nonzero (pip's), argmax / argmin / nansum / nanmax / nanmin /
    nanmean's count (Debian's, on rows of 9-15, where the planner picked vec 8 itself). A forced
    vec 8 is refused there (and runs elsewhere), and no plan of its own picks it."""
    import numpy as np

    import clreduce

    x = np.ones((300, 300), np.float16)
    x[7, 11] = 0
    x[9, 3] = np.nan
    short = [np.arange(2 * k, dtype=np.float16).reshape(2, k) % 7 for k in (9, 12, 15)]  # the rows that crashed
    for op, planned in (("any", "any"), ("all", "all"), ("count_nonzero", "count_nonzero"), ("argmax", "argmax"),
                        ("argmin", "argmin"), ("nansum", "nansum"), ("nanmax", "nanmax"), ("nanmin", "nanmin"),
                        ("nanmean", "count_notnan")):
        with np.errstate(all="ignore"):
            want = getattr(np, op)(x, axis=-1)
        # exact ops exactly; float16 nansum / nanmean to half's rounding of numpy's float16 loop
        check = np.testing.assert_array_equal if op not in ("nansum", "nanmean") else \
            functools.partial(np.testing.assert_allclose, rtol=1e-3)
        if cl_caps.implementation == "pocl":
            with pytest.raises(UnsupportedOnDevice, match="vec=8"):
                getattr(clreduce, op)(x, axis=-1, device=cl_device, force={"vec": 8})
        else:
            try:
                got = getattr(clreduce, op)(x, axis=-1, device=cl_device, force={"vec": 8})
            except UnsupportedOnDevice:
                got = want  # a forced vec this device cannot take at all
            check(got, want, err_msg=op)
        for k in (8, 9, 15, 16, 300, 4096):
            p = plan(cl_caps, Problem(64, k, "float16", planned))
            assert not (cl_caps.implementation == "pocl" and p.vec == 8), (op, k, p)
        check(getattr(clreduce, op)(x, axis=-1, device=cl_device), want, err_msg=op)
        for rows in short:
            with np.errstate(all="ignore"):
                check(getattr(clreduce, op)(rows, axis=-1, device=cl_device), getattr(np, op)(rows, axis=-1),
                      err_msg=f"{op} {rows.shape}")
