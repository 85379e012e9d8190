#!/usr/bin/env python3
"""Kernel time of clreduce reductions on one OpenCL device, for before/after a kernel change.

For each op and shape (float32 unless ``--dtype``), the planner's plan is built once and its
kernels are enqueued ``--runs`` times after ``--warmup`` runs (``PreparedReduction``, a
profiling queue: OpenCL event time of all passes, no Python API cost). Prints one line per
case: median ms and GB/s read. Arrays are DESIGN.md's shapes with rows scaled to ``--mb``.

Compare two trees by running this file with each tree first on ``PYTHONPATH`` (the file may
be copied into the old tree), alternating the runs, e.g. with ``/usr/bin/time`` or a pairing
harness around the whole process; the printed medians give the kernel-only ratio:

    PYTHONPATH=/path/to/before python tools/bench_kernels_cl.py --device pocl --ops sum,mean,var
    PYTHONPATH=.               python tools/bench_kernels_cl.py --device pocl --ops sum,mean,var
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np

SHAPES = "442368,128;1048576,32;65536,4096;8192,1000;64,4194304;1,268435456"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="device selector (clreduce's; default: the default device)")
    parser.add_argument("--ops", default="sum,mean,var")
    parser.add_argument("--shapes", default=SHAPES, help="R,K;R,K;... (rows scaled to --mb)")
    parser.add_argument("--axis", type=int, default=-1, help="-1 (rows) or 0 (columns: the array is K x R)")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--mb", type=float, default=64.0)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args(argv)

    import pyopencl as cl

    import clreduce
    from clreduce.backends import opencl
    from clreduce.plan import Problem

    device = opencl.queue_for(args.device).device
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    dtype = np.dtype(args.dtype)
    print(f"# {device.name.strip()} ({device.platform.name.strip()}), clreduce from {clreduce.__file__}")
    rng = np.random.default_rng(0)
    for text in args.shapes.split(";"):
        rows, k = (int(v) for v in text.split(","))
        total = int(args.mb * 2**20 / dtype.itemsize)
        rows = max(1, min(rows, total // k))
        k = k if rows > 1 else min(k, total)
        x = rng.standard_normal((rows, k), dtype=np.float32).astype(dtype)
        if args.axis == 0:
            x = np.ascontiguousarray(x.reshape(k, rows))
        for op in args.ops.split(","):
            if args.axis == 0:
                problem = Problem(rows=1, row_len=k, inner=rows, dtype=dtype.name, op=op)
            else:
                problem = Problem(rows=rows, row_len=k, dtype=dtype.name, op=op)
            prepared = opencl.PreparedReduction(queue, x, problem)
            times = []
            for i in range(args.warmup + args.runs):
                events = prepared.enqueue()
                events[-1].wait()
                if i >= args.warmup:
                    times.append(sum(e.profile.end - e.profile.start for e in events) * 1e-6)
            prepared.release()
            ms = statistics.median(times)
            plan = prepared.plan
            print(f"{op:5s} {rows}x{k} axis={args.axis} {dtype.name}: {ms:9.3f} ms  {x.nbytes / ms / 1e6:7.2f} GB/s  "
                  f"[{plan.strategy} {plan.sg_mode}/{plan.sg_size} wg{plan.wg_size} lanes{plan.lanes} "
                  f"vec{plan.vec} split{plan.split}]")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
