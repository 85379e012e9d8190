#!/usr/bin/env python3
"""Kernel time of the ``cpu_blocks`` plans against the team plans on CPU OpenCL devices.

For each CPU device and each DESIGN.md shape (rows scaled so an array holds ``--mb`` MB),
float32, reduced over the last axis: the planner's default plan (``cpu_blocks`` on Intel's
CPU runtime and PoCL) and the team plan the planner made before it (the same planner with
``cpu_blocks_default`` off), both on the same wrapped input, timed in turn A B A B ... as
wall time of enqueue + finish (no Python API around it), median of ``--reps``. The ratio
B/A is the figure to quote on a shared machine; absolute GB/s need a quiet one.

    python tools/bench_cpu_plans.py --op mean --mb 64 --reps 9
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

SHAPES = [(442368, 128), (1048576, 32), (16777216, 16), (65536, 4096), (8192, 1000), (4096, 65536),
          (64, 4194304), (1, 268435456), (4194304, 64)]


def prepared(queue, x, problem, team: bool):
    import clreduce.plan as planner
    from clreduce.backends import opencl

    original = planner.cpu_blocks_default
    planner.cpu_blocks_default = (lambda caps: False) if team else original
    opencl._plan_cache.clear()
    try:
        return opencl.PreparedReduction(queue, x, problem)
    finally:
        planner.cpu_blocks_default = original
        opencl._plan_cache.clear()


def describe(p) -> str:
    return (f"{p.strategy} {p.sg_mode}{'/' + str(p.sg_size) if p.sg_size else ''} wg{p.wg_size} "
            f"lanes{p.lanes} vec{p.vec}" + (f" split{p.split}" if p.split > 1 else ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op", default="mean")
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--device", help="a CLREDUCE_DEVICE selector (default: every CPU device)")
    args = ap.parse_args(argv)
    import pyopencl as cl

    from clreduce.backends import opencl
    from clreduce.plan import Problem

    devices = ([opencl._select_by_selector(args.device)] if args.device else
               [d for d in opencl.all_devices() if d.type & cl.device_type.CPU])
    rng = np.random.default_rng(0)
    for device in devices:
        ctx = cl.Context([device])
        queue = cl.CommandQueue(ctx)
        print(f"{device.platform.name.strip()} / {device.name.strip()}: {args.op} float32, GB/s (median of {args.reps})")
        for rows, k in SHAPES:
            n = (args.mb << 20) // 4
            rows, k = (1, n) if k > n else (min(rows, n // k), k)
            x = rng.random((rows, k), dtype=np.float32)
            problem = Problem(rows=rows, row_len=k, dtype="float32", op=args.op)
            want = getattr(np, args.op)(x, axis=-1)
            runs = {"team": prepared(queue, x, problem, True), "default": prepared(queue, x, problem, False)}
            times = {name: [] for name in runs}
            try:
                for rep in range(args.reps + 1):
                    for name, run in runs.items():
                        t0 = time.perf_counter()
                        run.enqueue()
                        queue.finish()
                        if rep:
                            times[name].append(time.perf_counter() - t0)
                for name, run in runs.items():
                    got = run.result()
                    assert np.allclose(got, want, rtol=1e-4, atol=1e-6), (name, rows, k)
                gbps = {name: x.nbytes / statistics.median(t) / 1e9 for name, t in times.items()}
                print(f"  {rows}x{k}: team {gbps['team']:6.2f}  default {gbps['default']:6.2f}  "
                      f"({gbps['default'] / gbps['team']:.2f}x)  {describe(runs['default'].plan)} vs "
                      f"{describe(runs['team'].plan)}", flush=True)
            finally:
                for run in runs.values():
                    run.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
