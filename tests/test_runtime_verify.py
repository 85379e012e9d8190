"""``probe --verify``: a sub-group mode that builds but answers wrong is marked bad, and the
next calls plan around it (numpy's answer again)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import clreduce

cl = pytest.importorskip("pyopencl")
from clreduce.backends import cl_fallback, cl_verify, opencl  # noqa: E402

REPO_KERNELS = Path(__file__).resolve().parent.parent / "cl_kernels"


# every test starts and ends with no built programs and no remembered bad modes
pytestmark = pytest.mark.usefixtures("fresh_fallback_state")


def test_verify_passes_on_healthy_devices(cl_device, cl_caps):
    report = cl_verify.verify_device(cl_device)
    assert report and all(r["status"] in ("ok", "not applicable") for r in report), report
    assert {r["mode"] for r in report} >= {"local"}
    assert not cl_fallback.bad_modes(cl_caps)


def test_a_miscompiling_shuffle_is_marked_bad_and_avoided(found_devices, tmp_path, monkeypatch):
    found = next((f for f in found_devices if f.caps.khr_shuffle), None)
    if found is None:
        pytest.skip("needs a device with KHR sub-group shuffles (Intel CPU runtime)")
    broken = tmp_path / "cl_kernels"
    shutil.copytree(REPO_KERNELS, broken)
    source = (broken / "reduce_rows.cl").read_text()
    needle = "w.s = shuffle_xor(v.s, m);"  # the butterfly's partner value (reduce_rows.cl)
    assert needle in source
    # builds fine, drops the partner's value: what a miscompiled shuffle looks like
    (broken / "reduce_rows.cl").write_text(source.replace(needle, "w.s = v.s;"))
    monkeypatch.setenv("CLREDUCE_KERNEL_DIR", str(broken))
    with pytest.warns(cl_fallback.SubgroupModeFallbackWarning, match="answered wrong"):
        report = cl_verify.verify_device(found.device)
    assert any(r["status"] == "wrong" and r["planned_mode"] == "shuffle_khr" for r in report)
    assert "shuffle_khr" in cl_fallback.bad_modes(found.caps)
    # prod has no built-in: it would plan the broken shuffle, now it plans around it
    x = np.random.default_rng(2).random((8, 40), dtype=np.float32) + 0.5
    problem = opencl.Problem(rows=8, row_len=40, dtype="float32", op="prod")
    launch_plan, _ = opencl.plan_for(opencl.queue_for(found.device), problem)
    assert launch_plan.sg_mode != "shuffle_khr"
    np.testing.assert_allclose(clreduce.prod(x, axis=-1, device=found.device), x.prod(axis=-1), rtol=1e-5)


def test_cli_probe_verify_exit_status(capsys):
    from clreduce.cli import main

    assert main(["probe", "--verify"]) == 0
    assert "variant runs against numpy" in capsys.readouterr().out
