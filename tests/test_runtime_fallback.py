"""A driver that cannot build a sub-group variant: the call moves down builtin -> shuffle ->
local, warns once per (device, mode) and still returns numpy's answer.

Two injections: a monkeypatched build that fails for chosen SG_MODE values (what an old
Adreno compiler does on sub_group_reduce_*), and a kernel folder (CLREDUCE_KERNEL_DIR) whose
built-in branch does not compile. Both need a device with sub-groups (the Intel CPU runtime).
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import clreduce
from clreduce.plan import Force

cl = pytest.importorskip("pyopencl")
from clreduce.backends import cl_fallback, opencl  # noqa: E402

REPO_KERNELS = Path(__file__).resolve().parent.parent / "cl_kernels"
X = np.random.default_rng(7).standard_normal((64, 4096)).astype(np.float32)
# float32 row sums of 4096 N(0,1) numbers in another order than numpy's: the error bound is
# ~ 4096 * 2^-24 * sum|x| ~ 8e-4 absolute (rows near zero make relative error meaningless)
RTOL, ATOL = 1e-4, 1e-3
# a team strategy with the sub-group mode left to the planner (on Intel's CPU runtime the
# default plan is cpu_blocks, which uses no sub-groups and so has nothing to fall back from)
TEAM = Force(strategy="sg_per_row")


@pytest.fixture
def sg_device(found_devices):
    for found in found_devices:
        if found.caps.subgroups and found.caps.subgroup_reduce_builtins and found.caps.khr_shuffle:
            return found
    pytest.skip("needs a device with sub-group reduce built-ins and KHR shuffle (Intel CPU runtime)")


# every test starts and ends with no built programs and no remembered bad modes
pytestmark = pytest.mark.usefixtures("fresh_fallback_state")


def _failing_build(real, failing_modes, calls):
    def build(ctx, device, source, options):
        mode = next((o.split("=")[1] for o in options if o.startswith("-DSG_MODE=")), None)
        calls.append(mode)
        if mode in failing_modes:
            raise opencl.KernelBuildError(f"<kernel>:1:1: error: injected compiler crash (SG_MODE={mode})\n"
                                          "second line of the log\n" + "more\n" * 20)
        return real(ctx, device, source, options)
    return build


def test_builtin_build_failure_falls_back_to_shuffle(sg_device, monkeypatch):
    calls = []
    monkeypatch.setattr(opencl, "_build_program", _failing_build(opencl._build_program, {"1"}, calls))
    assert opencl.plan_for(opencl.queue_for(sg_device.device),
                           opencl.Problem(rows=64, row_len=4096, dtype="float32", op="sum"), TEAM)  # warm the probe
    opencl.clear_caches()
    cl_fallback.forget()
    with pytest.warns(cl_fallback.SubgroupModeFallbackWarning, match="(?s)builtin.*injected compiler crash") as rec:
        got = clreduce.sum(X, axis=-1, device=sg_device.device, force=TEAM)
    np.testing.assert_allclose(got, X.sum(axis=-1), rtol=RTOL, atol=ATOL)
    assert len([w for w in rec if issubclass(w.category, cl_fallback.SubgroupModeFallbackWarning)]) == 1
    assert "1" in calls and calls[-1] == "2"  # tried built-in, then built the KHR shuffle
    assert "builtin" in cl_fallback.bad_modes(sg_device.caps)
    # remembered: another shape never tries the built-in again, and warns no more
    calls.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", cl_fallback.SubgroupModeFallbackWarning)
        got = clreduce.max(X[:, :1000], axis=-1, device=sg_device.device, force=TEAM)
    np.testing.assert_array_equal(got, X[:, :1000].max(axis=-1))
    assert "1" not in calls


def test_every_subgroup_mode_failing_ends_in_local_memory(sg_device, monkeypatch):
    calls = []
    monkeypatch.setattr(opencl, "_build_program", _failing_build(opencl._build_program, {"1", "2", "3"}, calls))
    with pytest.warns(cl_fallback.SubgroupModeFallbackWarning):
        got = clreduce.sum(X, axis=-1, device=sg_device.device, force=TEAM)
    np.testing.assert_allclose(got, X.sum(axis=-1), rtol=RTOL, atol=ATOL)
    assert calls[-1] == "0"
    assert {"builtin", "shuffle_khr"} <= cl_fallback.bad_modes(sg_device.caps)


def test_a_forced_mode_that_fails_is_an_error_with_context(sg_device, monkeypatch):
    monkeypatch.setattr(opencl, "_build_program", _failing_build(opencl._build_program, {"1"}, []))
    with pytest.raises(RuntimeError) as info:
        clreduce.sum(X, axis=-1, device=sg_device.device, force=Force(sg_mode="builtin"))
    assert isinstance(info.value, opencl.KernelBuildError)
    text = str(info.value)
    for needle in ("injected compiler crash", sg_device.caps.name.strip(), "op sum", "(64, 4096, 1)", "builtin"):
        assert needle in text


def test_kernel_folder_with_a_broken_builtin_branch(sg_device, tmp_path, monkeypatch):
    broken = tmp_path / "cl_kernels"
    shutil.copytree(REPO_KERNELS, broken)
    source = (broken / "reduce_rows.cl").read_text()
    assert "sub_group_reduce_add(" in source
    # an undeclared function is a compile error in OpenCL C: the built-in branch cannot build
    (broken / "reduce_rows.cl").write_text(source.replace("sub_group_reduce_add(", "sub_group_reduce_add_broken("))
    monkeypatch.setenv("CLREDUCE_KERNEL_DIR", str(broken))
    with pytest.warns(cl_fallback.SubgroupModeFallbackWarning, match="sub_group_reduce_add_broken"):
        got = clreduce.sum(X, axis=-1, device=sg_device.device, force=TEAM)
    np.testing.assert_allclose(got, X.sum(axis=-1), rtol=RTOL, atol=ATOL)
    assert cl_fallback.bad_modes(sg_device.caps) == {"builtin"}
