#!/usr/bin/env python3
"""Before/after cost of a change, two source trees interleaved in one process (OpenCL).

The tree on ``sys.path`` is "after" (``import clreduce``); ``--before DIR`` is another tree
(e.g. ``git archive main | tar -x -C DIR``), loaded as the package ``clreduce_before`` with
its own kernels, caches and queues. For each device, shape and op, both trees' planner plans
run in alternating rounds (``--rounds``, each ``--runs`` calls of one tree then the other),
so a loaded machine slows both alike; printed are the medians and after / before of

* ``kernel``: OpenCL event time of all passes (``PreparedReduction``, profiling queue);
* ``call``:   wall time of the public call (numpy in, numpy out, default queue of the device).

    git archive main | tar -x -C /tmp/before
    PYTHONPATH=. python tools/bench_interleaved_cl.py --before /tmp/before --devices intel,pocl

Shapes are DESIGN.md's list with rows scaled to ``--mb``. A benchmark program, not a test.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import numpy as np

SHAPES = "442368,128;1048576,32;65536,4096;8192,1000;64,4194304;1,268435456;4194304,64"


def load_tree(root: Path, name: str):
    """The clreduce package of ``root`` under another module name (relative imports only)."""
    spec = importlib.util.spec_from_file_location(name, root / "clreduce" / "__init__.py",
                                                  submodule_search_locations=[str(root / "clreduce")])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="root of the 'before' tree")
    parser.add_argument("--devices", default="intel,pocl", help="device selectors (clreduce's)")
    parser.add_argument("--ops", default="sum,mean,var")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--shapes", default=SHAPES, help="R,K;R,K;... (rows scaled to --mb)")
    parser.add_argument("--mb", type=float, default=64.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)

    import pyopencl as cl

    import importlib

    import clreduce as after
    before = load_tree(Path(args.before).resolve(), "clreduce_before")
    trees = tuple((name, pkg, importlib.import_module(f"{pkg.__name__}.backends.opencl"),
                   importlib.import_module(f"{pkg.__name__}.plan").Problem)
                  for name, pkg in (("before", before), ("after", after)))
    print(f"# before: {before.__file__}\n# after:  {after.__file__}")
    dtype = np.dtype(args.dtype)
    rng = np.random.default_rng(0)
    ratios = {"kernel": [], "call": []}
    for selector in args.devices.split(","):
        device = trees[1][2].queue_for(selector).device
        ctx = cl.Context([device])
        queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
        print(f"## {device.name.strip()} ({device.platform.name.strip()}), {dtype.name}")
        for text in args.shapes.split(";"):
            rows, k = (int(v) for v in text.split(","))
            total = int(args.mb * 2**20 / dtype.itemsize)
            rows = max(1, min(rows, total // k))
            k = k if rows > 1 else min(k, total)
            if dtype.kind == "f":
                x = rng.standard_normal((rows, k), dtype=np.float32).astype(dtype)
            else:
                x = rng.integers(-2**40, 2**40, (rows, k)).astype(dtype)
            for op in args.ops.split(","):
                prepared, calls = {}, {}
                for name, pkg, backend, problem_cls in trees:
                    problem = problem_cls(rows=rows, row_len=k, dtype=dtype.name, op=op)
                    prepared[name] = backend.PreparedReduction(queue, x, problem)
                    fn = getattr(pkg, op)
                    calls[name] = (lambda fn=fn: fn(x, axis=-1, device=selector))
                    calls[name]()  # builds and warms
                    for e in prepared[name].enqueue():
                        e.wait()
                kt = {"before": [], "after": []}
                ct = {"before": [], "after": []}
                for r in range(args.rounds):
                    order = ("before", "after") if r % 2 == 0 else ("after", "before")
                    for name in order:
                        for _ in range(args.runs):
                            events = prepared[name].enqueue()
                            events[-1].wait()
                            kt[name].append(sum(e.profile.end - e.profile.start for e in events) * 1e-6)
                        for _ in range(args.runs):
                            t0 = time.perf_counter()
                            calls[name]()
                            ct[name].append((time.perf_counter() - t0) * 1e3)
                for p in prepared.values():
                    p.release()
                med = {n: (statistics.median(kt[n]), statistics.median(ct[n])) for n in kt}
                rk, rc = med["after"][0] / med["before"][0], med["after"][1] / med["before"][1]
                ratios["kernel"].append(rk)
                ratios["call"].append(rc)
                plan = prepared["after"].plan
                print(f"{op:5s} {rows}x{k}: kernel {med['before'][0]:8.3f} -> {med['after'][0]:8.3f} ms ({rk:5.3f})  "
                      f"call {med['before'][1]:8.3f} -> {med['after'][1]:8.3f} ms ({rc:5.3f})  "
                      f"[{plan.strategy} vec{plan.vec} split{plan.split}]")
                sys.stdout.flush()
    for what, values in ratios.items():
        if values:
            print(f"# {what} after/before: median {statistics.median(values):.3f}, max {max(values):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
