"""Per-call cost of a public reduction on a tiny device-resident array (and a tiny numpy one).

    python tools/bench_percall.py --device intel --calls 2000 --repeats 7

Prints the median over ``repeats`` of the mean time per call of ``calls`` back-to-back
``clreduce.sum(x, axis=-1)`` calls (the result is read back each call: a pyopencl result
is waited on with ``.get()``). Run it from two checkouts, interleaved, to compare commits;
on a loaded machine compare medians of several interleaved runs, not single numbers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="intel")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--shape", default="8x64")
    args = parser.parse_args()

    import pyopencl.array as cla

    import clreduce
    from clreduce.backends import opencl

    queue = opencl.queue_for(args.device)
    shape = tuple(int(n) for n in args.shape.split("x"))
    host = np.random.default_rng(0).random(shape, dtype=np.float32)
    dev = cla.to_device(queue, host)
    results = {}
    for label, x, finish in (("cl_array", dev, lambda r: r.get()), ("numpy", host, lambda r: r)):
        for _ in range(50):  # warm-up: build, plan, caches
            finish(clreduce.sum(x, axis=-1))
        per_call, cpu = [], []
        for _ in range(args.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(args.calls):
                finish(clreduce.sum(x, axis=-1))
            per_call.append((time.perf_counter() - t0) / args.calls * 1e6)
            cpu.append((time.process_time() - c0) / args.calls * 1e6)
        # process CPU time (all threads, runtime workers included) is less disturbed than
        # wall time by other processes on a loaded machine
        results[label] = {"median_us": round(statistics.median(per_call), 2),
                          "min_us": round(min(per_call), 2), "cpu_min_us": round(min(cpu), 2)}
    print(json.dumps({"device": queue.device.name.strip(), "shape": shape, "calls": args.calls, **results}))


if __name__ == "__main__":
    main()
