#!/usr/bin/env python3
"""Wall time and peak memory of numpy inputs that run in pieces (clreduce/backends/cl_chunks.py).

Cases, each a float32 array of about ``--mb`` MB reduced with ``mean``, on every CPU
OpenCL device (or ``--device``):

* ``beyond-alloc``  C-contiguous, ``CLREDUCE_MAX_ALLOC_BYTES`` set to 1/8 of it: wrapped
  pieces of whole rows;
* ``copied``        the same with ``CLREDUCE_ZERO_COPY=0``: each piece copied to a device
  buffer (what a device without shared memory does);
* ``long-row``      one row (``axis=None``), the same limit: pieces along K, merged;
* ``leading-axis``  ``axis=0`` of a 2-D array, the same limit: one strided row split along K;
* ``transposed``    ``x.T`` reduced over its last axis: read in place as a leading-axis
  reduction of ``x`` (``cl_host.base_order``);
* ``strided``       rows sliced out of wider rows (``y[:, :1024]`` of a (rows, 1025) array):
  gathered into C order piece by piece (pieces of max(16 MB, 1/32 of the input)).

Each case runs with ``IN_FLIGHT`` 2 (the default: the host prepares piece i+1 while the
device reduces piece i) and 1 (one piece at a time), interleaved A B A B, and the strided case
also as one whole gather (the old behaviour: a full C-order copy first). GB/s = input bytes /
median wall time of the public call. Peak memory growth over the input is measured in a
fresh process per case: the resident set's peak (``VmHWM``, reset through
``/proc/self/clear_refs`` after a first call built the kernels) minus the resident set
before the call; memory the allocator kept from the first call and reuses does not count,
as it would not in a program that reduces repeatedly.

    python tools/bench_pieces.py --mb 256 --runs 7
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

CASES = ("beyond-alloc", "copied", "long-row", "leading-axis", "transposed", "strided")


def make_case(name: str, nbytes: int):
    """(array, axis, CLREDUCE_MAX_ALLOC_BYTES or None)."""
    n = nbytes // 4
    rng = np.random.default_rng(0)
    if name in ("beyond-alloc", "copied"):
        return rng.random((n // 1024, 1024), dtype=np.float32), -1, nbytes // 8
    if name == "long-row":
        return rng.random(n, dtype=np.float32), None, nbytes // 8
    if name == "leading-axis":
        return rng.random((n // 256, 256), dtype=np.float32), 0, nbytes // 8
    if name == "transposed":
        return rng.random((1024, n // 1024), dtype=np.float32).T, -1, None
    if name == "strided":
        return rng.random((n // 1024, 1025), dtype=np.float32)[:, :1024], -1, None
    raise ValueError(name)


def time_case(device, name: str, nbytes: int, runs: int) -> dict:
    import clreduce
    from clreduce.backends import cl_chunks

    x, axis, limit = make_case(name, nbytes)
    if limit:
        os.environ["CLREDUCE_MAX_ALLOC_BYTES"] = str(limit)
    else:
        os.environ.pop("CLREDUCE_MAX_ALLOC_BYTES", None)
    if name == "copied":
        os.environ["CLREDUCE_ZERO_COPY"] = "0"
    want = x.mean(axis=axis, dtype=np.float64)
    configs = {"in_flight_2": (2, cl_chunks.GATHER_MIN_BYTES), "in_flight_1": (1, cl_chunks.GATHER_MIN_BYTES)}
    if name in ("strided", "transposed"):
        configs["whole_gather"] = (2, 1 << 62)
    default_min = cl_chunks.GATHER_MIN_BYTES
    times = {k: [] for k in configs}
    try:
        for _ in range(runs + 1):  # the first round warms up (builds, probes)
            for key, (flight, gather_min) in configs.items():
                cl_chunks.IN_FLIGHT, cl_chunks.GATHER_MIN_BYTES = flight, gather_min
                t0 = time.perf_counter()
                got = clreduce.mean(x, axis=axis, device=device)
                times[key].append(time.perf_counter() - t0)
                assert np.allclose(got, want, rtol=1e-4), (name, key)
    finally:
        cl_chunks.IN_FLIGHT, cl_chunks.GATHER_MIN_BYTES = 2, default_min
        os.environ.pop("CLREDUCE_MAX_ALLOC_BYTES", None)
        os.environ.pop("CLREDUCE_ZERO_COPY", None)
    return {k: x.nbytes / statistics.median(v[1:]) / 1e9 for k, v in times.items()}


_PEAK = r"""
import os, sys, numpy as np
sys.path.insert(0, sys.argv[4])
import clreduce
from tools.bench_pieces import make_case
device, name, nbytes = sys.argv[1], sys.argv[2], int(sys.argv[3])
if name == "copied":
    os.environ["CLREDUCE_ZERO_COPY"] = "0"
x, axis, limit = make_case(name, nbytes)
if limit:
    os.environ["CLREDUCE_MAX_ALLOC_BYTES"] = str(limit)
clreduce.mean(x, axis=axis, device=device)  # builds every kernel the pieces need

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

with open("/proc/self/clear_refs", "w") as f:  # resets VmHWM, the peak resident set (Linux)
    f.write("5")
before = status("VmRSS:")
clreduce.mean(x, axis=axis, device=device)
print(status("VmHWM:") - before)
"""


def peak_growth(device_name: str, name: str, nbytes: int) -> int:
    out = subprocess.run([sys.executable, "-c", _PEAK, device_name, name, str(nbytes), str(ROOT)],
                         capture_output=True, text=True, timeout=900)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return int(out.stdout.split()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--device", help="a CLREDUCE_DEVICE selector (default: every CPU device)")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--no-peak", action="store_true", help="skip the peak-memory subprocesses")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    import pyopencl as cl

    from clreduce.backends import opencl

    devices = ([opencl._select_by_selector(args.device)] if args.device else
               [d for d in opencl.all_devices() if d.type & cl.device_type.CPU])
    nbytes = args.mb << 20
    report = []
    for device in devices:
        label = f"{device.platform.name.strip()} / {device.name.strip()}"
        print(f"{label}: mean of float32, {args.mb} MB, GB/s (median of {args.runs}); peak growth over the input")
        for name in args.cases.split(","):
            gbps = time_case(device, name, nbytes, args.runs)
            peak = None if args.no_peak else peak_growth(device.platform.name.strip(), name, nbytes)
            cells = "  ".join(f"{k} {v:6.2f}" for k, v in gbps.items())
            ratio = gbps["in_flight_2"] / gbps["in_flight_1"]
            extra = "" if peak is None else f"  peak +{peak / 2**20:.0f} MB"
            print(f"  {name:<13} {cells}  (2 vs 1 in flight: {ratio:.2f}x){extra}", flush=True)
            report.append({"device": label, "case": name, "mb": args.mb, "gbps": gbps, "peak_growth": peak})
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
