"""``clreduce tune``: search plan variants on an OpenCL device and store the winners.

The search is a coordinate descent over the planner's knobs, starting from the planner's
own choice: sub-group mode and width, then strategy (lanes per row), then work-group size,
then vector width, each stage keeping the best so far. A full product of the knobs is
hundreds of builds per shape; the stages need a few dozen, and the knobs interact little
(measured on the Intel CPU runtime: the stage order above found the product's winner on
the DESIGN.md shapes). Each candidate is built, checked against numpy and timed from
OpenCL profiling events (median after a warm-up); one that does not plan, does not build
or answers wrong is skipped and reported. The planner's default is always a candidate, so
a stored winner is never slower than the default in the tuning run.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys

import numpy as np

from .plan import ALL_STRATEGIES, Force, Problem, UnsupportedOnDevice
from .tuning import TuneCache, bucket_key, suspended

# Tolerance for "answers right" during the search: float32 sums of up to 2**26 uniform
# [0, 1) values with per-lane partials; the suite's documented bounds are tighter per op.
RTOL = {"float16": 2e-3, "float32": 2e-4, "float64": 1e-10}
# A candidate replaces the best so far only when it is this much faster: on a shared
# machine timings wander by a few percent, and a winner inside the noise is no winner.
MIN_GAIN = 1.03


def _pow2_floor(n: int) -> int:
    return 1 << (max(int(n), 1).bit_length() - 1)


def knob_values(caps, problem: Problem) -> dict[str, list]:
    """Values each knob may take on this device for this problem (None = planner's)."""
    sg = [("local", None)]
    if caps.subgroups and caps.subgroup_sizes:
        sizes = list(caps.subgroup_sizes)
        if caps.subgroup_reduce_builtins:
            sg += [("builtin", s) for s in sizes]
        if caps.khr_shuffle or caps.qcom_shuffle:
            sg += [("shuffle", s) for s in sizes]
    length = problem.row_len if problem.inner == 1 else problem.inner
    return {
        "sg": sg if problem.inner == 1 else [("local", None)],
        "strategy": list(ALL_STRATEGIES) if problem.inner == 1 else ["split_k"],
        "wg_size": [w for w in (16, 32, 64, 128, 256, 512) if w <= _pow2_floor(caps.max_work_group_size)],
        "vec": [v for v in (1, 2, 4, 8, 16) if v <= length],
    }


def _with(force: Force, knob: str, value) -> Force:
    if knob == "sg":
        mode, size = value
        return dataclasses.replace(force, sg_mode=mode, sg_size=size)
    return dataclasses.replace(force, **{knob: value})


def _describe(plan) -> str:
    return (f"{plan.strategy} {plan.sg_mode}{'/' + str(plan.sg_size) if plan.sg_size else ''} "
            f"wg{plan.wg_size} lanes{plan.lanes} vec{plan.vec}" + (f" split{plan.split}" if plan.split > 1 else ""))


class _Trial:
    """Runs candidates of one problem on one device and remembers every outcome."""

    def __init__(self, queue, problem: Problem, x: np.ndarray, runs: int):
        import pyopencl.array as cla

        self.queue, self.problem, self.runs = queue, problem, runs
        self.device_x = cla.to_device(queue, x)
        ref = _reference(problem, x)
        self.ref = ref
        self.seen: dict[tuple, tuple[float | None, str]] = {}
        self.skipped: list[str] = []

    def gbps(self, force: Force | None) -> tuple[float | None, str]:
        from .backends import opencl

        key = dataclasses.astuple(force) if force else None
        if key in self.seen:
            return self.seen[key]
        label = "default" if force is None else ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(force).items()
                                                          if v is not None)
        try:
            prepared = opencl.PreparedReduction(self.queue, self.device_x, self.problem, force)
            prepared.enqueue()[-1].wait()
            got = prepared.result()
        except (UnsupportedOnDevice, ValueError) as exc:
            outcome = (None, f"not plannable: {exc}")
        except Exception as exc:  # noqa: BLE001 - a driver that cannot build or run it
            outcome = (None, f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
            self.skipped.append(f"{label}: {outcome[1]}")
        else:
            rtol = RTOL.get(self.problem.dtype, 1e-6)
            if not np.allclose(np.asarray(got, np.float64).reshape(self.ref.shape), self.ref, rtol=rtol,
                               atol=rtol * np.abs(self.ref).max(initial=0)):
                outcome = (None, "answers wrong")
                self.skipped.append(f"{label}: {_describe(prepared.plan)} answers wrong")
            else:
                times = []
                for _ in range(self.runs):
                    events = prepared.enqueue()
                    events[-1].wait()
                    times.append(sum(e.profile.end - e.profile.start for e in events) * 1e-9)
                seconds = statistics.median(times)
                outcome = (self.device_x.nbytes / seconds / 1e9, _describe(prepared.plan))
        self.seen[key] = outcome
        return outcome


def _reference(problem: Problem, x: np.ndarray) -> np.ndarray:
    shaped = x.reshape(problem.rows, problem.row_len, problem.inner)
    fn = getattr(np, problem.op)
    return np.asarray(fn(shaped.astype(np.float64) if x.dtype.kind == "f" else shaped, axis=1), np.float64)


def tune_problem(queue, problem: Problem, runs: int = 5, progress=None) -> dict:
    """Coordinate-descent search for one problem; returns the winner and what was skipped."""
    from .backends import opencl

    caps = opencl.caps_of(queue.device)
    rng = np.random.default_rng(0)
    dtype = np.dtype(problem.dtype)
    size = problem.rows * problem.row_len * problem.inner
    x = rng.random(size).astype(dtype) if dtype.kind == "f" else rng.integers(0, 100, size).astype(dtype)
    trial = _Trial(queue, problem, x, runs)
    default_gbps, default_plan = trial.gbps(None)
    best_force, best_gbps, best_plan = Force(), default_gbps or 0.0, default_plan
    knobs = knob_values(caps, problem)
    total = sum(len(v) for v in knobs.values())
    done = 0
    for knob, values in knobs.items():
        stage_best = best_force
        for value in values:
            candidate = _with(best_force, knob, value)
            gbps, text = trial.gbps(candidate)
            done += 1
            if gbps is not None and gbps > best_gbps * MIN_GAIN:
                stage_best, best_gbps, best_plan = candidate, gbps, text
            if progress:
                progress(done, total, best_gbps, best_plan)
        best_force = stage_best
    return {"problem": problem, "force": best_force, "gbps": best_gbps, "plan": best_plan,
            "default_gbps": default_gbps, "default_plan": default_plan, "skipped": trial.skipped}


def tune(device, problems, runs: int = 5, log=print, stream=sys.stderr) -> list[dict]:
    """Tune every problem on ``device`` and save the winners to its tune file."""
    import pyopencl as cl

    from .backends import opencl

    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    cache = TuneCache(opencl.caps_of(device))
    results = []
    with suspended():  # "default" must mean the planner's plan, not an older winner
        _tune_all(queue, problems, runs, cache, results, log, stream)
    path = cache.save()
    log(f"tune file: {path}")
    return results


def _tune_all(queue, problems, runs, cache, results, log, stream) -> None:
    for problem in problems:
        label = f"{problem.op} {problem.dtype} {problem.rows}x{problem.row_len}" + (
            f"x{problem.inner}" if problem.inner > 1 else "")

        def progress(done, total, gbps, plan, label=label):
            bar = "#" * (20 * done // total)
            stream.write(f"\r{label:<36} [{bar:<20}] {done}/{total}  best {gbps:7.2f} GB/s  {plan:<48}")
            stream.flush()

        result = tune_problem(queue, problem, runs, progress if stream is not None and stream.isatty() else None)
        if stream is not None and stream.isatty():
            stream.write("\n")
        results.append(result)
        default = result["default_gbps"]
        log(f"{label}: {result['gbps']:.2f} GB/s with {result['plan']} (default {default or 0:.2f} GB/s, "
            f"{result['default_plan']}); key {bucket_key(problem)}")
        for line in result["skipped"]:
            log(f"    skipped {line}")
        if any(v is not None for v in dataclasses.astuple(result["force"])):
            cache.put(problem, result["force"], gbps=round(result["gbps"], 3),
                      default_gbps=None if default is None else round(default, 3), plan=result["plan"])
        else:
            cache.entries.pop(bucket_key(problem), None)  # the planner's own plan won
