"""Per-call cost of public reductions on tiny arrays, beside the peers, fast path on and off.

OpenCL (default): for each device, rounds of ``--calls`` back-to-back calls on a (1, 128)
float32 array, the paths interleaved round by round so a loaded machine disturbs them
alike; prints the median over ``--repeats`` rounds of wall time per call (us):

* ``clreduce.sum(device array)``, and the same with ``CLREDUCE_FAST_PATH=0`` (full path)
* ``pyopencl.array.sum``
* ``clreduce.sum(numpy)`` (numpy in, numpy out, on the same queue), full path too
* ``numpy.sum``

Device-array results are not waited on per call (as the peer's); each round ends with
``queue.finish()``.

    python tools/bench_percall.py --device intel,pocl --calls 2000 --repeats 7

CUDA (``--cuda``, on a GPU machine): the same for cupy and CUDA torch inputs at 1x128
(clreduce.sum, full path, torch.sum, cupy.sum), then ``mean(axis=-1)`` on 8192x1000
float32 and float16 (inputs rotated over ``--rotate-mb`` so they are not served from L2)
beside torch.mean, cupy.mean and torch.compile(torch.mean). Each round synchronises the
device at its end. Before timing, every clreduce case is checked against the full path
(bit-for-bit) and must have been served by the fast path.

    python tools/bench_percall.py --cuda --calls 2000 --repeats 7 --json percall_cuda.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402


@contextlib.contextmanager
def full_path():
    """Every call takes the full path (validation, planning) while inside."""
    old = os.environ.get("CLREDUCE_FAST_PATH")
    os.environ["CLREDUCE_FAST_PATH"] = "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ["CLREDUCE_FAST_PATH"]
        else:
            os.environ["CLREDUCE_FAST_PATH"] = old


def interleaved(bodies: dict, calls: int, repeats: int, sync) -> dict:
    """Median and min over ``repeats`` rounds of seconds per call; round r runs every body
    once, in turn. A body is ``fn`` or ``(fn, context manager factory)``."""
    times = {name: [] for name in bodies}
    for name, body in bodies.items():  # warm-up: builds, plans, the fast path learns
        fn, ctx = body if isinstance(body, tuple) else (body, contextlib.nullcontext)
        with ctx():
            for _ in range(max(20, calls // 20)):
                fn()
        sync()
    for _ in range(repeats):
        for name, body in bodies.items():
            fn, ctx = body if isinstance(body, tuple) else (body, contextlib.nullcontext)
            with ctx():
                sync()
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                sync()
                times[name].append((time.perf_counter() - t0) / calls)
    return {name: {"median_us": round(statistics.median(t) * 1e6, 2), "min_us": round(min(t) * 1e6, 2)}
            for name, t in times.items()}


# ---- OpenCL -----------------------------------------------------------------------------------

def opencl_rows(device: str, calls: int, repeats: int) -> dict:
    import pyopencl.array as cla

    import clreduce
    from clreduce.backends import opencl

    queue = opencl.queue_for(device)
    x = np.random.default_rng(1).random((1, 128), dtype=np.float32)
    d = cla.to_device(queue, x)
    bodies = {
        "clreduce.sum(device array)": lambda: clreduce.sum(d),
        "clreduce.sum(device array), full path": (lambda: clreduce.sum(d), full_path),
        "pyopencl.array.sum": lambda: cla.sum(d),
        "clreduce.sum(numpy)": lambda: clreduce.sum(x, queue=queue),
        "clreduce.sum(numpy), full path": (lambda: clreduce.sum(x, queue=queue), full_path),
        "numpy.sum": lambda: np.sum(x),
    }
    return {"device": queue.device.name.strip(), "platform": queue.device.platform.name.strip(),
            "shape": [1, 128], "calls": calls, "repeats": repeats,
            "us_per_call": interleaved(bodies, calls, repeats, queue.finish)}


# ---- CUDA -------------------------------------------------------------------------------------

def _to_host(result) -> np.ndarray:
    if type(result).__module__.startswith("torch"):
        return result.cpu().numpy()
    import cupy

    return cupy.asnumpy(result)


def _check_fast(fn, name: str) -> None:
    """The fast path serves ``fn`` and answers bit-for-bit as the full path."""
    from clreduce import api

    with full_path():
        slow = fn()
    fn()  # learns

    def refuse(*args, **kwargs):
        raise AssertionError(f"{name}: the fast path did not serve a repeated call")

    real, api._reduce_slow = api._reduce_slow, refuse  # a learned call must not need it
    try:
        fast = fn()
    finally:
        api._reduce_slow = real
    s, f = _to_host(slow), _to_host(fast)
    if s.dtype != f.dtype or s.shape != f.shape or not np.array_equal(s, f, equal_nan=True):
        raise AssertionError(f"{name}: fast path {f!r} differs from full path {s!r}")


def cuda_rows(calls: int, repeats: int, rotate_mb: int) -> dict:
    import cupy

    import clreduce

    sync = cupy.cuda.Device().synchronize
    try:
        import torch
    except ImportError:
        torch = None
    x = cupy.random.default_rng(1).random((1, 128), dtype=cupy.float32)
    tiny = {"clreduce.sum(cupy)": lambda: clreduce.sum(x),
            "clreduce.sum(cupy), full path": (lambda: clreduce.sum(x), full_path),
            "cupy.sum": lambda: cupy.sum(x)}
    _check_fast(lambda: clreduce.sum(x), "sum(cupy 1x128)")
    if torch is not None:
        t = torch.from_dlpack(x).clone()
        tiny.update({"clreduce.sum(torch)": lambda: clreduce.sum(t),
                     "clreduce.sum(torch), full path": (lambda: clreduce.sum(t), full_path),
                     "torch.sum": lambda: torch.sum(t)})
        _check_fast(lambda: clreduce.sum(t), "sum(torch 1x128)")
    report = {"gpu": cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode(),
              "calls": calls, "repeats": repeats,
              "tiny_1x128_us_per_call": interleaved(tiny, calls, repeats, sync), "8192x1000_mean": {}}
    for dtype in ("float32", "float16"):
        one = cupy.random.default_rng(2).standard_normal((8192, 1000), dtype=cupy.float32).astype(dtype)
        copies = max(1, (rotate_mb << 20) // one.nbytes)
        xs = [one.copy() for _ in range(copies)]
        state = {"i": 0}

        def rotating(fn, arrays):
            def body():
                state["i"] = (state["i"] + 1) % len(arrays)
                return fn(arrays[state["i"]])
            return body

        bodies = {"clreduce.mean(cupy)": rotating(lambda a: clreduce.mean(a, axis=-1), xs),
                  "clreduce.mean(cupy), full path": (rotating(lambda a: clreduce.mean(a, axis=-1), xs), full_path),
                  "cupy.mean": rotating(lambda a: cupy.mean(a, axis=-1), xs)}
        _check_fast(lambda: clreduce.mean(xs[0], axis=-1), f"mean(cupy 8192x1000 {dtype})")
        if torch is not None:
            ts = [torch.from_dlpack(a) for a in xs]
            bodies["clreduce.mean(torch)"] = rotating(lambda a: clreduce.mean(a, axis=-1), ts)
            bodies["torch.mean"] = rotating(lambda a: torch.mean(a, -1), ts)
            _check_fast(lambda: clreduce.mean(ts[0], axis=-1), f"mean(torch 8192x1000 {dtype})")
            try:
                compiled = torch.compile(lambda a: torch.mean(a, -1))
                compiled(ts[0])
                bodies["torch.compile(mean)"] = rotating(compiled, ts)
            except Exception as exc:  # noqa: BLE001 - reported, not fatal
                report.setdefault("unavailable", {})["torch.compile"] = str(exc).splitlines()[0][:200]
        rows = interleaved(bodies, max(200, calls // 4), repeats, sync)
        gbps = {name: round(one.nbytes / (r["median_us"] * 1e-6) / 1e9, 1) for name, r in rows.items()}
        report["8192x1000_mean"][dtype] = {"us_per_call": rows, "gbps_read": gbps, "copies_rotated": copies}
        del xs
        cupy.get_default_memory_pool().free_all_blocks()
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="intel,pocl", help="OpenCL devices (selectors), comma-separated")
    ap.add_argument("--cuda", action="store_true", help="time the CUDA backend (cupy, torch) instead")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--rotate-mb", type=int, default=512, help="CUDA: bytes the 8192x1000 inputs rotate over")
    ap.add_argument("--json", default=None, help="also write the report here")
    args = ap.parse_args(argv)
    if args.cuda:
        report = cuda_rows(args.calls, args.repeats, args.rotate_mb)
    else:
        report = {"opencl": [opencl_rows(d, args.calls, args.repeats) for d in args.device.split(",") if d]}
    emit(report, args.json)
    return 0


def emit(report: dict, path: str | None) -> None:
    """Print the report as JSON, and write it to ``path`` when given."""
    text = json.dumps(report, indent=1)
    print(text)
    if path:
        Path(path).write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
