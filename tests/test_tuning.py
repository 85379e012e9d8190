"""The tune cache and the tuner: winners are stored atomically, keyed by device and
sources, used by later calls of the same bucket, ignored when forced, disabled, stale or
corrupt, and never able to make a call fail or answer wrong."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import warnings
from pathlib import Path

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


# Files the loader must ignore: bytes that are not UTF-8, JSON nested past the parser's
# recursion limit, and valid JSON of the wrong shape.
UNUSABLE = {
    "not-json": b"{not json",
    "not-utf8": b"\xff\xfe\x00garbage\x80\x81",
    "deep": b"[" * 100000 + b"]" * 100000,
    "list": b"[]",
    "null": b"null",
    "entry-not-object": b'{"entries": {"k": 5}}',
    "entries-list": b'{"entries": []}',
    "bad-force": b'{"entries": {"k": {"force": {"bogus": 1}}}}',
    "gbps-text": b'{"entries": {"k": {"force": {"vec": 4}, "gbps": "fast"}}}',
    "fingerprint-list": b'{"fingerprint": [], "entries": {}}',
}


@pytest.mark.parametrize("raw", list(UNUSABLE.values()), ids=list(UNUSABLE))
def test_unusable_file_is_ignored_with_a_warning_and_rewritten(tune_dir, raw):
    path = tune_dir / f"tune-{tuning.fingerprint_id(CAPS)}.json"
    path.write_bytes(raw)
    problem = Problem(rows=100, row_len=300, dtype="float32", op="sum")
    with pytest.warns(tuning.TuneCacheWarning, match="corrupt"):
        assert tuning.tuned_force(CAPS, problem, None) is None
    (shown,) = tuning.show(tune_dir)   # --show applies the loader's rules: nothing from this file
    assert set(shown) == {"path", "error"} and shown["path"] == str(path)
    with pytest.warns(tuning.TuneCacheWarning):
        cache = tuning.TuneCache(CAPS)
    cache.put(problem, Force(vec=2))
    cache.save()
    assert tuning.tuned_force(CAPS, problem, None) == Force(vec=2)
    assert tuning.show(tune_dir)[0]["entries"][tuning.bucket_key(problem)]["force"]["vec"] == 2


def test_a_public_call_with_a_non_utf8_tune_file_warns_and_answers(cl_device, tune_dir):
    import clreduce
    from clreduce.backends import opencl

    path = tune_dir / f"tune-{tuning.fingerprint_id(opencl.caps_of(cl_device))}.json"
    path.write_bytes(UNUSABLE["not-utf8"])
    x = np.arange(3 * 50, dtype=np.float32).reshape(3, 50)
    with pytest.warns(tuning.TuneCacheWarning, match="not UTF-8"):
        got = clreduce.mean(x, axis=-1, queue=_queue(cl_device))
    np.testing.assert_allclose(got, x.astype(np.float64).mean(-1), rtol=1e-6)


P1 = Problem(rows=100, row_len=300, dtype="float32", op="sum")
P2 = Problem(rows=100, row_len=3000, dtype="float32", op="max")


def _stored(folder) -> dict:
    return json.loads((folder / f"tune-{tuning.fingerprint_id(CAPS)}.json").read_text())["entries"]


def test_two_writers_keep_each_others_winners(tune_dir):
    """Two tune runs load the (empty) file at start and save at the end: the second save
    merges into what the first wrote instead of replacing it; a drop removes only its key."""
    first, second = tuning.TuneCache(CAPS), tuning.TuneCache(CAPS)
    first.put(P1, Force(vec=2))
    second.put(P2, Force(vec=4))
    first.save()
    second.save()
    assert set(_stored(tune_dir)) == {tuning.bucket_key(P1), tuning.bucket_key(P2)}
    third = tuning.TuneCache(CAPS)
    third.drop(P1)   # the planner's own plan won this bucket in a later run
    third.save()
    assert set(_stored(tune_dir)) == {tuning.bucket_key(P2)}
    assert tuning.tuned_force(CAPS, P2, None) == Force(vec=4) and tuning.tuned_force(CAPS, P1, None) is None


def test_save_waits_for_the_lock_and_merges_what_was_written_meanwhile(tune_dir, tmp_path):
    fcntl = pytest.importorskip("fcntl")
    other = tmp_path / "other"
    elsewhere = tuning.TuneCache(CAPS, folder=other)   # what another process would have written
    elsewhere.put(P1, Force(vec=2))
    meanwhile = elsewhere.save().read_bytes()
    mine = tuning.TuneCache(CAPS)
    mine.put(P2, Force(vec=4))
    with open(mine.lock_path, "a+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        saver = threading.Thread(target=mine.save)
        saver.start()
        saver.join(0.5)
        waited = saver.is_alive()
        mine.path.write_bytes(meanwhile)   # the other writer's file lands while the lock is held
        fcntl.flock(held.fileno(), fcntl.LOCK_UN)
    saver.join(30)
    assert waited, "save did not wait for the lock"
    assert set(_stored(tune_dir)) == {tuning.bucket_key(P1), tuning.bucket_key(P2)}


def test_concurrent_saves_from_threads_lose_nothing(tune_dir):
    n = 6
    problems = [Problem(rows=100, row_len=1 << (8 + i), dtype="float32", op="sum") for i in range(n)]
    loaded = threading.Barrier(n)

    def run(problem):
        cache = tuning.TuneCache(CAPS)
        loaded.wait()   # every writer has read the file before any saves
        cache.put(problem, Force(vec=2))
        cache.save()

    threads = [threading.Thread(target=run, args=(p,)) for p in problems]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert set(_stored(tune_dir)) == {tuning.bucket_key(p) for p in problems}
    assert not list(tune_dir.glob(".tune-*"))   # no temporary left behind


@pytest.mark.parametrize("where", ["under-a-file", "under-proc"])
def test_an_unwritable_tune_folder_fails_before_the_search(tmp_path, monkeypatch, where):
    from clreduce import tuner

    if where == "under-a-file":
        (tmp_path / "plain").write_text("x")
        folder = tmp_path / "plain" / "tune"
    else:
        if not os.path.isdir("/proc/self"):
            pytest.skip("no /proc here")
        folder = Path("/proc/self/clreduce-tune")
    monkeypatch.setenv("CLREDUCE_TUNE_DIR", str(folder))
    with pytest.raises(tuning.TuneDirError, match="cannot be written"):
        tuning.check_writable()

    def no_search(*args, **kwargs):
        raise AssertionError("searched before checking the folder")

    monkeypatch.setattr(tuner, "_tune_all", no_search)
    with pytest.raises(tuning.TuneDirError, match="CLREDUCE_TUNE_DIR"):
        tuner.tune(None, [P1], runs=1, log=lambda *a: None, stream=None)


# ---- the tuner's references -----------------------------------------------------------------

def test_reference_of_ops_numpy_has_no_function_for():
    from clreduce import tuner

    x = np.array([[-3.0, 1.0, np.nan, 2.0], [0.5, -0.25, 4.0, -8.0]], np.float32)
    plain = np.nan_to_num(x, nan=0.0).astype(np.float64)

    def ref(op, data=x, **kw):
        return tuner.reference(Problem(rows=2, row_len=4, dtype="float32", op=op, **kw), data).ravel()

    np.testing.assert_array_equal(ref("count_notnan"), [3, 4])
    np.testing.assert_allclose(ref("norm1", plain), np.abs(plain).sum(1))
    np.testing.assert_allclose(ref("norm2", plain), np.linalg.norm(plain, axis=1))
    np.testing.assert_array_equal(ref("norminf", plain), [3, 8])
    np.testing.assert_array_equal(ref("normneginf", plain), [0, 0.25])
    np.testing.assert_allclose(ref("logsumexp", plain), np.log(np.exp(plain).sum(1)))
    big = np.full((2, 4), 1000.0, np.float32)   # exp would overflow unshifted
    np.testing.assert_allclose(ref("logsumexp", big), 1000 + np.log(4))
    np.testing.assert_allclose(ref("var", plain, param=1.0), plain.var(1, ddof=1))


def test_every_op_has_a_reference():
    from clreduce import tuner
    from clreduce.ops import OPS

    x = np.linspace(0.1, 1, 12)
    for op in OPS:
        out = tuner.reference(Problem(rows=3, row_len=4, dtype="float64", op=op), x)
        assert out.shape == (3, 1) and out.dtype == np.float64 and np.isfinite(out).all(), op


def _one_device(found_devices):
    """pip's PoCL where present (fast builds), else the first device."""
    if not found_devices:
        pytest.skip("no OpenCL device")
    return next((d for d in found_devices if d.id == "pocl"), found_devices[0])


def _tune_ops():
    from clreduce.cli import build_parser

    parser = build_parser()
    tune = next(a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == "tune")[1]
    return next(a for a in tune._actions if a.dest == "op").choices


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_tune_runs_every_op_the_cli_offers(found_devices, tune_dir, monkeypatch, dtype):
    """Every `clreduce tune --op` choice: the default plan runs and answers as the float64
    reference says (the tuner used numpy's function of the op's name, which logsumexp, the
    norms and count_notnan lack). Only the default is timed: the reference is under test."""
    from clreduce import tuner

    device = _one_device(found_devices)
    monkeypatch.setattr(tuner, "knob_values", lambda caps, p: {})
    # integer norms are refused by the CLI: clreduce.norm converts integers to float64 first
    ops = [op for op in _tune_ops() if dtype == "float32" or not op.startswith("norm")]
    problems = [Problem(rows=8, row_len=300, dtype=dtype, op=op) for op in ops]
    results = tuner.tune(device.device, problems, runs=1, log=lambda *a: None, stream=None)
    assert len(results) == len(ops) > 16
    for result in results:
        op = result["problem"].op
        assert result["error"] is None and result["skipped"] == [], (op, result["default_plan"])
        assert result["default_gbps"] > 0, op


def test_a_device_that_cannot_run_the_problem_stores_nothing(found_devices, tune_dir, monkeypatch):
    import io

    from clreduce import tuner
    from clreduce.plan import UnsupportedOnDevice

    def refuse(self, problem, force):
        raise UnsupportedOnDevice("float64 mean needs fp64, which this device lacks")

    monkeypatch.setattr(tuner._OpenCLRunner, "prepare", refuse)
    lines, progress = [], io.StringIO()
    (result,) = tuner.tune(_one_device(found_devices).device, [P1], runs=1, log=lines.append, stream=progress)
    assert result["error"] == "not plannable: float64 mean needs fp64, which this device lacks"
    assert any("cannot run on this device" in line for line in lines)
    assert not any("tune file" in line for line in lines) and not list(tune_dir.glob("tune-*.json"))
    assert progress.getvalue() == "tuning sum float32 100x300 ...\n"   # a plain line, not a tty's bar


# ---- event timers -----------------------------------------------------------------------------

def test_event_timer_defects():
    from types import SimpleNamespace

    from clreduce import bench

    rusticl = SimpleNamespace(name="llvmpipe", profiling_timer_resolution=0)
    assert "resolution of 0 ns" in bench.event_timer_defect(rusticl)
    assert bench.event_timer_defect(SimpleNamespace(name="pocl", profiling_timer_resolution=1)) is None
    assert "1 ns" in bench.implausible_event_time(1e-9, 1 << 20)       # rusticl's end - start
    assert "GB/s" in bench.implausible_event_time(1e-6, 1 << 30)        # 1 GiB in 1 us
    assert bench.implausible_event_time(1e-3, 1 << 20) is None


def test_event_timer_is_flagged_or_plausible(cl_device):
    """A 4 MiB device copy: either the timer is reported unusable or its figure is one a
    device can reach (rusticl 22.3.6 gave 2097152 GB/s)."""
    import pyopencl as cl

    from clreduce import bench

    ctx = cl.Context([cl_device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    try:
        gbps = bench.copy_bandwidth(queue, 4 << 20, repeat=2)
    except bench.EventTimerUnusable as exc:
        assert str(exc)
    else:
        assert 0 < gbps < bench.MAX_EVENT_GBPS


def test_tune_times_by_wall_clock_when_events_are_garbage(found_devices, tune_dir, monkeypatch):
    """Events that say 1 ns for any command (rusticl 22.3.6): candidates are timed around
    queue.finish() instead, at a plausible figure, and the output says so."""
    from clreduce import bench, tuner

    monkeypatch.setattr(bench, "event_seconds", lambda events: 1e-9)
    monkeypatch.setattr(tuner, "knob_values", lambda caps, p: {})
    lines = []
    problem = Problem(rows=64, row_len=4096, dtype="float32", op="mean")
    (result,) = tuner.tune(_one_device(found_devices).device, [problem], runs=2, log=lines.append, stream=None)
    assert "host wall clock" in result["timer"] and "1 ns" in result["timer"]
    assert 0 < result["default_gbps"] < 1000   # 1 MiB in 1 ns would be 1048 GB/s
    assert any(line.startswith("    timed by host wall clock") for line in lines)
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
