"""Benchmark clreduce on a Dask cluster against dask's own numpy reductions, same data and chunks.

The array (float32, ``--gb`` gigabytes, rows x ``--cols``) is generated block by block on the
workers with ``dask.array.random`` and persisted there, so no process ever holds all of it
and the timings hold the reductions only. Then, on the same cluster and the same blocks::

    clreduce.mean(darr, axis=-1)   vs   darr.mean(axis=-1)
    clreduce.mean(darr, axis=0)    vs   darr.mean(axis=0)

each warmed up once and timed ``--repeat`` times (median wall time of compute, and GB/s of
the array's bytes over it). Each worker reduces on its own default device: its
CLREDUCE_DEVICE / PYOPENCL_CTX, or ``--devices`` (one selector per worker, README "Dask").

    python tools/bench_dask.py --gb 4 --workers 2 --devices pocl,pocl --json

Needs: pip install 'clreduce[dask]'. A benchmark is a program, never a test; run it on a
quiet machine (the workers need about --gb of memory together, plus a block each).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import clreduce  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gb", type=float, default=4.0, help="array size in GB (1e9 bytes), float32 (default 4)")
    p.add_argument("--cols", type=int, default=4096, help="row length: the last axis (default 4096)")
    p.add_argument("--chunk-mb", type=float, default=128.0, help="block size in MB, whole rows (default 128)")
    p.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (default 2)")
    p.add_argument("--threads", type=int, default=1, help="threads per worker (default 1)")
    p.add_argument("--devices", default=None,
                   help="comma-separated device selectors, worker i gets the i-th (default: each worker's env)")
    p.add_argument("--address", default=None, help="use this running scheduler instead of a LocalCluster")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per case (default 5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    return p.parse_args(argv)


def _worker_devices():
    from clreduce.backends import opencl

    queue = opencl.default_queue()
    return f"{queue.device.platform.name.strip()} / {queue.device.name.strip()} ({opencl.default_reason()})"


def _time(client, make, repeat):
    """Median wall seconds of computing ``make()`` (a fresh graph each run), after one warm-up."""
    result = client.compute(make()).result()
    times = []
    for _ in range(repeat):
        lazy = make()
        t0 = time.perf_counter()
        client.compute(lazy).result()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, result


def main(argv=None) -> int:
    args = parse_args(argv)
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    cols = args.cols
    rows = max(1, int(args.gb * 1e9 // (4 * cols)))
    block_rows = max(1, min(rows, int(args.chunk_mb * 1e6 // (4 * cols))))
    cluster = None
    if args.address:
        client = Client(args.address)
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=args.threads, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
    try:
        if args.devices:
            from clreduce.dask_workers import DeviceAssignment

            client.register_plugin(DeviceAssignment(args.devices.split(",")))
        devices = client.run(_worker_devices)
        rng = da.random.default_rng(args.seed)
        darr = rng.standard_normal((rows, cols), chunks=(block_rows, cols), dtype=np.float32).persist()
        wait(darr)
        nbytes = darr.nbytes
        cases = {}
        for axis in (-1, 0):
            mine, my_times, mine_value = _time(client, lambda: clreduce.mean(darr, axis=axis), args.repeat)
            theirs, their_times, their_value = _time(client, lambda: darr.mean(axis=axis), args.repeat)
            cases[f"mean axis={axis}"] = {
                "clreduce_s": mine, "dask_numpy_s": theirs,
                "clreduce_GBps": nbytes / mine / 1e9, "dask_numpy_GBps": nbytes / theirs / 1e9,
                "speedup": theirs / mine, "clreduce_runs_s": my_times, "dask_numpy_runs_s": their_times,
                # agreement with dask+numpy; both are float32 means of N(0, 1) data
                "max_abs_diff": float(np.max(np.abs(mine_value.astype(np.float64) - their_value))),
                "out_shape": list(np.shape(mine_value)),
            }
        report = {
            "shape": [rows, cols], "dtype": "float32", "bytes": int(nbytes), "chunks": [block_rows, cols],
            "blocks": math.ceil(rows / block_rows), "workers": devices, "threads_per_worker": args.threads,
            "repeat": args.repeat, "cases": cases,
        }
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"float32 {rows}x{cols} ({nbytes / 1e9:.2f} GB), blocks of {block_rows} rows "
              f"({report['blocks']} blocks); median of {args.repeat}")
        for name, device in sorted(devices.items()):
            print(f"  worker {name}: {device}")
        print(f"{'case':<14}{'clreduce s':>12}{'GB/s':>8}{'dask+numpy s':>14}{'GB/s':>8}{'speedup':>9}{'max abs diff':>14}")
        for name, c in cases.items():
            print(f"{name:<14}{c['clreduce_s']:>12.4f}{c['clreduce_GBps']:>8.2f}{c['dask_numpy_s']:>14.4f}"
                  f"{c['dask_numpy_GBps']:>8.2f}{c['speedup']:>9.2f}{c['max_abs_diff']:>14.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
