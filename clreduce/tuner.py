"""``clreduce tune``: search plan variants on a device and store the winners.

One mechanism for both backends: an OpenCL device, or a CUDA device (``--backend cuda``),
whose winners go to the same tune cache (``clreduce.tuning``, keyed by the device's
fingerprint) and which both backends read. The search is a coordinate descent over the
planner's knobs, starting from the planner's own choice: sub-group mode and width, then
strategy, then work-group size, then vector width, and on GPUs the launch shape (lanes per
row, loads in flight, split count), each stage keeping the best so far. A full product of the knobs is
hundreds of builds per shape; the stages need a few dozen, and the knobs interact little
(measured on the Intel CPU runtime: the stage order above found the product's winner on
the DESIGN.md shapes). Each candidate is built, checked against a float64 reference of the
op (numpy's function where numpy has one) and timed from OpenCL profiling events (median
after a warm-up); one that does not plan, does not build or answers wrong is skipped and
reported. The planner's default is always a candidate, so a stored winner is never slower
than the default in the tuning run. OpenCL candidates are timed from profiling events, CUDA
ones from CUDA events around each launch. Where the device's event timer is unusable
(``bench.event_timer_defect``: Mesa rusticl 22.3.6 reports timer resolution 0 and start=2,
end=3 for every command) candidates are timed by the host's wall clock around
``queue.finish()`` instead, and the output says so.

A winner other than the default is then confirmed: it and the default are timed again in
alternating rounds, and it is kept only if it still beats the default by MIN_GAIN there; the
numbers reported and stored are those rounds'. The default is timed first, on a cold device
(PoCL on this repository's 2-core host: a mean 1000x1000 "won" at 2.27x the default with the
very same plan, 122 against 54 GB/s), so a search alone credits later candidates with the warm-up.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time

import numpy as np

from .ops import OPS, dtype_rule
from .plan import ALL_STRATEGIES, CPU_STRATEGY, Force, Problem, UnsupportedOnDevice
from .tuning import TuneCache, bucket_key, check_writable, suspended

# Tolerance for "answers right" during the search: float32 sums of up to 2**26 uniform
# [0, 1) values with per-lane partials; the suite's documented bounds are tighter per op.
RTOL = {"float16": 2e-3, "float32": 2e-4, "float64": 1e-10}
# A candidate replaces the best so far only when it is this much faster: on a shared
# machine timings wander by a few percent, and a winner inside the noise is no winner.
MIN_GAIN = 1.03
# Ops whose answer is a selected element, an index, a count or a bool: the kernel must give
# numpy's value exactly (first index of a tie included), not within a tolerance.
EXACT_OPS = frozenset({"max", "min", "nanmax", "nanmin", "norminf", "normneginf", "argmax", "argmin",
                       "count_notnan", "count_nonzero", "any", "all"})


def _pow2_floor(n: int) -> int:
    return 1 << (max(int(n), 1).bit_length() - 1)


def knob_values(caps, problem: Problem) -> dict[str, list]:
    """Values each knob may take on this device for this problem (None = planner's)."""
    sg = [("local", None)]
    if caps.subgroup_sizes and (caps.subgroups or caps.ptx_shuffle):
        sizes = list(caps.subgroup_sizes)
        if caps.subgroup_reduce_builtins:
            sg += [("builtin", s) for s in sizes]
        if caps.khr_shuffle or caps.qcom_shuffle or caps.ptx_shuffle:
            sg += [("shuffle", s) for s in sizes]
    length = problem.row_len if problem.inner == 1 else problem.inner
    knobs = {
        "sg": sg if problem.inner == 1 else [("local", None)],
        # cpu_blocks has no CUDA kernel (plan.py refuses it there)
        "strategy": ([s for s in ALL_STRATEGIES if caps.backend != "cuda" or s != CPU_STRATEGY]
                     if problem.inner == 1 else ["split_k"]),
        "wg_size": [w for w in (16, 32, 64, 128, 256, 512) if w <= _pow2_floor(caps.max_work_group_size)],
        "vec": [v for v in (1, 2, 4, 8, 16) if v <= length],
    }
    if problem.inner == 1 and caps.device_type == "gpu":
        # the launch shape the NVIDIA rules (plan_nvidia.py) set by measurement, per bucket
        knobs["lanes"] = [n for n in (1, 2, 4, 8, 16, 32, 64, 128, 256) if n <= max(1, length)]
        knobs["unroll"] = [1, 2, 4, 8]
        if problem.row_len >= 1 << 15:
            knobs["split"] = [1] + [s for s in (4, 16, 64, 256, 1024) if s * 8192 <= problem.row_len]
    return knobs


def _with(force: Force, knob: str, value) -> Force:
    if knob == "sg":
        mode, size = value
        return dataclasses.replace(force, sg_mode=mode, sg_size=size)
    if knob == "lanes":
        # lanes name the row strategy themselves; a split keeps its own
        strategy = force.strategy if force.strategy == "split_k" else None
        return dataclasses.replace(force, lanes=value, strategy=strategy)
    if knob == "split":
        return dataclasses.replace(force, split=value, strategy=None if value == 1 else "split_k",
                                   lanes=None if value == 1 else force.lanes)
    return dataclasses.replace(force, **{knob: value})


def _describe(plan) -> str:
    return (f"{plan.strategy} {plan.sg_mode}{'/' + str(plan.sg_size) if plan.sg_size else ''} "
            f"wg{plan.wg_size} lanes{plan.lanes} vec{plan.vec}" + (f" split{plan.split}" if plan.split > 1 else ""))


class _OpenCLRunner:
    """Candidates on an OpenCL queue (with profiling), timed from kernel events, or by the
    host's wall clock where the device's event timer is unusable (``timer_defect``)."""

    def __init__(self, queue, x: np.ndarray):
        import pyopencl.array as cla

        from .bench import event_timer_defect

        self.queue = queue
        self.device_x = cla.to_device(queue, x)
        self.nbytes = x.nbytes
        self.timer_defect = event_timer_defect(queue.device)

    @property
    def timer(self) -> str:
        if self.timer_defect is None:
            return "OpenCL profiling events"
        return f"host wall clock around queue.finish(), not OpenCL events: {self.timer_defect}"

    def prepare(self, problem: Problem, force: Force | None):
        from .backends import opencl

        prepared = opencl.PreparedReduction(self.queue, self.device_x, problem, force)
        prepared.enqueue()[-1].wait()
        return prepared, np.asarray(prepared.result())

    def seconds(self, prepared) -> float:
        from . import bench

        if self.timer_defect is None:
            events = prepared.enqueue()
            events[-1].wait()
            seconds = bench.event_seconds(events)
            self.timer_defect = bench.implausible_event_time(seconds, self.nbytes)
            if self.timer_defect is None:
                return seconds
        # the first call (a warm-up) finds a broken timer, so every figure is timed this way
        start = time.perf_counter()
        prepared.enqueue()
        self.queue.finish()
        return time.perf_counter() - start


class _CudaRunner:
    """Candidates on a CUDA device, planned as the CUDA backend plans, timed with CUDA events."""

    timer = "CUDA events"

    def __init__(self, device_id: int, x: np.ndarray):
        import cupy

        self.cupy, self.device_id = cupy, device_id
        with cupy.cuda.Device(device_id):
            self.device_x = cupy.asarray(x)
        self.nbytes = x.nbytes

    def prepare(self, problem: Problem, force: Force | None):
        from .backends.cuda import PreparedReduction
        from .backends.cuda.probe import probe_device
        from .backends.cuda.tune import cuda_plan

        launch_plan = cuda_plan(probe_device(self.device_id), problem, force)
        with self.cupy.cuda.Device(self.device_id):
            prepared = PreparedReduction(self.device_x, problem, device_id=self.device_id, launch_plan=launch_plan)
            return prepared, self.cupy.asnumpy(prepared.run())

    def seconds(self, prepared) -> float:
        cupy = self.cupy
        with cupy.cuda.Device(self.device_id):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            prepared.run()
            end.record()
            end.synchronize()
            return cupy.cuda.get_elapsed_time(start, end) * 1e-3


class _Trial:
    """Runs candidates of one problem on one device and remembers every outcome."""

    def __init__(self, runner, problem: Problem, x: np.ndarray, runs: int):
        self.runner, self.problem, self.runs = runner, problem, runs
        self.ref = reference(problem, x)
        self.seen: dict[tuple, tuple[float | None, str]] = {}
        self.plans: dict[tuple | None, object] = {}   # the plan each candidate that ran was given
        self.skipped: list[str] = []

    def gbps(self, force: Force | None) -> tuple[float | None, str]:
        key = dataclasses.astuple(force) if force else None
        if key in self.seen:
            return self.seen[key]
        label = "default" if force is None else ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(force).items()
                                                          if v is not None)
        try:
            prepared, got = self.runner.prepare(self.problem, force)
        except (UnsupportedOnDevice, ValueError) as exc:
            outcome = (None, f"not plannable: {exc}")
        except Exception as exc:  # noqa: BLE001 - a driver that cannot build or run it
            outcome = (None, f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
            self.skipped.append(f"{label}: {outcome[1]}")
        else:
            if not _matches(self.problem, got, self.ref):
                outcome = (None, "answers wrong")
                self.skipped.append(f"{label}: {_describe(prepared.plan)} answers wrong")
            else:
                self.runner.seconds(prepared)  # warm-up
                seconds = statistics.median(self.runner.seconds(prepared) for _ in range(self.runs))
                outcome = (self.runner.nbytes / seconds / 1e9, _describe(prepared.plan))
                self.plans[key] = prepared.plan
        self.seen[key] = outcome
        return outcome

    def plans_the_default(self, force: Force) -> bool:
        """Whether ``force`` ran as the very plan the planner gives unforced."""
        mine, default = self.plans.get(dataclasses.astuple(force)), self.plans.get(None)
        return mine is not None and mine == default

    def confirm(self, force: Force, rounds: int = 3) -> tuple[float, float]:
        """GB/s of the default and of ``force``, timed in alternating rounds (each the median
        of ``runs`` after a warm-up), medians over the rounds."""
        default, _ = self.runner.prepare(self.problem, None)
        candidate, _ = self.runner.prepare(self.problem, force)
        times: tuple[list, list] = ([], [])
        for _ in range(rounds):
            for prepared, out in ((default, times[0]), (candidate, times[1])):
                self.runner.seconds(prepared)  # warm-up
                out.append(statistics.median(self.runner.seconds(prepared) for _ in range(self.runs)))
        return tuple(self.runner.nbytes / statistics.median(t) / 1e9 for t in times)


def _lse(v: np.ndarray) -> np.ndarray:
    top = np.max(v, axis=1)
    shift = np.where(np.isfinite(top), top, 0.0)
    return np.log(np.sum(np.exp(v - shift[:, None, :]), axis=1)) + shift


# float64 references of the ops numpy has no function for (clreduce.ops.OPS' meanings)
_OWN_REFERENCES = {
    "count_notnan": lambda v: np.sum(~np.isnan(v), axis=1),
    "norm1": lambda v: np.sum(np.abs(v), axis=1),
    "norm2": lambda v: np.sqrt(np.sum(v * v, axis=1)),
    "norminf": lambda v: np.max(np.abs(v), axis=1),
    "normneginf": lambda v: np.min(np.abs(v), axis=1),
    "logsumexp": _lse,
}


def _kernel_op(problem: Problem) -> str:
    """The op whose value the kernel writes: an integer mean's kernel writes the exact 64-bit
    sums, which calls divide on the host (``ops.DtypeRule.host_divide``, api._divide_by_count)."""
    if dtype_rule(OPS[problem.op], np.dtype(problem.dtype), problem.acc_dtype).host_divide:
        return "sum"
    return problem.op


def reference(problem: Problem, x: np.ndarray) -> np.ndarray:
    """The exact-as-float64 answer of ``problem``'s kernel on ``x``, as float64 of shape (rows, inner).

    Parameters
    ----------
    problem : Problem
        Any op of ``clreduce.ops.OPS``; ``param`` is the ``ddof`` of var and std.
    x : numpy.ndarray
        The ``rows * row_len * inner`` input elements.

    Returns
    -------
    numpy.ndarray
        Float input is reduced in float64. Integer and bool input keeps numpy's own rules
        where numpy has the op (a 64-bit sum or product that wraps as numpy's does) and is
        reduced in float64 by the others (norms, logsumexp). An integer mean's is the sum
        (``_kernel_op``).
    """
    op = _kernel_op(problem)
    if op not in _NUMPY_REFERENCES and op not in _OWN_REFERENCES:
        raise ValueError(f"no reference for op {op!r}")
    shaped = x.reshape(problem.rows, problem.row_len, problem.inner)
    as_float = shaped.astype(np.float64)
    with np.errstate(all="ignore"):
        if op in _OWN_REFERENCES:
            out = _OWN_REFERENCES[op](as_float)
        else:
            value = as_float if x.dtype.kind == "f" else shaped
            kwargs = {"ddof": problem.param} if op in ("var", "std") else {}
            out = _NUMPY_REFERENCES[op](value, axis=1, **kwargs)
    return np.asarray(out).astype(np.float64)


_NUMPY_REFERENCES = {name: getattr(np, name) for name in (
    "sum", "mean", "prod", "max", "min", "nansum", "nanmax", "nanmin", "count_nonzero", "any", "all",
    "var", "std", "argmax", "argmin")}


def _matches(problem: Problem, got, ref: np.ndarray) -> bool:
    """Whether a candidate's answer is right: exact for selections, indices, counts, bools
    and integer sums and products; within RTOL of the float64 reference otherwise."""
    got = np.asarray(got, np.float64).reshape(ref.shape)
    op = _kernel_op(problem)
    exact = op in EXACT_OPS or (np.dtype(problem.dtype).kind in "biu" and op in ("sum", "nansum", "prod"))
    if exact:
        return bool(np.array_equal(got, ref, equal_nan=True))
    rtol = RTOL.get(problem.dtype, 1e-6)
    return bool(np.allclose(got, ref, rtol=rtol, atol=rtol * np.abs(ref).max(initial=0), equal_nan=True))


def tune_input(problem: Problem, seed: int = 0) -> np.ndarray:
    """The data a problem is tuned on: uniform [0, 1) floats or small integers; for prod,
    floats within 2**-12 of 1, whose product over millions of elements stays in range."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(problem.dtype)
    size = problem.rows * problem.row_len * problem.inner
    if dtype.kind == "f":
        values = rng.random(size)
        if problem.op == "prod":
            values = 1 + (values - 0.5) * 2.0 ** -12
        return values.astype(dtype)
    return rng.integers(0, 100, size).astype(dtype)


def tune_problem(queue, problem: Problem, runs: int = 5, progress=None, *, backend: str = "opencl") -> dict:
    """Coordinate-descent search for one problem; returns the winner and what was skipped.

    ``queue`` is a pyopencl queue with profiling, or with ``backend="cuda"`` a CUDA device id.
    """
    x = tune_input(problem)
    if backend == "cuda":
        from .backends.cuda.probe import probe_device

        caps, runner = probe_device(int(queue)), _CudaRunner(int(queue), x)
    else:
        from .backends import opencl

        caps, runner = opencl.caps_of(queue.device), _OpenCLRunner(queue, x)
    trial = _Trial(runner, problem, x, runs)
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
    confirmed = None
    if best_force != Force() and trial.plans_the_default(best_force):
        # forcing what the planner chose anyway: the default plan, timed again (its lead over
        # the first timing was a warm-up's or the noise's), so no winner to store
        best_force, default_gbps, best_plan = Force(), best_gbps, default_plan
    if best_force != Force() and default_gbps is not None:
        searched = best_gbps
        default_gbps, best_gbps = trial.confirm(best_force)
        kept = best_gbps > default_gbps * MIN_GAIN
        if not kept:  # the search's gain was the warm-up's or the noise's
            best_force, best_gbps, best_plan = Force(), default_gbps, default_plan
        confirmed = {"kept": kept, "search_gbps": searched}
    # nothing ran: the device cannot run this problem at all (e.g. float64 without fp64)
    error = default_plan if default_gbps is None and best_force == Force() else None
    return {"problem": problem, "force": best_force, "gbps": best_gbps, "plan": best_plan,
            "default_gbps": default_gbps, "default_plan": default_plan, "skipped": trial.skipped,
            "confirmed": confirmed, "timer": runner.timer, "error": error}


def tune(device, problems, runs: int = 5, log=print, stream=sys.stderr, *, backend: str = "opencl") -> list[dict]:
    """Tune every problem on ``device`` and save the winners to its tune file.

    Parameters
    ----------
    device : pyopencl.Device or int
        The OpenCL device, or with ``backend="cuda"`` a CUDA device index.
    problems : iterable of Problem
    runs : int
        Timed runs per candidate (median).
    log : callable
        Receives one line per shape and the summary lines.
    stream : file-like or None
        Progress: a bar on a tty, one plain line per shape otherwise; None for none.
    backend : {"opencl", "cuda"}

    Returns
    -------
    list of dict
        One result per problem; ``error`` is the reason when no plan of it ran on the
        device (nothing is stored for that problem).

    Raises
    ------
    clreduce.tuning.TuneDirError
        The tune-cache folder cannot be written; raised before any search.
    """
    check_writable()  # before minutes of search, not after them
    if backend == "cuda":
        from .backends.cuda.probe import probe_device

        queue, caps = int(device), probe_device(int(device))
    else:
        import pyopencl as cl

        from .backends import opencl

        ctx = cl.Context([device])
        queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
        caps = opencl.caps_of(device)
    cache = TuneCache(caps)
    results = []
    with suspended():  # "default" must mean the planner's plan, not an older winner
        _tune_all(queue, problems, runs, cache, results, log, stream, backend)
    if any(r["error"] is None for r in results):
        log(f"tune file: {cache.save()}")
    return results


def _tune_all(queue, problems, runs, cache, results, log, stream, backend="opencl") -> None:
    for problem in problems:
        label = f"{problem.op} {problem.dtype} {problem.rows}x{problem.row_len}" + (
            f"x{problem.inner}" if problem.inner > 1 else "")

        def progress(done, total, gbps, plan, label=label):
            bar = "#" * (20 * done // total)
            stream.write(f"\r{label:<36} [{bar:<20}] {done}/{total}  best {gbps:7.2f} GB/s  {plan:<48}")
            stream.flush()

        tty = stream is not None and stream.isatty()
        if stream is not None and not tty:  # a log file or pipe: one plain line, no redrawn bar
            stream.write(f"tuning {label} ...\n")
            stream.flush()
        result = tune_problem(queue, problem, runs, progress if tty else None, backend=backend)
        if tty:
            stream.write("\n")
        results.append(result)
        if result["error"] is not None:
            log(f"{label}: cannot run on this device: {result['error']}; nothing stored")
            continue
        default = result["default_gbps"]
        default_text = f"{default:.2f} GB/s, {result['default_plan']}" if default is not None \
            else result["default_plan"]
        log(f"{label}: {result['gbps']:.2f} GB/s with {result['plan']} (default {default_text}); "
            f"key {bucket_key(problem)}")
        if result["timer"] not in ("OpenCL profiling events", "CUDA events"):
            log(f"    timed by {result['timer']}")
        if result["confirmed"] is not None and not result["confirmed"]["kept"]:
            log(f"    not kept: {result['confirmed']['search_gbps']:.2f} GB/s in the search, no faster than "
                f"the default timed beside it")
        for line in result["skipped"]:
            log(f"    skipped {line}")
        if any(v is not None for v in dataclasses.astuple(result["force"])):
            cache.put(problem, result["force"], gbps=round(result["gbps"], 3),
                      default_gbps=None if default is None else round(default, 3), plan=result["plan"])
        else:
            cache.drop(problem)  # the planner's own plan won
