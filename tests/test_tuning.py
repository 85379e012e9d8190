"""The tune cache and the tuner: winners are stored atomically, keyed by device and
sources, used by later calls of the same bucket, ignored when forced, disabled, stale or
corrupt, and never able to make a call fail or answer wrong."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest

from clreduce import tuning
from clreduce.caps import DeviceCaps
from clreduce.plan import Force, Problem

CAPS = DeviceCaps(name="Mali-G52 (synthetic)", vendor="arm", platform_name="ARM Platform",
                  driver_version="v1.r40p0", device_type="gpu")


@pytest.fixture
def tune_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CLREDUCE_TUNE_DIR", str(tmp_path))
    monkeypatch.delenv("CLREDUCE_TUNE", raising=False)
    tuning._forget()
    yield tmp_path
    tuning._forget()


@pytest.mark.parametrize("a, b, same", [
    (Problem(rows=4096, row_len=1000, dtype="float32", op="mean"),
     Problem(rows=5000, row_len=1023, dtype="float32", op="mean"), True),    # same power-of-two buckets
    (Problem(rows=4096, row_len=1000, dtype="float32", op="mean"),
     Problem(rows=4096, row_len=1024, dtype="float32", op="mean"), False),   # K crosses a bucket
    (Problem(rows=4096, row_len=1000, dtype="float32", op="mean"),
     Problem(rows=4096, row_len=1000, dtype="float16", op="mean"), False),   # dtype
    (Problem(rows=4096, row_len=1000, dtype="float32", op="mean"),
     Problem(rows=4096, row_len=1000, dtype="float32", op="mean", inner=8), False),  # strided layout
])
def test_bucket_key(a, b, same):
    assert (tuning.bucket_key(a) == tuning.bucket_key(b)) is same


def test_round_trip_and_atomic_file(tune_dir):
    problem = Problem(rows=100, row_len=300, dtype="float32", op="sum")
    cache = tuning.TuneCache(CAPS)
    cache.put(problem, Force(vec=4, wg_size=64), gbps=10.0, default_gbps=8.0, plan="p")
    path = cache.save()
    assert path.parent == tune_dir and not list(tune_dir.glob(".tune-*"))  # no temporary left behind
    data = json.loads(path.read_text())
    assert data["fingerprint"]["name"] == CAPS.name and data["sources"] == tuning.sources_hash()
    assert tuning.tuned_force(CAPS, problem, None) == Force(vec=4, wg_size=64)
    assert tuning.tuned_force(CAPS, problem, Force()) == Force(vec=4, wg_size=64)


def test_forced_disabled_other_device_and_other_bucket_ignore_the_winner(tune_dir, monkeypatch):
    problem = Problem(rows=100, row_len=300, dtype="float32", op="sum")
    cache = tuning.TuneCache(CAPS)
    cache.put(problem, Force(vec=4))
    cache.save()
    assert tuning.tuned_force(CAPS, problem, Force(sg_mode="local")) == Force(sg_mode="local")
    other = dataclasses.replace(CAPS, driver_version="v1.r41p0")  # a driver update re-tunes
    assert tuning.tuned_force(other, problem, None) is None
    assert tuning.tuned_force(CAPS, dataclasses.replace(problem, row_len=3000), None) is None
    monkeypatch.setenv("CLREDUCE_TUNE", "0")
    assert tuning.tuned_force(CAPS, problem, None) is None
    monkeypatch.setenv("CLREDUCE_TUNE", "1")
    with tuning.suspended():
        assert tuning.tuned_force(CAPS, problem, None) is None
    assert tuning.tuned_force(CAPS, problem, None) == Force(vec=4)


@pytest.mark.parametrize("text", ["{not json", '{"entries": []}', '{"entries": {"k": {"force": {"bogus": 1}}}}'])
def test_corrupt_file_is_ignored_with_a_warning_and_rewritten(tune_dir, text):
    path = tune_dir / f"tune-{tuning.fingerprint_id(CAPS)}.json"
    path.write_text(text)
    problem = Problem(rows=100, row_len=300, dtype="float32", op="sum")
    with pytest.warns(tuning.TuneCacheWarning, match="corrupt"):
        assert tuning.tuned_force(CAPS, problem, None) is None
    cache = tuning.TuneCache.__new__(tuning.TuneCache)  # a fresh, empty cache for the same device
    cache.caps, cache.path, cache.entries, cache.stale_reason = CAPS, path, {}, None
    cache.put(problem, Force(vec=2))
    cache.save()
    assert tuning.tuned_force(CAPS, problem, None) == Force(vec=2)


def test_stale_file_from_other_kernels_is_ignored(tune_dir):
    problem = Problem(rows=100, row_len=300, dtype="float32", op="sum")
    cache = tuning.TuneCache(CAPS)
    cache.put(problem, Force(vec=4))
    path = cache.save()
    data = json.loads(path.read_text())
    data["sources"] = "0" * 16
    path.write_text(json.dumps(data))
    tuning._forget()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # stale is normal after an upgrade: no warning
        assert tuning.tuned_force(CAPS, problem, None) is None
    assert tuning.show(tune_dir)[0]["current"] is False
    assert tuning.clear(tune_dir) == [path] and not path.exists()


# ---- on a device ----------------------------------------------------------------------------

def _queue(cl_device):
    from clreduce.backends import opencl

    return opencl.queue_for(cl_device)


def test_public_call_uses_a_stored_winner(cl_device, tune_dir):
    import clreduce
    from clreduce.backends import opencl

    queue = _queue(cl_device)
    problem = Problem(rows=64, row_len=1000, dtype="float32", op="sum")
    default_plan, _ = opencl.plan_for(queue, problem)
    winner = Force(vec=1 if default_plan.vec != 1 else 2, strategy="rows_per_sg", sg_mode="local")
    cache = tuning.TuneCache(opencl.caps_of(cl_device))
    cache.put(problem, winner)
    cache.save()
    tuned_plan, _ = opencl.plan_for(queue, problem)
    assert tuned_plan.vec == winner.vec and tuned_plan.sg_mode == "local"
    x = np.random.default_rng(0).standard_normal((64, 1000), dtype=np.float32)
    np.testing.assert_allclose(clreduce.sum(x, axis=-1, queue=queue), x.astype(np.float64).sum(-1), rtol=1e-4, atol=1e-4)


def test_a_winner_that_no_longer_plans_falls_back_with_a_warning(cl_device, tune_dir):
    import clreduce
    from clreduce.backends import opencl

    queue = _queue(cl_device)
    problem = Problem(rows=32, row_len=777, dtype="float32", op="max")
    cache = tuning.TuneCache(opencl.caps_of(cl_device))
    cache.put(problem, Force(sg_mode="builtin", sg_size=1024))  # no CPU device has width 1024
    cache.save()
    x = np.random.default_rng(1).standard_normal((32, 777), dtype=np.float32)
    with pytest.warns(RuntimeWarning, match="re-run `clreduce tune`"):
        got = clreduce.max(x, axis=-1, queue=queue)
    np.testing.assert_array_equal(got, x.max(-1))


def test_tune_finds_a_right_winner_and_stores_it(cl_device, tune_dir):
    from clreduce import tuner
    from clreduce.backends import opencl

    problem = Problem(rows=256, row_len=100, dtype="float32", op="mean")
    lines = []
    (result,) = tuner.tune(cl_device, [problem], runs=1, log=lines.append, stream=None)
    assert result["gbps"] >= (result["default_gbps"] or 0)  # the default is a candidate
    assert any("tune file:" in line for line in lines)
    stored = tuning.TuneCache(opencl.caps_of(cl_device)).winner(problem)
    assert stored == (result["force"] if any(dataclasses.astuple(result["force"])) else None)


def _timed_by(monkeypatch, fn):
    """The tuner's OpenCL timings replaced: fn(prepared, call number) -> seconds."""
    from clreduce import tuner

    calls = []

    def seconds(self, prepared):
        calls.append(prepared)
        return fn(prepared, len(calls))

    monkeypatch.setattr(tuner._OpenCLRunner, "seconds", seconds)
    return calls


def test_a_search_win_from_the_warm_up_alone_is_not_kept(cl_device, tune_dir, monkeypatch):
    """The default is timed first; here only its first timings are slow (a cold device) and
    every plan is as fast as any other after that. The search crowns some other candidate;
    the default and that candidate timed again side by side tie, so nothing is stored. (Where
    the candidate is the default plan itself, forced, no rounds are needed: the next test.)"""
    from clreduce import tuner
    from clreduce.backends import opencl

    _timed_by(monkeypatch, lambda prepared, n: 2e-3 if n <= 2 else 1e-3)
    problem = Problem(rows=256, row_len=100, dtype="float32", op="mean")
    lines = []
    (result,) = tuner.tune(cl_device, [problem], runs=1, log=lines.append, stream=None)
    warm_gbps = 256 * 100 * 4 / 1e-3 / 1e9
    if result["confirmed"] is not None:   # another plan led the search: rounds beside the default
        assert result["confirmed"] == {"kept": False, "search_gbps": pytest.approx(warm_gbps)}
        assert any("not kept" in line for line in lines)
    assert result["default_gbps"] == pytest.approx(warm_gbps)   # the rounds' or the twin's, not the cold 0.5x
    assert result["force"] == tuner.Force() and result["gbps"] == result["default_gbps"]
    assert result["plan"] == result["default_plan"]
    assert tuning.TuneCache(opencl.caps_of(cl_device)).winner(problem) is None


def test_a_winner_that_stays_faster_beside_the_default_is_kept(cl_device, tune_dir, monkeypatch):
    """Plans other than the default run in half its time, in the search and in the rounds
    beside it: the winner is kept, stored, and reported at the rounds' 2x."""
    from clreduce import tuner
    from clreduce.backends import opencl

    problem = Problem(rows=256, row_len=100, dtype="float32", op="mean")
    import pyopencl as cl

    ctx = cl.Context([cl_device])   # held: Intel's runtime fails a queue whose context was collected
    queue = cl.CommandQueue(ctx)
    default_text = tuner._describe(tuner._OpenCLRunner(queue, np.ones(256 * 100, np.float32))
                                   .prepare(problem, None)[0].plan)
    _timed_by(monkeypatch, lambda prepared, n: 2e-3 if tuner._describe(prepared.plan) == default_text else 1e-3)
    (result,) = tuner.tune(cl_device, [problem], runs=1, log=lambda *a: None, stream=None)
    if result["confirmed"] is None:
        pytest.skip("the planner's plan is the only one this device can build")
    assert result["confirmed"]["kept"] and result["force"] != tuner.Force()
    assert result["gbps"] == pytest.approx(2 * result["default_gbps"])
    assert tuning.TuneCache(opencl.caps_of(cl_device)).winner(problem) == result["force"]


def test_a_winner_that_is_the_default_plan_forced_is_not_stored(cl_device, tune_dir, monkeypatch):
    """A knob forced to the value the planner picks anyway plans the default itself. Here the
    default's first timings are slow (a cold device), so that forced twin leads the search:
    it is still the default, reported and stored as such (no winner), with no confirm rounds."""
    import pyopencl as cl

    from clreduce import tuner
    from clreduce.backends import opencl

    problem = Problem(rows=256, row_len=100, dtype="float32", op="mean")
    ctx = cl.Context([cl_device])   # held: Intel's runtime fails a queue whose context was collected
    runner = tuner._OpenCLRunner(cl.CommandQueue(ctx), np.ones(256 * 100, np.float32))
    default_plan = runner.prepare(problem, None)[0].plan
    twin = None
    for knob, values in tuner.knob_values(opencl.caps_of(cl_device), problem).items():
        for value in values:
            try:
                plan = runner.prepare(problem, tuner._with(tuner.Force(), knob, value))[0].plan
            except Exception:  # noqa: BLE001 - a value this device cannot plan or build
                continue
            if plan == default_plan:
                twin = (knob, value)
                break
        if twin:
            break
    if twin is None:
        pytest.skip("no single knob value re-plans the default on this device")
    monkeypatch.setattr(tuner, "knob_values", lambda caps, p: {twin[0]: [twin[1]]})
    _timed_by(monkeypatch, lambda prepared, n: 2e-3 if n <= 2 else 1e-3)
    (result,) = tuner.tune(cl_device, [problem], runs=1, log=lambda *a: None, stream=None)
    assert result["force"] == tuner.Force() and result["confirmed"] is None
    assert result["plan"] == result["default_plan"]
    # reported at the twin's (warm) timing, which is the default's own
    assert result["gbps"] == result["default_gbps"] == pytest.approx(256 * 100 * 4 / 1e-3 / 1e9)
    assert tuning.TuneCache(opencl.caps_of(cl_device)).winner(problem) is None
