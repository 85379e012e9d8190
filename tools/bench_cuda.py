#!/usr/bin/env python3
"""Benchmark the CUDA backend against torch and CuPy on the DESIGN.md shape list (full size).

For each shape (float32, then float16), reduced along the last axis with ``mean``:

* ``clreduce``  clreduce.mean(x, axis=-1) on a cupy array (the public API, plans cached)
* ``kernel``    the same plan's kernels alone (PreparedReduction.run: no API overhead)
* ``torch``     torch.mean(x, -1) on a tensor sharing the cupy array's memory (DLPack)
* ``cupy``      cupy.mean(x, axis=-1)
* ``copy``      a device-to-device cudaMemcpyAsync of the same bytes (read + write counted)

Timing: CUDA events around batches of back-to-back calls on one stream, after warm-up, in
the same process; each number is the median of ``--batches`` batch means. Inputs rotate
over enough copies that every batch reads at least ``--rotate-bytes`` (default 512 MB, ten
times H100's 50 MB L2), so small shapes are not timed out of L2. GB/s = bytes read / time
(copy: read + write). Results are checked against float64 before timing.

    python tools/bench_cuda.py --out benchmarks            # writes cuda_<gpu>_<date>.{md,json}
    python tools/bench_cuda.py --sweep --out /tmp/sweep    # plan-variant sweep (tuning)

Before/after a kernel change (the same GPU, one session): ``--ops`` times the kernels alone
(PreparedReduction.run) for several ops and writes JSON; run it with each tree first on
``sys.path`` (this file may be copied into the old tree), then ``--compare`` renders the
table of after/before ratios:

    python tools/bench_cuda.py --ops mean,max,argmax,var --json before.json   # in the old tree
    python tools/bench_cuda.py --ops mean,max,argmax,var --json after.json
    python tools/bench_cuda.py --compare before.json after.json > compare.md

Every op beside the peers (issue 11): ``--peers`` with ``--ops`` times, per op and shape, the
public call, the kernels alone, torch, ``torch.compile`` (default mode, static shapes, one
compiled function per case) and CuPy, all checked against float64 first (default shapes: the
short-row ones; ``--no-compile`` leaves torch.compile out); ``--sweep --ops argmax,var`` sweeps
team widths and unrolling for those ops:

    python tools/bench_cuda.py --ops max,min,argmax,argmin,var,std --peers --json ops.json
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import platform
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

SHAPES = [
    (442368, 128), (1048576, 32), (16777216, 16), (65536, 4096), (8192, 1000),
    (4096, 65536), (64, 4194304), (1, 268435456), (4194304, 64),
]


# ---- timing ---------------------------------------------------------------------------------
def time_batches(fn, inputs, *, batches: int = 7, target_ms: float = 15.0, warmup: int = 3) -> dict:
    """Median over ``batches`` of (batch time / calls) in ms, with CUDA events on the current
    stream; calls per batch chosen so a batch lasts about ``target_ms``."""
    import cupy

    for i in range(warmup):
        fn(inputs[i % len(inputs)])
    cupy.cuda.get_current_stream().synchronize()
    # estimate
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for i in range(3):
        fn(inputs[i % len(inputs)])
    end.record()
    end.synchronize()
    est = max(cupy.cuda.get_elapsed_time(start, end) / 3, 1e-3)
    calls = int(min(400, max(3, math.ceil(target_ms / est))))
    calls = max(calls, len(inputs))
    per_call = []
    for _ in range(batches):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for i in range(calls):
            fn(inputs[i % len(inputs)])
        end.record()
        end.synchronize()
        per_call.append(cupy.cuda.get_elapsed_time(start, end) / calls)
    return {"ms": statistics.median(per_call), "min_ms": min(per_call), "max_ms": max(per_call), "calls": calls}


def make_inputs(rows: int, k: int, dtype: str, rotate_bytes: int, seed: int = 0):
    import cupy

    nbytes = rows * k * np.dtype(dtype).itemsize
    copies = max(1, math.ceil(rotate_bytes / nbytes))
    rng = cupy.random.default_rng(seed)
    base = rng.standard_normal((rows, k), dtype=cupy.float32) + 0.25
    xs = [base.astype(dtype)]
    for i in range(1, copies):
        xs.append(xs[0] * (1.0 + 1e-3 * i) if dtype != "float16" else (xs[0] + np.float16(0.001 * i)))
    del base
    return xs


def gpu_info() -> dict:
    import cupy

    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    info = {"gpu": name, "sm_count": props["multiProcessorCount"], "cc": f"{props['major']}.{props['minor']}",
            "l2_bytes": props.get("l2CacheSize"), "driver": cupy.cuda.runtime.driverGetVersion(),
            "runtime": cupy.cuda.runtime.runtimeGetVersion(), "cupy": cupy.__version__,
            "python": platform.python_version()}
    try:
        import torch

        info["torch"] = torch.__version__
    except Exception:  # noqa: BLE001
        info["torch"] = None
    return info


def check(result, x, what: str) -> float:
    """max relative error of a row mean against float64."""
    import cupy

    ref = cupy.mean(x.astype(cupy.float64), axis=-1)
    got = cupy.asarray(result).astype(cupy.float64)
    scale = cupy.maximum(cupy.abs(ref), 1e-3)
    err = float(cupy.max(cupy.abs(got - ref) / scale))
    return err


# ---- the benchmark --------------------------------------------------------------------------------
def bench(shapes, dtypes, *, rotate_bytes: int, batches: int, log=print) -> dict:
    import cupy
    import torch

    import clreduce
    from clreduce.backends.cuda import PreparedReduction
    from clreduce.plan import Problem

    info = gpu_info()
    log(f"# {info['gpu']} ({info['sm_count']} SMs), cupy {info['cupy']}, torch {info['torch']}")
    rows_out = []
    for dtype in dtypes:
        for rows, k in shapes:
            xs = make_inputs(rows, k, dtype, rotate_bytes)
            nbytes = xs[0].nbytes
            tensors = [torch.from_dlpack(x) for x in xs]
            entry = {"dtype": dtype, "rows": rows, "k": k, "bytes": nbytes, "copies": len(xs)}
            # correctness first
            errs = {"clreduce": check(clreduce.mean(xs[0], axis=-1), xs[0], "clreduce"),
                    "torch": check(cupy.from_dlpack(torch.mean(tensors[0], -1)), xs[0], "torch"),
                    "cupy": check(cupy.mean(xs[0], axis=-1), xs[0], "cupy")}
            entry["max_rel_err"] = errs
            prepared = [PreparedReduction(x, Problem(rows, k, dtype, "mean")) for x in xs]
            entry["plan"] = _plan_summary(prepared[0])
            timings = {
                "clreduce": time_batches(lambda x: clreduce.mean(x, axis=-1), xs, batches=batches),
                "kernel": time_batches(lambda p: p.run(), prepared, batches=batches),
                "torch": time_batches(lambda t: torch.mean(t, -1), tensors, batches=batches),
                "cupy": time_batches(lambda x: cupy.mean(x, axis=-1), xs, batches=batches),
            }
            dst = cupy.empty_like(xs[0])
            stream = cupy.cuda.get_current_stream()

            def copy(x, dst=dst):
                cupy.cuda.runtime.memcpyAsync(dst.data.ptr, x.data.ptr, x.nbytes,
                                              cupy.cuda.runtime.memcpyDeviceToDevice, stream.ptr)

            timings["copy"] = time_batches(copy, xs, batches=batches)
            for name, t in timings.items():
                moved = 2 * nbytes if name == "copy" else nbytes
                t["gbps"] = moved / (t["ms"] * 1e-3) / 1e9
            entry["timings"] = timings
            rows_out.append(entry)
            g = {n: t["gbps"] for n, t in timings.items()}
            log(f"{dtype:8s} {rows:>9d} x {k:<9d} {nbytes / 2**20:8.0f} MiB  clreduce {g['clreduce']:7.0f}  "
                f"kernel {g['kernel']:7.0f}  torch {g['torch']:7.0f}  cupy {g['cupy']:7.0f}  copy {g['copy']:7.0f} GB/s"
                f"  [{entry['plan']['strategy']} lanes {entry['plan']['lanes']} wg {entry['plan']['wg']}]"
                f"  err {max(errs.values()):.1e}")
            del xs, tensors, prepared, dst
            cupy.get_default_memory_pool().free_all_blocks()
    return {"info": info, "date": _dt.date.today().isoformat(), "results": rows_out,
            "method": "CUDA events around batches of back-to-back calls after 3 warm-up calls; median of "
                      f"{batches} batch means; inputs rotate over copies totalling >= {rotate_bytes >> 20} MiB; "
                      "GB/s = bytes read / time (copy: read + write)"}


def _plan_summary(prepared) -> dict:
    p = prepared.plan
    first = dict(p.passes[0].defines)
    return {"strategy": p.strategy, "lanes": p.lanes, "wg": p.wg_size, "vec": p.vec, "split": p.split,
            "sg_mode": p.sg_mode, "unroll": first.get("UNROLL"), "min_blocks": first.get("MIN_BLOCKS"),
            "grids": [launch.global_size // launch.local_size for launch in p.passes],
            "resident_blocks_per_sm": prepared.resident_blocks()}


def targets(report: dict) -> list[dict]:
    """The issue's targets, per float32/float16 shape."""
    out = []
    for r in report["results"]:
        t = {n: v["gbps"] for n, v in r["timings"].items()}
        best_peer = max(t["torch"], t["cupy"])
        row = {"dtype": r["dtype"], "shape": f"{r['rows']}x{r['k']}",
               "vs_best_peer": t["clreduce"] / best_peer,
               "vs_copy": t["clreduce"] / t["copy"] if r["bytes"] >= 256 * 10**6 else None,
               "vs_torch": t["clreduce"] / t["torch"] if r["k"] <= 64 else None}
        row["met"] = (row["vs_best_peer"] >= 1.0 and (row["vs_copy"] is None or row["vs_copy"] >= 0.9)
                      and (row["vs_torch"] is None or row["vs_torch"] >= 2.0))
        out.append(row)
    return out


def markdown(report: dict) -> str:
    info = report["info"]
    lines = [f"# clreduce CUDA backend: row mean on {info['gpu']}", "",
             f"Date {report['date']}; {info['sm_count']} SMs, compute capability {info['cc']}; CUDA driver "
             f"{info['driver']}, runtime {info['runtime']}; CuPy {info['cupy']}; torch {info['torch']}; "
             f"Python {info['python']}.", "",
             f"Method: {report['method']}.", "",
             "GB/s per shape (bytes read / time; copy counts read + write). `kernel` is the same plan "
             "without the API's Python overhead.", "",
             "| dtype | shape | MiB | clreduce | kernel | torch | cupy | copy | clreduce / best peer | "
             "clreduce / copy | plan |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    tgt = {(t["dtype"], t["shape"]): t for t in targets(report)}
    for r in report["results"]:
        t = {n: v["gbps"] for n, v in r["timings"].items()}
        tt = tgt[(r["dtype"], f"{r['rows']}x{r['k']}")]
        p = r["plan"]
        plan_s = f"{p['strategy']}, lanes {p['lanes']}, wg {p['wg']}, vec {p['vec']}" + \
                 (f", split {p['split']}" if p["split"] > 1 else "")
        lines.append(f"| {r['dtype']} | {r['rows']}×{r['k']} | {r['bytes'] / 2**20:.0f} | {t['clreduce']:.0f} | "
                     f"{t['kernel']:.0f} | {t['torch']:.0f} | {t['cupy']:.0f} | {t['copy']:.0f} | "
                     f"{tt['vs_best_peer']:.2f} | "
                     f"{'' if tt['vs_copy'] is None else format(tt['vs_copy'], '.2f')} | {plan_s} |")
    lines += ["", "Targets (issue 4): clreduce >= the better of torch and cupy on every shape; >= 90 % of the "
              "copy's GB/s on arrays of 256 MB and more; >= 2x torch where K <= 64.", "",
              "| dtype | shape | vs best peer | vs copy | vs torch (K <= 64) | met |", "|---|---|---:|---:|---:|---|"]
    for t in targets(report):
        fmt = lambda v: "" if v is None else f"{v:.2f}"  # noqa: E731
        lines.append(f"| {t['dtype']} | {t['shape'].replace('x', '×')} | {fmt(t['vs_best_peer'])} | "
                     f"{fmt(t['vs_copy'])} | {fmt(t['vs_torch'])} | {'yes' if t['met'] else '**no**'} |")
    missed = [(r, tgt[(r["dtype"], f"{r['rows']}x{r['k']}")]) for r in report["results"]]
    missed = [(r, t) for r, t in missed if not t["met"]]
    if missed:
        lines += ["", "Missed:"] + [f"- {miss_reason(r, t)}" for r, t in missed]
    return "\n".join(lines) + "\n"


def miss_reason(r: dict, target: dict) -> str:
    """Why a target was missed, from the row's own numbers: the kernel alone short of the mark
    (the kernel's work), or the kernel meeting it while the public call does not (the host's
    time per call bounds back-to-back calls)."""
    t = {n: v["gbps"] for n, v in r["timings"].items()}
    us = {n: r["bytes"] / (g * 1e3) for n, g in t.items() if g}  # time per call (copy: read + write)
    best = "torch" if t["torch"] >= t["cupy"] else "cupy"
    kernel_meets = (t["kernel"] >= t[best] and (target["vs_copy"] is None or t["kernel"] >= 0.9 * t["copy"])
                    and (target["vs_torch"] is None or t["kernel"] >= 2 * t["torch"]))
    head = f"{r['dtype']} {r['rows']}x{r['k']}: "
    if kernel_meets:
        return (head + f"the kernel alone meets it ({t['kernel']:.0f} GB/s, {us['kernel']:.1f} us a call); the public "
                f"call takes {us['clreduce']:.1f} us a call back to back against {best}'s {us[best]:.1f}: host-bound "
                "(tools/bench_percall.py --cuda, tools/bench_cuda.py --profile-api)")
    return (head + f"the kernel itself falls short: {t['kernel']:.0f} GB/s against {best} {t[best]:.0f} and the "
            f"copy {t['copy']:.0f}")


    return "\n".join(lines) + "\n"


# ---- sweep ----------------------------------------------------------------------------------------
SWEEP_ONLY = {"lanes": None, "unroll": None}  # --sweep-lanes / --sweep-unroll: a smaller grid


def sweep_candidates(caps, rows: int, k: int, dtype: str):
    """(label, custom_plan kwargs) to try for one shape."""
    itemsize = np.dtype(dtype).itemsize
    vec = max(1, min(16 // itemsize, 1 << (k.bit_length() - 1)))
    cands = []
    max_lanes = 1
    while max_lanes * vec < k and max_lanes < 1024:
        max_lanes *= 2
    long_rows = rows * 8 < caps.compute_units * 8 and k >= 1 << 15
    if not long_rows:
        lanes = 1
        while lanes <= max_lanes:
            for unroll in (1, 2, 4, 8):
                if unroll > 1 and unroll * lanes * vec > 2 * k:
                    continue
                if (SWEEP_ONLY["lanes"] and lanes not in SWEEP_ONLY["lanes"]) or (
                        SWEEP_ONLY["unroll"] and unroll not in SWEEP_ONLY["unroll"]):
                    continue
                wg = max(256, lanes)
                cands.append((f"lanes{lanes}-u{unroll}-wg{wg}", dict(lanes=lanes, wg=wg, UNROLL=unroll)))
            lanes *= 2
    if k >= 1 << 15 and rows < 1024:
        for wg in (256, 512):
            for m in (4, 5, 6, 8, 10, 12, 16, 20, 24, 32):
                split = max(2, math.ceil(caps.compute_units * m / rows))
                if k // split < 2048:
                    continue
                for unroll in (4, 8):
                    cands.append((f"split{split}-wg{wg}-u{unroll}", dict(lanes=wg, wg=wg, split=split, UNROLL=unroll)))
    return cands


def run_sweep(shapes, dtypes, *, rotate_bytes: int, batches: int, stage2: bool = False, ops=("mean",),
              log=print) -> dict:
    import cupy

    from clreduce.backends.cuda import PreparedReduction
    from clreduce.backends.cuda.probe import probe_device
    from clreduce.backends.cuda.tune import custom_plan
    from clreduce.plan import Problem

    caps = probe_device(cupy.cuda.Device().id)
    out = []
    for dtype, (rows, k), op in ((d, s, o) for d in dtypes for s in shapes for o in ops):
        if True:
            xs = make_inputs(rows, k, dtype, rotate_bytes)
            problem = Problem(rows, k, dtype, op)
            results = []

            def try_plan(label, launch_plan):
                try:
                    preps = [PreparedReduction(x, problem, launch_plan=launch_plan) for x in xs]
                    err = _op_error(preps[0].run(), xs[0], op)
                    t = time_batches(lambda p: p.run(), preps, batches=batches, target_ms=8)
                    res = {"label": label, "ms": t["ms"], "gbps": xs[0].nbytes / (t["ms"] * 1e-3) / 1e9,
                           "err": err, "resident": preps[0].resident_blocks(),
                           "grid": [q.global_size // q.local_size for q in launch_plan.passes]}
                except Exception as exc:  # noqa: BLE001
                    res = {"label": label, "error": f"{type(exc).__name__}: {exc}"[:300]}
                results.append(res)
                return res

            from clreduce.backends.cuda.tune import cuda_plan
            try_plan("default", cuda_plan(caps, problem))
            for label, kw in sweep_candidates(caps, rows, k, dtype):
                try:
                    lp = custom_plan(caps, problem, **kw)
                except Exception as exc:  # noqa: BLE001
                    results.append({"label": label, "error": str(exc)[:200]})
                    continue
                try_plan(label, lp)
            ok = sorted((r for r in results if "gbps" in r and r["err"] < 1e-2), key=lambda r: -r["gbps"])
            # stage 2: block size, register cap and grid for the best two
            for best in (ok[:2] if stage2 else []):
                kw = dict(next((kw for label, kw in sweep_candidates(caps, rows, k, dtype) if label == best["label"]), {}))
                if not kw:
                    continue
                for wg in (128, 256, 512, 1024):
                    if wg < kw.get("lanes", 1):
                        continue
                    for mb in (1, max(1, 2048 // wg)):
                        kw2 = dict(kw, wg=wg, MIN_BLOCKS=mb)
                        if kw.get("split"):
                            kw2["lanes"] = wg
                        label = f"{best['label']}|wg{wg}-mb{mb}"
                        try:
                            try_plan(label, custom_plan(caps, problem, **kw2))
                        except Exception as exc:  # noqa: BLE001
                            results.append({"label": label, "error": str(exc)[:200]})
                if not kw.get("split"):
                    res = best.get("resident", [0])[0] or 8
                    for waves in (1, 2, 4, 16):
                        label = f"{best['label']}|grid{waves}w"
                        try:
                            try_plan(label, custom_plan(caps, problem, groups=res * caps.compute_units * waves, **kw))
                        except Exception as exc:  # noqa: BLE001
                            results.append({"label": label, "error": str(exc)[:200]})
            ok = sorted((r for r in results if "gbps" in r and r["err"] < 1e-2), key=lambda r: -r["gbps"])
            bad = [r for r in results if "gbps" in r and r["err"] >= 1e-2]
            errors = [r for r in results if "error" in r]
            default = next((r for r in results if r["label"] == "default"), {})
            log(f"{dtype} {rows}x{k} {op}: default {default.get('gbps', 0):.0f} GB/s; best: " +
                ", ".join(f"{r['label']} {r['gbps']:.0f}" for r in ok[:5]) +
                (f"; WRONG: {[r['label'] for r in bad]}" if bad else "") +
                (f"; errors: {len(errors)} ({errors[0]['error'][:120]})" if errors else ""))
            out.append({"dtype": dtype, "rows": rows, "k": k, "op": op, "results": results})
            del xs
            cupy.get_default_memory_pool().free_all_blocks()
    return {"info": gpu_info(), "sweep": out}


def profile_api(shape, dtype, calls: int = 2000) -> None:
    """Host microseconds per call (GPU synchronised only at the end) for the public API,
    the backend's reduce, the cached launcher, torch and CuPy; then the API under cProfile."""
    import cProfile
    import pstats

    import cupy
    import torch

    import clreduce
    from clreduce.backends import get_backend
    from clreduce.backends.cuda import _launcher, _merged_force
    from clreduce.plan import Problem

    rows, k = shape
    x = cupy.random.default_rng(0).standard_normal((rows, k), dtype=cupy.float32).astype(dtype)
    t = torch.from_dlpack(x)
    backend = get_backend("cuda")
    problem = Problem(rows, k, dtype, "mean")
    launcher = _launcher(x.device.id, problem, _merged_force(None))
    paths = {
        "clreduce.mean": lambda: clreduce.mean(x, axis=-1),
        "backend.reduce": lambda: backend.reduce(x, problem),
        "launcher": lambda: launcher(x, cupy),
        "torch.mean": lambda: torch.mean(t, -1),
        "cupy.mean": lambda: cupy.mean(x, axis=-1),
        "cupy.empty": lambda: cupy.empty(rows, dtype=cupy.float32),
    }
    for name, fn in paths.items():
        for _ in range(50):
            fn()
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        cupy.cuda.Device().synchronize()
        print(f"{name:16s} {1e6 * (time.perf_counter() - t0) / calls:8.1f} us/call (host-bound when above GPU time)")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        clreduce.mean(x, axis=-1)
    prof.disable()
    cupy.cuda.Device().synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(22)


# ---- before/after: kernels alone, several ops ---------------------------------------------------
def _reference(x, op: str):
    import cupy

    x64 = x.astype(cupy.float64)
    if op in ("sum", "mean", "max", "min", "var", "std"):
        return getattr(cupy, op)(x64, axis=-1)
    if op in ("argmax", "argmin"):
        return getattr(cupy, op)(x, axis=-1)
    raise ValueError(op)


def bench_ops(shapes, dtypes, ops, *, rotate_bytes: int, batches: int, log=print, json_path=None) -> dict:
    """Kernel time (PreparedReduction.run) of each op on each shape, results checked first.
    With ``json_path``, the report so far is written after every shape (a run cut short keeps them)."""
    import cupy

    import clreduce
    from clreduce.backends.cuda import PreparedReduction
    from clreduce.plan import Problem

    info = gpu_info()
    info["clreduce"] = str(Path(clreduce.__file__).resolve().parent)
    log(f"# {info['gpu']}; clreduce from {info['clreduce']}")
    rows_out = []
    report = {"info": info, "date": _dt.date.today().isoformat(), "rows": rows_out}
    for dtype in dtypes:
        for rows, k in shapes:
            xs = make_inputs(rows, k, dtype, rotate_bytes)
            for op in ops:
                got = cupy.asarray(getattr(clreduce, op)(xs[0], axis=-1))
                ref = _reference(xs[0], op)
                if op == "argmax":
                    err = float(cupy.mean((got != ref).astype(cupy.float64)))
                else:
                    scale = cupy.maximum(cupy.abs(ref), 1e-3)
                    err = float(cupy.max(cupy.abs(got.astype(cupy.float64) - ref) / scale))
                prepared = [PreparedReduction(x, Problem(rows, k, dtype, op)) for x in xs]
                t = time_batches(lambda p: p.run(), prepared, batches=batches)
                gbps = xs[0].nbytes / (t["ms"] * 1e-3) / 1e9
                rows_out.append({"dtype": dtype, "rows": rows, "k": k, "op": op, "ms": t["ms"], "gbps": gbps,
                                 "err": err, "plan": _plan_summary(prepared[0])})
                log(f"{dtype:8s} {rows:>9d} x {k:<9d} {op:7s} {gbps:7.0f} GB/s  err {err:.1e}")
                del prepared
            del xs
            cupy.get_default_memory_pool().free_all_blocks()
            if json_path:
                Path(json_path).write_text(json.dumps(report, indent=1))
    return report


# ---- every op beside torch, torch.compile and CuPy (issue 11 item 2) ----------------------------
SHORT_SHAPES = [(442368, 128), (1048576, 32), (16777216, 16), (8192, 1000), (4194304, 64)]


def _torch_op(torch, op: str):
    if op in ("max", "min"):
        fn = getattr(torch, "amax" if op == "max" else "amin")
        return lambda t: fn(t, -1)
    if op in ("var", "std"):
        fn = getattr(torch, op)
        return lambda t: fn(t, -1, correction=0)
    fn = getattr(torch, op)
    return lambda t: fn(t, -1)


def _cupy_op(cupy, op: str):
    fn = getattr(cupy, op)
    return lambda x: fn(x, axis=-1)


def _op_error(got, x, op: str) -> float:
    """Largest error against float64 (argmax/argmin: fraction of rows whose index differs)."""
    import cupy

    got = cupy.asarray(got)
    if op in ("argmax", "argmin"):
        ref = getattr(cupy, op)(x, axis=-1)
        return float(cupy.mean((got != ref).astype(cupy.float64)))
    ref = getattr(cupy, op)(x.astype(cupy.float64), axis=-1)
    scale = cupy.maximum(cupy.abs(ref), 1e-3)
    return float(cupy.max(cupy.abs(got.astype(cupy.float64) - ref) / scale))


def bench_peers(shapes, dtypes, ops, *, rotate_bytes: int, batches: int, compile_peer: bool = True,
                log=print, json_path=None) -> dict:
    """Per (dtype, shape, op): the public call (cupy in, cupy out), the kernels alone, torch,
    torch.compile (one compiled function per case, static shapes) and CuPy, plus the copy; all
    results checked against float64 first. With ``json_path`` the report is rewritten after
    every shape, so a run cut short keeps what it measured."""
    import cupy
    import torch

    import clreduce
    from clreduce.backends.cuda import PreparedReduction
    from clreduce.plan import Problem

    torch._dynamo.config.cache_size_limit = 1 << 10  # one compiled function per case
    info = gpu_info()
    log(f"# {info['gpu']} ({info['sm_count']} SMs), cupy {info['cupy']}, torch {info['torch']}")
    rows_out = []
    report = {"info": info, "date": _dt.date.today().isoformat(), "rows": rows_out,
              "method": "CUDA events around batches of back-to-back calls after 3 warm-up calls; median of "
                        f"{batches} batch means; inputs rotate over copies totalling >= {rotate_bytes >> 20} MiB; "
                        "GB/s = bytes read / time (copy: read + write)"}
    for dtype in dtypes:
        for rows, k in shapes:
            xs = make_inputs(rows, k, dtype, rotate_bytes)
            nbytes = xs[0].nbytes
            tensors = [torch.from_dlpack(x) for x in xs]
            dst = cupy.empty_like(xs[0])
            stream = cupy.cuda.get_current_stream()

            def copy(x, dst=dst):
                cupy.cuda.runtime.memcpyAsync(dst.data.ptr, x.data.ptr, x.nbytes,
                                              cupy.cuda.runtime.memcpyDeviceToDevice, stream.ptr)

            copy_gbps = 2 * nbytes / (time_batches(copy, xs, batches=batches)["ms"] * 1e-3) / 1e9
            del dst
            for op in ops:
                public = getattr(clreduce, op)
                eager = _torch_op(torch, op)
                impls = {"clreduce": (lambda x, f=public: f(x, axis=-1), xs)}
                prepared = [PreparedReduction(x, Problem(rows, k, dtype, op)) for x in xs]
                impls["kernel"] = (lambda p: p.run(), prepared)
                impls["clreduce(torch)"] = (lambda t, f=public: f(t, axis=-1), tensors)  # the torch path's host cost
                impls["torch"] = (eager, tensors)
                if compile_peer:
                    impls["torch.compile"] = (torch.compile(_torch_op(torch, op), dynamic=False), tensors)
                impls["cupy"] = (_cupy_op(cupy, op), xs)
                entry = {"dtype": dtype, "rows": rows, "k": k, "op": op, "bytes": nbytes, "copy_gbps": copy_gbps,
                         "plan": _plan_summary(prepared[0]), "gbps": {}, "err": {}}
                for name, (fn, inputs) in impls.items():
                    try:
                        out = fn(inputs[0])
                        if name == "kernel":
                            out = prepared[0].out
                        elif name.startswith("torch") or name == "clreduce(torch)":
                            out = cupy.from_dlpack(out.contiguous())
                        entry["err"][name] = _op_error(out, xs[0], op)
                        t = time_batches(fn, inputs, batches=batches)
                        entry["gbps"][name] = nbytes / (t["ms"] * 1e-3) / 1e9
                    except Exception as exc:  # noqa: BLE001 - a peer that cannot run this case
                        entry["gbps"][name] = None
                        entry["err"][name] = f"{type(exc).__name__}: {str(exc)[:160]}"
                rows_out.append(entry)
                g = {n: (f"{v:6.0f}" if v else "     -") for n, v in entry["gbps"].items()}
                log(f"{dtype:8s} {rows:>9d}x{k:<7d} {op:7s} " + "  ".join(f"{n} {v}" for n, v in g.items())
                    + f"  copy {copy_gbps:5.0f}  [{entry['plan']['strategy']} lanes {entry['plan']['lanes']}"
                    f" u{entry['plan']['unroll']}]")
                del prepared, impls
            del xs, tensors
            cupy.get_default_memory_pool().free_all_blocks()
            if json_path:
                Path(json_path).write_text(json.dumps(report, indent=1))
    return report


def peers_markdown(report: dict) -> str:
    """The table of a ``bench_peers`` report: GB/s per implementation and clreduce / best peer."""
    info = report["info"]
    lines = [f"GB/s = bytes read / time on {info['gpu']} ({report['date']}; CuPy {info['cupy']}, torch "
             f"{info['torch']}). {report['method']}. `clreduce` is the public call on a cupy array, `kernel` "
             "the same plan without the Python API.", "",
             "| op | dtype | shape | clreduce | kernel | torch | torch.compile | cupy | copy | clreduce / best peer"
             " | kernel / best peer | plan |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    fmt = lambda v: "-" if v is None else f"{v:.0f}"  # noqa: E731
    for r in report["rows"]:
        g = r["gbps"]
        peers = [v for n, v in g.items() if n in ("torch", "torch.compile", "cupy") and v]
        best = max(peers) if peers else None
        ratio = lambda v: "-" if not (v and best) else f"{v / best:.2f}"  # noqa: E731
        p = r["plan"]
        lines.append(f"| {r['op']} | {r['dtype']} | {r['rows']}×{r['k']} | {fmt(g.get('clreduce'))} | "
                     f"{fmt(g.get('kernel'))} | {fmt(g.get('torch'))} | {fmt(g.get('torch.compile'))} | "
                     f"{fmt(g.get('cupy'))} | {r['copy_gbps']:.0f} | {ratio(g.get('clreduce'))} | "
                     f"{ratio(g.get('kernel'))} | {p['strategy']}, lanes {p['lanes']}, vec {p['vec']}, "
                     f"unroll {p['unroll']} |")
    return "\n".join(lines) + "\n"


def _fastest(reports: list[dict]) -> dict:
    """One report from several runs of the same tree: each row's fastest run."""
    key = lambda r: (r["dtype"], r["rows"], r["k"], r["op"])  # noqa: E731
    best: dict = {}
    for rep in reports:
        for r in rep["rows"]:
            if key(r) not in best or r["ms"] < best[key(r)]["ms"]:
                best[key(r)] = r
    return {"info": reports[-1]["info"], "date": reports[-1]["date"],
            "rows": [best[key(r)] for r in reports[0]["rows"] if key(r) in best]}


def compare(before: dict, after: dict) -> str:
    """Markdown table: kernel GB/s before and after, and after / before."""
    key = lambda r: (r["dtype"], r["rows"], r["k"], r["op"])  # noqa: E731
    old = {key(r): r for r in before["rows"]}
    lines = [f"Kernel time (PreparedReduction.run, median of batch means) on {after['info']['gpu']}, "
             f"{after['date']}; GB/s = bytes read / time.", "",
             "| dtype | shape | op | before GB/s | after GB/s | after / before | max err after | plan |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    worst = None
    for r in after["rows"]:
        b = old.get(key(r))
        if b is None:
            continue
        ratio = b["ms"] / r["ms"]
        worst = ratio if worst is None else min(worst, ratio)
        p = r["plan"]
        lines.append(f"| {r['dtype']} | {r['rows']}×{r['k']} | {r['op']} | {b['gbps']:.0f} | {r['gbps']:.0f} | "
                     f"{ratio:.3f} | {r['err']:.1e} | {p.get('strategy')}, lanes {p.get('lanes')} |")
    lines += ["", f"Slowest shape: after / before = {worst:.3f}." if worst is not None else ""]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="folder for the .md/.json results")
    ap.add_argument("--dtypes", default="float32,float16")
    ap.add_argument("--shapes", default=None, help="e.g. 1048576x32,64x4194304 (default: DESIGN.md's list)")
    ap.add_argument("--batches", type=int, default=7)
    ap.add_argument("--rotate-bytes", type=int, default=512 << 20)
    ap.add_argument("--sweep", action="store_true", help="time plan variants instead (tuning)")
    ap.add_argument("--stage2", action="store_true", help="sweep: also block size, register cap and grid")
    ap.add_argument("--sweep-lanes", default=None, help="sweep: only these lanes per row, e.g. 4,8,16,32")
    ap.add_argument("--sweep-unroll", default=None, help="sweep: only these UNROLL values, e.g. 2,4,8")
    ap.add_argument("--profile-api", action="store_true", help="host time per call of each path, and a cProfile")
    ap.add_argument("--from-json", default=None, help="re-render the markdown of a saved JSON report (no GPU)")
    ap.add_argument("--ops", default=None, help="before/after mode: ops to time, e.g. mean,max,argmax,var")
    ap.add_argument("--json", default=None, help="before/after mode: file for the results")
    ap.add_argument("--peers", action="store_true",
                    help="with --ops: public call, kernel, torch, torch.compile and CuPy per op (default shapes: "
                         "the short-row ones); writes --json and prints the markdown table")
    ap.add_argument("--no-compile", action="store_true", help="with --peers: leave torch.compile out")
    ap.add_argument("--compare", nargs=2, default=None, metavar=("BEFORE", "AFTER"),
                    help="render the table of two --ops JSON files (no GPU); comma-separated files of "
                         "repeated runs keep each row's fastest")
    args = ap.parse_args(argv)
    if args.compare:
        runs = [_fastest([json.loads(Path(f).read_text()) for f in arg.split(",")]) for arg in args.compare]
        print(compare(*runs), end="")
        return 0
    shapes = SHAPES if not args.shapes else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    dtypes = [d for d in args.dtypes.split(",") if d]
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    if args.from_json:
        report = json.loads(Path(args.from_json).read_text())
        md = markdown(report)
        (Path(args.from_json).with_suffix(".md")).write_text(md)
        print(md)
        return 0
    if args.sweep:
        for name, value in (("lanes", args.sweep_lanes), ("unroll", args.sweep_unroll)):
            SWEEP_ONLY[name] = {int(v) for v in value.split(",")} if value else None
        report = run_sweep(shapes, dtypes, rotate_bytes=args.rotate_bytes, batches=args.batches, stage2=args.stage2,
                           ops=tuple(o for o in (args.ops or "mean").split(",") if o))
        if out:
            (out / "cuda_sweep.json").write_text(json.dumps(report, indent=1))
        print(f"sweep took {time.time() - t0:.0f} s")
        return 0
    if args.ops and args.peers:
        if not args.shapes:
            shapes = SHORT_SHAPES
        report = bench_peers(shapes, dtypes, [o for o in args.ops.split(",") if o], rotate_bytes=args.rotate_bytes,
                             batches=args.batches, compile_peer=not args.no_compile, json_path=args.json)
        md = peers_markdown(report)
        if args.json:
            Path(args.json).with_suffix(".md").write_text(md)
        print(md)
        print(f"bench took {time.time() - t0:.0f} s")
        return 0
    if args.ops:
        report = bench_ops(shapes, dtypes, [o for o in args.ops.split(",") if o],
                           rotate_bytes=args.rotate_bytes, batches=args.batches, json_path=args.json)
        print(f"bench took {time.time() - t0:.0f} s")
        return 0
    if args.profile_api:
        profile_api(shapes[0], dtypes[0])
        return 0
    report = bench(shapes, dtypes, rotate_bytes=args.rotate_bytes, batches=args.batches)
    report["targets"] = targets(report)
    md = markdown(report)
    print(md)
    for t in report["targets"]:
        print(f"target {t['dtype']} {t['shape']}: vs best peer {t['vs_best_peer']:.2f}"
              + (f", vs copy {t['vs_copy']:.2f}" if t["vs_copy"] is not None else "")
              + (f", vs torch {t['vs_torch']:.2f}" if t["vs_torch"] is not None else "")
              + ("  MET" if t["met"] else "  MISSED"))
    if out:
        slug = re.sub(r"[^a-z0-9]+", "_", report["info"]["gpu"].lower()).strip("_")
        stem = f"cuda_{slug}_{report['date']}"
        (out / f"{stem}.json").write_text(json.dumps(report, indent=1))
        (out / f"{stem}.md").write_text(md)
        print(f"wrote {out / stem}.md/.json")
    print(f"bench took {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
