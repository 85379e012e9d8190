"""CUDA plans (pure: no CuPy, no device).

The CUDA backend runs the shared planner's plans (``clreduce.plan``): the launch shapes
measured on NVIDIA GPUs (team widths, unrolling, split counts) are planner rules for any
NVIDIA GPU (``clreduce.plan_nvidia``), and ``clreduce tune --backend cuda`` stores winners
in the same tune cache as OpenCL devices (``clreduce.tuning``), which the CUDA backend reads.
What stays here: the CUDA build options of a plan, and ``custom_plan`` / ``relaunch`` for
plan-variant sweeps (``tools/bench_cuda.py --sweep``) that set defines the planner has no knob
for (``MIN_BLOCKS``, an exact grid).
"""

from __future__ import annotations

import dataclasses

from ...plan import Force, KernelLaunch, LaunchPlan, Problem, plan
from .launch import nvrtc_options


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def defines_of(launch: KernelLaunch) -> dict[str, str]:
    return dict(launch.defines)


def scalar(launch: KernelLaunch, name: str):
    """The value of the kernel scalar argument ``name`` (``n_rows``, ``chunk_len``, ...)."""
    for key, _kind, value in launch.scalars:
        if key == name:
            return value
    raise KeyError(f"{launch.entry} has no scalar {name!r}")


def for_cuda(launch: KernelLaunch) -> KernelLaunch:
    """``launch`` with NVRTC's build options (the planner writes OpenCL's)."""
    return dataclasses.replace(launch, options=nvrtc_options(launch.defines))


def cuda_plan(caps, problem: Problem, force: Force | None = None) -> LaunchPlan:
    """The plan the CUDA backend runs: the shared planner's, with CUDA build options."""
    p = plan(caps, problem, force)
    return dataclasses.replace(p, passes=tuple(for_cuda(launch) for launch in p.passes))


def relaunch(launch: KernelLaunch, *, groups: int, **changes) -> KernelLaunch:
    """``launch`` with defines changed (``MIN_BLOCKS=2``, ...) and exactly ``groups`` blocks."""
    d = defines_of(launch)
    d.update({k: str(v) for k, v in changes.items()})
    pairs = tuple(sorted(d.items()))
    wg = int(d["WG_SIZE"])
    return dataclasses.replace(launch, defines=pairs, options=nvrtc_options(pairs),
                               global_size=int(groups) * wg, local_size=wg)


def custom_plan(caps, problem: Problem, *, lanes: int | None = None, wg: int | None = None,
                vec: int | None = None, split: int | None = None, sg_mode: str | None = None,
                groups: int | None = None, UNROLL: int | None = None, **extra_defines) -> LaunchPlan:
    """A plan with explicit choices (for sweeps): the planner's plan for ``Force(lanes=...,
    unroll=UNROLL, split=..., wg_size=wg, vec=..., sg_mode=...)``, then extra defines on the
    first pass (``MIN_BLOCKS``) and, with ``groups``, exactly that many blocks for it."""
    force = Force(lanes=lanes, unroll=UNROLL, split=split if split and split > 1 else None,
                  wg_size=wg, vec=vec, sg_mode=sg_mode)
    p = cuda_plan(caps, problem, force)
    if extra_defines or groups is not None:
        first = p.passes[0]
        n = groups if groups is not None else first.global_size // first.local_size
        p = dataclasses.replace(p, passes=(relaunch(first, groups=n, **extra_defines),) + p.passes[1:])
    return p
